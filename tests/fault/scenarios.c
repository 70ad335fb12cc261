/*
 * The allocation-failure sweep's scenarios. Each is plain straight-line use
 * of the API, sized so that every growth path it targets actually grows
 * (entity slots past their first block, tables past several doublings,
 * sparse stores past one 16 KiB page, the registry and name map past their
 * first capacity) while K, the number of allocations, stays small enough to
 * replay the scenario once per k.
 */
#include <stdio.h>

#include "fault/fault.h"

/* Every base data/tag component except TES_DISABLED. */
static const int all_base[] = {FS_C_T4, FS_C_T24, FS_C_TTAG, FS_C_S8,
                               FS_C_SST, FS_C_STAG, FS_C_T16, FS_C_S4};
#define NALL ((int32_t)(sizeof all_base / sizeof all_base[0]))

/* Spawning one by one: the slot array and the root table grow. */
static void sc_spawn(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    for (int i = 0; i < 2100 && !r->dead; i++)
        fs_spawn(r);
    /* Recycled slots need no memory, but must still work after growth. */
    for (uint32_t i = 0; i < 100 && !r->dead; i++)
        fs_destroy(r, r->ents[i * 7]);
    for (int i = 0; i < 150 && !r->dead; i++)
        fs_spawn(r);
}

/* Bulk spawning, with and without components, into new and existing
 * tables and sparse stores (S8 and SST pass their first page). */
static void sc_spawn_n(fs_run_t *r)
{
    tes_world_desc_t d = {0};
    d.generation_limit = 2;
    if (!fs_world_new(r, &d))
        return;
    fs_register_base(r);
    fs_spawn_n(r, 1500, NULL, 0);
    const int a[] = {FS_C_T4, FS_C_T24, FS_C_S8, FS_C_SST, FS_C_STAG, FS_C_TTAG};
    fs_spawn_n(r, 700, a, 6);
    const int b[] = {FS_C_S8, FS_C_T16};
    fs_spawn_n(r, 3000, b, 2);
    const int c[] = {FS_C_DISABLED, FS_C_S4, FS_C_T24};
    fs_spawn_n(r, 10, c, 3);
    fs_spawn_n(r, 0, a, 6);
    /* Reuse freed slots (some retire at generation 2) plus fresh ones. */
    for (uint32_t i = 0; i < 300 && !r->dead; i++)
        fs_destroy(r, r->ents[i * 3]);
    for (uint32_t i = 0; i < 200 && !r->dead; i++)
        fs_destroy(r, r->ents[i * 3 + 1]);
    fs_spawn_n(r, 800, a, 6);
}

/* Registering many components grows the registry, its name map and the
 * sparse list; adding them one by one makes a new table (and edges) each
 * time. */
static void sc_register(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    int extra[64];
    int nextra = 0;
    for (int i = 0; i < 64 && !r->dead; i++) {
        char name[32];
        snprintf(name, sizeof name, "f_extra_%02d", i);
        uint32_t size = i % 3 == 0 ? 0 : 8;
        tes_storage_t st = i % 2 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE;
        bool stable = st == TES_STORAGE_SPARSE && i % 5 == 0;
        int k = fs_register(r, name, size, size ? 8 : 0, st, stable, i % 4 == 0);
        if (k >= 0)
            extra[nextra++] = k;
    }
    /* Same name, same layout: the same id, no new record. */
    tes_component_desc_t d = {0};
    d.name = "f_t4";
    d.size = 4;
    d.align = 4;
    tes_comp_t again = 0;
    FS_STEP(r, fs_comp(r, &again, tes_component(r->w, &d)));
    if (!r->dead && again != r->ids[FS_C_T4])
        fs_problem(r, "re-registering f_t4 gave id %u, not %u", again, r->ids[FS_C_T4]);
    FS_STEP(r, fs_comp(r, &again, tes_component_lookup(r->w, "f_extra_07")));
    tes_entity_t e = fs_spawn(r);
    tes_entity_t f = fs_spawn(r);
    for (int i = 0; i < nextra && !r->dead; i++) {
        fs_add(r, e, extra[i]);
        if (i % 2 == 0)
            fs_add(r, f, extra[nextra - 1 - i]);
    }
    for (int i = 0; i < nextra && !r->dead; i += 3)
        fs_remove(r, e, extra[i]);
}

/* add / set / ensure of table and sparse components on many entities: up to
 * 128 archetypes, each table growing, sparse stores past a page. */
