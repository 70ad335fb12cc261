/*
 * Prefab and lifecycle-instance tests (seed 004): prefab records and
 * tes_prefab_members; tes_instantiate and tes_instantiate_n (hook balance:
 * ctor/copy/dtor/on_add for every component of every member, table and
 * sparse; remapping of entity_fields that point inside the prefab, several
 * per component, with outside references and TES_NULL kept; out[] order and
 * short caps; no TES_PREFAB on copies; query visibility, groups included);
 * instance ids (membership order, tes_instance_of, stats, ids never reused,
 * stale ids); strict and non-strict lifecycles; detach and adopt; instance
 * destroys deferred by a live iterator; instantiation inside a deferred
 * block; weak references across many instantiate/destroy cycles with a tiny
 * generation limit (no handle ever issued twice); a randomised churn against
 * a small membership model; bad input and calls from inside hooks.
 *
 * Every test ends with tes__world_check and frees its world; hook counters
 * must balance (every value constructed once and destroyed once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "support/counting_alloc.h"
#include "world/check.h"

/* ------------------------------------------------------------------------ */
/* Components and hook counters                                              */
/* ------------------------------------------------------------------------ */

#define MAGIC UINT32_C(0x7E55A11F)
#define DEAD UINT32_C(0xDEADDEAD)

typedef struct counters {
    int64_t ctor, dtor, copy, move, on_add, on_remove, bad;
} counters_t;

/* A value with a life: ctor stamps MAGIC, dtor checks and clears it, copy
 * requires both sides constructed. One entity field. */
typedef struct Tracked {
    uint32_t magic;
    int32_t value;
    tes_entity_t ref;
} Tracked;

/* Three entity fields around plain data. */
typedef struct Links {
    tes_entity_t a;
    int32_t tag;
    int32_t spare;
    tes_entity_t b;
    tes_entity_t c;
} Links;

typedef struct Val {
    int32_t x, y;
} Val;

static void tracked_ctor(void *ptr, int32_t count, void *ctx)
{
    counters_t *c = ctx;
    Tracked *t = ptr;
    for (int32_t i = 0; i < count; i++) {
        t[i].magic = MAGIC;
        t[i].value = 0;
        t[i].ref = TES_NULL;
    }
    c->ctor += count;
}

static void tracked_dtor(void *ptr, int32_t count, void *ctx)
{
    counters_t *c = ctx;
    Tracked *t = ptr;
    for (int32_t i = 0; i < count; i++) {
        if (t[i].magic != MAGIC)
            c->bad++;
        t[i].magic = DEAD;
    }
    c->dtor += count;
}

static void tracked_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    counters_t *c = ctx;
    Tracked *d = dst;
    const Tracked *s = src;
    for (int32_t i = 0; i < count; i++) {
        if (d[i].magic != MAGIC || s[i].magic != MAGIC)
            c->bad++;
        d[i].value = s[i].value;
        d[i].ref = s[i].ref;
    }
    c->copy += count;
}

static void tracked_move(void *dst, void *src, int32_t count, void *ctx)
{
    counters_t *c = ctx;
    Tracked *d = dst;
    Tracked *s = src;
    for (int32_t i = 0; i < count; i++) {
        if (s[i].magic != MAGIC)
            c->bad++;
        d[i] = s[i];
        s[i].magic = 0;
    }
    c->move += count;
}

static void tracked_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e;
    counters_t *c = ctx;
    const Tracked *t = ptr;
    if (!t || t->magic != MAGIC)
        c->bad++;
    c->on_add++;
}

static void tracked_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e;
    counters_t *c = ctx;
    const Tracked *t = ptr;
    if (!t || t->magic != MAGIC)
        c->bad++;
    c->on_remove++;
}

static tes_hooks_t tracked_hooks(counters_t *c)
{
    tes_hooks_t h;
    memset(&h, 0, sizeof h);
    h.ctor = tracked_ctor;
    h.dtor = tracked_dtor;
    h.copy = tracked_copy;
    h.move = tracked_move;
    h.on_add = tracked_on_add;
    h.on_remove = tracked_on_remove;
    h.ctx = c;
    return h;
}

/* ------------------------------------------------------------------------ */
/* Fixture: a five-member prefab mixing table and sparse components          */
/* ------------------------------------------------------------------------ */

#define FX_MEMBERS 5
#define MAX_M 16

typedef struct fixture {
    tes_world_t *w;
    counters_t ct; /* TrackedT (table) */
    counters_t cs; /* TrackedS (sparse) */
    tes_comp_t tracked_t, tracked_s, links, slinks, val, sval, stable, tag;
    tes_entity_t prefab;
    tes_entity_t members[FX_MEMBERS]; /* root first */
    tes_entity_t outside;             /* an ordinary entity the prefab refers to */
} fixture_t;

static tes_comp_t reg(tes_world_t *w, const char *name, size_t size, tes_storage_t storage,
                      bool stable, const tes_hooks_t *hooks, const size_t *fields, int32_t nfields)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    d.stable = stable;
    if (hooks)
        d.hooks = *hooks;
    for (int32_t i = 0; i < nfields; i++)
        d.entity_fields[i] = fields[i];
    d.entity_field_count = nfields;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

static void fx_register(fixture_t *f)
{
    memset(&f->ct, 0, sizeof f->ct);
    memset(&f->cs, 0, sizeof f->cs);
    tes_hooks_t ht = tracked_hooks(&f->ct), hs = tracked_hooks(&f->cs);
    size_t tref[] = {offsetof(Tracked, ref)};
    size_t lref[] = {offsetof(Links, a), offsetof(Links, b), offsetof(Links, c)};
    f->tracked_t = reg(f->w, "TrackedT", sizeof(Tracked), TES_STORAGE_TABLE, false, &ht, tref, 1);
    f->tracked_s = reg(f->w, "TrackedS", sizeof(Tracked), TES_STORAGE_SPARSE, false, &hs, tref, 1);
    f->links = reg(f->w, "Links", sizeof(Links), TES_STORAGE_TABLE, false, NULL, lref, 3);
    f->slinks = reg(f->w, "SLinks", sizeof(Links), TES_STORAGE_SPARSE, false, NULL, lref, 3);
    f->val = reg(f->w, "Val", sizeof(Val), TES_STORAGE_TABLE, false, NULL, NULL, 0);
    f->sval = reg(f->w, "SVal", sizeof(Val), TES_STORAGE_SPARSE, false, NULL, NULL, 0);
    f->stable = reg(f->w, "StableVal", sizeof(Val), TES_STORAGE_SPARSE, true, NULL, NULL, 0);
    f->tag = reg(f->w, "Tag", 0, TES_STORAGE_TABLE, false, NULL, NULL, 0);
}

static void set_tracked(tes_world_t *w, tes_entity_t e, tes_comp_t c, int32_t value, tes_entity_t ref)
{
    Tracked *t = tes_ensure(w, e, c);
    assert_non_null(t);
    t->value = value;
    t->ref = ref;
}

static void set_links(tes_world_t *w, tes_entity_t e, tes_comp_t c, tes_entity_t a, tes_entity_t b,
                      tes_entity_t cc, int32_t tag)
{
    Links l = {a, tag, 0, b, cc};
    assert_int_equal(tes_set(w, e, c, &l), TES_OK);
}

static void set_val(tes_world_t *w, tes_entity_t e, tes_comp_t c, int32_t x, int32_t y)
{
    Val v = {x, y};
    assert_int_equal(tes_set(w, e, c, &v), TES_OK);
}

/* Members:
 * 0 root:  Val, TrackedT(ref root: itself), Links(a root, b m2, c outside), Tag, SVal
 * 1:       Val, TrackedS(ref root), SLinks(a m3, b root, c NULL)
 * 2:       TrackedT(ref outside), SVal, StableVal, Links(a m1, b m4, c NULL)
 * 3:       nothing but TES_PREFAB (an empty member)
 * 4:       Val, TrackedS(ref itself), TrackedT(ref m1), SLinks(a m4, b outside, c root) */
static void fx_build_prefab(fixture_t *f)
{
    tes_world_t *w = f->w;
    f->outside = tes_spawn(w);
    set_val(w, f->outside, f->val, -5, -5);
    f->prefab = tes_prefab_new(w);
    assert_true(f->prefab != TES_NULL);
    f->members[0] = f->prefab;
    for (int i = 1; i < FX_MEMBERS; i++) {
        f->members[i] = tes_prefab_child(w, f->prefab);
        assert_true(f->members[i] != TES_NULL);
    }
    tes_entity_t *m = f->members;
    set_val(w, m[0], f->val, 0, 100);
    set_tracked(w, m[0], f->tracked_t, 1000, m[0]);
    set_links(w, m[0], f->links, m[0], m[2], f->outside, 7);
    assert_int_equal(tes_add(w, m[0], f->tag), TES_OK);
    set_val(w, m[0], f->sval, 0, -100);

    set_val(w, m[1], f->val, 1, 101);
    set_tracked(w, m[1], f->tracked_s, 1001, m[0]);
    set_links(w, m[1], f->slinks, m[3], m[0], TES_NULL, 11);

    set_tracked(w, m[2], f->tracked_t, 1002, f->outside);
    set_val(w, m[2], f->sval, 2, -102);
    set_val(w, m[2], f->stable, 2, 202);
    set_links(w, m[2], f->links, m[1], m[4], TES_NULL, 12);

    set_val(w, m[4], f->val, 4, 104);
    set_tracked(w, m[4], f->tracked_s, 1004, m[4]);
    set_tracked(w, m[4], f->tracked_t, 1014, m[1]);
    set_links(w, m[4], f->slinks, m[4], f->outside, m[0], 14);
}

/* Hooked components per instance of the fixture prefab. */
#define FX_TRACKED_T 3 /* members 0, 2, 4 */
#define FX_TRACKED_S 2 /* members 1, 4 */

static void fx_open(fixture_t *f, const tes_world_desc_t *desc)
{
    memset(f, 0, sizeof *f);
    f->w = tes_world_new(desc);
    assert_non_null(f->w);
    fx_register(f);
    fx_build_prefab(f);
    assert_int_equal(tes__world_check(f->w), TES_OK);
}

/* Frees the world and checks that every value was destroyed exactly once. */
static void fx_close(fixture_t *f)
{
    assert_int_equal(tes__world_check(f->w), TES_OK);
    tes_world_free(f->w);
    f->w = NULL;
    assert_int_equal(f->ct.bad, 0);
    assert_int_equal(f->cs.bad, 0);
    assert_int_equal(f->ct.ctor, f->ct.dtor);
    assert_int_equal(f->cs.ctor, f->cs.dtor);
}

/* ------------------------------------------------------------------------ */
/* Verification helpers                                                      */
/* ------------------------------------------------------------------------ */

/* ref mapped from the prefab's members src[] to the copies dst[]. */
static tes_entity_t mapped(tes_entity_t ref, const tes_entity_t *src, const tes_entity_t *dst,
                           int32_t m)
{
    if (ref == TES_NULL)
        return TES_NULL;
    for (int32_t k = 0; k < m; k++)
        if (src[k] == ref)
            return dst[k];
    return ref;
}

/* dst[j] is a faithful copy of src[j] for every j: same components (minus
 * TES_PREFAB), equal values, entity fields remapped inside the group, and
 * every copy belongs to instance inst (if non-zero). */
static void verify_copies(const fixture_t *f, const tes_entity_t *src, const tes_entity_t *dst,
                          int32_t m, tes_instance_t inst)
{
    tes_world_t *w = f->w;
    for (int32_t j = 0; j < m; j++) {
        assert_true(tes_alive(w, dst[j]));
        assert_true(dst[j] != src[j]);
        assert_true(tes_has(w, src[j], TES_PREFAB));
        assert_false(tes_has(w, dst[j], TES_PREFAB));
        if (inst)
            assert_true(tes_instance_of(w, dst[j]) == inst);
        tes_comp_t sc[32], dc[32];
        int32_t sn = tes_components_of(w, src[j], sc, 32);
        int32_t dn = tes_components_of(w, dst[j], dc, 32);
        assert_true(sn >= 1 && sn <= 32 && dn >= 0 && dn <= 32);
        int32_t k = 0;
        for (int32_t i = 0; i < sn; i++) {
            if (sc[i] == TES_PREFAB)
                continue;
            assert_true(k < dn);
            assert_int_equal(sc[i], dc[k]);
            k++;
        }
        assert_int_equal(k, dn);

        const tes_comp_t vals[] = {f->val, f->sval, f->stable};
        for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
            const Val *a = tes_get(w, src[j], vals[v]), *b = tes_get(w, dst[j], vals[v]);
            assert_true((a == NULL) == (b == NULL));
            if (a) {
                assert_true(a != b);
                assert_int_equal(a->x, b->x);
                assert_int_equal(a->y, b->y);
            }
        }
        const tes_comp_t tracked[] = {f->tracked_t, f->tracked_s};
        for (size_t v = 0; v < 2; v++) {
            const Tracked *a = tes_get(w, src[j], tracked[v]), *b = tes_get(w, dst[j], tracked[v]);
            assert_true((a == NULL) == (b == NULL));
            if (a) {
                assert_true(b->magic == MAGIC);
                assert_int_equal(a->value, b->value);
                assert_true(b->ref == mapped(a->ref, src, dst, m));
            }
        }
        const tes_comp_t links[] = {f->links, f->slinks};
        for (size_t v = 0; v < 2; v++) {
            const Links *a = tes_get(w, src[j], links[v]), *b = tes_get(w, dst[j], links[v]);
            assert_true((a == NULL) == (b == NULL));
            if (a) {
                assert_int_equal(a->tag, b->tag);
                assert_true(b->a == mapped(a->a, src, dst, m));
                assert_true(b->b == mapped(a->b, src, dst, m));
                assert_true(b->c == mapped(a->c, src, dst, m));
            }
        }
        assert_int_equal(tes_has(w, src[j], f->tag), tes_has(w, dst[j], f->tag));
    }
}

/* The instance's members, which must be exactly want[0..n). */
static void expect_members(tes_world_t *w, tes_instance_t inst, const tes_entity_t *want, int32_t n)
{
    tes_entity_t got[64];
    assert_true(n <= 64);
    assert_true(tes_instance_alive(w, inst));
    assert_int_equal(tes_instance_members(w, inst, got, 64), n);
    for (int32_t i = 0; i < n; i++) {
        assert_true(got[i] == want[i]);
        assert_true(tes_instance_of(w, got[i]) == inst);
    }
}

static uint32_t instances_alive(const tes_world_t *w)
{
    tes_world_stats_t st;
    assert_int_equal(tes_world_stats(w, &st), TES_OK);
    return st.instances_alive;
}

