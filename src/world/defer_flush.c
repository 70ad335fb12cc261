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
 *
 * A plain group that starts a run (the next entities' groups have its
 * shape) hands the run to defer_runs.c, which moves many rows by one plan;
 * the plan's type and the row move by it are shared through defer_runs.h.
 */
#include "storage/move_plan.h"
#include "world/defer.h"
#include "world/entity_ops.h"

#include "world/changes.h"
#include "world/defer_runs.h"
#include "world/last_error.h"
#include "world/move.h"
#include "world/world.h"
#include "world/quiet.h"

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
    const tes__edge_plan_t *edge = &src->last_edge[1];
    if (dst != src && info->dispatch == TES__DISPATCH_TABLE && edge->comp == op->comp &&
        edge->move.dst == dst && edge->plain) {
        /* The quiet case (quiet_ops.c's table add): no hook for any column
         * of either table and no watcher hears the component, so the row
         * moves as bytes by the edge's plan, the staged value (in the
         * arena, never inside a table) copied straight into its cell. */
        tes__apply(w, &edge->move, op->e, op->kind != TES__OP_ADD ? op->value : NULL, 1);
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
        if (info->track_changes) /* a deferred write is stamped when applied */
            tes__stamp_rows(w, dst, slot->row, 1, info);
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
        if (net[k].value) {
            tes__component_copy1(info, cell, net[k].value);
            if (info->track_changes) /* stamped when applied */
                tes__stamp_rows(w, dst, slot->row, 1, info);
        }
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
 * copied straight into their cells and no graph step, lookup or call.
 * The plan's type is in defer_runs.h, shared with the runs. */

static bool adds_value(const tes__op_t *op)
{
    return op->merge == TES__OP_MERGED &&
           (op->kind == TES__OP_ADD || op->kind == TES__OP_SET || op->kind == TES__OP_ENSURE);
}

/* Works out the plan for a group of shape (comps, valued) starting in src.
 * False when the graph could not grow (the merged move then fails or
 * falls back on its own). */
static bool plan_group(tes_world_t *w, tes__group_plan_t *plan, const tes__table_t *src, uint32_t k,
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
    tes__plan_make(&plan->move, (tes__table_t *)src, dst, comps, k, valued, false,
                   sizeof(const void *));
    plan->src = src;
    plan->k = k;
    plan->valued = valued;
    for (uint32_t j = 0; j < k; j++)
        plan->comps[j] = comps[j];
    plan->plain = plain && plan->move.listed;
    return true;
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
static inline bool apply_group(tes_world_t *w, uint32_t at, uint32_t end, tes__group_plan_t *plan,
                               uint32_t *after, bool *run)
{
    tes__op_t *ops = w->defer.ops;
    const void *values[TES__GROUP_MAX];
    uint32_t k = 0, valued = 0, last = at;
    bool same = true, consecutive = true;
    for (uint32_t j = at; j < end; j = ops[j].next) {
        const tes__op_t *op = &ops[j];
        if (k == TES__GROUP_MAX || !adds_value(op))
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
        tes_comp_t comps[TES__GROUP_MAX];
        uint32_t n = 0;
        for (uint32_t j = at; j < end; j = ops[j].next)
            comps[n++] = ops[j].comp;
        if (!plan_group(w, plan, src, k, valued, comps))
            return false;
    }
    if (!plan->plain)
        return false;
    tes__table_t *dst = plan->move.dst;
    if (run && consecutive && dst != src) {
        *run = true;
        return true;
    }
    if (dst == src) { /* nothing added: the values are assigned in place */
        const tes__column_t *dc = dst->columns;
        for (uint32_t i = 0; i < plan->move.values; i++) {
            const tes__column_t *col = &dc[plan->move.value_col[i]];
            tes__copy_small(col->data + (size_t)slot->row * col->size,
                            values[plan->move.value_from[i]], col->size);
        }
    } else {
        if (tes__table_reserve(dst, &w->alloc, 1))
            return false;
        tes__apply(w, &plan->move, e, values, 1);
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

/* Applies plain groups from command `first` on: the group there, and
 * when it moves its entity and its commands are consecutive, with it the
 * run of groups of the same shape right after it (tes__defer_group_run,
 * or tes__defer_single_run for groups of one command). Returns the
 * position after the last command applied, or `first` when the group
 * there is not plain. */
static uint32_t apply_groups(tes_world_t *w, uint32_t first, uint32_t end,
                             tes__group_plan_t *plan)
{
    uint32_t at;
    tes__op_t *ops = w->defer.ops;
    /* The kinds of the group's commands, read before it marks them done
     * (the group is at most TES__GROUP_MAX commands; only the consecutive
     * case reads them). */
    uint8_t kinds[TES__GROUP_MAX] = {0};
    for (uint32_t j = 0; j < TES__GROUP_MAX && first + j < end; j++)
        kinds[j] = ops[first + j].kind;
    const uint8_t kind = kinds[0];
    bool run = false;
    if (!apply_group(w, first, end, plan, &at, &run))
        return first;
    if (!run)
        return at;
    /* The group starts a run, applied with it; alone (to fail or not) when
     * the destination cannot take even its row. */
    at = plan->k != 1 ? tes__defer_group_run(w, first, end, plan, kinds)
                      : tes__defer_single_run(w, first, end, plan, kind);
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
    if (tes__defer_depth(w) <= 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "deferral depth is %d: no level is open",
                                (int)tes__defer_depth(w));
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
    tes__group_plan_t plan = {.src = NULL};
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
        uint64_t epoch_before = w->fail_epoch;
        if (before == TES_ERR_INVALID || before == TES_ERR_STALE)
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
            w->fail_epoch = epoch_before;
            if (before == TES_ERR_INVALID || before == TES_ERR_STALE)
                w->detail = detail_before;
        } else if (rc && first_error == TES_OK)
            first_error = rc;
        tes__assert(!tes__deferred(w) && d->count == count);
    }
    tes__defer_reset(w);
    d->flushing = false;
    return first_error; /* each failed command recorded its own error already */
}
