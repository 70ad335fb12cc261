/*
 * Systems and the scheduler: creation rules, what run receives, the
 * structural/parallel rules, freeing during a frame, and determinism — a
 * randomized world with 24 systems (some structural, at least three of them
 * also parallel: split over the threads with per-thread command queues)
 * whose state hash after 100 frames must be identical for 1, 2, 3, 4 and 8
 * threads (this file also runs under the thread sanitizer: make tsan);
 * and that worker threads park once the frames are over.
 */
#if defined(__linux__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* nanosleep, getpid */
#endif
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#ifdef __linux__
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#endif

#include "tessera.h"
#include "world/check.h"

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

typedef struct record {
    int calls;
    int rows;
    int first_status;
    float dt;
    void *ctx;
    tes_comp_t a;
    tes_entity_t spawned;
    tes_query_t *q;
} record_t;

static void count_rows(tes_iter_t *it)
{
    record_t *r = it->ctx;
    r->calls++;
    r->rows += it->count;
    r->dt = it->delta_time;
    r->ctx = it->ctx;
    int32_t *vals = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        vals[i] += 1;
}

static void test_runs_chunks_with_frame_data(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_TABLE);
    tes_comp_t none = comp(w, "None", 4, TES_STORAGE_TABLE);
    for (int i = 0; i < 10; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_add(w, e, a), TES_OK);
        if (i % 2)
            assert_int_equal(tes_add(w, e, b), TES_OK);
    }
    record_t r = {0}, nothing = {0};
    tes_system_desc_t d = {.name = "count", .query = {.terms = {{a}}}, .run = count_rows, .ctx = &r};
    assert_non_null(tes_system_new(w, &d));
    tes_system_desc_t n = {.name = "nothing", .query = {.terms = {{none}}}, .run = count_rows,
                           .ctx = &nothing};
    assert_non_null(tes_system_new(w, &n));
    assert_int_equal(tes_progress(w, 0.5f), TES_OK);
    assert_int_equal(r.calls, 2); /* two tables */
    assert_int_equal(r.rows, 10);
    assert_true(r.dt == 0.5f);
    assert_ptr_equal(r.ctx, &r);
    assert_int_equal(nothing.calls, 0); /* matches nothing: not called */
    tes_iter_t it = tes_query_iter(tes_query_new(w, &(tes_query_desc_t){.terms = {{a}}}));
    while (tes_iter_next(&it)) {
        const int32_t *v = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            assert_int_equal(v[i], 1);
    }
    tes_world_free(w);
}

static void no_terms(tes_iter_t *it)
{
    record_t *r = it->ctx;
    r->calls++;
    r->rows += it->count;
    assert_null(it->entities);
    assert_null(tes_field(it, 0));
    assert_false(tes_iter_next(it));
}

static void test_system_without_terms_runs_once(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 2});
    assert_non_null(w);
    record_t r = {0};
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){.name = "t", .run = no_terms, .ctx = &r}));
    for (int i = 0; i < 3; i++)
        assert_int_equal(tes_progress(w, 1), TES_OK);
    assert_int_equal(r.calls, 3);
    assert_int_equal(r.rows, 0);
    tes_world_free(w);
}

static void nop(tes_iter_t *it) { (void)it; }

static void test_creation_rules(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    assert_null(tes_system_new(NULL, &(tes_system_desc_t){.name = "x", .run = nop}));
    assert_null(tes_system_new(w, NULL));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_null(tes_system_new(w, &(tes_system_desc_t){.run = nop}));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_null(tes_system_new(w, &(tes_system_desc_t){.name = "x"}));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    /* A query tes_query_new refuses: a component named twice. */
    assert_null(tes_system_new(
        w, &(tes_system_desc_t){.name = "x", .run = nop, .query = {.terms = {{a}, {a}}}}));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    tes_system_t *s = tes_system_new(w, &(tes_system_desc_t){.name = "x", .run = nop});
    assert_non_null(s);
    assert_null(tes_system_new(w, &(tes_system_desc_t){.name = "x", .run = nop}));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    tes_system_free(s);
    tes_system_free(NULL);
    s = tes_system_new(w, &(tes_system_desc_t){.name = "x", .run = nop});
    assert_non_null(s); /* the name is free again */
    assert_int_equal(tes_progress(NULL, 0), TES_ERR_INVALID);
    assert_null(tes_world_new(&(tes_world_desc_t){.threads = -1}));
    assert_null(tes_world_new(&(tes_world_desc_t){.threads = TES_MAX_THREADS + 1}));
    /* A deferred world does not run systems. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_progress(w, 0), TES_ERR_BUSY);
    assert_int_equal(tes_defer_end(w), TES_OK);
    tes_world_free(w); /* frees the system still alive */
}

