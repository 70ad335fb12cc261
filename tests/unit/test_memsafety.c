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

#include "core/checked.h"
#include "tessera.h"
#include "support/counting_alloc.h"
#include "world/check.h"

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

/* ------------------------------------------------------------ allocators */

/* The shared test allocator (support/counting_alloc.h), poisoning: every
 * realloc moves and freed blocks are filled with garbage first, so a read
 * through a pointer into a block that was reallocated sees nonsense even
 * without a sanitizer. */
static ca_state_t poisoning;
static tes_world_desc_t poison_desc(void)
{
    ca_init(&poisoning, 0);
    poisoning.poison = true;
    return (tes_world_desc_t){.allocator = ca_allocator(&poisoning)};
}

/* Refuses any single block above 256 MiB. */
static ca_state_t limited;
static tes_world_desc_t limited_desc(void)
{
    ca_init(&limited, 0);
    limited.max_block = (size_t)256 << 20;
    return (tes_world_desc_t){.allocator = ca_allocator(&limited)};
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
    tes_world_desc_t desc = poison_desc();
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
    tes_world_desc_t desc = limited_desc();
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

/* ------------------------------------------------------------ defect 5 */

/* What the observers of defect 5 saw. */
static struct {
    tes_comp_t a, b;
    tes_query_t *group;     /* built by the on_add observer */
    int built;
    void *on_set_ptr;       /* the address on_set received */
} d5;

static void d5_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (d5.built++)
        return;
    tes_query_desc_t d = {.terms = {{d5.a}, {d5.b}}, .flags = TES_QUERY_OWNING_GROUP};
    d5.group = tes_query_new(w, &d); /* may be refused: the values must be right either way */
}

static void d5_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ctx;
    d5.on_set_ptr = ptr;
}

/* An on_add observer that builds an owning group reorders the store it was
 * called for: tes_set then wrote its value through the address it had
 * before the observer ran, into another entity's component, and tes_ensure
 * returned that address. */
static void test_set_after_observer_reorders_store(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) { /* tes_set, tes_ensure, deferred tes_ensure */
        memset(&d5, 0, sizeof d5);
        tes_world_t *w = tes_world_new(NULL);
        tes_component_desc_t da = {.name = "A", .size = 4, .storage = TES_STORAGE_SPARSE,
                                   .hooks = {.on_add = d5_on_add, .on_set = d5_on_set}};
        d5.a = tes_component(w, &da);
        d5.b = comp(w, "B", 4, TES_STORAGE_SPARSE);
        tes_entity_t x = tes_spawn(w), y = tes_spawn(w), e = tes_spawn(w);
        int one = 1, two = 2;
        d5.built = 1; /* no group while the others are set up */
        assert_int_equal(tes_set(w, x, d5.a, &one), TES_OK);
        assert_int_equal(tes_set(w, y, d5.a, &two), TES_OK);
        assert_int_equal(tes_add(w, y, d5.b), TES_OK);
        assert_int_equal(tes_add(w, e, d5.b), TES_OK);
        d5.built = 0;
        int v = 42;
        if (mode == 0) {
            assert_int_equal(tes_set(w, e, d5.a, &v), TES_OK);
            assert_ptr_equal(d5.on_set_ptr, tes_get(w, e, d5.a));
        } else if (mode == 1) {
            int *p = tes_ensure(w, e, d5.a);
            assert_ptr_equal(p, tes_get(w, e, d5.a));
            *p = v;
        } else {
            /* The flush assigns a deferred ensure through tes_ensure. */
            tes_defer_begin(w);
            int *p = tes_ensure(w, e, d5.a);
            assert_non_null(p);
            *p = v;
            assert_int_equal(tes_defer_end(w), TES_OK);
        }
        assert_int_equal(d5.built, 1);
        assert_int_equal(*(const int *)tes_get(w, e, d5.a), 42);
        assert_int_equal(*(const int *)tes_get(w, x, d5.a), 1);
        assert_int_equal(*(const int *)tes_get(w, y, d5.a), 2);
        if (d5.group)
            assert_int_equal(tes_query_count(d5.group), 2);
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
    }
}

/* ------------------------------------------------------------ defect 6 */

static struct {
    tes_comp_t a, c;
    tes_query_t *group;
} d6;

