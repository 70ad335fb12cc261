/*
 * Deferred changes: the command queue behind tes_defer_begin / tes_defer_end
 * and behind every live query iterator.
 *
 * - Inside iteration and inside explicit blocks, spawn, spawn_n, destroy,
 *   add, set, ensure, remove, clear, clone, disable and enable are queued
 *   and applied in call order at the end: destroying (or removing the
 *   driving component from) every entity while iterating visits each once
 *   and leaves none; entities that start matching during an iteration are
 *   seen by the next one; spawned handles are alive at once, empty until
 *   the flush and hidden from NOT-only queries until then.
 * - Ordering pairs in one block (set/remove, remove/set, add/remove,
 *   clear/set, set/clear, disable/enable, add/clone, clone/destroy, ...);
 *   operations on entities that die before the flush are dropped without an
 *   error; tes_ensure returns a staged value (the same one when repeated)
 *   whose writes appear at the flush, and follows the queue; reads see the
 *   pre-flush state; validation happens at queue time.
 * - Nesting: tes_defer_begin levels, iterators inside blocks and blocks
 *   inside iterators, nested iterators, early exit with tes_iter_fini; the
 *   flush happens at the outermost end only; tes_defer_end without a level
 *   is TES_ERR_INVALID.
 * - Hooks: ctor/dtor/copy balanced, on_add/on_set/on_remove fired as often
 *   as in immediate mode (a random differential runs the same operations on
 *   an immediate world and a deferred one and compares entities, values
 *   and hook counts after every batch); groups are updated at the flush;
 *   tes_world_free with a non-empty queue destroys staged values and leaks
 *   nothing.
 *
 * Queries and groups themselves are tested in test_query.c.
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

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

#include "unit/tracker.h"

/* ------------------------------------------------------------------------ */
/* Fixture                                                                   */
/* ------------------------------------------------------------------------ */

enum { K_TA, K_TB, K_TT, K_SA, K_SB, K_ST, K_SG, K_COUNT };

static const struct {
    const char *name;
    size_t size;
    tes_storage_t storage;
    bool stable;
} kinds[K_COUNT] = {
    {"TA", 16, TES_STORAGE_TABLE, false},  /* table data */
    {"TB", 24, TES_STORAGE_TABLE, false},  /* table data */
    {"TT", 0, TES_STORAGE_TABLE, false},   /* table tag */
    {"SA", 16, TES_STORAGE_SPARSE, false}, /* sparse data */
    {"SB", 24, TES_STORAGE_SPARSE, false}, /* sparse data */
    {"ST", 16, TES_STORAGE_SPARSE, true},  /* stable sparse data */
    {"SG", 0, TES_STORAGE_SPARSE, false},  /* sparse tag */
};

typedef struct dw_t {
    tes_world_t *w;
    tes_comp_t id[K_COUNT];
    comp_ctx_t ctx[K_COUNT];
    counters_t n;
} dw_t;

static void dw_init(dw_t *d)
{
    memset(d, 0, sizeof *d);
    d->w = tes_world_new(NULL);
    assert_non_null(d->w);
    for (int k = 0; k < K_COUNT; k++)
        d->id[k] = register_tracked(d->w, &d->ctx[k], &d->n, kinds[k].name, kinds[k].size,
                                    kinds[k].storage, kinds[k].stable);
}

/* Worlds alive in the running test (on the heap, as their hooks write
 * into them until tes_world_free returns): a failed assertion leaves the
 * test early, and the teardown frees what it left behind. */
static dw_t *live_dw[8];

static dw_t *dw_new(void)
{
    dw_t *d = malloc(sizeof *d);
    assert_non_null(d);
    dw_init(d);
    int slot = 0;
    while (slot < 8 && live_dw[slot])
        slot++;
    assert_true(slot < 8);
    live_dw[slot] = d;
    return d;
}

static void dw_release(dw_t *d)
{
    for (int i = 0; i < 8; i++)
        if (live_dw[i] == d)
            live_dw[i] = NULL;
    if (d->w)
        tes_world_free(d->w);
    free(d);
}

/* Frees the world; every value it ever held was destroyed exactly once. */
static void dw_fini(dw_t *d)
{
    tes_world_free(d->w);
    d->w = NULL;
    counters_t n = d->n;
    dw_release(d);
    assert_int_equal(n.bad, 0);
    assert_int_equal(n.bad_ptr, 0);
    assert_int_equal(n.ctor, n.dtor);
}

static int64_t live_values(const dw_t *d) { return d->n.ctor - d->n.dtor; }

static tes_entity_t spawn(dw_t *d)
{
    tes_entity_t e = tes_spawn(d->w);
    assert_true(e != TES_NULL);
    return e;
}

/* tes_set of kind k with a stamp (tags ignore it). Returns the status. */
static int set_v(dw_t *d, tes_entity_t e, int k, uint64_t stamp)
{
    if (!kinds[k].size)
        return tes_set(d->w, e, d->id[k], NULL);
    uint8_t buf[64] = {0};
    val_t v = {LIVE, d->id[k], stamp};
    memcpy(buf, &v, sizeof v);
    return tes_set(d->w, e, d->id[k], buf);
}

static void set_ok(dw_t *d, tes_entity_t e, int k, uint64_t stamp)
{
    assert_int_equal(set_v(d, e, k, stamp), TES_OK);
}

static bool has(const dw_t *d, tes_entity_t e, int k) { return tes_has(d->w, e, d->id[k]); }

/* The stamp of e's k (0 for a constructed value); e must have it. */
static uint64_t stamp_of(const dw_t *d, tes_entity_t e, int k)
{
    const val_t *v = tes_get(d->w, e, d->id[k]);
    assert_non_null(v);
    assert_int_equal(v->magic, LIVE);
    if (v->stamp)
        assert_int_equal(v->comp, d->id[k]);
    return v->stamp;
}

static int32_t ncomps(const dw_t *d, tes_entity_t e)
{
    return tes_components_of(d->w, e, NULL, 0);
}

static void desc_add(tes_query_desc_t *q, tes_comp_t c, tes_oper_t oper)
{
    int32_t n = 0;
    while (n < TES_MAX_TERMS && q->terms[n].comp)
        n++;
    assert_true(n < TES_MAX_TERMS);
    q->terms[n] = (tes_term_t){.comp = c, .oper = oper, .access = TES_INOUT};
}

static tes_query_t *query1(dw_t *d, tes_comp_t c, tes_oper_t oper, uint32_t flags)
{
    tes_query_desc_t qd = {.flags = flags};
    desc_add(&qd, c, oper);
    tes_query_t *q = tes_query_new(d->w, &qd);
    assert_non_null(q);
    return q;
}

static tes_query_t *query2(dw_t *d, tes_comp_t c1, tes_oper_t o1, tes_comp_t c2, tes_oper_t o2,
                           uint32_t flags)
{
    tes_query_desc_t qd = {.flags = flags};
    desc_add(&qd, c1, o1);
    desc_add(&qd, c2, o2);
    tes_query_t *q = tes_query_new(d->w, &qd);
    assert_non_null(q);
    return q;
}

/* Seen-once bookkeeping by entity index. */
typedef struct seen_t {
    uint8_t mark[4096];
    int32_t count;
} seen_t;

static void see(seen_t *s, const dw_t *d, tes_entity_t e)
{
    assert_true(tes_alive(d->w, e));
    uint32_t idx = tes_entity_index(e);
    assert_true(idx < sizeof s->mark);
    if (s->mark[idx])
        fail_msg("entity %llx visited twice", (unsigned long long)e);
    s->mark[idx] = 1;
    s->count++;
}

/* ------------------------------------------------------------------------ */
/* Changes while iterating                                                   */
/* ------------------------------------------------------------------------ */

/* Destroying every entity while iterating: the loop sees every entity
 * exactly once (alive until the loop ends), and none survives it. Table,
 * driven and NOT-only walks. */
