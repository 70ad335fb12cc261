/*
 * Visiting and stripping an entity's components: the walk over every
 * component an entity holds (table columns in type order, then sparse
 * ones), and the strip that a destroy or a clear runs (on_remove
 * observers, watchers, destructors, then the row is vacated). Hooks run
 * between every step, so the entity's slot is looked up again after each
 * one, never kept across it.
 */
#include "world/world.h"

#include "world/move.h"
#include "world/quiet.h"

/* Calls visit(w, info, e, ptr) for each sparse component e has. */
static void each_sparse(tes_world_t *w, tes_entity_t e, tes__visit_fn visit)
{
    for (uint32_t i = 0; i < w->components.sparse_count; i++) {
        tes__component_t *info = w->components.items[w->components.sparse[i]];
        if (!info->store.set.live || !tes__sparse_set_contains(&info->store.set, e))
            continue;
        visit(w, info, e, tes__sparse_store_get(&info->store, e));
    }
}

void tes__world_each(tes_world_t *w, tes_entity_t e, tes__visit_fn visit)
{
    /* visit runs hooks (observers): the slot is looked up again after each
     * one, never held across it. Hooks cannot move e to another table
     * (structural calls are refused while they run). */
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return;
    tes__table_t *table = tes__slot_table(w, slot);
    for (uint32_t i = 0; i < table->type_count; i++) {
        tes__component_t *info = tes__registry_get(&w->components, table->type[i]);
        slot = tes__entity_slot(&w->entities, e);
        if (!slot)
            return;
        tes__assert(tes__slot_table(w, slot) == table);
        /* Columns are not one per sized type entry (a tracked component's
         * stamp columns follow its own): ask the table. */
        int32_t col = tes__table_column_index(table, info->id);
        void *ptr = col >= 0 ? tes__table_cell(table, (uint32_t)col, slot->row) : NULL;
        visit(w, info, e, ptr);
    }
    slot = tes__entity_slot(&w->entities, e);
    if (slot && (slot->table & TES__SLOT_SPARSE))
        each_sparse(w, e, visit);
}

void tes__fire_on_add(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    tes__fire(w, info->hooks.on_add, info, e, ptr);
}

static void fire_remove(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    tes__fire(w, info->hooks.on_remove, info, e, ptr);
}

static void drop_sparse(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    if (ptr && info->hooks.dtor)
        info->hooks.dtor(ptr, 1, info->hooks.ctx);
    tes__sparse_store_remove(&info->store, e, &info->hooks);
    (void)w;
}

void tes__world_strip(tes_world_t *w, tes_entity_t e, bool destroying)
{
    uint32_t index = tes_entity_index(e);
    tes__table_t *table = tes__slot_table(w, &w->entities.slots[index]);
    bool sparse = (w->entities.slots[index].table & TES__SLOT_SPARSE) != 0;
    /* Observers first, while the entity is still whole; then watchers. */
    if ((table->flags & TES__TABLE_HAS_ON_REMOVE) || sparse)
        tes__world_each(w, e, fire_remove);
    tes__watch_before(w, e, destroying ? TES__WATCH_DESTROY : 0);
    /* Then destructors. Every phase runs hooks, so the slot is read by
     * index after each, never through a pointer kept across them. */
    tes__world_hook_up(w);
    uint32_t row = w->entities.slots[index].row;
    tes__assert(tes__slot_table(w, &w->entities.slots[index]) == table);
    tes__table_destruct_row(table, row);
    tes__world_vacate(w, table, row);
    if (sparse)
        each_sparse(w, e, drop_sparse);
    tes__world_hook_down(w);
    tes__slot_hint_sparse(&w->entities.slots[index], false);
}
