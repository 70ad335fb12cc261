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

#include "fuzz/twin.h"

const char *const tw_names[TW_NCOMP] = {"A", "H", "S", "V", "R", "T"};

uint32_t tw_draw(tw_t *t, uint32_t bound) { return fz_draw(t->src, bound); }

void tw_fail(tw_t *t, const char *fmt, ...)
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

bool tw_failed(const tw_t *t) { return t->res->diverged; }

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
    qd.terms[1] = (tes_term_t){.comp = s->id[TW_A], .oper = TES_AND, .access = TES_IN};
    s->q[1] = tes_query_new(s->w, &qd);
    return s->q[0] && s->q[1];
}

/* ------------------------------------------------------------------ entities */

/* The logical id of handle e in side s (-1: none). */
int tw_logical(const tw_side_t *s, const tw_t *t, tes_entity_t e)
{
    if (e == TES_NULL)
        return -1;
    for (int i = 0; i < TW_MAX; i++)
        if (t->used[i] && s->h[i] == e)
            return i;
    return -1;
}

/* A new logical id for the handles made by one call (-1: none free). */
int tw_fresh(tw_t *t, tes_entity_t d, tes_entity_t i)
{
    if ((d == TES_NULL) != (i == TES_NULL)) {
        tw_fail(t, "one world made an entity, the other did not");
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
    tw_fail(t, "out of logical ids");
    return -1;
}

uint32_t tw_population(const tw_t *t)
{
    uint32_t n = 0;
    for (int i = 0; i < TW_MAX; i++)
        n += t->used[i] && tes_alive(t->s[1].w, t->s[1].h[i]);
    return n;
}

/* A logical entity alive in the immediate twin (-1: none). */
int tw_pick(tw_t *t)
{
    int live[TW_MAX], n = 0;
    for (int i = 0; i < TW_MAX; i++)
        if (t->used[i] && tes_alive(t->s[1].w, t->s[1].h[i]))
            live[n++] = i;
    return n ? live[tw_draw(t, (uint32_t)n)] : -1;
}

int tw_pick_prefab(tw_t *t)
{
    int live[TW_MAX], n = 0;
    for (int i = 0; i < TW_MAX; i++)
        if (t->used[i] && t->prefab[i] && tes_alive(t->s[1].w, t->s[1].h[i]))
            live[n++] = i;
    return n ? live[tw_draw(t, (uint32_t)n)] : -1;
}

int tw_data_comp(tw_t *t) { return (int)tw_draw(t, TW_T); } /* A, H, S, V or R */

/* Writes logical value x into a value of component k in side s (R's
 * reference: logical entity x % TW_MAX when used, else none). */
void tw_make_value(tw_t *t, int side, int k, int32_t x, void *out)
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
void tw_bump(int k, void *p, int32_t x)
{
    if (k == TW_R)
        ((tw_r_t *)p)->x += x;
    else /* A, H, S: the int; V: its first field */
        *(int32_t *)p += x;
}

/* Logical form of value p of component k of side `side`, for comparing. */
void tw_logical_value(const tw_t *t, int side, int k, const void *p, int32_t out[2])
{
    out[1] = 0;
    if (k == TW_R) {
        out[0] = ((const tw_r_t *)p)->x;
        out[1] = tw_logical(&t->s[side], t, ((const tw_r_t *)p)->ref);
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
            t->s[s].log[k].lid = tw_logical(&t->s[s], t, t->s[s].log[k].e);
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
    for (uint32_t k = 0; k < n && !tw_failed(t); k++) {
        const tw_log_t *x = &d->log[k], *y = &i->log[k];
        int ex = x->lid, ey = y->lid;
        if (x->hook != y->hook || x->comp != y->comp || ex != ey || x->value != y->value ||
            x->a != y->a || x->h != y->h || x->other != y->other)
            tw_fail(t, "observer call %u: deferred %s of %s on #%d saw %d (A %d, H %d, watched A %d); "
                    "immediate %s of %s on #%d saw %d (A %d, H %d, watched A %d)",
                 k, x->hook == 0 ? "on_add" : x->hook == 1 ? "on_set" : "on_remove",
                 tw_names[x->comp], ex, x->value, x->a, x->h, x->other,
                 y->hook == 0 ? "on_add" : y->hook == 1 ? "on_set" : "on_remove",
                 tw_names[y->comp], ey, y->value, y->a, y->h, y->other);
    }
    if (!tw_failed(t) && d->nlog != i->nlog)
        tw_fail(t, "observer calls: %u deferred, %u immediate", d->nlog, i->nlog);
    d->nlog = i->nlog = 0;
}

static void compare(tw_t *t)
{
    compare_logs(t);
    tw_side_t *d = &t->s[0], *i = &t->s[1];
    int64_t holders[2] = {0, 0};
    for (int e = 0; e < TW_MAX && !tw_failed(t); e++) {
        if (!t->used[e])
            continue;
        bool ad = tes_alive(d->w, d->h[e]), ai = tes_alive(i->w, i->h[e]);
        if (ad != ai) {
            tw_fail(t, "#%d alive: deferred %d, immediate %d", e, ad, ai);
            break;
        }
        if (!ad) {
            t->used[e] = false; /* dead in both: the id is free again */
            continue;
        }
        if (tes_enabled(d->w, d->h[e]) != tes_enabled(i->w, i->h[e]))
            tw_fail(t, "#%d enabled differs", e);
        if ((tes_instance_of(d->w, d->h[e]) != 0) != (tes_instance_of(i->w, i->h[e]) != 0))
            tw_fail(t, "#%d instance membership differs", e);
        bool pd = tes_has(d->w, d->h[e], TES_PREFAB), pi = tes_has(i->w, i->h[e], TES_PREFAB);
        if (pd != pi)
            tw_fail(t, "#%d TES_PREFAB: deferred %d, immediate %d", e, pd, pi);
        for (int k = 0; k < TW_NCOMP && !tw_failed(t); k++) {
            bool hd = tes_has(d->w, d->h[e], d->id[k]), hi = tes_has(i->w, i->h[e], i->id[k]);
            if (hd != hi) {
                tw_fail(t, "#%d has %s: deferred %d, immediate %d", e, tw_names[k], hd, hi);
                break;
            }
            if (!hd || k == TW_T)
                continue;
            holders[0] += k == TW_V;
            int32_t vd[2], vi[2];
            tw_logical_value(t, 0, k, tes_get(d->w, d->h[e], d->id[k]), vd);
            tw_logical_value(t, 1, k, tes_get(i->w, i->h[e], i->id[k]), vi);
            if (vd[0] != vi[0] || vd[1] != vi[1])
                tw_fail(t, "#%d %s: deferred %d (ref #%d), immediate %d (ref #%d)", e, tw_names[k],
                     vd[0], vd[1], vi[0], vi[1]);
        }
    }
    if (tw_failed(t))
        return;
    /* Between batches, when the watched entity died: the first live one. */
    for (int e = 0; e < TW_MAX && !tes_alive(i->w, i->watch); e++)
        if (t->used[e])
            d->watch = d->h[e], i->watch = i->h[e];
    holders[1] = holders[0];
    if (tes_entity_count(d->w) != tes_entity_count(i->w))
        tw_fail(t, "entity count: deferred %d, immediate %d", tes_entity_count(d->w),
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
            tw_fail(t, "%s world: %" PRId64 " V values alive, %d held%s", s ? "immediate" : "deferred",
                 t->s[s].live_v, held, t->s[s].bad_v ? ", one used unconstructed" : "");
    }
}

/* One batch: calls made deferred on one world, at once on the other. */
static void batch(tw_t *t)
{
    t->op = "defer_begin";
    if (tes_defer_begin(t->s[0].w) != TES_OK) {
        tw_fail(t, "tes_defer_begin failed");
        return;
    }
    t->trace[0] = 0;
    if (tw_draw(t, 4) == 0)
        tw_op_first(t);
    if (t->cfg->trace_from && t->step + 1 >= t->cfg->trace_from && t->trace[0])
        fprintf(stderr, "twin %" PRIu64 ": %s %s\n", t->step, t->op, t->trace);
    uint32_t n = 1 + tw_draw(t, TW_BATCH);
    for (uint32_t j = 0; j < n && !tw_failed(t) && !t->src->exhausted; j++) {
        t->trace[0] = 0;
        tw_one_call(t);
        if (t->cfg->trace_from && t->step + 1 >= t->cfg->trace_from)
            fprintf(stderr, "twin %" PRIu64 ".%u: %s %s\n", t->step, j, t->op ? t->op : "?", t->trace);
    }
    t->op = "defer_end";
    int rc = tes_defer_end(t->s[0].w);
    if (rc != TES_OK)
        tw_fail(t, "tes_defer_end returned %d", rc);
    if (!tw_failed(t))
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
    for (t->step = 0; t->step < max_ops && !src->exhausted && !tw_failed(t); t->step++) {
        batch(t);
        res->ops++;
    }
    res->alive = (uint32_t)tw_population(t);
    for (int s = 0; s < 2; s++)
        if (t->s[s].w)
            tes_world_free(t->s[s].w);
    free(t);
}
