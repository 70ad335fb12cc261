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

typedef bench_tes_state_t tes_state_t;

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    tes_entity_t *out = s->h;
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

typedef bench_base_state_t base_state_t;

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    tes_entity_t *out = s->h;
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

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_spawn = {
    "entity: spawn 1-by-1",
    "entity",
    ops,
    true,
    {bench_tes_init, bench_tes_world, tes_run, bench_tes_after_alive, bench_tes_fini},
    {bench_base_init, NULL, base_run, bench_base_release, bench_base_fini},
};
