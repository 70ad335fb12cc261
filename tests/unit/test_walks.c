/*
 * The change machinery around queries: events routed per component, the
 * filter index that sparse-driven queries use for the default filters,
 * non-owning groups (fields fetched without re-matching; the flag on a
 * table query), and gathered chunks of the sparse view (W8 shape).
 * The differential fuzzer compares all of this with its model at random;
 * these tests pin the specific behaviours down.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "query/filter.h"
#include "query/group.h"
#include "tessera.h"
#include "world/check.h"

typedef struct { float x, y, z; } V3;

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

static int32_t walk_count(tes_query_t *q, int32_t *chunks)
{
    int32_t n = 0;
    *chunks = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        n += it.count;
        (*chunks)++;
    }
    return n;
}

/* A group hears the changes of its own components, the two filtered tags
 * and whole-entity events; nobody hears a component no watcher names. */
static void test_events_are_routed_per_component(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_SPARSE);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    tes_comp_t c = comp(w, "C", 4, TES_STORAGE_SPARSE);
    tes_comp_t t = comp(w, "T", 4, TES_STORAGE_TABLE);
    tes_query_desc_t d = {.terms = {{a}, {b}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_int_equal(w->watch_routes[a], 1);
    assert_int_equal(w->watch_routes[b], 1);
    assert_int_equal(w->watch_routes[TES_DISABLED], 1);
    assert_false(tes__watched(w, c));
    assert_false(tes__watched(w, t));
    assert_true(tes__watched(w, 0));
    /* Unrelated changes leave the group as it was; related ones reach it. */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(tes_add(w, e, c), TES_OK);
    assert_int_equal(tes_add(w, e, t), TES_OK);
    assert_int_equal(tes_query_count(q), 0);
    assert_int_equal(tes_add(w, e, b), TES_OK);
    assert_int_equal(tes_query_count(q), 1);
    assert_int_equal(tes_remove(w, e, c), TES_OK);
    assert_int_equal(tes_remove(w, e, t), TES_OK);
    assert_int_equal(tes_query_count(q), 1);
    assert_int_equal(tes_disable(w, e), TES_OK);
    assert_int_equal(tes_query_count(q), 0);
    tes_query_free(q);
    assert_false(tes__watched(w, a));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A sparse-only query with a prefab and a disabled entity around: the
 * filter index hides them, follows enable/disable, and forgets a destroyed
 * entity, so the next entity to reuse its index is visible. */
static void test_filter_index_follows_entities(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_SPARSE);
    tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    tes_entity_t es[40];
    for (int i = 0; i < 40; i++) {
        es[i] = tes_spawn(w);
        assert_int_equal(tes_add(w, es[i], a) | tes_add(w, es[i], b), TES_OK);
    }
    tes_entity_t prefab = tes_prefab_new(w);
    assert_int_equal(tes_add(w, prefab, a) | tes_add(w, prefab, b), TES_OK);
    assert_int_equal(tes_disable(w, es[7]), TES_OK);
    tes_query_desc_t d = {.terms = {{a}, {b, TES_AND, TES_IN}}};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_non_null(w->filters);
    assert_int_equal(w->filters->tagged, 2);
    int32_t chunks;
    assert_int_equal(walk_count(q, &chunks), 39);
    assert_int_equal(chunks, 2); /* cut around the disabled entity only */
    assert_int_equal(tes_enable(w, es[7]), TES_OK);
    assert_int_equal(walk_count(q, &chunks), 40);
    assert_int_equal(chunks, 1);
    assert_int_equal(tes_disable(w, es[3]), TES_OK);
    assert_int_equal(tes_destroy(w, es[3]), TES_OK);
    assert_int_equal(w->filters->tagged, 1); /* the prefab */
    tes_entity_t again = tes_spawn(w); /* reuses es[3]'s index */
    assert_int_equal(tes_entity_index(again), tes_entity_index(es[3]));
    assert_int_equal(tes_add(w, again, a) | tes_add(w, again, b), TES_OK);
    assert_int_equal(walk_count(q, &chunks), 40);
    tes_query_desc_t all = {.terms = {{a}, {b}}, .flags = TES_QUERY_INCLUDE_PREFAB};
    tes_query_t *with_prefab = tes_query_new(w, &all);
    assert_int_equal(tes_query_count(with_prefab), 41);
    tes_query_free(with_prefab);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A world with every kind of watcher that cannot care about a new empty
 * entity: a sparse query (the filter index), a non-owning group on the
 * same two sparse components, and a prefab (the lifecycle layer). */
typedef struct {
    tes_world_t *w;
    tes_comp_t a, b;
    tes_query_t *q, *g;
} watched_t;

static void watched_open(watched_t *f)
{
    tes_world_t *w = f->w = tes_world_new(NULL);
    f->a = comp(w, "A", 4, TES_STORAGE_SPARSE);
    f->b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    tes_query_desc_t d = {.terms = {{f->a}, {f->b}}};
    f->q = tes_query_new(w, &d);
    tes_query_desc_t gd = {.terms = {{f->a}, {f->b}}, .flags = TES_QUERY_NONOWNING_GROUP};
    f->g = tes_query_new(w, &gd);
    assert_non_null(f->q);
    assert_non_null(f->g);
    assert_int_not_equal(tes_prefab_new(w), TES_NULL);
    assert_non_null(w->filters);
    assert_int_equal(w->creation_watchers, 0);
}

/* Checks the world, then frees the queries and the world. */
static void watched_close(watched_t *f)
{
    assert_int_equal(tes__world_check(f->w), TES_OK);
    tes_query_free(f->g);
    tes_query_free(f->q);
    tes_world_free(f->w);
}

/* New entities are told only to the watchers that hear one of their
 * components: an empty spawn to none of the filter index (an empty
 * entity's byte is 0 already) and groups (each has an AND term).
 * One sparse query, a group or a prefab used to send every tes_spawn down
 * the watched path. The index and the group still follow the entities once
 * they gain components, including a recycled index whose last holder was
 * disabled. */
static void test_empty_spawns_skip_watchers(void **state)
{
    (void)state;
    watched_t f;
    watched_open(&f);
    tes_world_t *w = f.w;
    tes_comp_t a = f.a, b = f.b;
    tes_query_t *q = f.q, *g = f.g;
    uint32_t cap = w->filters->cap;
    enum { N = 3000 };
    static tes_entity_t es[N];
    for (int i = 0; i < N; i++)
        es[i] = tes_spawn(w);
    /* Nobody reserved room for the empty entities. */
    assert_int_equal(w->filters->cap, cap);
    for (int i = 0; i < N; i += 3)
        assert_int_equal(tes_add(w, es[i], a) | tes_add(w, es[i], b), TES_OK);
    assert_int_equal(tes_disable(w, es[N - 3]), TES_OK);
    int32_t chunks;
    assert_int_equal(walk_count(q, &chunks), N / 3 - 1);
    assert_int_equal(walk_count(g, &chunks), N / 3 - 1);
    /* The disabled entity dies; a new empty entity takes its index. */
    assert_int_equal(tes_destroy(w, es[N - 3]), TES_OK);
    tes_entity_t again = tes_spawn(w);
    assert_int_equal(tes_entity_index(again), tes_entity_index(es[N - 3]));
    assert_int_equal(tes_add(w, again, a) | tes_add(w, again, b), TES_OK);
    assert_int_equal(walk_count(q, &chunks), N / 3);
    assert_int_equal(walk_count(g, &chunks), N / 3);
    /* tes_spawn_with's cached bundle: the quiet path unless a watcher hears
     * one of its components (the filter index hears TES_DISABLED). */
    tes_comp_t c = comp(w, "C", sizeof(V3), TES_STORAGE_TABLE);
    V3 v = {1, 2, 3};
    tes_value_t plain[1] = {{c, &v}}, hidden[2] = {{c, &v}, {TES_DISABLED, NULL}};
    tes_entity_t made[4];
    for (int i = 0; i < 4; i++) {
        made[i] = tes_spawn_with(w, i < 2 ? plain : hidden, i < 2 ? 1 : 2);
        assert_int_not_equal(made[i], TES_NULL);
    }
    cap = w->filters->cap;
    for (int i = 0; i < 200; i++)
        assert_int_not_equal(tes_spawn_with(w, plain, 1), TES_NULL);
    assert_int_equal(w->filters->cap, cap);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tes_add(w, made[i], a) | tes_add(w, made[i], b), TES_OK);
    assert_int_equal(walk_count(q, &chunks), N / 3 + 2); /* the two disabled are hidden */
    assert_int_equal(walk_count(g, &chunks), N / 3 + 2);
    watched_close(&f);
}

/* tes_spawn_n routes its creations like tes_spawn: a batch of empty
 * entities, or of components no watcher hears, asks no watcher for room
 * (the filter index and the group cannot care), at once or deferred; a
 * batch of a watched component still reaches them, and every query answers
 * as before. */
static void test_spawn_n_skips_watchers(void **state)
{
    (void)state;
    watched_t f;
    watched_open(&f);
    tes_world_t *w = f.w;
    tes_comp_t a = f.a, b = f.b;
    tes_comp_t c = comp(w, "C", 4, TES_STORAGE_TABLE);
    uint32_t cap = w->filters->cap;
    enum { N = 3000 };
    static tes_entity_t empty[N], plain[N], later[N];
    assert_int_equal(tes_spawn_n(w, N, NULL, 0, empty), TES_OK);
    assert_int_equal(w->filters->cap, cap);
    assert_int_equal(tes_spawn_n(w, N, &c, 1, plain), TES_OK);
    assert_int_equal(w->filters->cap, cap);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_spawn_n(w, N, NULL, 0, later), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(w->filters->cap, cap);
    /* A batch of a component the filter index hears reaches it. */
    tes_entity_t hidden[4];
    tes_comp_t with_disabled[2] = {a, TES_DISABLED};
    assert_int_equal(tes_spawn_n(w, 4, with_disabled, 2, hidden), TES_OK);
    for (int i = 0; i < N; i += 3) {
        assert_int_equal(tes_add(w, empty[i], a) | tes_add(w, empty[i], b), TES_OK);
        assert_int_equal(tes_add(w, plain[i], a) | tes_add(w, plain[i], b), TES_OK);
        assert_int_equal(tes_add(w, later[i], a) | tes_add(w, later[i], b), TES_OK);
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(tes_add(w, hidden[i], b), TES_OK);
    int32_t chunks;
    assert_int_equal(walk_count(f.q, &chunks), 3 * (N / 3)); /* the four disabled are hidden */
    assert_int_equal(walk_count(f.g, &chunks), 3 * (N / 3));
    assert_int_equal(tes_query_count(f.q), 3 * (N / 3));
    watched_close(&f);
}

/* A sparse-only query made inside a hook, before any filter index exists:
 * the index is not created mid-change; the query checks tables instead and
 * still skips disabled entities. */
static tes_query_t *made_in_hook;
static tes_comp_t hook_a, hook_b;
static void make_query(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (made_in_hook)
        return;
    tes_query_desc_t d = {.terms = {{hook_a}, {hook_b}}};
    made_in_hook = tes_query_new(w, &d);
}

static void test_sparse_query_made_in_hook_filters_by_table(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_a = comp(w, "A", 4, TES_STORAGE_SPARSE);
    hook_b = comp(w, "B", 4, TES_STORAGE_SPARSE);
    tes_component_desc_t hd = {.name = "H", .size = 4, .hooks = {.on_add = make_query}};
    tes_comp_t h = tes_component(w, &hd);
    tes_entity_t es[10];
    for (int i = 0; i < 10; i++) {
        es[i] = tes_spawn(w);
        assert_int_equal(tes_add(w, es[i], hook_a) | tes_add(w, es[i], hook_b), TES_OK);
    }
    made_in_hook = NULL;
    assert_int_equal(tes_add(w, es[0], h), TES_OK);
    assert_non_null(made_in_hook);
    assert_null(w->filters);
    assert_false(made_in_hook->skip_tables);
    assert_int_equal(tes_disable(w, es[4]), TES_OK);
    int32_t chunks;
    assert_int_equal(walk_count(made_in_hook, &chunks), 9);
    tes_query_free(made_in_hook);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* The non-owning flag on a query with a table AND term builds no group
 * (the table cache already is one) and changes no result. */
static void test_nonowning_flag_on_table_query_walks_tables(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t t = comp(w, "T", 4, TES_STORAGE_TABLE);
    tes_comp_t s = comp(w, "S", 4, TES_STORAGE_SPARSE);
    for (int i = 0; i < 100; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_add(w, e, t), TES_OK);
        if (i % 3 == 0)
            assert_int_equal(tes_add(w, e, s), TES_OK);
    }
    tes_query_desc_t d = {.terms = {{t}, {s}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_null(q->group);
    assert_int_equal(tes_query_count(q), 34);
    tes_query_desc_t sparse = {.terms = {{s}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *g = tes_query_new(w, &sparse);
    assert_non_null(g->group);
    assert_int_equal(tes_query_count(g), 34);
    tes_query_free(g);
    tes_query_free(q);
    tes_world_free(w);
}

/* Non-owning group members are walked in runs whose values are
 * contiguous, with fields that are the stored values. */
static void test_nonowning_group_runs(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", sizeof(V3), TES_STORAGE_SPARSE);
    tes_comp_t b = comp(w, "B", sizeof(V3), TES_STORAGE_SPARSE);
    for (int i = 0; i < 500; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, a, &(V3){(float)i, 0, 0}), TES_OK);
        assert_int_equal(tes_add(w, e, b), TES_OK);
    }
    tes_query_desc_t d = {.terms = {{a}, {b}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    int32_t chunks;
    assert_int_equal(walk_count(q, &chunks), 500);
    assert_int_equal(chunks, 1);
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        V3 *f = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            assert_ptr_equal(tes_get(w, it.entities[i], a), &f[i]);
    }
    tes_query_free(q);
    tes_world_free(w);
}

/* The matcher draws chunk bounds where a field would stop being a plain
 * array, and nowhere else: an optional tag (no field) held by every other
 * entity splits nothing, and neither does a NOT term nobody holds. */
static void test_matcher_splits_only_at_fields(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", sizeof(V3), TES_STORAGE_SPARSE);
    tes_comp_t t = comp(w, "T", 0, TES_STORAGE_SPARSE);
    tes_comp_t n = comp(w, "N", sizeof(float), TES_STORAGE_SPARSE);
    for (int i = 0; i < 300; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, a, &(V3){(float)i, 0, 0}), TES_OK);
        if (i % 2 == 0)
            assert_int_equal(tes_add(w, e, t), TES_OK);
    }
    tes_query_desc_t d = {.terms = {{a}, {t, TES_OPTIONAL}, {n, TES_NOT}}};
    tes_query_t *q = tes_query_new(w, &d);
    int32_t chunks;
    assert_int_equal(walk_count(q, &chunks), 300);
    assert_int_equal(chunks, 1);
    tes_query_free(q);
    tes_world_free(w);
}

/* A table walk with a sparse optional term: the rows of a table split
 * where the term's value starts and stops being there, each chunk's field
 * a slice of the store or NULL throughout. */
static void test_table_rows_split_at_optional_values(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t x = comp(w, "X", sizeof(float), TES_STORAGE_TABLE);
    tes_comp_t s = comp(w, "S", sizeof(V3), TES_STORAGE_SPARSE);
    tes_entity_t es[30];
    for (int i = 0; i < 30; i++) {
        es[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, es[i], x, &(float){(float)i}), TES_OK);
    }
    for (int i = 10; i < 20; i++)
        assert_int_equal(tes_set(w, es[i], s, &(V3){(float)i, 0, 0}), TES_OK);
    tes_query_desc_t d = {.terms = {{x}, {s, TES_OPTIONAL}}};
    tes_query_t *q = tes_query_new(w, &d);
    int32_t counts[8] = {0}, chunks = 0;
    bool has[8] = {false};
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        assert_true(chunks < 8);
        V3 *f = tes_field(&it, 1);
        for (int32_t i = 0; f && i < it.count; i++)
            assert_ptr_equal(tes_get(w, it.entities[i], s), &f[i]);
        for (int32_t i = 0; !f && i < it.count; i++)
            assert_null(tes_get(w, it.entities[i], s));
        has[chunks] = f != NULL;
        counts[chunks++] = it.count;
    }
    assert_int_equal(chunks, 3);
    assert_int_equal(counts[0], 10);
    assert_false(has[0]);
    assert_int_equal(counts[1], 10);
    assert_true(has[1]);
    assert_int_equal(counts[2], 10);
    assert_false(has[2]);
    tes_query_free(q);
    tes_world_free(w);
}

/* The root walk (a query without AND terms) visits the root entities that
 * match and only those, each chunk starting at the iterator's scratch. */
static void test_root_walk_visits_matching_roots(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t s = comp(w, "S", sizeof(float), TES_STORAGE_SPARSE);
    int expect = 0;
    for (int i = 0; i < 40; i++) {
        tes_entity_t e = tes_spawn(w);
        if (i % 3 == 0)
            assert_int_equal(tes_set(w, e, s, &(float){1}), TES_OK);
        else
            expect++;
    }
    tes_query_desc_t d = {.terms = {{s, TES_NOT}}};
    tes_query_t *q = tes_query_new(w, &d);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        assert_ptr_equal(it.entities, it.priv_scratch);
        for (int32_t i = 0; i < it.count; i++)
            assert_false(tes_has(w, it.entities[i], s));
        seen += it.count;
    }
    assert_int_equal(seen, expect);
    assert_int_equal(tes_query_count(q), expect);
    tes_query_free(q);
    tes_world_free(w);
}

