/*
 * The name maps (see hierarchy.h): a name is copied once and found two
 * ways, by entity (names: index + 1 -> the string) and by place (siblings:
 * a hash of the parent and the name -> the entity index). Names are rare
 * next to entities, so both maps hold named entities only. These are the
 * reads and moves that linking, instancing and the snapshot share; they
 * call nothing else of the hierarchy, so the links (links.c) and the
 * public naming calls (names.c) both stand on them.
 */
#include "hierarchy/hierarchy.h"

#include <string.h>

uint64_t tes__sibling_key(uint32_t parent1, const char *name, size_t len)
{
    return tes__hash_u64(tes__hash_bytes(name, len) ^ ((uint64_t)parent1 * UINT64_C(0x9e3779b97f4a7c15)));
}

const char *tes__name_of(const tes__hier_t *h, uint32_t i)
{
    uint64_t v;
    if (!h || !h->names.count || !tes__map_get(&h->names, (uint64_t)i + 1, &v))
        return NULL;
    return (const char *)(uintptr_t)v;
}

uint32_t tes__sibling_find(const tes__hier_t *h, uint32_t parent1, const char *name, size_t len)
{
    if (!h || !h->siblings.count)
        return 0;
    uint32_t cursor = 0;
    uint64_t v;
    uint64_t key = tes__sibling_key(parent1, name, len);
    while (tes__map_next(&h->siblings, key, &cursor, &v)) {
        uint32_t i = (uint32_t)v;
        const char *s = tes__name_of(h, i);
        if (tes__link_parent(h, i) == parent1 && strncmp(s, name, len) == 0 && s[len] == '\0')
            return i + 1;
    }
    return 0;
}

void tes__name_move(tes__hier_t *h, uint32_t i, uint32_t old_parent1, uint32_t new_parent1)
{
    const char *s = tes__name_of(h, i);
    size_t len = strlen(s);
    bool removed = tes__map_remove(&h->siblings, tes__sibling_key(old_parent1, s, len), i);
    tes__assert(removed);
    (void)removed;
    tes__map_insert(&h->siblings, tes__sibling_key(new_parent1, s, len), i);
}

void tes__name_remove(tes__alloc_t *a, tes__hier_t *h, uint32_t i, char *s)
{
    size_t len = strlen(s);
    bool had = tes__map_remove(&h->siblings, tes__sibling_key(tes__link_parent(h, i), s, len), i);
    had &= tes__map_remove(&h->names, (uint64_t)i + 1, (uint64_t)(uintptr_t)s);
    tes__assert(had);
    (void)had;
    tes__free(a, s, len + 1);
}

void tes__name_drop(tes_world_t *w, tes__hier_t *h, uint32_t i)
{
    char *s = (char *)(uintptr_t)tes__name_of(h, i);
    if (s)
        tes__name_remove(&w->alloc, h, i, s);
}
