/*
 * The move plan: the one description of how rows go from one table to
 * another, used by every write that moves rows (a single add or remove,
 * quiet or hooked, a flushed group or run, a spawn with its values, a bulk
 * spawn, a whole table destroyed). A plan names its source and
 * destination tables and, for each destination column, where the cell
 * comes from: moved from the source row, value k of the call, or
 * constructed (the ctor hook, or zeroes); source columns the destination
 * lacks are dropped (destroyed). The copy routine that does it is chosen
 * when the plan is made, from the tables' hooks, the columns' sizes and
 * counts, so a call tests nothing per column: straight code for an entity
 * built up one small component at a time, lists walked as plain bytes for
 * other plain tables, and a walk that runs move, ctor, copy and dtor hooks
 * for the rest.
 *
 * Plans are cached where their shape recurs (each table's last edge in
 * each direction, the last bundle tes_spawn_with placed, the flush's last
 * group shape) and never go stale: tables, their columns and components
 * are never deleted, a table that grows keeps its columns' order and
 * sizes, and a plan holds no address inside a column block.
 *
 * This layer copies cells only; the world's apply (world/move.h,
 * tes__apply) moves the entities, slots and counts around the routine.
 *
 * Where each part lives: the plan type, its routines' signatures and
 * tes__plan_value are in move_plan_types.h, below table.h, which caches a
 * plan in each table's last edge; this header declares making and
 * comparing plans, and move_plan.c defines them with the copy routines,
 * reading the tables (table.h). So every include and call runs one way:
 * move_plan -> table -> move_plan_types.
 */
#ifndef TES_STORAGE_MOVE_PLAN_H
#define TES_STORAGE_MOVE_PLAN_H

#include "storage/move_plan_types.h"

/* Makes the plan from src to dst for a call giving nvalues values
 * (at most TES__PLAN_VALUES): value k is for component comps[k]; bit k of
 * `valued` says the call gives it (a value not given leaves its cell to
 * the source or the constructor); when a component has several, the last
 * given wins. Every component of a given value must be in dst. The values
 * are read as `direct` (one value, passed itself) or from a table with
 * value k at byte offset k * stride. Picks the copy routine. Cannot fail. */
void tes__plan_make(tes__move_plan_t *p, struct tes__table *src, struct tes__table *dst,
                    const tes_comp_t *comps, uint32_t nvalues, uint32_t valued, bool direct,
                    size_t stride);

/* True when plans a and b are the same (the fields a plan's use reads:
 * the lists up to their counts, the values up to nvalues). For the world
 * check, which compares each cached plan with the plan made afresh. */
bool tes__plan_same(const tes__move_plan_t *a, const tes__move_plan_t *b);

#endif
