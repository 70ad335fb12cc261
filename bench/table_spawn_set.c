/*
 * table_spawn_set.c — spawn N entities one at a time and tes_set Position,
 * Velocity and Rotation (12 bytes each, table storage) on each.
 *
 * This is the "naive user" path: every tes_set of a new component moves the
 * entity to the next archetype table (root -> {P} -> {P,V} -> {P,V,R}), so
 * it measures spawn plus three table moves through the cached graph edges.
 * Baseline: a plain struct-of-arrays ECS with one generation array and three
 * component arrays, all growing by realloc doubling, written in place.
 * Checksum: the handles (a fresh world issues index i, generation 1).
 */
#include "bench.h"

static const Velocity VEL = {1.0f, 2.0f, 3.0f};
static const Rotation ROT = {0.0f, 0.0f, 1.0f};

typedef bench_tes_state_t tes_state_t;

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    bench_comps_t c = s->c;
    uint64_t sum = 0;
    int bad = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        tes_entity_t e = tes_spawn(w);
        Position pos = bench_position(i);
        bad |= tes_set(w, e, c.pos, &pos);
        bad |= tes_set(w, e, c.vel, &VEL);
        bad |= tes_set(w, e, c.rot, &ROT);
        s->h[i] = e;
        sum += e;
    }
    if (bad)
        bench_fail("spawn/tes_set failed: %s", tes_strerror(tes_last_error(w)));
    return sum;
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        uint32_t last = s->n - 1;
        const Position *pos = (const Position *)tes_get(s->w, s->h[last], s->c.pos);
        Position want = bench_position(last);
        if (!pos || memcmp(pos, &want, sizeof want) != 0)
            bench_fail("tes_get after spawn+set returned the wrong Position");
    }
    bench_tes_drop_world(s);
}

typedef bench_base_state_t base_state_t;

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->count == s->cap && !bench_base_grow(s))
            return 0;
        uint32_t index = s->count++;
        s->gen[index] = 1;
        tes_entity_t e = tes_entity_make(index, 1);
        s->pos[index] = bench_position(i);
        s->vel[index] = VEL;
        s->rot[index] = ROT;
        s->h[i] = e;
        sum += e;
    }
    return sum;
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_table_spawn_set = {
    "table: spawn + set 3 comps 1-by-1",
    "entity",
    ops,
    true,
    {bench_tes_init, bench_tes_world3, tes_run, tes_after, bench_tes_fini},
    {bench_base_init, NULL, base_run, bench_base_release, bench_base_fini},
};
