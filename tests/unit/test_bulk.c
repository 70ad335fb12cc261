/*
 * Bundles, bulk and batch: tes_spawn_with, tes_spawn_bulk (and tes_spawn_n
 * with a NULL out), tes_destroy_n, tes_destroy_matching and tes_get_n.
 * Values and hook order are checked against what the single-entity calls
 * do; every failure (bad input, a stale or repeated handle, an owned
 * member, any allocation failing) must leave the world as it was, with no
 * value constructed or destroyed and no byte leaked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "support/counting_alloc.h"
#include "tracker.h"

/* ------------------------------------------------------------------ fixture */

typedef struct { float x, y, z; } vec3;

/* A log of hook events: "ctor:P", "copy:P", "add:P", "set:P", "rm:P",
 * "dtor:P", one letter per component. */
#define LOG_MAX 4096
static char events[LOG_MAX][8];
static int nevents;

static void log_event(const char *what, char comp)
{
    if (nevents < LOG_MAX)
        snprintf(events[nevents++], sizeof events[0], "%s:%c", what, comp);
}

static int find_event(const char *ev)
{
    for (int i = 0; i < nevents; i++)
        if (strcmp(events[i], ev) == 0)
            return i;
    return -1;
}

static int count_events(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < nevents; i++)
        n += strncmp(events[i], prefix, strlen(prefix)) == 0;
    return n;
}

/* Each logged component's ctx is its letter. */
static char letter(void *ctx) { return *(const char *)ctx; }
static void l_ctor(void *p, int32_t n, void *ctx) { memset(p, 0, (size_t)n * sizeof(vec3)); log_event("ctor", letter(ctx)); }
static void l_dtor(void *p, int32_t n, void *ctx) { (void)p, (void)n; log_event("dtor", letter(ctx)); }
static void l_copy(void *d, const void *s, int32_t n, void *ctx) { memcpy(d, s, (size_t)n * sizeof(vec3)); log_event("copy", letter(ctx)); }
static void l_add(tes_world_t *w, tes_entity_t e, void *p, void *ctx) { (void)w, (void)e, (void)p; log_event("add", letter(ctx)); }
static void l_set(tes_world_t *w, tes_entity_t e, void *p, void *ctx) { (void)w, (void)e, (void)p; log_event("set", letter(ctx)); }
static void l_rm(tes_world_t *w, tes_entity_t e, void *p, void *ctx) { (void)w, (void)e, (void)p; log_event("rm", letter(ctx)); }

static char LETTER_P = 'P', LETTER_V = 'V', LETTER_S = 'S', LETTER_T = 'T';

static tes_comp_t logged(tes_world_t *w, const char *name, size_t size, tes_storage_t storage, char *l)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    d.hooks = (tes_hooks_t){size ? l_ctor : NULL, size ? l_dtor : NULL, size ? l_copy : NULL, NULL,
                            l_add, l_set, l_rm, l, NULL, NULL};
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

typedef struct fixture {
    tes_world_t *w;
    tes_comp_t pos, vel, spd, tag; /* table, table, sparse, table tag: logged */
    tes_comp_t plain, sparse_plain; /* no hooks: table and sparse */
} fixture_t;

