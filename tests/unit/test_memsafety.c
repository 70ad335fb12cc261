/*
 * Memory-safety regressions from an outside review of the public API: one
 * test per defect, each the smallest program that showed it, plus tests
 * for the other instances of the same bug classes that the audit found
 * (pointers held across hooks, room reserved before a hook could add a
 * subscriber, unchecked size arithmetic, narrowed columns). The name says
 * what went wrong; the body asserts the fixed behaviour.
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

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

/* ------------------------------------------------------------ allocators */

/* Fills freed blocks with garbage first, so a read through a pointer into
 * a block that was reallocated sees nonsense even without a sanitizer. */
static void *poison_alloc(size_t size, void *user)
{
    (void)user;
    return malloc(size);
}
static void *poison_realloc(void *p, size_t old_size, size_t size, void *user)
{
    (void)user;
    void *q = malloc(size);
    if (!q)
        return NULL;
    memcpy(q, p, old_size < size ? old_size : size);
    memset(p, 0xA5, old_size);
    free(p);
    return q;
}
static void poison_free(void *p, size_t size, void *user)
{
    (void)user;
    if (p)
        memset(p, 0xA5, size);
    free(p);
}

/* Refuses any single block above 256 MiB. */
#define BIG_LIMIT ((size_t)256 << 20)
static void *limited_alloc(size_t size, void *user)
{
    (void)user;
    return size > BIG_LIMIT ? NULL : malloc(size);
}
static void *limited_realloc(void *p, size_t old_size, size_t size, void *user)
{
    (void)old_size, (void)user;
    return size > BIG_LIMIT ? NULL : realloc(p, size);
}
static void limited_free(void *p, size_t size, void *user)
{
    (void)size, (void)user;
    free(p);
}

/* ------------------------------------------------------------ defect 1 */

/* Removing a sparse component can make an entity join a group with a NOT
 * term on it; the sparse branch of tes_remove reserved no room in the
 * group's member set first (heap overflow, or a NULL write when the group
 * was created after the entities). */
