/*
 * tes_set_parent and tes_set_parent_n: the checks of a link, the quick
 * path of a single call, and the batch. Tuned for random reparents of many
 * leaves among a few parents, which are bound by cache misses (the child's
 * slot and record, its old neighbours, the new parent's last child): a
 * single call keeps its work short so the processor overlaps the misses of
 * consecutive calls, and the batch goes further by prefetching the slots
 * and records of the pairs ahead of the one it applies.
 *
 * Both calls decide a pair the same way (quick_link, else refusal) and
 * change records only through tes__reparent (ring.h), so a batch means
 * exactly its pairs applied in order. A batch is all-or-nothing: it
 * reserves everything it may need first (link pages, sibling-key room, an
 * undo log of 8 bytes per pair), applies its pairs in order, each checked
 * against the forest its earlier pairs left, and on a refusal restores
 * every earlier pair's old place from the log, in reverse order, so the
 * forest (child order included) is as it was.
 */
#include "hierarchy/ring.h"

#include <stdio.h>
#include <string.h>

#include "core/checked.h"
#include "lifecycle/instance.h"
#include "world/defer.h"
#include "world/last_error.h"
#include "world/quiet.h"

/* ------------------------------------------------------------------ checks */

/* What refuses a link (0: nothing). */
enum {
    LINK_OK,
    LINK_STALE_CHILD,
    LINK_STALE_PARENT,
    LINK_SELF,
    LINK_CYCLE,
    LINK_CHILD_PREFAB,
    LINK_PARENT_PREFAB,
    LINK_OTHER_PREFAB,
    LINK_NAME
};

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

/* What refuses linking child under parent (TES_NULL: a root), LINK_OK if
 * nothing. With `forest`, the checks that depend on the forest (a cycle,
 * the sibling-name rule) run against it as it is now; without, only those
 * that hold whatever the links are (liveness, self, prefabs), which a
 * deferred batch can check before its earlier pairs are applied. *name is
 * the child's name when the link moves it to another sibling set (its
 * sibling key must move), else NULL. Reads only. */
static int refusal(const tes_world_t *w, tes_entity_t child, tes_entity_t parent, bool forest,
                   const char **name)
{
    *name = NULL;
    bool root = parent == TES_NULL;
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    uint32_t p1 = root ? 0 : p + 1;
    const tes__hier_t *h = w->hier;
    const tes__link_t *cl = tes__link(h, c), *pl = root ? NULL : tes__link(h, p);
    const tes__slot_t *cs = tes__entity_slot(&w->entities, child);
    if (!cs)
        return LINK_STALE_CHILD;
    if (!root) {
        const tes__slot_t *ps = tes__entity_slot(&w->entities, parent);
        if (!ps)
            return LINK_STALE_PARENT;
        if (p == c)
            return LINK_SELF;
        if (forest && closes_cycle(h, cl, pl, c))
            return LINK_CYCLE;
        bool cp = slot_prefab(w, cs), pp = slot_prefab(w, ps);
        if (cp != pp)
            return cp ? LINK_CHILD_PREFAB : LINK_PARENT_PREFAB;
        if (cp && tes__prefab_root_of(w, child) != tes__prefab_root_of(w, parent))
            return LINK_OTHER_PREFAB;
    }
    if (!forest || !h || !h->names.count || (cl ? cl->parent : 0) == p1)
        return LINK_OK;
    const char *s = tes__name_of(h, c);
    if (!s)
        return LINK_OK;
    *name = s;
    uint32_t other = tes__sibling_find(h, p1, s, strlen(s));
    return other && other != c + 1 ? LINK_NAME : LINK_OK;
}

/* Records refusal `why` of linking child under parent and returns its
 * status. `call` names the call; `at` is the pair's index in a batch
 * (SIZE_MAX: a single call); `flush`: the batch is applied by the flush,
 * so a dead entity died after it was queued (TES_ERR_INVALID, reported by
 * tes_defer_end, rather than TES_ERR_STALE, which the flush drops
 * silently). Out of line: the checks stay a few instructions. */