static tes_comp_t plain_comp(tes_world_t *w, const char *name, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = sizeof(vec3), .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

static void fixture_init(fixture_t *f, const tes_world_desc_t *desc)
{
    f->w = tes_world_new(desc);
    assert_non_null(f->w);
    f->pos = logged(f->w, "P", sizeof(vec3), TES_STORAGE_TABLE, &LETTER_P);
    f->vel = logged(f->w, "V", sizeof(vec3), TES_STORAGE_TABLE, &LETTER_V);
    f->spd = logged(f->w, "S", sizeof(vec3), TES_STORAGE_SPARSE, &LETTER_S);
    f->tag = logged(f->w, "T", 0, TES_STORAGE_TABLE, &LETTER_T);
    f->plain = plain_comp(f->w, "Plain", TES_STORAGE_TABLE);
    f->sparse_plain = plain_comp(f->w, "SparsePlain", TES_STORAGE_SPARSE);
    nevents = 0;
}

static void fixture_fini(fixture_t *f)
{
    check(f->w);
    tes_world_free(f->w);
}

static bool vec_is(const void *p, float x, float y, float z)
{
    const vec3 *v = p;
    return v && v->x == x && v->y == y && v->z == z;
}

static tes_world_stats_t stats(const tes_world_t *w)
{
    tes_world_stats_t s;
    assert_int_equal(tes_world_stats(w, &s), TES_OK);
    return s;
}

/* Everything a failed call must leave alone (allocation counters aside). */
static void assert_same_world(const tes_world_stats_t *a, const tes_world_stats_t *b)
{
    assert_int_equal(a->entities_alive, b->entities_alive);
    assert_int_equal(a->entity_slots, b->entity_slots);
    assert_int_equal(a->entities_free, b->entities_free);
    assert_int_equal(a->entities_retired, b->entities_retired);
}

/* ------------------------------------------------------------------ spawn_with */

static void test_spawn_with_values_and_hook_order(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    vec3 p = {1, 2, 3}, s = {4, 5, 6}, q = {7, 8, 9};
    uint32_t tables_before = stats(f.w).tables;
    tes_value_t vals[] = {{f.pos, &p}, {f.vel, NULL}, {f.spd, &s}, {f.tag, &q}, {f.plain, &q}};
    tes_entity_t e = tes_spawn_with(f.w, vals, 5);
    assert_true(e != TES_NULL);
    assert_true(vec_is(tes_get(f.w, e, f.pos), 1, 2, 3));
    assert_true(vec_is(tes_get(f.w, e, f.vel), 0, 0, 0));
    assert_true(vec_is(tes_get(f.w, e, f.spd), 4, 5, 6));
    assert_true(vec_is(tes_get(f.w, e, f.plain), 7, 8, 9));
    assert_true(tes_has(f.w, e, f.tag));
    assert_int_equal(tes_components_of(f.w, e, NULL, 0), 5);
    /* Straight into its final table: no intermediate table was made. */
    assert_int_equal(stats(f.w).tables, tables_before + 1);
    /* Construction and assignment first, then on_add for every component in
     * the order given, then on_set for every one given a ptr (the tag too). */
    const char *want[] = {"ctor:P", "copy:P", "ctor:V", "ctor:S", "copy:S", "add:P", "add:V",
                          "add:S", "add:T", "set:P", "set:S", "set:T"};
    assert_int_equal(nevents, 12);
    for (int i = 0; i < 12; i++)
        assert_string_equal(events[i], want[i]);
    /* The single-entity forms give the same values and the same hooks,
     * one component at a time. */
    nevents = 0;
    tes_entity_t g = tes_spawn(f.w);
    assert_int_equal(tes_set(f.w, g, f.pos, &p), TES_OK);
    assert_int_equal(tes_add(f.w, g, f.vel), TES_OK);
    assert_int_equal(tes_set(f.w, g, f.spd, &s), TES_OK);
    assert_int_equal(tes_set(f.w, g, f.tag, &q), TES_OK);
    assert_int_equal(count_events("add"), 4);
    assert_int_equal(count_events("set"), 3);
    assert_int_equal(count_events("copy"), 2);
    /* Destroying runs one dtor per constructed value. */
    nevents = 0;
    assert_int_equal(tes_destroy(f.w, e), TES_OK);
    assert_int_equal(count_events("dtor"), 3);
    assert_int_equal(count_events("rm"), 4);
    fixture_fini(&f);
}

static void test_spawn_with_bad_input(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    vec3 p = {1, 2, 3};
    tes_entity_t keep = tes_spawn(f.w);
    tes_world_stats_t before = stats(f.w);
    tes_value_t twice[] = {{f.pos, &p}, {f.spd, NULL}, {f.pos, NULL}};
    tes_value_t unknown[] = {{f.pos, &p}, {9999, NULL}};
    tes_value_t zero[] = {{0, NULL}};
    assert_true(tes_spawn_with(f.w, twice, 3) == TES_NULL);
    assert_int_equal(tes_last_error(f.w), TES_ERR_INVALID);
    assert_true(tes_spawn_with(f.w, unknown, 2) == TES_NULL);
    assert_int_equal(tes_last_error(f.w), TES_ERR_INVALID);
    assert_true(tes_spawn_with(f.w, zero, 1) == TES_NULL);
    assert_true(tes_spawn_with(f.w, twice, -1) == TES_NULL);
    assert_int_equal(tes_last_error(f.w), TES_ERR_INVALID);
    assert_true(tes_spawn_with(f.w, NULL, 2) == TES_NULL);
    assert_int_equal(tes_last_error(f.w), TES_ERR_INVALID);
    assert_true(tes_spawn_with(NULL, twice, 1) == TES_NULL);
    tes_world_stats_t after = stats(f.w);
    assert_same_world(&before, &after);
    assert_int_equal(before.bytes_allocated, after.bytes_allocated);
    assert_int_equal(nevents, 0);
    /* n == 0 (values may then be NULL) is an empty entity. */
    tes_entity_t e = tes_spawn_with(f.w, NULL, 0);
    assert_true(tes_alive(f.w, e) && tes_components_of(f.w, e, NULL, 0) == 0);
    assert_true(tes_alive(f.w, keep));
    fixture_fini(&f);
}

/* Refused from inside a hook, like every structural call. */
static tes_world_t *busy_world;
static int busy_rc[4];
static void busy_on_add(tes_world_t *w, tes_entity_t e, void *p, void *ctx)
{
    (void)e, (void)p, (void)ctx;
    tes_value_t v = {TES_DISABLED, NULL};
    tes_bulk_desc_t d = {1, NULL, 0, NULL, NULL};
    busy_rc[0] = tes_spawn_with(w, &v, 1) == TES_NULL ? tes_last_error(w) : TES_OK;
    busy_rc[1] = tes_spawn_bulk(w, &d);
    busy_rc[2] = tes_destroy_n(w, &e, 1);
    busy_rc[3] = tes_spawn_n(w, 1, NULL, 0, NULL);
    busy_world = w;
}

static void test_bulk_calls_refused_in_hooks(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t d = {.name = "Busy", .size = 4};
    d.hooks.on_add = busy_on_add;
    tes_comp_t c = tes_component(w, &d);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{c}}});
    assert_non_null(q);
    tes_value_t v = {c, NULL};
    tes_entity_t e = tes_spawn_with(w, &v, 1);
    assert_true(e != TES_NULL && busy_world == w);
    for (int i = 0; i < 4; i++)
        assert_int_equal(busy_rc[i], TES_ERR_BUSY);
    assert_int_equal(tes_entity_count(w), 1);
    tes_query_free(q);
    tes_world_free(w);
}

/* The same bundle again (the fast path keyed by the last bundle): same
 * values and hooks as the first time, and other bundles in between. */
