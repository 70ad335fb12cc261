/*
 * Parent/child links (see hierarchy.h): the state, the reads, and the
 * things the world asks through tes__hier_ops_t: a destroy's post-order
 * plan, the unlinking of a dying entity, a clone's link. Linking and
 * reparenting by the public calls (tes_set_parent, tes_set_parent_n) live
 * in set_parent.c; both sides edit records only through the step in
 * ring.h. Every change reserves its pages (and map room) first, then
 * commits with code that cannot fail, so a refused or failed call leaves
 * the forest as it was.
 */
#include "hierarchy/ring.h"

#include <string.h>

#include "core/checked.h"
#include "lifecycle/instance.h"
#include "world/last_error.h"
#include "world/quiet.h"

/* ------------------------------------------------------------------ state */

static void hier_fini(void *ctx)
{
    tes_world_t *w = ctx;
    tes__hier_t *h = w->hier;
    if (!h)
        return;
    tes__alloc_t *a = &w->alloc;
    for (uint32_t i = 0; i < h->names.cap; i++) {
        const tes__map_entry_t *me = &h->names.entries[i];
        if (me->key) {
            char *s = (char *)(uintptr_t)me->value;
            tes__free(a, s, strlen(s) + 1);
        }
    }
    tes__map_fini(&h->names, a);
    tes__map_fini(&h->siblings, a);
    for (uint32_t p = 0; p < h->page_cap; p++)
        if (h->pages[p])
            tes__free(a, h->pages[p], TES__LINK_PAGE * sizeof(tes__link_t));
    tes__free(a, h->pages, (size_t)h->page_cap * sizeof *h->pages);
    tes__free(a, h, sizeof *h);
    w->hier = NULL;
    w->hier_ops = NULL;
    w->link_changes++;
}

static bool has_children(const tes_world_t *w, uint32_t index)
{
    const tes__link_t *l = tes__link(w->hier, index);
    return l && l->last;
}

/* The next entity of a post-order walk of root's subtree after i (index
 * + 1 each), or 0 once root was the last. */
static uint32_t descend(const tes__hier_t *h, uint32_t i)
{
    for (const tes__link_t *l; (l = tes__link_at(h, i)) != NULL && l->last;)
        i = tes__link_first(h, l);
    return i;
}

static uint32_t post_next(const tes__hier_t *h, uint32_t root, uint32_t i)
{
    if (i == root)
        return 0;
    const tes__link_t *l = tes__link_at(h, i);
    return tes__link_at(h, l->parent)->last != i ? descend(h, l->next) : l->parent;
}

/* Whether an ancestor of index i is listed (keys: tes__hash_u64 of index + 1). */
static bool covered(const tes__hier_t *h, const tes__map_t *listed, uint32_t i)
{
    for (uint32_t p = tes__link_parent(h, i); p; p = tes__link_parent(h, p - 1)) {
        uint32_t cursor = 0;
        uint64_t v;
        while (tes__map_next(listed, tes__hash_u64(p), &cursor, &v))
            if (v == p - 1)
                return true;
    }
    return false;
}

static int plan(tes_world_t *w, const tes_entity_t *es, uint32_t n, tes_entity_t **out,
                uint32_t *count, size_t *bytes)
{
    const tes__hier_t *h = w->hier;
    tes__alloc_t *a = &w->alloc;
    tes__map_t listed = {0};
    if (n > 1) {
        if (tes__map_reserve(&listed, a, n))
            return TES_ERR_NOMEM;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = tes_entity_index(es[i]);
            tes__map_insert(&listed, tes__hash_u64((uint64_t)x + 1), x);
        }
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t root = tes_entity_index(es[i]) + 1;
        if (n > 1 && covered(h, &listed, root - 1))
            continue;
        for (uint32_t k = descend(h, root); k; k = post_next(h, root, k))
            total++;
    }
    size_t size = 0;
    tes_entity_t *list = NULL;
    if (total > UINT32_MAX || !tes__size_mul(&size, (size_t)total, sizeof *list) ||
        !(list = tes__malloc(a, size ? size : 1))) {
        tes__map_fini(&listed, a);
        return TES_ERR_NOMEM;
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t root = tes_entity_index(es[i]) + 1;
        if (n > 1 && covered(h, &listed, root - 1))
            continue;
        for (uint32_t k = descend(h, root); k; k = post_next(h, root, k))
            list[at++] = tes_entity_make(k - 1, w->entities.slots[k - 1].generation);
    }
    tes__map_fini(&listed, a);
    *out = list;
    *count = at;
    *bytes = size ? size : 1;
    return TES_OK;
}

/* Index c (record l, linked) unlinked, keeping the counts. */
static void unlink_child(tes__hier_t *h, uint32_t c, tes__link_t *l)
{
    tes__reparent_counted(h, c + 1, l, 0, NULL);
}

/* Index c (record l, a root) appended under index p (record pl). */
static void append_child(tes__hier_t *h, uint32_t c, tes__link_t *l, uint32_t p, tes__link_t *pl)
{
    tes__reparent_counted(h, c + 1, l, p + 1, pl);
}

void tes__link_append(tes__hier_t *h, uint32_t c, uint32_t p)
{
    append_child(h, c, tes__rec(h, c + 1), p, tes__rec(h, p + 1));
}

static void destroyed(tes_world_t *w, tes_entity_t e)
{
    tes__hier_t *h = w->hier;
    uint32_t i = tes_entity_index(e);
    tes__link_t *l = tes__link(h, i);
    /* Every destroy plans its subtree: the children died first. */
    tes__assert(!l || !l->last);
    /* The name first: its sibling key is made from the parent. */
    if (h->names.count)
        tes__name_drop(w, h, i);
    if (l && l->parent)
        unlink_child(h, i, l);
}

