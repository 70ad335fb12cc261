/*
 * spawn_n.c — spawn N empty entities in one bulk call.
 *
 * Tessera: one tes_spawn_n(w, N, NULL, 0, out) on a fresh world, then a
 * checksum pass over the handles. Baseline: reserve the naive
 * {index, generation} list once with malloc, fill it, write the handles and
 * checksum them. Measures the bulk path's fixed costs and its per-entity
 * loop; both allocate inside the timed region.
 */
#include "bench.h"

typedef struct {
    uint32_t n;
    tes_world_t *w;
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
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, NULL, 0, s->out);
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
    if (s->w && tes_entity_count(s->w) != (int32_t)s->n)
        bench_fail("tes_entity_count = %d, expected %u", tes_entity_count(s->w), s->n);
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
    bench_slot_t *slots;
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
    bench_slot_t *slots = (bench_slot_t *)malloc((size_t)s->n * sizeof *slots);
    if (!slots) {
        bench_fail("malloc failed");
        return 0;
    }
    s->slots = slots;
    tes_entity_t *out = s->out;
    for (uint32_t i = 0; i < s->n; i++) {
        slots[i].index = i;
        slots[i].generation = 1;
        out[i] = tes_entity_make(i, 1);
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++)
        sum += out[i];
    return sum;
}

static void base_after(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->slots);
    s->slots = NULL;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->slots);
    free(s->out);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_spawn_n = {
    "entity: spawn_n bulk",
    "entity",
    ops,
    true,
    {tes_init, tes_before, tes_run, tes_after, tes_fini},
    {base_init, NULL, base_run, base_after, base_fini},
};
