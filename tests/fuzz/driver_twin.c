/*
 * The twin-world property test: a deferred batch must apply exactly as the
 * same calls made one after another would. Two worlds get the same
 * components (hook-free, with observers that read other components, sparse,
 * with ctor/copy/dtor hooks, with an entity field) and the same calls: the
 * deferred world inside tes_defer_begin/tes_defer_end, its twin at once.
 * After each batch the two are compared entity by entity (liveness,
 * components, values, enabled state, instance membership), together with
 * the observers' logs (hook, component, entity, the value it saw, the
 * values of the entity's other components it read and a component of one
 * watched entity, which may be any other) and the balance of
 * constructed values. A deferred tes_ensure's pointer is also compared with
 * its twin's the moment it is returned: its initial value must be the one
 * the immediate calls give.
 *
 * Handles are compared through logical ids: a destroy frees its index at
 * once in the twin but only at the flush in the deferred world, so a spawn
 * later in the batch may get a different index there. Calls are made only
 * on entities alive in the twin (those are alive in the deferred world
 * too). Three documented rules of deferred mode are kept to, not tested
 * here: writes through tes_get_mut land at once (done only first in a
 * batch), tes_destroy_matching takes its matches at the call (first in a
 * batch too), and an ensure pointer is written before the next call.
 *
 * Chosen by fz_config_t.twin (seeds with FZ_TWIN_SEED_BIT).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver.h"
#include "tessera.h"

#define TW_MAX 160     /* logical entities */
#define TW_LOG 4096    /* observer calls logged per batch and world */
#define TW_BATCH 14    /* calls per batch, at most */
#define TW_POP 48      /* live entities the op mix steers towards */

enum { TW_A, TW_H, TW_S, TW_V, TW_R, TW_T, TW_NCOMP };
static const char *const tw_names[TW_NCOMP] = {"A", "H", "S", "V", "R", "T"};

typedef struct tw_v { int32_t v; int32_t magic; } tw_v_t;
typedef struct tw_r { tes_entity_t ref; int32_t x; int32_t pad; } tw_r_t;
#define TW_MAGIC 0x5eed

typedef struct tw_log {
    uint8_t hook; /* 0 on_add, 1 on_set, 2 on_remove */
    uint8_t comp;
    tes_entity_t e;
    int32_t value, a, h; /* the value seen; A and H of e (INT32_MIN: none) */
    int32_t other;       /* A of the watched entity, another one */
    int lid;             /* e's logical id, filled in when compared */
} tw_log_t;

typedef struct tw_side {
    tes_world_t *w;
    tes_comp_t id[TW_NCOMP];
    tes_query_t *q[2]; /* queries destroy_matching uses */
    tes_entity_t h[TW_MAX]; /* logical id -> handle */
    tes_entity_t watch;     /* the entity every observer also reads */
    tw_log_t log[TW_LOG];
    uint32_t nlog;
    int64_t live_v; /* V values constructed and not destroyed */
    bool bad_v;     /* a V hook saw an unconstructed value */
} tw_side_t;

typedef struct tw {
    fz_source_t *src;
    fz_result_t *res;
    const fz_config_t *cfg;
    tw_side_t s[2]; /* 0 deferred, 1 immediate */
    bool used[TW_MAX];
    bool prefab[TW_MAX]; /* a prefab root */
    /* Observer calls of a tes_destroy_matching first in the batch: their
     * order follows rows, whose order the two worlds need not share, so
     * they are compared sorted. */
    uint32_t unordered;
    uint64_t step;
    const char *op;
    char trace[96]; /* the last call's arguments, for --trace-from */
} tw_t;

static uint32_t draw(tw_t *t, uint32_t bound) { return fz_draw(t->src, bound); }

static void fail(tw_t *t, const char *fmt, ...)
{
    if (t->res->diverged)
        return;
    t->res->diverged = true;
    t->res->step = t->step;
    int n = snprintf(t->res->msg, sizeof t->res->msg, "twin %s: ", t->op ? t->op : "?");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->res->msg + n, sizeof t->res->msg - (size_t)n, fmt, ap);
    va_end(ap);
}

static bool failed(const tw_t *t) { return t->res->diverged; }

/* ------------------------------------------------------------------ hooks */

