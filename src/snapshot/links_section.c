/*
 * The hierarchy section of a snapshot (format version 3; version 2 files
 * have none and load as worlds without links or names). Saved after the
 * lifecycle section, in index order so a loaded world saves to the same
 * bytes: the links as (child, parent) pairs, each parent's children in
 * order (a loader that appends them in file order rebuilds the order),
 * then the names as (entity, length, bytes).
 *
 * Loading follows the loader's discipline: parse validates everything
 * (live entities, one parent per child, no self link, no cycle, valid
 * names unique among siblings, links and names in the order a save writes
 * them, so that one world has one byte sequence) before anything is
 * allocated for the world;
 * stage reserves the pages, map room and name copies; commit links and
 * names with code that cannot fail.
 */
#include <string.h>

#include "hierarchy/hierarchy.h"
#include "snapshot/snapshot.h"

/* ------------------------------------------------------------------ save */

void tes__snap_save_hierarchy(tes__outbuf_t *o, const tes_world_t *w)
{
    const tes__hier_t *h = w->hier;
    const tes__entity_index_t *ei = &w->entities;
    uint32_t pairs = 0, names = 0;
    for (uint32_t i = 0; h && i < ei->count; i++) {
        if (!tes__slot_is_live(&ei->slots[i]))
            continue;
        pairs += tes__link_parent(h, i) != 0;
        names += tes__name_of(h, i) != NULL;
    }
    tes__out_u32(o, pairs);
    for (uint32_t i = 0; pairs && i < ei->count; i++) {
        const tes__link_t *l = tes__slot_is_live(&ei->slots[i]) ? tes__link(h, i) : NULL;
        for (uint32_t c = tes__link_first(h, l); c; c = tes__link_next(h, l, c)) {
            tes__out_u32(o, c - 1);
            tes__out_u32(o, i);
        }
    }
    tes__out_u32(o, names);
    for (uint32_t i = 0; names && i < ei->count; i++) {
        const char *s = tes__slot_is_live(&ei->slots[i]) ? tes__name_of(h, i) : NULL;
        if (!s)
            continue;
        uint32_t len = (uint32_t)strlen(s);
        tes__out_u32(o, i);
        tes__out_u32(o, len);
        tes__out_bytes(o, s, len);
    }
}

size_t tes__snap_hierarchy_estimate(const tes_world_t *w)
{
    const tes__hier_t *h = w->hier;
    if (!h)
        return 8;
    return 8 + (size_t)h->linked * 8 + (size_t)h->names.count * 264;
}

/* ------------------------------------------------------------------ load */

static bool live(const tes__snap_plan_t *p, uint32_t index)
{
    return index < p->entities.count && (p->state[index] & TES__SNAP_LIVE);
}

int tes__snap_parse_hierarchy(tes__snap_plan_t *p, tes__cursor_t *c)
{
    tes__alloc_t *a = p->a;
    uint32_t slots = p->entities.count;
    uint64_t at = (uint64_t)(c->p - p->buf);
    uint32_t npairs = tes__cursor_count(c, 8);
    if (c->bad)
        return tes__snap_bad(p, at, "hierarchy: the link count does not fit the meta part");
    p->hier_pairs = c->p;
    p->hier_npairs = npairs;
    /* parent_of: index + 1 of each slot's parent (scratch, freed by parse_free). */
    size_t bytes = (size_t)slots * 4;
    if (slots && !(p->parent_of = tes__calloc(a, bytes ? bytes : 1)))
        return TES_ERR_NOMEM;
    int rc = TES_OK;
    /* Each pair in the save's order: by parent in slot order. (The prefab
     * rule of tes_set_parent is not checked: it holds when a link is made,
     * but TES_PREFAB may be added or removed afterwards, so a world the
     * calls build can hold any link between prefab and other entities.) */
    for (uint32_t k = 0, last = 0; !rc && k < npairs; k++) {
        uint64_t pair_at = at + 4 + (uint64_t)k * 8;
        uint32_t child = tes__cursor_u32(c), parent = tes__cursor_u32(c);
        if (!live(p, child) || !live(p, parent))
            rc = tes__snap_bad(p, pair_at, "hierarchy link %u: entity %u or %u is not live", (unsigned)k, (unsigned)child, (unsigned)parent);
        else if (child == parent)
            rc = tes__snap_bad(p, pair_at, "hierarchy link %u: entity %u is its own parent", (unsigned)k, (unsigned)child);
        else if (p->parent_of[child])
            rc = tes__snap_bad(p, pair_at, "hierarchy link %u: entity %u has a second parent", (unsigned)k, (unsigned)child);
        else if (parent < last)
            rc = tes__snap_bad(p, pair_at, "hierarchy link %u: parent %u comes after parent %u (links are listed by parent in slot order)", (unsigned)k, (unsigned)parent, (unsigned)last);
        else
            p->parent_of[child] = parent + 1;
        last = parent;
    }
    if (rc)
        return rc;
    /* Cycles: walk up from each slot; marks 1 = on the current walk,
     * 2 = known to reach a root. O(slots) in all. */
    uint8_t *mark = slots ? tes__calloc(a, slots) : NULL;
    if (slots && !mark)
        return TES_ERR_NOMEM;
    for (uint32_t i = 0; !rc && i < slots; i++) {
        uint32_t x = i;
        while (!rc && p->parent_of[x] && mark[x] != 2) {
            if (mark[x] == 1)
                rc = tes__snap_bad(p, at, "hierarchy: the links of entity %u form a cycle", (unsigned)x);
            mark[x] = 1;
            x = p->parent_of[x] - 1;
        }
        for (uint32_t y = i; y != x && mark[y] == 1; y = p->parent_of[y] - 1)
            mark[y] = 2;
        mark[x] = 2;
    }
    tes__free(a, mark, slots);
    if (rc)
        return rc;
    /* Names: valid, one per entity, unique among siblings. */
    at = (uint64_t)(c->p - p->buf);
    uint32_t nnames = tes__cursor_count(c, 9);
    if (c->bad)
        return tes__snap_bad(p, at, "hierarchy: the name count does not fit the meta part");
    p->hier_names = c->p;
    p->hier_nnames = nnames;
    tes__map_t seen = {0};
    if (nnames && tes__map_reserve(&seen, a, nnames))
        return TES_ERR_NOMEM;
    for (uint32_t k = 0, prev = 0; !rc && k < nnames; k++) {
        uint64_t name_at = (uint64_t)(c->p - p->buf);
        uint32_t index = tes__cursor_u32(c), len = tes__cursor_u32(c);
        const char *s = (const char *)tes__cursor_take(c, len);
        if (c->bad) {
            rc = tes__snap_bad(p, name_at, "hierarchy name %u: the meta part ends inside it", (unsigned)k);
            break;
        }
        if (!live(p, index) || len == 0 || len > 255 || memchr(s, '/', len) || memchr(s, '\0', len)) {
            rc = tes__snap_bad(p, name_at, "hierarchy name %u: entity %u is not live, or the name is empty, longer than 255 bytes or holds '/' or NUL", (unsigned)k, (unsigned)index);
            break;
        }
        /* In slot order, each entity once (as a save writes them). */
        if (k && index <= prev) {
            rc = tes__snap_bad(p, name_at, "hierarchy name %u: entity %u comes after entity %u (names are listed in slot order, one per entity)", (unsigned)k, (unsigned)index, (unsigned)prev);
            break;
        }
        prev = index;
        uint64_t key = tes__sibling_key(p->parent_of[index], s, len);
        uint32_t cursor = 0;
        uint64_t v;
        while (!rc && tes__map_next(&seen, key, &cursor, &v)) {
            const uint8_t *o = p->hier_names + (size_t)v;
            uint32_t oi = tes__get_u32(o), ol = tes__get_u32(o + 4);
            if (p->parent_of[oi] == p->parent_of[index] && ol == len && memcmp(o + 8, s, len) == 0)
                rc = tes__snap_bad(p, name_at, "hierarchy name %u: entity %u has a sibling of the same name", (unsigned)k, (unsigned)index);
        }
        if (!rc)
            tes__map_insert(&seen, key, (uint64_t)((const uint8_t *)s - 8 - p->hier_names));
    }
    tes__map_fini(&seen, a);
    return rc;
}