static void d6_build_group(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (d6.group)
        return;
    tes_query_desc_t d = {.terms = {{d6.a}, {d6.c, TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP};
    d6.group = tes_query_new(w, &d);
    assert_non_null(d6.group);
}

/* The on_remove observer of table component C builds {A, NOT C} while
 * tes_remove(e, C) runs: room had been reserved only in the watchers that
 * existed before the observer, and e then joined the new group. */
static void test_observer_builds_group_during_remove(void **state)
{
    (void)state;
    for (int sparse = 0; sparse < 2; sparse++) {
        memset(&d6, 0, sizeof d6);
        tes_world_t *w = tes_world_new(NULL);
        d6.a = comp(w, "A", 4, TES_STORAGE_TABLE);
        tes_component_desc_t dc = {.name = "C", .size = 4,
                                   .storage = sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE,
                                   .hooks.on_remove = d6_build_group};
        d6.c = tes_component(w, &dc);
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_add(w, e, d6.a), TES_OK);
        assert_int_equal(tes_add(w, e, d6.c), TES_OK);
        assert_int_equal(tes_remove(w, e, d6.c), TES_OK);
        assert_non_null(d6.group);
        assert_int_equal(tes_query_count(d6.group), 1);
        tes_iter_t it = tes_query_iter(d6.group);
        assert_true(tes_iter_next(&it));
        assert_true(it.entities[0] == e);
        tes_iter_fini(&it);
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
    }
}

/* ------------------------------------------------------------ the classes */

static struct {
    tes_world_t *w;
    tes_comp_t t, s;
    tes_query_t *group;
} cls;

static void ctor_builds_group(void *ptr, int32_t count, void *ctx)
{
    (void)ctx;
    memset(ptr, 0, (size_t)count * 4);
    if (cls.group || !cls.w)
        return;
    tes_query_desc_t d = {.terms = {{cls.t}, {cls.s}}, .flags = TES_QUERY_NONOWNING_GROUP};
    cls.group = tes_query_new(cls.w, &d);
    assert_non_null(cls.group);
}

/* A ctor hook of a batch spawn builds a group over the batch's sparse
 * component, which the batch inserts after the ctor ran: every entity then
 * joined a group that had reserved room for none. Also for a prefab
 * instantiation, whose copies are built before the watchers hear of them. */
static void test_ctor_builds_group_during_batch(void **state)
{
    (void)state;
    for (int via_prefab = 0; via_prefab < 2; via_prefab++) {
        memset(&cls, 0, sizeof cls);
        tes_world_t *w = tes_world_new(NULL);
        tes_component_desc_t dt = {.name = "T", .size = 4, .hooks.ctor = ctor_builds_group};
        cls.t = tes_component(w, &dt);
        cls.s = comp(w, "S", 4, TES_STORAGE_SPARSE);
        tes_comp_t both[2] = {cls.t, cls.s};
        enum { N = 300 };
        if (!via_prefab) {
            tes_entity_t out[N];
            cls.w = w;
            assert_int_equal(tes_spawn_n(w, N, both, 2, out), TES_OK);
        } else {
            tes_entity_t p = tes_prefab_new(w);
            assert_int_equal(tes_add(w, p, cls.s), TES_OK);
            assert_int_equal(tes_add(w, p, cls.t), TES_OK);
            tes_instance_t inst[N];
            cls.w = w;
            assert_int_equal(tes_instantiate_n(w, p, N, inst), TES_OK);
        }
        assert_non_null(cls.group);
        assert_int_equal(tes_query_count(cls.group), N);
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
    }
}

static struct {
    tes_query_t *victim; /* freed by the move hook */
    bool armed;
} mv;

static void move_frees_query(void *dst, void *src, int32_t count, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)count * 4);
    if (mv.armed) {
        mv.armed = false;
        tes_query_free(mv.victim);
    }
}

/* A move hook run by an owning group's swap frees a query whose group was
 * registered earlier: the watcher list closed up under the notification
 * loop, and the group registered after it never heard of the change. */
