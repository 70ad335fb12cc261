/*
 * Parent/child links (see hierarchy.h): the state, linking and reparenting,
 * the reads, and the two things the world asks through tes__hier_ops_t:
 * a destroy's post-order plan and the unlinking of a dying entity. Every
 * change reserves its pages (and map room) first, then commits with code
 * that cannot fail, so a refused or failed call leaves the forest as it was.
 */
#include "hierarchy/hierarchy.h"

#include <string.h>

#include "core/checked.h"
#include "lifecycle/instance.h"
#include "world/last_error.h"

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
    return l && l->first;
}

/* The next entity of a post-order walk of root's subtree after i (index
 * + 1 each), or 0 once root was the last. */
static uint32_t descend(const tes__hier_t *h, uint32_t i)
{
    for (const tes__link_t *l; (l = tes__link(h, i - 1)) != NULL && l->first;)
        i = l->first;
    return i;
}

static uint32_t post_next(const tes__hier_t *h, uint32_t root, uint32_t i)
{
    if (i == root)
        return 0;
    const tes__link_t *l = tes__link(h, i - 1);
    return l->next ? descend(h, l->next) : l->parent;
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

/* The record of index i, whose page exists (a linked entity's, its
 * parent's and its siblings' always do). */
static inline tes__link_t *rec(const tes__hier_t *h, uint32_t i)
{
    tes__assert(i / TES__LINK_PAGE < h->page_cap && h->pages[i / TES__LINK_PAGE]);
    return &h->pages[i / TES__LINK_PAGE][i % TES__LINK_PAGE];
}

/* Takes index c out of its parent's child list (it has a parent). */
static void unlink_child(tes__hier_t *h, uint32_t c)
{
    tes__link_t *l = rec(h, c);
    tes__link_t *p = rec(h, l->parent - 1);
    if (p->first == c + 1) {
        p->first = l->next;
        if (l->next)
            rec(h, l->next - 1)->prev = l->prev;
    } else {
        rec(h, l->prev - 1)->next = l->next;
        if (l->next)
            rec(h, l->next - 1)->prev = l->prev;
        else
            rec(h, p->first - 1)->prev = l->prev;
    }
    l->parent = l->prev = l->next = 0;
    h->linked--;
    (*h->changes)++;
}

void tes__link_append(tes__hier_t *h, uint32_t c, uint32_t p)
{
    tes__link_t *l = rec(h, c);
    tes__link_t *pl = rec(h, p);
    l->parent = p + 1;
    l->next = 0;
    if (!pl->first) {
        pl->first = c + 1;
        l->prev = c + 1;
    } else {
        tes__link_t *first = rec(h, pl->first - 1);
        l->prev = first->prev;
        rec(h, first->prev - 1)->next = c + 1;
        first->prev = c + 1;
    }
    h->linked++;
    (*h->changes)++;
}

static void destroyed(tes_world_t *w, tes_entity_t e)
{
    tes__hier_t *h = w->hier;
    uint32_t i = tes_entity_index(e);
    tes__link_t *l = tes__link(h, i);
    /* Every destroy plans its subtree: the children died first. */
    tes__assert(!l || !l->first);
    /* The name first: its sibling key is made from the parent. */
    if (h->names.count)
        tes__name_drop(w, h, i);
    if (l && l->parent)
        unlink_child(h, i);
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
                                         tes__hier_instance_discard, lineage, parent_of};

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
    uint32_t need = (ia > ib ? ia : ib) / TES__LINK_PAGE + 1;
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
    uint32_t idx[2] = {ia / TES__LINK_PAGE, ib / TES__LINK_PAGE};
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

/* ------------------------------------------------------------------ set_parent */

/* Whether live slot s's entity is a prefab entity: TES_PREFAB is a tag of
 * its table, which the table's flags say without a type search. */
static bool slot_prefab(const tes_world_t *w, const tes__slot_t *s)
{
    return (tes__slot_table(w, s)->flags & TES__TABLE_PREFAB) != 0;
}

/* Checks a link of child under parent (TES_NULL: a root) against the
 * forest as it is; records the failure with a detail naming `call`. Each
 * handle's slot is read once: a reparent of random entities is bound by
 * the cache misses of the records it touches, so the check adds none. */
static int check_link(tes_world_t *w, tes_entity_t child, tes_entity_t parent, const char *call)
{
    const tes__slot_t *cs = tes__entity_slot(&w->entities, child);
    if (!cs)
        return tes__fail_stale(w, child);
    if (parent == TES_NULL)
        return TES_OK;
    const tes__slot_t *ps = tes__entity_slot(&w->entities, parent);
    if (!ps)
        return tes__fail_stale(w, parent);
    uint32_t c = tes_entity_index(child);
    const tes__hier_t *h = w->hier;
    if (parent == child)
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u:%u cannot be its own parent", call, c, tes_entity_generation(child));
    for (uint32_t p = tes_entity_index(parent) + 1; p; p = tes__link_parent(h, p - 1))
        if (p == c + 1)
            return tes__fail_detail(w, TES_ERR_INVALID, "%s: parent %u:%u is a descendant of child %u:%u, so the link would close a cycle (unlink it first)", call, tes_entity_index(parent), tes_entity_generation(parent), c, tes_entity_generation(child));
    bool cp = slot_prefab(w, cs), pp = slot_prefab(w, ps);
    if (cp != pp)
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: %s %u:%u is a prefab entity and %s %u:%u is not: prefab members link only to members of the same prefab", call, cp ? "child" : "parent", cp ? c : tes_entity_index(parent), cp ? tes_entity_generation(child) : tes_entity_generation(parent), cp ? "parent" : "child", cp ? tes_entity_index(parent) : c, cp ? tes_entity_generation(parent) : tes_entity_generation(child));
    if (cp && tes__prefab_root_of(w, child) != tes__prefab_root_of(w, parent))
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: child %u:%u and parent %u:%u are members of different prefabs", call, c, tes_entity_generation(child), tes_entity_index(parent), tes_entity_generation(parent));
    return TES_OK;
}

/* The sibling-name rule for moving named index c under new_parent1. */
static int check_name(tes_world_t *w, uint32_t c, uint32_t new_parent1, const char *call)
{
    const tes__hier_t *h = w->hier;
    const char *name = h && h->names.count ? tes__name_of(h, c) : NULL;
    if (!name || tes__link_parent(h, c) == new_parent1)
        return TES_OK;
    uint32_t other = tes__sibling_find(h, new_parent1, name, strlen(name));
    if (other && other != c + 1)
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u is named \"%s\" and %s already has a child of that name (rename one of them first)", call, c, name, new_parent1 ? "the new parent" : "the roots");
    return TES_OK;
}

