/*
 * Groups (seed 002 b and c): a query that keeps its own up-to-date list of
 * the entities it matches, so iteration never tests entities that do not.
 * - A non-owning group is a sparse set of the matching entities.
 * - An owning group reorders the sparse stores of its AND terms so the
 *   matching entities sit at the front of every one of them, in the same
 *   order: chunks are then plain slices of every store (fully contiguous).
 *   A store can have one owner; stable stores delete in place and cannot be
 *   reordered, so they cannot be owned.
 * Both learn about changes through a world watcher: before a change an
 * entity that may stop matching leaves, after it an entity that matches
 * joins. Only changes of the group's own components, of TES_DISABLED /
 * TES_PREFAB, and whole-entity changes (destroy, clear, clone) matter.
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

/* The next chunk of a group walk (see iter.c). */
bool tes__group_next(tes_iter_t *it);

#endif