static void test_hook_frees_group_during_notification(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t da = {.name = "A", .size = 4, .storage = TES_STORAGE_SPARSE,
                               .hooks.move = move_frees_query};
    tes_comp_t a = tes_component(w, &da);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    tes_comp_t c = comp(w, "C", 4, TES_STORAGE_SPARSE);
    tes_query_desc_t d0 = {.terms = {{c}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_desc_t d1 = {.terms = {{a}, {b}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_query_desc_t d2 = {.terms = {{a}}, .flags = TES_QUERY_NONOWNING_GROUP};
    mv.victim = tes_query_new(w, &d0);
    tes_query_t *owning = tes_query_new(w, &d1);
    tes_query_t *later = tes_query_new(w, &d2);
    assert_non_null(mv.victim);
    assert_non_null(owning);
    assert_non_null(later);
    tes_entity_t x = tes_spawn(w), y = tes_spawn(w), e = tes_spawn(w);
    tes_add(w, x, a);
    tes_add(w, x, b);
    tes_add(w, y, a);
    tes_add(w, e, b);
    /* e's A lands behind y's; joining the owning group swaps it forward. */
    mv.armed = true;
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_false(mv.armed);
    assert_int_equal(tes_query_count(owning), 2);
    assert_int_equal(tes_query_count(later), 3);
    /* And leaving: the same walk over `before`. */
    tes_query_t *again = tes_query_new(w, &d0);
    mv.victim = again;
    mv.armed = true;
    assert_int_equal(tes_remove(w, x, b), TES_OK);
    assert_int_equal(tes_query_count(owning), 1);
    assert_int_equal(tes_query_count(later), 3);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static struct {
    tes_world_t *w;
    tes_entity_t src;
    int refused;
    int calls;
} cl;

static void ctor_destroys_source(void *ptr, int32_t count, void *ctx)
{
    (void)ctx;
    memset(ptr, 0, (size_t)count * 4);
    if (!cl.w)
        return;
    cl.calls++;
    cl.refused += tes_destroy(cl.w, cl.src) == TES_ERR_BUSY;
}

/* A deferred clone ran at the flush outside any structural call, so its
 * ctor hook could destroy the entity being copied (the copy then read a
 * row that had been handed to another entity). */
static void test_flush_clone_hooks_refuse_structural_calls(void **state)
{
    (void)state;
    memset(&cl, 0, sizeof cl);
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t dv = {.name = "V", .size = 4, .hooks.ctor = ctor_destroys_source};
    tes_comp_t v = tes_component(w, &dv);
    tes_entity_t other = tes_spawn(w);
    cl.src = tes_spawn(w);
    int seven = 7, eight = 8;
    tes_set(w, other, v, &eight);
    tes_set(w, cl.src, v, &seven);
    tes_defer_begin(w);
    tes_entity_t copy = tes_clone(w, cl.src);
    cl.w = w;
    tes_defer_end(w);
    assert_int_equal(cl.calls, 1);
    assert_int_equal(cl.refused, 1);
    assert_true(tes_alive(w, cl.src));
    assert_int_equal(*(const int *)tes_get(w, copy, v), 7);
    assert_int_equal(*(const int *)tes_get(w, other, v), 8);
    assert_int_equal(tes__world_check(w), TES_OK);
    cl.w = NULL;
    tes_world_free(w);
}

/* The checked size helpers report overflow at the exact boundary, for
 * whatever width size_t has here. */
static void test_checked_size_helpers(void **state)
{
    (void)state;
    size_t out = 7;
    assert_true(tes__size_mul(&out, SIZE_MAX / 3, 3));
    assert_true(out == SIZE_MAX / 3 * 3);
    assert_false(tes__size_mul(&out, SIZE_MAX / 3 + 1, 3));
    assert_true(out == SIZE_MAX / 3 * 3); /* untouched on overflow */
    assert_true(tes__size_mul(&out, 0, SIZE_MAX) && out == 0);
    assert_true(tes__size_mul(&out, SIZE_MAX, 0) && out == 0);
    assert_true(tes__size_add(&out, SIZE_MAX - 5, 5) && out == SIZE_MAX);
    assert_false(tes__size_add(&out, SIZE_MAX - 5, 6));
    assert_true(tes__size_align(&out, 17, 16) && out == 32);
    assert_true(tes__size_align(&out, 32, 16) && out == 32);
    assert_true(tes__size_align(&out, 5, 0) && out == 5);
    assert_false(tes__size_align(&out, SIZE_MAX - 3, 16));
    assert_true(tes__size_mul_add(&out, 1000, 1000, 24) && out == 1000024);
    assert_false(tes__size_mul_add(&out, SIZE_MAX / 2, 2, 2));
    assert_true(tes__size_from_u64(&out, 12345) && out == 12345);
}

static struct {
    tes_query_t *own; /* the owning group's query, freed by its own swap */
    bool armed;
} self;

static void move_frees_own_group(void *dst, void *src, int32_t count, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)count * 4);
    if (self.armed) {
        self.armed = false;
        tes_query_free(self.own);
    }
}

/* The move hook run by an owning group's swap frees that group's own
 * query: the swap went on with the group's scratch value and length after
 * they were freed (the last move copied freed memory into a component). */
static void test_hook_frees_own_group_during_swap(void **state)
{
    (void)state;
    tes_world_desc_t desc = poison_desc();
    tes_world_t *w = tes_world_new(&desc);
    tes_component_desc_t da = {.name = "A", .size = 4, .storage = TES_STORAGE_SPARSE,
                               .hooks.move = move_frees_own_group};
    tes_comp_t a = tes_component(w, &da);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    tes_query_desc_t d = {.terms = {{a}, {b}}, .flags = TES_QUERY_OWNING_GROUP};
    self.own = tes_query_new(w, &d);
    assert_non_null(self.own);
    tes_entity_t x = tes_spawn(w), y = tes_spawn(w), e = tes_spawn(w);
    int vx = 1, vy = 2, ve = 3;
    tes_set(w, x, a, &vx);
    tes_add(w, x, b);
    tes_set(w, y, a, &vy);
    tes_set(w, e, a, &ve);
    self.armed = true; /* e's A sits behind y's: joining swaps them */
    assert_int_equal(tes_add(w, e, b), TES_OK);
    assert_false(self.armed);
    assert_int_equal(*(const int *)tes_get(w, x, a), 1);
    assert_int_equal(*(const int *)tes_get(w, y, a), 2);
    assert_int_equal(*(const int *)tes_get(w, e, a), 3);
    /* The stores are free again: a new owning group can claim them. */
    tes_query_t *again = tes_query_new(w, &d);
    assert_non_null(again);
    assert_int_equal(tes_query_count(again), 2);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Fails the allocation numbered fa_fail_in (1-based) counted from when the
 * observer below arms it. */
static ca_state_t fa;
static uint64_t fa_fail_in;

static void d6_build_group_armed(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (d6.group)
        return;
    ca_fail_in(&fa, fa_fail_in);
    tes_query_desc_t d = {.terms = {{d6.a}, {d6.c, TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP};
    d6.group = tes_query_new(w, &d);
    ca_fail_in(&fa, 0);
    if (!d6.group)
        assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
}

/* A group built by an observer reserves room for the call in progress when
 * it registers; when that (or any other allocation of the group) fails,
 * the group is not built, nothing leaks, and the call itself goes on. */
static void test_observer_group_allocation_failures(void **state)
{
    (void)state;
    bool built = false;
    for (int k = 1; !built && k < 100; k++) {
        memset(&d6, 0, sizeof d6);
        ca_init(&fa, 0);
        fa_fail_in = (uint64_t)k;
        tes_world_desc_t desc = {.allocator = ca_allocator(&fa)};
        tes_world_t *w = tes_world_new(&desc);
        d6.a = comp(w, "A", 4, TES_STORAGE_TABLE);
        tes_component_desc_t dc = {.name = "C", .size = 4, .hooks.on_remove = d6_build_group_armed};
        d6.c = tes_component(w, &dc);
        tes_entity_t e = tes_spawn(w);
        tes_add(w, e, d6.a);
        tes_add(w, e, d6.c);
        tes_remove(w, e, d6.a); /* caches the edges the real remove takes */
        tes_add(w, e, d6.a);
        tes_world_stats_t before, after;
        tes_world_stats(w, &before);
        assert_int_equal(tes_remove(w, e, d6.c), TES_OK);
        assert_false(tes_has(w, e, d6.c));
        built = d6.group != NULL;
        if (built) {
            assert_int_equal(tes_query_count(d6.group), 1);
            tes_query_free(d6.group);
        }
        tes_world_stats(w, &after);
        /* A failed build keeps at most some grown capacity (the query's
         * lists); LeakSanitizer checks that nothing else stays. */
        if (!built)
            assert_true(after.bytes_allocated - before.bytes_allocated < 1024);
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
        assert_int_equal(fa.live_blocks, 0);
    }
    assert_true(built);
}

static struct {
    tes_world_t *w;
    tes_comp_t a;
    int built;
} td;

static void dtor_builds_query(void *ptr, int32_t count, void *ctx)
{
    (void)ptr, (void)count, (void)ctx;
    if (!td.w)
        return;
    tes_query_desc_t d = {.terms = {{td.a}}, .flags = TES_QUERY_NONOWNING_GROUP};
    td.built += tes_query_new(td.w, &d) != NULL;
}

/* A destructor run by tes_world_free built a query: registering it grew
 * the world's list of dependents, which tes_world_free had just freed (a
 * realloc of a freed block), and the query was never freed. */
static void test_world_free_dtor_builds_query(void **state)
{
    (void)state;
    memset(&td, 0, sizeof td);
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t da = {.name = "A", .size = 4, .hooks.dtor = dtor_builds_query};
    td.a = tes_component(w, &da);
    tes_query_desc_t d = {.terms = {{td.a}}};
    assert_non_null(tes_query_new(w, &d)); /* a dependent list to free */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, td.a), TES_OK);
    td.w = w;
    tes_world_free(w);
    assert_int_equal(td.built, 1);
    td.w = NULL;
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
        cmocka_unit_test(test_set_after_observer_reorders_store),
        cmocka_unit_test(test_observer_builds_group_during_remove),
        cmocka_unit_test(test_ctor_builds_group_during_batch),
        cmocka_unit_test(test_hook_frees_group_during_notification),
        cmocka_unit_test(test_flush_clone_hooks_refuse_structural_calls),
        cmocka_unit_test(test_checked_size_helpers),
        cmocka_unit_test(test_hook_frees_own_group_during_swap),
        cmocka_unit_test(test_observer_group_allocation_failures),
        cmocka_unit_test(test_world_free_dtor_builds_query),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
