/*
 * Deferred structural changes. While the world is deferred (tes_defer_begin,
 * or any live query iterator), structural calls validate their arguments at
 * once and then append a command to this queue instead of changing tables
 * and stores that an iterator may be walking. The queue is applied when the
 * outermost level ends, with the observable results of applying it in call
 * order (defer_flush.c says how commands of one entity are merged, and
 * defer_runs.c how runs of entities given the same commands move at once).
 *
 * Spawned and cloned entities get their handle at once: the slot is issued
 * immediately, in the virtual root table (which owns no rows, so no table an
 * iterator walks is touched), marked pending until the flush reaches its
 * MATERIALIZE command. Values passed to a deferred tes_set (and values of a
 * deferred tes_ensure) are staged in the queue's arena: constructed and
 * copied at queue time, assigned and destroyed at the flush, so ctor/dtor
 * stay balanced even when the target entity dies before the flush.
 *
 * Beside the command array the queue keeps, per entity index, the
 * position of the entity's last command (each command links to the next
 * one of its entity: the chain the flush merges by), and a record per
 * entity and per (entity, component) pair it changes. The records answer
 * "what will e hold for c after the queue" in constant time, which a
 * deferred tes_ensure needs. A set of a plain component (no hook, no
 * watcher), the bulk of a system's queue, is queued without them: the
 * records of such sets are written when something asks, each once (see
 * `paired`). Records refer to commands by index, never by address.
 *
 * Tuned for the usual frame: a few hundred to a few hundred thousand
 * commands, applied once; every array keeps its capacity between flushes.
 */
#ifndef TES_WORLD_DEFER_H
#define TES_WORLD_DEFER_H

#include <stdatomic.h>

#include "core/arena.h"
#include "tessera.h"

typedef enum tes__op_kind {
    TES__OP_MATERIALIZE, /* a deferred spawn/clone becomes visible */
    TES__OP_DESTROY,
    TES__OP_ADD,
    TES__OP_REMOVE,
    TES__OP_SET,         /* value: staged, constructed; fires on_set */
    TES__OP_ENSURE,      /* like SET, without on_set (a deferred tes_ensure) */
    TES__OP_CLEAR,
    TES__OP_CLONE,       /* e receives copies of src's components */
    TES__OP_CALL,        /* a higher layer's deferred work: call(w, arg) */
    TES__OP_DONE         /* applied already, as part of a merged move */
} tes__op_kind_t;

/* The function of a TES__OP_CALL command. `run` is false when the queue is
 * discarded at world teardown: the function must then only release what
 * `arg` owns. Returns a status like any applied command. */
typedef int (*tes__defer_fn)(tes_world_t *w, void *arg, bool run);

/* What a queued call that fills entities (an instantiation) gives entity
 * e, for a deferred tes_ensure that must start from the value e will hold.
 * With dst NULL: the entity whose c e receives a copy of, as that entity
 * holds c when the flush reaches the call (TES_NULL: e receives no c; e is
 * one of the entities the call fills). With dst not NULL: adjusts dst, a
 * constructed copy of that value, as the call adjusts its copy (remapped
 * references), and returns TES_NULL. */
typedef tes_entity_t (*tes__defer_fill_fn)(const tes_world_t *w, void *arg, tes_entity_t e,
                                           tes_comp_t c, void *dst);

#define TES__OP_END UINT32_MAX /* no next command */

/* How the flush may treat a command (see defer_flush.c), fixed when it is
 * queued (a component's hooks never change). */
enum {
    TES__OP_BARRIER, /* applied alone, in its place */
    TES__OP_QUIET,   /* no observer: a materialise, a sparse change */
    TES__OP_MERGED   /* a quiet table change: joins its entity's merged move */
};

/* One command: 32 bytes, the queue's hot data. */
typedef struct tes__op {
    uint8_t kind;  /* tes__op_kind_t */
    uint8_t merge; /* TES__OP_BARRIER, _QUIET or _MERGED */
    tes_comp_t comp;
    uint32_t next; /* the next command on the same entity, or TES__OP_END */
    tes_entity_t e;
    union {
        tes_entity_t src; /* CLONE: the entity copied */
        void *value;      /* SET/ENSURE: the staged value, in the arena (NULL for tags) */
        uint32_t call;    /* CALL: position in the queue's calls */
    };
} tes__op_t;

