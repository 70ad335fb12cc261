/*
 * tes_sort_by_depth (see depth_order.h): moves the rows of every table
 * holding linked entities into depth order, stably, and records where
 * each depth starts and where each row's parent lies.
 *
 * Like every call that can fail, it allocates everything first (the
 * depths, each reordered table's new block, each table's record) and
 * then commits with code that cannot fail: a failed allocation leaves
 * the world as it was. Rows move inside their tables only, by the
 * columns' move hooks (as when a table grows), stamps of tracked
 * components included; no add or remove happens, so no observer fires.
 * Sparse stores are not touched. The hierarchy is read through the
 * world's registered callbacks (this layer never names it).
 *
 * Cost: linear in the entities of the tables it reorders (two passes
 * over their rows, one copy of their columns), plus a block the size of
 * the largest reordered table while it runs.
 */
#include "world/depth_order.h"

#include <string.h>

#include "world/changes.h"
#include "world/check_report.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"

/* What the sort will do to one table, allocated before anything moves. */
typedef struct sort_plan {
    uint8_t *block; /* the reordered rows' block, NULL: no row moves */
    uint32_t *mem;  /* the record's arrays (tes__depth_rows_t.start) */
    size_t bytes;
} sort_plan_t;

static void rows_free(tes__alloc_t *a, tes__depth_rows_t *r)
{
    tes__free(a, r->start, r->bytes);
    r->start = NULL;
}

void tes__depth_order_free(tes_world_t *w)
{
    tes__depth_order_t *o = w->depth_order;
    if (!o)
        return;
    for (uint32_t i = 0; i < o->cap; i++)
        rows_free(&w->alloc, &o->tables[i]);
    tes__free(&w->alloc, o->tables, (size_t)o->cap * sizeof *o->tables);
    tes__free(&w->alloc, o, sizeof *o);
    w->depth_order = NULL;
}

/* The depth of live entity index i, from the memo (-1: not known yet):
 * a walk up to the first ancestor of known depth (or a root), which then
 * records the depths of the entities it passed, so that every entity is
 * walked over once. */
static int32_t sort_depth_of(const tes_world_t *w, int32_t *depth, uint32_t i)
{
    if (depth[i] >= 0)
        return depth[i];
    uint32_t (*up)(const tes_world_t *, uint32_t) = w->hier_ops->parent_of;
    uint32_t steps = 0, a = i + 1;
    int32_t known = -1;
    while (a) {
        if (depth[a - 1] >= 0) {
            known = depth[a - 1];
            break;
        }
        steps++;
        a = up(w, a - 1);
    }
    int32_t d = known >= 0 ? known + (int32_t)steps : (int32_t)steps - 1;
    a = i + 1;
    for (uint32_t k = 0; k < steps; k++, a = up(w, a - 1))
        depth[a - 1] = d - (int32_t)k;
    return depth[i];
}

/* The parent's index + 1 of live entity index i (0: a root). */
static uint32_t sort_parent(const tes_world_t *w, uint32_t i)
{
    return w->hier ? w->hier_ops->parent_of(w, i) : 0;
}

/* Plans table t (id `id`): fills its record r (the depth starts in the
 * record's arrays) and, when its rows are not in depth order, allocates
 * the block they move to. `mark` (per table id) dedupes the parents'
 * tables. TES_OK or TES_ERR_NOMEM (what was allocated stays in the plan,
 * for the caller to free). */
