/*
 * The deferred queue's machinery (src/world/defer*.c): the flush merging an
 * entity's commands into one table move, the per-entity records behind
 * deferred tes_ensure, and the staging arena.
 *
 * - One move: five quiet commands on one entity move it once (the move hook
 *   of a component it keeps runs once), with the result of call order.
 * - Removed then added again: the value is a new default (dtor + ctor),
 *   exactly as call order gives.
 * - Barriers: a hook that looks at another entity sees that entity as call
 *   order leaves it, even when the other entity's commands sit on both
 *   sides of the hook's command.
 * - Many commands on one entity (more distinct components than one merge
 *   tracks) against the same calls made immediately in a twin world.
 * - Deferred ensure after a queued instantiation, at every queue length
 *   around the growth points (issue 11 defect 2: the filling command was
 *   read through a pointer into the queue after the queue grew; ASan).
 * - Staged values stay put while the arena grows, and a second identical
 *   block allocates nothing (the queue keeps its memory).
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

#include "support/counting_alloc.h"
#include "unit/tracker.h"

typedef struct {
    int32_t x;
} i32_t;

static counters_t tracked_n;
static comp_ctx_t tracked_ctx;

/* A data component with ctor/dtor/copy/move hooks and no observers. */
static tes_comp_t tracked_component(tes_world_t *w)
{
    memset(&tracked_n, 0, sizeof tracked_n);
    tracked_ctx = (comp_ctx_t){&tracked_n, sizeof(val_t), 0};
    tes_component_desc_t d = {0};
    d.name = "Tracked";
    d.size = sizeof(val_t);
    d.align = _Alignof(val_t);
    d.hooks.ctor = h_ctor;
    d.hooks.dtor = h_dtor;
    d.hooks.copy = h_copy;
    d.hooks.move = h_move;
    d.hooks.ctx = &tracked_ctx;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c);
    tracked_ctx.id = c;
    return c;
}

static tes_comp_t plain(tes_world_t *w, const char *name, size_t size)
{
    tes_component_desc_t d = {0};
    d.name = name;
    d.size = size;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c);
    return c;
}

static val_t tracked_value(uint64_t stamp)
{
    val_t v = {LIVE, 0, stamp};
    return v;
}

static void test_merge_one_move(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t t = tracked_component(w);
    tes_comp_t a = plain(w, "A", sizeof(i32_t)), b = plain(w, "B", sizeof(i32_t));
    tes_comp_t tag = plain(w, "Tag", 0);
    tes_entity_t e = tes_spawn(w);
    val_t seven = tracked_value(7);
    assert_int_equal(tes_set(w, e, t, &seven), TES_OK);
    int64_t moves = tracked_n.move;

    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(tes_set(w, e, b, &(i32_t){5}), TES_OK);
    assert_int_equal(tes_add(w, e, tag), TES_OK);
    assert_int_equal(tes_remove(w, e, a), TES_OK);
    assert_int_equal(tes_set(w, e, b, &(i32_t){9}), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);

    /* In call order the entity would have moved four times. */
    assert_int_equal(tracked_n.move - moves, 1);
    assert_false(tes_has(w, e, a));
    assert_true(tes_has(w, e, tag));
    assert_int_equal(((const i32_t *)tes_get(w, e, b))->x, 9);
    assert_int_equal(((const val_t *)tes_get(w, e, t))->stamp, 7);
    assert_int_equal(tracked_n.bad, 0);
    check(w);
    tes_world_free(w);
    assert_int_equal(tracked_n.ctor, tracked_n.dtor);
}

