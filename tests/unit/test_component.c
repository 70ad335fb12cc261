/*
 * Component API tests, part 1: the registry and sparse storage.
 *
 * - Registration: name rules, same-name/same-layout idempotence, layout
 *   clashes, natural and explicit alignment, entity_fields bounds, lookup,
 *   the TES_COMPONENT macro and the built-in tags.
 * - The per-entity component calls (add, set, ensure, remove, has, get,
 *   get_mut, clear, components_of, destroy, world_free) run three times, once
 *   per storage kind: a table component, a sparse component and a stable
 *   sparse component. Lifecycle hooks count every ctor/dtor/copy/move and
 *   observer call and check that values are constructed once and destroyed
 *   once; stale handles, unknown ids and structural calls from inside hooks
 *   (TES_ERR_BUSY) are checked on every call.
 * - Sparse specifics: pointer stability of stable components under heavy
 *   churn, tombstone reuse (no growth, same addresses), swap-and-pop keeping
 *   other entities' values (against a shadow array), and sparse add/remove
 *   never moving the entity's table row.
 *
 * Table storage proper (moves between tables, clone, spawn_n, many types,
 * alignment) is in test_table.c.
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

/* Makes tes_last_error hold TES_ERR_STALE, so that the next failing call is
 * seen to set its own status. */
static void poison_stale(tes_world_t *w)
{
    assert_int_equal(tes_destroy(w, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
}

/* Makes tes_last_error hold TES_ERR_INVALID. */
static void poison_invalid(tes_world_t *w)
{
    assert_int_equal(tes_component(w, NULL), 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
}

static tes_world_stats_t stats_of(const tes_world_t *w)
{
    tes_world_stats_t s;
    assert_int_equal(tes_world_stats(w, &s), TES_OK);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Tracked values and hooks                                                  */
/* ------------------------------------------------------------------------ */

#define LIVE UINT32_C(0x1A7E1A7E)
#define DEAD UINT32_C(0xDEADDEAD)
#define CTOR_VALUE 1000

/* A value whose hooks check the lifecycle: every use of a value that is not
 * constructed (or already destroyed, or moved from) counts as `bad`. */
typedef struct tracked_t {
    uint32_t magic;
    int32_t value;
} tracked_t;

typedef struct hook_ctx hook_ctx_t;
typedef void (*probe_fn)(hook_ctx_t *h, char hook, tes_entity_t e, void *ptr);

struct hook_ctx {
    tes_world_t *w;
    tes_comp_t self;  /* the component these hooks belong to */
    tes_comp_t other; /* another component, for probes */
    int64_t ctor, dtor, copy, move;
    int64_t on_add, on_set, on_remove;
    int64_t bad;
    char log[256];
    size_t nlog;
    tes_entity_t last_e;
    int32_t last_value; /* value seen by the last observer */
    void *last_ptr;
    probe_fn probe;     /* called from observers when set */
    bool lifecycle_probe; /* ctor/dtor/copy/move try tes_spawn */
    int64_t probe_ok, probe_fail;
    int64_t life_fail_ctor, life_fail_dtor, life_fail_copy, life_fail_move, life_ok;
    tes_entity_t leaked[64];
    int nleaked;
};

static void hlog(hook_ctx_t *h, char c)
{
    if (h->nlog + 1 < sizeof h->log) {
        h->log[h->nlog++] = c;
        h->log[h->nlog] = 0;
    }
}

/* The log is `want` followed only by moves (other values relocated into
 * the hole a removal left). */
static void assert_log_then_moves(const hook_ctx_t *h, const char *want)
{
    size_t n = strlen(want);
    assert_true(h->nlog >= n);
    assert_memory_equal(h->log, want, n);
    for (size_t i = n; i < h->nlog; i++)
        assert_int_equal(h->log[i], 'M');
}

static void hlog_reset(hook_ctx_t *h)
{
    h->nlog = 0;
    h->log[0] = 0;
}

/* From inside a lifecycle hook: a structural call must be refused. */
static void life_probe(hook_ctx_t *h, int64_t *fail)
{
    if (!h->lifecycle_probe || !h->w)
        return;
    tes_entity_t e = tes_spawn(h->w);
    if (e == TES_NULL && tes_last_error(h->w) == TES_ERR_BUSY) {
        h->life_ok++;
        return;
    }
    (*fail)++;
    if (e != TES_NULL && h->nleaked < 64)
        h->leaked[h->nleaked++] = e;
}

static void h_ctor(void *ptr, int32_t count, void *ctx)
{
    hook_ctx_t *h = ctx;
    tracked_t *p = ptr;
    for (int32_t i = 0; i < count; i++) {
        p[i].magic = LIVE;
        p[i].value = CTOR_VALUE;
    }
    h->ctor += count;
    hlog(h, 'C');
    life_probe(h, &h->life_fail_ctor);
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
    hlog(h, 'D');
    life_probe(h, &h->life_fail_dtor);
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
    hlog(h, 'Y');
    life_probe(h, &h->life_fail_copy);
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
        s[i].magic = DEAD; /* the source is raw memory now */
    }
    h->move += count;
    hlog(h, 'M');
    life_probe(h, &h->life_fail_move);
}

static void observe(hook_ctx_t *h, char c, tes_entity_t e, void *ptr)
{
    h->last_e = e;
    h->last_ptr = ptr;
    if (ptr) {
        const tracked_t *t = ptr;
        if (t->magic != LIVE)
            h->bad++;
        h->last_value = t->value;
    }
    hlog(h, c);
    if (h->probe)
        h->probe(h, c, e, ptr);
}

static void h_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    hook_ctx_t *h = ctx;
    if (w != h->w)
        h->bad++;
    h->on_add++;
    observe(h, 'A', e, ptr);
}

static void h_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    hook_ctx_t *h = ctx;
    if (w != h->w)
        h->bad++;
    h->on_set++;
    observe(h, 'S', e, ptr);
}

static void h_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    hook_ctx_t *h = ctx;
    if (w != h->w)
        h->bad++;
    h->on_remove++;
    observe(h, 'R', e, ptr);
}

static tes_hooks_t all_hooks(hook_ctx_t *h)
{
    return (tes_hooks_t){h_ctor, h_dtor, h_copy, h_move, h_on_add, h_on_set, h_on_remove, h, NULL, NULL};
}

static tracked_t tv(int32_t value) { return (tracked_t){LIVE, value}; }

static int32_t tracked_value(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    const tracked_t *t = tes_get(w, e, c);
    assert_non_null(t);
    assert_int_equal(t->magic, LIVE);
    return t->value;
}

/* Values are constructed once and destroyed once: ctor - dtor == live. */
static void assert_balanced(const hook_ctx_t *h, int64_t live)
{
    assert_int_equal(h->bad, 0);
    assert_int_equal(h->ctor - h->dtor, live);
}

/* A 16-byte component without hooks. */
typedef struct plain_t {
    uint64_t a;
    uint32_t b;
    uint32_t c;
} plain_t;

static plain_t pv(uint64_t seed)
{
    return (plain_t){seed * 2654435761u + 1, (uint32_t)(seed ^ 0x5A5A5A5Au), (uint32_t)seed};
}

static void assert_plain(const tes_world_t *w, tes_entity_t e, tes_comp_t c, plain_t want)
{
    const plain_t *p = tes_get(w, e, c);
    assert_non_null(p);
    assert_memory_equal(p, &want, sizeof want);
}

/* ------------------------------------------------------------------------ */
/* Fixture: one world per test, components of one storage kind               */
/* ------------------------------------------------------------------------ */

enum { KIND_TABLE, KIND_SPARSE, KIND_STABLE };
static const int kind_table = KIND_TABLE, kind_sparse = KIND_SPARSE, kind_stable = KIND_STABLE;

typedef struct fx {
    int kind;
    tes_world_t *w;
    hook_ctx_t hc;        /* hooks of `tracked` */
    tes_comp_t t_other;   /* plain table component */
    tes_comp_t tracked;   /* tracked_t with every hook, of the fixture's kind */
    tes_comp_t s_other;   /* plain sparse component */
    tes_comp_t plain;     /* plain_t without hooks, of the fixture's kind */
    tes_comp_t tag;       /* tag of the fixture's kind */
    tes_comp_t t_tag;     /* table tag */
} fx_t;

static tes_component_desc_t kind_desc(int kind, const char *name, size_t size)
{
    tes_component_desc_t d = {.name = name, .size = size};
    if (kind == KIND_SPARSE)
        d.storage = TES_STORAGE_SPARSE;
    else if (kind == KIND_STABLE)
        d.stable = true; /* implies sparse, storage left at its default */
    return d;
}

static int fx_setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->kind = *(const int *)*state;
    f->w = tes_world_new(NULL);
    if (!f->w)
        return -1;
    f->hc.w = f->w;
    /* Registered so that ids of different storages interleave. */
    tes_component_desc_t d = kind_desc(KIND_TABLE, "TableOther", sizeof(plain_t));
    f->t_other = tes_component(f->w, &d);
    d = kind_desc(f->kind, "Tracked", sizeof(tracked_t));
    d.hooks = all_hooks(&f->hc);
    f->tracked = tes_component(f->w, &d);
    d = kind_desc(KIND_SPARSE, "SparseOther", sizeof(plain_t));
    f->s_other = tes_component(f->w, &d);
    d = kind_desc(f->kind, "Plain", sizeof(plain_t));
    f->plain = tes_component(f->w, &d);
    d = kind_desc(f->kind, "Tag", 0);
    f->tag = tes_component(f->w, &d);
    d = kind_desc(KIND_TABLE, "TableTag", 0);
    f->t_tag = tes_component(f->w, &d);
    if (!f->t_other || !f->tracked || !f->s_other || !f->plain || !f->tag || !f->t_tag)
        return -1;
    f->hc.self = f->tracked;
    f->hc.other = f->plain;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    if (f) {
        tes_world_free(f->w);
        free(f);
    }
    return 0;
}

