/*
 * Systems: what a captured chunk may point at, and what run may call.
 * - Root-walking systems (a query with no AND term walks entities that
 *   have no table component) get their own copies of the chunk handles:
 *   regression for chunks that pointed into the capturing iterator, gone
 *   by the time run was called.
 * - A structural and parallel system: its run calls get fixed blocks of
 *   rows, a deferred tes_ensure sees only what the same call queued and
 *   always stages its value, so the result is the same on 1, 2, 4 and 8
 *   threads.
 * - The calls run may make or is refused (world free, snapshots, query
 *   new and free, lookup views, freeing a system twice), the same on
 *   every thread count and level size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "world/check.h"

static const int32_t thread_counts[] = {1, 2, 4, 8};
#define NCOUNTS (sizeof thread_counts / sizeof thread_counts[0])

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

/* ---- root-walking systems --------------------------------------------- */

enum { ROOTS = 20, TABLED = 3000 };

typedef struct seen {
    tes_entity_t want[ROOTS + TABLED];
    int32_t wanted;
    atomic_int hits[ROOTS + TABLED];
    atomic_int bad;   /* a handle no entity of the world has */
    atomic_int calls;
} seen_t;

static void note_rows(tes_iter_t *it)
{
    seen_t *s = it->ctx;
    atomic_fetch_add(&s->calls, 1);
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t e = it->entities[i];
        int32_t k = 0;
        while (k < s->wanted && s->want[k] != e)
            k++;
        if (k == s->wanted || !tes_alive(it->world, e))
            atomic_fetch_add(&s->bad, 1);
        else
            atomic_fetch_add(&s->hits[k], 1);
    }
}

/* Each system below walks ROOTS entities with no component at all (and,
 * with `tabled`, TABLED entities with a table component too): run must
 * see each exactly once per frame, as live handles. The root runs come in
 * chunks of at most TES_ITER_SCRATCH, so several chunks are captured. */
static void root_walk_case(int32_t threads, bool parallel, bool structural, bool tabled)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    assert_non_null(w);
    tes_comp_t tag = comp(w, "Tag", 0, TES_STORAGE_TABLE);
    tes_comp_t other = comp(w, "Other", 4, TES_STORAGE_TABLE);
    seen_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    for (int32_t i = 0; i < ROOTS; i++)
        s->want[s->wanted++] = tes_spawn(w);
    for (int32_t i = 0; tabled && i < TABLED; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, other, &i), TES_OK);
        s->want[s->wanted++] = e;
    }
    tes_entity_t hidden = tes_spawn(w); /* has Tag: not matched */
    assert_int_equal(tes_add(w, hidden, tag), TES_OK);
    assert_non_null(tes_system_new(
        w, &(tes_system_desc_t){.name = "roots", .query = {.terms = {{tag, TES_NOT}}},
                                .run = note_rows, .ctx = s, .parallel = parallel,
                                .structural = structural}));
    for (int frame = 1; frame <= 3; frame++) {
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&s->bad), 0);
        for (int32_t k = 0; k < s->wanted; k++)
            assert_int_equal(atomic_load(&s->hits[k]), frame);
    }
    assert_true(atomic_load(&s->calls) >= 3 * (ROOTS / 8 + 1)); /* several root chunks */
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    free(s);
}

static void test_root_walking_system_sees_live_handles(void **state)
{
    (void)state;
    for (size_t k = 0; k < NCOUNTS; k++) {
        int32_t n = thread_counts[k];
        root_walk_case(n, false, false, false);
        root_walk_case(n, true, false, false);
        root_walk_case(n, true, true, false);
        root_walk_case(n, false, true, false);
        root_walk_case(n, true, false, true);
        root_walk_case(n, true, true, true);
    }
}

/* Two root-walking systems of one level: each chunk of each keeps its own
 * handles (they once all pointed at one dead iterator's array). */
