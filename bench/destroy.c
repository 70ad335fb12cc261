/*
 * destroy.c — destroy N empty entities one at a time, in spawn order.
 *
 * Tessera: a fresh world populated with tes_spawn_n (untimed), then
 * tes_destroy on every handle. Baseline: the plain-array entity list a
 * hand-written ECS keeps: per slot a generation and a free-list link;
 * destroy checks the handle's generation, bumps it and pushes the slot on
 * an intrusive LIFO free list. The checksum counts successful destroys.
 */
#include "bench.h"

typedef struct {
    uint32_t generation;
    uint32_t next; /* free-list link */
} base_slot_t;

typedef struct {
    uint32_t n, count, head, alive;
    base_slot_t *slots;
    tes_entity_t *h;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    s->slots = (base_slot_t *)bench_alloc((size_t)s->n * sizeof *s->slots);
    if (!s->slots)
        return;
    for (uint32_t i = 0; i < s->n; i++) {
        s->slots[i].generation = 1;
        s->slots[i].next = BENCH_NONE;
    }
    bench_fresh_handles(NULL, s->h, s->n);
    s->count = s->alive = s->n;
    s->head = BENCH_NONE;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_slot_t *slots = s->slots;
    uint32_t head = s->head, count = s->count;
    uint64_t ok = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        if (index < count && slots[index].generation == tes_entity_generation(e)) {
            slots[index].generation++;
            slots[index].next = head;
            head = index;
            ok++;
        }
    }
    s->head = head;
    s->alive -= (uint32_t)ok;
    return ok;
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
    free(s->h);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_destroy = {
    "entity: destroy 1-by-1",
    "entity",
    ops,
    true,
    {bench_tes_init, bench_tes_spawned, bench_tes_destroy_each, bench_tes_after_none_alive, bench_tes_fini},
    {base_init, base_before, base_run, base_after, base_fini},
};
