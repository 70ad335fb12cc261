/*
 * Applying the deferred queue (see defer.h). The result must be what
 * applying the commands one by one in call order gives; the work should be
 * one table move per entity, however many adds, removes and sets it got.
 *
 * The rule. A command is *quiet* when it is an add, remove, set or ensure
 * of a component without on_add/on_set/on_remove hooks; a materialise is
 * quiet too. Any
 * other command (a destroy, clear, clone, deferred call, or a command whose
 * hooks could look at the world) is a *barrier* and is applied alone, in
 * its place. Between two barriers, the quiet table commands of one entity
 * are applied together, at the place of the first of them, as one table
 * move from the entity's table to the table of its final type: nothing that
 * runs in between can see the entity, so no user code can tell the
 * difference. Quiet sparse commands stay in their own place (a sparse
 * insert or erase moves no row anyway).
 *
 * What a merged move does, per component: a component the entity keeps is
 * moved (move hook); one it gains is constructed; one it loses is
 * destroyed; one that was removed and added again is destroyed and
 * constructed in place (in call order it would have been). The last value
 * a queued set or ensure staged for it is then copied in (copy hook), and
 * every staged value is destroyed. So ctor and dtor stay balanced and each
 * component ends with the value call order gives it; assignments a later
 * command overwrote, and intermediate moves, are skipped. Row order within a
 * table can differ from call order (it is unspecified either way).
 *
 * Groups watching the world hear of each component the move adds or
 * removes, as they would of single adds and removes (they are library
 * code and observe only the final membership).
 *
 * If the merged move cannot reserve its table or the watchers' room
 * (TES_ERR_NOMEM) the same commands are applied one by one instead, each
 * failing or not on its own, as in call order.
 *
 * The common case comes first: an entity whose merged commands are all
 * adds, sets or ensures of plain components (no hook of any kind, no
 * watcher) in plain tables is a *plain group*, applied by a plan kept
 * along the queue (see "plain groups" below). The usual queue of a system
 * (the same components set on each entity it visits) is then one plan
 * and a row move per entity, tuned for hundreds of thousands of commands.
 * A plain group that cannot be applied that way (the destination cannot
 * grow) changes nothing and takes the merged move, which reports.
 */
#include "world/defer.h"

#include <string.h>

#include "world/world.h"

/* Distinct components one merged move tracks; more end the merge there
 * (the rest is merged again from its own place). */
#define MERGE_MAX 16

static void release_staged(tes_world_t *w, const tes__op_t *op)
{
    if (!op->value)
        return;
    const tes__component_t *info = tes__registry_get(&w->components, op->comp);
    tes__hook_enter(w);
    tes__component_destruct(info, op->value, 1);
    tes__world_end(w);
}

/* Applies one command through the public calls, like immediate mode; a
 * call command's function is found in queue q. */
static int apply(tes_world_t *w, const tes__defer_t *q, const tes__op_t *op)
{
    switch (op->kind) {
    case TES__OP_MATERIALIZE: {
        tes__slot_t *slot = tes__entity_slot(&w->entities, op->e);
        if (slot && (slot->table & TES__SLOT_TABLE_MASK) == 0)
            slot->row = 0;
        return TES_OK;
    }
    case TES__OP_DESTROY: return tes_destroy(w, op->e);
    case TES__OP_ADD: return tes_add(w, op->e, op->comp);
    case TES__OP_REMOVE: return tes_remove(w, op->e, op->comp);
    case TES__OP_CLEAR: return tes_clear(w, op->e);
    case TES__OP_CLONE: {
        /* Not a public call: the hooks it runs must still run as hooks. */
        tes__hook_enter(w);
        int rc = tes__clone_into(w, op->e, op->src);
        tes__world_end(w);
        return rc && rc != TES_ERR_STALE ? tes__fail(w, rc) : rc;
    }
    case TES__OP_CALL: {
        tes__defer_call_t call = q->calls[op->call];
        return call.run(w, call.arg, true);
    }
    case TES__OP_SET: {
        int rc = tes_set(w, op->e, op->comp, op->value);
        release_staged(w, op);
        return rc;
    }
    case TES__OP_ENSURE: {
        /* Add if missing (on_add), then assign: no on_set, as immediately. */
        int rc = TES_OK;
        const tes__component_t *info = tes__registry_get(&w->components, op->comp);
        void *ptr = tes_ensure(w, op->e, op->comp);
        if (ptr) {
            tes__hook_enter(w);
            tes__component_copy1(info, ptr, op->value);
            tes__world_end(w);
        } else {
            rc = tes_last_error(w);
        }
        release_staged(w, op);
        return rc;
    }
    case TES__OP_DONE: return TES_OK;
    }
    return TES_ERR_INVALID;
}