static tes__noinline int refuse(tes_world_t *w, int why, tes_entity_t child, tes_entity_t parent,
                                const char *call, size_t at, bool flush, const char *name)
{
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    uint32_t cg = tes_entity_generation(child), pg = tes_entity_generation(parent);
    char label[96];
    if (at != SIZE_MAX) {
        snprintf(label, sizeof label, "%s: pair %zu", call, at);
        call = label;
    }
    switch (why) {
    case LINK_STALE_CHILD:
    case LINK_STALE_PARENT: {
        tes_entity_t e = why == LINK_STALE_CHILD ? child : parent;
        const char *role = why == LINK_STALE_CHILD ? "child" : "parent";
        if (flush)
            return tes__fail_detail(w, TES_ERR_INVALID, "%s: the %s %u:%u died before the flush; the batch was dropped (no pair of it was applied)", call, role, tes_entity_index(e), tes_entity_generation(e));
        if (at == SIZE_MAX)
            return tes__fail_stale(w, e);
        /* The sentence every stale handle gets (which case it is), then
         * which pair and role of the batch held it. */
        char sentence[TES__DETAIL_SIZE];
        tes__stale_t st = tes__stale_capture(&w->entities, e, TES__STALE_ENTITY);
        tes__stale_format(&st, sentence, sizeof sentence);
        return tes__fail_detail(w, TES_ERR_STALE, "%s (%s, the %s; the batch changed nothing)", sentence, call, role);
    }
    case LINK_SELF:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u:%u cannot be its own parent", call, c, cg);
    case LINK_CYCLE:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: parent %u:%u is a descendant of child %u:%u, so the link would close a cycle (unlink it first)", call, p, pg, c, cg);
    case LINK_CHILD_PREFAB:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: child %u:%u is a prefab entity and parent %u:%u is not: prefab members link only to members of the same prefab", call, c, cg, p, pg);
    case LINK_PARENT_PREFAB:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: parent %u:%u is a prefab entity and child %u:%u is not: prefab members link only to members of the same prefab", call, p, pg, c, cg);
    case LINK_OTHER_PREFAB:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: child %u:%u and parent %u:%u are members of different prefabs", call, c, cg, p, pg);
    default:
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: entity %u is named \"%s\" and %s already has a child of that name (rename one of them first)", call, c, name, parent != TES_NULL ? "the new parent" : "the roots");
    }
}

/* Brings h->tables_seen and h->prefab_tables up to the world's tables. */
static tes__noinline void note_tables(const tes_world_t *w, tes__hier_t *h)
{
    for (uint32_t i = h->tables_seen; i < w->tables.count; i++)
        h->prefab_tables |= (w->tables.tables[i]->flags & TES__TABLE_PREFAB) != 0;
    h->tables_seen = w->tables.count;
}

/* What the quick decision reads of the world besides the pair's own
 * slots and records, loaded once for all the pairs of a batch (a batch's
 * pairs change none of it). A single call passes no view and reads the
 * same fields from the world where they are needed, which keeps its
 * registers free. */
typedef struct link_view {
    const tes__slot_t *slots;
    tes__link_t *const *pages;
    uint32_t count, page_cap;
    bool plain;   /* the state is made, no names, every table noted */
    bool prefabs; /* some table holds prefab entities */
} link_view_t;

static link_view_t view_of(const tes_world_t *w)
{
    const tes__hier_t *h = w->hier;
    link_view_t v = {w->entities.slots, NULL, w->entities.count, 0, false, false};
    if (h) {
        v.pages = h->pages;
        v.page_cap = h->page_cap;
        v.plain = !h->names.count && h->tables_seen == w->tables.count;
        v.prefabs = h->prefab_tables;
    }
    return v;
}

/* The quick decision: a link of the steady kind (hierarchy state made,
 * both entities alive with their records made, no names in the world,
 * neither a prefab entity (not even looked at while the world has no
 * prefab table), under a parent that is not the child, and no cycle
 * possible: the child is a leaf or the parent a root), decided in a few
 * dozen instructions. v: the batch's view, or NULL (read the world).
 * Returns the child's record (and the parent's in *plp), or NULL for
 * anything else, every refusal included: refusal() is the definition,
 * and this decides only cases whose outcome it is sure of. The loads
 * depend on the entity indices alone (records are addressed by index, so
 * they do not wait for the slots), so consecutive calls overlap their
 * cache misses. Reads only. */