/* A system without the structural flag: every structural call is refused
 * and nothing is queued. */
static void try_structural(tes_iter_t *it)
{
    record_t *r = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        int rc = tes_remove(it->world, it->entities[i], r->a);
        if (!r->first_status)
            r->first_status = rc;
        assert_int_equal(tes_add(it->world, it->entities[i], r->a), TES_ERR_BUSY);
        assert_int_equal(tes_destroy(it->world, it->entities[i]), TES_ERR_BUSY);
        assert_int_equal(tes_spawn(it->world), TES_NULL);
        assert_int_equal(tes_last_error(it->world), TES_ERR_BUSY);
        assert_int_equal(tes_progress(it->world, 0), TES_ERR_BUSY);
        assert_null(tes_system_new(it->world, &(tes_system_desc_t){.name = "y", .run = nop}));
        assert_int_equal(tes_defer_begin(it->world), TES_ERR_BUSY);
        assert_int_equal(tes_defer_end(it->world), TES_ERR_BUSY);
        tes_world_free(it->world); /* refused: the frame goes on */
        assert_int_equal(tes_last_error(it->world), TES_ERR_BUSY);
        r->rows++;
    }
    /* Queries work inside systems (unlike inside hooks). */
    if (r->calls++ == 0) {
        int32_t n = 0;
        tes_iter_t q = tes_query_iter(r->q);
        while (tes_iter_next(&q))
            n += q.count;
        assert_int_equal(n, 5000);
        assert_int_equal(tes_query_count(r->q), 5000);
    }
}

static void test_non_structural_system_is_refused(void **state)
{
    (void)state;
    for (int32_t threads = 1; threads <= 2; threads++) {
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
        tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
        for (int i = 0; i < 5000; i++)
            assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
        record_t r = {.a = a, .q = tes_query_new(w, &(tes_query_desc_t){.terms = {{a}}})};
        assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                              .name = "s", .query = {.terms = {{a, TES_AND, TES_IN}}},
                                              .run = try_structural, .ctx = &r}));
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(r.first_status, TES_ERR_BUSY);
        assert_int_equal(r.rows, 5000);
        assert_int_equal(r.calls, 1);
        assert_int_equal(tes_entity_count(w), 5000);
        assert_false(tes_is_deferred(w));
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
    }
}

/* A structural system's changes are applied when it ends: a later system
 * sees them, the system itself still sees the world as it was. */
static void remove_a(tes_iter_t *it)
{
    record_t *r = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        assert_int_equal(tes_remove(it->world, it->entities[i], r->a), TES_OK);
        assert_true(tes_has(it->world, it->entities[i], r->a)); /* queued */
    }
    r->rows += it->count;
}

static void test_structural_changes_apply_when_system_ends(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 2});
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    for (int i = 0; i < 100; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_add(w, e, a), TES_OK);
        assert_int_equal(tes_add(w, e, b), TES_OK);
    }
    record_t before = {0}, rm = {.a = a}, after = {0};
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                          .name = "before", .query = {.terms = {{a}}},
                                          .run = count_rows, .ctx = &before}));
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                          .name = "rm", .query = {.terms = {{b}}},
                                          .run = remove_a, .ctx = &rm, .structural = true}));
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                          .name = "after", .query = {.terms = {{a}}},
                                          .run = count_rows, .ctx = &after}));
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(before.rows, 100);
    assert_int_equal(rm.rows, 100);
    assert_int_equal(after.rows, 0);
    assert_false(tes_is_deferred(w));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A parallel structural system may change components but not create
 * entities. */
