/*
 * The plan of a plain group, shared by the flush (defer_flush.c, which
 * works plans out and applies single groups by them) and the runs
 * (defer_runs.c, which apply one plan to many entities at once). A plan
 * maps each column of the destination table to where its cell comes from,
 * so a row moves as bytes with nothing looked up. tes__move_by_plan, the
 * row move both files make once per entity, is inline here so that
 * neither pays a call for it: a system's queue of sets is hundreds of
 * thousands of such moves.
 */
#ifndef TES_WORLD_DEFER_RUNS_H
#define TES_WORLD_DEFER_RUNS_H

#include "world/world.h"

/* Commands one group may hold, and columns one plan may map; larger groups
 * and wider tables take the merged move. */
#define TES__GROUP_MAX 8
#define TES__PLAN_COLUMNS 32

typedef struct group_plan {
    const tes__table_t *src; /* NULL: no plan yet */
    uint32_t k;              /* commands in the group */
    uint32_t valued;         /* bit j: command j stages a value */
    tes_comp_t comps[TES__GROUP_MAX];
    tes__table_t *dst;
    bool plain; /* false: this shape takes the merged move */
    /* How each cell of the entity's new row is filled, as three lists of
     * dst columns: moved from a src column (move_from), assigned the staged
     * value of group command set_from (the last one staged for it), or
     * zeroed (a component added without a value). When dst is src, only
     * the assigned cells are written. */
    uint8_t moves, sets, zeros;
    uint8_t move_col[TES__PLAN_COLUMNS], move_from[TES__PLAN_COLUMNS];
    uint8_t set_col[TES__GROUP_MAX], set_from[TES__GROUP_MAX];
    uint8_t zero_col[TES__GROUP_MAX];
} tes__group_plan_t;

/* Moves e's row from src (at slot) into dst, which has room, by the plan's
 * lists; values[j] is the value group command j staged. */
static tes__always_inline void tes__move_by_plan(tes_world_t *w, const tes__group_plan_t *plan,
                                                 tes__slot_t *slot, tes_entity_t e,
                                                 tes__table_t *src, tes__table_t *dst,
                                                 const void *const *values)
{
    uint32_t src_row = slot->row;
    uint32_t row = tes__table_push(dst, e);
    const tes__column_t *dc = dst->columns, *sc = src->columns;
    for (uint32_t i = 0; i < plan->moves; i++) {
        const tes__column_t *col = &dc[plan->move_col[i]];
        tes__copy_small(col->data + (size_t)row * col->size,
                        sc[plan->move_from[i]].data + (size_t)src_row * col->size, col->size);
    }
    for (uint32_t i = 0; i < plan->sets; i++) {
        const tes__column_t *col = &dc[plan->set_col[i]];
        tes__copy_small(col->data + (size_t)row * col->size, values[plan->set_from[i]],
                        col->size);
    }
    for (uint32_t i = 0; i < plan->zeros; i++) {
        const tes__column_t *col = &dc[plan->zero_col[i]];
        tes__zero_small(col->data + (size_t)row * col->size, col->size);
    }
    tes_entity_t moved = tes__table_remove_row_plain(src, src_row);
    if (moved != TES_NULL)
        w->entities.slots[tes_entity_index(moved)].row = src_row;
    tes__slot_set_table(slot, dst->id, row);
    tes__table_debug_move(src, &w->alloc);
}

/* Apply the run of plain groups that starts at command `at`, the group
 * there included, by the plan the flush made for that group (planned, not
 * applied: see apply_group in defer_flush.c): tes__defer_group_run for
 * groups of several commands, whose kinds are `kinds`, and
 * tes__defer_single_run for groups of one command, of kind `kind`. Each
 * returns the position after the last group it applied; `at` when the
 * destination cannot take even one row, with nothing changed (the flush
 * then applies the group alone, to fail or not on its own). */
uint32_t tes__defer_group_run(tes_world_t *w, uint32_t at, uint32_t end,
                              const tes__group_plan_t *plan, const uint8_t *kinds);
uint32_t tes__defer_single_run(tes_world_t *w, uint32_t at, uint32_t end,
                               const tes__group_plan_t *plan, uint8_t kind);

#endif
