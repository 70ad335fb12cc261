/*
 * Reading an entity's components: the address of e's c, which tes_get,
 * tes_get_mut and the library's own reads (tes__get) share, inline here so
 * that the generic paths of component_ops.c find a cell the same way.
 * Random reads of a game loop are what it is tuned for: see
 * tes__component_ptr.
 */
#ifndef TES_WORLD_GET_H
#define TES_WORLD_GET_H

#include "world/world.h"

/* The address of e's sparse component in st, NULL when e has none. A
 * sparse entry carries the generation and is erased before its entity dies
 * (every way an entity leaves, deferred, disabled and prefab ones included,
 * goes through the removal of its sparse components), so it answers for
 * liveness by itself: no entity slot is read. The compare also fails for an
 * empty entry (null position) and for a stale handle whose index is
 * reused. */
static inline void *tes__sparse_ptr(const tes__sparse_store_t *st, tes_entity_t e, uint32_t size)
{
    /* Both steps read biased bases (sparse_set.h, sparse_store.h): no NULL
     * page to test (an absent page reads as empty entries) and no mask. */
    uint32_t index = tes_entity_index(e);
    if ((index >> TES__SPARSE_PAGE_BITS) >= st->set.page_count)
        return NULL;
    uint64_t entry = *tes__sparse_entry_at(st->set.bases, index);
    if (((e & ~(uint64_t)TES_NULL_INDEX) ^ entry) >= TES_NULL_INDEX)
        return NULL;
    return tes__sparse_value_at(st->bases, st->page_shift, size, (uint32_t)entry);
}

/* The address of e's c; shared by tes_get and tes_get_mut (get.c) and
 * the generic set (component_ops.c). Reading the address does not change
 * the world, hence the const world. Random reads are bound by how many of them the processor keeps in flight, which the
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
static inline void *tes__component_ptr(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return NULL;
    const tes__entity_index_t *ei = &w->entities;
    uint32_t get = c < TES__REGISTRY_SMALL_IDS ? w->components.get_of[c] : 0;
    if (get & TES__GET_SPARSE)
        return tes__sparse_ptr(w->components.sparse_of[c], e, get & ~TES__GET_SPARSE);
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
        return info->size ? tes__sparse_ptr(&info->store, e, info->size) : NULL;
    const tes__slot_t *slot = tes__entity_slot(ei, e);
    if (!slot)
        return NULL;
    const tes__table_t *t = w->tables.tables[slot->table & TES__SLOT_TABLE_MASK];
    int32_t col = tes__table_column_index(t, c);
    return col >= 0 ? tes__table_cell(t, (uint32_t)col, slot->row) : NULL;
}

/* tes_get_mut without recording a miss: for library code, whose reads
 * that find nothing (a tag's value, say) are no failure of the user's. */
void *tes__get(const tes_world_t *w, tes_entity_t e, tes_comp_t c);

#endif
