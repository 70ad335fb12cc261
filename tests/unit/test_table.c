/*
 * Component API tests, part 2: archetype table storage and the hybrid of
 * tables and sparse stores.
 *
 * - Moving entities between tables keeps every value (all add orders of a
 *   set of components, and a long random run checked against a shadow
 *   model), with the move hook used for every relocation (row moves, swap
 *   removal, table growth) and constructed == destroyed + live throughout.
 * - Tags are part of the type but own no data; entities mixing table and
 *   sparse components; tes_clone (copy hooks, on_add, stale sources);
 *   tes_spawn_n (straight into the final table, zero-fill/ctor, on_add n
 *   times, all-or-nothing on bad input); disable/enable; more than 1000
 *   distinct tables; alignment of 16-byte components in tables and sparse
 *   stores; tes_world_free over many tables; an idempotent add that must
 *   not relocate anything.
 *
 * The registry and the per-call contract for every storage kind are in
 * test_component.c.
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

static uint64_t rng_state;

static void rng_seed(uint64_t seed) { rng_state = seed; }

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n) { return (uint32_t)(rng_next() % n); }

static void poison_invalid(tes_world_t *w)
{
    assert_int_equal(tes_component(w, NULL), 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
}

static void poison_stale(tes_world_t *w)
{
    assert_int_equal(tes_destroy(w, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
}

static tes_world_stats_t stats_of(const tes_world_t *w)
{
    tes_world_stats_t s;
    assert_int_equal(tes_world_stats(w, &s), TES_OK);
    return s;
}

static void check(const tes_world_t *w) { assert_int_equal(tes__world_check(w), TES_OK); }

static tes_comp_t reg(tes_world_t *w, const char *name, size_t size, size_t align,
                      tes_storage_t storage, bool stable)
{
    tes_component_desc_t d = {
        .name = name, .size = size, .align = align, .storage = storage, .stable = stable};
    tes_comp_t id = tes_component(w, &d);
    assert_true(id > TES_PREFAB);
    return id;
}

/* Fills size bytes from a seed; seed 0 gives zeros (a fresh value). */
static void fill(void *dst, size_t size, uint64_t seed)
{
    uint8_t *p = dst;
    for (size_t k = 0; k < size; k++)
        p[k] = (uint8_t)(seed ? (seed >> ((k % 8) * 8)) ^ (k * 37u + 11u) : 0u);
}

static void assert_filled(const void *src, size_t size, uint64_t seed)
{
    uint8_t want[256];
    assert_true(size <= sizeof want);
    fill(want, size, seed);
    assert_non_null(src);
    assert_memory_equal(src, want, size);
}

/* ------------------------------------------------------------------------ */
/* Tracked values and hooks                                                  */
/* ------------------------------------------------------------------------ */

#define LIVE UINT32_C(0x1A7E1A7E)
#define DEAD UINT32_C(0xDEADDEAD)
#define CTOR_VALUE 1000

typedef struct tracked_t {
    uint32_t magic;
    int32_t value;
} tracked_t;

typedef struct hook_ctx hook_ctx_t;

struct hook_ctx {
    tes_world_t *w;
    int64_t ctor, dtor, copy, move;
    int64_t on_add, on_set, on_remove;
    int64_t bad;
    tes_entity_t last_e;
    int32_t last_value;
    /* Checked by on_add when set: the entity already has all of these. */
    const tes_comp_t *expect;
    int32_t expect_count;
    int64_t expect_fail;
};

static void h_ctor(void *ptr, int32_t count, void *ctx)
{
    hook_ctx_t *h = ctx;
    tracked_t *p = ptr;
    for (int32_t i = 0; i < count; i++) {
        p[i].magic = LIVE;
        p[i].value = CTOR_VALUE;
    }
    h->ctor += count;
}

static void h_dtor(void *ptr, int32_t count, void *ctx)
{
    hook_ctx_t *h = ctx;
    tracked_t *p = ptr;
    for (int32_t i = 0; i < count; i++) {
        if (p[i].magic != LIVE)
            h->bad++;
        p[i].magic = DEAD;
    }
    h->dtor += count;
}

static void h_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    hook_ctx_t *h = ctx;
    tracked_t *d = dst;
    const tracked_t *s = src;
    for (int32_t i = 0; i < count; i++) {
        if (d[i].magic != LIVE || s[i].magic != LIVE)
            h->bad++;
        d[i].value = s[i].value;
    }
    h->copy += count;
}

static void h_move(void *dst, void *src, int32_t count, void *ctx)
{
    hook_ctx_t *h = ctx;
    tracked_t *d = dst;
    tracked_t *s = src;
    for (int32_t i = 0; i < count; i++) {
        if (s[i].magic != LIVE)
            h->bad++;
        d[i] = s[i];
        s[i].magic = DEAD;
    }
    h->move += count;
}

static void observe(hook_ctx_t *h, tes_entity_t e, void *ptr)
{
    h->last_e = e;
    if (ptr) {
        const tracked_t *t = ptr;
        if (t->magic != LIVE)
            h->bad++;
        h->last_value = t->value;
    }
}

static void h_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    hook_ctx_t *h = ctx;
    h->on_add++;
    observe(h, e, ptr);
    for (int32_t i = 0; i < h->expect_count; i++)
        if (!tes_has(w, e, h->expect[i]))
            h->expect_fail++;
}

static void h_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w;
    hook_ctx_t *h = ctx;
    h->on_set++;
    observe(h, e, ptr);
}

static void h_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w;
    hook_ctx_t *h = ctx;
    h->on_remove++;
    observe(h, e, ptr);
}

static tes_comp_t reg_tracked(tes_world_t *w, const char *name, hook_ctx_t *h,
                              tes_storage_t storage, bool stable)
{
    h->w = w;
    tes_component_desc_t d = {.name = name, .size = sizeof(tracked_t), .storage = storage,
                              .stable = stable,
                              .hooks = {h_ctor, h_dtor, h_copy, h_move, h_on_add, h_on_set,
                                        h_on_remove, h}};
    tes_comp_t id = tes_component(w, &d);
    assert_true(id > TES_PREFAB);
    return id;
}

static tracked_t tv(int32_t value) { return (tracked_t){LIVE, value}; }

static int32_t tracked_value(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    const tracked_t *t = tes_get(w, e, c);
    assert_non_null(t);
    assert_int_equal(t->magic, LIVE);
    return t->value;
}

static void assert_balanced(const hook_ctx_t *h, int64_t live)
{
    assert_int_equal(h->bad, 0);
    assert_int_equal(h->ctor - h->dtor, live);
}

static int cmp_comp(const void *a, const void *b)
{
    tes_comp_t x = *(const tes_comp_t *)a, y = *(const tes_comp_t *)b;
    return (x > y) - (x < y);
}

/* e's components are exactly `want` (any order). */
static void assert_components(const tes_world_t *w, tes_entity_t e, const tes_comp_t *want,
                              int32_t n)
{
    tes_comp_t sorted[64], out[64];
    assert_true(n <= 64);
    memcpy(sorted, want, (size_t)n * sizeof *want);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_comp);
    assert_int_equal(tes_components_of(w, e, out, 64), n);
    if (n)
        assert_memory_equal(out, sorted, (size_t)n * sizeof *out);
}

/* ------------------------------------------------------------------------ */
/* Moving between tables                                                     */
/* ------------------------------------------------------------------------ */

/* Every order of adding, then of removing, four table components (two of
 * them with data of odd sizes, one tag, one tracked) keeps the values. */