static void test_defer_destroy_all_while_iterating(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t a[100], b[60], c[40];
    for (int i = 0; i < 100; i++) {
        a[i] = spawn(d);
        set_ok(d, a[i], K_TA, (uint64_t)i + 1);
        if (i % 2)
            set_ok(d, a[i], K_SA, (uint64_t)i + 1);
        if (i % 3 == 0)
            set_ok(d, a[i], K_TT, 0);
    }
    for (int i = 0; i < 60; i++) {
        b[i] = spawn(d);
        set_ok(d, b[i], K_SA, 500);
        if (i % 3 == 0)
            set_ok(d, b[i], K_SG, 0);
        if (i % 4 == 0)
            set_ok(d, b[i], K_ST, 600);
    }
    for (int i = 0; i < 40; i++)
        c[i] = spawn(d);

    tes_query_t *qt = query1(d, d->id[K_TA], TES_AND, 0);
    seen_t seen_buf;
    seen_t *s = &seen_buf;
    memset(s, 0, sizeof *s);
    tes_iter_t it = tes_query_iter(qt);
    while (tes_iter_next(&it)) {
        assert_true(tes_is_deferred(w));
        const val_t *f = tes_field(&it, 0);
        for (int32_t k = 0; k < it.count; k++) {
            see(s, d, it.entities[k]);
            assert_int_equal(f[k].magic, LIVE);
            assert_int_equal(tes_destroy(w, it.entities[k]), TES_OK);
            if (k % 2)
                assert_int_equal(tes_destroy(w, it.entities[k]), TES_OK); /* twice */
            assert_true(tes_alive(w, it.entities[k]));
        }
    }
    assert_false(tes_is_deferred(w));
    assert_int_equal(s->count, 100);
    for (int i = 0; i < 100; i++)
        assert_false(tes_alive(w, a[i]));
    assert_int_equal(tes_entity_count(w), 100);
    assert_int_equal(tes_query_count(qt), 0);
    check(w);

    /* Driven by a sparse store that every destroy shrinks (swap-pop). */
    tes_query_t *qs = query1(d, d->id[K_SA], TES_AND, 0);
    memset(s, 0, sizeof *s);
    it = tes_query_iter(qs);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++) {
            see(s, d, it.entities[k]);
            assert_int_equal(tes_destroy(w, it.entities[k]), TES_OK);
        }
    assert_int_equal(s->count, 60);
    for (int i = 0; i < 60; i++)
        assert_false(tes_alive(w, b[i]));
    assert_int_equal(tes_entity_count(w), 40);
    check(w);

    /* NOT-only: entities with no component at all. */
    tes_query_t *qn = query1(d, d->id[K_TT], TES_NOT, 0);
    memset(s, 0, sizeof *s);
    it = tes_query_iter(qn);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++) {
            see(s, d, it.entities[k]);
            assert_int_equal(tes_destroy(w, it.entities[k]), TES_OK);
        }
    assert_int_equal(s->count, 40);
    for (int i = 0; i < 40; i++)
        assert_false(tes_alive(w, c[i]));
    assert_int_equal(tes_entity_count(w), 0);
    assert_int_equal(live_values(d), 0);
    assert_int_equal(d->n.on_add, d->n.on_remove);
    check(w);
    tes_query_free(qt);
    tes_query_free(qs);
    tes_query_free(qn);
    dw_fini(d);
}

/* Removing the component that drives (or decides) the walk from every
 * entity while iterating: nothing is skipped, nothing seen twice. Driven,
 * table, non-owning and owning group walks. */
static void test_defer_remove_driver_while_iterating(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e[150];
    for (int i = 0; i < 150; i++) {
        e[i] = spawn(d);
        set_ok(d, e[i], K_SA, (uint64_t)i + 1);
        set_ok(d, e[i], K_SB, (uint64_t)i + 1000);
        if (i % 2)
            set_ok(d, e[i], K_TA, (uint64_t)i + 2000);
    }
    tes_query_t *owning = query2(d, d->id[K_SB], TES_AND, d->id[K_SA], TES_AND,
                                 TES_QUERY_OWNING_GROUP);
    tes_query_t *nonowning = query1(d, d->id[K_SA], TES_AND, TES_QUERY_NONOWNING_GROUP);
    seen_t seen_buf;
    seen_t *s = &seen_buf;
    memset(s, 0, sizeof *s);
    struct {
        tes_query_t *q;
        int k;
        int32_t want;
    } cases[] = {
        {query1(d, d->id[K_TA], TES_AND, 0), K_TA, 75},
        {owning, K_SB, 150},
        {nonowning, K_SA, 150},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memset(s, 0, sizeof *s);
        tes_iter_t it = tes_query_iter(cases[c].q);
        while (tes_iter_next(&it))
            for (int32_t k = 0; k < it.count; k++) {
                see(s, d, it.entities[k]);
                assert_int_equal(tes_remove(w, it.entities[k], d->id[cases[c].k]), TES_OK);
                assert_true(has(d, it.entities[k], cases[c].k));
            }
        assert_int_equal(s->count, cases[c].want);
        assert_int_equal(tes_query_count(cases[c].q), 0);
        for (int i = 0; i < 150; i++)
            assert_false(has(d, e[i], cases[c].k));
        check(w);
    }
    /* The values that stayed are intact. */
    for (int i = 0; i < 150; i++) {
        assert_false(has(d, e[i], K_SB));
        assert_false(has(d, e[i], K_SA));
    }
    tes_query_free(cases[0].q);
    tes_query_free(owning);
    tes_query_free(nonowning);
    assert_int_equal(live_values(d), 0);
    check(w);
    dw_fini(d);
}

/* Adding what makes an entity match while iterating: not seen in this
 * iteration, seen in the next; an entity made to stop matching is still
 * seen once in this one. */
static void test_defer_add_matches_next_iteration(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t old[50], fresh[50];
    for (int i = 0; i < 50; i++) {
        old[i] = spawn(d);
        set_ok(d, old[i], K_TA, 1);
        set_ok(d, old[i], K_SA, 1);
        fresh[i] = spawn(d);
    }
    struct {
        tes_query_t *q;
        int k;
    } cases[] = {
        {query1(d, d->id[K_TA], TES_AND, 0), K_TA},
        {query1(d, d->id[K_SA], TES_AND, 0), K_SA},
        {query2(d, d->id[K_SA], TES_AND, d->id[K_TB], TES_OPTIONAL, TES_QUERY_NONOWNING_GROUP),
         K_SA},
    };
    for (int c = 0; c < 3; c++) {
        int32_t before = tes_query_count(cases[c].q);
        int32_t seen = 0, j = 0;
        tes_iter_t it = tes_query_iter(cases[c].q);
        while (tes_iter_next(&it))
            for (int32_t k = 0; k < it.count; k++) {
                seen++;
                /* make one more entity match (a fresh one, or a new one) */
                tes_entity_t t = j < 50 && !has(d, fresh[j], cases[c].k) ? fresh[j++] : spawn(d);
                set_ok(d, t, cases[c].k, 7);
                assert_false(has(d, t, cases[c].k));
            }
        assert_int_equal(seen, before);
        assert_int_equal(tes_query_count(cases[c].q), 2 * before);
        check(w);
    }
    /* Stop matching: every entity still seen exactly once. */
    tes_query_t *q = query2(d, d->id[K_TA], TES_AND, d->id[K_TT], TES_NOT, 0);
    int32_t before = tes_query_count(q), seen = 0;
    assert_true(before > 0);
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++) {
            seen++;
            assert_int_equal(tes_add(w, it.entities[k], d->id[K_TT]), TES_OK);
        }
    assert_int_equal(seen, before);
    assert_int_equal(tes_query_count(q), 0);
    tes_query_free(q);
    for (int c = 0; c < 3; c++)
        tes_query_free(cases[c].q);
    check(w);
    dw_fini(d);
}

/* tes_spawn / tes_spawn_n / tes_clone while deferred: alive at once, with
 * no components until the flush, hidden from NOT-only queries until then;
 * the root walk never sees what the loop spawns. */
