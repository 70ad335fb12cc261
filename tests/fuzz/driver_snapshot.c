/*
 * Snapshots in the differential fuzzer. The snapshot op saves the world
 * mid-sequence, loads the bytes into a fresh world (components registered
 * in another order, so ids differ and matching goes by name; the queries
 * recreated before or after the load, groups included), checks that the
 * loaded world saves to identical bytes, then carries on with the loaded
 * world in place of the original: every later op and check compares it
 * with the model, which had matched the original world op for op. So a
 * load that loses or changes anything (a handle, the free list, a retired
 * slot, a value, an instance, a prefab's members, a tombstone's place in a
 * stable store) shows up as a divergence on the ops that follow.
 *
 * Now and then the op also loads a copy with one bit flipped into a third
 * world, which must refuse it and stay empty.
 *
 * Tracked components (track.h) save their payload through save/load hooks;
 * their serial header is the ctor's business, so load hooks receive it
 * constructed and read only the payload.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"
#include "snapshot/mem_stream.h"
#include "world/check.h"

static int track_save(const void *ptr, const tes_writer_t *out, void *ctx)
{
    const fz_hook_ctx_t *hc = ctx;
    uint32_t size = fz_comps[hc->k].size;
    return out->write((const uint8_t *)ptr + FZ_TRACK_HDR, size - FZ_TRACK_HDR, out->user);
}

static int track_load(void *ptr, const tes_reader_t *in, void *ctx)
{
    const fz_hook_ctx_t *hc = ctx;
    if (!fz_tracker_valid(hc->t, hc->k, ptr))
        return TES_ERR_INVALID; /* the load hook must receive a constructed value */
    uint32_t size = fz_comps[hc->k].size;
    return in->read((uint8_t *)ptr + FZ_TRACK_HDR, size - FZ_TRACK_HDR, in->user);
}

void fzd_snapshot_hooks(int k, tes_hooks_t *hooks)
{
    if (fz_comps[k].tracked) {
        hooks->save = track_save;
        hooks->load = track_load;
    }
}

/* A world like the driver's, its components registered in reverse order
 * (the cells variant's last, in order, so that the others' ids are what
 * they were before those joined); the new ids go to ids[]. NULL on
 * failure. */
static tes_world_t *fresh_world(fz_driver_t *d, tes_comp_t ids[FZ_NALL])
{
    tes_world_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.generation_limit = d->cfg->generation_limit;
    desc.entity_limit = d->cfg->entity_limit;
    desc.strict_lifecycle = d->cfg->strict;
    desc.threads = d->threads;
    tes_world_t *w = tes_world_new(&desc);
    if (!w)
        return NULL;
    ids[FZ_C_DISABLED] = TES_DISABLED;
    ids[FZ_C_PREFAB] = TES_PREFAB;
    for (int j = 0; j < FZ_NALL - 1; j++) {
        int k = j < FZ_C_WLAST ? FZ_C_WLAST - j : j + 1;
        const fz_comp_info_t *c = &fz_comps[k];
        if (k == FZ_C_PREFAB)
            continue;
        tes_component_desc_t cd;
        memset(&cd, 0, sizeof cd);
        cd.name = c->name;
        cd.size = c->size;
        cd.align = c->align;
        cd.storage = c->storage;
        cd.stable = c->stable;
        tes_member_t members[3];
        fzd_describe_refs(c, &cd, members);
        fz_tracker_hooks(&d->t, k, &cd.hooks);
        fzd_snapshot_hooks(k, &cd.hooks);
        ids[k] = tes_component(w, &cd);
        if (!ids[k]) {
            tes_world_free(w);
            return NULL;
        }
    }
    return w;
}

/* Recreates the driver's queries (same slots, same descriptions) on w. */
static bool recreate_queries(fz_driver_t *d, tes_world_t *w, const tes_comp_t ids[FZ_NALL],
                             tes_query_t *out[FZ_MAX_QUERIES])
{
    for (int i = 0; i < FZ_MAX_QUERIES; i++) {
        out[i] = NULL;
        const fz_dquery_t *dq = &d->queries[i];
        if (!dq->q)
            continue;
        tes_query_desc_t desc;
        memset(&desc, 0, sizeof desc);
        for (int32_t t = 0; t < dq->mq.nterms; t++) {
            desc.terms[t].comp = ids[dq->mq.terms[t].k];
            desc.terms[t].oper = dq->mq.terms[t].oper;
            desc.terms[t].access = (tes_access_t)((uint32_t)t % 4u);
            desc.terms[t].src = dq->mq.terms[t].src;
            if (dq->mq.terms[t].src == TES_SRC_PARENT)
                desc.terms[t].access = dq->mq.terms[t].access;
        }
        desc.flags = dq->mq.flags;
        out[i] = tes_query_new(w, &desc);
        if (!out[i]) {
            fzd_fail(d, "recreating query %d on the loaded world failed (%d)", i,
                     tes_last_error(w));
            return false;
        }
    }
    return true;
}

