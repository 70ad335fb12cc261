/*
 * By-depth queries: TES_QUERY_CASCADE (every match at depth d before any
 * at depth d + 1, one depth per chunk, it.depth) and TES_SRC_PARENT terms
 * (the parents' values in an array aligned with it.entities; AND, OPTIONAL
 * and NOT; TES_IN only), over table and sparse storage, entities of one
 * depth spread over several tables, structural calls made inside the loop
 * (deferred), a system with a parent term (its read conflicts with a
 * writer of the component) and a propagation over random forests checked
 * against a hand computation.
 *
 * Every test ends with tes__world_check.
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
#include "support/counting_alloc.h"
#include "query/cascade.h"
#include "system/system_types.h"
#include "world/check.h"

typedef struct Local {
    float x;
} Local;
typedef struct World {
    float x;
} World;
typedef struct Mark {
    int32_t v;
} Mark;
typedef struct Extra {
    int32_t v;
} Extra;

typedef struct comps {
    tes_comp_t local, world, mark, extra;
} comps_t;

static comps_t register_all(tes_world_t *w, bool sparse)
{
    comps_t c;
    tes_storage_t s = sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE;
    c.local = TES_COMPONENT(w, Local, .storage = s);
    c.world = TES_COMPONENT(w, World, .storage = s);
    c.mark = TES_COMPONENT(w, Mark);
    c.extra = TES_COMPONENT(w, Extra);
    return c;
}

static void expect_detail(const tes_world_t *w, int status, const char *word)
{
    assert_int_equal(tes_last_error(w), status);
    const char *d = tes_last_error_detail(w);
    assert_non_null(d);
    if (!strstr(d, word)) {
        printf("detail \"%s\" lacks \"%s\"\n", d, word);
        fail();
    }
}

/* A small forest: r0 -> a -> aa, r0 -> b, r1 -> c -> cc -> ccc; some
 * entities carry Extra (another table at the same depth). */
typedef struct forest {
    tes_entity_t r0, r1, a, aa, b, c, cc, ccc;
} forest_t;

static forest_t make_forest(tes_world_t *w, const comps_t *k)
{
    forest_t f;
    tes_entity_t *all[] = {&f.ccc, &f.aa, &f.cc, &f.a, &f.b, &f.c, &f.r0, &f.r1};
    for (int i = 0; i < 8; i++) { /* the deepest first: index order is not depth order */
        *all[i] = tes_spawn(w);
        tes_set(w, *all[i], k->world, &(World){0});
        tes_set(w, *all[i], k->local, &(Local){(float)(i + 1)});
        if (i % 3 == 1)
            tes_set(w, *all[i], k->extra, &(Extra){i});
    }
    assert_int_equal(tes_set_parent(w, f.a, f.r0), TES_OK);
    assert_int_equal(tes_set_parent(w, f.aa, f.a), TES_OK);
    assert_int_equal(tes_set_parent(w, f.b, f.r0), TES_OK);
    assert_int_equal(tes_set_parent(w, f.c, f.r1), TES_OK);
    assert_int_equal(tes_set_parent(w, f.cc, f.c), TES_OK);
    assert_int_equal(tes_set_parent(w, f.ccc, f.cc), TES_OK);
    return f;
}

/* ------------------------------------------------------------------ order */

static void check_order(tes_world_t *w, tes_query_t *q, int32_t want)
{
    int32_t seen = 0, last = -1;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        assert_true(it.depth >= last); /* by depth */
        last = it.depth;
        for (int32_t i = 0; i < it.count; i++)
            assert_int_equal(tes_depth(w, it.entities[i]), it.depth); /* one depth per chunk */
        seen += it.count;
    }
    assert_int_equal(seen, want);
}