static void test_defer_spawn(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    for (int i = 0; i < 10; i++)
        spawn(d);
    tes_entity_t src = spawn(d);
    set_ok(d, src, K_TB, 31);
    set_ok(d, src, K_ST, 32);
    tes_query_t *qnot = query1(d, d->id[K_TT], TES_NOT, 0);
    tes_query_t *qsa = query2(d, d->id[K_SG], TES_NOT, d->id[K_SA], TES_OPTIONAL, 0);
    assert_int_equal(tes_query_count(qnot), 11);
    counters_t n0 = d->n;

    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t e = tes_spawn(w);
    assert_true(e != TES_NULL);
    assert_true(tes_alive(w, e));
    assert_true(tes_enabled(w, e));
    assert_int_equal(ncomps(d, e), 0);
    assert_int_equal(tes_entity_count(w), 12);
    assert_int_equal(tes_query_count(qnot), 11);
    assert_int_equal(tes_query_count(qsa), 11);
    tes_iter_t it = tes_query_iter(qnot);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++)
            assert_true(it.entities[k] != e);
    assert_int_equal(tes_add(w, e, d->id[K_TA]), TES_OK);
    set_ok(d, e, K_SA, 41);
    assert_false(has(d, e, K_TA));
    assert_null(tes_get(w, e, d->id[K_SA]));
    tes_entity_t out[5];
    tes_comp_t comps[] = {d->id[K_SG], d->id[K_TA], d->id[K_SA]};
    assert_int_equal(tes_spawn_n(w, 5, comps, 3, out), TES_OK);
    for (int i = 0; i < 5; i++) {
        assert_true(tes_alive(w, out[i]));
        assert_int_equal(ncomps(d, out[i]), 0);
    }
    tes_entity_t bare[3];
    assert_int_equal(tes_spawn_n(w, 3, NULL, 0, bare), TES_OK);
    assert_int_equal(tes_spawn_n(w, 0, comps, 3, NULL), TES_OK);
    tes_entity_t copy = tes_clone(w, src);
    assert_true(tes_alive(w, copy));
    assert_int_equal(ncomps(d, copy), 0);
    tes_entity_t copy_of_new = tes_clone(w, e); /* a pending source */
    assert_true(tes_alive(w, copy_of_new));
    assert_int_equal(tes_entity_count(w), 12 + 5 + 3 + 2);
    assert_int_equal(tes_query_count(qnot), 11);
    assert_int_equal(d->n.on_add, n0.on_add);
    check(w);
    assert_int_equal(tes_defer_end(w), TES_OK);

    assert_int_equal(stamp_of(d, e, K_SA), 41);
    assert_true(has(d, e, K_TA));
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ncomps(d, out[i]), 3);
        assert_int_equal(stamp_of(d, out[i], K_SA), 0);
        assert_int_equal(stamp_of(d, out[i], K_TA), 0);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(ncomps(d, bare[i]), 0);
    assert_int_equal(stamp_of(d, copy, K_TB), 31);
    assert_int_equal(stamp_of(d, copy, K_ST), 32);
    assert_int_equal(stamp_of(d, copy_of_new, K_SA), 41);
    assert_true(has(d, copy_of_new, K_TA));
    /* on_add: e (TA, SA), five entities of three, two clones of two. */
    assert_int_equal(d->n.on_add - n0.on_add, 2 + 15 + 2 + 2);
    assert_int_equal(tes_query_count(qnot), 11 + 1 + 5 + 3 + 2);
    assert_int_equal(tes_query_count(qsa), 11 + 1 + 3 + 2);
    check(w);

    /* Spawning from inside a NOT-only walk terminates: the new entities are
     * not visited, and appear afterwards. */
    int32_t before = tes_query_count(qnot), seen = 0;
    it = tes_query_iter(qnot);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++) {
            seen++;
            tes_entity_t t = tes_spawn(w);
            assert_true(t != TES_NULL);
            if (k % 2)
                set_ok(d, t, K_SA, 5);
        }
    assert_int_equal(seen, before);
    assert_int_equal(tes_query_count(qnot), 2 * before);
    check(w);
    tes_query_free(qnot);
    tes_query_free(qsa);
    dw_fini(d);
}

/* ------------------------------------------------------------------------ */
/* Order and reads                                                           */
/* ------------------------------------------------------------------------ */

/* Pairs of operations on one entity in one block end as they would in
 * immediate mode, applied in call order. */
static void test_defer_order_pairs(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e[14];
    for (int i = 0; i < 14; i++)
        e[i] = spawn(d);
    set_ok(d, e[1], K_TA, 10);
    set_ok(d, e[1], K_SA, 10);
    set_ok(d, e[4], K_TA, 40);
    set_ok(d, e[4], K_SA, 41);
    assert_int_equal(tes_disable(w, e[7]), TES_OK);
    set_ok(d, e[8], K_TA, 80);
    set_ok(d, e[10], K_SA, 100);
    set_ok(d, e[11], K_ST, 110);
    set_ok(d, e[12], K_SB, 120);

    assert_int_equal(tes_defer_begin(w), TES_OK);
    /* 0: set then remove */
    set_ok(d, e[0], K_SA, 1);
    assert_int_equal(tes_remove(w, e[0], d->id[K_SA]), TES_OK);
    set_ok(d, e[0], K_TB, 2);
    assert_int_equal(tes_remove(w, e[0], d->id[K_TB]), TES_OK);
    /* 1: remove then set */
    assert_int_equal(tes_remove(w, e[1], d->id[K_TA]), TES_OK);
    set_ok(d, e[1], K_TA, 11);
    assert_int_equal(tes_remove(w, e[1], d->id[K_SA]), TES_OK);
    set_ok(d, e[1], K_SA, 12);
    /* 2: set twice: the last wins */
    set_ok(d, e[2], K_ST, 21);
    set_ok(d, e[2], K_ST, 22);
    set_ok(d, e[2], K_TB, 23);
    set_ok(d, e[2], K_TB, 24);
    /* 3: add then remove, tags */
    assert_int_equal(tes_add(w, e[3], d->id[K_TT]), TES_OK);
    assert_int_equal(tes_remove(w, e[3], d->id[K_TT]), TES_OK);
    assert_int_equal(tes_add(w, e[3], d->id[K_SG]), TES_OK);
    assert_int_equal(tes_remove(w, e[3], d->id[K_SG]), TES_OK);
    assert_int_equal(tes_add(w, e[3], d->id[K_SG]), TES_OK);
    /* 4: clear then set */
    assert_int_equal(tes_clear(w, e[4]), TES_OK);
    set_ok(d, e[4], K_SB, 42);
    /* 5: set then clear */
    set_ok(d, e[5], K_SA, 50);
    set_ok(d, e[5], K_TA, 51);
    assert_int_equal(tes_clear(w, e[5]), TES_OK);
    /* 6: disable then enable; 7 (disabled): enable then disable */
    assert_int_equal(tes_disable(w, e[6]), TES_OK);
    assert_int_equal(tes_enable(w, e[6]), TES_OK);
    assert_int_equal(tes_enable(w, e[7]), TES_OK);
    assert_int_equal(tes_disable(w, e[7]), TES_OK);
    assert_true(tes_enabled(w, e[6]));
    assert_false(tes_enabled(w, e[7]));
    /* 8: clone before and after a change; the source changes again after */
    tes_entity_t c1 = tes_clone(w, e[8]);
    set_ok(d, e[8], K_SA, 81);
    tes_entity_t c2 = tes_clone(w, e[8]);
    assert_int_equal(tes_remove(w, e[8], d->id[K_TA]), TES_OK);
    tes_entity_t c3 = tes_clone(w, e[8]);
    /* 9: remove of a missing component, then add */
    assert_int_equal(tes_remove(w, e[9], d->id[K_SA]), TES_OK);
    assert_int_equal(tes_add(w, e[9], d->id[K_SA]), TES_OK);
    /* 10: add of a present component (no-op), then remove */
    assert_int_equal(tes_add(w, e[10], d->id[K_SA]), TES_OK);
    assert_int_equal(tes_remove(w, e[10], d->id[K_SA]), TES_OK);
    /* 11: stable: remove then set gives a new value */
    assert_int_equal(tes_remove(w, e[11], d->id[K_ST]), TES_OK);
    set_ok(d, e[11], K_ST, 111);
    /* 12: clone, then destroy the source: the copy is taken first */
    tes_entity_t c4 = tes_clone(w, e[12]);
    assert_int_equal(tes_destroy(w, e[12]), TES_OK);
    /* 13: destroy, then clone: the copy stays empty */
    assert_int_equal(tes_destroy(w, e[13]), TES_OK);
    tes_entity_t c5 = tes_clone(w, e[13]);
    assert_true(c5 != TES_NULL);

    /* Nothing has happened yet. */
    assert_false(has(d, e[0], K_SA));
    assert_int_equal(stamp_of(d, e[1], K_TA), 10);
    assert_int_equal(stamp_of(d, e[1], K_SA), 10);
    assert_int_equal(stamp_of(d, e[4], K_SA), 41);
    assert_false(has(d, e[3], K_SG));
    assert_true(tes_alive(w, e[12]));
    assert_int_equal(ncomps(d, c1), 0);
    assert_int_equal(tes_defer_end(w), TES_OK);

    assert_int_equal(ncomps(d, e[0]), 0);
    assert_int_equal(ncomps(d, e[1]), 2);
    assert_int_equal(stamp_of(d, e[1], K_TA), 11);
    assert_int_equal(stamp_of(d, e[1], K_SA), 12);
    assert_int_equal(stamp_of(d, e[2], K_ST), 22);
    assert_int_equal(stamp_of(d, e[2], K_TB), 24);
    assert_int_equal(ncomps(d, e[3]), 1);
    assert_true(has(d, e[3], K_SG));
    assert_int_equal(ncomps(d, e[4]), 1);
    assert_int_equal(stamp_of(d, e[4], K_SB), 42);
    assert_int_equal(ncomps(d, e[5]), 0);
    assert_true(tes_enabled(w, e[6]));
    assert_false(tes_enabled(w, e[7]));
    assert_int_equal(ncomps(d, c1), 1);
    assert_int_equal(stamp_of(d, c1, K_TA), 80);
    assert_int_equal(ncomps(d, c2), 2);
    assert_int_equal(stamp_of(d, c2, K_TA), 80);
    assert_int_equal(stamp_of(d, c2, K_SA), 81);
    assert_int_equal(ncomps(d, c3), 1);
    assert_int_equal(stamp_of(d, c3, K_SA), 81);
    assert_int_equal(ncomps(d, e[8]), 1);
    assert_int_equal(stamp_of(d, e[9], K_SA), 0);
    assert_false(has(d, e[10], K_SA));
    assert_int_equal(stamp_of(d, e[11], K_ST), 111);
    assert_false(tes_alive(w, e[12]));
    assert_int_equal(stamp_of(d, c4, K_SB), 120);
    assert_false(tes_alive(w, e[13]));
    assert_true(tes_alive(w, c5));
    assert_int_equal(ncomps(d, c5), 0);
    assert_int_equal(d->n.bad, 0);
    assert_int_equal(d->n.bad_ptr, 0);
    check(w);
    dw_fini(d);
}

