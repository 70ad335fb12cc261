/*
 * Chunk iteration. Every chunk satisfies one contract: each data term's
 * field is a plain array of it.count values aligned with it.entities. The
 * walks differ in where chunks come from:
 * - table walk (TABLE and ALL modes): whole tables from the query's cache,
 *   empty ones skipped; when sparse terms are present, runs of rows whose
 *   sparse fields happen to be contiguous too;
 * - driven walk (DRIVEN mode): runs of the driving pool's packed array
 *   (the smallest AND pool). A sparse-only query's default filters cost
 *   it nothing per entity while few entities are disabled or prefabs: the
 *   iteration lists their positions in the pool when it starts (filter.h,
 *   at most TES_ITER_HIDDEN, kept in the iterator, so nothing is allocated
 *   and no shared state is written) and the runs end before them; with
 *   more of them it tests each entity's byte in the filter index;
 * - root walk (ALL mode): runs of root entities read from the entity index,
 *   copied to the iterator's scratch array (the virtual root owns no rows);
 * - group walks: see group.c (a non-owning group whose members are exactly
 *   one AND pool walks that pool, as the driven walk would, untested).
 * Membership and run boundaries come from the one per-entity matcher in
 * query.c (tes__query_match_sparse / tes__query_run_continues).
 * A live iterator holds the world in deferred mode; the last one to finish
 * applies the queued changes.
 */
#include <string.h>

#include "query/filter.h"
#include "query/gather.h"
#include "query/group.h"
#include "query/query.h"

enum { PHASE_TABLES, PHASE_ROOT, PHASE_DRIVEN, PHASE_GROUP };

/* The next chunk of the table walk, or false when the cache is exhausted. */
static bool next_table_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    while (it->priv_cursor < q->match_count) {
        const tes__query_match_t *m = &q->matches[it->priv_cursor];
        const tes__table_t *t = m->table;
        uint32_t row = 0, end = t->count;
        uint32_t pos[TES_MAX_TERMS];
        if (q->has_sparse) {
            /* Rows of this table that satisfy the sparse terms, in runs. */
            row = it->priv_row;
            while (row < t->count && !tes__query_match_sparse(q, t->entities[row], -1, 0, pos))
                row++;
            if (row >= t->count) {
                it->priv_cursor++;
                it->priv_row = 0;
                continue;
            }
            end = row + 1;
            while (end < t->count && tes__query_run_continues(q, pos, end - row, t->entities[end], false))
                end++;
            tes__query_sparse_fields(q, pos, it->priv_fields);
        } else if (!t->count) {
            it->priv_cursor++;
            continue;
        }
        for (int32_t i = 0; i < q->term_count; i++)
            if (!q->terms[i].sparse)
                it->priv_fields[i] = m->column[i] >= 0 ? tes__table_cell(t, (uint32_t)m->column[i], row) : NULL;
        it->count = (int32_t)(end - row);
        it->entities = t->entities + row;
        if (end < t->count) {
            it->priv_row = end;
        } else {
            it->priv_cursor++;
            it->priv_row = 0;
        }
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
    uint32_t pos[TES_MAX_TERMS];
    int32_t n = 0;
    for (; it->priv_cursor < ei->count && n < TES_ITER_SCRATCH; it->priv_cursor++) {
        const tes__slot_t *s = &ei->slots[it->priv_cursor];
        if (s->table == TES__SLOT_FREE || (s->table & TES__SLOT_TABLE_MASK) != 0 ||
            s->row == TES__ROW_PENDING)
            continue;
        tes_entity_t e = tes_entity_make(it->priv_cursor, s->generation);
        uint32_t next[TES_MAX_TERMS];
        if (!tes__query_match_sparse(q, e, -1, 0, n ? next : pos))
            continue;
        if (n && !tes__query_run_continues(q, pos, (uint32_t)n, e, true))
            break; /* it matches, but starts the next chunk */
        it->priv_scratch[n++] = e;
    }
    if (!n)
        return false;
    tes__query_sparse_fields(q, pos, it->priv_fields);
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse) /* root entities have no table component */
            it->priv_fields[i] = NULL;
    it->count = n;
    it->entities = it->priv_scratch;
    return true;
}

/* priv_hidden_count of a driven walk whose hidden positions are not listed
 * yet. They are listed by its first step rather than when it starts: the
 * iterator is then already where the caller keeps it, and iter_start's
 * copy never has its address taken, which would make returning it by value
 * a copy of the whole iterator. The pools cannot change in between, nor
 * while the iteration lives (structural changes wait), so the positions
 * stay where they were found. */
#define HIDDEN_UNLISTED (TES__FILTERS_TEST - 1)

/* The first position at or after p that the walk steps over (the hidden
 * positions listed by the walk's first step), UINT32_MAX for none. */
