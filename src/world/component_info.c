/*
 * What the world tells about its registered components: the list of ids
 * and each one's name, layout, storage and members. Tools (the
 * inspector, editors, serializers of their own) read a world's schema
 * here instead of parsing an output. Both calls only read the registry,
 * which never shrinks and whose records never move, so they are const
 * reads several threads may make at once; they are not on any hot path.
 */
#include "world/last_error.h"
#include "world/world.h"

int tes_component_info(const tes_world_t *w, tes_comp_t c, tes_component_info_t *out)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!out)
        return tes__fail_const(w, TES_ERR_INVALID, "tes_component_info: out is NULL");
    /* Stamp companions have no record: they are refused here as every
     * call refuses them, as ids that are not registered. */
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info)
        return tes__fail_const(w, TES_ERR_INVALID,
                               "tes_component_info: component id %u is not registered in this world",
                               (unsigned)c);
    *out = (tes_component_info_t){
        .id = info->id,
        .name = info->name,
        .size = info->size,
        .align = info->align,
        .storage = info->storage,
        .stable = info->stable,
        .track_changes = info->track_changes,
        .members = info->members.count ? info->members.items : NULL,
        .member_count = (int32_t)info->members.count,
    };
    return TES_OK;
}

int32_t tes_components(const tes_world_t *w, tes_comp_t *out, int32_t cap)
{
    if (!w)
        return TES_ERR_INVALID;
    if (cap < 0 || (!out && cap > 0))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_components: %s",
                               cap < 0 ? "cap is negative" : "out is NULL but cap is not 0");
    int32_t count = 0;
    for (uint32_t id = 1; id < w->components.count; id++) {
        if (!tes__registry_get(&w->components, (tes_comp_t)id))
            continue;
        if (count < cap)
            out[count] = (tes_comp_t)id;
        count++;
    }
    return count;
}