typedef struct {
    tes_world_t *w;
    tes_comp_t pos, vel;
    tes_entity_t es[1000];
} w8_t;

/* Position on every entity, Velocity on every 10th (the W8 shape). */
static void w8_build(w8_t *f, const tes_hooks_t *pos_hooks)
{
    f->w = tes_world_new(NULL);
    tes_component_desc_t pd = {.name = "Pos", .size = sizeof(V3), .storage = TES_STORAGE_SPARSE};
    if (pos_hooks)
        pd.hooks = *pos_hooks;
    f->pos = tes_component(f->w, &pd);
    f->vel = comp(f->w, "Vel", sizeof(V3), TES_STORAGE_SPARSE);
    for (int i = 0; i < 1000; i++) {
        f->es[i] = tes_spawn(f->w);
        assert_int_equal(tes_set(f->w, f->es[i], f->pos, &(V3){(float)i, 0, 0}), TES_OK);
        if (i % 10 == 0)
            assert_int_equal(tes_set(f->w, f->es[i], f->vel, &(V3){1, 2, 3}), TES_OK);
    }
}

/* The W8 sparse view yields long chunks of gathered values; what the loop
 * writes reaches the stores when the iterator moves on. */
static void test_sparse_view_gathers_scattered_values(void **state)
{
    (void)state;
    w8_t f;
    w8_build(&f, NULL);
    tes_query_desc_t d = {.terms = {{f.pos}, {f.vel, TES_AND, TES_IN}}};
    tes_query_t *q = tes_query_new(f.w, &d);
    int32_t chunks = 0, seen = 0, longest = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        V3 *p = tes_field(&it, 0);
        const V3 *v = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            assert_true(p[i].x == (float)(tes_entity_index(it.entities[i]) - 1) ||
                        p[i].x == (float)tes_entity_index(it.entities[i]));
            p[i].x += v[i].x;
        }
        chunks++;
        seen += it.count;
        longest = it.count > longest ? it.count : longest;
    }
    assert_int_equal(seen, 100);
    assert_true(longest >= 16); /* before gathering: one entity per chunk */
    assert_true(chunks <= 100 / 16 + 1);
    for (int i = 0; i < 1000; i++) {
        const V3 *p = tes_get(f.w, f.es[i], f.pos);
        assert_true(p->x == (float)i + (i % 10 == 0 ? 1.0f : 0.0f));
    }
    tes_query_free(q);
    tes_world_free(f.w);
}

