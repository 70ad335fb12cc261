/*
 * The table, root and packed walks, and the step of every walk but the
 * by-depth one (base_walk.h). Which entities belong to a chunk is decided
 * by the one matcher (tes__query_match), so the walks differ only in where
 * their entities come from:
 * - table walk: the rows of the cached tables. With no sparse term a chunk
 *   is a whole table (base_walk.h's inline step); with them the runs of
 *   rows the matcher accepts;
 * - root walk: root entities read from the entity index, a few at a time,
 *   copied to the iterator's scratch array (the virtual root owns no rows);
 * - packed walk: a packed array, the driving pool's or a non-owning
 *   group's. A sparse-only query's default filters cost it nothing per
 *   entity while few entities are disabled or prefabs: the iteration lists
 *   their positions in the pool on its first step (filter.h, at most
 *   TES_ITER_HIDDEN, kept in the iterator, so nothing is allocated and no
 *   shared state is written) and runs end before them; with more of them
 *   the matcher tests each entity's byte in the filter index.
 */
#include "query/base_walk.h"

#include <string.h>

#include "query/gather.h"

/* The next chunk of the table walk, or false when the cache is exhausted:
 * with sparse terms, the next run of rows the matcher accepts. */
static bool next_table_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    if (!q->has_sparse)
        return tes__walk_whole_next(it, q);
    uint32_t c = it->priv_cursor;
    for (; c < q->match_count; c++, it->priv_row = 0) {
        const tes__query_match_t *m = &q->matches[c];
        const tes__table_t *t = m->table;
        /* The next run of rows the matcher accepts. */
        tes__match_t mt = {.how = 0, .hide = 0, .driver = -1};
        tes__changes_match_setup(it, &mt);
        uint32_t row = it->priv_row, k = 0;
        for (; row < t->count; row++)
            if ((k = tes__query_match(q, &mt, t->entities + row, tes__chunk_end(row, t->count) - row)))
                break;
        if (!k)
            continue;
        tes__query_fields(q, mt.pos, NULL, it->priv_fields);
        for (int32_t i = 0; i < q->term_count; i++)
            if (m->column[i] >= 0)
                it->priv_fields[i] = tes__table_cell(t, (uint32_t)m->column[i], row);
        it->count = (int32_t)k;
        it->entities = t->entities + row;
        bool more = row + k < t->count; /* the table has rows left */
        it->priv_row = more ? row + k : 0;
        it->priv_cursor = more ? c : c + 1;
        return true;
    }
    it->priv_cursor = c;
    return false;
}

/* Root entities (no table components): the next few are copied to the
 * scratch, and the chunk is the run the matcher accepts from the first of
 * them that matches. */
static bool next_root_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    const tes__entity_index_t *ei = &q->w->entities;
    if (!q->table_ok[0])
        return false;
    for (;;) {
        uint32_t c = it->priv_cursor, n = 0;
        for (; c < ei->count && n < TES_ITER_SCRATCH; c++) {
            const tes__slot_t *s = &ei->slots[c];
            if (tes__slot_is_root_match(s))
                it->priv_scratch[n++] = tes_entity_make(c, s->generation);
        }
        if (!n) {
            it->priv_cursor = c;
            return false;
        }
        tes__match_t m = {.how = 0, .hide = 0, .driver = -1};
        tes__changes_match_setup(it, &m);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t k = tes__query_match(q, &m, it->priv_scratch + j, n - j);
            if (!k)
                continue;
            tes__query_fields(q, m.pos, NULL, it->priv_fields); /* no table fields */
            /* The chunk starts at the scratch's start, as it always has. */
            memmove(it->priv_scratch, it->priv_scratch + j, k * sizeof *it->priv_scratch);
            it->count = (int32_t)k;
            it->entities = it->priv_scratch;
            it->priv_cursor = tes_entity_index(it->priv_scratch[k - 1]) + 1;
            return true;
        }
        it->priv_cursor = c;
    }
}

/* The first position at or after p that the walk steps over (the hidden
 * positions listed by the walk's first step), UINT32_MAX for none. */
