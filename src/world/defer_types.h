/*
 * The deferred queue's layout: its commands, the per-entity and per-pair
 * records that answer what an entity will hold after the queue, and the
 * lanes that threads of a split system record into. The world embeds the
 * queue (tes_world.defer, .lanes), so this header stands below the world
 * and calls nothing; what queues, stages and applies commands is declared
 * in defer.h. See defer.h for how the queue works and what it is tuned for.
 */
#ifndef TES_WORLD_DEFER_TYPES_H
#define TES_WORLD_DEFER_TYPES_H

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

/* Chains command `at` to e's commands. The last command noted for e's
 * index is e's when it is before `at` and names e: an entry left from an
 * earlier flush or by an earlier entity of the index fails one test. */
static inline void tes__defer_chain(tes__defer_t *d, uint32_t at, tes_entity_t e)
{
    tes__defer_at_t *slot = &d->ent_at[tes_entity_index(e)];
    uint32_t prev = slot->last;
    if (prev < at && d->ops[prev].e == e)
        d->ops[prev].next = at;
    slot->last = at;
}

/* Row value of an entity in the virtual root whose spawn is still queued. */
#define TES__ROW_PENDING UINT32_C(1)

#endif