/* Whether the records of indices a and b exist (their pages were made). */
static inline bool links_ready(const tes__hier_t *h, uint32_t a, uint32_t b)
{
    uint32_t pa = a / TES__LINK_PAGE, pb = b / TES__LINK_PAGE;
    return h && pa < h->page_cap && pb < h->page_cap && h->pages[pa] && h->pages[pb];
}

/* Links now (checked already). TES_OK or TES_ERR_NOMEM (recorded). */
static int link_now(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    uint32_t c = tes_entity_index(child);
    uint32_t p1 = parent == TES_NULL ? 0 : tes_entity_index(parent) + 1;
    tes__hier_t *h = w->hier;
    if (tes__link_parent(h, c) == p1)
        return TES_OK; /* the same parent: the order stays */
    /* The reservations: pages (already there in a steady forest) and, for
     * a named child, room for its sibling key under the new parent. */
    bool named = h && h->names.count && tes__name_of(h, c);
    if (!links_ready(h, c, p1 ? p1 - 1 : c) &&
        (!(h = tes__hier(w)) || tes__links_reserve(h, &w->alloc, c, p1 ? p1 - 1 : c)))
        return tes__fail(w, TES_ERR_NOMEM);
    if (named && tes__map_reserve(&h->siblings, &w->alloc, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    uint32_t old1 = tes__link_parent(h, c);
    if (old1)
        unlink_child(h, c);
    if (p1)
        tes__link_append(h, c, p1 - 1);
    if (named)
        tes__name_move(h, c, old1, p1);
    return TES_OK;
}

/* The deferred form: arg holds {child, parent}. */
static int set_parent_deferred(tes_world_t *w, void *arg, bool run)
{
    tes_entity_t pair[2];
    memcpy(pair, arg, sizeof pair);
    tes__free(&w->alloc, arg, sizeof pair);
    if (!run)
        return TES_OK;
    for (int k = 0; k < 2; k++)
        if (pair[k] != TES_NULL && !tes_alive(w, pair[k]))
            return tes__fail_detail(w, TES_ERR_INVALID, "tes_set_parent (deferred): the %s %u:%u died before the flush; the link was dropped", k ? "parent" : "child", tes_entity_index(pair[k]), tes_entity_generation(pair[k]));
    return tes_set_parent(w, pair[0], pair[1]);
}

static int set_parent_impl(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    int rc = check_link(w, child, parent, "tes_set_parent");
    uint32_t p1 = parent == TES_NULL ? 0 : tes_entity_index(parent) + 1;
    if (!rc)
        rc = check_name(w, tes_entity_index(child), p1, "tes_set_parent");
    if (rc)
        return rc;
    if (tes__deferred(w)) {
        tes_entity_t *arg = NULL;
        if (tes__defer_reserve_call(w, 0) || !(arg = tes__malloc(&w->alloc, 2 * sizeof *arg)))
            return tes__fail(w, TES_ERR_NOMEM);
        arg[0] = child;
        arg[1] = parent;
        tes__defer_push_call(w, set_parent_deferred, NULL, arg, NULL, 0);
        return TES_OK;
    }
    return link_now(w, child, parent);
}

int tes_set_parent(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    /* In a quiet world (no hook or structural call running, nothing
     * deferred, no system running) a link runs no user code and tells no
     * one, so the call skips the begin/end guard: a reparent is a handful
     * of cache misses, and the guard's bookkeeping would double its
     * instructions. */
    if (w && tes__world_quiet(w))
        return set_parent_impl(w, child, parent);
    TES__STRUCTURAL(int, w, tes__status, set_parent_impl(w, child, parent));
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
    const tes__link_t *l = tes__link(w->hier, tes_entity_index(parent));
    int64_t n = 0;
    for (uint32_t k = l ? l->first : 0; k; k = tes__link(w->hier, k - 1)->next, n++)
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