/* A deferred call's functions and argument. */
typedef struct tes__defer_call {
    tes__defer_fn run;
    tes__defer_fill_fn fill; /* NULL: it gives no entity components */
    void *arg;
} tes__defer_call_t;

/* What the queue does to one entity: its last whole-entity command (a
 * destroy or clear empties it, a clone or a filling call replaces its
 * components), its pair records, and where its commands start, so that
 * what it holds at any earlier place in the queue can be worked out (see
 * held_at in defer.c). */
typedef struct tes__defer_entity {
    tes_entity_t e;
    uint32_t reset_op;    /* the last whole-entity command, or TES__OP_END */
    uint32_t first_pair;  /* its pair records since reset_op, newest first */
    uint32_t first_op;    /* its first command (chained by `next`), or TES__OP_END */
    uint32_t fill_op;     /* the call that filled it, or TES__OP_END */
    uint32_t destroyed;   /* a destroy of it is queued */
} tes__defer_entity_t;

/* Per entity index: where the entity's record is, and its last command
 * (the chain's end). Both are checked before use (the record names the
 * entity, the command is in the queue and names the entity), so entries
 * left from earlier flushes, or by an entity that died, are never
 * trusted. */
typedef struct tes__defer_at {
    uint32_t rec;  /* position in ents */
    uint32_t last; /* position of the entity's last command */
} tes__defer_at_t;

/* What the queue does to one component of one entity, after the entity's
 * last whole-entity command. An entity's pair records form a list from its
 * entity record: a lookup walks as many records as the entity has distinct
 * components with queued changes (a handful), however long the queue. */
typedef struct tes__defer_pair {
    tes_comp_t comp;
    uint32_t next;  /* the entity's next (older) pair record, or TES__OP_END */
    uint32_t op;    /* PAIR_STAGED: the set/ensure whose value c will hold */
    uint32_t state; /* TES__PAIR_* */
} tes__defer_pair_t;

enum {
    TES__PAIR_FRESH = 1, /* added while missing: a constructed default */
    TES__PAIR_ABSENT,    /* removed */
    TES__PAIR_STAGED     /* set or ensured: the value ops[op] stages */
};

typedef struct tes__defer {
    tes__op_t *ops;
    uint32_t count;
    uint32_t cap;
    tes__defer_pair_t *pairs;  /* at most one per command */
    uint32_t pair_count;
    uint32_t pair_cap;
    /* Commands [0, paired) have their pair records. A plain set (see
     * tes__defer_set_plain) is queued without one; the records of such
     * sets are written when something asks (a deferred ensure, or any
     * other command being queued), each once, so asking stays O(1)
     * amortised. Only plain sets ever lie in [paired, count). */
    uint32_t paired;
    uint32_t *barriers;        /* positions of barrier commands, ascending */
    uint32_t barrier_count;
    uint32_t barrier_cap;
    uint32_t room;             /* min(cap, pair_cap, barrier_cap) */
    /* Plain sets may be queued while count < plain_room with no other room
     * check: room, and room for their entity records when they catch up
     * (tes__defer_ent_need <= ent_cap), both hold below it. Worked out by
     * the plain recorder's slow path. Queuing other commands keeps it
     * true (each command brings at most one entity record while `paired`
     * moves past it, so ent_count - paired never grows); a call filling
     * several entities and a reset can lower it, and set it to 0 (ask
     * again). tes__world_check verifies it. */
    uint32_t plain_room;
    /* The queue's mode for deferred tes_ensure: set, an ensure queued here
     * stages a value even for a component the entity has, instead of
     * handing out the stored value's address, so that every change is a
     * command applied in order and none lands in a row another thread may
     * be reading. The queues of a structural, parallel system: every lane
     * (set when the lanes are made, as they serve only such systems) and
     * the world's queue while such a system runs on the calling thread
     * (tes__defer_stage_ensures, its one writer). */
    bool stage_ensures;
    /* One per entity whose pair records or reset the queue keeps; room
     * for the records the pending plain sets will need (see paired). */
    tes__defer_entity_t *ents;
    uint32_t ent_count;
    uint32_t ent_cap;
    tes__defer_at_t *ent_at;   /* per entity index (checked): see tes__defer_at_t */
    uint32_t ent_at_cap;
    tes__defer_call_t *calls;
    uint32_t call_count;
    uint32_t call_cap;
    tes__arena_t arena;        /* staged values */
    /* The levels open (explicit blocks and live iterators) are counted in
     * the world's quiet state (tes__defer_depth in quiet_word.h), which reader
     * threads move atomically; every field here is touched only by
     * structural calls, which are single-threaded, or by a flush of a
     * non-empty queue. */
    int32_t explicit_depth; /* levels opened by tes_defer_begin */
    bool flushing;
} tes__defer_t;

