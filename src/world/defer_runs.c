/*
 * Runs of plain groups (see "plain groups" in defer_flush.c): the usual
 * queue of a system that sets the same components on each entity it
 * visits is, after its first entity, a run of groups of one shape starting
 * in one table, and all of it moves by the plan the flush made for the
 * first (defer_runs.h). Tuned for runs of thousands to hundreds of
 * thousands of entities: each costs one pass over its commands to check
 * them, one reserve of the destination, and then the row moves, with
 * nothing looked up per entity.
 *
 * A run is applied in two passes: its commands are checked front to
 * back (up to `end`, or the first that does not fit the run), the
 * destination reserved once for all of them, and the rows then moved. A
 * queue made by a loop over a table names its entities in row order. When
 * they are the table's last rows in that order (a loop over the whole
 * table, or its end), the rows move as one block, column by column
 * (move_block). Otherwise they move back to front: each row moved
 * is then its table's last when the entities are in row order, so there is
 * no hole to fill and no other entity's slot to touch (front to back, half
 * the moves fill a hole), and the commands read last by the check are read
 * first again. The entities of a run are distinct (each one's command ends its
 * group) and nothing in a run runs user code or tells a watcher, so the
 * order shows only in the order of rows, which is unspecified. When the
 * destination cannot grow for the whole run at once, the rows move front
 * to back, one reserve each, as far as it grows; the rest is left to the
 * merged moves, which report.
 */
#include "world/defer_runs.h"

#include <string.h>

#include "world/move.h"
#include "world/world.h"

/* Whether e is alive in table src (an entity a run may move). */
static inline bool in_table(const tes_world_t *w, tes_entity_t e, const tes__table_t *src)
{
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    return slot && (slot->table & TES__SLOT_TABLE_MASK) == src->id;
}

/* The row of e (alive in table src, as in_table says). */
static inline uint32_t row_of(const tes_world_t *w, tes_entity_t e)
{
    return w->entities.slots[tes_entity_index(e)].row;
}

/* The whole of a run whose n groups (k commands each, from `at`) name
 * src's last n rows in order, the usual queue of a loop over a whole table
 * (or its end): the rows move to the end of dst, which has room, as one
 * block by the plan (each moved cell column by column, in one copy per
 * column), then the staged values are copied one by one; the entities
 * keep their order. */
static void move_block(tes_world_t *w, const tes__group_plan_t *plan, tes__op_t *ops,
                       uint32_t at, uint32_t n)
{
    const tes__move_plan_t *p = &plan->move;
    const uint32_t k = plan->k, to = p->dst->count;
    tes__assert(n <= p->src->count && !(p->src->flags & TES__TABLE_VIRTUAL));
    /* The value cells are assigned below: a run leaves them raw. */
    tes__apply(w, p, ops[at].e, n > 1 ? TES__PLAN_RAW : NULL, n);
    /* One pass over the run's commands: each group's staged values, its
     * commands marked. */
    uint8_t *cells[TES__GROUP_MAX];
    uint32_t sizes[TES__GROUP_MAX];
    const tes__column_t *dc = p->dst->columns;
    for (uint32_t i = 0; i < p->values; i++) {
        const tes__column_t *col = &dc[p->value_col[i]];
        cells[i] = col->data + (size_t)to * col->size;
        sizes[i] = col->size;
    }
    tes__op_t *op = &ops[at];
    if (k == 1 && p->values == 1) { /* one set per entity: the usual run */
        for (uint32_t g = 0; g < n; g++, op++, cells[0] += sizes[0]) {
            tes__copy_small(cells[0], op->value, sizes[0]);
            op->kind = TES__OP_DONE;
        }
        return;
    }
    for (uint32_t g = 0; g < n; g++, op += k) {
        for (uint32_t i = 0; i < p->values; i++) {
            tes__copy_small(cells[i], op[p->value_from[i]].value, sizes[i]);
            cells[i] += sizes[i];
        }
        for (uint32_t j = 0; j < k; j++)
            op[j].kind = TES__OP_DONE; /* no destructor: that is the release */
    }
}

/* Moves the entity of a run's group (its k commands from op) by the
 * plan, into room reserved, and marks the commands done. */
static tes__always_inline void run_group_move(tes_world_t *w, const tes__group_plan_t *plan,
                                              tes__op_t *op)
{
    const void *values[TES__GROUP_MAX];
    for (uint32_t j = 0; j < plan->k; j++) {
        values[j] = op[j].value;
        op[j].kind = TES__OP_DONE; /* no destructor: that is the release */
    }
    tes__apply(w, &plan->move, op->e, values, 1);
}

