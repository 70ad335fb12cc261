/*
 * The allocation-failure sweep's scenarios for allocation sites the other
 * scenarios never reach with a failing allocation (tests/fault/
 * alloc_sites.sh lists them). Each is small and aimed at one site, with
 * the state arranged so that the site's allocation really happens:
 *
 *   - a non-owning group created over table AND terms only, with more than
 *     64 matching entities: its first fill (collect) grows its temporary
 *     array past the first 64;
 *   - types wider than 32 components: tes_spawn_n with more than 32 ids
 *     needs a heap copy of them, and a step in the table graph from a type
 *     of 33 or more components builds the neighbouring type on the heap;
 *   - tes_remove of a table component and tes_clear while a non-owning
 *     group with an empty member set listens: the group reserves a page
 *     and packed room for the entity first;
 *   - tes_spawn_n inside a deferred block in a world whose entity index
 *     has no room yet, and tes_clear as the first deferred change (the
 *     queue grows from nothing, then again past 64).
 */
#include <stdio.h>
#include <string.h>

#include "fault/fault.h"

#define A(k) {(k), TES_AND}
#define N(k) {(k), TES_NOT}

typedef struct fs_sterm {
    int k;
    tes_oper_t oper;
} fs_sterm_t;

/* A non-owning group over terms and its plain twin; returns the group's
 * index. */
static int group_and_twin(fs_run_t *r, const fs_sterm_t *terms, int n)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < n; i++) {
        d.terms[i].comp = r->ids[terms[i].k];
        d.terms[i].oper = terms[i].oper;
        d.terms[i].access = TES_INOUT;
    }
    int twin = fs_query_new(r, &d, -1);
    d.flags = TES_QUERY_NONOWNING_GROUP;
    return fs_query_new(r, &d, twin);
}

/* group.c collect: the group's first fill over table terms walks the
 * matching tables; 100 matches grow the temporary array past 64. */
void fs_sc_group_collect(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int t4[] = {FS_C_T4};
    const int both[] = {FS_C_T4, FS_C_T24};
    const int other[] = {FS_C_T24, FS_C_S8};
    fs_spawn_n(r, 60, t4, 1);
    fs_spawn_n(r, 50, both, 2);
    fs_spawn_n(r, 20, other, 2);
    for (uint32_t i = 0; i < 110 && !r->dead; i += 9)
        fs_add(r, r->ents[i], FS_C_TTAG);
    const fs_sterm_t g[] = {A(FS_C_T4), N(FS_C_TTAG)};
    group_and_twin(r, g, 2);
    const fs_sterm_t g2[] = {A(FS_C_T4), A(FS_C_T24)};
    group_and_twin(r, g2, 2);
    /* The groups keep up afterwards. */
    for (uint32_t i = 0; i < 40 && !r->dead; i += 4)
        fs_remove(r, r->ents[i], FS_C_T4);
    for (uint32_t i = 110; i < 130 && !r->dead; i += 3)
        fs_add(r, r->ents[i], FS_C_T4);
}

/* Registers n extra components (tags and 8-byte values, some with hooks,
 * table storage unless sparse_every divides i); fills ks. */
static int register_wide(fs_run_t *r, int *ks, int n, const char *prefix, int sparse_every)
{
    int got = 0;
    for (int i = 0; i < n && !r->dead; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s_%02d", prefix, i);
        uint32_t size = i % 3 == 0 ? 8 : 0;
        tes_storage_t st = sparse_every && i % sparse_every == sparse_every - 1
                               ? TES_STORAGE_SPARSE
                               : TES_STORAGE_TABLE;
        int k = fs_register(r, name, size, size ? 8 : 0, st, false, i % 4 == 0);
        if (k >= 0)
            ks[got++] = k;
    }
    return got;
}

/* entity_ops.c spawn_n_impl: more than 32 component ids, into a new table
 * and again into the same table, deferred too. */
void fs_sc_spawn_wide(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    int ks[40];
    int n = register_wide(r, ks, 40, "f_sw", 7);
    if (r->dead || n != 40)
        return;
    fs_spawn_n(r, 5, ks, 40);
    fs_spawn_n(r, 3, ks, 40);
    fs_spawn_n(r, 4, ks + 2, 36);
    fs_spawn_n(r, 0, ks, 34);
    fs_defer_begin(r);
    fs_spawn_n(r, 2, ks + 1, 33);
    fs_defer_end(r);
}