static void test_merge_reborn(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t t = tracked_component(w);
    tes_comp_t a = plain(w, "A", sizeof(i32_t));
    tes_entity_t e = tes_spawn(w);
    val_t three = tracked_value(3), five = tracked_value(5);
    assert_int_equal(tes_set(w, e, t, &three), TES_OK);
    assert_int_equal(tes_set(w, e, a, &(i32_t){1}), TES_OK);

    /* Removed and added again: a new default value, not the old one. */
    int64_t ctor = tracked_n.ctor, dtor = tracked_n.dtor;
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_remove(w, e, t), TES_OK);
    assert_int_equal(tes_add(w, e, t), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(((const val_t *)tes_get(w, e, t))->stamp, 0);
    assert_int_equal(tracked_n.ctor - ctor, 1);
    assert_int_equal(tracked_n.dtor - dtor, 1);

    /* A set before the remove is lost; a set after it wins. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set(w, e, t, &five), TES_OK);
    assert_int_equal(tes_remove(w, e, t), TES_OK);
    assert_int_equal(tes_add(w, e, t), TES_OK);
    assert_int_equal(tes_set(w, e, a, &(i32_t){2}), TES_OK);
    assert_int_equal(tes_remove(w, e, a), TES_OK);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(((const val_t *)tes_get(w, e, t))->stamp, 0);
    assert_int_equal(((const i32_t *)tes_get(w, e, a))->x, 0);
    assert_int_equal(tracked_n.bad, 0);
    check(w);
    tes_world_free(w);
    assert_int_equal(tracked_n.ctor, tracked_n.dtor);
}

/* The observer of H: records what `watched` holds when it runs. */
static tes_entity_t watched;
static tes_comp_t watched_q1, watched_q2;
static int seen_q1 = -1, seen_q2 = -1;

static void h_look(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    seen_q1 = tes_has(w, watched, watched_q1);
    seen_q2 = tes_has(w, watched, watched_q2);
}

static void test_merge_stops_at_hooks(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    watched_q1 = plain(w, "Q1", 0);
    watched_q2 = plain(w, "Q2", 0);
    tes_component_desc_t d = {0};
    d.name = "H";
    d.size = sizeof(i32_t);
    d.hooks.on_set = h_look;
    tes_comp_t h = tes_component(w, &d);
    assert_true(h);
    watched = tes_spawn(w);
    tes_entity_t other = tes_spawn(w);

    /* The hook runs between the two adds: it must see Q1 and not Q2. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_add(w, watched, watched_q1), TES_OK);
    assert_int_equal(tes_set(w, other, h, &(i32_t){1}), TES_OK);
    assert_int_equal(tes_add(w, watched, watched_q2), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(seen_q1, 1);
    assert_int_equal(seen_q2, 0);
    assert_true(tes_has(w, watched, watched_q2));
    check(w);
    tes_world_free(w);
}

#define MANY_COMPS 24

/* What an entity holds: components (as a mask) and their values. */
static void snapshot(tes_world_t *w, tes_entity_t e, const tes_comp_t *c, uint32_t *mask,
                     int32_t *vals)
{
    *mask = 0;
    for (int k = 0; k < MANY_COMPS; k++) {
        vals[k] = 0;
        if (tes_has(w, e, c[k])) {
            *mask |= 1u << k;
            const i32_t *v = tes_get(w, e, c[k]);
            vals[k] = v ? v->x : 0;
        }
    }
}

static void test_merge_many_commands(void **state)
{
    (void)state;
    rng_seed(12);
    for (int round = 0; round < 40; round++) {
        tes_world_t *imm = tes_world_new(NULL), *def = tes_world_new(NULL);
        tes_comp_t ci[MANY_COMPS], cd[MANY_COMPS];
        for (int k = 0; k < MANY_COMPS; k++) {
            char name[16];
            snprintf(name, sizeof name, "C%d", k);
            /* Every fourth a tag; a few sparse. */
            size_t size = k % 4 == 3 ? 0 : sizeof(i32_t);
            tes_component_desc_t d = {0};
            d.name = name;
            d.size = size;
            d.storage = k % 7 == 5 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE;
            ci[k] = tes_component(imm, &d);
            cd[k] = tes_component(def, &d);
            assert_true(ci[k] && cd[k]);
        }
        tes_entity_t ei[3], ed[3];
        for (int i = 0; i < 3; i++) {
            ei[i] = tes_spawn(imm);
            ed[i] = tes_spawn(def);
        }
        assert_int_equal(tes_defer_begin(def), TES_OK);
        uint32_t n = 50 + rng_below(400);
        for (uint32_t j = 0; j < n; j++) {
            int i = rng_chance(80) ? 0 : (int)rng_below(3);
            int k = (int)rng_below(round < 20 ? 8 : MANY_COMPS);
            i32_t v = {(int32_t)rng_below(1000) + 1};
            bool tag = k % 4 == 3;
            switch (rng_below(tag ? 2 : 4)) {
            case 0:
                assert_int_equal(tes_add(imm, ei[i], ci[k]), TES_OK);
                assert_int_equal(tes_add(def, ed[i], cd[k]), TES_OK);
                break;
            case 1:
                assert_int_equal(tes_remove(imm, ei[i], ci[k]), TES_OK);
                assert_int_equal(tes_remove(def, ed[i], cd[k]), TES_OK);
                break;
            case 2:
                assert_int_equal(tes_set(imm, ei[i], ci[k], &v), TES_OK);
                assert_int_equal(tes_set(def, ed[i], cd[k], &v), TES_OK);
                break;
            default: {
                i32_t *pi = tes_ensure(imm, ei[i], ci[k]);
                i32_t *pd = tes_ensure(def, ed[i], cd[k]);
                assert_non_null(pi);
                assert_non_null(pd);
                /* The deferred ensure answers what the entity will hold. */
                assert_int_equal(pi->x, pd->x);
                pi->x += v.x;
                pd->x += v.x;
                break;
            }
            }
        }
        assert_int_equal(tes_defer_end(def), TES_OK);
        for (int i = 0; i < 3; i++) {
            uint32_t mi, md;
            int32_t vi[MANY_COMPS], vd[MANY_COMPS];
            snapshot(imm, ei[i], ci, &mi, vi);
            snapshot(def, ed[i], cd, &md, vd);
            assert_int_equal(mi, md);
            assert_memory_equal(vi, vd, sizeof vi);
        }
        check(imm);
        check(def);
        tes_world_free(imm);
        tes_world_free(def);
    }
}

static void test_ensure_after_instantiate_at_growth(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = plain(w, "A", sizeof(i32_t));
    tes_comp_t tag = plain(w, "Tag", 0);
    tes_entity_t prefab = tes_prefab_new(w);
    assert_int_equal(tes_set(w, prefab, a, &(i32_t){42}), TES_OK);
    enum { MAX_PREFIX = 300 };
    tes_entity_t *ents = malloc(MAX_PREFIX * sizeof *ents);
    assert_non_null(ents);
    assert_int_equal(tes_spawn_n(w, MAX_PREFIX, NULL, 0, ents), TES_OK);
    /* Whatever the queue's growth policy, some prefix length puts the
     * ensure right at a growth point. */
    for (int prefix = 0; prefix < MAX_PREFIX; prefix += 1 + prefix / 64) {
        assert_int_equal(tes_defer_begin(w), TES_OK);
        for (int i = 0; i < prefix; i++)
            assert_int_equal(tes_add(w, ents[i], tag), TES_OK);
        tes_entity_t copy;
        assert_true(tes_instantiate(w, prefab, &copy, 1));
        i32_t *v = tes_ensure(w, copy, a);
        assert_non_null(v);
        assert_int_equal(v->x, 42); /* the prefab's value, as the flush gives it */
        v->x = prefix;
        assert_int_equal(tes_defer_end(w), TES_OK);
        assert_int_equal(((const i32_t *)tes_get(w, copy, a))->x, prefix);
        for (int i = 0; i < prefix; i++)
            assert_int_equal(tes_remove(w, ents[i], tag), TES_OK);
    }
    check(w);
    free(ents);
    tes_world_free(w);
}

static void test_staging_arena(void **state)
{
    (void)state;
    ca_state_t ca;
    ca_init(&ca, 0);
    tes_world_desc_t desc = {.allocator = ca_allocator(&ca)};
    tes_world_t *w = tes_world_new(&desc);
    assert_non_null(w);
    tes_comp_t pos = plain(w, "Pos", sizeof(i32_t));
    tes_comp_t vel = plain(w, "Vel", 64); /* several values per arena block */
    enum { N = 4000 }; /* 64-byte values: the arena makes several blocks */
    tes_entity_t *ents = malloc(N * sizeof *ents);
    i32_t **staged = malloc(N * sizeof *staged);
    assert_non_null(ents);
    assert_non_null(staged);
    assert_int_equal(tes_spawn_n(w, N, &pos, 1, ents), TES_OK);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(tes_defer_begin(w), TES_OK);
        uint64_t queue_allocs = ca.calls;
        for (int i = 0; i < N; i++) {
            staged[i] = tes_ensure(w, ents[i], vel);
            assert_non_null(staged[i]);
            assert_int_equal(tes_set(w, ents[i], pos, &(i32_t){i}), TES_OK);
        }
        /* Written only now, after the arena grew many times. */
        for (int i = 0; i < N; i++)
            staged[i]->x = i * 3 + round;
        queue_allocs = ca.calls - queue_allocs;
        assert_int_equal(tes_defer_end(w), TES_OK);
        for (int i = 0; i < N; i++) {
            assert_int_equal(((const i32_t *)tes_get(w, ents[i], vel))->x, i * 3 + round);
            assert_int_equal(((const i32_t *)tes_get(w, ents[i], pos))->x, i);
        }
        /* The same block again: the queue kept its memory, so queuing
         * allocates nothing (tables may, in debug builds that move them on
         * every reserve). */
        if (round == 2)
            assert_int_equal(queue_allocs, 0);
        for (int i = 0; i < N; i++)
            assert_int_equal(tes_remove(w, ents[i], vel), TES_OK);
    }
    check(w);
    free(staged);
    free(ents);
    tes_world_free(w);
    assert_int_equal(ca.live_blocks, 0);
    assert_int_equal(ca.bad_sizes + ca.bad_ptrs, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_one_move),
        cmocka_unit_test(test_merge_reborn),
        cmocka_unit_test(test_merge_stops_at_hooks),
        cmocka_unit_test(test_merge_many_commands),
        cmocka_unit_test(test_ensure_after_instantiate_at_growth),
        cmocka_unit_test(test_staging_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