/* Leaving early (tes_iter_fini) writes the chunk back; a value changed
 * through tes_get_mut during the chunk is kept. */
static void test_gathered_writes_back_on_fini_and_keeps_get_mut(void **state)
{
    (void)state;
    w8_t f;
    w8_build(&f, NULL);
    tes_query_desc_t d = {.terms = {{f.pos}, {f.vel, TES_AND, TES_IN}}};
    tes_query_t *q = tes_query_new(f.w, &d);
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    assert_true(it.count >= 2);
    V3 *p = tes_field(&it, 0);
    assert_ptr_not_equal(&p[1], tes_get(f.w, it.entities[1], f.pos)); /* gathered */
    tes_entity_t e0 = it.entities[0], e1 = it.entities[1];
    p[0].y = 5;
    p[1].y = 6;
    V3 *direct = tes_get_mut(f.w, e1, f.pos);
    direct->y = 7; /* both changed: the stored write is kept */
    tes_iter_fini(&it);
    assert_true(((const V3 *)tes_get(f.w, e0, f.pos))->y == 5);
    assert_true(((const V3 *)tes_get(f.w, e1, f.pos))->y == 7);
    tes_query_free(q);
    tes_world_free(f.w);
}

/* A non-owning group over the W8 shape gathers too: long chunks, written
 * back, never slower than the view it replaces. */