static void test_order_by_depth(void **state)
{
    (void)state;
    for (int sparse = 0; sparse < 2; sparse++) {
        tes_world_t *w = tes_world_new(NULL);
        comps_t k = register_all(w, sparse != 0);
        forest_t f = make_forest(w, &k);
        (void)f;
        tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}}, .flags = TES_QUERY_CASCADE});
        assert_non_null(q);
        check_order(w, q, 8);
        assert_int_equal(tes_query_count(q), 8);
        /* The deepest entity was spawned first: its chunk comes last. */
        tes_iter_t it = tes_query_iter(q);
        tes_entity_t last = TES_NULL;
        int32_t depth = -1;
        while (tes_iter_next(&it)) {
            last = it.entities[it.count - 1];
            depth = it.depth;
        }
        assert_true(last == f.ccc);
        assert_int_equal(depth, 3);
        /* Reparenting changes the order at once (no table moves). */
        assert_int_equal(tes_set_parent(w, f.r1, f.aa), TES_OK); /* ccc now at depth 6 */
        check_order(w, q, 8);
        assert_int_equal(tes_depth(w, f.ccc), 6);
        /* Without the flag: the plain walk, depth 0. */
        tes_query_t *plain = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}}});
        it = tes_query_iter(plain);
        while (tes_iter_next(&it))
            assert_int_equal(it.depth, 0);
        tes_query_free(plain);
        tes_query_free(q);
        assert_int_equal(tes__world_check(w), 0);
        tes_world_free(w);
    }
}

/* A table change in the middle of a depth: one depth still spans several
 * tables, each chunk is one table's consecutive rows. */
static void test_tables_within_a_depth(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w, false);
    tes_entity_t root = tes_spawn(w);
    tes_set(w, root, k.world, &(World){1});
    enum { N = 300 };
    tes_entity_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = tes_spawn(w);
        tes_set(w, kids[i], k.world, &(World){0});
        if (i % 2)
            tes_set(w, kids[i], k.extra, &(Extra){i});
        assert_int_equal(tes_set_parent(w, kids[i], root), TES_OK);
    }
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.world, .access = TES_IN, .src = TES_SRC_PARENT}}, .flags = TES_QUERY_CASCADE});
    assert_non_null(q);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *self = tes_field(&it, 0);
        const World *up = tes_field(&it, 1);
        assert_int_equal(it.depth, 1);
        bool extra = tes_has(w, it.entities[0], k.extra);
        for (int32_t i = 0; i < it.count; i++) {
            assert_int_equal(tes_has(w, it.entities[i], k.extra), extra);
            assert_true(tes_get(w, it.entities[i], k.world) == &self[i]); /* the stored values */
            assert_true(up[i].x == 1.0f);
        }
        seen += it.count;
    }
    assert_int_equal(seen, N);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ parent terms */

static void test_parent_and(void **state)
{
    (void)state;
    for (int sparse = 0; sparse < 2; sparse++) {
        tes_world_t *w = tes_world_new(NULL);
        comps_t k = register_all(w, sparse != 0);
        forest_t f = make_forest(w, &k);
        tes_set(w, f.r0, k.world, &(World){10});
        tes_set(w, f.a, k.world, &(World){20});
        tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world, .access = TES_IN}, {k.world, .access = TES_IN, .src = TES_SRC_PARENT}}});
        assert_non_null(q);
        assert_int_equal(tes_query_count(q), 6); /* the roots have no parent */
        int32_t seen = 0;
        tes_iter_t it = tes_query_iter(q);
        while (tes_iter_next(&it)) {
            const World *up = tes_field(&it, 1);
            assert_non_null(up);
            for (int32_t i = 0; i < it.count; i++) {
                const World *pw = tes_get(w, tes_parent(w, it.entities[i]), k.world);
                assert_true(up[i].x == pw->x);
                assert_true(it.entities[i] != f.r0 && it.entities[i] != f.r1);
            }
            seen += it.count;
        }
        assert_int_equal(seen, 6);
        /* A parent without the component: its children do not match. */
        tes_remove(w, f.c, k.world);
        assert_int_equal(tes_query_count(q), 4); /* c itself still has a parent with World */
        tes_query_free(q);
        assert_int_equal(tes__world_check(w), 0);
        tes_world_free(w);
    }
}

