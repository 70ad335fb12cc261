/*
 * Groups (seed 002 b and c): a query that keeps its own up-to-date list of
 * the entities it matches, so iteration never tests entities that do not.
 * - A non-owning group is a sparse set of the matching entities. When one
 *   of its AND pools holds nothing but members (the common case of a query
 *   whose smallest component implies the others, W8), it walks that pool
 *   instead: the pool's own order, its field a slice, no member array read.
 * - An owning group reorders the sparse stores of its AND terms so the
 *   matching entities sit at the front of every one of them, in the same
 *   order: chunks are then plain slices of every store (fully contiguous).
 *   A store can have one owner; stable stores delete in place and cannot be
 *   reordered, so they cannot be owned.
 * Both learn about changes through a world watcher subscribed to the
 * group's own components and TES_DISABLED / TES_PREFAB (the world routes
 * nothing else to it, besides whole-entity changes: spawn, destroy, clear,
 * clone): before a change an entity that may stop matching leaves, after
 * it an entity that matches joins. Only DRIVEN-mode queries have groups; a
 * non-owning flag on a table query is served by the table cache.
 */
#ifndef TES_QUERY_GROUP_H
#define TES_QUERY_GROUP_H

#include "query/query.h"

struct tes__group {
    tes_query_t *q;
    tes_world_t *w;                       /* q->w; outlives q when freed late */
    bool owning;
    tes__sparse_set_t members;            /* non-owning: the matches */
    uint32_t length;                      /* owning: matches at the front */
    tes__component_t *owned[TES_MAX_TERMS];
    int32_t owned_count;
    void *scratch;                        /* owning: room for one value */
    size_t scratch_size;
};

/* Builds q's group and fills it with the current matches. TES_OK,
 * TES_ERR_INVALID (an owning group over a stable or already-owned store, a
 * table AND term or an OPTIONAL term) or TES_ERR_NOMEM; q->group stays NULL
 * on failure. */
int tes__group_new(tes_query_t *q);
void tes__group_free(tes_query_t *q);

/* The AND term whose pool holds exactly a non-owning group's members, or
 * -1 (an owning group, or no such pool). Members hold every AND component,
 * so a pool with as many live entities as the group has members holds the
 * members and nothing else: the group then walks that pool (it.priv_driver)
 * rather than its own set. Decided when an iteration starts: membership
 * cannot change while the iteration lives (structural changes wait). */
int32_t tes__group_pool(const tes__group_t *g);

/* The next chunk of an owning group's walk (a non-owning group's is the
 * packed walk, base_walk.c). */
bool tes__group_next_owned(tes_iter_t *it);

#endif
