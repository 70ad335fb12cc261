/*
 * defer.c — the deferred command queue, each figure beside its own baseline
 * (both columns run Tessera; the ratio is the figure):
 *
 * - "defer ensure 40k": a query loop over 40,000 entities with Position
 *   calls tes_ensure(Velocity) on each (missing, so each call stages a value
 *   through the queue), writes it, and the loop's end applies the queue.
 *   Baseline: the same loop in 8 worlds of 5,000 entities (so both columns
 *   make 40,000 calls). Per call; a queue whose lookup scanned the queue
 *   would cost 8x more per call at 40k.
 * - "defer set": tes_set(Velocity) on N/10 entities holding Position,
 *   inside tes_defer_begin/tes_defer_end, flush included. Baseline: the same
 *   sets made immediately. Per entity.
 * - "defer set x3": Velocity, Rotation and Health on each entity, deferred
 *   (the flush merges the three into one table move) against immediate
 *   (three moves). Per entity.
 *
 * Worlds are built in `before` (untimed) and freed in `after`. Runs are
 * warm, as in a game's steady state: `before` also does the run's work
 * once and undoes it (immediate removes), so the tables the run fills and,
 * for the deferred column, the queue's arrays and arena already have their
 * capacity (which the queue keeps between flushes).
 * Checksums: the sum of the written values, read back after the run.
 */
#include "bench.h"

#define MAX_WORLDS 8

typedef struct {
    tes_world_t *w;
    bench_comps_t c;
    tes_comp_t hp;
    tes_query_t *q;
} defer_world_t;

typedef struct {
    uint32_t n;      /* entities per world */
    uint32_t worlds; /* 1, or MAX_WORLDS for the ensure baseline */
    bool deferred;
    bool three;      /* three sets per entity */
    bool ensure;
    defer_world_t v[MAX_WORLDS];
    tes_entity_t *ents; /* of the last world built (all worlds issue the same) */
} defer_state_t;

static defer_state_t *state_new(uint32_t n, uint32_t worlds, bool deferred, bool three,
                                bool ensure)
{
    defer_state_t *s = (defer_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = n;
    s->worlds = worlds;
    s->deferred = deferred;
    s->three = three;
    s->ensure = ensure;
    s->ents = (tes_entity_t *)bench_alloc((size_t)n * sizeof *s->ents);
    if (!s->ents) {
        free(s);
        return NULL;
    }
    return s;
}

static void world_before(defer_state_t *s, defer_world_t *v)
{
    v->w = bench_world_new();
    if (!v->w)
        return;
    v->c = bench_register3(v->w, TES_STORAGE_TABLE);
    v->hp = bench_register(v->w, "Health", sizeof(Health), TES_STORAGE_TABLE);
    tes_comp_t pos = v->c.pos;
    if (tes_spawn_n(v->w, (int32_t)s->n, &pos, 1, s->ents) != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(tes_last_error(v->w)));
    if (s->ensure)
        v->q = bench_query1(v->w, pos);
}

static uint64_t ensure_run(const defer_world_t *s);
static uint64_t set_run(const defer_state_t *s, const defer_world_t *v);

static void defer_before(void *p)
{
    defer_state_t *s = (defer_state_t *)p;
    for (uint32_t k = 0; k < s->worlds && !bench_failed(); k++) {
        defer_world_t *v = &s->v[k];
        world_before(s, v);
        if (bench_failed())
            return;
        /* Warm up: the run's work once, then back to Position only. */
        if (s->ensure)
            ensure_run(v);
        else
            set_run(s, v);
        for (uint32_t i = 0; i < s->n; i++) {
            tes_remove(v->w, s->ents[i], v->c.vel);
            tes_remove(v->w, s->ents[i], v->c.rot);
            tes_remove(v->w, s->ents[i], v->hp);
        }
    }
}

static uint64_t ensure_run(const defer_world_t *s)
{
    tes_world_t *w = s->w;
    tes_comp_t vel = s->c.vel;
    uint32_t k = 0;
    tes_iter_t it = tes_query_iter(s->q);
    while (tes_iter_next(&it)) {
        for (int32_t i = 0; i < it.count; i++, k++) {
            Velocity *v = (Velocity *)tes_ensure(w, it.entities[i], vel);
            if (!v) {
                bench_fail("tes_ensure: %s", tes_strerror(tes_last_error(w)));
                tes_iter_fini(&it);
                return 0;
            }
            v->x = (float)(k & 1023u);
        }
    }
    return k;
}

static uint64_t set_run(const defer_state_t *s, const defer_world_t *v)
{
    tes_world_t *w = v->w;
    int bad = 0;
    if (s->deferred)
        bad |= tes_defer_begin(w);
    for (uint32_t i = 0; i < s->n; i++) {
        Velocity vel = {(float)(i & 1023u), 0.0f, 0.0f};
        bad |= tes_set(w, s->ents[i], v->c.vel, &vel);
        if (s->three) {
            Rotation r = {0.0f, 1.0f, (float)(i & 7u)};
            Health h = {(int32_t)(i & 255u)};
            bad |= tes_set(w, s->ents[i], v->c.rot, &r);
            bad |= tes_set(w, s->ents[i], v->hp, &h);
        }
    }
    if (s->deferred)
        bad |= tes_defer_end(w);
    if (bad)
        bench_fail("tes_set: %s", tes_strerror(tes_last_error(w)));
    return s->n;
}

static uint64_t defer_run(void *p)
{
    defer_state_t *s = (defer_state_t *)p;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < s->worlds; k++)
        sum += s->ensure ? ensure_run(&s->v[k]) : set_run(s, &s->v[k]);
    return sum;
}