static bool is_merged(const tes__op_t *op)
{
    return op->merge == TES__OP_MERGED && op->kind != TES__OP_DONE;
}

/* What the merged commands do to one component. */
typedef struct net {
    const tes__component_t *info;
    bool had;     /* in the entity's table before */
    bool present; /* after the commands so far */
    bool reborn;  /* removed and added again: a new value in the old cell */
    void *value;  /* the staged value to assign last, or NULL */
} net_t;

static net_t *net_of(net_t *net, uint32_t *n, const tes_world_t *w, const tes__table_t *src,
                     tes_comp_t c)
{
    for (uint32_t k = 0; k < *n; k++)
        if (net[k].info->id == c)
            return &net[k];
    if (*n == MERGE_MAX)
        return NULL;
    bool had = tes__table_type_index(src, c) >= 0;
    net[*n] = (net_t){tes__registry_get(&w->components, c), had, had, false, NULL};
    return &net[(*n)++];
}

/* Applies the merged commands from `first` to `stop` (exclusive) one by one,
 * in call order: the fallback when a merged move cannot reserve. Returns
 * the first error. */
static int apply_each(tes_world_t *w, uint32_t first, uint32_t stop)
{
    tes__defer_t *d = &w->defer;
    int first_error = TES_OK;
    for (uint32_t j = first; j < stop; j = d->ops[j].next) {
        tes__op_t op = d->ops[j];
        if (!is_merged(&op))
            continue;
        d->ops[j].kind = TES__OP_DONE;
        int rc = apply(w, d, &op);
        if (rc && first_error == TES_OK)
            first_error = rc;
    }
    return first_error;
}

/* The last single step taken: a run of entities that each get the same
 * component (a system's deferred sets) takes the same edge again and
 * writes the same column, so both are remembered. Tables are never freed
 * while the world lives. */
typedef struct step_memo {
    const tes__table_t *src;
    tes_comp_t comp;
    tes__table_t *dst;
    int32_t col;
} step_memo_t;

/* The common case of a merged move: one add, set or ensure. The same as
 * apply_merged, with less bookkeeping. */
static int apply_single(tes_world_t *w, uint32_t at, tes__slot_t *slot, step_memo_t *memo)
{
    tes__op_t *op = &w->defer.ops[at];
    const tes__component_t *info = tes__registry_get(&w->components, op->comp);
    tes__table_t *src = tes__slot_table(w, slot);
    tes__table_t *dst = memo->dst;
    if (src != memo->src || op->comp != memo->comp) {
        dst = tes__graph_step(&w->tables, &w->alloc, &w->components, src, op->comp, true);
        if (dst)
            *memo = (step_memo_t){src, op->comp, dst, tes__table_column_index(dst, op->comp)};
    }
    if (!dst || (dst != src && (tes__table_reserve(dst, &w->alloc, 1) ||
                                tes__watch_reserve_one(w, op->comp, tes_entity_index(op->e)))))
        return apply_each(w, at, at + 1);
    if (dst != src && info->dispatch == TES__DISPATCH_TABLE && src->last_edge[1].comp == op->comp &&
        src->last_edge[1].dst == dst && src->last_edge[1].plain) {
        /* The quiet case (quiet_ops.c's table add): no hook for any column
         * of either table and no watcher hears the component, so the row
         * moves as bytes along the edge's plan, the staged value (in the
         * arena, never inside a table) copied straight into its cell. */
        tes__world_move_plain(w, op->e, slot, src, dst, src->last_edge[1].col, true,
                              op->kind != TES__OP_ADD ? op->value : NULL);
        op->kind = TES__OP_DONE;
        return TES_OK;
    }
    tes__hook_enter(w); /* type hooks run below: no structural calls */
    if (dst != src) {
        tes__watch_before(w, op->e, op->comp);
        tes__world_move(w, op->e, slot, dst);
        tes__watch_after(w, op->e, op->comp);
    }
    if (op->kind != TES__OP_ADD && op->value) {
        int32_t col = memo->col;
        tes__component_copy1(info, tes__table_cell(dst, (uint32_t)col, slot->row), op->value);
        tes__component_destruct(info, op->value, 1);
    }
    tes__world_end(w);
    op->kind = TES__OP_DONE;
    return TES_OK;
}


