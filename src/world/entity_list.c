/*
 * Listing the live entities of a world page by page, for tools that show a
 * world without knowing its components (an inspector's entity browser).
 * Pages are cut by position among the live entities in index order, so a
 * page is a pass over the slot array: cheap for the first pages, linear in
 * the slot count for the last ones, which is what browsing a million
 * entities at human speed can afford. Nothing is allocated.
 */
#include "world/last_error.h"
#include "world/world.h"

int32_t tes_entities(const tes_world_t *w, int64_t offset, tes_entity_t *out, int32_t cap)
{
    if (!w)
        return 0;
    if (offset < 0 || cap < 0 || (!out && cap > 0))
        return tes__fail_const(w, TES_ERR_INVALID,
                               "tes_entities: offset %lld and cap %d must not be negative, "
                               "and out must not be NULL when cap > 0",
                               (long long)offset, (int)cap);
    const tes__entity_index_t *ei = &w->entities;
    if (offset >= ei->alive)
        return 0;
    int64_t skip = offset;
    int32_t n = 0;
    for (uint32_t i = 0; i < ei->count && n < cap; i++) {
        const tes__slot_t *s = &ei->slots[i];
        if (!tes__slot_is_live(s))
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        out[n++] = tes_entity_make(i, s->generation);
    }
    return n;
}