static tes__always_inline tes__link_t *quick_link(const tes_world_t *w, const link_view_t *v,
                                                  tes_entity_t child, tes_entity_t parent,
                                                  tes__link_t **plp)
{
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    uint32_t count = v ? v->count : w->entities.count;
    if ((c > p ? c : p) >= count || c == p || parent == TES_NULL)
        return NULL;
    const tes__slot_t *slots = v ? v->slots : w->entities.slots;
    const tes__slot_t *cs = &slots[c], *ps = &slots[p];
    if (cs->generation != tes_entity_generation(child) || cs->table == TES__SLOT_FREE ||
        ps->generation != tes_entity_generation(parent) || ps->table == TES__SLOT_FREE)
        return NULL;
    /* Records at positions index + 1 (within 32 bits: indices are below
     * count). */
    const tes__hier_t *h = w->hier;
    if (!v && (!h || h->names.count || h->tables_seen != w->tables.count))
        return NULL;
    if (v && !v->plain)
        return NULL;
    uint32_t c1 = c + 1, p1 = p + 1;
    uint32_t cpage = c1 / TES__LINK_PAGE, ppage = p1 / TES__LINK_PAGE;
    if ((cpage > ppage ? cpage : ppage) >= (v ? v->page_cap : h->page_cap))
        return NULL;
    tes__link_t *const *pages = v ? v->pages : h->pages;
    tes__link_t *cp = pages[cpage], *pp = pages[ppage];
    if (!cp || !pp)
        return NULL;
    tes__link_t *cl = &cp[c1 % TES__LINK_PAGE], *pl = &pp[p1 % TES__LINK_PAGE];
    if ((v ? v->prefabs : h->prefab_tables) &&
        ((tes__slot_table(w, cs)->flags | tes__slot_table(w, ps)->flags) & TES__TABLE_PREFAB))
        return NULL;
    if (cl->last && pl->parent)
        return NULL; /* the cycle check must walk up from the parent */
    *plp = pl;
    return cl;
}

/* Links index c under position p1 (0: the roots), checked already and not
 * its parent now; name is what refusal() gave. Reserves what is missing
 * (pages, a named child's sibling-key room), then commits with the step.
 * TES_OK or TES_ERR_NOMEM (recorded, nothing changed); a batch reserved
 * everything first, so there it cannot fail. */
