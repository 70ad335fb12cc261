/*
 * Cascading destroys, the world's side: every public destroy call (tes_destroy,
 * tes_destroy_n, tes_destroy_matching, tes_instance_destroy) turns its list
 * into a plan through the hierarchy layer's callback, checks the whole plan
 * (strict lifecycle) before anything dies, then destroys the plan in order.
 * A world without links never allocates here: the plan is the list itself.
 */
#include "world/cascade.h"
#include "world/world.h"

#include "world/last_error.h"

int tes__world_destroy_plan(tes_world_t *w, const tes_entity_t *es, uint32_t n,
                            tes__destroy_plan_t *plan)
{
    *plan = (tes__destroy_plan_t){es, n, NULL, 0};
    if (!w->hier)
        return TES_OK;
    bool cascades = false;
    for (uint32_t i = 0; i < n && !cascades; i++)
        cascades = w->hier_ops->has_children(w, tes_entity_index(es[i]));
    if (!cascades)
        return TES_OK;
    uint32_t count = 0;
    size_t bytes = 0;
    tes_entity_t *out = NULL;
    int rc = w->hier_ops->plan(w, es, n, &out, &count, &bytes);
    if (rc)
        return rc;
    *plan = (tes__destroy_plan_t){out, count, out, bytes};
    return TES_OK;
}

int tes__world_plan_owned(tes_world_t *w, const tes__destroy_plan_t *plan, uint32_t allowed)
{
    if (!w->strict_lifecycle || !w->entities.instances)
        return TES_OK;
    for (uint32_t i = 0; i < plan->count; i++) {
        tes_entity_t e = plan->items[i];
        uint32_t inst = tes__entity_instance(&w->entities, tes_entity_index(e));
        if (inst && inst != allowed)
            return tes__fail_detail(w, TES_ERR_OWNED, "entity %u:%u belongs to an instance and the world is strict: destroy its instance with tes_instance_destroy, or detach it first (nothing was destroyed)", tes_entity_index(e), tes_entity_generation(e));
    }
    return TES_OK;
}

void tes__world_plan_free(tes_world_t *w, tes__destroy_plan_t *plan)
{
    if (plan->owned)
        tes__free(&w->alloc, plan->owned, plan->bytes);
    *plan = (tes__destroy_plan_t){NULL, 0, NULL, 0};
}
