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