static void fx_check(fx_t *f)
{
    assert_int_equal(tes__world_check(f->w), TES_OK);
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */
/* ------------------------------------------------------------------------ */

static void test_register_requires_name(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    uint32_t before = stats_of(w).components;
    assert_int_equal(before, 2); /* the built-ins */

    poison_stale(w);
    assert_int_equal(tes_component(w, NULL), 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);

    poison_stale(w);
    tes_component_desc_t d = {.size = 4};
    assert_int_equal(tes_component(w, &d), 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);

    poison_stale(w);
    d.name = "";
    assert_int_equal(tes_component(w, &d), 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);

    d.name = "Ok";
    assert_int_equal(tes_component(NULL, &d), 0);
    assert_int_equal(stats_of(w).components, before);
    assert_int_equal(tes_component_lookup(w, "Ok"), 0);

    tes_comp_t ok = tes_component(w, &d);
    assert_true(ok > TES_PREFAB);
    assert_int_equal(stats_of(w).components, before + 1);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_register_same_layout_same_id(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t first = {.w = w}, second = {.w = w};

    tes_component_desc_t d = {.name = "Pos", .size = sizeof(tracked_t)};
    d.hooks = all_hooks(&first);
    tes_comp_t a = tes_component(w, &d);
    assert_true(a > TES_PREFAB);
    uint32_t count = stats_of(w).components;

    /* Same layout, other hooks: same id, the first hooks stay. */
    d.hooks = all_hooks(&second);
    assert_int_equal(tes_component(w, &d), a);
    /* Explicit natural alignment is the same layout as align 0. */
    d.align = 8;
    assert_int_equal(tes_component(w, &d), a);
    assert_int_equal(stats_of(w).components, count);

    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(first.ctor, 1);
    assert_int_equal(first.on_add, 1);
    assert_int_equal(second.ctor, 0);
    assert_int_equal(second.on_add, 0);

    /* stable implies sparse: with or without the explicit storage, same id. */
    tes_component_desc_t s1 = {.name = "Stable", .size = 8, .stable = true};
    tes_component_desc_t s2 = {.name = "Stable", .size = 8, .stable = true,
                               .storage = TES_STORAGE_SPARSE};
    tes_comp_t s = tes_component(w, &s1);
    assert_true(s > a);
    assert_int_equal(tes_component(w, &s2), s);

    /* Tags too. */
    tes_component_desc_t t = {.name = "Tag"};
    tes_comp_t tag = tes_component(w, &t);
    assert_true(tag > s);
    assert_int_equal(tes_component(w, &t), tag);
    t.align = 4; /* ignored for tags */
    assert_int_equal(tes_component(w, &t), tag);

    /* The name is copied. */
    char buf[16];
    strcpy(buf, "Copied");
    tes_component_desc_t c = {.name = buf, .size = 4};
    tes_comp_t copied = tes_component(w, &c);
    assert_true(copied > tag);
    buf[0] = 'X';
    assert_int_equal(tes_component_lookup(w, "Copied"), copied);
    assert_int_equal(tes_component_lookup(w, "Xopied"), 0);

    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    assert_balanced(&first, 0);
}

static void test_register_clash(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t d = {.name = "Pos", .size = 8};
    tes_comp_t pos = tes_component(w, &d);
    assert_true(pos > 0);
    tes_component_desc_t sd = {.name = "Sp", .size = 8, .storage = TES_STORAGE_SPARSE};
    tes_comp_t sp = tes_component(w, &sd);
    tes_component_desc_t td = {.name = "Tg"};
    tes_comp_t tg = tes_component(w, &td);
    uint32_t count = stats_of(w).components;

    const tes_component_desc_t clashes[] = {
        {.name = "Pos", .size = 16},
        {.name = "Pos", .size = 8, .align = 4},
        {.name = "Pos", .size = 8, .storage = TES_STORAGE_SPARSE},
        {.name = "Pos", .size = 8, .stable = true},
        {.name = "Pos", .size = 0},
        {.name = "Sp", .size = 8},
        {.name = "Sp", .size = 8, .stable = true},
        {.name = "Sp", .size = 8, .storage = TES_STORAGE_SPARSE, .align = 2},
        {.name = "Tg", .size = 4},
        {.name = "Tg", .storage = TES_STORAGE_SPARSE},
        {.name = "tes.Disabled", .size = 4},
        {.name = "tes.Prefab", .storage = TES_STORAGE_SPARSE},
    };
    for (size_t i = 0; i < sizeof clashes / sizeof clashes[0]; i++) {
        poison_stale(w);
        assert_int_equal(tes_component(w, &clashes[i]), 0);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    }
    assert_int_equal(stats_of(w).components, count);
    assert_int_equal(tes_component_lookup(w, "Pos"), pos);
    assert_int_equal(tes_component_lookup(w, "Sp"), sp);
    assert_int_equal(tes_component_lookup(w, "Tg"), tg);
    /* The originals still work as registered. */
    assert_int_equal(tes_component(w, &d), pos);
    assert_int_equal(tes_component(w, &sd), sp);
    assert_int_equal(tes_component(w, &td), tg);
    tes_component_desc_t dis = {.name = "tes.Disabled"};
    assert_int_equal(tes_component(w, &dis), TES_DISABLED);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_register_natural_align(void **state)
{
    (void)state;
    static const struct {
        size_t size, natural;
    } cases[] = {
        {1, 1},  {2, 2},  {3, 1},  {4, 4},   {6, 2},   {8, 8},   {12, 4},  {16, 16},
        {20, 4}, {24, 8}, {32, 16}, {40, 8}, {48, 16}, {64, 16}, {96, 16}, {100, 4},
    };
    tes_world_t *w = tes_world_new(NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%zu", cases[i].size);
        tes_component_desc_t d = {.name = name, .size = cases[i].size};
        tes_comp_t id = tes_component(w, &d);
        assert_true(id > 0);
        /* align 0 normalised to the natural alignment: same layout. */
        d.align = cases[i].natural;
        assert_int_equal(tes_component(w, &d), id);
        /* Any other valid alignment is another layout: a clash. */
        if (cases[i].natural > 1) {
            d.align = cases[i].natural / 2;
            poison_stale(w);
            assert_int_equal(tes_component(w, &d), 0);
            assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        }
        /* A larger alignment does not divide the size (or exceeds 16). */
        d.align = cases[i].natural * 2;
        poison_stale(w);
        assert_int_equal(tes_component(w, &d), 0);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        assert_int_equal(tes_component_lookup(w, name), id);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_register_bad_align(void **state)
{
    (void)state;
    static const struct {
        size_t size, align;
    } bad[] = {
        {12, 3}, {64, 32}, {12, 8}, {8, 16}, {2, 4}, {12, 6}, {48, 48}, {24, 5}, {1, 2},
        {4096, 64},
    };
    tes_world_t *w = tes_world_new(NULL);
    uint32_t count = stats_of(w).components;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tes_component_desc_t d = {.name = "Bad", .size = bad[i].size, .align = bad[i].align};
        poison_stale(w);
        assert_int_equal(tes_component(w, &d), 0);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        d.storage = TES_STORAGE_SPARSE;
        poison_stale(w);
        assert_int_equal(tes_component(w, &d), 0);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    }
    assert_int_equal(stats_of(w).components, count);
    assert_int_equal(tes_component_lookup(w, "Bad"), 0);

    static const struct {
        size_t size, align;
    } good[] = {{16, 16}, {12, 4}, {12, 1}, {12, 2}, {48, 16}, {8, 8}, {1, 1}, {32, 8}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "g%zu_%zu", good[i].size, good[i].align);
        tes_component_desc_t d = {.name = name, .size = good[i].size, .align = good[i].align};
        assert_true(tes_component(w, &d) > 0);
    }
    assert_int_equal(stats_of(w).components, count + sizeof good / sizeof good[0]);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_register_entity_fields(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    uint32_t count = stats_of(w).components;
    tes_component_desc_t bad[] = {
        {.name = "F", .size = 16, .entity_field_count = -1},
        {.name = "F", .size = 16, .entity_field_count = TES_MAX_ENTITY_FIELDS + 1},
        {.name = "F", .size = 16, .entity_fields = {9}, .entity_field_count = 1},
        {.name = "F", .size = 16, .entity_fields = {16}, .entity_field_count = 1},
        {.name = "F", .size = 16, .entity_fields = {1000}, .entity_field_count = 1},
        {.name = "F", .size = 16, .entity_fields = {0, 12}, .entity_field_count = 2},
        {.name = "F", .size = 16, .entity_fields = {(size_t)-1}, .entity_field_count = 1},
        {.name = "F", .size = 4, .entity_fields = {0}, .entity_field_count = 1},
        {.name = "F", .size = 0, .entity_fields = {0}, .entity_field_count = 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        poison_stale(w);
        assert_int_equal(tes_component(w, &bad[i]), 0);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    }
    assert_int_equal(stats_of(w).components, count);
    tes_component_desc_t ok1 = {.name = "F1", .size = 16, .entity_fields = {0, 8},
                                .entity_field_count = 2};
    tes_component_desc_t ok2 = {.name = "F2", .size = 8, .entity_fields = {0},
                                .entity_field_count = 1};
    tes_component_desc_t ok3 = {.name = "F3", .size = 64,
                                .entity_fields = {0, 8, 16, 24, 32, 40, 48, 56},
                                .entity_field_count = TES_MAX_ENTITY_FIELDS};
    /* Offsets past the count are ignored. */
    tes_component_desc_t ok4 = {.name = "F4", .size = 8, .entity_fields = {0, 999},
                                .entity_field_count = 1};
    assert_true(tes_component(w, &ok1) > 0);
    assert_true(tes_component(w, &ok2) > 0);
    assert_true(tes_component(w, &ok3) > 0);
    assert_true(tes_component(w, &ok4) > 0);
    assert_int_equal(stats_of(w).components, count + 4);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_lookup_and_builtins(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_int_equal(tes_component_lookup(w, "tes.Disabled"), TES_DISABLED);
    assert_int_equal(tes_component_lookup(w, "tes.Prefab"), TES_PREFAB);
    assert_int_equal(tes_component_lookup(w, "Nope"), 0);
    assert_int_equal(tes_component_lookup(w, ""), 0);
    assert_int_equal(tes_component_lookup(w, NULL), 0);
    assert_int_equal(tes_component_lookup(NULL, "tes.Disabled"), 0);
    assert_int_equal(tes_component_lookup(w, "tes.disabled"), 0); /* case matters */

    /* Ids are dense and distinct, every name maps back to its id. */
    tes_comp_t ids[20];
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", i);
        tes_component_desc_t d = {.name = name, .size = (size_t)(i % 3) * 4,
                                  .storage = i % 2 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE};
        ids[i] = tes_component(w, &d);
        assert_int_equal(ids[i], TES_PREFAB + 1 + (tes_comp_t)i);
    }
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", i);
        assert_int_equal(tes_component_lookup(w, name), ids[i]);
    }
    assert_int_equal(stats_of(w).components, 22);

    /* The built-ins are tags. */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, TES_DISABLED), TES_OK);
    assert_int_equal(tes_add(w, e, TES_PREFAB), TES_OK);
    assert_true(tes_has(w, e, TES_DISABLED));
    assert_true(tes_has(w, e, TES_PREFAB));
    assert_null(tes_get(w, e, TES_DISABLED));
    assert_null(tes_get_mut(w, e, TES_PREFAB));
    poison_stale(w);
    assert_null(tes_ensure(w, e, TES_DISABLED));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    tes_comp_t out[4];
    assert_int_equal(tes_components_of(w, e, out, 4), 2);
    assert_int_equal(out[0], TES_DISABLED);
    assert_int_equal(out[1], TES_PREFAB);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

typedef struct Position {
    float x, y, z;
} Position;

typedef struct Velocity {
    double dx, dy;
} Velocity;

typedef struct Health {
    int32_t hp;
} Health;

static void test_component_macro(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    assert_true(pos > TES_PREFAB);
    assert_int_equal(tes_component_lookup(w, "Position"), pos);
    assert_int_equal(TES_COMPONENT(w, Position), pos);

    tes_comp_t vel = TES_COMPONENT(w, Velocity, .storage = TES_STORAGE_SPARSE);
    assert_true(vel > pos);
    assert_int_equal(tes_component_lookup(w, "Velocity"), vel);
    assert_int_equal(TES_COMPONENT(w, Velocity, .storage = TES_STORAGE_SPARSE), vel);
    poison_stale(w);
    assert_int_equal(TES_COMPONENT(w, Velocity), 0); /* table layout: clash */
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);

    hook_ctx_t h = {.w = w};
    tes_comp_t hp = TES_COMPONENT(w, Health, .stable = true,
                                  .hooks = {.on_add = h_on_add, .ctx = &h});
    assert_true(hp > vel);
    assert_int_equal(tes_component_lookup(w, "Health"), hp);

    tes_entity_t e = tes_spawn(w);
    uint32_t tables = stats_of(w).tables;
    assert_int_equal(tes_set(w, e, pos, &(Position){1.0f, 2.0f, 3.0f}), TES_OK);
    assert_int_equal(stats_of(w).tables, tables + 1); /* Position lives in a table */
    assert_int_equal(tes_set(w, e, vel, &(Velocity){4.0, 5.0}), TES_OK);
    assert_int_equal(tes_set(w, e, hp, &(Health){77}), TES_OK);
    assert_int_equal(stats_of(w).tables, tables + 1); /* the sparse ones do not */
    assert_int_equal(h.on_add, 1);
    const Position *p = tes_get(w, e, pos);
    const Velocity *v = tes_get(w, e, vel);
    const Health *hh = tes_get(w, e, hp);
    assert_non_null(p);
    assert_non_null(v);
    assert_non_null(hh);
    assert_true(p->x == 1.0f && p->y == 2.0f && p->z == 3.0f);
    assert_true(v->dx == 4.0 && v->dy == 5.0);
    assert_int_equal(hh->hp, 77);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* Per-kind component calls                                                  */
/* ------------------------------------------------------------------------ */

static void test_kind_storage(void **state)
{
    fx_t *f = *state;
    tes_entity_t e = tes_spawn(f->w);
    uint32_t tables = stats_of(f->w).tables;
    assert_int_equal(tes_add(f->w, e, f->tracked), TES_OK);
    /* A table component moves the entity into a new table; a sparse one
     * leaves it where it is. */
    assert_int_equal(stats_of(f->w).tables, tables + (f->kind == KIND_TABLE ? 1u : 0u));
    assert_int_equal(tes_add(f->w, e, f->plain), TES_OK);
    assert_int_equal(tes_add(f->w, e, f->tag), TES_OK);
    assert_int_equal(stats_of(f->w).tables, tables + (f->kind == KIND_TABLE ? 3u : 0u));
    fx_check(f);
}

static void test_add(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    hlog_reset(&f->hc);
    assert_int_equal(tes_add(w, e, f->tracked), TES_OK);
    assert_true(tes_has(w, e, f->tracked));
    assert_int_equal(tracked_value(w, e, f->tracked), CTOR_VALUE); /* ctor used */
    assert_string_equal(f->hc.log, "CA");
    assert_int_equal(f->hc.last_e, e);
    assert_ptr_equal(f->hc.last_ptr, tes_get(w, e, f->tracked));
    assert_int_equal(f->hc.last_value, CTOR_VALUE); /* on_add saw the constructed value */

    /* Idempotent: nothing runs, the value stays. */
    ((tracked_t *)tes_get_mut(w, e, f->tracked))->value = 42;
    hlog_reset(&f->hc);
    assert_int_equal(tes_add(w, e, f->tracked), TES_OK);
    assert_int_equal(tes_add(w, e, f->tracked), TES_OK);
    assert_string_equal(f->hc.log, "");
    assert_int_equal(f->hc.ctor, 1);
    assert_int_equal(f->hc.on_add, 1);
    assert_int_equal(tracked_value(w, e, f->tracked), 42);

    /* Without a ctor: zero-filled. */
    assert_int_equal(tes_add(w, e, f->plain), TES_OK);
    plain_t zero = {0};
    assert_plain(w, e, f->plain, zero);
    tes_comp_t out[8];
    assert_int_equal(tes_components_of(w, e, out, 8), 2);
    assert_balanced(&f->hc, 1);
    fx_check(f);
}

/* Memory that held a value is zero-filled again when reused by an add. */
static void test_add_zero_fills_reused_memory(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 40 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        plain_t v = pv((uint64_t)i + 1);
        memset(&v, 0xAB, sizeof v);
        assert_int_equal(tes_set(w, e[i], f->plain, &v), TES_OK);
    }
    /* Remove and re-add in a shuffled order: every slot or row that gets
     * reused held 0xAB bytes. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i += 2)
            assert_int_equal(tes_remove(w, e[i], f->plain), TES_OK);
        tes_entity_t fresh[N / 2];
        for (int i = 0; i < N / 2; i++) {
            fresh[i] = tes_spawn(w);
            assert_int_equal(tes_add(w, fresh[i], f->plain), TES_OK);
            assert_plain(w, fresh[i], f->plain, (plain_t){0});
        }
        for (int i = 0; i < N; i += 2) {
            assert_int_equal(tes_add(w, e[i], f->plain), TES_OK);
            assert_plain(w, e[i], f->plain, (plain_t){0});
            plain_t v;
            memset(&v, 0xAB, sizeof v);
            assert_int_equal(tes_set(w, e[i], f->plain, &v), TES_OK);
        }
        for (int i = 0; i < N / 2; i++)
            assert_int_equal(tes_destroy(w, fresh[i]), TES_OK);
    }
    fx_check(f);
}

static void test_set(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);

    /* Missing: ctor, on_add, copy, on_set. */
    hlog_reset(&f->hc);
    tracked_t v = tv(7);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    assert_string_equal(f->hc.log, "CAYS");
    assert_true(tes_has(w, e, f->tracked));
    assert_int_equal(tracked_value(w, e, f->tracked), 7);
    assert_int_equal(f->hc.last_value, 7); /* on_set saw the new value */
    assert_int_equal(f->hc.last_e, e);
    assert_int_equal(f->hc.copy, 1);
    assert_int_equal(f->hc.on_set, 1);

    /* Present: copy and on_set only. */
    hlog_reset(&f->hc);
    v = tv(8);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    assert_string_equal(f->hc.log, "YS");
    assert_int_equal(f->hc.last_value, 8);
    assert_int_equal(tracked_value(w, e, f->tracked), 8);
    assert_int_equal(f->hc.ctor, 1);
    assert_int_equal(f->hc.on_add, 1);
    assert_int_equal(f->hc.copy, 2);

    /* No copy hook: memcpy, also for values with every byte set. */
    plain_t p = pv(99);
    assert_int_equal(tes_set(w, e, f->plain, &p), TES_OK);
    assert_plain(w, e, f->plain, p);
    memset(&p, 0xFF, sizeof p);
    assert_int_equal(tes_set(w, e, f->plain, &p), TES_OK);
    assert_plain(w, e, f->plain, p);

    /* A tag ignores the value. */
    assert_int_equal(tes_set(w, e, f->tag, NULL), TES_OK);
    assert_true(tes_has(w, e, f->tag));
    assert_int_equal(tes_set(w, e, f->tag, &p), TES_OK);
    assert_null(tes_get(w, e, f->tag));

    /* The set value is a copy. */
    v.value = 12345;
    assert_int_equal(tracked_value(w, e, f->tracked), 8);
    assert_balanced(&f->hc, 1);
    fx_check(f);
}

static void test_set_null_value(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    uint32_t tables = stats_of(w).tables;

    poison_stale(w);
    assert_int_equal(tes_set(w, e, f->tracked, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_false(tes_has(w, e, f->tracked));
    assert_int_equal(f->hc.ctor + f->hc.on_add + f->hc.copy + f->hc.on_set, 0);
    poison_stale(w);
    assert_int_equal(tes_set(w, e, f->plain, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_false(tes_has(w, e, f->plain));
    assert_int_equal(tes_components_of(w, e, NULL, 0), 0);

    /* With the component present: still refused, value unchanged. */
    tracked_t v = tv(5);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    poison_stale(w);
    assert_int_equal(tes_set(w, e, f->tracked, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tracked_value(w, e, f->tracked), 5);
    assert_int_equal(f->hc.on_set, 1);
    assert_int_equal(stats_of(w).tables, tables + (f->kind == KIND_TABLE ? 1u : 0u));
    assert_balanced(&f->hc, 1);
    fx_check(f);
}

static void test_ensure(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    hlog_reset(&f->hc);
    tracked_t *p = tes_ensure(w, e, f->tracked);
    assert_non_null(p);
    assert_string_equal(f->hc.log, "CA");
    assert_ptr_equal(p, tes_get_mut(w, e, f->tracked));
    assert_int_equal(p->magic, LIVE);
    assert_int_equal(p->value, CTOR_VALUE);
    p->value = 31;

    /* Present: the same pointer, nothing fires. */
    hlog_reset(&f->hc);
    assert_ptr_equal(tes_ensure(w, e, f->tracked), p);
    assert_string_equal(f->hc.log, "");
    assert_int_equal(tracked_value(w, e, f->tracked), 31);

    plain_t *q = tes_ensure(w, e, f->plain);
    assert_non_null(q);
    assert_memory_equal(q, &(plain_t){0}, sizeof *q);
    *q = pv(3);
    assert_plain(w, e, f->plain, pv(3));

    /* A tag has no data: NULL, TES_ERR_INVALID, and it is not added. */
    poison_stale(w);
    assert_null(tes_ensure(w, e, f->tag));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_false(tes_has(w, e, f->tag));
    poison_stale(w);
    assert_null(tes_ensure(w, e, f->t_tag));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_false(tes_has(w, e, f->t_tag));
    assert_int_equal(tes_components_of(w, e, NULL, 0), 2);
    assert_balanced(&f->hc, 1);
    fx_check(f);
}

static void test_remove(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    tracked_t v = tv(55);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    assert_int_equal(tes_set(w, e, f->plain, &(plain_t){1, 2, 3}), TES_OK);
    assert_int_equal(tes_add(w, e, f->tag), TES_OK);

    hlog_reset(&f->hc);
    f->hc.last_value = 0;
    assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
    assert_string_equal(f->hc.log, "RD"); /* on_remove, then dtor */
    assert_int_equal(f->hc.last_value, 55); /* on_remove saw the value */
    assert_int_equal(f->hc.last_e, e);
    assert_false(tes_has(w, e, f->tracked));
    assert_null(tes_get(w, e, f->tracked));
    assert_null(tes_get_mut(w, e, f->tracked));
    /* The other components are untouched. */
    assert_plain(w, e, f->plain, (plain_t){1, 2, 3});
    assert_true(tes_has(w, e, f->tag));

    /* Idempotent. */
    hlog_reset(&f->hc);
    assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
    assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
    assert_string_equal(f->hc.log, "");
    assert_int_equal(f->hc.on_remove, 1);
    assert_int_equal(f->hc.dtor, 1);

    assert_int_equal(tes_remove(w, e, f->tag), TES_OK);
    assert_false(tes_has(w, e, f->tag));
    assert_int_equal(tes_remove(w, e, f->tag), TES_OK);
    assert_int_equal(tes_remove(w, e, f->plain), TES_OK);
    assert_int_equal(tes_components_of(w, e, NULL, 0), 0);
    assert_true(tes_alive(w, e));

    /* Added again: constructed afresh. */
    assert_int_equal(tes_add(w, e, f->tracked), TES_OK);
    assert_int_equal(tracked_value(w, e, f->tracked), CTOR_VALUE);
    assert_balanced(&f->hc, 1);
    fx_check(f);
}

static void test_has_get(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t a = tes_spawn(w), b = tes_spawn(w);
    assert_false(tes_has(w, a, f->tracked));
    assert_null(tes_get(w, a, f->tracked));
    assert_null(tes_get_mut(w, a, f->tracked));
    assert_int_equal(tes_set(w, a, f->plain, &(plain_t){10, 11, 12}), TES_OK);
    assert_int_equal(tes_set(w, b, f->plain, &(plain_t){20, 21, 22}), TES_OK);
    assert_true(tes_has(w, a, f->plain));
    assert_false(tes_has(w, a, f->tracked));
    const void *ga = tes_get(w, a, f->plain);
    assert_ptr_equal(ga, tes_get_mut(w, a, f->plain));
    assert_ptr_not_equal(ga, tes_get(w, b, f->plain));
    /* Writes through get_mut are what get reads. */
    ((plain_t *)tes_get_mut(w, b, f->plain))->c = 99;
    assert_plain(w, b, f->plain, (plain_t){20, 21, 99});
    assert_plain(w, a, f->plain, (plain_t){10, 11, 12});

    /* Tags: has, but no data. */
    assert_int_equal(tes_add(w, a, f->tag), TES_OK);
    assert_true(tes_has(w, a, f->tag));
    assert_false(tes_has(w, b, f->tag));
    assert_null(tes_get(w, a, f->tag));
    assert_null(tes_get_mut(w, a, f->tag));

    /* NULL world, unknown ids. */
    assert_false(tes_has(NULL, a, f->plain));
    assert_null(tes_get(NULL, a, f->plain));
    assert_null(tes_get_mut(NULL, a, f->plain));
    assert_false(tes_has(w, a, 0));
    assert_null(tes_get(w, a, 0));
    assert_false(tes_has(w, a, 4242));
    assert_null(tes_get(w, a, 4242));
    assert_null(tes_get_mut(w, a, 4242));

    /* Stale. */
    assert_int_equal(tes_destroy(w, a), TES_OK);
    assert_false(tes_has(w, a, f->plain));
    assert_false(tes_has(w, a, f->tag));
    assert_null(tes_get(w, a, f->plain));
    assert_null(tes_get_mut(w, a, f->plain));
    assert_plain(w, b, f->plain, (plain_t){20, 21, 99});
    fx_check(f);
}

static void test_clear(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e[3];
    for (int i = 0; i < 3; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(100 + i);
        assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->plain, &(plain_t){(uint64_t)i, 1, 2}), TES_OK);
        assert_int_equal(tes_add(w, e[i], f->tag), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->t_other, &(plain_t){(uint64_t)i, 3, 4}), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->s_other, &(plain_t){(uint64_t)i, 5, 6}), TES_OK);
        assert_int_equal(tes_add(w, e[i], f->t_tag), TES_OK);
    }
    hlog_reset(&f->hc);
    f->hc.last_value = 0;
    assert_int_equal(tes_clear(w, e[0]), TES_OK);
    assert_log_then_moves(&f->hc, "RD");
    assert_int_equal(f->hc.last_value, 100);
    assert_int_equal(f->hc.last_e, e[0]);
    assert_true(tes_alive(w, e[0]));
    assert_int_equal(tes_components_of(w, e[0], NULL, 0), 0);
    tes_comp_t all[] = {f->tracked, f->plain, f->tag, f->t_other, f->s_other, f->t_tag};
    for (size_t k = 0; k < 6; k++) {
        assert_false(tes_has(w, e[0], all[k]));
        assert_null(tes_get(w, e[0], all[k]));
    }
    /* The others keep their values. */
    for (int i = 1; i < 3; i++) {
        assert_int_equal(tracked_value(w, e[i], f->tracked), 100 + i);
        assert_plain(w, e[i], f->plain, (plain_t){(uint64_t)i, 1, 2});
        assert_plain(w, e[i], f->t_other, (plain_t){(uint64_t)i, 3, 4});
        assert_plain(w, e[i], f->s_other, (plain_t){(uint64_t)i, 5, 6});
        assert_int_equal(tes_components_of(w, e[i], NULL, 0), 6);
    }
    /* Clearing an empty entity is fine; the entity can be refilled. */
    hlog_reset(&f->hc);
    assert_int_equal(tes_clear(w, e[0]), TES_OK);
    assert_string_equal(f->hc.log, "");
    assert_int_equal(tes_add(w, e[0], f->tracked), TES_OK);
    assert_int_equal(tes_add(w, e[0], f->s_other), TES_OK);
    assert_int_equal(tes_components_of(w, e[0], NULL, 0), 2);
    assert_int_equal(tes_clear(w, e[2]), TES_OK);
    assert_int_equal(tes_components_of(w, e[2], NULL, 0), 0);
    assert_int_equal(tes_entity_count(w), 3);
    assert_int_equal(f->hc.on_remove, 2);
    assert_balanced(&f->hc, 2);
    fx_check(f);
}

static void test_components_of(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_components_of(w, e, NULL, 0), 0);
    /* Added in descending order, mixing storages. */
    tes_comp_t want[] = {TES_DISABLED, f->t_other, f->tracked, f->s_other, f->plain,
                         f->tag, f->t_tag};
    for (int i = 6; i >= 0; i--)
        assert_int_equal(tes_add(w, e, want[i]), TES_OK);
    for (int i = 1; i < 7; i++)
        assert_true(want[i - 1] < want[i]);

    tes_comp_t out[10];
    for (int i = 0; i < 10; i++)
        out[i] = 0xBEEF;
    assert_int_equal(tes_components_of(w, e, out, 10), 7);
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(out[7], 0xBEEF);

    /* A smaller cap: the total, only cap ids written. */
    for (int i = 0; i < 10; i++)
        out[i] = 0xBEEF;
    assert_int_equal(tes_components_of(w, e, out, 3), 7);
    assert_memory_equal(out, want, 3 * sizeof *want);
    assert_int_equal(out[3], 0xBEEF);
    assert_int_equal(tes_components_of(w, e, NULL, 0), 7);
    out[0] = 0xBEEF;
    assert_int_equal(tes_components_of(w, e, out, 0), 7);
    assert_int_equal(out[0], 0xBEEF);
    assert_int_equal(tes_components_of(w, e, NULL, 2), -1);
    assert_int_equal(tes_components_of(w, e, out, -1), -1);
    assert_int_equal(tes_components_of(NULL, e, out, 10), -1);

    /* Remove from the middle of each storage. */
    assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
    assert_int_equal(tes_remove(w, e, f->s_other), TES_OK);
    tes_comp_t want2[] = {TES_DISABLED, f->t_other, f->plain, f->tag, f->t_tag};
    assert_int_equal(tes_components_of(w, e, out, 10), 5);
    assert_memory_equal(out, want2, sizeof want2);

    /* A second entity with the same components in another order. */
    tes_entity_t g = tes_spawn(w);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tes_add(w, g, want2[(i * 3) % 5]), TES_OK);
    assert_int_equal(tes_components_of(w, g, out, 10), 5);
    assert_memory_equal(out, want2, sizeof want2);

    assert_int_equal(tes_destroy(w, e), TES_OK);
    poison_invalid(w);
    assert_int_equal(tes_components_of(w, e, out, 10), -1);
    assert_int_equal(tes_components_of(w, e, NULL, 0), -1);
    assert_int_equal(tes_components_of(w, TES_NULL, out, 10), -1);
    fx_check(f);
}

static void test_destroy(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(10 + i);
        assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->plain, &(plain_t){(uint64_t)i, 7, 7}), TES_OK);
        assert_int_equal(tes_add(w, e[i], f->tag), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->s_other, &(plain_t){(uint64_t)i, 8, 8}), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->t_other, &(plain_t){(uint64_t)i, 9, 9}), TES_OK);
    }
    hlog_reset(&f->hc);
    f->hc.last_value = 0;
    assert_int_equal(tes_destroy(w, e[1]), TES_OK);
    assert_log_then_moves(&f->hc, "RD");
    assert_int_equal(f->hc.last_value, 11);
    assert_int_equal(f->hc.last_e, e[1]);
    assert_false(tes_alive(w, e[1]));
    assert_balanced(&f->hc, 3);
    for (int i = 0; i < 4; i++) {
        if (i == 1)
            continue;
        assert_int_equal(tracked_value(w, e[i], f->tracked), 10 + i);
        assert_plain(w, e[i], f->plain, (plain_t){(uint64_t)i, 7, 7});
        assert_plain(w, e[i], f->s_other, (plain_t){(uint64_t)i, 8, 8});
        assert_plain(w, e[i], f->t_other, (plain_t){(uint64_t)i, 9, 9});
        assert_true(tes_has(w, e[i], f->tag));
    }
    /* The slot is reused by a new entity, which starts empty. */
    tes_entity_t n = tes_spawn(w);
    assert_int_equal(tes_entity_index(n), tes_entity_index(e[1]));
    assert_int_equal(tes_components_of(w, n, NULL, 0), 0);
    assert_false(tes_has(w, n, f->tracked));
    assert_false(tes_has(w, n, f->plain));
    assert_false(tes_has(w, n, f->tag));
    assert_false(tes_has(w, n, f->s_other));
    assert_null(tes_get(w, n, f->plain));
    for (int i = 0; i < 4; i++)
        if (i != 1)
            assert_int_equal(tes_destroy(w, e[i]), TES_OK);
    assert_int_equal(f->hc.on_remove, 4);
    assert_balanced(&f->hc, 0);
    fx_check(f);
}

