/*
 * The allocation-failure sweep's scenarios for the bundle, bulk and batch
 * calls: tes_spawn_with, tes_spawn_bulk (and tes_spawn_n with a NULL out),
 * tes_destroy_n, tes_destroy_matching, tes_get_n and lookup views,
 * immediate and deferred. Each call is one step, so the sweep fails every allocation it
 * makes in turn: the destination table and its growth, the entity index,
 * sparse pages, group room, the images of values that live in the table
 * being grown, the handle array of a root-table batch with no out, staged
 * values of deferred calls, the queue, and destroy_matching's table and
 * handle lists (more than 32 tables, root entities, a sparse term), and a
 * table component's lookup view (its per-table column array).
 */
#include <stdlib.h>
#include <string.h>

#include "fault/fault.h"

static void fill(uint8_t *buf, uint32_t size, uint32_t seed)
{
    for (uint32_t i = 0; i < size; i++)
        buf[i] = (uint8_t)(seed * 37u + i * 11u + 3u);
}

/* tes_spawn_with of components ks (values from seed; a value for every
 * other one), as one step. */
static tes_entity_t spawn_with(fs_run_t *r, const int *ks, int n, uint32_t seed)
{
    uint8_t bufs[8][64];
    tes_value_t vals[8];
    for (int i = 0; i < n; i++) {
        fill(bufs[i], r->ctx[ks[i]].size, seed + (uint32_t)i);
        vals[i].comp = r->ids[ks[i]];
        vals[i].ptr = i % 2 == 0 ? bufs[i] : NULL;
    }
    tes_entity_t e = TES_NULL;
    FS_STEP(r, fs_ent(r, &e, tes_spawn_with(r->w, vals, n)));
    if (!r->dead && e) {
        fs_track(r, e);
        for (int i = 0; r->defer_depth > 0 && i < n; i += 2)
            r->staged[ks[i]] += r->ctx[ks[i]].size ? 1 : 0;
    }
    return e;
}

/* tes_spawn_bulk of count entities with ks; data for the components whose
 * bit is set in with_data, read from `from` when given (a column of the
 * world) or from a buffer of the caller's. */
static void spawn_bulk(fs_run_t *r, int32_t count, const int *ks, int n, uint32_t with_data,
                       const void *from, bool null_out)
{
    tes_comp_t comps[8];
    const void *data[8];
    void *bufs[8] = {0};
    for (int i = 0; i < n; i++) {
        comps[i] = r->ids[ks[i]];
        data[i] = NULL;
        if (!(with_data >> i & 1u))
            continue;
        if (from) {
            data[i] = from;
            continue;
        }
        size_t size = (size_t)count * r->ctx[ks[i]].size;
        bufs[i] = malloc(size ? size : 1);
        if (!bufs[i])
            exit(2);
        fill(bufs[i], (uint32_t)size, (uint32_t)i + 5u);
        data[i] = bufs[i];
    }
    tes_entity_t *out = malloc((size_t)(count > 0 ? count : 1) * sizeof *out);
    if (!out)
        exit(2);
    tes_bulk_desc_t d = {count, comps, n, data, null_out ? NULL : out};
    /* Without out, the handles are still known: the scenarios destroy
     * nothing before, so they are fresh slots with generation 1. */
    tes_world_stats_t st;
    tes_world_stats(r->w, &st);
    FS_STEP(r, tes_spawn_bulk(r->w, &d));
    for (int32_t i = 0; !r->dead && i < count; i++) {
        if (null_out && st.entities_free) {
            fs_problem(r, "spawn_bulk scenario: free slots, handles unknown");
            r->dead = true;
        }
        fs_track(r, null_out ? tes_entity_make(st.entity_slots + (uint32_t)i, 1) : out[i]);
    }
    for (int i = 0; !r->dead && r->defer_depth > 0 && i < n; i++)
        if (data[i] && r->ctx[ks[i]].size)
            r->staged[ks[i]] += (uint64_t)count;
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(out);
}

static int destroy_matching(fs_run_t *r, int q)
{
    int32_t n = tes_destroy_matching(r->queries[q]);
    return n < 0 ? n : TES_OK;
}

