/*
 * The filter index: per entity index, which default-filtered tags
 * (TES_DISABLED, TES_PREFAB) the entity carries, one byte each. Queries
 * driven by sparse pools test it instead of reading the entity index and
 * the entity's table, so skipping disabled and prefab entities costs one
 * byte load per entity, and nothing at all while no entity carries a tag.
 *
 * It exists once per world, created by the first query that needs it, and
 * is kept up to date by a world watcher subscribed to the two tags (plus
 * the whole-entity events every watcher hears: spawn, clone, clear,
 * destroy).
 */
#ifndef TES_QUERY_FILTER_H
#define TES_QUERY_FILTER_H

#include "world/world.h"

enum { TES__FILTER_DISABLED = 1, TES__FILTER_PREFAB = 2 };

struct tes__filters {
    tes_world_t *w;
    uint8_t *tags;   /* per entity index: TES__FILTER_* bits */
    uint32_t cap;
    uint32_t tagged; /* indices whose byte is not 0 */
};

/* The world's filter index, created on first use. TES_OK or TES_ERR_NOMEM
 * (nothing created). */
int tes__filters_use(tes_world_t *w, struct tes__filters **out);

/* True when live entity e carries a tag in mask. */
static inline bool tes__filters_hide(const struct tes__filters *f, uint8_t mask, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    return index < f->cap && (f->tags[index] & mask);
}

#endif
