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

typedef struct {
    uint32_t n;
    tes_world_t *w;
    tes_comp_t pos, health;
    tes_entity_t *h;
} tes_state_t;

static void *tes_init(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->small_n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    return s;
}

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    s->pos = bench_register(s->w, "Position", sizeof(Position), TES_STORAGE_TABLE);
    s->health = bench_register(s->w, "SparseHealth", sizeof(Health), TES_STORAGE_SPARSE);
    if (bench_failed())
        return;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, &s->pos, 1, s->h);
    if (rc != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    tes_comp_t health = s->health;
    const tes_entity_t *h = s->h;
    uint32_t n = s->n;
    uint64_t ok = 0;
    for (int r = 0; r < SAR_REPS; r++) {
        for (uint32_t i = 0; i < n; i++)
            ok += tes_add(w, h[i], health) == TES_OK;
        for (uint32_t i = 0; i < n; i++)
            ok += tes_remove(w, h[i], health) == TES_OK;
    }
    return ok;
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        tes_entity_t e = s->h[s->n / 2];
        if (!tes_has(s->w, e, s->pos) || tes_has(s->w, e, s->health))
            bench_fail("wrong component set after sparse add/remove");
    }
    tes_world_free(s->w);
    s->w = NULL;
}

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    free(s->h);
    free(s);
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
    for (uint32_t i = 0; i < s->n; i++) {
        s->gen[i] = 1;
        s->where[i] = BENCH_NONE;
        s->h[i] = tes_entity_make(i, 1);
    }
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
    {tes_init, tes_before, tes_run, tes_after, tes_fini},
    {base_init, base_before, base_run, NULL, base_fini},
};
