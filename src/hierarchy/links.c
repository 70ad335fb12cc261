/*
 * Parent/child links (see hierarchy.h): the state, linking and reparenting,
 * the reads, and the two things the world asks through tes__hier_ops_t:
 * a destroy's post-order plan and the unlinking of a dying entity. Tuned
 * for random reparents of many entities, which are bound by cache misses:
 * tes_set_parent takes a short quick path for the steady case (see
 * link_quick) and the general one for everything else. Every
 * change reserves its pages (and map room) first, then commits with code
 * that cannot fail, so a refused or failed call leaves the forest as it was.
 */
#include "hierarchy/hierarchy.h"

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

/* The record at position k (entity index k - 1), whose page exists (a
 * linked entity's, its parent's and its siblings' always do). */
static inline tes__link_t *rec(const tes__hier_t *h, uint32_t k)
{
    tes__assert(k / TES__LINK_PAGE < h->page_cap && h->pages[k / TES__LINK_PAGE]);
    return &h->pages[k / TES__LINK_PAGE][k % TES__LINK_PAGE];
}

/* Takes the entity at position c1 (record l) out of its parent's (record
 * pl) child list. Only the records of the parent and of c1's neighbours
 * are touched: a first child's ring predecessor is the last child, which
 * the parent names, and a last child's successor is the first one, which
 * keeps its prev of 0. The caller keeps the counts. */
static inline void ring_unlink(tes__hier_t *h, uint32_t c1, tes__link_t *l, tes__link_t *pl)
{
    uint32_t prev = l->prev, next = l->next;
    if (next == c1) {
        pl->last = 0; /* the only child */
    } else {
        rec(h, prev ? prev : pl->last)->next = next;
        if (pl->last == c1)
            pl->last = prev;
        else
            rec(h, next)->prev = prev;
    }
    l->parent = l->prev = l->next = 0;
}

/* Makes the entity at position c1 (record l, a root) the last child of
 * the one at p1 (record pl). The caller keeps the counts. */
static inline void ring_append(tes__hier_t *h, uint32_t c1, tes__link_t *l, uint32_t p1,
                               tes__link_t *pl)
{
    uint32_t last = pl->last;
    l->parent = p1;
    if (!last) {
        l->prev = 0;
        l->next = c1;
    } else {
        tes__link_t *ll = rec(h, last);
        l->prev = last;
        l->next = ll->next;
        ll->next = c1;
    }
    pl->last = c1;
}

/* The same, keeping the counts: index c (record l, linked) unlinked. */
static void unlink_child(tes__hier_t *h, uint32_t c, tes__link_t *l)
{
    ring_unlink(h, c + 1, l, rec(h, l->parent));
    h->linked--;
    (*h->changes)++;
}

/* Index c (record l, a root) appended under index p (record pl). */
static void append_child(tes__hier_t *h, uint32_t c, tes__link_t *l, uint32_t p, tes__link_t *pl)
{
    ring_append(h, c + 1, l, p + 1, pl);
    h->linked++;
    (*h->changes)++;
}

