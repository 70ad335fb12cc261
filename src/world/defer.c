/*
 * The command queue behind deferred mode; see defer.h. Applying a command
 * goes through the same public calls as immediate mode, so deferred and
 * immediate changes share every rule (hooks, ordering, validation). A
 * command whose entity died earlier in the queue is dropped: the calls
 * report TES_ERR_STALE and the flush ignores that status.
 */
#include "world/defer.h"

#include "world/world.h"

int tes__defer_reserve(tes_world_t *w, uint32_t n)
{
    tes__defer_t *d = &w->defer;
    return tes__grow(&w->alloc, (void **)&d->ops, &d->cap, (uint64_t)d->count + n, sizeof *d->ops,
                     64);
}

void tes__defer_push(tes_world_t *w, tes__op_kind_t kind, tes_entity_t e, tes_comp_t comp,
                     tes_entity_t src, void *value)
{
    tes__defer_t *d = &w->defer;
    tes__assert(d->count < d->cap);
    d->ops[d->count++] = (tes__op_t){kind, comp, e, src, value, NULL, NULL};
}

void tes__defer_push_call(tes_world_t *w, tes__defer_fn fn, tes__defer_fill_fn fill, void *arg)
{
    tes__defer_t *d = &w->defer;
    tes__assert(d->count < d->cap);
    d->ops[d->count++] = (tes__op_t){TES__OP_CALL, 0, TES_NULL, TES_NULL, arg, fn, fill};
}

int tes__defer_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value, bool on_set,
                   void **staged)
{
    const tes__component_t *info = tes__registry_get(&w->components, c);
    *staged = NULL;
    if (tes__defer_reserve(w, 1))
        return TES_ERR_NOMEM;
    if (info->size) {
        /* The ctor hook runs before the copy: copy from a bitwise image in
         * the world's scratch, so a value that lives in a store stays
         * readable whatever the hook does. */
        if (value) {
            if (tes__world_scratch(w, info->size))
                return TES_ERR_NOMEM;
            tes__copy_bytes(w->scratch, value, info->size);
            value = w->scratch;
        }
        void *stage = tes__malloc(&w->alloc, info->size);
        if (!stage)
            return TES_ERR_NOMEM;
        tes__component_construct1(info, stage);
        if (value)
            tes__component_copy1(info, stage, value);
        /* The room reserved above is checked again after the hooks: a
         * command they queued may have taken it. */
        if (tes__defer_reserve(w, 1)) {
            tes__component_destruct(info, stage, 1);
            tes__free(&w->alloc, stage, info->size);
            return TES_ERR_NOMEM;
        }
        *staged = stage;
    }
    tes__defer_push(w, on_set ? TES__OP_SET : TES__OP_ENSURE, e, c, TES_NULL, *staged);
    return TES_OK;
}

int tes__defer_lookup(const tes_world_t *w, tes_entity_t e, tes_comp_t c, void **staged,
                      const void **init, uint32_t *filler)
{
    /* Replays the queued commands on e, tracking whether c will be there
     * and where its value will come from. */
    bool touched = false, present = tes_has(w, e, c);
    const void *source = present ? tes_get(w, e, c) : NULL; /* value it will hold */
    void *stage = NULL;
    uint32_t fill = TES_NULL_INDEX;
    for (uint32_t i = 0; i < w->defer.count; i++) {
        const tes__op_t *op = &w->defer.ops[i];
        if (op->kind == TES__OP_CALL && op->fill) {
            /* A call that fills e (a deferred instantiate) acts like a clone
             * whose source only the call knows. */
            int gives = op->fill(w, op->value, e, c, NULL);
            if (gives != TES__FILL_NONE) {
                touched = true, present = gives == TES__FILL_HAS, stage = NULL, source = NULL;
                fill = present ? i : TES_NULL_INDEX;
            }
            continue;
        }
        if (op->e != e)
            continue;
        bool mine = op->comp == c;
        switch (op->kind) {
        case TES__OP_SET:
        case TES__OP_ENSURE:
            if (mine)
                touched = present = true, stage = op->value, source = NULL,
                fill = TES_NULL_INDEX;
            break;
        case TES__OP_ADD:
            if (mine && !present)
                touched = present = true, stage = NULL, source = NULL, fill = TES_NULL_INDEX;
            break;
        case TES__OP_REMOVE:
            if (mine)
                touched = true, present = false, stage = NULL, source = NULL,
                fill = TES_NULL_INDEX;
            break;
        case TES__OP_CLEAR:
        case TES__OP_DESTROY:
            touched = true, present = false, stage = NULL, source = NULL,
            fill = TES_NULL_INDEX;
            break;
        case TES__OP_CLONE:
            /* e receives src's components as they will be at the flush;
             * src's current value is the best guess for the copy. */
            touched = true, present = tes_has(w, op->src, c), stage = NULL, fill = TES_NULL_INDEX;
            source = present ? tes_get(w, op->src, c) : NULL;
            break;
        case TES__OP_MATERIALIZE:
        case TES__OP_CALL:
            break;
        }
    }
    *staged = stage;
    *init = source;
    *filler = fill;
    if (!touched)
        return TES__QUEUED_NONE;
    if (stage)
        return TES__QUEUED_STAGED;
    return fill != TES_NULL_INDEX && present ? TES__QUEUED_FILL : TES__QUEUED_NEW;
}