static void test_nonowning_group_gathers(void **state)
{
    (void)state;
    w8_t f;
    w8_build(&f, NULL);
    tes_query_desc_t d = {.terms = {{f.pos}, {f.vel, TES_AND, TES_IN}},
                          .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = tes_query_new(f.w, &d);
    int32_t seen = 0, longest = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        V3 *p = tes_field(&it, 0);
        const V3 *v = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++)
            p[i].z += v[i].z;
        seen += it.count;
        longest = it.count > longest ? it.count : longest;
    }
    assert_int_equal(seen, 100);
    assert_true(longest >= 16);
    for (int i = 0; i < 1000; i++)
        assert_true(((const V3 *)tes_get(f.w, f.es[i], f.pos))->z == (i % 10 == 0 ? 3.0f : 0.0f));
    tes_query_free(q);
    tes_world_free(f.w);
}

/* A group walk gathers a chunk in which one store holds the members in
 * their order up to the end of its data page and no further: the values
 * past the page end are looked up, the ones before it were taken from the
 * order, and all of them must be the members' own (the positions before
 * the page end were once left unset). */
static void test_group_gather_across_a_following_store_page_end(void **state)
{
    (void)state;
    enum { N = 9000 }; /* 8-byte values: 8192 per data page */
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", sizeof(int64_t), TES_STORAGE_SPARSE);
    tes_comp_t b = comp(w, "B", sizeof(int64_t), TES_STORAGE_SPARSE);
    static tes_entity_t es[N];
    /* Five non-members first, so that no chunk starts on a page start. */
    for (int i = 0; i < 5; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), a), TES_OK);
    for (int i = 0; i < N; i++) {
        es[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, es[i], a, &(int64_t){3 * (int64_t)i}), TES_OK);
    }
    /* B on every entity in reverse order (scattered against the members),
     * and on a few more, so that A is the smaller pool and the members
     * join in A's order. */
    for (int i = N - 1; i >= 0; i--)
        assert_int_equal(tes_set(w, es[i], b, &(int64_t){5 * (int64_t)i}), TES_OK);
    for (int i = 0; i < 10; i++)
        assert_int_equal(tes_add(w, tes_spawn(w), b), TES_OK);
    tes_query_desc_t d = {.terms = {{a}, {b, TES_AND, TES_IN}}, .flags = TES_QUERY_NONOWNING_GROUP};
    /* (A is gathered only in the chunk that crosses its page end.) */
    tes_query_t *q = tes_query_new(w, &d);
    int32_t seen = 0, gathered = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        int64_t *pa = tes_field(&it, 0);
        const int64_t *pb = tes_field(&it, 1);
        gathered += pa != tes_get(w, it.entities[0], a);
        for (int32_t i = 0; i < it.count; i++) {
            int64_t index = (int64_t)tes_entity_index(it.entities[i]) - (int64_t)tes_entity_index(es[0]);
            assert_true(pa[i] == 3 * index);
            assert_true(pb[i] == 5 * index);
            pa[i] += pb[i];
        }
        seen += it.count;
    }
    assert_int_equal(seen, N);
    assert_true(gathered > 0);
    for (int i = 0; i < N; i++)
        assert_true(*(const int64_t *)tes_get(w, es[i], a) == 8 * (int64_t)i);
    tes_query_free(q);
    tes_world_free(w);
}

