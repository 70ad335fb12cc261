/*
 * Sparse set and sparse store tests (internal API): the generation-aware
 * contains of seed 001, both deletion policies, tombstone reuse through the
 * implicit free list, compaction, paging of the sparse array (absent pages
 * read through the shared empty page), the biased read bases of entry and
 * data pages, and pointer stability of a stable store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "storage/sparse_store.h"

static tes__alloc_t alloc;

static int setup(void **state)
{
    (void)state;
    return tes__alloc_init(&alloc, NULL);
}

static void insert(tes__sparse_set_t *s, tes_entity_t e, bool reuse)
{
    assert_int_equal(tes__sparse_set_reserve_index(s, &alloc, tes_entity_index(e)), TES_OK);
    assert_int_equal(tes__sparse_set_reserve_packed(s, &alloc, 1), TES_OK);
    tes__sparse_set_insert(s, e, reuse);
}

/* Removes e from the set with the given policy; returns its old position. */
static uint32_t remove_entity(tes__sparse_set_t *s, tes_entity_t e, bool in_place)
{
    uint32_t pos = tes__sparse_set_find(s, e);
    assert_int_not_equal(pos, TES_NULL_INDEX);
    if (in_place)
        tes__sparse_set_tomb_remove(s, e, pos);
    else
        tes__sparse_set_swap_remove(s, e, pos);
    return pos;
}

static void test_contains_checks_generation(void **state)
{
    (void)state;
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    tes_entity_t e = tes_entity_make(5, 3);
    assert_false(tes__sparse_set_contains(&s, e)); /* no page yet */
    insert(&s, e, false);
    assert_true(tes__sparse_set_contains(&s, e));
    assert_int_equal(tes__sparse_set_find(&s, e), 0);
    /* Same index, other generations: absent, with no separate branch. */
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(5, 2)));
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(5, 4)));
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(5, TES_TOMBSTONE)));
    /* Neighbours on the same page hold the empty entry. */
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(4, 1)));
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(6, 3)));
    assert_true(tes__sparse_entry(&s, 6) == TES__SPARSE_EMPTY);
    /* Out of range. */
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(1u << 30, 3)));
    assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(5, 2)), TES_NULL_INDEX);
    tes__sparse_set_fini(&s, &alloc);
    assert_int_equal(alloc.bytes, 0);
}

static void test_pages_on_first_touch(void **state)
{
    (void)state;
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    tes_entity_t far = tes_entity_make(3u * TES__SPARSE_PAGE_SIZE + 17, 1);
    insert(&s, far, false);
    assert_int_equal(s.page_count, 4);
    assert_null(s.pages[0]);
    assert_null(s.pages[1]);
    assert_non_null(s.pages[3]);
    assert_true(tes__sparse_set_contains(&s, far));
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(17, 1)));
    tes__sparse_set_fini(&s, &alloc);
    assert_int_equal(alloc.bytes, 0);
}

/* The shared empty page answers "absent" for every index and every
 * generation, the tombstone generation and the all-ones handle included
 * (the generation compare must fail on the null position by itself). */
static void test_empty_page_answers_absent(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < TES__SPARSE_PAGE_SIZE; i++)
        assert_true(tes__sparse_empty_page()[i] == TES__SPARSE_EMPTY);
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    /* Pages 0..2 absent below page_count: their bases name the empty page. */
    tes_entity_t far = tes_entity_make(3u * TES__SPARSE_PAGE_SIZE + 5, 2);
    insert(&s, far, false);
    assert_int_equal(s.page_count, 4);
    const uint32_t gens[] = {0, 1, 2, 3, TES_TOMBSTONE - 1, TES_TOMBSTONE};
    for (uint32_t i = 0; i < 3u * TES__SPARSE_PAGE_SIZE; i++) {
        assert_true(tes__sparse_entry(&s, i) == TES__SPARSE_EMPTY);
        for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
            assert_false(tes__sparse_set_contains(&s, tes_entity_make(i, gens[g])));
            assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(i, gens[g])), TES_NULL_INDEX);
        }
    }
    for (uint32_t p = 0; p < 3; p++) {
        assert_null(s.pages[p]);
        assert_true(s.bases[p] == tes__sparse_base_of(tes__sparse_empty_page(), p));
    }
    assert_true(s.bases[3] == tes__sparse_base_of(s.pages[3], 3));
    /* Past page_count and the all-ones handle. */
    assert_false(tes__sparse_set_contains(&s, UINT64_MAX));
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(4u * TES__SPARSE_PAGE_SIZE, 2)));
    assert_true(tes__sparse_set_contains(&s, far));
    /* Touching an absent page gives it its own storage (the shared page
     * stays empty: it is never written). */
    tes_entity_t near = tes_entity_make(7, 1);
    insert(&s, near, false);
    assert_non_null(s.pages[0]);
    assert_true(s.bases[0] == tes__sparse_base_of(s.pages[0], 0));
    assert_true(tes__sparse_set_contains(&s, near));
    assert_true(tes__sparse_empty_page()[7] == TES__SPARSE_EMPTY);
    assert_true(tes__sparse_set_contains(&s, far));
    tes__sparse_set_fini(&s, &alloc);
    assert_int_equal(alloc.bytes, 0);
}

