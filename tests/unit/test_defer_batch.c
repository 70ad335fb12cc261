/*
 * The deferred queue's plain paths (src/world/defer.c, defer_flush.c): a
 * deferred tes_set of a plain component (no hook, no watcher) is queued
 * without its pair record, and the flush applies each entity's plain
 * adds, sets and ensures as one row move by a plan that is kept while the
 * next entities have the same shape and table. Each test runs the same
 * calls in a twin world without deferral and compares the results.
 *
 * - A batch run with mixed components: entities of several tables, groups
 *   of one to four commands, shapes changing along the queue.
 * - A run interrupted by a hooked component: the hook (a barrier) sees
 *   exactly the entities whose commands came before it.
 * - Adds and removes interleaved on one entity, inside a run of plain
 *   sets on other entities.
 * - Runs: one set per entity over entities of one table (the common
 *   queue), broken by entities of other tables and other shapes.
 * - Runs of groups of two or three commands per entity, broken by other
 *   orders, repeated components, tags, other tables and an entity whose
 *   commands are not consecutive.
 * - A deferred ensure reading a batched set (the lazily written records),
 *   and sets queued after the ensure.
 * - A group asked for by a hook in the middle of the flush has every
 *   entity that gains its component.
 * - Stale handles, entities spawned while deferred, and destroyed ones.
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
#include "world/check.h"

#include "unit/tracker.h"

typedef struct {
    int32_t x, y, z;
} v3_t;

#define NCOMP 5 /* A, B, C (12 bytes), D (4 bytes), T (a tag) */

typedef struct {
    tes_world_t *w;
    tes_comp_t c[NCOMP];
    tes_entity_t e[256];
    uint32_t n;
} twin_t;

static void twin_new(twin_t *t, uint32_t n)
{
    t->w = tes_world_new(NULL);
    assert_non_null(t->w);
    static const char *names[NCOMP] = {"A", "B", "C", "D", "T"};
    static const size_t sizes[NCOMP] = {sizeof(v3_t), sizeof(v3_t), sizeof(v3_t), 4, 0};
    for (int k = 0; k < NCOMP; k++) {
        tes_component_desc_t d = {0};
        d.name = names[k];
        d.size = sizes[k];
        t->c[k] = tes_component(t->w, &d);
        assert_true(t->c[k]);
    }
    assert_true(n <= 256);
    t->n = n;
    for (uint32_t i = 0; i < n; i++) {
        t->e[i] = tes_spawn(t->w);
        /* Start in a few tables: none, C, D, C + D. */
        if (i % 4 == 1 || i % 4 == 3)
            assert_int_equal(tes_set(t->w, t->e[i], t->c[2], &(v3_t){(int32_t)i, 1, 2}), TES_OK);
        if (i % 4 >= 2)
            assert_int_equal(tes_set(t->w, t->e[i], t->c[3], &(int32_t){(int32_t)i}), TES_OK);
    }
}

/* Both worlds hold the same components with the same values. */
static void twin_compare(const twin_t *a, const twin_t *b)
{
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(tes_alive(a->w, a->e[i]), tes_alive(b->w, b->e[i]));
        for (int k = 0; k < NCOMP; k++) {
            bool ha = tes_has(a->w, a->e[i], a->c[k]);
            assert_int_equal(ha, tes_has(b->w, b->e[i], b->c[k]));
            if (!ha || k == 4)
                continue;
            size_t size = k == 3 ? 4 : sizeof(v3_t);
            assert_memory_equal(tes_get(a->w, a->e[i], a->c[k]), tes_get(b->w, b->e[i], b->c[k]),
                                size);
        }
    }
    check(a->w);
    check(b->w);
}

/* Two twins of n entities: imm gets its calls at once, def deferred. */
static void twins_open(twin_t *imm, twin_t *def, uint32_t n)
{
    twin_new(imm, n);
    twin_new(def, n);
}

/* The twins agree, then both are freed. */
static void twins_close(twin_t *imm, twin_t *def)
{
    twin_compare(imm, def);
    tes_world_free(imm->w);
    tes_world_free(def->w);
}

