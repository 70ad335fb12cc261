/*
 * Failure sentences that depend on the world's state rather than on an
 * argument alone: what a handle that is not alive is (null, never issued,
 * destroyed, retired), and why the world is deferred when a call is
 * refused for it (which iterators are open, how many tes_defer_begin
 * levels). All of it runs on failure paths only, so it is written for
 * clarity, not speed; a stale handle's state is captured at the failure
 * (a later spawn may issue a handle that had never been issued then) and
 * formatted when the sentence is needed.
 */
#ifndef TES_WORLD_EXPLAIN_H
#define TES_WORLD_EXPLAIN_H

#include "world/world.h"

enum { TES__STALE_ENTITY = 0, TES__STALE_INSTANCE = 1 };

/* A handle that is not alive, as its id space held it at the failure. */
typedef struct tes__stale {
    uint64_t handle;
    uint32_t issued;   /* slots the id space had issued */
    uint32_t slot_gen; /* the slot's generation: live, or the next one a free slot issues */
    uint8_t state;     /* see explain.c */
    uint8_t noun;      /* TES__STALE_ENTITY or TES__STALE_INSTANCE */
} tes__stale_t;

/* Captures handle's state in id space ids (NULL: no id was ever issued
 * there, as for instances before the first one). */
tes__stale_t tes__stale_capture(const tes__entity_index_t *ids, uint64_t handle, int noun);

/* The sentence for a captured handle ("entity 5:1 is destroyed: ..."). */
void tes__stale_format(const tes__stale_t *st, char *buf, size_t cap);

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
