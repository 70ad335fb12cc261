/*
 * The depth order of tables (tes_sort_by_depth): what the sort leaves
 * behind so that a by-depth query can walk each table's rows of one depth
 * as one contiguous range instead of collecting, sorting and copying
 * scattered values.
 *
 * Links never move rows, so a forest spawned in any order interleaves its
 * depths in every table, and a by-depth pass reads each value from a
 * different place. The sort moves rows inside their tables (an entity
 * keeps its table) so that each table's rows are in depth order, stably,
 * and records per table where each depth starts and, per row, where the
 * row's parent lies (its table and row). The record holds while nothing
 * it depends on changed: no link (the world's link_changes), and no row
 * of the table or of a table its parents lie in (each table's
 * row_changes, whose writers are the table's own routines). Any change
 * silently ends it for the tables concerned; queries then take the
 * general by-depth walk until the next sort.
 *
 * Tuned for transform propagation over big forests that change shape
 * rarely (sorted once after loading, or after a burst of reparenting).
 */
#ifndef TES_WORLD_DEPTH_ORDER_H
#define TES_WORLD_DEPTH_ORDER_H

#include "world/world.h"

/* A parent_row for a row without a parent (depth 0). */
#define TES__DEPTH_NO_PARENT UINT32_MAX

/* One table's record. `sorted` says the sort recorded the table; a table
 * whose entities are all roots (depth 0) has depths 1 and no arrays. */
typedef struct tes__depth_rows {
    bool sorted;
    /* Some row's parent lies in the virtual root (an entity without table
     * components), whose moves leave no count: the record cannot be
     * trusted for walks, which then take the general walk. */
    bool root_parent;
    uint64_t row_changes;    /* the table's row_changes after the sort */
    uint32_t rows;           /* the table's count then */
    uint32_t depths;         /* deepest depth + 1 */
    uint32_t *start;         /* depths + 1 entries: start[d] is depth d's first row */
    uint32_t *parent_row;    /* per row: its parent's row, TES__DEPTH_NO_PARENT */
    uint32_t *parent_table;  /* per row: its parent's table id */
    uint32_t *parent_tables; /* the distinct tables of the rows' parents */
    uint32_t nparent_tables;
    size_t bytes;            /* of the one allocation behind the arrays (at start) */
} tes__depth_rows_t;

struct tes__depth_order {
    uint64_t links;            /* the world's link_changes after the sort */
    tes__depth_rows_t *tables; /* per table id below cap */
    uint32_t cap;
};
typedef struct tes__depth_order tes__depth_order_t;

/* Table t's record when it still holds: the sort recorded t, no link
 * changed since, and neither t's rows nor those of any table its rows'
 * parents lie in changed. NULL otherwise (t is then walked the general
 * way). */
static inline const tes__depth_rows_t *tes__depth_rows(const tes_world_t *w,
                                                       const tes__table_t *t)
{
    const tes__depth_order_t *o = w->depth_order;
    if (!o || t->id >= o->cap || o->links != w->link_changes)
        return NULL;
    const tes__depth_rows_t *r = &o->tables[t->id];
    if (!r->sorted || r->root_parent || r->row_changes != t->row_changes)
        return NULL;
    for (uint32_t k = 0; k < r->nparent_tables; k++) {
        uint32_t id = r->parent_tables[k];
        if (o->tables[id].row_changes != w->tables.tables[id]->row_changes)
            return NULL;
    }
    return r;
}

/* The rows of depth d in a table's record: [*lo, *hi). */
static inline void tes__depth_range(const tes__depth_rows_t *r, int32_t d, uint32_t *lo,
                                    uint32_t *hi)
{
    if (d < 0 || (uint32_t)d >= r->depths) {
        *lo = *hi = 0;
    } else if (!r->start) { /* every row a root */
        *lo = 0;
        *hi = r->rows;
    } else {
        *lo = r->start[d];
        *hi = r->start[d + 1];
    }
}

/* Frees the records (world teardown). */
void tes__depth_order_free(tes_world_t *w);

/* tes__world_check's part: every record that still holds says where each
 * depth starts and where each row's parent lies. TES_OK or TES_ERR_INVALID
 * (reported on stderr). */
int tes__depth_order_check(const tes_world_t *w);

#endif
