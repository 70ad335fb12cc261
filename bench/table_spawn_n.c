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

typedef struct {
    uint32_t n;
    tes_world_t *w;
    tes_comp_t comps[3];
    tes_entity_t *out;
} tes_state_t;

static void *tes_init(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->out = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->out);
    return s;
}

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    bench_comps_t c = bench_register3(s->w, TES_STORAGE_TABLE);
    s->comps[0] = c.pos;
    s->comps[1] = c.vel;
    s->comps[2] = c.rot;
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, s->comps, 3, s->out);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        return 0;
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++)
        sum += s->out[i];
    return sum;
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        const Position *pos = (const Position *)tes_get(s->w, s->out[s->n / 2], s->comps[0]);
        if (!pos || pos->x != 0.0f || pos->y != 0.0f || pos->z != 0.0f)
            bench_fail("tes_spawn_n: Position missing or not zero-filled");
    }
    tes_world_free(s->w);
    s->w = NULL;
}

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    free(s->out);
    free(s);
}

typedef struct {
    uint32_t n;
    uint32_t *gen;
    Position *pos;
    Velocity *vel;
    Rotation *rot;
    tes_entity_t *out;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->out = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->out);
    return s;
}

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
        s->out[i] = tes_entity_make(i, 1);
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++)
        sum += s->out[i];
    return sum;
}

static void base_after(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->gen);
    free(s->pos);
    free(s->vel);
    free(s->rot);
    s->gen = NULL;
    s->pos = NULL;
    s->vel = NULL;
    s->rot = NULL;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_after(s);
    free(s->out);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_table_spawn_n = {
    "table: spawn_n 3 comps bulk",
    "entity",
    ops,
    true,
    {tes_init, tes_before, tes_run, tes_after, tes_fini},
    {base_init, NULL, base_run, base_after, base_fini},
};
