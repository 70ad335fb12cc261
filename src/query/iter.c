/*
 * The public iteration: tes_query_iter, tes_iter_next, the fields and
 * tes_iter_fini, and the same walks for internal callers without a
 * deferral level (iter.h). Every chunk satisfies one contract: each data
 * term's field is a plain array of it.count values aligned with
 * it.entities. query.h describes the walks; the walk is chosen once, when
 * the iteration starts (base_walk.h), and this file only steps it: the
 * by-depth walk (cascade_iter.c) or a base walk (base_walk.c), which
 * stand below it. tes_iter_next steps the whole-table walk itself (W5:
 * many small tables, so a chunk costs one compare of the phase and
 * base_walk.h's inline step). A live iterator holds the world in deferred
 * mode; the last one to finish applies the queued changes.
 */
#include "query/iter.h"

#include "query/base_walk.h"
#include "query/cascade.h"
#include "query/gather.h"
#include "world/defer.h"
#include "world/last_error.h"
#include "world/quiet.h"

static tes_iter_t iter_start(tes_query_t *q) { return tes__walk_start(q, q && q->cascade_walk); }

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

/* The next chunk of the walk the iteration chose when it started: the
 * by-depth walk's, or a base walk's. */
static bool advance(tes_iter_t *it)
{
    if (it->priv_phase == TES__WALK_CASCADE)
        return tes__cascade_next(it);
    return tes__query_base_next(it);
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
    if (it && it->priv_phase == TES__WALK_WHOLE && tes__walk_whole_next(it, it->priv_query))
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
        tes__fail_detail(it->world, TES_ERR_INVALID, "tes_field: field index %d is outside the query's %d terms",
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
        tes__fail_detail(it->world, TES_ERR_INVALID, "tes_field_checked: field index %d is outside the query's %d terms",
                         (int)term, (int)q->term_count);
        return NULL;
    }
    const tes__component_t *info = q->terms[term].info;
    if (size != info->size) {
        tes__fail_detail(it->world, TES_ERR_INVALID,
                         "tes_field_checked: field %d is component '%.64s' of size %u, the caller's type has size %zu",
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
