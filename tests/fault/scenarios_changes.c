/*
 * The allocation-failure sweep's scenario for change detection: the
 * registration of a tracked component (its two stamp companions), tables
 * that hold it (their summaries, created with the table and grown with
 * it), every kind of write on it (set, ensure, spawn_n, spawn_with, clone,
 * moves to other tables, deferred sets), and queries with change filters
 * iterated between the writes. Each call is one step, so every allocation
 * these make fails in turn, and a failed call must leave the world, the
 * stamps included (the queries' answers are compared with the reference
 * run), as it was. The same steps run with the component in a sparse and
 * in a stable store (stamp pages grown beside the data pages).
 */
#include <string.h>

#include "fault/fault.h"

/* Iterates query i to its end, as one step each chunk (nothing allocates
 * there, but the counts feed the comparison with the reference run). */
static void drain(fs_run_t *r, int i)
{
    if (r->dead || i < 0)
        return;
    tes_iter_t it = fs_iter(r, i);
    while (fs_iter_next(r, &it))
        ;
}

static void changes_in(fs_run_t *r, tes_storage_t storage, bool stable)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    int pos = fs_register_tracked_in(r, "f_tracked", 12, storage, stable);
    if (r->dead || pos < 0)
        return;
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = r->ids[pos];
    d.terms[0].access = TES_IN;
    d.terms[0].change = TES_CHANGE_CHANGED;
    int changed = fs_query_new(r, &d, -1);
    d.terms[0].change = TES_CHANGE_ADDED;
    d.terms[1].comp = r->ids[FS_C_T4];
    int added = fs_query_new(r, &d, -1);
    memset(&d, 0, sizeof d);
    d.terms[0].comp = r->ids[pos]; /* TES_INOUT: stamps what it yields */
    int writer = fs_query_new(r, &d, -1);
    drain(r, changed);
    /* Enough rows that the table and its summary grow several times. */
    for (uint32_t i = 0; i < 300 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        fs_set(r, e, pos, i);
        if (i % 3 == 0)
            fs_add(r, e, FS_C_T4);
        if (i % 5 == 0)
            fs_ensure(r, e, FS_C_T24, i);
    }
    drain(r, changed);
    drain(r, added);
    const int two[] = {pos, FS_C_T16};
    fs_spawn_n(r, 130, two, 2);
    for (uint32_t i = 0; i < 40 && !r->dead && i < r->nents; i++) {
        tes_entity_t e = r->ents[i * 7 % r->nents];
        if (!tes_alive(r->w, e))
            continue;
        fs_ensure(r, e, pos, i + 1000);
        if (i % 4 == 0)
            fs_clone(r, e);
        if (i % 6 == 0)
            fs_remove(r, e, FS_C_T4);
        if (i % 9 == 0)
            fs_destroy(r, e);
    }
    drain(r, writer);
    drain(r, changed);
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 20 && !r->dead && i < r->nents; i++) {
        tes_entity_t e = r->ents[(i * 13 + 5) % r->nents];
        if (tes_alive(r->w, e))
            fs_set(r, e, pos, i + 2000);
    }
    fs_defer_end(r);
    drain(r, changed);
    drain(r, added);
}

void fs_sc_changes(fs_run_t *r) { changes_in(r, TES_STORAGE_TABLE, false); }
void fs_sc_changes_sparse(fs_run_t *r) { changes_in(r, TES_STORAGE_SPARSE, false); }
void fs_sc_changes_stable(fs_run_t *r) { changes_in(r, TES_STORAGE_SPARSE, true); }
