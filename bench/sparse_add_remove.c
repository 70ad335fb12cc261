/*
 * sparse_add_remove.c — add then remove a 4-byte sparse component
 * (SparseHealth, TES_STORAGE_SPARSE) on N/100 entities that have Position.
 *
 * One run makes SAR_REPS passes; each pass adds the component to every
 * entity, then removes it from every entity, so the store holds thousands
 * of members and removals are real swap-and-pops. The entities never move
 * between tables. One op = one add + one remove. Baseline: a plain,
 * unpaged sparse set: a generation array for the alive check, an
 * entity-index -> packed-position array, and packed entity + data arrays
 * with swap-and-pop removal.
 */
#include "bench.h"

#define SAR_REPS 20

typedef bench_tes_state_t tes_state_t;

static void tes_before(void *p)
{
    bench_tes_spawned_extra((tes_state_t *)p, "SparseHealth", sizeof(Health), TES_STORAGE_SPARSE);
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    return bench_add_remove_passes(s->w, s->h, s->n, s->extra, SAR_REPS);
}

typedef struct {
    uint32_t n, count;
    uint32_t *gen;
    uint32_t *where;       /* entity index -> packed position, or BENCH_NONE */
    uint32_t *packed;      /* packed position -> entity index */
    Health *data;
    tes_entity_t *h;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->small_n);
    size_t n = s->n;
    s->gen = (uint32_t *)bench_alloc(n * sizeof *s->gen);
    s->where = (uint32_t *)bench_alloc(n * sizeof *s->where);
    s->packed = (uint32_t *)bench_alloc(n * sizeof *s->packed);
    s->data = (Health *)bench_alloc(n * sizeof *s->data);
    s->h = (tes_entity_t *)bench_alloc(n * sizeof *s->h);
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    bench_fresh_handles(s->gen, s->h, s->n);
    for (uint32_t i = 0; i < s->n; i++)
        s->where[i] = BENCH_NONE;
    s->count = 0;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint32_t *gen = s->gen, *where = s->where, *packed = s->packed;
    Health *data = s->data;
    const tes_entity_t *h = s->h;
    uint32_t n = s->n, count = s->count;
    uint64_t ok = 0;
    for (int r = 0; r < SAR_REPS; r++) {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t index = tes_entity_index(h[i]);
            if (index >= n || gen[index] != tes_entity_generation(h[i]))
                continue;
            if (where[index] == BENCH_NONE) {
                where[index] = count;
                packed[count] = index;
                data[count].hp = 0;
                count++;
            }
            ok++;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t index = tes_entity_index(h[i]);
            if (index >= n || gen[index] != tes_entity_generation(h[i]))
                continue;
            uint32_t pos = where[index];
            if (pos != BENCH_NONE) {
                uint32_t last = --count;
                if (pos != last) {
                    uint32_t moved = packed[last];
                    packed[pos] = moved;
                    data[pos] = data[last];
                    where[moved] = pos;
                }
                where[index] = BENCH_NONE;
            }
            ok++;
        }
    }
    s->count = count;
    return ok;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->gen);
    free(s->where);
    free(s->packed);
    free(s->data);
    free(s->h);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return (int64_t)SAR_REPS * cfg->small_n; }

const bench_workload_t bench_sparse_add_remove = {
    "sparse: add+remove 4B comp (N/100)",
    "pair",
    ops,
    true,
    {bench_tes_init_small, tes_before, tes_run, bench_tes_after_add_remove, bench_tes_fini},
    {base_init, base_before, base_run, NULL, base_fini},
};