/* The page table of a set grows by replacing one block holding pointers
 * and bases: growth keeps every earlier page and its base. */
static void test_page_table_growth_keeps_bases(void **state)
{
    (void)state;
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    for (uint32_t p = 0; p < 40; p += 3)
        insert(&s, tes_entity_make(p * TES__SPARSE_PAGE_SIZE + p, 1), false);
    for (uint32_t p = 0; p < s.page_count; p++) {
        uintptr_t want = s.pages[p] ? tes__sparse_base_of(s.pages[p], p)
                                    : tes__sparse_base_of(tes__sparse_empty_page(), p);
        assert_true(s.bases[p] == want);
        assert_int_equal(s.pages[p] != NULL, p % 3 == 0 && p < 40);
    }
    for (uint32_t p = 0; p < 40; p += 3)
        assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(p * TES__SPARSE_PAGE_SIZE + p, 1)),
                         p / 3);
    tes__sparse_set_fini(&s, &alloc);
    assert_int_equal(alloc.bytes, 0);
}

/* A store's value address through its biased bases is the page-and-slot
 * address, across many data pages (with the largest page shift a value
 * size allows and a size that is not a power of two). */
static void test_store_bases_match_pages(void **state)
{
    (void)state;
    const uint32_t sizes[] = {1, 12, 24, 100, 70000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        tes__sparse_store_t st;
        tes__sparse_store_init(&st, sizes[k], false);
        uint32_t count = (2u << st.page_shift) + 3; /* three data pages */
        if (count > 20000)
            count = 20000;
        assert_int_equal(tes__sparse_store_reserve_positions(&st, &alloc, count), TES_OK);
        assert_true(st.page_count >= 1);
        for (uint32_t pos = 0; pos < count; pos++) {
            uint8_t *want = st.pages[pos >> st.page_shift] + (size_t)(pos & st.page_mask) * st.size;
            assert_ptr_equal(tes__sparse_store_at(&st, pos), want);
        }
        tes__sparse_store_fini(&st, &alloc);
        assert_int_equal(alloc.bytes, 0);
    }
}

static void test_swap_remove(void **state)
{
    (void)state;
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    for (uint32_t i = 0; i < 5; i++)
        insert(&s, tes_entity_make(i * 10, 1), false);
    uint32_t pos = remove_entity(&s, tes_entity_make(10, 1), false);
    assert_int_equal(pos, 1);
    assert_int_equal(s.count, 4);
    /* The last entity (40) moved into the hole. */
    assert_true(s.packed[1] == tes_entity_make(40, 1));
    assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(40, 1)), 1);
    assert_false(tes__sparse_set_contains(&s, tes_entity_make(10, 1)));
    /* Removing the last one moves nothing. */
    pos = remove_entity(&s, tes_entity_make(30, 1), false);
    assert_int_equal(pos, 3);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.live, 3);
    tes__sparse_set_fini(&s, &alloc);
}

static void test_tombstones_and_reuse(void **state)
{
    (void)state;
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    for (uint32_t i = 0; i < 6; i++)
        insert(&s, tes_entity_make(i, 1), true);
    remove_entity(&s, tes_entity_make(1, 1), true);
    remove_entity(&s, tes_entity_make(4, 1), true);
    assert_int_equal(s.count, 6);
    assert_int_equal(s.live, 4);
    assert_true(tes__sparse_is_tombstone(s.packed[1]));
    assert_true(tes__sparse_is_tombstone(s.packed[4]));
    /* Nothing else moved. */
    assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(5, 1)), 5);
    /* Iteration skips tombstones. */
    uint32_t seen = 0;
    for (uint32_t p = tes__sparse_set_next_live(&s, 0); p < s.count;
         p = tes__sparse_set_next_live(&s, p + 1))
        seen++;
    assert_int_equal(seen, 4);
    /* The implicit free list is LIFO: 4 is reused first, then 1. */
    assert_int_equal(tes__sparse_set_next_pos(&s, true), 4);
    insert(&s, tes_entity_make(100, 1), true);
    assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(100, 1)), 4);
    insert(&s, tes_entity_make(101, 1), true);
    assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(101, 1)), 1);
    assert_int_equal(s.count, 6);
    insert(&s, tes_entity_make(102, 1), true);
    assert_int_equal(tes__sparse_set_find(&s, tes_entity_make(102, 1)), 6);
    tes__sparse_set_fini(&s, &alloc);
}

typedef struct moves {
    uint32_t from[16], to[16];
    int n;
} moves_t;

static void record_move(void *ctx, uint32_t from, uint32_t to)
{
    moves_t *m = ctx;
    m->from[m->n] = from;
    m->to[m->n] = to;
    m->n++;
}