static void test_parent_optional_and_not(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w, false);
    tes_entity_t roots[6];
    enum { N = 60 };
    for (int r = 0; r < 6; r++) {
        roots[r] = tes_spawn(w);
        tes_set(w, roots[r], k.world, &(World){0});
        if (r % 2 == 0)
            tes_set(w, roots[r], k.mark, &(Mark){100 + r});
    }
    for (int i = 0; i < N; i++) { /* children alternate between the roots */
        tes_entity_t e = tes_spawn(w);
        tes_set(w, e, k.world, &(World){0});
        assert_int_equal(tes_set_parent(w, e, roots[i % 6]), TES_OK);
    }
    tes_query_t *opt = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.mark, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}}});
    assert_non_null(opt);
    int32_t with = 0, without = 0;
    tes_iter_t it = tes_query_iter(opt);
    while (tes_iter_next(&it)) {
        const Mark *m = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t p = tes_parent(w, it.entities[i]);
            bool has = p != TES_NULL && tes_has(w, p, k.mark);
            assert_int_equal(has, m != NULL); /* the whole chunk agrees */
            if (m)
                assert_int_equal(m[i].v, ((const Mark *)tes_get(w, p, k.mark))->v);
        }
        if (m)
            with += it.count;
        else
            without += it.count;
    }
    assert_int_equal(with, N / 2);
    assert_int_equal(without, N / 2 + 6); /* the roots have no parent */
    tes_query_t *not = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.mark, .oper = TES_NOT, .access = TES_IN, .src = TES_SRC_PARENT}}});
    assert_non_null(not);
    assert_int_equal(tes_query_count(not), N / 2 + 6);
    it = tes_query_iter(not);
    while (tes_iter_next(&it)) {
        assert_null(tes_field(&it, 1));
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t p = tes_parent(w, it.entities[i]);
            assert_true(p == TES_NULL || !tes_has(w, p, k.mark));
        }
    }
    tes_query_free(opt);
    tes_query_free(not);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_refusals(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w, false);
    tes_comp_t tracked = tes_component(w, &(tes_component_desc_t){.name = "Tracked", .size = sizeof(Extra), .track_changes = true});
    tes_access_t bad[] = {TES_INOUT, TES_OUT, TES_NOACCESS};
    for (int i = 0; i < 3; i++) {
        assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.world, .access = bad[i], .src = TES_SRC_PARENT}}}));
        expect_detail(w, TES_ERR_INVALID, "TES_IN");
    }
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.world, .access = TES_IN, .src = (tes_src_t)7}}}));
    expect_detail(w, TES_ERR_INVALID, "tes_src_t");
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.world, .access = TES_IN, .src = TES_SRC_PARENT}, {k.world, .access = TES_IN, .src = TES_SRC_PARENT}}}));
    expect_detail(w, TES_ERR_INVALID, "parent");
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}}, .flags = TES_QUERY_CASCADE | TES_QUERY_NONOWNING_GROUP}));
    expect_detail(w, TES_ERR_INVALID, "group");
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.mark, .access = TES_IN, .src = TES_SRC_PARENT}}, .flags = TES_QUERY_OWNING_GROUP}));
    expect_detail(w, TES_ERR_INVALID, "group");
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {tracked, .access = TES_IN, .change = TES_CHANGE_CHANGED, .src = TES_SRC_PARENT}}}));
    expect_detail(w, TES_ERR_INVALID, "TES_SRC_PARENT");
    /* A term list ends at an all-zero term: a src after it is a term whose
     * id was never filled in. */
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {0}, {0, .src = TES_SRC_PARENT}}}));
    expect_detail(w, TES_ERR_INVALID, "was a component registered");
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ propagation */

/* World = parent.World + Local (roots: Local) by one query. */
static void propagate(tes_world_t *w, tes_query_t *q)
{
    (void)w;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *out = tes_field(&it, 0);
        const Local *l = tes_field(&it, 1);
        const World *up = tes_field(&it, 2);
        for (int32_t i = 0; i < it.count; i++)
            out[i].x = (up ? up[i].x : 0.0f) + l[i].x;
    }
}

static tes_query_t *propagation_query(tes_world_t *w, const comps_t *k)
{
    return tes_query_new(w, &(tes_query_desc_t){
                                .terms = {{k->world, .access = TES_OUT},
                                          {k->local, .access = TES_IN},
                                          {k->world, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}},
                                .flags = TES_QUERY_CASCADE});
}