static void sparse_remove_joins_not_group(bool group_first)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_SPARSE);
    tes_comp_t s = comp(w, "S", 4, TES_STORAGE_SPARSE);
    tes_query_desc_t d = {.terms = {{a}, {s, TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = group_first ? tes_query_new(w, &d) : NULL;
    tes_entity_t e[200];
    for (int i = 0; i < 200; i++) {
        e[i] = tes_spawn(w);
        assert_int_equal(tes_add(w, e[i], s), TES_OK);
        assert_int_equal(tes_set(w, e[i], a, &i), TES_OK);
    }
    if (!group_first)
        q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_int_equal(tes_query_count(q), 0);
    for (int i = 0; i < 200; i++)
        assert_int_equal(tes_remove(w, e[i], s), TES_OK);
    assert_int_equal(tes_query_count(q), 200);
    int sum = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const int *va = tes_field(&it, 0);
        for (int i = 0; i < it.count; i++)
            sum += va[i];
    }
    assert_int_equal(sum, 199 * 200 / 2);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(q);
    tes_world_free(w);
}

static void test_sparse_remove_reserves_group_room(void **state)
{
    (void)state;
    sparse_remove_joins_not_group(true);
    sparse_remove_joins_not_group(false);
}

/* ------------------------------------------------------------ defect 2 */

/* A deferred tes_ensure of a component a queued instantiate gives kept a
 * pointer to that command in the queue while staging its value, which can
 * grow (move) the queue: the 64th command filled the first block. */
static void test_deferred_ensure_after_queue_growth(void **state)
{
    (void)state;
    tes_world_desc_t desc = {.allocator = {poison_alloc, poison_realloc, poison_free, NULL}};
    tes_world_t *w = tes_world_new(&desc);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    tes_comp_t t = comp(w, "T", 0, TES_STORAGE_TABLE);
    tes_entity_t p = tes_prefab_new(w);
    int seven = 7;
    assert_int_equal(tes_set(w, p, a, &seven), TES_OK);
    tes_entity_t f = tes_spawn(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    for (int i = 0; i < 63; i++)
        assert_int_equal(i % 2 ? tes_remove(w, f, t) : tes_add(w, f, t), TES_OK);
    tes_entity_t out[1] = {TES_NULL};
    assert_int_not_equal(tes_instantiate(w, p, out, 1), 0);
    int *v = tes_ensure(w, out[0], a);
    assert_non_null(v);
    assert_int_equal(*v, 7);
    *v = 9;
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(*(const int *)tes_get(w, out[0], a), 9);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* ------------------------------------------------------------ defect 3 */

/* 65,536 components of 1 GiB each, 2^18 entities: the column block size
 * (2^66 bytes) wrapped to 2 MiB, which the allocator granted; constructing
 * the columns then zeroed 2^48 bytes. */
static void test_column_block_size_overflow(void **state)
{
    (void)state;
    tes_world_desc_t desc = {.allocator = {limited_alloc, limited_realloc, limited_free, NULL}};
    tes_world_t *w = tes_world_new(&desc);
    enum { N = 65536 };
    tes_comp_t *comps = malloc(N * sizeof *comps);
    tes_entity_t *out = malloc(((size_t)1 << 18) * sizeof *out);
    assert_non_null(comps);
    assert_non_null(out);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "Huge%d", i);
        tes_component_desc_t d = {.name = name, .size = (size_t)1 << 30};
        comps[i] = tes_component(w, &d);
        assert_int_not_equal(comps[i], 0);
    }
    assert_int_equal(tes_spawn_n(w, 1 << 18, comps, N, out), TES_ERR_NOMEM);
    assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
    assert_int_equal(tes_entity_count(w), 0);
    /* One entity alone needs 64 TiB: refused the same way. */
    assert_int_equal(tes_spawn_n(w, 1, comps, N, out), TES_ERR_NOMEM);
    assert_int_equal(tes_entity_count(w), 0);
    /* A single huge component still works where memory allows. */
    tes_component_desc_t small = {.name = "Mid", .size = (size_t)1 << 20};
    tes_comp_t mid = tes_component(w, &small);
    assert_int_equal(tes_spawn_n(w, 3, &mid, 1, out), TES_OK);
    assert_int_equal(tes_entity_count(w), 3);
    assert_int_equal(tes__world_check(w), TES_OK);
    free(comps);
    free(out);
    tes_world_free(w);
}

/* ------------------------------------------------------------ defect 7 */

/* Query matches kept each term's column as int16_t: columns 32768 and up
 * came back NULL, 65541 as another column's data. */
static void test_wide_table_columns_not_truncated(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    enum { N = 65542 };
    tes_comp_t *comps = malloc(N * sizeof *comps);
    assert_non_null(comps);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "W%d", i);
        comps[i] = comp(w, name, 4, TES_STORAGE_TABLE);
    }
    tes_entity_t e;
    assert_int_equal(tes_spawn_n(w, 1, comps, N, &e), TES_OK);
    const int picks[] = {0, 100, 32767, 32768, 40000, 65535, 65536, 65541};
    for (size_t k = 0; k < sizeof picks / sizeof *picks; k++) {
        tes_comp_t c = comps[picks[k]];
        int value = 1000 + picks[k];
        assert_int_equal(tes_set(w, e, c, &value), TES_OK);
        tes_query_desc_t d = {.terms = {{c}}};
        tes_query_t *q = tes_query_new(w, &d);
        assert_non_null(q);
        tes_iter_t it = tes_query_iter(q);
        assert_true(tes_iter_next(&it));
        assert_int_equal(it.count, 1);
        assert_ptr_equal(tes_field(&it, 0), tes_get(w, e, c));
        assert_int_equal(*(const int *)tes_field(&it, 0), value);
        tes_iter_fini(&it);
        tes_query_free(q);
    }
    free(comps);
    tes_world_free(w);
}

/* ------------------------------------------------------------ defect 8 */

/* tes_field before the first tes_iter_next returned whatever bytes the
 * iterator's field array held. */
static void test_field_before_first_next_is_null(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    tes_comp_t s = comp(w, "S", 4, TES_STORAGE_SPARSE);
    tes_entity_t e = tes_spawn(w);
    tes_add(w, e, a);
    tes_add(w, e, s);
    tes_query_desc_t da = {.terms = {{a}, {s}}};
    tes_query_desc_t ds = {.terms = {{s}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *qs[2] = {tes_query_new(w, &da), tes_query_new(w, &ds)};
    for (int k = 0; k < 2; k++) {
        tes_iter_t it;
        memset(&it, 0xA5, sizeof it); /* what an uninitialised variable may hold */
        it = tes_query_iter(qs[k]);
        assert_null(tes_field(&it, 0));
        assert_true(tes_iter_next(&it));
        assert_non_null(tes_field(&it, 0));
        tes_iter_fini(&it);
        assert_null(tes_field(&it, 0));
        tes_query_free(qs[k]);
    }
    tes_world_free(w);
}

/* An optional argument runs only the tests matching that pattern. */
int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_remove_reserves_group_room),
        cmocka_unit_test(test_deferred_ensure_after_queue_growth),
        cmocka_unit_test(test_column_block_size_overflow),
        cmocka_unit_test(test_wide_table_columns_not_truncated),
        cmocka_unit_test(test_field_before_first_next_is_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