static uint32_t next_hidden(tes_iter_t *it, uint32_t p)
{
    uint32_t n = it->priv_hidden_count == TES__FILTERS_TEST ? 0 : it->priv_hidden_count;
    while (it->priv_hidden_next < n && it->priv_hidden[it->priv_hidden_next] < p)
        it->priv_hidden_next++;
    return it->priv_hidden_next < n ? it->priv_hidden[it->priv_hidden_next] : UINT32_MAX;
}

/* Runs of a packed array that the matcher accepts: the pool of term
 * it.priv_driver, or (priv_driver -1) a non-owning group's member set. A
 * group's entities are known to match (its pool holds exactly its
 * members), so only their fields are located. Otherwise a sparse-only
 * query never reads an entity's table (skip_tables): its default filters
 * come from the filter index, as the hidden positions that end runs, or
 * when there were too many of them as one byte tested per entity; other
 * queries have the matcher check each entity's table. */
static bool next_packed_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    const tes__group_t *g = q->group; /* non-owning, when set */
    int32_t d = it->priv_driver;
    const tes__sparse_set_t *set = d >= 0 ? &q->terms[d].info->store.set : &g->members;
    tes__match_t m;
    m.driver = d;
    m.hide = 0;
    tes__changes_match_setup(it, &m);
    if (g) {
        m.how = TES__MATCH_KNOWN | (q->table_data ? TES__MATCH_TABLE : 0);
    } else {
        m.how = q->skip_tables ? 0 : TES__MATCH_TABLE;
        if (it->priv_hidden_count == TES__HIDDEN_UNLISTED)
            it->priv_hidden_count = tes__filters_positions(q->filters, q->filter_mask, set,
                                                           it->priv_hidden, TES_ITER_HIDDEN);
        if (it->priv_hidden_count == TES__FILTERS_TEST)
            m.hide = q->filter_mask;
    }
    uint32_t p = it->priv_cursor, hidden = next_hidden(it, p), last = 0, k = 0;
    for (; p < set->count; p++) {
        uint32_t to = tes__changes_skip(q, &m, d, p); /* blocks with nothing new */
        if (to != p) {
            if ((p = to) >= set->count)
                break;
            if (hidden < p)
                hidden = next_hidden(it, p);
        }
        if (p == hidden) {
            hidden = next_hidden(it, p + 1);
            continue;
        }
        /* A run ends before the next hidden entity (hidden > p here). */
        last = tes__chunk_end(p, set->count); /* it.count is an int32_t */
        if (hidden < last)
            last = hidden;
        if (d >= 0)
            m.pos[d] = p;
        if ((k = tes__query_match(q, &m, set->packed + p, last - p)) != 0)
            break;
    }
    if (!k) {
        it->priv_cursor = p;
        return false;
    }
    /* A short run: gather a longer chunk if the query can (gather.h). */
    if (k < TES__GATHER_MIN && q->gather_k && (g || q->skip_tables) &&
        it->priv_gather_count != TES__GATHER_OFF &&
        tes__gather_chunk(it, set->packed + p, last - p, d >= 0 ? p : 0, m.pos, k, m.hide, g != NULL)) {
        it->priv_cursor = p + (uint32_t)it->count;
        return true;
    }
    tes__query_fields(q, m.pos, (m.how & TES__MATCH_TABLE) ? m.slot : NULL, it->priv_fields);
    it->count = (int32_t)k;
    it->entities = set->packed + p;
    it->priv_cursor = p + k;
    return true;
}

tes_iter_t tes__query_base_start(tes_query_t *q) { return tes__walk_start(q, false); }

bool tes__query_base_next(tes_iter_t *it)
{
    switch (it->priv_phase) {
    case TES__WALK_WHOLE:
        if (tes__walk_whole_next(it, it->priv_query))
            return true;
        goto tables_done;
    case TES__WALK_TABLES:
        if (next_table_chunk(it))
            return true;
    tables_done:
        if (it->priv_query->mode != TES__QUERY_ALL)
            return false;
        it->priv_phase = TES__WALK_ROOT;
        it->priv_cursor = 0;
        return next_root_chunk(it);
    case TES__WALK_ROOT: return next_root_chunk(it);
    case TES__WALK_PACKED: return next_packed_chunk(it);
    case TES__WALK_OWNED: return tes__group_next_owned(it);
    case TES__WALK_CHANGES: return tes__changes_next_chunk(it);
    }
    return false;
}
