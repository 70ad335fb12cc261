/*
 * The hook rules, one scenario each: deferral levels, owning groups and
 * iteration are refused inside hooks (TES_ERR_BUSY, nothing changed), while
 * plain queries, non-owning groups and freeing queries work there. The
 * first tests reproduce defect 4 of issue 11 (a deferral level opened by an
 * observer during a flush made the flush queue its remaining commands onto
 * the queue it was applying: use-after-free or an endless flush). The
 * exhaustive matrix (every call from every hook in every context) is
 * test_reentrancy.c; these are the readable stories behind it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "query/query.h"
#include "support/counting_alloc.h"
#include "world/check.h"

typedef struct probe {
    int begin_rc, end_rc, fired;
    tes_query_t *query; /* built or freed by a hook */
    tes_comp_t other;
} probe_t;

static probe_t P;

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage,
                       tes_hooks_t hooks)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage, .hooks = hooks};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

static void open_level(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (P.fired++ == 0)
        P.begin_rc = tes_defer_begin(w);
}

static void close_level(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (P.end_rc == TES_OK) /* the first time */
        P.end_rc = tes_defer_end(w);
}

/* Defect 4 as reported: an on_add run by the flush opens a level, a later
 * observer of the same flush closes it. */
static void test_defer_level_from_observers_during_flush(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = open_level});
    tes_comp_t b = comp(w, "B", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = close_level});
    tes_entity_t e[40];
    for (int i = 0; i < 40; i++)
        e[i] = tes_spawn(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_add(w, e[0], a), TES_OK);
    /* Staged values between the two observers: the re-queued commands
     * grew the queue the flush was reading them from. */
    for (int i = 1; i < 39; i++) {
        int64_t v = i;
        assert_int_equal(tes_set(w, e[i], a, &v), TES_OK);
    }
    assert_int_equal(tes_add(w, e[39], b), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(P.begin_rc, TES_ERR_BUSY);
    assert_int_equal(P.end_rc, TES_ERR_BUSY);
    assert_false(tes_is_deferred(w));
    /* Every command was applied, once. */
    for (int i = 1; i < 39; i++)
        assert_int_equal(*(const int64_t *)tes_get(w, e[i], a), i);
    assert_true(tes_has(w, e[0], a));
    assert_true(tes_has(w, e[39], b));
    assert_int_equal(tes__world_check(w), TES_OK);
    /* The world is not left deferred: a later change is immediate. */
    assert_int_equal(tes_remove(w, e[0], a), TES_OK);
    assert_false(tes_has(w, e[0], a));
    tes_world_free(w);
}

/* The other half of defect 4: a level opened during the flush and never
 * closed kept the flush going forever (each applied command queued again). */
static void test_unclosed_level_from_observer_during_flush(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_SPARSE, (tes_hooks_t){.on_add = open_level});
    tes_entity_t e[3] = {tes_spawn(w), tes_spawn(w), tes_spawn(w)};
    assert_int_equal(tes_defer_begin(w), TES_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tes_add(w, e[i], a), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(P.begin_rc, TES_ERR_BUSY);
    assert_int_equal(P.fired, 3);
    assert_false(tes_is_deferred(w));
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID); /* no level is open */
    for (int i = 0; i < 3; i++)
        assert_true(tes_has(w, e[i], a));
    tes_world_free(w);
}

/* Immediate calls: the same refusal, and the world stays immediate. */
static void test_defer_calls_refused_in_immediate_hooks(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = open_level});
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(P.begin_rc, TES_ERR_BUSY);
    assert_int_equal(tes_last_error(w), TES_ERR_BUSY);
    assert_false(tes_is_deferred(w));
    assert_int_equal(tes_remove(w, e, a), TES_OK);
    assert_false(tes_has(w, e, a));
    tes_world_free(w);
}

static tes_query_desc_t P_desc;

static void build_query(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (P.fired++ == 0)
        P.query = tes_query_new(w, &P_desc);
}

static void build_then_free_query(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (P.fired++ == 0)
        tes_query_free(tes_query_new(w, &P_desc));
}

/* Defect 5's root: an observer that builds an owning group reorders the
 * store the running tes_set holds an address in. Refused now. */