static int32_t read_i32(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    const int32_t *p = tes_get(w, e, c);
    return p ? *p : INT32_MIN;
}

static void log_hook(tw_side_t *s, uint8_t hook, uint8_t comp, tes_entity_t e, const void *ptr)
{
    if (s->nlog == TW_LOG)
        return;
    tw_log_t *l = &s->log[s->nlog++];
    l->hook = hook;
    l->comp = comp;
    l->e = e;
    l->value = ptr ? *(const int32_t *)ptr : INT32_MIN;
    l->a = read_i32(s->w, e, s->id[TW_A]);
    l->h = read_i32(s->w, e, s->id[TW_H]);
    l->other = read_i32(s->w, s->watch, s->id[TW_A]);
}

#define TW_OBSERVERS(C)                                                                        \
    static void on_add_##C(tes_world_t *w, tes_entity_t e, void *p, void *ctx)                 \
    {                                                                                          \
        (void)w;                                                                               \
        log_hook(ctx, 0, TW_##C, e, p);                                                        \
    }                                                                                          \
    static void on_set_##C(tes_world_t *w, tes_entity_t e, void *p, void *ctx)                 \
    {                                                                                          \
        (void)w;                                                                               \
        log_hook(ctx, 1, TW_##C, e, p);                                                        \
    }                                                                                          \
    static void on_remove_##C(tes_world_t *w, tes_entity_t e, void *p, void *ctx)              \
    {                                                                                          \
        (void)w;                                                                               \
        log_hook(ctx, 2, TW_##C, e, p);                                                        \
    }
TW_OBSERVERS(H)
TW_OBSERVERS(S)

static void v_ctor(void *ptr, int32_t n, void *ctx)
{
    tw_side_t *s = ctx;
    tw_v_t *v = ptr;
    for (int32_t i = 0; i < n; i++)
        v[i] = (tw_v_t){7, TW_MAGIC};
    s->live_v += n;
}

static void v_dtor(void *ptr, int32_t n, void *ctx)
{
    tw_side_t *s = ctx;
    tw_v_t *v = ptr;
    for (int32_t i = 0; i < n; i++) {
        s->bad_v |= v[i].magic != TW_MAGIC;
        v[i].magic = 0;
    }
    s->live_v -= n;
}

static void v_copy(void *dst, const void *src, int32_t n, void *ctx)
{
    tw_side_t *s = ctx;
    tw_v_t *d = dst;
    const tw_v_t *f = src;
    for (int32_t i = 0; i < n; i++) {
        s->bad_v |= d[i].magic != TW_MAGIC || f[i].magic != TW_MAGIC;
        d[i].v = f[i].v;
    }
}

static bool side_setup(tw_side_t *s)
{
    memset(s, 0, sizeof *s);
    s->w = tes_world_new(NULL);
    if (!s->w)
        return false;
    tes_component_desc_t d[TW_NCOMP];
    memset(d, 0, sizeof d);
    for (int k = 0; k < TW_NCOMP; k++)
        d[k].name = tw_names[k];
    d[TW_A].size = d[TW_H].size = d[TW_S].size = sizeof(int32_t);
    d[TW_H].hooks = (tes_hooks_t){.on_add = on_add_H, .on_set = on_set_H,
                                  .on_remove = on_remove_H, .ctx = s};
    d[TW_S].storage = TES_STORAGE_SPARSE;
    d[TW_S].hooks = (tes_hooks_t){.on_add = on_add_S, .on_set = on_set_S,
                                  .on_remove = on_remove_S, .ctx = s};
    d[TW_V].size = sizeof(tw_v_t);
    d[TW_V].hooks = (tes_hooks_t){.ctor = v_ctor, .dtor = v_dtor, .copy = v_copy, .ctx = s};
    d[TW_R].size = sizeof(tw_r_t);
    d[TW_R].entity_fields[0] = offsetof(tw_r_t, ref);
    d[TW_R].entity_field_count = 1;
    for (int k = 0; k < TW_NCOMP; k++)
        if (!(s->id[k] = tes_component(s->w, &d[k])))
            return false;
    tes_query_desc_t qd = {.terms = {{s->id[TW_T], TES_AND, TES_IN}}};
    s->q[0] = tes_query_new(s->w, &qd);
    qd.terms[0].comp = s->id[TW_S];
    qd.terms[1] = (tes_term_t){s->id[TW_A], TES_AND, TES_IN};
    s->q[1] = tes_query_new(s->w, &qd);
    return s->q[0] && s->q[1];
}

/* ------------------------------------------------------------------ entities */

/* The logical id of handle e in side s (-1: none). */
static int logical(const tw_side_t *s, const tw_t *t, tes_entity_t e)
{
    if (e == TES_NULL)
        return -1;
    for (int i = 0; i < TW_MAX; i++)
        if (t->used[i] && s->h[i] == e)
            return i;
    return -1;
}

/* A new logical id for the handles made by one call (-1: none free). */
static int fresh(tw_t *t, tes_entity_t d, tes_entity_t i)
{
    if ((d == TES_NULL) != (i == TES_NULL)) {
        fail(t, "one world made an entity, the other did not");
        return -1;
    }
    if (d == TES_NULL)
        return -1;
    for (int k = 0; k < TW_MAX; k++)
        if (!t->used[k]) {
            t->used[k] = true;
            t->prefab[k] = false;
            t->s[0].h[k] = d;
            t->s[1].h[k] = i;
            return k;
        }
    fail(t, "out of logical ids");
    return -1;
}

static uint32_t population(const tw_t *t)
{
    uint32_t n = 0;
    for (int i = 0; i < TW_MAX; i++)
        n += t->used[i] && tes_alive(t->s[1].w, t->s[1].h[i]);
    return n;
}

/* A logical entity alive in the immediate twin (-1: none). */
static int pick(tw_t *t)
{
    int live[TW_MAX], n = 0;
    for (int i = 0; i < TW_MAX; i++)
        if (t->used[i] && tes_alive(t->s[1].w, t->s[1].h[i]))
            live[n++] = i;
    return n ? live[draw(t, (uint32_t)n)] : -1;
}

static int pick_prefab(tw_t *t)
{
    int live[TW_MAX], n = 0;
    for (int i = 0; i < TW_MAX; i++)
        if (t->used[i] && t->prefab[i] && tes_alive(t->s[1].w, t->s[1].h[i]))
            live[n++] = i;
    return n ? live[draw(t, (uint32_t)n)] : -1;
}

static int data_comp(tw_t *t) { return (int)draw(t, TW_T); } /* A, H, S, V or R */

/* Writes logical value x into a value of component k in side s (R's
 * reference: logical entity x % TW_MAX when used, else none). */
static void make_value(tw_t *t, int side, int k, int32_t x, void *out)
{
    if (k == TW_V)
        *(tw_v_t *)out = (tw_v_t){x, TW_MAGIC};
    else if (k == TW_R) {
        int ref = (int)((uint32_t)x % TW_MAX);
        *(tw_r_t *)out = (tw_r_t){t->used[ref] ? t->s[side].h[ref] : TES_NULL, x, 0};
    } else
        *(int32_t *)out = x;
}

/* Adds x to the value p of component k (a write through an ensure). */
static void bump(int k, void *p, int32_t x)
{
    if (k == TW_R)
        ((tw_r_t *)p)->x += x;
    else /* A, H, S: the int; V: its first field */
        *(int32_t *)p += x;
}

/* Logical form of value p of component k of side `side`, for comparing. */
static void logical_value(const tw_t *t, int side, int k, const void *p, int32_t out[2])
{
    out[1] = 0;
    if (k == TW_R) {
        out[0] = ((const tw_r_t *)p)->x;
        out[1] = logical(&t->s[side], t, ((const tw_r_t *)p)->ref);
    } else
        out[0] = *(const int32_t *)p;
}

/* ------------------------------------------------------------------ compare */

static int log_order(const void *a, const void *b)
{
    const tw_log_t *x = a, *y = b;
    if (x->lid != y->lid)
        return x->lid < y->lid ? -1 : 1;
    if (x->comp != y->comp)
        return x->comp < y->comp ? -1 : 1;
    return (x->hook > y->hook) - (x->hook < y->hook);
}

static void compare_logs(tw_t *t)
{
    tw_side_t *d = &t->s[0], *i = &t->s[1];
    for (int s = 0; s < 2; s++) {
        for (uint32_t k = 0; k < t->s[s].nlog; k++)
            t->s[s].log[k].lid = logical(&t->s[s], t, t->s[s].log[k].e);
        if (t->unordered <= t->s[s].nlog) {
            /* What these observers read of another entity depends on the
             * order too (it may be destroyed by the same call). */
            for (uint32_t k = 0; k < t->unordered; k++)
                t->s[s].log[k].other = 0;
            qsort(t->s[s].log, t->unordered, sizeof(tw_log_t), log_order);
        }
    }
    t->unordered = 0;
    uint32_t n = d->nlog < i->nlog ? d->nlog : i->nlog;
    for (uint32_t k = 0; k < n && !failed(t); k++) {
        const tw_log_t *x = &d->log[k], *y = &i->log[k];
        int ex = x->lid, ey = y->lid;
        if (x->hook != y->hook || x->comp != y->comp || ex != ey || x->value != y->value ||
            x->a != y->a || x->h != y->h || x->other != y->other)
            fail(t, "observer call %u: deferred %s of %s on #%d saw %d (A %d, H %d, watched A %d); "
                    "immediate %s of %s on #%d saw %d (A %d, H %d, watched A %d)",
                 k, x->hook == 0 ? "on_add" : x->hook == 1 ? "on_set" : "on_remove",
                 tw_names[x->comp], ex, x->value, x->a, x->h, x->other,
                 y->hook == 0 ? "on_add" : y->hook == 1 ? "on_set" : "on_remove",
                 tw_names[y->comp], ey, y->value, y->a, y->h, y->other);
    }
    if (!failed(t) && d->nlog != i->nlog)
        fail(t, "observer calls: %u deferred, %u immediate", d->nlog, i->nlog);
    d->nlog = i->nlog = 0;
}

static void compare(tw_t *t)
{
    compare_logs(t);
    tw_side_t *d = &t->s[0], *i = &t->s[1];
    int64_t holders[2] = {0, 0};
    for (int e = 0; e < TW_MAX && !failed(t); e++) {
        if (!t->used[e])
            continue;
        bool ad = tes_alive(d->w, d->h[e]), ai = tes_alive(i->w, i->h[e]);
        if (ad != ai) {
            fail(t, "#%d alive: deferred %d, immediate %d", e, ad, ai);
            break;
        }
        if (!ad) {
            t->used[e] = false; /* dead in both: the id is free again */
            continue;
        }
        if (tes_enabled(d->w, d->h[e]) != tes_enabled(i->w, i->h[e]))
            fail(t, "#%d enabled differs", e);
        if ((tes_instance_of(d->w, d->h[e]) != 0) != (tes_instance_of(i->w, i->h[e]) != 0))
            fail(t, "#%d instance membership differs", e);
        bool pd = tes_has(d->w, d->h[e], TES_PREFAB), pi = tes_has(i->w, i->h[e], TES_PREFAB);
        if (pd != pi)
            fail(t, "#%d TES_PREFAB: deferred %d, immediate %d", e, pd, pi);
        for (int k = 0; k < TW_NCOMP && !failed(t); k++) {
            bool hd = tes_has(d->w, d->h[e], d->id[k]), hi = tes_has(i->w, i->h[e], i->id[k]);
            if (hd != hi) {
                fail(t, "#%d has %s: deferred %d, immediate %d", e, tw_names[k], hd, hi);
                break;
            }
            if (!hd || k == TW_T)
                continue;
            holders[0] += k == TW_V;
            int32_t vd[2], vi[2];
            logical_value(t, 0, k, tes_get(d->w, d->h[e], d->id[k]), vd);
            logical_value(t, 1, k, tes_get(i->w, i->h[e], i->id[k]), vi);
            if (vd[0] != vi[0] || vd[1] != vi[1])
                fail(t, "#%d %s: deferred %d (ref #%d), immediate %d (ref #%d)", e, tw_names[k],
                     vd[0], vd[1], vi[0], vi[1]);
        }
    }
    if (failed(t))
        return;
    /* Between batches, when the watched entity died: the first live one. */
    for (int e = 0; e < TW_MAX && !tes_alive(i->w, i->watch); e++)
        if (t->used[e])
            d->watch = d->h[e], i->watch = i->h[e];
    holders[1] = holders[0];
    if (tes_entity_count(d->w) != tes_entity_count(i->w))
        fail(t, "entity count: deferred %d, immediate %d", tes_entity_count(d->w),
             tes_entity_count(i->w));
    for (int s = 0; s < 2; s++) {
        /* Every V value is held by a live entity (prefabs included, which
         * the loop above counted). */
        tes_query_desc_t qd = {.terms = {{t->s[s].id[TW_V], TES_AND, TES_IN}},
                               .flags = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB};
        tes_query_t *q = tes_query_new(t->s[s].w, &qd);
        int32_t held = q ? tes_query_count(q) : -1;
        tes_query_free(q);
        if (t->s[s].live_v != held || t->s[s].bad_v)
            fail(t, "%s world: %" PRId64 " V values alive, %d held%s", s ? "immediate" : "deferred",
                 t->s[s].live_v, held, t->s[s].bad_v ? ", one used unconstructed" : "");
    }
}

/* ------------------------------------------------------------------ calls */

/* Both return codes must agree. */
static void same_rc(tw_t *t, int rd, int ri)
{
    if (rd != ri)
        fail(t, "returned %d deferred, %d immediate", rd, ri);
}

static void op_set(tw_t *t, int e)
{
    t->op = "set";
    int k = data_comp(t);
    int32_t x = (int32_t)draw(t, 1000);
    union { tw_v_t v; tw_r_t r; int32_t i; } vals[2];
    snprintf(t->trace, sizeof t->trace, "#%d %s %d", e, tw_names[k], x);
    int rc[2];
    for (int s = 0; s < 2; s++) {
        make_value(t, s, k, x, &vals[s]);
        rc[s] = tes_set(t->s[s].w, t->s[s].h[e], t->s[s].id[k], &vals[s]);
    }
    same_rc(t, rc[0], rc[1]);
}

static void op_add_remove(tw_t *t, int e, bool add)
{
    t->op = add ? "add" : "remove";
    int k = (int)draw(t, TW_NCOMP);
    int rc[2];
    snprintf(t->trace, sizeof t->trace, "#%d %s", e, tw_names[k]);
    for (int s = 0; s < 2; s++)
        rc[s] = add ? tes_add(t->s[s].w, t->s[s].h[e], t->s[s].id[k])
                    : tes_remove(t->s[s].w, t->s[s].h[e], t->s[s].id[k]);
    same_rc(t, rc[0], rc[1]);
}

/* tes_ensure, then (two times in three) a write through the pointer:
 * an increment or a plain store. */
static void op_ensure(tw_t *t, int e)
{
    t->op = "ensure";
    int k = data_comp(t);
    uint32_t how = draw(t, 3);
    int32_t x = 1 + (int32_t)draw(t, 600);
    snprintf(t->trace, sizeof t->trace, "#%d %s %s %d", e, tw_names[k],
             how == 0 ? "no write" : how == 1 ? "+=" : "=", x);
    void *p[2];
    for (int s = 0; s < 2; s++)
        p[s] = tes_ensure(t->s[s].w, t->s[s].h[e], t->s[s].id[k]);
    if (!p[0] || !p[1]) {
        if (p[0] || p[1])
            fail(t, "ensure of %s on #%d: a pointer in one world only", tw_names[k], e);
        return;
    }
    int32_t vd[2], vi[2];
    logical_value(t, 0, k, p[0], vd);
    logical_value(t, 1, k, p[1], vi);
    if (vd[0] != vi[0] || vd[1] != vi[1]) {
        fail(t, "ensure of %s on #%d starts from %d (ref #%d) deferred, %d (ref #%d) immediate",
             tw_names[k], e, vd[0], vd[1], vi[0], vi[1]);
        return;
    }
    for (int s = 0; s < 2; s++) {
        if (how == 1)
            bump(k, p[s], x);
        else if (how == 2 && k != TW_R)
            *(int32_t *)p[s] = x;
    }
}

static void op_clone(tw_t *t, int e)
{
    t->op = "clone";
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++)
        c[s] = tes_clone(t->s[s].w, t->s[s].h[e]);
    fresh(t, c[0], c[1]);
    snprintf(t->trace, sizeof t->trace, "#%d -> #%d", e, logical(&t->s[1], t, c[1]));
}

static void op_destroy(tw_t *t, int e)
{
    t->op = "destroy";
    snprintf(t->trace, sizeof t->trace, "#%d", e);
    int rc[2];
    for (int s = 0; s < 2; s++)
        rc[s] = tes_destroy(t->s[s].w, t->s[s].h[e]);
    same_rc(t, rc[0], rc[1]);
}

static void op_destroy_n(tw_t *t)
{
    t->op = "destroy_n";
    int ids[3], n = 0;
    for (int j = 0; j < 3; j++) {
        int e = pick(t);
        bool dup = e < 0;
        for (int m = 0; m < n; m++)
            dup |= ids[m] == e;
        if (!dup)
            ids[n++] = e;
    }
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tes_entity_t es[3];
        for (int m = 0; m < n; m++)
            es[m] = t->s[s].h[ids[m]];
        rc[s] = tes_destroy_n(t->s[s].w, es, n);
    }
    same_rc(t, rc[0], rc[1]);
}

static void op_simple(tw_t *t, int e, int which)
{
    static const char *const names[] = {"clear", "disable", "enable"};
    t->op = names[which];
    snprintf(t->trace, sizeof t->trace, "#%d", e);
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tes_world_t *w = t->s[s].w;
        tes_entity_t h = t->s[s].h[e];
        rc[s] = which == 0 ? tes_clear(w, h) : which == 1 ? tes_disable(w, h) : tes_enable(w, h);
    }
    same_rc(t, rc[0], rc[1]);
}

