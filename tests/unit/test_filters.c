/*
 * The default filters of sparse-only queries (src/query/filter.h): when an
 * iteration starts, the positions of the disabled entities and prefabs in
 * the pool it walks are listed and the walk cuts its chunks around them,
 * testing no other entity; with too many of them it tests each entity's
 * byte instead. These tests pin the boundaries down: a hidden entity first
 * or last in the pool, one that left the pool, was enabled again or
 * destroyed (and its index reused), one filter of the two, a NOT term, a
 * gathered chunk, both fallbacks, and the list's overflow and recovery.
 * Every walk is compared with the answer worked out from tes_enabled and
 * tes_has, and every field value with tes_get.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "query/filter.h"
#include "tessera.h"
#include "world/check.h"

enum { N = 1000 };

typedef struct fixture {
    tes_world_t *w;
    tes_comp_t a, b;
    tes_entity_t es[3 * N];
    int32_t n;
} fixture_t;

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = TES_STORAGE_SPARSE};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

/* n entities with A (its value: the entity's number) and B (minus it), in
 * spawn order, so both pools hold them in that order. */
static void build(fixture_t *f, int32_t n)
{
    assert_true(n <= 3 * N);
    f->w = tes_world_new(NULL);
    f->a = comp(f->w, "A", 4);
    f->b = comp(f->w, "B", 4);
    f->n = n;
    for (int32_t i = 0; i < n; i++) {
        f->es[i] = tes_spawn(f->w);
        int32_t va = i, vb = -i;
        assert_int_equal(tes_set(f->w, f->es[i], f->a, &va), TES_OK);
        assert_int_equal(tes_set(f->w, f->es[i], f->b, &vb), TES_OK);
    }
}

static tes_query_t *query(fixture_t *f, uint32_t flags)
{
    tes_query_desc_t d = {.terms = {{f->a}, {f->b, TES_AND, TES_IN}}, .flags = flags};
    tes_query_t *q = tes_query_new(f->w, &d);
    assert_non_null(q);
    return q;
}

typedef struct walk {
    int32_t seen, chunks;
    uint32_t hidden; /* the iterator's priv_hidden_count */
} walk_t;

/* Walks q, checks every chunk's entities and fields against tes_get, that
 * no entity is seen twice, and that the visited set is exactly the
 * entities `want` accepts. */
static walk_t walk(fixture_t *f, tes_query_t *q, bool (*want)(const fixture_t *, tes_entity_t))
{
    walk_t r = {0, 0, 0};
    uint8_t *seen = calloc((size_t)f->w->entities.count + 1, 1);
    assert_non_null(seen);
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const int32_t *pa = tes_field(&it, 0), *pb = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t e = it.entities[i];
            assert_true(want(f, e));
            assert_int_equal(seen[tes_entity_index(e)]++, 0);
            assert_int_equal(pa[i], *(const int32_t *)tes_get(f->w, e, f->a));
            assert_int_equal(pb[i], *(const int32_t *)tes_get(f->w, e, f->b));
        }
        r.seen += it.count;
        r.chunks++;
    }
    r.hidden = it.priv_hidden_count; /* listed by the first step */
    int32_t expected = 0;
    for (int32_t i = 0; i < f->n; i++)
        expected += tes_alive(f->w, f->es[i]) && want(f, f->es[i]);
    assert_int_equal(r.seen, expected);
    free(seen);
    assert_int_equal(tes__filters_check(f->w), TES_OK);
    return r;
}

static bool visible(const fixture_t *f, tes_entity_t e)
{
    return tes_enabled(f->w, e) && !tes_has(f->w, e, TES_PREFAB) && tes_has(f->w, e, f->a) &&
           tes_has(f->w, e, f->b);
}

static bool enabled_any(const fixture_t *f, tes_entity_t e)
{
    return tes_enabled(f->w, e) && tes_has(f->w, e, f->a) && tes_has(f->w, e, f->b);
}

static void finish(fixture_t *f, tes_query_t *q)
{
    tes_query_free(q);
    assert_int_equal(tes__world_check(f->w), TES_OK);
    tes_world_free(f->w);
}

/* Hidden entities first and last in the driving pool: listed, stepped
 * over, and the rest is one chunk; one in the middle cuts it in two. */