static void test_table_add_orders_keep_values(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t h = {0};
    tes_comp_t c[4];
    c[0] = reg(w, "Byte3", 3, 0, TES_STORAGE_TABLE, false);
    c[1] = reg_tracked(w, "Tracked", &h, TES_STORAGE_TABLE, false);
    c[2] = reg(w, "Tag", 0, 0, TES_STORAGE_TABLE, false);
    c[3] = reg(w, "Wide", 48, 16, TES_STORAGE_TABLE, false);
    size_t sizes[4] = {3, 0, 0, 48};

    enum { PERMS = 24 };
    tes_entity_t e[PERMS];
    int perm[PERMS][4];
    int n = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int x = 0; x < 4; x++)
                for (int y = 0; y < 4; y++)
                    if (a != b && a != x && a != y && b != x && b != y && x != y) {
                        perm[n][0] = a, perm[n][1] = b, perm[n][2] = x, perm[n][3] = y;
                        n++;
                    }
    assert_int_equal(n, PERMS);

    /* Add in every order, each entity checking all its values per step. */
    for (int p = 0; p < PERMS; p++) {
        e[p] = tes_spawn(w);
        for (int step = 0; step < 4; step++) {
            int k = perm[p][step];
            if (k == 1) {
                tracked_t v = tv(p * 10 + 1);
                assert_int_equal(tes_set(w, e[p], c[1], &v), TES_OK);
            } else if (k == 2) {
                assert_int_equal(tes_add(w, e[p], c[2]), TES_OK);
            } else {
                uint8_t buf[48];
                fill(buf, sizes[k], (uint64_t)(p * 4 + k + 1));
                assert_int_equal(tes_set(w, e[p], c[k], buf), TES_OK);
            }
            for (int s = 0; s <= step; s++) {
                int j = perm[p][s];
                assert_true(tes_has(w, e[p], c[j]));
                if (j == 1)
                    assert_int_equal(tracked_value(w, e[p], c[1]), p * 10 + 1);
                else if (j == 2)
                    assert_null(tes_get(w, e[p], c[2]));
                else
                    assert_filled(tes_get(w, e[p], c[j]), sizes[j], (uint64_t)(p * 4 + j + 1));
            }
        }
        assert_components(w, e[p], c, 4);
    }
    /* All of them share one table now; every value is still right. */
    for (int p = 0; p < PERMS; p++) {
        assert_int_equal(tracked_value(w, e[p], c[1]), p * 10 + 1);
        assert_filled(tes_get(w, e[p], c[0]), 3, (uint64_t)(p * 4 + 1));
        assert_filled(tes_get(w, e[p], c[3]), 48, (uint64_t)(p * 4 + 4));
    }
    /* Remove in the order of another permutation. */
    for (int p = 0; p < PERMS; p++) {
        int q = (p * 7 + 3) % PERMS;
        for (int step = 0; step < 4; step++) {
            assert_int_equal(tes_remove(w, e[p], c[perm[q][step]]), TES_OK);
            for (int s = step + 1; s < 4; s++) {
                int j = perm[q][s];
                assert_true(tes_has(w, e[p], c[j]));
                if (j == 1)
                    assert_int_equal(tracked_value(w, e[p], c[1]), p * 10 + 1);
                else if (j != 2)
                    assert_filled(tes_get(w, e[p], c[j]), sizes[j], (uint64_t)(p * 4 + j + 1));
            }
            assert_false(tes_has(w, e[p], c[perm[q][step]]));
        }
        assert_int_equal(tes_components_of(w, e[p], NULL, 0), 0);
        /* The entities not yet stripped keep all of theirs. */
        for (int r = p + 1; r < PERMS; r++) {
            assert_int_equal(tracked_value(w, e[r], c[1]), r * 10 + 1);
            assert_filled(tes_get(w, e[r], c[3]), 48, (uint64_t)(r * 4 + 4));
        }
    }
    assert_balanced(&h, 0);
    assert_int_equal(h.copy, PERMS); /* one per tes_set; relocation never copies */
    check(w);
    tes_world_free(w);
}

/* A long random run of adds, sets, removes, clears, destroys and clones
 * over table and sparse components, checked against a shadow model. */
enum { RM_COMPS = 13, RM_ENTS = 64 };

typedef struct rm_t {
    tes_world_t *w;
    hook_ctx_t h;  /* table tracked */
    hook_ctx_t hs; /* sparse tracked */
    tes_comp_t id[RM_COMPS];
    size_t size[RM_COMPS];
    bool tracked[RM_COMPS];
    tes_entity_t e[RM_ENTS];
    bool has[RM_ENTS][RM_COMPS];
    uint64_t seed[RM_ENTS][RM_COMPS]; /* value; tracked: the int value */
} rm_t;

static void rm_verify(rm_t *m, int i)
{
    tes_comp_t want[RM_COMPS];
    int32_t n = 0;
    for (int k = 0; k < RM_COMPS; k++) {
        assert_int_equal(tes_has(m->w, m->e[i], m->id[k]), m->has[i][k]);
        if (!m->has[i][k]) {
            assert_null(tes_get(m->w, m->e[i], m->id[k]));
            continue;
        }
        want[n++] = m->id[k];
        if (m->tracked[k])
            assert_int_equal(tracked_value(m->w, m->e[i], m->id[k]), (int32_t)m->seed[i][k]);
        else if (m->size[k])
            assert_filled(tes_get(m->w, m->e[i], m->id[k]), m->size[k], m->seed[i][k]);
        else
            assert_null(tes_get(m->w, m->e[i], m->id[k]));
    }
    assert_components(m->w, m->e[i], want, n);
}

static void rm_set(rm_t *m, int i, int k, uint64_t seed)
{
    if (m->tracked[k]) {
        tracked_t v = tv((int32_t)(seed % 1000000));
        assert_int_equal(tes_set(m->w, m->e[i], m->id[k], &v), TES_OK);
        m->seed[i][k] = (uint64_t)v.value;
    } else {
        uint8_t buf[64];
        fill(buf, m->size[k], seed);
        assert_int_equal(tes_set(m->w, m->e[i], m->id[k], m->size[k] ? buf : NULL), TES_OK);
        m->seed[i][k] = seed;
    }
    m->has[i][k] = true;
}