static void parallel_structural(tes_iter_t *it)
{
    record_t *r = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        assert_int_equal(tes_remove(it->world, it->entities[i], r->a), TES_OK);
        assert_int_equal(tes_spawn(it->world), TES_NULL);
        assert_int_equal(tes_last_error(it->world), TES_ERR_BUSY);
        assert_int_equal(tes_clone(it->world, it->entities[i]), TES_NULL);
        assert_int_equal(tes_prefab_new(it->world), TES_NULL);
        assert_int_equal(tes_spawn_n(it->world, 1, NULL, 0, &r->spawned), TES_ERR_BUSY);
    }
    r->rows += it->count;
}

static void test_parallel_system_may_not_create(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 2});
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    for (int i = 0; i < 50; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
    record_t r = {.a = a};
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                          .name = "p", .query = {.terms = {{a}}},
                                          .run = parallel_structural, .ctx = &r,
                                          .parallel = true, .structural = true}));
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(r.rows, 50);
    assert_int_equal(tes_entity_count(w), 50);
    /* the removals were applied */
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{a}}});
    assert_int_equal(tes_query_count(q), 0);
    /* Outside systems, spawning works again. */
    assert_true(tes_spawn(w) != TES_NULL);
    tes_world_free(w);
}

static tes_system_t *victim;

static void free_victim(tes_iter_t *it)
{
    record_t *r = it->ctx;
    r->calls++;
    tes_system_free(victim);
    victim = NULL;
}

static void test_free_during_progress(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    record_t killer = {0}, v = {0};
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){.name = "killer", .run = free_victim,
                                                          .ctx = &killer}));
    victim = tes_system_new(w, &(tes_system_desc_t){.name = "victim", .run = no_terms, .ctx = &v});
    assert_non_null(victim);
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(killer.calls, 1);
    assert_int_equal(v.calls, 1); /* same level: planned before it was freed */
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(v.calls, 1); /* gone */
    /* the name is free again */
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){.name = "victim", .run = nop}));
    tes_world_free(w);
}

/* Regression: tes_system_free from a parallel system's run (on workers,
 * several at once) wrote the system's doomed mark unsynchronised (make
 * tsan reported the race). The mark is atomic now; the victim, a level
 * later, runs no more. */
static tes_system_t *worker_victim;

static void free_from_workers(tes_iter_t *it)
{
    tes_system_free(worker_victim); /* only marks it: idempotent */
    int32_t *v = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        v[i] += 1;
}

static void test_free_from_worker_threads(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 4});
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    for (int i = 0; i < 20000; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
    record_t v = {0};
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){.name = "killer",
                                                          .query = {.terms = {{a}}},
                                                          .run = free_from_workers,
                                                          .parallel = true}));
    worker_victim = tes_system_new(w, &(tes_system_desc_t){.name = "victim",
                                                          .query = {.terms = {{a}}},
                                                          .run = count_rows, .ctx = &v});
    assert_non_null(worker_victim);
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(v.calls, 0); /* a later level: marked before it started */
    worker_victim = NULL;         /* freed when that frame ended */
    assert_int_equal(tes_progress(w, 0), TES_OK);
    assert_int_equal(v.calls, 0);
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){.name = "victim", .run = nop}));
    tes_world_free(w);
}

/* A structural system that is also parallel is split into row ranges over
 * the threads, each recording into its own queue; the queues are applied
 * in row order. Every row sets one shared entity's S (the last row's value
 * must win, as on one thread), sets or ensures its own S, and some rows
 * clear their entity after that. Regression: such a system ran whole, on
 * the calling thread (one call per chunk, whatever the thread count). */
typedef struct split_ctx {
    tes_comp_t v, s;
    tes_entity_t shared;
    int32_t threads;
    atomic_int calls;
    atomic_int bad;
} split_ctx_t;

