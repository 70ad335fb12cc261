/*
 * Component operations on one entity: the generic paths of add, set and
 * remove (the public calls, in quiet_ops.c, take them when a hook, a
 * watcher, deferral or a running system is involved), tes_ensure, and the
 * reads (has, get). Each call resolves the component's storage kind once
 * and then takes one of two paths: a sparse store insert/erase (the entity
 * never moves), or a table move along a cached graph edge. Both paths
 * reserve before they commit and fire observers last, so hooks see a
 * consistent world and a failed call changes nothing.
 */
#include "world/changes.h"
#include "world/defer.h"
#include "world/explain.h"
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

static inline void *component_ptr(const tes_world_t *w, tes_entity_t e, tes_comp_t c);

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
        ptr = component_ptr(w, e, c);
    }
    if (ptr) {
        tes__component_copy1(info, ptr, value);
        if (info->hooks.copy)
            ptr = component_ptr(w, e, c);
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
        ptr = component_ptr(w, e, c); /* the observer may have moved it */
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

bool tes_has(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return false;
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info)
        return false;
    if (info->storage == TES_STORAGE_SPARSE)
        return tes__sparse_set_contains(&info->store.set, e); /* see component_ptr */
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return false;
    return tes__table_type_index(tes__slot_table(w, slot), c) >= 0;
}

/* The address of e's sparse component in st, NULL when e has none. A
 * sparse entry carries the generation and is erased before its entity dies
 * (every way an entity leaves, deferred, disabled and prefab ones included,
 * goes through the removal of its sparse components), so it answers for
 * liveness by itself: no entity slot is read. The compare also fails for an
 * empty entry (null position) and for a stale handle whose index is
 * reused. */
static inline void *sparse_ptr(const tes__sparse_store_t *st, tes_entity_t e, uint32_t size)
{
    /* Both steps read biased bases (sparse_set.h, sparse_store.h): no NULL
     * page to test (an absent page reads as empty entries) and no mask. */
    uint32_t index = tes_entity_index(e);
    if ((index >> TES__SPARSE_PAGE_BITS) >= st->set.page_count)
        return NULL;
    uint64_t entry = *(const uint64_t *)(st->set.bases[index >> TES__SPARSE_PAGE_BITS] +
                                         (uintptr_t)index * sizeof(uint64_t));
    if (((e & ~(uint64_t)TES_NULL_INDEX) ^ entry) >= TES_NULL_INDEX)
        return NULL;
    uint32_t pos = (uint32_t)entry;
    return (void *)(st->bases[pos >> st->page_shift] + (uintptr_t)pos * size);
}

/* The address of e's c; shared by tes_get and tes_get_mut. Reading the
 * address does not change the world, hence the const world. Random reads
 * are bound by how many of them the processor keeps in flight, which the
 * loads and instructions of each read limit, so the path is kept short:
 * for a small id the registry's read descriptor (one load from the world)
 * says sparse or table and gives the size; a table component then costs
 * the entity's slot (a miss), its table and the table's data_of entry
 * (both hot) and the cell (a miss); a sparse one the sparse entry (a miss),
 * the data page's base and the value (a miss). Other ids take the general
 * path, which finds the same cells through the record and the columns.
 * What remains between this and a plain-array loop is that the call is out
 * of line (about ten loads per read besides the misses, each holding a
 * load-queue entry until it retires, so fewer reads overlap) and, for a
 * table component, that the cell's address waits on the slot's row. A
 * small id's sparse store comes from the registry's sparse_of[] (one load
 * that waits on nothing), and both sparse steps go through biased bases
 * (no NULL page test, no masks). */