static void test_spawn_with_repeated_bundle(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    vec3 p = {1, 2, 3}, q = {4, 5, 6};
    for (int round = 0; round < 3000; round++) {
        nevents = 0;
        p.x = (float)round;
        tes_value_t vals[] = {{f.pos, &p}, {f.tag, NULL}, {f.plain, &q}, {f.vel, NULL}};
        int n = round % 7 == 3 ? 2 : 4;
        tes_entity_t e = tes_spawn_with(f.w, vals, n);
        assert_true(e != TES_NULL);
        assert_true(vec_is(tes_get(f.w, e, f.pos), (float)round, 2, 3));
        assert_int_equal(tes_components_of(f.w, e, NULL, 0), n);
        assert_int_equal(count_events("add"), n == 4 ? 3 : 2);
        assert_int_equal(count_events("set:P"), 1);
        assert_int_equal(count_events("copy:P"), 1);
        assert_int_equal(find_event("set:P"), nevents - 1);
        if (n == 4) {
            assert_true(vec_is(tes_get(f.w, e, f.plain), 4, 5, 6));
            assert_true(vec_is(tes_get(f.w, e, f.vel), 0, 0, 0));
        }
        if (round % 5 == 0)
            assert_int_equal(tes_destroy(f.w, e), TES_OK); /* recycled slots too */
        if (round % 11 == 0) {
            /* The same ids in another order are another bundle. */
            tes_value_t swapped[] = {{f.tag, NULL}, {f.pos, &p}};
            assert_true(tes_spawn_with(f.w, swapped, 2) != TES_NULL);
        }
    }
    fixture_fini(&f);
}

static void test_spawn_with_value_inside_destination_table(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    /* Fill the destination table to capacity so the spawn grows it: the
     * source value (another entity's component there) moves, yet the copy
     * must be of the value as it was. Repeated to cross several growths. */
    vec3 p = {1, 1, 1};
    tes_value_t first[] = {{f.plain, &p}, {f.vel, NULL}};
    tes_entity_t prev = tes_spawn_with(f.w, first, 2);
    for (int i = 0; i < 100; i++) {
        tes_value_t vals[] = {{f.vel, tes_get(f.w, prev, f.vel)}, {f.plain, tes_get(f.w, prev, f.plain)}};
        tes_entity_t e = tes_spawn_with(f.w, vals, 2);
        assert_true(e != TES_NULL);
        assert_true(vec_is(tes_get(f.w, e, f.plain), 1, 1, 1));
        vec3 *mp = tes_get_mut(f.w, e, f.plain);
        mp->x += 1; /* each generation differs */
        assert_true(vec_is(tes_get(f.w, prev, f.plain), mp->x - 1, 1, 1));
        mp->x -= 1;
        prev = e;
    }
    fixture_fini(&f);
}

static void test_spawn_with_deferred(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    vec3 p = {1, 2, 3}, s = {4, 5, 6};
    tes_value_t vals[] = {{f.pos, &p}, {f.spd, &s}, {f.vel, NULL}};
    assert_int_equal(tes_defer_begin(f.w), TES_OK);
    tes_entity_t e = tes_spawn_with(f.w, vals, 3);
    assert_true(e != TES_NULL && tes_alive(f.w, e));
    assert_false(tes_has(f.w, e, f.pos));
    p.x = 100; /* the value was copied at the call */
    s.x = 100;
    assert_int_equal(tes_destroy_n(f.w, &e, 0), TES_OK);
    assert_int_equal(tes_defer_end(f.w), TES_OK);
    assert_true(vec_is(tes_get(f.w, e, f.pos), 1, 2, 3));
    assert_true(vec_is(tes_get(f.w, e, f.spd), 4, 5, 6));
    assert_true(vec_is(tes_get(f.w, e, f.vel), 0, 0, 0));
    assert_int_equal(count_events("add"), 3);
    assert_int_equal(count_events("set"), 2);
    /* Every value constructed is destroyed (staged ones at the flush). */
    assert_int_equal(count_events("ctor") - count_events("dtor"), 3);
    /* A deferred spawn_with whose entity dies before the flush. */
    nevents = 0;
    assert_int_equal(tes_defer_begin(f.w), TES_OK);
    tes_entity_t g = tes_spawn_with(f.w, vals, 3);
    assert_int_equal(tes_destroy(f.w, g), TES_OK);
    assert_int_equal(tes_defer_end(f.w), TES_OK);
    assert_false(tes_alive(f.w, g));
    assert_int_equal(count_events("ctor"), count_events("dtor"));
    fixture_fini(&f);
}

/* ------------------------------------------------------------------ allocation failures */

typedef int (*bulk_call_fn)(fixture_t *f, bool deferred);

static int call_spawn_with(fixture_t *f, bool deferred)
{
    (void)deferred;
    static vec3 p = {1, 2, 3};
    tes_value_t vals[] = {{f->pos, &p}, {f->spd, &p}, {f->sparse_plain, NULL}, {f->tag, NULL}};
    tes_entity_t e = tes_spawn_with(f->w, vals, 4);
    return e ? TES_OK : tes_last_error(f->w);
}

static int call_spawn_bulk(fixture_t *f, bool deferred)
{
    (void)deferred;
    enum { N = 300 };
    static vec3 data[N];
    tes_comp_t comps[] = {f->vel, f->spd, f->plain, f->sparse_plain};
    const void *cols[] = {data, data, data, NULL};
    tes_bulk_desc_t d = {N, comps, 4, cols, NULL};
    return tes_spawn_bulk(f->w, &d);
}