/* tes_get_n allocates nothing: one step that must simply work. */
static int get_n_all(fs_run_t *r, int k)
{
    const void **out = malloc((size_t)(r->nents ? r->nents : 1) * sizeof *out);
    if (!out)
        exit(2);
    int32_t n = tes_get_n(r->w, r->ids[k], r->ents, (int32_t)r->nents, out);
    int32_t want = 0;
    for (uint32_t i = 0; i < r->nents; i++) {
        if (out[i] != tes_get(r->w, r->ents[i], r->ids[k]))
            n = -1;
        want += out[i] != NULL;
    }
    free(out);
    return n == want ? TES_OK : TES_ERR_INVALID;
}

/* A lookup view of component k: a table one allocates its per-table
 * column array (the failure must leave nothing allocated), a sparse one
 * nothing. Once built, every tracked handle reads as tes_get reads it. */
static int lookup_all(fs_run_t *r, int k)
{
    tes_lookup_t l;
    int rc = tes_lookup_init(&l, r->w, r->ids[k]);
    if (rc)
        return l.priv_block ? TES_ERR_INVALID : rc; /* zeroed on failure */
    for (uint32_t i = 0; i < r->nents; i++)
        if (tes_lookup_get(&l, r->ents[i]) != tes_get(r->w, r->ents[i], r->ids[k]))
            rc = TES_ERR_INVALID;
    tes_lookup_fini(&l);
    return rc;
}

void fs_sc_bulk_spawn_with(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int mix[] = {FS_C_T24, FS_C_S8, FS_C_T4, FS_C_SST, FS_C_TTAG, FS_C_STAG};
    const int two[] = {FS_C_T16, FS_C_S4};
    for (int i = 0; i < 20 && !r->dead; i++)
        spawn_with(r, mix, 1 + i % 6, (uint32_t)i);
    /* A value that lives in the table the new entity goes to, which grows. */
    tes_entity_t prev = spawn_with(r, two, 2, 1);
    for (int i = 0; i < 40 && !r->dead && prev; i++) {
        tes_value_t vals[] = {{r->ids[FS_C_T16], tes_get(r->w, prev, r->ids[FS_C_T16])},
                              {r->ids[FS_C_S4], tes_get(r->w, prev, r->ids[FS_C_S4])}};
        tes_entity_t e = TES_NULL;
        FS_STEP(r, fs_ent(r, &e, tes_spawn_with(r->w, vals, 2)));
        if (!r->dead && e)
            fs_track(r, e);
        prev = e;
    }
    /* The same table-only bundle again and again (the cached way), its
     * table growing. */
    const int bundle[] = {FS_C_T24, FS_C_T4, FS_C_TTAG, FS_C_T16};
    for (int i = 0; i < 40 && !r->dead; i++)
        spawn_with(r, bundle, 4, 50u + (uint32_t)i);
    /* A bundle without hooks again and again: its values copied as bytes
     * (the quiet way), the table growing now and then. */
    const int plain[] = {FS_C_T16, FS_C_TTAG, FS_C_T4};
    for (int i = 0; i < 40 && !r->dead; i++)
        spawn_with(r, plain, 3, 200u + (uint32_t)i);
    /* The single-entity way to the same place: spawn, then one component
     * per call along the tables' cached edges (each new entity the last row
     * of the tables it passes through), the tables growing now and then. */
    for (int i = 0; i < 40 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        if (r->dead)
            break;
        fs_set(r, e, FS_C_T16, 300u + (uint32_t)i);
        fs_add(r, e, FS_C_TTAG);
        fs_set(r, e, FS_C_T4, 400u + (uint32_t)i);
    }
    /* Deferred: staged values and the queue. */
    fs_defer_begin(r);
    for (int i = 0; i < 12 && !r->dead; i++)
        spawn_with(r, mix, 1 + i % 6, 100u + (uint32_t)i);
    fs_defer_end(r);
}

