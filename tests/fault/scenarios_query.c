/*
 * The allocation-failure sweep's scenarios for queries, groups and deferred
 * changes. Like scenarios.c, each is straight-line use of the API sized so
 * that the growth paths it targets really grow: a query's table cache and
 * per-table filter past their first capacity, a non-owning group's member
 * set past several doublings, a group's first fill past its scratch list,
 * the deferred queue past its first block. Every group query has a plain
 * twin over the same terms, so a group that missed a change (or kept one a
 * failed call never made) shows up as a disagreement, not only as a
 * difference from the reference run.
 */
#include <stdio.h>
#include <string.h>

#include "fault/fault.h"

#define A(k) {0, TES_AND, TES_INOUT, (k)}
#define N(k) {0, TES_NOT, TES_INOUT, (k)}
#define O(k) {0, TES_OPTIONAL, TES_INOUT, (k)}

/* Terms by component index; the ids are filled in by desc(). */
typedef struct fs_qterm {
    int unused;
    tes_oper_t oper;
    tes_access_t access;
    int k;
} fs_qterm_t;

static tes_query_desc_t desc(const fs_run_t *r, const fs_qterm_t *terms, int n, uint32_t flags)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < n; i++) {
        d.terms[i].comp = r->ids[terms[i].k];
        d.terms[i].oper = terms[i].oper;
        d.terms[i].access = terms[i].access;
    }
    d.flags = flags;
    return d;
}

/* A group query and its plain twin; returns the group's index. */
static int group_and_twin(fs_run_t *r, const fs_qterm_t *terms, int n, uint32_t flags)
{
    tes_query_desc_t d = desc(r, terms, n, flags & ~(uint32_t)(TES_QUERY_NONOWNING_GROUP |
                                                                TES_QUERY_OWNING_GROUP));
    int twin = fs_query_new(r, &d, -1);
    d.flags = flags;
    return fs_query_new(r, &d, twin);
}

/* A mixed population: n entities over tables and sparse stores, some of
 * them disabled. */
static void populate(fs_run_t *r, int n)
{
    for (int i = 0; i < n && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        uint32_t u = (uint32_t)i;
        if (i % 2)
            fs_add(r, e, FS_C_T4);
        if (i % 3 == 0)
            fs_set(r, e, FS_C_T24, u);
        if (i % 4 != 1)
            fs_set(r, e, FS_C_S8, u);
        if (i % 5 == 2)
            fs_set(r, e, FS_C_SST, u);
        if (i % 3 == 1)
            fs_add(r, e, FS_C_STAG);
        if (i % 2 == 0)
            fs_set(r, e, FS_C_S4, u);
        if (i % 7 == 3)
            fs_disable(r, e, true);
    }
}

/* Creating every kind of query, groups over many entities included; new
 * tables after each, so a query left half-registered by a failure would
 * be called (and caught) when the graph grows. */
void fs_sc_query_new(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    populate(r, 150);
    const fs_qterm_t table[] = {A(FS_C_T4), O(FS_C_T24)};
    const fs_qterm_t driven[] = {A(FS_C_S8), A(FS_C_SST)};
    const fs_qterm_t nots[] = {N(FS_C_T4), N(FS_C_S4)};
    const fs_qterm_t mixed[] = {A(FS_C_T4), A(FS_C_S8), N(FS_C_TTAG)};
    const fs_qterm_t owned[] = {A(FS_C_S8), A(FS_C_S4), N(FS_C_T24)};
    const fs_qterm_t stable[] = {A(FS_C_SST), N(FS_C_STAG), O(FS_C_S4)};
    tes_query_desc_t d = desc(r, table, 2, 0);
    fs_query_new(r, &d, -1);
    fs_add(r, r->ents[0], FS_C_T16); /* a new table for the listeners */
    d = desc(r, driven, 2, 0);
    fs_query_new(r, &d, -1); /* creates the world's filter index */
    fs_add(r, r->ents[1], FS_C_T16);
    /* The filter index follows the default-filtered tags; new entities
     * beyond its end make it grow. */
    fs_disable(r, r->ents[4], true);
    for (int i = 0; i < 300 && !r->dead; i++)
        fs_disable(r, fs_spawn(r), true);
    fs_disable(r, r->ents[4], false);
    d = desc(r, nots, 2, TES_QUERY_INCLUDE_DISABLED);
    fs_query_new(r, &d, -1);
    fs_add(r, r->ents[2], FS_C_TTAG);
    group_and_twin(r, mixed, 3, TES_QUERY_NONOWNING_GROUP);
    fs_add(r, r->ents[3], FS_C_TTAG);
    int own = group_and_twin(r, owned, 3, TES_QUERY_OWNING_GROUP);
    fs_add(r, r->ents[5], FS_C_T16);
    group_and_twin(r, stable, 3, TES_QUERY_NONOWNING_GROUP | TES_QUERY_INCLUDE_DISABLED);
    for (uint32_t i = 10; i < 40 && !r->dead; i += 3) {
        fs_add(r, r->ents[i], FS_C_TTAG);
        fs_set(r, r->ents[i], FS_C_S8, i + 500);
    }
    /* The owned stores change hands. */
    fs_query_free(r, own);
    d = desc(r, owned, 2, TES_QUERY_OWNING_GROUP);
    fs_query_new(r, &d, -1);
    for (uint32_t i = 40; i < 60 && !r->dead; i += 2)
        fs_remove(r, r->ents[i], FS_C_S4);
}