static void test_owning_group_refused_in_observer(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_SPARSE, (tes_hooks_t){.on_add = build_query});
    tes_comp_t b = comp(w, "B", 8, TES_STORAGE_SPARSE, (tes_hooks_t){0});
    P_desc = (tes_query_desc_t){.terms = {{a}, {b}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_entity_t other = tes_spawn(w), e = tes_spawn(w);
    int64_t seven = 7, v = 42;
    assert_int_equal(tes_set(w, other, b, &seven), TES_OK);
    assert_int_equal(tes_set(w, other, a, &seven), TES_OK); /* the observer runs here */
    assert_null(P.query);
    assert_int_equal(tes_last_error(w), TES_ERR_BUSY);
    assert_int_equal(tes_set(w, e, b, &v), TES_OK);
    assert_int_equal(tes_set(w, e, a, &v), TES_OK);
    assert_int_equal(*(const int64_t *)tes_get(w, e, a), 42);
    assert_int_equal(*(const int64_t *)tes_get(w, other, a), 7);
    /* Outside hooks the owning group is built as before. */
    tes_query_t *q = tes_query_new(w, &P_desc);
    assert_non_null(q);
    assert_int_equal(tes_query_count(q), 2);
    tes_query_free(q);
    tes_world_free(w);
}

/* A non-owning group asked for inside on_remove of a table remove (defect
 * 6's shape): it must come out right, and it is the same query later. */
static void test_nonowning_group_from_on_remove(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_TABLE, (tes_hooks_t){0});
    tes_comp_t c = comp(w, "C", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_remove = build_query});
    P_desc = (tes_query_desc_t){.terms = {{a}, {c, TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_entity_t e[100];
    for (int i = 0; i < 100; i++) {
        e[i] = tes_spawn(w);
        assert_int_equal(tes_add(w, e[i], a), TES_OK);
        assert_int_equal(tes_add(w, e[i], c), TES_OK);
    }
    for (int i = 0; i < 100; i++)
        assert_int_equal(tes_remove(w, e[i], c), TES_OK);
    assert_non_null(P.query);
    assert_int_equal(tes_query_count(P.query), 100);
    int seen = 0;
    tes_iter_t it = tes_query_iter(P.query);
    while (tes_iter_next(&it)) {
        const int64_t *va = tes_field(&it, 0);
        assert_non_null(va);
        assert_null(tes_field(&it, 1));
        seen += it.count;
    }
    assert_int_equal(seen, 100);
    assert_int_equal(tes_add(w, e[3], c), TES_OK);
    assert_int_equal(tes_query_count(P.query), 99);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(P.query);
    tes_world_free(w);
}

static void free_query(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
}

static void move_frees_query(void *dst, void *src, int32_t count, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)count * 8);
    if (P.query && P.fired++ == 0) {
        tes_query_free(P.query);
        P.query = NULL;
    }
}

/* A move hook run by an owning group's reordering frees that very group's
 * query: the group must stay usable until the change is over. */
static void test_owning_group_freed_from_its_own_move_hook(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_SPARSE, (tes_hooks_t){.move = move_frees_query,
                                                                      .on_add = free_query});
    tes_comp_t g = comp(w, "G", 0, TES_STORAGE_SPARSE, (tes_hooks_t){0});
    tes_query_desc_t d = {.terms = {{a}, {g}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    tes_entity_t e[8];
    for (int i = 0; i < 8; i++) {
        e[i] = tes_spawn(w);
        int64_t v = i;
        assert_int_equal(tes_set(w, e[i], a, &v), TES_OK);
    }
    P.query = q;
    /* e[5] joins the group: it is swapped to the front, a move hook runs. */
    assert_int_equal(tes_add(w, e[5], g), TES_OK);
    assert_null(P.query);
    for (int i = 0; i < 8; i++)
        assert_int_equal(*(const int64_t *)tes_get(w, e[i], a), i);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* The group is gone: the store can be owned again. */
    q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_int_equal(tes_query_count(q), 1);
    tes_world_free(w);
}

static void iterate_in_hook(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
    if (P.fired++)
        return;
    tes_iter_t it = tes_query_iter(P.query);
    P.begin_rc = tes_last_error(w);
    while (tes_iter_next(&it))
        P.end_rc++; /* counts chunks: must stay 0 */
    tes_iter_fini(&it);
    P.other = (tes_comp_t)tes_query_count(P.query);
}

/* Iterating inside a hook yields a finished iterator and records
 * TES_ERR_BUSY; tes_query_count works there. */
static void test_iteration_refused_in_hook(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = iterate_in_hook});
    tes_comp_t b = comp(w, "B", 8, TES_STORAGE_TABLE, (tes_hooks_t){0});
    tes_query_desc_t d = {.terms = {{b}}};
    P.query = tes_query_new(w, &d);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), b), TES_OK);
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(P.begin_rc, TES_ERR_BUSY);
    assert_int_equal(P.end_rc, 0);
    assert_int_equal(P.other, 5);
    assert_false(tes_is_deferred(w));
    assert_int_equal(tes_query_count(P.query), 5);
    tes_world_free(w);
}

