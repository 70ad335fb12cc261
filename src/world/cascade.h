/*
 * Cascading destroys, the world's side (cascade.c): a destroy call turns
 * its list into a plan (the list itself in a world without links),
 * checks it whole, then destroys it in order. The plan's type is in
 * world.h, beside the hierarchy's callbacks that make it.
 */
#ifndef TES_WORLD_CASCADE_H
#define TES_WORLD_CASCADE_H

#include "world/world.h"

/* Plans the destroy of n listed live entities (see tes__hier_ops_t.plan).
 * TES_OK or TES_ERR_NOMEM (not recorded). */
int tes__world_destroy_plan(tes_world_t *w, const tes_entity_t *es, uint32_t n,
                            tes__destroy_plan_t *plan);
/* Under strict_lifecycle, refuses a plan holding an instance member whose
 * instance (index + 1 as the entity index records it) is not `allowed`
 * (0: none is): TES_ERR_OWNED recorded with a detail. TES_OK otherwise. */
int tes__world_plan_owned(tes_world_t *w, const tes__destroy_plan_t *plan, uint32_t allowed);
void tes__world_plan_free(tes_world_t *w, tes__destroy_plan_t *plan);

#endif
