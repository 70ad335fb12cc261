/*
 * tes_sort_by_depth and the sorted by-depth walk: rows put in depth order
 * inside their tables (values, stamps and move hooks follow, children
 * keep their order, sparse values stay), the walk over sorted tables
 * (fields straight into the columns, parents gathered from recorded
 * positions, AND/OPTIONAL/NOT parent terms over parents in several
 * tables), every change falling back to the unsorted walks (the pointer
 * walk for queries of plain self values, else the general walk) with the
 * same results, the refusals (hook, iterator, deferral) and allocation failure
 * leaving the world as it was.
 *
 * Every test ends with tes__world_check, which verifies the sort's
 * records while they hold.
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
#include "world/check.h"
#include "world/depth_order.h"

typedef struct Local {
    float x;
} Local;
typedef struct World {
    float x;
} World;
typedef struct Extra {
    int32_t v;
} Extra;

typedef struct comps {
    tes_comp_t local, world, extra, sparse;
} comps_t;

static comps_t register_all(tes_world_t *w)
{
    comps_t c;
    c.local = TES_COMPONENT(w, Local);
    c.world = TES_COMPONENT(w, World);
    c.extra = TES_COMPONENT(w, Extra);
    c.sparse = tes_component(w, &(tes_component_desc_t){.name = "SparseTag", .size = sizeof(int32_t), .storage = TES_STORAGE_SPARSE});
    return c;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Whether e's table is in the order the last sort left (the sorted walk
 * takes it). */
static bool table_sorted(tes_world_t *w, tes_entity_t e)
{
    const tes__slot_t *s = tes__entity_slot(&w->entities, e);
    return s && tes__depth_rows(w, tes__slot_table(w, s)) != NULL;
}

/* A random forest of n entities spawned in index order, each under a
 * random earlier one (so deeper entities are spread through the table),
 * a quarter of them with Extra (a second table), some with a sparse
 * component. */
static tes_entity_t *make_forest_in(tes_world_t *w, const comps_t *k, int n, uint64_t seed,
                                    bool extras)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    tes_entity_t *e = malloc((size_t)n * sizeof *e);
    for (int i = 0; i < n; i++) {
        e[i] = tes_spawn(w);
        tes_set(w, e[i], k->world, &(World){-1});
        tes_set(w, e[i], k->local, &(Local){(float)(rng_next(&s) % 16)});
        if (rng_next(&s) % 4 == 0 && extras)
            tes_set(w, e[i], k->extra, &(Extra){i});
        if (rng_next(&s) % 5 == 0)
            tes_set(w, e[i], k->sparse, &(int32_t){i * 3});
        if (i && rng_next(&s) % 8)
            assert_int_equal(tes_set_parent(w, e[i], e[rng_next(&s) % (uint64_t)i]), TES_OK);
    }
    return e;
}

static tes_entity_t *make_forest(tes_world_t *w, const comps_t *k, int n, uint64_t seed)
{
    return make_forest_in(w, k, n, seed, true);
}

static tes_query_t *propagation_query(tes_world_t *w, const comps_t *k)
{
    return tes_query_new(w, &(tes_query_desc_t){
                                .terms = {{k->world, .access = TES_OUT},
                                          {k->local, .access = TES_IN},
                                          {k->world, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}},
                                .flags = TES_QUERY_CASCADE});
}

/* One propagation pass, checking the chunks' contract: one depth per
 * chunk, depths never decrease, and (direct) each self field points at
 * the entities' own values in their table. Returns the matches seen. */
static int32_t propagate(tes_world_t *w, const comps_t *k, tes_query_t *q, bool direct)
{
    int32_t seen = 0, last = -1;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *out = tes_field(&it, 0);
        const Local *l = tes_field(&it, 1);
        const World *up = tes_field(&it, 2);
        assert_true(it.depth >= last);
        last = it.depth;
        for (int32_t i = 0; i < it.count; i++) {
            assert_int_equal(tes_depth(w, it.entities[i]), it.depth);
            if (direct) {
                assert_ptr_equal(out + i, tes_get(w, it.entities[i], k->world));
                assert_ptr_equal(l + i, tes_get(w, it.entities[i], k->local));
            }
            out[i].x = (up ? up[i].x : 0.0f) + l[i].x;
        }
        seen += it.count;
    }
    return seen;
}

