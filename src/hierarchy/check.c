/*
 * The hierarchy's part of the world check (tes__world_check, through
 * tes__hier_ops_t.check): the link records against the layout hierarchy.h
 * describes. Every record of a dead or never-issued entity is empty; a
 * linked entity's parent is alive; each parent's children form a ring
 * through next (its last child's next is its first child) and a plain
 * list through prev (the first child's is 0), every child on it names
 * that parent, and the rings together hold every linked entity exactly
 * once (h->linked of them); no parent chain loops. O(records + linked
 * entities x depth): for tests, the fuzzers and the fault sweep only.
 */
#include "hierarchy/hierarchy.h"

#include "world/check_report.h"

#define WHO "hierarchy check"

/* Whether position k (entity index k - 1) is a live entity. */
static bool position_live(const tes_world_t *w, uint64_t k)
{
    return k >= 1 && k - 1 < w->entities.count && tes__slot_is_live(&w->entities.slots[k - 1]);
}

/* Parent position p1's child ring, checked; *count gets its length. */
static int check_ring(const tes_world_t *w, uint32_t p1, const tes__link_t *pl, uint64_t *count)
{
    const tes__hier_t *h = w->hier;
    *count = 0;
    if (!pl->last)
        return TES_OK;
    const tes__link_t *last = tes__link_at(h, pl->last);
    TES__CHECK(WHO, last && position_live(w, pl->last), "entity %u's last child %u has no record or is dead", p1 - 1, pl->last - 1);
    uint32_t prev = 0;
    for (uint32_t k = last->next;; k = tes__link_at(h, k)->next) {
        const tes__link_t *l = tes__link_at(h, k);
        TES__CHECK(WHO, l && position_live(w, k), "a child %u of entity %u has no record or is dead", k - 1, p1 - 1);
        TES__CHECK(WHO, l->parent == p1, "entity %u is on the child ring of %u but names parent %u", k - 1, p1 - 1, l->parent - 1);
        TES__CHECK(WHO, l->prev == prev, "child %u of entity %u has prev position %u, not %u (positions are index + 1; the first child has 0)", k - 1, p1 - 1, l->prev, prev);
        TES__CHECK(WHO, ++*count <= h->linked, "the child ring of entity %u holds more entities than are linked (%u): a loop", p1 - 1, h->linked);
        if (k == pl->last)
            return TES_OK;
        prev = k;
    }
}

int tes__hier_check(const tes_world_t *w)
{
    const tes__hier_t *h = w->hier;
    uint64_t parented = 0, ringed = 0;
    for (uint32_t pg = 0; pg < h->page_cap; pg++) {
        if (!h->pages[pg])
            continue;
        for (uint32_t j = 0; j < TES__LINK_PAGE; j++) {
            uint64_t k = (uint64_t)pg * TES__LINK_PAGE + j;
            const tes__link_t *l = &h->pages[pg][j];
            if (!position_live(w, k)) {
                TES__CHECK(WHO, !l->parent && !l->last && !l->prev && !l->next, "position %llu (no live entity) holds a link {%u, %u, %u, %u}", (unsigned long long)k, l->parent, l->last, l->prev, l->next);
                continue;
            }
            if (l->parent) {
                parented++;
                TES__CHECK(WHO, position_live(w, l->parent) && tes__link_at(h, l->parent), "entity %llu's parent %u is dead or has no record", (unsigned long long)(k - 1), l->parent - 1);
                /* No loop up the chain: at most `linked` steps to a root. */
                uint64_t steps = 0;
                for (uint32_t a = l->parent; a; a = tes__link_at(h, a)->parent)
                    TES__CHECK(WHO, ++steps <= h->linked && tes__link_at(h, a), "the parent chain of entity %llu loops or leaves the records", (unsigned long long)(k - 1));
            } else {
                TES__CHECK(WHO, !l->prev && !l->next, "root %llu has sibling links {prev %u, next %u}", (unsigned long long)(k - 1), l->prev, l->next);
            }
            uint64_t n = 0;
            int rc = check_ring(w, (uint32_t)k, l, &n);
            if (rc)
                return rc;
            ringed += n;
        }
    }
    bool prefab = false;
    for (uint32_t i = 0; i < h->tables_seen && i < w->tables.count; i++)
        prefab |= (w->tables.tables[i]->flags & TES__TABLE_PREFAB) != 0;
    TES__CHECK(WHO, h->tables_seen <= w->tables.count && prefab == h->prefab_tables, "the note of prefab tables (%u seen, prefab %d) disagrees with the tables (%u, prefab %d)", h->tables_seen, (int)h->prefab_tables, w->tables.count, (int)prefab);
    TES__CHECK(WHO, parented == h->linked, "%llu entities have a parent but the count says %u", (unsigned long long)parented, h->linked);
    TES__CHECK(WHO, ringed == parented, "the child rings hold %llu entities, %llu have a parent", (unsigned long long)ringed, (unsigned long long)parented);
    return TES_OK;
}
