/*
 * Entity-level operations: spawn (one; batches, tes_spawn_n among them,
 * are in bulk_ops.c), destroy (its generic path; the quiet one is in
 * quiet_ops.c), clear and clone. Spawning an empty entity is the hottest
 * path in most games' setup code, so tes_spawn checks for spare room
 * inline and only calls the growth functions when a buffer is full.
 */
#include "world/cascade.h"
#include "world/defer.h"
#include "world/entity_ops.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/world.h"

#include "core/checked.h"
#include "world/quiet.h"

#include <stdlib.h>
#include <string.h>

bool tes_alive(const tes_world_t *w, tes_entity_t e)
{
    return w && tes__entity_slot(&w->entities, e) != NULL;
}

int32_t tes_entity_count(const tes_world_t *w)
{
    if (!w)
        return 0;
    return w->entities.alive > INT32_MAX ? INT32_MAX : (int32_t)w->entities.alive;
}

/* The index the next tes__entity_create will hand out. */
static uint32_t peek_next_index(const tes__entity_index_t *ei)
{
    return ei->available ? ei->next : ei->count;
}

/* Every spawn but the plain one: a recycled index, growth, deferral,
 * watchers, refusal inside hooks. */
static tes__noinline tes_entity_t spawn_slow(tes_world_t *w)
{
    if (tes__refused(w, TES__REFUSE_CREATING)) {
        tes__fail_busy(w, "tes_spawn");
        return TES_NULL;
    }
    tes__entity_index_t *ei = &w->entities;
    if (!ei->available && ei->count >= ei->room) {
        int rc = tes__entity_reserve(ei, &w->alloc, 1);
        if (rc) {
            tes__fail(w, rc);
            return TES_NULL;
        }
    }
    if (tes__deferred(w) && tes__defer_reserve(w, 1)) {
        tes__fail(w, TES_ERR_NOMEM);
        return TES_NULL;
    }
    /* Deferred spawns join no group until the flush: no reserve now (a
     * reserve could move a group's member array under a live iterator). */
    if (!tes__deferred(w) && tes__watch_reserve(w, TES__WATCH_EMPTY, peek_next_index(ei), 1)) {
        tes__fail(w, TES_ERR_NOMEM);
        return TES_NULL;
    }
    /* The root table is virtual: an empty entity is just its slot. */
    tes_entity_t e = tes__entity_create(ei, 0, 0);
    if (tes__deferred(w)) {
        /* Alive at once, hidden from root scans until the flush. */
        ei->slots[tes_entity_index(e)].row = TES__ROW_PENDING;
        tes__defer_push(w, TES__OP_MATERIALIZE, e, 0, TES_NULL, NULL);
    } else {
        tes__watch_after(w, e, TES__WATCH_EMPTY);
    }
    return e;
}

tes_entity_t tes_spawn(tes_world_t *w)
{
    if (!w)
        return TES_NULL;
    tes__entity_index_t *ei = &w->entities;
    /* The plain case, kept to a few instructions: a fresh index, a quiet
     * world (no hook running, nothing deferred, no system running: one
     * word), no watcher to tell of an empty entity. */
    if (tes__likely(tes__world_quiet(w) && !(w->creation_watchers | ei->available) &&
                    ei->count < ei->room)) {
        uint32_t index = ei->count++;
        ei->slots[index] = (tes__slot_t){1, 0, 0};
        if (ei->instances)
            ei->instances[index] = 0;
        ei->alive++;
        return tes_entity_make(index, 1);
    }
    return spawn_slow(w);
}

void tes__world_destroy(tes_world_t *w, tes_entity_t e)
{
    /* An entity in the virtual root has nothing to strip. */
    if (w->entities.slots[tes_entity_index(e)].table != 0)
        tes__world_strip(w, e, true);
    else if (w->watcher_count)
        tes__watch_before(w, e, TES__WATCH_DESTROY);
    /* Its hooks have run (they could still read its parent and name). */
    if (w->hier)
        w->hier_ops->destroyed(w, e);
    tes__entity_free(&w->entities, e);
}