static int call_destroy_n(fixture_t *f, bool deferred)
{
    (void)deferred;
    tes_entity_t es[40];
    tes_query_t *q = tes_query_new(f->w, &(tes_query_desc_t){.terms = {{f->pos}}});
    if (!q)
        return tes_last_error(f->w);
    int32_t n = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        for (int32_t i = 0; i < it.count && n < 40; i++)
            es[n++] = it.entities[i];
    tes_query_free(q);
    return tes_destroy_n(f->w, es, n);
}

static int destroy_matching_of(fixture_t *f, tes_comp_t c)
{
    tes_query_desc_t qd = {.terms = {{c}}};
    tes_query_t *q = tes_query_new(f->w, &qd);
    if (!q)
        return tes_last_error(f->w);
    int32_t n = tes_destroy_matching(q);
    tes_query_free(q);
    return n < 0 ? n : TES_OK;
}

/* Whole tables (immediately), and the listed way (a sparse term). */
static int call_destroy_matching_table(fixture_t *f, bool deferred)
{
    (void)deferred;
    return destroy_matching_of(f, f->pos);
}

static int call_destroy_matching_sparse(fixture_t *f, bool deferred)
{
    (void)deferred;
    return destroy_matching_of(f, f->spd);
}

/* A world with a little of everything: values in tables and stores, an
 * instance, a group watcher. */
static void populate(fixture_t *f)
{
    vec3 p = {1, 2, 3};
    for (int i = 0; i < 60; i++) {
        tes_value_t vals[] = {{f->pos, &p}, {f->spd, (i % 3) ? &p : NULL}, {f->plain, NULL}};
        assert_true(tes_spawn_with(f->w, vals, 1 + i % 3) != TES_NULL);
    }
    tes_entity_t pf = tes_prefab_new(f->w);
    assert_int_equal(tes_set(f->w, pf, f->pos, &p), TES_OK);
    assert_true(tes_instantiate(f->w, pf, NULL, 0) != 0);
}

/* Runs call with the k-th allocation failing, for every k until it
 * succeeds: each failure must be TES_ERR_NOMEM and change nothing. */
static void sweep(bulk_call_fn call, bool deferred)
{
    for (int64_t k = 0;; k++) {
        ca_state_t fa;
        ca_init(&fa, 0);
        tes_world_desc_t desc = {.allocator = ca_allocator(&fa)};
        fixture_t f;
        fixture_init(&f, &desc);
        populate(&f);
        tes_query_t *group = tes_query_new(f.w, &(tes_query_desc_t){
            .terms = {{f.spd}}, .flags = TES_QUERY_NONOWNING_GROUP});
        assert_non_null(group);
        if (deferred)
            assert_int_equal(tes_defer_begin(f.w), TES_OK);
        tes_world_stats_t before = stats(f.w);
        int ctor_before = count_events("ctor"), dtor_before = count_events("dtor");
        ca_fail_in(&fa, (uint64_t)k + 1);
        int rc = call(&f, deferred);
        ca_fail_in(&fa, 0);
        if (rc == TES_OK && fa.failures == 0) {
            if (deferred)
                assert_int_equal(tes_defer_end(f.w), TES_OK);
            tes_query_free(group);
            fixture_fini(&f);
            assert_int_equal(fa.live_bytes, 0);
            assert_int_equal(fa.live_blocks, 0);
            assert_true(k > 0);
            return;
        }
        if (rc != TES_OK) {
            assert_int_equal(rc, TES_ERR_NOMEM);
            tes_world_stats_t after = stats(f.w);
            assert_same_world(&before, &after);
            assert_int_equal(count_events("ctor") - ctor_before, count_events("dtor") - dtor_before);
            check(f.w);
        }
        if (deferred)
            tes_defer_end(f.w);
        tes_query_free(group);
        fixture_fini(&f);
        assert_int_equal(fa.live_bytes, 0); /* nothing leaked */
        assert_int_equal(fa.live_blocks, 0);
    }
}

static void test_allocation_failures_change_nothing(void **state)
{
    (void)state;
    bulk_call_fn calls[] = {call_spawn_with, call_spawn_bulk, call_destroy_n,
                            call_destroy_matching_table, call_destroy_matching_sparse};
    for (int i = 0; i < 5; i++) {
        sweep(calls[i], false);
        sweep(calls[i], true);
    }
}

/* ------------------------------------------------------------------ spawn_bulk */

