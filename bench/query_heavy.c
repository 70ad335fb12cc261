/*
 * query_heavy.c — W9: heavy per-entity compute through a table query.
 * 1000 entities each hold a 4x4 float matrix (table component Mat4); a run
 * inverts every matrix in place W9_REPS (100) times, one query pass per
 * repetition, with a Gauss-Jordan inverse (partial pivoting) shared by both
 * sides. Baseline: the same passes over a plain array of 1000 matrices.
 * ns per entity (one entity = W9_REPS inversions). The query's per-chunk
 * cost is amortised over 1000 inversions, so the two sides should be
 * within ~2%: anything more means the walk or the field access costs
 * something per entity.
 *
 * The inverse is kept out of line (noinline) so both sides run the very
 * same machine code and the results agree bit for bit. The matrices are
 * strictly diagonally dominant, so they stay well conditioned. Checksum: as
 * in query_move.h, state is never reset, the untimed `before` hook sums the
 * current matrices (Tessera: tes_get per handle) and `run` returns it.
 */
#include "bench.h"

#define W9_COUNT 1000u
#define W9_REPS 100

typedef struct Mat4 { float m[16]; } Mat4;

static inline float absf(float v) { return v < 0.0f ? -v : v; }

/* Inverts a row-major 4x4 matrix in place (Gauss-Jordan, partial pivoting).
 * A singular matrix is left unchanged. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static void mat4_invert(float *m)
{
    float a[4][8];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            a[r][c] = m[r * 4 + c];
            a[r][c + 4] = r == c ? 1.0f : 0.0f;
        }
    for (int col = 0; col < 4; col++) {
        int piv = col;
        float best = absf(a[col][col]);
        for (int r = col + 1; r < 4; r++)
            if (absf(a[r][col]) > best) {
                best = absf(a[r][col]);
                piv = r;
            }
        if (best == 0.0f)
            return;
        if (piv != col)
            for (int c = 0; c < 8; c++) {
                float t = a[col][c];
                a[col][c] = a[piv][c];
                a[piv][c] = t;
            }
        float inv = 1.0f / a[col][col];
        for (int c = 0; c < 8; c++)
            a[col][c] *= inv;
        for (int r = 0; r < 4; r++) {
            if (r == col)
                continue;
            float f = a[r][col];
            for (int c = 0; c < 8; c++)
                a[r][c] -= f * a[col][c];
        }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            m[r * 4 + c] = a[r][c + 4];
}

/* Entity k's starting matrix: diagonal 4..8, off-diagonal entries in
 * [-0.75, 0.75] (row sums of |off-diagonal| <= 2.25 < 4). */
static Mat4 initial(uint32_t k)
{
    Mat4 m;
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t c = 0; c < 4; c++)
            m.m[r * 4 + c] = r == c ? 4.0f + (float)(k % 5u)
                                    : 0.25f * ((float)((k + 3u * r + 5u * c) % 7u) - 3.0f);
    return m;
}

static uint64_t mix(uint32_t k, const Mat4 *m)
{
    uint64_t sum = 0;
    for (uint32_t j = 0; j < 16; j++)
        sum += (uint64_t)(j + 1u) * bench_bits_of(m->m[j]);
    return (uint64_t)(k + 1u) * sum;
}

typedef struct {
    tes_world_t *w;
    tes_query_t *q;
    tes_comp_t mat;
    tes_entity_t h[W9_COUNT];
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
    s->mat = bench_register(s->w, "Mat4", sizeof(Mat4), TES_STORAGE_TABLE);
    if (bench_failed())
        return s;
    int rc = tes_spawn_n(s->w, (int32_t)W9_COUNT, &s->mat, 1, s->h);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        return s;
    }
    for (uint32_t k = 0; k < W9_COUNT; k++) {
        Mat4 *m = (Mat4 *)tes_get_mut(s->w, s->h[k], s->mat);
        if (!m) {
            bench_fail("tes_get_mut(Mat4) returned NULL");
            return s;
        }
        *m = initial(k);
    }
    s->q = bench_query1(s->w, s->mat);
    return s;
}

static uint64_t mix_mat(uint32_t k, const void *m) { return mix(k, (const Mat4 *)m); }

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->pending = bench_state_checksum(s->w, s->h, W9_COUNT, s->mat, mix_mat);
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int64_t seen = 0;
    for (int r = 0; r < W9_REPS; r++) {
        tes_iter_t it = tes_query_iter(s->q);
        while (tes_iter_next(&it)) {
            Mat4 *m = (Mat4 *)tes_field(&it, 0);
            for (int32_t i = 0; i < it.count; i++)
                mat4_invert(m[i].m);
            seen += it.count;
        }
    }
    if (seen != (int64_t)W9_REPS * W9_COUNT)
        bench_fail("query visited %lld entities, expected %lld", (long long)seen,
                   (long long)W9_REPS * W9_COUNT);
    return s->pending;
}

typedef struct {
    Mat4 m[W9_COUNT];
    uint64_t pending;
} base_state_t;

static void base_fini(void *p) { free(p); }

static void *base_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    for (uint32_t k = 0; k < W9_COUNT; k++)
        s->m[k] = initial(k);
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < W9_COUNT; k++)
        sum += mix(k, &s->m[k]);
    s->pending = sum;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    for (int r = 0; r < W9_REPS; r++)
        for (uint32_t k = 0; k < W9_COUNT; k++)
            mat4_invert(s->m[k].m);
    return s->pending;
}

static int64_t ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return W9_COUNT;
}

const bench_workload_t bench_w9_heavy = {
    "W9 heavy: 4x4 invert x100 (table)",
    "ent",
    ops,
    true,
    {tes_init, tes_before, tes_run, NULL, tes_fini},
    {base_init, base_before, base_run, NULL, base_fini},
};
