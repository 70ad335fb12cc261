/*
 * Query tests: matching, chunk iteration, the table cache, the default
 * filters, descriptor validation, lifetimes, and groups.
 *
 * - A brute-force reference: random worlds (fixed seeds) holding table data
 *   components, table tags, sparse, stable sparse and sparse tag components,
 *   queried with random mixes of AND / NOT / OPTIONAL terms over all of them
 *   (TES_DISABLED and TES_PREFAB included). The entities yielded, and every
 *   field read through tes_field, must equal what tes_has / tes_get say
 *   about every live entity; tes_query_count must agree with iteration.
 * - The chunk contract, checked in every chunk of every test: each data
 *   field is an array aligned with it.entities (pointer-equal to tes_get,
 *   value equal to what was last written), NULL for NOT terms, tags and an
 *   absent optional term, and for out-of-range terms.
 * - The three walks: table (one chunk per table), driven (the smallest
 *   sparse pool drives, whatever the term order), all (NOT / OPTIONAL only:
 *   entities with no component at all are matched, in chunks of the root).
 * - Default filters for TES_DISABLED / TES_PREFAB (naming the tag as AND,
 *   OPTIONAL or NOT, or the INCLUDE flags, lift them); tes_disable /
 *   tes_enable moving entities out and in; tables created after the query
 *   (the cache listener); invalid descriptors; early exit with
 *   tes_iter_fini; queries freed before the world or left to it.
 * - Groups: non-owning and owning groups match exactly what the plain query
 *   matches through thousands of random operations (immediate and deferred
 *   batches); owning groups yield one contiguous run, keep their members at
 *   the front of every owned store in one order, and keep every value with
 *   its entity across reorderings (move hook counted, values derived from a
 *   per-write stamp); ownership errors; freeing an owning query releases
 *   its stores.
 *
 * Deferred changes (the queue behind iteration) are tested in test_defer.c.
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

static void poison_stale(tes_world_t *w)
{
    assert_int_equal(tes_destroy(w, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
}

static uint64_t bytes_of(const tes_world_t *w)
{
    tes_world_stats_t s;
    assert_int_equal(tes_world_stats(w, &s), TES_OK);
    return s.bytes_allocated;
}

/* ------------------------------------------------------------------------ */
/* Values and hooks                                                          */
/* ------------------------------------------------------------------------ */


/* ------------------------------------------------------------------------ */
/* Fixture: a world with one component of every kind and a shadow of values  */
/* ------------------------------------------------------------------------ */

enum { K_TA, K_TB, K_TT, K_SA, K_SB, K_SC, K_SD, K_ST, K_SG, K_COUNT };

static const struct {
    const char *name;
    size_t size;
    tes_storage_t storage;
    bool stable;
} kinds[K_COUNT] = {
    {"TA", 16, TES_STORAGE_TABLE, false},  /* table data */
    {"TB", 40, TES_STORAGE_TABLE, false},  /* table data, larger */
    {"TT", 0, TES_STORAGE_TABLE, false},   /* table tag */
    {"SA", 16, TES_STORAGE_SPARSE, false}, /* sparse data */
    {"SB", 40, TES_STORAGE_SPARSE, false}, /* sparse data, larger */
    {"SC", 24, TES_STORAGE_SPARSE, false}, /* sparse data */
    {"SD", 16, TES_STORAGE_SPARSE, false}, /* sparse data */
    {"ST", 24, TES_STORAGE_SPARSE, true},  /* stable sparse data */
    {"SG", 0, TES_STORAGE_SPARSE, false},  /* sparse tag */
};

typedef struct fx_t {
    tes_world_t *w;
    tes_comp_t id[K_COUNT];
    comp_ctx_t ctx[K_COUNT];
    counters_t n;
    tes_entity_t *live; /* every live entity */
    int32_t nlive, live_cap;
    val_t *expect; /* [entity index][kind]: the value last written */
    uint32_t expect_rows;
    uint64_t stamp;
    uint8_t *want, *seen; /* verify's marks, expect_rows each */
    tes_entity_t *seq[2]; /* scratch sequences, seq_cap each */
    size_t seq_cap;
} fx_t;

/* Fixtures alive in the running test: a failed assertion leaves the test
 * early, and the teardown frees what it left behind. */
static fx_t *live_fx[4];

static void fx_release(fx_t *fx)
{
    for (int i = 0; i < 4; i++)
        if (live_fx[i] == fx)
            live_fx[i] = NULL;
    if (fx->w)
        tes_world_free(fx->w);
    free(fx->live);
    free(fx->expect);
    free(fx->want);
    free(fx->seen);
    free(fx->seq[0]);
    free(fx->seq[1]);
    free(fx);
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        if (live_fx[i])
            fx_release(live_fx[i]);
    return 0;
}

/* A scratch sequence (which = 0 or 1) with room for n entities. */
static tes_entity_t *fx_seq(fx_t *fx, int which, size_t n)
{
    if (n > fx->seq_cap) {
        size_t cap = n * 2;
        for (int i = 0; i < 2; i++) {
            free(fx->seq[i]);
            fx->seq[i] = malloc(cap * sizeof *fx->seq[i]);
            assert_non_null(fx->seq[i]);
        }
        fx->seq_cap = cap;
    }
    return fx->seq[which];
}

static void fx_grow(fx_t *fx, uint32_t idx)
{
    if (idx < fx->expect_rows)
        return;
    uint32_t rows = fx->expect_rows ? fx->expect_rows : 256;
    while (rows <= idx)
        rows *= 2;
    val_t *p = realloc(fx->expect, (size_t)rows * K_COUNT * sizeof *p);
    assert_non_null(p);
    memset(p + (size_t)fx->expect_rows * K_COUNT, 0,
           (size_t)(rows - fx->expect_rows) * K_COUNT * sizeof *p);
    fx->expect = p;
    fx->expect_rows = rows;
    free(fx->want);
    free(fx->seen);
    fx->want = malloc(rows);
    fx->seen = malloc(rows);
    assert_non_null(fx->want);
    assert_non_null(fx->seen);
}

static fx_t *fx_new(void)
{
    fx_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    int slot = 0;
    while (slot < 4 && live_fx[slot])
        slot++;
    assert_true(slot < 4);
    live_fx[slot] = fx;
    fx->w = tes_world_new(NULL);
    assert_non_null(fx->w);
    for (int k = 0; k < K_COUNT; k++)
        fx->id[k] = register_tracked(fx->w, &fx->ctx[k], &fx->n, kinds[k].name, kinds[k].size,
                                     kinds[k].storage, kinds[k].stable);
    fx_grow(fx, 0);
    return fx;
}

/* Frees the world and checks every value it held was destroyed once. */
static void fx_free(fx_t *fx)
{
    tes_world_free(fx->w);
    fx->w = NULL;
    counters_t n = fx->n;
    fx_release(fx);
    assert_int_equal(n.bad, 0);
    assert_int_equal(n.bad_ptr, 0);
    assert_int_equal(n.ctor, n.dtor);
}

static int kind_of(const fx_t *fx, tes_comp_t c)
{
    for (int k = 0; k < K_COUNT; k++)
        if (fx->id[k] == c)
            return k;
    return -1;
}

static size_t size_of(const fx_t *fx, tes_comp_t c)
{
    int k = kind_of(fx, c);
    return k >= 0 ? kinds[k].size : 0;
}

static val_t *expect_of(fx_t *fx, tes_entity_t e, int k)
{
    uint32_t idx = tes_entity_index(e);
    fx_grow(fx, idx);
    return &fx->expect[(size_t)idx * K_COUNT + (size_t)k];
}

static void fx_track(fx_t *fx, tes_entity_t e)
{
    assert_true(tes_alive(fx->w, e));
    if (fx->nlive == fx->live_cap) {
        fx->live_cap = fx->live_cap ? fx->live_cap * 2 : 256;
        fx->live = realloc(fx->live, (size_t)fx->live_cap * sizeof *fx->live);
        assert_non_null(fx->live);
    }
    fx->live[fx->nlive++] = e;
    fx_grow(fx, tes_entity_index(e));
}

static void fx_untrack(fx_t *fx, tes_entity_t e)
{
    for (int32_t i = 0; i < fx->nlive; i++) {
        if (fx->live[i] == e) {
            fx->live[i] = fx->live[--fx->nlive];
            return;
        }
    }
    fail_msg("entity %llx not tracked", (unsigned long long)e);
}

static tes_entity_t fx_spawn(fx_t *fx)
{
    tes_entity_t e = tes_spawn(fx->w);
    assert_true(e != TES_NULL);
    fx_track(fx, e);
    return e;
}

static val_t ctor_value(void) { return (val_t){LIVE, 0, 0}; }

/* tes_set with a fresh stamp (the value a query must then show). */
static void fx_set(fx_t *fx, tes_entity_t e, int k)
{
    if (!kinds[k].size) {
        assert_int_equal(tes_set(fx->w, e, fx->id[k], NULL), TES_OK);
        return;
    }
    uint8_t buf[64] = {0};
    val_t v = {LIVE, fx->id[k], ++fx->stamp};
    memcpy(buf, &v, sizeof v);
    assert_int_equal(tes_set(fx->w, e, fx->id[k], buf), TES_OK);
    *expect_of(fx, e, k) = v;
    /* the value landed on e, not on another entity */
    const val_t *got = tes_get(fx->w, e, fx->id[k]);
    if (!tes_is_deferred(fx->w) && (!got || memcmp(got, &v, sizeof v) != 0))
        fail_msg("tes_set(%llx, %s, stamp %llu): tes_get reads stamp %llu",
                 (unsigned long long)e, kinds[k].name, (unsigned long long)v.stamp,
                 got ? (unsigned long long)got->stamp : 0ull);
}

static void fx_add(fx_t *fx, tes_entity_t e, int k)
{
    bool had = tes_has(fx->w, e, fx->id[k]);
    assert_int_equal(tes_add(fx->w, e, fx->id[k]), TES_OK);
    if (!had && kinds[k].size)
        *expect_of(fx, e, k) = ctor_value();
}

/* tes_ensure (immediate mode), then a write through the pointer. */
static void fx_ensure(fx_t *fx, tes_entity_t e, int k)
{
    assert_true(kinds[k].size > 0);
    bool had = tes_has(fx->w, e, fx->id[k]);
    val_t *p = tes_ensure(fx->w, e, fx->id[k]);
    assert_non_null(p);
    if ((const void *)p != tes_get(fx->w, e, fx->id[k]))
        fail_msg("tes_ensure(%llx, %s) returned %p, but the component is at %p",
                 (unsigned long long)e, kinds[k].name, (void *)p, tes_get(fx->w, e, fx->id[k]));
    if (!had)
        *expect_of(fx, e, k) = ctor_value();
    assert_memory_equal(p, expect_of(fx, e, k), sizeof(val_t));
    val_t v = {LIVE, fx->id[k], ++fx->stamp};
    memcpy(p, &v, sizeof v);
    *expect_of(fx, e, k) = v;
}

