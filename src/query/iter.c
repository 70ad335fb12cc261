/*
 * Chunk iteration. Every chunk satisfies one contract: each data term's
 * field is a plain array of it.count values aligned with it.entities. The
 * walks differ in where chunks come from:
 * - table walk (TABLE and ALL modes): whole tables from the query's cache,
 *   empty ones skipped; when sparse terms are present, runs of rows whose
 *   sparse fields happen to be contiguous too;
 * - driven walk (DRIVEN mode): runs of the driving pool's packed array;
 * - root walk (ALL mode): runs of root entities read from the entity index,
 *   copied to the iterator's scratch array (the virtual root owns no rows);
 * - group walks: see group.c.
 * A live iterator holds the world in deferred mode; the last one to finish
 * applies the queued changes.
 */
#include <string.h>

#include "query/group.h"
#include "query/query.h"

enum { PHASE_TABLES, PHASE_ROOT, PHASE_DRIVEN, PHASE_GROUP };

/* Sparse terms of e only (the table part is settled by the table match). */
static bool match_sparse_terms(const tes_query_t *q, tes_entity_t e, void **ptrs)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (!t->sparse)
            continue;
        uint32_t pos = tes__sparse_set_find(&t->info->store.set, e);
        bool present = pos != TES_NULL_INDEX;
        if ((t->oper == TES_AND && !present) || (t->oper == TES_NOT && present))
            return false;
        ptrs[i] = present && t->data ? tes__sparse_store_at(&t->info->store, pos) : NULL;
    }
    return true;
}

static void set_fields(tes_iter_t *it, void *const *ptrs)
{
    memcpy(it->priv_fields, ptrs, sizeof it->priv_fields);
}

/* The next chunk of the table walk, or false when the cache is exhausted. */
static bool next_table_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    while (it->priv_cursor < q->match_count) {
        const tes__query_match_t *m = &q->matches[it->priv_cursor];
        const tes__table_t *t = m->table;
        void *ptrs[TES_MAX_TERMS] = {0};
        if (!q->has_sparse) {
            it->priv_cursor++;
            if (!t->count)
                continue;
            for (int32_t i = 0; i < q->term_count; i++)
                if (m->column[i] >= 0)
                    ptrs[i] = t->columns[m->column[i]].data;
            set_fields(it, ptrs);
            it->count = (int32_t)t->count;
            it->entities = t->entities;
            return true;
        }
        /* Rows of this table that satisfy the sparse terms, in runs. */
        uint32_t row = it->priv_row;
        while (row < t->count && !match_sparse_terms(q, t->entities[row], ptrs))
            row++;
        if (row >= t->count) {
            it->priv_cursor++;
            it->priv_row = 0;
            continue;
        }
        uint32_t end = row + 1;
        void *prev[TES_MAX_TERMS], *next[TES_MAX_TERMS] = {0};
        memcpy(prev, ptrs, sizeof prev);
        while (end < t->count && match_sparse_terms(q, t->entities[end], next) &&
               tes__query_contiguous(q, prev, next, true)) {
            memcpy(prev, next, sizeof prev);
            end++;
        }
        for (int32_t i = 0; i < q->term_count; i++)
            if (m->column[i] >= 0)
                ptrs[i] = tes__table_cell(t, (uint32_t)m->column[i], row);
        set_fields(it, ptrs);
        it->count = (int32_t)(end - row);
        it->entities = t->entities + row;
        it->priv_row = end;
        return true;
    }
    return false;
}

/* Root entities (no table components), in runs copied to the scratch. */
static bool next_root_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    const tes__entity_index_t *ei = &q->w->entities;
    if (!q->table_ok[0])
        return false;
    void *ptrs[TES_MAX_TERMS] = {0}, *prev[TES_MAX_TERMS] = {0}, *next[TES_MAX_TERMS] = {0};
    int32_t n = 0;
    for (; it->priv_cursor < ei->count && n < TES_ITER_SCRATCH; it->priv_cursor++) {
        const tes__slot_t *s = &ei->slots[it->priv_cursor];
        if (s->table == TES__SLOT_FREE || (s->table & TES__SLOT_TABLE_MASK) != 0 ||
            s->row == TES__ROW_PENDING)
            continue;
        tes_entity_t e = tes_entity_make(it->priv_cursor, s->generation);
        if (!match_sparse_terms(q, e, n ? next : ptrs))
            continue;
        if (n && !tes__query_contiguous(q, prev, next, true))
            break; /* this entity starts the next chunk */
        memcpy(prev, n ? next : ptrs, sizeof prev);
        it->priv_scratch[n++] = e;
    }
    if (!n)
        return false;
    set_fields(it, ptrs);
    it->count = n;
    it->entities = it->priv_scratch;
    return true;
}