void tes__link_append(tes__hier_t *h, uint32_t c, uint32_t p)
{
    append_child(h, c, rec(h, c + 1), p, rec(h, p + 1));
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

/* ------------------------------------------------------------------ set_parent */

/* The failures of a link's check, out of line: the check itself stays a
 * few instructions, so that a run of reparents keeps several of them, and
 * their cache misses, in flight at once. */
static tes__noinline int fail_link(tes_world_t *w, tes_entity_t child, tes_entity_t parent,
                                   int why, const char *call)
{
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    uint32_t cg = tes_entity_generation(child), pg = tes_entity_generation(parent);
    switch (why) {
    case 0:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u:%u cannot be its own parent", call, c, cg);
    case 1:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: parent %u:%u is a descendant of child %u:%u, so the link would close a cycle (unlink it first)", call, p, pg, c, cg);
    case 2:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: child %u:%u is a prefab entity and parent %u:%u is not: prefab members link only to members of the same prefab", call, c, cg, p, pg);
    case 3:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: parent %u:%u is a prefab entity and child %u:%u is not: prefab members link only to members of the same prefab", call, p, pg, c, cg);
    default:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: child %u:%u and parent %u:%u are members of different prefabs", call, c, cg, p, pg);
    }
}

/* Whether index p (record pl, NULL if none) lies in the subtree of index
 * c (record cl), c != p, so that linking c under p would close a cycle.
 * What the test needs is whether c is an ancestor of p: a leaf is no one's
 * ancestor, and a root parent has none but itself, so the walk up from p
 * runs only when c has children and p has a parent (reparenting leaves,
 * or anything under a root, reads no record beyond the two the link
 * touches anyway), and then stops at p's root, a few levels in scenes. */
static bool closes_cycle(const tes__hier_t *h, const tes__link_t *cl, const tes__link_t *pl,
                         uint32_t c)
{
    if (!cl || !cl->last || !pl)
        return false;
    for (uint32_t a = pl->parent; a; a = tes__link_parent(h, a - 1))
        if (a == c + 1)
            return true;
    return false;
}

/* Whether live slot s's entity is a prefab entity: TES_PREFAB is a tag of
 * its table, which the table's flags say without a type search. */
static bool slot_prefab(const tes_world_t *w, const tes__slot_t *s)
{
    return (tes__slot_table(w, s)->flags & TES__TABLE_PREFAB) != 0;
}

/* The sibling-name rule for moving index c, named `name`, under
 * new_parent1 (not its parent now). */
static tes__noinline int check_name(tes_world_t *w, uint32_t c, const char *name,
                                    uint32_t new_parent1, const char *call)
{
    uint32_t other = tes__sibling_find(w->hier, new_parent1, name, strlen(name));
    if (other && other != c + 1)
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u is named \"%s\" and %s already has a child of that name (rename one of them first)", call, c, name, new_parent1 ? "the new parent" : "the roots");
    return TES_OK;
}

/* Links index c (record *cl, NULL if its page was never made) under index
 * p (record *pl; p1 = p + 1, or 0 for a root), checked already: reserves
 * what is missing (pages, a named child's sibling key), then commits with
 * code that cannot fail. TES_OK or TES_ERR_NOMEM (recorded, nothing
 * changed). */