static tes_world_t *P_world;

static void dtor_frees_world(void *ptr, int32_t count, void *ctx)
{
    (void)ptr, (void)count, (void)ctx;
    if (P.fired++ == 0) {
        tes_world_free(P_world);
        P.begin_rc = tes_last_error(P_world);
    }
}

/* tes_world_free from one of the world's own hooks is refused. */
static void test_world_free_refused_in_hook(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = P_world = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_TABLE, (tes_hooks_t){.dtor = dtor_frees_world});
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(tes_remove(w, e, a), TES_OK);
    assert_int_equal(P.begin_rc, TES_ERR_BUSY);
    assert_true(tes_alive(w, e));
    assert_int_equal(tes_add(w, e, a), TES_OK);
    tes_world_free(w); /* the dtor runs again here: refused again */
    assert_int_equal(P.fired, 2);
}

static void dtor_frees_query(void *ptr, int32_t count, void *ctx)
{
    (void)ptr, (void)count, (void)ctx;
    if (P.query) {
        P.fired++;
        assert_int_equal(tes_query_count(P.query), 1);
        tes_query_free(P.query);
        P.query = NULL;
    }
}

/* A destructor run by tes_world_free may still use and free its queries. */
static void test_dtor_frees_query_during_world_free(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_SPARSE, (tes_hooks_t){.dtor = dtor_frees_query});
    tes_query_desc_t d = {.terms = {{a}}, .flags = TES_QUERY_NONOWNING_GROUP};
    P.query = tes_query_new(w, &d);
    assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
    tes_world_free(w);
    assert_int_equal(P.fired, 1);
}

static tes_comp_t P_tag;

static void copy_adds(void *dst, const void *src, int32_t count, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)count * 8);
    if (P.fired++ == 0) {
        tes_entity_t *target = ctx;
        P.begin_rc = tes_add(P_world, *target, P_tag);
    }
}

/* A deferred clone is applied at the flush by library code, not through a
 * public call: its copy hooks ran with no hook level, so a structural call
 * from them went through (here: moving the clone's source row while the
 * clone was copying from it). */
static void test_deferred_clone_hooks_are_hooks(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = P_world = tes_world_new(NULL);
    static tes_entity_t src;
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_TABLE, (tes_hooks_t){.copy = copy_adds, .ctx = &src});
    P_tag = comp(w, "Tag", 0, TES_STORAGE_TABLE, (tes_hooks_t){0});
    src = tes_spawn(w);
    int64_t v = 5;
    assert_int_equal(tes_set(w, src, a, &v), TES_OK);
    P = (probe_t){0}; /* the copy hook ran in the set: forget it */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t copy = tes_clone(w, src);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(P.begin_rc, TES_ERR_BUSY);
    assert_false(tes_has(w, src, P_tag));
    assert_int_equal(*(const int64_t *)tes_get(w, copy, a), 5);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A non-owning group asked for inside a hook is built when the call that
 * ran the hook returns, before anyone iterates: tes_query_iter used to
 * build it, a write to the query (and to the world's watcher list) that two
 * threads starting to iterate at once would both make. */
static void test_group_from_hook_is_built_when_the_call_returns(void **state)
{
    (void)state;
    P = (probe_t){0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 8, TES_STORAGE_SPARSE, (tes_hooks_t){0});
    tes_comp_t c = comp(w, "C", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = build_query});
    P_desc = (tes_query_desc_t){.terms = {{a}}, .flags = TES_QUERY_NONOWNING_GROUP};
    for (int i = 0; i < 10; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
    assert_int_equal(tes_add(w, tes_spawn(w), c), TES_OK);
    assert_non_null(P.query);
    assert_non_null(P.query->group);
    assert_false(P.query->group_pending);
    /* Iterating and counting then only read it. */
    tes_query_t before;
    memcpy(&before, P.query, sizeof before);
    assert_int_equal(tes_query_count(P.query), 10);
    int32_t n = 0;
    tes_iter_t it = tes_query_iter(P.query);
    while (tes_iter_next(&it))
        n += it.count;
    assert_int_equal(n, 10);
    assert_memory_equal(&before, P.query, sizeof before);
    /* Freed from inside a hook before its call returns: never built. */
    P = (probe_t){0};
    tes_comp_t d = comp(w, "D", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = build_then_free_query});
    assert_int_equal(tes_add(w, tes_spawn(w), d), TES_OK);
    assert_int_equal(P.fired, 1);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Allocation failures around a non-owning group asked for inside a hook:
 * in the hook's tes_query_new (NULL, TES_ERR_NOMEM, nothing registered), in
 * the call that runs the hook (TES_ERR_NOMEM, nothing changed), and in the
 * group's build when that call returns (the call succeeds, the query still
 * answers right and builds its group when the next structural call
 * returns). Nothing leaks in any run. */