static void op_spawn(tw_t *t)
{
    t->op = "spawn";
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++)
        c[s] = tes_spawn(t->s[s].w);
    snprintf(t->trace, sizeof t->trace, "-> #%d", fresh(t, c[0], c[1]));
}

/* A bundle of up to three distinct components, each given a value or not. */
static int bundle(tw_t *t, int comps[3], bool given[3], int32_t xs[3])
{
    int n = 0;
    for (int j = 0, want = 1 + (int)draw(t, 3); j < want; j++) {
        static const int bundled[] = {TW_A, TW_V, TW_R, TW_T};
        int k = bundled[draw(t, 4)];
        bool dup = false;
        for (int m = 0; m < n; m++)
            dup |= comps[m] == k;
        if (dup)
            continue;
        comps[n] = k;
        given[n] = k != TW_T && draw(t, 3) != 0;
        xs[n++] = (int32_t)draw(t, 1000);
    }
    return n;
}

static void op_spawn_with(tw_t *t)
{
    t->op = "spawn_with";
    int comps[3];
    bool given[3];
    int32_t xs[3];
    int n = bundle(t, comps, given, xs);
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++) {
        union { tw_v_t v; tw_r_t r; int32_t i; } vals[3];
        tes_value_t tv[3];
        for (int m = 0; m < n; m++) {
            make_value(t, s, comps[m], xs[m], &vals[m]);
            tv[m] = (tes_value_t){t->s[s].id[comps[m]], given[m] ? (void *)&vals[m] : NULL};
        }
        c[s] = tes_spawn_with(t->s[s].w, tv, n);
    }
    int id = fresh(t, c[0], c[1]);
    int len = snprintf(t->trace, sizeof t->trace, "-> #%d:", id);
    for (int m = 0; m < n && len > 0 && (size_t)len < sizeof t->trace; m++)
        len += snprintf(t->trace + len, sizeof t->trace - (size_t)len, " %s%s%d",
                        tw_names[comps[m]], given[m] ? "=" : "", given[m] ? xs[m] : 0);
}

