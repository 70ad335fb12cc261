/*
 * The plan of a plain group, shared by the flush (defer_flush.c, which
 * works plans out and applies single groups by them) and the runs
 * (defer_runs.c, which apply one plan to many entities at once). Its move
 * plan (storage/move_plan.h) maps each column of the destination table to
 * where its cell comes from, so a row moves as bytes with nothing looked
 * up, by tes__apply like every other move.
 */
#ifndef TES_WORLD_DEFER_RUNS_H
#define TES_WORLD_DEFER_RUNS_H

#include "world/world.h"

/* Commands one group may hold; larger groups take the merged move. */
#define TES__GROUP_MAX TES__PLAN_VALUES

/* A group's shape (its source table, commands, and which of them stage a
 * value) and the move plan for it: value j of the plan is group command
 * j's staged value, read from an array of pointers. */
typedef struct group_plan {
    const tes__table_t *src; /* NULL: no plan yet */
    uint32_t k;              /* commands in the group */
    uint32_t valued;         /* bit j: command j stages a value */
    tes_comp_t comps[TES__GROUP_MAX];
    bool plain; /* false: this shape takes the merged move */
    tes__move_plan_t move;
} tes__group_plan_t;

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
