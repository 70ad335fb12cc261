/*
 * The record of the last failure: tes_last_error and its detail. Calls on
 * a const world (tes_get, tes_components_of, tes_component_lookup, ...)
 * may run on several threads at once, so they cannot write the world:
 * their failures go to a record of the calling thread, stamped with the
 * world's failure count, and tes_last_error / tes_last_error_detail answer
 * from whichever of the two is newer. A tes_get that returns NULL records
 * why (a few stores; the sentence is formatted only when asked for), so a
 * loop of reads that miss stays cheap.
 *
 * Every failure is recorded through this header: tes__fail (inline: the
 * path a structural call takes to report a status costs a few stores),
 * tes__fail_detail and the out-of-line call tes__fail falls back to are
 * declared here beside their code, not in world.h. The record lives in the world's own fields, so
 * this header stands on world.h, and world.h calls nothing of it: a file
 * that records a failure includes this header.
 */
#ifndef TES_WORLD_LAST_ERROR_H
#define TES_WORLD_LAST_ERROR_H

#include "world/stale.h"
#include "world/world.h"

/* tes__fail while systems run on several threads: records the status in
 * the calling thread's own slot. */
int tes__fail_parallel(tes_world_t *w, int status);

/* Records a failure with a detail naming the argument and its value
 * (printf format) and returns the status. */
int tes__fail_detail(tes_world_t *w, int status, const char *fmt, ...) TES__PRINTF(3, 4);

/* Records a failure and returns it, so `return tes__fail(w, rc);` works.
 * Every TES_ERR_INVALID and TES_ERR_STALE is explained: the site that
 * finds the bad argument records the detail with tes__fail_detail
 * (directly, or through the registry's detail pointer) or tes__fail_stale,
 * and a later tes__fail(w, status) for the same failure keeps it. Any
 * other status clears the detail unless the site records one. */
static inline int tes__fail(tes_world_t *w, int status)
{
    if (tes__unlikely(w->parallel))
        return tes__fail_parallel(w, status);
    w->last_error = status;
    w->fail_epoch++;
    if (status != TES_ERR_INVALID && status != TES_ERR_STALE)
        w->detail.text[0] = '\0';
    return status;
}

/* A fresh world's serial (never 0). */
uint64_t tes__world_serial_next(void);

/* Records a const call's failure for the calling thread, with a detail
 * (printf format); returns status. w must not be NULL. */
int tes__fail_const(const tes_world_t *w, int status, const char *fmt, ...) TES__PRINTF(3, 4);

/* The same for a handle that is not alive in id space ids (noun:
 * TES__STALE_ENTITY or TES__STALE_INSTANCE). Returns TES_ERR_STALE. */
int tes__fail_const_stale(const tes_world_t *w, const tes__entity_index_t *ids, uint64_t handle,
                          int noun);

/* Records why tes_get(w, e, c) found nothing: e not alive (TES_ERR_STALE),
 * c unknown or a tag (TES_ERR_INVALID), or a live e without c (TES_OK: not
 * an error, but the detail says what is missing). Returns NULL. */
void *tes__fail_const_get(const tes_world_t *w, tes_entity_t e, tes_comp_t c);

#endif