/* Applies the run of groups right after a plain group that moved its
 * entity and whose k commands were consecutive: each next entity whose k
 * commands come next, with the same components, kinds and staged values,
 * and no later command before `end`, starting in the same table (the
 * usual queue of a loop that sets the same components on each entity it
 * visits). Each is a row move by the same plan, nothing looked up or
 * walked, back to front (see the top of this file). Returns the position
 * after the last group applied. */
uint32_t tes__defer_group_run(tes_world_t *w, uint32_t at, uint32_t end,
                              const tes__group_plan_t *plan, const uint8_t *kinds)
{
    tes__op_t *ops = w->defer.ops;
    tes__table_t *src = plan->move.src, *dst = plan->move.dst;
    const uint32_t k = plan->k;
    if (tes__table_reserve(dst, &w->alloc, 1))
        return at; /* no row at all: no scan (so a run that cannot grow costs O(1) a command) */
    uint32_t n = 0; /* groups in the run */
    uint32_t base = 0;  /* the row of the first group's entity */
    bool block = true;  /* so far, the entities of rows base, base + 1, ... */
    for (; end - (at + n * k) >= k; n++) {
        const tes__op_t *op = &ops[at + n * k];
        tes_entity_t e = op->e;
        uint32_t j = 0;
        for (; j < k; j++, op++) {
            if (op->e != e || op->comp != plan->comps[j] || op->kind != kinds[j] ||
                op->merge != TES__OP_MERGED)
                break;
            /* A command of the same kind on the same component stages a
             * value exactly when the first group's did. (Commands of one
             * entity queued one after the other are chained, so k of them
             * in a row are its whole group when the last one's next is
             * past end.) */
            tes__assert(((plan->valued >> j & 1u) != 0) ==
                        (op->kind != TES__OP_ADD && op->value));
        }
        /* The entity's last command here must end its group: one with
         * commands later on (before end) is not this run's shape. */
        if (j < k || ops[at + n * k + k - 1].next < end || !in_table(w, e, src))
            break;
        uint32_t row = row_of(w, e);
        base = n ? base : row;
        block = block && row == base + n;
    }
    if (n && !tes__table_reserve(dst, &w->alloc, n)) {
        if (block && base + n == src->count && !(src->flags & TES__TABLE_VIRTUAL))
            move_block(w, plan, ops, at, n);
        else
            for (uint32_t g = n; g-- > 0;) /* back to front: see the top of this file */
                run_group_move(w, plan, &ops[at + g * k]);
        return at + n * k;
    }
    for (uint32_t g = 0; g < n; g++) {
        if (tes__table_reserve(dst, &w->alloc, 1))
            return at + g * k;
        run_group_move(w, plan, &ops[at + g * k]);
    }
    return at + n * k;
}

/* Moves the entity of a run's single command by the plan (room
 * reserved) and marks the command done; its staged value (if it stages
 * one) is the plan's value 0, read from the command. */
static tes__always_inline void single_move(tes_world_t *w, tes__op_t *op,
                                           const tes__group_plan_t *plan)
{
    op->kind = TES__OP_DONE;
    tes__apply(w, &plan->move, op->e, &op->value, 1);
}

/* tes__defer_group_run for groups of one command: dst is src plus the
 * command's component, and each row moves as the edge's plain plan says.
 * A command of the same kind on the same component stages a value exactly
 * when the first did (a tag's sets stage none). */
uint32_t tes__defer_single_run(tes_world_t *w, uint32_t at, uint32_t end,
                               const tes__group_plan_t *plan, uint8_t kind)
{
    tes__op_t *ops = w->defer.ops;
    tes__table_t *src = plan->move.src, *dst = plan->move.dst;
    const tes_comp_t comp = plan->comps[0];
    if (tes__table_reserve(dst, &w->alloc, 1))
        return at; /* as in tes__defer_group_run */
    uint32_t n = 0, base = 0;
    bool block = true; /* as in tes__defer_group_run */
    for (; at + n < end; n++) {
        const tes__op_t *op = &ops[at + n];
        if (op->comp != comp || op->kind != kind || op->merge != TES__OP_MERGED ||
            op->next < end || !in_table(w, op->e, src))
            break;
        uint32_t row = row_of(w, op->e);
        base = n ? base : row;
        block = block && row == base + n;
    }
    if (n && !tes__table_reserve(dst, &w->alloc, n)) {
        if (block && base + n == src->count && !(src->flags & TES__TABLE_VIRTUAL))
            move_block(w, plan, ops, at, n);
        else
            for (uint32_t j = n; j-- > 0;) /* see tes__defer_group_run: back to front */
                single_move(w, &ops[at + j], plan);
        return at + n;
    }
    for (uint32_t j = 0; j < n; j++) {
        if (tes__table_reserve(dst, &w->alloc, 1))
            return at + j;
        single_move(w, &ops[at + j], plan);
    }
    return at + n;
}
