/*
 * spawn.c — spawn N empty entities one at a time.
 *
 * Tessera: tes_spawn in a loop on a fresh world (created untimed), so every
 * run pays for growing the entity index from empty, as a real first spawn
 * wave would. Baseline: what a naive entity list does, pushing
 * {index, generation} into a growable array that doubles with realloc
 * (starting at 1024 like Tessera's index). Both write the handles out and
 * checksum them; a fresh Tessera world must issue index i, generation 1 to
 * the i-th spawn, so the checksums must match.
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
    tes_world_t *w = s->w;
    tes_entity_t *out = s->out;
    uint64_t sum = 0;
    bool bad = false;
    for (uint32_t i = 0; i < s->n; i++) {
        tes_entity_t e = tes_spawn(w);
        bad |= e == TES_NULL;
        out[i] = e;
        sum += e;
    }
    if (bad)
        bench_fail("tes_spawn: %s", tes_strerror(tes_last_error(w)));
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
    uint32_t count, cap;
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
    tes_entity_t *out = s->out;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->count == s->cap) {
            uint32_t cap = s->cap ? s->cap * 2 : 1024;
            bench_slot_t *slots = (bench_slot_t *)realloc(s->slots, (size_t)cap * sizeof *slots);
            if (!slots) {
                bench_fail("realloc failed");
                return 0;
            }
            s->slots = slots;
            s->cap = cap;
        }
        uint32_t index = s->count++;
        s->slots[index].index = index;
        s->slots[index].generation = 1;
        tes_entity_t e = tes_entity_make(index, 1);
        out[i] = e;
        sum += e;
    }
    return sum;
}

static void base_after(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->slots);
    s->slots = NULL;
    s->count = s->cap = 0;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->slots);
    free(s->out);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_spawn = {
    "entity: spawn 1-by-1",
    "entity",
    ops,
    true,
    {tes_init, tes_before, tes_run, tes_after, tes_fini},
    {base_init, NULL, base_run, base_after, base_fini},
};