static void split_run(tes_iter_t *it)
{
    split_ctx_t *c = it->ctx;
    atomic_fetch_add(&c->calls, 1);
    if (it->thread < 0 || it->thread >= (c->threads > 1 ? c->threads : 1))
        atomic_fetch_add(&c->bad, 1);
    const int32_t *v = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t e = it->entities[i];
        int64_t x = v[i];
        if (tes_set(it->world, c->shared, c->s, &x) != TES_OK)
            atomic_fetch_add(&c->bad, 1);
        if (x % 7 == 0) {
            int64_t y = 3 * x;
            if (tes_set(it->world, e, c->s, &y) != TES_OK)
                atomic_fetch_add(&c->bad, 1);
        }
        if (x % 5 == 0) {
            int64_t *p = tes_ensure(it->world, e, c->s); /* staged or queued value */
            if (!p)
                atomic_fetch_add(&c->bad, 1);
            else
                *p += x;
        }
        if (x % 13 == 0 && tes_clear(it->world, e) != TES_OK)
            atomic_fetch_add(&c->bad, 1);
        if (tes_spawn(it->world) != TES_NULL || tes_last_error(it->world) != TES_ERR_BUSY)
            atomic_fetch_add(&c->bad, 1);
    }
}

static void test_parallel_structural_split_in_row_order(void **state)
{
    (void)state;
    enum { ROWS = 5000 }; /* five blocks of up to 1024 rows, the last one partial */
    static const int32_t counts[] = {1, 2, 3, 4, 8};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = counts[k]});
        split_ctx_t c = {.threads = counts[k]};
        atomic_init(&c.calls, 0);
        atomic_init(&c.bad, 0);
        c.v = comp(w, "V", 4, TES_STORAGE_TABLE);
        c.s = comp(w, "S", 8, TES_STORAGE_SPARSE);
        c.shared = tes_spawn(w);
        tes_entity_t *es = malloc(ROWS * sizeof *es);
        assert_non_null(es);
        for (int32_t i = 0; i < ROWS; i++) {
            es[i] = tes_spawn(w);
            assert_int_equal(tes_set(w, es[i], c.v, &i), TES_OK);
        }
        assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                              .name = "split", .query = {.terms = {{c.v, TES_AND, TES_IN}}},
                                              .run = split_run, .ctx = &c, .parallel = true,
                                              .structural = true}));
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&c.bad), 0);
        /* Split into blocks of 1024 rows, the same on every thread count. */
        assert_int_equal(atomic_load(&c.calls), (ROWS + 1023) / 1024);
        const int64_t *shared = tes_get(w, c.shared, c.s);
        assert_non_null(shared);
        assert_true(*shared == ROWS - 1); /* the last row's set wins */
        for (int32_t i = 0; i < ROWS; i++) {
            const int64_t *p = tes_get(w, es[i], c.s);
            int64_t want = i % 7 == 0 ? 3 * (int64_t)i : 0;
            if (i % 5 == 0)
                want += i;
            bool has = i % 13 != 0 && (i % 7 == 0 || i % 5 == 0);
            assert_true(tes_alive(w, es[i]));
            assert_int_equal(tes_has(w, es[i], c.v), i % 13 != 0);
            assert_int_equal(p != NULL, has);
            if (has)
                assert_true(*p == want);
        }
        assert_false(tes_is_deferred(w));
        assert_int_equal(tes__world_check(w), TES_OK);
        free(es);
        tes_world_free(w);
    }
}

/* ---- determinism ------------------------------------------------------ */

enum { NCOMP = 6, NSYS = 24, NENT = 4000, FRAMES = 100 };

typedef struct det_world {
    tes_world_t *w;
    tes_comp_t c[NCOMP];
    tes_entity_t *handles;
    uint32_t count;
    uint32_t cap;
} det_world_t;

typedef struct det_system {
    det_world_t *dw;
    uint32_t id;
    int32_t terms;
    tes_access_t access[3];
    int kind; /* 0 compute, 1 structural add/remove, 2 structural spawn/destroy */
    tes_comp_t target;
    tes_query_t *query; /* the reference run's own query */
} det_system_t;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