/* table_graph.c tes__graph_step: steps from types of 33 or more
 * components (adds and removes, each one a new table). */
void fs_sc_graph_wide(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    int ks[40];
    int n = register_wide(r, ks, 40, "f_gw", 0);
    if (r->dead || n != 40)
        return;
    tes_entity_t e = fs_spawn(r);
    for (int i = 0; i < 33 && !r->dead; i++)
        fs_add(r, e, ks[i]);
    for (int i = 33; i < 40 && !r->dead; i++)
        fs_add(r, e, ks[i]);
    fs_add(r, e, FS_C_T4);
    fs_set(r, e, FS_C_T24, 7);
    fs_remove(r, e, ks[5]);
    fs_remove(r, e, ks[20]);
    /* A second entity takes the cached edges, a third a different path. */
    tes_entity_t f = fs_clone(r, e);
    fs_remove(r, f, ks[0]);
    const int some[] = {FS_C_T4};
    fs_spawn_n(r, 1, some, 1);
    if (r->dead)
        return;
    tes_entity_t g = r->ents[r->nents - 1];
    for (int i = 39; i >= 5 && !r->dead; i--)
        fs_add(r, g, ks[i]);
}

/* component_ops.c remove_impl: the first change the non-owning groups see
 * is a table remove (one that makes the entity join a group); their member
 * sets have no page and no packed room yet. */
void fs_sc_remove_group(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int ks[] = {FS_C_T4, FS_C_T24, FS_C_S8};
    fs_spawn_n(r, 30, ks, 3);
    const fs_sterm_t g1[] = {A(FS_C_T4), N(FS_C_T24)};
    const fs_sterm_t g2[] = {A(FS_C_S8), N(FS_C_T24)};
    const fs_sterm_t g3[] = {A(FS_C_T4), N(FS_C_S8)};
    group_and_twin(r, g1, 2);
    group_and_twin(r, g2, 2);
    group_and_twin(r, g3, 2);
    for (uint32_t i = 0; i < 30 && !r->dead; i += 2)
        fs_remove(r, r->ents[i], FS_C_T24);
    for (uint32_t i = 1; i < 30 && !r->dead; i += 4)
        fs_remove(r, r->ents[i], FS_C_T4);
    /* The sparse branch: losing S8 makes entities join g3. */
    for (uint32_t i = 0; i < 30 && !r->dead; i += 3)
        fs_remove(r, r->ents[i], FS_C_S8);
}

/* entity_ops.c clear_impl, not deferred: the first change the non-owning
 * groups see is a clear. */
void fs_sc_clear_group(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int ks[] = {FS_C_T24, FS_C_S8, FS_C_TTAG};
    fs_spawn_n(r, 20, ks, 3);
    const fs_sterm_t g1[] = {A(FS_C_T24), N(FS_C_TTAG)};
    const fs_sterm_t g2[] = {A(FS_C_S8), N(FS_C_TTAG)};
    group_and_twin(r, g1, 2);
    group_and_twin(r, g2, 2);
    for (uint32_t i = 0; i < 20 && !r->dead; i += 3)
        fs_clear(r, r->ents[i]);
    /* Cleared entities come back into the groups. */
    for (uint32_t i = 0; i < 20 && !r->dead; i += 6)
        fs_set(r, r->ents[i], FS_C_S8, i);
}

/* entity_ops.c spawn_deferred: a deferred batch in a world whose entity
 * index has no room yet (then one that outgrows the first 1024 slots). */
void fs_sc_defer_spawn_grow(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int ks[] = {FS_C_T4, FS_C_S8};
    fs_defer_begin(r);
    fs_spawn_n(r, 10, ks, 2);
    fs_spawn_n(r, 5, NULL, 0);
    fs_defer_end(r);
    fs_defer_begin(r);
    fs_spawn_n(r, 1100, NULL, 0);
    fs_defer_end(r);
}

/* entity_ops.c clear_impl, deferred: clears are the first deferred changes
 * (the queue grows from nothing, then past its first 64). */
void fs_sc_defer_clear(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const int ks[] = {FS_C_T4, FS_C_S8, FS_C_SST};
    fs_spawn_n(r, 80, ks, 3);
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 80 && !r->dead; i++)
        fs_clear(r, r->ents[i]);
    fs_defer_end(r);
    fs_defer_begin(r);
    fs_clear(r, r->ents[3]);
    fs_destroy(r, r->ents[3]);
    fs_defer_end(r);
}