static void test_spawn_bulk_columns(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    enum { N = 300 };
    vec3 *pos = malloc(N * sizeof *pos), *spd = malloc(N * sizeof *spd);
    for (int i = 0; i < N; i++) {
        pos[i] = (vec3){(float)i, 1, 2};
        spd[i] = (vec3){(float)-i, 3, 4};
    }
    tes_comp_t comps[] = {f.spd, f.pos, f.vel, f.tag, f.plain};
    const void *data[] = {spd, pos, NULL, pos, pos};
    tes_entity_t out[N];
    tes_bulk_desc_t d = {N, comps, 5, data, out};
    assert_int_equal(tes_spawn_bulk(f.w, &d), TES_OK);
    for (int i = 0; i < N; i++) {
        assert_true(vec_is(tes_get(f.w, out[i], f.pos), (float)i, 1, 2));
        assert_true(vec_is(tes_get(f.w, out[i], f.plain), (float)i, 1, 2));
        assert_true(vec_is(tes_get(f.w, out[i], f.spd), (float)-i, 3, 4));
        assert_true(vec_is(tes_get(f.w, out[i], f.vel), 0, 0, 0));
        assert_true(tes_has(f.w, out[i], f.tag));
    }
    /* Table columns are constructed and copied in one call each; sparse
     * values one by one. on_add for every component of every entity first,
     * then on_set for every component given data (the tag included). */
    assert_int_equal(count_events("ctor:P"), 1);
    assert_int_equal(count_events("copy:P"), 1);
    assert_int_equal(count_events("ctor:V"), 1);
    assert_int_equal(count_events("ctor:S"), N);
    assert_int_equal(count_events("copy:S"), N);
    assert_int_equal(count_events("add"), 4 * N);
    assert_int_equal(count_events("set:S"), N);
    assert_int_equal(count_events("set:P"), N);
    assert_int_equal(count_events("set:T"), N);
    assert_int_equal(count_events("set:V"), 0);
    int last_add = -1, first_set = nevents;
    for (int i = 0; i < nevents; i++) {
        if (strncmp(events[i], "add", 3) == 0)
            last_add = i;
        if (strncmp(events[i], "set", 3) == 0 && i < first_set)
            first_set = i;
    }
    assert_true(last_add < first_set);
    assert_true(nevents < LOG_MAX);
    fixture_fini(&f);
    free(pos);
    free(spd);
}

static counters_t bulk_counts;
static comp_ctx_t bulk_ctx[2];

static void test_spawn_bulk_hook_counts(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    memset(&bulk_counts, 0, sizeof bulk_counts);
    tes_comp_t ids[2];
    for (int i = 0; i < 2; i++) {
        tes_component_desc_t d = {.name = i ? "TS" : "TT", .size = sizeof(val_t),
                                  .storage = i ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE};
        bulk_ctx[i] = (comp_ctx_t){&bulk_counts, sizeof(val_t), 0};
        d.hooks = (tes_hooks_t){h_ctor, h_dtor, h_copy, h_move, h_on_add, h_on_set, h_on_remove,
                                &bulk_ctx[i], NULL, NULL};
        ids[i] = bulk_ctx[i].id = tes_component(w, &d);
    }
    enum { N = 5000 };
    val_t *src = malloc(N * sizeof *src);
    for (int i = 0; i < N; i++)
        src[i] = (val_t){LIVE, 0, (uint64_t)i + 1};
    const void *data[] = {src, NULL};
    tes_bulk_desc_t d = {N, ids, 2, data, NULL}; /* out may be NULL */
    assert_int_equal(tes_spawn_bulk(w, &d), TES_OK);
    assert_int_equal(tes_entity_count(w), N);
    assert_int_equal(bulk_counts.ctor, 2 * N);
    assert_int_equal(bulk_counts.copy, N);
    assert_int_equal(bulk_counts.on_add, 2 * N);
    assert_int_equal(bulk_counts.on_set, N);
    assert_int_equal(bulk_counts.bad + bulk_counts.bad_ptr, 0);
    /* Stamps arrived in spawn order: entity i holds src[i]. */
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{ids[0]}}});
    tes_iter_t it = tes_query_iter(q);
    uint64_t want = 1;
    while (tes_iter_next(&it)) {
        const val_t *v = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            assert_true(v[i].stamp == want++);
    }
    assert_int_equal(want, N + 1);
    /* Destroying them all through the query: one dtor per value. */
    assert_int_equal(tes_destroy_matching(q), N);
    assert_int_equal(bulk_counts.dtor, 2 * N);
    assert_int_equal(bulk_counts.on_remove, 2 * N);
    assert_int_equal(bulk_counts.bad + bulk_counts.bad_ptr, 0);
    assert_int_equal(tes_entity_count(w), 0);
    tes_query_free(q);
    check(w);
    tes_world_free(w);
    free(src);
}

static void test_spawn_bulk_from_own_table(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    /* Copy a table's own column into new rows of the same table: its block
     * grows (and moves) while the data is read. */
    tes_comp_t comps[] = {f.plain};
    vec3 seed = {5, 6, 7};
    const void *data[] = {&seed};
    tes_bulk_desc_t d = {1, comps, 1, data, NULL};
    assert_int_equal(tes_spawn_bulk(f.w, &d), TES_OK);
    tes_query_t *q = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.plain}}});
    for (int round = 0; round < 12; round++) {
        tes_iter_t it = tes_query_iter(q);
        assert_true(tes_iter_next(&it));
        int32_t n = it.count;
        const void *col[] = {tes_field(&it, 0)};
        tes_iter_fini(&it);
        tes_bulk_desc_t again = {n, comps, 1, col, NULL};
        assert_int_equal(tes_spawn_bulk(f.w, &again), TES_OK);
        assert_int_equal(tes_query_count(q), 2 * n);
    }
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const vec3 *v = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            assert_true(vec_is(&v[i], 5, 6, 7));
    }
    tes_query_free(q);
    fixture_fini(&f);
}

