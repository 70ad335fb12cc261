/*
 * Chunk iteration. Every chunk satisfies one contract: each data term's
 * field is a plain array of it.count values aligned with it.entities.
 * query.h describes the walks; the table, root and packed walks live
 * here, the others in changes_iter.c, group.c and cascade_iter.c, and the
 * walk is chosen once, when the iteration starts. Which entities belong
 * to a chunk is decided by the one matcher (tes__query_match), so the
 * walks differ only in where their entities come from:
 * - table walk: the rows of the cached tables. With no sparse term a chunk
 *   is a whole table, and tes_iter_next steps that walk itself (W5: many
 *   small tables, so a step is one compare of the phase, the next
 *   non-empty table, and one load per field through the column's data
 *   pointer the match keeps);
 * - root walk: root entities read from the entity index, a few at a time,
 *   copied to the iterator's scratch array (the virtual root owns no rows);
 * - packed walk: a packed array, the driving pool's or a non-owning
 *   group's. A sparse-only query's default filters cost it nothing per
 *   entity while few entities are disabled or prefabs: the iteration lists
 *   their positions in the pool on its first step (filter.h, at most
 *   TES_ITER_HIDDEN, kept in the iterator, so nothing is allocated and no
 *   shared state is written) and runs end before them; with more of them
 *   the matcher tests each entity's byte in the filter index.
 * A live iterator holds the world in deferred mode; the last one to finish
 * applies the queued changes.
 */
#include <string.h>

#include "query/changes_iter.h"
#include "query/filter.h"
#include "query/gather.h"
#include "query/group.h"
#include "query/query.h"
#include "world/quiet.h"

/* The next chunk of a table walk without sparse terms: a whole table, the
 * next non-empty one in the cache, each field pointing at its column.
 * False when the cache is exhausted. W5 (many small tables) pays this once
 * per chunk, so it is a leaf that tes_iter_next inlines. */
static inline bool next_whole_table(tes_iter_t *it, const tes_query_t *q)
{
    uint32_t c = it->priv_cursor;
    const tes__query_match_t *m;
    const tes__table_t *t;
    do {
        if (c >= q->match_count)
            return false;
        m = &q->matches[c++];
        t = m->table;
    } while (!t->count);
    it->priv_cursor = c;
    for (int32_t i = 0; i < q->term_count; i++) /* a NULL where no column */
        it->priv_fields[i] = *m->data[i];
    it->count = (int32_t)t->count;
    it->entities = t->entities;
    return true;
}

/* The next chunk of the table walk, or false when the cache is exhausted:
 * with sparse terms, the next run of rows the matcher accepts. */
static bool next_table_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    if (!q->has_sparse)
        return next_whole_table(it, q);
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

/* priv_hidden_count of a packed walk whose hidden positions are not listed
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
        if (it->priv_hidden_count == HIDDEN_UNLISTED)
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

/* An iterator over q positioned before its first chunk; opens no deferral
 * level. */
static tes_iter_t iter_start_as(tes_query_t *q, bool by_depth)
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
    it.depth = 0;
    it.priv_cascade = NULL;
    it.priv_query = q;
    it.priv_cursor = 0;
    it.priv_row = 0;
    it.priv_driver = -1;
    it.priv_done = q == NULL;
    it.priv_phase = q ? TES__WALK_TABLES : TES__WALK_DONE;
    it.priv_gather_count = 0;
    it.priv_gather_mask = 0;
    it.priv_hidden_count = 0;
    it.priv_hidden_next = 0;
    it.priv_change_tick = 0;
    it.priv_change_live = 0;
    it.priv_change_since = 0;
    it.priv_level = 0;
    if (!q)
        return it;
    it.priv_change_since = atomic_load_explicit(&q->change_last, memory_order_relaxed);
    if (q->change_window && !atomic_load_explicit(&q->change_ended, memory_order_relaxed))
        it.priv_change_live = TES__CHANGE_ALL;
    if (by_depth) {
        it.priv_phase = TES__WALK_CASCADE; /* collects with the base walk */
    } else if (q->change_count) {
        it.priv_phase = TES__WALK_CHANGES; /* always over the table cache */
    } else if (q->whole_tables) {
        it.priv_phase = TES__WALK_WHOLE;
    } else if (q->group) {
        it.priv_phase = q->group->owning ? TES__WALK_OWNED : TES__WALK_PACKED;
        it.priv_driver = tes__group_pool(q->group);
    } else if (q->mode == TES__QUERY_DRIVEN) {
        it.priv_phase = TES__WALK_PACKED;
        it.priv_driver = tes__query_driver(q);
        if (q->filters)
            it.priv_hidden_count = HIDDEN_UNLISTED; /* listed by the first step */
    }
    return it;
}

static tes_iter_t iter_start(tes_query_t *q) { return iter_start_as(q, q && q->cascade_walk); }

/* True inside the level of non-structural systems (tes_progress): nothing
 * can be queued there (structural calls are refused), so a walk needs no
 * deferral level, and must not open one: workers walk at the same time and
 * the world's depth counter is not synchronised. The state holds for the
 * whole of such a system's run, so start and end see the same answer. */
static bool walk_in_frame_level(const tes_world_t *w)
{
    return (tes__refuse(w) & TES__REFUSE_STRUCTURAL) != 0;
}