/* A destroy whose entity has children: the whole subtree, checked first. */
static int destroy_cascade(tes_world_t *w, tes_entity_t e)
{
    tes__destroy_plan_t plan;
    if (tes__world_destroy_plan(w, &e, 1, &plan))
        return tes__fail(w, TES_ERR_NOMEM);
    int rc = tes__world_plan_owned(w, &plan, 0);
    if (!rc && tes__deferred(w)) {
        /* Planned again when applied, from the tree as it is then. */
        if (tes__defer_reserve(w, 1))
            rc = tes__fail(w, TES_ERR_NOMEM);
        else
            tes__defer_push(w, TES__OP_DESTROY, e, 0, TES_NULL, NULL);
    } else if (!rc) {
        /* Hooks cannot make structural calls: the plan stays exact. */
        for (uint32_t i = 0; i < plan.count; i++)
            tes__world_destroy(w, plan.items[i]);
    }
    tes__world_plan_free(w, &plan);
    return rc;
}

static int destroy_impl(tes_world_t *w, tes_entity_t e)
{
    tes__slot_t *slot;
    int rc = tes__world_enter(w, e, &slot);
    if (rc)
        return rc;
    if (w->strict_lifecycle && tes__entity_instance(&w->entities, tes_entity_index(e)))
        return tes__fail(w, TES_ERR_OWNED);
    if (w->hier && w->hier_ops->has_children(w, tes_entity_index(e)))
        return destroy_cascade(w, e);
    if (tes__deferred(w)) {
        if (tes__defer_reserve(w, 1))
            return tes__fail(w, TES_ERR_NOMEM);
        tes__defer_push(w, TES__OP_DESTROY, e, 0, TES_NULL, NULL);
        return TES_OK;
    }
    tes__world_destroy(w, e);
    return TES_OK;
}

static int clear_impl(tes_world_t *w, tes_entity_t e)
{
    tes__slot_t *slot;
    int rc = tes__world_enter(w, e, &slot);
    if (rc)
        return rc;
    if (tes__deferred(w)) {
        if (tes__defer_reserve(w, 1))
            return tes__fail(w, TES_ERR_NOMEM);
        tes__defer_push(w, TES__OP_CLEAR, e, 0, TES_NULL, NULL);
        return TES_OK;
    }
    if (tes__watch_reserve_one(w, 0, tes_entity_index(e)))
        return tes__fail(w, TES_ERR_NOMEM);
    tes__world_strip(w, e, false); /* the root is virtual: nothing to reserve */
    /* Hooks ran: the slot is found again. */
    tes__slot_set_table(&w->entities.slots[tes_entity_index(e)], 0, 0);
    tes__watch_after(w, e, 0);
    return TES_OK;
}

/* Constructs dst and assigns src into it: the value a clone starts with. */
static void clone_value(const tes__component_t *info, void *dst, const void *src)
{
    tes__component_construct1(info, dst);
    tes__component_copy1(info, dst, src);
}

/* Reserves what copying src's components to the entity with index `index`
 * needs. TES_OK or TES_ERR_NOMEM, nothing observable changed. */
static int clone_reserve(tes_world_t *w, tes_entity_t src, const tes__slot_t *slot, uint32_t index)
{
    tes__alloc_t *a = &w->alloc;
    if (tes__table_reserve(tes__slot_table(w, slot), a, 1))
        return TES_ERR_NOMEM;
    const tes__registry_t *reg = &w->components;
    for (uint32_t i = 0; (slot->table & TES__SLOT_SPARSE) && i < reg->sparse_count; i++) {
        tes__component_t *info = reg->items[reg->sparse[i]];
        if (tes__sparse_set_contains(&info->store.set, src) &&
            tes__sparse_store_reserve(&info->store, a, 1, index, NULL, NULL))
            return TES_ERR_NOMEM;
    }
    if (w->hier && w->hier_ops->clone_link(w, src, index, false))
        return TES_ERR_NOMEM;
    return tes__watch_reserve_one(w, 0, index);
}

/* Copies src's components into dst (in the root table, no components);
 * everything was reserved. Fires watchers, then on_add for each copy.
 * Returns what linking dst to src's parent said: TES_OK, or
 * TES_ERR_INVALID (recorded) when dst was named while deferred and that
 * parent has a child of its name (dst stays a root; the copy is made). */