static void test_table_random_model(void **state)
{
    (void)state;
    rm_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->w = tes_world_new(NULL);
    tes_world_t *w = m->w;
    static const struct {
        const char *name;
        size_t size, align;
        tes_storage_t storage;
        bool stable;
    } defs[RM_COMPS] = {
        {"U8", 1, 0, TES_STORAGE_TABLE, false},
        {"U16", 2, 0, TES_STORAGE_TABLE, false},
        {"S1", 24, 0, TES_STORAGE_SPARSE, false},
        {"U32", 4, 0, TES_STORAGE_TABLE, false},
        {"G1", 0, 0, TES_STORAGE_TABLE, false},
        {"U64", 8, 0, TES_STORAGE_TABLE, false},
        {"S2", 8, 0, TES_STORAGE_SPARSE, true},
        {"V12", 12, 0, TES_STORAGE_TABLE, false},
        {"V48", 48, 16, TES_STORAGE_TABLE, false},
        {"G2", 0, 0, TES_STORAGE_TABLE, false},
        {"ST", 0, 0, TES_STORAGE_SPARSE, false},
        {NULL, 0, 0, TES_STORAGE_TABLE, false}, /* tracked, table */
        {NULL, 0, 0, TES_STORAGE_SPARSE, false}, /* tracked, sparse */
    };
    for (int k = 0; k < RM_COMPS - 2; k++) {
        m->id[k] = reg(w, defs[k].name, defs[k].size, defs[k].align, defs[k].storage,
                       defs[k].stable);
        m->size[k] = defs[k].size;
    }
    m->id[11] = reg_tracked(w, "TrackedT", &m->h, TES_STORAGE_TABLE, false);
    m->id[12] = reg_tracked(w, "TrackedS", &m->hs, TES_STORAGE_SPARSE, false);
    m->tracked[11] = m->tracked[12] = true;
    m->size[11] = m->size[12] = sizeof(tracked_t);
    for (int i = 0; i < RM_ENTS; i++)
        m->e[i] = tes_spawn(w);

    rng_seed(2024);
    for (int op = 0; op < 30000; op++) {
        int i = (int)rng_below(RM_ENTS);
        int k = (int)rng_below(RM_COMPS);
        uint32_t r = rng_below(100);
        if (r < 35) {
            rm_set(m, i, k, rng_next() | 1);
        } else if (r < 50) {
            assert_int_equal(tes_add(m->w, m->e[i], m->id[k]), TES_OK);
            if (!m->has[i][k]) {
                m->has[i][k] = true;
                m->seed[i][k] = m->tracked[k] ? CTOR_VALUE : 0;
            }
        } else if (r < 85) {
            assert_int_equal(tes_remove(w, m->e[i], m->id[k]), TES_OK);
            m->has[i][k] = false;
        } else if (r < 89) {
            if (m->size[k] && !m->tracked[k]) {
                void *p = tes_ensure(w, m->e[i], m->id[k]);
                assert_non_null(p);
                if (!m->has[i][k])
                    m->seed[i][k] = 0;
                assert_filled(p, m->size[k], m->seed[i][k]);
                uint64_t seed = rng_next() | 1;
                fill(p, m->size[k], seed);
                m->seed[i][k] = seed;
                m->has[i][k] = true;
            }
        } else if (r < 91) {
            assert_int_equal(tes_clear(w, m->e[i]), TES_OK);
            memset(m->has[i], 0, sizeof m->has[i]);
        } else if (r < 94) {
            assert_int_equal(tes_destroy(w, m->e[i]), TES_OK);
            m->e[i] = tes_spawn(w);
            memset(m->has[i], 0, sizeof m->has[i]);
        } else if (r < 97) {
            int j = (int)rng_below(RM_ENTS);
            if (j != i) {
                assert_int_equal(tes_destroy(w, m->e[j]), TES_OK);
                m->e[j] = tes_clone(w, m->e[i]);
                assert_true(tes_alive(w, m->e[j]));
                memcpy(m->has[j], m->has[i], sizeof m->has[i]);
                memcpy(m->seed[j], m->seed[i], sizeof m->seed[i]);
            }
        } else {
            /* Several at once through spawn_n into a recycled slot. */
            tes_comp_t comps[RM_COMPS];
            int32_t nc = 0;
            bool pick[RM_COMPS];
            for (int c = 0; c < RM_COMPS; c++) {
                pick[c] = rng_below(3) == 0;
                if (pick[c])
                    comps[nc++] = m->id[c];
            }
            assert_int_equal(tes_destroy(w, m->e[i]), TES_OK);
            assert_int_equal(tes_spawn_n(w, 1, comps, nc, &m->e[i]), TES_OK);
            for (int c = 0; c < RM_COMPS; c++) {
                m->has[i][c] = pick[c];
                m->seed[i][c] = m->tracked[c] ? CTOR_VALUE : 0;
            }
        }
        rm_verify(m, i);
        if (op % 1000 == 999) {
            int64_t live_t = 0, live_s = 0;
            for (int x = 0; x < RM_ENTS; x++) {
                rm_verify(m, x);
                live_t += m->has[x][11];
                live_s += m->has[x][12];
            }
            assert_balanced(&m->h, live_t);
            assert_balanced(&m->hs, live_s);
            assert_int_equal(m->h.on_add - m->h.on_remove, live_t);
            assert_int_equal(m->hs.on_add - m->hs.on_remove, live_s);
            check(w);
        }
    }
    assert_true(m->h.move > 0);
    check(w);
    tes_world_free(w);
    assert_int_equal(m->h.ctor, m->h.dtor);
    assert_int_equal(m->hs.ctor, m->hs.dtor);
    assert_int_equal(m->h.bad + m->hs.bad, 0);
    free(m);
}

/* Exact move counts hold in ordinary builds; a TES_DEBUG build also moves
 * each table a row leaves to fresh memory (through the move hook), so
 * there it can only promise at least as many. */
#ifdef TES_DEBUG
#define assert_moves(actual, expected) assert_true((actual) >= (expected))
#else
#define assert_moves(actual, expected) assert_int_equal(actual, expected)
#endif

/* Relocations go through the move hook, never copy, and balance. */
static void test_table_move_hook(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t h = {0};
    tes_comp_t tr = reg_tracked(w, "Tracked", &h, TES_STORAGE_TABLE, false);
    tes_comp_t a = reg(w, "A", 8, 0, TES_STORAGE_TABLE, false);
    tes_comp_t g = reg(w, "G", 0, 0, TES_STORAGE_TABLE, false);

    tes_entity_t e1 = tes_spawn(w), e2 = tes_spawn(w), e3 = tes_spawn(w);
    tracked_t v1 = tv(1), v2 = tv(2), v3 = tv(3);
    assert_int_equal(tes_set(w, e1, tr, &v1), TES_OK);
    assert_int_equal(tes_set(w, e2, tr, &v2), TES_OK);
    assert_int_equal(tes_set(w, e3, tr, &v3), TES_OK);
    int64_t moves = h.move, copies = h.copy, ctors = h.ctor;

    /* e1 leaves {Tracked}: its value moves to {A, Tracked}, and e3 (the last
     * row) moves into the hole. */
    assert_int_equal(tes_add(w, e1, a), TES_OK);
    assert_moves(h.move, moves + 2);
    assert_int_equal(tes_add(w, e1, g), TES_OK);  /* one more row move */
    assert_moves(h.move, moves + 3);
    assert_int_equal(tes_remove(w, e1, a), TES_OK); /* and another */
    assert_moves(h.move, moves + 4);
    assert_int_equal(h.copy, copies);
    assert_int_equal(h.ctor, ctors);
    assert_int_equal(h.on_add, 3);
    assert_int_equal(tracked_value(w, e1, tr), 1);
    assert_int_equal(tracked_value(w, e2, tr), 2);
    assert_int_equal(tracked_value(w, e3, tr), 3);
    assert_balanced(&h, 3);

    /* Removing the tracked component itself destroys it (no move of it);
     * the others stay. {Tracked} now holds e3 (row 0), e2 (row 1). */
    moves = h.move;
    assert_int_equal(tes_remove(w, e3, tr), TES_OK);
    assert_int_equal(h.dtor, 1);
    assert_moves(h.move, moves + 1); /* e2, the last row, fills e3's */
    assert_int_equal(tracked_value(w, e2, tr), 2);
    assert_false(tes_has(w, e3, tr));

    /* Table growth relocates whole columns with the move hook. */
    enum { N = 1000 };
    tes_entity_t *e = malloc(N * sizeof *e);
    assert_non_null(e);
    moves = h.move;
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(100 + i);
        assert_int_equal(tes_set(w, e[i], tr, &v), TES_OK);
    }
    assert_true(h.move - moves >= 512); /* the column was relocated while growing */
    assert_int_equal(h.copy, copies + N);
    for (int i = 0; i < N; i++)
        assert_int_equal(tracked_value(w, e[i], tr), 100 + i);
    assert_balanced(&h, N + 2);

    /* Destroying rows in random order swaps the last row in, by move. */
    rng_seed(5);
    bool alive[N];
    for (int i = 0; i < N; i++)
        alive[i] = true;
    for (int k = 0; k < N / 2; k++) {
        uint32_t i;
        do
            i = rng_below(N);
        while (!alive[i]);
        assert_int_equal(tes_destroy(w, e[i]), TES_OK);
        alive[i] = false;
    }
    for (int i = 0; i < N; i++)
        if (alive[i])
            assert_int_equal(tracked_value(w, e[i], tr), 100 + i);
    assert_balanced(&h, N / 2 + 2);
    free(e);
    check(w);
    tes_world_free(w);
    assert_int_equal(h.ctor, h.dtor);
    assert_int_equal(h.bad, 0);
}