static void fx_destroy(fx_t *fx, tes_entity_t e)
{
    assert_int_equal(tes_destroy(fx->w, e), TES_OK);
    fx_untrack(fx, e);
}

static tes_entity_t fx_clone(fx_t *fx, tes_entity_t e)
{
    tes_entity_t c = tes_clone(fx->w, e);
    assert_true(c != TES_NULL);
    fx_track(fx, c);
    for (int k = 0; k < K_COUNT; k++) {
        val_t v = *expect_of(fx, e, k);
        *expect_of(fx, c, k) = v;
    }
    return c;
}

/* tes_spawn_n of n entities with the kinds in ks (may be empty). */
static void fx_spawn_n(fx_t *fx, int32_t n, const int *ks, int32_t nk)
{
    tes_comp_t comps[K_COUNT];
    tes_entity_t out[16];
    assert_true(n <= 16 && nk <= K_COUNT);
    for (int32_t i = 0; i < nk; i++)
        comps[i] = fx->id[ks[i]];
    assert_int_equal(tes_spawn_n(fx->w, n, comps, nk, out), TES_OK);
    for (int32_t i = 0; i < n; i++) {
        fx_track(fx, out[i]);
        for (int32_t j = 0; j < nk; j++)
            if (kinds[ks[j]].size)
                *expect_of(fx, out[i], ks[j]) = ctor_value();
    }
}