/* A 4-byte component of t's world with an on_set observer. */
static tes_comp_t hooked_comp(twin_t *t, const char *name,
                              void (*on_set)(tes_world_t *, tes_entity_t, void *, void *))
{
    tes_component_desc_t d = {0};
    d.name = name;
    d.size = 4;
    d.hooks.on_set = on_set;
    tes_comp_t c = tes_component(t->w, &d);
    assert_true(c);
    return c;
}

static void set3(twin_t *t, uint32_t i, int k, int32_t x)
{
    v3_t v = {x, x + 1, x + 2};
    int32_t d = x;
    assert_int_equal(tes_set(t->w, t->e[i], t->c[k], k == 3 ? (const void *)&d : (const void *)&v),
                     TES_OK);
}

/* Moves every entity of t into C's table, but entity keep_d, which stays
 * in C + D (the runs' tests: one source table, broken by one entity). */
static void gather_in_c(twin_t *t, uint32_t keep_d)
{
    for (uint32_t i = 0; i < t->n; i++) {
        if (!tes_has(t->w, t->e[i], t->c[2]))
            set3(t, i, 2, (int32_t)i);
        if (tes_has(t->w, t->e[i], t->c[3]) && i != keep_d)
            assert_int_equal(tes_remove(t->w, t->e[i], t->c[3]), TES_OK);
    }
}

static void test_batch_mixed_components(void **state)
{
    (void)state;
    twin_t imm, def;
    twins_open(&imm, &def, 200);
    assert_int_equal(tes_defer_begin(def.w), TES_OK);
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < 200; i++) {
            twin_t *both[2] = {&imm, &def};
            for (int w = 0; w < 2; w++) {
                twin_t *t = both[w];
                int32_t x = (int32_t)(i * 10 + (uint32_t)pass);
                set3(t, i, 0, x);                     /* every entity: A */
                if (i % 3 != 0)
                    set3(t, i, 1, x + 100);           /* two of three: B */
                if (i % 5 == 0)
                    set3(t, i, 3, x + 200);           /* some: D (present or not) */
                if (i % 7 == 0)
                    assert_int_equal(tes_add(t->w, t->e[i], t->c[4]), TES_OK);
                if (i % 11 == 0)
                    set3(t, i, 0, x + 300);           /* A twice: the last wins */
                if (i % 13 == 0)
                    assert_int_equal(tes_add(t->w, t->e[i], t->c[2]), TES_OK);
            }
        }
    }
    /* Nothing changed before the flush. */
    assert_false(tes_has(def.w, def.e[0], def.c[0]));
    assert_int_equal(tes_defer_end(def.w), TES_OK);
    twins_close(&imm, &def);
}

/* A hook on a component with on_set: records which of the entities got A
 * by the time it runs. */
static twin_t *hook_twin;
static bool hook_seen[64];
static int hook_calls;

static void h_record(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    hook_calls++;
    for (uint32_t i = 0; i < 64; i++)
        hook_seen[i] = tes_has(w, hook_twin->e[i], hook_twin->c[0]);
}

static void test_batch_interrupted_by_hook(void **state)
{
    (void)state;
    twin_t def;
    twin_new(&def, 64);
    tes_comp_t hooked = hooked_comp(&def, "Hooked", h_record);
    hook_twin = &def;
    hook_calls = 0;
    assert_int_equal(tes_defer_begin(def.w), TES_OK);
    for (uint32_t i = 0; i < 64; i++) {
        set3(&def, i, 0, (int32_t)i);
        if (i == 40) /* on an entity the run has passed already */
            assert_int_equal(tes_set(def.w, def.e[2], hooked, &(int32_t){1}), TES_OK);
    }
    assert_int_equal(tes_defer_end(def.w), TES_OK);
    assert_int_equal(hook_calls, 1);
    for (uint32_t i = 0; i < 64; i++) {
        assert_int_equal(hook_seen[i], i <= 40);
        const v3_t *a = tes_get(def.w, def.e[i], def.c[0]);
        assert_non_null(a);
        assert_int_equal(a->x, (int32_t)i);
    }
    assert_int_equal(*(const int32_t *)tes_get(def.w, def.e[2], hooked), 1);
    check(def.w);
    tes_world_free(def.w);
}