/* Ends a staged value's life. */
static void release_staged(tes_world_t *w, const tes__op_t *op)
{
    if (!op->value)
        return;
    const tes__component_t *info = tes__registry_get(&w->components, op->comp);
    tes__hook_enter(w);
    tes__component_destruct(info, op->value, 1);
    tes__world_end(w);
    tes__free(&w->alloc, op->value, info->size);
}

static int apply(tes_world_t *w, const tes__op_t *op)
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
        /* A structural call like the others: its ctor, copy and on_add
         * hooks must find structural calls refused. */
        int rc = tes__world_begin(w);
        if (rc)
            return rc;
        rc = tes__clone_into(w, op->e, op->src);
        tes__world_end(w);
        return rc && rc != TES_ERR_STALE ? tes__fail(w, rc) : rc;
    }
    case TES__OP_CALL: return op->call(w, op->value, true);
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
    }
    return TES_ERR_INVALID;
}

int tes__defer_end(tes_world_t *w)
{
    tes__defer_t *d = &w->defer;
    if (d->depth <= 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "deferral depth is %d: no level is open", (int)d->depth);
    if (--d->depth > 0 || d->flushing)
        return TES_OK;
    /* Apply in order. The applied calls see depth zero, so they change the
     * world at once instead of queueing, and nothing run by them can raise
     * the depth again: tes_defer_begin, tes_defer_end and tes_query_iter
     * are refused inside hooks (and while flushing), which is where any
     * user code runs during a flush. The queue is detached while it is
     * applied, so its array never moves under the loop (a command holds
     * pointers into it: staged values) and a command queued by mistake
     * could never land in the array being applied; `flushing` keeps a
     * level that ends during the flush from starting a nested one. */
    tes__op_t *ops = d->ops;
    uint32_t count = d->count, cap = d->cap;
    d->ops = NULL;
    d->count = d->cap = 0;
    d->flushing = true;
    int first_error = TES_OK;
    tes__detail_t detail_before; /* a dropped command must not wipe it either */
    for (uint32_t i = 0; i < count; i++) {
        int before = w->last_error;
        if (before == TES_ERR_INVALID)
            detail_before = w->detail;
        /* A copy: applying runs hooks, and nothing held across them may
         * point into the queue. */
        tes__op_t op = ops[i];
        int rc = apply(w, &op);
        if (rc == TES_ERR_STALE) {
            w->last_error = before; /* a dropped command is not an error */
            if (before == TES_ERR_INVALID)
                w->detail = detail_before;
        } else if (rc && first_error == TES_OK)
            first_error = rc;
        tes__assert(d->depth == 0 && d->count == 0);
    }
    d->flushing = false;
    /* Keep the array's capacity for the next frame. */
    tes__assert(!d->ops);
    d->ops = ops;
    d->cap = cap;
    return first_error; /* each failed command recorded its own error already */
}

void tes__defer_fini(tes_world_t *w)
{
    tes__defer_t *d = &w->defer;
    for (uint32_t i = 0; i < d->count; i++) {
        tes__op_t op = d->ops[i]; /* a copy, as in tes__defer_end */
        if (op.kind == TES__OP_SET || op.kind == TES__OP_ENSURE)
            release_staged(w, &op);
        else if (op.kind == TES__OP_CALL)
            op.call(w, op.value, false);
    }
    tes__free(&w->alloc, d->ops, (size_t)d->cap * sizeof *d->ops);
    d->ops = NULL;
    d->count = d->cap = 0;
}

/* A deferral level opened or closed from inside a hook would change how
 * the call that runs the hook goes on (during a flush: queue the remaining
 * commands onto the queue being applied), so both are refused there. */
static bool defer_refused(tes_world_t *w)
{
    if (!tes__in_hook_or_frame(w) && !w->defer.flushing)
        return false;
    tes__fail(w, TES_ERR_BUSY);
    return true;
}

int tes_defer_begin(tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    if (defer_refused(w))
        return TES_ERR_BUSY;
    w->defer.depth++;
    w->defer.explicit_depth++;
    return TES_OK;
}

int tes_defer_end(tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    if (defer_refused(w))
        return TES_ERR_BUSY;
    /* Only levels opened by tes_defer_begin: an iterator's level ends with
     * the iterator. */
    if (w->defer.explicit_depth <= 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_defer_end: no tes_defer_begin level is open (iterator levels: %d)", (int)w->defer.depth);
    w->defer.explicit_depth--;
    return tes__defer_end(w);
}

bool tes_is_deferred(const tes_world_t *w) { return w && w->defer.depth > 0; }