/* Room in the groups that hear of the components a merged move adds or
 * removes; the entity is the call's scope, as for a single add. */
static int reserve_changes(tes_world_t *w, tes_entity_t e, const net_t *net, uint32_t n)
{
    uint32_t index = tes_entity_index(e);
    w->watch_scope = (tes__watch_scope_t){1, index, NULL, NULL};
    for (uint32_t k = 0; k < n; k++)
        if (net[k].had != net[k].present && tes__watch_reserve(w, net[k].info->id, index, 1))
            return TES_ERR_NOMEM;
    return TES_OK;
}

/* Applies the merged commands of the entity of command `first`, those
 * before `end` (the next barrier), as one move. Returns the first error of
 * the commands (an entity that died earlier: TES_ERR_STALE). */
static int apply_merged(tes_world_t *w, uint32_t first, uint32_t end, step_memo_t *memo)
{
    tes__defer_t *d = &w->defer;
    tes_entity_t e = d->ops[first].e;
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot) { /* dropped, like each of its commands would be */
        release_staged(w, &d->ops[first]);
        d->ops[first].kind = TES__OP_DONE;
        return TES_ERR_STALE;
    }
    if (d->ops[first].next >= end && d->ops[first].kind != TES__OP_REMOVE)
        return apply_single(w, first, slot, memo);
    tes__table_t *src = tes__slot_table(w, slot);
    net_t net[MERGE_MAX];
    uint32_t n = 0, stop = end;
    for (uint32_t j = first; j < end; j = d->ops[j].next) {
        const tes__op_t *op = &d->ops[j];
        if (!is_merged(op))
            continue; /* a quiet sparse command: applied in its own place */
        net_t *c = net_of(net, &n, w, src, op->comp);
        if (!c) {
            stop = j;
            break;
        }
        switch (op->kind) {
        case TES__OP_ADD:
            if (!c->present)
                c->present = true, c->reborn |= c->had, c->value = NULL;
            break;
        case TES__OP_REMOVE: c->present = false, c->value = NULL; break;
        default: /* SET, ENSURE */
            if (!c->present)
                c->present = true, c->reborn |= c->had;
            c->value = op->value;
            break;
        }
    }
    /* The final table, reserved before anything changes. */
    tes__table_t *dst = src;
    for (uint32_t k = 0; k < n && dst; k++)
        if (net[k].had != net[k].present)
            dst = tes__graph_step(&w->tables, &w->alloc, &w->components, dst, net[k].info->id,
                                  net[k].present);
    if (!dst || (dst != src && (tes__table_reserve(dst, &w->alloc, 1) ||
                                reserve_changes(w, e, net, n))))
        return apply_each(w, first, stop); /* out of memory: as call order would */
    tes__hook_enter(w); /* type hooks run below: no structural calls */
    if (dst != src) {
        /* Watchers (groups) hear of each component that came or went, as
         * around a single add or remove: all befores, the move, all afters. */
        for (uint32_t k = 0; k < n; k++)
            if (net[k].had != net[k].present)
                tes__watch_before(w, e, net[k].info->id);
        tes__world_move(w, e, slot, dst);
        for (uint32_t k = 0; k < n; k++)
            if (net[k].had != net[k].present)
                tes__watch_after(w, e, net[k].info->id);
    }
    for (uint32_t k = 0; k < n; k++) {
        const tes__component_t *info = net[k].info;
        if (!net[k].present || !info->size)
            continue;
        int32_t col = tes__table_column_index(dst, info->id);
        void *cell = tes__table_cell(dst, (uint32_t)col, slot->row);
        if (net[k].reborn) {
            tes__component_destruct(info, cell, 1);
            tes__component_construct1(info, cell);
        }
        if (net[k].value)
            tes__component_copy1(info, cell, net[k].value);
    }
    tes__world_end(w);
    for (uint32_t j = first; j < stop; j = d->ops[j].next) {
        if (!is_merged(&d->ops[j]))
            continue;
        release_staged(w, &d->ops[j]);
        d->ops[j].kind = TES__OP_DONE;
    }
    return TES_OK;
}