static void test_world_free_runs_dtors(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 50 };
    tes_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(i);
        assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
        if (i % 3 == 0)
            assert_int_equal(tes_add(w, e[i], f->t_other), TES_OK);
        if (i % 4 == 0)
            assert_int_equal(tes_add(w, e[i], f->tag), TES_OK);
    }
    for (int i = 0; i < N; i += 7)
        assert_int_equal(tes_remove(w, e[i], f->tracked), TES_OK);
    for (int i = 1; i < N; i += 5)
        assert_int_equal(tes_destroy(w, e[i]), TES_OK);
    int64_t live = f->hc.ctor - f->hc.dtor;
    assert_true(live > 30);
    int64_t removes = f->hc.on_remove;
    fx_check(f);

    tes_world_free(w);
    f->w = NULL;
    assert_int_equal(f->hc.bad, 0);              /* each value destroyed once */
    assert_int_equal(f->hc.ctor, f->hc.dtor);    /* every live one destroyed */
    assert_int_equal(f->hc.on_remove, removes);  /* no observer fired */
    tes_world_free(NULL);                        /* a no-op */
}

static void test_hook_order(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    hlog_reset(&f->hc);
    assert_int_equal(tes_add(w, e, f->tracked), TES_OK);
    assert_string_equal(f->hc.log, "CA");
    hlog_reset(&f->hc);
    assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
    assert_string_equal(f->hc.log, "RD");
    hlog_reset(&f->hc);
    tracked_t v = tv(3);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    assert_string_equal(f->hc.log, "CAYS");
    hlog_reset(&f->hc);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    assert_string_equal(f->hc.log, "YS");
    hlog_reset(&f->hc);
    assert_non_null(tes_ensure(w, e, f->tracked));
    assert_string_equal(f->hc.log, "");
    hlog_reset(&f->hc);
    assert_int_equal(tes_clear(w, e), TES_OK);
    assert_string_equal(f->hc.log, "RD");
    hlog_reset(&f->hc);
    assert_non_null(tes_ensure(w, e, f->tracked));
    assert_string_equal(f->hc.log, "CA");
    hlog_reset(&f->hc);
    assert_int_equal(tes_destroy(w, e), TES_OK);
    assert_string_equal(f->hc.log, "RD");
    assert_balanced(&f->hc, 0);
    fx_check(f);
}