static void shuffle_ints(int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below((uint32_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ------------------------------------------------------------------------ */
/* The reference and the checks                                              */
/* ------------------------------------------------------------------------ */

static int32_t term_count(const tes_query_desc_t *d)
{
    int32_t n = 0;
    while (n < TES_MAX_TERMS && d->terms[n].comp)
        n++;
    return n;
}

/* Brute force: does live entity e satisfy d, by tes_has alone? */
static bool ref_match(const fx_t *fx, const tes_query_desc_t *d, tes_entity_t e)
{
    bool named_disabled = false, named_prefab = false;
    for (int32_t i = 0; i < term_count(d); i++) {
        const tes_term_t *t = &d->terms[i];
        bool has = tes_has(fx->w, e, t->comp);
        if (size_of(fx, t->comp))
            assert_int_equal(has, tes_get(fx->w, e, t->comp) != NULL);
        named_disabled |= t->comp == TES_DISABLED;
        named_prefab |= t->comp == TES_PREFAB;
        if (t->oper == TES_AND && !has)
            return false;
        if (t->oper == TES_NOT && has)
            return false;
    }
    if (!named_disabled && !(d->flags & TES_QUERY_INCLUDE_DISABLED) &&
        tes_has(fx->w, e, TES_DISABLED))
        return false;
    if (!named_prefab && !(d->flags & TES_QUERY_INCLUDE_PREFAB) && tes_has(fx->w, e, TES_PREFAB))
        return false;
    return true;
}

static void check_value(fx_t *fx, tes_entity_t e, int k, const void *p)
{
    assert_non_null(p);
    const val_t *want = expect_of(fx, e, k);
    if (memcmp(p, want, sizeof *want) != 0) {
        const val_t *got = p;
        fail_msg("entity %llx comp %s: value {%x, %u, %llu}, expected {%x, %u, %llu}",
                 (unsigned long long)e, kinds[k].name, got->magic, got->comp,
                 (unsigned long long)got->stamp, want->magic, want->comp,
                 (unsigned long long)want->stamp);
    }
}

/* The chunk contract for term i of a chunk. */
static void check_field(fx_t *fx, const tes_iter_t *it, const tes_term_t *t, int32_t i)
{
    void *f = tes_field(it, i);
    size_t size = size_of(fx, t->comp);
    if (t->oper == TES_NOT || size == 0) {
        assert_null(f);
        return;
    }
    if (t->oper == TES_OPTIONAL && !f) {
        for (int32_t k = 0; k < it->count; k++)
            assert_null(tes_get(fx->w, it->entities[k], t->comp));
        return;
    }
    assert_non_null(f);
    int kind = kind_of(fx, t->comp);
    for (int32_t k = 0; k < it->count; k++) {
        const void *p = tes_get(fx->w, it->entities[k], t->comp);
        assert_ptr_equal((uint8_t *)f + (size_t)k * size, p);
        check_value(fx, it->entities[k], kind, p);
    }
}

/* Iterates q (built from d) and compares with the brute-force reference
 * over every live entity: same set, each entity once, every chunk
 * satisfying the contract, tes_query_count agreeing. Writes the entities
 * in iteration order to seq (up to cap). Returns the match count. */
static int32_t verify(fx_t *fx, tes_query_t *q, const tes_query_desc_t *d, tes_entity_t *seq,
                      int32_t cap)
{
    tes_world_t *w = fx->w;
    int32_t nterms = term_count(d);
    assert_int_equal(fx->nlive, tes_entity_count(w));
    uint8_t *want = fx->want, *seen = fx->seen;
    memset(want, 0, fx->expect_rows);
    memset(seen, 0, fx->expect_rows);
    int32_t expected = 0;
    for (int32_t i = 0; i < fx->nlive; i++) {
        tes_entity_t e = fx->live[i];
        assert_true(tes_alive(w, e));
        if (ref_match(fx, d, e)) {
            want[tes_entity_index(e)] = 1;
            expected++;
        }
    }
    bool was_deferred = tes_is_deferred(w);
    int32_t got = 0;
    tes_iter_t it = tes_query_iter(q);
    assert_ptr_equal(it.world, w);
    assert_true(tes_is_deferred(w));
    while (tes_iter_next(&it)) {
        assert_true(it.count > 0);
        assert_non_null(it.entities);
        assert_ptr_equal(it.world, w);
        for (int32_t t = 0; t < nterms; t++)
            check_field(fx, &it, &d->terms[t], t);
        for (int32_t t = nterms; t < TES_MAX_TERMS; t++)
            assert_null(tes_field(&it, t));
        assert_null(tes_field(&it, -1));
        assert_null(tes_field(&it, TES_MAX_TERMS));
        for (int32_t k = 0; k < it.count; k++) {
            tes_entity_t e = it.entities[k];
            assert_true(tes_alive(w, e));
            uint32_t idx = tes_entity_index(e);
            assert_true(idx < fx->expect_rows);
            if (!want[idx])
                fail_msg("query yielded %llx, which the reference rejects",
                         (unsigned long long)e);
            if (seen[idx])
                fail_msg("query yielded %llx twice", (unsigned long long)e);
            seen[idx] = 1;
            if (seq && got < cap)
                seq[got] = e;
            got++;
        }
    }
    assert_false(tes_iter_next(&it));
    assert_int_equal(tes_is_deferred(w), was_deferred);
    if (got != expected)
        fail_msg("query yielded %d entities, the reference %d", got, expected);
    assert_int_equal(tes_query_count(q), expected);
    return got;
}

/* Builds a descriptor term by term. */
static void desc_add(tes_query_desc_t *d, tes_comp_t c, tes_oper_t oper)
{
    int32_t n = term_count(d);
    assert_true(n < TES_MAX_TERMS);
    d->terms[n] = (tes_term_t){.comp = c, .oper = oper, .access = TES_INOUT};
}

/* Creates, verifies and frees a query; returns the match count. */
static int32_t verify_once(fx_t *fx, const tes_query_desc_t *d)
{
    tes_query_t *q = tes_query_new(fx->w, d);
    assert_non_null(q);
    int32_t n = verify(fx, q, d, NULL, 0);
    tes_query_free(q);
    return n;
}

/* Entities yielded by q, in order, into out (returns the count). */
static int32_t collect(tes_query_t *q, tes_entity_t *out, int32_t cap)
{
    int32_t n = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++) {
            if (n < cap)
                out[n] = it.entities[k];
            n++;
        }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Random worlds and queries                                                 */
/* ------------------------------------------------------------------------ */

static int random_data_kind(void)
{
    for (;;) {
        int k = (int)rng_below(K_COUNT);
        if (kinds[k].size)
            return k;
    }
}

/* A new entity with a random set of components, in random order. */
static tes_entity_t fx_random_entity(fx_t *fx)
{
    tes_entity_t e = fx_spawn(fx);
    if (rng_chance(10))
        return e; /* no components at all */
    int order[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        order[k] = k;
    shuffle_ints(order, K_COUNT);
    for (int i = 0; i < K_COUNT; i++) {
        if (!rng_chance(40))
            continue;
        int k = order[i];
        if (rng_chance(50))
            fx_set(fx, e, k);
        else if (rng_chance(50) || !kinds[k].size)
            fx_add(fx, e, k);
        else
            fx_ensure(fx, e, k);
    }
    if (rng_chance(10))
        assert_int_equal(tes_disable(fx->w, e), TES_OK);
    if (rng_chance(8))
        assert_int_equal(tes_add(fx->w, e, TES_PREFAB), TES_OK);
    return e;
}

/* One random structural operation on the fixture's world. With deferred,
 * only operations whose outcome on the shadow does not depend on the
 * components present at the flush (no tes_add, no tes_ensure). */
static void fx_random_op(fx_t *fx, bool deferred, int32_t target_live)
{
    tes_world_t *w = fx->w;
    uint32_t r = rng_below(100);
    if (fx->nlive == 0 || r < 6 || (fx->nlive < target_live / 2 && r < 30)) {
        if (deferred) {
            tes_entity_t e = fx_spawn(fx);
            fx_set(fx, e, (int)rng_below(K_COUNT));
        } else {
            fx_random_entity(fx);
        }
        return;
    }
    tes_entity_t e = fx->live[rng_below((uint32_t)fx->nlive)];
    if (fx->nlive > target_live * 3 / 2 && r < 40) {
        fx_destroy(fx, e);
        return;
    }
    int k = (int)rng_below(K_COUNT);
    if (r < 10) {
        int ks[K_COUNT];
        for (int i = 0; i < K_COUNT; i++)
            ks[i] = i;
        shuffle_ints(ks, K_COUNT);
        fx_spawn_n(fx, 1 + (int32_t)rng_below(6), ks, (int32_t)rng_below(4));
    } else if (r < 34) {
        fx_set(fx, e, k);
    } else if (r < 42) {
        if (deferred)
            fx_set(fx, e, k);
        else
            fx_add(fx, e, k);
    } else if (r < 47) {
        if (deferred)
            fx_set(fx, e, k);
        else
            fx_ensure(fx, e, random_data_kind());
    } else if (r < 62) {
        assert_int_equal(tes_remove(w, e, fx->id[k]), TES_OK);
    } else if (r < 68) {
        fx_destroy(fx, e);
    } else if (r < 71) {
        assert_int_equal(tes_clear(w, e), TES_OK);
    } else if (r < 76) {
        fx_clone(fx, e);
    } else if (r < 82) {
        assert_int_equal(tes_disable(w, e), TES_OK);
    } else if (r < 89) {
        assert_int_equal(tes_enable(w, e), TES_OK);
    } else if (r < 93) {
        if (rng_chance(50))
            assert_int_equal(tes_add(w, e, TES_PREFAB), TES_OK);
        else
            assert_int_equal(tes_remove(w, e, TES_PREFAB), TES_OK);
    } else {
        for (int i = 0; i < K_COUNT; i++)
            if (rng_chance(30))
                assert_int_equal(tes_remove(w, e, fx->id[i]), TES_OK);
    }
}

static void fx_populate(fx_t *fx, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        fx_random_entity(fx);
    /* Churn: holes in every store (tombstones in the stable one), reused
     * slots, moved rows. */
    for (int32_t i = 0; i < n / 2; i++)
        fx_random_op(fx, false, n);
}

/* A random descriptor over every component kind and the two built-in
 * tags, with random operators, access modes and include flags. */
static void random_desc(const fx_t *fx, tes_query_desc_t *d)
{
    memset(d, 0, sizeof *d);
    tes_comp_t cand[K_COUNT + 2];
    int idx[K_COUNT + 2];
    for (int k = 0; k < K_COUNT; k++)
        cand[k] = fx->id[k];
    cand[K_COUNT] = TES_DISABLED;
    cand[K_COUNT + 1] = TES_PREFAB;
    for (int i = 0; i < K_COUNT + 2; i++)
        idx[i] = i;
    shuffle_ints(idx, K_COUNT + 2);
    int32_t n = 1 + (int32_t)rng_below(5);
    for (int32_t i = 0; i < n; i++) {
        uint32_t r = rng_below(100);
        d->terms[i].comp = cand[idx[i]];
        d->terms[i].oper = r < 50 ? TES_AND : r < 75 ? TES_NOT : TES_OPTIONAL;
        d->terms[i].access = (tes_access_t)rng_below(4);
    }
    d->flags = rng_below(4); /* INCLUDE_DISABLED | INCLUDE_PREFAB */
}

/* ------------------------------------------------------------------------ */
/* Brute-force reference                                                     */
/* ------------------------------------------------------------------------ */

/* Random worlds and random queries: every query's matches, fields and count
 * equal the reference, for queries created before and after the world
 * changed (new tables reach the cache), and both freed queries and queries
 * left to tes_world_free. */
static void test_query_random_reference(void **state)
{
    (void)state;
    enum { KEPT = 40, ONE_SHOT = 150 };
    for (uint64_t seed = 1; seed <= 4; seed++) {
        rng_seed(seed * 7919);
        fx_t *fx = fx_new();
        tes_query_t *kept[KEPT];
        tes_query_desc_t kept_desc[KEPT];
        /* A few cached queries exist before the first entity. */
        for (int i = 0; i < KEPT / 4; i++) {
            random_desc(fx, &kept_desc[i]);
            kept[i] = tes_query_new(fx->w, &kept_desc[i]);
            assert_non_null(kept[i]);
        }
        fx_populate(fx, 300);
        check(fx->w);
        for (int i = KEPT / 4; i < KEPT; i++) {
            random_desc(fx, &kept_desc[i]);
            kept[i] = tes_query_new(fx->w, &kept_desc[i]);
            assert_non_null(kept[i]);
        }
        int32_t total = 0;
        for (int i = 0; i < KEPT; i++)
            total += verify(fx, kept[i], &kept_desc[i], NULL, 0);
        for (int i = 0; i < ONE_SHOT; i++) {
            tes_query_desc_t d;
            random_desc(fx, &d);
            total += verify_once(fx, &d);
        }
        assert_true(total > 0);
        /* The world changes: new tables, moved rows, reordered stores. */
        for (int i = 0; i < 100; i++)
            fx_random_entity(fx);
        for (int i = 0; i < 200; i++)
            fx_random_op(fx, false, 300);
        check(fx->w);
        for (int i = 0; i < KEPT; i++)
            verify(fx, kept[i], &kept_desc[i], NULL, 0);
        for (int i = 0; i < KEPT; i += 2)
            tes_query_free(kept[i]);
        for (int i = 1; i < KEPT; i += 2)
            verify(fx, kept[i], &kept_desc[i], NULL, 0);
        check(fx->w);
        fx_free(fx); /* odd queries are left to the world */
    }
}

/* Every operator on every storage kind, term by term: AND, NOT and
 * OPTIONAL of each kind alone and next to a table AND term (table walk)
 * and a sparse AND term (driven walk). */
static void test_query_each_operator_each_kind(void **state)
{
    (void)state;
    rng_seed(42);
    fx_t *fx = fx_new();
    fx_populate(fx, 250);
    check(fx->w);
    tes_comp_t extra[] = {TES_DISABLED, TES_PREFAB};
    for (int k = 0; k < K_COUNT + 2; k++) {
        tes_comp_t c = k < K_COUNT ? fx->id[k] : extra[k - K_COUNT];
        for (int oper = TES_AND; oper <= TES_OPTIONAL; oper++) {
            for (int base = -1; base < 2; base++) {
                tes_comp_t with = base == 0 ? fx->id[K_TA] : base == 1 ? fx->id[K_SA] : 0;
                if (with == c)
                    continue;
                for (uint32_t flags = 0; flags < 4; flags++) {
                    tes_query_desc_t d = {.flags = flags};
                    if (with)
                        desc_add(&d, with, TES_AND);
                    desc_add(&d, c, (tes_oper_t)oper);
                    verify_once(fx, &d);
                    /* the same terms the other way round */
                    tes_query_desc_t r = {.flags = flags};
                    desc_add(&r, c, (tes_oper_t)oper);
                    if (with)
                        desc_add(&r, with, TES_AND);
                    verify_once(fx, &r);
                }
            }
        }
    }
    check(fx->w);
    fx_free(fx);
}

/* ------------------------------------------------------------------------ */
/* The three walks                                                           */
/* ------------------------------------------------------------------------ */

/* A query with a table AND term walks tables: one chunk per non-empty
 * matching table, each chunk's entities sharing one component set. */
static void test_query_table_walk(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    const int sets[][3] = {{K_TA, -1, -1}, {K_TA, K_TT, -1}, {K_TA, K_TB, -1}, {K_TB, -1, -1},
                           {-1, -1, -1}};
    const int32_t counts[] = {10, 7, 5, 3, 4};
    for (int s = 0; s < 5; s++)
        for (int32_t i = 0; i < counts[s]; i++) {
            tes_entity_t e = fx_spawn(fx);
            for (int j = 0; j < 3; j++)
                if (sets[s][j] >= 0)
                    fx_set(fx, e, sets[s][j]);
        }
    /* An emptied table must be skipped. */
    tes_entity_t gone = fx_spawn(fx);
    fx_set(fx, gone, K_TA);
    fx_set(fx, gone, K_TT);
    fx_set(fx, gone, K_TB);
    fx_destroy(fx, gone);

    tes_query_desc_t d = {0};
    desc_add(&d, fx->id[K_TA], TES_AND);
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_int_equal(verify(fx, q, &d, NULL, 0), 22);
    int32_t chunks = 0, sum = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        chunks++;
        sum += it.count;
        assert_true(it.count == 10 || it.count == 7 || it.count == 5);
        tes_comp_t first[8], other[8];
        int32_t n = tes_components_of(w, it.entities[0], first, 8);
        for (int32_t k = 1; k < it.count; k++) {
            assert_int_equal(tes_components_of(w, it.entities[k], other, 8), n);
            assert_memory_equal(first, other, (size_t)n * sizeof *first);
        }
    }
    assert_int_equal(chunks, 3);
    assert_int_equal(sum, 22);
    tes_query_free(q);

    tes_query_desc_t not_tag = {0};
    desc_add(&not_tag, fx->id[K_TA], TES_AND);
    desc_add(&not_tag, fx->id[K_TT], TES_NOT);
    assert_int_equal(verify_once(fx, &not_tag), 15);

    tes_query_desc_t opt = {0};
    desc_add(&opt, fx->id[K_TA], TES_AND);
    desc_add(&opt, fx->id[K_TB], TES_OPTIONAL);
    q = tes_query_new(w, &opt);
    assert_int_equal(verify(fx, q, &opt, NULL, 0), 22);
    int32_t with_tb = 0, without_tb = 0;
    it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        if (tes_field(&it, 1))
            with_tb += it.count;
        else
            without_tb += it.count;
    }
    assert_int_equal(with_tb, 5);
    assert_int_equal(without_tb, 17);
    tes_query_free(q);

    tes_query_desc_t tag = {0};
    desc_add(&tag, fx->id[K_TT], TES_AND);
    assert_int_equal(verify_once(fx, &tag), 7);

    tes_query_desc_t tb = {0};
    desc_add(&tb, fx->id[K_TB], TES_AND);
    desc_add(&tb, fx->id[K_TT], TES_OPTIONAL);
    desc_add(&tb, fx->id[K_TA], TES_NOT);
    assert_int_equal(verify_once(fx, &tb), 3);
    check(w);
    fx_free(fx);
}

/* Table walk with sparse terms: only the rows that satisfy the sparse terms,
 * each chunk's sparse fields contiguous too. */
static void test_query_table_walk_sparse_terms(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    /* SA added in table order for the first 40, in reverse for the next 40;
     * every third entity has no SA, every fifth has SG. */
    tes_entity_t ents[80];
    for (int i = 0; i < 80; i++) {
        ents[i] = fx_spawn(fx);
        fx_set(fx, ents[i], K_TA);
    }
    for (int i = 0; i < 40; i++)
        if (i % 3)
            fx_set(fx, ents[i], K_SA);
    for (int i = 79; i >= 40; i--)
        if (i % 3)
            fx_set(fx, ents[i], K_SA);
    for (int i = 0; i < 80; i += 5)
        fx_set(fx, ents[i], K_SG);
    for (int i = 0; i < 80; i += 7)
        fx_set(fx, ents[i], K_ST);

    tes_query_desc_t d = {0};
    desc_add(&d, fx->id[K_TA], TES_AND);
    desc_add(&d, fx->id[K_SA], TES_AND);
    tes_query_t *q = tes_query_new(fx->w, &d);
    assert_int_equal(verify(fx, q, &d, NULL, 0), 53);
    /* the in-order half comes in long runs, not one entity per chunk */
    int32_t longest = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        if (it.count > longest)
            longest = it.count;
    assert_true(longest >= 2);
    tes_query_free(q);

    tes_query_desc_t mix = {0};
    desc_add(&mix, fx->id[K_SG], TES_NOT);
    desc_add(&mix, fx->id[K_TA], TES_AND);
    desc_add(&mix, fx->id[K_ST], TES_OPTIONAL);
    desc_add(&mix, fx->id[K_SA], TES_OPTIONAL);
    assert_int_equal(verify_once(fx, &mix), 64);
    check(fx->w);
    fx_free(fx);
}

/* Only sparse AND terms: the smallest pool drives, whatever the term order;
 * the order of the yield is the driving pool's packed order. */
static void test_query_driven_smallest_pool(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    tes_entity_t e[100];
    for (int i = 0; i < 100; i++) {
        e[i] = fx_spawn(fx);
        fx_set(fx, e[i], K_SA); /* SA packed: e0 .. e99 */
    }
    /* SB on every tenth entity, added in descending order. */
    for (int i = 99; i >= 0; i -= 10)
        fx_set(fx, e[i], K_SB);

    tes_query_desc_t ab = {0}, ba = {0};
    desc_add(&ab, fx->id[K_SA], TES_AND);
    desc_add(&ab, fx->id[K_SB], TES_AND);
    desc_add(&ba, fx->id[K_SB], TES_AND);
    desc_add(&ba, fx->id[K_SA], TES_AND);
    tes_query_t *qab = tes_query_new(w, &ab), *qba = tes_query_new(w, &ba);
    assert_non_null(qab);
    assert_non_null(qba);
    tes_entity_t seq[16];
    /* SB (10) is smaller than SA (100): SB's order, descending. */
    assert_int_equal(verify(fx, qab, &ab, seq, 16), 10);
    for (int i = 0; i < 10; i++)
        assert_true(seq[i] == e[99 - 10 * i]);
    assert_int_equal(verify(fx, qba, &ba, seq, 16), 10);
    for (int i = 0; i < 10; i++)
        assert_true(seq[i] == e[99 - 10 * i]);

    /* SB grows past SA: SA drives now, ascending. */
    for (int i = 0; i < 150; i++)
        fx_set(fx, fx_spawn(fx), K_SB);
    assert_int_equal(verify(fx, qab, &ab, seq, 16), 10);
    for (int i = 0; i < 10; i++)
        assert_true(seq[i] == e[9 + 10 * i]);
    assert_int_equal(verify(fx, qba, &ba, seq, 16), 10);
    for (int i = 0; i < 10; i++)
        assert_true(seq[i] == e[9 + 10 * i]);
    tes_query_free(qab);
    tes_query_free(qba);

    /* A stable driver with tombstones; sparse NOT and OPTIONAL terms, a
     * table NOT term and a table OPTIONAL term next to it. */
    for (int i = 0; i < 100; i++)
        if (i % 4 != 1)
            fx_set(fx, e[i], K_ST);
    for (int i = 0; i < 100; i += 8)
        assert_int_equal(tes_remove(w, e[i], fx->id[K_ST]), TES_OK);
    for (int i = 0; i < 100; i += 6)
        fx_set(fx, e[i], K_SG);
    for (int i = 0; i < 100; i += 9)
        fx_set(fx, e[i], K_TT);
    for (int i = 0; i < 100; i += 4)
        fx_set(fx, e[i], K_TA);
    tes_query_desc_t st = {0};
    desc_add(&st, fx->id[K_ST], TES_AND);
    desc_add(&st, fx->id[K_SG], TES_NOT);
    desc_add(&st, fx->id[K_SB], TES_OPTIONAL);
    desc_add(&st, fx->id[K_TT], TES_NOT);
    desc_add(&st, fx->id[K_TA], TES_OPTIONAL);
    int32_t want = 0;
    for (int i = 0; i < 100; i++)
        want += i % 4 != 1 && i % 8 != 0 && i % 6 != 0 && i % 9 != 0;
    assert_int_equal(verify_once(fx, &st), want);

    /* Sparse tags only. */
    tes_query_desc_t tags = {0};
    desc_add(&tags, fx->id[K_SG], TES_AND);
    desc_add(&tags, fx->id[K_SA], TES_OPTIONAL);
    assert_int_equal(verify_once(fx, &tags), 17);
    check(w);
    fx_free(fx);
}

/* Only NOT / OPTIONAL terms: every entity is a candidate, including
 * entities with no component at all and entities with only sparse ones
 * (more of them than one root chunk holds). */
static void test_query_not_optional_only(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    tes_entity_t empty[70], sparse_only[10], with_ta[5], with_tt[3], dis[2];
    for (int i = 0; i < 70; i++)
        empty[i] = fx_spawn(fx);
    for (int i = 0; i < 10; i++) {
        sparse_only[i] = fx_spawn(fx);
        fx_set(fx, sparse_only[i], i % 2 ? K_SA : K_SG);
    }
    for (int i = 0; i < 5; i++) {
        with_ta[i] = fx_spawn(fx);
        fx_set(fx, with_ta[i], K_TA);
    }
    for (int i = 0; i < 3; i++) {
        with_tt[i] = fx_spawn(fx);
        fx_set(fx, with_tt[i], K_TT);
        fx_set(fx, with_tt[i], K_SA);
    }
    for (int i = 0; i < 2; i++) {
        dis[i] = fx_spawn(fx);
        assert_int_equal(tes_disable(w, dis[i]), TES_OK);
    }
    /* Holes in the index: destroyed and reused slots in the middle. */
    for (int i = 10; i < 70; i += 10)
        fx_destroy(fx, empty[i]);

    tes_query_desc_t not_tt = {0};
    desc_add(&not_tt, fx->id[K_TT], TES_NOT);
    tes_query_t *q = tes_query_new(w, &not_tt);
    assert_int_equal(verify(fx, q, &not_tt, NULL, 0), 64 + 10 + 5);
    /* entities with no component at all are matched */
    bool saw_empty = false;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        for (int32_t k = 0; k < it.count; k++)
            saw_empty |= it.entities[k] == empty[0];
    assert_true(saw_empty);
    tes_query_free(q);

    tes_query_desc_t opt_sa = {0};
    desc_add(&opt_sa, fx->id[K_SA], TES_OPTIONAL);
    assert_int_equal(verify_once(fx, &opt_sa), 64 + 10 + 5 + 3);
    tes_query_desc_t not_sa = {0};
    desc_add(&not_sa, fx->id[K_SA], TES_NOT);
    assert_int_equal(verify_once(fx, &not_sa), 64 + 5 + 5);
    tes_query_desc_t mix = {.flags = TES_QUERY_INCLUDE_DISABLED};
    desc_add(&mix, fx->id[K_TA], TES_OPTIONAL);
    desc_add(&mix, fx->id[K_SG], TES_NOT);
    desc_add(&mix, fx->id[K_ST], TES_OPTIONAL);
    desc_add(&mix, fx->id[K_TT], TES_OPTIONAL);
    assert_int_equal(verify_once(fx, &mix), 64 + 5 + 5 + 3 + 2);
    tes_query_desc_t opt_dis = {0};
    desc_add(&opt_dis, TES_DISABLED, TES_OPTIONAL);
    assert_int_equal(verify_once(fx, &opt_dis), 64 + 10 + 5 + 3 + 2);
    tes_query_desc_t not_prefab = {0};
    desc_add(&not_prefab, TES_PREFAB, TES_NOT);
    desc_add(&not_prefab, fx->id[K_SB], TES_NOT);
    assert_int_equal(verify_once(fx, &not_prefab), 64 + 10 + 5 + 3);

    /* A value on many root entities: optional fields in runs. */
    for (int i = 0; i < 70; i++)
        if (tes_alive(w, empty[i]) && i % 3)
            fx_set(fx, empty[i], K_SC);
    tes_query_desc_t opt_sc = {0};
    desc_add(&opt_sc, fx->id[K_SC], TES_OPTIONAL);
    desc_add(&opt_sc, fx->id[K_TT], TES_NOT);
    assert_int_equal(verify_once(fx, &opt_sc), 64 + 10 + 5);
    check(w);
    fx_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Default filters                                                           */
/* ------------------------------------------------------------------------ */

/* TES_DISABLED and TES_PREFAB hide entities unless a term names the tag
 * (AND, OPTIONAL or NOT) or an INCLUDE flag is set; table, sparse and
 * NOT-only queries alike. */
static void test_query_default_filters(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    const int bases[] = {K_TA, K_SA, K_ST, K_SG};
    for (int b = 0; b < 4; b++) {
        int k = bases[b];
        tes_entity_t plain = fx_spawn(fx), dis = fx_spawn(fx), pre = fx_spawn(fx),
                     both = fx_spawn(fx);
        tes_entity_t all[] = {plain, dis, pre, both};
        for (int i = 0; i < 4; i++)
            fx_set(fx, all[i], k);
        assert_int_equal(tes_disable(w, dis), TES_OK);
        assert_int_equal(tes_add(w, pre, TES_PREFAB), TES_OK);
        assert_int_equal(tes_add(w, both, TES_PREFAB), TES_OK);
        assert_int_equal(tes_disable(w, both), TES_OK);
        assert_false(tes_enabled(w, dis));
        assert_true(tes_enabled(w, plain));

        struct {
            uint32_t flags;
            tes_comp_t tag1;
            tes_oper_t op1;
            tes_comp_t tag2;
            tes_oper_t op2;
            int32_t want;
        } cases[] = {
            {0, 0, TES_AND, 0, TES_AND, 1},
            {TES_QUERY_INCLUDE_DISABLED, 0, TES_AND, 0, TES_AND, 2},
            {TES_QUERY_INCLUDE_PREFAB, 0, TES_AND, 0, TES_AND, 2},
            {TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB, 0, TES_AND, 0, TES_AND, 4},
            {0, TES_DISABLED, TES_AND, 0, TES_AND, 1},
            {0, TES_DISABLED, TES_OPTIONAL, 0, TES_AND, 2},
            {0, TES_DISABLED, TES_NOT, 0, TES_AND, 1},
            {0, TES_PREFAB, TES_AND, 0, TES_AND, 1},
            {0, TES_PREFAB, TES_OPTIONAL, 0, TES_AND, 2},
            {0, TES_PREFAB, TES_NOT, 0, TES_AND, 1},
            {0, TES_DISABLED, TES_OPTIONAL, TES_PREFAB, TES_OPTIONAL, 4},
            {0, TES_DISABLED, TES_AND, TES_PREFAB, TES_AND, 1},
            {0, TES_DISABLED, TES_AND, TES_PREFAB, TES_OPTIONAL, 2},
            {TES_QUERY_INCLUDE_PREFAB, TES_DISABLED, TES_NOT, 0, TES_AND, 2},
            {TES_QUERY_INCLUDE_DISABLED, TES_PREFAB, TES_AND, 0, TES_AND, 2},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            tes_query_desc_t d = {.flags = cases[c].flags};
            desc_add(&d, fx->id[k], TES_AND);
            if (cases[c].tag1)
                desc_add(&d, cases[c].tag1, cases[c].op1);
            if (cases[c].tag2)
                desc_add(&d, cases[c].tag2, cases[c].op2);
            int32_t got = verify_once(fx, &d);
            if (got != cases[c].want)
                fail_msg("base %s case %zu: %d matches, want %d", kinds[k].name, c, got,
                         cases[c].want);
        }
        /* NOT-only queries filter too. */
        tes_query_desc_t n = {0};
        desc_add(&n, fx->id[K_TB], TES_NOT);
        verify_once(fx, &n);
        n.flags = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB;
        verify_once(fx, &n);
        for (int i = 0; i < 4; i++)
            fx_destroy(fx, all[i]);
    }

    /* tes_disable / tes_enable move entities out of and into a query that
     * already exists (table, driven, not-only, group). */
    tes_entity_t e = fx_spawn(fx), s = fx_spawn(fx), root = fx_spawn(fx);
    fx_set(fx, e, K_TA);
    fx_set(fx, e, K_SA);
    fx_set(fx, s, K_SA);
    tes_query_desc_t dt = {0}, ds = {0}, dn = {0}, dg = {.flags = TES_QUERY_NONOWNING_GROUP};
    desc_add(&dt, fx->id[K_TA], TES_AND);
    desc_add(&ds, fx->id[K_SA], TES_AND);
    desc_add(&dn, fx->id[K_TT], TES_NOT);
    desc_add(&dg, fx->id[K_SA], TES_AND);
    tes_query_t *qt = tes_query_new(w, &dt), *qs = tes_query_new(w, &ds),
                *qn = tes_query_new(w, &dn), *qg = tes_query_new(w, &dg);
    assert_int_equal(verify(fx, qt, &dt, NULL, 0), 1);
    assert_int_equal(verify(fx, qs, &ds, NULL, 0), 2);
    assert_int_equal(verify(fx, qn, &dn, NULL, 0), 3);
    assert_int_equal(verify(fx, qg, &dg, NULL, 0), 2);
    assert_int_equal(tes_disable(w, e), TES_OK);
    assert_int_equal(tes_disable(w, s), TES_OK);
    assert_int_equal(tes_disable(w, root), TES_OK);
    assert_int_equal(verify(fx, qt, &dt, NULL, 0), 0);
    assert_int_equal(verify(fx, qs, &ds, NULL, 0), 0);
    assert_int_equal(verify(fx, qn, &dn, NULL, 0), 0);
    assert_int_equal(verify(fx, qg, &dg, NULL, 0), 0);
    assert_int_equal(tes_disable(w, e), TES_OK); /* idempotent */
    assert_int_equal(tes_enable(w, e), TES_OK);
    assert_int_equal(tes_enable(w, root), TES_OK);
    assert_true(tes_enabled(w, e));
    assert_int_equal(verify(fx, qt, &dt, NULL, 0), 1);
    assert_int_equal(verify(fx, qs, &ds, NULL, 0), 1);
    assert_int_equal(verify(fx, qn, &dn, NULL, 0), 2);
    assert_int_equal(verify(fx, qg, &dg, NULL, 0), 1);
    assert_int_equal(tes_enable(w, s), TES_OK);
    assert_int_equal(tes_enable(w, s), TES_OK); /* idempotent */
    assert_int_equal(verify(fx, qs, &ds, NULL, 0), 2);
    assert_int_equal(verify(fx, qg, &dg, NULL, 0), 2);
    assert_int_equal(verify(fx, qn, &dn, NULL, 0), 3);
    tes_query_free(qt);
    tes_query_free(qs);
    tes_query_free(qn);
    tes_query_free(qg);
    check(w);
    fx_free(fx);
}

/* ------------------------------------------------------------------------ */
/* The table cache                                                           */
/* ------------------------------------------------------------------------ */

/* Tables created after a query (by tes_add, tes_spawn_n, tes_clone, a
 * component registered later) reach its cache. */
static void test_query_cache_new_tables(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    tes_query_desc_t d[6];
    memset(d, 0, sizeof d);
    desc_add(&d[0], fx->id[K_TA], TES_AND);
    desc_add(&d[1], fx->id[K_TA], TES_AND);
    desc_add(&d[1], fx->id[K_TT], TES_NOT);
    desc_add(&d[2], fx->id[K_TB], TES_OPTIONAL);
    desc_add(&d[3], fx->id[K_SA], TES_AND);
    desc_add(&d[3], fx->id[K_TB], TES_OPTIONAL);
    desc_add(&d[4], fx->id[K_SA], TES_NOT);
    desc_add(&d[5], fx->id[K_TA], TES_AND);
    desc_add(&d[5], fx->id[K_TB], TES_AND);
    d[5].flags = TES_QUERY_INCLUDE_DISABLED;
    tes_query_t *q[6];
    for (int i = 0; i < 6; i++) {
        q[i] = tes_query_new(w, &d[i]);
        assert_non_null(q[i]);
        assert_int_equal(verify(fx, q[i], &d[i], NULL, 0), 0);
    }
    tes_world_stats_t before;
    assert_int_equal(tes_world_stats(w, &before), TES_OK);
    tes_entity_t a = fx_spawn(fx);
    fx_set(fx, a, K_TA); /* new table {TA} */
    fx_set(fx, a, K_TB); /* new table {TA, TB} */
    fx_set(fx, a, K_SA);
    for (int i = 0; i < 6; i++)
        verify(fx, q[i], &d[i], NULL, 0);
    int ks[] = {K_TA, K_TT, K_TB, K_SA};
    fx_spawn_n(fx, 5, ks, 4); /* new table {TA, TB, TT} straight from spawn_n */
    tes_entity_t c = fx_clone(fx, a);
    assert_int_equal(tes_disable(w, c), TES_OK); /* new table {TA, TB, DISABLED} */
    /* A component registered after the queries, and its tables. */
    tes_component_desc_t late = {.name = "Late"}; /* a tag */
    tes_comp_t lc = tes_component(w, &late);
    assert_true(lc != 0);
    tes_entity_t l = fx_spawn(fx);
    fx_set(fx, l, K_TA);
    assert_int_equal(tes_add(w, l, lc), TES_OK);
    assert_int_equal(tes_add(w, fx_spawn(fx), lc), TES_OK);
    tes_world_stats_t after;
    assert_int_equal(tes_world_stats(w, &after), TES_OK);
    assert_true(after.tables >= before.tables + 6);
    /* a, the five of spawn_n, c (disabled), l, and the Late-only entity */
    int32_t want[6] = {1 + 5 + 1, 1 + 1, 1 + 5 + 1 + 1, 1 + 5, 1 + 1, 1 + 5 + 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(verify(fx, q[i], &d[i], NULL, 0), want[i]);
    tes_query_desc_t dl = {0};
    desc_add(&dl, lc, TES_AND);
    desc_add(&dl, fx->id[K_TA], TES_OPTIONAL);
    assert_int_equal(verify_once(fx, &dl), 2);
    for (int i = 0; i < 6; i++)
        tes_query_free(q[i]);
    check(w);
    fx_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Descriptors, early exit, lifetimes                                        */
/* ------------------------------------------------------------------------ */

static void expect_invalid(tes_world_t *w, const tes_query_desc_t *d)
{
    poison_stale(w);
    assert_null(tes_query_new(w, d));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
}

static void invalid_round(fx_t *fx)
{
    tes_world_t *w = fx->w;
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    expect_invalid(w, NULL);
    expect_invalid(w, &d); /* no terms */
    d.flags = TES_QUERY_INCLUDE_DISABLED;
    expect_invalid(w, &d); /* still no terms */

    memset(&d, 0, sizeof d);
    desc_add(&d, 9999, TES_AND); /* unknown component */
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_TA], TES_AND);
    desc_add(&d, 9999, TES_OPTIONAL);
    expect_invalid(w, &d);

    /* repeated component, with any operators */
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_TA], TES_AND);
    desc_add(&d, fx->id[K_TA], TES_NOT);
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_SA], TES_OPTIONAL);
    desc_add(&d, fx->id[K_TB], TES_AND);
    desc_add(&d, fx->id[K_SA], TES_OPTIONAL);
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, TES_DISABLED, TES_NOT);
    desc_add(&d, TES_DISABLED, TES_NOT);
    expect_invalid(w, &d);

    /* bad operator / access */
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_TA], TES_AND);
    d.terms[0].oper = (tes_oper_t)3;
    expect_invalid(w, &d);
    d.terms[0].oper = (tes_oper_t)-1;
    expect_invalid(w, &d);
    d.terms[0].oper = TES_AND;
    d.terms[0].access = (tes_access_t)4;
    expect_invalid(w, &d);
    d.terms[0].access = (tes_access_t)-1;
    expect_invalid(w, &d);
    d.terms[0].access = TES_NOACCESS;

    /* unknown flags, both group flags */
    d.flags = 1u << 5;
    expect_invalid(w, &d);
    d.flags = 1u << 31 | TES_QUERY_INCLUDE_PREFAB;
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_SA], TES_AND);
    d.flags = TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);

    /* group flags without an AND term */
    uint32_t groups[] = {TES_QUERY_NONOWNING_GROUP, TES_QUERY_OWNING_GROUP};
    for (int g = 0; g < 2; g++) {
        memset(&d, 0, sizeof d);
        desc_add(&d, fx->id[K_SA], TES_NOT);
        d.flags = groups[g];
        expect_invalid(w, &d);
        desc_add(&d, fx->id[K_TT], TES_NOT);
        expect_invalid(w, &d);
        memset(&d, 0, sizeof d);
        desc_add(&d, fx->id[K_SA], TES_OPTIONAL);
        desc_add(&d, fx->id[K_SB], TES_NOT);
        d.flags = groups[g];
        expect_invalid(w, &d);
    }

    /* owning group over a stable store, a table AND term, an OPTIONAL term */
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_ST], TES_AND);
    d.flags = TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_SD], TES_AND);
    desc_add(&d, fx->id[K_ST], TES_AND);
    d.flags = TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_SD], TES_AND);
    desc_add(&d, fx->id[K_TA], TES_AND);
    d.flags = TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_TT], TES_AND);
    desc_add(&d, fx->id[K_SD], TES_AND);
    d.flags = TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_SD], TES_AND);
    desc_add(&d, fx->id[K_SC], TES_OPTIONAL);
    d.flags = TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    desc_add(&d, fx->id[K_SD], TES_AND);
    desc_add(&d, fx->id[K_TA], TES_OPTIONAL);
    d.flags = TES_QUERY_OWNING_GROUP;
    expect_invalid(w, &d);
}

