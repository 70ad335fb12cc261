/*
 * query_move_10.c — W8: Position += Velocity where only every 10th of N
 * (1M) entities has Velocity; ns per MATCHED entity (N/10 per pass).
 *
 * Entities are spawned with Position, then Velocity is set on every 10th
 * one (untimed). Three Tessera set-ups of the query {Position, Velocity}
 * (see query_move.h for the shared code and the checksum), each against
 * the same baseline: a plain loop over matched-only arrays Position[N/10]
 * and Velocity[N/10]:
 * - table query: the matches live in their own {Position, Velocity}
 *   table, so the 90% without Velocity are never looked at;
 * - sparse view: Velocity (N/10) drives; each entity's Position is found
 *   through the sparse set. Matches sit 10 apart in Position's packed
 *   array, so no two consecutive matches have contiguous Position fields
 *   and every chunk holds a single entity: this measures the per-entity
 *   cost of the driven walk plus a chunk per entity;
 * - owning group: the group keeps the matches packed at the front of both
 *   stores in the same order, so chunks are plain slices again.
 * W8_REPS passes per run.
 *
 * A fourth workload puts the sparse view beside its floor instead of the
 * matched-only arrays: plain C on the sparse view's own data layout (one
 * 8-byte versioned sparse entry per entity index, every Position at 12
 * bytes in entity order, the matches' handles and Velocity packed) doing
 * what any view that keeps tes_field's contract must do, with nothing
 * else: per block of 64 matches, look each Position up, copy it into a
 * buffer, run the loop, and copy back each value the loop changed unless
 * the stored one changed meanwhile. Its ratio is the view's overhead over
 * the memory traffic of the layout itself.
 * A fifth puts plain C against plain C: the layout walked with each
 * Position updated in place (no gather, no copy back), against the
 * matched-only arrays. That is the least any sparse view can cost on this
 * layout, so its ratio bounds "sparse view vs table query" from below.
 */
#include "query_move.h"

#define W8_REPS 100
#define W8_STRIDE 10u

static int64_t ops(const bench_cfg_t *cfg)
{
    return (int64_t)move_matches(bench_u32(cfg->n), W8_STRIDE) * W8_REPS;
}

static void *table_init(const bench_cfg_t *cfg)
{
    return move_tes_init(cfg, W8_STRIDE, MOVE_TABLE, W8_REPS);
}
static void *view_init(const bench_cfg_t *cfg)
{
    return move_tes_init(cfg, W8_STRIDE, MOVE_VIEW, W8_REPS);
}
static void *group_init(const bench_cfg_t *cfg)
{
    return move_tes_init(cfg, W8_STRIDE, MOVE_GROUP, W8_REPS);
}
static void *base_init(const bench_cfg_t *cfg) { return move_base_init(cfg, W8_STRIDE, W8_REPS); }

/* ------------------------------------------------------------------------ */
/* The gather floor: the sparse view's layout, walked by plain C             */
/* ------------------------------------------------------------------------ */

#define FLOOR_BLOCK 64u
#define FLOOR_GENERATION UINT64_C(1) /* every handle's generation */

typedef struct floor_state {
    uint64_t *sparse;  /* per entity index: generation << 32 | position */
    Position *pos;     /* every entity's Position, at its position */
    uint64_t *driver;  /* the matches' handles (generation << 32 | index) */
    Velocity *vel;     /* the matches' Velocity, in driver order */
    uint32_t n, m, stride;
    int reps;
    uint64_t pending;
} floor_state_t;

static void floor_fini(void *p)
{
    floor_state_t *s = (floor_state_t *)p;
    free(s->sparse);
    free(s->pos);
    free(s->driver);
    free(s->vel);
    free(s);
}

