/*
 * Moving rows (the world's side of storage/move_plan.h): tes__apply, the
 * one way rows go from table to table by a move plan (quiet adds and
 * removes, the generic move, the flush's runs and groups, spawn_with and
 * spawn_bulk, whole-table destroy), and tes__world_vacate, which fills
 * the hole a moved or destroyed row leaves. The hot cases are inline so
 * that a quiet path ends in the plan's copy routine in tail position;
 * what they call out of line is in move.c.
 */
#ifndef TES_WORLD_MOVE_H
#define TES_WORLD_MOVE_H

#include "world/world.h"

/* Moves live entity e, whose slot is `slot`, to table dst (which has
 * room) by the plan of the edge between them when one of src's last edges
 * leads there, else by a plan made now: shared columns move, new ones are
 * constructed, dropped ones destroyed (the generic move: hooks run). Tells
 * no watcher and fires no observer. */
void tes__world_move(tes_world_t *w, tes_entity_t e, tes__slot_t *slot, tes__table_t *dst);

/* Removes row `row` of t, whose cells were moved out or destroyed, when
 * it is not t's last row: the last row fills the hole (as plain bytes, or
 * by move hooks) and its entity gets the row; then, in debug builds, t
 * moves to fresh memory. Out of line: a freshly spawned entity built up
 * one component at a time is always its table's last row, and the quiet
 * moves then stay small. Returns TES_OK. */
int tes__world_vacate_slow(tes_world_t *w, tes__table_t *t, uint32_t row);
/* tes__world_vacate for a table known to move its rows as small plain
 * bytes (no TES__TABLE_NOT_PLAIN flag): inline, with no call but the
 * debug move, so that a quiet destroy makes none. */
static tes__always_inline void tes__world_vacate_plain(tes_world_t *w, tes__table_t *t,
                                                       uint32_t row)
{
    tes_entity_t moved = tes__table_remove_row_plain(t, row);
    if (moved != TES_NULL)
        w->entities.slots[tes_entity_index(moved)].row = row;
    tes__table_debug_move(t, &w->alloc);
}
static tes__always_inline int tes__world_vacate(tes_world_t *w, tes__table_t *t, uint32_t row)
{
    /* Plain rows (the common case) are filled inline; move hooks and
     * large values go out of line. */
    if (t->flags & TES__TABLE_NOT_PLAIN)
        return tes__world_vacate_slow(w, t, row);
    tes__world_vacate_plain(w, t, row);
    return TES_OK;
}

/* tes__apply of one row for every case but its hot one: a row from the
 * middle of p->src (its hole filled after the cells are read), a row into
 * the virtual root, any row in debug builds. Out of line, so that the
 * inline apply makes calls only in tail position. Returns TES_OK. */
int tes__apply_hole(tes_world_t *w, const tes__move_plan_t *p, tes_entity_t e,
                    const void *values);

/* Moves rows by plan p (move_plan.h), the one way rows go from table to
 * table: p->dst has room for them. With n == 1, the row of live entity e
 * (in p->src; a new entity's slot says the root) moves to the end of
 * p->dst, e's slot follows it and the hole it leaves is filled. With n > 1
 * the last n rows of p->src move, in order, to the end of p->dst and
 * their slots follow; when p->src is the virtual root the n entities are
 * already in p->dst's entity column after its count, their slots written
 * (a bulk spawn), and only the cells are filled. Rows moved into the
 * virtual root lose their cells (destroyed by the plan); with n == 1
 * their slots say the root, with n > 1 the caller frees them, and their entities stay readable in src's block,
 * which does not move (debug builds) until the caller has freed them. `values` is the call's values as the plan reads them.
 * Runs the plan's routine, so a hooked plan runs user hooks (between a
 * begin and end); tells no watcher and fires no observer. Returns TES_OK,
 * so that a quiet path returns its result in tail position: inline, with
 * the routine in tail position when e is its table's last row. */
/* tes__apply of one row whose slot and source table (p->src) the caller
 * has in hand: the quiet add reads both to find the plan, so passing them
 * saves reading them again. */