static void test_hidden_first_last_and_middle(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 200);
    tes_query_t *q = query(&f, 0);
    walk_t r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 0);
    assert_int_equal(r.chunks, 1);
    assert_int_equal(tes_disable(f.w, f.es[0]), TES_OK);
    assert_int_equal(tes_disable(f.w, f.es[199]), TES_OK);
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    assert_int_equal(it.priv_hidden_count, 2);
    assert_int_equal(it.priv_hidden[0], 0);
    assert_int_equal(it.priv_hidden[1], 199);
    assert_int_equal(it.entities[0], f.es[1]);
    assert_int_equal(it.count, 198);
    tes_iter_fini(&it);
    r = walk(&f, q, visible);
    assert_int_equal(r.seen, 198);
    assert_int_equal(r.chunks, 1);
    assert_int_equal(tes_disable(f.w, f.es[100]), TES_OK);
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 3);
    assert_int_equal(r.seen, 197);
    assert_int_equal(r.chunks, 2);
    /* Two neighbours: no empty chunk between them. */
    assert_int_equal(tes_disable(f.w, f.es[101]), TES_OK);
    r = walk(&f, q, visible);
    assert_int_equal(r.seen, 196);
    assert_int_equal(r.chunks, 2);
    assert_int_equal(tes_query_count(q), 196);
    finish(&f, q);
}

/* A hidden entity that leaves the driving pool (the pool's last entity
 * moves into its place), is enabled again, or is destroyed and its index
 * reused by a visible entity: the walk follows each. */
static void test_hidden_entity_leaves_returns_dies(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 200);
    tes_query_t *q = query(&f, 0);
    assert_int_equal(tes_disable(f.w, f.es[5]), TES_OK);
    assert_int_equal(walk(&f, q, visible).hidden, 1);
    assert_int_equal(tes_remove(f.w, f.es[5], f.a), TES_OK);
    assert_int_equal(tes_remove(f.w, f.es[5], f.b), TES_OK);
    walk_t r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 0); /* listed, but in no pool */
    assert_int_equal(r.seen, 199);
    assert_int_equal(r.chunks, 1); /* es[199] moved to position 5 of both */
    int32_t v = 5;
    assert_int_equal(tes_set(f.w, f.es[5], f.a, &v), TES_OK);
    assert_int_equal(tes_set(f.w, f.es[5], f.b, &v), TES_OK);
    assert_int_equal(walk(&f, q, visible).hidden, 1); /* now last in both */
    assert_int_equal(tes_enable(f.w, f.es[5]), TES_OK);
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 0);
    assert_int_equal(r.seen, 200);
    assert_int_equal(f.w->filters->tagged, 0);
    /* Destroyed while disabled; the next spawn reuses the index. */
    assert_int_equal(tes_disable(f.w, f.es[7]), TES_OK);
    assert_int_equal(tes_destroy(f.w, f.es[7]), TES_OK);
    assert_int_equal(walk(&f, q, visible).seen, 199);
    tes_entity_t again = tes_spawn(f.w);
    assert_int_equal(tes_entity_index(again), tes_entity_index(f.es[7]));
    f.es[7] = again;
    v = 7;
    assert_int_equal(tes_set(f.w, again, f.a, &v), TES_OK);
    assert_int_equal(tes_set(f.w, again, f.b, &v), TES_OK);
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 0);
    assert_int_equal(r.seen, 200);
    /* Disabled in turn: listed once, hidden. */
    assert_int_equal(tes_disable(f.w, again), TES_OK);
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 1);
    assert_int_equal(r.seen, 199);
    finish(&f, q);
}

/* Each query hides what its own filters say: with TES_QUERY_INCLUDE_PREFAB
 * the prefab is walked, the disabled entity stepped over. */
static void test_one_filter_of_two(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 200);
    tes_query_t *q = query(&f, TES_QUERY_INCLUDE_PREFAB);
    tes_entity_t prefab = tes_prefab_new(f.w);
    int32_t v = 1000;
    assert_int_equal(tes_set(f.w, prefab, f.a, &v), TES_OK);
    assert_int_equal(tes_set(f.w, prefab, f.b, &v), TES_OK);
    f.es[f.n++] = prefab;
    walk_t r = walk(&f, q, enabled_any);
    assert_int_equal(r.hidden, 0);
    assert_int_equal(r.seen, 201);
    assert_int_equal(tes_disable(f.w, f.es[50]), TES_OK);
    r = walk(&f, q, enabled_any);
    assert_int_equal(r.hidden, 1);
    assert_int_equal(r.seen, 200);
    tes_query_t *plain = query(&f, 0);
    r = walk(&f, plain, visible);
    assert_int_equal(r.hidden, 2);
    assert_int_equal(r.seen, 199);
    tes_query_free(plain);
    finish(&f, q);
}

/* A query that is not AND-only (a NOT term) runs the general run test; it
 * stops at the hidden positions too. */