static inline void *component_ptr(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return NULL;
    const tes__entity_index_t *ei = &w->entities;
    uint32_t get = c < TES__REGISTRY_SMALL_IDS ? w->components.get_of[c] : 0;
    if (get & TES__GET_SPARSE)
        return sparse_ptr(w->components.sparse_of[c], e, get & ~TES__GET_SPARSE);
    if (get) {
        const tes__slot_t *slot = tes__entity_slot(ei, e);
        if (!slot)
            return NULL;
        uint8_t *column = w->tables.tables[slot->table & TES__SLOT_TABLE_MASK]->data_of[c];
        return column ? column + (size_t)slot->row * get : NULL;
    }
    /* Ids run from 1 (the built-in tags, registered with the world) to
     * count - 1, each with a record: c - 1 wraps for 0, one compare. */
    if (c - 1u >= w->components.count - 1u)
        return NULL;
    const tes__component_t *info = w->components.items[c];
    if (!info) /* a stamp companion's id: no record */
        return NULL;
    if (info->storage == TES_STORAGE_SPARSE)
        return info->size ? sparse_ptr(&info->store, e, info->size) : NULL;
    const tes__slot_t *slot = tes__entity_slot(ei, e);
    if (!slot)
        return NULL;
    const tes__table_t *t = w->tables.tables[slot->table & TES__SLOT_TABLE_MASK];
    int32_t col = tes__table_column_index(t, c);
    return col >= 0 ? tes__table_cell(t, (uint32_t)col, slot->row) : NULL;
}

void *tes__get(const tes_world_t *w, tes_entity_t e, tes_comp_t c) { return component_ptr(w, e, c); }

/* A read that finds nothing records why for the calling thread
 * (last_error.h): a few stores, out of line, so the hit path gains one
 * test of the pointer it returns anyway. */
/* tes_get_mut's general path (an id without a read descriptor, which
 * every tracked component is: its get_of is 0 from registration): the
 * address as component_ptr finds it, and for a tracked component the
 * stamp, written through the slot and table already at hand. */
static tes__noinline void *get_mut_general(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (c - 1u < w->components.count - 1u) {
        const tes__component_t *info = w->components.items[c];
        if (info && info->track_changes && info->storage == TES_STORAGE_SPARSE) {
            uint32_t pos = tes__entity_slot(&w->entities, e)
                               ? tes__sparse_set_find(&info->store.set, e)
                               : TES_NULL_INDEX;
            if (pos == TES_NULL_INDEX)
                return tes__fail_const_get(w, e, c);
            tes__sparse_store_stamp_now(&info->store, pos, false);
            return tes__sparse_store_at(&info->store, pos);
        }
        if (info && info->track_changes) {
            const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
            if (slot) {
                tes__table_t *t = tes__slot_table(w, slot);
                int32_t col = tes__table_column_index(t, c);
                if (col >= 0) {
                    tes__stamp_one(w, t, slot->row, info);
                    return tes__table_cell(t, (uint32_t)col, slot->row);
                }
            }
            return tes__fail_const_get(w, e, c);
        }
    }
    void *p = component_ptr(w, e, c);
    return tes__likely(p != NULL) ? p : tes__fail_const_get(w, e, c);
}

/* A read that finds nothing records why for the calling thread
 * (last_error.h): a few stores, out of line, so the hit path gains one
 * test of the pointer it returns anyway. A small id with a read
 * descriptor (every untracked data component with a small id) takes
 * component_ptr's short path, as tes_get does. */
void *tes_get_mut(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (tes__unlikely(!w || c >= TES__REGISTRY_SMALL_IDS || !w->components.get_of[c]))
        return w ? get_mut_general(w, e, c) : NULL;
    void *p = component_ptr(w, e, c);
    return tes__likely(p != NULL) ? p : tes__fail_const_get(w, e, c);
}

const void *tes_get(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    const void *p = component_ptr(w, e, c);
    return tes__likely(p != NULL) ? p : tes__fail_const_get(w, e, c);
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
    TES__STRUCTURAL(int, w, tes__status, add_impl(w, e, c));
}

/* The guarded generic set: the one tes_set routine for every state and
 * component that the dispatch (quiet_ops.c) does not give a plain form. */
int tes__set_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    TES__STRUCTURAL(int, w, tes__status, set_impl(w, e, c, value));
}

int tes__remove_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    TES__STRUCTURAL(int, w, tes__status, remove_impl(w, e, c));
}

void *tes_ensure(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    TES__STRUCTURAL(void *, w, NULL, ensure_impl(w, e, c));
}