/* Table components without a move hook are relocated bytewise. */
static void test_table_swap_remove_keeps_values(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", 12, 0, TES_STORAGE_TABLE, false);
    tes_comp_t b = reg(w, "B", 1, 0, TES_STORAGE_TABLE, false);
    tes_comp_t c = reg(w, "C", 48, 0, TES_STORAGE_TABLE, false);
    enum { N = 300 };
    tes_entity_t e[N];
    bool alive[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        uint8_t buf[48];
        fill(buf, 12, (uint64_t)i + 1);
        assert_int_equal(tes_set(w, e[i], a, buf), TES_OK);
        fill(buf, 1, (uint64_t)i + 1);
        assert_int_equal(tes_set(w, e[i], b, buf), TES_OK);
        fill(buf, 48, (uint64_t)i + 1);
        assert_int_equal(tes_set(w, e[i], c, buf), TES_OK);
        alive[i] = true;
    }
    rng_seed(77);
    for (int k = 0; k < N - 10; k++) {
        uint32_t i;
        do
            i = rng_below(N);
        while (!alive[i]);
        if (k % 2)
            assert_int_equal(tes_destroy(w, e[i]), TES_OK);
        else
            assert_int_equal(tes_remove(w, e[i], b), TES_OK); /* leaves for {A, C} */
        alive[i] = false;
        for (int j = 0; j < N; j++) {
            if (!tes_alive(w, e[j]))
                continue;
            assert_filled(tes_get(w, e[j], a), 12, (uint64_t)j + 1);
            assert_filled(tes_get(w, e[j], c), 48, (uint64_t)j + 1);
            if (alive[j])
                assert_filled(tes_get(w, e[j], b), 1, (uint64_t)j + 1);
            else
                assert_null(tes_get(w, e[j], b));
        }
    }
    check(w);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* Tags and hybrids                                                          */
/* ------------------------------------------------------------------------ */

static void test_table_tags(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t h = {0};
    tes_component_desc_t td = {.name = "Tag",
                               .hooks = {.on_add = h_on_add, .on_remove = h_on_remove, .ctx = &h}};
    h.w = w;
    tes_comp_t tag = tes_component(w, &td);
    tes_comp_t tag2 = reg(w, "Tag2", 0, 0, TES_STORAGE_TABLE, false);
    tes_comp_t a = reg(w, "A", 8, 0, TES_STORAGE_TABLE, false);

    tes_entity_t e = tes_spawn(w), f = tes_spawn(w);
    assert_int_equal(tes_set(w, e, a, &(uint64_t){11}), TES_OK);
    assert_int_equal(tes_set(w, f, a, &(uint64_t){22}), TES_OK);
    uint32_t tables = stats_of(w).tables;
    /* A tag is part of the type: the entity moves to a new table. */
    assert_int_equal(tes_add(w, e, tag), TES_OK);
    assert_int_equal(stats_of(w).tables, tables + 1);
    assert_int_equal(h.on_add, 1);
    assert_int_equal(h.last_e, e);
    assert_true(tes_has(w, e, tag));
    assert_false(tes_has(w, f, tag));
    assert_null(tes_get(w, e, tag));
    assert_null(tes_get_mut(w, e, tag));
    poison_stale(w);
    assert_null(tes_ensure(w, e, tag));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(*(const uint64_t *)tes_get(w, e, a), 11);
    assert_int_equal(*(const uint64_t *)tes_get(w, f, a), 22);
    /* f joins e's table. */
    assert_int_equal(tes_set(w, f, tag, NULL), TES_OK);
    assert_int_equal(stats_of(w).tables, tables + 1);
    assert_int_equal(h.on_add, 2);
    /* Several tags, then removals, keep the data. */
    assert_int_equal(tes_add(w, e, tag2), TES_OK);
    assert_int_equal(tes_add(w, e, tag), TES_OK); /* already there */
    assert_int_equal(h.on_add, 2);
    tes_comp_t want[] = {tag, tag2, a};
    assert_components(w, e, want, 3);
    assert_int_equal(tes_remove(w, e, tag), TES_OK);
    assert_int_equal(h.on_remove, 1);
    assert_int_equal(tes_remove(w, e, tag), TES_OK);
    assert_int_equal(h.on_remove, 1);
    assert_false(tes_has(w, e, tag));
    assert_true(tes_has(w, e, tag2));
    assert_int_equal(*(const uint64_t *)tes_get(w, e, a), 11);
    assert_int_equal(*(const uint64_t *)tes_get(w, f, a), 22);
    /* An entity with only tags. */
    tes_entity_t t = tes_spawn(w);
    assert_int_equal(tes_add(w, t, tag), TES_OK);
    assert_int_equal(tes_add(w, t, tag2), TES_OK);
    assert_int_equal(tes_components_of(w, t, NULL, 0), 2);
    assert_int_equal(tes_destroy(w, t), TES_OK);
    assert_int_equal(h.on_remove, 2);
    check(w);
    tes_world_free(w);
}

static void test_table_sparse_hybrid(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t ht = {0}, hs = {0}, hst = {0};
    /* Interleaved ids: table, sparse, table, stable, table tag, sparse tag. */
    tes_comp_t t1 = reg_tracked(w, "T1", &ht, TES_STORAGE_TABLE, false);
    tes_comp_t s1 = reg_tracked(w, "S1", &hs, TES_STORAGE_SPARSE, false);
    tes_comp_t t2 = reg(w, "T2", 16, 0, TES_STORAGE_TABLE, false);
    tes_comp_t s2 = reg_tracked(w, "S2", &hst, TES_STORAGE_SPARSE, true);
    tes_comp_t tg = reg(w, "TG", 0, 0, TES_STORAGE_TABLE, false);
    tes_comp_t sg = reg(w, "SG", 0, 0, TES_STORAGE_SPARSE, false);

    enum { N = 50 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(i);
        assert_int_equal(tes_set(w, e[i], s2, &v), TES_OK);
        assert_int_equal(tes_add(w, e[i], sg), TES_OK);
        assert_int_equal(tes_set(w, e[i], t1, &v), TES_OK);
        v.value = i + 1000;
        assert_int_equal(tes_set(w, e[i], s1, &v), TES_OK);
        uint8_t buf[16];
        fill(buf, 16, (uint64_t)i + 1);
        assert_int_equal(tes_set(w, e[i], t2, buf), TES_OK);
        assert_int_equal(tes_add(w, e[i], tg), TES_OK);
    }
    tes_comp_t all[] = {t1, s1, t2, s2, tg, sg};
    tes_comp_t out[8];
    assert_int_equal(tes_components_of(w, e[0], out, 8), 6);
    assert_memory_equal(out, all, sizeof all); /* ascending, storages merged */

    /* Table moves leave sparse values (and stable addresses) alone. */
    const void *stable_addr = tes_get(w, e[7], s2);
    assert_int_equal(tes_remove(w, e[7], t2), TES_OK);
    assert_int_equal(tes_remove(w, e[7], tg), TES_OK);
    assert_int_equal(tes_add(w, e[7], tg), TES_OK);
    assert_ptr_equal(tes_get(w, e[7], s2), stable_addr);
    assert_int_equal(tracked_value(w, e[7], s1), 1007);
    assert_int_equal(tracked_value(w, e[7], t1), 7);
    tes_comp_t want7[] = {t1, s1, s2, tg, sg};
    assert_components(w, e[7], want7, 5);

    /* Sparse changes leave the table row alone. */
    const void *row = tes_get(w, e[8], t2);
    assert_int_equal(tes_remove(w, e[8], s1), TES_OK);
    assert_int_equal(tes_remove(w, e[8], sg), TES_OK);
    assert_int_equal(tes_add(w, e[8], s1), TES_OK);
    assert_ptr_equal(tes_get(w, e[8], t2), row);
    assert_int_equal(tracked_value(w, e[8], s1), CTOR_VALUE);

    /* An entity with only sparse components, then only table ones. */
    assert_int_equal(tes_remove(w, e[9], t1), TES_OK);
    assert_int_equal(tes_remove(w, e[9], t2), TES_OK);
    assert_int_equal(tes_remove(w, e[9], tg), TES_OK);
    tes_comp_t want9[] = {s1, s2, sg};
    assert_components(w, e[9], want9, 3);
    assert_int_equal(tes_remove(w, e[10], s1), TES_OK);
    assert_int_equal(tes_remove(w, e[10], s2), TES_OK);
    assert_int_equal(tes_remove(w, e[10], sg), TES_OK);
    tes_comp_t want10[] = {t1, t2, tg};
    assert_components(w, e[10], want10, 3);

    /* Destroying and clearing handle both storages. */
    assert_int_equal(tes_destroy(w, e[11]), TES_OK);
    assert_int_equal(tes_clear(w, e[12]), TES_OK);
    assert_int_equal(tes_components_of(w, e[12], NULL, 0), 0);
    for (int i = 13; i < N; i++) {
        assert_int_equal(tracked_value(w, e[i], t1), i);
        assert_int_equal(tracked_value(w, e[i], s1), i + 1000);
        assert_int_equal(tracked_value(w, e[i], s2), i);
        assert_filled(tes_get(w, e[i], t2), 16, (uint64_t)i + 1);
        assert_components(w, e[i], all, 6);
    }
    assert_balanced(&ht, N - 3);
    assert_balanced(&hs, N - 3);
    assert_balanced(&hst, N - 3);
    check(w);
    tes_world_free(w);
    assert_balanced(&ht, 0);
    assert_balanced(&hs, 0);
    assert_balanced(&hst, 0);
}

/* ------------------------------------------------------------------------ */
/* Clone                                                                     */
/* ------------------------------------------------------------------------ */

static void test_clone(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t ht = {0}, hs = {0}, hst = {0};
    tes_comp_t t1 = reg_tracked(w, "T1", &ht, TES_STORAGE_TABLE, false);
    tes_comp_t s1 = reg_tracked(w, "S1", &hs, TES_STORAGE_SPARSE, false);
    tes_comp_t s2 = reg_tracked(w, "S2", &hst, TES_STORAGE_SPARSE, true);
    tes_comp_t t2 = reg(w, "T2", 20, 0, TES_STORAGE_TABLE, false);
    tes_comp_t p1 = reg(w, "P1", 40, 0, TES_STORAGE_SPARSE, false);
    tes_comp_t tg = reg(w, "TG", 0, 0, TES_STORAGE_TABLE, false);
    tes_comp_t sg = reg(w, "SG", 0, 0, TES_STORAGE_SPARSE, false);

    tes_entity_t src = tes_spawn(w);
    tracked_t v = tv(5);
    assert_int_equal(tes_set(w, src, t1, &v), TES_OK);
    v.value = 6;
    assert_int_equal(tes_set(w, src, s1, &v), TES_OK);
    v.value = 7;
    assert_int_equal(tes_set(w, src, s2, &v), TES_OK);
    uint8_t buf[40];
    fill(buf, 20, 0x1234);
    assert_int_equal(tes_set(w, src, t2, buf), TES_OK);
    fill(buf, 40, 0x5678);
    assert_int_equal(tes_set(w, src, p1, buf), TES_OK);
    assert_int_equal(tes_add(w, src, tg), TES_OK);
    assert_int_equal(tes_add(w, src, sg), TES_OK);
    assert_int_equal(tes_disable(w, src), TES_OK);

    hook_ctx_t before_t = ht, before_s = hs, before_st = hst;
    tes_entity_t c = tes_clone(w, src);
    assert_true(c != TES_NULL);
    assert_true(c != src);
    assert_true(tes_alive(w, c));
    tes_comp_t all[] = {TES_DISABLED, t1, s1, s2, t2, p1, tg, sg};
    assert_components(w, c, all, 8);
    assert_components(w, src, all, 8);
    assert_int_equal(tracked_value(w, c, t1), 5);
    assert_int_equal(tracked_value(w, c, s1), 6);
    assert_int_equal(tracked_value(w, c, s2), 7);
    assert_filled(tes_get(w, c, t2), 20, 0x1234);
    assert_filled(tes_get(w, c, p1), 40, 0x5678);
    assert_false(tes_enabled(w, c));
    /* Constructed, then assigned with the copy hook; on_add for the clone. */
    const hook_ctx_t *hk[3] = {&ht, &hs, &hst};
    const hook_ctx_t *bf[3] = {&before_t, &before_s, &before_st};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(hk[k]->ctor, bf[k]->ctor + 1);
        assert_int_equal(hk[k]->copy, bf[k]->copy + 1);
        assert_int_equal(hk[k]->on_add, bf[k]->on_add + 1);
        assert_int_equal(hk[k]->last_e, c);
        assert_int_equal(hk[k]->dtor, bf[k]->dtor);
    }
    /* Separate storage: changing the clone leaves the source alone. */
    ((tracked_t *)tes_get_mut(w, c, t1))->value = 50;
    ((tracked_t *)tes_get_mut(w, c, s1))->value = 60;
    ((tracked_t *)tes_get_mut(w, c, s2))->value = 70;
    memset(tes_get_mut(w, c, p1), 0, 40);
    assert_int_equal(tracked_value(w, src, t1), 5);
    assert_int_equal(tracked_value(w, src, s1), 6);
    assert_int_equal(tracked_value(w, src, s2), 7);
    assert_filled(tes_get(w, src, p1), 40, 0x5678);
    assert_int_equal(tes_remove(w, c, tg), TES_OK);
    assert_true(tes_has(w, src, tg));

    /* Many clones: the source table grows while cloning. */
    enum { N = 100 };
    tes_entity_t cl[N];
    for (int i = 0; i < N; i++) {
        cl[i] = tes_clone(w, i % 2 ? src : (i ? cl[i - 1] : src)); /* clones of clones too */
        assert_true(tes_alive(w, cl[i]));
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(tracked_value(w, cl[i], t1), 5);
        assert_int_equal(tracked_value(w, cl[i], s1), 6);
        assert_int_equal(tracked_value(w, cl[i], s2), 7);
        assert_filled(tes_get(w, cl[i], t2), 20, 0x1234);
        assert_components(w, cl[i], all, 8);
    }
    /* The source can go; the clones stay. */
    assert_int_equal(tes_destroy(w, src), TES_OK);
    assert_int_equal(tracked_value(w, cl[N - 1], s1), 6);
    assert_balanced(&ht, N + 1);
    assert_balanced(&hs, N + 1);
    assert_balanced(&hst, N + 1);
    assert_int_equal(ht.on_add - ht.on_remove, N + 1);

    /* Stale and null sources. */
    int32_t count = tes_entity_count(w);
    poison_invalid(w);
    assert_int_equal(tes_clone(w, src), TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    poison_invalid(w);
    assert_int_equal(tes_clone(w, TES_NULL), TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_clone(NULL, c), TES_NULL);
    assert_int_equal(tes_entity_count(w), count);

    /* An empty entity clones to an empty entity; so does a sparse-only one. */
    tes_entity_t empty = tes_spawn(w);
    tes_entity_t ec = tes_clone(w, empty);
    assert_true(tes_alive(w, ec));
    assert_int_equal(tes_components_of(w, ec, NULL, 0), 0);
    tes_entity_t sp = tes_spawn(w);
    v.value = 9;
    assert_int_equal(tes_set(w, sp, s1, &v), TES_OK);
    assert_int_equal(tes_add(w, sp, sg), TES_OK);
    tes_entity_t spc = tes_clone(w, sp);
    tes_comp_t want_sp[] = {s1, sg};
    assert_components(w, spc, want_sp, 2);
    assert_int_equal(tracked_value(w, spc, s1), 9);
    check(w);
    tes_world_free(w);
    assert_balanced(&ht, 0);
    assert_balanced(&hs, 0);
    assert_balanced(&hst, 0);
}

/* ------------------------------------------------------------------------ */
/* spawn_n                                                                   */
/* ------------------------------------------------------------------------ */

static void test_spawn_n(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t ht = {0}, hs = {0};
    tes_comp_t t1 = reg_tracked(w, "T1", &ht, TES_STORAGE_TABLE, false);
    tes_comp_t p1 = reg(w, "P1", 24, 0, TES_STORAGE_TABLE, false);
    tes_comp_t s1 = reg_tracked(w, "S1", &hs, TES_STORAGE_SPARSE, false);
    tes_comp_t ps = reg(w, "PS", 16, 0, TES_STORAGE_SPARSE, false);
    tes_comp_t pst = reg(w, "PST", 32, 0, TES_STORAGE_SPARSE, true);
    tes_comp_t tg = reg(w, "TG", 0, 0, TES_STORAGE_TABLE, false);
    tes_comp_t sg = reg(w, "SG", 0, 0, TES_STORAGE_SPARSE, false);

    /* Dirty the storage first: every reused row, slot and index held
     * non-zero bytes. */
    enum { DIRTY = 70, N = 100 };
    tes_entity_t dirty[DIRTY];
    uint8_t junk[32];
    memset(junk, 0xAB, sizeof junk);
    for (int i = 0; i < DIRTY; i++) {
        dirty[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, dirty[i], p1, junk), TES_OK);
        assert_int_equal(tes_set(w, dirty[i], ps, junk), TES_OK);
        assert_int_equal(tes_set(w, dirty[i], pst, junk), TES_OK);
        assert_int_equal(tes_add(w, dirty[i], tg), TES_OK);
    }
    for (int i = 0; i < DIRTY; i++)
        assert_int_equal(tes_destroy(w, dirty[i]), TES_OK);

    /* Unsorted input, table and sparse mixed. */
    tes_comp_t comps[] = {sg, p1, s1, tg, pst, t1, ps};
    tes_comp_t on_add_expect[] = {sg, p1, s1, tg, pst, t1, ps};
    ht.expect = hs.expect = on_add_expect;
    ht.expect_count = hs.expect_count = 7;
    tes_entity_t out[N];
    uint32_t tables = stats_of(w).tables;
    assert_int_equal(tes_spawn_n(w, N, comps, 7, out), TES_OK);
    ht.expect = hs.expect = NULL;
    ht.expect_count = hs.expect_count = 0;
    assert_int_equal(tes_entity_count(w), N);
    /* Straight into the final table: no intermediate tables. */
    assert_true(stats_of(w).tables <= tables + 1);
    for (int i = 0; i < N; i++) {
        assert_true(tes_alive(w, out[i]));
        for (int j = 0; j < i; j++)
            assert_true(out[i] != out[j]);
        assert_components(w, out[i], comps, 7);
        assert_int_equal(tracked_value(w, out[i], t1), CTOR_VALUE);
        assert_int_equal(tracked_value(w, out[i], s1), CTOR_VALUE);
        assert_filled(tes_get(w, out[i], p1), 24, 0);
        assert_filled(tes_get(w, out[i], ps), 16, 0);
        assert_filled(tes_get(w, out[i], pst), 32, 0);
        assert_null(tes_get(w, out[i], tg));
        assert_null(tes_get(w, out[i], sg));
    }
    /* Recycled slots: the old handles stay dead. */
    for (int i = 0; i < DIRTY; i++)
        assert_false(tes_alive(w, dirty[i]));
    assert_int_equal(ht.on_add, N);
    assert_int_equal(hs.on_add, N);
    assert_int_equal(ht.expect_fail + hs.expect_fail, 0); /* each entity was complete */
    assert_balanced(&ht, N);
    assert_balanced(&hs, N);

    /* Each is an ordinary entity: values are independent. */
    tracked_t v = tv(-1);
    assert_int_equal(tes_set(w, out[3], t1, &v), TES_OK);
    assert_int_equal(tracked_value(w, out[4], t1), CTOR_VALUE);
    assert_int_equal(tes_remove(w, out[5], s1), TES_OK);
    assert_true(tes_has(w, out[6], s1));

    /* n = 0 and no components. */
    assert_int_equal(tes_spawn_n(w, 0, comps, 7, out), TES_OK);
    assert_int_equal(tes_spawn_n(w, 0, NULL, 0, NULL), TES_OK);
    assert_int_equal(tes_entity_count(w), N);
    tes_entity_t bare[3];
    assert_int_equal(tes_spawn_n(w, 3, NULL, 0, bare), TES_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tes_components_of(w, bare[i], NULL, 0), 0);
    /* With the disabled tag. */
    tes_comp_t dis[] = {TES_DISABLED, p1};
    tes_entity_t d[2];
    assert_int_equal(tes_spawn_n(w, 2, dis, 2, d), TES_OK);
    assert_false(tes_enabled(w, d[0]));
    assert_false(tes_enabled(w, d[1]));
    check(w);
    tes_world_free(w);
    assert_balanced(&ht, 0);
    assert_balanced(&hs, 0);
}

