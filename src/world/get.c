/*
 * The reads of one entity's components: tes_has, tes_get, tes_get_mut and
 * tes__get (the library's read, which records no miss). They change
 * nothing but a tracked component's stamp (tes_get_mut), so every layer
 * that must look at a value, the deferred queue included, stands on them.
 * Tuned for random reads in a game loop: the short path is in get.h.
 */
#include "world/get.h"

#include "world/changes.h"
#include "world/last_error.h"

bool tes_has(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return false;
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info)
        return false;
    if (info->storage == TES_STORAGE_SPARSE)
        return tes__sparse_set_contains(&info->store.set, e); /* see tes__sparse_ptr */
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return false;
    return tes__table_type_index(tes__slot_table(w, slot), c) >= 0;
}

void *tes__get(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    return tes__component_ptr(w, e, c);
}

/* A read that finds nothing records why for the calling thread
 * (last_error.h): a few stores, out of line, so the hit path gains one
 * test of the pointer it returns anyway. */
/* tes_get_mut's general path (an id without a read descriptor, which
 * every tracked component is: its get_of is 0 from registration): the
 * address as tes__component_ptr finds it, and for a tracked component the
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
    void *p = tes__component_ptr(w, e, c);
    return tes__likely(p != NULL) ? p : tes__fail_const_get(w, e, c);
}

/* A read that finds nothing records why for the calling thread
 * (last_error.h): a few stores, out of line, so the hit path gains one
 * test of the pointer it returns anyway. A small id with a read
 * descriptor (every untracked data component with a small id) takes
 * tes__component_ptr's short path, as tes_get does. */
void *tes_get_mut(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (tes__unlikely(!w || c >= TES__REGISTRY_SMALL_IDS || !w->components.get_of[c]))
        return w ? get_mut_general(w, e, c) : NULL;
    void *p = tes__component_ptr(w, e, c);
    return tes__likely(p != NULL) ? p : tes__fail_const_get(w, e, c);
}

const void *tes_get(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    const void *p = tes__component_ptr(w, e, c);
    return tes__likely(p != NULL) ? p : tes__fail_const_get(w, e, c);
}
