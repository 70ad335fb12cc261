/*
 * The move plans of cached add edges (tes__edge_plan_t): when an edge is
 * cached, the copy routine of its plan (move_plan.h) is chosen
 * once, by whether a cell is added (a tag adds none), by the size class all
 * of the destination's columns fall in (8 to 16 bytes, 4 to 8, or any
 * small size) and, for up to four columns of 8 to 16 bytes, by the column
 * count and the added column's position themselves. These tests build
 * entities up one component at a time (the quiet path's hot case: each one
 * is its table's last row) through edges of every such form and check
 * every byte of every cell afterwards:
 * - every straight form (one to four columns, the added column at each
 *   position), the loop forms of each size class, and tags added to
 *   tables of zero to six columns;
 * - a plan built for an edge and reused after its destination grew (the
 *   plan holds no address inside a block): the same plan, the same cells;
 * - tes_add's zeroed cell next to tes_set's copied one;
 * - an entity with a sparse component keeps the slot's sparse hint
 *   through quiet table adds (the slot's table turns by one addition);
 * - tes_spawn_with's cached bundle of 8 to 16-byte values, whose copy is
 *   chosen when it is cached too;
 * - tables whose every column holds 12 bytes: the edge, drop and value
 *   forms compiled for that constant size, in every straight shape;
 * - the world check reports an edge or bundle plan out of step.
 * Each test checks the full world invariant.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "storage/move_plan.h"
#include "world/check.h"
#include "world/world.h"

#define MAX_COMPS 8
#define ENTITIES 80 /* past three doublings of a table (16, 32, 64) */

/* Registers a hook-free table component of `size` bytes (a tag for 0). */
static tes_comp_t reg(tes_world_t *w, const char *name, uint32_t size)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.align = size == 0 ? 0 : size % 4 == 0 ? 4 : size % 2 == 0 ? 2 : 1;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

/* The bytes entity number `who` holds in component number `k`: no two
 * cells alike, so a cell copied from the wrong column or row shows. */
static void pattern(uint8_t *out, uint32_t size, uint32_t who, uint32_t k)
{
    for (uint32_t j = 0; j < size; j++)
        out[j] = (uint8_t)(who * 13u + k * 71u + j * 5u + 1u);
}

static void assert_cell(tes_world_t *w, tes_entity_t e, tes_comp_t c, uint32_t size,
                        uint32_t who, uint32_t k, bool zero)
{
    uint8_t want[TES__SMALL_BYTES];
    if (zero)
        memset(want, 0, size);
    else
        pattern(want, size, who, k);
    const void *got = tes_get(w, e, c);
    assert_non_null(got);
    assert_memory_equal(got, want, size);
}

/* The plan of the last add edge taken from e's table. */
static const tes__edge_plan_t *add_plan(tes_world_t *w, tes_entity_t e)
{
    const tes__slot_t *slot = &w->entities.slots[tes_entity_index(e)];
    return &w->tables.tables[slot->table & TES__SLOT_TABLE_MASK]->last_edge[1];
}

/* A world with components of sizes[0..n) (0: a tag) registered in that
 * order. ENTITIES entities are built up one component at a time: every
 * component but number `last` in registration order, then `last`, with
 * tes_set (a distinct pattern per entity and component), or, for every
 * third entity, tes_add for `last` (a zeroed cell). The first entity
 * creates and caches the edges; the others take them again, as their
 * tables' last rows, while the destination grows three times. Then every
 * cell of every entity is checked, and the plan of the last edge is the
 * one chosen for its destination and position. */
