/*
 * The base walks (query.h describes every walk): the start that chooses an
 * iteration's walk once, and the step of every walk but the by-depth one.
 * The table, root and packed walks are written here; the change-filtered
 * table walk (changes_iter.c) and the owned walk (group.c) stand below and
 * are stepped from here. The by-depth walk (cascade_iter.c) stands above:
 * it collects its matches with a base walk, and the public iteration
 * (iter.c) above both steps one or the other. So nothing here names a
 * file above it. Two pieces are inline, for iter.c: the start (see
 * tes__walk_start) and the whole-table step, which tes_iter_next takes
 * itself (W5: many small tables, so a step is one compare of the phase,
 * the next non-empty table, and one load per field through the column's
 * data pointer the match keeps).
 */
#ifndef TES_QUERY_BASE_WALK_H
#define TES_QUERY_BASE_WALK_H

#include "query/changes_iter.h"
#include "query/filter.h"
#include "query/group.h"
#include "query/query.h"

/* priv_hidden_count of a packed walk whose hidden positions are not listed
 * yet. They are listed by its first step rather than when it starts: the
 * iterator is then already where the caller keeps it, and the start's
 * copy never has its address taken, which would make returning it by value
 * a copy of the whole iterator. The pools cannot change in between, nor
 * while the iteration lives (structural changes wait), so the positions
 * stay where they were found. */
#define TES__HIDDEN_UNLISTED (TES__FILTERS_TEST - 1)

/* The next chunk of a table walk without sparse terms: a whole table, the
 * next non-empty one in the cache, each field pointing at its column.
 * False when the cache is exhausted. W5 (many small tables) pays this once
 * per chunk, so it is a leaf that tes_iter_next (iter.c) inlines. */
static inline bool tes__walk_whole_next(tes_iter_t *it, const tes_query_t *q)
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

/* An iterator over q positioned before its first chunk, its walk chosen;
 * opens no deferral level. by_depth: the by-depth walk (cascade_iter.c),
 * only marked here, since it collects its matches with a base walk of its
 * own. Inline: the iterator is built in the caller's variable only while
 * its address is never taken, and a call into another file would return
 * it through a copy of its ~4.6 KB. */
static inline tes_iter_t tes__walk_start(tes_query_t *q, bool by_depth)
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
            it.priv_hidden_count = TES__HIDDEN_UNLISTED; /* listed by the first step */
    }
    return it;
}

/* The walk q would use without its by-depth order: the by-depth walk
 * collects its matches with it. */
tes_iter_t tes__query_base_start(tes_query_t *q);
/* The next chunk of the walk the iteration chose when it started (not the
 * by-depth walk), or false at its end. The whole-table walk comes here
 * only at its end from tes_iter_next, which steps it itself. */
bool tes__query_base_next(tes_iter_t *it);

#endif