static int clone_commit(tes_world_t *w, tes_entity_t dst, tes_entity_t src)
{
    /* The copies run ctor and copy hooks: what the loops need is read from
     * the slots first, never through slot pointers kept across them. */
    const tes__slot_t *slot = tes__entity_slot(&w->entities, src);
    tes__slot_t *copy_slot = tes__entity_slot(&w->entities, dst);
    tes__table_t *table = tes__slot_table(w, slot);
    uint32_t src_row = slot->row;
    bool sparse = (slot->table & TES__SLOT_SPARSE) != 0;
    uint32_t dst_row = tes__table_push(table, dst);
    tes__slot_set_table(copy_slot, table->id, dst_row);
    tes__slot_hint_sparse(copy_slot, sparse);
    for (uint32_t c = 0; c < table->column_count; c++)
        clone_value(table->columns[c].info, tes__table_cell(table, c, dst_row),
                    tes__table_cell(table, c, src_row));
    const tes__registry_t *reg = &w->components;
    for (uint32_t i = 0; sparse && i < reg->sparse_count; i++) {
        tes__component_t *info = reg->items[reg->sparse[i]];
        if (!tes__sparse_set_contains(&info->store.set, src))
            continue;
        void *value = tes__sparse_store_insert(&info->store, dst);
        if (value)
            clone_value(info, value, tes__sparse_store_get(&info->store, src));
    }
    int rc = TES_OK;
    if (w->hier)
        rc = w->hier_ops->clone_link(w, src, tes_entity_index(dst), true);
    tes__watch_after(w, dst, 0);
    /* Observers see the finished copy. */
    tes__world_each(w, dst, tes__fire_on_add);
    return rc;
}

int tes__clone_into(tes_world_t *w, tes_entity_t dst, tes_entity_t src)
{
    const tes__slot_t *slot = tes__entity_slot(&w->entities, src);
    const tes__slot_t *dst_slot = tes__entity_slot(&w->entities, dst);
    if (!slot || !dst_slot)
        return TES_ERR_STALE;
    tes__assert(dst_slot->table == 0);
    int rc = clone_reserve(w, src, slot, tes_entity_index(dst));
    if (rc)
        return rc;
    return clone_commit(w, dst, src);
}

static tes_entity_t clone_impl(tes_world_t *w, tes_entity_t e)
{
    tes__slot_t *slot;
    if (tes__world_enter(w, e, &slot))
        return TES_NULL;
    bool deferred = tes__deferred(w);
    int rc = tes__entity_reserve(&w->entities, &w->alloc, 1);
    slot = tes__entity_slot(&w->entities, e); /* the slot array may have moved */
    uint32_t index = peek_next_index(&w->entities);
    if (!rc && deferred && tes__defer_reserve(w, 2))
        rc = TES_ERR_NOMEM;
    if (!rc && !deferred)
        rc = clone_reserve(w, e, slot, index);
    if (rc) {
        tes__fail(w, rc);
        return TES_NULL;
    }
    tes_entity_t copy = tes__entity_create(&w->entities, 0, deferred ? TES__ROW_PENDING : 0);
    if (deferred) {
        /* The copy is taken at the flush, from e as it is then. */
        tes__defer_push(w, TES__OP_MATERIALIZE, copy, 0, TES_NULL, NULL);
        tes__defer_push(w, TES__OP_CLONE, copy, 0, e, NULL);
        return copy;
    }
    /* A fresh entity has no name: its link cannot be refused. */
    int linked = clone_commit(w, copy, e);
    tes__assert(linked == TES_OK);
    (void)linked;
    return copy;
}

int tes__destroy_generic(tes_world_t *w, tes_entity_t e)
{
    TES__STRUCTURAL("tes_destroy", int, w, tes__status, destroy_impl(w, e));
}

int tes_clear(tes_world_t *w, tes_entity_t e)
{
    TES__STRUCTURAL("tes_clear", int, w, tes__status, clear_impl(w, e));
}

tes_entity_t tes_clone(tes_world_t *w, tes_entity_t e)
{
    TES__CREATING("tes_clone", tes_entity_t, w, TES_NULL, clone_impl(w, e));
}