static void test_compaction(void **state)
{
    (void)state;
    tes__sparse_set_t s;
    tes__sparse_set_init(&s);
    for (uint32_t i = 0; i < 8; i++)
        insert(&s, tes_entity_make(i, 2), true);
    remove_entity(&s, tes_entity_make(0, 2), true);
    remove_entity(&s, tes_entity_make(3, 2), true);
    remove_entity(&s, tes_entity_make(7, 2), true);
    moves_t m = {0};
    uint32_t moved = tes__sparse_set_compact(&s, record_move, &m);
    assert_int_equal(s.count, 5);
    assert_int_equal(s.live, 5);
    assert_int_equal(s.free_head, TES_NULL_INDEX);
    assert_int_equal(moved, (uint32_t)m.n);
    assert_int_equal(m.n, 2); /* 6 -> 0, 5 -> 3 */
    assert_int_equal(m.from[0], 6);
    assert_int_equal(m.to[0], 0);
    assert_int_equal(m.from[1], 5);
    assert_int_equal(m.to[1], 3);
    for (uint32_t i = 0; i < 8; i++) {
        bool present = i != 0 && i != 3 && i != 7;
        assert_int_equal(tes__sparse_set_contains(&s, tes_entity_make(i, 2)), present);
        if (present)
            assert_true(s.packed[tes__sparse_set_find(&s, tes_entity_make(i, 2))] ==
                        tes_entity_make(i, 2));
    }
    tes__sparse_set_fini(&s, &alloc);
}

static void store_insert(tes__sparse_store_t *st, tes_entity_t e, int value)
{
    assert_int_equal(tes__sparse_store_reserve(st, &alloc, 1, tes_entity_index(e), NULL, NULL),
                     TES_OK);
    int *p = tes__sparse_store_insert(st, e);
    *p = value;
}

static void test_stable_store_addresses(void **state)
{
    (void)state;
    tes__sparse_store_t st;
    tes__sparse_store_init(&st, sizeof(int), true);
    store_insert(&st, tes_entity_make(0, 1), 42);
    int *held = tes__sparse_store_get(&st, tes_entity_make(0, 1));
    /* Churn other entities through the store: 100k inserts and removes. */
    for (uint32_t round = 0; round < 100; round++) {
        for (uint32_t i = 1; i <= 1000; i++)
            store_insert(&st, tes_entity_make(i, round + 1), (int)i);
        for (uint32_t i = 1; i <= 1000; i++)
            tes__sparse_store_remove(&st, tes_entity_make(i, round + 1), NULL);
    }
    assert_ptr_equal(tes__sparse_store_get(&st, tes_entity_make(0, 1)), held);
    assert_int_equal(*held, 42);
    /* Holes were reused: the packed array never grew past 1001. */
    assert_true(st.set.count <= 1001);
    tes__sparse_store_fini(&st, &alloc);
    assert_int_equal(alloc.bytes, 0);
}

static void test_swap_store_values(void **state)
{
    (void)state;
    tes__sparse_store_t st;
    tes__sparse_store_init(&st, sizeof(int), false);
    enum { N = 5000 };
    for (uint32_t i = 0; i < N; i++)
        store_insert(&st, tes_entity_make(i, 1), (int)i * 3);
    /* Remove every third entity; the others keep their values. */
    for (uint32_t i = 0; i < N; i += 3)
        tes__sparse_store_remove(&st, tes_entity_make(i, 1), NULL);
    for (uint32_t i = 0; i < N; i++) {
        int *p = tes__sparse_store_get(&st, tes_entity_make(i, 1));
        if (i % 3 == 0)
            assert_null(p);
        else
            assert_int_equal(*p, (int)i * 3);
    }
    assert_int_equal(st.set.count, N - (N + 2) / 3);
    tes__sparse_store_fini(&st, &alloc);
}

static void test_store_compaction_keeps_values(void **state)
{
    (void)state;
    tes__sparse_store_t st;
    tes__sparse_store_init(&st, sizeof(int), true);
    for (uint32_t i = 0; i < 3000; i++)
        store_insert(&st, tes_entity_make(i, 1), (int)i + 7);
    for (uint32_t i = 0; i < 3000; i += 2)
        tes__sparse_store_remove(&st, tes_entity_make(i, 1), NULL);
    tes__sparse_store_compact(&st, NULL);
    assert_int_equal(st.set.count, 1500);
    for (uint32_t i = 1; i < 3000; i += 2)
        assert_int_equal(*(int *)tes__sparse_store_get(&st, tes_entity_make(i, 1)), (int)i + 7);
    tes__sparse_store_fini(&st, &alloc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contains_checks_generation),
        cmocka_unit_test(test_pages_on_first_touch),
        cmocka_unit_test(test_empty_page_answers_absent),
        cmocka_unit_test(test_page_table_growth_keeps_bases),
        cmocka_unit_test(test_store_bases_match_pages),
        cmocka_unit_test(test_swap_remove),
        cmocka_unit_test(test_tombstones_and_reuse),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_stable_store_addresses),
        cmocka_unit_test(test_swap_store_values),
        cmocka_unit_test(test_store_compaction_keeps_values),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
