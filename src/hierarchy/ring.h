/*
 * The reparent step: the record-level edits every link change is made of
 * (see hierarchy.h for the layout: siblings' next fields form a ring, their
 * prev fields a plain list, the parent names its last child). One
 * definition of "move a child under a new parent" serves tes_set_parent,
 * tes_set_parent_n, the flush and the world's unlinking of dying entities,
 * so a batch can never mean something a sequence of single calls does not.
 * Everything here is inline and touches only records one step from those
 * the caller holds: random reparents are bound by cache misses, and the
 * batch loop prefetches exactly these records ahead of the step.
 */
#ifndef TES_HIERARCHY_RING_H
#define TES_HIERARCHY_RING_H

#include "hierarchy/hierarchy.h"

#if defined(__GNUC__) || defined(__clang__)
/* A hint that addr will be written soon; no effect on meaning. */
#define tes__prefetch_w(addr) __builtin_prefetch((addr), 1, 3)
#else
#define tes__prefetch_w(addr) ((void)(addr))
#endif

/* The record at position k (entity index k - 1) in the page table pages,
 * whose page exists (a linked entity's, its parent's and its siblings'
 * always do). The record edits take the page table, not the state, so a
 * loop of them keeps it in a register: their stores (32-bit fields) could
 * otherwise alias the state's counts and force a reload of it each time. */
static inline tes__link_t *tes__rec_in(tes__link_t *const *pages, uint32_t k)
{
    return &pages[k / TES__LINK_PAGE][k % TES__LINK_PAGE];
}

/* The same from the state, checked. */
static inline tes__link_t *tes__rec(const tes__hier_t *h, uint32_t k)
{
    tes__assert(k / TES__LINK_PAGE < h->page_cap && h->pages[k / TES__LINK_PAGE]);
    return tes__rec_in(h->pages, k);
}

/* Takes the entity at position c1 (record l) out of its parent's (record
 * pl) child list. Only the records of the parent and of c1's neighbours
 * are touched: a first child's ring predecessor is the last child, which
 * the parent names, and a last child's successor is the first one, which
 * keeps its prev of 0. The caller keeps the counts. */
static inline void tes__ring_unlink(tes__link_t *const *pages, uint32_t c1, tes__link_t *l,
                                    tes__link_t *pl)
{
    uint32_t prev = l->prev, next = l->next;
    if (next == c1) {
        pl->last = 0; /* the only child */
    } else {
        tes__rec_in(pages, prev ? prev : pl->last)->next = next;
        if (pl->last == c1)
            pl->last = prev;
        else
            tes__rec_in(pages, next)->prev = prev;
    }
    l->parent = l->prev = l->next = 0;
}

/* Makes the entity at position c1 (record l, a root) the last child of
 * the one at p1 (record pl). The caller keeps the counts. */
static inline void tes__ring_append(tes__link_t *const *pages, uint32_t c1, tes__link_t *l,
                                    uint32_t p1, tes__link_t *pl)
{
    uint32_t last = pl->last;
    l->parent = p1;
    if (!last) {
        l->prev = 0;
        l->next = c1;
    } else {
        tes__link_t *ll = tes__rec_in(pages, last);
        l->prev = last;
        l->next = ll->next;
        ll->next = c1;
    }
    pl->last = c1;
}

/* Puts the entity at position c1 (record l, a root) back among the
 * children of the one at p1 (record pl) right after sibling prev (0: as
 * the first child): the exact inverse of tes__ring_unlink, which a
 * batch's undo uses to restore a child's old place. */
static inline void tes__ring_insert(tes__link_t *const *pages, uint32_t c1, tes__link_t *l,
                                    uint32_t p1, tes__link_t *pl, uint32_t prev)
{
    uint32_t last = pl->last;
    l->parent = p1;
    if (!last) {
        l->prev = 0;
        l->next = c1;
        pl->last = c1;
        return;
    }
    tes__link_t *before = tes__rec_in(pages, prev ? prev : last);
    uint32_t next = before->next; /* for a new first child: the old first one */
    l->prev = prev;
    l->next = next;
    before->next = c1;
    if (prev && prev == last)
        pl->last = c1; /* a new last child: the first keeps its prev of 0 */
    else
        tes__rec_in(pages, next)->prev = c1;
}

/* The reparent step: moves the entity at position c1 (record cl) from its
 * parent now to the one at p1 (record pl; p1 0 and pl NULL: the roots),
 * which must differ from its parent now. Every check was made and every
 * page exists: this cannot fail. Returns the change of the count of
 * linked entities (1, 0, or -1 as UINT32_MAX: add it, modulo 2^32), which
 * the caller adds to tes__hier_t.linked, bumping the world's link_changes
 * too (a batch does both once, at its end). */
static tes__always_inline uint32_t tes__reparent(tes__link_t *const *pages, uint32_t c1,
                                                 tes__link_t *cl, uint32_t p1, tes__link_t *pl)
{
    uint32_t old1 = cl->parent;
    if (old1)
        tes__ring_unlink(pages, c1, cl, tes__rec_in(pages, old1));
    if (p1)
        tes__ring_append(pages, c1, cl, p1, pl);
    return (uint32_t)(p1 != 0) - (uint32_t)(old1 != 0);
}

/* tes__reparent, keeping the counts. */
static tes__always_inline void tes__reparent_counted(tes__hier_t *h, uint32_t c1, tes__link_t *cl,
                                                     uint32_t p1, tes__link_t *pl)
{
    h->linked += tes__reparent(h->pages, c1, cl, p1, pl);
    (*h->changes)++;
}

#endif