static void test_batch_add_remove_interleaved(void **state)
{
    (void)state;
    twin_t imm, def;
    twins_open(&imm, &def, 40);
    assert_int_equal(tes_defer_begin(def.w), TES_OK);
    twin_t *both[2] = {&imm, &def};
    for (int w = 0; w < 2; w++) {
        twin_t *t = both[w];
        for (uint32_t i = 0; i < 40; i++) {
            set3(t, i, 0, (int32_t)i);
            if (i % 8 == 5) { /* entity 5, 13, ...: a tangle among the run */
                assert_int_equal(tes_add(t->w, t->e[i], t->c[1]), TES_OK);
                assert_int_equal(tes_remove(t->w, t->e[i], t->c[0]), TES_OK);
                set3(t, i, 1, 77);
                assert_int_equal(tes_remove(t->w, t->e[i], t->c[2]), TES_OK);
                assert_int_equal(tes_add(t->w, t->e[i], t->c[0]), TES_OK); /* a new default */
                assert_int_equal(tes_add(t->w, t->e[i], t->c[2]), TES_OK);
                set3(t, i, 3, 5);
                assert_int_equal(tes_remove(t->w, t->e[i], t->c[3]), TES_OK);
            }
        }
        /* A second pass, non-adjacent to the first: entity 1's commands
         * are merged from its first place. */
        for (uint32_t i = 0; i < 40; i += 3) {
            set3(t, i, 1, (int32_t)i + 500);
            if (i % 2)
                assert_int_equal(tes_remove(t->w, t->e[i], t->c[0]), TES_OK);
        }
    }
    assert_int_equal(tes_defer_end(def.w), TES_OK);
    /* Entity 5's A was removed and added again: a zeroed default. */
    const v3_t *a5 = tes_get(def.w, def.e[5], def.c[0]);
    assert_non_null(a5);
    assert_int_equal(a5->x, 0);
    twins_close(&imm, &def);
}

static void test_batch_ensure_reads_plain_set(void **state)
{
    (void)state;
    twin_t def;
    twin_new(&def, 16);
    tes_world_t *w = def.w;
    assert_int_equal(tes_defer_begin(w), TES_OK);
    for (uint32_t i = 0; i < 16; i++)
        set3(&def, i, 0, (int32_t)i + 10);
    /* The ensure finds the staged value of the batched set. */
    v3_t *p = tes_ensure(w, def.e[7], def.c[0]);
    assert_non_null(p);
    assert_int_equal(p->x, 17);
    assert_int_equal(p->z, 19);
    p->y = 1000;
    /* A later set wins over the ensure's write; an ensure after it finds
     * the later set's value. */
    set3(&def, 9, 0, 50);
    v3_t *q = tes_ensure(w, def.e[9], def.c[0]);
    assert_non_null(q);
    assert_int_equal(q->x, 50);
    set3(&def, 9, 0, 60);
    /* A component no queued command gives: a new default to fill. */
    v3_t *r = tes_ensure(w, def.e[3], def.c[1]);
    assert_non_null(r);
    assert_int_equal(r->x, 0);
    r->x = 33;
    /* Sets queued after an ensure, more than the queue's first block. */
    for (uint32_t k = 0; k < 300; k++)
        set3(&def, k % 16, 1, (int32_t)k);
    v3_t *s = tes_ensure(w, def.e[15], def.c[1]);
    assert_non_null(s);
    assert_int_equal(s->x, 287); /* the last k with k % 16 == 15 */
    assert_int_equal(tes_defer_end(w), TES_OK);

    const v3_t *a7 = tes_get(w, def.e[7], def.c[0]);
    assert_int_equal(a7->x, 17);
    assert_int_equal(a7->y, 1000);
    assert_int_equal(((const v3_t *)tes_get(w, def.e[9], def.c[0]))->x, 60);
    assert_int_equal(((const v3_t *)tes_get(w, def.e[3], def.c[1]))->x, 291); /* the last set */
    check(w);
    tes_world_free(w);
}

/* The benchmark's shape: one set per entity, every entity in one table,
 * so the commands form runs; an entity of another table, one that got
 * the component already (assigned in place), a tag, and an add without a
 * value break and restart them. */