/* Random operations on the tracked component, checking after each one that
 * constructed == destroyed + live and every value matches a shadow. */
static void test_counters_random(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 48, OPS = 6000 };
    tes_entity_t e[N];
    bool has[N];
    int32_t val[N];
    rng_seed(0xC0FFEEu + (uint64_t)f->kind);
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        has[i] = false;
        val[i] = 0;
    }
    for (int op = 0; op < OPS; op++) {
        uint32_t i = rng_below(N);
        switch (rng_below(9)) {
        case 0:
            assert_int_equal(tes_add(w, e[i], f->tracked), TES_OK);
            if (!has[i])
                val[i] = CTOR_VALUE;
            has[i] = true;
            break;
        case 1: {
            tracked_t v = tv((int32_t)rng_below(100000));
            assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
            has[i] = true;
            val[i] = v.value;
            break;
        }
        case 2:
        case 3:
            assert_int_equal(tes_remove(w, e[i], f->tracked), TES_OK);
            has[i] = false;
            break;
        case 4:
            assert_int_equal(tes_clear(w, e[i]), TES_OK);
            has[i] = false;
            break;
        case 5:
            assert_int_equal(tes_destroy(w, e[i]), TES_OK);
            e[i] = tes_spawn(w);
            has[i] = false;
            break;
        case 6: {
            uint32_t j = rng_below(N);
            if (j == i)
                break;
            assert_int_equal(tes_destroy(w, e[j]), TES_OK);
            e[j] = tes_clone(w, e[i]);
            assert_true(e[j] != TES_NULL);
            has[j] = has[i];
            val[j] = val[i];
            break;
        }
        case 7: {
            tracked_t *p = tes_ensure(w, e[i], f->tracked);
            assert_non_null(p);
            if (!has[i])
                val[i] = CTOR_VALUE;
            has[i] = true;
            p->value += 1;
            val[i] += 1;
            break;
        }
        default: {
            /* Other components churn around it. */
            tes_comp_t others[] = {f->plain, f->tag, f->t_other, f->s_other, f->t_tag};
            tes_comp_t c = others[rng_below(5)];
            if (rng_below(2))
                assert_int_equal(tes_add(w, e[i], c), TES_OK);
            else
                assert_int_equal(tes_remove(w, e[i], c), TES_OK);
            break;
        }
        }
        int64_t live = 0;
        for (int k = 0; k < N; k++)
            live += has[k];
        assert_balanced(&f->hc, live);
        assert_int_equal(f->hc.on_add - f->hc.on_remove, live);
        if (op % 500 == 0 || op == OPS - 1) {
            for (int k = 0; k < N; k++) {
                assert_int_equal(tes_has(w, e[k], f->tracked), has[k]);
                if (has[k])
                    assert_int_equal(tracked_value(w, e[k], f->tracked), val[k]);
                else
                    assert_null(tes_get(w, e[k], f->tracked));
            }
            fx_check(f);
        }
    }
    fx_check(f);
}