/* Every kind of invalid descriptor fails with NULL and TES_ERR_INVALID and
 * leaves nothing behind (a second round allocates nothing more). */
static void test_query_invalid_descs(void **state)
{
    (void)state;
    rng_seed(5);
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    fx_populate(fx, 60);
    assert_null(tes_query_new(NULL, NULL));
    tes_query_desc_t ok = {0};
    desc_add(&ok, fx->id[K_SA], TES_AND);
    assert_null(tes_query_new(NULL, &ok));
    invalid_round(fx);
    uint64_t bytes = bytes_of(w);
    invalid_round(fx);
    assert_int_equal(bytes_of(w), bytes);
    check(w);
    /* Failed owning groups claimed nothing: SD and SC can be owned now. */
    tes_query_desc_t own = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&own, fx->id[K_SD], TES_AND);
    desc_add(&own, fx->id[K_SC], TES_AND);
    desc_add(&own, fx->id[K_TA], TES_NOT);
    tes_query_t *q = tes_query_new(w, &own);
    assert_non_null(q);
    verify(fx, q, &own, NULL, 0);

    /* Terms end at the first zero component; a term set after it is a
     * component id that was never filled in (a registration forgotten),
     * not something to ignore. */
    tes_query_desc_t d = {0};
    desc_add(&d, fx->id[K_TA], TES_AND);
    d.terms[2] = (tes_term_t){.comp = 9999, .oper = (tes_oper_t)7, .access = (tes_access_t)9};
    assert_null(tes_query_new(w, &d));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_string_equal(tes_last_error_detail(w), "terms[1] has component 0 but terms[2] is set: was a component registered?");
    d.terms[2] = (tes_term_t){.comp = 0, .oper = TES_AND, .access = TES_INOUT};
    tes_query_t *q2 = tes_query_new(w, &d);
    assert_non_null(q2);
    verify(fx, q2, &d, NULL, 0);
    tes_query_free(q2);

    /* Sixteen terms, no terminator, every access mode. */
    tes_query_desc_t full = {0};
    desc_add(&full, fx->id[K_TA], TES_AND);
    desc_add(&full, fx->id[K_SA], TES_OPTIONAL);
    desc_add(&full, fx->id[K_ST], TES_OPTIONAL);
    desc_add(&full, fx->id[K_SG], TES_NOT);
    for (int i = 0; full.terms[TES_MAX_TERMS - 1].comp == 0; i++) {
        char name[16];
        snprintf(name, sizeof name, "Extra%d", i);
        tes_component_desc_t cd = {.name = name, .size = (size_t)(i % 2) * 8,
                                   .storage = i % 3 ? TES_STORAGE_TABLE : TES_STORAGE_SPARSE};
        tes_comp_t c = tes_component(w, &cd);
        assert_true(c != 0);
        desc_add(&full, c, i % 2 ? TES_OPTIONAL : TES_NOT);
    }
    for (int i = 0; i < TES_MAX_TERMS; i++)
        full.terms[i].access = (tes_access_t)(i % 4);
    tes_query_t *q16 = tes_query_new(w, &full);
    assert_non_null(q16);
    verify(fx, q16, &full, NULL, 0);
    tes_query_free(q16);
    tes_query_free(q);
    check(w);
    fx_free(fx);
}