static void test_spawn_bulk_bad_input_and_null_out(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    tes_comp_t dup[] = {f.pos, f.spd, f.pos};
    tes_comp_t unknown[] = {f.pos, 4242};
    tes_world_stats_t before = stats(f.w);
    tes_bulk_desc_t bad[] = {
        {-1, NULL, 0, NULL, NULL}, {2, dup, 3, NULL, NULL}, {2, unknown, 2, NULL, NULL},
        {2, NULL, 1, NULL, NULL},  {2, dup, -1, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tes_spawn_bulk(f.w, &bad[i]), TES_ERR_INVALID);
        assert_int_equal(tes_last_error(f.w), TES_ERR_INVALID);
    }
    assert_int_equal(tes_spawn_bulk(f.w, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_bulk(NULL, &bad[0]), TES_ERR_INVALID);
    tes_world_stats_t after = stats(f.w);
    assert_same_world(&before, &after);
    assert_int_equal(nevents, 0);
    /* count 0 creates nothing; NULL out is fine for spawn_bulk and spawn_n,
     * in the root table too, immediately and deferred. */
    tes_bulk_desc_t none = {0, dup, 2, NULL, NULL};
    assert_int_equal(tes_spawn_bulk(f.w, &none), TES_OK);
    assert_int_equal(tes_spawn_n(f.w, 3, NULL, 0, NULL), TES_OK);
    assert_int_equal(tes_spawn_n(f.w, 3, dup, 2, NULL), TES_OK);
    assert_int_equal(tes_entity_count(f.w), 6);
    assert_int_equal(tes_defer_begin(f.w), TES_OK);
    assert_int_equal(tes_spawn_n(f.w, 2, dup, 2, NULL), TES_OK);
    assert_int_equal(tes_spawn_n(f.w, 2, NULL, 0, NULL), TES_OK);
    assert_int_equal(tes_entity_count(f.w), 10);
    assert_int_equal(tes_defer_end(f.w), TES_OK);
    tes_query_t *q = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.pos}, {f.spd}}});
    assert_int_equal(tes_query_count(q), 5);
    tes_query_free(q);
    fixture_fini(&f);
}

static void test_spawn_bulk_deferred(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    enum { N = 50 };
    vec3 pos[N];
    for (int i = 0; i < N; i++)
        pos[i] = (vec3){(float)i, 0, 0};
    tes_comp_t comps[] = {f.pos, f.spd, f.tag};
    const void *data[] = {pos, pos, NULL};
    tes_entity_t out[N];
    tes_bulk_desc_t d = {N, comps, 3, data, out};
    assert_int_equal(tes_defer_begin(f.w), TES_OK);
    assert_int_equal(tes_spawn_bulk(f.w, &d), TES_OK);
    for (int i = 0; i < N; i++)
        assert_true(tes_alive(f.w, out[i]) && !tes_has(f.w, out[i], f.pos));
    /* ensure of a queued value returns its staged copy. */
    vec3 *staged = tes_ensure(f.w, out[3], f.pos);
    assert_true(vec_is(staged, 3, 0, 0));
    staged->y = 9;
    memset(pos, 0, sizeof pos); /* copied at the call */
    assert_int_equal(tes_defer_end(f.w), TES_OK);
    for (int i = 0; i < N; i++) {
        assert_true(vec_is(tes_get(f.w, out[i], f.pos), (float)i, i == 3 ? 9.0f : 0.0f, 0));
        assert_true(vec_is(tes_get(f.w, out[i], f.spd), (float)i, 0, 0));
        assert_true(tes_has(f.w, out[i], f.tag));
    }
    assert_int_equal(count_events("add"), 3 * N);
    assert_int_equal(count_events("set"), 2 * N);
    assert_int_equal(count_events("ctor") - count_events("dtor"), 2 * N);
    fixture_fini(&f);
}

/* ------------------------------------------------------------------ destroy_n */

static void test_destroy_n(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, &(tes_world_desc_t){.strict_lifecycle = true});
    vec3 p = {1, 2, 3};
    tes_entity_t es[10];
    for (int i = 0; i < 10; i++) {
        tes_value_t vals[] = {{f.pos, &p}, {f.spd, i % 2 ? &p : NULL}};
        es[i] = tes_spawn_with(f.w, vals, 1 + i % 2);
    }
    tes_entity_t dead = es[9];
    assert_int_equal(tes_destroy(f.w, dead), TES_OK);
    tes_entity_t pf = tes_prefab_new(f.w);
    tes_entity_t member;
    assert_true(tes_instantiate(f.w, pf, &member, 1) != 0);
    tes_world_stats_t before = stats(f.w);
    nevents = 0;
    /* Checked first, all or nothing; the first bad entry decides. */
    tes_entity_t stale[] = {es[0], es[1], dead};
    tes_entity_t twice[] = {es[0], es[1], es[0]};
    tes_entity_t owned[] = {es[2], member};
    tes_entity_t null_one[] = {es[3], TES_NULL};
    assert_int_equal(tes_destroy_n(f.w, stale, 3), TES_ERR_STALE);
    assert_int_equal(tes_destroy_n(f.w, twice, 3), TES_ERR_INVALID);
    assert_int_equal(tes_destroy_n(f.w, owned, 2), TES_ERR_OWNED);
    assert_int_equal(tes_destroy_n(f.w, null_one, 2), TES_ERR_STALE);
    assert_int_equal(tes_destroy_n(f.w, es, -1), TES_ERR_INVALID);
    assert_int_equal(tes_destroy_n(f.w, NULL, 2), TES_ERR_INVALID);
    assert_int_equal(tes_destroy_n(NULL, es, 2), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(f.w), TES_ERR_INVALID);
    assert_int_equal(tes_destroy_n(f.w, NULL, 0), TES_OK);
    tes_world_stats_t after = stats(f.w);
    assert_same_world(&before, &after);
    assert_int_equal(nevents, 0);
    check(f.w); /* no mark left in any slot */
    /* Success: destroyed in list order, so the last one's index comes back
     * first. */
    tes_entity_t three[] = {es[4], es[1], es[6]};
    assert_int_equal(tes_destroy_n(f.w, three, 3), TES_OK);
    for (int i = 0; i < 3; i++)
        assert_false(tes_alive(f.w, three[i]));
    assert_int_equal(count_events("rm:P"), 3);
    assert_int_equal(count_events("rm:S"), 1);
    tes_entity_t next = tes_spawn(f.w);
    assert_int_equal(tes_entity_index(next), tes_entity_index(es[6]));
    /* Deferred: checked at once, destroyed at the flush. */
    assert_int_equal(tes_defer_begin(f.w), TES_OK);
    tes_entity_t two[] = {es[0], es[2]};
    tes_entity_t twice_live[] = {es[0], es[3], es[0]};
    assert_int_equal(tes_destroy_n(f.w, twice_live, 3), TES_ERR_INVALID);
    assert_int_equal(tes_destroy_n(f.w, two, 2), TES_OK);
    assert_int_equal(tes_destroy_n(f.w, two, 2), TES_OK); /* still alive until the flush */
    assert_true(tes_alive(f.w, es[0]));
    assert_int_equal(tes_defer_end(f.w), TES_OK);
    assert_false(tes_alive(f.w, es[0]) || tes_alive(f.w, es[2]));
    fixture_fini(&f);
}