/* ------------------------------------------------------------ plain groups
 *
 * The batched form of a merged move, for the usual queue: a system sets a
 * few plain components (no hook, no watcher) on each of many entities.
 * An entity's merged commands up to the next barrier form its *group*;
 * when they are all adds, sets or ensures, the group's effect depends only
 * on the entity's table and the group's shape (its components, in order,
 * and which commands stage a value). The plan for that shape (the final
 * table, and for each of its columns where the cell comes from) is worked
 * out once and kept while the next entities' groups have the same shape
 * and start in the same table, which is the whole queue in the common case:
 * then each entity costs one row move as bytes, with the staged values
 * copied straight into their cells and no graph step, lookup or call. */

/* Commands one group may hold, and columns one plan may map; larger groups
 * and wider tables take the merged move. */
#define GROUP_MAX 8
#define PLAN_COLUMNS 32

typedef struct group_plan {
    const tes__table_t *src; /* NULL: no plan yet */
    uint32_t k;              /* commands in the group */
    uint32_t valued;         /* bit j: command j stages a value */
    tes_comp_t comps[GROUP_MAX];
    tes__table_t *dst;
    bool plain; /* false: this shape takes the merged move */
    /* How each cell of the entity's new row is filled, as three lists of
     * dst columns: moved from a src column (move_from), assigned the staged
     * value of group command set_from (the last one staged for it), or
     * zeroed (a component added without a value). When dst is src, only
     * the assigned cells are written. */
    uint8_t moves, sets, zeros;
    uint8_t move_col[PLAN_COLUMNS], move_from[PLAN_COLUMNS];
    uint8_t set_col[GROUP_MAX], set_from[GROUP_MAX];
    uint8_t zero_col[GROUP_MAX];
} group_plan_t;

static bool adds_value(const tes__op_t *op)
{
    return op->merge == TES__OP_MERGED &&
           (op->kind == TES__OP_ADD || op->kind == TES__OP_SET || op->kind == TES__OP_ENSURE);
}

/* Works out the plan for a group of shape (comps, valued) starting in src.
 * False when the graph could not grow (the merged move then fails or
 * falls back on its own). */