/* The walk the last finished iteration of q took. */
static tes__cascade_walk_t last_walk(tes_query_t *q)
{
    const cascade_t *c = atomic_load(&q->cascade_spare);
    assert_non_null(c);
    return c->walk;
}

/* Whether e is one of the propagation query's matches. */
static bool matched(tes_world_t *w, const comps_t *k, tes_entity_t e)
{
    return tes_has(w, e, k->world) && tes_has(w, e, k->local) && !tes_has(w, e, TES_DISABLED);
}

/* What a pass leaves in a match's World: its Local plus its parent's
 * World when the parent has one (computed the same way when the parent
 * matches, else as stored). */
static float want_world(tes_world_t *w, const comps_t *k, tes_entity_t e)
{
    float up = 0;
    tes_entity_t p = tes_parent(w, e);
    if (p != TES_NULL && tes_has(w, p, k->world))
        up = matched(w, k, p) ? want_world(w, k, p) : ((const World *)tes_get(w, p, k->world))->x;
    return up + ((const Local *)tes_get(w, e, k->local))->x;
}

static void check_world(tes_world_t *w, const comps_t *k, const tes_entity_t *e, int n)
{
    for (int i = 0; i < n; i++)
        if (tes_alive(w, e[i]) && matched(w, k, e[i]))
            assert_true(((const World *)tes_get(w, e[i], k->world))->x == want_world(w, k, e[i]));
}

/* ------------------------------------------------------------------ the sort */

/* Rows end in depth order in their own tables, stably (spawn order within
 * a depth), with every value, sparse value, child list and table kept. */
static void test_sort_orders_rows(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w);
    enum { N = 2000 };
    tes_entity_t *e = make_forest(w, &k, N, 7);
    Local *locals = malloc(N * sizeof *locals);
    int32_t *sparse = malloc(N * sizeof *sparse);
    tes_entity_t first_child[N];
    for (int i = 0; i < N; i++) {
        locals[i] = *(const Local *)tes_get(w, e[i], k.local);
        const int32_t *sp = tes_has(w, e[i], k.sparse) ? tes_get(w, e[i], k.sparse) : NULL;
        sparse[i] = sp ? *sp : -1;
        first_child[i] = TES_NULL;
        (void)tes_children(w, e[i], &first_child[i], 1);
    }
    assert_false(table_sorted(w, e[0]));
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    assert_int_equal(tes__world_check(w), 0);
    for (int i = 0; i < N; i++) {
        assert_true(table_sorted(w, e[i]));
        assert_true(((const Local *)tes_get(w, e[i], k.local))->x == locals[i].x);
        assert_int_equal(tes_has(w, e[i], k.sparse), sparse[i] >= 0);
        if (sparse[i] >= 0)
            assert_int_equal(*(const int32_t *)tes_get(w, e[i], k.sparse), sparse[i]);
        tes_entity_t c = TES_NULL;
        (void)tes_children(w, e[i], &c, 1);
        assert_true(c == first_child[i]);
    }
    /* A plain query walks each table's rows in order: depth never drops
     * within a table, and within a depth the spawn order is kept. */
    tes_query_t *plain = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.local}}});
    tes_iter_t it = tes_query_iter(plain);
    while (tes_iter_next(&it)) {
        for (int32_t i = 1; i < it.count; i++) {
            int32_t d0 = tes_depth(w, it.entities[i - 1]), d1 = tes_depth(w, it.entities[i]);
            assert_true(d0 <= d1);
            if (d0 == d1)
                assert_true(tes_entity_index(it.entities[i - 1]) < tes_entity_index(it.entities[i]));
        }
    }
    tes_query_free(plain);
    /* Sorting again changes nothing. */
    const void *where = tes_get(w, e[N - 1], k.local);
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    assert_ptr_equal(tes_get(w, e[N - 1], k.local), where);
    assert_int_equal(tes__world_check(w), 0);
    free(locals);
    free(sparse);
    free(e);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ the walk */