static void test_root_chunks_do_not_alias(void **state)
{
    (void)state;
    for (size_t k = 0; k < NCOUNTS; k++) {
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = thread_counts[k]});
        tes_comp_t a = comp(w, "A", 0, TES_STORAGE_TABLE);
        tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
        seen_t *s1 = calloc(1, sizeof *s1), *s2 = calloc(1, sizeof *s2);
        assert_non_null(s1);
        assert_non_null(s2);
        for (int32_t i = 0; i < ROOTS; i++) {
            tes_entity_t e = tes_spawn(w);
            s1->want[s1->wanted++] = e;
            if (i % 3 == 0) { /* sparse components keep an entity a root */
                assert_int_equal(tes_set(w, e, b, &i), TES_OK);
                s2->want[s2->wanted++] = e;
            }
        }
        assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                              .name = "s1", .query = {.terms = {{a, TES_NOT}}},
                                              .run = note_rows, .ctx = s1, .parallel = true}));
        assert_non_null(tes_system_new(
            w, &(tes_system_desc_t){.name = "s2",
                                    .query = {.terms = {{a, TES_NOT}, {b, TES_OPTIONAL, TES_IN}}},
                                    .run = note_rows, .ctx = s2, .parallel = true}));
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&s1->bad), 0);
        for (int32_t i = 0; i < s1->wanted; i++)
            assert_int_equal(atomic_load(&s1->hits[i]), 1);
        /* s2 matches every root too (B is optional); its B entities once. */
        assert_int_equal(atomic_load(&s2->bad), ROOTS - s2->wanted);
        for (int32_t i = 0; i < s2->wanted; i++)
            assert_int_equal(atomic_load(&s2->hits[i]), 1);
        tes_world_free(w);
        free(s1);
        free(s2);
    }
}

/* ---- a structural and parallel system: identical on any thread count -- */

/* Five blocks; small enough for TES_DEBUG builds (every row move there
 * moves the whole table to fresh memory). */
enum { CROSS_ROWS = 5000 };

typedef struct cross {
    tes_comp_t v, c;
    tes_entity_t *es;
    atomic_int bad;
    atomic_int calls;
    atomic_int widest; /* the most rows one call got */
} cross_t;

/* Rows name other rows' entities: row r sets or removes C of a later (or
 * earlier) row's entity, and every even row adds 1 to its own C through
 * tes_ensure; every 7th row also ensures another row's C (its value staged
 * too, so no thread writes a row another may read). The four rows the test checks exactly: 10 sets row 20 (same
 * block), 0 sets row 1500 (another block), 40 removes row 50's C, 30
 * removes row 1600's. */
static void cross_run(tes_iter_t *it)
{
    cross_t *x = it->ctx;
    atomic_fetch_add(&x->calls, 1);
    int w = atomic_load(&x->widest);
    while (it->count > w && !atomic_compare_exchange_weak(&x->widest, &w, it->count))
        ;
    const int32_t *v = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        int32_t r = v[i];
        int64_t value = 100;
        int rc = TES_OK;
        if (r == 10 || r == 0)
            rc = tes_set(it->world, x->es[r == 10 ? 20 : 1500], x->c, &value);
        else if (r == 40 || r == 30)
            rc = tes_remove(it->world, x->es[r == 40 ? 50 : 1600], x->c);
        else if (r % 3 == 0) {
            tes_entity_t target = x->es[(r + r % 2500 + 1) % CROSS_ROWS];
            value = 100 + r;
            rc = r % 6 == 0 ? tes_set(it->world, target, x->c, &value)
                            : tes_remove(it->world, target, x->c);
        }
        if (rc != TES_OK)
            atomic_fetch_add(&x->bad, 1);
        if (r % 2 == 0) {
            int64_t *p = tes_ensure(it->world, it->entities[i], x->c);
            if (!p || p == tes_get_mut(it->world, it->entities[i], x->c))
                atomic_fetch_add(&x->bad, 1); /* staged, never the stored value */
            else
                *p += 1;
        }
        if (r % 7 == 0 && r > 60) {
            int64_t *p = tes_ensure(it->world, x->es[(r * 31) % CROSS_ROWS], x->c);
            if (!p)
                atomic_fetch_add(&x->bad, 1);
            else
                *p += 1000;
        }
    }
}

static uint64_t cross_case(int32_t threads, bool sparse, int64_t *exact)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    assert_non_null(w);
    cross_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->es = malloc(CROSS_ROWS * sizeof *x->es);
    assert_non_null(x->es);
    x->v = comp(w, "V", 4, TES_STORAGE_TABLE);
    x->c = comp(w, "C", 8, sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
    for (int32_t i = 0; i < CROSS_ROWS; i++) {
        x->es[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, x->es[i], x->v, &i), TES_OK);
        assert_int_equal(tes_set(w, x->es[i], x->c, &(int64_t){0}), TES_OK);
    }
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                          .name = "cross",
                                          .query = {.terms = {{x->v, TES_AND, TES_IN}}},
                                          .run = cross_run, .ctx = x, .parallel = true,
                                          .structural = true}));
    uint64_t h = 1469598103934665603u;
    for (int frame = 0; frame < 2; frame++) {
        atomic_store(&x->calls, 0);
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&x->bad), 0);
        if (frame == 0) {
            /* Fixed blocks, the same on every thread count (one table). */
            assert_int_equal(atomic_load(&x->calls), (CROSS_ROWS + 1023) / 1024);
            assert_int_equal(atomic_load(&x->widest), 1024);
            static const int32_t rows[4] = {20, 1500, 50, 1600};
            for (int k = 0; k < 4; k++) {
                const int64_t *p = tes_get(w, x->es[rows[k]], x->c);
                exact[k] = p ? *p : -1;
            }
        }
        for (int32_t i = 0; i < CROSS_ROWS; i++) {
            const int64_t *p = tes_get(w, x->es[i], x->c);
            h = (h ^ (uint64_t)(p ? *p : -7)) * 1099511628211u;
        }
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    free(x->es);
    free(x);
    return h;
}

