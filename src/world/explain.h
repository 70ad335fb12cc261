/*
 * Failure sentences that depend on the world's state rather than on an
 * argument alone: what a handle that is not alive is (null, never issued,
 * destroyed, retired: stale.h), why a call is refused while the world is
 * busy (tes__fail_busy, declared in world.h: a hook, a system, a flush),
 * and why the world is deferred when a call is refused for it (which
 * iterators are open, how many tes_defer_begin levels). All of it runs on
 * failure paths only, so it is written for clarity, not speed. It stands
 * on the record of the last failure (last_error.h) and the quiet word's
 * readers (quiet_word.h); last_error.c itself needs only stale.h.
 */
#ifndef TES_WORLD_EXPLAIN_H
#define TES_WORLD_EXPLAIN_H

#include "world/stale.h"
#include "world/world.h"

/* Looks up a live entity for a structural call. Returns TES_OK with *slot
 * set, or TES_ERR_STALE recorded in w (why, by tes__fail_stale). */
static inline int tes__world_enter(tes_world_t *w, tes_entity_t e, tes__slot_t **slot)
{
    *slot = tes__entity_slot(&w->entities, e);
    return *slot ? TES_OK : tes__fail_stale(w, e);
}

/* tes__fail_stale for an instance handle in the lifecycle's id space ids
 * (NULL before any instance). */
int tes__fail_stale_instance(tes_world_t *w, const tes__entity_index_t *ids, tes_instance_t inst);

/* Records `status` for call `call` (its name, for the sentence), refused
 * because w is deferred, with a detail naming what holds the deferral: the
 * queries whose iterators are still open and the tes_defer_begin levels. */
int tes__fail_deferred(tes_world_t *w, int status, const char *call);

/* Debug builds (TES_DEBUG): tes_world_free reports on stderr a world it
 * frees while still deferred (an iterator never finished, a
 * tes_defer_begin never ended), whose queued changes were never applied;
 * the mistake is otherwise silent. Prints nothing for a world that is not
 * deferred. */
#ifdef TES_DEBUG
void tes__report_deferred_at_free(const tes_world_t *w);
#endif

/* Writes what holds w deferred into buf ("" when nothing does): "2
 * unfinished iterators of query {Position, Velocity} (...)". */
void tes__explain_deferred(const tes_world_t *w, char *buf, size_t cap);

#endif
