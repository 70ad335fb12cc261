/*
 * The quiet paths of tes_set, tes_add and tes_remove: a component with no
 * hooks that no watcher hears is added, set and removed without the
 * generic begin/end guard while nothing unusual is going on (no hook
 * running, nothing deferred, no system running). These tests pin down the
 * cases where the quiet path must behave exactly like the generic one, or
 * hand the call over to it:
 * - a value that points into the world's own storage (the destination
 *   table, which may move for the new row; the source table's last row,
 *   which fills the hole the moving entity leaves);
 * - another component of the entity with a move hook (moving the row runs
 *   user code, so the hook level must be raised);
 * - a watcher (an owning group) subscribing to the component, then going
 *   away (the component's dispatch follows);
 * - deferral, calls from inside hooks, stale handles, unknown ids and NULL
 *   values (refused or queued exactly as before);
 * - sparse removal finding the entry once (swap-and-pop and stable stores
 *   keep every other value);
 * - odd and large value sizes, component ids past the tables' direct
 *   column map, and tes_destroy's quiet and generic cases.
 * Each test checks the full world invariant afterwards.
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

#include "unit/vec3.h"

static tes_comp_t reg(tes_world_t *w, const char *name, size_t size, tes_storage_t storage,
                      bool stable)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    d.stable = stable;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

/* tes_set's value lives in the destination table: the table grows for the
 * new row (or, under TES_DEBUG, moves on every reservation), so the quiet
 * path must not read it after the reservation. */
static void test_value_in_destination_table(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t b = reg(w, "B", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    /* Fill {A, B} to its capacity so that the next row grows it. */
    tes_entity_t full[16];
    for (int i = 0; i < 16; i++) {
        full[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, full[i], a, &v), TES_OK);
        assert_int_equal(tes_set(w, full[i], b, &v), TES_OK);
    }
    for (int round = 0; round < 40; round++) {
        tes_entity_t e = tes_spawn(w);
        vec3_t v = vec(100.0f);
        assert_int_equal(tes_set(w, e, a, &v), TES_OK);
        /* e moves {A} -> {A, B} with a value read from {A, B}. */
        const void *src = tes_get(w, full[round % 16], b);
        assert_int_equal(tes_set(w, e, b, src), TES_OK);
        assert_vec(tes_get(w, e, b), (float)(round % 16));
        assert_vec(tes_get(w, e, a), 100.0f);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* The value is the source table's last row: when the moving entity leaves
 * its row, the last row fills the hole, so the new cell must be written
 * first. */
static void test_value_in_source_last_row(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t b = reg(w, "B", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_entity_t es[8];
    for (int i = 0; i < 8; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, es[i], a, &v), TES_OK);
    }
    /* es[0] is row 0 of {A}; es[7] is its last row. */
    assert_int_equal(tes_set(w, es[0], b, tes_get(w, es[7], a)), TES_OK);
    assert_vec(tes_get(w, es[0], b), 7.0f);
    assert_vec(tes_get(w, es[0], a), 0.0f);
    assert_vec(tes_get(w, es[7], a), 7.0f);
    /* And its own cell, which the move copies away. */
    assert_int_equal(tes_set(w, es[1], b, tes_get(w, es[1], a)), TES_OK);
    assert_vec(tes_get(w, es[1], b), 1.0f);
    for (int i = 2; i < 8; i++)
        assert_vec(tes_get(w, es[i], a), (float)i);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A move hook of another component of the entity runs when the row moves:
 * it is user code, so structural calls it makes are refused, as on the
 * generic path, and every value arrives. */
static int move_calls;
static int move_busy;
static tes_world_t *hook_world;
static tes_comp_t hook_plain;

static void counting_move(void *dst, void *src, int32_t n, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)n * sizeof(vec3_t));
    move_calls++; /* one call, one attempt below */
    tes_entity_t other = tes_spawn(hook_world);
    if (other == TES_NULL && tes_last_error(hook_world) == TES_ERR_BUSY)
        move_busy++;
}

