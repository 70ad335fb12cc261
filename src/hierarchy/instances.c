/*
 * Links and names of instances (see tes__hier_ops_t in world.h): an
 * instance is a tree like its prefab. The prefab's links among its members
 * are copied, remapped to the instance's entities, each parent's children
 * in the prefab's order; a member's name is copied when its copy has a
 * parent among the copies (where the prefab's sibling rule keeps it
 * unique), so the root's copy and other member roots get no name (they
 * would collide among the roots). Everything a copy needs (link pages, map
 * room, the name strings) is reserved by prepare, so commit cannot fail
 * for want of memory. A deferred instantiation is committed at the flush,
 * and tes_set_name (applied at once) may have named a copy by then: that
 * copy keeps its name, and each link follows the sibling-name rule (one
 * that would repeat a sibling's name is not made, and the flush reports
 * TES_ERR_INVALID), as any link the flush makes.
 * Prefabs are small: members are matched by a linear search.
 */
#include "hierarchy/hierarchy.h"

#include <string.h>

#include "core/checked.h"
#include "world/last_error.h"

typedef struct pair {
    uint32_t child, parent; /* member positions */
} pair_t;

typedef struct prep {
    uint32_t m, n;
    pair_t *pairs; /* in link order */
    uint32_t npairs;
    char **names;  /* npairs * n: the copy of pairs[p]'s child's name in instance k, or NULL */
    size_t names_bytes;
} prep_t;

static int32_t position(const tes_entity_t *members, uint32_t m, uint32_t index)
{
    for (uint32_t i = 0; i < m; i++)
        if (members[i] && tes_entity_index(members[i]) == index)
            return (int32_t)i;
    return -1;
}

static void prep_free(tes_world_t *w, prep_t *p)
{
    tes__alloc_t *a = &w->alloc;
    for (size_t k = 0; p->names && k < (size_t)p->npairs * p->n; k++)
        if (p->names[k])
            tes__free(a, p->names[k], strlen(p->names[k]) + 1);
    tes__free(a, p->names, p->names_bytes);
    tes__free(a, p->pairs, (size_t)p->npairs * sizeof *p->pairs);
    tes__free(a, p, sizeof *p);
}

int tes__hier_instance_prepare(tes_world_t *w, const tes_entity_t *members, uint32_t m, uint32_t n,
                            const uint32_t *indices, void **out)
{
    *out = NULL;
    tes__hier_t *h = w->hier;
    uint32_t npairs = 0, named = 0;
    for (uint32_t j = 0; j < m; j++) {
        const tes__link_t *l = members[j] ? tes__link(h, tes_entity_index(members[j])) : NULL;
        for (uint32_t c = tes__link_first(h, l); c; c = tes__link_next(h, l, c))
            if (position(members, m, c - 1) >= 0) {
                npairs++;
                named += tes__name_of(h, c - 1) != NULL;
            }
    }
    if (!npairs || !n)
        return TES_OK;
    tes__alloc_t *a = &w->alloc;
    prep_t *p = tes__calloc(a, sizeof *p);
    if (!p)
        return TES_ERR_NOMEM;
    p->m = m;
    p->n = n;
    size_t pair_bytes = 0, name_count = 0;
    if (!tes__size_mul(&pair_bytes, npairs, sizeof *p->pairs) ||
        !(p->pairs = tes__malloc(a, pair_bytes))) {
        tes__free(a, p, sizeof *p);
        return TES_ERR_NOMEM;
    }
    p->npairs = npairs;
    uint32_t at = 0;
    for (uint32_t j = 0; j < m; j++) {
        const tes__link_t *l = members[j] ? tes__link(h, tes_entity_index(members[j])) : NULL;
        for (uint32_t c = tes__link_first(h, l); c; c = tes__link_next(h, l, c)) {
            int32_t i = position(members, m, c - 1);
            if (i >= 0)
                p->pairs[at++] = (pair_t){(uint32_t)i, j};
        }
    }
    int rc = TES_OK;
    if (named) {
        if (!tes__size_mul(&name_count, npairs, n) ||
            !tes__size_mul(&p->names_bytes, name_count, sizeof *p->names) ||
            !(p->names = tes__calloc(a, p->names_bytes)))
            rc = TES_ERR_NOMEM;
        uint64_t copies = (uint64_t)named * n;
        if (!rc && (copies > UINT32_MAX || tes__map_reserve(&h->names, a, (uint32_t)copies) ||
                    tes__map_reserve(&h->siblings, a, (uint32_t)copies)))
            rc = TES_ERR_NOMEM;
        for (uint32_t q = 0; !rc && q < npairs; q++) {
            const char *s = tes__name_of(h, tes_entity_index(members[p->pairs[q].child]));
            size_t len = s ? strlen(s) : 0;
            for (uint32_t k = 0; s && !rc && k < n; k++) {
                char *copy = tes__malloc(a, len + 1);
                if (!copy)
                    rc = TES_ERR_NOMEM;
                else
                    memcpy(copy, s, len + 1);
                p->names[(size_t)q * n + k] = copy;
            }
        }
    }
    for (size_t k = 0; !rc && k < (size_t)n * m; k++)
        rc = tes__links_reserve(h, a, indices[k], indices[k]);
    if (rc) {
        prep_free(w, p);
        return TES_ERR_NOMEM;
    }
    *out = p;
    return TES_OK;
}

int tes__hier_instance_commit(tes_world_t *w, void *arg, const uint32_t *indices, const uint8_t *skip)
{
    prep_t *p = arg;
    tes__hier_t *h = w->hier;
    int rc = TES_OK;
    for (uint32_t k = 0; k < p->n; k++) {
        for (uint32_t q = 0; q < p->npairs; q++) {
            size_t ci = (size_t)k * p->m + p->pairs[q].child;
            size_t pi = (size_t)k * p->m + p->pairs[q].parent;
            if (skip && (skip[ci] || skip[pi]))
                continue;
            uint32_t c = indices[ci], par = indices[pi];
            /* A copy named while pending (a deferred instantiation) keeps
             * its name, given after the call; its link follows the
             * sibling rule like any link the flush makes. */
            if (h->names.count && tes__name_of(h, c)) {
                int r = tes__link_append_named(w, c, par, "tes_instantiate (deferred)");
                if (r && !rc)
                    rc = r;
                continue;
            }
            char **name = p->names ? &p->names[(size_t)q * p->n + k] : NULL;
            size_t len = name && *name ? strlen(*name) : 0;
            uint32_t other = len ? tes__sibling_find(h, par + 1, *name, len) : 0;
            if (other) {
                /* A sibling named while pending has the member's name. */
                int r = tes__fail_detail(w, TES_ERR_INVALID, "tes_instantiate (deferred): entity %u, the copy of a member named \"%s\", was not linked: entity %u, its parent, already has a child of that name (named while the world was deferred)", c, *name, par);
                if (!rc)
                    rc = r;
                continue;
            }
            tes__link_append(h, c, par);
            if (len) {
                tes__map_insert(&h->names, (uint64_t)c + 1, (uint64_t)(uintptr_t)*name);
                tes__map_insert(&h->siblings, tes__sibling_key(par + 1, *name, len), c);
                *name = NULL; /* owned by the maps now */
            }
        }
    }
    prep_free(w, p);
    return rc;
}

void tes__hier_instance_discard(tes_world_t *w, void *prep)
{
    if (prep)
        prep_free(w, prep);
}