static int32_t count_query(tes_world_t *w, tes_comp_t c, uint32_t flags)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = c;
    d.flags = flags;
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    int32_t n = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it))
        n += it.count;
    assert_int_equal(n, tes_query_count(q));
    tes_query_free(q);
    return n;
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t bound)
{
    return (uint32_t)(((rng_next(s) >> 32) * (uint64_t)bound) >> 32);
}

/* An open-addressing set of 64-bit handles (0 is never inserted). */
typedef struct handle_set {
    uint64_t *slots;
    size_t cap, count;
} handle_set_t;

static size_t hs_hash(uint64_t v, size_t cap)
{
    v ^= v >> 33;
    v *= UINT64_C(0xFF51AFD7ED558CCD);
    v ^= v >> 33;
    return (size_t)v & (cap - 1);
}

static void hs_grow(handle_set_t *s);

/* Inserts v; returns false if it was already there. */
static bool hs_insert(handle_set_t *s, uint64_t v)
{
    if ((s->count + 1) * 2 > s->cap)
        hs_grow(s);
    size_t i = hs_hash(v, s->cap);
    while (s->slots[i]) {
        if (s->slots[i] == v)
            return false;
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = v;
    s->count++;
    return true;
}

static void hs_grow(handle_set_t *s)
{
    handle_set_t n = {NULL, s->cap ? s->cap * 2 : 1024, 0};
    n.slots = calloc(n.cap, sizeof *n.slots);
    assert_non_null(n.slots);
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i])
            hs_insert(&n, s->slots[i]);
    free(s->slots);
    *s = n;
}

/* ------------------------------------------------------------------------ */
/* Prefab records                                                            */
/* ------------------------------------------------------------------------ */

