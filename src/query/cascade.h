/*
 * The by-depth walks' state, shared by their two files: cascade_iter.c
 * (the state's life, the choice of walk, and the general walk: matches
 * collected with the query's own walk, sorted by depth, chunks made with
 * the write-back of gathered values) and cascade_sorted.c (the sorted
 * walk: the contiguous rows of each depth of tables that
 * tes_sort_by_depth left in depth order). Internal to the query layer.
 */
#ifndef TES_QUERY_CASCADE_H
#define TES_QUERY_CASCADE_H

#include <string.h>

#include "query/query.h"
#include "world/depth_order.h"

typedef struct cascade {
    tes_entity_t *ents;    /* the matches, by depth */
    tes_entity_t *parents; /* their parents (TES_NULL for roots) */
    int32_t *depths;
    uint32_t count;
    uint32_t ents_cap, parents_cap, depths_cap;
    tes_entity_t *ents2, *parents2; /* the sort's targets, swapped in */
    uint32_t ents2_cap, parents2_cap;
    uint32_t cursor;
    uint32_t chunk_max;
    size_t offsets[TES_MAX_TERMS]; /* each parent data term's array in scratch */
    /* Gathered chunks (see cascade_gather): per self data term its values,
     * their originals and the addresses they came from. */
    bool self_gather;
    uint32_t gathered; /* entities of the gathered chunk handed out last, 0: none */
    size_t originals[TES_MAX_TERMS], sources[TES_MAX_TERMS];
    /* The last table each term's values were found in, and the column. */
    const tes__table_t *last_table[TES_MAX_TERMS];
    int32_t last_column[TES_MAX_TERMS];
    unsigned char *scratch;
    size_t scratch_bytes;
    /* The sorted walk (cascade_sorted.c): whether the query may take it
     * (every term a table term, no change filter), whether this iteration
     * does, and where it is: the depth, the match and the row. rows holds
     * each match's depth record (NULL: an empty table). */
    bool sorted_ok, sorted;
    int32_t s_depth, s_deepest;
    uint32_t s_match, s_row;
    uint32_t s_ptable; /* the parents' one table, for the chunk being made */
    const tes__depth_rows_t **rows;
    uint32_t rows_cap;
} cascade_t;

/* memcpy of one value: the common small sizes as fixed-size copies the
 * compiler inlines (a call per value would cost more than the value). */
static inline void tes__cascade_copy(void *d, const void *s, size_t n)
{
    switch (n) {
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    case 12: memcpy(d, s, 12); break;
    case 16: memcpy(d, s, 16); break;
    default: memcpy(d, s, n); break;
    }
}

static inline bool tes__cascade_same(const void *a, const void *b, size_t n)
{
    switch (n) {
    case 4: return memcmp(a, b, 4) == 0;
    case 8: return memcmp(a, b, 8) == 0;
    case 12: return memcmp(a, b, 12) == 0;
    case 16: return memcmp(a, b, 16) == 0;
    default: return memcmp(a, b, n) == 0;
    }
}

/* The value of term i for the live entity at slot `slot` (index `index`),
 * or NULL (absent, or a tag); *has says whether it has the component.
 * The table last asked about, per term, is remembered with the
 * component's column there (-1: not in its type, -2: a tag in it):
 * neighbours in a depth mostly share a table. The general walk reads
 * through it. */
static inline void *tes__cascade_value_at(cascade_t *c, const tes_query_t *q, int32_t i,
                                          const tes__slot_t *slot, uint32_t index, bool *has)
{
    const tes__term_info_t *t = &q->terms[i];
    const tes__component_t *info = t->info;
    if (info->storage == TES_STORAGE_SPARSE) {
        uint32_t pos = tes__sparse_set_find(&info->store.set, tes_entity_make(index, slot->generation));
        *has = pos != TES_NULL_INDEX;
        return *has && info->size ? tes__sparse_store_at(&info->store, pos) : NULL;
    }
    const tes__table_t *table = tes__slot_table(q->w, slot);
    if (table != c->last_table[i]) {
        int32_t col = -1;
        if (tes__table_type_index(table, t->comp) >= 0)
            col = info->size ? tes__table_column_index(table, t->comp) : -2;
        c->last_table[i] = table;
        c->last_column[i] = col;
    }
    int32_t col = c->last_column[i];
    *has = col != -1;
    return col >= 0 ? tes__table_cell(table, (uint32_t)col, slot->row) : NULL;
}

/* The sorted walk (cascade_sorted.c). Whether this iteration may take it
 * (every matched table in the depth order the last tes_sort_by_depth
 * left): sets it up and returns true (TES_ERR_NOMEM: false with *rc set),
 * or returns false. */
bool tes__cascade_sorted_begin(tes_world_t *w, const tes_query_t *q, cascade_t *c, int *rc);
/* The sorted walk's next chunk (fields, entities, count and depth set), or
 * false at its end. */
bool tes__cascade_sorted_next(cascade_t *c, const tes_query_t *q, tes_iter_t *it);

#endif