static float expected_world(tes_world_t *w, const comps_t *k, tes_entity_t e)
{
    float sum = 0;
    for (; e != TES_NULL; e = tes_parent(w, e))
        sum += ((const Local *)tes_get(w, e, k->local))->x;
    return sum;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_random_forest_propagation(void **state)
{
    (void)state;
    for (int sparse = 0; sparse < 2; sparse++) {
        for (uint64_t seed = 1; seed <= 4; seed++) {
            uint64_t s = seed * 0x9E3779B97F4A7C15ull;
            tes_world_t *w = tes_world_new(NULL);
            comps_t k = register_all(w, sparse != 0);
            enum { N = 3000 };
            tes_entity_t *e = malloc(N * sizeof *e);
            for (int i = 0; i < N; i++) {
                e[i] = tes_spawn(w);
                tes_set(w, e[i], k.world, &(World){-1});
                tes_set(w, e[i], k.local, &(Local){(float)(rng_next(&s) % 16)});
                if (rng_next(&s) % 4 == 0)
                    tes_set(w, e[i], k.extra, &(Extra){i}); /* another table */
            }
            /* Random parents, not in index order: each entity under a
             * random other one unless that would close a cycle. */
            for (int i = 0; i < N; i++) {
                if (rng_next(&s) % 10 == 0)
                    continue; /* a root */
                tes_entity_t p = e[rng_next(&s) % N];
                int rc = tes_set_parent(w, e[i], p);
                assert_true(rc == TES_OK || rc == TES_ERR_INVALID);
            }
            tes_query_t *q = propagation_query(w, &k);
            assert_non_null(q);
            propagate(w, q);
            for (int i = 0; i < N; i++) {
                const World *got = tes_get(w, e[i], k.world);
                assert_true(got->x == expected_world(w, &k, e[i]));
            }
            /* Changes of Local and of links, then again. */
            for (int i = 0; i < N / 10; i++) {
                tes_set(w, e[rng_next(&s) % N], k.local, &(Local){(float)(rng_next(&s) % 16)});
                (void)tes_set_parent(w, e[rng_next(&s) % N], e[rng_next(&s) % N]);
            }
            propagate(w, q);
            for (int i = 0; i < N; i++)
                assert_true(((const World *)tes_get(w, e[i], k.world))->x == expected_world(w, &k, e[i]));
            tes_query_free(q);
            free(e);
            assert_int_equal(tes__world_check(w), 0);
            tes_world_free(w);
        }
    }
}

/* Structural calls inside a by-depth loop are deferred: the iteration sees
 * the forest it started with and the changes land when it ends. */
static void test_deferred_inside_loop(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w, false);
    forest_t f = make_forest(w, &k);
    tes_query_t *q = propagation_query(w, &k);
    int32_t seen = 0;
    tes_entity_t extra = tes_spawn(w);
    tes_set(w, extra, k.world, &(World){0});
    tes_set(w, extra, k.local, &(Local){1});
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *out = tes_field(&it, 0);
        const Local *l = tes_field(&it, 1);
        const World *up = tes_field(&it, 2);
        for (int32_t i = 0; i < it.count; i++) {
            out[i].x = (up ? up[i].x : 0.0f) + l[i].x;
            if (it.entities[i] == f.c) {
                tes_destroy(w, f.ccc);                  /* deferred: still yielded */
                tes_set_parent(w, extra, f.aa);         /* deferred */
                tes_add(w, f.cc, k.mark);               /* deferred table move */
            }
        }
        seen += it.count;
    }
    assert_int_equal(seen, 9);
    assert_false(tes_alive(w, f.ccc));
    assert_true(tes_parent(w, extra) == f.aa);
    assert_true(tes_has(w, f.cc, k.mark));
    propagate(w, q);
    assert_true(((const World *)tes_get(w, extra, k.world))->x == expected_world(w, &k, extra));
    assert_true(((const World *)tes_get(w, f.cc, k.world))->x == expected_world(w, &k, f.cc));
    /* Leaving early: tes_iter_fini releases the walk. */
    it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    tes_iter_fini(&it);
    /* tes_destroy_matching on a parent-term query destroys only matches
     * (and their descendants). */
    tes_query_t *under = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}, {k.extra, .access = TES_IN, .src = TES_SRC_PARENT}}});
    int32_t want = tes_query_count(under);
    assert_int_equal(tes_destroy_matching(under), want);
    assert_int_equal(tes_query_count(under), 0);
    tes_query_free(under);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ systems */