/* The iterator is built in the caller's variable only while its address
 * is never taken here (nor in iter_start): a function that took it would
 * build it in a local and copy all ~4.6 KB on return, which W5 (26 chunks
 * per iteration) pays as about a fifth of its time. */
tes_iter_t tes_query_iter(tes_query_t *q)
{
    tes_iter_t it = iter_start(q);
    if (!q)
        return it;
    if (!walk_in_frame_level(q->w)) {
        /* Inside a hook the world is in the middle of a change (a value
         * hook may run halfway through a row move), and an iterator's
         * deferral level would make the rest of that change queue up:
         * refused, with an iterator that is already finished. */
        if (tes__in_hook(q->w) || q->w->defer.flushing) {
            tes__fail(q->w, TES_ERR_BUSY);
            it.priv_done = 1;
            it.priv_phase = TES__WALK_DONE;
            return it;
        }
        it.priv_level = tes__world_depth_up(q->w);
        tes__world_level_mark(q->w, it.priv_level, (uintptr_t)q);
    }
    if (q->change_window || q->stamp_count) {
        uint32_t tick = 0;
        it.priv_change_live |= tes__changes_iter_begin(q, &tick);
        it.priv_change_tick = tick;
    }
    return it;
}

/* The next chunk of the walk the iteration chose when it started. The
 * whole-table walk comes here only at its end (tes_iter_next steps it). */
static tes__noinline bool advance(tes_iter_t *it)
{
    switch (it->priv_phase) {
    case TES__WALK_WHOLE:
        if (next_whole_table(it, it->priv_query))
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
    case TES__WALK_CASCADE: return tes__cascade_next(it);
    }
    return false;
}

/* tes_iter_next but for the whole-table walk's steps: out of line, so that
 * tes_iter_next's own step saves no register. */
static tes__noinline bool next_other(tes_iter_t *it)
{
    /* A zeroed iterator (never started) counts as finished. */
    if (!it || it->priv_done || !it->priv_query || it->priv_phase == TES__ITER_DETACHED)
        return false;
    if (it->priv_gather_mask) /* the last chunk's gathered values go back */
        tes__gather_flush(it);
    if (advance(it)) {
        if (it->priv_change_live & TES__CHANGE_STAMP)
            tes__changes_stamp_chunk(it);
        return true;
    }
    tes_iter_fini(it);
    return false;
}

bool tes_iter_next(tes_iter_t *it)
{
    /* W5's step: one compare, then the next table (a finished iterator's
     * phase is never WHOLE). */
    if (it && it->priv_phase == TES__WALK_WHOLE && next_whole_table(it, it->priv_query))
        return true;
    return next_other(it);
}

void *tes_field(const tes_iter_t *it, int32_t term)
{
    /* No chunk yet (before the first tes_iter_next) or none any more: the
     * field array holds nothing to read, and `entities` says so (it is NULL
     * in a zeroed iterator, before the first chunk and once finished). */
    if (!it || !it->entities)
        return NULL;
    if ((uint32_t)term >= (uint32_t)it->priv_query->term_count) {
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
    if (it->priv_gather_mask)
        tes__gather_flush(it);
    if (it->priv_cascade)
        tes__cascade_free(it);
    it->priv_done = 1;
    it->priv_phase = TES__WALK_DONE;
    it->count = 0;
    it->entities = NULL;
    /* A zeroed iterator, or one walked by a non-structural system, opened
     * no deferral level. */
    if (it->priv_query && !walk_in_frame_level(it->world)) {
        tes__world_level_mark(it->world, it->priv_level, 0);
        tes__defer_end(it->world);
    }
    /* After the flush: deferred writes of this iteration are stamped
     * inside its window, so the query's next iteration does not see them. */
    if (it->priv_change_live & ~TES__CHANGE_ALL)
        tes__changes_iter_end(it);
}

tes_iter_t tes__query_walk_start(tes_query_t *q) { return iter_start(q); }

bool tes__query_walk_next(tes_iter_t *it)
{
    if (it->priv_done)
        return false;
    if (advance(it))
        return true;
    tes__query_walk_end(it);
    return false;
}

void tes__query_walk_end(tes_iter_t *it)
{
    if (it->priv_query)
        tes__cascade_free(it);
    it->priv_done = 1;
    it->priv_phase = TES__WALK_DONE;
}

tes_iter_t tes__query_base_start(tes_query_t *q)
{
    return iter_start_as(q, false);
}

bool tes__query_base_next(tes_iter_t *it) { return advance(it); }

int32_t tes_query_count(tes_query_t *q)
{
    if (!q)
        return 0;
    int64_t n = 0;
    if (q->group) {
        n = q->group->owning ? q->group->length : q->group->members.count;
    } else if (q->mode == TES__QUERY_TABLE && !q->has_sparse && !q->change_count && !q->cascade_walk) {
        for (uint32_t i = 0; i < q->match_count; i++)
            n += q->matches[i].table->count;
    } else {
        /* No user code runs during this walk, so it needs no deferral level
         * (and works inside hooks, where tes_query_iter is refused). */
        tes_iter_t it = iter_start(q);
        while (tes__query_walk_next(&it))
            n += it.count;
    }
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}