/* Reads during deferral see the state before the queued changes. */
static void test_defer_reads_pre_flush(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e = spawn(d), x = spawn(d);
    set_ok(d, e, K_TA, 1);
    set_ok(d, e, K_SA, 1);
    set_ok(d, e, K_ST, 1);
    set_ok(d, x, K_SB, 9);
    const void *pta = tes_get(w, e, d->id[K_TA]), *pst = tes_get(w, e, d->id[K_ST]);
    tes_query_t *q = query1(d, d->id[K_SA], TES_AND, 0);

    assert_int_equal(tes_defer_begin(w), TES_OK);
    set_ok(d, e, K_TA, 2);
    set_ok(d, e, K_SA, 2);
    set_ok(d, e, K_ST, 2);
    assert_ptr_equal(tes_get(w, e, d->id[K_TA]), pta);
    assert_ptr_equal(tes_get(w, e, d->id[K_ST]), pst);
    assert_int_equal(stamp_of(d, e, K_TA), 1);
    assert_int_equal(stamp_of(d, e, K_SA), 1);
    assert_int_equal(stamp_of(d, e, K_ST), 1);
    assert_int_equal(tes_remove(w, e, d->id[K_SA]), TES_OK);
    assert_true(has(d, e, K_SA));
    assert_int_equal(tes_query_count(q), 1);
    assert_int_equal(tes_add(w, e, d->id[K_TB]), TES_OK);
    assert_false(has(d, e, K_TB));
    assert_null(tes_get(w, e, d->id[K_TB]));
    assert_int_equal(tes_disable(w, e), TES_OK);
    assert_true(tes_enabled(w, e));
    assert_int_equal(tes_destroy(w, x), TES_OK);
    assert_true(tes_alive(w, x));
    assert_int_equal(stamp_of(d, x, K_SB), 9);
    tes_comp_t ids[8];
    assert_int_equal(tes_components_of(w, e, ids, 8), 3);
    assert_int_equal(tes_entity_count(w), 2);
    assert_true(tes_is_deferred(w));
    assert_int_equal(tes_defer_end(w), TES_OK);

    assert_false(tes_is_deferred(w));
    assert_int_equal(stamp_of(d, e, K_TA), 2);
    assert_int_equal(stamp_of(d, e, K_ST), 2);
    assert_ptr_equal(tes_get(w, e, d->id[K_ST]), pst); /* stable: same address */
    assert_false(has(d, e, K_SA));
    assert_int_equal(stamp_of(d, e, K_TB), 0);
    assert_false(tes_enabled(w, e));
    assert_false(tes_alive(w, x));
    assert_int_equal(tes_entity_count(w), 1);
    assert_int_equal(tes_query_count(q), 0);
    tes_query_free(q);
    check(w);
    dw_fini(d);
}

/* ------------------------------------------------------------------------ */
/* Dropped operations and hook balance                                       */
/* ------------------------------------------------------------------------ */

/* Operations queued on an entity that dies before they run are dropped:
 * no error from the flush, no on_add, every constructed value destroyed. */
static void test_defer_ops_on_dead_entities_dropped(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e = spawn(d);
    set_ok(d, e, K_TA, 1);
    set_ok(d, e, K_SA, 2);
    set_ok(d, e, K_ST, 3);
    counters_t n0 = d->n;
    int64_t live0 = live_values(d);

    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, e), TES_OK);
    assert_true(tes_alive(w, e));
    assert_int_equal(tes_add(w, e, d->id[K_TB]), TES_OK);
    assert_int_equal(tes_add(w, e, d->id[K_TT]), TES_OK);
    set_ok(d, e, K_SB, 4);
    set_ok(d, e, K_SG, 0);
    assert_int_equal(tes_remove(w, e, d->id[K_ST]), TES_OK);
    assert_int_equal(tes_clear(w, e), TES_OK);
    assert_int_equal(tes_disable(w, e), TES_OK);
    assert_int_equal(tes_enable(w, e), TES_OK);
    val_t *staged = tes_ensure(w, e, d->id[K_TB]);
    assert_non_null(staged);
    staged->stamp = 5;
    tes_entity_t copy = tes_clone(w, e);
    assert_true(copy != TES_NULL);
    assert_int_equal(tes_destroy(w, e), TES_OK); /* again */
    assert_int_equal(tes_defer_end(w), TES_OK);

    assert_false(tes_alive(w, e));
    assert_true(tes_alive(w, copy));
    assert_int_equal(ncomps(d, copy), 0);
    assert_int_equal(d->n.on_add, n0.on_add);
    assert_int_equal(d->n.on_set, n0.on_set);
    assert_int_equal(d->n.on_remove - n0.on_remove, 3);
    assert_int_equal(live_values(d), live0 - 3);
    assert_int_equal(d->n.bad, 0);
    check(w);

    /* Spawned, filled and destroyed in one block. */
    n0 = d->n;
    live0 = live_values(d);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t s = tes_spawn(w);
    set_ok(d, s, K_TA, 1);
    set_ok(d, s, K_SA, 2);
    set_ok(d, s, K_ST, 3);
    assert_int_equal(tes_add(w, s, d->id[K_SG]), TES_OK);
    assert_int_equal(tes_destroy(w, s), TES_OK);
    set_ok(d, s, K_SB, 4); /* after the destroy: dropped */
    tes_entity_t out[4];
    tes_comp_t comps[] = {d->id[K_TA], d->id[K_ST]};
    assert_int_equal(tes_spawn_n(w, 4, comps, 2, out), TES_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tes_destroy(w, out[i]), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_alive(w, s));
    for (int i = 0; i < 4; i++)
        assert_false(tes_alive(w, out[i]));
    assert_int_equal(d->n.on_add - n0.on_add, 4 + 8);
    assert_int_equal(d->n.on_remove - n0.on_remove, 4 + 8);
    assert_int_equal(d->n.on_set - n0.on_set, 3); /* the three tes_set before the destroy */
    assert_int_equal(live_values(d), live0);
    assert_int_equal(tes_entity_count(w), 1);
    check(w);

    /* An entity destroyed in one block, then a stale handle in the next. */
    tes_entity_t g = spawn(d);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, g), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, g), TES_ERR_STALE);
    assert_int_equal(set_v(d, g, K_SA, 1), TES_ERR_STALE);
    assert_int_equal(tes_defer_end(w), TES_OK);
    check(w);
    dw_fini(d);
}

/* Arguments are validated when the call is made, not at the flush: the
 * same status as immediate mode, and nothing queued. */