static void bump_world(tes_iter_t *it)
{
    World *wd = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        wd[i].x += 1.0f;
}

static void copy_parent(tes_iter_t *it)
{
    Mark *m = tes_field(it, 0);
    const World *up = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++)
        m[i].v = (int32_t)up[i].x;
}

static void propagate_system(tes_iter_t *it)
{
    World *out = tes_field(it, 0);
    const Local *l = tes_field(it, 1);
    const World *up = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++)
        out[i].x = (up ? up[i].x : 0.0f) + l[i].x;
}

static void test_system_parent_term(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
        comps_t k = register_all(w, false);
        tes_entity_t root = tes_spawn(w), kid = tes_spawn(w);
        tes_set(w, root, k.world, &(World){5});
        tes_set(w, kid, k.world, &(World){0});
        tes_set(w, kid, k.mark, &(Mark){0});
        assert_int_equal(tes_set_parent(w, kid, root), TES_OK);
        /* The writer touches World only; the reader writes Mark and reads
         * World only through its parent term: they still conflict. */
        tes_system_t *writer = tes_system_new(w, &(tes_system_desc_t){.name = "bump", .run = bump_world, .query = {.terms = {{k.world}}}});
        tes_system_t *reader = tes_system_new(w, &(tes_system_desc_t){.name = "copy", .run = copy_parent, .parallel = true, .query = {.terms = {{k.mark, .access = TES_OUT}, {k.world, .access = TES_IN, .src = TES_SRC_PARENT}}}});
        assert_non_null(writer);
        assert_non_null(reader);
        assert_int_equal(tes_progress(w, 0.0f), TES_OK);
        assert_true(reader->level > writer->level);
        assert_int_equal(((const Mark *)tes_get(w, kid, k.mark))->v, 6); /* after the bump */
        tes_system_free(writer);
        tes_system_free(reader);
        /* A propagation system over a forest, any thread count. */
        uint64_t s = 77;
        enum { N = 2000 };
        tes_entity_t e[N];
        for (int i = 0; i < N; i++) {
            e[i] = tes_spawn(w);
            tes_set(w, e[i], k.world, &(World){0});
            tes_set(w, e[i], k.local, &(Local){(float)(rng_next(&s) % 8)});
            if (i && rng_next(&s) % 8)
                assert_int_equal(tes_set_parent(w, e[i], e[rng_next(&s) % (uint64_t)i]), TES_OK);
        }
        tes_system_t *prop = tes_system_new(w, &(tes_system_desc_t){.name = "prop", .run = propagate_system, .parallel = true, .query = {.terms = {{k.world, .access = TES_OUT}, {k.local, .access = TES_IN}, {k.world, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}}, .flags = TES_QUERY_CASCADE}});
        assert_non_null(prop);
        assert_int_equal(tes_progress(w, 0.0f), TES_OK);
        for (int i = 0; i < N; i++)
            assert_true(((const World *)tes_get(w, e[i], k.world))->x == expected_world(w, &k, e[i]));
        tes_system_stats_t st;
        assert_int_equal(tes_system_stats(prop, &st), TES_OK);
        assert_true(st.matched >= N);
        assert_int_equal(tes__world_check(w), 0);
        tes_world_free(w);
    }
}

/* ------------------------------------------------------------------ write-back, memory */

/* Values of a gathered chunk go back when the next chunk is made, unless
 * the stored value changed meanwhile (tes_set from the loop wins). */