static bool plan_group(tes_world_t *w, group_plan_t *plan, const tes__table_t *src, uint32_t k,
                       uint32_t valued, const tes_comp_t *comps)
{
    plan->src = NULL;
    tes__table_t *dst = (tes__table_t *)src;
    bool plain = true;
    for (uint32_t j = 0; j < k && dst; j++) {
        const tes__component_t *info = tes__registry_get(&w->components, comps[j]);
        plain = plain && info->dispatch == TES__DISPATCH_TABLE;
        dst = tes__graph_step(&w->tables, &w->alloc, &w->components, dst, comps[j], true);
    }
    if (!dst)
        return false;
    plain = plain && dst->column_count <= PLAN_COLUMNS &&
            !((src->flags | dst->flags) & TES__TABLE_NOT_PLAIN);
    plan->moves = plan->sets = plan->zeros = 0;
    for (uint32_t c = 0; plain && c < dst->column_count; c++) {
        tes_comp_t id = dst->columns[c].id;
        int32_t from = tes__table_column_index(src, id);
        int32_t value = -1;
        for (uint32_t j = 0; j < k; j++) /* the last value staged wins */
            if (comps[j] == id && (valued >> j & 1u))
                value = (int32_t)j;
        if (value >= 0) {
            plan->set_col[plan->sets] = (uint8_t)c;
            plan->set_from[plan->sets++] = (uint8_t)value;
        } else if (from >= 0) {
            plan->move_col[plan->moves] = (uint8_t)c;
            plan->move_from[plan->moves++] = (uint8_t)from;
        } else {
            plan->zero_col[plan->zeros++] = (uint8_t)c;
        }
    }
    plan->src = src;
    plan->k = k;
    plan->valued = valued;
    for (uint32_t j = 0; j < k; j++)
        plan->comps[j] = comps[j];
    plan->dst = dst;
    plan->plain = plain;
    return true;
}

/* Moves e's row from src (at slot) into dst, which has room, by the plan's
 * lists; values[j] is the value group command j staged. */
