/*
 * table_get.c — tes_get of Position for N entities in random order.
 *
 * N entities with Position, Velocity, Rotation (table storage) are built once
 * (untimed, the data is only read) and their handles shuffled with a fixed
 * seed. A run looks up every handle and sums the bits of Position.x, so the
 * cost is dominated by the random accesses: entity slot (generation check,
 * table, row) and then the column. Baseline: a generation-checked lookup
 * into a plain array of Position structs indexed by entity index, with a
 * parallel generations array. Same handles, same data: checksums match.
 */
#include "bench.h"

static inline uint64_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

typedef struct {
    uint32_t n;
    tes_world_t *w;
    tes_comp_t pos;
    tes_entity_t *h;
} tes_state_t;

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    free(s->h);
    free(s);
}

static void *tes_init(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    if (s->h)
        s->w = bench_positions_world(s->n, TES_STORAGE_TABLE, s->h, &s->pos);
    if (bench_failed())
        return s;
    uint64_t rng = cfg->seed ^ UINT64_C(0x6E7);
    bench_shuffle_entities(s->h, s->n, &rng);
    return s;
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    const tes_world_t *w = s->w;
    tes_comp_t c = s->pos;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        const Position *pos = (const Position *)tes_get(w, s->h[i], c);
        if (pos)
            sum += bits_of(pos->x);
        else
            missing++;
    }
    if (missing)
        bench_fail("tes_get returned NULL for %llu live entities", (unsigned long long)missing);
    return sum;
}

typedef struct {
    uint32_t n;
    uint32_t *gen;
    Position *pos;
    tes_entity_t *h;
} base_state_t;

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->gen);
    free(s->pos);
    free(s->h);
    free(s);
}

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    size_t n = s->n;
    s->gen = (uint32_t *)bench_alloc(n * sizeof *s->gen);
    s->pos = (Position *)bench_alloc(n * sizeof *s->pos);
    s->h = (tes_entity_t *)bench_alloc(n * sizeof *s->h);
    if (bench_failed())
        return s;
    bench_fresh_handles(s->gen, s->h, s->n);
    for (uint32_t i = 0; i < s->n; i++)
        s->pos[i] = bench_position(i);
    uint64_t rng = cfg->seed ^ UINT64_C(0x6E7);
    bench_shuffle_entities(s->h, s->n, &rng);
    return s;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const uint32_t *gen = s->gen;
    const Position *pos = s->pos;
    uint32_t n = s->n;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        if (index < n && gen[index] == tes_entity_generation(e))
            sum += bits_of(pos[index].x);
        else
            missing++;
    }
    if (missing)
        bench_fail("baseline lookup missed");
    return sum;
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_table_get = {
    "table: get Position random order",
    "get",
    ops,
    true,
    {tes_init, NULL, tes_run, NULL, tes_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};