static void test_group_from_hook_under_allocation_failures(void **state)
{
    (void)state;
    int64_t injected = 0, build_failures = 0;
    for (int64_t k = 1;; k++) {
        ca_state_t fa;
        ca_init(&fa, 0);
        tes_world_desc_t wd = {.allocator = ca_allocator(&fa)};
        tes_world_t *w = tes_world_new(&wd);
        assert_non_null(w);
        P = (probe_t){0};
        tes_comp_t a = comp(w, "A", 8, TES_STORAGE_SPARSE, (tes_hooks_t){0});
        tes_comp_t c = comp(w, "C", 8, TES_STORAGE_TABLE, (tes_hooks_t){.on_add = build_query});
        P_desc = (tes_query_desc_t){.terms = {{a}}, .flags = TES_QUERY_NONOWNING_GROUP};
        for (int i = 0; i < 300; i++)
            assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
        tes_entity_t e = tes_spawn(w);
        /* The k-th allocation from here on fails: in the add, in its
         * hook's tes_query_new, or in the group's build as the add returns. */
        ca_fail_in(&fa, (uint64_t)k);
        int rc = tes_add(w, e, c);
        bool built = P.query && P.query->group;
        if (rc == TES_ERR_NOMEM) {
            assert_false(tes_has(w, e, c));
            assert_null(P.query); /* the hook never ran: on_add comes last */
        } else {
            assert_int_equal(rc, TES_OK);
            assert_true(tes_has(w, e, c));
            if (!P.query)
                assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
        }
        if (P.query) {
            /* The hook's query came back: if its group is not there, the
             * build met the failure (it is the add's last allocation). */
            build_failures += !built;
            if (!built)
                assert_true(P.query->group_pending);
            uint64_t was = fa.failures;
            assert_int_equal(tes_query_count(P.query), 300);
            assert_int_equal(fa.failures, was); /* counting builds nothing */
            ca_fail_in(&fa, 0);
            int32_t n = 0;
            tes_iter_t it = tes_query_iter(P.query);
            while (tes_iter_next(&it))
                n += it.count;
            assert_int_equal(n, 300);
            assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
            assert_non_null(P.query->group); /* built by now */
            assert_int_equal(tes_query_count(P.query), 301);
        }
        ca_fail_in(&fa, 0);
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
        assert_int_equal(fa.live_bytes, 0);
        assert_int_equal(fa.live_blocks, 0);
        injected += (int64_t)fa.failures;
        if (fa.failures == 0)
            break; /* k passed every allocation both phases make */
    }
    assert_true(injected > 3);
    assert_true(build_failures > 0); /* the build's own allocations were reached */
}

int main(int argc, char **argv)
{
    if (argc > 1) /* runs the tests whose names match argv[1] */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defer_level_from_observers_during_flush),
        cmocka_unit_test(test_unclosed_level_from_observer_during_flush),
        cmocka_unit_test(test_defer_calls_refused_in_immediate_hooks),
        cmocka_unit_test(test_owning_group_refused_in_observer),
        cmocka_unit_test(test_nonowning_group_from_on_remove),
        cmocka_unit_test(test_owning_group_freed_from_its_own_move_hook),
        cmocka_unit_test(test_iteration_refused_in_hook),
        cmocka_unit_test(test_world_free_refused_in_hook),
        cmocka_unit_test(test_dtor_frees_query_during_world_free),
        cmocka_unit_test(test_deferred_clone_hooks_are_hooks),
        cmocka_unit_test(test_group_from_hook_under_allocation_failures),
        cmocka_unit_test(test_group_from_hook_is_built_when_the_call_returns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
