/*
 * changes.c — change detection. Four workloads over N (1M) entities with
 * Position and Velocity (12 bytes each); each line's two sides run in the
 * same process, alternating, so their ratio is what the line is about:
 * - C1 tes_set: tes_set of a tracked Position (left) vs an untracked one
 *   (right), every entity once per pass, in order;
 * - C2 W4 write: Position += Velocity with Position tracked (left: every
 *   chunk handed out through the TES_INOUT term is stamped) vs untracked;
 * - C3 nothing changed: a TES_CHANGE_CHANGED query over the N tracked
 *   entities when nothing changed since its last iteration (left) vs a
 *   full W4 pass over them (right);
 * - C4 1% changed: 1% of the entities, at random, are written before each
 *   run (untimed); the CHANGED query then processes what changed (left)
 *   vs plain C scanning a per-entity tick array and processing the rows
 *   whose tick is newer than its last scan (right);
 * - C5 sparse, 1% changed: C4 with Position and Velocity in sparse stores
 *   (the query walks Position's packed array and steps over its blocks
 *   of 64 positions with nothing new) vs the same plain C scan.
 * The memory section has the bytes per tracked value (memory.c).
 */
#include "bench.h"

enum { C_REPS = 10 };

typedef struct chg_state {
    tes_world_t *w;
    tes_comp_t pos, vel;
    tes_entity_t *h;
    uint32_t n;
    tes_query_t *q;
    uint64_t seed;
    bool tracked;
    bool sparse; /* C5: Position and Velocity in sparse stores */
    int mode; /* 0 set, 1 W4 write, 2 changed query */
    /* the plain C side of C4 */
    Position *bp;
    Velocity *bv;
    uint32_t *tick;
    uint32_t now, last;
} chg_state_t;

static tes_comp_t reg(tes_world_t *w, const char *name, bool tracked, bool sparse)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = 12;
    d.track_changes = tracked;
    d.storage = sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE;
    tes_comp_t c = tes_component(w, &d);
    if (!c)
        bench_fail("tes_component(%s): %s", name, tes_strerror(tes_last_error(w)));
    return c;
}

static void *chg_new_in(const bench_cfg_t *cfg, bool tracked, int mode, tes_change_t change,
                        bool sparse)
{
    chg_state_t *s = bench_alloc(sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->n = bench_u32(cfg->n);
    s->seed = cfg->seed;
    s->tracked = tracked;
    s->mode = mode;
    s->w = bench_world_new();
    s->h = bench_alloc((size_t)s->n * sizeof *s->h);
    if (!s->w || !s->h)
        return s;
    s->sparse = sparse;
    s->pos = reg(s->w, "Position", tracked, sparse);
    s->vel = reg(s->w, "Velocity", false, sparse);
    tes_comp_t comps[2] = {s->pos, s->vel};
    if (!bench_failed() && tes_spawn_n(s->w, (int32_t)s->n, comps, 2, s->h) != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(tes_last_error(s->w)));
    for (uint32_t i = 0; i < s->n && !bench_failed(); i++) {
        Position p = bench_position(i);
        Velocity v = {1.0f, 1.0f, 1.0f};
        tes_set(s->w, s->h[i], s->pos, &p);
        tes_set(s->w, s->h[i], s->vel, &v);
    }
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = s->pos;
    qd.terms[0].access = mode == 2 ? TES_IN : TES_INOUT;
    qd.terms[0].change = change;
    qd.terms[1].comp = s->vel;
    qd.terms[1].access = TES_IN;
    if (!bench_failed() && !(s->q = tes_query_new(s->w, &qd)))
        bench_fail("tes_query_new: %s", tes_strerror(tes_last_error(s->w)));
    if (!bench_failed() && change) { /* the first iteration sees everything */
        tes_iter_t it = tes_query_iter(s->q);
        while (tes_iter_next(&it))
            ;
    }
    return s;
}

static void *chg_new(const bench_cfg_t *cfg, bool tracked, int mode, tes_change_t change)
{
    return chg_new_in(cfg, tracked, mode, change, false);
}

static void chg_fini(void *p)
{
    chg_state_t *s = p;
    if (!s)
        return;
    if (s->w)
        tes_world_free(s->w);
    free(s->h);
    free(s->bp);
    free(s->bv);
    free(s->tick);
    free(s);
}

/* C1: tes_set of every entity, in order. */
static uint64_t set_run(void *p)
{
    chg_state_t *s = p;
    uint64_t sum = 0;
    for (uint32_t r = 0; r < C_REPS; r++) {
        for (uint32_t i = 0; i < s->n; i++) {
            Position v = {(float)r, (float)i, 1.0f};
            sum += (uint64_t)tes_set(s->w, s->h[i], s->pos, &v) + 1;
        }
    }
    return sum;
}
static void *set_tracked(const bench_cfg_t *c) { return chg_new(c, true, 0, TES_CHANGE_NONE); }
static void *set_plain(const bench_cfg_t *c) { return chg_new(c, false, 0, TES_CHANGE_NONE); }
static int64_t reps_ops(const bench_cfg_t *cfg) { return cfg->n * C_REPS; }

const bench_workload_t bench_changes_set = {
    "C1 tes_set: tracked vs untracked", "set", reps_ops, true,
    {set_tracked, NULL, set_run, NULL, chg_fini},
    {set_plain, NULL, set_run, NULL, chg_fini},
};

/* C2 and C3's right side: W4 passes through the query. */
static uint64_t w4_run(void *p)
{
    chg_state_t *s = p;
    uint64_t sum = 0;
    for (uint32_t r = 0; r < C_REPS; r++) {
        tes_iter_t it = tes_query_iter(s->q);
        while (tes_iter_next(&it)) {
            Position *pp = tes_field(&it, 0);
            const Velocity *vv = tes_field(&it, 1);
            for (int32_t i = 0; i < it.count; i++) {
                pp[i].x += vv[i].x;
                pp[i].y += vv[i].y;
                pp[i].z += vv[i].z;
            }
            sum += (uint64_t)it.count;
        }
    }
    return sum;
}
static void *w4_tracked(const bench_cfg_t *c) { return chg_new(c, true, 1, TES_CHANGE_NONE); }
static void *w4_plain(const bench_cfg_t *c) { return chg_new(c, false, 1, TES_CHANGE_NONE); }

const bench_workload_t bench_changes_w4 = {
    "C2 W4 write: tracked vs untracked", "ent", reps_ops, true,
    {w4_tracked, NULL, w4_run, NULL, chg_fini},
    {w4_plain, NULL, w4_run, NULL, chg_fini},
};

/* C3: the CHANGED query when nothing changed (left). */
static uint64_t changed_run(void *p)
{
    chg_state_t *s = p;
    uint64_t sum = 0;
    for (uint32_t r = 0; r < C_REPS; r++) {
        tes_iter_t it = tes_query_iter(s->q);
        while (tes_iter_next(&it)) {
            const Position *pp = tes_field(&it, 0);
            const Velocity *vv = tes_field(&it, 1);
            for (int32_t i = 0; i < it.count; i++)
                sum += (uint64_t)(pp[i].x + vv[i].x);
        }
    }
    return sum;
}
static void *idle_tracked(const bench_cfg_t *c) { return chg_new(c, true, 2, TES_CHANGE_CHANGED); }

const bench_workload_t bench_changes_idle = {
    "C3 CHANGED, nothing changed vs full W4", "ent", reps_ops, false,
    {idle_tracked, NULL, changed_run, NULL, chg_fini},
    {w4_plain, NULL, w4_run, NULL, chg_fini},
};

/* C4: 1% of the entities written at random before each run. */
static void some_tracked_before(void *p)
{
    chg_state_t *s = p;
    uint64_t rng = s->seed ^ 0xC4u;
    for (uint32_t k = 0; k < s->n / 100; k++) {
        uint32_t i = bench_rng_below(&rng, s->n);
        Position v = bench_position(i);
        tes_set(s->w, s->h[i], s->pos, &v);
    }
    s->seed++;
}
static uint64_t some_run(void *p)
{
    chg_state_t *s = p;
    uint64_t sum = 0;
    tes_iter_t it = tes_query_iter(s->q);
    while (tes_iter_next(&it)) {
        const Position *pp = tes_field(&it, 0);
        const Velocity *vv = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++)
            sum += (uint64_t)(pp[i].x + vv[i].x) + 1;
    }
    return sum;
}
static void *some_tracked(const bench_cfg_t *c) { return chg_new(c, true, 2, TES_CHANGE_CHANGED); }