/* ------------------------------------------------------------------------ */
/* Stale handles and unknown ids                                             */
/* ------------------------------------------------------------------------ */

/* Every call with `bad` fails as stale and leaves the world alone. */
static void assert_all_stale(fx_t *f, tes_entity_t bad)
{
    tes_world_t *w = f->w;
    tracked_t v = tv(1);
    plain_t p = pv(1);
    tes_comp_t out[8] = {0};

#define EXPECT_STALE(call)                                     \
    do {                                                       \
        poison_invalid(w);                                     \
        assert_int_equal((call), TES_ERR_STALE);               \
        assert_int_equal(tes_last_error(w), TES_ERR_STALE);    \
    } while (0)

    EXPECT_STALE(tes_add(w, bad, f->tracked));
    EXPECT_STALE(tes_add(w, bad, f->tag));
    EXPECT_STALE(tes_set(w, bad, f->tracked, &v));
    EXPECT_STALE(tes_set(w, bad, f->plain, &p));
    EXPECT_STALE(tes_remove(w, bad, f->tracked));
    EXPECT_STALE(tes_remove(w, bad, f->plain));
    EXPECT_STALE(tes_clear(w, bad));
    EXPECT_STALE(tes_destroy(w, bad));
    EXPECT_STALE(tes_disable(w, bad));
    EXPECT_STALE(tes_enable(w, bad));
#undef EXPECT_STALE

    poison_invalid(w);
    assert_null(tes_ensure(w, bad, f->tracked));
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    poison_invalid(w);
    assert_null(tes_ensure(w, bad, f->plain));
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    poison_invalid(w);
    assert_int_equal(tes_clone(w, bad), TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);

    assert_false(tes_alive(w, bad));
    assert_false(tes_enabled(w, bad));
    assert_false(tes_has(w, bad, f->tracked));
    assert_false(tes_has(w, bad, f->plain));
    assert_false(tes_has(w, bad, f->tag));
    assert_false(tes_has(w, bad, TES_DISABLED));
    assert_null(tes_get(w, bad, f->tracked));
    assert_null(tes_get(w, bad, f->plain));
    assert_null(tes_get_mut(w, bad, f->tracked));
    assert_null(tes_get_mut(w, bad, f->plain));
    assert_int_equal(tes_components_of(w, bad, out, 8), -1);
    assert_int_equal(tes_components_of(w, bad, NULL, 0), -1);
}