static void test_write_back_rules(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w, false);
    enum { N = 64 };
    tes_entity_t root = tes_spawn(w), e[N];
    tes_set(w, root, k.world, &(World){0});
    for (int i = 0; i < N; i++) { /* depths 1 and 2 interleaved in one table */
        e[i] = tes_spawn(w);
        tes_set(w, e[i], k.world, &(World){0});
        assert_int_equal(tes_set_parent(w, e[i], i % 2 ? e[i - 1] : root), TES_OK);
    }
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.world}}, .flags = TES_QUERY_CASCADE});
    int32_t chunks = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *v = tes_field(&it, 0);
        chunks++;
        for (int32_t i = 0; i < it.count; i++) {
            v[i].x = 7;
            if (it.entities[i] == e[2])
                tes_set(w, e[2], k.world, &(World){99}); /* the stored value changes: kept */
        }
    }
    assert_true(chunks <= 3); /* long chunks despite every other row */
    for (int i = 0; i < N; i++)
        assert_true(((const World *)tes_get(w, e[i], k.world))->x == (i == 2 ? 99.0f : 7.0f));
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* What one propagation pass must leave in e's World: its Local plus its
 * parent's World when the parent has one (computed the same way when the
 * parent matches the query, else as stored). */
static float want_world(tes_world_t *w, const comps_t *k, tes_entity_t e)
{
    float up = 0;
    tes_entity_t p = tes_parent(w, e);
    if (p != TES_NULL && tes_has(w, p, k->world))
        up = tes_has(w, p, k->local) ? want_world(w, k, p) : ((const World *)tes_get(w, p, k->world))->x;
    return up + ((const Local *)tes_get(w, e, k->local))->x;
}

static void check_propagated(tes_world_t *w, const comps_t *k, tes_query_t *q, int32_t matches)
{
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *out = tes_field(&it, 0);
        const Local *l = tes_field(&it, 1);
        const World *up = tes_field(&it, 2);
        for (int32_t i = 0; i < it.count; i++) {
            assert_true(l[i].x == ((const Local *)tes_get(w, it.entities[i], k->local))->x);
            out[i].x = (up ? up[i].x : 0.0f) + l[i].x;
        }
        seen += it.count;
    }
    assert_int_equal(seen, matches);
    tes_iter_t all = tes_query_iter(q);
    while (tes_iter_next(&all))
        for (int32_t i = 0; i < all.count; i++)
            assert_true(((const World *)tes_get(w, all.entities[i], k->world))->x ==
                        want_world(w, k, all.entities[i]));
}

/* The walk the last finished iteration of q took (its state, back with
 * the query). */
static tes__cascade_walk_t last_walk(tes_query_t *q)
{
    const cascade_t *c = atomic_load(&q->cascade_spare);
    assert_non_null(c);
    return c->walk;
}

/* The changes below, followed by the by-depth query q makes: the
 * propagation query (plain self values: the pointer walk, whose order is
 * kept while nothing it depends on changed, so a steady iteration
 * allocates nothing) or the same with an OPTIONAL self term (the general
 * walk, which collects every time). */