/* After the sort, propagation takes the sorted walk (fields point into the
 * columns) and gives the same values; over several seeds, with every
 * parent in one table (seed 1) or in two. */
static void test_sorted_walk_propagates(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        tes_world_t *w = tes_world_new(NULL);
        comps_t k = register_all(w);
        enum { N = 3000 };
        tes_entity_t *e = make_forest_in(w, &k, N, seed, seed > 1);
        tes_query_t *q = propagation_query(w, &k);
        assert_int_equal(propagate(w, &k, q, false), N);
        check_world(w, &k, e, N);
        for (int i = 0; i < N; i++)
            tes_set(w, e[i], k.world, &(World){-5});
        assert_int_equal(tes_sort_by_depth(w), TES_OK);
        assert_int_equal(propagate(w, &k, q, true), N);
        check_world(w, &k, e, N);
        /* Values written between iterations are read. */
        tes_set(w, e[0], k.local, &(Local){100});
        assert_int_equal(propagate(w, &k, q, true), N);
        check_world(w, &k, e, N);
        assert_true(table_sorted(w, e[0]));
        tes_query_free(q);
        free(e);
        assert_int_equal(tes__world_check(w), 0);
        tes_world_free(w);
    }
}

/* Parent terms over parents in several tables: AND drops entities whose
 * parent lacks the component, NOT keeps only those, OPTIONAL splits the
 * chunks; the sorted walk gives exactly what the unsorted walk (the
 * pointer walk: the self values are plain) gives. */
static void collect(tes_world_t *w, tes_query_t *q, tes_entity_t *out, int32_t *n, float *vals)
{
    (void)w;
    *n = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const Extra *up = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            vals[*n] = up ? (float)up[i].v : -1.0f;
            out[(*n)++] = it.entities[i];
        }
    }
}