/* New tables while queries exist: each query's cache and per-table filter
 * reserve room before the table is committed (past 64 tables). */
void fs_sc_query_tables(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const fs_qterm_t t4[] = {A(FS_C_T4)};
    const fs_qterm_t not4[] = {N(FS_C_T4), O(FS_C_T24)};
    const fs_qterm_t mixed[] = {A(FS_C_T4), A(FS_C_S8)};
    tes_query_desc_t d = desc(r, t4, 1, 0);
    fs_query_new(r, &d, -1);
    d = desc(r, not4, 2, 0);
    fs_query_new(r, &d, -1);
    group_and_twin(r, mixed, 2, TES_QUERY_NONOWNING_GROUP);
    int extra[8];
    for (int i = 0; i < 8 && !r->dead; i++) {
        char name[32];
        snprintf(name, sizeof name, "f_qx_%d", i);
        extra[i] = fs_register(r, name, i % 2 ? 8 : 0, i % 2 ? 8 : 0, TES_STORAGE_TABLE, false,
                               i % 3 == 0);
    }
    if (r->dead)
        return;
    const fs_qterm_t x0[] = {A(extra[0]), O(extra[1])};
    d = desc(r, x0, 2, 0);
    fs_query_new(r, &d, -1);
    /* 256 combinations of the extras (each one a new table), with and
     * without T4, on entities in and out of the group. */
    for (uint32_t i = 0; i < 160 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        if (i % 2)
            fs_add(r, e, FS_C_T4);
        if (i % 3)
            fs_set(r, e, FS_C_S8, i);
        uint32_t bits = (i * 37u) % 256u;
        for (int b = 0; b < 8 && !r->dead; b++)
            if (bits >> b & 1u)
                fs_add(r, e, extra[b]);
    }
}

/* A non-owning group reserves room in its member set for every change that
 * may add an entity: add, set, spawn_n, clone, enable (past 256 members). */
void fs_sc_group_ops(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    const fs_qterm_t g1[] = {A(FS_C_S8), N(FS_C_STAG)};
    const fs_qterm_t g2[] = {A(FS_C_T4), A(FS_C_SST), O(FS_C_S8)};
    const fs_qterm_t g3[] = {A(FS_C_S4), A(FS_C_S8)};
    group_and_twin(r, g1, 2, TES_QUERY_NONOWNING_GROUP);
    group_and_twin(r, g2, 3, TES_QUERY_NONOWNING_GROUP);
    group_and_twin(r, g3, 2, TES_QUERY_OWNING_GROUP);
    for (uint32_t i = 0; i < 300 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        fs_set(r, e, FS_C_S8, i);
        if (i % 3 == 0) {
            fs_add(r, e, FS_C_T4);
            fs_set(r, e, FS_C_SST, i);
        }
        if (i % 4 == 0)
            fs_set(r, e, FS_C_S4, i);
    }
    const int batch[] = {FS_C_S8, FS_C_T4, FS_C_SST, FS_C_S4};
    fs_spawn_n(r, 200, batch, 4);
    for (uint32_t i = 0; i < 120 && !r->dead; i += 2)
        fs_clone(r, r->ents[i]);
    for (uint32_t i = 0; i < 100 && !r->dead; i += 3)
        fs_add(r, r->ents[i], FS_C_STAG); /* leaves g1 */
    for (uint32_t i = 0; i < 100 && !r->dead; i += 5)
        fs_disable(r, r->ents[i], true);
    for (uint32_t i = 0; i < 100 && !r->dead; i += 10)
        fs_disable(r, r->ents[i], false);
    for (uint32_t i = 0; i < 100 && !r->dead; i += 7)
        fs_clear(r, r->ents[i]);
    for (uint32_t i = 1; i < 100 && !r->dead; i += 7)
        fs_destroy(r, r->ents[i]);
    fs_spawn_n(r, 300, batch, 2);
}