static void follows_changes(bool pointer_walk)
{
    ca_state_t ca;
    ca_init(&ca, 0);
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
    comps_t k = register_all(w, false);
    enum { N = 200 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        tes_set(w, e[i], k.world, &(World){0});
        tes_set(w, e[i], k.local, &(Local){(float)(i % 7 + 1)});
        if (i)
            assert_int_equal(tes_set_parent(w, e[i], e[(i - 1) / 3]), TES_OK);
    }
    /* A parent with World only (not a match) and one without components. */
    tes_entity_t plain = tes_spawn(w), empty = tes_spawn(w), c1 = tes_spawn(w), c2 = tes_spawn(w);
    tes_set(w, plain, k.world, &(World){30});
    tes_set(w, c1, k.world, &(World){0});
    tes_set(w, c1, k.local, &(Local){2});
    tes_set(w, c2, k.world, &(World){0});
    tes_set(w, c2, k.local, &(Local){3});
    /* Two roots: one in the table e[5] visits below (so that visit makes
     * no new table), one destroyed below. */
    tes_entity_t extra = tes_spawn(w), doomed = tes_spawn(w);
    tes_set(w, extra, k.world, &(World){0});
    tes_set(w, extra, k.local, &(Local){5});
    tes_set(w, extra, k.extra, &(Extra){5});
    tes_set(w, doomed, k.world, &(World){0});
    tes_set(w, doomed, k.local, &(Local){6});
    assert_int_equal(tes_set_parent(w, c1, plain), TES_OK);
    assert_int_equal(tes_set_parent(w, c2, empty), TES_OK);
    tes_query_t *q = pointer_walk ? propagation_query(w, &k)
                   : tes_query_new(w, &(tes_query_desc_t){
                                          .terms = {{k.world, .access = TES_OUT},
                                                    {k.local, .access = TES_IN},
                                                    {k.world, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT},
                                                    {k.mark, .oper = TES_OPTIONAL, .access = TES_IN}},
                                          .flags = TES_QUERY_CASCADE});
    assert_non_null(q);
    tes__cascade_walk_t walk = pointer_walk ? TES__CASCADE_POINTER : TES__CASCADE_GENERAL;
    check_propagated(w, &k, q, N + 4);
    assert_int_equal(last_walk(q), walk);
    assert_true(((const World *)tes_get(w, c1, k.world))->x == 32.0f);
    /* c2's parent has no table component: the pointer walk never keeps
     * that order (its parent's table, the root, records no moves). It
     * gains World in tables the order does not depend on. */
    tes_set(w, empty, k.extra, &(Extra){1});
    tes_set(w, empty, k.world, &(World){70});
    check_propagated(w, &k, q, N + 4);
    assert_true(((const World *)tes_get(w, c2, k.world))->x == 73.0f);
    /* Kept now: a steady iteration allocates nothing (the general walk's
     * sort allocates its counters every time). */
    uint64_t calls = ca.calls;
    check_propagated(w, &k, q, N + 4);
    if (pointer_walk)
        assert_int_equal(ca.calls, calls);
    else
        assert_true(ca.calls > calls);
    assert_int_equal(last_walk(q), walk);
    /* Values written in between are read (through the kept addresses). */
    *(Local *)tes_get_mut(w, e[0], k.local) = (Local){100};
    *(World *)tes_get_mut(w, plain, k.world) = (World){40};
    check_propagated(w, &k, q, N + 4);
    assert_true(((const World *)tes_get(w, c1, k.world))->x == 42.0f);
    /* Rows swapped, counts as before: e[5] leaves its row and comes back
     * at the end of the table. */
    assert_int_equal(tes_add(w, e[5], k.extra), TES_OK);
    assert_int_equal(tes_remove(w, e[5], k.extra), TES_OK);
    check_propagated(w, &k, q, N + 4);
    /* A destroy and a spawn into the same table (roots: no link changes). */
    assert_int_equal(tes_destroy(w, doomed), TES_OK);
    tes_entity_t fresh = tes_spawn(w);
    tes_set(w, fresh, k.world, &(World){0});
    tes_set(w, fresh, k.local, &(Local){9});
    check_propagated(w, &k, q, N + 4);
    /* The World-only parent moves to another table. */
    assert_int_equal(tes_add(w, plain, k.extra), TES_OK);
    *(World *)tes_get_mut(w, plain, k.world) = (World){50};
    check_propagated(w, &k, q, N + 4);
    assert_true(((const World *)tes_get(w, c1, k.world))->x == 52.0f);
    /* A new matching table. */
    tes_entity_t marked = tes_spawn(w);
    tes_set(w, marked, k.world, &(World){0});
    tes_set(w, marked, k.local, &(Local){4});
    tes_set(w, marked, k.mark, &(Mark){1});
    check_propagated(w, &k, q, N + 5);
    /* A reparent. */
    assert_int_equal(tes_set_parent(w, e[10], marked), TES_OK);
    check_propagated(w, &k, q, N + 5);
    calls = ca.calls;
    check_propagated(w, &k, q, N + 5);
    if (pointer_walk)
        assert_int_equal(ca.calls, calls);
    assert_int_equal(last_walk(q), walk);
    assert_int_equal(tes__world_check(w), 0);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
    assert_int_equal(ca.live_blocks, 0);
}

/* A by-depth query keeps its order (each match's value addresses) from one
 * iteration to the next while nothing it depends on changed: a steady
 * iteration allocates nothing. Every change that moves a row or a link
 * makes the next iteration collect again: rows swapped by an add and a
 * remove (counts as before), a destroy and a spawn into the same table, a
 * parent moving to another table, a parent without table components
 * gaining the parent term's component, a new matching table, a reparent.
 * Values written in between are read as they are. */