int tes__snap_stage_hierarchy(tes__snap_plan_t *p, char ***names)
{
    *names = NULL;
    if (!p->hier_npairs && !p->hier_nnames)
        return TES_OK;
    tes_world_t *w = p->w;
    tes__alloc_t *a = p->a;
    tes__hier_t *h = tes__hier(w);
    if (!h)
        return TES_ERR_NOMEM;
    for (uint32_t k = 0; k < p->hier_npairs; k++) {
        const uint8_t *q = p->hier_pairs + (size_t)k * 8;
        if (tes__links_reserve(h, a, tes__get_u32(q), tes__get_u32(q + 4)))
            return TES_ERR_NOMEM;
    }
    if (!p->hier_nnames)
        return TES_OK;
    if (tes__map_reserve(&h->names, a, p->hier_nnames) ||
        tes__map_reserve(&h->siblings, a, p->hier_nnames))
        return TES_ERR_NOMEM;
    char **list = tes__calloc(a, (size_t)p->hier_nnames * sizeof *list);
    if (!list)
        return TES_ERR_NOMEM;
    *names = list;
    const uint8_t *q = p->hier_names;
    for (uint32_t k = 0; k < p->hier_nnames; k++) {
        uint32_t len = tes__get_u32(q + 4);
        if (!(list[k] = tes__malloc(a, (size_t)len + 1)))
            return TES_ERR_NOMEM;
        memcpy(list[k], q + 8, len);
        list[k][len] = '\0';
        q += 8 + (size_t)len;
    }
    return TES_OK;
}

void tes__snap_commit_hierarchy(tes__snap_plan_t *p, char **names)
{
    tes__hier_t *h = p->w->hier;
    for (uint32_t k = 0; k < p->hier_npairs; k++) {
        const uint8_t *q = p->hier_pairs + (size_t)k * 8;
        tes__link_append(h, tes__get_u32(q), tes__get_u32(q + 4));
    }
    const uint8_t *q = p->hier_names;
    for (uint32_t k = 0; names && k < p->hier_nnames; k++) {
        uint32_t index = tes__get_u32(q), len = tes__get_u32(q + 4);
        tes__map_insert(&h->names, (uint64_t)index + 1, (uint64_t)(uintptr_t)names[k]);
        tes__map_insert(&h->siblings, tes__sibling_key(tes__link_parent(h, index), names[k], len), index);
        names[k] = NULL;
        q += 8 + (size_t)len;
    }
}

void tes__snap_free_hierarchy(tes__snap_plan_t *p, char **names)
{
    if (!names)
        return;
    for (uint32_t k = 0; k < p->hier_nnames; k++)
        if (names[k])
            tes__free(p->a, names[k], strlen(names[k]) + 1);
    tes__free(p->a, names, (size_t)p->hier_nnames * sizeof *names);
}