static void det_run(tes_iter_t *it)
{
    det_system_t *s = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        uint64_t acc = s->id;
        for (int32_t t = 0; t < s->terms; t++) {
            const uint64_t *v = tes_field(it, t);
            if (v && s->access[t] != TES_OUT)
                acc = mix(acc ^ v[i]);
        }
        for (int32_t t = 0; t < s->terms; t++) {
            uint64_t *v = tes_field(it, t);
            if (v && s->access[t] != TES_IN)
                v[i] = acc + (uint64_t)t;
        }
        tes_world_t *w = it->world;
        tes_entity_t e = it->entities[i];
        if (s->kind == 1 && (acc & 15) == 0) {
            if (tes_has(w, e, s->target))
                assert_int_equal(tes_remove(w, e, s->target), TES_OK);
            else
                assert_int_equal(tes_set(w, e, s->target, &acc), TES_OK);
        } else if (s->kind == 1 && (acc & 15) == 1) {
            uint64_t *p = tes_ensure(w, e, s->target); /* its own row: allowed when split */
            assert_non_null(p);
            *p += acc;
        } else if (s->kind == 1 && (acc & 255) == 2) {
            assert_int_equal(tes_clear(w, e), TES_OK);
        } else if (s->kind == 2 && (acc & 63) == 0) {
            assert_int_equal(tes_destroy(w, e), TES_OK);
            tes_entity_t n = tes_spawn(w);
            assert_true(n != TES_NULL);
            assert_int_equal(tes_set(w, n, s->dw->c[acc % NCOMP], &acc), TES_OK);
            det_world_t *dw = s->dw;
            if (dw->count == dw->cap) {
                dw->cap *= 2;
                dw->handles = realloc(dw->handles, dw->cap * sizeof *dw->handles);
                assert_non_null(dw->handles);
            }
            dw->handles[dw->count++] = n;
        }
    }
}

static uint64_t det_hash(const det_world_t *dw)
{
    uint64_t h = 0;
    for (uint32_t i = 0; i < dw->count; i++) {
        tes_entity_t e = dw->handles[i];
        h = mix(h ^ (tes_alive(dw->w, e) ? e : 1));
        for (int c = 0; c < NCOMP; c++) {
            const uint64_t *v = tes_get(dw->w, e, dw->c[c]);
            h = mix(h ^ (v ? *v + (uint64_t)c : (uint64_t)c * 7919));
        }
    }
    return h;
}

/* threads == 0: the reference, no scheduler — each system's query walked
 * by hand in creation order, its changes applied when its walk ends. */
