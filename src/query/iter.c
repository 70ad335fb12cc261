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
        if (!q->has_sparse) {
            it->priv_cursor++;
            if (!t->count)
                continue;
            for (int32_t i = 0; i < q->term_count; i++)
                it->priv_fields[i] = m->column[i] >= 0 ? t->columns[m->column[i]].data : NULL;
            it->count = (int32_t)t->count;
            it->entities = t->entities;
            return true;
        }
        void *ptrs[TES_MAX_TERMS] = {0};
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
    uint32_t end = pos + 1, last = tes__chunk_end(pos, set->count);
    void *prev[TES_MAX_TERMS], *next[TES_MAX_TERMS] = {0};
    memcpy(prev, ptrs, sizeof prev);
    while (end < last && !tes__sparse_is_tombstone(set->packed[end]) &&
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

/* Packed positions of e in every term's store (TES_NULL_INDEX if absent);
 * the driver's is known. False if e fails an AND or NOT term. */
static bool sparse_positions(const tes_query_t *q, int32_t driver, uint32_t at, tes_entity_t e,
                             uint32_t *pos)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        uint32_t p = i == driver ? at : tes__sparse_set_find(&t->info->store.set, e);
        if ((t->oper == TES_AND && p == TES_NULL_INDEX) ||
            (t->oper == TES_NOT && p != TES_NULL_INDEX))
            return false;
        pos[i] = p;
    }
    return true;
}

/* True when e, the entity k positions after a run's first in the driving
 * pool, extends the run: it satisfies every term and each data term's value
 * sits k positions after the run's first value, on the same data page. For
 * an AND term that is one compare against the store's packed array (a
 * sequential read, where a lookup would chase the sparse array). */
static bool run_continues(const tes_query_t *q, int32_t driver, const uint32_t *start, uint32_t k,
                          tes_entity_t e)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        const tes__sparse_store_t *st = &t->info->store;
        uint64_t at = (uint64_t)start[i] + k; /* 64-bit: never wraps */
        if (i == driver)
            goto same_page;
        if (t->oper == TES_AND && at < st->set.count && st->set.packed[at] == e)
            goto same_page;
        uint32_t p = tes__sparse_set_find(&st->set, e);
        if (t->oper == TES_NOT) {
            if (p != TES_NULL_INDEX)
                return false;
            continue;
        }
        if (!t->data) { /* a tag: presence is all that matters */
            if (t->oper == TES_AND && p == TES_NULL_INDEX)
                return false;
            continue;
        }
        if (start[i] == TES_NULL_INDEX ? p != TES_NULL_INDEX : p != at)
            return false;
        if (p == TES_NULL_INDEX)
            continue;
    same_page:
        if (t->data && (at >> st->page_shift) != (start[i] >> st->page_shift))
            return false;
    }
    return true;
}

/* The driven walk when every term is sparse and no table is filtered out:
 * an entity's table is then irrelevant, so only the stores are read, and
 * runs are found by comparing packed positions. */
static bool next_sparse_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    int32_t d = it->priv_driver;
    const tes__sparse_set_t *set = &q->terms[d].info->store.set;
    uint32_t start[TES_MAX_TERMS];
    uint32_t p = it->priv_cursor;
    while (p < set->count &&
           (tes__sparse_is_tombstone(set->packed[p]) || !sparse_positions(q, d, p, set->packed[p], start)))
        p++;
    if (p >= set->count) {
        it->priv_cursor = p;
        return false;
    }
    uint32_t end = p + 1;
    if (q->and_only) {
        /* Every term is AND: the run goes on while each store holds the
         * driver's next entity at its next position, up to the first end of
         * a store or of a data page. Tombstones never equal an entity. */
        const tes_entity_t *packed[TES_MAX_TERMS];
        uint32_t limit = tes__chunk_end(p, set->count) - p;
        for (int32_t i = 0; i < q->term_count; i++) {
            const tes__sparse_store_t *st = &q->terms[i].info->store;
            packed[i] = st->set.packed + start[i];
            uint64_t room = st->set.count - start[i];
            if (q->terms[i].data) {
                /* 64-bit: the last page of the position space ends at 2^32. */
                uint64_t page_end = ((uint64_t)(start[i] >> st->page_shift) + 1) << st->page_shift;
                if (page_end - start[i] < room)
                    room = page_end - start[i];
            }
            if (room < limit)
                limit = (uint32_t)room;
        }
        uint32_t k = 1;
        for (; k < limit; k++) {
            tes_entity_t e = set->packed[p + k];
            if (tes__sparse_is_tombstone(e)) /* the driver always "holds" it */
                break;
            int32_t i = 0;
            while (i < q->term_count && packed[i][k] == e)
                i++;
            if (i < q->term_count)
                break;
        }
        end = p + k;
    } else {
        uint32_t last = tes__chunk_end(p, set->count);
        while (end < last && !tes__sparse_is_tombstone(set->packed[end]) &&
               run_continues(q, d, start, end - p, set->packed[end]))
            end++;
    }
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        it->priv_fields[i] = t->data && start[i] != TES_NULL_INDEX
                                 ? tes__sparse_store_at(&t->info->store, start[i])
                                 : NULL;
    }
    it->count = (int32_t)(end - p);
    it->entities = set->packed + p;
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
    if (!q)
        return it;
    tes__query_settle_group(q);
    if (q->group)
        it.priv_phase = PHASE_GROUP;
    else if (q->mode == TES__QUERY_DRIVEN) {
        it.priv_phase = PHASE_DRIVEN;
        it.priv_driver = pick_driver(q);
    } else
        it.priv_phase = PHASE_TABLES;
    return it;
}

tes_iter_t tes_query_iter(tes_query_t *q)
{
    tes_iter_t it = iter_start(q);
    if (!q)
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
    case PHASE_DRIVEN:
        /* Tables can appear mid-iteration (deferred spawns do not create
         * any, but hooks may read others), so the choice is made per chunk. */
        if (it->priv_query->sparse_only && !it->priv_query->tables_failing)
            return next_sparse_chunk(it);
        return next_driven_chunk(it);
    case PHASE_GROUP: return tes__group_next(it);
    }
    return false;
}

bool tes_iter_next(tes_iter_t *it)
{
    /* A zeroed iterator (never started) counts as finished. */
    if (!it || it->priv_done || !it->priv_query || it->priv_phase == TES__ITER_DETACHED)
        return false;
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
    it->priv_done = 1;
    it->count = 0;
    it->entities = NULL;
    if (it->priv_query) /* a zeroed iterator opened no deferral level */
        tes__defer_end(it->world);
}

tes_iter_t tes__query_walk_start(tes_query_t *q) { return iter_start(q); }

bool tes__query_walk_next(tes_iter_t *it) { return !it->priv_done && advance(it); }

int32_t tes_query_count(tes_query_t *q)
{
    if (!q)
        return 0;
    int64_t n = 0;
    if (!q->group && q->mode == TES__QUERY_TABLE && !q->has_sparse) {
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