static void test_stale_handles(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t old = tes_spawn(w);
    tes_entity_t keep = tes_spawn(w);
    tracked_t v = tv(5);
    assert_int_equal(tes_set(w, old, f->tracked, &v), TES_OK);
    assert_int_equal(tes_set(w, old, f->plain, &(plain_t){1, 1, 1}), TES_OK);
    assert_int_equal(tes_add(w, old, f->tag), TES_OK);
    assert_int_equal(tes_set(w, keep, f->plain, &(plain_t){2, 2, 2}), TES_OK);
    assert_int_equal(tes_destroy(w, old), TES_OK);

    /* Stale before the slot is reused. */
    int64_t snapshot_ctor = f->hc.ctor, snapshot_copy = f->hc.copy;
    int32_t count = tes_entity_count(w);
    assert_all_stale(f, old);
    assert_int_equal(tes_entity_count(w), count);
    assert_int_equal(f->hc.ctor, snapshot_ctor);
    assert_int_equal(f->hc.copy, snapshot_copy);

    /* The slot is reused: the new entity has the same index. */
    tes_entity_t now = tes_spawn(w);
    assert_int_equal(tes_entity_index(now), tes_entity_index(old));
    assert_true(now != old);
    v = tv(9);
    assert_int_equal(tes_set(w, now, f->tracked, &v), TES_OK);
    assert_int_equal(tes_set(w, now, f->plain, &(plain_t){3, 3, 3}), TES_OK);
    assert_int_equal(tes_add(w, now, f->tag), TES_OK);
    assert_int_equal(tes_disable(w, now), TES_OK);
    snapshot_ctor = f->hc.ctor;
    snapshot_copy = f->hc.copy;
    int64_t snapshot_events = f->hc.on_add + f->hc.on_set + f->hc.on_remove + f->hc.dtor;
    count = tes_entity_count(w);

    assert_all_stale(f, old);
    assert_all_stale(f, TES_NULL);
    assert_all_stale(f, tes_entity_make(12345, 1)); /* never issued */
    assert_all_stale(f, tes_entity_make(tes_entity_index(now), tes_entity_generation(now) + 1));
    assert_all_stale(f, tes_entity_make(TES_NULL_INDEX, 1));

    /* The new entity was not touched. */
    assert_int_equal(tes_entity_count(w), count);
    assert_true(tes_alive(w, now));
    assert_int_equal(tracked_value(w, now, f->tracked), 9);
    assert_plain(w, now, f->plain, (plain_t){3, 3, 3});
    assert_plain(w, keep, f->plain, (plain_t){2, 2, 2});
    assert_true(tes_has(w, now, f->tag));
    assert_true(tes_has(w, now, TES_DISABLED));
    assert_int_equal(tes_components_of(w, now, NULL, 0), 4);
    assert_int_equal(f->hc.ctor, snapshot_ctor);
    assert_int_equal(f->hc.copy, snapshot_copy);
    assert_int_equal(f->hc.on_add + f->hc.on_set + f->hc.on_remove + f->hc.dtor, snapshot_events);
    assert_balanced(&f->hc, 1);
    fx_check(f);
}

static void test_unknown_component(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_set(w, e, f->plain, &(plain_t){4, 4, 4}), TES_OK);
    tes_comp_t bad[] = {0, 4242, UINT32_MAX, f->t_tag + 1};
    plain_t p = pv(1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tes_comp_t c = bad[i];
        poison_stale(w);
        assert_int_equal(tes_add(w, e, c), TES_ERR_INVALID);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        poison_stale(w);
        assert_int_equal(tes_set(w, e, c, &p), TES_ERR_INVALID);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        poison_stale(w);
        assert_null(tes_ensure(w, e, c));
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        poison_stale(w);
        assert_int_equal(tes_remove(w, e, c), TES_ERR_INVALID);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        assert_false(tes_has(w, e, c));
        assert_null(tes_get(w, e, c));
        assert_null(tes_get_mut(w, e, c));
    }
    assert_int_equal(tes_components_of(w, e, NULL, 0), 1);
    assert_plain(w, e, f->plain, (plain_t){4, 4, 4});
    assert_true(tes_enabled(w, e));
    fx_check(f);
}

/* ------------------------------------------------------------------------ */
/* Structural calls from inside hooks                                        */
/* ------------------------------------------------------------------------ */

static void busy_probe(hook_ctx_t *h, char hook, tes_entity_t e, void *ptr)
{
    (void)hook;
    tes_world_t *w = h->w;
    int64_t fail = 0;
    plain_t p = pv(5);
    tes_entity_t out[2] = {0, 0};
    tes_comp_t comps[1] = {h->other};

#define BUSY(call)                                                        \
    do {                                                                  \
        if ((call) != TES_ERR_BUSY || tes_last_error(w) != TES_ERR_BUSY)  \
            fail++;                                                       \
    } while (0)
    BUSY(tes_add(w, e, h->other));
    BUSY(tes_set(w, e, h->other, &p));
    BUSY(tes_remove(w, e, h->self));
    BUSY(tes_clear(w, e));
    BUSY(tes_destroy(w, e));
    BUSY(tes_disable(w, e));
    BUSY(tes_spawn_n(w, 2, comps, 1, out));
#undef BUSY
    if (tes_ensure(w, e, h->other) != NULL || tes_last_error(w) != TES_ERR_BUSY)
        fail++;
    if (tes_spawn(w) != TES_NULL || tes_last_error(w) != TES_ERR_BUSY)
        fail++;
    if (tes_clone(w, e) != TES_NULL || tes_last_error(w) != TES_ERR_BUSY)
        fail++;
    if (out[0] != TES_NULL || out[1] != TES_NULL)
        fail++;
    /* Reading works, and so does writing through get_mut. */
    if (!tes_alive(w, e) || !tes_has(w, e, h->self))
        fail++;
    if (tes_get(w, e, h->self) != ptr || tes_get_mut(w, e, h->self) != ptr)
        fail++;
    if (tes_components_of(w, e, NULL, 0) < 1)
        fail++;
    if (ptr)
        ((tracked_t *)tes_get_mut(w, e, h->self))->value += 1000000;
    if (fail)
        h->probe_fail++;
    else
        h->probe_ok++;
}