/* Leaving a loop early with tes_iter_fini ends the deferred level;
 * tes_iter_fini is idempotent; a finished iterator yields nothing more. */
static void test_query_iter_fini(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    for (int i = 0; i < 100; i++) {
        tes_entity_t e = fx_spawn(fx);
        fx_set(fx, e, K_SA);
        if (i % 2)
            fx_set(fx, e, K_TA);
    }
    tes_query_desc_t d = {0};
    desc_add(&d, fx->id[K_SA], TES_AND);
    desc_add(&d, fx->id[K_TA], TES_OPTIONAL);
    tes_query_t *q = tes_query_new(w, &d);
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_is_deferred(w));
    assert_true(tes_iter_next(&it));
    tes_entity_t first = it.entities[0];
    assert_int_equal(tes_destroy(w, first), TES_OK);
    assert_true(tes_alive(w, first)); /* queued */
    tes_iter_fini(&it);
    assert_false(tes_is_deferred(w));
    assert_false(tes_alive(w, first)); /* applied at the early exit */
    fx_untrack(fx, first);
    assert_int_equal(it.count, 0);
    assert_null(tes_field(&it, 0));
    assert_false(tes_iter_next(&it));
    tes_iter_fini(&it); /* idempotent: no second level closed */
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_iter_fini(&it); /* does not close the user's level either */
    assert_true(tes_is_deferred(w));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_is_deferred(w));
    assert_int_equal(verify(fx, q, &d, NULL, 0), 99);

    /* Fini after the loop ended is harmless. */
    it = tes_query_iter(q);
    while (tes_iter_next(&it))
        ;
    assert_false(tes_is_deferred(w));
    tes_iter_fini(&it);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);

    /* An iterator with no match at all, and a NULL query. */
    tes_query_desc_t none = {0};
    desc_add(&none, fx->id[K_SB], TES_AND);
    tes_query_t *qn = tes_query_new(w, &none);
    it = tes_query_iter(qn);
    assert_false(tes_iter_next(&it));
    assert_false(tes_is_deferred(w));
    assert_int_equal(tes_query_count(qn), 0);
    tes_query_free(qn);
    it = tes_query_iter(NULL);
    assert_false(tes_iter_next(&it));
    tes_iter_fini(&it);
    tes_iter_fini(NULL);
    assert_false(tes_iter_next(NULL));
    assert_null(tes_field(NULL, 0));
    assert_int_equal(tes_query_count(NULL), 0);
    tes_query_free(NULL);
    assert_false(tes_is_deferred(w));

    /* Early exit from every walk (table, driven, all, groups). */
    tes_query_desc_t walks[5];
    memset(walks, 0, sizeof walks);
    desc_add(&walks[0], fx->id[K_TA], TES_AND);
    desc_add(&walks[1], fx->id[K_SA], TES_AND);
    desc_add(&walks[2], fx->id[K_TT], TES_NOT);
    desc_add(&walks[3], fx->id[K_SA], TES_AND);
    walks[3].flags = TES_QUERY_NONOWNING_GROUP;
    desc_add(&walks[4], fx->id[K_SA], TES_AND);
    walks[4].flags = TES_QUERY_OWNING_GROUP;
    for (int i = 0; i < 5; i++) {
        tes_query_t *wq = tes_query_new(w, &walks[i]);
        assert_non_null(wq);
        it = tes_query_iter(wq);
        assert_true(tes_iter_next(&it));
        tes_entity_t e = it.entities[0];
        bool had = tes_has(w, e, fx->id[K_SA]);
        assert_int_equal(tes_remove(w, e, fx->id[K_SA]), TES_OK);
        assert_int_equal(tes_has(w, e, fx->id[K_SA]), had); /* queued */
        tes_iter_fini(&it);
        assert_false(tes_is_deferred(w));
        assert_false(tes_has(w, e, fx->id[K_SA]));
        verify(fx, wq, &walks[i], NULL, 0);
        tes_query_free(wq);
    }
    tes_query_free(q);
    check(w);
    fx_free(fx);
}