static void test_sorted_parent_terms(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w);
    enum { N = 1500 };
    tes_entity_t *e = make_forest(w, &k, N, 3);
    tes_oper_t opers[] = {TES_AND, TES_OPTIONAL, TES_NOT};
    tes_entity_t *before = malloc(N * sizeof *before), *after = malloc(N * sizeof *after);
    float *vb = malloc(N * sizeof *vb), *va = malloc(N * sizeof *va);
    for (int o = 0; o < 3; o++) {
        tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){
                                               .terms = {{k.local, .access = TES_IN},
                                                         {k.extra, .oper = opers[o], .access = TES_IN, .src = TES_SRC_PARENT}},
                                               .flags = TES_QUERY_CASCADE});
        assert_non_null(q);
        int32_t nb = 0, na = 0;
        /* The pointer walk: a link change ends the sorted state. */
        assert_int_equal(tes_set_parent(w, e[N - 1], o % 2 ? TES_NULL : e[0]), TES_OK);
        assert_false(table_sorted(w, e[0]));
        collect(w, q, before, &nb, vb);
        assert_int_equal(last_walk(q), TES__CASCADE_POINTER);
        assert_int_equal(tes_sort_by_depth(w), TES_OK);
        assert_true(table_sorted(w, e[0]));
        collect(w, q, after, &na, va);
        assert_int_equal(last_walk(q), TES__CASCADE_SORTED);
        assert_int_equal(na, nb);
        assert_true(opers[o] == TES_OPTIONAL ? nb == N : nb > 0 && nb < N);
        /* The same matches and values, each depth's entities the same set
         * (the order within a depth may differ: rows moved). */
        for (int32_t i = 0; i < na; i++) {
            int32_t j = 0;
            while (j < nb && before[j] != after[i])
                j++;
            assert_true(j < nb);
            assert_true(va[i] == vb[j]);
            if (opers[o] == TES_NOT)
                assert_true(va[i] == -1.0f);
        }
        tes_query_free(q);
    }
    free(before), free(after), free(vb), free(va), free(e);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* Every change of rows or links ends the sorted state of the tables it
 * touches (and of tables whose parents lie there); the next iteration
 * takes the pointer walk (the propagation query's self values are plain)
 * and is still right, and so are the steady ones after it, which keep its
 * order. A new sort brings the sorted
 * walk back, and its steady iterations allocate nothing. */
static void test_changes_fall_back(void **state)
{
    (void)state;
    ca_state_t ca;
    ca_init(&ca, 0);
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
    comps_t k = register_all(w);
    enum { N = 600 };
    tes_entity_t *e = make_forest(w, &k, N, 11);
    tes_query_t *q = propagation_query(w, &k);
    for (int step = 0; step < 8; step++) {
        assert_int_equal(tes_sort_by_depth(w), TES_OK);
        assert_true(table_sorted(w, e[1]));
        assert_int_equal(propagate(w, &k, q, true), (int32_t)tes_query_count(q));
        check_world(w, &k, e, N);
        uint64_t calls = ca.calls;
        (void)propagate(w, &k, q, true);
        assert_int_equal(ca.calls, calls);
        assert_int_equal(last_walk(q), TES__CASCADE_SORTED);
        tes_entity_t x = e[50 + step];
        switch (step) {
        case 0: /* rows swapped, counts as before */
            assert_int_equal(tes_add(w, x, k.extra), TES_OK);
            assert_int_equal(tes_remove(w, x, k.extra), TES_OK);
            break;
        case 1: assert_int_equal(tes_set_parent(w, x, e[3]), TES_OK); break;
        case 2: assert_int_equal(tes_destroy(w, e[N - 1 - step]), TES_OK); break;
        case 3: {
            tes_entity_t y = tes_spawn(w);
            tes_set(w, y, k.world, &(World){0});
            tes_set(w, y, k.local, &(Local){2});
            break;
        }
        case 4: assert_int_equal(tes_disable(w, x), TES_OK); break;
        case 5: assert_int_equal(tes_enable(w, e[50 + 4]), TES_OK); break;
        case 6: assert_int_equal(tes_clear(w, x), TES_OK); break;
        default: assert_int_equal(tes_add(w, e[0], k.extra), TES_OK); break;
        }
        (void)propagate(w, &k, q, false);
        assert_int_equal(last_walk(q), TES__CASCADE_POINTER);
        check_world(w, &k, e, N);
        (void)propagate(w, &k, q, false);
        check_world(w, &k, e, N);
        assert_int_equal(tes__world_check(w), 0);
    }
    /* A parent without table components: its children's table is not
     * walked sorted (such a parent's moves leave no trace in a table). */
    tes_entity_t bare = tes_spawn(w), kid = tes_spawn(w);
    tes_set(w, kid, k.world, &(World){0});
    tes_set(w, kid, k.local, &(Local){1});
    assert_int_equal(tes_set_parent(w, kid, bare), TES_OK);
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    assert_false(table_sorted(w, kid));
    tes_set(w, bare, k.world, &(World){40});
    (void)propagate(w, &k, q, false);
    assert_true(((const World *)tes_get(w, kid, k.world))->x == 41.0f);
    tes_query_free(q);
    free(e);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
    assert_int_equal(ca.live_blocks, 0);
}

/* ------------------------------------------------------------------ stamps and hooks */

typedef struct Tracked {
    float x;
} Tracked;

/* Stamps follow their values: a change filter sees exactly the values
 * written since its last iteration, wherever the sort moved them. Chunks
 * of the sorted walk written through a tracked term are stamped. */
static void test_sort_keeps_stamps(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w);
    tes_comp_t tr = tes_component(w, &(tes_component_desc_t){.name = "Tracked", .size = sizeof(Tracked), .track_changes = true});
    enum { N = 500 };
    tes_entity_t *e = make_forest(w, &k, N, 5);
    for (int i = 0; i < N; i++)
        tes_set(w, e[i], tr, &(Tracked){(float)i});
    tes_query_t *changed = tes_query_new(w, &(tes_query_desc_t){.terms = {{tr, .access = TES_IN, .change = TES_CHANGE_CHANGED}}});
    assert_int_equal(tes_query_count(changed), N);
    tes_iter_t it = tes_query_iter(changed);
    while (tes_iter_next(&it))
        ;
    /* Written after the filter's last look, before the sort. */
    for (int i = 0; i < N; i += 7)
        tes_set(w, e[i], tr, &(Tracked){-1});
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    int32_t seen = 0;
    it = tes_query_iter(changed);
    while (tes_iter_next(&it)) {
        const Tracked *v = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++) {
            assert_true(v[i].x == -1.0f);
            seen++;
        }
    }
    assert_int_equal(seen, (N + 6) / 7);
    /* A by-depth writer over the sorted tables stamps what it hands out. */
    tes_query_t *writer = tes_query_new(w, &(tes_query_desc_t){
                                               .terms = {{tr, .access = TES_INOUT},
                                                         {tr, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}},
                                               .flags = TES_QUERY_CASCADE});
    int32_t written = 0;
    it = tes_query_iter(writer);
    while (tes_iter_next(&it)) {
        Tracked *v = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            assert_ptr_equal(v + i, tes_get(w, it.entities[i], tr));
        written += it.count;
    }
    assert_int_equal(written, N);
    assert_int_equal(tes_query_count(changed), N);
    tes_query_free(writer);
    tes_query_free(changed);
    free(e);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* A value that points at itself: its move hook must run when its row
 * moves, and nothing else (no ctor, dtor, copy, on_add, on_remove). */
