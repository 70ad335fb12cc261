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

#include "world/defer_types.h"
#include "world/world.h"

/* Makes room for n more commands (and their records). The entities they
 * name must already have slots (reserve the entity index first). TES_OK or
 * TES_ERR_NOMEM (nothing changed). tes__defer_reserve(w, n), below, calls
 * it when room is short. */
int tes__defer_reserve_slow(tes_world_t *w, uint32_t n);

/* Makes room in the deferred queue for n more commands (see
 * tes__defer_reserve_slow); the common case, room already there, inline. */
static inline int tes__defer_reserve(tes_world_t *w, uint32_t n)
{
    const tes__defer_t *d = tes__defer_queue(w);
    if ((uint64_t)d->count + n <= d->room && tes__defer_ent_need(d, n) <= d->ent_cap &&
        w->entities.cap <= d->ent_at_cap)
        return TES_OK;
    return tes__defer_reserve_slow(w, n);
}
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