/* Queries freed before the world, queries left to tes_world_free (ASan
 * reports leaks), and a create/free loop that allocates nothing new. */
static void test_query_lifetimes(void **state)
{
    (void)state;
    rng_seed(77);
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    fx_populate(fx, 120);
    tes_query_desc_t d[8];
    memset(d, 0, sizeof d);
    desc_add(&d[0], fx->id[K_TA], TES_AND);
    desc_add(&d[1], fx->id[K_SA], TES_AND);
    desc_add(&d[1], fx->id[K_SB], TES_OPTIONAL);
    desc_add(&d[2], fx->id[K_TT], TES_NOT);
    desc_add(&d[3], fx->id[K_SA], TES_AND);
    desc_add(&d[3], fx->id[K_TA], TES_NOT);
    d[3].flags = TES_QUERY_NONOWNING_GROUP;
    desc_add(&d[4], fx->id[K_SB], TES_AND);
    desc_add(&d[4], fx->id[K_SC], TES_AND);
    d[4].flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d[5], fx->id[K_TA], TES_AND);
    desc_add(&d[5], fx->id[K_ST], TES_AND);
    d[5].flags = TES_QUERY_NONOWNING_GROUP;
    desc_add(&d[6], fx->id[K_SD], TES_AND);
    desc_add(&d[6], fx->id[K_SG], TES_NOT);
    d[6].flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d[7], fx->id[K_ST], TES_OPTIONAL);
    /* Warm up every growable array, then loop: no bytes gained. */
    for (int i = 0; i < 8; i++) {
        tes_query_t *q = tes_query_new(w, &d[i]);
        assert_non_null(q);
        verify(fx, q, &d[i], NULL, 0);
        tes_query_free(q);
    }
    uint64_t bytes = bytes_of(w);
    for (int round = 0; round < 50; round++)
        for (int i = 0; i < 8; i++) {
            tes_query_t *q = tes_query_new(w, &d[i]);
            assert_non_null(q);
            assert_true(tes_query_count(q) >= 0);
            tes_query_free(q);
        }
    assert_int_equal(bytes_of(w), bytes);
    /* Some freed before the world, the rest left to it. */
    tes_query_t *q[8];
    for (int i = 0; i < 8; i++) {
        q[i] = tes_query_new(w, &d[i]);
        assert_non_null(q[i]);
    }
    for (int i = 0; i < 50; i++)
        fx_random_op(fx, false, 120);
    for (int i = 0; i < 8; i++)
        verify(fx, q[i], &d[i], NULL, 0);
    tes_query_free(q[1]);
    tes_query_free(q[4]);
    tes_query_free(q[2]);
    for (int i = 0; i < 50; i++)
        fx_random_op(fx, false, 120);
    for (int i = 0; i < 8; i++)
        if (i != 1 && i != 4 && i != 2)
            verify(fx, q[i], &d[i], NULL, 0);
    check(w);
    fx_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Groups                                                                    */
/* ------------------------------------------------------------------------ */

/* One descriptor as a plain query, a non-owning group and (when allowed) an
 * owning group. */
typedef struct gq_t {
    tes_query_desc_t d;
    tes_query_t *plain, *nonowning, *owning;
} gq_t;

static void gq_make(fx_t *fx, gq_t *g, bool owning)
{
    tes_query_desc_t d = g->d;
    g->plain = tes_query_new(fx->w, &d);
    assert_non_null(g->plain);
    d.flags = g->d.flags | TES_QUERY_NONOWNING_GROUP;
    g->nonowning = tes_query_new(fx->w, &d);
    assert_non_null(g->nonowning);
    g->owning = NULL;
    if (owning) {
        d.flags = g->d.flags | TES_QUERY_OWNING_GROUP;
        g->owning = tes_query_new(fx->w, &d);
        assert_non_null(g->owning);
    }
}

