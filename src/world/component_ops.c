/*
 * Component operations on one entity: the generic paths of add, set and
 * remove (the public calls, in quiet_ops.c, take them when a hook, a
 * watcher, deferral or a running system is involved) and tes_ensure; the
 * reads (has, get) are in get.c. Each call resolves the component's
 * storage kind once and then takes one of two paths: a sparse store
 * insert/erase (the entity never moves), or a table move along a cached
 * graph edge. Both paths reserve before they commit and fire observers
 * last, so hooks see a consistent world and a failed call changes nothing.
 */
#include "world/changes.h"
#include "world/defer.h"
#include "world/explain.h"
#include "world/get.h"
#include "world/move.h"
#include "world/last_error.h"
#include "world/world.h"
#include "world/quiet.h"

#include <string.h>

tes_comp_t tes_component(tes_world_t *w, const tes_component_desc_t *desc)
{
    if (!w)
        return 0;
    int status;
    tes_comp_t id = tes__registry_add(&w->components, &w->alloc, desc, &status);
    if (!id)
        tes__fail(w, status);
    return id;
}

tes_comp_t tes_component_lookup(const tes_world_t *w, const char *name)
{
    if (!w)
        return 0;
    if (!name) {
        tes__fail_const(w, TES_ERR_INVALID, "tes_component_lookup: name is NULL");
        return 0;
    }
    tes_comp_t c = tes__registry_lookup(&w->components, name);
    /* Not an error (the answer is "none"), but a sentence for it. */
    if (!c)
        tes__fail_const(w, TES_OK, "no component named '%.64s' is registered in this world", name);
    return c;
}

/* Resolves a component id for a structural call on a live entity. */
static int enter_component(tes_world_t *w, tes_entity_t e, tes_comp_t c, tes__slot_t **slot,
                           tes__component_t **info)
{
    int rc = tes__world_enter(w, e, slot);
    if (rc)
        return rc;
    *info = tes__registry_get(&w->components, c);
    return *info ? TES_OK : tes__fail_detail(w, TES_ERR_INVALID, "component id %u is not registered in this world", (unsigned)c);
}

/* Keeps a bitwise image of *value in the world's scratch buffer and points
 * *value at it. TES_OK or TES_ERR_NOMEM. */
static int hold_value(tes_world_t *w, const tes__component_t *info, const void **value)
{
    if (tes__world_scratch(w, info->size))
        return TES_ERR_NOMEM;
    tes__copy_bytes(w->scratch, *value, info->size);
    *value = w->scratch;
    return TES_OK;
}

/* Adds info to e if missing. *ptr receives the component's data (NULL for
 * tags), *added whether it was added now. TES_OK or TES_ERR_NOMEM.
 *
 * value_io, when not NULL, holds the value a tes_set is about to copy. The
 * add may move it before the copy: a table row moves out of its table (the
 * last row fills the hole), the destination table may grow, any add may
 * make an owning group swap values around in its stores, and the hooks
 * that run before the copy (ctor, move, on_add) are user code. So when the
 * call adds the component, a bitwise image of the value is kept in the
 * world's scratch buffer and *value_io points there. */
static int add_component(tes_world_t *w, tes_entity_t e, tes__slot_t *slot,
                         tes__component_t *info, void **ptr, bool *added, const void **value_io)
{
    *added = false;
    if (info->storage == TES_STORAGE_SPARSE) {
        tes__sparse_store_t *st = &info->store;
        if (tes__sparse_set_contains(&st->set, e)) {
            *ptr = tes__sparse_store_get(st, e);
            return TES_OK;
        }
        if (!tes__sparse_store_has_room(st, tes_entity_index(e)) &&
            tes__sparse_store_reserve(st, &w->alloc, 1, tes_entity_index(e), NULL, NULL))
            return TES_ERR_NOMEM;
        /* Only an owning group (a watcher) reorders stored values. */
        if (value_io && *value_io && st->size && hold_value(w, info, value_io))
            return TES_ERR_NOMEM;
        if (tes__watch_reserve_one(w, info->id, tes_entity_index(e)))
            return TES_ERR_NOMEM;
        tes__watch_before(w, e, info->id);
        tes__slot_hint_sparse(slot, true); /* before the ctor hook runs */
        *ptr = tes__sparse_store_insert(st, e);
        if (*ptr)
            tes__component_construct1(info, *ptr);
        *added = true;
        tes__watch_after(w, e, info->id);
        /* The ctor hook and the watchers ran since the insert: an owning
         * group may have moved the value. */
        if (tes__watched(w, info->id) || info->hooks.ctor)
            *ptr = tes__sparse_store_get(st, e);
        return TES_OK;
    }
    tes__table_t *src = tes__slot_table(w, slot);
    tes__table_t *dst = tes__graph_step(&w->tables, &w->alloc, &w->components, src, info->id, true);
    if (!dst)
        return TES_ERR_NOMEM;
    if (dst != src) { /* an entity that has the component already stays put */
        if (value_io && *value_io && info->size && hold_value(w, info, value_io))
            return TES_ERR_NOMEM;
        if (tes__table_reserve(dst, &w->alloc, 1))
            return TES_ERR_NOMEM;
        if (tes__watch_reserve_one(w, info->id, tes_entity_index(e)))
            return TES_ERR_NOMEM;
        tes__watch_before(w, e, info->id);
        tes__world_move(w, e, slot, dst);
        *added = true;
        tes__watch_after(w, e, info->id);
    }
    /* Hooks ran during the move: the slot is looked up again. */
    slot = &w->entities.slots[tes_entity_index(e)];
    int32_t col = tes__table_column_index(dst, info->id);
    *ptr = col >= 0 ? tes__table_cell(dst, (uint32_t)col, slot->row) : NULL;
    return TES_OK;
}