/* Regression: on one thread a deferred tes_ensure saw what any earlier row
 * had queued for its entity; split over threads it saw only what its own
 * thread had, so the result depended on the thread count (101 on one
 * thread, 100 or 101 on several). Now each call of run gets a fixed block
 * and tes_ensure sees what the same call queued, on every thread count. */
static void test_split_structural_identical_on_any_thread_count(void **state)
{
    (void)state;
    for (int sparse = 0; sparse < 2; sparse++) {
        uint64_t first = 0;
        for (size_t k = 0; k < NCOUNTS; k++) {
            for (int again = 0; again < 2; again++) {
                int64_t exact[4];
                uint64_t h = cross_case(thread_counts[k], sparse, exact);
                if (k == 0 && again == 0)
                    first = h;
                assert_true(h == first);
                /* Every change is a command applied in row order; an ensure
                 * sees the commands of its own call (block) only. */
                assert_true(exact[0] == 101); /* the set, then the same block's ensure */
                assert_true(exact[1] == 1);   /* the set, then an ensure that saw 0 */
                assert_true(exact[2] == 1);   /* removed, then ensured in the same block */
                assert_true(exact[3] == 1);   /* removed, then an ensure that saw 0 */
            }
        }
    }
}

/* ---- what run may call -------------------------------------------------- */

typedef struct calls_ctx {
    tes_comp_t v;
    tes_query_t *outside; /* made before tes_progress */
    tes_system_t *self;
    atomic_int unexpected;
    atomic_int io;     /* writer or reader calls: there must be none */
    atomic_int looked; /* rows read through a lookup view */
    atomic_int calls;
} calls_ctx_t;

static int count_write(const void *data, size_t size, void *user)
{
    (void)data;
    (void)size;
    atomic_fetch_add((atomic_int *)user, 1);
    return TES_OK;
}

static int count_read(void *data, size_t size, void *user)
{
    memset(data, 0, size);
    atomic_fetch_add((atomic_int *)user, 1);
    return TES_OK;
}

#define EXPECT(cond)                                                                          \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "unexpected in run: %s (line %d)\n", #cond, __LINE__);            \
            atomic_fetch_add(&x->unexpected, 1);                                              \
        }                                                                                     \
    } while (0)

/* Every call the reference lists for systems, from every call of run: the
 * refused ones fail with TES_ERR_BUSY and change nothing, the others work,
 * whatever the thread count or the level's size. */
static void calls_run(tes_iter_t *it)
{
    calls_ctx_t *x = it->ctx;
    tes_world_t *w = it->world;
    atomic_fetch_add(&x->calls, 1);
    tes_world_free(w);
    EXPECT(tes_last_error(w) == TES_ERR_BUSY);
    tes_writer_t out = {count_write, &x->io};
    EXPECT(tes_snapshot_save(w, &out) == TES_ERR_BUSY);
    tes_reader_t in = {count_read, &x->io};
    EXPECT(tes_snapshot_load(w, &in) == TES_ERR_BUSY);
    EXPECT(tes_query_new(w, &(tes_query_desc_t){.terms = {{x->v}}}) == NULL);
    EXPECT(tes_last_error(w) == TES_ERR_BUSY);
    tes_query_free(x->outside);
    EXPECT(tes_last_error(w) == TES_ERR_BUSY);
    EXPECT(tes_query_count(x->outside) > 0); /* still there */
    EXPECT(tes_progress(w, 0) == TES_ERR_BUSY);
    EXPECT(tes_system_new(w, &(tes_system_desc_t){.name = "late", .run = calls_run}) == NULL);
    EXPECT(tes_last_error(w) == TES_ERR_BUSY);
    EXPECT(tes_defer_begin(w) == TES_ERR_BUSY);
    /* A lookup view of a table component works on every thread count. */
    tes_lookup_t view;
    EXPECT(tes_lookup_init(&view, w, x->v) == TES_OK);
    const int32_t *v = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        const int32_t *p = tes_lookup_get(&view, it->entities[i]);
        EXPECT(p && *p == v[i]);
    }
    atomic_fetch_add(&x->looked, it->count);
    tes_lookup_fini(&view);
    /* Freeing the system itself, twice in one call (several threads may do
     * the same at once): it is freed once, when the frame ends. */
    tes_system_free(x->self);
    tes_system_free(x->self);
}