/* tes_spawn_n (no data) or tes_spawn_bulk (data for each component). */
static void op_spawn_many(tw_t *t, bool bulk)
{
    t->op = bulk ? "spawn_bulk" : "spawn_n";
    int comps[3];
    bool given[3];
    int32_t xs[3];
    int n = bundle(t, comps, given, xs);
    int count = 1 + (int)draw(t, 3);
    tes_entity_t out[2][3];
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tes_comp_t ids[3];
        union { tw_v_t v; tw_r_t r; int32_t i; } vals[3][3];
        const void *data[3];
        for (int m = 0; m < n; m++) {
            ids[m] = t->s[s].id[comps[m]];
            for (int j = 0; j < count; j++)
                make_value(t, s, comps[m], xs[m] + j, &vals[m][j]);
            /* contiguous values of the component's own size */
            static union { tw_v_t v; tw_r_t r; int32_t i; } packed[2][3][3];
            size_t size = comps[m] == TW_V ? sizeof(tw_v_t) : comps[m] == TW_R ? sizeof(tw_r_t)
                                                                              : sizeof(int32_t);
            for (int j = 0; j < count; j++)
                memcpy((char *)packed[s][m] + (size_t)j * size, &vals[m][j], size);
            data[m] = given[m] ? (const void *)packed[s][m] : NULL;
        }
        if (bulk) {
            tes_bulk_desc_t bd = {count, ids, n, data, out[s]};
            rc[s] = tes_spawn_bulk(t->s[s].w, &bd);
        } else
            rc[s] = tes_spawn_n(t->s[s].w, count, ids, n, out[s]);
    }
    same_rc(t, rc[0], rc[1]);
    int first = -1;
    for (int j = 0; rc[0] == TES_OK && j < count; j++) {
        int id = fresh(t, out[0][j], out[1][j]);
        first = j ? first : id;
    }
    snprintf(t->trace, sizeof t->trace, "%d from #%d, %d comps", count, first, n);
}