static bool visible_without_c(const fixture_t *f, tes_entity_t e)
{
    return visible(f, e) && !tes_has(f->w, e, tes_component_lookup(f->w, "C"));
}

static void test_not_term_walk(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 300);
    tes_comp_t c = comp(f.w, "C", 0);
    tes_query_desc_t d = {.terms = {{f.a}, {f.b}, {c, TES_NOT}}};
    tes_query_t *q = tes_query_new(f.w, &d);
    assert_non_null(q);
    assert_int_equal(tes_add(f.w, f.es[30], c), TES_OK);
    assert_int_equal(tes_disable(f.w, f.es[0]), TES_OK);
    assert_int_equal(tes_disable(f.w, f.es[150]), TES_OK);
    assert_true(tes_prefab_new(f.w) != TES_NULL);
    walk_t r = walk(&f, q, visible_without_c);
    assert_int_equal(r.hidden, 2);
    assert_int_equal(r.seen, 297);
    assert_int_equal(r.chunks, 3); /* [1, 30), [31, 150), [151, 300) */
    finish(&f, q);
}

/* The W8 shape: B on every 10th entity, so the walk gathers A's scattered
 * values; a gathered chunk ends before a hidden entity, and what the loop
 * writes reaches the stores. */
static void test_gathered_chunks_stop_at_hidden(void **state)
{
    (void)state;
    fixture_t f;
    f.w = tes_world_new(NULL);
    f.a = comp(f.w, "A", 4);
    f.b = comp(f.w, "B", 4);
    f.n = N;
    for (int32_t i = 0; i < N; i++) {
        f.es[i] = tes_spawn(f.w);
        int32_t v = i;
        assert_int_equal(tes_set(f.w, f.es[i], f.a, &v), TES_OK);
        if (i % 10 == 0)
            assert_int_equal(tes_set(f.w, f.es[i], f.b, &v), TES_OK);
    }
    tes_query_desc_t d = {.terms = {{f.a}, {f.b, TES_AND, TES_IN}}};
    tes_query_t *q = tes_query_new(f.w, &d);
    assert_non_null(q);
    assert_int_equal(tes_disable(f.w, f.es[50]), TES_OK); /* B's position 5 */
    assert_int_equal(tes_disable(f.w, f.es[51]), TES_OK); /* in no B pool */
    int32_t seen = 0, longest = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        assert_int_equal(it.priv_hidden_count, 1);
        int32_t *pa = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t e = it.entities[i];
            assert_true(visible(&f, e));
            assert_int_equal(pa[i], (int32_t)(tes_entity_index(e) - tes_entity_index(f.es[0])));
            pa[i] += 100000;
        }
        seen += it.count;
        longest = it.count > longest ? it.count : longest;
    }
    assert_int_equal(seen, 99);
    assert_true(longest >= 16); /* gathered, not one entity per chunk */
    for (int32_t i = 0; i < N; i++) {
        int32_t want = i + (i % 10 == 0 && i != 50 ? 100000 : 0);
        assert_int_equal(*(const int32_t *)tes_get(f.w, f.es[i], f.a), want);
    }
    finish(&f, q);
}

/* More hidden entities in the pool than the iterator holds, or so many
 * tagged entities that looking them up would cost more than testing each
 * of the pool's: the walk tests each entity's byte, with the same result. */
static void test_fallbacks_test_each_entity(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, N);
    tes_query_t *q = query(&f, 0);
    for (int32_t i = 0; i < TES_ITER_HIDDEN; i++)
        assert_int_equal(tes_disable(f.w, f.es[i * 15]), TES_OK);
    walk_t r = walk(&f, q, visible);
    assert_int_equal(r.hidden, TES_ITER_HIDDEN);
    assert_int_equal(r.seen, N - TES_ITER_HIDDEN);
    assert_int_equal(tes_disable(f.w, f.es[N - 1]), TES_OK); /* one more */
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, TES__FILTERS_TEST);
    assert_int_equal(r.seen, N - TES_ITER_HIDDEN - 1);
    finish(&f, q);

    /* 20 tagged entities beside a pool of 100: 160 > 100. */
    build(&f, 100);
    q = query(&f, 0);
    tes_comp_t c = comp(f.w, "C", 4);
    for (int32_t i = 0; i < 19; i++) {
        tes_entity_t e = tes_spawn(f.w);
        assert_int_equal(tes_add(f.w, e, c) | tes_disable(f.w, e), TES_OK);
    }
    assert_int_equal(tes_disable(f.w, f.es[40]), TES_OK);
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, TES__FILTERS_TEST);
    assert_int_equal(r.seen, 99);
    assert_int_equal(r.chunks, 2);
    finish(&f, q);
}