static void build_and_check(const uint32_t *sizes, uint32_t n, uint32_t last)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_comp_t comps[MAX_COMPS];
    for (uint32_t k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "C%u", (unsigned)k);
        comps[k] = reg(w, name, sizes[k]);
    }
    tes_entity_t es[ENTITIES];
    const tes__edge_plan_t *plan = NULL;
    tes__edge_plan_t cached;
    memset(&cached, 0, sizeof cached);
    for (uint32_t i = 0; i < ENTITIES; i++) {
        es[i] = tes_spawn(w);
        uint8_t value[TES__SMALL_BYTES];
        for (uint32_t k = 0; k < n; k++) {
            if (k == last)
                continue;
            pattern(value, sizes[k], i, k);
            assert_int_equal(tes_set(w, es[i], comps[k], sizes[k] ? value : NULL), TES_OK);
        }
        if (i == 1) {
            /* The edge is cached: its plan, before the destination grows. */
            plan = add_plan(w, es[i]);
            assert_int_equal(plan->comp, comps[last]);
            assert_true(plan->plain && plan->move.cells != NULL && plan->move.listed &&
                        plan->move.value_direct);
            cached = *plan;
        }
        pattern(value, sizes[last], i, last);
        if (i % 3 == 2)
            assert_int_equal(tes_add(w, es[i], comps[last]), TES_OK);
        else
            assert_int_equal(tes_set(w, es[i], comps[last], sizes[last] ? value : NULL),
                             TES_OK);
    }
    /* Tables are never deleted and plans hold no addresses: the plan of the
     * edge is the one cached for the first entities, though its destination
     * grew (from room for 16 rows to room for ENTITIES). */
    assert_memory_equal(plan, &cached, sizeof cached);
    tes__table_t *dst = plan->move.dst;
    assert_true(dst->count == ENTITIES && dst->cap >= ENTITIES);
    /* The plan made now for the same edge is the cached one. */
    tes__move_plan_t fresh = plan->move;
    tes__plan_make(&fresh, plan->move.src, dst, &plan->comp, 1, 1, true, 0);
    assert_memory_equal(&fresh, &plan->move, sizeof fresh);
    for (uint32_t i = 0; i < ENTITIES; i++)
        for (uint32_t k = 0; k < n; k++)
            if (sizes[k])
                assert_cell(w, es[i], comps[k], sizes[k], i, k, k == last && i % 3 == 2);
            else
                assert_true(tes_has(w, es[i], comps[k]));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Every component of the list added last, in turn. */
static void build_each_last(const uint32_t *sizes, uint32_t n)
{
    for (uint32_t last = 0; last < n; last++)
        build_and_check(sizes, n, last);
}

/* ------------------------------------------------------------------------ */

/* The straight forms: one to four columns of 8 to 16 bytes, the added
 * column at every position. */
static void test_straight_forms(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {12, 8, 16, 12};
    for (uint32_t n = 1; n <= 4; n++)
        build_each_last(sizes, n);
}

/* The loop forms: more than four columns of 8 to 16 bytes; columns of 4 to
 * 8 bytes; and any small size, the largest (TES__SMALL_BYTES) included. */
static void test_loop_forms(void **state)
{
    (void)state;
    static const uint32_t mid[] = {8, 12, 16, 12, 8, 16, 12};
    build_each_last(mid, 7);
    static const uint32_t small[] = {4, 8, 6, 4, 8};
    build_each_last(small, 5);
    static const uint32_t any[] = {1, 12, 3, 64, 2, 24};
    build_each_last(any, 6);
    static const uint32_t one_any[] = {64};
    build_each_last(one_any, 1);
}

/* A tag added to tables of zero to six data columns: no cell is added and
 * every column keeps its position; the tag's id may sort before, between
 * or after the columns' ids. */
static void test_tag_forms(void **state)
{
    (void)state;
    static const uint32_t mid[] = {12, 8, 16, 12, 8, 16, 0};
    static const uint32_t small[] = {4, 8, 0, 4};
    static const uint32_t any[] = {0, 2, 40};
    uint32_t sizes[MAX_COMPS];
    for (uint32_t n = 0; n <= 6; n++) {
        /* The tag registered first, then n columns. */
        sizes[0] = 0;
        memcpy(sizes + 1, mid, n * sizeof *sizes);
        build_and_check(sizes, n + 1, 0);
        /* n columns, then the tag. */
        memcpy(sizes, mid, n * sizeof *sizes);
        sizes[n] = 0;
        build_and_check(sizes, n + 1, n);
    }
    build_and_check(small, 4, 2);
    build_and_check(any, 3, 0);
}

/* The sparse hint of the entity's slot survives quiet table adds (the slot's
 * table id turns by the edge's id_step, which leaves the hint's bit), and
 * a destroy then finds the sparse component. */