static void defer_after(void *p)
{
    defer_state_t *s = (defer_state_t *)p;
    for (uint32_t k = 0; k < s->worlds; k++) {
        defer_world_t *v = &s->v[k];
        if (v->w && !bench_failed()) {
            /* Every entity got its Velocity: read back one in the middle. */
            uint32_t i = s->n / 2;
            const Velocity *vel = (const Velocity *)tes_get(v->w, s->ents[i], v->c.vel);
            if (!vel || (!s->ensure && vel->x != (float)(i & 1023u)))
                bench_fail("Velocity missing or wrong after the flush");
            if (s->three && !tes_has(v->w, s->ents[i], v->hp))
                bench_fail("Health missing after the flush");
        }
        tes_query_free(v->q);
        v->q = NULL;
        tes_world_free(v->w);
        v->w = NULL;
    }
}

static void defer_fini(void *p)
{
    defer_state_t *s = (defer_state_t *)p;
    free(s->ents);
    free(s);
}

#define ENSURE_BIG 40000u
#define ENSURE_SMALL 5000u

static void *ensure_big_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    return state_new(ENSURE_BIG, 1, true, false, true);
}
static void *ensure_small_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    return state_new(ENSURE_SMALL, MAX_WORLDS, true, false, true);
}
static int64_t ensure_ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return ENSURE_BIG; /* = MAX_WORLDS * ENSURE_SMALL calls in the baseline */
}

static uint32_t set_n(const bench_cfg_t *cfg) { return bench_u32(cfg->n / 10 ? cfg->n / 10 : 1); }
static void *set_deferred_init(const bench_cfg_t *cfg)
{
    return state_new(set_n(cfg), 1, true, false, false);
}
static void *set_immediate_init(const bench_cfg_t *cfg)
{
    return state_new(set_n(cfg), 1, false, false, false);
}
static void *set3_deferred_init(const bench_cfg_t *cfg)
{
    return state_new(set_n(cfg), 1, true, true, false);
}
static void *set3_immediate_init(const bench_cfg_t *cfg)
{
    return state_new(set_n(cfg), 1, false, true, false);
}
static int64_t set_ops(const bench_cfg_t *cfg) { return set_n(cfg); }

const bench_workload_t bench_defer_ensure = {
    "defer ensure 40k (base: 8 x 5k)",
    "call",
    ensure_ops,
    false,
    {ensure_big_init, defer_before, defer_run, defer_after, defer_fini},
    {ensure_small_init, defer_before, defer_run, defer_after, defer_fini},
};

const bench_workload_t bench_defer_set = {
    "defer set +flush (base: immediate)",
    "entity",
    set_ops,
    true,
    {set_deferred_init, defer_before, defer_run, defer_after, defer_fini},
    {set_immediate_init, defer_before, defer_run, defer_after, defer_fini},
};

const bench_workload_t bench_defer_set3 = {
    "defer set x3 +flush (base: immediate)",
    "entity",
    set_ops,
    true,
    {set3_deferred_init, defer_before, defer_run, defer_after, defer_fini},
    {set3_immediate_init, defer_before, defer_run, defer_after, defer_fini},
};