void fs_sc_bulk_spawn_bulk(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int mix[] = {FS_C_T24, FS_C_S8, FS_C_T4, FS_C_SST, FS_C_TTAG, FS_C_STAG};
    const int sparse_only[] = {FS_C_S4, FS_C_STAG};
    spawn_bulk(r, 200, mix, 6, 0x0Fu, NULL, false);
    spawn_bulk(r, 50, mix, 3, 0x05u, NULL, true);
    /* The root table (no table component) with no out: a handle array. */
    spawn_bulk(r, 40, sparse_only, 2, 0x1u, NULL, true);
    tes_comp_t none = 0;
    FS_STEP(r, tes_spawn_n(r->w, 30, &none, 0, NULL));
    /* Data read from the destination table itself, which grows. */
    const int t4[] = {FS_C_T4};
    spawn_bulk(r, 16, t4, 1, 0x1u, NULL, false);
    for (int round = 0; round < 4 && !r->dead; round++) {
        int q = fs_query_new(r, &(tes_query_desc_t){.terms = {{r->ids[FS_C_T4]}, {r->ids[FS_C_T24], TES_NOT}}}, -1);
        if (q < 0)
            return;
        tes_iter_t it = tes_query_iter(r->queries[q]);
        const void *col = tes_iter_next(&it) ? tes_field(&it, 0) : NULL;
        int32_t n = it.count;
        tes_iter_fini(&it);
        spawn_bulk(r, n, t4, 1, 0x1u, col, true);
        fs_query_free(r, q);
    }
    /* Deferred: staged values, pending entities, the queue. */
    fs_defer_begin(r);
    spawn_bulk(r, 60, mix, 6, 0x2Bu, NULL, false);
    spawn_bulk(r, 20, sparse_only, 2, 0x1u, NULL, true);
    fs_defer_end(r);
}

void fs_sc_bulk_destroy_n(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int mix[] = {FS_C_T24, FS_C_S8, FS_C_SST};
    fs_spawn_n(r, 120, mix, 3);
    tes_entity_t list[40];
    for (int i = 0; i < 40; i++)
        list[i] = r->ents[(uint32_t)(i * 3) % r->nents];
    FS_STEP(r, tes_destroy_n(r->w, list, 20));
    fs_defer_begin(r);
    FS_STEP(r, tes_destroy_n(r->w, list + 20, 20));
    FS_STEP(r, lookup_all(r, FS_C_T24)); /* queued destroys: still readable */
    fs_defer_end(r);
    FS_STEP(r, get_n_all(r, FS_C_T24));
    FS_STEP(r, get_n_all(r, FS_C_S8));
    FS_STEP(r, lookup_all(r, FS_C_T24));
    FS_STEP(r, lookup_all(r, FS_C_T16));
    FS_STEP(r, lookup_all(r, FS_C_S8));
}

void fs_sc_bulk_destroy_matching(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    /* 40 tables that match a T4 query (T4 plus a tag pattern). */
    int tags[6];
    for (int i = 0; i < 6 && !r->dead; i++) {
        char name[16] = "BulkTag0";
        name[7] = (char)('0' + i);
        tags[i] = fs_register(r, name, 0, 0, TES_STORAGE_TABLE, false, false);
    }
    for (int t = 0; t < 40 && !r->dead; t++) {
        int ks[7] = {FS_C_T4};
        int n = 1;
        for (int b = 0; b < 6; b++)
            if (t >> b & 1)
                ks[n++] = tags[b];
        fs_spawn_n(r, 3, ks, n);
    }
    const int s8[] = {FS_C_S8, FS_C_T24};
    fs_spawn_n(r, 30, s8, 2);
    for (int i = 0; i < 10 && !r->dead; i++)
        fs_spawn(r); /* root entities */
    int by_table = fs_query_new(r, &(tes_query_desc_t){.terms = {{r->ids[FS_C_T4]}}}, -1);
    int sparse = fs_query_new(r, &(tes_query_desc_t){.terms = {{r->ids[FS_C_S8]}}}, -1);
    int all = fs_query_new(r, &(tes_query_desc_t){.terms = {{r->ids[FS_C_T16], TES_NOT}}}, -1);
    if (by_table < 0 || sparse < 0 || all < 0)
        return;
    FS_STEP(r, destroy_matching(r, by_table));
    /* Deferred (the listed way), then the rest through the root walk. */
    fs_defer_begin(r);
    FS_STEP(r, destroy_matching(r, sparse));
    fs_defer_end(r);
    for (int i = 0; i < 10 && !r->dead; i++)
        fs_spawn(r);
    FS_STEP(r, destroy_matching(r, all));
}