static void test_batch_runs_one_table(void **state)
{
    (void)state;
    twin_t imm, def;
    twins_open(&imm, &def, 200);
    twin_t *both[2] = {&imm, &def};
    for (int w = 0; w < 2; w++) {
        /* All in C's table, but 50 (in C + D) and 120 (with A). */
        gather_in_c(both[w], 50);
        set3(both[w], 120, 0, -1);
    }
    for (int w = 0; w < 2; w++) {
        twin_t *t = both[w];
        assert_int_equal(tes_defer_begin(def.w), TES_OK);
        for (uint32_t i = 0; i < 200; i++)
            set3(t, i, 0, (int32_t)i * 3);
        /* Applied as one run, but for entities 50 and 120. */
        assert_int_equal(tes_defer_end(def.w), TES_OK);
        assert_int_equal(tes_defer_begin(def.w), TES_OK);
        for (uint32_t i = 0; i < 200; i++) {
            if (i < 60)
                assert_int_equal(tes_add(t->w, t->e[i], t->c[4]), TES_OK);
            else if (i < 120)
                assert_int_equal(tes_add(t->w, t->e[i], t->c[1]), TES_OK);
            else
                set3(t, i, 3, (int32_t)i);
        }
        assert_int_equal(tes_defer_end(def.w), TES_OK);
    }
    assert_int_equal(((const v3_t *)tes_get(def.w, def.e[120], def.c[0]))->x, 360);
    assert_int_equal(((const v3_t *)tes_get(def.w, def.e[199], def.c[0]))->z, 199 * 3 + 2);
    twins_close(&imm, &def);
}

/* Runs of groups of several commands (a system that sets a few components
 * on each entity it visits): after the first group, each next entity with
 * the same commands in the same order, starting in the same table, is
 * moved by the same plan; every other shape breaks the run and is applied
 * by its own plan, with the results of call order. */
static void test_batch_runs_of_groups(void **state)
{
    (void)state;
    twin_t imm, def;
    twins_open(&imm, &def, 200);
    twin_t *both[2] = {&imm, &def};
    for (int w = 0; w < 2; w++)
        gather_in_c(both[w], 50); /* all in C's table, but 50 (in C + D) */
    for (int w = 0; w < 2; w++) {
        twin_t *t = both[w];
        assert_int_equal(tes_defer_begin(def.w), TES_OK);
        for (uint32_t i = 0; i < 200; i++) {
            if (i == 100) { /* the same components in another order */
                set3(t, i, 1, 7);
                set3(t, i, 0, 8);
                continue;
            }
            set3(t, i, 0, (int32_t)i);
            if (i == 130) /* A again: a group of three, the last A wins */
                set3(t, i, 0, -5);
            if (i == 140) /* T added instead of B */
                assert_int_equal(tes_add(t->w, t->e[i], t->c[4]), TES_OK);
            else
                set3(t, i, 1, (int32_t)i * 2);
            if (i >= 160 && i < 170) /* and D: a run of groups of three */
                set3(t, i, 3, (int32_t)i * 5);
        }
        /* Entity 80's group is not consecutive: it ends here. */
        set3(t, 80, 3, 99);
        assert_int_equal(tes_defer_end(def.w), TES_OK);
        /* Again, from the tables the first queue left: B set in place by
         * groups that move nothing, A and B removed then set again. */
        assert_int_equal(tes_defer_begin(def.w), TES_OK);
        for (uint32_t i = 0; i < 200; i++) {
            set3(t, i, 1, (int32_t)i + 1000);
            set3(t, i, 0, (int32_t)i + 2000);
        }
        for (uint32_t i = 0; i < 20; i++)
            assert_int_equal(tes_remove(t->w, t->e[i], t->c[0]), TES_OK);
        for (uint32_t i = 0; i < 20; i++) {
            set3(t, i, 0, (int32_t)i + 3000);
            set3(t, i, 1, (int32_t)i + 4000);
        }
        assert_int_equal(tes_defer_end(def.w), TES_OK);
    }
    assert_int_equal(((const v3_t *)tes_get(def.w, def.e[130], def.c[0]))->x, 2130);
    assert_int_equal(((const v3_t *)tes_get(def.w, def.e[10], def.c[0]))->x, 3010);
    assert_int_equal(((const v3_t *)tes_get(def.w, def.e[10], def.c[1]))->y, 4011);
    assert_int_equal(*(const int32_t *)tes_get(def.w, def.e[80], def.c[3]), 99);
    assert_int_equal(*(const int32_t *)tes_get(def.w, def.e[165], def.c[3]), 165 * 5);
    assert_true(tes_has(def.w, def.e[140], def.c[4]));
    twins_close(&imm, &def);
}