static void test_prefab_members(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_entity_t out[8];
    assert_int_equal(tes_prefab_members(w, f.prefab, out, 8), FX_MEMBERS);
    for (int i = 0; i < FX_MEMBERS; i++) {
        assert_true(out[i] == f.members[i]);
        assert_true(tes_has(w, out[i], TES_PREFAB));
        assert_true(tes_instance_of(w, out[i]) == 0);
    }
    /* A short cap still reports the full count and writes only cap. */
    tes_entity_t small[3] = {TES_NULL, TES_NULL, (tes_entity_t)42};
    assert_int_equal(tes_prefab_members(w, f.prefab, small, 2), FX_MEMBERS);
    assert_true(small[0] == f.members[0] && small[1] == f.members[1]);
    assert_true(small[2] == (tes_entity_t)42);
    assert_int_equal(tes_prefab_members(w, f.prefab, NULL, 0), FX_MEMBERS);
    /* Bad arguments and non-roots. */
    assert_int_equal(tes_prefab_members(w, f.prefab, NULL, 2), -1);
    assert_int_equal(tes_prefab_members(w, f.prefab, out, -1), -1);
    assert_int_equal(tes_prefab_members(w, f.members[1], out, 8), -1);
    assert_int_equal(tes_prefab_members(w, f.outside, out, 8), -1);
    assert_int_equal(tes_prefab_members(w, TES_NULL, out, 8), -1);
    assert_int_equal(tes_prefab_members(NULL, f.prefab, out, 8), -1);
    /* A child of a child is refused; so is a child of an ordinary entity. */
    assert_true(tes_prefab_child(w, f.members[1]) == TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_true(tes_prefab_child(w, f.outside) == TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_true(tes_prefab_child(w, TES_NULL) == TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_true(tes_prefab_new(NULL) == TES_NULL);
    assert_true(tes_prefab_child(NULL, f.prefab) == TES_NULL);
    /* A destroyed member drops out; later children append in order. */
    assert_int_equal(tes_destroy(w, f.members[2]), TES_OK);
    tes_entity_t extra = tes_prefab_child(w, f.prefab);
    assert_true(extra != TES_NULL);
    assert_true(tes_has(w, extra, TES_PREFAB));
    assert_int_equal(tes_prefab_members(w, f.prefab, out, 8), FX_MEMBERS);
    tes_entity_t want[] = {f.members[0], f.members[1], f.members[3], f.members[4], extra};
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_true(out[i] == want[i]);
    /* Two prefabs keep separate records; an empty prefab has just its root. */
    tes_entity_t p2 = tes_prefab_new(w);
    assert_int_equal(tes_prefab_members(w, p2, out, 8), 1);
    assert_true(out[0] == p2);
    tes_entity_t c2 = tes_prefab_child(w, p2);
    assert_int_equal(tes_prefab_members(w, p2, out, 8), 2);
    assert_true(out[1] == c2);
    assert_int_equal(tes_prefab_members(w, f.prefab, out, 8), FX_MEMBERS);
    /* Prefabs are hidden from queries unless asked for. */
    assert_int_equal(count_query(w, f.val, 0), 1); /* just `outside` */
    assert_int_equal(count_query(w, f.val, TES_QUERY_INCLUDE_PREFAB), 4);
    assert_int_equal(count_query(w, TES_PREFAB, 0), 7); /* 4 + extra + p2 + c2 */
    /* A dead root is no longer a prefab. */
    assert_int_equal(tes_destroy(w, p2), TES_OK);
    assert_int_equal(tes_prefab_members(w, p2, out, 8), -1);
    assert_true(tes_prefab_child(w, p2) == TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_true(tes_alive(w, c2));
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* tes_instantiate                                                           */
/* ------------------------------------------------------------------------ */

static void test_instantiate_hooks_balanced(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    counters_t t0 = f.ct, s0 = f.cs;
    int32_t alive0 = tes_entity_count(w);
    tes_entity_t out[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, out, FX_MEMBERS);
    assert_true(inst != 0);
    assert_int_equal(tes_entity_count(w), alive0 + FX_MEMBERS);
    /* Constructed and assigned once per hooked component of every member;
     * on_add once each; nothing destroyed, nothing removed. */
    assert_int_equal(f.ct.ctor - t0.ctor, FX_TRACKED_T);
    assert_int_equal(f.ct.copy - t0.copy, FX_TRACKED_T);
    assert_int_equal(f.ct.on_add - t0.on_add, FX_TRACKED_T);
    assert_int_equal(f.ct.dtor - t0.dtor, 0);
    assert_int_equal(f.ct.on_remove - t0.on_remove, 0);
    assert_int_equal(f.cs.ctor - s0.ctor, FX_TRACKED_S);
    assert_int_equal(f.cs.copy - s0.copy, FX_TRACKED_S);
    assert_int_equal(f.cs.on_add - s0.on_add, FX_TRACKED_S);
    assert_int_equal(f.cs.dtor - s0.dtor, 0);
    assert_int_equal(f.ct.bad + f.cs.bad, 0);
    verify_copies(&f, f.members, out, FX_MEMBERS, inst);
    expect_members(w, inst, out, FX_MEMBERS);
    assert_int_equal(tes__world_check(w), TES_OK);

    /* A second instance: same again, independent values. */
    tes_entity_t out2[FX_MEMBERS];
    tes_instance_t inst2 = tes_instantiate(w, f.prefab, out2, FX_MEMBERS);
    assert_true(inst2 != 0 && inst2 != inst);
    assert_int_equal(f.ct.copy - t0.copy, 2 * FX_TRACKED_T);
    assert_int_equal(f.cs.copy - s0.copy, 2 * FX_TRACKED_S);
    verify_copies(&f, f.members, out2, FX_MEMBERS, inst2);
    Tracked *t = tes_get_mut(w, out[0], f.tracked_t);
    t->value = -1;
    assert_int_equal(((const Tracked *)tes_get(w, out2[0], f.tracked_t))->value, 1000);
    assert_int_equal(((const Tracked *)tes_get(w, f.members[0], f.tracked_t))->value, 1000);

    /* Destroying the instance: on_remove and dtor once per value. */
    counters_t t1 = f.ct, s1 = f.cs;
    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_false(tes_alive(w, out[i]));
    assert_int_equal(f.ct.dtor - t1.dtor, FX_TRACKED_T);
    assert_int_equal(f.ct.on_remove - t1.on_remove, FX_TRACKED_T);
    assert_int_equal(f.cs.dtor - s1.dtor, FX_TRACKED_S);
    assert_int_equal(f.cs.on_remove - s1.on_remove, FX_TRACKED_S);
    assert_int_equal(tes_entity_count(w), alive0 + FX_MEMBERS);
    verify_copies(&f, f.members, out2, FX_MEMBERS, inst2);
    /* inst2 stays alive: tes_world_free must end its values (fx_close). */
    fx_close(&f);
}

static void test_remap_references(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_entity_t *m = f.members;
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    assert_true(inst != 0);
    /* Spelled out, member by member (verify_copies checks the same
     * generically). */
    const Tracked *t = tes_get(w, o[0], f.tracked_t);
    assert_true(t->ref == o[0]); /* self reference: the copy of the root */
    const Links *l = tes_get(w, o[0], f.links);
    assert_true(l->a == o[0] && l->b == o[2] && l->c == f.outside);
    assert_int_equal(l->tag, 7);
    t = tes_get(w, o[1], f.tracked_s);
    assert_true(t->ref == o[0]);
    l = tes_get(w, o[1], f.slinks);
    assert_true(l->a == o[3] && l->b == o[0] && l->c == TES_NULL);
    t = tes_get(w, o[2], f.tracked_t);
    assert_true(t->ref == f.outside);
    l = tes_get(w, o[2], f.links);
    assert_true(l->a == o[1] && l->b == o[4] && l->c == TES_NULL);
    t = tes_get(w, o[4], f.tracked_s);
    assert_true(t->ref == o[4]);
    t = tes_get(w, o[4], f.tracked_t);
    assert_true(t->ref == o[1]);
    l = tes_get(w, o[4], f.slinks);
    assert_true(l->a == o[4] && l->b == f.outside && l->c == o[0]);
    /* The prefab itself still points at its own members. */
    l = tes_get(w, m[0], f.links);
    assert_true(l->a == m[0] && l->b == m[2] && l->c == f.outside);
    verify_copies(&f, f.members, o, FX_MEMBERS, inst);

    /* References to another prefab (a spawner) are outside references. */
    tes_entity_t other = tes_prefab_new(w);
    tes_entity_t p = tes_prefab_new(w);
    tes_entity_t pc = tes_prefab_child(w, p);
    set_links(w, p, f.links, other, pc, m[1], 1);
    set_links(w, pc, f.slinks, p, other, o[3], 2);
    tes_entity_t q[2];
    tes_instance_t qi = tes_instantiate(w, p, q, 2);
    assert_true(qi != 0);
    l = tes_get(w, q[0], f.links);
    assert_true(l->a == other && l->b == q[1] && l->c == m[1]);
    l = tes_get(w, q[1], f.slinks);
    assert_true(l->a == q[0] && l->b == other && l->c == o[3]);

    /* A reference to a member that has since died is kept as it is (it
     * names nothing in the new instance); the dead member is skipped. */
    assert_int_equal(tes_destroy(w, m[2]), TES_OK);
    tes_entity_t r[FX_MEMBERS] = {0};
    tes_instance_t ri = tes_instantiate(w, f.prefab, r, FX_MEMBERS);
    assert_true(ri != 0);
    assert_int_equal(tes_instance_members(w, ri, NULL, 0), FX_MEMBERS - 1);
    assert_true(r[FX_MEMBERS - 1] == TES_NULL);
    l = tes_get(w, r[0], f.links); /* root: a root, b m2 (dead), c outside */
    assert_true(l->a == r[0] && l->b == m[2] && l->c == f.outside);
    tes_entity_t src4[] = {m[0], m[1], m[3], m[4]};
    verify_copies(&f, src4, r, FX_MEMBERS - 1, ri);
    fx_close(&f);
}

/* A prefab whose members refer to each other through a long chain, with
 * all eight entity fields used: every field lands on the right copy. */
typedef struct Eight {
    tes_entity_t e[8];
} Eight;

static void test_remap_eight_fields(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    size_t fields[8];
    for (int i = 0; i < 8; i++)
        fields[i] = (size_t)i * sizeof(tes_entity_t);
    tes_comp_t ct = reg(w, "EightT", sizeof(Eight), TES_STORAGE_TABLE, false, NULL, fields, 8);
    tes_comp_t cs = reg(w, "EightS", sizeof(Eight), TES_STORAGE_SPARSE, true, NULL, fields, 8);
    tes_entity_t pf = tes_prefab_new(w);
    tes_entity_t m[10];
    m[0] = pf;
    for (int i = 1; i < 10; i++)
        m[i] = tes_prefab_child(w, pf);
    tes_entity_t ext = tes_spawn(w);
    for (int i = 0; i < 10; i++) {
        Eight v;
        for (int k = 0; k < 8; k++)
            v.e[k] = k == 7 ? ext : k == 6 ? TES_NULL : m[(i + k + 1) % 10];
        assert_int_equal(tes_set(w, m[i], i % 2 ? cs : ct, &v), TES_OK);
    }
    tes_instance_t insts[3];
    assert_int_equal(tes_instantiate_n(w, pf, 3, insts), TES_OK);
    for (int k = 0; k < 3; k++) {
        tes_entity_t o[10];
        assert_int_equal(tes_instance_members(w, insts[k], o, 10), 10);
        for (int i = 0; i < 10; i++) {
            const Eight *v = tes_get(w, o[i], i % 2 ? cs : ct);
            assert_non_null(v);
            assert_false(tes_has(w, o[i], i % 2 ? ct : cs));
            for (int j = 0; j < 8; j++) {
                tes_entity_t want = j == 7 ? ext : j == 6 ? TES_NULL : o[(i + j + 1) % 10];
                assert_true(v->e[j] == want);
            }
        }
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_out_order_and_cap(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    /* Root copy first, then children in the order they were added: each
     * copy carries its member's Val/Tracked value, so the order shows. */
    tes_entity_t out[FX_MEMBERS + 2];
    for (int i = 0; i < FX_MEMBERS + 2; i++)
        out[i] = (tes_entity_t)(0xABC0 + i);
    tes_instance_t inst = tes_instantiate(w, f.prefab, out, FX_MEMBERS + 2);
    assert_true(inst != 0);
    verify_copies(&f, f.members, out, FX_MEMBERS, inst);
    assert_int_equal(((const Val *)tes_get(w, out[0], f.val))->y, 100);
    assert_int_equal(((const Val *)tes_get(w, out[1], f.val))->y, 101);
    assert_int_equal(((const Tracked *)tes_get(w, out[2], f.tracked_t))->value, 1002);
    assert_int_equal(tes_components_of(w, out[3], NULL, 0), 0);
    assert_int_equal(((const Val *)tes_get(w, out[4], f.val))->y, 104);
    /* Slots beyond the member count are untouched. */
    assert_true(out[FX_MEMBERS] == (tes_entity_t)(0xABC0 + FX_MEMBERS));
    assert_true(out[FX_MEMBERS + 1] == (tes_entity_t)(0xABC0 + FX_MEMBERS + 1));
    /* The instance lists its members in the same order. */
    expect_members(w, inst, out, FX_MEMBERS);

    /* cap smaller than the member count: only the first cap written, the
     * whole group still created. */
    tes_entity_t two[3] = {0, 0, (tes_entity_t)77};
    int32_t before = tes_entity_count(w);
    tes_instance_t i2 = tes_instantiate(w, f.prefab, two, 2);
    assert_true(i2 != 0);
    assert_int_equal(tes_entity_count(w), before + FX_MEMBERS);
    assert_true(two[2] == (tes_entity_t)77);
    tes_entity_t all[FX_MEMBERS];
    assert_int_equal(tes_instance_members(w, i2, all, FX_MEMBERS), FX_MEMBERS);
    assert_true(all[0] == two[0] && all[1] == two[1]);
    verify_copies(&f, f.members, all, FX_MEMBERS, i2);
    /* cap 0 with NULL out: allowed. */
    tes_instance_t i3 = tes_instantiate(w, f.prefab, NULL, 0);
    assert_true(i3 != 0);
    assert_int_equal(tes_instance_members(w, i3, all, FX_MEMBERS), FX_MEMBERS);
    verify_copies(&f, f.members, all, FX_MEMBERS, i3);
    /* tes_instance_members with a short cap. */
    tes_entity_t one[2] = {0, (tes_entity_t)5};
    assert_int_equal(tes_instance_members(w, i3, one, 1), FX_MEMBERS);
    assert_true(one[0] == all[0] && one[1] == (tes_entity_t)5);
    fx_close(&f);
}

static void test_instances_visible_prefabs_not(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    /* Val: outside + members 0, 1, 4 (prefab). */
    assert_int_equal(count_query(w, f.val, 0), 1);
    assert_int_equal(count_query(w, f.sval, 0), 0);
    assert_int_equal(count_query(w, f.tracked_s, 0), 0);
    tes_entity_t out[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, out, FX_MEMBERS);
    assert_true(inst != 0);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_false(tes_has(w, out[i], TES_PREFAB));
    assert_int_equal(count_query(w, f.val, 0), 1 + 3);
    assert_int_equal(count_query(w, f.sval, 0), 2);
    assert_int_equal(count_query(w, f.tracked_s, 0), 2);
    assert_int_equal(count_query(w, f.tracked_t, 0), 3);
    assert_int_equal(count_query(w, f.stable, 0), 1);
    assert_int_equal(count_query(w, f.tag, 0), 1);
    assert_int_equal(count_query(w, f.val, TES_QUERY_INCLUDE_PREFAB), 1 + 3 + 3);
    assert_int_equal(count_query(w, f.sval, TES_QUERY_INCLUDE_PREFAB), 4);
    assert_int_equal(count_query(w, TES_PREFAB, 0), FX_MEMBERS);
    /* Every entity a query yields is a copy, never a prefab. */
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = f.tracked_s;
    d.terms[1].comp = f.sval;
    d.terms[1].oper = TES_OPTIONAL;
    tes_query_t *q = tes_query_new(w, &d);
    tes_iter_t it = tes_query_iter(q);
    int32_t seen = 0;
    while (tes_iter_next(&it)) {
        const Tracked *t = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++) {
            assert_false(tes_has(w, it.entities[i], TES_PREFAB));
            assert_true(tes_instance_of(w, it.entities[i]) == inst);
            assert_int_equal(t[i].magic, MAGIC);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    tes_query_free(q);
    /* Disabling a prefab member is copied into the instance too. */
    assert_int_equal(tes_disable(w, f.members[1]), TES_OK);
    tes_entity_t o2[FX_MEMBERS];
    assert_true(tes_instantiate(w, f.prefab, o2, FX_MEMBERS) != 0);
    assert_false(tes_enabled(w, o2[1]));
    assert_true(tes_enabled(w, o2[0]));
    assert_int_equal(count_query(w, f.val, 0), 1 + 3 + 2);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* tes_instantiate_n                                                         */
/* ------------------------------------------------------------------------ */

static void check_n_instances(fixture_t *f, const tes_instance_t *insts, int32_t n)
{
    tes_world_t *w = f->w;
    for (int32_t k = 0; k < n; k++) {
        for (int32_t j = 0; j < k; j++)
            assert_true(insts[j] != insts[k]);
        tes_entity_t o[FX_MEMBERS];
        assert_int_equal(tes_instance_members(w, insts[k], o, FX_MEMBERS), FX_MEMBERS);
        verify_copies(f, f->members, o, FX_MEMBERS, insts[k]);
    }
}

static void test_instantiate_n(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    /* Holes in the free list first, so the new entities mix reused and
     * fresh indices. */
    tes_entity_t filler[100];
    for (int i = 0; i < 100; i++) {
        filler[i] = tes_spawn(w);
        if (i % 3 == 0)
            set_val(w, filler[i], f.sval, i, i);
    }
    for (int i = 0; i < 100; i += 2)
        assert_int_equal(tes_destroy(w, filler[i]), TES_OK);
    counters_t t0 = f.ct, s0 = f.cs;
    int32_t alive0 = tes_entity_count(w);
    enum { N = 60 };
    tes_instance_t insts[N];
    assert_int_equal(tes_instantiate_n(w, f.prefab, N, insts), TES_OK);
    assert_int_equal(tes_entity_count(w), alive0 + N * FX_MEMBERS);
    assert_int_equal(instances_alive(w), N);
    assert_int_equal(f.ct.ctor - t0.ctor, N * FX_TRACKED_T);
    assert_int_equal(f.ct.copy - t0.copy, N * FX_TRACKED_T);
    assert_int_equal(f.ct.on_add - t0.on_add, N * FX_TRACKED_T);
    assert_int_equal(f.cs.ctor - s0.ctor, N * FX_TRACKED_S);
    assert_int_equal(f.cs.copy - s0.copy, N * FX_TRACKED_S);
    assert_int_equal(f.cs.on_add - s0.on_add, N * FX_TRACKED_S);
    assert_int_equal(f.ct.dtor, t0.dtor);
    assert_int_equal(f.cs.dtor, s0.dtor);
    check_n_instances(&f, insts, N);
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_int_equal(count_query(w, f.val, 0), 1 + 3 * N);
    assert_int_equal(count_query(w, f.tracked_s, 0), 2 * N);

    /* Destroying some leaves the others intact. */
    for (int k = 0; k < N; k += 3)
        assert_int_equal(tes_instance_destroy(w, insts[k]), TES_OK);
    for (int k = 0; k < N; k++)
        assert_int_equal(tes_instance_alive(w, insts[k]), k % 3 != 0);
    assert_int_equal(instances_alive(w), N - N / 3);
    for (int k = 1; k < N; k += 3)
        check_n_instances(&f, &insts[k], 2);
    assert_int_equal(tes__world_check(w), TES_OK);

    /* A bigger batch on top (reuses the freed indices, grows tables), and
     * single instantiations after it. */
    enum { N2 = 700 };
    tes_instance_t *more = malloc(N2 * sizeof *more);
    assert_non_null(more);
    assert_int_equal(tes_instantiate_n(w, f.prefab, N2, more), TES_OK);
    for (int k = 0; k < N2; k += 97)
        check_n_instances(&f, &more[k], 1);
    check_n_instances(&f, &more[N2 - 1], 1);
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t single = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    verify_copies(&f, f.members, o, FX_MEMBERS, single);
    assert_int_equal(instances_alive(w), N - N / 3 + N2 + 1);
    /* n = 0 is a no-op (out may be NULL). */
    int32_t before = tes_entity_count(w);
    assert_int_equal(tes_instantiate_n(w, f.prefab, 0, NULL), TES_OK);
    assert_int_equal(tes_entity_count(w), before);
    free(more);
    fx_close(&f);
}

/* instantiate_n with groups: the new entities join non-owning and owning
 * groups as they appear, and leave them when their instance dies. */
static void test_instantiate_n_groups(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = f.sval;
    d.terms[1].comp = f.val;
    d.flags = TES_QUERY_NONOWNING_GROUP;
    tes_query_t *nonowning = tes_query_new(w, &d);
    assert_non_null(nonowning);
    memset(&d, 0, sizeof d);
    d.terms[0].comp = f.slinks;
    d.terms[1].comp = f.tracked_s;
    d.flags = TES_QUERY_OWNING_GROUP;
    tes_query_t *owning = tes_query_new(w, &d);
    assert_non_null(owning);
    assert_int_equal(tes_query_count(nonowning), 0);
    assert_int_equal(tes_query_count(owning), 0);

    enum { N = 40 };
    tes_instance_t insts[N];
    assert_int_equal(tes_instantiate_n(w, f.prefab, N, insts), TES_OK);
    /* SVal + Val: member 0 only. SLinks + TrackedS: members 1 and 4. */
    assert_int_equal(tes_query_count(nonowning), N);
    assert_int_equal(tes_query_count(owning), 2 * N);
    tes_iter_t it = tes_query_iter(owning);
    int32_t seen = 0;
    while (tes_iter_next(&it)) {
        const Links *l = tes_field(&it, 0);
        const Tracked *t = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t e = it.entities[i];
            assert_true(tes_get(w, e, f.slinks) == &l[i]);
            assert_true(tes_get(w, e, f.tracked_s) == &t[i]);
            tes_instance_t inst = tes_instance_of(w, e);
            tes_entity_t o[FX_MEMBERS];
            assert_int_equal(tes_instance_members(w, inst, o, FX_MEMBERS), FX_MEMBERS);
            assert_true(e == o[1] || e == o[4]);
            assert_true(t[i].ref == (e == o[1] ? o[0] : o[4]));
            seen++;
        }
    }
    assert_int_equal(seen, 2 * N);
    for (int k = 0; k < N; k += 2)
        assert_int_equal(tes_instance_destroy(w, insts[k]), TES_OK);
    assert_int_equal(tes_query_count(nonowning), N / 2);
    assert_int_equal(tes_query_count(owning), N);
    assert_int_equal(tes_instantiate(w, f.prefab, NULL, 0) != 0, true);
    assert_int_equal(tes_query_count(nonowning), N / 2 + 1);
    assert_int_equal(tes_query_count(owning), N + 2);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Instantiating and destroying from inside a group loop: applied when
     * the loop ends, and the groups follow. */
    it = tes_query_iter(owning);
    tes_instance_t in_loop[5];
    bool done = false;
    while (tes_iter_next(&it)) {
        if (!done) {
            assert_int_equal(tes_instantiate_n(w, f.prefab, 5, in_loop), TES_OK);
            assert_int_equal(tes_instance_destroy(w, insts[1]), TES_OK);
            done = true;
        }
    }
    assert_int_equal(tes_query_count(nonowning), N / 2 + 1 + 5 - 1);
    assert_int_equal(tes_query_count(owning), N + 2 + 10 - 2);
    check_n_instances(&f, in_loop, 5);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(nonowning);
    tes_query_free(owning);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* Lifecycle rules                                                           */
/* ------------------------------------------------------------------------ */

static void test_strict_lifecycle(void **state)
{
    (void)state;
    tes_world_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.strict_lifecycle = true;
    fixture_t f;
    fx_open(&f, &desc);
    tes_world_t *w = f.w;
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    assert_true(inst != 0);
    counters_t t0 = f.ct, s0 = f.cs;
    int32_t alive0 = tes_entity_count(w);
    for (int i = 0; i < FX_MEMBERS; i++) {
        assert_int_equal(tes_destroy(w, o[i]), TES_ERR_OWNED);
        assert_int_equal(tes_last_error(w), TES_ERR_OWNED);
    }
    /* Nothing changed. */
    assert_int_equal(tes_entity_count(w), alive0);
    assert_int_equal(f.ct.dtor, t0.dtor);
    assert_int_equal(f.ct.on_remove, t0.on_remove);
    assert_int_equal(f.cs.dtor, s0.dtor);
    expect_members(w, inst, o, FX_MEMBERS);
    verify_copies(&f, f.members, o, FX_MEMBERS, inst);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Refused inside a deferred block too, at once. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, o[1]), TES_ERR_OWNED);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_alive(w, o[1]));
    /* Ordinary entities and prefab members are not owned. */
    tes_entity_t lone = tes_spawn(w);
    assert_int_equal(tes_destroy(w, lone), TES_OK);
    tes_entity_t pc = tes_prefab_child(w, f.prefab);
    assert_int_equal(tes_destroy(w, pc), TES_OK);

    /* Detach, then destroy: allowed; the rest stays owned. */
    assert_int_equal(tes_instance_detach(w, o[2]), TES_OK);
    assert_true(tes_instance_of(w, o[2]) == 0);
    tes_entity_t rest[] = {o[0], o[1], o[3], o[4]};
    expect_members(w, inst, rest, 4);
    assert_int_equal(tes_destroy(w, o[2]), TES_OK);
    assert_false(tes_alive(w, o[2]));
    assert_int_equal(f.ct.dtor - t0.dtor, 1); /* member 2 had TrackedT */
    assert_int_equal(tes_destroy(w, o[0]), TES_ERR_OWNED);
    expect_members(w, inst, rest, 4);

    /* tes_instance_destroy removes every member, even in a strict world. */
    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_false(tes_alive(w, o[i]));
    assert_false(tes_instance_alive(w, inst));
    assert_int_equal(instances_alive(w), 0);
    assert_int_equal(f.ct.dtor - t0.dtor, FX_TRACKED_T);
    assert_int_equal(f.cs.dtor - s0.dtor, FX_TRACKED_S);
    assert_int_equal(f.ct.on_remove - t0.on_remove, FX_TRACKED_T);
    /* An adopted entity becomes owned. */
    tes_instance_t i2 = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    tes_entity_t adoptee = tes_spawn(w);
    assert_int_equal(tes_instance_adopt(w, i2, adoptee), TES_OK);
    assert_int_equal(tes_destroy(w, adoptee), TES_ERR_OWNED);
    assert_int_equal(tes_instance_destroy(w, i2), TES_OK);
    assert_false(tes_alive(w, adoptee));
    fx_close(&f);
}

static void test_nonstrict_member_destroy(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    tes_instance_t other = tes_instantiate(w, f.prefab, NULL, 0);
    assert_int_equal(instances_alive(w), 2);
    counters_t t0 = f.ct;
    /* Destroying members one by one (middle, first, last, ...) shrinks the
     * group and keeps the join order of the rest. */
    assert_int_equal(tes_destroy(w, o[2]), TES_OK);
    assert_int_equal(f.ct.dtor - t0.dtor, 1);
    tes_entity_t a[] = {o[0], o[1], o[3], o[4]};
    expect_members(w, inst, a, 4);
    assert_int_equal(tes_destroy(w, o[0]), TES_OK);
    tes_entity_t b[] = {o[1], o[3], o[4]};
    expect_members(w, inst, b, 3);
    assert_int_equal(tes_destroy(w, o[4]), TES_OK);
    tes_entity_t c[] = {o[1], o[3]};
    expect_members(w, inst, c, 2);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Detaching the next-to-last, destroying the last: the instance ends. */
    assert_int_equal(tes_instance_detach(w, o[3]), TES_OK);
    expect_members(w, inst, &o[1], 1);
    assert_int_equal(instances_alive(w), 2);
    assert_int_equal(tes_destroy(w, o[1]), TES_OK);
    assert_false(tes_instance_alive(w, inst));
    assert_int_equal(tes_instance_members(w, inst, NULL, 0), -1);
    assert_int_equal(tes_instance_destroy(w, inst), TES_ERR_STALE);
    assert_int_equal(instances_alive(w), 1);
    assert_true(tes_alive(w, o[3]));
    assert_true(tes_instance_of(w, o[3]) == 0);
    assert_true(tes_instance_alive(w, other));
    /* Detaching the last member ends an instance too. */
    tes_entity_t om[FX_MEMBERS];
    assert_int_equal(tes_instance_members(w, other, om, FX_MEMBERS), FX_MEMBERS);
    for (int i = 0; i < FX_MEMBERS; i++) {
        assert_true(tes_instance_alive(w, other));
        assert_int_equal(tes_instance_detach(w, om[i]), TES_OK);
    }
    assert_false(tes_instance_alive(w, other));
    assert_int_equal(instances_alive(w), 0);
    for (int i = 0; i < FX_MEMBERS; i++) {
        assert_true(tes_alive(w, om[i]));
        assert_int_equal(tes_destroy(w, om[i]), TES_OK);
    }
    /* A clone of a member is an entity of its own. */
    tes_entity_t q[FX_MEMBERS];
    tes_instance_t iq = tes_instantiate(w, f.prefab, q, FX_MEMBERS);
    tes_entity_t cl = tes_clone(w, q[1]);
    assert_true(cl != TES_NULL);
    assert_true(tes_instance_of(w, cl) == 0);
    expect_members(w, iq, q, FX_MEMBERS);
    assert_int_equal(tes_instance_destroy(w, iq), TES_OK);
    assert_true(tes_alive(w, cl));
    /* tes_clear keeps the membership. */
    tes_entity_t p[FX_MEMBERS];
    tes_instance_t i3 = tes_instantiate(w, f.prefab, p, FX_MEMBERS);
    assert_int_equal(tes_clear(w, p[0]), TES_OK);
    assert_int_equal(tes_add(w, p[3], f.val), TES_OK);
    expect_members(w, i3, p, FX_MEMBERS);
    fx_close(&f);
}

static void test_detach_adopt(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_entity_t a[FX_MEMBERS], b[FX_MEMBERS];
    tes_instance_t ia = tes_instantiate(w, f.prefab, a, FX_MEMBERS);
    tes_instance_t ib = tes_instantiate(w, f.prefab, b, FX_MEMBERS);
    assert_true(ia && ib && ia != ib);
    /* Detach one of a's and adopt it into b: it joins at the end. */
    assert_int_equal(tes_instance_detach(w, a[1]), TES_OK);
    assert_true(tes_instance_of(w, a[1]) == 0);
    assert_int_equal(tes_instance_adopt(w, ib, a[1]), TES_OK);
    assert_true(tes_instance_of(w, a[1]) == ib);
    tes_entity_t want_b[] = {b[0], b[1], b[2], b[3], b[4], a[1]};
    expect_members(w, ib, want_b, 6);
    tes_entity_t want_a[] = {a[0], a[2], a[3], a[4]};
    expect_members(w, ia, want_a, 4);
    /* Adopting an entity that already belongs to an instance: INVALID,
     * nothing changes (into another instance or into its own). */
    assert_int_equal(tes_instance_adopt(w, ia, a[1]), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tes_instance_adopt(w, ib, a[1]), TES_ERR_INVALID);
    assert_int_equal(tes_instance_adopt(w, ia, b[0]), TES_ERR_INVALID);
    expect_members(w, ib, want_b, 6);
    expect_members(w, ia, want_a, 4);
    /* Detaching an entity in no instance: INVALID. */
    tes_entity_t lone = tes_spawn(w);
    assert_int_equal(tes_instance_detach(w, lone), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tes_instance_detach(w, f.members[0]), TES_ERR_INVALID);
    /* Stale entities and instances. */
    tes_entity_t dead = tes_spawn(w);
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    assert_int_equal(tes_instance_detach(w, dead), TES_ERR_STALE);
    assert_int_equal(tes_instance_detach(w, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_instance_adopt(w, ia, dead), TES_ERR_STALE);
    assert_int_equal(tes_instance_adopt(w, ia, TES_NULL), TES_ERR_STALE);
    assert_int_equal(tes_instance_adopt(w, 0, lone), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_true(tes_instance_of(w, lone) == 0);
    /* An ordinary entity, and a prefab member, can be adopted. */
    assert_int_equal(tes_instance_adopt(w, ia, lone), TES_OK);
    tes_entity_t want_a2[] = {a[0], a[2], a[3], a[4], lone};
    expect_members(w, ia, want_a2, 5);
    /* Destroying b takes the adopted a[1] with it, and leaves a alone. */
    counters_t s0 = f.cs;
    assert_int_equal(tes_instance_destroy(w, ib), TES_OK);
    assert_false(tes_alive(w, a[1]));
    assert_int_equal(f.cs.dtor - s0.dtor, FX_TRACKED_S + 1); /* a[1] has TrackedS */
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_false(tes_alive(w, b[i]));
    expect_members(w, ia, want_a2, 5);
    /* A dead instance adopts nothing. */
    tes_entity_t lone2 = tes_spawn(w);
    assert_int_equal(tes_instance_adopt(w, ib, lone2), TES_ERR_STALE);
    assert_true(tes_instance_of(w, lone2) == 0);
    /* Detach everything from a, then adopt back: a is gone for good (ids
     * are never reused), so adoption into it fails. */
    for (int i = 0; i < 5; i++)
        assert_int_equal(tes_instance_detach(w, want_a2[i]), TES_OK);
    assert_false(tes_instance_alive(w, ia));
    assert_int_equal(tes_instance_adopt(w, ia, lone), TES_ERR_STALE);
    /* A world with no lifecycle state at all. */
    tes_world_t *w2 = tes_world_new(NULL);
    tes_entity_t e2 = tes_spawn(w2);
    assert_int_equal(tes_instance_detach(w2, e2), TES_ERR_INVALID);
    assert_int_equal(tes_instance_adopt(w2, tes_entity_make(0, 1), e2), TES_ERR_STALE);
    assert_true(tes_instance_of(w2, e2) == 0);
    assert_false(tes_instance_alive(w2, tes_entity_make(0, 1)));
    assert_int_equal(tes_instance_destroy(w2, tes_entity_make(0, 1)), TES_ERR_STALE);
    assert_int_equal(tes__world_check(w2), TES_OK);
    tes_world_free(w2);
    fx_close(&f);
}

/* Adopting an entity whose index lies beyond every instantiated entity,
 * then churning links around it. */
static void test_adopt_high_index(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t v = reg(w, "V", sizeof(Val), TES_STORAGE_TABLE, false, NULL, NULL, 0);
    tes_entity_t pf = tes_prefab_new(w);
    set_val(w, pf, v, 1, 1);
    tes_entity_t o[1];
    tes_instance_t inst = tes_instantiate(w, pf, o, 1);
    enum { K = 5000 };
    tes_entity_t *many = malloc(K * sizeof *many);
    assert_non_null(many);
    assert_int_equal(tes_spawn_n(w, K, &v, 1, many), TES_OK);
    for (int i = K - 1; i >= 0; i -= 7)
        assert_int_equal(tes_instance_adopt(w, inst, many[i]), TES_OK);
    int32_t n = tes_instance_members(w, inst, NULL, 0);
    assert_int_equal(n, 1 + (K + 6) / 7);
    tes_entity_t *mem = malloc((size_t)n * sizeof *mem);
    assert_non_null(mem);
    assert_int_equal(tes_instance_members(w, inst, mem, n), n);
    assert_true(mem[0] == o[0]);
    for (int32_t k = 1; k < n; k++)
        assert_true(mem[k] == many[K - 1 - 7 * (k - 1)]);
    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    for (int32_t k = 0; k < n; k++)
        assert_false(tes_alive(w, mem[k]));
    assert_int_equal(tes_entity_count(w), 1 + K - (n - 1));
    assert_int_equal(tes__world_check(w), TES_OK);
    free(mem);
    free(many);
    tes_world_free(w);
}

/* ------------------------------------------------------------------------ */
/* Deferral                                                                  */
/* ------------------------------------------------------------------------ */

static void test_destroy_during_iteration(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    enum { N = 6 };
    tes_instance_t insts[N];
    assert_int_equal(tes_instantiate_n(w, f.prefab, N, insts), TES_OK);
    tes_entity_t mem[N][FX_MEMBERS];
    for (int k = 0; k < N; k++)
        assert_int_equal(tes_instance_members(w, insts[k], mem[k], FX_MEMBERS), FX_MEMBERS);
    counters_t t0 = f.ct, s0 = f.cs;
    int32_t alive0 = tes_entity_count(w);

    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = f.val;
    tes_query_t *q = tes_query_new(w, &d);
    tes_iter_t it = tes_query_iter(q);
    int32_t visited = 0, destroys = 0;
    while (tes_iter_next(&it)) {
        for (int32_t i = 0; i < it.count; i++) {
            visited++;
            tes_instance_t inst = tes_instance_of(w, it.entities[i]);
            if (!inst)
                continue; /* `outside` */
            /* Instances 0, 2, 4 die; each is destroyed once per member
             * carrying Val (three times). */
            int k = 0;
            while (k < N && insts[k] != inst)
                k++;
            assert_true(k < N);
            if (k % 2 == 0) {
                assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
                destroys++;
            }
            /* Still there during the loop: alive, members, values. */
            for (int j = 0; j < N; j++) {
                assert_true(tes_instance_alive(w, insts[j]));
                for (int m = 0; m < FX_MEMBERS; m++)
                    assert_true(tes_alive(w, mem[j][m]));
            }
            assert_int_equal(tes_instance_members(w, inst, NULL, 0), FX_MEMBERS);
        }
        assert_int_equal(f.ct.dtor, t0.dtor);
        assert_int_equal(f.cs.dtor, s0.dtor);
        assert_int_equal(f.ct.on_remove, t0.on_remove);
    }
    assert_int_equal(visited, 1 + 3 * N);
    assert_int_equal(destroys, 3 * (N / 2));
    /* The loop ended: the destroys were applied, each instance once. */
    for (int k = 0; k < N; k++) {
        assert_int_equal(tes_instance_alive(w, insts[k]), k % 2 != 0);
        for (int m = 0; m < FX_MEMBERS; m++)
            assert_int_equal(tes_alive(w, mem[k][m]), k % 2 != 0);
        if (k % 2)
            verify_copies(&f, f.members, mem[k], FX_MEMBERS, insts[k]);
    }
    assert_int_equal(tes_entity_count(w), alive0 - (N / 2) * FX_MEMBERS);
    assert_int_equal(instances_alive(w), N - N / 2);
    assert_int_equal(f.ct.dtor - t0.dtor, (N / 2) * FX_TRACKED_T);
    assert_int_equal(f.cs.dtor - s0.dtor, (N / 2) * FX_TRACKED_S);
    assert_int_equal(f.ct.on_remove - t0.on_remove, (N / 2) * FX_TRACKED_T);
    assert_int_equal(f.cs.on_remove - s0.on_remove, (N / 2) * FX_TRACKED_S);
    assert_int_equal(tes_query_count(q), 1 + 3 * (N - N / 2));
    assert_int_equal(tes__world_check(w), TES_OK);

    /* Leaving a loop early (tes_iter_fini) applies them too; an explicit
     * deferred block reports no error for the repeated destroy. */
    it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    assert_int_equal(tes_instance_destroy(w, insts[1]), TES_OK);
    assert_true(tes_alive(w, mem[1][0]));
    tes_iter_fini(&it);
    assert_false(tes_alive(w, mem[1][0]));
    assert_false(tes_instance_alive(w, insts[1]));
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_instance_destroy(w, insts[3]), TES_OK);
    assert_int_equal(tes_instance_destroy(w, insts[3]), TES_OK);
    assert_int_equal(tes_destroy(w, mem[3][0]), TES_OK); /* non-strict: queued too */
    assert_true(tes_instance_alive(w, insts[3]));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_instance_alive(w, insts[3]));
    for (int m = 0; m < FX_MEMBERS; m++)
        assert_false(tes_alive(w, mem[3][m]));
    assert_int_equal(instances_alive(w), 1);
    tes_query_free(q);
    fx_close(&f);
}

static void test_instantiate_deferred(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    counters_t t0 = f.ct, s0 = f.cs;
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    assert_true(inst != 0);
    /* Entities and instance exist now; components arrive at the flush. */
    for (int i = 0; i < FX_MEMBERS; i++) {
        assert_true(tes_alive(w, o[i]));
        assert_true(tes_instance_of(w, o[i]) == inst);
        assert_int_equal(tes_components_of(w, o[i], NULL, 0), 0);
        assert_null(tes_get(w, o[i], f.val));
    }
    expect_members(w, inst, o, FX_MEMBERS);
    assert_int_equal(instances_alive(w), 1);
    assert_int_equal(f.ct.ctor, t0.ctor);
    /* Bulk too. */
    tes_instance_t bulk[3];
    assert_int_equal(tes_instantiate_n(w, f.prefab, 3, bulk), TES_OK);
    for (int k = 0; k < 3; k++)
        assert_int_equal(tes_instance_members(w, bulk[k], NULL, 0), FX_MEMBERS);
    assert_int_equal(instances_alive(w), 4);
    /* The copies are taken at the flush from the prefab as it is then: a
     * write through tes_get_mut now is seen. */
    Val *rv = tes_get_mut(w, f.members[0], f.val);
    rv->y = 555;
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(f.ct.ctor - t0.ctor, 4 * FX_TRACKED_T);
    assert_int_equal(f.ct.copy - t0.copy, 4 * FX_TRACKED_T);
    assert_int_equal(f.ct.on_add - t0.on_add, 4 * FX_TRACKED_T);
    assert_int_equal(f.cs.ctor - s0.ctor, 4 * FX_TRACKED_S);
    assert_int_equal(f.cs.on_add - s0.on_add, 4 * FX_TRACKED_S);
    verify_copies(&f, f.members, o, FX_MEMBERS, inst);
    assert_int_equal(((const Val *)tes_get(w, o[0], f.val))->y, 555);
    check_n_instances(&f, bulk, 3);
    assert_int_equal(count_query(w, f.val, 0), 1 + 4 * 3);
    assert_int_equal(tes__world_check(w), TES_OK);

    /* Order within the block: a set queued before the instantiation is
     * applied first, one queued after it is not seen by the copy. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    set_val(w, f.members[1], f.val, 9, 901);
    assert_int_equal(tes_add(w, f.members[3], f.tag), TES_OK);
    tes_entity_t p[FX_MEMBERS];
    tes_instance_t pi = tes_instantiate(w, f.prefab, p, FX_MEMBERS);
    set_val(w, f.members[1], f.val, 9, 902);
    /* Structural changes to the new entities queue behind it. */
    set_val(w, p[3], f.sval, 3, 33);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(((const Val *)tes_get(w, p[1], f.val))->y, 901);
    assert_true(tes_has(w, p[3], f.tag));
    assert_int_equal(((const Val *)tes_get(w, p[3], f.sval))->y, 33);
    assert_true(tes_instance_of(w, p[3]) == pi);
    const Links *l = tes_get(w, p[1], f.slinks);
    assert_true(l->a == p[3] && l->b == p[0]);

    /* Instantiate and destroy in one block: balanced, nothing left. */
    counters_t t1 = f.ct, s1 = f.cs;
    int32_t alive1 = tes_entity_count(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_instance_t gone = tes_instantiate(w, f.prefab, p, FX_MEMBERS);
    assert_int_equal(tes_instance_destroy(w, gone), TES_OK);
    assert_true(tes_instance_alive(w, gone));
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_instance_alive(w, gone));
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_false(tes_alive(w, p[i]));
    assert_int_equal(tes_entity_count(w), alive1);
    assert_int_equal(f.ct.ctor - t1.ctor, f.ct.dtor - t1.dtor);
    assert_int_equal(f.cs.ctor - s1.ctor, f.cs.dtor - s1.dtor);

    /* A member whose destroy is queued before the instantiation is dead at
     * the instantiation's place, as the calls made one by one would leave
     * it: it gets no copy, and references to it are kept. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_instance_t late = tes_instantiate(w, f.prefab, p, FX_MEMBERS);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_instance_alive(w, late));
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, f.members[4]), TES_OK);
    tes_entity_t q[FX_MEMBERS];
    tes_instance_t qi = tes_instantiate(w, f.prefab, q, FX_MEMBERS);
    assert_int_equal(tes_instance_members(w, qi, NULL, 0), FX_MEMBERS - 1);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes_instance_members(w, qi, NULL, 0), FX_MEMBERS - 1);
    verify_copies(&f, f.members, q, FX_MEMBERS - 1, qi);
    l = tes_get(w, q[2], f.links); /* a m1, b m4 (dead) */
    assert_true(l->a == q[1] && l->b == f.members[4]);
    assert_int_equal(tes__world_check(w), TES_OK);

    /* Instantiating from inside a query loop is deferred the same way. */
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = f.tag;
    tes_query_t *tq = tes_query_new(w, &d);
    int32_t before = tes_query_count(tq);
    tes_iter_t it = tes_query_iter(tq);
    tes_instance_t in_loop = 0;
    tes_entity_t r[FX_MEMBERS];
    while (tes_iter_next(&it)) {
        if (!in_loop) {
            in_loop = tes_instantiate(w, f.prefab, r, FX_MEMBERS);
            assert_true(in_loop != 0);
            assert_false(tes_has(w, r[0], f.tag));
        }
    }
    assert_true(tes_has(w, r[0], f.tag));
    assert_int_equal(tes_query_count(tq), before + 2); /* members 0 and 3 carry Tag now */
    tes_entity_t src4[] = {f.members[0], f.members[1], f.members[2], f.members[3]};
    verify_copies(&f, src4, r, 4, in_loop);
    tes_query_free(tq);

    /* A prefab built and instantiated inside one deferred block: the copy
     * sees the prefab as the flush has built it, without TES_PREFAB. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t np = tes_prefab_new(w);
    tes_entity_t nc = tes_prefab_child(w, np);
    assert_true(np && nc);
    assert_int_equal(tes_prefab_members(w, np, NULL, 0), 2);
    set_links(w, np, f.links, nc, np, f.outside, 5);
    set_tracked(w, nc, f.tracked_s, 6, np);
    tes_entity_t no[2];
    tes_instance_t ni = tes_instantiate(w, np, no, 2);
    assert_true(ni != 0);
    tes_instance_t nn[2];
    assert_int_equal(tes_instantiate_n(w, np, 2, nn), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    tes_entity_t nsrc[] = {np, nc};
    verify_copies(&f, nsrc, no, 2, ni);
    l = tes_get(w, no[0], f.links);
    assert_true(l->a == no[1] && l->b == no[0] && l->c == f.outside);
    for (int k = 0; k < 2; k++) {
        tes_entity_t e2[2];
        assert_int_equal(tes_instance_members(w, nn[k], e2, 2), 2);
        verify_copies(&f, nsrc, e2, 2, nn[k]);
    }
    fx_close(&f);
}

/* tes_world_free while an instantiation is still queued: nothing leaks,
 * nothing is constructed. */
static void test_free_with_pending_instantiate(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    assert_int_equal(tes_defer_begin(f.w), TES_OK);
    assert_true(tes_instantiate(f.w, f.prefab, NULL, 0) != 0);
    tes_instance_t many[4];
    assert_int_equal(tes_instantiate_n(f.w, f.prefab, 4, many), TES_OK);
    assert_int_equal(tes_instance_destroy(f.w, many[2]), TES_OK);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* Instance ids                                                              */
/* ------------------------------------------------------------------------ */

static void test_stale_instance_ids(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    assert_false(tes_instance_alive(w, 0));
    assert_int_equal(tes_instance_destroy(w, 0), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_instance_members(w, 0, NULL, 0), -1);
    /* Never issued. */
    assert_false(tes_instance_alive(w, tes_entity_make(3, 1)));
    assert_false(tes_instance_alive(w, tes_entity_make(0, 1)));

    tes_entity_t o[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    assert_true(inst != 0);
    assert_true(tes_instance_alive(w, inst));
    assert_false(tes_instance_alive(w, inst + ((tes_instance_t)1 << 32))); /* newer generation */
    assert_int_equal(tes_instance_members(w, inst, NULL, 5), -1);  /* NULL out, cap > 0 */
    assert_int_equal(tes_instance_members(w, inst, o, -1), -1);
    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    assert_false(tes_instance_alive(w, inst));
    assert_int_equal(tes_instance_destroy(w, inst), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_instance_members(w, inst, o, FX_MEMBERS), -1);
    assert_int_equal(tes_instance_members(w, inst, NULL, 0), -1);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_true(tes_instance_of(w, o[i]) == 0); /* dead entities: 0 */
    /* The next instance gets a different id even if it reuses the slot;
     * the old id stays dead. */
    tes_instance_t again = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    assert_true(again != 0 && again != inst);
    assert_false(tes_instance_alive(w, inst));
    assert_int_equal(tes_instance_destroy(w, inst), TES_ERR_STALE);
    assert_true(tes_instance_alive(w, again));
    expect_members(w, again, o, FX_MEMBERS);
    /* An instance ended by its last member leaving is just as dead. */
    tes_entity_t p[FX_MEMBERS];
    tes_instance_t third = tes_instantiate(w, f.prefab, p, FX_MEMBERS);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_int_equal(tes_destroy(w, p[i]), TES_OK);
    assert_false(tes_instance_alive(w, third));
    assert_int_equal(tes_instance_destroy(w, third), TES_ERR_STALE);
    tes_entity_t lone = tes_spawn(w);
    assert_int_equal(tes_instance_adopt(w, third, lone), TES_ERR_STALE);
    assert_false(tes_instance_alive(w, 0));
    assert_int_equal(instances_alive(w), 1);
    /* NULL world. */
    assert_false(tes_instance_alive(NULL, again));
    assert_true(tes_instance_of(NULL, o[0]) == 0);
    assert_int_equal(tes_instance_members(NULL, again, NULL, 0), -1);
    assert_int_equal(tes_instance_destroy(NULL, again), TES_ERR_INVALID);
    assert_int_equal(tes_instance_detach(NULL, o[0]), TES_ERR_INVALID);
    assert_int_equal(tes_instance_adopt(NULL, again, lone), TES_ERR_INVALID);
    fx_close(&f);
}

static void test_stats_instances_alive(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    assert_int_equal(instances_alive(w), 0);
    tes_instance_t a = tes_instantiate(w, f.prefab, NULL, 0);
    assert_int_equal(instances_alive(w), 1);
    tes_instance_t n[10];
    assert_int_equal(tes_instantiate_n(w, f.prefab, 10, n), TES_OK);
    assert_int_equal(instances_alive(w), 11);
    assert_int_equal(tes_instance_destroy(w, n[3]), TES_OK);
    assert_int_equal(instances_alive(w), 10);
    assert_int_equal(tes_instance_destroy(w, n[3]), TES_ERR_STALE);
    assert_int_equal(instances_alive(w), 10);
    /* Failed calls change nothing. */
    assert_int_equal(tes_instantiate_n(w, f.outside, 4, n), TES_ERR_INVALID);
    assert_int_equal(instances_alive(w), 10);
    assert_true(tes_instantiate(w, f.members[1], NULL, 0) == 0);
    assert_int_equal(instances_alive(w), 10);
    tes_world_stats_t st;
    assert_int_equal(tes_world_stats(w, &st), TES_OK);
    assert_int_equal(st.entities_alive, (uint32_t)tes_entity_count(w));
    assert_int_equal(st.entities_alive, 1 + FX_MEMBERS + 10 * FX_MEMBERS);
    assert_int_equal(tes_instance_destroy(w, a), TES_OK);
    for (int k = 0; k < 10; k++)
        if (k != 3)
            assert_int_equal(tes_instance_destroy(w, n[k]), TES_OK);
    assert_int_equal(instances_alive(w), 0);
    assert_int_equal(tes_entity_count(w), 1 + FX_MEMBERS);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* Weak references and id uniqueness                                         */
/* ------------------------------------------------------------------------ */

typedef struct Holder {
    tes_entity_t target;
    tes_instance_t inst;
} Holder;

static void test_weak_references(void **state)
{
    (void)state;
    tes_world_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.generation_limit = 3;
    fixture_t f;
    fx_open(&f, &desc);
    tes_world_t *w = f.w;
    tes_comp_t holder = reg(w, "Holder", sizeof(Holder), TES_STORAGE_TABLE, false, NULL, NULL, 0);
    handle_set_t ents = {0}, insts = {0};
    /* Every live handle so far. */
    tes_entity_t pre[FX_MEMBERS];
    assert_int_equal(tes_prefab_members(w, f.prefab, pre, FX_MEMBERS), FX_MEMBERS);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_true(hs_insert(&ents, pre[i]));
    assert_true(hs_insert(&ents, f.outside));

    /* Hold the root of an instance inside another entity's component. */
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t first = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_true(hs_insert(&ents, o[i]));
    assert_true(hs_insert(&insts, first));
    tes_entity_t keeper = tes_spawn(w);
    assert_true(hs_insert(&ents, keeper));
    Holder h = {o[0], first};
    assert_int_equal(tes_set(w, keeper, holder, &h), TES_OK);
    assert_int_equal(tes_instance_destroy(w, first), TES_OK);
    const Holder *held = tes_get(w, keeper, holder);
    assert_false(tes_alive(w, held->target));
    assert_false(tes_instance_alive(w, held->inst));

    /* Many cycles; the slots run out of generations and retire. */
    uint64_t rng = 12345;
    tes_instance_t live[32];
    int nlive = 0;
    for (int cycle = 0; cycle < 3000; cycle++) {
        uint32_t r = rng_below(&rng, 10);
        if (r < 4 && nlive < 32) {
            tes_entity_t e[FX_MEMBERS];
            tes_instance_t i = tes_instantiate(w, f.prefab, e, FX_MEMBERS);
            assert_true(i != 0);
            assert_true(hs_insert(&insts, i));
            for (int k = 0; k < FX_MEMBERS; k++)
                assert_true(hs_insert(&ents, e[k]));
            live[nlive++] = i;
        } else if (r < 6 && nlive + 3 <= 32) {
            tes_instance_t b[3];
            assert_int_equal(tes_instantiate_n(w, f.prefab, 3, b), TES_OK);
            for (int j = 0; j < 3; j++) {
                assert_true(hs_insert(&insts, b[j]));
                tes_entity_t e[FX_MEMBERS];
                assert_int_equal(tes_instance_members(w, b[j], e, FX_MEMBERS), FX_MEMBERS);
                for (int k = 0; k < FX_MEMBERS; k++)
                    assert_true(hs_insert(&ents, e[k]));
                live[nlive++] = b[j];
            }
        } else if (r < 9 && nlive > 0) {
            uint32_t k = rng_below(&rng, (uint32_t)nlive);
            assert_int_equal(tes_instance_destroy(w, live[k]), TES_OK);
            live[k] = live[--nlive];
        } else {
            tes_entity_t e = tes_spawn(w);
            assert_true(hs_insert(&ents, e));
            assert_int_equal(tes_destroy(w, e), TES_OK);
        }
        held = tes_get(w, keeper, holder);
        assert_false(tes_alive(w, held->target));
        assert_false(tes_instance_alive(w, held->inst));
        assert_int_equal(tes_instance_members(w, held->inst, NULL, 0), -1);
        assert_int_equal(tes_destroy(w, held->target), TES_ERR_STALE);
    }
    tes_world_stats_t st;
    assert_int_equal(tes_world_stats(w, &st), TES_OK);
    assert_true(st.entities_retired > 0);
    assert_int_equal(st.instances_alive, (uint32_t)nlive);
    for (int k = 0; k < nlive; k++) {
        tes_entity_t e[FX_MEMBERS];
        assert_int_equal(tes_instance_members(w, live[k], e, FX_MEMBERS), FX_MEMBERS);
        verify_copies(&f, f.members, e, FX_MEMBERS, live[k]);
    }
    free(ents.slots);
    free(insts.slots);
    fx_close(&f);
}

/* ------------------------------------------------------------------------ */
/* Randomised churn against a membership model                               */
/* ------------------------------------------------------------------------ */

#define CH_MAX_INST 64
#define CH_MAX_MEM 24
#define CH_MAX_LONE 64
#define CH_MAX_QUEUE 512
#define CH_MAX_VERIFY 64

typedef struct model_inst {
    tes_instance_t id;
    tes_entity_t mem[CH_MAX_MEM];
    int32_t count;
} model_inst_t;

/* A destroy queued inside a deferred block: an instance (inst != 0) or an
 * entity. */
typedef struct model_op {
    tes_instance_t inst;
    tes_entity_t e;
} model_op_t;

/* An instantiation made inside a deferred block, checked after the flush. */
typedef struct model_verify {
    tes_entity_t src[FX_MEMBERS], dst[FX_MEMBERS];
    int32_t m;
} model_verify_t;

typedef struct model {
    model_inst_t inst[CH_MAX_INST];
    int32_t ninst;
    tes_entity_t lone[CH_MAX_LONE]; /* live entities in no instance */
    bool doomed[CH_MAX_LONE];       /* a destroy is queued for lone[i] */
    int32_t nlone;
    model_op_t queue[CH_MAX_QUEUE];
    int32_t nqueue;
    model_verify_t verify[CH_MAX_VERIFY];
    int32_t nverify;
} model_t;

static void model_remove_member(model_t *m, int32_t k, int32_t j)
{
    model_inst_t *mi = &m->inst[k];
    memmove(&mi->mem[j], &mi->mem[j + 1], (size_t)(mi->count - j - 1) * sizeof mi->mem[0]);
    if (--mi->count == 0)
        m->inst[k] = m->inst[--m->ninst];
}

static void model_remove_lone(model_t *m, int32_t j)
{
    m->nlone--;
    m->lone[j] = m->lone[m->nlone];
    m->doomed[j] = m->doomed[m->nlone];
}

/* Applies a queued entity destroy: wherever e is now, it dies. */
static void model_destroy_entity(model_t *m, tes_entity_t e)
{
    for (int32_t k = 0; k < m->ninst; k++)
        for (int32_t j = 0; j < m->inst[k].count; j++)
            if (m->inst[k].mem[j] == e) {
                model_remove_member(m, k, j);
                return;
            }
    for (int32_t j = 0; j < m->nlone; j++)
        if (m->lone[j] == e) {
            model_remove_lone(m, j);
            return;
        }
    /* Already dead: dropped. */
}

static void model_flush(model_t *m)
{
    for (int32_t q = 0; q < m->nqueue; q++) {
        if (m->queue[q].inst) {
            for (int32_t k = 0; k < m->ninst; k++)
                if (m->inst[k].id == m->queue[q].inst) {
                    m->inst[k] = m->inst[--m->ninst];
                    break;
                }
        } else {
            model_destroy_entity(m, m->queue[q].e);
        }
    }
    m->nqueue = 0;
}

static void model_check(tes_world_t *w, const model_t *m, int32_t lone_base)
{
    assert_int_equal(instances_alive(w), (uint32_t)m->ninst);
    int32_t total = 0;
    for (int32_t k = 0; k < m->ninst; k++) {
        expect_members(w, m->inst[k].id, m->inst[k].mem, m->inst[k].count);
        total += m->inst[k].count;
    }
    for (int32_t i = 0; i < m->nlone; i++) {
        assert_true(tes_alive(w, m->lone[i]));
        assert_true(tes_instance_of(w, m->lone[i]) == 0);
    }
    assert_int_equal(tes_entity_count(w), lone_base + total + m->nlone);
}

/* Random instantiate / instantiate_n / instance destroy / member destroy /
 * detach / adopt / spawn / destroy, checked against the model: membership
 * in join order, tes_instance_of, instances_alive, entity count; instance
 * ids and entity handles never issued twice. With `deferred`, the steps
 * also open and close (nested) deferred blocks: destroys queue in the
 * model too, and instantiations made in a block are checked after it. */
static void run_churn(bool strict, bool deferred, uint64_t seed, int steps)
{
    tes_world_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.strict_lifecycle = strict;
    desc.generation_limit = 5;
    fixture_t f;
    fx_open(&f, &desc);
    tes_world_t *w = f.w;
    /* A second prefab with two members whose Links name the first prefab's
     * root (an outside reference) and each other. */
    tes_entity_t p2 = tes_prefab_new(w);
    tes_entity_t p2c = tes_prefab_child(w, p2);
    set_links(w, p2, f.links, f.prefab, p2c, TES_NULL, 21);
    set_tracked(w, p2c, f.tracked_s, 22, p2);
    int32_t base = tes_entity_count(w);

    model_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    handle_set_t ids = {0}, ents = {0};
    uint64_t rng = seed;
    int depth = 0;
    for (int step = 0; step < steps; step++) {
        if (deferred) {
            uint32_t d = rng_below(&rng, 100);
            bool room = m->nqueue + 8 < CH_MAX_QUEUE && m->nverify + 4 < CH_MAX_VERIFY;
            if (d < 6 && depth < 2 && room) {
                assert_int_equal(tes_defer_begin(w), TES_OK);
                depth++;
            } else if ((d < 12 || !room) && depth > 0) {
                assert_int_equal(tes_defer_end(w), TES_OK);
                if (--depth == 0) {
                    model_flush(m);
                    for (int32_t v = 0; v < m->nverify; v++) {
                        model_verify_t *mv = &m->verify[v];
                        bool whole = true;
                        for (int32_t i = 0; i < mv->m; i++)
                            whole &= tes_alive(w, mv->dst[i]);
                        if (whole)
                            verify_copies(&f, mv->src, mv->dst, mv->m, 0);
                    }
                    m->nverify = 0;
                    for (int32_t i = 0; i < m->nlone; i++)
                        assert_false(m->doomed[i]);
                }
            }
            assert_int_equal(tes_is_deferred(w), depth > 0);
        }
        bool queued = depth > 0;
        uint32_t op = rng_below(&rng, 100);
        if (op < 20 && m->ninst < CH_MAX_INST) {
            bool second = rng_below(&rng, 3) == 0;
            tes_entity_t src[FX_MEMBERS];
            int32_t sm = tes_prefab_members(w, second ? p2 : f.prefab, src, FX_MEMBERS);
            model_inst_t *mi = &m->inst[m->ninst];
            mi->id = tes_instantiate(w, second ? p2 : f.prefab, mi->mem, CH_MAX_MEM);
            assert_true(mi->id != 0);
            assert_true(hs_insert(&ids, mi->id));
            mi->count = sm;
            for (int32_t i = 0; i < sm; i++)
                assert_true(hs_insert(&ents, mi->mem[i]));
            if (queued) {
                model_verify_t *mv = &m->verify[m->nverify++];
                memcpy(mv->src, src, (size_t)sm * sizeof src[0]);
                memcpy(mv->dst, mi->mem, (size_t)sm * sizeof src[0]);
                mv->m = sm;
            } else {
                verify_copies(&f, src, mi->mem, sm, mi->id);
            }
            m->ninst++;
        } else if (op < 30 && m->ninst + 4 <= CH_MAX_INST) {
            int32_t n = (int32_t)rng_below(&rng, 5);
            tes_instance_t got[4];
            assert_int_equal(tes_instantiate_n(w, f.prefab, n, got), TES_OK);
            for (int32_t k = 0; k < n; k++) {
                model_inst_t *mi = &m->inst[m->ninst++];
                mi->id = got[k];
                assert_true(hs_insert(&ids, got[k]));
                mi->count = tes_instance_members(w, got[k], mi->mem, CH_MAX_MEM);
                assert_int_equal(mi->count, FX_MEMBERS);
                for (int32_t i = 0; i < mi->count; i++)
                    assert_true(hs_insert(&ents, mi->mem[i]));
                if (queued) {
                    model_verify_t *mv = &m->verify[m->nverify++];
                    memcpy(mv->src, f.members, sizeof f.members);
                    memcpy(mv->dst, mi->mem, sizeof f.members);
                    mv->m = FX_MEMBERS;
                } else {
                    verify_copies(&f, f.members, mi->mem, FX_MEMBERS, got[k]);
                }
            }
        } else if (op < 50 && m->ninst > 0) {
            int32_t k = (int32_t)rng_below(&rng, (uint32_t)m->ninst);
            model_inst_t mi = m->inst[k];
            assert_int_equal(tes_instance_destroy(w, mi.id), TES_OK);
            if (queued) {
                assert_true(tes_instance_alive(w, mi.id));
                m->queue[m->nqueue++] = (model_op_t){mi.id, TES_NULL};
            } else {
                for (int32_t i = 0; i < mi.count; i++)
                    assert_false(tes_alive(w, mi.mem[i]));
                assert_false(tes_instance_alive(w, mi.id));
                m->inst[k] = m->inst[--m->ninst];
            }
        } else if (op < 62 && m->ninst > 0) {
            /* Destroy one member. */
            int32_t k = (int32_t)rng_below(&rng, (uint32_t)m->ninst);
            int32_t j = (int32_t)rng_below(&rng, (uint32_t)m->inst[k].count);
            tes_entity_t e = m->inst[k].mem[j];
            tes_instance_t id = m->inst[k].id;
            bool last = m->inst[k].count == 1;
            if (strict) {
                assert_int_equal(tes_destroy(w, e), TES_ERR_OWNED);
                assert_true(tes_alive(w, e));
            } else if (queued) {
                assert_int_equal(tes_destroy(w, e), TES_OK);
                assert_true(tes_alive(w, e));
                m->queue[m->nqueue++] = (model_op_t){0, e};
            } else {
                assert_int_equal(tes_destroy(w, e), TES_OK);
                model_remove_member(m, k, j);
                assert_int_equal(tes_instance_alive(w, id), !last);
            }
        } else if (op < 74 && m->ninst > 0 && m->nlone < CH_MAX_LONE) {
            int32_t k = (int32_t)rng_below(&rng, (uint32_t)m->ninst);
            int32_t j = (int32_t)rng_below(&rng, (uint32_t)m->inst[k].count);
            tes_entity_t e = m->inst[k].mem[j];
            tes_instance_t id = m->inst[k].id;
            bool last = m->inst[k].count == 1;
            assert_int_equal(tes_instance_detach(w, e), TES_OK);
            assert_int_equal(tes_instance_detach(w, e), TES_ERR_INVALID);
            model_remove_member(m, k, j);
            m->doomed[m->nlone] = false;
            m->lone[m->nlone++] = e;
            assert_int_equal(tes_instance_alive(w, id), !last);
        } else if (op < 86 && m->ninst > 0 && m->nlone > 0) {
            int32_t k = (int32_t)rng_below(&rng, (uint32_t)m->ninst);
            int32_t j = (int32_t)rng_below(&rng, (uint32_t)m->nlone);
            /* A strict world refuses, at the flush, to destroy an entity
             * that joined an instance after its destroy was queued: keep
             * clear of that corner. */
            /* Nor adopt an entity of a queued instantiation into an
             * instance whose destroy was queued before it: see
             * test_deferred_instantiate_survivors (a known bug). */
            bool fresh = false, target_doomed = false;
            for (int32_t v = 0; v < m->nverify; v++)
                for (int32_t i = 0; i < m->verify[v].m; i++)
                    fresh |= m->verify[v].dst[i] == m->lone[j];
            for (int32_t q = 0; q < m->nqueue; q++)
                target_doomed |= m->queue[q].inst == m->inst[k].id;
            if (m->inst[k].count < CH_MAX_MEM && !(strict && m->doomed[j]) &&
                !(fresh && target_doomed)) {
                tes_entity_t e = m->lone[j];
                assert_int_equal(tes_instance_adopt(w, m->inst[k].id, e), TES_OK);
                m->inst[k].mem[m->inst[k].count++] = e;
                model_remove_lone(m, j);
                if (m->ninst > 1) {
                    int32_t k2 = (k + 1) % m->ninst;
                    assert_int_equal(tes_instance_adopt(w, m->inst[k2].id, e), TES_ERR_INVALID);
                }
            }
        } else if (op < 93 && m->nlone > 0) {
            int32_t j = (int32_t)rng_below(&rng, (uint32_t)m->nlone);
            assert_int_equal(tes_destroy(w, m->lone[j]), TES_OK);
            if (queued) {
                m->queue[m->nqueue++] = (model_op_t){0, m->lone[j]};
                m->doomed[j] = true;
            } else {
                model_remove_lone(m, j);
            }
        } else if (m->nlone < CH_MAX_LONE) {
            tes_entity_t e = tes_spawn(w);
            assert_true(hs_insert(&ents, e));
            set_val(w, e, f.sval, step, step);
            m->doomed[m->nlone] = false;
            m->lone[m->nlone++] = e;
        }
        if (step % 50 == 0) {
            model_check(w, m, base);
            assert_int_equal(tes__world_check(w), TES_OK);
        }
    }
    while (depth > 0) {
        assert_int_equal(tes_defer_end(w), TES_OK);
        depth--;
    }
    model_flush(m);
    model_check(w, m, base);
    free(ids.slots);
    free(ents.slots);
    free(m);
    fx_close(&f);
}

static void test_churn_nonstrict(void **state)
{
    (void)state;
    run_churn(false, false, 1, 4000);
    run_churn(false, false, 77, 4000);
}

static void test_churn_strict(void **state)
{
    (void)state;
    run_churn(true, false, 2, 4000);
}

static void test_churn_deferred(void **state)
{
    (void)state;
    for (uint64_t seed = 10; seed < 16; seed++) {
        run_churn(false, true, seed, 3000);
        run_churn(true, true, seed + 100, 3000);
    }
}

/* ------------------------------------------------------------------------ */
/* Bad input and hooks                                                       */
/* ------------------------------------------------------------------------ */

static void test_bad_input(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_world_stats_t s0, s1;
    assert_int_equal(tes_world_stats(w, &s0), TES_OK);
    counters_t t0 = f.ct;
    tes_entity_t out[FX_MEMBERS] = {0};
    tes_instance_t insts[4] = {0};

    /* Not a prefab: an ordinary entity, a prefab child. */
    assert_true(tes_instantiate(w, f.outside, out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_true(tes_instantiate(w, f.members[1], out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tes_instantiate_n(w, f.members[2], 2, insts), TES_ERR_INVALID);
    assert_int_equal(tes_instantiate_n(w, f.outside, 0, NULL), TES_ERR_INVALID);
    /* An entity that merely carries TES_PREFAB is no prefab root. */
    tes_entity_t fake = tes_spawn(w);
    assert_int_equal(tes_add(w, fake, TES_PREFAB), TES_OK);
    assert_true(tes_instantiate(w, fake, out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tes_destroy(w, fake), TES_OK);
    /* Null and never-issued handles. */
    assert_true(tes_instantiate(w, TES_NULL, out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_true(tes_instantiate(w, tes_entity_make(999, 1), out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    /* Bad out / cap / n. */
    assert_true(tes_instantiate(w, f.prefab, NULL, 3) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_true(tes_instantiate(w, f.prefab, out, -1) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tes_instantiate_n(w, f.prefab, -1, insts), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_int_equal(tes_instantiate_n(w, f.prefab, INT32_MIN, insts), TES_ERR_INVALID);
    assert_int_equal(tes_instantiate_n(w, f.prefab, 2, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    /* NULL world. */
    assert_true(tes_instantiate(NULL, f.prefab, out, FX_MEMBERS) == 0);
    assert_int_equal(tes_instantiate_n(NULL, f.prefab, 1, insts), TES_ERR_INVALID);
    /* Nothing happened. */
    for (int i = 0; i < FX_MEMBERS; i++)
        assert_true(out[i] == TES_NULL);
    for (int i = 0; i < 4; i++)
        assert_true(insts[i] == 0);
    assert_int_equal(tes_world_stats(w, &s1), TES_OK);
    assert_int_equal(s1.entities_alive, s0.entities_alive);
    assert_int_equal(s1.instances_alive, 0);
    assert_int_equal(f.ct.ctor, t0.ctor);
    assert_int_equal(tes__world_check(w), TES_OK);

    /* A dead prefab: STALE, both forms; its instances live on. */
    tes_entity_t o[FX_MEMBERS];
    tes_instance_t inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    verify_copies(&f, f.members, o, FX_MEMBERS, inst);
    assert_int_equal(tes_destroy(w, f.prefab), TES_OK);
    assert_true(tes_instantiate(w, f.prefab, out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_instantiate_n(w, f.prefab, 3, insts), TES_ERR_STALE);
    assert_int_equal(tes_instantiate_n(w, f.prefab, 0, insts), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_true(tes_prefab_child(w, f.prefab) == TES_NULL);
    expect_members(w, inst, o, FX_MEMBERS);
    assert_true(((const Tracked *)tes_get(w, o[0], f.tracked_t))->ref == o[0]);
    assert_true(((const Tracked *)tes_get(w, o[1], f.tracked_s))->ref == o[0]);
    const Links *l = tes_get(w, o[2], f.links);
    assert_true(l->a == o[1] && l->b == o[4]);
    /* An instance's entity is not a prefab either. */
    assert_true(tes_instantiate(w, o[0], out, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    /* The surviving children are still prefabs (hidden) but no roots. */
    assert_true(tes_has(w, f.members[1], TES_PREFAB));
    assert_true(tes_instantiate(w, f.members[1], NULL, 0) == 0);
    fx_close(&f);
}

/* Structural lifecycle calls made from inside a hook are refused. */
typedef struct hook_probe {
    tes_entity_t prefab;
    tes_instance_t victim;
    tes_entity_t member;
    int calls;
    int rc_instantiate_n, rc_destroy, rc_detach, rc_adopt, err_instantiate, err_prefab_new,
        err_child;
    tes_instance_t got;
    tes_entity_t got_prefab, got_child;
} hook_probe_t;

static void probe_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr;
    hook_probe_t *p = ctx;
    if (!p->prefab)
        return;
    p->calls++;
    tes_instance_t tmp[2];
    p->got = tes_instantiate(w, p->prefab, NULL, 0);
    p->err_instantiate = tes_last_error(w);
    p->rc_instantiate_n = tes_instantiate_n(w, p->prefab, 2, tmp);
    p->rc_destroy = tes_instance_destroy(w, p->victim);
    p->rc_detach = tes_instance_detach(w, p->member);
    p->rc_adopt = tes_instance_adopt(w, p->victim, e);
    p->got_prefab = tes_prefab_new(w);
    p->err_prefab_new = tes_last_error(w);
    p->got_child = tes_prefab_child(w, p->prefab);
    p->err_child = tes_last_error(w);
}

static void test_calls_from_hooks(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_probe_t probe;
    memset(&probe, 0, sizeof probe);
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "Probe";
    d.size = sizeof(int32_t);
    d.hooks.on_add = probe_on_add;
    d.hooks.ctx = &probe;
    tes_comp_t pc = tes_component(w, &d);
    assert_true(pc != 0);
    tes_comp_t v = reg(w, "V", sizeof(Val), TES_STORAGE_TABLE, false, NULL, NULL, 0);
    tes_entity_t pf = tes_prefab_new(w);
    set_val(w, pf, v, 1, 2);
    tes_entity_t pch = tes_prefab_child(w, pf);
    tes_entity_t o[2];
    tes_instance_t victim = tes_instantiate(w, pf, o, 2);
    int32_t alive0 = tes_entity_count(w);
    /* The prefab gets the probe, with probing still off. */
    assert_int_equal(tes_add(w, pch, pc), TES_OK);
    probe.prefab = pf;
    probe.victim = victim;
    probe.member = o[1];
    /* Instantiating fires on_add on the copy: the nested calls all fail. */
    tes_entity_t p[2];
    tes_instance_t inst = tes_instantiate(w, pf, p, 2);
    assert_true(inst != 0);
    assert_int_equal(probe.calls, 1);
    assert_true(probe.got == 0);
    assert_int_equal(probe.err_instantiate, TES_ERR_BUSY);
    assert_int_equal(probe.rc_instantiate_n, TES_ERR_BUSY);
    assert_int_equal(probe.rc_destroy, TES_ERR_BUSY);
    assert_int_equal(probe.rc_detach, TES_ERR_BUSY);
    assert_int_equal(probe.rc_adopt, TES_ERR_BUSY);
    assert_true(probe.got_prefab == TES_NULL);
    assert_int_equal(probe.err_prefab_new, TES_ERR_BUSY);
    assert_true(probe.got_child == TES_NULL);
    assert_int_equal(probe.err_child, TES_ERR_BUSY);
    /* Nothing but the instance itself happened. */
    assert_int_equal(tes_entity_count(w), alive0 + 2);
    expect_members(w, victim, o, 2);
    expect_members(w, inst, p, 2);
    assert_int_equal(tes_prefab_members(w, pf, NULL, 0), 2);
    assert_int_equal(instances_alive(w), 2);
    /* Bulk: once per copy. */
    tes_instance_t b[3];
    assert_int_equal(tes_instantiate_n(w, pf, 3, b), TES_OK);
    assert_int_equal(probe.calls, 4);
    assert_int_equal(instances_alive(w), 5);
    assert_int_equal(tes_entity_count(w), alive0 + 8);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* A prefab of one empty root, and a prefab whose root has only sparse
 * components: the copies live in the virtual root table. */
static void test_empty_and_sparse_only_prefabs(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_entity_t empty = tes_prefab_new(w);
    tes_entity_t e[1];
    tes_instance_t i1 = tes_instantiate(w, empty, e, 1);
    assert_true(i1 != 0);
    assert_int_equal(tes_components_of(w, e[0], NULL, 0), 0);
    assert_true(tes_instance_of(w, e[0]) == i1);
    tes_instance_t many[50];
    assert_int_equal(tes_instantiate_n(w, empty, 50, many), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* The empty copies can grow components afterwards. */
    tes_entity_t m0[1];
    assert_int_equal(tes_instance_members(w, many[7], m0, 1), 1);
    set_val(w, m0[0], f.val, 1, 2);
    set_val(w, m0[0], f.sval, 3, 4);
    assert_int_equal(tes__world_check(w), TES_OK);

    tes_entity_t sp = tes_prefab_new(w);
    tes_entity_t spc = tes_prefab_child(w, sp);
    set_tracked(w, sp, f.tracked_s, 5, spc);
    set_links(w, spc, f.slinks, sp, spc, f.outside, 6);
    tes_instance_t si[20];
    assert_int_equal(tes_instantiate_n(w, sp, 20, si), TES_OK);
    tes_entity_t src[] = {sp, spc};
    for (int k = 0; k < 20; k++) {
        tes_entity_t o[2];
        assert_int_equal(tes_instance_members(w, si[k], o, 2), 2);
        verify_copies(&f, src, o, 2, si[k]);
    }
    for (int k = 0; k < 20; k += 2)
        assert_int_equal(tes_instance_destroy(w, si[k]), TES_OK);
    assert_int_equal(count_query(w, f.slinks, 0), 10);
    assert_int_equal(tes__world_check(w), TES_OK);
    fx_close(&f);
}

/* The prefab changes after instantiation do not reach existing copies;
 * later instantiations see the prefab as it is. */
static void test_prefab_edits(void **state)
{
    (void)state;
    fixture_t f;
    fx_open(&f, NULL);
    tes_world_t *w = f.w;
    tes_entity_t a[FX_MEMBERS];
    tes_instance_t ia = tes_instantiate(w, f.prefab, a, FX_MEMBERS);
    set_val(w, f.members[0], f.val, 42, 42);
    assert_int_equal(tes_remove(w, f.members[1], f.tracked_s), TES_OK);
    set_tracked(w, f.members[3], f.tracked_s, 33, f.members[2]); /* empty member gains one */
    tes_entity_t extra = tes_prefab_child(w, f.prefab);
    set_links(w, extra, f.links, f.members[0], extra, f.members[3], 99);
    tes_entity_t b[FX_MEMBERS + 1];
    tes_instance_t ib = tes_instantiate(w, f.prefab, b, FX_MEMBERS + 1);
    assert_int_equal(((const Val *)tes_get(w, a[0], f.val))->x, 0);
    assert_int_equal(((const Val *)tes_get(w, b[0], f.val))->x, 42);
    assert_true(tes_has(w, a[1], f.tracked_s));
    assert_false(tes_has(w, b[1], f.tracked_s));
    assert_false(tes_has(w, a[3], f.tracked_s));
    const Tracked *t = tes_get(w, b[3], f.tracked_s);
    assert_true(t && t->value == 33 && t->ref == b[2]);
    tes_entity_t src[FX_MEMBERS + 1];
    assert_int_equal(tes_prefab_members(w, f.prefab, src, FX_MEMBERS + 1), FX_MEMBERS + 1);
    verify_copies(&f, src, b, FX_MEMBERS + 1, ib);
    const Links *l = tes_get(w, b[FX_MEMBERS], f.links);
    assert_true(l->a == b[0] && l->b == b[FX_MEMBERS] && l->c == b[3]);
    expect_members(w, ia, a, FX_MEMBERS);
    fx_close(&f);
}


/* ------------------------------------------------------------------------ */
/* Limits and allocation failures                                            */
/* ------------------------------------------------------------------------ */

/* entity_limit: an instantiation that does not fit fails whole with
 * TES_ERR_FULL. */
static void test_entity_limit_full(void **state)
{
    (void)state;
    tes_world_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.entity_limit = 22;
    fixture_t f;
    fx_open(&f, &desc); /* outside + 5 members: 6 slots */
    tes_world_t *w = f.w;
    tes_instance_t insts[4] = {0};
    counters_t t0 = f.ct;
    assert_int_equal(tes_instantiate_n(w, f.prefab, 4, insts), TES_ERR_FULL); /* 26 > 22 */
    assert_int_equal(tes_last_error(w), TES_ERR_FULL);
    assert_true(insts[0] == 0);
    assert_int_equal(tes_entity_count(w), 6);
    assert_int_equal(instances_alive(w), 0);
    assert_int_equal(f.ct.ctor, t0.ctor);
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_int_equal(tes_instantiate_n(w, f.prefab, 3, insts), TES_OK); /* 21 */
    check_n_instances(&f, insts, 3);
    tes_entity_t o[FX_MEMBERS] = {0};
    assert_true(tes_instantiate(w, f.prefab, o, FX_MEMBERS) == 0);
    assert_int_equal(tes_last_error(w), TES_ERR_FULL);
    assert_true(o[0] == TES_NULL);
    assert_int_equal(tes_entity_count(w), 21);
    assert_int_equal(instances_alive(w), 3);
    /* Freed slots make room again. */
    assert_int_equal(tes_instance_destroy(w, insts[1]), TES_OK);
    tes_instance_t again = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
    assert_true(again != 0);
    verify_copies(&f, f.members, o, FX_MEMBERS, again);
    /* Absurd counts fail cleanly too. */
    tes_instance_t *huge = malloc(sizeof *huge);
    assert_non_null(huge);
    assert_true(tes_instantiate_n(w, f.prefab, INT32_MAX, huge) < 0);
    assert_int_equal(instances_alive(w), 3);
    free(huge);
    fx_close(&f);
}

enum { OP_INSTANTIATE, OP_INSTANTIATE_N, OP_DEFERRED, OP_ADOPT, OP_DEFERRED_DESTROY, OP_COUNT };

typedef struct snapshot {
    int32_t entities;
    uint32_t instances;
    counters_t ct, cs;
    int32_t group, members;
} snapshot_t;

static snapshot_t take(const fixture_t *f, tes_query_t *group, tes_instance_t inst)
{
    snapshot_t s;
    s.entities = tes_entity_count(f->w);
    s.instances = instances_alive(f->w);
    s.ct = f->ct;
    s.cs = f->cs;
    s.group = tes_query_count(group);
    s.members = tes_instance_members(f->w, inst, NULL, 0);
    return s;
}

static void same(const snapshot_t *a, const snapshot_t *b)
{
    assert_int_equal(a->entities, b->entities);
    assert_int_equal(a->instances, b->instances);
    assert_int_equal(a->ct.ctor, b->ct.ctor);
    assert_int_equal(a->ct.dtor, b->ct.dtor);
    assert_int_equal(a->ct.copy, b->ct.copy);
    assert_int_equal(a->ct.on_add, b->ct.on_add);
    assert_int_equal(a->cs.ctor, b->cs.ctor);
    assert_int_equal(a->cs.dtor, b->cs.dtor);
    assert_int_equal(a->cs.on_add, b->cs.on_add);
    assert_int_equal(a->group, b->group);
    assert_int_equal(a->members, b->members);
}

/* Fails the k-th allocation of one lifecycle call, for every k: the call
 * reports TES_ERR_NOMEM and leaves the world exactly as it was (or
 * succeeds completely), and every byte comes back at tes_world_free. */
static void test_allocation_failures(void **state)
{
    (void)state;
    for (int op = 0; op < OP_COUNT; op++) {
        bool finished = false;
        for (int64_t k = 1; k < 2000 && !finished; k++) {
            ca_state_t fa;
            ca_init(&fa, 0);
            tes_world_desc_t desc = {.allocator = ca_allocator(&fa)};
            fixture_t f;
            fx_open(&f, &desc);
            tes_world_t *w = f.w;
            tes_query_desc_t qd;
            memset(&qd, 0, sizeof qd);
            qd.terms[0].comp = f.slinks;
            qd.terms[1].comp = f.tracked_s;
            qd.flags = TES_QUERY_OWNING_GROUP;
            tes_query_t *group = tes_query_new(w, &qd);
            assert_non_null(group);
            tes_instance_t existing[2];
            assert_int_equal(tes_instantiate_n(w, f.prefab, 2, existing), TES_OK);
            tes_entity_t lone[300];
            for (int i = 0; i < 300; i++)
                lone[i] = tes_spawn(w);
            snapshot_t before = take(&f, group, existing[0]);
            tes_entity_t o[FX_MEMBERS] = {0};
            tes_instance_t got[40] = {0};
            tes_instance_t inst = 0;
            int rc = TES_OK;
            ca_fail_in(&fa, (uint64_t)k);
            switch (op) {
            case OP_INSTANTIATE:
                inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
                rc = inst ? TES_OK : tes_last_error(w);
                break;
            case OP_INSTANTIATE_N:
                rc = tes_instantiate_n(w, f.prefab, 40, got);
                break;
            case OP_DEFERRED:
                assert_int_equal(tes_defer_begin(w), TES_OK);
                inst = tes_instantiate(w, f.prefab, o, FX_MEMBERS);
                rc = inst ? TES_OK : tes_last_error(w);
                if (rc) {
                    assert_int_equal(tes_defer_end(w), TES_OK);
                } else if (tes_defer_end(w) != TES_OK) {
                    /* The flush ran out of memory: the instance exists,
                     * its entities stay empty; the world stays sound. */
                    assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
                    assert_true(tes_instance_alive(w, inst));
                    fa.fail_at = 0;
                    assert_int_equal(tes__world_check(w), TES_OK);
                    tes_query_free(group);
                    fx_close(&f);
                    assert_int_equal(fa.live_blocks, 0);
                    continue;
                }
                break;
            case OP_ADOPT:
                rc = tes_instance_adopt(w, existing[0], lone[299]);
                break;
            case OP_DEFERRED_DESTROY:
                assert_int_equal(tes_defer_begin(w), TES_OK);
                rc = tes_instance_destroy(w, existing[1]);
                assert_int_equal(tes_defer_end(w), TES_OK);
                break;
            }
            bool reached = fa.calls >= fa.fail_at;
            fa.fail_at = 0;
            if (rc != TES_OK) {
                assert_int_equal(rc, TES_ERR_NOMEM);
                assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
                snapshot_t after = take(&f, group, existing[0]);
                same(&before, &after);
                assert_true(o[0] == TES_NULL && got[0] == 0);
                assert_true(tes_instance_of(w, lone[299]) == 0);
                assert_true(tes_instance_alive(w, existing[1]));
                assert_int_equal(tes__world_check(w), TES_OK);
                /* The same call succeeds once memory is back. */
                if (op == OP_INSTANTIATE_N)
                    assert_int_equal(tes_instantiate_n(w, f.prefab, 40, got), TES_OK);
                else if (op == OP_ADOPT)
                    assert_int_equal(tes_instance_adopt(w, existing[0], lone[299]), TES_OK);
                else if (op == OP_DEFERRED_DESTROY)
                    assert_int_equal(tes_instance_destroy(w, existing[1]), TES_OK);
                else
                    assert_true(tes_instantiate(w, f.prefab, o, FX_MEMBERS) != 0);
            } else {
                finished = !reached;
            }
            /* Whatever happened, the result is complete now. */
            if (op == OP_INSTANTIATE || op == OP_DEFERRED) {
                inst = tes_instance_of(w, o[0]);
                verify_copies(&f, f.members, o, FX_MEMBERS, inst);
            } else if (op == OP_INSTANTIATE_N) {
                check_n_instances(&f, got, 40);
                assert_int_equal(tes_query_count(group), before.group + 80);
            } else if (op == OP_ADOPT) {
                assert_true(tes_instance_of(w, lone[299]) == existing[0]);
            } else {
                assert_false(tes_instance_alive(w, existing[1]));
            }
            assert_int_equal(tes__world_check(w), TES_OK);
            tes_query_free(group);
            fx_close(&f);
            assert_int_equal(fa.live_blocks, 0);
        }
        assert_true(finished);
    }
}

/* Prefab creation on a fresh world, failing each allocation in turn. */
static void test_prefab_allocation_failures(void **state)
{
    (void)state;
    bool finished = false;
    for (int64_t k = 1; k < 500 && !finished; k++) {
        ca_state_t fa;
        ca_init(&fa, 0);
        tes_world_desc_t desc = {.allocator = ca_allocator(&fa)};
        tes_world_t *w = tes_world_new(&desc);
        assert_non_null(w);
        tes_comp_t v = reg(w, "V", sizeof(Val), TES_STORAGE_TABLE, false, NULL, NULL, 0);
        tes_entity_t e = tes_spawn(w);
        ca_fail_in(&fa, (uint64_t)k);
        tes_entity_t pf = tes_prefab_new(w);
        tes_entity_t ch = pf ? tes_prefab_child(w, pf) : TES_NULL;
        tes_entity_t ch2 = ch ? tes_prefab_child(w, pf) : TES_NULL;
        bool reached = fa.calls >= fa.fail_at;
        fa.fail_at = 0;
        if (!pf || !ch || !ch2) {
            assert_int_equal(tes_last_error(w), TES_ERR_NOMEM);
            int32_t want = 1 + (pf != 0) + (ch != 0);
            assert_int_equal(tes_entity_count(w), want);
            if (pf)
                assert_int_equal(tes_prefab_members(w, pf, NULL, 0), want - 1);
            assert_int_equal(tes__world_check(w), TES_OK);
            if (!pf)
                pf = tes_prefab_new(w);
            if (!ch)
                ch = tes_prefab_child(w, pf);
            if (!ch2)
                ch2 = tes_prefab_child(w, pf);
        } else {
            finished = !reached;
        }
        assert_true(pf && ch && ch2);
        tes_entity_t m[3];
        assert_int_equal(tes_prefab_members(w, pf, m, 3), 3);
        assert_true(m[0] == pf && m[1] == ch && m[2] == ch2);
        set_val(w, ch2, v, 1, 2);
        tes_entity_t o[3];
        assert_true(tes_instantiate(w, pf, o, 3) != 0);
        assert_int_equal(((const Val *)tes_get(w, o[2], v))->y, 2);
        assert_true(tes_alive(w, e));
        assert_int_equal(tes__world_check(w), TES_OK);
        tes_world_free(w);
        assert_int_equal(fa.live_blocks, 0);
    }
    assert_true(finished);
}


/* on_add observers run once the whole instance is built: they see their
 * instance, every member, and every member's (remapped) components. */
typedef struct Obs {
    tes_entity_t peer; /* entity field: the other member */
    int32_t which;
    int32_t spare;
} Obs;

typedef struct obs_probe {
    tes_comp_t obs, val;
    int calls, bad;
} obs_probe_t;

static void obs_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    obs_probe_t *p = ctx;
    const Obs *o = ptr;
    p->calls++;
    if (tes_has(w, e, TES_PREFAB))
        return; /* the prefab itself being built */
    tes_instance_t inst = tes_instance_of(w, e);
    tes_entity_t m[4];
    if (!inst || tes_instance_members(w, inst, m, 4) != 2) {
        p->bad++;
        return;
    }
    /* The peer is the other member, already complete. */
    tes_entity_t peer = m[0] == e ? m[1] : m[0];
    const Obs *po = tes_get(w, peer, p->obs);
    const Val *pv = tes_get(w, peer, p->val);
    if (!o || o->peer != peer || !po || po->peer != e || !pv || pv->x != 100 + po->which)
        p->bad++;
}

static void test_observers_see_finished_instance(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    obs_probe_t probe = {0, 0, 0, 0};
    size_t fields[] = {offsetof(Obs, peer)};
    tes_hooks_t h;
    memset(&h, 0, sizeof h);
    h.on_add = obs_on_add;
    h.ctx = &probe;
    probe.val = reg(w, "ObsVal", sizeof(Val), TES_STORAGE_SPARSE, false, NULL, NULL, 0);
    probe.obs = reg(w, "Obs", sizeof(Obs), TES_STORAGE_TABLE, false, &h, fields, 1);
    tes_entity_t pf = tes_prefab_new(w);
    tes_entity_t ch = tes_prefab_child(w, pf);
    set_val(w, pf, probe.val, 100, 0);
    set_val(w, ch, probe.val, 101, 0);
    Obs a = {ch, 0, 0}, b = {pf, 1, 0};
    assert_int_equal(tes_set(w, pf, probe.obs, &a), TES_OK);
    assert_int_equal(tes_set(w, ch, probe.obs, &b), TES_OK);
    probe.calls = 0;
    assert_true(tes_instantiate(w, pf, NULL, 0) != 0);
    assert_int_equal(probe.calls, 2);
    tes_instance_t n[7];
    assert_int_equal(tes_instantiate_n(w, pf, 7, n), TES_OK);
    assert_int_equal(probe.calls, 16);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_true(tes_instantiate(w, pf, NULL, 0) != 0);
    assert_int_equal(tes_instantiate_n(w, pf, 3, n), TES_OK);
    assert_int_equal(probe.calls, 16);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(probe.calls, 24);
    assert_int_equal(probe.bad, 0);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Destroyed prefabs and destroyed prefab children give their records
 * back: a world that keeps creating and destroying prefabs (levels,
 * procedurally built templates) must not grow without bound. */
static void test_prefab_records_reclaimed(void **state)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    *state = w; /* freed by the teardown even if an assertion fails */
    tes_comp_t v = reg(w, "V", sizeof(Val), TES_STORAGE_TABLE, false, NULL, NULL, 0);
    tes_world_stats_t st;
    uint64_t warm = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 10000; i++) {
            tes_entity_t p = tes_prefab_new(w);
            tes_entity_t c = tes_prefab_child(w, p);
            set_val(w, c, v, i, i);
            tes_instance_t inst = tes_instantiate(w, p, NULL, 0);
            assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
            assert_int_equal(tes_destroy(w, c), TES_OK);
            assert_int_equal(tes_destroy(w, p), TES_OK);
        }
        assert_int_equal(tes_world_stats(w, &st), TES_OK);
        assert_int_equal(st.entities_alive, 0);
        if (round == 0)
            warm = st.bytes_allocated;
    }
    /* 10,000 more prefabs, none alive: at most a few KiB of slack. */
    assert_in_range(st.bytes_allocated, 0, warm + 4096);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    *state = NULL;
}

static void test_prefab_children_reclaimed(void **state)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    *state = w; /* freed by the teardown even if an assertion fails */
    tes_world_stats_t st;
    uint64_t warm = 0;
    /* One long-lived prefab whose children come and go: its member list
     * (and the work of every tes_instantiate, which walks it) must not
     * grow with children long dead. */
    tes_entity_t p = tes_prefab_new(w);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 10000; i++) {
            tes_entity_t c = tes_prefab_child(w, p);
            assert_int_equal(tes_destroy(w, c), TES_OK);
        }
        assert_int_equal(tes_world_stats(w, &st), TES_OK);
        if (round == 0)
            warm = st.bytes_allocated;
    }
    assert_int_equal(tes_prefab_members(w, p, NULL, 0), 1);
    assert_in_range(st.bytes_allocated, 0, warm + 4096);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    *state = NULL;
}


/* A queued instantiation whose batch loses one entity before the flush
 * (here: the entity is adopted into an instance whose destroy was queued
 * earlier, so the flush destroys it first) must still give every
 * surviving entity its components. */
static void test_deferred_instantiate_survivors(void **state)
{
    /* Heap fixture, freed by the teardown even if an assertion fails. */
    fixture_t *fp = calloc(1, sizeof *fp);
    assert_non_null(fp);
    *state = fp;
    fx_open(fp, NULL);
    fixture_t f = *fp; /* read-only copy for the helpers */
    tes_world_t *w = fp->w;
    tes_instance_t doomed = tes_instantiate(w, f.prefab, NULL, 0);
    assert_true(doomed != 0);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_instance_destroy(w, doomed), TES_OK);
    tes_instance_t b[3];
    assert_int_equal(tes_instantiate_n(w, f.prefab, 3, b), TES_OK);
    tes_entity_t o[FX_MEMBERS];
    assert_int_equal(tes_instance_members(w, b[0], o, FX_MEMBERS), FX_MEMBERS);
    assert_int_equal(tes_instance_detach(w, o[1]), TES_OK);
    assert_int_equal(tes_instance_adopt(w, doomed, o[1]), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_instance_alive(w, doomed));
    assert_false(tes_alive(w, o[1]));
    /* The other instances of the batch are untouched by all this. */
    for (int k = 1; k < 3; k++) {
        tes_entity_t e[FX_MEMBERS];
        assert_int_equal(tes_instance_members(w, b[k], e, FX_MEMBERS), FX_MEMBERS);
        verify_copies(&f, f.members, e, FX_MEMBERS, b[k]);
    }
    /* And b[0]'s survivors got their own components. */
    for (int i = 0; i < FX_MEMBERS; i++) {
        if (i == 1)
            continue;
        assert_int_equal(tes_components_of(w, o[i], NULL, 0),
                         tes_components_of(w, f.members[i], NULL, 0) - 1);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    fx_close(fp);
}

/* Teardowns for tests that may fail mid-way: free what *state holds. */
static int teardown_world(void **state)
{
    tes_world_free(*state);
    *state = NULL;
    return 0;
}

static int teardown_fixture(void **state)
{
    fixture_t *f = *state;
    if (f) {
        tes_world_free(f->w);
        free(f);
    }
    *state = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefab_members),
        cmocka_unit_test(test_instantiate_hooks_balanced),
        cmocka_unit_test(test_remap_references),
        cmocka_unit_test(test_remap_eight_fields),
        cmocka_unit_test(test_out_order_and_cap),
        cmocka_unit_test(test_instances_visible_prefabs_not),
        cmocka_unit_test(test_instantiate_n),
        cmocka_unit_test(test_instantiate_n_groups),
        cmocka_unit_test(test_strict_lifecycle),
        cmocka_unit_test(test_nonstrict_member_destroy),
        cmocka_unit_test(test_detach_adopt),
        cmocka_unit_test(test_adopt_high_index),
        cmocka_unit_test(test_destroy_during_iteration),
        cmocka_unit_test(test_instantiate_deferred),
        cmocka_unit_test(test_free_with_pending_instantiate),
        cmocka_unit_test_teardown(test_deferred_instantiate_survivors, teardown_fixture),
        cmocka_unit_test(test_stale_instance_ids),
        cmocka_unit_test(test_stats_instances_alive),
        cmocka_unit_test(test_weak_references),
        cmocka_unit_test(test_churn_nonstrict),
        cmocka_unit_test(test_churn_strict),
        cmocka_unit_test(test_churn_deferred),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_calls_from_hooks),
        cmocka_unit_test(test_empty_and_sparse_only_prefabs),
        cmocka_unit_test(test_prefab_edits),
        cmocka_unit_test(test_entity_limit_full),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_prefab_allocation_failures),
        cmocka_unit_test(test_observers_see_finished_instance),
        cmocka_unit_test_teardown(test_prefab_records_reclaimed, teardown_world),
        cmocka_unit_test_teardown(test_prefab_children_reclaimed, teardown_world),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