/* One thread's command queue while a structural system runs split over
 * threads (defer_lanes.c): the thread records into its own queue, with its
 * own hook depth and scratch value, so no two threads write one word. */
typedef struct tes__lane {
    tes__defer_t queue;
    int32_t hook_depth;
    void *scratch;
    size_t scratch_size;
    /* The lanes lie side by side in one array: a cache line's worth of
     * room keeps one thread's last fields and the next lane's first ones
     * (written by another thread on every queued call) off a shared line. */
    char line_apart[64];
} tes__lane_t;

/* A run of commands one thread recorded for one piece of a split system:
 * queue positions [first, end) of lane `lane`. */
typedef struct tes__defer_span {
    uint32_t lane;
    uint32_t first;
    uint32_t end;
} tes__defer_span_t;

/* Entity records a queue must have room for so that n more commands can
 * be queued: its records, one per pending plain set (written when the
 * pair records catch up) and one per new command. */
static inline uint64_t tes__defer_ent_need(const tes__defer_t *d, uint32_t n)
{
    return (uint64_t)d->ent_count + (d->count - d->paired) + n;
}

/* Row value of an entity in the virtual root whose spawn is still queued. */
#define TES__ROW_PENDING UINT32_C(1)

/* Makes room for n more commands (and their records). The entities they
 * name must already have slots (reserve the entity index first). TES_OK or
 * TES_ERR_NOMEM (nothing changed). tes__defer_reserve(w, n), inline in
 * world.h, calls it when room is short. */
int tes__defer_reserve_slow(tes_world_t *w, uint32_t n);
/* Makes room for one deferred call that fills nfilled entities. TES_OK or
 * TES_ERR_NOMEM (nothing changed). */
int tes__defer_reserve_call(tes_world_t *w, uint32_t nfilled);
/* Appends a copy of a command recorded in another queue (a lane), with
 * its merge class, into reserved room; `call` is its call (CALL only). */
void tes__defer_push_copy(tes_world_t *w, const tes__op_t *op, const tes__defer_call_t *call);
/* Applies one command at once, as the flush does (defer_flush.c); its call
 * is looked up in queue q. Returns its status (TES_ERR_STALE: dropped). */
int tes__defer_apply(tes_world_t *w, const tes__defer_t *q, const tes__op_t *op);
/* Appends a command into reserved room. */
void tes__defer_push(tes_world_t *w, tes__op_kind_t kind, tes_entity_t e, tes_comp_t comp,
                     tes_entity_t src, void *value);
/* Appends a deferred call into room reserved by tes__defer_reserve_call.
 * fill may be NULL (the call gives no entity components); otherwise filled
 * lists the entities it fills. */
void tes__defer_push_call(tes_world_t *w, tes__defer_fn fn, tes__defer_fill_fn fill, void *arg,
                          const tes_entity_t *filled, uint32_t nfilled);

/* Queues a set (on_set = true) of c on e: stages a constructed copy of
 * value (which must not be NULL unless c is a tag). TES_OK or TES_ERR_NOMEM
 * (nothing queued). */
int tes__defer_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value);

struct tes__component;

/* Queues a set of c on e, where c is a plain component (stored in
 * tables, no hook of any kind, heard by no watcher: TES__DISPATCH_TABLE),
 * value is not NULL, and the world's own queue records with no hook or
 * system running (no lanes): the value is copied into the arena as bytes
 * and the command chained to its entity, with no pair record yet (see
 * `paired`). A tag (size 0) is handed to the generic set. The signature
 * is the one of tes_set's forms (quiet_ops.c), whose table holds it for a
 * plain component in a world that is only deferred. TES_OK,
 * TES_ERR_STALE (e is not alive) or TES_ERR_NOMEM (nothing queued),
 * failures recorded in w. */