static void test_busy_in_observers(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    tes_entity_t bystander = tes_spawn(w);
    assert_int_equal(tes_add(w, bystander, f->tracked), TES_OK);
    int32_t entities = tes_entity_count(w);
    uint32_t tables = stats_of(w).tables;

    f->hc.probe = busy_probe;
    /* on_add (through add), on_set, on_remove (through remove). */
    assert_int_equal(tes_add(w, e, f->tracked), TES_OK);
    assert_int_equal(f->hc.probe_ok, 1);
    assert_int_equal(tracked_value(w, e, f->tracked), CTOR_VALUE + 1000000);
    tracked_t v = tv(1);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
    assert_int_equal(f->hc.probe_ok, 2);
    assert_int_equal(tracked_value(w, e, f->tracked), 1 + 1000000); /* write after the set */
    assert_int_equal(tes_components_of(w, e, NULL, 0), 1);
    assert_false(tes_has(w, e, f->plain));
    assert_false(tes_has(w, e, TES_DISABLED));
    assert_int_equal(tes_entity_count(w), entities);
    assert_int_equal(stats_of(w).tables, tables);

    assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
    assert_int_equal(f->hc.probe_ok, 3);
    assert_false(tes_has(w, e, f->tracked));
    assert_true(tes_alive(w, e));

    /* on_add via ensure and via set of a missing component, on_remove via
     * clear and destroy. */
    assert_non_null(tes_ensure(w, e, f->tracked));
    assert_int_equal(tes_clear(w, e), TES_OK);
    assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK); /* on_add + on_set */
    assert_int_equal(tes_destroy(w, e), TES_OK);
    assert_int_equal(f->hc.probe_ok, 8);
    assert_int_equal(f->hc.probe_fail, 0);
    f->hc.probe = NULL;

    assert_int_equal(tes_entity_count(w), entities - 1);
    assert_true(tes_alive(w, bystander));
    assert_int_equal(tes_components_of(w, bystander, NULL, 0), 1);
    assert_int_equal(tracked_value(w, bystander, f->tracked), CTOR_VALUE);
    assert_balanced(&f->hc, 1);
    /* Outside hooks, structural calls work again. */
    tes_entity_t n = tes_spawn(w);
    assert_true(n != TES_NULL);
    assert_int_equal(tes_add(w, n, f->plain), TES_OK);
    fx_check(f);
}

/* The contract says "from inside any hook": ctor, dtor, copy and move are
 * hooks too, and a structural change from one of them would run in the
 * middle of the library's own change. */
static void test_busy_in_lifecycle_hooks(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++)
        e[i] = tes_spawn(w);
    assert_int_equal(tes_add(w, e[3], f->tracked), TES_OK);
    f->hc.lifecycle_probe = true;
    tracked_t v = tv(2);
    assert_int_equal(tes_add(w, e[0], f->tracked), TES_OK);     /* ctor */
    assert_int_equal(tes_set(w, e[0], f->tracked, &v), TES_OK); /* copy */
    assert_int_equal(tes_add(w, e[1], f->tracked), TES_OK);     /* ctor */
    assert_int_equal(tes_remove(w, e[0], f->tracked), TES_OK);  /* dtor (+ move) */
    for (int i = 0; i < 40; i++) { /* table growth: moves */
        tes_entity_t x = tes_spawn(w);
        assert_true(x != TES_NULL);
        assert_int_equal(tes_add(w, x, f->tracked), TES_OK);
    }
    assert_int_equal(tes_remove(w, e[3], f->tracked), TES_OK);  /* dtor + move */
    assert_int_equal(tes_destroy(w, e[1]), TES_OK);              /* dtor */
    f->hc.lifecycle_probe = false;
    for (int i = 0; i < f->hc.nleaked; i++)
        tes_destroy(w, f->hc.leaked[i]);
    if (f->hc.life_fail_ctor || f->hc.life_fail_copy || f->hc.life_fail_dtor ||
        f->hc.life_fail_move)
        print_message("structural calls accepted inside: ctor %lld, copy %lld, dtor %lld, "
                      "move %lld (refused: %lld)\n",
                      (long long)f->hc.life_fail_ctor, (long long)f->hc.life_fail_copy,
                      (long long)f->hc.life_fail_dtor, (long long)f->hc.life_fail_move,
                      (long long)f->hc.life_ok);
    assert_true(f->hc.life_ok > 0);
    assert_int_equal(f->hc.life_fail_ctor, 0);
    assert_int_equal(f->hc.life_fail_copy, 0);
    assert_int_equal(f->hc.life_fail_dtor, 0);
    assert_int_equal(f->hc.life_fail_move, 0);
    assert_int_equal(f->hc.bad, 0);
    fx_check(f);
}

/* ------------------------------------------------------------------------ */
/* Sparse storage                                                            */
/* ------------------------------------------------------------------------ */

/* A stable component's address and value survive 100,000 inserts and
 * removes of the same component on other entities, entity churn, and the
 * owner moving between tables. */
static void test_stable_pointer_stability(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { POOL = 300 };
    tes_entity_t pool[POOL];
    bool has[POOL];
    plain_t val[POOL];
    memset(val, 0, sizeof val);
    /* The owner's component sits between others in the store, so neither
     * end of it is special. */
    for (int i = 0; i < POOL; i++) {
        pool[i] = tes_spawn(w);
        has[i] = i % 2 == 0;
        if (has[i]) {
            val[i] = pv((uint64_t)i + 1000000);
            assert_int_equal(tes_set(w, pool[i], f->plain, &val[i]), TES_OK);
        }
    }
    tes_entity_t owner = tes_spawn(w);
    plain_t mine = {UINT64_C(0xA11CEA11CE), 0xFEEDu, 0xF00Du};
    assert_int_equal(tes_set(w, owner, f->plain, &mine), TES_OK);
    const void *addr = tes_get(w, owner, f->plain);
    assert_non_null(addr);
    for (int i = 1; i < POOL; i += 2) {
        has[i] = true;
        val[i] = pv((uint64_t)i + 2000000);
        assert_int_equal(tes_set(w, pool[i], f->plain, &val[i]), TES_OK);
    }
    rng_seed(42);
    long changes = 0;
    for (long step = 0; changes < 100000; step++) {
        uint32_t i = rng_below(POOL);
        uint32_t r = rng_below(16);
        if (r < 7) {
            if (!has[i]) {
                val[i] = pv((uint64_t)step);
                assert_int_equal(tes_set(w, pool[i], f->plain, &val[i]), TES_OK);
                has[i] = true;
                changes++;
            }
        } else if (r < 14) {
            if (has[i]) {
                assert_int_equal(tes_remove(w, pool[i], f->plain), TES_OK);
                has[i] = false;
                changes++;
            }
        } else if (r == 14) {
            /* Destroy (removing the component if held) and respawn. */
            assert_int_equal(tes_destroy(w, pool[i]), TES_OK);
            changes += has[i];
            has[i] = false;
            pool[i] = tes_spawn(w);
            assert_true(pool[i] != TES_NULL);
        } else {
            /* The owner changes tables; its stable component stays put. */
            if (tes_has(w, owner, f->t_other))
                assert_int_equal(tes_remove(w, owner, f->t_other), TES_OK);
            else
                assert_int_equal(tes_add(w, owner, f->t_other), TES_OK);
            assert_int_equal(tes_add(w, owner, f->t_tag), TES_OK);
        }
        if (step % 4096 == 0) {
            assert_ptr_equal(tes_get(w, owner, f->plain), addr);
            assert_memory_equal(addr, &mine, sizeof mine);
        }
    }
    assert_ptr_equal(tes_get(w, owner, f->plain), addr);
    assert_ptr_equal(tes_get_mut(w, owner, f->plain), addr);
    assert_memory_equal(addr, &mine, sizeof mine);
    for (int i = 0; i < POOL; i++) {
        assert_int_equal(tes_has(w, pool[i], f->plain), has[i]);
        if (has[i])
            assert_plain(w, pool[i], f->plain, val[i]);
    }
    fx_check(f);
}

/* Every holder's address is fixed while others come and go. */
static void test_stable_all_addresses_fixed(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 600 };
    tes_entity_t e[N];
    const void *addr[N];
    rng_seed(7);
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(i);
        assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
        addr[i] = tes_get(w, e[i], f->tracked);
    }
    int64_t moves = f->hc.move;
    for (int round = 0; round < 2000; round++) {
        uint32_t i = rng_below(N);
        if (addr[i]) {
            assert_int_equal(tes_remove(w, e[i], f->tracked), TES_OK);
            addr[i] = NULL;
        } else {
            tracked_t v = tv((int32_t)i);
            assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
            addr[i] = tes_get(w, e[i], f->tracked);
        }
        if (round % 100 == 0)
            for (int k = 0; k < N; k++) {
                assert_ptr_equal(tes_get(w, e[k], f->tracked), addr[k]);
                if (addr[k])
                    assert_int_equal(((const tracked_t *)addr[k])->value, k);
            }
    }
    assert_int_equal(f->hc.move, moves); /* a stable store never relocates */
    int64_t live = 0;
    for (int k = 0; k < N; k++)
        live += addr[k] != NULL;
    assert_balanced(&f->hc, live);
    fx_check(f);
}

/* Removing a stable component leaves a tombstone that the next add reuses:
 * same address, no allocation. */