static tes__always_inline void move_by_plan(tes_world_t *w, const group_plan_t *plan, tes__slot_t *slot,
                                tes_entity_t e, tes__table_t *src, tes__table_t *dst,
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

/* Applies the group of command `at` (its entity's commands before `end`)
 * by its plan when the group and its tables are plain, and marks its
 * commands done; *after receives the position after the group when its
 * commands are consecutive, else at + 1. False, with nothing changed, when
 * it is not plain (or the destination cannot take the row): the merged
 * move then takes it, and reports any failure. When `run` is not NULL
 * and the group could start a run (its commands consecutive, its entity
 * moving), the group is only planned: *run is set and nothing changes,
 * for the run to apply it with the groups after it. */
static inline bool apply_group(tes_world_t *w, uint32_t at, uint32_t end, group_plan_t *plan,
                               uint32_t *after, bool *run)
{
    tes__op_t *ops = w->defer.ops;
    const void *values[GROUP_MAX];
    uint32_t k = 0, valued = 0, last = at;
    bool same = true, consecutive = true;
    for (uint32_t j = at; j < end; j = ops[j].next) {
        const tes__op_t *op = &ops[j];
        if (k == GROUP_MAX || !adds_value(op))
            return false;
        bool has_value = op->kind != TES__OP_ADD && op->value;
        same = same && plan->comps[k] == op->comp;
        consecutive = consecutive && j == at + k;
        values[k] = op->value;
        valued |= (uint32_t)has_value << k++;
        last = j;
    }
    tes_entity_t e = ops[at].e;
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return false; /* dropped: the merged move says so */
    tes__table_t *src = tes__slot_table(w, slot);
    if (!(same && plan->src == src && plan->k == k && plan->valued == valued)) {
        tes_comp_t comps[GROUP_MAX];
        uint32_t n = 0;
        for (uint32_t j = at; j < end; j = ops[j].next)
            comps[n++] = ops[j].comp;
        if (!plan_group(w, plan, src, k, valued, comps))
            return false;
    }
    if (!plan->plain)
        return false;
    tes__table_t *dst = plan->dst;
    if (run && consecutive && dst != src) {
        *run = true;
        return true;
    }
    if (dst == src) { /* nothing added: the values are assigned in place */
        const tes__column_t *dc = dst->columns;
        for (uint32_t i = 0; i < plan->sets; i++) {
            const tes__column_t *col = &dc[plan->set_col[i]];
            tes__copy_small(col->data + (size_t)slot->row * col->size, values[plan->set_from[i]],
                            col->size);
        }
    } else {
        if (tes__table_reserve(dst, &w->alloc, 1))
            return false;
        move_by_plan(w, plan, slot, e, src, dst, values);
    }
    /* The staged values have no destructor: marking is all the release. */
    if (consecutive) {
        for (uint32_t j = at; j <= last; j++)
            ops[j].kind = TES__OP_DONE;
        *after = last + 1;
    } else {
        for (uint32_t j = at; j < end; j = ops[j].next)
            ops[j].kind = TES__OP_DONE;
        *after = at + 1;
    }
    return true;
}

/* A run is applied in two passes: its commands are checked front to
 * back (up to `end`, or the first that does not fit the run), the
 * destination reserved once for all of them, and the rows then moved. A
 * queue made by a loop over a table names its entities in row order. When
 * they are the table's last rows in that order (a loop over the whole
 * table, or its end), the rows move as one block, column by column
 * (move_block_by_plan). Otherwise they move back to front: each row moved
 * is then its table's last when the entities are in row order, so there is
 * no hole to fill and no other entity's slot to touch (front to back, half
 * the moves fill a hole), and the commands read last by the check are read
 * first again. The entities of a run are distinct (each one's command ends its
 * group) and nothing in a run runs user code or tells a watcher, so the
 * order shows only in the order of rows, which is unspecified. When the
 * destination cannot grow for the whole run at once, the rows move front
 * to back, one reserve each, as far as it grows; the rest is left to the
 * merged moves, which report. */

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
 * block by the plan, each moved cell column by column in one copy per
 * column, the staged values copied one by one, and the entities keep
 * their order. */
static void move_block_by_plan(tes_world_t *w, const group_plan_t *plan, tes__op_t *ops,
                               uint32_t at, uint32_t n)
{
    tes__table_t *src = (tes__table_t *)plan->src, *dst = plan->dst;
    const uint32_t k = plan->k, from = src->count - n, to = dst->count;
    tes__assert(n <= src->count && !(src->flags & TES__TABLE_VIRTUAL) &&
                (uint64_t)to + n <= dst->cap);
    const tes__column_t *dc = dst->columns, *sc = src->columns;
    for (uint32_t i = 0; i < plan->moves; i++) {
        const tes__column_t *col = &dc[plan->move_col[i]];
        memcpy(col->data + (size_t)to * col->size,
               sc[plan->move_from[i]].data + (size_t)from * col->size, (size_t)n * col->size);
    }
    for (uint32_t i = 0; i < plan->zeros; i++) {
        const tes__column_t *col = &dc[plan->zero_col[i]];
        memset(col->data + (size_t)to * col->size, 0, (size_t)n * col->size);
    }
    memcpy(dst->entities + to, src->entities + from, (size_t)n * sizeof *dst->entities);
    /* One pass over the run's commands (the largest array here): each
     * group's staged values, its entity's slot, its commands marked. */
    uint8_t *cells[GROUP_MAX];
    uint32_t sizes[GROUP_MAX];
    for (uint32_t i = 0; i < plan->sets; i++) {
        const tes__column_t *col = &dc[plan->set_col[i]];
        cells[i] = col->data + (size_t)to * col->size;
        sizes[i] = col->size;
    }
    tes__slot_t *slots = w->entities.slots;
    tes__op_t *op = &ops[at];
    if (k == 1 && plan->sets == 1) { /* one set per entity: the usual run */
        for (uint32_t g = 0; g < n; g++, op++, cells[0] += sizes[0]) {
            tes__copy_small(cells[0], op->value, sizes[0]);
            tes__slot_set_table(&slots[tes_entity_index(op->e)], dst->id, to + g);
            op->kind = TES__OP_DONE;
        }
    } else {
        for (uint32_t g = 0; g < n; g++, op += k) {
            for (uint32_t i = 0; i < plan->sets; i++) {
                tes__copy_small(cells[i], op[plan->set_from[i]].value, sizes[i]);
                cells[i] += sizes[i];
            }
            tes__slot_set_table(&slots[tes_entity_index(op->e)], dst->id, to + g);
            for (uint32_t j = 0; j < k; j++)
                op[j].kind = TES__OP_DONE; /* no destructor: that is the release */
        }
    }
    dst->count = to + n;
    src->count = from;
    tes__table_debug_move(src, &w->alloc);
}

/* Moves the entity of a run's group (its k commands from op) by the
 * plan, into room reserved, and marks the commands done. */
static tes__always_inline void run_group_move(tes_world_t *w, const group_plan_t *plan,
                                              tes__op_t *op)
{
    const void *values[GROUP_MAX];
    for (uint32_t j = 0; j < plan->k; j++) {
        values[j] = op[j].value;
        op[j].kind = TES__OP_DONE; /* no destructor: that is the release */
    }
    tes__slot_t *slot = &w->entities.slots[tes_entity_index(op->e)];
    move_by_plan(w, plan, slot, op->e, (tes__table_t *)plan->src, plan->dst, values);
}

/* Applies the run of groups right after a plain group that moved its
 * entity and whose k commands were consecutive: each next entity whose k
 * commands come next, with the same components, kinds and staged values,
 * and no later command before `end`, starting in the same table (the
 * usual queue of a loop that sets the same components on each entity it
 * visits). Each is a row move by the same plan, nothing looked up or
 * walked, back to front (see above). Returns the position after the last
 * group applied. */
static uint32_t apply_group_run(tes_world_t *w, uint32_t at, uint32_t end,
                                const group_plan_t *plan, const uint8_t *kinds)
{
    tes__op_t *ops = w->defer.ops;
    tes__table_t *src = (tes__table_t *)plan->src, *dst = plan->dst;
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
            move_block_by_plan(w, plan, ops, at, n);
        else
            for (uint32_t g = n; g-- > 0;) /* see above: back to front */
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

/* Moves the entity of a run's single command along the plain edge from
 * src to dst (room reserved) and marks the command done. */
static tes__always_inline void single_move(tes_world_t *w, tes__op_t *op, tes__table_t *src,
                                           tes__table_t *dst, int32_t col, bool valued)
{
    op->kind = TES__OP_DONE;
    tes__slot_t *slot = &w->entities.slots[tes_entity_index(op->e)];
    tes__world_move_plain(w, op->e, slot, src, dst, col, true, valued ? op->value : NULL);
}

/* apply_group_run for groups of one command: dst is src plus the
 * command's component, and each row moves as the edge's plain plan says.
 * A command of the same kind on the same component stages a value exactly
 * when the first did (a tag's sets stage none). */
static uint32_t apply_single_run(tes_world_t *w, uint32_t at, uint32_t end,
                                 const group_plan_t *plan, uint8_t kind)
{
    tes__op_t *ops = w->defer.ops;
    tes__table_t *src = (tes__table_t *)plan->src, *dst = plan->dst;
    const tes_comp_t comp = plan->comps[0];
    const bool valued = plan->valued != 0;
    const int32_t col = tes__table_column_index(dst, comp);
    if (tes__table_reserve(dst, &w->alloc, 1))
        return at; /* as in apply_group_run */
    uint32_t n = 0, base = 0;
    bool block = true; /* as in apply_group_run */
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
            move_block_by_plan(w, plan, ops, at, n);
        else
            for (uint32_t j = n; j-- > 0;) /* see apply_group_run: back to front */
                single_move(w, &ops[at + j], src, dst, col, valued);
        return at + n;
    }
    for (uint32_t j = 0; j < n; j++) {
        if (tes__table_reserve(dst, &w->alloc, 1))
            return at + j;
        single_move(w, &ops[at + j], src, dst, col, valued);
    }
    return at + n;
}

/* Applies plain groups from command `first` on: the group there, and
 * when it moves its entity and its commands are consecutive, with it the
 * run of groups of the same shape right after it (apply_group_run, or
 * apply_single_run for groups of one command). Returns the position after
 * the last command applied, or `first` when the group there is not
 * plain. */
static uint32_t apply_groups(tes_world_t *w, uint32_t first, uint32_t end, group_plan_t *plan)
{
    uint32_t at;
    tes__op_t *ops = w->defer.ops;
    /* The kinds of the group's commands, read before it marks them done
     * (the group is at most GROUP_MAX commands; only the consecutive case
     * reads them). */
    uint8_t kinds[GROUP_MAX] = {0};
    for (uint32_t j = 0; j < GROUP_MAX && first + j < end; j++)
        kinds[j] = ops[first + j].kind;
    const uint8_t kind = kinds[0];
    bool run = false;
    if (!apply_group(w, first, end, plan, &at, &run))
        return first;
    if (!run)
        return at;
    /* The group starts a run, applied with it; alone (to fail or not) when
     * the destination cannot take even its row. */
    at = plan->k != 1 ? apply_group_run(w, first, end, plan, kinds)
                      : apply_single_run(w, first, end, plan, kind);
    if (at == first && !apply_group(w, first, end, plan, &at, NULL))
        return first;
    return at;
}

int tes__defer_apply(tes_world_t *w, const tes__defer_t *q, const tes__op_t *op)
{
    return apply(w, q, op);
}

int tes__defer_end(tes_world_t *w)
{
    tes__defer_t *d = &w->defer;
    if (d->depth <= 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "deferral depth is %d: no level is open",
                                (int)d->depth);
    /* An empty queue needs no flush: returning before any write keeps the
     * iterators of reader threads, which all end here, free of races. */
    int32_t depth = tes__world_depth_down(w);
    if (depth > 0 || d->flushing || d->count == 0)
        return TES_OK;
    /* The applied calls see depth zero, so they change the world at once
     * instead of queueing, and nothing run by them can raise the depth
     * again: tes_defer_begin, tes_defer_end and tes_query_iter are refused
     * inside hooks and while flushing, which is where any user code runs
     * during a flush. So the queue's arrays neither grow nor move until the
     * reset below (the loop still reads commands by position, and checks);
     * `flushing` keeps a level that ends during the flush from starting a
     * nested one. */
    const uint32_t count = d->count;
    (void)count; /* read by the check below, in debug builds */
    d->flushing = true;
    int first_error = TES_OK;
    uint32_t next_barrier = 0; /* position in d->barriers */
    step_memo_t memo = {NULL, 0, NULL, -1};
    group_plan_t plan = {.src = NULL};
    tes__detail_t detail_before; /* a dropped command must not wipe it either */
    for (uint32_t i = 0; i < d->count; i++) {
        const tes__op_t *at = &d->ops[i]; /* the array does not move while flushing */
        if (at->kind == TES__OP_DONE)
            continue;
        if (adds_value(at)) { /* the common case first: a plain group */
            while (next_barrier < d->barrier_count && d->barriers[next_barrier] < i)
                next_barrier++;
            uint32_t end =
                next_barrier < d->barrier_count ? d->barriers[next_barrier] : d->count;
            uint32_t after = apply_groups(w, i, end, &plan);
            if (after > i) {
                i = after - 1; /* the loop's i++ */
                continue;
            }
        }
        int before = w->last_error;
        if (before == TES_ERR_INVALID)
            detail_before = w->detail;
        int rc;
        if (is_merged(at)) {
            while (next_barrier < d->barrier_count && d->barriers[next_barrier] < i)
                next_barrier++;
            uint32_t end =
                next_barrier < d->barrier_count ? d->barriers[next_barrier] : d->count;
            rc = apply_merged(w, i, end, &memo);
        } else {
            tes__op_t op = *at;
            d->ops[i].kind = TES__OP_DONE;
            rc = apply(w, d, &op);
        }
        /* User code may have run (a hook may have made a group that now
         * hears a planned component): the next plain group plans again. */
        plan.src = NULL;
        if (rc == TES_ERR_STALE) {
            w->last_error = before; /* a dropped command is not an error */
            if (before == TES_ERR_INVALID)
                w->detail = detail_before;
        } else if (rc && first_error == TES_OK)
            first_error = rc;
        tes__assert(d->depth == 0 && d->count == count);
    }
    tes__defer_reset(w);
    d->flushing = false;
    return first_error; /* each failed command recorded its own error already */
}