static void test_other_component_move_hook(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_world = w;
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "Hooked";
    d.size = sizeof(vec3_t);
    d.hooks.move = counting_move;
    tes_comp_t hooked = tes_component(w, &d);
    hook_plain = reg(w, "Plain", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_entity_t es[4];
    for (int i = 0; i < 4; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, es[i], hooked, &v), TES_OK);
    }
    int32_t alive = tes_entity_count(w);
    move_calls = move_busy = 0;
    vec3_t p = vec(50.0f);
    assert_int_equal(tes_set(w, es[0], hook_plain, &p), TES_OK);
    assert_true(move_calls >= 1);
    assert_int_equal(move_busy, move_calls); /* every call from the hook refused */
    assert_int_equal(tes_entity_count(w), alive);
    int before = move_calls;
    assert_int_equal(tes_remove(w, es[0], hook_plain), TES_OK);
    assert_true(move_calls > before);
    assert_int_equal(move_busy, move_calls);
    for (int i = 0; i < 4; i++)
        assert_vec(tes_get(w, es[i], hooked), (float)i);
    assert_false(tes_has(w, es[0], hook_plain));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static int32_t walk_count(tes_query_t *q)
{
    int32_t n = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        n += it.count;
    return n;
}

/* An owning group subscribes to its components: while it lives, changes of
 * them must reach it (the generic path); once freed, the quiet path comes
 * back and the world stays consistent. */
static void test_group_follows_dispatch(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_comp_t b = reg(w, "B", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_comp_t t = reg(w, "T", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_entity_t es[32];
    for (int i = 0; i < 32; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, es[i], a, &v), TES_OK);
    }
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = a;
    qd.terms[1].comp = b;
    qd.flags = TES_QUERY_OWNING_GROUP;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    assert_int_equal(walk_count(q), 0);
    for (int i = 0; i < 32; i += 2) {
        vec3_t v = vec(1000.0f + (float)i);
        assert_int_equal(tes_set(w, es[i], b, &v), TES_OK);
        assert_int_equal(tes_add(w, es[i], t), TES_OK);
    }
    assert_int_equal(walk_count(q), 16);
    assert_int_equal(tes_query_count(q), 16);
    for (int i = 0; i < 32; i += 4)
        assert_int_equal(tes_remove(w, es[i], b), TES_OK);
    assert_int_equal(walk_count(q), 8);
    for (int i = 0; i < 32; i++)
        assert_vec(tes_get(w, es[i], a), (float)i);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(q);
    /* Quiet again: the values and memberships stay right. */
    for (int i = 0; i < 32; i++) {
        vec3_t v = vec(2000.0f + (float)i);
        assert_int_equal(tes_set(w, es[i], b, &v), TES_OK);
    }
    for (int i = 0; i < 32; i += 3)
        assert_int_equal(tes_remove(w, es[i], a), TES_OK);
    for (int i = 0; i < 32; i++) {
        assert_vec(tes_get(w, es[i], b), 2000.0f + (float)i);
        if (i % 3)
            assert_vec(tes_get(w, es[i], a), (float)i);
        else
            assert_null(tes_get(w, es[i], a));
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* While deferred, plain components are queued like any other. */
static void test_deferred_still_queues(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_entity_t e = tes_spawn(w);
    vec3_t v = vec(3.0f);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set(w, e, a, &v), TES_OK);
    assert_int_equal(tes_set(w, e, s, &v), TES_OK);
    assert_false(tes_has(w, e, a));
    assert_false(tes_has(w, e, s));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_vec(tes_get(w, e, a), 3.0f);
    assert_vec(tes_get(w, e, s), 3.0f);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_remove(w, e, a), TES_OK);
    assert_int_equal(tes_remove(w, e, s), TES_OK);
    assert_true(tes_has(w, e, a));
    assert_true(tes_has(w, e, s));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_has(w, e, a));
    assert_false(tes_has(w, e, s));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* From inside an observer the plain calls are refused (TES_ERR_BUSY). */