/* A hook that asks for a group on A while the queue is applied: whenever
 * the group is built, every entity that gains A is a member, those moved
 * by the run before the hook and those moved after it by the same plan. */
static twin_t *group_twin;
static tes_comp_t group_sparse;
static tes_query_t *made_group;

/* A group driven by a sparse term keeps its members, and hears A. */
static void h_make_group(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (!made_group)
        made_group = tes_query_new(w, &(tes_query_desc_t){
                                          .terms = {{group_sparse}, {group_twin->c[0]}},
                                          .flags = TES_QUERY_NONOWNING_GROUP});
}

static void test_batch_plan_after_hook_makes_group(void **state)
{
    (void)state;
    twin_t def;
    twin_new(&def, 40);
    tes_comp_t hooked = hooked_comp(&def, "MakesGroup", h_make_group);
    tes_component_desc_t d = {0};
    d.name = "S";
    d.storage = TES_STORAGE_SPARSE;
    group_sparse = tes_component(def.w, &d);
    assert_true(group_sparse);
    for (uint32_t i = 0; i < 40; i += 4)
        assert_int_equal(tes_add(def.w, def.e[i], group_sparse), TES_OK);
    group_twin = &def;
    made_group = NULL;
    assert_int_equal(tes_defer_begin(def.w), TES_OK);
    /* Entities 0, 4, ..., 36 have no component: one source table. */
    for (uint32_t i = 0; i < 20; i += 4)
        set3(&def, i, 0, (int32_t)i);
    assert_int_equal(tes_set(def.w, def.e[1], hooked, &(int32_t){1}), TES_OK);
    for (uint32_t i = 20; i < 40; i += 4) /* the same shape from the same table */
        set3(&def, i, 0, (int32_t)i);
    assert_int_equal(tes_defer_end(def.w), TES_OK);
    assert_non_null(made_group);
    int32_t members = 0;
    tes_iter_t it = tes_query_iter(made_group);
    while (tes_iter_next(&it))
        members += it.count;
    assert_int_equal(members, 10);
    check(def.w);
    tes_query_free(made_group);
    tes_world_free(def.w);
}

static void test_batch_stale_spawned_destroyed(void **state)
{
    (void)state;
    twin_t def;
    twin_new(&def, 8);
    tes_world_t *w = def.w;
    tes_entity_t dead = def.e[6];
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    /* A stale handle fails at once and queues nothing. */
    assert_int_equal(tes_set(w, dead, def.c[0], &(v3_t){1, 2, 3}), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    tes_entity_t fresh = tes_spawn(w); /* issued now, made at the flush */
    assert_int_equal(tes_set(w, fresh, def.c[0], &(v3_t){4, 5, 6}), TES_OK);
    assert_int_equal(tes_set(w, fresh, def.c[3], &(int32_t){8}), TES_OK);
    assert_int_equal(tes_set(w, def.e[1], def.c[0], &(v3_t){7, 8, 9}), TES_OK);
    assert_int_equal(tes_destroy(w, def.e[1]), TES_OK);
    /* Dropped at the flush: not an error. */
    assert_int_equal(tes_set(w, def.e[1], def.c[1], &(v3_t){7, 8, 9}), TES_OK);
    assert_int_equal(tes_set(w, def.e[2], def.c[0], &(v3_t){1, 1, 1}), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_alive(w, def.e[1]));
    const v3_t *a = tes_get(w, fresh, def.c[0]);
    assert_non_null(a);
    assert_int_equal(a->y, 5);
    assert_int_equal(*(const int32_t *)tes_get(w, fresh, def.c[3]), 8);
    assert_int_equal(((const v3_t *)tes_get(w, def.e[2], def.c[0]))->z, 1);
    check(w);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_mixed_components),
        cmocka_unit_test(test_batch_interrupted_by_hook),
        cmocka_unit_test(test_batch_add_remove_interleaved),
        cmocka_unit_test(test_batch_ensure_reads_plain_set),
        cmocka_unit_test(test_batch_runs_one_table),
        cmocka_unit_test(test_batch_runs_of_groups),
        cmocka_unit_test(test_batch_plan_after_hook_makes_group),
        cmocka_unit_test(test_batch_stale_spawned_destroyed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