static void sc_add_set_ensure(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    for (int i = 0; i < 300 && !r->dead; i++)
        fs_spawn(r);
    for (uint32_t i = 0; i < 300 && !r->dead; i++) {
        tes_entity_t e = r->ents[i];
        uint32_t bits = (i * 37u) % 128u;
        if (bits & 1u)
            fs_add(r, e, FS_C_T4);
        if (bits & 2u)
            fs_set(r, e, FS_C_T24, i);
        if (bits & 4u)
            fs_ensure(r, e, FS_C_S8, i);
        if (bits & 8u)
            fs_set(r, e, FS_C_SST, i);
        if (bits & 16u)
            fs_add(r, e, FS_C_STAG);
        if (bits & 32u)
            fs_add(r, e, FS_C_TTAG);
        if (bits & 64u)
            fs_set(r, e, FS_C_T16, i);
        if (i % 3 == 0)
            fs_ensure(r, e, FS_C_S4, i);
    }
    /* Setting again and adding what is there already change no layout. */
    for (uint32_t i = 0; i < 300 && !r->dead; i += 5) {
        fs_set(r, r->ents[i], FS_C_T24, i + 1000);
        fs_add(r, r->ents[i], FS_C_T24);
    }
    /* Enough sparse values to need more than one page. */
    for (int i = 0; i < 2500 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        fs_set(r, e, FS_C_S8, (uint32_t)i);
        if (i % 2)
            fs_ensure(r, e, FS_C_SST, (uint32_t)i);
    }
}

/* The quiet sparse forms made for one store shape (S4: 4-byte values;
 * STAG: a tag) meet each allocation of an add: the entity's sparse page
 * (indices past 4096 first, so a page beyond the first is made before it),
 * the packed array as it grows, the first data page; removals and re-adds
 * that then fit reuse the room. */
static void sc_sparse_shapes(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    fs_spawn_n(r, 4300, NULL, 0);
    for (int i = 4299; i >= 0 && !r->dead; i -= 11) {
        tes_entity_t e = r->ents[i];
        if (i % 2)
            fs_set(r, e, FS_C_S4, (uint32_t)i);
        else
            fs_add(r, e, FS_C_S4);
        if (i % 3)
            fs_add(r, e, FS_C_STAG);
    }
    for (int i = 4299; i >= 0 && !r->dead; i -= 33) {
        fs_remove(r, r->ents[i], FS_C_S4);
        fs_remove(r, r->ents[i], FS_C_STAG);
    }
    for (int i = 0; i < 4300 && !r->dead; i += 66) {
        fs_set(r, r->ents[i], FS_C_S4, (uint32_t)i + 7u);
        fs_add(r, r->ents[i], FS_C_STAG);
    }
}

/* Removing components in different orders reaches tables that do not
 * exist yet. */
static void sc_remove(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    fs_spawn_n(r, 200, all_base, NALL);
    for (uint32_t i = 0; i < 200 && !r->dead; i++) {
        tes_entity_t e = r->ents[i];
        for (int32_t j = 0; j < NALL && !r->dead; j++) {
            int k = all_base[((int32_t)i + j * (int32_t)(i % 5 + 1)) % NALL];
            if ((i + (uint32_t)j) % 3 != 0)
                fs_remove(r, e, k);
        }
        fs_remove(r, e, FS_C_DISABLED); /* absent: a no-op */
    }
}

/* Cloning entities with many components, table and sparse. */
static void sc_clone(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    tes_entity_t full = fs_spawn(r);
    for (int32_t j = 0; j < NALL; j++)
        fs_set(r, full, all_base[j], (uint32_t)j);
    tes_entity_t sparse = fs_spawn(r);
    fs_set(r, sparse, FS_C_S8, 1);
    fs_set(r, sparse, FS_C_SST, 2);
    fs_add(r, sparse, FS_C_STAG);
    tes_entity_t empty = fs_spawn(r);
    fs_disable(r, sparse, true);
    for (int i = 0; i < 300 && !r->dead; i++)
        fs_clone(r, full);
    for (int i = 0; i < 1100 && !r->dead; i++)
        fs_clone(r, sparse);
    for (int i = 0; i < 20 && !r->dead; i++)
        fs_clone(r, empty);
}

/* Destroying entities with many components, then reusing their slots. */
static void sc_destroy(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    fs_spawn_n(r, 50, all_base, NALL);
    for (uint32_t i = 0; i < 50 && !r->dead; i++)
        fs_set(r, r->ents[i], FS_C_T24, i);
    for (int i = 0; i < 50 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        for (int32_t j = 0; j < NALL; j++)
            if ((i + j) % 2)
                fs_add(r, e, all_base[j]);
    }
    for (uint32_t i = 0; i < 100 && !r->dead; i += 2)
        fs_destroy(r, r->ents[i]);
    for (int i = 0; i < 120 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        fs_set(r, e, FS_C_SST, (uint32_t)i);
        fs_add(r, e, FS_C_T4);
    }
}

/* TES_DISABLED moves entities into tables of their own; clear empties. */
static void sc_clear_disable(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    for (int i = 0; i < 100 && !r->dead; i++) {
        tes_entity_t e = fs_spawn(r);
        fs_set(r, e, i % 2 ? FS_C_T24 : FS_C_T4, (uint32_t)i);
        if (i % 3 == 0)
            fs_set(r, e, FS_C_S8, (uint32_t)i);
    }
    for (uint32_t i = 0; i < 100 && !r->dead; i++)
        fs_disable(r, r->ents[i], true);
    for (uint32_t i = 0; i < 100 && !r->dead; i += 2)
        fs_disable(r, r->ents[i], false);
    for (uint32_t i = 0; i < 100 && !r->dead; i += 3)
        fs_clear(r, r->ents[i]);
    for (uint32_t i = 0; i < 100 && !r->dead; i += 3)
        fs_set(r, r->ents[i], FS_C_SST, i);
}

