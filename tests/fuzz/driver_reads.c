/*
 * The driver's reads of a const world (tes_get, tes_get_mut,
 * tes_components_of, tes_prefab_members, tes_instance_members, tes_get_n):
 * a read that finds nothing records why for the calling thread, and
 * tes_last_error then answers with it until the next failure. Each wrapper
 * makes the call, and on a miss predicts the status from the world's
 * public state (not alive: TES_ERR_STALE; an unknown id or a tag, or bad
 * arguments: TES_ERR_INVALID; a live entity that lacks the component:
 * TES_OK), checks that tes_last_error says it and that a stale handle's
 * detail names the handle, and makes it the status the step check expects.
 * A hit records nothing, so it is checked against the expectation as it
 * stands.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/driver_internal.h"

static void note(fz_driver_t *d, const char *call, int want)
{
    int got = tes_last_error(d->w);
    if (got != want) {
        fzd_fail(d, "%s missed: tes_last_error is %d (%s), want %d (%s)", call, got,
                 tes_strerror(got), want, tes_strerror(want));
        return;
    }
    if (want == TES_ERR_STALE && !strstr(tes_last_error_detail(d->w), "entity") &&
        !strstr(tes_last_error_detail(d->w), "instance")) {
        fzd_fail(d, "%s missed on a stale handle with detail \"%s\"", call,
                 tes_last_error_detail(d->w));
        return;
    }
    /* The read is newer than any failure a hook made before it. */
    d->last_error = want;
    d->last_error_alt = 0;
    d->t.hook_error = 0;
}

/* Whether c is one of the driver's components or a built-in tag, and has
 * no data. */
static bool is_tag(const fz_driver_t *d, tes_comp_t c)
{
    if (c == TES_DISABLED || c == TES_PREFAB)
        return true;
    for (int k = 0; k < FZ_NALL; k++)
        if (d->ids[k] == c)
            return fz_comps[k].size == 0;
    return false;
}

/* The status a tes_get of e's c that returned NULL records: an unknown
 * id, then a handle that is not alive, then a tag, else a live entity
 * without c. */
static int get_status(const fz_driver_t *d, tes_entity_t e, tes_comp_t c)
{
    tes_world_stats_t st;
    tes_world_stats(d->w, &st);
    if (c == 0 || c > st.components)
        return TES_ERR_INVALID;
    if (!tes_alive(d->w, e))
        return TES_ERR_STALE;
    return is_tag(d, c) ? TES_ERR_INVALID : TES_OK;
}

const void *fzd_get(fz_driver_t *d, tes_entity_t e, tes_comp_t c)
{
    const void *p = tes_get(d->w, e, c);
    if (!p)
        note(d, "tes_get", get_status(d, e, c));
    return p;
}

void *fzd_get_mut(fz_driver_t *d, tes_entity_t e, tes_comp_t c)
{
    void *p = tes_get_mut(d->w, e, c);
    if (!p)
        note(d, "tes_get_mut", get_status(d, e, c));
    return p;
}

int32_t fzd_components_of(fz_driver_t *d, tes_entity_t e, tes_comp_t *out, int32_t cap)
{
    int32_t n = tes_components_of(d->w, e, out, cap);
    if (n < 0)
        note(d, "tes_components_of", tes_alive(d->w, e) ? TES_ERR_INVALID : TES_ERR_STALE);
    return n;
}

int32_t fzd_prefab_members(fz_driver_t *d, tes_entity_t prefab, tes_entity_t *out, int32_t cap)
{
    int32_t n = tes_prefab_members(d->w, prefab, out, cap);
    if (n < 0)
        note(d, "tes_prefab_members", tes_alive(d->w, prefab) ? TES_ERR_INVALID : TES_ERR_STALE);
    return n;
}

int32_t fzd_instance_members(fz_driver_t *d, tes_instance_t inst, tes_entity_t *out, int32_t cap)
{
    int32_t n = tes_instance_members(d->w, inst, out, cap);
    if (n < 0)
        note(d, "tes_instance_members",
             tes_instance_alive(d->w, inst) ? TES_ERR_INVALID : TES_ERR_STALE);
    return n;
}

int32_t fzd_get_n(fz_driver_t *d, tes_comp_t c, bool has_values, const tes_entity_t *es,
                  int32_t n, const void **out)
{
    int32_t found = tes_get_n(d->w, c, es, n, out);
    /* Bad arguments, an unknown id or a tag (no values) record
     * TES_ERR_INVALID; single misses record nothing. */
    if (found < 0 || !has_values)
        note(d, "tes_get_n", TES_ERR_INVALID);
    return found;
}
