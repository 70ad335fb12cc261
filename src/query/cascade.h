/*
 * The by-depth walks' state, shared by their three files: cascade_iter.c
 * (the state's life, the choice of walk, and the general walk: matches
 * collected with the query's own walk, sorted by depth, chunks made with
 * the write-back of gathered values), cascade_sorted.c (the sorted walk:
 * the contiguous rows of each depth of tables that tes_sort_by_depth left
 * in depth order) and cascade_keep.c (the pointer walk that queries of
 * plain self values take over tables not in that order, and the order it
 * keeps from one iteration to the next while nothing it depends on
 * changes), and the walk's entry points. Internal to the query layer: the
 * walk stands on the base walks (base_walk.h), with which it collects its
 * matches, and under the public iteration (iter.c).
 */
#ifndef TES_QUERY_CASCADE_H
#define TES_QUERY_CASCADE_H

#include <string.h>

#include "query/query.h"
#include "world/depth_order.h"

/* The by-depth walk's entry points, for the public iteration (iter.c)
 * and the query's creation (create.c). */

/* The next chunk (cascade_iter.c), or false at the end or when its state
 * could not be allocated (TES_ERR_NOMEM recorded). */
bool tes__cascade_next(tes_iter_t *it);
/* Releases the state a query keeps for its next by-depth iteration. */
void tes__cascade_release_spare(tes_query_t *q);
/* tes__world_check's part (cascade_keep.c): the pointer walk's kept order
 * in c (q's spare state, or NULL), when it holds, matches the world.
 * TES_OK, TES_ERR_NOMEM or TES_ERR_INVALID (reported on stderr). */
int tes__cascade_check_kept(const tes_world_t *w, const tes_query_t *q, const struct cascade *c);
/* Ends a by-depth walk: its state goes back to the query (idempotent). */
void tes__cascade_free(tes_iter_t *it);
/* Validates the parent terms and the CASCADE flag of d once the self terms
 * are set up: TES_OK or TES_ERR_INVALID recorded with a detail. */
int tes__cascade_setup(tes_query_t *q, const tes_query_desc_t *d);

/* A table the kept order was collected from (cascade_keep.c). */
typedef struct tes__kept_table {
    const tes__table_t *table;
    const void *block;
    uint32_t cap; /* with the block, fixes where each column lies */
    uint32_t count;
    uint32_t at; /* its entities' copy in the state's saved array */
} tes__kept_table_t;

/* The walk an iteration takes, chosen once when it starts (cascade_build):
 * the sorted walk when every matched table is in the depth order the last
 * tes_sort_by_depth left, else the pointer walk for queries of plain self
 * values, else the general walk. */
typedef enum tes__cascade_walk {
    TES__CASCADE_GENERAL,
    TES__CASCADE_POINTER,
    TES__CASCADE_SORTED
} tes__cascade_walk_t;

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
    /* This iteration's walk. */
    tes__cascade_walk_t walk;
    /* The pointer walk (cascade_keep.c), which a query whose self values
     * are plain takes (fast): per match, `stride` addresses, first those
     * of its self data terms' values (self_terms), then those of its
     * parent's values for each parent term other than NOT (par_terms:
     * NULL when the parent lacks the component, a marker for a tag it
     * has), sorted with the matches. */
    bool fast;
    uint32_t nself, npar, stride;
    int32_t self_terms[TES_MAX_TERMS], par_terms[TES_MAX_TERMS];
    int32_t self_slot[TES_MAX_TERMS]; /* term -> its place among self_terms */
    void **ptrs, **ptrs2;
    uint32_t ptrs_cap, ptrs2_cap;      /* in pointers */
    uint32_t gathered_at;              /* where the gathered chunk starts */
    /* Depths known this iteration: per entity index, (epoch << 8) | depth
     * + 1 when known (depths of 254 and more are not kept). */
    uint16_t *memo;
    uint32_t memo_cap;
    uint16_t epoch;
    /* The kept order (cascade_keep.c): whether this query's order may be
     * kept, whether it is, and what it was collected from: the world's
     * link changes, the query's matched tables, and each table the
     * matches or their parents lived in, with its entities then (copied
     * into saved). */
    bool keepable, kept;
    uint64_t kept_links;
    uint32_t kept_matches;
    tes__kept_table_t *tabs;
    uint32_t ntabs, tabs_cap;
    tes_entity_t *saved;
    uint32_t saved_cap;
    const tes__table_t *last_parent_table;
    /* The sorted walk (cascade_sorted.c): whether the query may take it
     * (every term a table term, no change filter), and where it is: the
     * depth, the match and the row. rows holds each match's depth record
     * (NULL: an empty table). */
    bool sorted_ok;
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

