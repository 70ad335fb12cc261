/*
 * table_spawn_n.c — tes_spawn_n of N entities carrying Position, Velocity
 * and Rotation (table storage), straight into their final table.
 *
 * Measures the bulk path: one entity-index reserve, one table reserve,
 * zero-filled columns, N handles written. Baseline: reserve a generation
 * array and three component arrays once (malloc), zero the components, set
 * generations and write the handles. Both checksum the handles afterwards.
 */
#include "bench.h"

typedef bench_tes_state_t tes_state_t;

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, s->comps, 3, s->h);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        return 0;
    }
    return bench_sum_handles(s->h, s->n);
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        const Position *pos = (const Position *)tes_get(s->w, s->h[s->n / 2], s->comps[0]);
        if (!pos || pos->x != 0.0f || pos->y != 0.0f || pos->z != 0.0f)
            bench_fail("tes_spawn_n: Position missing or not zero-filled");
    }
    bench_tes_drop_world(s);
}

typedef bench_base_state_t base_state_t;

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    size_t n = s->n;
    s->gen = (uint32_t *)malloc(n * sizeof *s->gen);
    s->pos = (Position *)malloc(n * sizeof *s->pos);
    s->vel = (Velocity *)malloc(n * sizeof *s->vel);
    s->rot = (Rotation *)malloc(n * sizeof *s->rot);
    if (!s->gen || !s->pos || !s->vel || !s->rot) {
        bench_fail("malloc failed");
        return 0;
    }
    memset(s->pos, 0, n * sizeof *s->pos);
    memset(s->vel, 0, n * sizeof *s->vel);
    memset(s->rot, 0, n * sizeof *s->rot);
    for (uint32_t i = 0; i < s->n; i++) {
        s->gen[i] = 1;
        s->h[i] = tes_entity_make(i, 1);
    }
    return bench_sum_handles(s->h, s->n);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_table_spawn_n = {
    "table: spawn_n 3 comps bulk",
    "entity",
    ops,
    true,
    {bench_tes_init, bench_tes_world3, tes_run, tes_after, bench_tes_fini},
    {bench_base_init, NULL, base_run, bench_base_release, bench_base_fini},
};