static void test_defer_validation_at_queue_time(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e = spawn(d), dead = spawn(d);
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    counters_t n0 = d->n;
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_destroy(w, dead), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_add(w, dead, d->id[K_TA]), TES_ERR_STALE);
    assert_int_equal(tes_add(w, e, 9999), TES_ERR_INVALID);
    assert_int_equal(tes_remove(w, e, 9999), TES_ERR_INVALID);
    assert_int_equal(tes_set(w, e, d->id[K_SA], NULL), TES_ERR_INVALID);
    assert_int_equal(tes_set(w, e, d->id[K_TA], NULL), TES_ERR_INVALID);
    assert_int_equal(tes_set(w, e, 9999, NULL), TES_ERR_INVALID);
    assert_int_equal(set_v(d, dead, K_SA, 1), TES_ERR_STALE);
    assert_int_equal(tes_clear(w, dead), TES_ERR_STALE);
    assert_true(tes_clone(w, dead) == TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_disable(w, dead), TES_ERR_STALE);
    assert_int_equal(tes_enable(w, dead), TES_ERR_STALE);
    assert_null(tes_ensure(w, dead, d->id[K_SA]));
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_null(tes_ensure(w, e, d->id[K_TT]));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_null(tes_ensure(w, e, d->id[K_SG]));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_null(tes_ensure(w, e, 9999));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    tes_entity_t out[4] = {0};
    tes_comp_t twice[] = {d->id[K_TA], d->id[K_SA], d->id[K_TA]};
    tes_comp_t unknown[] = {d->id[K_TA], 9999};
    assert_int_equal(tes_spawn_n(w, -1, NULL, 0, out), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, NULL, 1, out), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, twice, 3, out), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, unknown, 2, out), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, twice, -1, out), TES_ERR_INVALID);
    assert_int_equal(tes_spawn_n(w, 2, twice, 3, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_entity_count(w), 1);
    set_ok(d, e, K_TT, 0); /* a tag takes no value */
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(ncomps(d, e), 1);
    assert_true(has(d, e, K_TT));
    assert_int_equal(tes_entity_count(w), 1);
    assert_int_equal(d->n.ctor, n0.ctor);
    assert_int_equal(d->n.dtor, n0.dtor);
    check(w);
    dw_fini(d);
}

/* Hook counts: a scripted mix of every deferred operation gives the same
 * on_add / on_set / on_remove counts and live values as the same script in
 * immediate mode. */
static void script(dw_t *d, bool deferred)
{
    tes_world_t *w = d->w;
    tes_entity_t a = spawn(d), b = spawn(d), c = spawn(d);
    set_ok(d, a, K_TA, 1);
    set_ok(d, a, K_SA, 2);
    set_ok(d, b, K_ST, 3);
    set_ok(d, b, K_SG, 0);
    if (deferred)
        assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t n = tes_spawn(w);
    set_ok(d, n, K_TB, 4);
    set_ok(d, n, K_SB, 5);
    assert_int_equal(tes_add(w, n, d->id[K_TT]), TES_OK);
    tes_entity_t k = tes_clone(w, a);
    set_ok(d, k, K_TA, 6);
    assert_int_equal(tes_remove(w, a, d->id[K_SA]), TES_OK);
    set_ok(d, a, K_SA, 7);
    set_ok(d, a, K_SA, 8);
    assert_int_equal(tes_add(w, a, d->id[K_SA]), TES_OK);
    assert_int_equal(tes_clear(w, b), TES_OK);
    set_ok(d, b, K_ST, 9);
    assert_int_equal(tes_disable(w, c), TES_OK);
    assert_int_equal(tes_add(w, c, d->id[K_TA]), TES_OK);
    assert_int_equal(tes_enable(w, c), TES_OK);
    tes_entity_t out[3];
    tes_comp_t comps[] = {d->id[K_SA], d->id[K_TB], d->id[K_SG]};
    assert_int_equal(tes_spawn_n(w, 3, comps, 3, out), TES_OK);
    set_ok(d, out[1], K_SA, 10);
    assert_int_equal(tes_destroy(w, out[2]), TES_OK);
    assert_int_equal(tes_destroy(w, n), TES_OK);
    tes_entity_t k2 = tes_clone(w, out[0]);
    assert_int_equal(tes_remove(w, k2, d->id[K_TB]), TES_OK);
    if (deferred)
        assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(stamp_of(d, a, K_SA), 8);
    assert_int_equal(stamp_of(d, k, K_TA), 6);
    assert_int_equal(stamp_of(d, k, K_SA), 2);
    assert_int_equal(stamp_of(d, b, K_ST), 9);
    assert_int_equal(stamp_of(d, out[1], K_SA), 10);
    assert_false(has(d, k2, K_TB));
    assert_true(has(d, k2, K_SG));
    assert_false(tes_alive(w, n));
    check(w);
}

static void test_defer_hooks_match_immediate(void **state)
{
    (void)state;
    dw_t *im = dw_new(), *de = dw_new();
    script(im, false);
    script(de, true);
    assert_int_equal(de->n.on_add, im->n.on_add);
    assert_int_equal(de->n.on_set, im->n.on_set);
    assert_int_equal(de->n.on_remove, im->n.on_remove);
    assert_int_equal(live_values(de), live_values(im));
    assert_int_equal(tes_entity_count(de->w), tes_entity_count(im->w));
    dw_fini(im);
    dw_fini(de);
}

/* ------------------------------------------------------------------------ */
/* tes_ensure                                                                */
/* ------------------------------------------------------------------------ */

/* A deferred tes_ensure of a missing component returns a staged,
 * constructed value (the same one when repeated) whose writes appear at the
 * flush; of a present component, its current address while nothing queued
 * could see the write (checked at the end), else a staged copy. */
static void test_defer_ensure(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e = spawn(d);
    set_ok(d, e, K_TA, 1);
    const val_t *pta = tes_get(w, e, d->id[K_TA]);

    assert_int_equal(tes_defer_begin(w), TES_OK);
    val_t *p = tes_ensure(w, e, d->id[K_SA]);
    assert_non_null(p);
    assert_int_equal(p->magic, LIVE);
    assert_int_equal(p->stamp, 0);
    assert_ptr_equal(tes_ensure(w, e, d->id[K_SA]), p);
    assert_false(has(d, e, K_SA));
    assert_null(tes_get(w, e, d->id[K_SA]));
    p->comp = d->id[K_SA];
    p->stamp = 77;
    /* Present, but a command that runs hooks is queued (the ensure of the
     * observed K_SA): a staged copy, written at the flush. */
    val_t *pt = tes_ensure(w, e, d->id[K_TA]);
    assert_ptr_not_equal(pt, pta);
    assert_int_equal(pt->stamp, 1);
    pt->stamp = 88;
    assert_int_equal(stamp_of(d, e, K_TA), 1);
    val_t *pst = tes_ensure(w, e, d->id[K_ST]);
    assert_non_null(pst);
    pst->comp = d->id[K_ST];
    pst->stamp = 66;
    tes_entity_t s = tes_spawn(w);
    val_t *ps = tes_ensure(w, s, d->id[K_SB]);
    assert_non_null(ps);
    ps->comp = d->id[K_SB];
    ps->stamp = 99;
    val_t *ptb = tes_ensure(w, s, d->id[K_TB]);
    assert_non_null(ptb);
    assert_ptr_equal(tes_ensure(w, s, d->id[K_TB]), ptb);
    ptb->comp = d->id[K_TB];
    ptb->stamp = 98;
    assert_int_equal(tes_defer_end(w), TES_OK);

    assert_int_equal(stamp_of(d, e, K_SA), 77);
    assert_int_equal(stamp_of(d, e, K_TA), 88);
    assert_int_equal(stamp_of(d, e, K_ST), 66);
    assert_int_equal(stamp_of(d, s, K_SB), 99);
    assert_int_equal(stamp_of(d, s, K_TB), 98);
    assert_int_equal(live_values(d), 5);
    check(w);

    /* Nothing queued: the current address, written at once. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    pt = tes_ensure(w, e, d->id[K_TA]);
    assert_ptr_equal(pt, tes_get(w, e, d->id[K_TA]));
    pt->stamp = 89;
    assert_int_equal(stamp_of(d, e, K_TA), 89);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(stamp_of(d, e, K_TA), 89);

    /* Inside an iteration: ensure a missing component on every entity. */
    tes_query_t *q = query1(d, d->id[K_TA], TES_AND, 0);
    for (int i = 0; i < 20; i++)
        set_ok(d, spawn(d), K_TA, (uint64_t)i + 100);
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const val_t *f = tes_field(&it, 0);
        for (int32_t k = 0; k < it.count; k++) {
            val_t *v = tes_ensure(w, it.entities[k], d->id[K_SB]);
            assert_non_null(v);
            if (v->stamp == 0) {
                v->comp = d->id[K_SB];
                v->stamp = f[k].stamp + 1000;
            }
        }
    }
    it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const val_t *f = tes_field(&it, 0);
        for (int32_t k = 0; k < it.count; k++)
            assert_int_equal(stamp_of(d, it.entities[k], K_SB), f[k].stamp + 1000);
    }
    tes_query_free(q);
    check(w);
    dw_fini(d);
}

/* tes_ensure follows the queue like every other call: after a queued remove
 * (or clear) of the component it still ends with the component and the
 * value written through the pointer, and after a queued set its write
 * comes last (as in immediate mode). */