static int link_now(tes_world_t *w, uint32_t c, uint32_t p1, const char *name)
{
    tes__hier_t *h = w->hier;
    tes__link_t *cl = tes__link(h, c), *pl = p1 ? tes__link_at(h, p1) : NULL;
    if (!cl || (p1 && !pl)) {
        if (!(h = tes__hier(w)) || tes__links_reserve(h, &w->alloc, c, p1 ? p1 - 1 : c))
            return tes__fail(w, TES_ERR_NOMEM);
        cl = tes__rec(h, c + 1);
        pl = p1 ? tes__rec(h, p1) : NULL;
    }
    if (name && tes__map_reserve(&h->siblings, &w->alloc, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    uint32_t old1 = cl->parent;
    tes__reparent_counted(h, c + 1, cl, p1, pl);
    if (name)
        tes__name_move(h, c, old1, p1);
    return TES_OK;
}

/* ------------------------------------------------------------------ tes_set_parent */

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

/* The general path of tes_set_parent: checks a link of child under parent
 * (TES_NULL: a root) against the forest as it is, then links it or, in a
 * deferred world, queues it. */
static tes__noinline int set_parent_impl(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    if (w->hier && w->hier->tables_seen != w->tables.count)
        note_tables(w, w->hier);
    const char *name;
    int why = refusal(w, child, parent, true, &name);
    if (why)
        return refuse(w, why, child, parent, "tes_set_parent", SIZE_MAX, false, name);
    if (tes__deferred(w)) {
        tes_entity_t *arg = NULL;
        if (tes__defer_reserve_call(w, 0) || !(arg = tes__malloc(&w->alloc, 2 * sizeof *arg)))
            return tes__fail(w, TES_ERR_NOMEM);
        arg[0] = child;
        arg[1] = parent;
        tes__defer_push_call(w, set_parent_deferred, NULL, arg, NULL, 0);
        return TES_OK;
    }
    uint32_t c = tes_entity_index(child);
    uint32_t p1 = parent == TES_NULL ? 0 : tes_entity_index(parent) + 1;
    if (tes__link_parent(w->hier, c) == p1)
        return TES_OK; /* the same parent: the order stays */
    return link_now(w, c, p1, name);
}

/* set_parent_impl inside the begin/end guard of a structural call. */
static tes__noinline int set_parent_guarded(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    TES__STRUCTURAL("tes_set_parent", int, w, tes__status, set_parent_impl(w, child, parent));
}

int tes_set_parent(tes_world_t *w, tes_entity_t child, tes_entity_t parent)
{
    /* In a quiet world (no hook or structural call running, nothing
     * deferred, no system running) a link runs no user code and tells no
     * one, so the call skips the begin/end guard. */
    if (w && tes__world_quiet(w)) {
        tes__link_t *pl, *cl = quick_link(w, NULL, child, parent, &pl);
        if (!cl)
            return set_parent_impl(w, child, parent);
        uint32_t p1 = tes_entity_index(parent) + 1;
        if (cl->parent != p1)
            tes__reparent_counted(w->hier, tes_entity_index(child) + 1, cl, p1, pl);
        return TES_OK;
    }
    return set_parent_guarded(w, child, parent);
}

/* ------------------------------------------------------------------ tes_set_parent_n */

/* How far ahead the batch prefetches: the slots and records of pair
 * i + BATCH_AHEAD, and at pair i + BATCH_AHEAD / 2 the records its step will touch
 * besides the child's (the old neighbours, the new parent's last child),
 * whose positions the child's record, by then arrived, names. */
#define BATCH_AHEAD 16u

/* The undo log's entry for one pair: the child's parent before the pair
 * (position; 0: a root) and its previous sibling then (0: the first). */
typedef struct undo {
    uint32_t old1, prev;
} undo_t;

/* Up to this many pairs, the log lives on the stack. */
#define BATCH_UNDO_LOCAL 32u

/* The record of entity index x, below the slot count and named by a pair
 * of the batch (so its page was made). */
static tes__always_inline tes__link_t *batch_rec(const link_view_t *v, uint32_t x)
{
    return tes__rec_in(v->pages, x + 1);
}

/* Prefetches the slots and records of a pair BATCH_AHEAD pairs on. A stale
 * handle may name any index: only those below the slot count are read. */
static tes__always_inline void ahead_far(const link_view_t *v, tes_entity_t child,
                                         tes_entity_t parent)
{
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    if (c < v->count) {
        tes__prefetch_w(&v->slots[c]);
        tes__prefetch_w(batch_rec(v, c));
    }
    if (parent != TES_NULL && p < v->count)
        tes__prefetch_w(batch_rec(v, p));
}

/* Prefetches the records the step of a pair BATCH_AHEAD / 2 on will touch: the
 * child's neighbours and the new parent's last child. Positions held in
 * records are those of linked entities, whose pages exist. */
static tes__always_inline void ahead_near(const link_view_t *v, tes_entity_t child,
                                          tes_entity_t parent)
{
    uint32_t c = tes_entity_index(child), p = tes_entity_index(parent);
    if (c < v->count) {
        const tes__link_t *cl = batch_rec(v, c);
        if (cl->parent) {
            if (cl->prev)
                tes__prefetch_w(tes__rec_in(v->pages, cl->prev));
            tes__prefetch_w(tes__rec_in(v->pages, cl->next));
        }
    }
    if (parent != TES_NULL && p < v->count) {
        const tes__link_t *pl = batch_rec(v, p);
        if (pl->last)
            tes__prefetch_w(tes__rec_in(v->pages, pl->last));
    }
}

/* Puts back the first k pairs of a batch, last first, from the log: each
 * child leaves the parent its pair gave it and returns to its old parent
 * right after its old previous sibling, with its sibling key. Undoing in
 * reverse order makes each pair's old neighbours exactly what they were
 * when it was applied, so the forest, child order included, is restored. */
static void undo_pairs(tes__hier_t *h, const tes_entity_t *children, const undo_t *log, size_t k)
{
    while (k-- > 0) {
        uint32_t c = tes_entity_index(children[k]), c1 = c + 1;
        tes__link_t *cl = tes__rec(h, c1);
        uint32_t now1 = cl->parent, old1 = log[k].old1;
        if (now1 == old1)
            continue; /* the pair changed nothing */
        if (now1)
            tes__ring_unlink(h->pages, c1, cl, tes__rec(h, now1));
        if (old1)
            tes__ring_insert(h->pages, c1, cl, old1, tes__rec(h, old1), log[k].prev);
        h->linked += (uint32_t)(old1 != 0) - (uint32_t)(now1 != 0);
        (*h->changes)++;
        if (h->names.count && tes__name_of(h, c))
            tes__name_move(h, c, now1, old1);
    }
}

/* Applies the n pairs in order, every page and the sibling-key room
 * reserved: each pair is decided as tes_set_parent decides it (the quick
 * decision, else refusal() against the forest the earlier pairs left) and
 * applied by the same step; the log keeps what each pair changed. On a
 * refusal, undoes the pairs before it and records the refusal: the
 * forest is as it was. The loop keeps BATCH_AHEAD pairs' loads in flight; the
 * view stays valid throughout (nothing here makes pages, names or
 * tables). */
static int apply_pairs(tes_world_t *w, const tes_entity_t *children, const tes_entity_t *parents,
                       size_t n, undo_t *log, const char *call, bool flush)
{
    tes__hier_t *h = w->hier;
    const link_view_t v = view_of(w);
    uint32_t linked = 0; /* the quick steps' change of h->linked */
    int rc = TES_OK;
    size_t i = 0;
    for (; i < n; i++) {
        if (i + BATCH_AHEAD < n)
            ahead_far(&v, children[i + BATCH_AHEAD], parents[i + BATCH_AHEAD]);
        if (i + BATCH_AHEAD / 2 < n)
            ahead_near(&v, children[i + BATCH_AHEAD / 2], parents[i + BATCH_AHEAD / 2]);
        tes_entity_t child = children[i], parent = parents[i];
        uint32_t c = tes_entity_index(child);
        uint32_t p1 = parent == TES_NULL ? 0 : tes_entity_index(parent) + 1;
        tes__link_t *pl, *cl = quick_link(w, &v, child, parent, &pl);
        if (tes__likely(cl != NULL)) {
            uint32_t old1 = cl->parent;
            log[i] = (undo_t){old1, cl->prev};
            if (old1 != p1)
                linked += tes__reparent(v.pages, c + 1, cl, p1, pl);
            continue;
        }
        const char *name;
        int why = refusal(w, child, parent, true, &name);
        if (why) {
            rc = refuse(w, why, child, parent, call, i, flush, name);
            break;
        }
        cl = tes__rec(h, c + 1);
        log[i] = (undo_t){cl->parent, cl->prev};
        if (cl->parent != p1) {
            int linked_rc = link_now(w, c, p1, name);
            tes__assert(linked_rc == TES_OK); /* everything was reserved */
            (void)linked_rc;
        }
    }
    h->linked += linked;
    (*h->changes)++;
    if (rc)
        undo_pairs(h, children, log, i);
    return rc;
}

/* Makes the record pages of every pair's child and parent exist (those
 * whose index is below the slot count: any other handle is stale, which
 * its pair's check reports; a TES_NULL child, stale too, gets its page so
 * the prefetches may read its record; a TES_NULL parent needs none). TES_OK or TES_ERR_NOMEM (not recorded; pages
 * made stay, they are only room). */
static int reserve_pages(tes_world_t *w, tes__hier_t *h, const tes_entity_t *children,
                         const tes_entity_t *parents, size_t n)
{
    uint32_t count = w->entities.count, cap = h->page_cap;
    tes__link_t *const *pages = h->pages;
    for (size_t i = 0; i < n; i++) {
        tes_entity_t e[2] = {children[i], parents[i]};
        for (int k = 0; k < 2; k++) {
            uint32_t x = tes_entity_index(e[k]);
            if (x >= count || (k && e[k] == TES_NULL))
                continue;
            uint32_t page = (x + 1) / TES__LINK_PAGE;
            if (page < cap && pages[page])
                continue;
            if (tes__links_reserve(h, &w->alloc, x, x))
                return TES_ERR_NOMEM;
            cap = h->page_cap;
            pages = h->pages;
        }
    }
    return TES_OK;
}

/* A queued batch: its pairs, children then parents. */
typedef struct batch_arg {
    size_t n;
    tes_entity_t pairs[];
} batch_arg_t;

static int run_batch(tes_world_t *w, const tes_entity_t *children, const tes_entity_t *parents,
                     size_t n, const char *call, bool flush);

/* The deferred form: applies the queued batch (run) or drops it. */
static int set_parent_n_deferred(tes_world_t *w, void *arg, bool run)
{
    batch_arg_t *b = arg;
    size_t n = b->n;
    int rc = run ? run_batch(w, b->pairs, b->pairs + n, n, "tes_set_parent_n (deferred)", true)
                 : TES_OK;
    tes__free(&w->alloc, b, sizeof *b + 2 * n * sizeof(tes_entity_t));
    return rc;
}

/* Queues the batch in a deferred world, after the checks that hold
 * whatever the links are (the forest's own checks wait for the flush,
 * when the earlier pairs are applied). */
static int queue_batch(tes_world_t *w, const tes_entity_t *children, const tes_entity_t *parents,
                       size_t n, const char *call)
{
    for (size_t i = 0; i < n; i++) {
        const char *name;
        int why = refusal(w, children[i], parents[i], false, &name);
        if (why)
            return refuse(w, why, children[i], parents[i], call, i, false, name);
    }
    size_t bytes;
    batch_arg_t *b = NULL;
    if (!tes__size_mul_add(&bytes, n, 2 * sizeof(tes_entity_t), sizeof *b) ||
        tes__defer_reserve_call(w, 0) || !(b = tes__malloc(&w->alloc, bytes)))
        return tes__fail(w, TES_ERR_NOMEM);
    b->n = n;
    memcpy(b->pairs, children, n * sizeof *children);
    memcpy(b->pairs + n, parents, n * sizeof *parents);
    tes__defer_push_call(w, set_parent_n_deferred, NULL, b, NULL, 0);
    return TES_OK;
}

/* The batch in a world that may link now (or queue it, while deferred):
 * reserves, then applies all-or-nothing. */
static int batch_impl(tes_world_t *w, const tes_entity_t *children, const tes_entity_t *parents,
                      size_t n, const char *call, bool flush)
{
    if (tes__deferred(w))
        return queue_batch(w, children, parents, n, call);
    tes__hier_t *h = tes__hier(w);
    if (!h)
        return tes__fail(w, TES_ERR_NOMEM);
    if (h->tables_seen != w->tables.count)
        note_tables(w, h);
    undo_t local[BATCH_UNDO_LOCAL], *log = local;
    size_t bytes = 0;
    if (n > BATCH_UNDO_LOCAL && !tes__size_mul(&bytes, n, sizeof *log))
        return tes__fail(w, TES_ERR_NOMEM);
    if (reserve_pages(w, h, children, parents, n) ||
        (h->names.count && tes__map_reserve(&h->siblings, &w->alloc, 1)) ||
        (bytes && !(log = tes__malloc(&w->alloc, bytes))))
        return tes__fail(w, TES_ERR_NOMEM);
    int rc = apply_pairs(w, children, parents, n, log, call, flush);
    if (bytes)
        tes__free(&w->alloc, log, bytes);
    return rc;
}

/* batch_impl inside the begin/end guard of a structural call. */
static tes__noinline int batch_guarded(tes_world_t *w, const tes_entity_t *children,
                                       const tes_entity_t *parents, size_t n, const char *call,
                                       bool flush)
{
    TES__STRUCTURAL(call, int, w, tes__status, batch_impl(w, children, parents, n, call, flush));
}

static int run_batch(tes_world_t *w, const tes_entity_t *children, const tes_entity_t *parents,
                     size_t n, const char *call, bool flush)
{
    /* As tes_set_parent: in a quiet world no user code runs. */
    if (tes__world_quiet(w))
        return batch_impl(w, children, parents, n, call, flush);
    return batch_guarded(w, children, parents, n, call, flush);
}

int tes_set_parent_n(tes_world_t *w, const tes_entity_t *children, const tes_entity_t *parents,
                     size_t n)
{
    if (!w)
        return TES_ERR_INVALID;
    if (n == 0)
        return TES_OK;
    if (!children || !parents)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_set_parent_n: %s is NULL with n = %zu (pass n = 0 for an empty batch)", children ? "parents" : "children", n);
    return run_batch(w, children, parents, n, "tes_set_parent_n", false);
}
