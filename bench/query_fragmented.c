/*
 * query_fragmented.c — W5: fragmented iteration. 26 table components A..Z
 * (one float each); 20 entities per letter, each of which also has Data
 * {float}. The query {Data} therefore matches 26 tables of 20 rows: a pass
 * is 26 chunks, so per-chunk costs of the query walk (tes_iter_next,
 * tes_field) weigh against only 20 entities each. A pass adds 1 to every
 * Data.v; ns per entity (520 per pass, W5_REPS passes per run).
 * Baseline: one plain array of 520 floats, the same loop.
 *
 * Checksum: as in query_move.h, the state is never reset and both sides
 * advance in lockstep (integer-valued floats, exact adds); the untimed
 * `before` hook sums the current values (Tessera: tes_get per handle, in
 * spawn order) and `run` returns that sum, so run k checks runs 0..k-1. The
 * timed run also counts the entities visited.
 */
#include "bench.h"

#define W5_LETTERS 26u
#define W5_PER_LETTER 20u
#define W5_COUNT (W5_LETTERS * W5_PER_LETTER)
#define W5_REPS 100000

typedef struct Data { float v; } Data;

/* Entity k (spawn order) starts with Data.v = initial(k). */
static inline float initial(uint32_t k) { return (float)(k % 97u); }

static inline uint64_t mix(uint32_t k, float v) { return (uint64_t)(k + 1u) * bench_bits_of(v); }

/* The work itself, shared by both sides. */
static inline void bump(float *v, int32_t count)
{
    for (int32_t i = 0; i < count; i++)
        v[i] += 1.0f;
}

typedef struct {
    tes_world_t *w;
    tes_query_t *q;
    tes_comp_t data;
    tes_entity_t h[W5_COUNT]; /* spawn order */
    uint64_t pending;
} tes_state_t;

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_query_free(s->q);
    tes_world_free(s->w);
    free(s);
}

static void *tes_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (!(s->w = bench_world_new()))
        return s;
    s->data = bench_register(s->w, "Data", sizeof(Data), TES_STORAGE_TABLE);
    for (uint32_t l = 0; l < W5_LETTERS && !bench_failed(); l++) {
        char name[2] = {(char)('A' + l), 0};
        tes_comp_t comps[2] = {bench_register(s->w, name, sizeof(float), TES_STORAGE_TABLE),
                               s->data};
        if (bench_failed())
            break;
        tes_entity_t *h = s->h + l * W5_PER_LETTER;
        int rc = tes_spawn_n(s->w, (int32_t)W5_PER_LETTER, comps, 2, h);
        if (rc != TES_OK) {
            bench_fail("tes_spawn_n: %s", tes_strerror(rc));
            break;
        }
        for (uint32_t i = 0; i < W5_PER_LETTER; i++) {
            uint32_t k = l * W5_PER_LETTER + i;
            float *letter = (float *)tes_get_mut(s->w, h[i], comps[0]);
            Data *d = (Data *)tes_get_mut(s->w, h[i], s->data);
            if (!letter || !d) {
                bench_fail("tes_get_mut returned NULL");
                break;
            }
            *letter = (float)l;
            d->v = initial(k);
        }
    }
    if (bench_failed())
        return s;
    s->q = bench_query1(s->w, s->data);
    if (s->q && tes_query_count(s->q) != (int32_t)W5_COUNT)
        bench_fail("query matches %d entities, expected %u", tes_query_count(s->q), W5_COUNT);
    return s;
}

static uint64_t mix_data(uint32_t k, const void *d) { return mix(k, ((const Data *)d)->v); }

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->pending = bench_state_checksum(s->w, s->h, W5_COUNT, s->data, mix_data);
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int64_t seen = 0;
    for (int r = 0; r < W5_REPS; r++) {
        tes_iter_t it = tes_query_iter(s->q);
        while (tes_iter_next(&it)) {
            Data *d = (Data *)tes_field(&it, 0);
            bump(&d->v, it.count);
            seen += it.count;
        }
    }
    if (seen != (int64_t)W5_REPS * W5_COUNT)
        bench_fail("query visited %lld entities, expected %lld", (long long)seen,
                   (long long)W5_REPS * W5_COUNT);
    return s->pending;
}

typedef struct {
    float v[W5_COUNT];
    uint64_t pending;
} base_state_t;

static void base_fini(void *p) { free(p); }

static void *base_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    for (uint32_t k = 0; k < W5_COUNT; k++)
        s->v[k] = initial(k);
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < W5_COUNT; k++)
        sum += mix(k, s->v[k]);
    s->pending = sum;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    for (int r = 0; r < W5_REPS; r++)
        bump(s->v, (int32_t)W5_COUNT);
    return s->pending;
}

static int64_t ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return (int64_t)W5_REPS * W5_COUNT;
}

const bench_workload_t bench_w5_fragmented = {
    "W5 fragmented: 26 tables x 20",
    "ent",
    ops,
    true,
    {tes_init, tes_before, tes_run, NULL, tes_fini},
    {base_init, base_before, base_run, NULL, base_fini},
};