/* Runs of the driving pool's packed array whose entities match. */
static bool next_driven_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    const tes__sparse_set_t *set = &q->terms[it->priv_driver].info->store.set;
    void *ptrs[TES_MAX_TERMS] = {0};
    uint32_t pos = it->priv_cursor;
    while (pos < set->count && (tes__sparse_is_tombstone(set->packed[pos]) ||
                                !tes__query_match_entity(q, set->packed[pos], ptrs)))
        pos++;
    if (pos >= set->count) {
        it->priv_cursor = pos;
        return false;
    }
    uint32_t end = pos + 1;
    void *prev[TES_MAX_TERMS], *next[TES_MAX_TERMS] = {0};
    memcpy(prev, ptrs, sizeof prev);
    while (end < set->count && !tes__sparse_is_tombstone(set->packed[end]) &&
           tes__query_match_entity(q, set->packed[end], next) && tes__query_contiguous(q, prev, next, false)) {
        memcpy(prev, next, sizeof prev);
        end++;
    }
    set_fields(it, ptrs);
    it->count = (int32_t)(end - pos);
    it->entities = set->packed + pos;
    it->priv_cursor = end;
    return true;
}

/* The AND pool with the fewest live entities (seed 002 a). */
static int32_t pick_driver(const tes_query_t *q)
{
    int32_t best = -1;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (t->oper != TES_AND || !t->sparse)
            continue;
        if (best < 0 || t->info->store.set.live < q->terms[best].info->store.set.live)
            best = i;
    }
    return best;
}

tes_iter_t tes_query_iter(tes_query_t *q)
{
    tes_iter_t it;
    memset(&it, 0, sizeof it);
    if (!q) {
        it.priv_done = 1;
        return it;
    }
    it.world = q->w;
    it.priv_query = q;
    it.priv_driver = -1;
    if (q->group)
        it.priv_phase = PHASE_GROUP;
    else if (q->mode == TES__QUERY_DRIVEN) {
        it.priv_phase = PHASE_DRIVEN;
        it.priv_driver = pick_driver(q);
    } else
        it.priv_phase = PHASE_TABLES;
    q->w->defer.depth++;
    return it;
}

static bool advance(tes_iter_t *it)
{
    switch (it->priv_phase) {
    case PHASE_TABLES:
        if (next_table_chunk(it))
            return true;
        if (it->priv_query->mode != TES__QUERY_ALL)
            return false;
        it->priv_phase = PHASE_ROOT;
        it->priv_cursor = 0;
        return next_root_chunk(it);
    case PHASE_ROOT: return next_root_chunk(it);
    case PHASE_DRIVEN: return next_driven_chunk(it);
    case PHASE_GROUP: return tes__group_next(it);
    }
    return false;
}

bool tes_iter_next(tes_iter_t *it)
{
    if (!it || it->priv_done)
        return false;
    if (advance(it))
        return true;
    tes_iter_fini(it);
    return false;
}

void *tes_field(const tes_iter_t *it, int32_t term)
{
    if (!it || it->priv_done || term < 0 || term >= TES_MAX_TERMS)
        return NULL;
    return it->priv_fields[term];
}

void tes_iter_fini(tes_iter_t *it)
{
    if (!it || it->priv_done)
        return;
    it->priv_done = 1;
    it->count = 0;
    it->entities = NULL;
    tes__defer_end(it->world);
}

int32_t tes_query_count(tes_query_t *q)
{
    if (!q)
        return 0;
    int64_t n = 0;
    if (!q->group && q->mode == TES__QUERY_TABLE && !q->has_sparse) {
        for (uint32_t i = 0; i < q->match_count; i++)
            n += q->matches[i].table->count;
    } else {
        tes_iter_t it = tes_query_iter(q);
        while (tes_iter_next(&it))
            n += it.count;
    }
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}