/* A non-owning group whose members are exactly one AND pool walks that
 * pool: the pool's field is a slice of its store (never gathered), even when
 * the members joined in another order than the pool's. Members that are
 * not the whole pool any more are walked from the group's own set, and a
 * stable pool's holes are stepped over. */
static void check_group_walk(tes_world_t *w, tes_query_t *q, tes_comp_t pos, tes_comp_t vel,
                             int32_t want, bool vel_slices)
{
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        V3 *p = tes_field(&it, 0);
        const V3 *v = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            const V3 *stored = tes_get(w, it.entities[i], vel);
            assert_non_null(stored);
            if (vel_slices)
                assert_ptr_equal(&v[i], stored);
            assert_true(v[i].y == stored->y && v[i].x == (float)tes_entity_index(it.entities[i]));
            assert_true(p[i].x == (float)tes_entity_index(it.entities[i]));
            p[i].y += v[i].y;
        }
        seen += it.count;
    }
    assert_int_equal(seen, want);
    assert_int_equal(tes_query_count(q), want);
    (void)pos;
}

static void test_nonowning_group_walks_its_pool(void **state)
{
    (void)state;
    for (int stable = 0; stable < 2; stable++) {
        tes_world_t *w = tes_world_new(NULL);
        tes_comp_t pos = comp(w, "Pos", sizeof(V3), TES_STORAGE_SPARSE);
        tes_component_desc_t vd = {.name = "Vel", .size = sizeof(V3),
                                   .storage = TES_STORAGE_SPARSE, .stable = stable != 0};
        tes_comp_t vel = tes_component(w, &vd);
        tes_query_desc_t d = {.terms = {{pos}, {vel, TES_AND, TES_IN}},
                              .flags = TES_QUERY_NONOWNING_GROUP};
        tes_query_t *q = tes_query_new(w, &d);
        assert_non_null(q);
        static tes_entity_t es[1000];
        for (int i = 0; i < 1000; i++) {
            es[i] = tes_spawn(w);
            if (i % 10 == 0)
                assert_int_equal(tes_set(w, es[i], vel, &(V3){(float)tes_entity_index(es[i]), 1, 0}), TES_OK);
        }
        /* Position in reverse: the members join in the reverse of the
         * Velocity store's order. */
        for (int i = 999; i >= 0; i--)
            assert_int_equal(tes_set(w, es[i], pos, &(V3){(float)tes_entity_index(es[i]), 0, 0}), TES_OK);
        check_group_walk(w, q, pos, vel, 100, true);
        /* One member loses Position: 99 members, 100 in the pool. */
        assert_int_equal(tes_remove(w, es[500], pos), TES_OK);
        check_group_walk(w, q, pos, vel, 99, false);
        /* It leaves the pool too: equal again (a stable pool keeps a hole). */
        assert_int_equal(tes_remove(w, es[500], vel), TES_OK);
        assert_int_equal(tes_destroy(w, es[0]), TES_OK);
        check_group_walk(w, q, pos, vel, 98, true);
        /* Every member's Position went up by one per walk it was in. */
        for (int i = 10; i < 1000; i += 10)
            if (i != 500)
                assert_true(((const V3 *)tes_get(w, es[i], pos))->y == 3.0f);
        tes_query_free(q);
        tes_world_free(w);
    }
}