/* Deferred changes of every kind, enough to grow the queue several times;
 * each queueing call under a failing allocator must queue nothing. Then
 * the flush (which may fail too: see steps_query.c), and a second block
 * with groups listening. */
void fs_sc_defer(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    populate(r, 60);
    const fs_qterm_t g[] = {A(FS_C_S8), A(FS_C_T4)};
    const fs_qterm_t all[] = {O(FS_C_T24), N(FS_C_SST)};
    tes_query_desc_t d = desc(r, all, 2, 0);
    fs_query_new(r, &d, -1);
    /* Destroys and spawns only: the queue's growth (it keeps its capacity
     * afterwards) falls on them. */
    const int plain[] = {FS_C_T4, FS_C_S4};
    uint32_t first = r->nents;
    fs_spawn_n(r, 100, plain, 2);
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 100 && !r->dead; i++) {
        fs_destroy(r, r->ents[first + i]);
        if (i % 2)
            fs_spawn(r);
    }
    fs_defer_end(r);
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 60 && !r->dead; i++) {
        tes_entity_t e = r->ents[i];
        fs_set(r, e, FS_C_T24, i + 100);        /* staged value */
        if (i % 4 == 0)
            fs_ensure(r, e, FS_C_SST, i + 200); /* staged if missing */
        if (i % 3 == 0)
            fs_add(r, e, FS_C_T16);
        if (i % 5 == 0)
            fs_remove(r, e, FS_C_S8);
        if (i % 6 == 0)
            fs_clone(r, e);                     /* a pending copy */
        if (i % 7 == 0)
            fs_destroy(r, e);
        if (i % 9 == 0)
            fs_clear(r, e);
        tes_entity_t s = fs_spawn(r);           /* a pending entity */
        fs_set(r, s, FS_C_S8, i + 300);
    }
    fs_defer_begin(r); /* nested: ends without applying anything */
    const int batch[] = {FS_C_T4, FS_C_S8, FS_C_SST};
    fs_spawn_n(r, 40, batch, 3);
    fs_defer_end(r);
    fs_defer_end(r);
    /* Groups listen now: deferred spawns and clones reserve for them. */
    group_and_twin(r, g, 2, TES_QUERY_NONOWNING_GROUP);
    fs_defer_begin(r);
    for (uint32_t i = 60; i < 160 && !r->dead; i++) {
        tes_entity_t e = r->ents[i];
        if (!tes_alive(r->w, e))
            continue;
        fs_add(r, e, FS_C_T4);
        if (i % 2)
            fs_clone(r, e);
        if (i % 5 == 0)
            fs_destroy(r, e);
    }
    fs_spawn_n(r, 30, batch, 3);
    fs_defer_end(r);
}

/* Changes made from inside query loops (a live iterator defers them), the
 * loop's end applying them; then a loop left early with tes_iter_fini. */
