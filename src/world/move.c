/*
 * Row moves around the move plan (storage/move_plan.h): the generic move
 * of one entity to any table, and the removal of a row that a move or a
 * destroy emptied. tes__apply (move.h) is the one apply every move goes
 * through; this file holds what it calls out of line and the plan lookup
 * of the generic paths, which move entities one step along a cached edge
 * (the edge's own plan) or several steps at once (a flush's merged move:
 * a plan made for the move).
 */
#include "world/move.h"

#include "storage/move_plan.h"
#include "world/world.h"

tes__noinline int tes__world_vacate_slow(tes_world_t *w, tes__table_t *t, uint32_t row)
{
    tes_entity_t moved = (t->flags & TES__TABLE_NOT_PLAIN) ? tes__table_remove_row(t, row)
                                                           : tes__table_remove_row_plain(t, row);
    if (moved != TES_NULL)
        w->entities.slots[tes_entity_index(moved)].row = row;
    tes__table_debug_move(t, &w->alloc);
    return TES_OK;
}

/* tes__apply_hole's other cases: a row from or into the virtual root
 * (the root's entities own no row), and debug builds' moves. */
static tes__noinline int apply_root(tes_world_t *w, const tes__move_plan_t *p, tes_entity_t e,
                                    const void *values)
{
    tes__table_t *src = p->src, *dst = p->dst;
    tes__slot_t *slot = &w->entities.slots[tes_entity_index(e)];
    uint32_t src_row = (src->flags & TES__TABLE_VIRTUAL) ? 0 : slot->row;
    uint32_t row = tes__table_push(dst, e);
    tes__slot_set_table(slot, dst->id, row);
    p->one(p, row, src_row, values);
    if (src->flags & TES__TABLE_VIRTUAL)
        return TES_OK;
    return tes__world_vacate(w, src, src_row);
}

tes__noinline int tes__apply_hole(tes_world_t *w, const tes__move_plan_t *p, tes_entity_t e,
                                  const void *values)
{
    /* A row from the middle of a table into a table: pop is 1 for
     * exactly these (see the plan). */
    if (p->pop != 1 || TES__DEBUG_MOVES)
        return apply_root(w, p, e, values);
    tes__table_t *src = p->src, *dst = p->dst;
    tes__slot_t *slot = &w->entities.slots[tes_entity_index(e)];
    uint32_t src_row = slot->row;
    size_t row = dst->count;
    dst->entities[row] = e;
    /* dst's count is written between the slot's two fields, which keeps
     * the compiler from merging them through a vector register. */
    slot->table += p->id_step; /* keeps the sparse bit, as in tes__apply_one */
    tes__table_set_count(dst, (uint32_t)row + 1);
    slot->row = (uint32_t)row;
    p->one(p, row, src_row, values);
    if (src->flags & TES__TABLE_NOT_PLAIN)
        return tes__world_vacate_slow(w, src, src_row);
    /* src stores rows (pop is 1): the last row fills the hole as bytes. */
    uint32_t last = src->count - 1;
    tes__table_set_count(src, last);
    if (src_row != last)
        w->entities.slots[tes_entity_index(tes__table_fill_hole_plain(src, src_row, last))].row =
            src_row;
    return TES_OK;
}

void tes__world_move(tes_world_t *w, tes_entity_t e, tes__slot_t *slot, tes__table_t *dst)
{
    tes__table_t *src = tes__slot_table(w, slot);
    tes__assert(src != dst);
    /* An edge's plan constructs its added cell when given no value, as
     * this move must. */
    for (int add = 0; add < 2; add++)
        if (src->last_edge[add].comp && src->last_edge[add].move.dst == dst) {
            tes__apply(w, &src->last_edge[add].move, e, NULL, 1);
            return;
        }
    tes__move_plan_t plan;
    tes__plan_make(&plan, src, dst, NULL, 0, 0, false, 0);
    tes__apply(w, &plan, e, NULL, 1);
}