static void op_prefab(tw_t *t)
{
    int root = pick_prefab(t);
    bool child = root >= 0 && draw(t, 3) != 0;
    t->op = child ? "prefab_child" : "prefab_new";
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++)
        c[s] = child ? tes_prefab_child(t->s[s].w, t->s[s].h[root]) : tes_prefab_new(t->s[s].w);
    int id = fresh(t, c[0], c[1]);
    snprintf(t->trace, sizeof t->trace, "of #%d -> #%d", root, id);
    if (id >= 0 && !child)
        t->prefab[id] = true;
}

static void op_instantiate(tw_t *t)
{
    int root = pick_prefab(t);
    if (root < 0)
        return;
    bool many = draw(t, 3) == 0;
    t->op = many ? "instantiate_n" : "instantiate";
    int32_t n = many ? 1 + (int32_t)draw(t, 2) : 1;
    tes_entity_t out[2][64];
    int32_t got[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        tes_world_t *w = t->s[s].w;
        tes_instance_t inst[2] = {0, 0};
        if (many) {
            if (tes_instantiate_n(w, t->s[s].h[root], n, inst))
                continue;
        } else if (!(inst[0] = tes_instantiate(w, t->s[s].h[root], NULL, 0)))
            continue;
        for (int32_t j = 0; j < n; j++) {
            int32_t m = tes_instance_members(w, inst[j], out[s] + got[s], 32);
            got[s] += m > 32 ? 32 : m < 0 ? 0 : m;
        }
    }
    if (got[0] != got[1]) {
        fail(t, "instances of #%d: %d members deferred, %d immediate", root, got[0], got[1]);
        return;
    }
    int first = -1;
    for (int32_t j = 0; j < got[0]; j++) {
        int id = fresh(t, out[0][j], out[1][j]);
        first = j ? first : id;
    }
    snprintf(t->trace, sizeof t->trace, "#%d x%d -> %d from #%d", root, n, got[0], first);
}