/* The pointer walk (cascade_keep.c). Each returns TES_OK or TES_ERR_NOMEM
 * where it allocates; a failure leaves the state to be released whole. */

/* Starts an iteration's depth memo (made to cover every entity index). */
int tes__cascade_memo_begin(tes_world_t *w, cascade_t *c);
/* Appends the matches of base chunk b that the parent terms pass, with
 * their values' addresses. */
int tes__cascade_collect_fast(tes_world_t *w, const tes_query_t *q, cascade_t *c, const tes_iter_t *b);
/* Sorts the collected matches by depth, stably. */
/* The value of term i for the live entity at slot `slot` (index `index`),
 * or NULL (absent, or a tag); *has says whether it has the component.
 * The table last asked about, per term, is remembered with the
 * component's column there (-1: not in its type, -2: a tag in it):
 * neighbours in a depth mostly share a table. The general and pointer
 * walks read through it. */
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

int tes__cascade_sort_fast(tes_world_t *w, cascade_t *c);

/* The two halves of the stable counting sort by depth that both walks
 * use (each scatters its own arrays in between). depth_starts finds the
 * deepest depth and, when there is something to sort (two or more
 * matches over more than one depth), returns in *out most + 2 counters
 * where (*out)[d] is the first position of depth d; *out stays NULL when
 * there is nothing to sort. TES_OK or TES_ERR_NOMEM. depth_finish is
 * called after the scatter (into ents2 and the walk's own second arrays)
 * advanced each counter to its run's end: it swaps ents2 in as ents (with
 * its capacity), writes the sorted depths and frees the counters. */
static inline int tes__cascade_depth_starts(tes__alloc_t *a, const cascade_t *c, uint32_t **out,
                                            int32_t *most)
{
    *out = NULL;
    int32_t deepest = 0;
    for (uint32_t i = 0; i < c->count; i++)
        deepest = c->depths[i] > deepest ? c->depths[i] : deepest;
    *most = deepest;
    if (deepest == 0 || c->count < 2)
        return TES_OK;
    uint32_t *start = tes__calloc(a, ((size_t)deepest + 2) * sizeof(uint32_t));
    if (!start)
        return TES_ERR_NOMEM;
    for (uint32_t i = 0; i < c->count; i++)
        start[c->depths[i] + 1]++;
    for (int32_t d = 1; d <= deepest + 1; d++)
        start[d] += start[d - 1];
    *out = start;
    return TES_OK;
}

static inline void tes__cascade_depth_finish(tes__alloc_t *a, cascade_t *c, uint32_t *start,
                                             int32_t most)
{
    tes_entity_t *ents = c->ents2;
    c->ents2 = c->ents;
    c->ents = ents;
    uint32_t cap = c->ents_cap;
    c->ents_cap = c->ents2_cap;
    c->ents2_cap = cap;
    uint32_t i = 0;
    for (int32_t d = 0; d <= most; d++)
        while (i < start[d])
            c->depths[i++] = d;
    tes__free(a, start, ((size_t)most + 2) * sizeof(uint32_t));
}
/* Records what the collected order depends on, so the next iteration
 * may keep it. */
int tes__cascade_remember(tes_world_t *w, const tes_query_t *q, cascade_t *c);
/* Whether the order kept by the last iteration still holds. */
bool tes__cascade_order_holds(const tes_world_t *w, const tes_query_t *q, const cascade_t *c);
/* Makes the chunk starting at match p (fields set); returns its size. */
uint32_t tes__cascade_next_fast(cascade_t *c, const tes_query_t *q, tes_iter_t *it, uint32_t p);

/* The sorted walk (cascade_sorted.c). Whether this iteration may take it
 * (every matched table in the depth order the last tes_sort_by_depth
 * left): sets it up and returns true (TES_ERR_NOMEM: false with *rc set),
 * or returns false. */
bool tes__cascade_sorted_begin(tes_world_t *w, const tes_query_t *q, cascade_t *c, int *rc);
/* The sorted walk's next chunk (fields, entities, count and depth set), or
 * false at its end. */
bool tes__cascade_sorted_next(cascade_t *c, const tes_query_t *q, tes_iter_t *it);

#endif