/* One bit flipped: a fresh world must refuse the copy and stay empty. */
static void check_corrupt(fz_driver_t *d, const sw_buf_t *snap)
{
    tes_comp_t ids[FZ_NALL];
    tes_world_t *w = fresh_world(d, ids);
    uint8_t *copy = malloc(snap->size);
    if (!w || !copy) {
        fzd_fail(d, "out of memory");
    } else {
        memcpy(copy, snap->data, snap->size);
        size_t bit = fzd_draw(d, (uint32_t)(snap->size * 8 < UINT32_MAX ? snap->size * 8 : UINT32_MAX));
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int rc = sw_load(w, copy, snap->size);
        if (rc != TES_ERR_FORMAT && rc != TES_ERR_IO && rc != TES_ERR_INVALID)
            fzd_fail(d, "a snapshot with bit %zu flipped loaded with status %d", bit, rc);
        else if (tes_entity_count(w) != 0 || tes__world_check(w) != TES_OK)
            fzd_fail(d, "a refused snapshot changed the world");
    }
    free(copy);
    tes_world_free(w);
}

void fzd_op_snapshot(fz_driver_t *d)
{
    d->op = "tes_snapshot_save";
    sw_buf_t snap = {0}, again = {0};
    int rc = sw_save(d->w, &snap);
    if (d->defer_depth > 0) {
        if (rc != TES_ERR_BUSY)
            fzd_fail(d, "a save while deferred returned %d, want TES_ERR_BUSY", rc);
        else if (tes_last_error(d->w) != TES_ERR_BUSY)
            fzd_fail(d, "a refused save did not record TES_ERR_BUSY");
        d->last_error = TES_ERR_BUSY;
        free(snap.data);
        return;
    }
    if (rc != TES_OK) {
        fzd_fail(d, "save failed with %d", rc);
        free(snap.data);
        return;
    }
    d->op = "tes_snapshot_load";
    tes_comp_t ids[FZ_NALL];
    tes_world_t *w = fresh_world(d, ids);
    tes_query_t *queries[FZ_MAX_QUERIES];
    bool before = fzd_draw(d, 2) == 0;
    if (!w) {
        fzd_fail(d, "a fresh world failed");
    } else if (before && !recreate_queries(d, w, ids, queries)) {
        /* reported */
    } else if ((rc = sw_load(w, snap.data, snap.size)) != TES_OK) {
        fzd_fail(d, "load failed with %d (%s)", rc, tes_strerror(rc));
    } else if (tes__world_check(w) != TES_OK) {
        fzd_fail(d, "tes__world_check failed after the load (see stderr)");
    } else if ((rc = sw_save(w, &again)) != TES_OK) {
        fzd_fail(d, "saving the loaded world failed with %d", rc);
    } else if ((!before || !fz_bits_any(d->owned)) &&
               (again.size != snap.size || memcmp(again.data, snap.data, snap.size) != 0)) {
        /* (An owning group that exists during the load reorders its
         * stores as entities join it: then the bytes may differ.) */
        size_t at = 0;
        while (at < snap.size && at < again.size && snap.data[at] == again.data[at])
            at++;
        fzd_fail(d, "save -> load -> save gave other bytes (%zu vs %zu, first difference at %zu)",
                 snap.size, again.size, at);
    } else if (!before && !recreate_queries(d, w, ids, queries)) {
        /* reported */
    }
    if (fzd_failed(d)) {
        tes_world_free(w);
        free(snap.data);
        free(again.data);
        return;
    }
    /* The loaded world takes the original's place. */
    for (int i = 0; i < FZ_MAX_QUERIES; i++)
        if (d->queries[i].q)
            tes_query_free(d->queries[i].q);
    tes_world_free(d->w);
    d->w = w;
    d->max_id = TES_PREFAB;
    for (int k = 0; k < FZ_NALL; k++) {
        d->ids[k] = ids[k];
        if (k < FZ_NCOMP)
            d->t.ids[k] = ids[k];
        if (ids[k] > d->max_id)
            d->max_id = ids[k];
    }
    for (int i = 0; i < FZ_MAX_QUERIES; i++)
        d->queries[i].q = queries[i];
    fzd_systems_rehome(d); /* the old world's systems went with it */
    /* Stable components live at new addresses in the new world. */
    for (uint32_t i = 0; i < d->m.nslots; i++)
        memset(d->m.slots[i].stable_ptr, 0, sizeof d->m.slots[i].stable_ptr);
    d->last_error = tes_last_error(w);
    d->last_error_alt = 0;
    if (fzd_draw(d, 4) == 0)
        check_corrupt(d, &snap);
    free(snap.data);
    free(again.data);
    fzd_check_full(d);
}