static void *floor_init(const bench_cfg_t *cfg)
{
    floor_state_t *s = (floor_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->m = move_matches(s->n, W8_STRIDE);
    s->stride = W8_STRIDE;
    s->reps = W8_REPS;
    s->sparse = (uint64_t *)bench_alloc((size_t)s->n * sizeof *s->sparse);
    s->pos = (Position *)bench_alloc((size_t)s->n * sizeof *s->pos);
    s->driver = (uint64_t *)bench_alloc((size_t)s->m * sizeof *s->driver);
    s->vel = (Velocity *)bench_alloc((size_t)s->m * sizeof *s->vel);
    if (bench_failed())
        return s;
    for (uint32_t i = 0; i < s->n; i++) {
        s->sparse[i] = FLOOR_GENERATION << 32 | i;
        s->pos[i] = bench_position(i);
    }
    for (uint32_t k = 0; k < s->m; k++) {
        s->driver[k] = FLOOR_GENERATION << 32 | (k * W8_STRIDE);
        s->vel[k] = move_velocity(k * W8_STRIDE);
    }
    return s;
}

static void floor_before(void *p)
{
    floor_state_t *s = (floor_state_t *)p;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < s->m; k++)
        sum += move_mix(k * s->stride, &s->pos[k * s->stride]);
    s->pending = sum;
}

static uint64_t floor_run(void *p)
{
    floor_state_t *s = (floor_state_t *)p;
    uint32_t at[FLOOR_BLOCK];
    Position values[FLOOR_BLOCK], originals[FLOOR_BLOCK];
    uint64_t seen = 0;
    for (int r = 0; r < s->reps; r++) {
        for (uint32_t b = 0; b < s->m; b += FLOOR_BLOCK) {
            uint32_t k = s->m - b < FLOOR_BLOCK ? s->m - b : FLOOR_BLOCK;
            for (uint32_t j = 0; j < k; j++) {
                uint64_t e = s->driver[b + j], entry = s->sparse[(uint32_t)e];
                if (((e & ~(uint64_t)UINT32_MAX) ^ entry) >= UINT32_MAX)
                    break; /* never: every match holds a Position */
                at[j] = (uint32_t)entry;
            }
            for (uint32_t j = 0; j < k; j++)
                values[j] = s->pos[at[j]];
            memcpy(originals, values, k * sizeof *values);
            move_chunk(values, s->vel + b, (int32_t)k);
            for (uint32_t j = 0; j < k; j++) {
                Position *stored = &s->pos[at[j]];
                if (memcmp(&values[j], &originals[j], sizeof *values) != 0 &&
                    memcmp(stored, &originals[j], sizeof *values) == 0)
                    *stored = values[j];
            }
            seen += k;
        }
    }
    if (seen != (uint64_t)s->reps * s->m)
        bench_fail("floor visited %llu matches", (unsigned long long)seen);
    return s->pending;
}

/* The in-place floor: the same layout, each match's Position found
 * through its sparse entry and updated where it lies. No gather, no copy
 * back: less than any view that hands the loop contiguous arrays can do,
 * only the memory each match must touch (its entry's line and its
 * Position's line, 80 and 120 bytes from the last match's). */
static uint64_t floor_in_place_run(void *p)
{
    floor_state_t *s = (floor_state_t *)p;
    uint64_t seen = 0;
    for (int r = 0; r < s->reps; r++) {
        for (uint32_t k = 0; k < s->m; k++) {
            uint64_t e = s->driver[k], entry = s->sparse[(uint32_t)e];
            if (((e & ~(uint64_t)UINT32_MAX) ^ entry) >= UINT32_MAX)
                break; /* never: every match holds a Position */
            move_chunk(&s->pos[(uint32_t)entry], &s->vel[k], 1);
            seen++;
        }
    }
    if (seen != (uint64_t)s->reps * s->m)
        bench_fail("in-place floor visited %llu matches", (unsigned long long)seen);
    return s->pending;
}

const bench_workload_t bench_w8_table = {
    "W8 move 10%: table query",
    "match",
    ops,
    true,
    {table_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};

const bench_workload_t bench_w8_view = {
    "W8 move 10%: sparse view",
    "match",
    ops,
    true,
    {view_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};

const bench_workload_t bench_w8_group = {
    "W8 move 10%: owning group",
    "match",
    ops,
    true,
    {group_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};

const bench_workload_t bench_w8_floor = {
    "W8 sparse view vs gather floor",
    "match",
    ops,
    true,
    {view_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {floor_init, floor_before, floor_run, NULL, floor_fini},
};

/* Plain C against plain C: the in-place floor of any sparse view on this
 * layout, against the matched-only arrays the table query walks. Its ratio
 * is the least "sparse view vs table query" any view can reach here. */
const bench_workload_t bench_w8_floor_in_place = {
    "W8 in-place floor vs matched arrays",
    "match",
    ops,
    true,
    {floor_init, floor_before, floor_in_place_run, NULL, floor_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};