static void test_defer_ensure_follows_queue(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e = spawn(d), f = spawn(d), g = spawn(d);
    set_ok(d, e, K_SA, 1);
    set_ok(d, f, K_SA, 1);
    set_ok(d, g, K_TA, 1);

    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_remove(w, e, d->id[K_SA]), TES_OK);
    val_t *pe = tes_ensure(w, e, d->id[K_SA]);
    assert_non_null(pe);
    pe->comp = d->id[K_SA];
    pe->stamp = 5;
    set_ok(d, f, K_SA, 6);
    val_t *pf = tes_ensure(w, f, d->id[K_SA]);
    assert_non_null(pf);
    pf->comp = d->id[K_SA];
    pf->stamp = 7;
    assert_int_equal(tes_clear(w, g), TES_OK);
    val_t *pg = tes_ensure(w, g, d->id[K_TA]);
    assert_non_null(pg);
    pg->comp = d->id[K_TA];
    pg->stamp = 8;
    assert_int_equal(tes_defer_end(w), TES_OK);

    assert_true(has(d, e, K_SA));
    if (has(d, e, K_SA))
        assert_int_equal(stamp_of(d, e, K_SA), 5);
    assert_int_equal(stamp_of(d, f, K_SA), 7);
    assert_true(has(d, g, K_TA));
    if (has(d, g, K_TA))
        assert_int_equal(stamp_of(d, g, K_TA), 8);
    check(w);
    dw_fini(d);
}

/* A deferred tes_ensure of a missing component fires the observers an
 * immediate one fires: on_add, and no on_set (tes_ensure is not tes_set). */
static void test_defer_ensure_observers(void **state)
{
    (void)state;
    dw_t *im = dw_new(), *de = dw_new();
    tes_entity_t a = spawn(im), b = spawn(de);
    val_t *p = tes_ensure(im->w, a, im->id[K_SA]);
    assert_non_null(p);
    p->stamp = 3;
    assert_int_equal(tes_defer_begin(de->w), TES_OK);
    p = tes_ensure(de->w, b, de->id[K_SA]);
    assert_non_null(p);
    p->stamp = 3;
    assert_int_equal(tes_defer_end(de->w), TES_OK);
    assert_int_equal(im->n.on_add, 1);
    assert_int_equal(de->n.on_add, im->n.on_add);
    assert_int_equal(im->n.on_set, 0);
    assert_int_equal(de->n.on_set, im->n.on_set);
    assert_int_equal(live_values(de), live_values(im));
    check(im->w);
    check(de->w);
    dw_fini(im);
    dw_fini(de);
}

/* ------------------------------------------------------------------------ */
/* Levels, iterators, early exit                                             */
/* ------------------------------------------------------------------------ */

/* tes_defer_begin levels nest; only the outermost end flushes;
 * tes_defer_end without a level is TES_ERR_INVALID; iterators count as
 * levels inside and around explicit blocks. */
static void test_defer_nesting(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    assert_false(tes_is_deferred(w));
    assert_false(tes_is_deferred(NULL));
    assert_int_equal(tes_defer_begin(NULL), TES_ERR_INVALID);
    assert_int_equal(tes_defer_end(NULL), TES_ERR_INVALID);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_false(tes_is_deferred(w));

    tes_entity_t e = spawn(d);
    for (int level = 0; level < 3; level++)
        assert_int_equal(tes_defer_begin(w), TES_OK);
    set_ok(d, e, K_SA, 1);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_is_deferred(w));
    assert_false(has(d, e, K_SA));
    assert_int_equal(tes_defer_begin(w), TES_OK); /* reopen in the middle */
    set_ok(d, e, K_SA, 2);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_is_deferred(w));
    assert_false(has(d, e, K_SA));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_is_deferred(w));
    assert_int_equal(stamp_of(d, e, K_SA), 2);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    check(w);

    tes_query_t *q = query1(d, d->id[K_SA], TES_AND, 0);
    /* An iterator inside a block: its end does not flush. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        set_ok(d, it.entities[0], K_SA, 3);
    assert_true(tes_is_deferred(w));
    assert_int_equal(stamp_of(d, e, K_SA), 2);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(stamp_of(d, e, K_SA), 3);
    /* A block inside an iteration: its end does not flush. */
    it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    assert_int_equal(tes_defer_begin(w), TES_OK);
    set_ok(d, e, K_SA, 4);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_is_deferred(w));
    assert_int_equal(stamp_of(d, e, K_SA), 3);
    assert_false(tes_iter_next(&it));
    assert_false(tes_is_deferred(w));
    assert_int_equal(stamp_of(d, e, K_SA), 4);
    /* tes_query_count inside a block flushes nothing. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    set_ok(d, e, K_SA, 5);
    assert_int_equal(tes_query_count(q), 1);
    assert_true(tes_is_deferred(w));
    assert_int_equal(stamp_of(d, e, K_SA), 4);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(stamp_of(d, e, K_SA), 5);
    tes_query_free(q);
    check(w);
    dw_fini(d);
}

/* Breaking out early with tes_iter_fini flushes; nested iterators flush
 * when the last one ends, whichever ends first and however. */
static void test_defer_iterators(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e[30];
    for (int i = 0; i < 30; i++) {
        e[i] = spawn(d);
        set_ok(d, e[i], K_TA, 1);
        if (i < 20)
            set_ok(d, e[i], K_SA, 1);
    }
    tes_query_t *qt = query1(d, d->id[K_TA], TES_AND, 0);
    tes_query_t *qs = query1(d, d->id[K_SA], TES_AND, 0);

    /* Early exit. */
    tes_iter_t it = tes_query_iter(qt);
    assert_true(tes_iter_next(&it));
    for (int32_t k = 0; k < it.count; k++)
        assert_int_equal(tes_remove(w, it.entities[k], d->id[K_TA]), TES_OK);
    set_ok(d, e[0], K_SB, 11);
    assert_true(tes_is_deferred(w));
    assert_true(has(d, e[0], K_TA));
    tes_iter_fini(&it);
    assert_false(tes_is_deferred(w));
    assert_false(has(d, e[0], K_TA));
    assert_int_equal(stamp_of(d, e[0], K_SB), 11);
    tes_iter_fini(&it);
    assert_false(tes_iter_next(&it));
    assert_false(tes_is_deferred(w));
    for (int i = 0; i < 30; i++)
        set_ok(d, e[i], K_TA, 2);
    check(w);

    /* Nested: the inner loop ends first, then the outer. */
    int32_t outer = 0, inner = 0;
    it = tes_query_iter(qt);
    while (tes_iter_next(&it)) {
        for (int32_t k = 0; k < it.count; k++, outer++) {
            tes_iter_t in = tes_query_iter(qs);
            while (tes_iter_next(&in))
                inner += in.count;
            assert_true(tes_is_deferred(w));
            set_ok(d, it.entities[k], K_TA, 3);
        }
        assert_int_equal(stamp_of(d, it.entities[0], K_TA), 2);
    }
    assert_int_equal(outer, 30);
    assert_int_equal(inner, 30 * 20);
    assert_false(tes_is_deferred(w));
    for (int i = 0; i < 30; i++)
        assert_int_equal(stamp_of(d, e[i], K_TA), 3);

    /* Nested over the same query; the outer one leaves early, the inner
     * one runs to its end afterwards. */
    tes_iter_t a = tes_query_iter(qs), b = tes_query_iter(qs);
    assert_true(tes_iter_next(&a));
    assert_true(tes_iter_next(&b));
    assert_int_equal(tes_destroy(w, a.entities[0]), TES_OK);
    tes_entity_t victim = a.entities[0];
    tes_iter_fini(&a);
    assert_true(tes_is_deferred(w));
    assert_true(tes_alive(w, victim));
    while (tes_iter_next(&b))
        ;
    assert_false(tes_is_deferred(w));
    assert_false(tes_alive(w, victim));

    /* Iterators of different walks interleaved, ended in creation order. */
    tes_query_t *qn = query1(d, d->id[K_TT], TES_NOT, 0);
    tes_query_t *qg = query1(d, d->id[K_SA], TES_AND, TES_QUERY_OWNING_GROUP);
    tes_iter_t i1 = tes_query_iter(qn), i2 = tes_query_iter(qg), i3 = tes_query_iter(qt);
    assert_true(tes_iter_next(&i1));
    assert_true(tes_iter_next(&i2));
    assert_true(tes_iter_next(&i3));
    tes_entity_t t = i2.entities[0];
    assert_int_equal(tes_remove(w, t, d->id[K_SA]), TES_OK);
    tes_iter_fini(&i1);
    while (tes_iter_next(&i2))
        ;
    assert_true(tes_is_deferred(w));
    assert_true(has(d, t, K_SA));
    tes_iter_fini(&i3);
    assert_false(tes_is_deferred(w));
    assert_false(has(d, t, K_SA));
    tes_query_free(qn);
    tes_query_free(qg);
    tes_query_free(qt);
    tes_query_free(qs);
    check(w);
    dw_fini(d);
}