typedef struct Selfish {
    struct Selfish *self;
    int32_t v;
} Selfish;

static int hook_calls[4]; /* move, ctor/dtor/copy, on_add/on_remove, sort refused inside */

static void selfish_move(void *dst, void *src, int32_t n, void *ctx)
{
    (void)ctx;
    Selfish *d = dst, *s = src;
    for (int32_t i = 0; i < n; i++) {
        d[i] = s[i];
        d[i].self = &d[i];
    }
    hook_calls[0] += n;
}
static void selfish_ctor(void *p, int32_t n, void *ctx)
{
    (void)ctx;
    Selfish *s = p;
    for (int32_t i = 0; i < n; i++)
        s[i] = (Selfish){&s[i], 0};
}
static void selfish_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    hook_calls[2]++;
    /* Rows may not move under a hook. */
    if (tes_sort_by_depth(w) == TES_ERR_BUSY)
        hook_calls[3]++;
}

static void test_sort_runs_move_hooks_only(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w);
    tes_comp_t sf = tes_component(w, &(tes_component_desc_t){
                                         .name = "Selfish", .size = sizeof(Selfish), .align = _Alignof(Selfish),
                                         .hooks = {.move = selfish_move, .ctor = selfish_ctor, .on_add = selfish_on_add}});
    enum { N = 300 };
    tes_entity_t *e = make_forest(w, &k, N, 9);
    for (int i = 0; i < N; i++) {
        assert_int_equal(tes_add(w, e[i], sf), TES_OK);
        ((Selfish *)tes_get_mut(w, e[i], sf))->v = i;
    }
    assert_int_equal(hook_calls[3], N);
    int adds = hook_calls[2];
    hook_calls[0] = 0;
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    assert_true(hook_calls[0] > 0);
    assert_int_equal(hook_calls[2], adds);
    for (int i = 0; i < N; i++) {
        const Selfish *s = tes_get(w, e[i], sf);
        assert_ptr_equal(s->self, s);
        assert_int_equal(s->v, i);
    }
    free(e);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ refusals */