static void op_instance_destroy(tw_t *t, int e)
{
    t->op = "instance_destroy";
    snprintf(t->trace, sizeof t->trace, "of #%d", e);
    tes_instance_t inst[2] = {tes_instance_of(t->s[0].w, t->s[0].h[e]),
                              tes_instance_of(t->s[1].w, t->s[1].h[e])};
    if (!inst[0] || !inst[1]) {
        if (inst[0] || inst[1])
            fail(t, "#%d: an instance in one world only", e);
        return;
    }
    int rc[2];
    for (int s = 0; s < 2; s++)
        rc[s] = tes_instance_destroy(t->s[s].w, inst[s]);
    same_rc(t, rc[0], rc[1]);
}

/* First in a batch only: writes through tes_get_mut land at once, and
 * tes_destroy_matching takes its matches at the call. */
static void op_first(tw_t *t)
{
    if (draw(t, 2)) {
        t->op = "destroy_matching";
        uint32_t which = draw(t, 2);
        snprintf(t->trace, sizeof t->trace, "%s", which ? "S,A" : "T");
        int32_t n[2];
        for (int s = 0; s < 2; s++)
            n[s] = tes_destroy_matching(t->s[s].q[which]);
        same_rc(t, n[0], n[1]);
        t->unordered = t->s[1].nlog;
        return;
    }
    int e = pick(t);
    if (e < 0)
        return;
    t->op = "get_mut";
    int k = data_comp(t);
    int32_t x = (int32_t)draw(t, 100);
    snprintf(t->trace, sizeof t->trace, "#%d %s += %d", e, tw_names[k], x);
    for (int s = 0; s < 2; s++) {
        void *p = tes_get_mut(t->s[s].w, t->s[s].h[e], t->s[s].id[k]);
        if (p)
            bump(k, p, x);
    }
}