/* Groups learn about deferred changes at the flush: an owning group walked
 * while its members leave and other entities join. */
static void test_defer_groups_at_flush(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t e[80];
    for (int i = 0; i < 80; i++) {
        e[i] = spawn(d);
        set_ok(d, e[i], K_SA, (uint64_t)i + 1);
        if (i % 2 == 0)
            set_ok(d, e[i], K_SB, (uint64_t)i + 1001);
    }
    tes_query_t *own = query2(d, d->id[K_SA], TES_AND, d->id[K_SB], TES_AND,
                              TES_QUERY_OWNING_GROUP);
    tes_query_t *non = query2(d, d->id[K_SA], TES_AND, d->id[K_SB], TES_AND,
                              TES_QUERY_NONOWNING_GROUP);
    assert_int_equal(tes_query_count(own), 40);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(own);
    while (tes_iter_next(&it)) {
        val_t *a = tes_field(&it, 0);
        void *b = tes_field(&it, 1); /* SB: 24-byte values */
        for (int32_t k = 0; k < it.count; k++) {
            seen++;
            assert_int_equal(a[k].stamp + 1000, val_at(b, kinds[K_SB].size, k)->stamp);
            tes_entity_t x = it.entities[k];
            uint32_t i = (uint32_t)a[k].stamp - 1;
            assert_true(x == e[i]);
            assert_int_equal(tes_remove(w, x, d->id[K_SB]), TES_OK); /* leaves */
            set_ok(d, e[i + 1], K_SB, i + 1 + 1001);               /* joins */
        }
    }
    assert_int_equal(seen, 40);
    assert_int_equal(tes_query_count(own), 40);
    assert_int_equal(tes_query_count(non), 40);
    it = tes_query_iter(own);
    while (tes_iter_next(&it)) {
        val_t *a = tes_field(&it, 0);
        void *b = tes_field(&it, 1);
        for (int32_t k = 0; k < it.count; k++) {
            uint32_t i = (uint32_t)a[k].stamp - 1;
            assert_true(i % 2 == 1);
            assert_true(it.entities[k] == e[i]);
            assert_int_equal(a[k].stamp + 1000, val_at(b, kinds[K_SB].size, k)->stamp);
            assert_ptr_equal(val_at(b, kinds[K_SB].size, k), tes_get(w, e[i], d->id[K_SB]));
            assert_ptr_equal(&a[k], tes_get(w, e[i], d->id[K_SA]));
        }
    }
    tes_query_free(own);
    tes_query_free(non);
    check(w);
    dw_fini(d);
}

/* ------------------------------------------------------------------------ */
/* Teardown with a queue                                                     */
/* ------------------------------------------------------------------------ */

/* tes_world_free with queued operations (a block never ended, an iterator
 * never finished): staged values are destroyed, nothing leaks (ASan). */
static void test_defer_world_free_with_queue(void **state)
{
    (void)state;
    dw_t *d = dw_new();
    tes_world_t *w = d->w;
    tes_entity_t x = spawn(d), y = spawn(d);
    set_ok(d, x, K_TA, 1);
    set_ok(d, x, K_SA, 2);
    set_ok(d, x, K_ST, 3);
    set_ok(d, y, K_SB, 4);
    tes_query_t *q = query1(d, d->id[K_SB], TES_AND, TES_QUERY_OWNING_GROUP);
    (void)q;
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t e = tes_spawn(w);
    set_ok(d, e, K_TA, 5);
    set_ok(d, e, K_SA, 6);
    set_ok(d, e, K_ST, 7);
    set_ok(d, e, K_SG, 0);
    val_t *p = tes_ensure(w, e, d->id[K_SB]);
    assert_non_null(p);
    p->stamp = 8;
    assert_true(tes_clone(w, x) != TES_NULL);
    tes_entity_t out[3];
    tes_comp_t comps[] = {d->id[K_TA], d->id[K_SA]};
    assert_int_equal(tes_spawn_n(w, 3, comps, 2, out), TES_OK);
    set_ok(d, x, K_SA, 9);
    set_ok(d, y, K_SB, 10);
    assert_int_equal(tes_remove(w, x, d->id[K_ST]), TES_OK);
    assert_int_equal(tes_destroy(w, y), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_true(d->n.ctor > d->n.dtor + 4); /* staged values are alive */
    check(w);
    dw_fini(d); /* ctor == dtor, no bad values */

    /* An iterator left open, with staged values. */
    d = dw_new();
    w = d->w;
    for (int i = 0; i < 10; i++)
        set_ok(d, spawn(d), K_TA, (uint64_t)i);
    q = query1(d, d->id[K_TA], TES_AND, 0);
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    for (int32_t k = 0; k < it.count; k++) {
        set_ok(d, it.entities[k], K_SA, 1);
        set_ok(d, it.entities[k], K_TA, 2);
        assert_int_equal(tes_destroy(w, it.entities[k]), TES_OK);
    }
    check(w);
    dw_fini(d);
}

/* ------------------------------------------------------------------------ */
/* Random differential: deferred vs immediate                                */
/* ------------------------------------------------------------------------ */

typedef struct pair_t {
    dw_t *a, *b;             /* a: immediate; b: deferred in batches */
    tes_entity_t *ha, *hb;   /* every entity, in creation order */
    int32_t n, cap;
    int32_t *live;           /* creation indices alive once the queue runs */
    int32_t nlive, live_cap;
    uint64_t stamp;
    tes_query_t *qa[4], *qb[4];
} pair_t;

static pair_t *live_pair;

static int teardown(void **state)
{
    (void)state;
    if (live_pair) {
        free(live_pair->ha);
        free(live_pair->hb);
        free(live_pair->live);
        free(live_pair);
        live_pair = NULL;
    }
    for (int i = 0; i < 8; i++)
        if (live_dw[i])
            dw_release(live_dw[i]);
    return 0;
}

static void pair_track(pair_t *p, tes_entity_t ea, tes_entity_t eb)
{
    assert_true(ea != TES_NULL && eb != TES_NULL);
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->ha = realloc(p->ha, (size_t)p->cap * sizeof *p->ha);
        p->hb = realloc(p->hb, (size_t)p->cap * sizeof *p->hb);
        assert_non_null(p->ha);
        assert_non_null(p->hb);
    }
    if (p->nlive == p->live_cap) {
        p->live_cap = p->live_cap ? p->live_cap * 2 : 256;
        p->live = realloc(p->live, (size_t)p->live_cap * sizeof *p->live);
        assert_non_null(p->live);
    }
    p->ha[p->n] = ea;
    p->hb[p->n] = eb;
    p->live[p->nlive++] = p->n++;
}