static void calls_case(int32_t threads, int32_t rows, bool parallel, bool structural)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    assert_non_null(w);
    calls_ctx_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->v = comp(w, "V", 4, TES_STORAGE_TABLE);
    tes_comp_t other = comp(w, "O", 4, TES_STORAGE_TABLE);
    for (int32_t i = 0; i < rows; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, x->v, &i), TES_OK);
        if (i % 2)
            assert_int_equal(tes_add(w, e, other), TES_OK); /* two tables */
    }
    x->outside = tes_query_new(w, &(tes_query_desc_t){.terms = {{x->v}}});
    assert_non_null(x->outside);
    tes_system_desc_t d = {.name = "calls", .query = {.terms = {{x->v, TES_AND, TES_IN}}},
                           .run = calls_run, .ctx = x, .parallel = parallel,
                           .structural = structural};
    x->self = tes_system_new(w, &d);
    assert_non_null(x->self);
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(atomic_load(&x->unexpected), 0);
    assert_int_equal(atomic_load(&x->io), 0);
    assert_int_equal(atomic_load(&x->looked), rows);
    int calls = atomic_load(&x->calls);
    assert_true(calls >= 2);
    /* The system is gone: its name is free, and the next frame runs nothing. */
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(atomic_load(&x->calls), calls);
    assert_int_equal(tes_query_count(x->outside), rows);
    tes_system_t *again = tes_system_new(w, &d);
    assert_non_null(again);
    tes_system_free(again);
    tes_query_free(x->outside);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    free(x);
}

static void test_calls_from_run_same_on_any_thread_count(void **state)
{
    (void)state;
    static const int32_t rows[] = {10, 6000}; /* a level run inline; one split over threads */
    for (size_t k = 0; k < NCOUNTS; k++)
        for (size_t r = 0; r < 2; r++)
            for (int kind = 0; kind < 4; kind++)
                calls_case(thread_counts[k], rows[r], kind & 1, kind & 2);
}

/* Hooks the flush at a structural system's end runs are not inside run:
 * they may create and free queries, on every thread count. */
static tes_comp_t hook_comp;
static atomic_int hook_made;

static void on_add_make_query(tes_world_t *w, tes_entity_t e, void *value, void *ctx)
{
    (void)e;
    (void)value;
    (void)ctx;
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{hook_comp}}});
    if (q) {
        atomic_fetch_add(&hook_made, 1);
        tes_query_free(q);
    }
}

static void add_hooked(tes_iter_t *it)
{
    for (int32_t i = 0; i < it->count; i++)
        assert_int_equal(tes_add(it->world, it->entities[i], hook_comp), TES_OK);
}

static void test_flush_hooks_may_make_queries(void **state)
{
    (void)state;
    for (size_t k = 0; k < NCOUNTS; k++) {
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = thread_counts[k]});
        tes_comp_t v = comp(w, "V", 4, TES_STORAGE_TABLE);
        tes_component_desc_t hd = {.name = "H", .size = 4};
        hd.hooks.on_add = on_add_make_query;
        hook_comp = tes_component(w, &hd);
        assert_int_not_equal(hook_comp, 0);
        for (int32_t i = 0; i < 3000; i++)
            assert_int_equal(tes_set(w, tes_spawn(w), v, &i), TES_OK);
        atomic_store(&hook_made, 0);
        assert_non_null(tes_system_new(
            w, &(tes_system_desc_t){.name = "adds", .query = {.terms = {{v, TES_AND, TES_IN}}},
                                    .run = add_hooked, .parallel = true, .structural = true}));
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&hook_made), 3000);
        tes_world_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_walking_system_sees_live_handles),
        cmocka_unit_test(test_root_chunks_do_not_alias),
        cmocka_unit_test(test_split_structural_identical_on_any_thread_count),
        cmocka_unit_test(test_calls_from_run_same_on_any_thread_count),
        cmocka_unit_test(test_flush_hooks_may_make_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