/* A member walk over members that sit in a store in its order with other
 * entities between them: their positions come from a forward scan of the
 * packed array (gaps of one), then from lookups once a gap is too wide (a
 * run of twelve), and from lookups throughout in a store whose order is
 * the reverse. Every value read and written back must be the member's. */
static void test_group_member_walk_scans_past_gaps(void **state)
{
    (void)state;
    enum { N = 2000 };
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", sizeof(int64_t), TES_STORAGE_SPARSE);
    tes_comp_t b = comp(w, "B", sizeof(int64_t), TES_STORAGE_SPARSE);
    tes_comp_t c = comp(w, "C", 0, TES_STORAGE_SPARSE);
    static tes_entity_t es[N];
    for (int i = 0; i < N; i++) {
        es[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, es[i], a, &(int64_t){3 * (int64_t)i}), TES_OK);
    }
    for (int i = N - 1; i >= 0; i--)
        assert_int_equal(tes_set(w, es[i], b, &(int64_t){5 * (int64_t)i}), TES_OK);
    int excluded = 0;
    for (int i = 0; i < N; i++)
        if (i % 7 == 3 || (i >= 500 && i < 512)) {
            assert_int_equal(tes_add(w, es[i], c), TES_OK);
            excluded++;
        }
    tes_query_desc_t d = {.terms = {{a}, {b, TES_AND, TES_IN}, {c, TES_NOT}},
                          .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = tes_query_new(w, &d);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        int64_t *pa = tes_field(&it, 0);
        const int64_t *pb = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            int64_t index = (int64_t)tes_entity_index(it.entities[i]) - (int64_t)tes_entity_index(es[0]);
            assert_false(tes_has(w, it.entities[i], c));
            assert_true(pa[i] == 3 * index);
            assert_true(pb[i] == 5 * index);
            pa[i] += pb[i];
        }
        seen += it.count;
    }
    assert_int_equal(seen, N - excluded);
    for (int i = 0; i < N; i++)
        assert_true(*(const int64_t *)tes_get(w, es[i], a) ==
                    (tes_has(w, es[i], c) ? 3 : 8) * (int64_t)i);
    tes_query_free(q);
    tes_world_free(w);
}