static void *some_base_init(const bench_cfg_t *cfg)
{
    chg_state_t *s = bench_alloc(sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->n = bench_u32(cfg->n);
    s->seed = cfg->seed;
    s->bp = bench_alloc((size_t)s->n * sizeof *s->bp);
    s->bv = bench_alloc((size_t)s->n * sizeof *s->bv);
    s->tick = bench_alloc((size_t)s->n * sizeof *s->tick);
    if (!s->bp || !s->bv || !s->tick)
        return s;
    for (uint32_t i = 0; i < s->n; i++) {
        s->bp[i] = bench_position(i);
        s->bv[i] = (Velocity){1.0f, 1.0f, 1.0f};
        s->tick[i] = 1;
    }
    s->now = 2;
    s->last = 1;
    return s;
}
static void some_base_before(void *p)
{
    chg_state_t *s = p;
    uint64_t rng = s->seed ^ 0xC4u;
    s->now++;
    for (uint32_t k = 0; k < s->n / 100; k++) {
        uint32_t i = bench_rng_below(&rng, s->n);
        s->bp[i] = bench_position(i);
        s->tick[i] = s->now;
    }
    s->seed++;
}
static uint64_t some_base_run(void *p)
{
    chg_state_t *s = p;
    uint64_t sum = 0;
    const uint32_t last = s->last;
    for (uint32_t i = 0; i < s->n; i++)
        if ((int32_t)(s->tick[i] - last) > 0)
            sum += (uint64_t)(s->bp[i].x + s->bv[i].x) + 1;
    s->last = s->now;
    return sum;
}
static int64_t one_ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_changes_some = {
    "C4 CHANGED, 1% changed vs C tick scan", "ent", one_ops, true,
    {some_tracked, some_tracked_before, some_run, NULL, chg_fini},
    {some_base_init, some_base_before, some_base_run, NULL, chg_fini},
};

/* C5: C4 over sparse stores. */
static void *some_sparse(const bench_cfg_t *c) { return chg_new_in(c, true, 2, TES_CHANGE_CHANGED, true); }

const bench_workload_t bench_changes_sparse = {
    "C5 sparse CHANGED, 1% changed vs C tick scan", "ent", one_ops, true,
    {some_sparse, some_tracked_before, some_run, NULL, chg_fini},
    {some_base_init, some_base_before, some_base_run, NULL, chg_fini},
};