/* Discards JSON output (tes_json_world allocates nothing: it must pass
 * every step whatever allocation fails). */
static int json_discard(const void *data, size_t size, void *user)
{
    (void)data, (void)size, (void)user;
    return TES_OK;
}

/* Registration with members: the copied member list and its scratch for
 * the overlap and name checks, many components (past the first id block),
 * table and sparse, re-registration of the same list (same id, nothing
 * allocated), then values written and the world written as JSON. */
static void sc_register_members(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    static const tes_member_t m[] = {{"x", TES_TYPE_F32, 0, 0}, {"y", TES_TYPE_F32, 4, 0},
                                     {"target", TES_TYPE_ENTITY, 8, 0}, {"label", TES_TYPE_CHAR, 16, 8}};
    int ks[24];
    int nk = 0;
    for (int i = 0; i < 24 && !r->dead; i++) {
        char name[32];
        snprintf(name, sizeof name, "f_members_%02d", i);
        int k = fs_register_members(r, name, 24, i % 2 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE,
                                    i % 3 == 0, m, 1 + i % 4);
        if (k >= 0)
            ks[nk++] = k;
    }
    tes_component_desc_t d = {0};
    d.name = "f_members_03";
    d.size = 24;
    d.align = 8;
    d.storage = TES_STORAGE_SPARSE;
    d.members = m;
    d.member_count = 4;
    tes_comp_t again = 0;
    FS_STEP(r, fs_comp(r, &again, tes_component(r->w, &d)));
    if (!r->dead && nk > 3 && again != r->ids[ks[3]])
        fs_problem(r, "re-registering f_members_03 gave id %u, not %u", again, r->ids[ks[3]]);
    tes_entity_t e = fs_spawn(r);
    for (int i = 0; i < nk && !r->dead; i++)
        fs_set(r, e, ks[i], (uint32_t)i);
    tes_writer_t out = {json_discard, NULL};
    FS_STEP(r, tes_json_world(r->w, &out));
    FS_STEP(r, tes_json_entity(r->w, e, &out));
}

const fs_scenario_t fs_scenarios[] = {
    {"spawn", sc_spawn},
    {"spawn_n", sc_spawn_n},
    {"register", sc_register},
    {"register_members", sc_register_members},
    {"add_set_ensure", sc_add_set_ensure},
    {"sparse_shapes", sc_sparse_shapes},
    {"remove", sc_remove},
    {"clone", sc_clone},
    {"destroy", sc_destroy},
    {"clear_disable", sc_clear_disable},
    /* scenarios_query.c */
    {"query_new", fs_sc_query_new},
    {"query_tables", fs_sc_query_tables},
    {"group_ops", fs_sc_group_ops},
    {"defer", fs_sc_defer},
    {"defer_loop", fs_sc_defer_loop},
    {"defer_merge", fs_sc_defer_merge},
    {"defer_plain", fs_sc_defer_plain},
    /* scenarios_lifecycle.c */
    {"prefab", fs_sc_prefab},
    {"instantiate", fs_sc_instantiate},
    {"instantiate_n", fs_sc_instantiate_n},
    {"adopt", fs_sc_adopt},
    {"defer_instantiate", fs_sc_defer_instantiate},
    {"defer_inst_destroy", fs_sc_defer_instance_destroy},
    {"defer_ensure", fs_sc_defer_ensure},
    /* scenarios_sites.c */
    {"group_collect", fs_sc_group_collect},
    {"spawn_wide", fs_sc_spawn_wide},
    {"graph_wide", fs_sc_graph_wide},
    {"remove_group", fs_sc_remove_group},
    {"clear_group", fs_sc_clear_group},
    {"defer_spawn_grow", fs_sc_defer_spawn_grow},
    {"defer_clear", fs_sc_defer_clear},
    /* scenarios_bulk.c */
    {"bulk_spawn_with", fs_sc_bulk_spawn_with},
    {"bulk_spawn_bulk", fs_sc_bulk_spawn_bulk},
    {"bulk_destroy_n", fs_sc_bulk_destroy_n},
    {"bulk_destroy_matching", fs_sc_bulk_destroy_matching},
    /* scenarios_changes.c */
    {"changes", fs_sc_changes},
    {"changes_sparse", fs_sc_changes_sparse},
    {"changes_stable", fs_sc_changes_stable},
    /* scenarios_snapshot.c */
    {"snapshot", fs_sc_snapshot},
    {"snapshot_large", fs_sc_snapshot_large},
    /* scenarios_systems.c */
    {"systems", fs_sc_systems},
    {"hierarchy", fs_sc_hierarchy},
    {"hierarchy_defer", fs_sc_hierarchy_defer},
    {"hierarchy_batch", fs_sc_hierarchy_batch},
    {"hierarchy_cascade", fs_sc_hierarchy_cascade},
};
const int fs_nscenarios = (int)(sizeof fs_scenarios / sizeof fs_scenarios[0]);