static void test_sparse_hint_kept(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "S";
    d.size = 8;
    d.align = 4;
    d.storage = TES_STORAGE_SPARSE;
    tes_comp_t s = tes_component(w, &d);
    assert_true(s != 0);
    tes_comp_t a = reg(w, "A", 12), b = reg(w, "B", 12);
    tes_entity_t es[ENTITIES];
    for (uint32_t i = 0; i < ENTITIES; i++) {
        es[i] = tes_spawn(w);
        uint8_t value[16];
        if (i % 2 == 0) {
            pattern(value, 8, i, 0);
            assert_int_equal(tes_set(w, es[i], s, value), TES_OK);
        }
        pattern(value, 12, i, 1);
        assert_int_equal(tes_set(w, es[i], a, value), TES_OK);
        pattern(value, 12, i, 2);
        assert_int_equal(tes_set(w, es[i], b, value), TES_OK);
        bool hint = (w->entities.slots[tes_entity_index(es[i])].table & TES__SLOT_SPARSE) != 0;
        assert_int_equal(hint, i % 2 == 0);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    for (uint32_t i = 0; i < ENTITIES; i++) {
        if (i % 2 == 0)
            assert_cell(w, es[i], s, 8, i, 0, false);
        assert_cell(w, es[i], a, 12, i, 1, false);
        assert_cell(w, es[i], b, 12, i, 2, false);
    }
    for (uint32_t i = 0; i < ENTITIES; i += 2)
        assert_int_equal(tes_destroy(w, es[i]), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    for (uint32_t i = 1; i < ENTITIES; i += 2)
        assert_cell(w, es[i], b, 12, i, 2, false);
    tes_world_free(w);
}

/* tes_spawn_with of a bundle of 8 to 16-byte data values (cached with
 * b->mid: its values are copied by the loop made for that size class),
 * again and again through table growth: a NULL value is zeroed over the
 * stale bytes of a recycled row, every other value copied exactly. */
static void test_spawn_with_mid_bundle(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    static const uint32_t sizes[3] = {12, 8, 16};
    tes_comp_t comps[3] = {reg(w, "A", 12), reg(w, "B", 8), reg(w, "D", 16)};
    uint8_t values[3][16];
    tes_entity_t junk[20];
    for (uint32_t i = 0; i < 20; i++) {
        for (uint32_t k = 0; k < 3; k++)
            memset(values[k], 0xEE, sizeof values[k]);
        tes_value_t vals[3] = {{comps[0], values[0]}, {comps[1], values[1]}, {comps[2], values[2]}};
        junk[i] = tes_spawn_with(w, vals, 3);
        assert_true(junk[i] != TES_NULL);
    }
    assert_true(w->bundle.quiet && w->bundle.plan.listed && !w->bundle.plan.hooked);
    for (uint32_t i = 0; i < 20; i++)
        assert_int_equal(tes_destroy(w, junk[i]), TES_OK);
    tes_entity_t es[ENTITIES];
    for (uint32_t i = 0; i < ENTITIES; i++) {
        for (uint32_t k = 0; k < 3; k++)
            pattern(values[k], sizes[k], i, k);
        tes_value_t vals[3] = {{comps[0], values[0]},
                               {comps[1], i % 5 == 0 ? NULL : values[1]},
                               {comps[2], values[2]}};
        es[i] = tes_spawn_with(w, vals, 3);
        assert_true(es[i] != TES_NULL);
    }
    for (uint32_t i = 0; i < ENTITIES; i++)
        for (uint32_t k = 0; k < 3; k++)
            assert_cell(w, es[i], comps[k], sizes[k], i, k, k == 1 && i % 5 == 0);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* The drop forms: entities holding components of sizes[0..n) lose
 * component number `gone` by tes_remove, every other entity first (rows
 * from the middle of the table: the last row fills each hole), then the
 * rest (the table's last rows). Every other cell keeps its value, and the
 * cached remove edge's plan names the dropped source column. */
static void drop_and_check(const uint32_t *sizes, uint32_t n, uint32_t gone)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_comp_t comps[MAX_COMPS];
    for (uint32_t k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "D%u", (unsigned)k);
        comps[k] = reg(w, name, sizes[k]);
    }
    tes_entity_t es[ENTITIES];
    uint8_t value[TES__SMALL_BYTES];
    for (uint32_t i = 0; i < ENTITIES; i++) {
        es[i] = tes_spawn(w);
        for (uint32_t k = 0; k < n; k++) {
            pattern(value, sizes[k], i, k);
            assert_int_equal(tes_set(w, es[i], comps[k], sizes[k] ? value : NULL), TES_OK);
        }
    }
    const tes__slot_t *slot = &w->entities.slots[tes_entity_index(es[0])];
    tes__table_t *full = w->tables.tables[slot->table & TES__SLOT_TABLE_MASK];
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t i = pass; i < ENTITIES; i += 2)
            assert_int_equal(tes_remove(w, es[i], comps[gone]), TES_OK);
    const tes__edge_plan_t *edge = &full->last_edge[0];
    assert_int_equal(edge->comp, comps[gone]);
    int32_t col = tes__table_column_index(full, comps[gone]);
    assert_int_equal(edge->move.split, col >= 0 ? (uint32_t)col : edge->move.dst->column_count);
    for (uint32_t i = 0; i < ENTITIES; i++) {
        assert_false(tes_has(w, es[i], comps[gone]));
        for (uint32_t k = 0; k < n; k++)
            if (k != gone && sizes[k])
                assert_cell(w, es[i], comps[k], sizes[k], i, k, false);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_drop_forms(void **state)
{
    (void)state;
    static const uint32_t straight[4] = {12, 8, 16, 12};    /* straight forms */
    static const uint32_t loop[6] = {8, 12, 16, 8, 12, 16}; /* drop_mid */
    static const uint32_t mixed[5] = {4, 12, 2, 16, 8};     /* drop_any */
    static const uint32_t tagged[3] = {12, 0, 8};           /* a tag dropped */
    for (uint32_t n = 1; n <= 4; n++)
        for (uint32_t g = 0; g < n; g++)
            drop_and_check(straight, n, g);
    for (uint32_t g = 0; g < 6; g++)
        drop_and_check(loop, 6, g);
    for (uint32_t g = 0; g < 5; g++)
        drop_and_check(mixed, 5, g);
    for (uint32_t g = 0; g < 3; g++)
        drop_and_check(tagged, 3, g);
}

/* Bundles of one to five values placed from the root: the value forms
 * (straight for up to four values) copy each value into its column,
 * whatever the order the values are given in. */
static void value_forms(const uint32_t *sizes)
{
    for (uint32_t n = 1; n <= 5; n++) {
        tes_world_t *w = tes_world_new(NULL);
        assert_non_null(w);
        tes_comp_t comps[5];
        for (uint32_t k = 0; k < n; k++) {
            char name[16];
            snprintf(name, sizeof name, "V%u", (unsigned)k);
            comps[k] = reg(w, name, sizes[k]);
        }
        uint8_t values[5][16];
        tes_entity_t es[ENTITIES];
        for (uint32_t i = 0; i < ENTITIES; i++) {
            tes_value_t vals[5];
            for (uint32_t k = 0; k < n; k++) {
                uint32_t c = n - 1 - k; /* given in reverse registration order */
                pattern(values[c], sizes[c], i, c);
                vals[k] = (tes_value_t){comps[c], sizes[c] ? values[c] : NULL};
            }
            es[i] = tes_spawn_with(w, vals, (int32_t)n);
            assert_true(es[i] != TES_NULL);
        }
        for (uint32_t i = 0; i < ENTITIES; i++)
            for (uint32_t k = 0; k < n; k++)
                if (sizes[k])
                    assert_cell(w, es[i], comps[k], sizes[k], i, k, false);
                else
                    assert_true(tes_has(w, es[i], comps[k]));
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
    }
}

static void test_value_forms(void **state)
{
    (void)state;
    static const uint32_t sizes[5] = {12, 8, 16, 12, 8};
    value_forms(sizes);
}

/* The routine the plan of the add edge from {comps[0]} to {comps[0],
 * comps[1]} chose, in a world of two components of sizes a and b. */
static tes__cell1_fn pair_routine(uint32_t a, uint32_t b)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_comp_t ca = reg(w, "A", a), cb = reg(w, "B", b);
    uint8_t value[16] = {0};
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_set(w, e, ca, value), TES_OK);
    assert_int_equal(tes_set(w, e, cb, value), TES_OK);
    tes_entity_t only_a = tes_spawn(w); /* in {A}, whose add edge leads to {A, B} */
    assert_int_equal(tes_set(w, only_a, ca, value), TES_OK);
    const tes__edge_plan_t *edge = add_plan(w, only_a);
    assert_int_equal(edge->comp, cb);
    tes__cell1_fn one = edge->move.one;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    return one;
}

/* Tables whose every column holds 12 bytes (tags aside) take the edge,
 * drop and value forms compiled for that constant size: every straight
 * shape of one to four such columns, with and without a tag, added,
 * dropped and placed as a bundle, keeps every byte of every cell. A table
 * with a column of another size takes the forms that read each size: the
 * routine differs from the 12-byte one. */
static void test_twelve_byte_forms(void **state)
{
    (void)state;
    static const uint32_t twelve[5] = {12, 12, 12, 12, 12};
    static const uint32_t tagged[5] = {12, 0, 12, 12, 0};
    for (uint32_t n = 1; n <= 4; n++) {
        build_each_last(twelve, n);
        for (uint32_t g = 0; g < n; g++)
            drop_and_check(twelve, n, g);
    }
    build_each_last(tagged, 5);
    for (uint32_t g = 0; g < 5; g++)
        drop_and_check(tagged, 5, g);
    value_forms(twelve);
    value_forms(tagged);
    assert_true(pair_routine(12, 12) != pair_routine(12, 16));
}

/* The world check compares every cached plan with the plan made afresh:
 * an edge plan or a bundle plan that is out of step (a copy routine, a
 * list entry, a destination) is reported, and restoring it passes. */
static void test_check_sees_stale_plans(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_comp_t a = reg(w, "A", 12), b = reg(w, "B", 8);
    uint8_t va[12] = {1}, vb[8] = {2};
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_set(w, e, a, va), TES_OK);
    assert_int_equal(tes_set(w, e, b, vb), TES_OK);
    assert_int_equal(tes_remove(w, e, a), TES_OK);
    tes_value_t vals[2] = {{a, va}, {b, vb}};
    assert_true(tes_spawn_with(w, vals, 2) != TES_NULL);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* The table of {A}: its add edge (B) and the table of {A, B}: its
     * remove edge (A). */
    tes__table_t *ta = add_plan(w, tes_spawn_with(w, vals, 1))->move.src;
    tes__edge_plan_t *add = &ta->last_edge[1];
    assert_int_equal(add->comp, b);
    tes__edge_plan_t saved = *add;
    add->move.cells = w->bundle.plan.cells; /* another routine */
    assert_int_not_equal(tes__world_check(w), TES_OK);
    *add = saved;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes__edge_plan_t *rem = &add->move.dst->last_edge[0];
    assert_int_equal(rem->comp, a);
    assert_true(rem->move.moves == 1);
    saved = *rem;
    rem->move.move_from[0] ^= 1;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    *rem = saved;
    rem->move.dst = ta;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    *rem = saved;
    assert_int_equal(tes__world_check(w), TES_OK);
    /* The bundle of both values: its plan's value stride, and its quiet
     * flag. */
    assert_true(tes_spawn_with(w, vals, 2) != TES_NULL);
    assert_int_equal(w->bundle.n, 2);
    tes__bundle_cache_t bundle = w->bundle;
    w->bundle.plan.value_stride = 0;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->bundle = bundle;
    w->bundle.quiet = !w->bundle.quiet;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->bundle = bundle;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* The copy routines read the tables' column arrays from the plan, not
 * from the tables: the world check reports a cached plan whose column
 * arrays are another table's, or whose value offset is wrong, and
 * restoring it passes. */
static void test_check_sees_stale_plan_columns(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_comp_t a = reg(w, "A", 12), b = reg(w, "B", 8);
    uint8_t va[12] = {1}, vb[8] = {2};
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_set(w, e, a, va), TES_OK);
    assert_int_equal(tes_set(w, e, b, vb), TES_OK);
    tes_value_t vals[2] = {{a, va}, {b, vb}};
    assert_true(tes_spawn_with(w, vals, 2) != TES_NULL);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes__table_t *ta = add_plan(w, tes_spawn_with(w, vals, 1))->move.src;
    tes__edge_plan_t *add = &ta->last_edge[1];
    assert_int_equal(add->comp, b);
    tes__table_t *tab = add->move.dst;
    assert_ptr_equal(add->move.src_cols, ta->columns);
    assert_ptr_equal(add->move.dst_cols, tab->columns);
    tes__edge_plan_t saved = *add;
    add->move.dst_cols = ta->columns; /* the source's array */
    assert_int_not_equal(tes__world_check(w), TES_OK);
    *add = saved;
    add->move.src_cols = tab->columns;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    *add = saved;
    assert_int_equal(tes__world_check(w), TES_OK);
    /* The bundle of both values: its destination's columns, and where
     * its second value is read. */
    assert_true(tes_spawn_with(w, vals, 2) != TES_NULL);
    assert_int_equal(w->bundle.n, 2);
    assert_int_equal(w->bundle.plan.values, 2);
    tes__bundle_cache_t bundle = w->bundle;
    w->bundle.plan.dst_cols = ta->columns;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->bundle = bundle;
    w->bundle.plan.value_at[1] = w->bundle.plan.value_at[0];
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->bundle = bundle;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_straight_forms),
        cmocka_unit_test(test_loop_forms),
        cmocka_unit_test(test_tag_forms),
        cmocka_unit_test(test_sparse_hint_kept),
        cmocka_unit_test(test_spawn_with_mid_bundle),
        cmocka_unit_test(test_check_sees_stale_plans),
        cmocka_unit_test(test_check_sees_stale_plan_columns),
        cmocka_unit_test(test_drop_forms),
        cmocka_unit_test(test_value_forms),
        cmocka_unit_test(test_twelve_byte_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