/* ------------------------------------------------------------------ destroy_matching */

static void test_destroy_matching_whole_tables(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    vec3 p = {1, 2, 3};
    /* Three tables with P ({P}, {P,V}, {P,tag}), some rows with a sparse
     * component, one disabled, and entities without P. */
    tes_entity_t es[30];
    for (int i = 0; i < 30; i++) {
        tes_value_t vals[] = {{f.pos, &p}, {i % 3 == 1 ? f.vel : f.tag, NULL}, {f.spd, &p}};
        es[i] = tes_spawn_with(f.w, vals, i % 3 == 0 ? 1 : (i % 5 ? 2 : 3));
    }
    assert_int_equal(tes_disable(f.w, es[7]), TES_OK);
    tes_entity_t other = tes_spawn_with(f.w, &(tes_value_t){f.vel, NULL}, 1);
    tes_query_t *q = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.pos}}});
    /* The order an iteration visits them in. */
    tes_entity_t order[30];
    int32_t n = 0, first_table = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        first_table = first_table ? first_table : it.count;
        for (int32_t i = 0; i < it.count; i++)
            order[n++] = it.entities[i];
    }
    assert_true(first_table > 1);
    assert_int_equal(n, 29);
    int sparse_rows = 0;
    for (int i = 0; i < 30; i++)
        sparse_rows += i != 7 && tes_has(f.w, es[i], f.spd);
    nevents = 0;
    assert_int_equal(tes_destroy_matching(q), 29);
    for (int32_t i = 0; i < n; i++)
        assert_false(tes_alive(f.w, order[i]));
    assert_true(tes_alive(f.w, es[7]) && tes_alive(f.w, other));
    assert_int_equal(tes_query_count(q), 0);
    /* Table by table: on_remove for every component of every row before
     * any destructor; one dtor call per column, one per sparse value. */
    assert_int_equal(count_events("rm:P"), 29);
    assert_int_equal(count_events("rm:S"), sparse_rows);
    int first_dtor = find_event("dtor:P"), rm_before = 0;
    for (int i = 0; i < first_dtor; i++)
        rm_before += strcmp(events[i], "rm:P") == 0;
    assert_int_equal(rm_before, first_table);
    assert_int_equal(count_events("dtor:P"), 3);
    assert_int_equal(count_events("dtor:S"), sparse_rows);
    /* Indices come back in reverse destruction order. */
    for (int32_t i = n - 1; i >= n - 5; i--)
        assert_int_equal(tes_entity_index(tes_spawn(f.w)), tes_entity_index(order[i]));
    /* Emptied tables take new rows again. */
    tes_value_t vals[] = {{f.pos, &p}, {f.vel, NULL}};
    tes_entity_t again = tes_spawn_with(f.w, vals, 2);
    assert_true(vec_is(tes_get(f.w, again, f.pos), 1, 2, 3));
    assert_int_equal(tes_query_count(q), 1);
    tes_query_free(q);
    fixture_fini(&f);
}

static void test_destroy_matching_other_modes(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, &(tes_world_desc_t){.strict_lifecycle = true});
    vec3 p = {1, 2, 3};
    for (int i = 0; i < 40; i++) {
        tes_value_t vals[] = {{f.spd, &p}, {f.pos, NULL}};
        assert_true(tes_spawn_with(f.w, vals, 1 + i % 2) != TES_NULL);
    }
    tes_entity_t bare = tes_spawn(f.w); /* root: no table component */
    /* A sparse term (listed way), a NOT-only query (root entities too), a
     * group. */
    tes_query_t *sparse = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.spd}, {f.pos, TES_NOT}}});
    tes_query_t *group = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.spd}}, .flags = TES_QUERY_NONOWNING_GROUP});
    tes_query_t *all = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.vel, TES_NOT}}});
    assert_int_equal(tes_destroy_matching(sparse), 20);
    assert_int_equal(tes_query_count(group), 20);
    assert_int_equal(tes_destroy_matching(group), 20);
    assert_int_equal(tes_query_count(group), 0);
    assert_true(tes_alive(f.w, bare));
    /* Strict world: an instance member among the matches refuses all. */
    tes_entity_t pf = tes_prefab_new(f.w);
    assert_int_equal(tes_set(f.w, pf, f.pos, &p), TES_OK);
    tes_entity_t member;
    assert_true(tes_instantiate(f.w, pf, &member, 1) != 0);
    int32_t before = tes_entity_count(f.w);
    assert_int_equal(tes_destroy_matching(all), TES_ERR_OWNED);
    assert_int_equal(tes_last_error(f.w), TES_ERR_OWNED);
    assert_int_equal(tes_entity_count(f.w), before);
    assert_int_equal(tes_instance_detach(f.w, member), TES_OK);
    assert_int_equal(tes_destroy_matching(all), 2); /* bare and member; the prefab is skipped */
    assert_false(tes_alive(f.w, bare) || tes_alive(f.w, member));
    assert_true(tes_alive(f.w, pf));
    assert_int_equal(tes_destroy_matching(NULL), TES_ERR_INVALID);
    tes_query_free(sparse);
    tes_query_free(group);
    tes_query_free(all);
    fixture_fini(&f);
}