/* An owning group's yield is one contiguous run of a packed array, and
 * every owned store holds exactly those entities at its front, in that
 * order (probed with a plain query over the store, which walks it in
 * packed order). */
static void check_owning(fx_t *fx, tes_query_t *q, const tes_query_desc_t *d,
                         const tes_entity_t *seq, int32_t n)
{
    tes_iter_t it = tes_query_iter(q);
    const tes_entity_t *next = NULL;
    int32_t total = 0;
    while (tes_iter_next(&it)) {
        if (next)
            assert_ptr_equal(it.entities, next);
        next = it.entities + it.count;
        total += it.count;
    }
    assert_int_equal(total, n);
    tes_entity_t *probe_seq = fx_seq(fx, 1, (size_t)n + 1);
    for (int32_t i = 0; i < term_count(d); i++) {
        if (d->terms[i].oper != TES_AND)
            continue;
        tes_query_desc_t p = {.flags = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB};
        desc_add(&p, d->terms[i].comp, TES_AND);
        tes_query_t *probe = tes_query_new(fx->w, &p);
        assert_non_null(probe);
        int32_t got = collect(probe, probe_seq, n);
        assert_true(got >= n);
        for (int32_t k = 0; k < n; k++)
            if (probe_seq[k] != seq[k])
                fail_msg("store %s: position %d holds %llx, the group's entity %d is %llx",
                         kinds[kind_of(fx, d->terms[i].comp)].name, k,
                         (unsigned long long)probe_seq[k], k, (unsigned long long)seq[k]);
        tes_query_free(probe);
    }
}

static void gq_verify(fx_t *fx, gq_t *g)
{
    int32_t n = verify(fx, g->plain, &g->d, NULL, 0);
    assert_int_equal(verify(fx, g->nonowning, &g->d, NULL, 0), n);
    if (g->owning) {
        tes_entity_t *seq = fx_seq(fx, 0, (size_t)n + 1);
        assert_int_equal(verify(fx, g->owning, &g->d, seq, n), n);
        check_owning(fx, g->owning, &g->d, seq, n);
    }
}

enum { GQ_COUNT = 6 };

static void gq_specs(fx_t *fx, gq_t *g)
{
    memset(g, 0, GQ_COUNT * sizeof *g);
    /* 0 (owning): two sparse stores, a sparse NOT term */
    desc_add(&g[0].d, fx->id[K_SA], TES_AND);
    desc_add(&g[0].d, fx->id[K_SB], TES_AND);
    desc_add(&g[0].d, fx->id[K_SC], TES_NOT);
    /* 1 (owning): table and sparse-tag NOT terms, disabled included */
    desc_add(&g[1].d, fx->id[K_SC], TES_AND);
    desc_add(&g[1].d, fx->id[K_TT], TES_NOT);
    desc_add(&g[1].d, fx->id[K_SG], TES_NOT);
    g[1].d.flags = TES_QUERY_INCLUDE_DISABLED;
    /* 2: a table AND term, optional stable and table terms, prefabs in */
    desc_add(&g[2].d, fx->id[K_TA], TES_AND);
    desc_add(&g[2].d, fx->id[K_SA], TES_AND);
    desc_add(&g[2].d, fx->id[K_ST], TES_OPTIONAL);
    desc_add(&g[2].d, fx->id[K_SG], TES_NOT);
    desc_add(&g[2].d, fx->id[K_TB], TES_OPTIONAL);
    g[2].d.flags = TES_QUERY_INCLUDE_PREFAB;
    /* 3: a stable AND term and the disabled tag named */
    desc_add(&g[3].d, fx->id[K_ST], TES_AND);
    desc_add(&g[3].d, TES_DISABLED, TES_AND);
    desc_add(&g[3].d, fx->id[K_SA], TES_OPTIONAL);
    desc_add(&g[3].d, fx->id[K_TT], TES_OPTIONAL);
    /* 4 (owning): a data store and a tag store, a table NOT term */
    desc_add(&g[4].d, fx->id[K_SD], TES_AND);
    desc_add(&g[4].d, fx->id[K_SG], TES_AND);
    desc_add(&g[4].d, fx->id[K_TA], TES_NOT);
    /* 5: optional terms of every kind, prefab named as NOT */
    desc_add(&g[5].d, fx->id[K_SB], TES_AND);
    desc_add(&g[5].d, fx->id[K_SD], TES_OPTIONAL);
    desc_add(&g[5].d, fx->id[K_TA], TES_OPTIONAL);
    desc_add(&g[5].d, TES_PREFAB, TES_NOT);
}

static const bool gq_owning[GQ_COUNT] = {true, true, false, false, true, false};

/* Thousands of random operations (immediate, and in deferred batches):
 * after every few, every group matches exactly the plain query and the
 * brute-force reference, owning groups stay contiguous with their members
 * at the front of every owned store, and every value is its entity's. */
static void test_group_random_ops(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        rng_seed(seed * 104729);
        fx_t *fx = fx_new();
        tes_world_t *w = fx->w;
        gq_t g[GQ_COUNT];
        gq_specs(fx, g);
        /* Some groups start on an empty world, the others over a full one. */
        gq_make(fx, &g[0], gq_owning[0]);
        gq_make(fx, &g[4], gq_owning[4]);
        gq_make(fx, &g[2], gq_owning[2]);
        fx_populate(fx, 150);
        gq_make(fx, &g[1], gq_owning[1]);
        gq_make(fx, &g[3], gq_owning[3]);
        gq_make(fx, &g[5], gq_owning[5]);
        check(w);
        for (int i = 0; i < GQ_COUNT; i++)
            gq_verify(fx, &g[i]);
        int64_t moves = fx->n.move;
        for (int op = 0; op < 1500; op++) {
            if (rng_chance(4)) {
                assert_int_equal(tes_defer_begin(w), TES_OK);
                int32_t m = 2 + (int32_t)rng_below(8);
                for (int32_t i = 0; i < m; i++)
                    fx_random_op(fx, true, 150);
                assert_int_equal(tes_defer_end(w), TES_OK);
                check(w);
                for (int i = 0; i < GQ_COUNT; i++)
                    gq_verify(fx, &g[i]);
            } else {
                fx_random_op(fx, false, 150);
            }
            if (op % 5 == 4) {
                check(w);
                for (int i = 0; i < GQ_COUNT; i++)
                    gq_verify(fx, &g[i]);
            }
        }
        assert_true(fx->n.move > moves); /* owning groups did reorder */
        /* Free some group queries, leave the rest to the world. */
        tes_query_free(g[0].owning);
        tes_query_free(g[1].nonowning);
        tes_query_free(g[2].plain);
        for (int op = 0; op < 100; op++)
            fx_random_op(fx, false, 150);
        verify(fx, g[0].plain, &g[0].d, NULL, 0);
        verify(fx, g[0].nonowning, &g[0].d, NULL, 0);
        verify(fx, g[1].owning, &g[1].d, NULL, 0);
        check(w);
        fx_free(fx);
    }
}

/* An owning group reorders its stores through the move hook and every
 * value stays with its entity: joins, leaves, destroys, clears, clones,
 * spawn_n and disables. */
static void test_group_owning_keeps_values(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    tes_query_desc_t d = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&d, fx->id[K_SA], TES_AND);
    desc_add(&d, fx->id[K_SB], TES_AND);
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    tes_entity_t e[200];
    for (int i = 0; i < 200; i++) {
        e[i] = fx_spawn(fx);
        fx_set(fx, e[i], K_SA);
    }
    tes_entity_t seq[400];
    int64_t moves = fx->n.move;
    /* Join in an order unrelated to the packed order. */
    for (int i = 199; i >= 0; i -= 3)
        fx_set(fx, e[i], K_SB);
    assert_true(fx->n.move > moves);
    int32_t n = verify(fx, q, &d, seq, 400);
    assert_int_equal(n, 67);
    check_owning(fx, q, &d, seq, n);
    /* Leave from the middle of the prefix. */
    for (int i = 199; i >= 0; i -= 9)
        assert_int_equal(tes_remove(w, e[i], fx->id[K_SA]), TES_OK);
    n = verify(fx, q, &d, seq, 400);
    check_owning(fx, q, &d, seq, n);
    for (int i = 1; i < 200; i += 6) {
        if (i % 12 == 1)
            fx_destroy(fx, e[i]);
        else
            assert_int_equal(tes_clear(w, e[i]), TES_OK);
    }
    n = verify(fx, q, &d, seq, 400);
    check_owning(fx, q, &d, seq, n);
    for (int i = 0; i < 200; i += 5)
        if (tes_alive(w, e[i]))
            fx_clone(fx, e[i]);
    int ks[] = {K_SB, K_SA};
    fx_spawn_n(fx, 16, ks, 2);
    for (int i = 2; i < 200; i += 4)
        if (tes_alive(w, e[i]))
            assert_int_equal(tes_disable(w, e[i]), TES_OK);
    n = verify(fx, q, &d, seq, 400);
    check_owning(fx, q, &d, seq, n);
    for (int i = 2; i < 200; i += 8)
        if (tes_alive(w, e[i]))
            assert_int_equal(tes_enable(w, e[i]), TES_OK);
    /* Rewrite every member's values through the fields. */
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        val_t *a = tes_field(&it, 0);
        for (int32_t k = 0; k < it.count; k++) {
            a[k].stamp = ++fx->stamp;
            a[k].comp = fx->id[K_SA];
            *expect_of(fx, it.entities[k], K_SA) = a[k];
        }
    }
    n = verify(fx, q, &d, seq, 400);
    check_owning(fx, q, &d, seq, n);
    /* And every non-member keeps its value too. */
    for (int32_t i = 0; i < fx->nlive; i++)
        for (int k = 0; k < K_COUNT; k++)
            if (kinds[k].size && tes_has(w, fx->live[i], fx->id[k]))
                check_value(fx, fx->live[i], k, tes_get(w, fx->live[i], fx->id[k]));
    tes_query_free(q);
    check(w);
    fx_free(fx);
}

/* tes_set / tes_ensure of an owned component that makes the entity join the
 * group: the value must land on that entity (and observers must get its
 * address), although joining moves it to the front of the store. */