int tes__link_append_named(tes_world_t *w, uint32_t c, uint32_t p, const char *what)
{
    tes__hier_t *h = w->hier;
    const char *name = h->names.count ? tes__name_of(h, c) : NULL;
    if (name) {
        uint32_t other = tes__sibling_find(h, p + 1, name, strlen(name));
        if (other && other != c + 1)
            return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u was named \"%s\" while the world was deferred and entity %u, its parent at the flush, already has a child of that name, so it was not linked (it stays a root)", what, c, name, p);
    }
    tes__link_append(h, c, p);
    if (name)
        tes__name_move(h, c, 0, p + 1);
    return TES_OK;
}

static int clone_link(tes_world_t *w, tes_entity_t src, uint32_t copy, bool commit)
{
    tes__hier_t *h = w->hier;
    uint32_t p1 = tes__link_parent(h, tes_entity_index(src));
    if (!p1)
        return TES_OK;
    if (!commit) {
        /* A deferred clone may have a name by the flush: room to move it. */
        if (h->names.count && tes__name_of(h, copy) &&
            tes__map_reserve(&h->siblings, &w->alloc, 1))
            return TES_ERR_NOMEM;
        return tes__links_reserve(h, &w->alloc, copy, p1 - 1);
    }
    return tes__link_append_named(w, copy, p1 - 1, "tes_clone (deferred)");
}

/* The parent and the depth of live entity index i: a walk up the chain
 * (depths are at most the forest's height, a few levels in scenes). */
static int32_t lineage(const tes_world_t *w, uint32_t i, uint32_t *parent)
{
    const tes__hier_t *h = w->hier;
    uint32_t p = tes__link_parent(h, i);
    *parent = p;
    int32_t depth = 0;
    while (p) {
        depth++;
        p = tes__link_parent(h, p - 1);
    }
    return depth;
}

static uint32_t parent_of(const tes_world_t *w, uint32_t i) { return tes__link_parent(w->hier, i); }

static const tes__hier_ops_t hier_ops = {has_children, plan, destroyed, clone_link,
                                         tes__hier_instance_prepare, tes__hier_instance_commit,
                                         tes__hier_instance_discard, lineage, parent_of,
                                         tes__hier_check};

tes__hier_t *tes__hier(tes_world_t *w)
{
    if (w->hier)
        return w->hier;
    tes__hier_t *h = tes__calloc(&w->alloc, sizeof *h);
    if (!h)
        return NULL;
    if (tes__world_depend(w, hier_fini, w)) {
        tes__free(&w->alloc, h, sizeof *h);
        return NULL;
    }
    h->changes = &w->link_changes;
    w->hier = h;
    w->hier_ops = &hier_ops;
    return h;
}

int tes__links_reserve(tes__hier_t *h, tes__alloc_t *a, uint32_t ia, uint32_t ib)
{
    uint64_t ka = (uint64_t)ia + 1, kb = (uint64_t)ib + 1;
    uint32_t need = (uint32_t)((ka > kb ? ka : kb) / TES__LINK_PAGE + 1);
    if (need > h->page_cap) {
        uint32_t cap = h->page_cap ? h->page_cap : 16;
        while (cap < need)
            cap = cap > UINT32_MAX / 2 ? need : cap * 2;
        tes__link_t **pages =
            tes__realloc(a, h->pages, (size_t)h->page_cap * sizeof *pages, (size_t)cap * sizeof *pages);
        if (!pages)
            return TES_ERR_NOMEM;
        memset(pages + h->page_cap, 0, (size_t)(cap - h->page_cap) * sizeof *pages);
        h->pages = pages;
        h->page_cap = cap;
    }
    uint32_t idx[2] = {(uint32_t)(ka / TES__LINK_PAGE), (uint32_t)(kb / TES__LINK_PAGE)};
    for (int k = 0; k < 2; k++) {
        if (h->pages[idx[k]])
            continue;
        h->pages[idx[k]] = tes__calloc(a, TES__LINK_PAGE * sizeof(tes__link_t));
        if (!h->pages[idx[k]])
            return TES_ERR_NOMEM;
        h->page_count++;
    }
    return TES_OK;
}

/* ------------------------------------------------------------------ reads */

tes_entity_t tes_parent(const tes_world_t *w, tes_entity_t e)
{
    if (!w || !tes_alive(w, e))
        return TES_NULL;
    uint32_t p = tes__link_parent(w->hier, tes_entity_index(e));
    return p ? tes_entity_make(p - 1, w->entities.slots[p - 1].generation) : TES_NULL;
}

int32_t tes_children(const tes_world_t *w, tes_entity_t parent, tes_entity_t *out, int32_t cap)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!tes_alive(w, parent))
        return tes__fail_const_stale(w, &w->entities, parent, TES__STALE_ENTITY);
    if (cap < 0 || (cap > 0 && !out))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_children: cap = %d with out %s", (int)cap, out ? "set" : "NULL");
    const tes__hier_t *h = w->hier;
    const tes__link_t *l = tes__link(h, tes_entity_index(parent));
    int64_t n = 0;
    for (uint32_t k = tes__link_first(h, l); k; k = tes__link_next(h, l, k), n++)
        if (n < cap)
            out[n] = tes_entity_make(k - 1, w->entities.slots[k - 1].generation);
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

int32_t tes_depth(const tes_world_t *w, tes_entity_t e)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!tes_alive(w, e))
        return tes__fail_const_stale(w, &w->entities, e, TES__STALE_ENTITY);
    int32_t d = 0;
    for (uint32_t p = tes__link_parent(w->hier, tes_entity_index(e)); p;
         p = tes__link_parent(w->hier, p - 1))
        d++;
    return d;
}