static void test_destroy_matching_deferred(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    vec3 p = {1, 2, 3};
    for (int i = 0; i < 10; i++)
        assert_true(tes_spawn_with(f.w, &(tes_value_t){f.pos, &p}, 1) != TES_NULL);
    tes_query_t *q = tes_query_new(f.w, &(tes_query_desc_t){.terms = {{f.pos}}});
    /* From inside its own iteration: counted now, destroyed when it ends;
     * an entity spawned meanwhile was not a match at the call. */
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    tes_entity_t late = tes_spawn_with(f.w, &(tes_value_t){f.pos, &p}, 1);
    assert_int_equal(tes_destroy_matching(q), 10);
    assert_int_equal(tes_entity_count(f.w), 11);
    assert_int_equal(count_events("rm"), 0);
    while (tes_iter_next(&it)) {
    }
    assert_int_equal(tes_entity_count(f.w), 1);
    assert_true(tes_alive(f.w, late) && tes_has(f.w, late, f.pos));
    tes_query_free(q);
    fixture_fini(&f);
}

/* ------------------------------------------------------------------ get_n */

static void test_get_n(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, NULL);
    rng_seed(7);
    enum { N = 3000, M = 5000 };
    tes_entity_t *es = malloc(N * sizeof *es);
    tes_entity_t *probe = malloc(M * sizeof *probe);
    const void **out = malloc(M * sizeof *out);
    for (int i = 0; i < N; i++) {
        vec3 v = {(float)i, 0, 0};
        tes_value_t vals[] = {{f.plain, &v}, {f.sparse_plain, &v}, {i % 2 ? f.vel : f.tag, NULL}};
        es[i] = tes_spawn_with(f.w, vals, i % 7 ? 3 : 1);
    }
    for (int i = 0; i < N; i += 5)
        assert_int_equal(tes_destroy(f.w, es[i]), TES_OK);
    for (int i = 0; i < M; i++) {
        uint32_t r = rng_below(100);
        probe[i] = r < 90 ? es[rng_below(N)] : r < 95 ? TES_NULL : tes_entity_make(rng_below(2 * N), 1 + rng_below(3));
    }
    tes_comp_t comps[] = {f.plain, f.sparse_plain, f.vel, f.tag, 999, 0};
    for (size_t c = 0; c < sizeof comps / sizeof comps[0]; c++) {
        int32_t found = tes_get_n(f.w, comps[c], probe, M, out);
        int32_t want = 0;
        for (int i = 0; i < M; i++) {
            const void *g = tes_get(f.w, probe[i], comps[c]);
            assert_ptr_equal(out[i], g);
            want += g != NULL;
        }
        assert_int_equal(found, want);
        assert_true(c >= 3 ? found == 0 : found > 0);
    }
    assert_int_equal(tes_get_n(f.w, f.plain, probe, 0, NULL), 0);
    assert_int_equal(tes_get_n(f.w, f.plain, probe, -1, out), -1);
    assert_int_equal(tes_get_n(f.w, f.plain, NULL, 3, out), -1);
    assert_int_equal(tes_get_n(f.w, f.plain, probe, 3, NULL), -1);
    assert_int_equal(tes_get_n(NULL, f.plain, probe, 3, out), -1);
    free(es);
    free(probe);
    free(out);
    fixture_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spawn_with_values_and_hook_order),
        cmocka_unit_test(test_spawn_with_bad_input),
        cmocka_unit_test(test_bulk_calls_refused_in_hooks),
        cmocka_unit_test(test_spawn_with_repeated_bundle),
        cmocka_unit_test(test_spawn_with_value_inside_destination_table),
        cmocka_unit_test(test_spawn_with_deferred),
        cmocka_unit_test(test_allocation_failures_change_nothing),
        cmocka_unit_test(test_spawn_bulk_columns),
        cmocka_unit_test(test_spawn_bulk_hook_counts),
        cmocka_unit_test(test_spawn_bulk_from_own_table),
        cmocka_unit_test(test_spawn_bulk_bad_input_and_null_out),
        cmocka_unit_test(test_spawn_bulk_deferred),
        cmocka_unit_test(test_destroy_n),
        cmocka_unit_test(test_destroy_matching_whole_tables),
        cmocka_unit_test(test_destroy_matching_other_modes),
        cmocka_unit_test(test_destroy_matching_deferred),
        cmocka_unit_test(test_get_n),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