static uint64_t run_det(int32_t threads, uint64_t seed, det_system_t *sys)
{
    det_world_t dw = {0};
    dw.w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    assert_non_null(dw.w);
    static const char *names[NCOMP] = {"C0", "C1", "C2", "C3", "C4", "C5"};
    for (int c = 0; c < NCOMP; c++)
        dw.c[c] = comp(dw.w, names[c], 8, c % 3 == 2 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
    dw.cap = NENT * 2;
    dw.handles = malloc(dw.cap * sizeof *dw.handles);
    uint64_t r = seed;
    for (uint32_t i = 0; i < NENT; i++) {
        tes_entity_t e = tes_spawn(dw.w);
        for (int c = 0; c < NCOMP; c++) {
            r = mix(r + i * 31 + (uint64_t)c);
            if (r & 1) {
                uint64_t v = r;
                assert_int_equal(tes_set(dw.w, e, dw.c[c], &v), TES_OK);
            }
        }
        dw.handles[dw.count++] = e;
    }
    r = seed;
    for (uint32_t s = 0; s < NSYS; s++) {
        det_system_t *d = &sys[s];
        memset(d, 0, sizeof *d);
        d->dw = &dw;
        d->id = s;
        r = mix(r + s);
        d->terms = 1 + (int32_t)(r % 3);
        tes_system_desc_t desc = {.run = det_run, .ctx = d};
        char name[16];
        snprintf(name, sizeof name, "sys%u", s);
        desc.name = name;
        int used[NCOMP] = {0};
        for (int32_t t = 0; t < d->terms; t++) {
            int c;
            do {
                r = mix(r + 1);
                c = (int)(r % NCOMP);
            } while (used[c]);
            used[c] = 1;
            d->access[t] = (tes_access_t)((r >> 8) % 3); /* INOUT, IN, OUT */
            desc.query.terms[t] = (tes_term_t){.comp = dw.c[c], .oper = TES_AND, .access = d->access[t]};
        }
        r = mix(r + 2);
        if (r % 8 == 0 || s % 8 == 3) { /* s % 8 == 3: at least three split ones */
            d->kind = s % 8 == 3 ? 1 : 1 + (int)((r >> 4) % 2);
            d->target = dw.c[(r >> 8) % NCOMP];
            desc.structural = true;
            desc.parallel = d->kind == 1 && (s % 8 == 3 || ((r >> 12) & 1));
        } else {
            desc.parallel = (r >> 4) % 3 != 0;
        }
        if (threads)
            assert_non_null(tes_system_new(dw.w, &desc));
        else
            assert_non_null(d->query = tes_query_new(dw.w, &desc.query));
    }
    for (int f = 0; f < FRAMES; f++) {
        if (threads) {
            assert_int_equal(tes_progress(dw.w, 0.016f), TES_OK);
            continue;
        }
        for (uint32_t s = 0; s < NSYS; s++) {
            tes_iter_t it = tes_query_iter(sys[s].query);
            it.ctx = &sys[s];
            while (tes_iter_next(&it))
                det_run(&it);
        }
    }
    assert_int_equal(tes__world_check(dw.w), TES_OK);
    uint64_t h = det_hash(&dw);
    tes_world_free(dw.w);
    free(dw.handles);
    return h;
}

static void test_determinism_across_thread_counts(void **state)
{
    (void)state;
    static det_system_t sys[NSYS];
    for (uint64_t seed = 1; seed <= 2; seed++) {
        uint64_t h1 = run_det(0, seed, sys);
        static const int32_t counts[] = {1, 2, 3, 4, 8};
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
            assert_true(run_det(counts[i], seed, sys) == h1);
    }
}

#ifdef __linux__
/* The frame holds the pool so that workers watch for the next level rather
 * than sleep (thread_pool.h); when tes_progress returns the hold ends, and
 * the workers must park (sleep), not keep a core busy between frames. Each
 * thread's scheduler state is read from /proc/self/task: every thread but
 * the calling one must reach state 'S' (waiting) soon after the frames. */
static int busy_other_threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    assert_non_null(dir);
    int busy = 0;
    long self = (long)getpid();
    for (struct dirent *d; (d = readdir(dir)) != NULL;) {
        if (d->d_name[0] < '0' || d->d_name[0] > '9' || strtol(d->d_name, NULL, 10) == self)
            continue;
        char path[300], line[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", d->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread ended meanwhile */
        size_t got = fread(line, 1, sizeof line - 1, f);
        fclose(f);
        line[got] = '\0';
        const char *close = strrchr(line, ')');
        assert_non_null(close);
        if (close[1] != ' ' || close[2] != 'S')
            busy++;
    }
    closedir(dir);
    return busy;
}

/* Adds 1 to each value and counts the rows per thread (threads may run
 * pieces of one system at once: no shared counter). */
static void add_one_per_thread(tes_iter_t *it)
{
    int64_t *rows = it->ctx;
    int32_t *vals = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        vals[i] += 1;
    rows[it->thread] += it->count;
}

static void test_workers_park_after_frames(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 3});
    assert_non_null(w);
    tes_comp_t a = comp(w, "A", sizeof(int32_t), TES_STORAGE_TABLE);
    tes_comp_t b = comp(w, "B", sizeof(int32_t), TES_STORAGE_TABLE);
    tes_comp_t both[] = {a, b};
    assert_int_equal(tes_spawn_n(w, 200000, both, 2, NULL), TES_OK);
    int64_t ra[3] = {0}, rb[3] = {0};
    /* Two levels (the second reads what the first writes): a frame posts
     * several jobs to the pool while it is held. */
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
        .name = "first", .query = {.terms = {{a}}}, .run = add_one_per_thread, .ctx = ra,
        .parallel = true}));
    assert_non_null(tes_system_new(w, &(tes_system_desc_t){
        .name = "second", .query = {.terms = {{b}, {a, TES_AND, TES_IN}}},
        .run = add_one_per_thread, .ctx = rb, .parallel = true}));
    for (int f = 0; f < 5; f++)
        assert_int_equal(tes_progress(w, 0.016f), TES_OK);
    assert_int_equal(ra[0] + ra[1] + ra[2], 5 * 200000);
    assert_int_equal(rb[0] + rb[1] + rb[2], 5 * 200000);
    /* Parked within a second (a worker watches for at most 1 ms). */
    int busy = 0;
    for (int tries = 0; tries < 1000 && (busy = busy_other_threads()) != 0; tries++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    assert_int_equal(busy, 0);
    tes_world_free(w);
}
#endif