static uint32_t next_hidden(tes_iter_t *it, uint32_t p)
{
    uint32_t n = it->priv_hidden_count == TES__FILTERS_TEST ? 0 : it->priv_hidden_count;
    while (it->priv_hidden_next < n && it->priv_hidden[it->priv_hidden_next] < p)
        it->priv_hidden_next++;
    return it->priv_hidden_next < n ? it->priv_hidden[it->priv_hidden_next] : UINT32_MAX;
}

/* Runs of the driving pool's packed array whose entities match (DRIVEN
 * mode). A sparse-only query never reads an entity's table (skip_tables):
 * its default filters come from the filter index, as the positions of the
 * hidden entities, listed when the iteration started, that end runs (no
 * test per entity), or when there were too many of them as one byte
 * tested per entity. Other queries check the table's table-level terms. */
static bool next_driven_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    const tes__entity_index_t *ei = &q->w->entities;
    int32_t d = it->priv_driver;
    const tes__sparse_set_t *set = &q->terms[d].info->store.set;
    const struct tes__filters *f = q->filters;
    if (it->priv_hidden_count == HIDDEN_UNLISTED)
        it->priv_hidden_count = tes__filters_positions(f, q->filter_mask, set, it->priv_hidden,
                                                       TES_ITER_HIDDEN);
    uint8_t hide = it->priv_hidden_count == TES__FILTERS_TEST ? q->filter_mask : 0;
    const tes__slot_t *first = NULL;
    uint32_t pos[TES_MAX_TERMS];
    uint32_t p = it->priv_cursor;
    uint32_t hidden = next_hidden(it, p);
    for (; p < set->count; p++) {
        tes_entity_t e = set->packed[p];
        if (p == hidden) {
            hidden = next_hidden(it, p + 1);
            continue;
        }
        if (tes__sparse_is_tombstone(e))
            continue;
        if (q->skip_tables ? hide && tes__filters_hide(f, hide, e)
                           : !(first = tes__entity_slot(ei, e)) ||
                                 !q->table_ok[tes__slot_table(q->w, first)->id])
            continue;
        if (tes__query_match_sparse(q, e, d, p, pos))
            break;
    }
    if (p >= set->count) {
        it->priv_cursor = p;
        return false;
    }
    /* The run ends before the next hidden entity (hidden > p here). */
    uint32_t last = tes__chunk_end(p, set->count); /* it.count is an int32_t */
    if (hidden < last)
        last = hidden;
    uint32_t k = 1;
    if (q->skip_tables && q->and_only) {
        /* Two copies of the run loop: the common one tests no byte. */
        if (hide)
            k = tes__query_packed_run(q, q->sparse_terms, q->sparse_count, pos, set->packed + p,
                                      last - p, f->tags, f->cap, hide);
        else
            k = tes__query_packed_run(q, q->sparse_terms, q->sparse_count, pos, set->packed + p,
                                      last - p, NULL, 0, 0);
    } else {
        for (; p + k < last; k++) {
            tes_entity_t e = set->packed[p + k];
            if (tes__sparse_is_tombstone(e))
                break;
            if (q->skip_tables) {
                if (hide && tes__filters_hide(f, hide, e))
                    break;
            } else {
                const tes__slot_t *slot = tes__entity_slot(ei, e);
                if (!slot || !q->table_ok[tes__slot_table(q->w, slot)->id] ||
                    !tes__query_rows_continue(q, first, k, slot))
                    break;
            }
            if (!tes__query_run_continues(q, pos, k, e, false))
                break;
        }
    }
    /* A short run: gather a longer chunk if the query can (gather.h). */
    if (k < TES__GATHER_MIN && q->gather_k && q->skip_tables && it->priv_gather_count != TES__GATHER_OFF &&
        tes__gather_chunk(it, set->packed + p, last - p, p, pos, k, hide, false)) {
        it->priv_cursor = p + (uint32_t)it->count;
        return true;
    }
    tes__query_sparse_fields(q, pos, it->priv_fields);
    if (!q->skip_tables)
        tes__query_table_fields(q, first, it->priv_fields);
    it->count = (int32_t)k;
    it->entities = set->packed + p;
    it->priv_cursor = p + k;
    return true;
}

/* An iterator over q positioned before its first chunk; opens no deferral
 * level. */
static tes_iter_t iter_start(tes_query_t *q)
{
    /* Only the state fields are set: the fields array and the scratch are
     * written before they are read, and zeroing ~250 bytes per iteration
     * is measurable on queries that match few entities. */
    tes_iter_t it;
    it.count = 0;
    it.entities = NULL;
    it.world = q ? q->w : NULL;
    it.delta_time = 0;
    it.ctx = NULL;
    it.thread = 0;
    it.priv_query = q;
    it.priv_cursor = 0;
    it.priv_row = 0;
    it.priv_driver = -1;
    it.priv_done = q == NULL;
    it.priv_phase = PHASE_TABLES;
    it.priv_gather_count = 0;
    it.priv_gather_mask = 0;
    it.priv_hidden_count = 0;
    it.priv_hidden_next = 0;
    if (!q)
        return it;
    if (q->group) {
        it.priv_phase = PHASE_GROUP;
        it.priv_driver = tes__group_pool(q->group);
    }
    else if (q->mode == TES__QUERY_DRIVEN) {
        it.priv_phase = PHASE_DRIVEN;
        it.priv_driver = tes__query_driver(q);
        if (q->filters)
            it.priv_hidden_count = HIDDEN_UNLISTED; /* listed by the first step */
    } else
        it.priv_phase = PHASE_TABLES;
    return it;
}