/* Queues a command for e and c. TES_OK or TES_ERR_NOMEM (recorded). */
static int defer_op(tes_world_t *w, tes__op_kind_t kind, tes_entity_t e, tes_comp_t c)
{
    if (tes__defer_reserve(w, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    tes__defer_push(w, kind, e, c, TES_NULL, NULL);
    return TES_OK;
}

static int add_impl(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    tes__slot_t *slot;
    tes__component_t *info;
    int rc = enter_component(w, e, c, &slot, &info);
    if (rc)
        return rc;
    if (tes__deferred(w))
        return defer_op(w, TES__OP_ADD, e, c);
    void *ptr;
    bool added;
    rc = add_component(w, e, slot, info, &ptr, &added, NULL);
    if (rc)
        return tes__fail(w, rc);
    if (added)
        tes__fire(w, info->hooks.on_add, info, e, ptr);
    return TES_OK;
}

static int set_impl(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    tes__slot_t *slot;
    tes__component_t *info;
    int rc = enter_component(w, e, c, &slot, &info);
    if (rc)
        return rc;
    if (info->size && !value)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_set: value is NULL for component '%.64s' (size %u)", info->name, info->size);
    if (tes__deferred(w)) {
        rc = tes__defer_set(w, e, c, value);
        return rc ? tes__fail(w, rc) : TES_OK;
    }
    void *ptr;
    bool added;
    rc = add_component(w, e, slot, info, &ptr, &added, &value);
    if (rc)
        return tes__fail(w, rc);
    /* Each hook is user code that may have moved the value (a group it
     * built reorders a store): the address is looked up again after it. */
    if (added && info->hooks.on_add) {
        tes__fire(w, info->hooks.on_add, info, e, ptr);
        ptr = tes__component_ptr(w, e, c);
    }
    if (ptr) {
        tes__component_copy1(info, ptr, value);
        if (info->hooks.copy)
            ptr = tes__component_ptr(w, e, c);
    }
    if (info->track_changes)
        tes__stamp_entity(w, e, info);
    tes__fire(w, info->hooks.on_set, info, e, ptr);
    return TES_OK;
}

static void *ensure_impl(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    tes__slot_t *slot;
    tes__component_t *info;
    if (enter_component(w, e, c, &slot, &info))
        return NULL;
    if (!info->size) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_ensure: component '%.64s' is a tag (size 0) and has no data", info->name);
        return NULL;
    }
    if (tes__deferred(w)) {
        /* The component as it will be after the queued commands (see
         * tes__defer_ensure): found through the queue's records, without
         * walking the queue. */
        int status;
        void *value = tes__defer_ensure(w, e, c, &status);
        if (!value)
            tes__fail(w, status);
        return value;
    }
    void *ptr;
    bool added;
    int rc = add_component(w, e, slot, info, &ptr, &added, NULL);
    if (rc) {
        tes__fail(w, rc);
        return NULL;
    }
    if (added && info->hooks.on_add) {
        tes__fire(w, info->hooks.on_add, info, e, ptr);
        ptr = tes__component_ptr(w, e, c); /* the observer may have moved it */
    }
    if (info->track_changes) /* a pointer to write through */
        tes__stamp_entity(w, e, info);
    return ptr;
}

static int remove_impl(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    tes__slot_t *slot;
    tes__component_t *info;
    int rc = enter_component(w, e, c, &slot, &info);
    if (rc)
        return rc;
    if (tes__deferred(w))
        return defer_op(w, TES__OP_REMOVE, e, c);
    if (info->storage == TES_STORAGE_SPARSE) {
        tes__sparse_store_t *st = &info->store;
        uint32_t pos = tes__sparse_set_find(&st->set, e);
        if (pos == TES_NULL_INDEX)
            return TES_OK;
        /* Losing a component can make e join a group (one with a NOT term
         * on it): room first, like every other structural change. */
        if (tes__watch_reserve_one(w, c, tes_entity_index(e)))
            return tes__fail(w, TES_ERR_NOMEM);
        void *ptr = st->size ? tes__sparse_store_at(st, pos) : NULL;
        tes__fire(w, info->hooks.on_remove, info, e, ptr);
        tes__watch_before(w, e, c);
        ptr = tes__sparse_store_get(st, e); /* watchers may have moved it */
        if (ptr)
            tes__component_destruct(info, ptr, 1);
        /* The group watchers may have moved e within the store. */
        tes__sparse_store_remove(st, e, &info->hooks);
        tes__watch_after(w, e, c);
        return TES_OK;
    }
    tes__table_t *src = tes__slot_table(w, slot);
    int32_t col = tes__table_column_index(src, c);
    if (col < 0 && tes__table_type_index(src, c) < 0)
        return TES_OK;
    tes__table_t *dst = tes__graph_step(&w->tables, &w->alloc, &w->components, src, c, false);
    if (!dst || tes__table_reserve(dst, &w->alloc, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    if (tes__watch_reserve_one(w, c, tes_entity_index(e)))
        return tes__fail(w, TES_ERR_NOMEM);
    void *ptr = col >= 0 ? tes__table_cell(src, (uint32_t)col, slot->row) : NULL;
    tes__fire(w, info->hooks.on_remove, info, e, ptr);
    tes__watch_before(w, e, c);
    /* The observer and the watchers ran: the slot is found again. They
     * cannot move e (structural calls are refused while hooks run). */
    slot = &w->entities.slots[tes_entity_index(e)];
    tes__assert(tes__slot_table(w, slot) == src);
    tes__world_move(w, e, slot, dst); /* runs the destructor */
    tes__watch_after(w, e, c);
    return TES_OK;
}

int32_t tes_components_of(const tes_world_t *w, tes_entity_t e, tes_comp_t *out, int32_t cap)
{
    if (!w)
        return -1;
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return tes__fail_const_stale(w, &w->entities, e, TES__STALE_ENTITY), -1;
    if (cap < 0 || (cap > 0 && !out))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_components_of: cap = %d with out %s", (int)cap, out ? "set" : "NULL"), -1;
    const tes__table_t *table = tes__slot_table(w, slot);
    const tes__registry_t *reg = &w->components;
    /* Merge the table type and the sparse ids, both ascending. Counted in
     * 64 bits, reported up to INT32_MAX. */
    uint64_t n = 0;
    uint32_t i = 0, j = 0;
    bool sparse = (slot->table & TES__SLOT_SPARSE) != 0;
    uint32_t sparse_count = sparse ? reg->sparse_count : 0;
    for (;;) {
        while (j < sparse_count &&
               !tes__sparse_set_contains(&reg->items[reg->sparse[j]]->store.set, e))
            j++;
        tes_comp_t a = i < table->type_count ? table->type[i] : 0;
        tes_comp_t b = j < sparse_count ? reg->sparse[j] : 0;
        if (!a && !b)
            break;
        tes_comp_t next;
        if (a && (!b || a < b))
            next = a, i++;
        else
            next = b, j++;
        if (n < (uint64_t)cap)
            out[n] = next;
        n++;
    }
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

bool tes_enabled(const tes_world_t *w, tes_entity_t e)
{
    return tes_alive(w, e) && !tes_has(w, e, TES_DISABLED);
}

/* The generic paths of the single-entity calls (quiet_ops.c takes the
 * quiet ones first): begin, the call, end. */
int tes__add_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    /* tes_disable is the add of TES_DISABLED: a refusal names it so. */
    TES__STRUCTURAL(c == TES_DISABLED ? "tes_disable (tes_add of TES_DISABLED)" : "tes_add", int, w,
                    tes__status, add_impl(w, e, c));
}

/* The guarded generic set: the one tes_set routine for every state and
 * component that the dispatch (quiet_ops.c) does not give a plain form. */
int tes__set_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    TES__STRUCTURAL("tes_set", int, w, tes__status, set_impl(w, e, c, value));
}

int tes__remove_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    TES__STRUCTURAL(c == TES_DISABLED ? "tes_enable (tes_remove of TES_DISABLED)" : "tes_remove", int,
                    w, tes__status, remove_impl(w, e, c));
}

void *tes_ensure(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    TES__STRUCTURAL("tes_ensure", void *, w, NULL, ensure_impl(w, e, c));
}