void fs_sc_defer_loop(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    populate(r, 120);
    const fs_qterm_t walk[] = {A(FS_C_S8), O(FS_C_T24)};
    const fs_qterm_t g[] = {A(FS_C_S8), A(FS_C_T16)};
    tes_query_desc_t d = desc(r, walk, 2, 0);
    int q = fs_query_new(r, &d, -1);
    group_and_twin(r, g, 2, TES_QUERY_NONOWNING_GROUP);
    if (r->dead)
        return;
    uint32_t n = 0;
    tes_iter_t it = fs_iter(r, q);
    while (!r->dead && fs_iter_next(r, &it)) {
        /* Copy the chunk's handles: the loop's own changes are queued, so
         * they stay valid, but the copy keeps the scenario simple. */
        tes_entity_t chunk[64];
        int32_t c = it.count < 64 ? it.count : 64;
        memcpy(chunk, it.entities, (size_t)c * sizeof *chunk);
        for (int32_t j = 0; j < c && !r->dead; j++, n++) {
            tes_entity_t e = chunk[j];
            fs_set(r, e, FS_C_T16, n);
            if (n % 3 == 0)
                fs_set(r, e, FS_C_S4, n);
            if (n % 4 == 0)
                fs_clone(r, e);
            if (n % 5 == 0)
                fs_remove(r, e, FS_C_T24);
            if (n % 11 == 0)
                fs_destroy(r, e);
            if (n % 13 == 0) {
                tes_entity_t s = fs_spawn(r);
                fs_add(r, s, FS_C_T4);
            }
        }
    }
    /* Leave the next loop after its first chunk. */
    it = fs_iter(r, q);
    if (!r->dead && fs_iter_next(r, &it)) {
        tes_entity_t e = it.entities[0];
        fs_set(r, e, FS_C_T24, 9999);
        fs_add(r, e, FS_C_TTAG);
        fs_iter_fini(r, &it);
    }
}

/* The command queue's own memory and the merged flush: a block long enough
 * that the staging arena makes several blocks and the entity and pair
 * records grow, with many commands on a few entities (each entity's quiet
 * table changes become one move at the flush, into tables that do not
 * exist yet, with a group to tell), a hooked component between them (a
 * barrier) and ensures that find their staged values through the records. */
void fs_sc_defer_merge(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    populate(r, 24);
    const fs_qterm_t g[] = {A(FS_C_T16), A(FS_C_TTAG)};
    group_and_twin(r, g, 2, TES_QUERY_NONOWNING_GROUP);
    fs_defer_begin(r);
    for (uint32_t round = 0; round < 24 && !r->dead; round++) {
        for (uint32_t i = 0; i < 24 && !r->dead; i++) {
            tes_entity_t e = r->ents[i];
            uint32_t u = round * 100 + i;
            fs_set(r, e, FS_C_T16, u);
            if ((i + round) % 2 == 0)
                fs_add(r, e, FS_C_TTAG);
            if ((i + round) % 3 == 0)
                fs_remove(r, e, FS_C_T4);
            if ((i + round) % 4 == 1)
                fs_set(r, e, FS_C_T4, u);
            if (i % 5 == 0)
                fs_ensure(r, e, FS_C_T16, u + 7);  /* finds the staged value */
            if ((i + round) % 6 == 5)
                fs_remove(r, e, FS_C_TTAG);
            if (round % 8 == 7 && i % 6 == 0)
                fs_set(r, e, FS_C_T24, u);        /* hooked: a barrier */
        }
    }
    fs_defer_end(r);
}

/* Deferred sets of plain components (T16, T4: no hook, no group hears
 * them), as a system's loop queues them: recorded without their pair
 * records and applied at the flush as runs of row moves by one plan. The
 * runs are broken by a hooked set (a barrier), a destroy, an entity that
 * also loses a component, and an ensure that must find a staged value.
 * Every failure — the queue or the arena growing at record time, the
 * destination table or the graph growing at the flush — must leave the
 * world as applying the commands one by one would. */
void fs_sc_defer_plain(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    populate(r, 90);
    for (uint32_t round = 0; round < 3 && !r->dead; round++) {
        fs_defer_begin(r);
        for (uint32_t i = 0; i < 90 && !r->dead; i++) {
            tes_entity_t e = r->ents[i];
            uint32_t u = round * 1000 + i;
            fs_set(r, e, FS_C_T16, u);
            if (round > 0 || i % 2)
                fs_set(r, e, FS_C_T4, u + 1);
            if (i % 17 == 4)
                fs_remove(r, e, FS_C_T4);
            if (i % 13 == 6)
                fs_ensure(r, e, FS_C_T16, u + 2); /* the staged value */
            if (i == 40)
                fs_set(r, r->ents[3], FS_C_T24, u); /* hooked: a barrier */
            if (round == 2 && i % 29 == 11)
                fs_destroy(r, e);
        }
        /* A second pass of sets (the last value wins) takes the staged
         * values past the arena's first block, so the plain recorder's
         * block change is swept too. */
        for (uint32_t i = 0; round == 1 && i < 90 && !r->dead; i++)
            fs_set(r, r->ents[i], FS_C_T16, round * 2000 + i);
        fs_defer_end(r);
    }
}
