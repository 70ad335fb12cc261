/*
 * sparse_get.c — tes_get of a 12-byte sparse component (SparsePosition) for
 * N entities in random order.
 *
 * Built once, untimed (the data is only read): N entities spawned with
 * tes_spawn_n carrying SparsePosition, values written with tes_get_mut,
 * handles shuffled with a fixed seed. A run looks up every handle and sums
 * the bits of x. Tessera's path: the paged sparse array (position +
 * generation in one entry, which answers for liveness by itself), then the
 * data page, each page reached through its biased base (no NULL test, no
 * mask).
 * Baseline: plain arrays: a generation array, an entity-index ->
 * packed-position array and a packed Position array; same handles, same
 * data, same checksum.
 * A second workload makes the same reads through a lookup view
 * (tes_lookup_get_sparse, the form for a loop that knows its storage,
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
    return bench_get_init(cfg, TES_STORAGE_SPARSE, UINT64_C(0x59A));
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
    return bench_lookup_init(cfg, TES_STORAGE_SPARSE, UINT64_C(0x59A));
}

static uint64_t lookup_run(void *p)
{
    bench_lookup_state_t *s = (bench_lookup_state_t *)p;
    const tes_lookup_t *view = &s->view;
    const tes_entity_t *h = s->get->h;
    uint32_t n = s->get->n;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        const Position *pos = (const Position *)tes_lookup_get_sparse(view, h[i]);
        if (pos)
            sum += bits_of(pos->x);
        else
            missing++;
    }
    if (missing)
        bench_fail("tes_lookup_get_sparse returned NULL for %llu live entities", (unsigned long long)missing);
    return sum;
}

typedef struct {
    uint32_t n;
    uint32_t *gen;
    uint32_t *where;
    Position *packed;
    tes_entity_t *h;
} base_state_t;

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->gen);
    free(s->where);
    free(s->packed);
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
    s->where = (uint32_t *)bench_alloc(n * sizeof *s->where);
    s->packed = (Position *)bench_alloc(n * sizeof *s->packed);
    if (!bench_get_handles(cfg, UINT64_C(0x59A), &s->gen, &s->h) || bench_failed())
        return s;
    for (uint32_t i = 0; i < s->n; i++) {
        s->where[i] = i; /* inserted in spawn order */
        s->packed[i] = bench_position(i);
    }
    return s;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const uint32_t *gen = s->gen, *where = s->where;
    const Position *packed = s->packed;
    uint32_t n = s->n;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        uint32_t pos;
        if (index < n && gen[index] == tes_entity_generation(e) &&
            (pos = where[index]) != BENCH_NONE)
            sum += bits_of(packed[pos].x);
        else
            missing++;
    }
    if (missing)
        bench_fail("baseline lookup missed");
    return sum;
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_sparse_get = {
    "sparse: get random order",
    "get",
    ops,
    true,
    {tes_init, NULL, tes_run, NULL, bench_get_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};

const bench_workload_t bench_sparse_lookup_get = {
    "sparse: lookup_get random order",
    "get",
    ops,
    true,
    {lookup_init, NULL, lookup_run, NULL, bench_lookup_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};