static int sort_plan_table(tes_world_t *w, const tes__table_t *t, const int32_t *depth,
                           uint32_t *mark, tes__depth_rows_t *r, sort_plan_t *plan)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t n = t->count, deepest = 0, nparents = 0;
    bool ordered = true;
    int32_t last = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t d = depth ? depth[tes_entity_index(t->entities[i])] : 0;
        ordered = ordered && d >= last;
        last = d;
        deepest = (uint32_t)d > deepest ? (uint32_t)d : deepest;
        if (!d)
            continue;
        uint32_t p = sort_parent(w, tes_entity_index(t->entities[i])) - 1;
        uint32_t pt = w->entities.slots[p].table & TES__SLOT_TABLE_MASK;
        if (w->tables.tables[pt]->flags & TES__TABLE_VIRTUAL)
            r->root_parent = true;
        if (mark[pt] != t->id + 1) {
            mark[pt] = t->id + 1;
            nparents++;
        }
    }
    r->sorted = true;
    r->rows = n;
    r->depths = deepest + 1;
    if (!deepest)
        return TES_OK; /* every row a root: nothing to record */
    /* start (deepest + 2), parent_row and parent_table (n each), the
     * parents' tables: one allocation. */
    size_t words = (size_t)deepest + 2 + 2 * (size_t)n + nparents;
    plan->bytes = words * sizeof(uint32_t);
    if (!(plan->mem = tes__malloc(a, plan->bytes)))
        return TES_ERR_NOMEM;
    r->bytes = plan->bytes;
    r->start = plan->mem;
    r->parent_row = r->start + deepest + 2;
    r->parent_table = r->parent_row + n;
    r->parent_tables = r->parent_table + n;
    memset(r->start, 0, ((size_t)deepest + 2) * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t index = tes_entity_index(t->entities[i]);
        int32_t d = depth[index];
        r->start[d + 1]++;
        if (!d)
            continue;
        uint32_t pt = w->entities.slots[sort_parent(w, index) - 1].table & TES__SLOT_TABLE_MASK;
        if (mark[pt] == t->id + 1) { /* listed once: the mark moves on */
            mark[pt] = 0;
            r->parent_tables[r->nparent_tables++] = pt;
        }
    }
    for (uint32_t d = 1; d <= deepest + 1; d++)
        r->start[d] += r->start[d - 1];
    if (!ordered && !(plan->block = tes__malloc(a, t->block_size)))
        return TES_ERR_NOMEM;
    return TES_OK;
}

/* Moves t's rows into depth order (its plan has a block): the stable
 * counting sort's permutation is built in the record's parent_row array
 * (filled with the parents afterwards), with the depth starts as cursors
 * (restored after). */
static void sort_commit_table(tes_world_t *w, tes__table_t *t, const int32_t *depth,
                              tes__depth_rows_t *r, sort_plan_t *plan)
{
    uint32_t n = t->count, *perm = r->parent_row, *start = r->start;
    tes__slot_t *slots = w->entities.slots;
    /* Each entity's slot takes its new row here, in the old rows' order
     * (often the slots' own order), rather than after the move. */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t index = tes_entity_index(t->entities[i]);
        uint32_t at = start[depth[index]]++;
        perm[at] = i;
        slots[index].row = at;
    }
    for (uint32_t d = r->depths - 1; d > 0; d--)
        start[d] = start[d - 1];
    start[0] = 0;
    /* A pending range of stamps covers rows by position: it is written
     * into the stamps before they move. */
    tes__changes_settle(w, t);
    tes__table_permute(t, &w->alloc, plan->block, t->block_size, perm);
    plan->block = NULL;
}

/* Where each row's parent lies, once every table has its final rows. */
static void sort_parents(const tes_world_t *w, const tes__table_t *t, const int32_t *depth,
                         tes__depth_rows_t *r)
{
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t index = tes_entity_index(t->entities[i]);
        r->parent_row[i] = TES__DEPTH_NO_PARENT;
        r->parent_table[i] = 0;
        if (!depth[index])
            continue;
        const tes__slot_t *s = &w->entities.slots[sort_parent(w, index) - 1];
        r->parent_row[i] = s->row;
        r->parent_table[i] = s->table & TES__SLOT_TABLE_MASK;
    }
}

static int sort_all(tes_world_t *w)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t ntab = w->tables.count, nidx = w->entities.count;
    int rc = TES_ERR_NOMEM;
    int32_t *depth = NULL;
    uint32_t *mark = tes__calloc(a, (size_t)ntab * sizeof *mark);
    sort_plan_t *plans = tes__calloc(a, (size_t)ntab * sizeof *plans);
    tes__depth_order_t *o = tes__calloc(a, sizeof *o);
    tes__depth_rows_t *rows = tes__calloc(a, (size_t)ntab * sizeof *rows);
    if (!mark || !plans || !o || !rows)
        goto done;
    if (w->hier && nidx) {
        if (!(depth = tes__malloc(a, (size_t)nidx * sizeof *depth)))
            goto done;
        memset(depth, 0xFF, (size_t)nidx * sizeof *depth); /* -1: not known */
        for (uint32_t id = 1; id < ntab; id++) {
            const tes__table_t *t = w->tables.tables[id];
            for (uint32_t i = 0; !(t->flags & TES__TABLE_VIRTUAL) && i < t->count; i++)
                (void)sort_depth_of(w, depth, tes_entity_index(t->entities[i]));
        }
    }
    rc = TES_OK;
    for (uint32_t id = 1; rc == TES_OK && id < ntab; id++) {
        const tes__table_t *t = w->tables.tables[id];
        if (!(t->flags & TES__TABLE_VIRTUAL))
            rc = sort_plan_table(w, t, depth, mark, &rows[id], &plans[id]);
    }
    if (rc)
        goto done;
    /* Everything is allocated: from here on nothing fails. */
    for (uint32_t id = 1; id < ntab; id++)
        if (plans[id].block)
            sort_commit_table(w, w->tables.tables[id], depth, &rows[id], &plans[id]);
    for (uint32_t id = 1; id < ntab; id++) {
        const tes__table_t *t = w->tables.tables[id];
        if (rows[id].start)
            sort_parents(w, t, depth, &rows[id]);
        rows[id].row_changes = t->row_changes;
    }
    o->tables = rows;
    o->cap = ntab;
    o->links = w->link_changes;
    tes__depth_order_free(w);
    w->depth_order = o;
    o = NULL;
    rows = NULL;