static tes__always_inline int tes__apply_one(tes_world_t *w, const tes__move_plan_t *p,
                                             tes_entity_t e, tes__slot_t *slot,
                                             tes__table_t *src, const void *values)
{
    /* The hot case: e is its table's last row (or in the virtual root),
     * as a freshly spawned entity built up one component at a time always
     * is, and dst stores rows (see the plan's pop). Its row moves and
     * leaves no hole: the source just counts one row less, and no other
     * entity's slot changes. The source's count, less the row it loses,
     * is then also the row the cells are read from. */
    tes__assert(src == p->src && slot == &w->entities.slots[tes_entity_index(e)]);
    uint32_t src_keeps = src->count - p->pop;
    if (slot->row != src_keeps || TES__DEBUG_MOVES)
        return tes__apply_hole(w, p, e, values);
    tes__table_t *dst = p->dst;
    size_t row = dst->count; /* a size_t: the routine takes rows unwidened */
    /* The slot's table first, which ends the life of its old value, so
     * that the path keeps few values in registers (measured: other orders
     * save a register more); the slot's row last, with the counts written
     * between the slot's two fields: stores to adjacent fields get merged
     * by compilers, through a vector register, which costs more than the
     * two stores. The routine takes the plan and the two rows, and finds
     * the tables' columns in the plan. */
    slot->table += p->id_step; /* (sparse bit | src's id) + step: sparse bit | dst's id */
    tes__table_set_count(src, src_keeps);
    dst->entities[row] = e;
    tes__table_set_count(dst, (uint32_t)row + 1);
    slot->row = (uint32_t)row;
    return p->one(p, row, src_keeps, values);
}

static tes__always_inline int tes__apply(tes_world_t *w, const tes__move_plan_t *p,
                                         tes_entity_t e, const void *values, uint32_t n)
{
    tes__table_t *src = p->src, *dst = p->dst;
    if (tes__likely(n == 1)) {
        /* An edge form copies its value unconditionally (the quiet add
         * always has one): no value is a zero cell, which is what
         * constructing a plain cell gives. */
        if (p->edge && !values)
            values = tes__zero_cell;
        return tes__apply_one(w, p, e, &w->entities.slots[tes_entity_index(e)], src, values);
    }
    bool from_root = (src->flags & TES__TABLE_VIRTUAL) != 0;
    bool to_root = (dst->flags & TES__TABLE_VIRTUAL) != 0;
    uint32_t from = from_root ? 0 : src->count - n, to = to_root ? 0 : dst->count;
    tes__assert(from_root || n <= src->count);
    tes__slot_t *slots = w->entities.slots;
    if (!from_root && !to_root)
        memcpy(dst->entities + to, src->entities + from, (size_t)n * sizeof *dst->entities);
    p->cells(p, to, from, values, n);
    if (!to_root) {
        for (uint32_t i = 0; !from_root && i < n; i++)
            tes__slot_set_table(&slots[tes_entity_index(dst->entities[to + i])], dst->id, to + i);
        tes__table_set_count(dst, to + n);
    }
    /* Rows moved into the root with n > 1 are a whole table being
     * destroyed: their slots are left for the caller, which frees them. */
    if (!from_root)
        tes__table_set_count(src, from);
    if (!from_root && !to_root)
        tes__table_debug_move(src, &w->alloc);
    return TES_OK;
}

/* tes__apply for a new entity placed straight from the virtual root by
 * plan p (p->src is the root, p->dst a table with room): the entity is
 * created at p->dst's next row (its slot written once) and the plan's
 * one-row routine fills the cells. The hot case of tes_spawn_with; the
 * caller has reserved the slot. Returns the entity. */
static tes__always_inline tes_entity_t tes__apply_spawn(tes_world_t *w, const tes__move_plan_t *p,
                                                        const void *values)
{
    tes__table_t *dst = p->dst;
    tes__assert(p->pop == 0 && dst->count < dst->cap);
    uint32_t row = dst->count;
    tes_entity_t e = tes__entity_create(&w->entities, dst->id, row);
    dst->entities[row] = e;
    tes__table_set_count(dst, row + 1);
    p->one(p, row, 0, values);
    return e;
}

#endif
