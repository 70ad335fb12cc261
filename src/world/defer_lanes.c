/*
 * Per-thread command queues ("lanes") for a structural system split over
 * threads. While such a system runs, every queuing call records into the
 * calling thread's own lane — a complete queue with its records and arena
 * (defer.c does the recording; tes__defer_queue picks the lane) — so
 * threads never write the same word, and the world's allocator is called
 * under a lock, one thread at a time. The scheduler notes, for each piece
 * of work, which lane holds its commands and where ([first, end)); when
 * the system ends, the pieces' commands are appended to the world's queue
 * in piece order — row-range order, the order one thread would have queued
 * them — and that queue is applied as any other flush. The result is the
 * same for every thread count.
 *
 * Tuned for systems that queue few changes over many rows (a status tag
 * here and there): lanes keep their memory between frames, and appending
 * costs one record update per command, as queuing on one thread would.
 *
 * If the world's queue cannot grow to take the commands, they are applied
 * one by one in the same order instead (each failing or not on its own,
 * as the flush's own fallback does), so nothing queued is lost.
 *
 * The lanes' memory is kept between frames; each lane's queue sizes its
 * entity lookup to the world's entity slots, as the world's queue does.
 */
#include "world/defer.h"

#include "world/world.h"
#include "world/quiet.h"

int tes__defer_lanes_reserve(tes_world_t *w)
{
    if (w->lanes)
        return TES_OK;
    w->lanes = tes__calloc(&w->alloc, (size_t)w->threads * sizeof *w->lanes);
    if (!w->lanes)
        return TES_ERR_NOMEM;
    /* Lanes serve only structural, parallel systems: their ensures stage. */
    for (int32_t t = 0; t < w->threads; t++)
        w->lanes[t].queue.stage_ensures = true;
    return TES_OK;
}

void tes__defer_stage_ensures(tes_world_t *w, bool on) { w->defer.stage_ensures = on; }

void tes__defer_lanes_begin(tes_world_t *w)
{
    tes__assert(w->lanes && !w->lanes_live);
    tes__defer_open(w); /* structural calls see a deferred world */
    w->lanes_live = true;
    if (w->pool)
        w->alloc.lock = tes__pool_mutex(w->pool);
}

uint32_t tes__defer_lane_index(const tes_world_t *w)
{
    return (uint32_t)tes__pool_thread(w->pool);
}

uint32_t tes__defer_lane_count(const tes_world_t *w, uint32_t lane)
{
    return w->lanes[lane].queue.count;
}

/* The commands of every span, in order, applied at once (the world's queue
 * could not take them). Returns the first error, as a flush does. */
static int apply_spans(tes_world_t *w, const tes__defer_span_t *spans, uint32_t n)
{
    int first_error = TES_OK;
    for (uint32_t s = 0; s < n; s++) {
        const tes__defer_t *q = &w->lanes[spans[s].lane].queue;
        for (uint32_t i = spans[s].first; i < spans[s].end; i++) {
            int before = w->last_error;
            uint64_t epoch = w->fail_epoch;
            tes__detail_t detail = w->detail;
            int rc = tes__defer_apply(w, q, &q->ops[i]);
            if (rc == TES_ERR_STALE) { /* a dropped command is not an error */
                w->last_error = before;
                w->fail_epoch = epoch;
                w->detail = detail;
            } else if (rc && first_error == TES_OK) {
                first_error = rc;
            }
        }
    }
    return first_error;
}

int tes__defer_lanes_end(tes_world_t *w, const tes__defer_span_t *spans, uint32_t n)
{
    tes__assert(w->lanes_live);
    w->lanes_live = false;
    w->alloc.lock = NULL;
    tes__defer_t *d = &w->defer;
    uint64_t total = 0, calls = 0;
    for (uint32_t s = 0; s < n; s++) {
        const tes__defer_t *q = &w->lanes[spans[s].lane].queue;
        total += spans[s].end - spans[s].first;
        for (uint32_t i = spans[s].first; i < spans[s].end; i++)
            calls += q->ops[i].kind == TES__OP_CALL;
    }
    int rc;
    /* The commands' staged values live in the lanes' arenas, which are
     * reset below: they may go into the world's queue only when it is
     * applied right here, i.e. when this level is the last one open (a
     * run that left an iterator unfinished keeps another). */
    if (tes__defer_depth(w) != 1 || total + d->count > UINT32_MAX / 2 ||
        tes__defer_reserve(w, (uint32_t)total) ||
        tes__grow(&w->alloc, (void **)&d->calls, &d->call_cap, (uint64_t)d->call_count + calls,
                  sizeof *d->calls, 8)) {
        /* No room in the world's queue (or it stays open): the same
         * commands, one by one — at once, or queued again with copies of
         * their values when another level stays open. */
        tes__world_depth_down(w);
        bool now = !tes__deferred(w);
        d->flushing = d->flushing || now;
        rc = apply_spans(w, spans, n);
        d->flushing = d->flushing && !now;
    } else {
        for (uint32_t s = 0; s < n; s++) {
            const tes__defer_t *q = &w->lanes[spans[s].lane].queue;
            for (uint32_t i = spans[s].first; i < spans[s].end; i++) {
                const tes__op_t *op = &q->ops[i];
                tes__defer_push_copy(w, op, op->kind == TES__OP_CALL ? &q->calls[op->call] : NULL);
            }
        }
        rc = tes__defer_end(w); /* the staged values still live in the lanes' arenas */
    }
    for (int32_t t = 0; t < w->threads; t++)
        tes__defer_queue_reset(&w->lanes[t].queue);
    return rc;
}

void tes__defer_forget(tes_world_t *w)
{
    tes__defer_t *d = tes__defer_queue(w);
    /* The per-index lookup (ent_at) may still name old records: each use
     * checks the position against ent_count and the record's entity, so
     * it finds nothing until a new record is made. The plain sets not yet
     * recorded are forgotten with the rest (paired), and plain_room is
     * worked out again on the next plain set. */
    d->ent_count = 0;
    d->pair_count = 0;
    d->paired = d->count;
    d->plain_room = 0;
}

void tes__defer_lanes_fini(tes_world_t *w)
{
    if (!w->lanes)
        return;
    for (int32_t t = 0; t < w->threads; t++) {
        tes__lane_t *lane = &w->lanes[t];
        tes__defer_queue_release(&lane->queue, &w->alloc);
        tes__free(&w->alloc, lane->scratch, lane->scratch_size);
    }
    tes__free(&w->alloc, w->lanes, (size_t)w->threads * sizeof *w->lanes);
    w->lanes = NULL;
}