static void test_kept_order_follows_changes(void **state)
{
    (void)state;
    follows_changes(true);
}

/* The general walk follows the same changes. (test_depth_sort.c runs them
 * after tes_sort_by_depth, with the sorted walk.) */
static void test_propagation_follows_changes(void **state)
{
    (void)state;
    follows_changes(false);
}

/* Every allocation of a by-depth iteration failing in turn: the first
 * tes_iter_next returns false with TES_ERR_NOMEM, nothing changed, nothing
 * leaked. */
static void test_allocation_failures(void **state)
{
    (void)state;
    for (uint64_t fail = 1;; fail++) {
        ca_state_t ca;
        ca_init(&ca, 0);
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
        comps_t k = register_all(w, false);
        forest_t f = make_forest(w, &k);
        for (int i = 0; i < 600; i++) { /* lists that grow more than once */
            tes_entity_t x = tes_spawn(w);
            tes_set(w, x, k.world, &(World){0});
            tes_set(w, x, k.local, &(Local){1});
            assert_int_equal(tes_set_parent(w, x, i % 2 ? f.aa : f.ccc), TES_OK);
        }
        tes_query_t *q = propagation_query(w, &k);
        assert_non_null(q);
        ca_fail_in(&ca, fail);
        int32_t seen = 0;
        tes_iter_t it = tes_query_iter(q);
        while (tes_iter_next(&it))
            seen += it.count;
        ca_fail_in(&ca, 0);
        uint64_t failures = ca.failures;
        if (failures)
            assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
        assert_true(seen == 0 || seen == 608);
        if (!failures) { /* and the kept state serves the next iteration */
            propagate(w, q);
            assert_true(((const World *)tes_get(w, f.aa, k.world))->x == expected_world(w, &k, f.aa));
        }
        tes_query_free(q);
        assert_int_equal(tes__world_check(w), 0);
        tes_world_free(w);
        assert_int_equal(ca.live_blocks, 0);
        assert_int_equal(ca.live_bytes, 0);
        if (!failures)
            break;
        assert_true(fail < 100);
    }
}

/* A change filter on the entity's own term works with the by-depth order:
 * the first iteration sees every match, the next only what changed. */
static void test_change_filter_by_depth(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w, false);
    tes_comp_t tr = tes_component(w, &(tes_component_desc_t){.name = "TrackedWorld", .size = sizeof(World), .track_changes = true});
    forest_t f = make_forest(w, &k);
    tes_entity_t all[] = {f.r0, f.r1, f.a, f.aa, f.b, f.c, f.cc, f.ccc};
    for (int i = 0; i < 8; i++)
        tes_set(w, all[i], tr, &(World){(float)i});
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{tr, .access = TES_IN, .change = TES_CHANGE_CHANGED}, {tr, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}}, .flags = TES_QUERY_CASCADE});
    assert_non_null(q);
    check_order(w, q, 8);
    check_order(w, q, 0);
    tes_set(w, f.cc, tr, &(World){42});
    tes_set(w, f.b, tr, &(World){43});
    int32_t seen = 0, last = -1;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const World *up = tes_field(&it, 1);
        assert_non_null(up);
        assert_true(it.depth > last);
        last = it.depth;
        assert_int_equal(it.count, 1);
        assert_true(it.entities[0] == (it.depth == 1 ? f.b : f.cc));
        assert_true(up[0].x == ((const World *)tes_get(w, tes_parent(w, it.entities[0]), tr))->x);
        seen++;
    }
    assert_int_equal(seen, 2);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_by_depth),
        cmocka_unit_test(test_tables_within_a_depth),
        cmocka_unit_test(test_parent_and),
        cmocka_unit_test(test_parent_optional_and_not),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_random_forest_propagation),
        cmocka_unit_test(test_deferred_inside_loop),
        cmocka_unit_test(test_system_parent_term),
        cmocka_unit_test(test_write_back_rules),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_kept_order_follows_changes),
        cmocka_unit_test(test_propagation_follows_changes),
        cmocka_unit_test(test_change_filter_by_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