/* One random operation, on both worlds. */
static void pair_op(pair_t *p)
{
    tes_world_t *wa = p->a->w, *wb = p->b->w;
    uint32_t r = rng_below(100);
    if (p->nlive == 0 || r < 8) {
        pair_track(p, tes_spawn(wa), tes_spawn(wb));
        return;
    }
    int32_t slot = (int32_t)rng_below((uint32_t)p->nlive);
    int32_t i = p->live[slot];
    tes_entity_t ea = p->ha[i], eb = p->hb[i];
    int k = (int)rng_below(K_COUNT);
    if (r < 12) {
        tes_comp_t ca[3], cb[3];
        int32_t nc = (int32_t)rng_below(4);
        int ks[K_COUNT] = {0, 1, 2, 3, 4, 5, 6};
        for (int j = K_COUNT - 1; j > 0; j--) {
            int x = (int)rng_below((uint32_t)j + 1), t = ks[j];
            ks[j] = ks[x];
            ks[x] = t;
        }
        for (int32_t j = 0; j < nc; j++) {
            ca[j] = p->a->id[ks[j]];
            cb[j] = p->b->id[ks[j]];
        }
        int32_t n = 1 + (int32_t)rng_below(4);
        tes_entity_t oa[4], ob[4];
        assert_int_equal(tes_spawn_n(wa, n, ca, nc, oa), TES_OK);
        assert_int_equal(tes_spawn_n(wb, n, cb, nc, ob), TES_OK);
        for (int32_t j = 0; j < n; j++)
            pair_track(p, oa[j], ob[j]);
    } else if (r < 40) {
        uint64_t s = ++p->stamp;
        assert_int_equal(set_v(p->a, ea, k, s), TES_OK);
        assert_int_equal(set_v(p->b, eb, k, s), TES_OK);
    } else if (r < 50) {
        assert_int_equal(tes_add(wa, ea, p->a->id[k]), TES_OK);
        assert_int_equal(tes_add(wb, eb, p->b->id[k]), TES_OK);
    } else if (r < 66) {
        assert_int_equal(tes_remove(wa, ea, p->a->id[k]), TES_OK);
        assert_int_equal(tes_remove(wb, eb, p->b->id[k]), TES_OK);
    } else if (r < 74) {
        assert_int_equal(tes_destroy(wa, ea), TES_OK);
        assert_int_equal(tes_destroy(wb, eb), TES_OK);
        p->live[slot] = p->live[--p->nlive];
    } else if (r < 78) {
        assert_int_equal(tes_clear(wa, ea), TES_OK);
        assert_int_equal(tes_clear(wb, eb), TES_OK);
    } else if (r < 84) {
        pair_track(p, tes_clone(wa, ea), tes_clone(wb, eb));
    } else if (r < 90) {
        assert_int_equal(tes_disable(wa, ea), TES_OK);
        assert_int_equal(tes_disable(wb, eb), TES_OK);
    } else if (r < 96) {
        assert_int_equal(tes_enable(wa, ea), TES_OK);
        assert_int_equal(tes_enable(wb, eb), TES_OK);
    } else {
        /* an operation on an entity destroyed earlier in the batch is
         * refused in a (stale) but accepted and dropped in b, unless b
         * already flushed: both end the same */
        tes_entity_t da = TES_NULL, db = TES_NULL;
        for (int32_t j = p->n - 1; j >= 0 && j >= p->n - 20; j--)
            if (!tes_alive(wa, p->ha[j])) {
                da = p->ha[j];
                db = p->hb[j];
                break;
            }
        if (da) {
            tes_add(wa, da, p->a->id[k]);
            tes_add(wb, db, p->b->id[k]);
        }
    }
}

static void pair_compare(pair_t *p)
{
    tes_world_t *wa = p->a->w, *wb = p->b->w;
    assert_false(tes_is_deferred(wb));
    assert_int_equal(tes_entity_count(wa), tes_entity_count(wb));
    assert_int_equal(tes_entity_count(wa), p->nlive);
    for (int32_t i = 0; i < p->n; i++) {
        bool alive = tes_alive(wa, p->ha[i]);
        assert_int_equal(alive, tes_alive(wb, p->hb[i]));
        if (!alive)
            continue;
        tes_comp_t ca[16], cb[16];
        int32_t na = tes_components_of(wa, p->ha[i], ca, 16);
        assert_int_equal(na, tes_components_of(wb, p->hb[i], cb, 16));
        assert_memory_equal(ca, cb, (size_t)na * sizeof *ca);
        for (int k = 0; k < K_COUNT; k++) {
            if (!kinds[k].size || !tes_has(wa, p->ha[i], p->a->id[k]))
                continue;
            const void *va = tes_get(wa, p->ha[i], p->a->id[k]);
            const void *vb = tes_get(wb, p->hb[i], p->b->id[k]);
            assert_non_null(va);
            assert_non_null(vb);
            assert_memory_equal(va, vb, kinds[k].size);
        }
    }
    assert_int_equal(p->a->n.on_add, p->b->n.on_add);
    assert_int_equal(p->a->n.on_set, p->b->n.on_set);
    assert_int_equal(p->a->n.on_remove, p->b->n.on_remove);
    assert_int_equal(live_values(p->a), live_values(p->b));
    assert_int_equal(p->a->n.bad + p->b->n.bad, 0);
    assert_int_equal(p->a->n.bad_ptr + p->b->n.bad_ptr, 0);
    for (int q = 0; q < 4; q++)
        assert_int_equal(tes_query_count(p->qa[q]), tes_query_count(p->qb[q]));
    check(wa);
    check(wb);
}

static void make_queries(dw_t *d, tes_query_t **q)
{
    q[0] = query2(d, d->id[K_TA], TES_AND, d->id[K_SA], TES_OPTIONAL, 0);
    q[1] = query2(d, d->id[K_SA], TES_AND, d->id[K_TT], TES_NOT, 0);
    q[2] = query2(d, d->id[K_SG], TES_NOT, d->id[K_ST], TES_OPTIONAL, 0);
    q[3] = query2(d, d->id[K_SB], TES_AND, d->id[K_SA], TES_AND, TES_QUERY_NONOWNING_GROUP);
}

/* The same random operations on an immediate world and on a world where
 * they are deferred in batches (explicit blocks, live iterators, both
 * nested, operations spread over the chunks of a loop): after every batch
 * the worlds hold the same entities, components and values, and the hooks
 * have fired as often. */
static void test_defer_matches_immediate(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        rng_seed(seed * 65537);
        pair_t *p = calloc(1, sizeof *p);
        assert_non_null(p);
        live_pair = p;
        p->a = dw_new();
        p->b = dw_new();
        make_queries(p->a, p->qa);
        make_queries(p->b, p->qb);
        for (int i = 0; i < 60; i++)
            pair_op(p);
        pair_compare(p);
        for (int batch = 0; batch < 300; batch++) {
            int32_t m = 1 + (int32_t)rng_below(20);
            uint32_t mode = rng_below(4);
            tes_world_t *wb = p->b->w;
            tes_query_t *qb = p->qb[rng_below(4)];
            if (mode == 0) {
                assert_int_equal(tes_defer_begin(wb), TES_OK);
                for (int32_t i = 0; i < m; i++)
                    pair_op(p);
                assert_int_equal(tes_defer_end(wb), TES_OK);
            } else if (mode == 1) {
                tes_iter_t it = tes_query_iter(qb);
                for (int32_t i = 0; i < m; i++)
                    pair_op(p);
                while (tes_iter_next(&it))
                    ;
            } else if (mode == 2) {
                /* spread over the chunks; leave early or run to the end */
                tes_iter_t it = tes_query_iter(qb);
                int32_t done = 0;
                while (done < m && tes_iter_next(&it))
                    for (int32_t k = 0; k < it.count && done < m; k++, done++)
                        pair_op(p);
                bool deferred = tes_is_deferred(wb);
                for (; done < m; done++)
                    pair_op(p); /* the loop ended: these run at once */
                if (deferred && rng_chance(50))
                    tes_iter_fini(&it);
                else
                    while (tes_iter_next(&it))
                        ;
            } else {
                assert_int_equal(tes_defer_begin(wb), TES_OK);
                tes_iter_t it = tes_query_iter(qb);
                for (int32_t i = 0; i < m / 2; i++)
                    pair_op(p);
                tes_iter_fini(&it);
                assert_true(tes_is_deferred(wb));
                for (int32_t i = m / 2; i < m; i++)
                    pair_op(p);
                assert_int_equal(tes_defer_end(wb), TES_OK);
            }
            pair_compare(p);
        }
        dw_fini(p->a);
        dw_fini(p->b);
        live_pair = NULL;
        free(p->ha);
        free(p->hb);
        free(p->live);
        free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_defer_destroy_all_while_iterating, teardown),
        cmocka_unit_test_teardown(test_defer_remove_driver_while_iterating, teardown),
        cmocka_unit_test_teardown(test_defer_add_matches_next_iteration, teardown),
        cmocka_unit_test_teardown(test_defer_spawn, teardown),
        cmocka_unit_test_teardown(test_defer_order_pairs, teardown),
        cmocka_unit_test_teardown(test_defer_reads_pre_flush, teardown),
        cmocka_unit_test_teardown(test_defer_ops_on_dead_entities_dropped, teardown),
        cmocka_unit_test_teardown(test_defer_validation_at_queue_time, teardown),
        cmocka_unit_test_teardown(test_defer_hooks_match_immediate, teardown),
        cmocka_unit_test_teardown(test_defer_ensure, teardown),
        cmocka_unit_test_teardown(test_defer_ensure_follows_queue, teardown),
        cmocka_unit_test_teardown(test_defer_ensure_observers, teardown),
        cmocka_unit_test_teardown(test_defer_nesting, teardown),
        cmocka_unit_test_teardown(test_defer_iterators, teardown),
        cmocka_unit_test_teardown(test_defer_groups_at_flush, teardown),
        cmocka_unit_test_teardown(test_defer_world_free_with_queue, teardown),
        cmocka_unit_test_teardown(test_defer_matches_immediate, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
