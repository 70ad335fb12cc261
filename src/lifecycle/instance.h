/*
 * Lifecycle groups (seed 004): every prefab instance is a set of entities
 * born together, named by an instance id whose one job is to destroy the
 * whole set. Instance ids are generational handles issued by the same
 * allocator as entities (free list, generations, retirement instead of
 * wrap-around), so a stale instance id never names a newer instance.
 *
 * Membership: each entity slot records its instance (index + 1, 0 = none);
 * the members of an instance form a doubly linked list threaded through a
 * per-entity link array (no allocation per instance, O(1) detach and
 * adopt). An instance dies when its last member leaves: destroyed,
 * detached, or through tes_instance_destroy. The lifecycle state is created
 * on first use and hears about destroyed entities through a world watcher.
 *
 * Prefab records (prefab.c) live here too: the ordered member list of each
 * prefab root.
 */
#ifndef TES_LIFECYCLE_INSTANCE_H
#define TES_LIFECYCLE_INSTANCE_H

#include "world/world.h"

typedef struct tes__instance_rec {
    uint32_t first; /* entity index of the first member, TES_NULL_INDEX if none */
    uint32_t last;
    uint32_t count;
} tes__instance_rec_t;

typedef struct tes__member_link {
    uint32_t next; /* entity index of the next member, TES_NULL_INDEX at the end */
    uint32_t prev;
} tes__member_link_t;

typedef struct tes__prefab_rec {
    tes_entity_t *members; /* members[0] is the root; NULL for a free record */
    uint32_t count;        /* a free record: the next free record's index */
    uint32_t cap;
} tes__prefab_rec_t;

typedef struct tes__lifecycle {
    tes_world_t *w;
    tes__entity_index_t ids;     /* instance ids */
    tes__instance_rec_t *recs;   /* per instance index, ids.cap long */
    uint32_t rec_cap;
    tes__member_link_t *links;   /* per entity index */
    uint32_t link_cap;
    tes__map_t prefab_by_root;   /* prefab root handle -> record index */
    tes__prefab_rec_t *prefabs;
    uint32_t prefab_count;       /* records in use or free */
    uint32_t prefab_cap;
    uint32_t prefab_free;        /* first free record, TES_NULL_INDEX if none */
    uint32_t prefabs_alive;
} tes__lifecycle_t;


/* The world's lifecycle state, created on first use (NULL: TES_ERR_NOMEM). */
tes__lifecycle_t *tes__lifecycle(tes_world_t *w);

/* Room to create n instances whose members reach entity index `max_index`
 * (exclusive). TES_OK or TES_ERR_NOMEM. */
int tes__instances_reserve(tes__lifecycle_t *lc, uint32_t n, uint32_t max_index);
/* Issues an instance id (room reserved). */
tes_instance_t tes__instance_create(tes__lifecycle_t *lc);
/* Appends live entity e (in no instance) to live instance `inst`. */
void tes__instance_link(tes__lifecycle_t *lc, tes_instance_t inst, tes_entity_t e);

/* The root of the prefab whose member (or root) live entity e is, or
 * TES_NULL (e is in no prefab's member list). O(members of all prefabs):
 * for the rare calls that link prefab entities. */
tes_entity_t tes__prefab_root_of(const tes_world_t *w, tes_entity_t e);

#endif