static void test_group_owning_join_by_set(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    tes_query_desc_t d = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&d, fx->id[K_SA], TES_AND);
    desc_add(&d, fx->id[K_SB], TES_AND);
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    tes_entity_t e1 = fx_spawn(fx), e2 = fx_spawn(fx), e3 = fx_spawn(fx), e4 = fx_spawn(fx);
    fx_set(fx, e1, K_SA);
    fx_set(fx, e1, K_SB); /* member: SA = [e1], SB = [e1] */
    fx_set(fx, e2, K_SB); /* SB = [e1, e2] */
    fx_set(fx, e3, K_SA); /* SA = [e1, e3] */
    /* e2 joins: its new SA is inserted at the end, then swapped with e3. */
    fx_set(fx, e2, K_SA);
    check_value(fx, e2, K_SA, tes_get(w, e2, fx->id[K_SA]));
    check_value(fx, e3, K_SA, tes_get(w, e3, fx->id[K_SA]));
    /* The same through tes_ensure. */
    fx_set(fx, e4, K_SB);
    fx_set(fx, fx_spawn(fx), K_SA);
    fx_ensure(fx, e4, K_SA);
    tes_entity_t seq[8];
    int32_t n = verify(fx, q, &d, seq, 8);
    assert_int_equal(n, 3);
    check_owning(fx, q, &d, seq, n);
    assert_int_equal(fx->n.bad_ptr, 0);
    tes_query_free(q);
    check(w);
    fx_free(fx);
}

/* Chunks never cross a data page: an owning group over a large component
 * with more members than a page holds (at 16 KiB or 64 KiB pages), next to
 * a driven and a non-owning walk over the same stores. */
static void test_group_owning_pages(void **state)
{
    (void)state;
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    comp_ctx_t big_ctx;
    tes_comp_t big = register_tracked(w, &big_ctx, &fx->n, "Big", 1024, TES_STORAGE_SPARSE, false);
    tes_query_desc_t d = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&d, big, TES_AND);
    desc_add(&d, fx->id[K_SA], TES_AND);
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    tes_query_desc_t nd = d, pd = d;
    nd.flags = TES_QUERY_NONOWNING_GROUP;
    pd.flags = 0;
    tes_query_t *qn = tes_query_new(w, &nd), *qp = tes_query_new(w, &pd);
    assert_non_null(qn);
    assert_non_null(qp);
    enum { N = 300 };
    tes_entity_t e[N];
    uint8_t blob[1024] = {0};
    for (int i = 0; i < N; i++) {
        e[i] = fx_spawn(fx);
        val_t v = {LIVE, big, 1000000u + (uint64_t)i};
        memcpy(blob, &v, sizeof v);
        assert_int_equal(tes_set(w, e[i], big, blob), TES_OK);
        if (i % 7 != 3)
            fx_set(fx, e[i], K_SA);
    }
    int32_t chunks = 0, n = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        chunks++;
        uint8_t *f = tes_field(&it, 0);
        val_t *a = tes_field(&it, 1);
        for (int32_t k = 0; k < it.count; k++) {
            assert_ptr_equal(f + (size_t)k * 1024, tes_get(w, it.entities[k], big));
            assert_ptr_equal(&a[k], tes_get(w, it.entities[k], fx->id[K_SA]));
            val_t v;
            memcpy(&v, f + (size_t)k * 1024, sizeof v);
            assert_int_equal(v.magic, LIVE);
            assert_int_equal(tes_entity_index(it.entities[k]),
                             tes_entity_index(e[v.stamp - 1000000u]));
            check_value(fx, it.entities[k], K_SA, &a[k]);
        }
        n += it.count;
    }
    assert_int_equal(n, N - (N + 3) / 7);
    assert_true(chunks >= 2); /* a 1 KiB value: at most 64 per 64 KiB page */
    tes_entity_t seq[N];
    assert_int_equal(collect(q, seq, N), n);
    tes_entity_t pseq[N], nseq[N];
    assert_int_equal(collect(qp, pseq, N), n);
    assert_int_equal(collect(qn, nseq, N), n);
    /* the plain and non-owning walks cut at pages too (pointer checks), and
     * so does a walk with a NOT term, whose runs span every entity */
    tes_query_desc_t xd = {0};
    desc_add(&xd, big, TES_AND);
    desc_add(&xd, fx->id[K_SG], TES_NOT);
    tes_query_t *qx = tes_query_new(w, &xd);
    assert_non_null(qx);
    assert_int_equal(tes_query_count(qx), N);
    for (int pass = 0; pass < 3; pass++) {
        it = tes_query_iter(pass == 0 ? qp : pass == 1 ? qn : qx);
        while (tes_iter_next(&it)) {
            uint8_t *f = tes_field(&it, 0);
            for (int32_t k = 0; k < it.count; k++)
                assert_ptr_equal(f + (size_t)k * 1024, tes_get(w, it.entities[k], big));
        }
    }
    tes_query_free(q);
    tes_query_free(qn);
    tes_query_free(qp);
    tes_query_free(qx);
    check(w);
    fx_free(fx);
}

/* Ownership rules: one owner per store (a failed claim takes nothing),
 * no stable store, no table AND term, no OPTIONAL term; non-owning groups
 * and plain queries may share owned stores; freeing an owning query
 * releases its stores. */
static void test_group_ownership(void **state)
{
    (void)state;
    rng_seed(3);
    fx_t *fx = fx_new();
    tes_world_t *w = fx->w;
    fx_populate(fx, 100);
    tes_query_desc_t ab = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&ab, fx->id[K_SA], TES_AND);
    desc_add(&ab, fx->id[K_SB], TES_AND);
    tes_query_t *qab = tes_query_new(w, &ab);
    assert_non_null(qab);

    tes_query_desc_t d = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&d, fx->id[K_SB], TES_AND);
    expect_invalid(w, &d); /* SB already owned */
    memset(&d, 0, sizeof d);
    d.flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d, fx->id[K_SC], TES_AND);
    desc_add(&d, fx->id[K_SA], TES_AND);
    expect_invalid(w, &d); /* SA already owned; SC must stay free */
    memset(&d, 0, sizeof d);
    d.flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d, fx->id[K_SB], TES_AND);
    desc_add(&d, fx->id[K_SA], TES_AND); /* the same stores, other order */
    expect_invalid(w, &d);
    memset(&d, 0, sizeof d);
    d.flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d, fx->id[K_SC], TES_AND);
    desc_add(&d, fx->id[K_ST], TES_AND);
    expect_invalid(w, &d); /* stable */
    memset(&d, 0, sizeof d);
    d.flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d, fx->id[K_SC], TES_AND);
    desc_add(&d, fx->id[K_TB], TES_AND);
    expect_invalid(w, &d); /* table AND */
    memset(&d, 0, sizeof d);
    d.flags = TES_QUERY_OWNING_GROUP;
    desc_add(&d, fx->id[K_SC], TES_AND);
    desc_add(&d, fx->id[K_SD], TES_OPTIONAL);
    expect_invalid(w, &d); /* optional */

    /* SC was never claimed by the failures. */
    tes_query_desc_t c = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&c, fx->id[K_SC], TES_AND);
    desc_add(&c, fx->id[K_SA], TES_NOT); /* a NOT term on an owned store is fine */
    tes_query_t *qc = tes_query_new(w, &c);
    assert_non_null(qc);

    /* Non-owning groups and plain queries over owned stores. */
    tes_query_desc_t n = {.flags = TES_QUERY_NONOWNING_GROUP};
    desc_add(&n, fx->id[K_SB], TES_AND);
    desc_add(&n, fx->id[K_SC], TES_OPTIONAL);
    tes_query_t *qn = tes_query_new(w, &n);
    assert_non_null(qn);
    tes_query_desc_t p = {0};
    desc_add(&p, fx->id[K_SA], TES_AND);
    desc_add(&p, fx->id[K_SC], TES_AND);
    tes_query_t *qp = tes_query_new(w, &p);
    assert_non_null(qp);
    for (int i = 0; i < 300; i++)
        fx_random_op(fx, false, 100);
    tes_entity_t seq[512];
    assert_true(fx->nlive < 512);
    int32_t cnt = verify(fx, qab, &ab, seq, 512);
    check_owning(fx, qab, &ab, seq, cnt);
    cnt = verify(fx, qc, &c, seq, 512);
    check_owning(fx, qc, &c, seq, cnt);
    verify(fx, qn, &n, NULL, 0);
    verify(fx, qp, &p, NULL, 0);

    /* Freeing releases ownership: SB alone, then SA with SD. */
    tes_query_free(qab);
    tes_query_desc_t b = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&b, fx->id[K_SB], TES_AND);
    tes_query_t *qb = tes_query_new(w, &b);
    assert_non_null(qb);
    tes_query_desc_t ad = {.flags = TES_QUERY_OWNING_GROUP};
    desc_add(&ad, fx->id[K_SD], TES_AND);
    desc_add(&ad, fx->id[K_SA], TES_AND);
    desc_add(&ad, fx->id[K_SG], TES_NOT);
    tes_query_t *qad = tes_query_new(w, &ad);
    assert_non_null(qad);
    expect_invalid(w, &ab); /* SA and SB are owned again, by two groups */
    for (int i = 0; i < 300; i++)
        fx_random_op(fx, false, 100);
    assert_true(fx->nlive < 512);
    cnt = verify(fx, qb, &b, seq, 512);
    check_owning(fx, qb, &b, seq, cnt);
    cnt = verify(fx, qad, &ad, seq, 512);
    check_owning(fx, qad, &ad, seq, cnt);
    cnt = verify(fx, qc, &c, seq, 512);
    check_owning(fx, qc, &c, seq, cnt);
    verify(fx, qn, &n, NULL, 0);
    verify(fx, qp, &p, NULL, 0);
    tes_query_free(qc);
    tes_query_free(qp);
    check(w);
    fx_free(fx); /* qb, qad, qn left to the world */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_query_random_reference, teardown),
        cmocka_unit_test_teardown(test_query_each_operator_each_kind, teardown),
        cmocka_unit_test_teardown(test_query_table_walk, teardown),
        cmocka_unit_test_teardown(test_query_table_walk_sparse_terms, teardown),
        cmocka_unit_test_teardown(test_query_driven_smallest_pool, teardown),
        cmocka_unit_test_teardown(test_query_not_optional_only, teardown),
        cmocka_unit_test_teardown(test_query_default_filters, teardown),
        cmocka_unit_test_teardown(test_query_cache_new_tables, teardown),
        cmocka_unit_test_teardown(test_query_invalid_descs, teardown),
        cmocka_unit_test_teardown(test_query_iter_fini, teardown),
        cmocka_unit_test_teardown(test_query_lifetimes, teardown),
        cmocka_unit_test_teardown(test_group_random_ops, teardown),
        cmocka_unit_test_teardown(test_group_owning_keeps_values, teardown),
        cmocka_unit_test_teardown(test_group_owning_join_by_set, teardown),
        cmocka_unit_test_teardown(test_group_owning_pages, teardown),
        cmocka_unit_test_teardown(test_group_ownership, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
