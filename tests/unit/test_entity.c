/*
 * Entity index tests: handle layout, LIFO reuse through the implicit free
 * list, stale handles after reuse, retirement at the generation limit, the
 * entity limit, bulk spawn, statistics and the world's allocator.
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

static void test_handle_layout(void **state)
{
    (void)state;
    tes_entity_t e = tes_entity_make(7, 3);
    assert_int_equal(tes_entity_index(e), 7);
    assert_int_equal(tes_entity_generation(e), 3);
    assert_true(e == ((uint64_t)3 << 32 | 7));
    assert_true(TES_NULL == 0);
}

static void test_null_never_alive(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    assert_false(tes_alive(w, TES_NULL));
    tes_entity_t e = tes_spawn(w);
    /* The first entity has index 0 and generation 1: never equal to null. */
    assert_int_equal(tes_entity_index(e), 0);
    assert_int_equal(tes_entity_generation(e), 1);
    assert_true(e != TES_NULL);
    assert_false(tes_alive(w, TES_NULL));
    assert_int_equal(tes_destroy(w, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_true(tes_alive(w, e));
    /* Handles never issued are not alive. */
    assert_false(tes_alive(w, tes_entity_make(0, 2)));
    assert_false(tes_alive(w, tes_entity_make(1, 1)));
    assert_false(tes_alive(w, tes_entity_make(TES_NULL_INDEX, 1)));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_lifo_reuse(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t e[8];
    for (int i = 0; i < 8; i++) {
        e[i] = tes_spawn(w);
        assert_int_equal(tes_entity_index(e[i]), i);
    }
    assert_int_equal(tes_destroy(w, e[2]), TES_OK);
    assert_int_equal(tes_destroy(w, e[5]), TES_OK);
    assert_int_equal(tes_destroy(w, e[4]), TES_OK);
    assert_int_equal(tes_entity_count(w), 5);
    /* Most recently destroyed first: 4, 5, 2, then fresh 8. */
    uint32_t expect[] = {4, 5, 2, 8};
    for (int i = 0; i < 4; i++) {
        tes_entity_t n = tes_spawn(w);
        assert_int_equal(tes_entity_index(n), expect[i]);
        assert_int_equal(tes_entity_generation(n), i < 3 ? 2 : 1);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_stale_after_reuse(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t a = tes_spawn(w);
    assert_int_equal(tes_destroy(w, a), TES_OK);
    assert_false(tes_alive(w, a));
    assert_int_equal(tes_destroy(w, a), TES_ERR_STALE);
    tes_entity_t b = tes_spawn(w);
    assert_int_equal(tes_entity_index(b), tes_entity_index(a));
    assert_true(b != a);
    assert_true(tes_alive(w, b));
    assert_false(tes_alive(w, a));
    /* The stale handle never touches the new occupant. */
    assert_int_equal(tes_destroy(w, a), TES_ERR_STALE);
    assert_true(tes_alive(w, b));
    assert_int_equal(tes_entity_count(w), 1);
    tes_world_free(w);
}

static void test_retirement(void **state)
{
    (void)state;
    tes_world_desc_t d = {.generation_limit = 3};
    tes_world_t *w = tes_world_new(&d);
    tes_entity_t seen[3];
    for (uint32_t g = 1; g <= 3; g++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_entity_index(e), 0);
        assert_int_equal(tes_entity_generation(e), g);
        seen[g - 1] = e;
        assert_int_equal(tes_destroy(w, e), TES_OK);
    }
    tes_world_stats_t s;
    assert_int_equal(tes_world_stats(w, &s), TES_OK);
    assert_int_equal(s.entities_retired, 1);
    assert_int_equal(s.entities_free, 0);
    /* Slot 0 is retired: the next spawn takes a fresh index. */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_entity_index(e), 1);
    for (int i = 0; i < 3; i++)
        assert_false(tes_alive(w, seen[i]));
    assert_false(tes_alive(w, tes_entity_make(0, 4)));
    assert_false(tes_alive(w, tes_entity_make(0, TES_TOMBSTONE)));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_no_handle_issued_twice(void **state)
{
    (void)state;
    /* Churn a tiny index space with a tiny generation limit: every handle
     * ever returned must be distinct, until the space is exhausted. */
    tes_world_desc_t d = {.generation_limit = 4, .entity_limit = 16};
    tes_world_t *w = tes_world_new(&d);
    tes_entity_t issued[16 * 4 + 1];
    int n = 0;
    for (;;) {
        tes_entity_t e = tes_spawn(w);
        if (e == TES_NULL) {
            assert_int_equal(tes_last_error(w), TES_ERR_FULL);
            break;
        }
        for (int i = 0; i < n; i++)
            assert_true(issued[i] != e);
        assert_true(n < 16 * 4);
        issued[n++] = e;
        assert_int_equal(tes_destroy(w, e), TES_OK);
    }
    assert_int_equal(n, 16 * 4);
    tes_world_stats_t s;
    tes_world_stats(w, &s);
    assert_int_equal(s.entities_retired, 16);
    assert_int_equal(s.entity_slots, 16);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_entity_limit(void **state)
{
    (void)state;
    tes_world_desc_t d = {.entity_limit = 4};
    tes_world_t *w = tes_world_new(&d);
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++)
        assert_true((e[i] = tes_spawn(w)) != TES_NULL);
    assert_true(tes_spawn(w) == TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_FULL);
    tes_entity_t out[2];
    assert_int_equal(tes_spawn_n(w, 1, NULL, 0, out), TES_ERR_FULL);
    assert_int_equal(tes_entity_count(w), 4);
    /* Freeing one makes room again. */
    assert_int_equal(tes_destroy(w, e[1]), TES_OK);
    assert_int_equal(tes_spawn_n(w, 2, NULL, 0, out), TES_ERR_FULL);
    assert_int_equal(tes_entity_count(w), 3);
    assert_int_equal(tes_spawn_n(w, 1, NULL, 0, out), TES_OK);
    assert_int_equal(tes_entity_index(out[0]), 1);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_bulk_spawn(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t first[10];
    assert_int_equal(tes_spawn_n(w, 10, NULL, 0, first), TES_OK);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(tes_entity_index(first[i]), i);
        assert_true(tes_alive(w, first[i]));
    }
    tes_destroy(w, first[3]);
    tes_destroy(w, first[7]);
    /* Bulk spawn takes free slots first (LIFO), then fresh ones. */
    tes_entity_t more[4];
    assert_int_equal(tes_spawn_n(w, 4, NULL, 0, more), TES_OK);
    assert_int_equal(tes_entity_index(more[0]), 7);
    assert_int_equal(tes_entity_index(more[1]), 3);
    assert_int_equal(tes_entity_index(more[2]), 10);
    assert_int_equal(tes_entity_index(more[3]), 11);
    assert_int_equal(tes_entity_generation(more[0]), 2);
    assert_int_equal(tes_entity_count(w), 12);
    /* Zero is fine, bad arguments are not. */
    assert_int_equal(tes_spawn_n(w, 0, NULL, 0, NULL), TES_OK);
    assert_int_equal(tes_spawn_n(w, -1, NULL, 0, more), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, NULL, 1, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, NULL, -1, more), TES_ERR_INVALID);
    assert_int_equal(tes_entity_count(w), 12);
    /* A large batch. */
    enum { BIG = 100000 };
    tes_entity_t *big = malloc(BIG * sizeof *big);
    assert_int_equal(tes_spawn_n(w, BIG, NULL, 0, big), TES_OK);
    assert_int_equal(tes_entity_count(w), 12 + BIG);
    for (int i = 0; i < BIG; i++)
        assert_true(tes_alive(w, big[i]));
    free(big);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_allocator_sees_everything(void **state)
{
    (void)state;
    ca_state_t c;
    ca_init(&c, 0);
    tes_world_desc_t d = {.allocator = ca_allocator(&c)};
    tes_world_t *w = tes_world_new(&d);
    assert_non_null(w);
    for (int i = 0; i < 5000; i++)
        tes_spawn(w);
    tes_world_stats_t s;
    tes_world_stats(w, &s);
    assert_true(c.live_bytes > 0);
    assert_int_equal((int64_t)s.bytes_allocated, c.live_bytes);
    assert_int_equal(s.entities_alive, 5000);
    assert_int_equal(s.entity_slots, 5000);
    tes_world_free(w);
    assert_int_equal(c.live_blocks, 0);
    assert_int_equal(c.live_bytes, 0);
    assert_int_equal(c.bad_sizes + c.bad_ptrs, 0);
    /* A partial allocator is a bad descriptor. */
    tes_world_desc_t bad = {.allocator = {d.allocator.alloc, NULL, NULL, &c}};
    assert_null(tes_world_new(&bad));
}

static void test_recycle_does_not_allocate(void **state)
{
    (void)state;
    ca_state_t c;
    ca_init(&c, 0);
    tes_world_desc_t d = {.allocator = ca_allocator(&c)};
    tes_world_t *w = tes_world_new(&d);
    tes_entity_t e[1000];
    tes_spawn_n(w, 1000, NULL, 0, e);
    for (int i = 0; i < 1000; i++)
        tes_destroy(w, e[i]);
    uint64_t calls = c.calls;
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 1000; i++)
            e[i] = tes_spawn(w);
        for (int i = 0; i < 1000; i++)
            tes_destroy(w, e[i]);
    }
    assert_int_equal(c.calls, calls);
    tes_world_free(w);
}

static void test_strerror(void **state)
{
    (void)state;
    int codes[] = {TES_OK, TES_ERR_STALE, TES_ERR_NOMEM, TES_ERR_INVALID, TES_ERR_FULL,
                   TES_ERR_OWNED, TES_ERR_FORMAT, TES_ERR_IO, TES_ERR_BUSY};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        assert_non_null(tes_strerror(codes[i]));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(tes_strerror(codes[i]), tes_strerror(codes[j]));
    }
    assert_string_equal(tes_strerror(12345), "unknown status");
    assert_int_equal(tes_world_stats(NULL, NULL), TES_ERR_INVALID);
    assert_false(tes_alive(NULL, 1));
    assert_true(tes_spawn(NULL) == TES_NULL);
    tes_world_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_layout),
        cmocka_unit_test(test_null_never_alive),
        cmocka_unit_test(test_lifo_reuse),
        cmocka_unit_test(test_stale_after_reuse),
        cmocka_unit_test(test_retirement),
        cmocka_unit_test(test_no_handle_issued_twice),
        cmocka_unit_test(test_entity_limit),
        cmocka_unit_test(test_bulk_spawn),
        cmocka_unit_test(test_allocator_sees_everything),
        cmocka_unit_test(test_recycle_does_not_allocate),
        cmocka_unit_test(test_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