static int observer_results[4];
static tes_comp_t obs_table, obs_sparse;

static void observer(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr;
    (void)ctx;
    vec3_t v = vec(9.0f);
    observer_results[0] = tes_set(w, e, obs_table, &v);
    observer_results[1] = tes_add(w, e, obs_sparse);
    observer_results[2] = tes_remove(w, e, obs_table);
    observer_results[3] = tes_remove(w, e, obs_sparse);
}

static void test_refused_inside_hooks(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    obs_table = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    obs_sparse = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "Watched";
    d.size = 4;
    d.hooks.on_add = observer;
    tes_comp_t watched = tes_component(w, &d);
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, obs_sparse), TES_OK);
    assert_int_equal(tes_add(w, e, watched), TES_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(observer_results[i], TES_ERR_BUSY);
    assert_false(tes_has(w, e, obs_table));
    assert_true(tes_has(w, e, obs_sparse));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Failed calls report the same statuses and change nothing. */
static void test_failures_change_nothing(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_entity_t e = tes_spawn(w);
    tes_entity_t dead = tes_spawn(w);
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    vec3_t v = vec(1.0f);
    tes_comp_t comps[2] = {a, s};
    for (int k = 0; k < 2; k++) {
        tes_comp_t c = comps[k];
        assert_int_equal(tes_set(w, dead, c, &v), TES_ERR_STALE);
        assert_int_equal(tes_last_error(w), TES_ERR_STALE);
        assert_int_equal(tes_add(w, dead, c), TES_ERR_STALE);
        assert_int_equal(tes_remove(w, dead, c), TES_ERR_STALE);
        assert_int_equal(tes_set(w, TES_NULL, c, &v), TES_ERR_STALE);
        assert_int_equal(tes_set(w, e, c, NULL), TES_ERR_INVALID);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        assert_false(tes_has(w, e, c));
        /* A handle whose generation matches the free slot's next one. */
        tes_entity_t forged = tes_entity_make(tes_entity_index(dead),
                                              tes_entity_generation(dead) + 1);
        assert_int_equal(tes_add(w, forged, c), TES_ERR_STALE);
        assert_int_equal(tes_remove(w, forged, c), TES_ERR_STALE);
    }
    assert_int_equal(tes_set(w, e, 999, &v), TES_ERR_INVALID);
    assert_int_equal(tes_add(w, e, 0), TES_ERR_INVALID);
    assert_int_equal(tes_remove(w, e, 999), TES_ERR_INVALID);
    assert_int_equal(tes_set(NULL, e, a, &v), TES_ERR_INVALID);
    assert_int_equal(tes_add(NULL, e, a), TES_ERR_INVALID);
    assert_int_equal(tes_remove(NULL, e, a), TES_ERR_INVALID);
    assert_false(tes_has(w, e, a));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Sparse removal finds the entry once and removes that position: every
 * other value stays (swap-and-pop moves the last one; stable stores keep
 * addresses). Checked against a shadow array over random churn. */
static void sparse_churn(bool stable)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, stable);
    enum { N = 300 };
    tes_entity_t es[N];
    bool has[N];
    const void *addr[N];
    for (int i = 0; i < N; i++) {
        es[i] = tes_spawn(w);
        has[i] = false;
        addr[i] = NULL;
    }
    uint64_t r = 12345;
    for (int step = 0; step < 20000; step++) {
        r = r * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        int i = (int)((r >> 33) % N);
        if (has[i]) {
            assert_int_equal(tes_remove(w, es[i], s), TES_OK);
            has[i] = false;
        } else {
            vec3_t v = vec((float)i);
            assert_int_equal(tes_set(w, es[i], s, &v), TES_OK);
            has[i] = true;
            addr[i] = tes_get(w, es[i], s);
        }
        if (step % 997 == 0) {
            for (int k = 0; k < N; k++) {
                if (!has[k]) {
                    assert_null(tes_get(w, es[k], s));
                    continue;
                }
                assert_vec(tes_get(w, es[k], s), (float)k);
                if (stable)
                    assert_ptr_equal(tes_get(w, es[k], s), addr[k]);
            }
        }
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_sparse_remove_swap(void **state)
{
    (void)state;
    sparse_churn(false);
}

static void test_sparse_remove_stable(void **state)
{
    (void)state;
    sparse_churn(true);
}

/* The sparse quiet add's slow routes (a sparse page not yet made, a full
 * packed array, a new data page) and its single-lookup forms on a tag
 * store (no data) and across several sparse pages; stale handles are
 * refused and change nothing, a live entity without the component removes
 * as a no-op. */
static void test_sparse_pages_and_tags(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_comp_t tag = reg(w, "STag", 0, TES_STORAGE_SPARSE, false);
    enum { N = 9000 };
    static tes_entity_t es[N];
    assert_int_equal(tes_spawn_n(w, N, NULL, 0, es), TES_OK);
    for (int i = N - 1; i >= 0; i -= 3) {
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, es[i], s, &v), TES_OK);
        assert_int_equal(tes_add(w, es[i], tag), TES_OK);
        assert_int_equal(tes_add(w, es[i], tag), TES_OK); /* present: nothing */
    }
    for (int i = N - 1; i >= 0; i -= 6) {
        assert_int_equal(tes_remove(w, es[i], s), TES_OK);
        assert_int_equal(tes_remove(w, es[i], tag), TES_OK);
        assert_int_equal(tes_remove(w, es[i], tag), TES_OK); /* absent: nothing */
    }
    tes_entity_t dead = es[1];
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    assert_int_equal(tes_add(w, dead, s), TES_ERR_STALE);
    assert_int_equal(tes_remove(w, dead, s), TES_ERR_STALE);
    assert_int_equal(tes_add(w, dead, tag), TES_ERR_STALE);
    assert_int_equal(tes_remove(w, dead, tag), TES_ERR_STALE);
    for (int i = 2; i < N; i++) {
        int from_end = N - 1 - i;
        bool held = from_end % 3 == 0 && from_end % 6 != 0;
        assert_int_equal(tes_has(w, es[i], s), held);
        assert_int_equal(tes_has(w, es[i], tag), held);
        if (held)
            assert_vec(tes_get(w, es[i], s), (float)i);
        else
            assert_null(tes_get(w, es[i], s));
        assert_null(tes_get(w, es[i], tag));
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Tags on the quiet path: add and remove move the entity between tables
 * whose column lists are equal. */
static void test_table_tags(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t tag = reg(w, "Tag", 0, TES_STORAGE_TABLE, false);
    tes_entity_t es[20];
    for (int i = 0; i < 20; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, es[i], a, &v), TES_OK);
        assert_int_equal(tes_add(w, es[i], tag), TES_OK);
        assert_int_equal(tes_set(w, es[i], tag, NULL), TES_OK);
    }
    for (int i = 0; i < 20; i += 2)
        assert_int_equal(tes_remove(w, es[i], tag), TES_OK);
    for (int i = 0; i < 20; i++) {
        assert_vec(tes_get(w, es[i], a), (float)i);
        assert_int_equal(tes_has(w, es[i], tag), i % 2 == 1);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Values of odd sizes (1, 3, 6, 24 bytes: copied without libc) and of a
 * size past the small-copy limit (100 bytes: such tables take the generic
 * path) survive moves between tables and the swap-removes they cause; in
 * sparse stores, the same sizes survive swap-and-pop removals. */
static void fill(void *p, size_t size, unsigned seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < size; i++)
        b[i] = (unsigned char)(seed * 31u + i * 7u + 1u);
}

static bool same(const void *p, size_t size, unsigned seed)
{
    unsigned char want[128];
    fill(want, size, seed);
    return p && memcmp(p, want, size) == 0;
}

static void odd_and_large_sizes(tes_storage_t storage)
{
    tes_world_t *w = tes_world_new(NULL);
    static const size_t sizes[5] = {1, 3, 6, 24, 100};
    tes_comp_t c[5];
    char name[8];
    for (int k = 0; k < 5; k++) {
        snprintf(name, sizeof name, "S%d", k);
        tes_component_desc_t d;
        memset(&d, 0, sizeof d);
        d.name = name;
        d.size = sizes[k];
        d.align = 1;
        d.storage = storage;
        c[k] = tes_component(w, &d);
        assert_true(c[k] != 0);
    }
    enum { N = 64 };
    tes_entity_t es[N];
    unsigned char buf[128];
    for (int i = 0; i < N; i++) {
        es[i] = tes_spawn(w);
        for (int k = 0; k < 5; k++) {
            if ((i + k) % 3 == 0)
                continue;
            fill(buf, sizes[k], (unsigned)(i * 5 + k));
            assert_int_equal(tes_set(w, es[i], c[k], buf), TES_OK);
        }
    }
    /* Churn: remove and re-add in a scattered order. */
    for (int round = 0; round < 4; round++) {
        for (int i = round; i < N; i += 3) {
            int k = (i + round) % 5;
            if (tes_has(w, es[i], c[k])) {
                assert_int_equal(tes_remove(w, es[i], c[k]), TES_OK);
            } else {
                fill(buf, sizes[k], (unsigned)(i * 5 + k));
                assert_int_equal(tes_set(w, es[i], c[k], buf), TES_OK);
            }
        }
    }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 5; k++)
            if (tes_has(w, es[i], c[k]))
                assert_true(same(tes_get(w, es[i], c[k]), sizes[k], (unsigned)(i * 5 + k)));
    /* Destroys swap the last rows into the holes. */
    for (int i = 0; i < N; i += 2)
        assert_int_equal(tes_destroy(w, es[i]), TES_OK);
    for (int i = 1; i < N; i += 2)
        for (int k = 0; k < 5; k++)
            if (tes_has(w, es[i], c[k]))
                assert_true(same(tes_get(w, es[i], c[k]), sizes[k], (unsigned)(i * 5 + k)));
    assert_int_equal(tes_destroy(w, es[0]), TES_ERR_STALE);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_odd_and_large_sizes(void **state)
{
    (void)state;
    odd_and_large_sizes(TES_STORAGE_TABLE);
    odd_and_large_sizes(TES_STORAGE_SPARSE);
}

/* Component ids past the tables' direct column map (64) are found by the
 * scan: gets, moves and removes agree with the small ids. */
static void test_large_component_ids(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t c[80];
    char name[8];
    for (int k = 0; k < 80; k++) {
        snprintf(name, sizeof name, "C%d", k);
        c[k] = reg(w, name, sizeof(vec3_t), TES_STORAGE_TABLE, false);
    }
    assert_true(c[79] > 64);
    tes_entity_t es[10];
    for (int i = 0; i < 10; i++) {
        es[i] = tes_spawn(w);
        for (int k = 60; k < 80; k += 1 + i % 3) {
            vec3_t v = vec((float)(i * 100 + k));
            assert_int_equal(tes_set(w, es[i], c[k], &v), TES_OK);
        }
    }
    for (int i = 0; i < 10; i += 2)
        assert_int_equal(tes_remove(w, es[i], c[60]), TES_OK);
    for (int i = 0; i < 10; i++) {
        for (int k = 60; k < 80; k++) {
            bool want = (k - 60) % (1 + i % 3) == 0 && !(k == 60 && i % 2 == 0);
            assert_int_equal(tes_has(w, es[i], c[k]), want);
            if (want)
                assert_vec(tes_get(w, es[i], c[k]), (float)(i * 100 + k));
            else
                assert_null(tes_get(w, es[i], c[k]));
        }
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* tes_get's short paths (a small id's read descriptor and the table's
 * data_of map; the sparse entry alone for sparse components) and
 * tes_get_n's staged loads give the cells the general path gives, and
 * nothing for a tag, an id not issued, a stale handle whose index is
 * reused, a forged handle carrying a free slot's next generation, a retired
 * index or the null handle. Tables grow and move while the values are
 * checked, so a data_of entry that lagged behind its column would read the
 * old block. Ids past the direct maps take the general path. */
static void test_get_paths(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t c[70];
    char name[8];
    for (int k = 0; k < 70; k++) {
        snprintf(name, sizeof name, "G%d", k);
        c[k] = reg(w, name, k % 5 == 4 ? 0 : sizeof(vec3_t),
                   k % 3 == 2 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE, false);
    }
    assert_true(c[0] < 64 && c[69] >= 64);
    enum { N = 700 };
    static tes_entity_t es[N];
    /* Each entity holds every id k with (i + k) % 4 == 0, set in an order
     * that moves rows between tables and grows them as it goes. */
    for (int i = 0; i < N; i++)
        es[i] = tes_spawn(w);
    for (int k = 0; k < 70; k++)
        for (int i = 0; i < N; i++)
            if ((i + k) % 4 == 0) {
                vec3_t v = vec((float)(i * 1000 + k));
                assert_int_equal(tes_set(w, es[i], c[k], k % 5 == 4 ? NULL : &v), TES_OK);
            }
    /* Stale handles: destroyed, some indices reused by new entities. */
    for (int i = 0; i < N; i += 7)
        assert_int_equal(tes_destroy(w, es[i]), TES_OK);
    tes_entity_t stale = es[0], fresh = tes_spawn(w);
    assert_int_equal(tes_entity_index(fresh), tes_entity_index(es[(N - 1) / 7 * 7]));
    tes_entity_t forged = tes_entity_make(tes_entity_index(es[7]),
                                          tes_entity_generation(es[7]) + 1);
    for (int i = 0; i < N; i++) {
        bool alive = i % 7 != 0;
        for (int k = 0; k < 70; k++) {
            const void *p = tes_get(w, es[i], c[k]);
            if (alive && (i + k) % 4 == 0 && k % 5 != 4)
                assert_vec(p, (float)(i * 1000 + k));
            else
                assert_null(p);
        }
    }
    for (int k = 0; k < 70; k++) {
        assert_null(tes_get(w, stale, c[k]));
        assert_null(tes_get(w, forged, c[k]));
        assert_null(tes_get(w, TES_NULL, c[k]));
        assert_null(tes_get(w, fresh, c[k]));
        assert_null(tes_get(NULL, es[1], c[k]));
    }
    assert_null(tes_get(w, es[3], 0));
    assert_null(tes_get(w, es[3], c[69] + 1)); /* not issued, past the maps */
    assert_null(tes_get(w, es[3], 63));         /* not issued, inside them */
    /* tes_get_n agrees with tes_get entity by entity over more entities
     * than one stage, handles of every kind mixed in. */
    static tes_entity_t probe[N + 4];
    static const void *out[N + 4];
    for (int i = 0; i < N; i++)
        probe[i] = es[(i * 37) % N];
    probe[N] = stale;
    probe[N + 1] = forged;
    probe[N + 2] = TES_NULL;
    probe[N + 3] = fresh;
    for (int k = 0; k < 70; k++) {
        int32_t found = tes_get_n(w, c[k], probe, N + 4, out);
        int32_t want = 0;
        for (int i = 0; i < N + 4; i++) {
            assert_ptr_equal(out[i], tes_get(w, probe[i], c[k]));
            want += out[i] != NULL;
        }
        assert_int_equal(found, want);
        assert_true(k % 5 == 4 ? found == 0 : found > 0);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* tes_destroy's quiet path leaves entities that own sparse components, run
 * dtors or on_remove, or are watched to the generic path: each of those
 * still sees its events. */
static int dtor_calls, remove_calls;
static void counting_dtor(void *ptr, int32_t n, void *ctx)
{
    (void)ptr;
    (void)ctx;
    dtor_calls += n;
}
static void counting_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w;
    (void)e;
    (void)ptr;
    (void)ctx;
    remove_calls++;
}

static void test_destroy_paths(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "D";
    d.size = 4;
    d.hooks.dtor = counting_dtor;
    tes_comp_t dc = tes_component(w, &d);
    memset(&d, 0, sizeof d);
    d.name = "R";
    d.size = 4;
    d.storage = TES_STORAGE_SPARSE;
    d.hooks.on_remove = counting_on_remove;
    tes_comp_t rc = tes_component(w, &d);
    tes_entity_t plain = tes_spawn(w), with_dtor = tes_spawn(w), with_sparse = tes_spawn(w);
    tes_entity_t empty = tes_spawn(w), keep = tes_spawn(w);
    vec3_t v = vec(1.0f);
    assert_int_equal(tes_set(w, plain, a, &v), TES_OK);
    assert_int_equal(tes_set(w, keep, a, &v), TES_OK);
    assert_int_equal(tes_set(w, with_dtor, a, &v), TES_OK);
    assert_int_equal(tes_add(w, with_dtor, dc), TES_OK);
    assert_int_equal(tes_add(w, with_sparse, rc), TES_OK);
    dtor_calls = remove_calls = 0;
    assert_int_equal(tes_destroy(w, plain), TES_OK);
    assert_int_equal(tes_destroy(w, empty), TES_OK);
    assert_int_equal(tes_destroy(w, with_dtor), TES_OK);
    assert_int_equal(dtor_calls, 1);
    assert_int_equal(tes_destroy(w, with_sparse), TES_OK);
    assert_int_equal(remove_calls, 1);
    assert_false(tes_alive(w, plain) || tes_alive(w, empty) || tes_alive(w, with_dtor) ||
                 tes_alive(w, with_sparse));
    assert_vec(tes_get(w, keep, a), 1.0f);
    /* A watcher (a group) hears the destroy. */
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = a;
    qd.flags = TES_QUERY_NONOWNING_GROUP;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    assert_int_equal(tes_query_count(q), 1);
    assert_int_equal(tes_destroy(w, keep), TES_OK);
    assert_int_equal(tes_query_count(q), 0);
    assert_int_equal(walk_count(q), 0);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* The quiet paths test one word that sums up the world's state (hook
 * depth, deferral depth, system refusals, dependents waiting); every place
 * that changes one of those keeps the word exact, which tes__world_check
 * verifies. Calls made inside hooks, deferral levels, open iterators and
 * systems must take the generic path (refused or queued), and the plain
 * path must come back afterwards. */
static tes_comp_t word_table, word_sparse;
static int word_checks_failed;
static int word_calls[2];

static void word_observer(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr;
    (void)ctx;
    word_checks_failed += tes__world_check(w) != TES_OK;
    word_calls[0] = tes_add(w, e, word_table);
    word_calls[1] = tes_remove(w, e, word_sparse);
    word_checks_failed += tes__world_check(w) != TES_OK;
}

static void word_system(tes_iter_t *it)
{
    tes_world_t *w = it->world;
    word_checks_failed += tes__world_check(w) != TES_OK;
    for (int32_t i = 0; i < it->count; i++) {
        int rc = tes_add(w, it->entities[i], word_table);
        /* A plain system is refused; a structural one queues. */
        word_calls[*(int *)it->ctx] = rc;
    }
    word_checks_failed += tes__world_check(w) != TES_OK;
}

static void test_quiet_word_tracks_state(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    word_table = reg(w, "A", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    word_sparse = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "Hooked";
    d.size = 4;
    d.hooks.on_add = word_observer;
    tes_comp_t hooked = tes_component(w, &d);
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, word_sparse), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);

    /* Inside a hook: both calls refused, the word exact at every level. */
    word_checks_failed = 0;
    assert_int_equal(tes_add(w, e, hooked), TES_OK);
    assert_int_equal(word_checks_failed, 0);
    assert_int_equal(word_calls[0], TES_ERR_BUSY);
    assert_int_equal(word_calls[1], TES_ERR_BUSY);
    assert_false(tes_has(w, e, word_table));
    assert_true(tes_has(w, e, word_sparse));
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Quiet again after the hook: the calls apply at once. */
    assert_int_equal(tes_add(w, e, word_table), TES_OK);
    assert_true(tes_has(w, e, word_table));
    assert_int_equal(tes_remove(w, e, word_table), TES_OK);

    /* Nested deferral levels: queued until the last one ends. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_int_equal(tes_add(w, e, word_table), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_int_equal(tes_remove(w, e, word_sparse), TES_OK);
    assert_false(tes_has(w, e, word_table));
    assert_true(tes_has(w, e, word_sparse));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_true(tes_has(w, e, word_table));
    assert_false(tes_has(w, e, word_sparse));

    /* An open iterator defers too; its end makes the world quiet again. */
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = word_table;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    tes_iter_t it = tes_query_iter(q);
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_int_equal(tes_add(w, e, word_sparse), TES_OK);
    assert_false(tes_has(w, e, word_sparse));
    while (tes_iter_next(&it))
        ;
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_true(tes_has(w, e, word_sparse));
    assert_int_equal(tes_remove(w, e, word_sparse), TES_OK);
    assert_false(tes_has(w, e, word_sparse));
    tes_query_free(q);

    /* Systems: a plain one is refused, a structural one queues. */
    assert_int_equal(tes_remove(w, e, word_table), TES_OK);
    assert_true(tes_has(w, e, hooked));
    int plain_slot = 0, structural_slot = 1;
    tes_system_desc_t sd;
    memset(&sd, 0, sizeof sd);
    sd.name = "plain";
    sd.query.terms[0].comp = hooked;
    sd.run = word_system;
    sd.ctx = &plain_slot;
    assert_non_null(tes_system_new(w, &sd));
    sd.name = "structural";
    sd.structural = true;
    sd.ctx = &structural_slot;
    assert_non_null(tes_system_new(w, &sd));
    word_checks_failed = 0;
    word_calls[0] = word_calls[1] = -1;
    assert_int_equal(tes_progress(w, 0.0f), TES_OK);
    assert_int_equal(word_checks_failed, 0);
    assert_int_equal(word_calls[0], TES_ERR_BUSY);
    assert_int_equal(word_calls[1], TES_OK);
    assert_true(tes_has(w, e, word_table));
    assert_int_equal(tes__world_check(w), TES_OK);
    /* And quiet after the frame. */
    assert_int_equal(tes_remove(w, e, word_table), TES_OK);
    assert_false(tes_has(w, e, word_table));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_in_destination_table),
        cmocka_unit_test(test_value_in_source_last_row),
        cmocka_unit_test(test_other_component_move_hook),
        cmocka_unit_test(test_group_follows_dispatch),
        cmocka_unit_test(test_deferred_still_queues),
        cmocka_unit_test(test_refused_inside_hooks),
        cmocka_unit_test(test_failures_change_nothing),
        cmocka_unit_test(test_sparse_remove_swap),
        cmocka_unit_test(test_sparse_remove_stable),
        cmocka_unit_test(test_sparse_pages_and_tags),
        cmocka_unit_test(test_table_tags),
        cmocka_unit_test(test_odd_and_large_sizes),
        cmocka_unit_test(test_large_component_ids),
        cmocka_unit_test(test_get_paths),
        cmocka_unit_test(test_destroy_paths),
        cmocka_unit_test(test_quiet_word_tracks_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