static int link_now(tes_world_t *w, uint32_t c, tes__link_t *cl, uint32_t p1, tes__link_t *pl,
                    const char *name)
{
    tes__hier_t *h = w->hier;
    if (!cl || (p1 && !pl)) {
        if (!(h = tes__hier(w)) || tes__links_reserve(h, &w->alloc, c, p1 ? p1 - 1 : c))
            return tes__fail(w, TES_ERR_NOMEM);
        cl = rec(h, c + 1);
        pl = p1 ? rec(h, p1) : NULL;
    }
    if (name && tes__map_reserve(&h->siblings, &w->alloc, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    uint32_t old1 = cl->parent;
    if (old1)
        unlink_child(h, c, cl);
    if (p1)
        append_child(h, c, cl, p1 - 1, pl);
    if (name)
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

/* Brings h->tables_seen and h->prefab_tables up to the world's tables. */
static tes__noinline void note_tables(const tes_world_t *w, tes__hier_t *h)
{
    for (uint32_t i = h->tables_seen; i < w->tables.count; i++)
        h->prefab_tables |= (w->tables.tables[i]->flags & TES__TABLE_PREFAB) != 0;
    h->tables_seen = w->tables.count;
}

/* The general path of tes_set_parent, and the definition of what it does:
 * checks a link of child under parent (TES_NULL: a root) against the
 * forest as it is, then links it or, in a deferred world, queues it. Each
 * slot is read once; the checks read the two slots, their tables' flags
 * and the two records, and walk up from the parent only when a cycle is
 * possible; the link touches only records one step from those. */
static tes__noinline int set_parent_impl(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    static const char call[] = "tes_set_parent";
    if (w->hier && w->hier->tables_seen != w->tables.count)
        note_tables(w, w->hier);
    bool root = parent == TES_NULL;
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    uint32_t p1 = root ? 0 : p + 1;
    tes__hier_t *h = w->hier;
    tes__link_t *cl = tes__link(h, c), *pl = root ? NULL : tes__link(h, p);
    const tes__slot_t *cs = tes__entity_slot(&w->entities, child);
    if (!cs)
        return tes__fail_stale(w, child);
    if (!root) {
        const tes__slot_t *ps = tes__entity_slot(&w->entities, parent);
        if (!ps)
            return tes__fail_stale(w, parent);
        if (p == c)
            return fail_link(w, child, parent, 0, call);
        if (closes_cycle(h, cl, pl, c))
            return fail_link(w, child, parent, 1, call);
        bool cp = slot_prefab(w, cs), pp = slot_prefab(w, ps);
        if (cp != pp)
            return fail_link(w, child, parent, cp ? 2 : 3, call);
        if (cp && tes__prefab_root_of(w, child) != tes__prefab_root_of(w, parent))
            return fail_link(w, child, parent, 4, call);
    }
    uint32_t old1 = cl ? cl->parent : 0;
    const char *name = h && h->names.count && old1 != p1 ? tes__name_of(h, c) : NULL;
    if (name) {
        int rc = check_name(w, c, name, p1, call);
        if (rc)
            return rc;
    }
    if (tes__deferred(w)) {
        tes_entity_t *arg = NULL;
        if (tes__defer_reserve_call(w, 0) || !(arg = tes__malloc(&w->alloc, 2 * sizeof *arg)))
            return tes__fail(w, TES_ERR_NOMEM);
        arg[0] = child;
        arg[1] = parent;
        tes__defer_push_call(w, set_parent_deferred, NULL, arg, NULL, 0);
        return TES_OK;
    }
    if (old1 == p1)
        return TES_OK; /* the same parent: the order stays */
    return link_now(w, c, cl, p1, pl, name);
}

/* The quick link: a reparent of the steady kind (a quiet world, both
 * entities alive with their records made, no names in the world, neither
 * a prefab entity (not even looked at while the world has no prefab
 * table), under a new parent that is not the child, and no
 * cycle possible: the child is a leaf or the parent a root), done in a
 * few dozen instructions. Random reparents are bound by cache misses, and
 * the processor overlaps the misses of consecutive calls only as far as
 * its instruction window reaches: a short call lets several reparents'
 * loads be in flight at once. The loads come first and depend on the
 * entity indices alone (records are addressed by index, so they do not
 * wait for the slots); nothing is written until every test passed.
 * Returns false, having changed nothing, for anything else (every refusal
 * included): the general path (set_parent_impl) is the definition, and
 * this one decides only cases whose outcome it is sure of. */
static tes__always_inline bool link_quick(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    uint32_t count = w->entities.count;
    if ((c > p ? c : p) >= count || c == p || parent == TES_NULL)
        return false;
    const tes__slot_t *cs = &w->entities.slots[c], *ps = &w->entities.slots[p];
    if (cs->generation != tes_entity_generation(child) || cs->table == TES__SLOT_FREE ||
        ps->generation != tes_entity_generation(parent) || ps->table == TES__SLOT_FREE)
        return false;
    /* Records at positions index + 1 (within 32 bits: indices are below
     * count). The general path notes new tables (see note_tables). */
    tes__hier_t *h = w->hier;
    uint32_t c1 = c + 1, p1 = p + 1;
    uint32_t cpage = c1 / TES__LINK_PAGE, ppage = p1 / TES__LINK_PAGE;
    if (!h || h->names.count || h->tables_seen != w->tables.count ||
        (cpage > ppage ? cpage : ppage) >= h->page_cap)
        return false;
    tes__link_t *cp = h->pages[cpage], *pp = h->pages[ppage];
    if (!cp || !pp)
        return false;
    tes__link_t *cl = &cp[c1 % TES__LINK_PAGE], *pl = &pp[p1 % TES__LINK_PAGE];
    if (h->prefab_tables &&
        ((tes__slot_table(w, cs)->flags | tes__slot_table(w, ps)->flags) & TES__TABLE_PREFAB))
        return false;
    if (cl->last && pl->parent)
        return false; /* the cycle check must walk up from the parent */
    uint32_t old1 = cl->parent;
    if (old1 != p1) {
        if (old1)
            ring_unlink(h, c1, cl, rec(h, old1));
        ring_append(h, c1, cl, p1, pl);
        w->link_changes++;
        h->linked += !old1;
    }
    return true;
}

/* set_parent_impl inside the begin/end guard of a structural call. */
static tes__noinline int set_parent_guarded(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    TES__STRUCTURAL(int, w, tes__status, set_parent_impl(w, child, parent));
}

int tes_set_parent(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    /* In a quiet world (no hook or structural call running, nothing
     * deferred, no system running) a link runs no user code and tells no
     * one, so the call skips the begin/end guard. */
    if (w && tes__world_quiet(w))
        return link_quick(w, child, parent) ? TES_OK : set_parent_impl(w, child, parent);
    return set_parent_guarded(w, child, parent);
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