static void one_call(tw_t *t)
{
    uint32_t pop = population(t);
    uint32_t r = draw(t, 100);
    if (pop < 4 || (pop < TW_POP && r < 12)) {
        uint32_t how = draw(t, 10);
        if (how < 3)
            op_spawn(t);
        else if (how < 5)
            op_spawn_with(t);
        else if (how < 6)
            op_spawn_many(t, false);
        else if (how < 7)
            op_spawn_many(t, true);
        else if (how < 9)
            op_prefab(t);
        else
            op_instantiate(t);
        return;
    }
    int e = pick(t);
    if (e < 0)
        return;
    if (pop > TW_POP && r < 25) {
        op_destroy(t, e);
        return;
    }
    if (r < 30)
        op_set(t, e);
    else if (r < 50)
        op_ensure(t, e);
    else if (r < 58)
        op_add_remove(t, e, true);
    else if (r < 66)
        op_add_remove(t, e, false);
    else if (r < 74)
        op_clone(t, e);
    else if (r < 78)
        op_instantiate(t);
    else if (r < 81)
        op_prefab(t);
    else if (r < 84)
        op_destroy(t, e);
    else if (r < 86)
        op_destroy_n(t);
    else if (r < 89)
        op_simple(t, e, 0);
    else if (r < 92)
        op_simple(t, e, 1);
    else if (r < 95)
        op_simple(t, e, 2);
    else if (r < 97)
        op_instance_destroy(t, e);
    else
        op_spawn(t);
}

