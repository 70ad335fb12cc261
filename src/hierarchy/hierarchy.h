/*
 * The hierarchy: parent/child links and names, kept outside tables so that
 * linking never moves a row or makes a table (iteration of a world with a
 * forest is as fast as without). Built for scene trees: many small subtrees,
 * frequent reparenting, destroys of whole subtrees, path lookups by name.
 *
 * Links: one 16-byte record per entity index {parent, last child, prev,
 * next}, every field an entity index + 1 (0: none), in pages of
 * TES__LINK_PAGE records (entity index i at position i + 1) allocated
 * when an entity of the page is first linked, so a world without links holds nothing and one with a forest
 * pays 16 bytes per entity of a touched page. A record's address is a
 * function of the entity index alone, so a call can start loading it
 * before the entity's slot arrives. The parent keeps its last child; the
 * next fields of siblings form a ring (the last child's next is the first
 * child) and the prev fields a plain list (the first child's is 0). So
 * appending touches the parent and its last child, unlinking the child's
 * two neighbours (or, for a first child, its next sibling and the last
 * one): a reparent touches O(1) records, and every record it touches is
 * one step from a record it already holds, never two. Depth is the length
 * of the parent chain (not stored: a reparent would have to update a
 * whole subtree).
 *
 * Names: a map from entity index to its copied name, and a map from
 * (parent, name hash) to the child, so a path segment is one expected O(1)
 * lookup. Roots are siblings of each other (parent 0).
 *
 * The world hears nothing of this layer by name: the state registers
 * tes__hier_ops_t (world.h), through which destroys cascade and dying
 * entities drop their links and names.
 *
 * Inside the layer: this header (the records and their reads) and
 * name_map.c (the two name maps) call nothing else of it; links.c holds
 * the state, linking, and the callbacks it registers (check.c's and
 * instances.c's among them; instances link through links.c); names.c (the
 * public naming calls) stands on links.c, since naming an entity may make
 * the state.
 */
#ifndef TES_HIERARCHY_HIERARCHY_H
#define TES_HIERARCHY_HIERARCHY_H

#include "core/hash.h"
#include "world/world.h"

#define TES__LINK_PAGE 1024u

typedef struct tes__link {
    uint32_t parent; /* index + 1 of each; 0: none */
    uint32_t last;   /* last child */
    uint32_t prev;   /* previous sibling; 0 for the first child */
    uint32_t next;   /* next sibling; the last child's is the first one */
} tes__link_t;

typedef struct tes__hier {
    tes__link_t **pages; /* page_cap entries, NULL for untouched pages */
    uint32_t page_cap;
    uint32_t page_count; /* pages allocated */
    uint32_t linked;     /* entities with a parent */
    tes__map_t names;    /* index + 1 -> the name (a char * as uintptr_t) */
    tes__map_t siblings; /* sibling key (parent, name) -> child index */
    uint64_t *changes;   /* the world's link_changes: every link write bumps it */
    /* Whether one of the world's first tables_seen tables holds prefab
     * entities (tables are never removed), so a link in a world without
     * prefabs skips the two table reads of the prefab rule. */
    uint32_t tables_seen;
    bool prefab_tables;
} tes__hier_t;

/* The world's hierarchy state, made on first use (NULL: TES_ERR_NOMEM,
 * not recorded). */
tes__hier_t *tes__hier(tes_world_t *w);

/* The record at position k, or NULL if its page was never made. Entity
 * index i's record sits at position i + 1, the value link fields hold, so
 * following a link is no arithmetic beyond the page split (position 0,
 * the first record of page 0, belongs to no entity). */
static inline tes__link_t *tes__link_at(const tes__hier_t *h, uint64_t k)
{
    uint64_t p = k / TES__LINK_PAGE;
    if (!h || p >= h->page_cap || !h->pages[p])
        return NULL;
    return &h->pages[p][k % TES__LINK_PAGE];
}

/* The record of entity index i, or NULL if its page was never made. */
static inline tes__link_t *tes__link(const tes__hier_t *h, uint32_t i)
{
    return tes__link_at(h, (uint64_t)i + 1);
}

/* The parent index + 1 of entity index i (0: a root). */
static inline uint32_t tes__link_parent(const tes__hier_t *h, uint32_t i)
{
    const tes__link_t *l = tes__link(h, i);
    return l ? l->parent : 0;
}

/* The first child of the entity whose record is l (NULL: none), as index
 * + 1, or 0 if it has none. */
static inline uint32_t tes__link_first(const tes__hier_t *h, const tes__link_t *l)
{
    return l && l->last ? tes__link_at(h, l->last)->next : 0;
}

/* The sibling after child k (index + 1) of the entity whose record is pl,
 * or 0 after the last one. */
static inline uint32_t tes__link_next(const tes__hier_t *h, const tes__link_t *pl, uint32_t k)
{
    return k == pl->last ? 0 : tes__link_at(h, k)->next;
}

/* Makes the pages of entity indices a and b exist. TES_OK or
 * TES_ERR_NOMEM (not recorded; pages made stay, they are only room). */
int tes__links_reserve(tes__hier_t *h, tes__alloc_t *a, uint32_t ia, uint32_t ib);

/* Makes index c (a root, its page made) the last child of index p. */
void tes__link_append(tes__hier_t *h, uint32_t c, uint32_t p);
/* Links made by the flush on its own (a deferred clone's, a deferred
 * instantiation's): makes root index c (its page made, room for one
 * sibling key reserved if it is named) the last child of index p, unless
 * c is named and another child of p has its name: then records
 * TES_ERR_INVALID with a detail naming `what` and returns it, nothing
 * changed. */
int tes__link_append_named(tes_world_t *w, uint32_t c, uint32_t p, const char *what);

/* The hierarchy's part of the world check (check.c; tes__hier_ops_t.check). */
int tes__hier_check(const tes_world_t *w);

/* Instances (instances.c): tes__hier_ops_t's instance_* entries. */
int tes__hier_instance_prepare(tes_world_t *w, const tes_entity_t *members, uint32_t m,
                               uint32_t n, const uint32_t *indices, void **prep);
int tes__hier_instance_commit(tes_world_t *w, void *prep, const uint32_t *indices,
                              const uint8_t *skip);
void tes__hier_instance_discard(tes_world_t *w, void *prep);

/* The name maps (name_map.c; the public naming calls are names.c's). The
 * key of a name among the children of parent index + 1 `parent1` (0: the
 * roots). */
uint64_t tes__sibling_key(uint32_t parent1, const char *name, size_t len);
/* The child of parent1 named name (len bytes), as index + 1, or 0. */
uint32_t tes__sibling_find(const tes__hier_t *h, uint32_t parent1, const char *name, size_t len);
/* The name of entity index i, or NULL. */
const char *tes__name_of(const tes__hier_t *h, uint32_t i);
/* Moves i's sibling key from old_parent1 to new_parent1 (room reserved). */
void tes__name_move(tes__hier_t *h, uint32_t i, uint32_t old_parent1, uint32_t new_parent1);
/* Drops i's name (i is dying). */
void tes__name_drop(tes_world_t *w, tes__hier_t *h, uint32_t i);
/* Removes i's name s (its entry in the names map) from both maps and frees
 * it. */
void tes__name_remove(tes__alloc_t *a, tes__hier_t *h, uint32_t i, char *s);

#endif