static void move_system(tes_iter_t *it)
{
    V3 *p = tes_field(it, 0);
    const V3 *v = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++)
        p[i].x += v[i].x;
}

/* A system keeps its chunks' fields for the whole frame: over the W8 shape
 * its query must not hand it gathered copies (which the next chunk would
 * overwrite), on one thread and on several. */
static void test_systems_over_scattered_values(void **state)
{
    (void)state;
    for (int32_t threads = 1; threads <= 2; threads++) {
        w8_t f;
        w8_build(&f, NULL);
        tes_world_free(f.w); /* rebuilt with threads */
        tes_world_desc_t wd = {.threads = threads};
        f.w = tes_world_new(&wd);
        f.pos = comp(f.w, "Pos", sizeof(V3), TES_STORAGE_SPARSE);
        f.vel = comp(f.w, "Vel", sizeof(V3), TES_STORAGE_SPARSE);
        for (int i = 0; i < 1000; i++) {
            f.es[i] = tes_spawn(f.w);
            assert_int_equal(tes_set(f.w, f.es[i], f.pos, &(V3){(float)i, 0, 0}), TES_OK);
            if (i % 10 == 0)
                assert_int_equal(tes_set(f.w, f.es[i], f.vel, &(V3){1, 2, 3}), TES_OK);
        }
        tes_system_desc_t sd = {.name = "move", .run = move_system, .parallel = threads > 1};
        sd.query.terms[0] = (tes_term_t){.comp = f.pos, .oper = TES_AND, .access = TES_INOUT};
        sd.query.terms[1] = (tes_term_t){.comp = f.vel, .oper = TES_AND, .access = TES_IN};
        assert_non_null(tes_system_new(f.w, &sd));
        assert_int_equal(tes_progress(f.w, 0.0f), TES_OK);
        assert_int_equal(tes_progress(f.w, 0.0f), TES_OK);
        for (int i = 0; i < 1000; i++) {
            const V3 *p = tes_get(f.w, f.es[i], f.pos);
            assert_true(p->x == (float)i + (i % 10 == 0 ? 2.0f : 0.0f));
        }
        tes_world_free(f.w);
    }
}

static void copy_v3(void *dst, const void *src, int32_t count, void *ctx)
{
    (void)ctx;
    for (int32_t i = 0; i < count; i++)
        ((V3 *)dst)[i] = ((const V3 *)src)[i];
}

/* A component with a copy hook is never gathered: its fields are the
 * stored values, one entity per chunk in this shape. */
static void test_components_with_hooks_are_not_gathered(void **state)
{
    (void)state;
    w8_t f;
    tes_hooks_t hooks = {.copy = copy_v3};
    w8_build(&f, &hooks);
    tes_query_desc_t d = {.terms = {{f.pos}, {f.vel, TES_AND, TES_IN}}};
    tes_query_t *q = tes_query_new(f.w, &d);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        V3 *p = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            assert_ptr_equal(&p[i], tes_get(f.w, it.entities[i], f.pos));
        seen += it.count;
    }
    assert_int_equal(seen, 100);
    tes_query_free(q);
    tes_world_free(f.w);
}

/* Each walk is chosen when its iteration starts: the whole-table walk
 * (tables without sparse terms), tables with a sparse term, a query
 * without AND terms (its tables, then root entities), a sparse-driven
 * walk, a change-filtered walk and an owning group's walk. For each: an
 * iterator left after its first chunk with tes_iter_fini yields nothing
 * more (tes_iter_next steps the whole-table walk before any other test,
 * so a finished iterator must not look like one), an iterator run to its
 * end stays finished, and a new iteration sees everything again. */
