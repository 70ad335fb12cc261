/*
 * query_move.c — W4: Position += Velocity over N (1M) entities that all
 * have both components; ns per entity (one entity updated once).
 *
 * Three Tessera set-ups of the same query {Position, Velocity}, each
 * against the same baseline (a plain loop over Position[N] and
 * Velocity[N]); see query_move.h for the shared code and the checksum:
 * - table query: table components (the default storage), one table of N
 *   rows, so the walk is one chunk per table;
 * - owning group: sparse components with TES_QUERY_OWNING_GROUP, so every
 *   chunk is a slice of both stores (cut at their 1024-value data pages);
 * - sparse view: sparse components, no group: the smaller pool drives (a
 *   tie here: both hold N), the other is looked up per entity and chunks
 *   are the runs whose fields happen to be contiguous (same insertion order
 *   here, so runs end only at data page boundaries).
 * W4_REPS passes per run.
 */
#include "query_move.h"

#define W4_REPS 20

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n * W4_REPS; }

static void *table_init(const bench_cfg_t *cfg) { return move_tes_init(cfg, 1, MOVE_TABLE, W4_REPS); }
static void *group_init(const bench_cfg_t *cfg) { return move_tes_init(cfg, 1, MOVE_GROUP, W4_REPS); }
static void *view_init(const bench_cfg_t *cfg) { return move_tes_init(cfg, 1, MOVE_VIEW, W4_REPS); }
static void *base_init(const bench_cfg_t *cfg) { return move_base_init(cfg, 1, W4_REPS); }

const bench_workload_t bench_w4_table = {
    "W4 move: table query",
    "ent",
    ops,
    true,
    {table_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};

const bench_workload_t bench_w4_group = {
    "W4 move: owning group",
    "ent",
    ops,
    true,
    {group_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};

const bench_workload_t bench_w4_view = {
    "W4 move: sparse view",
    "ent",
    ops,
    true,
    {view_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {base_init, move_base_before, move_base_run, NULL, move_base_fini},
};