/* True inside the level of non-structural systems (tes_progress): nothing
 * can be queued there (structural calls are refused), so a walk needs no
 * deferral level, and must not open one: workers walk at the same time and
 * the world's depth counter is not synchronised. The state holds for the
 * whole of such a system's run, so start and end see the same answer. */
static bool walk_in_frame_level(const tes_world_t *w)
{
    return (w->unquiet.refuse & TES__REFUSE_STRUCTURAL) != 0;
}

tes_iter_t tes_query_iter(tes_query_t *q)
{
    tes_iter_t it = iter_start(q);
    if (!q || walk_in_frame_level(q->w))
        return it;
    /* Inside a hook the world is in the middle of a change (a value hook
     * may run halfway through a row move), and an iterator's deferral level
     * would make the rest of that change queue up: refused, with an
     * iterator that is already finished. */
    if (tes__in_hook(q->w) || q->w->defer.flushing) {
        tes__fail(q->w, TES_ERR_BUSY);
        it.priv_done = 1;
        return it;
    }
    tes__world_depth_up(q->w);
    atomic_fetch_add_explicit(&q->iters_open, 1, memory_order_relaxed);
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
    /* A zeroed iterator (never started) counts as finished. */
    if (!it || it->priv_done || !it->priv_query || it->priv_phase == TES__ITER_DETACHED)
        return false;
    tes__gather_flush(it);
    if (advance(it))
        return true;
    tes_iter_fini(it);
    return false;
}

void *tes_field(const tes_iter_t *it, int32_t term)
{
    /* No chunk yet (before the first tes_iter_next) or none any more: the
     * field array holds nothing to read, and `entities` says so. */
    if (!it || it->priv_done || !it->priv_query || !it->entities)
        return NULL;
    if (term < 0 || term >= it->priv_query->term_count) {
        tes__fail_detail(it->world, TES_ERR_INVALID, "field index %d is outside the query's %d terms",
                         (int)term, (int)it->priv_query->term_count);
        return NULL;
    }
    return it->priv_fields[term];
}

void *tes_field_checked(const tes_iter_t *it, int32_t term, size_t size)
{
    if (!it || !it->priv_query)
        return NULL; /* a zeroed iterator: no world to record on */
    const tes_query_t *q = it->priv_query;
    if (term < 0 || term >= q->term_count) {
        tes__fail_detail(it->world, TES_ERR_INVALID, "field index %d is outside the query's %d terms",
                         (int)term, (int)q->term_count);
        return NULL;
    }
    const tes__component_t *info = q->terms[term].info;
    if (size != info->size) {
        tes__fail_detail(it->world, TES_ERR_INVALID,
                         "field %d is component '%.64s' of size %u, the caller's type has size %zu",
                         (int)term, info->name, info->size, size);
        return NULL;
    }
    return tes_field(it, term);
}

void tes_iter_fini(tes_iter_t *it)
{
    if (!it || it->priv_done || it->priv_phase == TES__ITER_DETACHED)
        return;
    if (it->priv_query)
        tes__gather_flush(it);
    it->priv_done = 1;
    it->count = 0;
    it->entities = NULL;
    /* A zeroed iterator, or one walked by a non-structural system, opened
     * no deferral level. */
    if (it->priv_query && !walk_in_frame_level(it->world)) {
        atomic_fetch_sub_explicit(&it->priv_query->iters_open, 1, memory_order_relaxed);
        tes__defer_end(it->world);
    }
}

tes_iter_t tes__query_walk_start(tes_query_t *q) { return iter_start(q); }

bool tes__query_walk_next(tes_iter_t *it) { return !it->priv_done && advance(it); }

int32_t tes_query_count(tes_query_t *q)
{
    if (!q)
        return 0;
    int64_t n = 0;
    if (q->group) {
        n = q->group->owning ? q->group->length : q->group->members.count;
    } else if (q->mode == TES__QUERY_TABLE && !q->has_sparse) {
        for (uint32_t i = 0; i < q->match_count; i++)
            n += q->matches[i].table->count;
    } else {
        /* No user code runs during this walk, so it needs no deferral level
         * (and works inside hooks, where tes_query_iter is refused). */
        tes_iter_t it = iter_start(q);
        while (advance(&it))
            n += it.count;
    }
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}
