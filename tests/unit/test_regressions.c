/*
 * Regression tests: one per bug found by the fuzzer, the other test suites
 * or the demo, each reduced to the smallest program that showed it. The
 * name says what went wrong; the body asserts the fixed behaviour.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tessera.h"
#include "support/counting_alloc.h"
#include "world/check.h"

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage,
                       bool stable)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage, .stable = stable};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

/* A spawn inside a non-owning group's loop reserved room in the group's
 * member array and moved the array it.entities points into. */
static void test_nonowning_group_members_stable_while_iterating(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE, false);
    tes_query_desc_t d = {.terms = {{a}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    for (int i = 0; i < 64; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
    tes_iter_t it = tes_query_iter(q);
    int seen = 0;
    while (tes_iter_next(&it)) {
        const tes_entity_t *before = it.entities;
        tes_entity_t first = it.entities[0];
        for (int i = 0; i < 1000; i++)
            assert_true(tes_spawn(w) != TES_NULL);
        assert_ptr_equal(it.entities, before);
        assert_true(it.entities[0] == first);
        seen += it.count;
    }
    assert_int_equal(seen, 64);
    assert_int_equal(tes_entity_count(w), 64 + 1000);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* tes_set copied from a value that the owning group's swap had just moved. */
static void test_set_from_value_in_owned_store(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_SPARSE, false);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE, false);
    tes_query_desc_t d = {.terms = {{a}, {b}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    tes_entity_t e1 = tes_spawn(w), e2 = tes_spawn(w);
    int seven = 7, zero = 0;
    tes_set(w, e1, a, &seven);
    tes_set(w, e2, b, &zero);
    assert_int_equal(tes_set(w, e2, a, tes_get(w, e1, a)), TES_OK);
    assert_int_equal(*(const int *)tes_get(w, e1, a), 7);
    assert_int_equal(*(const int *)tes_get(w, e2, a), 7);
    assert_int_equal(tes_query_count(q), 1);
    tes_world_free(w);
}

/* The AND-only sparse walk yielded the tombstones of a stable store. */
static void test_sparse_walk_skips_tombstones(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t s = comp(w, "S", 8, TES_STORAGE_SPARSE, true);
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++)
        tes_add(w, e[i] = tes_spawn(w), s);
    tes_remove(w, e[1], s);
    tes_query_desc_t d = {.terms = {{s}}};
    tes_query_t *q = tes_query_new(w, &d);
    assert_int_equal(tes_query_count(q), 3);
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        for (int i = 0; i < it.count; i++)
            assert_true(tes_alive(w, it.entities[i]));
    tes_world_free(w);
}

static int refused;
static void spawn_from_hook(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    refused += tes_spawn(w) == TES_NULL && tes_last_error(w) == TES_ERR_BUSY;
}

/* A flush restored the last error and hid a hook's refused call. */
static void test_flush_keeps_hook_errors(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t d = {.name = "A", .size = 4, .hooks.on_add = spawn_from_hook};
    tes_comp_t a = tes_component(w, &d);
    tes_entity_t f = tes_spawn(w);
    refused = 0;
    tes_defer_begin(w);
    tes_add(w, f, a);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(refused, 1);
    assert_int_equal(tes_last_error(w), TES_ERR_BUSY);
    tes_world_free(w);
}

/* Building an owning group under a live iterator reordered its store. */
static void test_owning_group_refused_while_iterating(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_SPARSE, false);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE, false);
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = tes_spawn(w);
        tes_set(w, e[i], a, &i);
    }
    tes_add(w, e[3], b);
    tes_query_desc_t plain = {.terms = {{a}}};
    tes_query_t *q = tes_query_new(w, &plain);
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    tes_entity_t first = it.entities[0];
    int value = ((int *)tes_field(&it, 0))[0];
    tes_query_desc_t owning = {.terms = {{a}, {b}}, .flags = TES_QUERY_OWNING_GROUP};
    assert_null(tes_query_new(w, &owning));
    assert_int_equal(tes_last_error(w), TES_ERR_BUSY);
    assert_true(it.entities[0] == first);
    assert_int_equal(((int *)tes_field(&it, 0))[0], value);
    tes_iter_fini(&it);
    assert_non_null(tes_query_new(w, &owning)); /* fine once the loop is over */
    tes_world_free(w);
}

/* A deferred ensure staged a default over a value that a queued (no-op)
 * add left in place. */
static void test_deferred_ensure_keeps_value_after_noop_add(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE, false);
    tes_entity_t e = tes_spawn(w);
    int v = 42;
    tes_set(w, e, a, &v);
    tes_defer_begin(w);
    tes_add(w, e, a);
    int *p = tes_ensure(w, e, a);
    assert_non_null(p);
    assert_int_equal(*p, 42);
    tes_defer_end(w);
    assert_int_equal(*(const int *)tes_get(w, e, a), 42);
    tes_world_free(w);
}

/* The instance array was sized apart from the slot array when the first
 * lifecycle call came before any spawn: index 64 overflowed it. */
static void test_instance_array_follows_slots(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_true(tes_prefab_new(w) != TES_NULL);
    for (int i = 0; i < 5000; i++)
        assert_true(tes_spawn(w) != TES_NULL);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A deferred ensure on an entity a queued instantiate will fill staged a
 * default and threw away the prefab's value at the flush. */
static void test_deferred_ensure_on_pending_instance(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t v = comp(w, "V", 4, TES_STORAGE_TABLE, false);
    tes_entity_t p = tes_prefab_new(w);
    int seven = 7;
    tes_set(w, p, v, &seven);
    tes_defer_begin(w);
    tes_entity_t b = TES_NULL;
    assert_int_not_equal(tes_instantiate(w, p, &b, 1), 0);
    int *pb = tes_ensure(w, b, v);
    assert_non_null(pb);
    assert_int_equal(*pb, 7);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(*(const int *)tes_get(w, b, v), 7);
    tes_world_free(w);
}

/* A deferred clone that ran out of memory at the flush was reported by
 * tes_defer_end but not recorded in tes_last_error. */
static void test_failed_flush_clone_is_recorded(void **state)
{
    (void)state;
    ca_state_t ca;
    ca_init(&ca, 0);
    tes_world_desc_t desc = {.allocator = ca_allocator(&ca)};
    tes_world_t *w = tes_world_new(&desc);
    tes_comp_t v = comp(w, "V", 4, TES_STORAGE_TABLE, false);
    tes_entity_t es[16];
    assert_int_equal(tes_spawn_n(w, 16, &v, 1, es), TES_OK); /* the table is full */
    tes_defer_begin(w);
    tes_entity_t c = tes_clone(w, es[0]);
    assert_true(c != TES_NULL);
    ca.fail_all = true;
    int rc = tes_defer_end(w);
    ca.fail_all = false;
    assert_int_equal(rc, TES_ERR_NOMEM);
    assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
    assert_false(tes_has(w, c, v));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    assert_int_equal(ca.live_blocks, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nonowning_group_members_stable_while_iterating),
        cmocka_unit_test(test_set_from_value_in_owned_store),
        cmocka_unit_test(test_sparse_walk_skips_tombstones),
        cmocka_unit_test(test_flush_keeps_hook_errors),
        cmocka_unit_test(test_owning_group_refused_while_iterating),
        cmocka_unit_test(test_deferred_ensure_keeps_value_after_noop_add),
        cmocka_unit_test(test_instance_array_follows_slots),
        cmocka_unit_test(test_deferred_ensure_on_pending_instance),
        cmocka_unit_test(test_failed_flush_clone_is_recorded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