int tes__defer_set_plain(tes_world_t *w, tes_entity_t e, tes_comp_t c,
                         const void *value);

/* A deferred tes_ensure of c (a component with data) on live e. Writes
 * through the pointer it returns take effect at the call's place in the
 * command order, and it starts from exactly the value e holds there (what
 * the calls made one after another would give). That is e's current
 * address when writing it now is the same: e has c, nothing queued changes
 * e, and no queued command runs user code or copies values (no barrier is
 * queued). Otherwise it is a value staged for a new ensure command of its
 * own, a copy of the value e will hold after the commands queued so far
 * (worked out from the queue: a queued set's staged value, the value a
 * clone or instantiation copies at its own place, a default), never
 * another command's staged value. NULL with TES_ERR_NOMEM in *status
 * (nothing queued). */
void *tes__defer_ensure(tes_world_t *w, tes_entity_t e, tes_comp_t c, int *status);

/* Whether a destroy of live entity e is queued in the world's queue (e
 * dies at the flush): a deferred call that takes e's state at its own
 * place (an instantiation's member list) treats e as dead. Not while
 * lanes record. */
bool tes__defer_destroyed(const tes_world_t *w, tes_entity_t e);

/* A staged value of info's component for a command about to be queued:
 * constructed, then a copy of *init when init is not NULL. It lives in the
 * queue's arena until the flush (never freed on its own: a value that is
 * not queued after all is only destructed). NULL on TES_ERR_NOMEM. */
void *tes__defer_stage(tes_world_t *w, const struct tes__component *info, const void *init);

/* Opens one deferral level for library code (the scheduler running a
 * structural system); end it with tes__defer_end. Not counted as a
 * tes_defer_begin level, so tes_defer_end cannot close it. */
void tes__defer_open(tes_world_t *w);

/* Per-thread queues (defer_lanes.c). tes__defer_lanes_reserve makes one
 * lane per thread (first use) and can fail with TES_ERR_NOMEM, changing
 * nothing. Between tes__defer_lanes_begin and tes__defer_lanes_end every
 * queuing call records into the calling thread's lane, and the world's
 * allocator is called under a lock. _end appends the spans' commands to
 * the world's queue in the order given (the order one thread would have
 * queued them) and applies it; returns the first error met. */
int tes__defer_lanes_reserve(tes_world_t *w);
void tes__defer_lanes_begin(tes_world_t *w);
/* Sets the world queue's stage_ensures mode (see tes__defer_t): on while
 * a structural, parallel system runs its blocks on the calling thread. */
void tes__defer_stage_ensures(tes_world_t *w, bool on);
/* The calling thread's lane number and its queue length (a span's bound). */
uint32_t tes__defer_lane_index(const tes_world_t *w);
uint32_t tes__defer_lane_count(const tes_world_t *w, uint32_t lane);
int tes__defer_lanes_end(tes_world_t *w, const tes__defer_span_t *spans, uint32_t n);
/* Makes the calling thread's queue (its lane's while lanes are live)
 * forget its records, not its commands: from here on a deferred
 * tes_ensure sees only commands queued after the call (the scheduler
 * calls it before each block of a split structural system). The flush
 * never reads the records, so what is applied does not change. */
void tes__defer_forget(tes_world_t *w);
/* Releases the lanes (world teardown; queues are empty then). */
void tes__defer_lanes_fini(tes_world_t *w);

/* Ends one level; at zero applies the queue. Returns the first error met
 * while applying (the rest is still applied). Defined in defer_flush.c. */
int tes__defer_end(tes_world_t *w);
/* Empties the queue's records and arena after a flush (their memory is
 * kept). */
void tes__defer_reset(tes_world_t *w);
/* A queue's own forms of reset (records and arena emptied, memory kept)
 * and release (memory freed; its staged values must be destroyed or
 * handed over already). */
void tes__defer_queue_reset(tes__defer_t *d);
void tes__defer_queue_release(tes__defer_t *d, tes__alloc_t *a);
/* Releases the queue, destroying staged values (world teardown). */
void tes__defer_fini(tes_world_t *w);

#endif