/* More tagged entities than the list holds: it overflows (walks test each
 * entity), and is rebuilt once they are down to a quarter of it; stale
 * entries are dropped as entities lose their tags, so a few hidden ones
 * are listed again in a short list. */
static void test_list_overflows_and_recovers(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 3 * N);
    tes_query_t *q = query(&f, 0);
    const int32_t many = (int32_t)TES__FILTER_LIST_MAX + 100;
    for (int32_t i = 0; i < many; i++)
        assert_int_equal(tes_disable(f.w, f.es[i * 2]), TES_OK);
    assert_true(f.w->filters->overflowed);
    walk_t r = walk(&f, q, visible);
    assert_int_equal(r.hidden, TES__FILTERS_TEST);
    assert_int_equal(r.seen, 3 * N - many);
    /* Down to a quarter of the list: listed again. */
    int32_t left = many;
    while (left > (int32_t)TES__FILTER_LIST_MAX / 4) {
        left--;
        assert_int_equal(tes_enable(f.w, f.es[left * 2]), TES_OK);
    }
    assert_false(f.w->filters->overflowed);
    assert_int_equal(f.w->filters->listed_count, left);
    r = walk(&f, q, visible);
    assert_int_equal(r.seen, 3 * N - left);
    /* Down to three: the stale entries are gone, the three are listed. */
    while (left > 3) {
        left--;
        assert_int_equal(tes_enable(f.w, f.es[left * 2]), TES_OK);
    }
    assert_true(f.w->filters->listed_count <= 2 * 3 + 16);
    r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 3);
    assert_int_equal(r.seen, 3 * N - 3);
    assert_int_equal(r.chunks, 3); /* es[0] first: [1, 2), [3, 4), [5, ...) */
    finish(&f, q);
}

/* A change queued inside the loop (the iteration defers it) does not move
 * the listed positions: the entity disabled in the loop is still walked,
 * and hidden from the next iteration. */
static void test_disable_inside_the_loop(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 200);
    tes_query_t *q = query(&f, 0);
    assert_int_equal(tes_disable(f.w, f.es[10]), TES_OK);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t e = it.entities[i];
            assert_int_not_equal(e, f.es[10]);
            if (e == f.es[20])
                assert_int_equal(tes_disable(f.w, f.es[150]), TES_OK);
            if (e == f.es[30])
                assert_int_equal(tes_enable(f.w, f.es[10]), TES_OK);
        }
        seen += it.count;
    }
    assert_int_equal(seen, 199);
    walk_t r = walk(&f, q, visible);
    assert_int_equal(r.hidden, 1);
    assert_int_equal(r.seen, 199);
    finish(&f, q);
}

/* Groups keep their own members (the filter index is not theirs): a
 * disabled or prefab entity is not a member of either kind, and a
 * disabled one joins when it is enabled. */
static void test_groups_hide_tagged_members(void **state)
{
    (void)state;
    fixture_t f;
    build(&f, 100);
    tes_query_t *owning = query(&f, TES_QUERY_OWNING_GROUP);
    tes_query_t *nonowning = query(&f, TES_QUERY_NONOWNING_GROUP);
    tes_entity_t prefab = tes_prefab_new(f.w);
    int32_t v = 1;
    assert_int_equal(tes_set(f.w, prefab, f.a, &v) | tes_set(f.w, prefab, f.b, &v), TES_OK);
    f.es[f.n++] = prefab;
    assert_int_equal(tes_disable(f.w, f.es[0]), TES_OK);
    assert_int_equal(tes_disable(f.w, f.es[99]), TES_OK);
    assert_int_equal(walk(&f, owning, visible).seen, 98);
    assert_int_equal(walk(&f, nonowning, visible).seen, 98);
    assert_int_equal(tes_enable(f.w, f.es[99]), TES_OK);
    assert_int_equal(walk(&f, owning, visible).seen, 99);
    assert_int_equal(walk(&f, nonowning, visible).seen, 99);
    assert_int_equal(tes_query_count(owning), 99);
    tes_query_free(nonowning);
    finish(&f, owning);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hidden_first_last_and_middle),
        cmocka_unit_test(test_hidden_entity_leaves_returns_dies),
        cmocka_unit_test(test_one_filter_of_two),
        cmocka_unit_test(test_not_term_walk),
        cmocka_unit_test(test_gathered_chunks_stop_at_hidden),
        cmocka_unit_test(test_fallbacks_test_each_entity),
        cmocka_unit_test(test_list_overflows_and_recovers),
        cmocka_unit_test(test_disable_inside_the_loop),
        cmocka_unit_test(test_groups_hide_tagged_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
