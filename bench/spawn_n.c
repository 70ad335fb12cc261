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

typedef bench_tes_state_t tes_state_t;

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, NULL, 0, s->h);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        return 0;
    }
    return bench_sum_handles(s->h, s->n);
}

typedef bench_base_state_t base_state_t;

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    bench_slot_t *slots = (bench_slot_t *)malloc((size_t)s->n * sizeof *slots);
    if (!slots) {
        bench_fail("malloc failed");
        return 0;
    }
    s->slots = slots;
    tes_entity_t *out = s->h;
    for (uint32_t i = 0; i < s->n; i++) {
        slots[i].index = i;
        slots[i].generation = 1;
        out[i] = tes_entity_make(i, 1);
    }
    return bench_sum_handles(out, s->n);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_spawn_n = {
    "entity: spawn_n bulk",
    "entity",
    ops,
    true,
    {bench_tes_init, bench_tes_world, tes_run, bench_tes_after_alive, bench_tes_fini},
    {bench_base_init, NULL, base_run, bench_base_release, bench_base_fini},
};
