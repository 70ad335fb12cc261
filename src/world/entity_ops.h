/*
 * Entity-level operations (entity_ops.c) that other files of the library
 * call: the generic path of tes_destroy, a destroy that skips the
 * strict-lifecycle rule, and the clone a deferred tes_clone runs at its
 * flush.
 */
#ifndef TES_WORLD_ENTITY_OPS_H
#define TES_WORLD_ENTITY_OPS_H

#include "world/world.h"

/* The generic path of tes_destroy (quiet_ops.c takes the quiet one when
 * it applies). */
int tes__destroy_generic(tes_world_t *w, tes_entity_t e);

/* Destroys a live entity whatever its instance (the strict-lifecycle rule
 * is the caller's business). Must run between tes__world_begin and end. */
void tes__world_destroy(tes_world_t *w, tes_entity_t e);

/* Copies every component of src into dst, an entity in the root table with
 * no components (a deferred clone at its flush). TES_OK, TES_ERR_STALE (one
 * of them died) or TES_ERR_NOMEM (nothing changed). */
int tes__clone_into(tes_world_t *w, tes_entity_t dst, tes_entity_t src);

#endif