/* Regression: a query walked from inside a non-structural system opened a
 * deferral level on the world, whose depth counter is not synchronised:
 * two workers walking at once raced on it (make tsan reported the race),
 * and a lost update could leave the world deferred after the frame. Such a
 * system can queue nothing, so its walks now open no level. */
typedef struct nested {
    tes_query_t *inner;
    int32_t expected;
} nested_t;

static void nested_walk(tes_iter_t *it)
{
    const nested_t *n = it->ctx;
    int32_t *out = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        int32_t sum = 0;
        tes_iter_t in = tes_query_iter(n->inner);
        while (tes_iter_next(&in)) {
            const int32_t *b = tes_field(&in, 0);
            for (int32_t j = 0; j < in.count; j++)
                sum += b[j];
        }
        out[i] = sum;
    }
}

static void test_nested_walks_in_parallel_systems(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 4});
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    tes_comp_t a2 = comp(w, "A2", 4, TES_STORAGE_TABLE);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_TABLE);
    for (int32_t i = 0; i < 4096; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, a, &(int32_t){0}), TES_OK);
        assert_int_equal(tes_set(w, e, a2, &(int32_t){0}), TES_OK);
    }
    nested_t n = {tes_query_new(w, &(tes_query_desc_t){.terms = {{b, TES_AND, TES_IN}}}), 0};
    assert_non_null(n.inner);
    for (int32_t i = 1; i <= 8; i++) {
        assert_int_equal(tes_set(w, tes_spawn(w), b, &i), TES_OK);
        n.expected += i;
    }
    /* Two parallel systems in one level, each cut into several units. */
    assert_non_null(tes_system_new(
        w, &(tes_system_desc_t){.name = "na", .run = nested_walk, .ctx = &n, .parallel = true,
                                .query = {.terms = {{a}, {b, TES_NOT, TES_NOACCESS}}}}));
    assert_non_null(tes_system_new(
        w, &(tes_system_desc_t){.name = "nb", .run = nested_walk, .ctx = &n, .parallel = true,
                                .query = {.terms = {{a2}, {b, TES_NOT, TES_NOACCESS}}}}));
    for (int frame = 0; frame < 20; frame++)
        assert_int_equal(tes_progress(w, 0), TES_OK);
    tes_query_t *qa = tes_query_new(w, &(tes_query_desc_t){.terms = {{a, TES_AND, TES_IN},
                                                                     {a2, TES_AND, TES_IN}}});
    int32_t rows = 0;
    tes_iter_t it = tes_query_iter(qa);
    while (tes_iter_next(&it)) {
        const int32_t *va = tes_field(&it, 0), *vb = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++, rows++) {
            assert_int_equal(va[i], n.expected);
            assert_int_equal(vb[i], n.expected);
        }
    }
    assert_int_equal(rows, 4096);
    /* No deferral level was left open: structural calls apply at once. */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_set(w, e, a, &(int32_t){7}), TES_OK);
    assert_non_null(tes_get(w, e, a));
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_chunks_with_frame_data),
        cmocka_unit_test(test_system_without_terms_runs_once),
        cmocka_unit_test(test_creation_rules),
        cmocka_unit_test(test_non_structural_system_is_refused),
        cmocka_unit_test(test_structural_changes_apply_when_system_ends),
        cmocka_unit_test(test_parallel_system_may_not_create),
        cmocka_unit_test(test_free_during_progress),
        cmocka_unit_test(test_free_from_worker_threads),
        cmocka_unit_test(test_parallel_structural_split_in_row_order),
        cmocka_unit_test(test_determinism_across_thread_counts),
        cmocka_unit_test(test_nested_walks_in_parallel_systems),
#ifdef __linux__
        cmocka_unit_test(test_workers_park_after_frames),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