static void test_stable_tombstone_reuse(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 64 };
    tes_entity_t e[N];
    bool has[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        has[i] = i < N / 2;
        if (has[i])
            assert_int_equal(tes_set(w, e[i], f->plain, &(plain_t){(uint64_t)i, 0, 0}), TES_OK);
    }
    /* One hole at a time: the next add lands exactly in it. */
    tes_world_stats_t before = stats_of(w);
    rng_seed(99);
    for (int round = 0; round < 5000; round++) {
        uint32_t h, n;
        do
            h = rng_below(N);
        while (!has[h]);
        do
            n = rng_below(N);
        while (has[n]);
        const void *hole = tes_get(w, e[h], f->plain);
        assert_int_equal(tes_remove(w, e[h], f->plain), TES_OK);
        has[h] = false;
        assert_int_equal(tes_set(w, e[n], f->plain, &(plain_t){(uint64_t)n, 1, 1}), TES_OK);
        has[n] = true;
        assert_ptr_equal(tes_get(w, e[n], f->plain), hole);
    }
    tes_world_stats_t after = stats_of(w);
    assert_int_equal(after.bytes_allocated, before.bytes_allocated);
    assert_int_equal(after.allocations, before.allocations);

    /* Many holes: the adds that follow reuse exactly the freed addresses. */
    const void *freed[10];
    int nfreed = 0;
    for (int i = 0; i < N && nfreed < 10; i++)
        if (has[i]) {
            freed[nfreed++] = tes_get(w, e[i], f->plain);
            assert_int_equal(tes_remove(w, e[i], f->plain), TES_OK);
            has[i] = false;
        }
    int reused = 0;
    for (int i = 0; i < N && reused < 10; i++) {
        if (has[i])
            continue;
        assert_int_equal(tes_add(w, e[i], f->plain), TES_OK);
        has[i] = true;
        const void *p = tes_get(w, e[i], f->plain);
        bool found = false;
        for (int k = 0; k < nfreed; k++)
            if (freed[k] == p) {
                found = true;
                freed[k] = NULL; /* each hole is reused once */
            }
        assert_true(found);
        assert_plain(w, e[i], f->plain, (plain_t){0}); /* zero-filled again */
        reused++;
    }
    assert_int_equal(reused, 10);
    after = stats_of(w);
    assert_int_equal(after.bytes_allocated, before.bytes_allocated);
    for (int i = 0; i < N; i++)
        assert_int_equal(tes_has(w, e[i], f->plain), has[i]);
    fx_check(f);
}

/* Removals in random order keep every other entity's value (a swap-and-pop
 * store moves the last value into the hole). */
static void test_sparse_removal_keeps_values(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 500 };
    tes_entity_t e[N];
    int order[N];
    bool has[N];
    for (int i = 0; i < N; i++) {
        e[i] = tes_spawn(w);
        tracked_t v = tv(i * 3 + 1);
        assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->plain, &(plain_t){(uint64_t)i, (uint32_t)i, 7}),
                         TES_OK);
        order[i] = i;
        has[i] = true;
    }
    rng_seed(1234 + (uint64_t)f->kind);
    for (int i = N - 1; i > 0; i--) {
        uint32_t j = rng_below((uint32_t)i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t moves = f->hc.move;
    for (int k = 0; k < N; k++) {
        int victim = order[k];
        assert_int_equal(tes_remove(w, e[victim], f->tracked), TES_OK);
        assert_int_equal(tes_remove(w, e[victim], f->plain), TES_OK);
        has[victim] = false;
        if (k % 7 == 0 || k > N - 20) {
            for (int i = 0; i < N; i++) {
                assert_int_equal(tes_has(w, e[i], f->tracked), has[i]);
                if (!has[i])
                    continue;
                assert_int_equal(tracked_value(w, e[i], f->tracked), i * 3 + 1);
                assert_plain(w, e[i], f->plain, (plain_t){(uint64_t)i, (uint32_t)i, 7});
            }
        }
        /* Re-add a few, checking they start fresh. */
        if (k % 50 == 49) {
            int back = order[k - 10];
            tracked_t v = tv(back * 3 + 1);
            assert_int_equal(tes_set(w, e[back], f->tracked, &v), TES_OK);
            assert_int_equal(
                tes_set(w, e[back], f->plain, &(plain_t){(uint64_t)back, (uint32_t)back, 7}),
                TES_OK);
            has[back] = true;
        }
        int64_t live = 0;
        for (int i = 0; i < N; i++)
            live += has[i];
        assert_balanced(&f->hc, live);
    }
    if (f->kind == KIND_SPARSE)
        assert_true(f->hc.move > moves); /* swap-and-pop relocated with the move hook */
    else
        assert_int_equal(f->hc.move, moves);
    for (int i = 0; i < N; i++)
        if (has[i])
            assert_int_equal(tes_remove(w, e[i], f->tracked), TES_OK);
    assert_balanced(&f->hc, 0);
    fx_check(f);
}

/* A sparse add or remove never moves the entity's table row. */
static void test_sparse_never_moves_entity(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    tes_entity_t e = tes_spawn(w);
    tes_entity_t other = tes_spawn(w);
    assert_int_equal(tes_set(w, e, f->t_other, &(plain_t){1, 2, 3}), TES_OK);
    assert_int_equal(tes_set(w, other, f->t_other, &(plain_t){4, 5, 6}), TES_OK);
    const void *row = tes_get(w, e, f->t_other);
    uint32_t tables = stats_of(w).tables;
    for (int i = 0; i < 100; i++) {
        tracked_t v = tv(i);
        assert_int_equal(tes_set(w, e, f->tracked, &v), TES_OK);
        assert_int_equal(tes_add(w, e, f->tag), TES_OK);
        assert_int_equal(tes_add(w, e, f->plain), TES_OK);
        assert_int_equal(tes_add(w, e, f->s_other), TES_OK);
        assert_ptr_equal(tes_get(w, e, f->t_other), row);
        assert_int_equal(tes_remove(w, e, f->tracked), TES_OK);
        assert_int_equal(tes_remove(w, e, f->tag), TES_OK);
        if (i % 2)
            assert_int_equal(tes_remove(w, e, f->plain), TES_OK);
        assert_ptr_equal(tes_get(w, e, f->t_other), row);
    }
    assert_int_equal(stats_of(w).tables, tables);
    assert_plain(w, e, f->t_other, (plain_t){1, 2, 3});
    assert_plain(w, other, f->t_other, (plain_t){4, 5, 6});
    assert_balanced(&f->hc, 0);
    fx_check(f);
}

/* Sparse data for entities with large, scattered indices. */
static void test_sparse_scattered_indices(void **state)
{
    fx_t *f = *state;
    tes_world_t *w = f->w;
    enum { N = 20000 };
    tes_entity_t *e = calloc(N, sizeof *e);
    assert_non_null(e);
    assert_int_equal(tes_spawn_n(w, N, NULL, 0, e), TES_OK);
    for (int i = 0; i < N; i += 997) {
        tracked_t v = tv(i);
        assert_int_equal(tes_set(w, e[i], f->tracked, &v), TES_OK);
        assert_int_equal(tes_set(w, e[i], f->plain, &(plain_t){(uint64_t)i, 0, 1}), TES_OK);
    }
    for (int i = 0; i < N; i++) {
        bool want = i % 997 == 0;
        assert_int_equal(tes_has(w, e[i], f->tracked), want);
        if (want) {
            assert_int_equal(tracked_value(w, e[i], f->tracked), i);
            assert_plain(w, e[i], f->plain, (plain_t){(uint64_t)i, 0, 1});
        } else {
            assert_null(tes_get(w, e[i], f->plain));
        }
    }
    assert_int_equal(tes_destroy(w, e[997 * 3]), TES_OK);
    assert_false(tes_has(w, e[997 * 3], f->plain));
    assert_balanced(&f->hc, 20); /* 21 holders, one destroyed */
    free(e);
    fx_check(f);
}

#define KIND_TEST(f, kind, suffix) {#f "/" suffix, f, fx_setup, fx_teardown, (void *)&kind}
#define KIND_TESTS(f)                                                                        \
    KIND_TEST(f, kind_table, "table"), KIND_TEST(f, kind_sparse, "sparse"),                  \
        KIND_TEST(f, kind_stable, "stable")
#define SPARSE_TESTS(f) KIND_TEST(f, kind_sparse, "sparse"), KIND_TEST(f, kind_stable, "stable")

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_requires_name),
        cmocka_unit_test(test_register_same_layout_same_id),
        cmocka_unit_test(test_register_clash),
        cmocka_unit_test(test_register_natural_align),
        cmocka_unit_test(test_register_bad_align),
        cmocka_unit_test(test_register_entity_fields),
        cmocka_unit_test(test_lookup_and_builtins),
        cmocka_unit_test(test_component_macro),
        KIND_TESTS(test_kind_storage),
        KIND_TESTS(test_add),
        KIND_TESTS(test_add_zero_fills_reused_memory),
        KIND_TESTS(test_set),
        KIND_TESTS(test_set_null_value),
        KIND_TESTS(test_ensure),
        KIND_TESTS(test_remove),
        KIND_TESTS(test_has_get),
        KIND_TESTS(test_clear),
        KIND_TESTS(test_components_of),
        KIND_TESTS(test_destroy),
        KIND_TESTS(test_world_free_runs_dtors),
        KIND_TESTS(test_hook_order),
        KIND_TESTS(test_counters_random),
        KIND_TESTS(test_stale_handles),
        KIND_TESTS(test_unknown_component),
        KIND_TESTS(test_busy_in_observers),
        KIND_TESTS(test_busy_in_lifecycle_hooks),
        KIND_TEST(test_stable_pointer_stability, kind_stable, "stable"),
        KIND_TEST(test_stable_all_addresses_fixed, kind_stable, "stable"),
        KIND_TEST(test_stable_tombstone_reuse, kind_stable, "stable"),
        SPARSE_TESTS(test_sparse_removal_keeps_values),
        SPARSE_TESTS(test_sparse_never_moves_entity),
        SPARSE_TESTS(test_sparse_scattered_indices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