/* One batch: calls made deferred on one world, at once on the other. */
static void batch(tw_t *t)
{
    t->op = "defer_begin";
    if (tes_defer_begin(t->s[0].w) != TES_OK) {
        fail(t, "tes_defer_begin failed");
        return;
    }
    t->trace[0] = 0;
    if (draw(t, 4) == 0)
        op_first(t);
    if (t->cfg->trace_from && t->step + 1 >= t->cfg->trace_from && t->trace[0])
        fprintf(stderr, "twin %" PRIu64 ": %s %s\n", t->step, t->op, t->trace);
    uint32_t n = 1 + draw(t, TW_BATCH);
    for (uint32_t j = 0; j < n && !failed(t) && !t->src->exhausted; j++) {
        t->trace[0] = 0;
        one_call(t);
        if (t->cfg->trace_from && t->step + 1 >= t->cfg->trace_from)
            fprintf(stderr, "twin %" PRIu64 ".%u: %s %s\n", t->step, j, t->op ? t->op : "?", t->trace);
    }
    t->op = "defer_end";
    int rc = tes_defer_end(t->s[0].w);
    if (rc != TES_OK)
        fail(t, "tes_defer_end returned %d", rc);
    if (!failed(t))
        compare(t);
}

void fz_twin_run(const fz_config_t *cfg, fz_source_t *src, uint64_t max_ops, fz_result_t *res)
{
    memset(res, 0, sizeof *res);
    tw_t *t = calloc(1, sizeof *t);
    if (!t) {
        res->diverged = true;
        snprintf(res->msg, sizeof res->msg, "out of memory");
        return;
    }
    t->src = src;
    t->res = res;
    t->cfg = cfg;
    if (!side_setup(&t->s[0]) || !side_setup(&t->s[1])) {
        res->diverged = true;
        snprintf(res->msg, sizeof res->msg, "twin: setup failed");
    }
    for (t->step = 0; t->step < max_ops && !src->exhausted && !failed(t); t->step++) {
        batch(t);
        res->ops++;
    }
    res->alive = (uint32_t)population(t);
    for (int s = 0; s < 2; s++)
        if (t->s[s].w)
            tes_world_free(t->s[s].w);
    free(t);
}