static void test_sort_refusals(void **state)
{
    (void)state;
    assert_int_equal(tes_sort_by_depth(NULL), TES_ERR_INVALID);
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w);
    enum { N = 200 };
    tes_entity_t *e = make_forest(w, &k, N, 2);
    const void *where = tes_get(w, e[N - 1], k.local);
    tes_query_t *q = propagation_query(w, &k);
    /* An open iterator. */
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    assert_int_equal(tes_sort_by_depth(w), TES_ERR_BUSY);
    assert_non_null(strstr(tes_last_error_detail(w), "tes_sort_by_depth"));
    assert_non_null(strstr(tes_last_error_detail(w), "deferred"));
    tes_iter_fini(&it);
    /* A deferred block. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_sort_by_depth(w), TES_ERR_BUSY);
    assert_non_null(strstr(tes_last_error_detail(w), "tes_defer_begin"));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_ptr_equal(tes_get(w, e[N - 1], k.local), where); /* nothing moved */
    assert_false(table_sorted(w, e[0]));
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    tes_query_free(q);
    free(e);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* Every allocation of the sort failing in turn: TES_ERR_NOMEM with a
 * detail, nothing moved (every value where it was), nothing leaked. */
static void test_sort_allocation_failures(void **state)
{
    (void)state;
    for (uint64_t fail = 1;; fail++) {
        ca_state_t ca;
        ca_init(&ca, 0);
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
        comps_t k = register_all(w);
        enum { N = 300 };
        tes_entity_t *e = make_forest(w, &k, N, 4);
        const void **where = malloc(N * sizeof *where);
        for (int i = 0; i < N; i++)
            where[i] = tes_get(w, e[i], k.local);
        ca_fail_in(&ca, fail);
        int rc = tes_sort_by_depth(w);
        ca_fail_in(&ca, 0);
        bool failed = ca.failures != 0;
        if (failed) {
            assert_int_equal(rc, TES_ERR_NOMEM);
            assert_non_null(strstr(tes_last_error_detail(w), "nothing was moved"));
            for (int i = 0; i < N; i++)
                assert_ptr_equal(tes_get(w, e[i], k.local), where[i]);
            assert_false(table_sorted(w, e[0]));
        } else {
            assert_int_equal(rc, TES_OK);
            assert_true(table_sorted(w, e[0]));
        }
        assert_int_equal(tes__world_check(w), 0);
        free(where);
        free(e);
        tes_world_free(w);
        assert_int_equal(ca.live_blocks, 0);
        assert_int_equal(ca.live_bytes, 0);
        if (!failed)
            break;
        assert_true(fail < 100);
    }
}

/* An owning group over sparse components of linked entities: the sort
 * leaves its stores alone and the group keeps answering. */
static void test_sort_with_owning_group(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    comps_t k = register_all(w);
    tes_comp_t s2 = tes_component(w, &(tes_component_desc_t){.name = "S2", .size = 4, .storage = TES_STORAGE_SPARSE});
    enum { N = 400 };
    tes_entity_t *e = make_forest(w, &k, N, 6);
    for (int i = 0; i < N; i += 2)
        tes_set(w, e[i], s2, &(int32_t){i});
    tes_query_t *g = tes_query_new(w, &(tes_query_desc_t){.terms = {{k.sparse}, {s2}}, .flags = TES_QUERY_OWNING_GROUP});
    assert_non_null(g);
    int32_t before = tes_query_count(g);
    assert_int_equal(tes_sort_by_depth(w), TES_OK);
    assert_int_equal(tes_query_count(g), before);
    tes_iter_t it = tes_query_iter(g);
    while (tes_iter_next(&it)) {
        const int32_t *a = tes_field(&it, 0), *b = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++)
            assert_int_equal(a[i], 3 * b[i]); /* make_forest's sparse value is i * 3 */
    }
    tes_query_free(g);
    free(e);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_orders_rows),
        cmocka_unit_test(test_sorted_walk_propagates),
        cmocka_unit_test(test_sorted_parent_terms),
        cmocka_unit_test(test_changes_fall_back),
        cmocka_unit_test(test_sort_keeps_stamps),
        cmocka_unit_test(test_sort_runs_move_hooks_only),
        cmocka_unit_test(test_sort_refusals),
        cmocka_unit_test(test_sort_allocation_failures),
        cmocka_unit_test(test_sort_with_owning_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