static void test_every_walk_stays_finished(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t ta = comp(w, "TA", 4, TES_STORAGE_TABLE);
    tes_comp_t tb = comp(w, "TB", 4, TES_STORAGE_TABLE);
    tes_comp_t sa = comp(w, "SA", 4, TES_STORAGE_SPARSE);
    tes_comp_t sb = comp(w, "SB", 4, TES_STORAGE_SPARSE);
    tes_component_desc_t cd = {.name = "TC", .size = 4, .track_changes = true};
    tes_comp_t tc = tes_component(w, &cd);
    assert_int_not_equal(tc, 0);
    for (int i = 0; i < 60; i++) {
        tes_entity_t e = tes_spawn(w);
        if (i % 4 == 3)
            continue; /* a root entity */
        assert_int_equal(tes_set(w, e, ta, &(int32_t){i}), TES_OK);
        assert_int_equal(tes_set(w, e, tc, &(int32_t){i}), TES_OK);
        if (i % 2)
            assert_int_equal(tes_set(w, e, tb, &(int32_t){i}), TES_OK);
        if (i % 3)
            assert_int_equal(tes_set(w, e, sa, &(int32_t){i}), TES_OK);
        if (i % 5)
            assert_int_equal(tes_set(w, e, sb, &(int32_t){i}), TES_OK);
    }
    tes_query_desc_t d[6];
    memset(d, 0, sizeof d);
    d[0].terms[0].comp = ta;                               /* whole tables */
    d[1].terms[0].comp = ta;                               /* tables, a sparse term */
    d[1].terms[1].comp = sa;
    d[2].terms[0] = (tes_term_t){.comp = tb, .oper = TES_NOT}; /* tables, then roots */
    d[3].terms[0].comp = sa;                               /* sparse-driven */
    d[3].terms[1].comp = sb;
    d[4].terms[0] = (tes_term_t){.comp = tc, .change = TES_CHANGE_CHANGED}; /* change filter */
    d[5].terms[0].comp = sa;                               /* owning group */
    d[5].terms[1].comp = sb;
    d[5].flags = TES_QUERY_OWNING_GROUP;
    for (int k = 0; k < 6; k++) {
        tes_query_t *q = tes_query_new(w, &d[k]);
        assert_non_null(q);
        int32_t all = tes_query_count(q);
        assert_true(all > 1);
        tes_iter_t it = tes_query_iter(q);
        assert_true(tes_iter_next(&it));
        assert_true(tes_is_deferred(w));
        tes_iter_fini(&it);
        assert_false(tes_is_deferred(w));
        assert_int_equal(it.count, 0);
        assert_null(it.entities);
        for (int again = 0; again < 3; again++)
            assert_false(tes_iter_next(&it));
        assert_int_equal(it.count, 0);
        assert_false(tes_is_deferred(w));
        /* Run to its end, then asked again. */
        int32_t seen = 0;
        it = tes_query_iter(q);
        while (tes_iter_next(&it))
            seen += it.count;
        if (k != 4) /* the change filter: the first iteration saw every row */
            assert_int_equal(seen, all);
        assert_false(tes_iter_next(&it));
        assert_false(tes_is_deferred(w));
        tes_query_free(q);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static tes_query_t *refused_query;
static int refused_chunks, refused_rc;

static void iterate_whole_tables_in_hook(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (!refused_query)
        return;
    tes_iter_t it = tes_query_iter(refused_query);
    refused_rc = tes_last_error(w);
    while (tes_iter_next(&it))
        refused_chunks++;
    tes_iter_fini(&it);
}

/* An iteration refused inside a hook is finished from the start, also on
 * the whole-table walk (whose step tes_iter_next takes first). */
static void test_whole_table_iteration_refused_in_hook(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = comp(w, "A", 4, TES_STORAGE_TABLE);
    tes_component_desc_t hd = {.name = "H", .size = 4,
                               .hooks = {.on_add = iterate_whole_tables_in_hook}};
    tes_comp_t h = tes_component(w, &hd);
    for (int i = 0; i < 10; i++)
        assert_int_equal(tes_set(w, tes_spawn(w), a, &(int32_t){i}), TES_OK);
    tes_query_desc_t d = {.terms = {{a}}};
    refused_query = tes_query_new(w, &d);
    refused_chunks = 0;
    refused_rc = TES_OK;
    assert_int_equal(tes_add(w, tes_spawn(w), h), TES_OK);
    assert_int_equal(refused_rc, TES_ERR_BUSY);
    assert_int_equal(refused_chunks, 0);
    assert_int_equal(tes_query_count(refused_query), 10);
    tes_query_free(refused_query);
    refused_query = NULL;
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_are_routed_per_component),
        cmocka_unit_test(test_filter_index_follows_entities),
        cmocka_unit_test(test_empty_spawns_skip_watchers),
        cmocka_unit_test(test_spawn_n_skips_watchers),
        cmocka_unit_test(test_sparse_query_made_in_hook_filters_by_table),
        cmocka_unit_test(test_nonowning_flag_on_table_query_walks_tables),
        cmocka_unit_test(test_nonowning_group_runs),
        cmocka_unit_test(test_matcher_splits_only_at_fields),
        cmocka_unit_test(test_table_rows_split_at_optional_values),
        cmocka_unit_test(test_root_walk_visits_matching_roots),
        cmocka_unit_test(test_sparse_view_gathers_scattered_values),
        cmocka_unit_test(test_gathered_writes_back_on_fini_and_keeps_get_mut),
        cmocka_unit_test(test_nonowning_group_gathers),
        cmocka_unit_test(test_group_gather_across_a_following_store_page_end),
        cmocka_unit_test(test_nonowning_group_walks_its_pool),
        cmocka_unit_test(test_group_member_walk_scans_past_gaps),
        cmocka_unit_test(test_systems_over_scattered_values),
        cmocka_unit_test(test_components_with_hooks_are_not_gathered),
        cmocka_unit_test(test_every_walk_stays_finished),
        cmocka_unit_test(test_whole_table_iteration_refused_in_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
