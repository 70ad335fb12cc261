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
 * A second workload makes the same reads through a lookup view
 * (tes_lookup_get_table, the form for a loop that knows its storage,
 * inlined into the loop) against the same baseline.
 */
#include "bench.h"

static inline uint64_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

typedef bench_get_state_t tes_state_t;

static void *tes_init(const bench_cfg_t *cfg)
{
    return bench_get_init(cfg, TES_STORAGE_TABLE, UINT64_C(0x6E7));
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

/* The same reads through a lookup view (bench_lookup_state_t), same
 * world and handles. */
static void *lookup_init(const bench_cfg_t *cfg)
{
    return bench_lookup_init(cfg, TES_STORAGE_TABLE, UINT64_C(0x6E7));
}

static uint64_t lookup_run(void *p)
{
    bench_lookup_state_t *s = (bench_lookup_state_t *)p;
    const tes_lookup_t *view = &s->view;
    const tes_entity_t *h = s->get->h;
    uint32_t n = s->get->n;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        const Position *pos = (const Position *)tes_lookup_get_table(view, h[i]);
        if (pos)
            sum += bits_of(pos->x);
        else
            missing++;
    }
    if (missing)
        bench_fail("tes_lookup_get_table returned NULL for %llu live entities", (unsigned long long)missing);
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
    s->pos = (Position *)bench_alloc((size_t)s->n * sizeof *s->pos);
    if (!bench_get_handles(cfg, UINT64_C(0x6E7), &s->gen, &s->h) || !s->pos)
        return s;
    for (uint32_t i = 0; i < s->n; i++)
        s->pos[i] = bench_position(i);
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
    {tes_init, NULL, tes_run, NULL, bench_get_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};

const bench_workload_t bench_table_lookup_get = {
    "table: lookup_get random order",
    "get",
    ops,
    true,
    {lookup_init, NULL, lookup_run, NULL, bench_lookup_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};