done:
    for (uint32_t id = 0; plans && id < ntab; id++) {
        tes__free(a, plans[id].block, w->tables.tables[id]->block_size);
        if (rows) /* a failure: the records' arrays go too */
            tes__free(a, plans[id].mem, plans[id].bytes);
    }
    tes__free(a, rows, (size_t)ntab * sizeof *rows);
    tes__free(a, o, sizeof *o);
    tes__free(a, plans, (size_t)ntab * sizeof *plans);
    tes__free(a, mark, (size_t)ntab * sizeof *mark);
    tes__free(a, depth, (size_t)nidx * sizeof *depth);
    return rc;
}

int tes_sort_by_depth(tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    /* Rows move: never under a hook, a running system (either may hold
     * addresses of values) or a live iterator or deferred block (which
     * hold chunks and row positions), as for a snapshot load. */
    if (tes__refused(w, TES__REFUSE_ANY))
        return tes__fail_busy(w, "tes_sort_by_depth");
    if (tes__deferred(w))
        return tes__fail_deferred(w, TES_ERR_BUSY, "tes_sort_by_depth");
    int rc = tes__world_begin(w, "tes_sort_by_depth"); /* move hooks run at a hook level */
    if (rc)
        return rc;
    rc = sort_all(w);
    tes__world_end(w);
    if (rc)
        return tes__fail_detail(w, rc, "tes_sort_by_depth: out of memory (it needs a copy of the "
                                       "largest table it reorders); nothing was moved");
    return TES_OK;
}

int tes__depth_order_check(const tes_world_t *w)
{
#define DCHECK(...) TES__CHECK("tes__world_check (depth order)", __VA_ARGS__)
    const tes__depth_order_t *o = w->depth_order;
    for (uint32_t id = 1; o && id < o->cap && id < w->tables.count; id++) {
        const tes__table_t *t = w->tables.tables[id];
        const tes__depth_rows_t *r = tes__depth_rows(w, t);
        if (!r)
            continue;
        DCHECK(r->rows == t->count, "table %u: %u rows recorded, %u now", id, r->rows, t->count);
        DCHECK(r->depths >= 1 && (r->start || r->depths == 1), "table %u: %u depths", id, r->depths);
        for (uint32_t d = 0; r->start && d < r->depths; d++)
            DCHECK(r->start[d] <= r->start[d + 1], "table %u: depth %u starts after the next", id, d);
        DCHECK(!r->start || (r->start[0] == 0 && r->start[r->depths] == t->count),
               "table %u: the depth starts do not cover its rows", id);
        int32_t d = 0;
        for (uint32_t i = 0; i < t->count; i++) {
            uint32_t index = tes_entity_index(t->entities[i]), p1 = 0;
            int32_t depth = w->hier ? w->hier_ops->lineage(w, index, &p1) : 0;
            uint32_t lo, hi;
            while (tes__depth_range(r, d, &lo, &hi), i >= hi && d < (int32_t)r->depths)
                d++;
            DCHECK(depth == d, "table %u row %u: depth %d, recorded among depth %d", id, i,
                   (int)depth, (int)d);
            if (!r->start)
                continue;
            uint32_t prow = TES__DEPTH_NO_PARENT, ptab = 0;
            if (p1) {
                prow = w->entities.slots[p1 - 1].row;
                ptab = w->entities.slots[p1 - 1].table & TES__SLOT_TABLE_MASK;
            }
            DCHECK(r->parent_row[i] == prow && (!p1 || r->parent_table[i] == ptab),
                   "table %u row %u: parent recorded at table %u row %u, it is at table %u row %u",
                   id, i, r->parent_table[i], r->parent_row[i], ptab, prow);
            bool listed = !p1;
            for (uint32_t k = 0; !listed && k < r->nparent_tables; k++)
                listed = r->parent_tables[k] == ptab;
            DCHECK(listed, "table %u row %u: its parent's table %u is not listed", id, i, ptab);
        }
    }
    return TES_OK;
#undef DCHECK
}