static void test_spawn_n_invalid(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t ht = {0}, hs = {0};
    tes_comp_t t1 = reg_tracked(w, "T1", &ht, TES_STORAGE_TABLE, false);
    tes_comp_t s1 = reg_tracked(w, "S1", &hs, TES_STORAGE_SPARSE, false);
    tes_comp_t p1 = reg(w, "P1", 8, 0, TES_STORAGE_TABLE, false);
    tes_entity_t keep = tes_spawn(w);

    tes_comp_t unknown[] = {t1, s1, 4242};
    tes_comp_t zero[] = {t1, 0};
    tes_comp_t dup_t[] = {t1, p1, t1};
    tes_comp_t dup_s[] = {s1, t1, s1};
    tes_entity_t out[8];
    tes_world_stats_t before = stats_of(w);
    struct {
        int32_t n;
        const tes_comp_t *comps;
        int32_t ncomps;
        tes_entity_t *out;
    } bad[] = {
        {4, unknown, 3, out}, {4, zero, 2, out}, {4, dup_t, 3, out}, {4, dup_s, 3, out},
        {-1, dup_t, 1, out},  {4, dup_t, -1, out}, {4, dup_t, 3, NULL}, {4, NULL, 2, out},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        poison_stale(w);
        assert_int_equal(tes_spawn_n(w, bad[i].n, bad[i].comps, bad[i].ncomps, bad[i].out),
                         TES_ERR_INVALID);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        tes_world_stats_t now = stats_of(w);
        assert_int_equal(now.entities_alive, before.entities_alive);
        assert_int_equal(now.entity_slots, before.entity_slots);
        assert_int_equal(tes_entity_count(w), 1);
    }
    assert_int_equal(tes_spawn_n(NULL, 1, NULL, 0, out), TES_ERR_INVALID);
    assert_int_equal(ht.ctor + hs.ctor + ht.on_add + hs.on_add, 0);
    assert_true(tes_alive(w, keep));
    /* A later good call hands out the indices a bad one would have used. */
    assert_int_equal(tes_spawn_n(w, 2, dup_t, 2, out), TES_OK);
    assert_int_equal(tes_entity_index(out[0]), 1);
    assert_int_equal(tes_entity_index(out[1]), 2);
    assert_balanced(&ht, 2);
    check(w);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* Disable / enable                                                          */
/* ------------------------------------------------------------------------ */

static void test_disable_enable(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t h = {0};
    tes_comp_t t1 = reg_tracked(w, "T1", &h, TES_STORAGE_TABLE, false);
    tes_comp_t sp = reg(w, "SP", 8, 0, TES_STORAGE_SPARSE, false);

    tes_entity_t e = tes_spawn(w), f = tes_spawn(w), s = tes_spawn(w);
    tracked_t v = tv(4);
    assert_int_equal(tes_set(w, e, t1, &v), TES_OK);
    v.value = 5;
    assert_int_equal(tes_set(w, f, t1, &v), TES_OK);
    assert_int_equal(tes_set(w, s, sp, &(uint64_t){77}), TES_OK);
    assert_true(tes_enabled(w, e));

    assert_int_equal(tes_disable(w, e), TES_OK);
    assert_false(tes_enabled(w, e));
    assert_true(tes_has(w, e, TES_DISABLED));
    assert_true(tes_enabled(w, f));
    assert_int_equal(tracked_value(w, e, t1), 4); /* moved table, kept the value */
    assert_int_equal(tracked_value(w, f, t1), 5);
    /* Idempotent. */
    assert_int_equal(tes_disable(w, e), TES_OK);
    assert_int_equal(tes_components_of(w, e, NULL, 0), 2);
    assert_false(tes_enabled(w, e));
    /* A disabled entity is still an entity. */
    v.value = 6;
    assert_int_equal(tes_set(w, e, t1, &v), TES_OK);
    assert_int_equal(tes_add(w, e, sp), TES_OK);
    assert_false(tes_enabled(w, e));
    assert_int_equal(tes_enable(w, e), TES_OK);
    assert_true(tes_enabled(w, e));
    assert_false(tes_has(w, e, TES_DISABLED));
    assert_int_equal(tes_enable(w, e), TES_OK);
    assert_true(tes_enabled(w, e));
    assert_int_equal(tracked_value(w, e, t1), 6);
    tes_comp_t want[] = {t1, sp};
    assert_components(w, e, want, 2);

    /* Sparse-only and empty entities. */
    assert_int_equal(tes_disable(w, s), TES_OK);
    assert_false(tes_enabled(w, s));
    assert_int_equal(*(const uint64_t *)tes_get(w, s, sp), 77);
    tes_entity_t empty = tes_spawn(w);
    assert_int_equal(tes_disable(w, empty), TES_OK);
    assert_false(tes_enabled(w, empty));
    assert_int_equal(tes_clear(w, empty), TES_OK); /* clear removes the tag too */
    assert_true(tes_enabled(w, empty));

    /* Stale and null. */
    assert_int_equal(tes_destroy(w, s), TES_OK);
    assert_false(tes_enabled(w, s));
    poison_invalid(w);
    assert_int_equal(tes_disable(w, s), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    poison_invalid(w);
    assert_int_equal(tes_enable(w, s), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_false(tes_enabled(w, TES_NULL));
    assert_false(tes_enabled(NULL, e));
    assert_int_equal(tes_disable(w, TES_NULL), TES_ERR_STALE);
    /* The slot's next owner starts enabled. */
    tes_entity_t n = tes_spawn(w);
    assert_int_equal(tes_entity_index(n), tes_entity_index(s));
    assert_true(tes_enabled(w, n));
    assert_balanced(&h, 2);
    check(w);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* Many types                                                                */
/* ------------------------------------------------------------------------ */

enum { MT_TABLE = 40, MT_SPARSE = 4, MT_COMPS = MT_TABLE + MT_SPARSE, MT_ENTS = 1200 };

static size_t mt_size(int k)
{
    static const size_t sizes[] = {1, 2, 4, 8, 12, 16, 24, 48};
    if (k < MT_TABLE)
        return k % 2 ? 0 : sizes[(k / 2) % 8]; /* odd: tags */
    return k == MT_COMPS - 1 ? 0 : sizes[k % 8];
}

static uint64_t mt_mask(int i)
{
    /* Odd multiplier: distinct low 40 bits for distinct i. */
    uint64_t m = ((uint64_t)(i + 1) * UINT64_C(0x9E3779B97F4A7C15)) & ((UINT64_C(1) << 40) - 1);
    return m | ((uint64_t)((i * 7) % 16) << MT_TABLE);
}

static uint64_t mt_seed(int i, int k) { return ((uint64_t)i << 8 | (uint64_t)k) + 1; }

static void test_many_types(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t id[MT_COMPS];
    for (int k = 0; k < MT_COMPS; k++) {
        char name[16];
        snprintf(name, sizeof name, "M%d", k);
        bool sparse = k >= MT_TABLE;
        id[k] = reg(w, name, mt_size(k), 0, sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE,
                    k == MT_TABLE + 1);
    }
    tes_entity_t *e = calloc(MT_ENTS, sizeof *e);
    assert_non_null(e);
    rng_seed(31337);
    for (int i = 0; i < MT_ENTS; i++) {
        uint64_t mask = mt_mask(i);
        tes_comp_t comps[MT_COMPS];
        int32_t nc = 0;
        for (int k = 0; k < MT_COMPS; k++)
            if (mask >> k & 1)
                comps[nc++] = id[k];
        if (i % 4) {
            assert_int_equal(tes_spawn_n(w, 1, comps, nc, &e[i]), TES_OK);
        } else {
            /* One by one, in a random order. */
            e[i] = tes_spawn(w);
            for (int32_t a = nc - 1; a > 0; a--) {
                uint32_t b = rng_below((uint32_t)a + 1);
                tes_comp_t t = comps[a];
                comps[a] = comps[b];
                comps[b] = t;
            }
            for (int32_t a = 0; a < nc; a++)
                assert_int_equal(tes_add(w, e[i], comps[a]), TES_OK);
        }
        for (int k = 0; k < MT_COMPS; k++)
            if ((mask >> k & 1) && mt_size(k)) {
                uint8_t buf[48];
                fill(buf, mt_size(k), mt_seed(i, k));
                assert_int_equal(tes_set(w, e[i], id[k], buf), TES_OK);
            }
    }
    assert_true(stats_of(w).tables >= 1000);

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < MT_ENTS; i++) {
            if (round && i % 3 == 0) {
                assert_false(tes_alive(w, e[i]));
                continue;
            }
            uint64_t mask = mt_mask(i);
            tes_comp_t want[MT_COMPS];
            int32_t n = 0;
            for (int k = 0; k < MT_COMPS; k++) {
                bool has = mask >> k & 1;
                assert_int_equal(tes_has(w, e[i], id[k]), has);
                if (!has)
                    continue;
                want[n++] = id[k];
                if (mt_size(k))
                    assert_filled(tes_get(w, e[i], id[k]), mt_size(k), mt_seed(i, k));
                else
                    assert_null(tes_get(w, e[i], id[k]));
            }
            tes_comp_t out[MT_COMPS];
            assert_int_equal(tes_components_of(w, e[i], out, MT_COMPS), n);
            assert_memory_equal(out, want, (size_t)n * sizeof *out); /* ascending */
        }
        if (!round) {
            check(w);
            for (int i = 0; i < MT_ENTS; i += 3)
                assert_int_equal(tes_destroy(w, e[i]), TES_OK);
        }
    }
    free(e);
    check(w);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* Alignment                                                                 */
/* ------------------------------------------------------------------------ */

static void assert_aligned(const void *p, uintptr_t align)
{
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % align, 0);
}

static void test_alignment(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t b1 = reg(w, "B1", 1, 0, TES_STORAGE_TABLE, false);
    tes_comp_t a16 = reg(w, "A16", 32, 16, TES_STORAGE_TABLE, false);
    tes_comp_t b3 = reg(w, "B3", 3, 0, TES_STORAGE_TABLE, false);
    tes_comp_t n16 = reg(w, "N16", 48, 0, TES_STORAGE_TABLE, false); /* natural: 16 */
    tes_comp_t b12 = reg(w, "B12", 12, 0, TES_STORAGE_TABLE, false);
    tes_comp_t a8 = reg(w, "A8", 24, 8, TES_STORAGE_TABLE, false);
    tes_comp_t s16 = reg(w, "S16", 48, 16, TES_STORAGE_SPARSE, false);
    tes_comp_t st16 = reg(w, "ST16", 32, 16, TES_STORAGE_SPARSE, true);
    tes_comp_t sn16 = reg(w, "SN16", 16, 0, TES_STORAGE_SPARSE, false);
    tes_comp_t tg = reg(w, "TG", 0, 0, TES_STORAGE_TABLE, false);
    tes_comp_t odd[] = {b1, b3, b12, a8, tg};

    enum { N = 400 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        /* The odd-sized columns come first in some tables, later in others. */
        for (int k = 0; k < 5; k++)
            if (i >> k & 1)
                assert_int_equal(tes_add(w, e[i], odd[k]), TES_OK);
        assert_int_equal(tes_add(w, e[i], a16), TES_OK);
        assert_int_equal(tes_add(w, e[i], n16), TES_OK);
        assert_int_equal(tes_add(w, e[i], s16), TES_OK);
        assert_int_equal(tes_add(w, e[i], st16), TES_OK);
        assert_int_equal(tes_add(w, e[i], sn16), TES_OK);
        if (i % 3 == 0)
            assert_int_equal(tes_add(w, e[i], b1), TES_OK); /* moves again */
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N; i++) {
            if (!tes_alive(w, e[i]))
                continue;
            assert_aligned(tes_get(w, e[i], a16), 16);
            assert_aligned(tes_get(w, e[i], n16), 16);
            assert_aligned(tes_get(w, e[i], s16), 16);
            assert_aligned(tes_get(w, e[i], st16), 16);
            assert_aligned(tes_get(w, e[i], sn16), 16);
            if (tes_has(w, e[i], a8))
                assert_aligned(tes_get(w, e[i], a8), 8);
            if (tes_has(w, e[i], b12))
                assert_aligned(tes_get(w, e[i], b12), 4);
        }
        if (pass)
            break;
        /* Churn, then check again. */
        for (int i = 0; i < N; i += 5)
            assert_int_equal(tes_destroy(w, e[i]), TES_OK);
        for (int i = 1; i < N; i += 5)
            assert_int_equal(tes_remove(w, e[i], b3), TES_OK);
    }
    /* A clone and a bulk spawn land aligned too. */
    tes_entity_t c = tes_clone(w, e[2]);
    assert_aligned(tes_get(w, c, a16), 16);
    assert_aligned(tes_get(w, c, st16), 16);
    tes_comp_t comps[] = {b3, a16, s16, st16};
    tes_entity_t out[33];
    assert_int_equal(tes_spawn_n(w, 33, comps, 4, out), TES_OK);
    for (int i = 0; i < 33; i++) {
        assert_aligned(tes_get(w, out[i], a16), 16);
        assert_aligned(tes_get(w, out[i], s16), 16);
        assert_aligned(tes_get(w, out[i], st16), 16);
    }
    check(w);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* World teardown, idempotent add                                            */
/* ------------------------------------------------------------------------ */

static void test_world_free_many_tables(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t ht = {0}, hs = {0}, hst = {0};
    tes_comp_t t1 = reg_tracked(w, "T1", &ht, TES_STORAGE_TABLE, false);
    tes_comp_t s1 = reg_tracked(w, "S1", &hs, TES_STORAGE_SPARSE, false);
    tes_comp_t s2 = reg_tracked(w, "S2", &hst, TES_STORAGE_SPARSE, true);
    tes_comp_t x[4];
    x[0] = reg(w, "X0", 4, 0, TES_STORAGE_TABLE, false);
    x[1] = reg(w, "X1", 0, 0, TES_STORAGE_TABLE, false);
    x[2] = reg(w, "X2", 16, 0, TES_STORAGE_TABLE, false);
    x[3] = reg(w, "X3", 1, 0, TES_STORAGE_TABLE, false);
    enum { N = 333 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        for (int k = 0; k < 4; k++)
            if (i >> k & 1)
                assert_int_equal(tes_add(w, e[i], x[k]), TES_OK);
        assert_int_equal(tes_add(w, e[i], t1), TES_OK);
        if (i % 2)
            assert_int_equal(tes_add(w, e[i], s1), TES_OK);
        if (i % 3)
            assert_int_equal(tes_add(w, e[i], s2), TES_OK);
    }
    for (int i = 0; i < N; i += 4)
        assert_int_equal(tes_destroy(w, e[i]), TES_OK);
    for (int i = 1; i < N; i += 6)
        assert_int_equal(tes_remove(w, e[i], s2), TES_OK); /* leaves tombstones */
    int64_t removes = ht.on_remove + hs.on_remove + hst.on_remove;
    assert_true(ht.ctor - ht.dtor > 200);
    check(w);
    tes_world_free(w);
    assert_int_equal(ht.ctor, ht.dtor);
    assert_int_equal(hs.ctor, hs.dtor);
    assert_int_equal(hst.ctor, hst.dtor);
    assert_int_equal(ht.bad + hs.bad + hst.bad, 0);
    assert_int_equal(ht.on_remove + hs.on_remove + hst.on_remove, removes);
}

/* "Adding a component the entity already has does nothing": no relocation
 * of any value, no allocation, pointers stay valid, even when the entity's
 * table is exactly full. */
/* Frees the world a test left in *state (when an assertion cut it short). */
static int free_world(void **state)
{
    tes_world_free(*state);
    *state = NULL;
    return 0;
}

static void test_idempotent_add_does_not_relocate(void **state)
{
    tes_world_t *w = tes_world_new(NULL);
    *state = w;
    static hook_ctx_t h; /* outlives the test: the teardown may free the world */
    memset(&h, 0, sizeof h);
    tes_comp_t t1 = reg_tracked(w, "T1", &h, TES_STORAGE_TABLE, false);
    tes_comp_t tg = reg(w, "TG", 0, 0, TES_STORAGE_TABLE, false);
    tes_entity_t first = tes_spawn(w);
    tracked_t v = tv(1);
    assert_int_equal(tes_set(w, first, t1, &v), TES_OK);
    assert_int_equal(tes_add(w, first, tg), TES_OK);
    for (int n = 2; n <= 70; n++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_add(w, e, t1), TES_OK);
        assert_int_equal(tes_add(w, e, tg), TES_OK);
        const void *p = tes_get(w, first, t1);
        tes_world_stats_t before = stats_of(w);
        int64_t moves = h.move;
        assert_int_equal(tes_add(w, first, t1), TES_OK);
        assert_int_equal(tes_add(w, first, tg), TES_OK);
        if (h.move != moves || tes_get(w, first, t1) != p)
            print_message("idempotent add relocated the table at %d rows\n", n);
        assert_int_equal(h.move, moves);
        assert_ptr_equal(tes_get(w, first, t1), p);
        assert_int_equal(stats_of(w).allocations, before.allocations);
    }
    assert_int_equal(tracked_value(w, first, t1), 1);
    check(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_add_orders_keep_values),
        cmocka_unit_test(test_table_random_model),
        cmocka_unit_test(test_table_move_hook),
        cmocka_unit_test(test_table_swap_remove_keeps_values),
        cmocka_unit_test(test_table_tags),
        cmocka_unit_test(test_table_sparse_hybrid),
        cmocka_unit_test(test_clone),
        cmocka_unit_test(test_spawn_n),
        cmocka_unit_test(test_spawn_n_invalid),
        cmocka_unit_test(test_disable_enable),
        cmocka_unit_test(test_many_types),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_world_free_many_tables),
        cmocka_unit_test_teardown(test_idempotent_add_does_not_relocate, free_world),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
