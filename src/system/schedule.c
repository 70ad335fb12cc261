/*
 * The scheduler: levels from access, then one frame, level by level. Its
 * entry points are declared in schedule.h; it reads systems through their
 * layout (system_types.h) and never calls system.c, which stands above it.
 *
 * Before a level runs, the calling thread walks each of its systems' queries
 * once and captures the chunks (entities and field addresses). Nothing can
 * move them while the level runs: its systems may not make structural
 * changes (structural calls are refused exactly as from a hook). The
 * captured work is cut into units — a whole system, or a row range of one
 * chunk of a `parallel` system (so one big table still spreads) — and the
 * threads take units from an atomic cursor. Which thread runs which unit
 * changes nothing: units of one level touch disjoint data.
 *
 * A structural system is a level of its own. Without `parallel` it runs
 * on the calling thread with a live iterator, its changes queued and
 * applied when it ends. Declared `parallel` too, it is cut into blocks of
 * SPLIT_ROWS rows from each chunk's start — the same blocks for every
 * thread count, one call of run each — and each thread records its
 * changes into its own command queue (defer_lanes.c), noting for each
 * block where its commands lie; when the system ends they are applied in
 * block order, which is row order, so the queue is the one a single thread
 * would have built. What such a system's run can observe must not depend
 * on which thread ran which block either: its queue forgets its records
 * before each block (a deferred tes_ensure sees only the same call's
 * commands), and tes_ensure stages a value even for a component the
 * entity has (the stage_ensures mode of the lanes' queues, and of the
 * world's queue while the blocks run on the calling thread), so no write
 * lands before the system
 * ends. Without workers, or when memory for the plan is short, the same
 * blocks run on the calling thread into the world's queue.
 *
 * Tuned for frames of tens of systems over up to millions of entities: a
 * level with a single unit, or a world without workers, runs inline with no
 * wake-up; a system whose query matches nothing costs one query walk.
 *
 * A level ends when its last unit does, so units are cut by cost, not by
 * rows alone: each system's time per row is measured on the frames it ran
 * over threads, a level is cut into about eight units per thread of equal
 * estimated cost, and the units run costliest first, so the last ones to
 * start are the cheapest and the threads finish together. (Before a
 * system has been measured, a row counts 1 ns.) Only the cut and the order
 * depend on the clock; results never do.
 * When memory for captured chunks or units cannot be had, the level runs on
 * the calling thread with live iterators instead: slower, same result.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/thread_pool.h"
#include "query/changes_iter.h"
#include "world/changes.h"
#include "world/defer.h"
#include "system/schedule.h"
#include "world/quiet.h"

uint64_t tes__clock_ns(void)
{
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tes__clock_since(uint64_t start)
{
    uint64_t now = tes__clock_ns();
    return now > start && now - start < (1ull << 40) ? now - start : 0;
}

static bool shares(const tes_comp_t *a, int32_t na, const tes_comp_t *b, int32_t nb)
{
    for (int32_t i = 0; i < na; i++)
        for (int32_t j = 0; j < nb; j++)
            if (a[i] == b[j])
                return true;
    return false;
}

/* Write/write or read/write on one component, or either is structural. */
static bool conflict(const tes_system_t *a, const tes_system_t *b)
{
    if (a->structural || b->structural)
        return true;
    return shares(a->writes, a->write_count, b->writes, b->write_count) ||
           shares(a->writes, a->write_count, b->reads, b->read_count) ||
           shares(a->reads, a->read_count, b->writes, b->write_count);
}

/* Run order: by level, then by creation. */
static bool runs_before(const tes__systems_t *ss, uint32_t a, uint32_t b)
{
    uint32_t la = ss->items[a]->level, lb = ss->items[b]->level;
    return la != lb ? la < lb : a < b;
}

int tes__schedule(tes_world_t *w, tes__systems_t *ss)
{
    (void)w;
    for (uint32_t i = 0; i < ss->count; i++) {
        tes_system_t *s = ss->items[i];
        s->level = 0;
        for (uint32_t j = 0; j < i; j++)
            if (ss->items[j]->level + 1 > s->level && conflict(ss->items[j], s))
                s->level = ss->items[j]->level + 1;
        ss->order[i] = i;
    }
    /* Insertion sort by (level, creation): stable, no allocation, and the
     * list is rebuilt only when systems come or go. */
    for (uint32_t i = 1; i < ss->count; i++) {
        uint32_t v = ss->order[i], j = i;
        while (j > 0 && runs_before(ss, v, ss->order[j - 1])) {
            ss->order[j] = ss->order[j - 1];
            j--;
        }
        ss->order[j] = v;
    }
    ss->dirty = false;
    return TES_OK;
}

/* An iterator around rows [begin, end) of a captured chunk. */
static void detached_iter(const tes__systems_t *ss, const tes_system_t *s,
                          const tes__chunk_t *c, int32_t begin, int32_t end, int32_t thread,
                          tes_iter_t *it)
{
    it->count = end - begin;
    it->entities = c->entities + begin;
    it->world = s->w;
    it->delta_time = ss->delta_time;
    it->ctx = s->ctx;
    it->thread = thread;
    it->depth = 0; /* by-depth systems run live, never detached */
    it->priv_cascade = NULL;
    it->priv_query = s->query;
    it->priv_phase = TES__ITER_DETACHED;
    it->priv_done = 0;
    for (int32_t i = 0; i < s->term_count; i++)
        it->priv_fields[i] =
            c->fields[i] ? (char *)c->fields[i] + (size_t)begin * s->field_size[i] : NULL;
}

/* A system without terms: one call with count 0. */
static void run_empty(const tes__systems_t *ss, tes_system_t *s, int32_t thread)
{
    tes_iter_t it = {0};
    it.world = s->w;
    it.delta_time = ss->delta_time;
    it.ctx = s->ctx;
    it.thread = thread;
    it.priv_done = 1;
    s->run(&it);
}

static void run_unit(const tes__systems_t *ss, const tes__unit_t *u, int32_t thread)
{
    tes_system_t *s = u->system;
    if (!s->query) {
        run_empty(ss, s, thread);
        return;
    }
    tes_iter_t it;
    if (u->chunk != TES__ALL_CHUNKS) {
        detached_iter(ss, s, &s->chunks[u->chunk], u->begin, u->end, thread, &it);
        s->run(&it);
        return;
    }
    for (uint32_t i = 0; i < s->chunk_count; i++) {
        detached_iter(ss, s, &s->chunks[i], 0, s->chunks[i].count, thread, &it);
        s->run(&it);
    }
}

/* Holds the change window of a system's iteration open (see change_held)
 * until end_held: a system's window ends after its changes are applied,
 * however it ran (captured, live or in blocks), so what it sees next frame
 * never depends on which way that was. */
static void hold_window(tes_system_t *s, tes_iter_t *it)
{
    if (it->priv_change_live & TES__CHANGE_WINDOW) {
        it->priv_change_live |= TES__CHANGE_HOLD;
        s->change_held = true;
    }
}

/* Ends the change window held for s (see change_held). */
static void end_held(tes_system_t *s)
{
    if (s->change_held) {
        s->change_held = false;
        tes__query_changes_end(s->query);
    }
}

/* Runs s on the calling thread with a live iterator (structural systems,
 * and the fallback when capturing failed). Its structural changes are
 * queued under a deferral level of its own and applied when it ends.
 * Returns the first error those changes met. */
static int run_live(tes_world_t *w, const tes__systems_t *ss, tes_system_t *s)
{
    s->rows = 0;
    tes__defer_open(w);
    uint8_t refuse = tes__refuse(w);
    if (!s->structural)
        tes__world_refuse_set(w, refuse | TES__REFUSE_STRUCTURAL);
    else if (s->parallel)
        tes__world_refuse_set(w, refuse | TES__REFUSE_CREATE);
    if (!s->query) {
        run_empty(ss, s, 0);
    } else {
        tes_iter_t it = tes_query_iter(s->query);
        hold_window(s, &it);
        it.delta_time = ss->delta_time;
        it.ctx = s->ctx;
        while (tes_iter_next(&it)) {
            s->rows += it.count;
            s->run(&it);
        }
    }
    tes__world_refuse_set(w, refuse);
    int rc = tes__defer_end(w);
    end_held(s); /* after its changes were applied */
    return rc;
}

/* True when p lies inside the iterator object it: storage the walk reuses
 * for its next chunk and that is gone with the iterator. */
static bool in_iterator(const tes_iter_t *it, const void *p)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)it;
    return a >= lo && a - lo < sizeof *it;
}

/* Captures s's chunks. The walk is over before any of them is used, so no
 * address a chunk keeps may lie in the iterator: its fields never do (it
 * gathers no values into its own buffer, tes__iter_keep_fields), and the
 * handles of runs the walk holds in the iterator itself (root entities)
 * are copied into s->handles. Those chunks get their address once the
 * walk is over (s->handles may move while it grows), in order: their
 * copies lie one after another. TES_OK or TES_ERR_NOMEM (s->chunk_count
 * is then 0). */
static int capture(tes_world_t *w, tes_system_t *s)
{
    s->chunk_count = 0;
    s->handle_count = 0;
    tes_iter_t it = tes_query_iter(s->query);
    tes__iter_keep_fields(&it); /* the fields are used after the walk */
    hold_window(s, &it);
    while (tes_iter_next(&it)) {
        bool copy = in_iterator(&it, it.entities);
        if (tes__grow(&w->alloc, (void **)&s->chunks, &s->chunk_cap,
                      (uint64_t)s->chunk_count + 1, sizeof *s->chunks, 4) ||
            (copy && tes__grow(&w->alloc, (void **)&s->handles, &s->handle_cap,
                               (uint64_t)s->handle_count + (uint32_t)it.count,
                               sizeof *s->handles, 64))) {
            tes_iter_fini(&it);
            s->chunk_count = 0;
            return TES_ERR_NOMEM;
        }
        tes__chunk_t *c = &s->chunks[s->chunk_count++];
        c->count = it.count;
        c->entities = it.entities;
        if (copy) {
            memcpy(s->handles + s->handle_count, it.entities, (size_t)it.count * sizeof *it.entities);
            s->handle_count += (uint32_t)it.count;
            c->entities = NULL; /* set below */
        }
        for (int32_t i = 0; i < s->term_count; i++) {
            c->fields[i] = tes_field(&it, i);
            tes__assert(!c->fields[i] || !in_iterator(&it, c->fields[i]));
        }
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < s->chunk_count; i++) {
        if (!s->chunks[i].entities) {
            s->chunks[i].entities = s->handles + at;
            at += (uint32_t)s->chunks[i].count;
        }
    }
    return TES_OK;
}


static double row_cost(const tes_system_t *s) { return s->ns_per_row > 0 ? s->ns_per_row : 1.0; }

/* Learns s's cost per row from the level that just ran. */
static void learn_cost(tes_system_t *s, uint64_t ns)
{
    if (s->rows <= 0 || ns == 0)
        return;
    double now = (double)ns / (double)s->rows;
    s->ns_per_row = s->ns_per_row > 0 ? 0.75 * s->ns_per_row + 0.25 * now : now;
}

/* Records one frame's run of s for tes_system_stats: ns of thread time,
 * s->rows matched. */
static void record_run(tes_system_t *s, uint64_t ns)
{
    s->stat_matched = s->rows;
    s->stat_runs++;
    s->stat_last_ns = ns;
    s->stat_total_ns += ns;
}

static int push_unit(tes_world_t *w, tes__systems_t *ss, tes__unit_t u)
{
    if (tes__grow(&w->alloc, (void **)&ss->units, &ss->unit_cap, (uint64_t)ss->unit_count + 1,
                  sizeof *ss->units, 16))
        return TES_ERR_NOMEM;
    u.seq = ss->unit_count;
    ss->units[ss->unit_count++] = u;
    return TES_OK;
}

/* A system whose query walks by depth (TES_QUERY_CASCADE or a parent
 * term): a chunk's parent values are copied when the chunk is made, after
 * the chunks before it ran, so its chunks cannot be captured ahead or
 * spread over threads. It runs live on the calling thread, its chunks in
 * order (run_level, before the level's other units: they share no
 * conflicting access with it). */
static bool by_depth(const tes_system_t *s) { return s->query && s->query->cascade_walk; }

/* Captures s's chunks (none for a system without terms) and counts its
 * rows. TES_OK or TES_ERR_NOMEM. */
static int prepare_system(tes_world_t *w, tes_system_t *s)
{
    if (by_depth(s)) /* ran live already: keeps its rows */
        return TES_OK;
    s->rows = 0;
    s->chunk_count = 0;
    if (!s->query)
        return TES_OK;
    int rc = capture(w, s);
    for (uint32_t i = 0; i < s->chunk_count; i++)
        s->rows += s->chunks[i].count;
    return rc;
}

/* The units of one prepared system, cut to about `unit_cost` ns each (none
 * under 1024 rows: a unit has its own overhead). TES_OK or TES_ERR_NOMEM. */
static int plan_system(tes_world_t *w, tes__systems_t *ss, tes_system_t *s, double unit_cost)
{
    if (!s->query)
        return push_unit(w, ss, (tes__unit_t){s, TES__ALL_CHUNKS, 0, 0, 0, 0});
    if (!s->chunk_count || by_depth(s))
        return TES_OK;
    double per_row = row_cost(s);
    if (!s->parallel || w->threads <= 1)
        return push_unit(w, ss, (tes__unit_t){s, TES__ALL_CHUNKS, 0, 0, 0,
                                              (double)s->rows * per_row});
    double rows = unit_cost / per_row;
    int64_t size = rows < 1024 ? 1024 : rows > (double)INT32_MAX ? INT32_MAX : (int64_t)rows;
    for (uint32_t i = 0; i < s->chunk_count; i++) {
        for (int64_t b = 0; b < s->chunks[i].count; b += size) {
            int64_t e = b + size < s->chunks[i].count ? b + size : s->chunks[i].count;
            int rc = push_unit(w, ss, (tes__unit_t){s, i, (int32_t)b, (int32_t)e, 0,
                                                    (double)(e - b) * per_row});
            if (rc)
                return rc;
        }
    }
    return TES_OK;
}

/* Costliest first; planning order among equals. */
static int by_cost(const void *a, const void *b)
{
    const tes__unit_t *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct level_job {
    tes__systems_t *ss;
    atomic_uint next;
} level_job_t;

static void level_worker(void *ctx, int32_t thread)
{
    level_job_t *job = ctx;
    const tes__systems_t *ss = job->ss;
    for (;;) {
        unsigned u = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (u >= ss->unit_count)
            return;
        uint64_t start = tes__clock_ns();
        run_unit(ss, &ss->units[u], thread);
        uint64_t spent = tes__clock_since(start);
        atomic_fetch_add_explicit(&ss->units[u].system->spent_ns, spent < (1ull << 40) ? spent : 0,
                                  memory_order_relaxed);
    }
}

/* Runs systems order[first..last) (one level, none structural). */
static void run_level(tes_world_t *w, tes__systems_t *ss, uint32_t first, uint32_t last)
{
    ss->unit_count = 0;
    for (uint32_t i = first; i < last; i++) {
        tes_system_t *s = ss->items[ss->order[i]];
        if (!s->doomed && by_depth(s)) {
            uint64_t start = tes__clock_ns();
            run_live(w, ss, s);
            uint64_t spent = tes__clock_since(start);
            atomic_fetch_add_explicit(&s->spent_ns, spent < (1ull << 40) ? spent : 0,
                                      memory_order_relaxed);
        }
    }
    bool planned = true;
    double total = 0;
    for (uint32_t i = first; i < last && planned; i++) {
        tes_system_t *s = ss->items[ss->order[i]];
        if (!s->doomed && prepare_system(w, s))
            planned = false;
        else if (!s->doomed)
            total += (double)s->rows * row_cost(s);
    }
    double unit_cost = total / ((double)w->threads * 8);
    for (uint32_t i = first; i < last && planned; i++) {
        tes_system_t *s = ss->items[ss->order[i]];
        if (!s->doomed && plan_system(w, ss, s, unit_cost))
            planned = false;
    }
    if (!planned) {
        /* Out of memory for the plan: the same systems, one by one. */
        for (uint32_t i = first; i < last; i++) {
            tes_system_t *s = ss->items[ss->order[i]];
            end_held(s);
            if (!s->doomed && !by_depth(s)) {
                uint64_t start = tes__clock_ns();
                run_live(w, ss, s);
                record_run(s, tes__clock_since(start));
            }
        }
        return;
    }
    /* Structural calls are refused while these systems run. */
    tes__world_refuse_set(w, tes__refuse(w) | TES__REFUSE_STRUCTURAL);
    if (w->pool && ss->unit_count > 1) {
        level_job_t job = {ss, 0};
        atomic_init(&job.next, 0);
        for (int32_t t = 0; t < w->threads; t++)
            w->thread_errors[t] = w->last_error;
        qsort(ss->units, ss->unit_count, sizeof *ss->units, by_cost);
        /* What run may allocate (a table component's lookup view) goes to
         * the world's allocator one thread at a time, as on one thread. */
        w->alloc.lock = tes__pool_mutex(w->pool);
        tes__changes_settle_all(w); /* workers never touch pending ranges */
        w->parallel = true;
        tes__pool_run(w->pool, level_worker, &job);
        w->parallel = false;
        w->alloc.lock = NULL;
    } else {
        for (uint32_t u = 0; u < ss->unit_count; u++) {
            uint64_t start = tes__clock_ns();
            run_unit(ss, &ss->units[u], 0);
            uint64_t spent = tes__clock_since(start);
            atomic_fetch_add_explicit(&ss->units[u].system->spent_ns,
                                      spent < (1ull << 40) ? spent : 0, memory_order_relaxed);
        }
    }
    /* Costs are learnt only from split levels, where they size the units. */
    bool pooled = w->pool && ss->unit_count > 1;
    for (uint32_t i = first; i < last; i++) {
        tes_system_t *s = ss->items[ss->order[i]];
        uint64_t ns = atomic_exchange_explicit(&s->spent_ns, 0, memory_order_relaxed);
        if (pooled)
            learn_cost(s, ns);
        if (!s->doomed)
            record_run(s, ns);
    }
    tes__world_refuse_set(w, tes__refuse(w) & (uint8_t)~TES__REFUSE_STRUCTURAL);
    for (uint32_t i = first; i < last; i++)
        end_held(ss->items[ss->order[i]]);
}

/* The rows one call of a structural, parallel system's run gets at most:
 * each chunk is cut into blocks of SPLIT_ROWS rows from its start, the
 * same blocks on every thread count, and each block is one call. */
#define SPLIT_ROWS 1024

/* Runs rows [begin, end) of chunk c of a split system as one call. Its
 * thread's queue first forgets what earlier calls queued, so a deferred
 * read in run (tes_ensure) sees only what this call queues: the blocks do
 * not depend on the thread count, and neither does what each call sees.
 * The commands themselves stay queued, in order. */
static void run_block(const tes__systems_t *ss, tes_system_t *s, const tes__chunk_t *c,
                      int32_t begin, int32_t end, int32_t thread)
{
    tes_iter_t it;
    tes__defer_forget(s->w);
    detached_iter(ss, s, c, begin, end, thread, &it);
    s->run(&it);
}

typedef struct split_job {
    tes_world_t *w;
    tes__systems_t *ss;
    atomic_uint next;
} split_job_t;

/* Runs blocks of a split structural system, noting where in the thread's
 * lane each block's commands lie. Each block's span is written by the one
 * thread that took the block, and read after the pool has joined. */
static void split_worker(void *ctx, int32_t thread)
{
    split_job_t *job = ctx;
    tes__systems_t *ss = job->ss;
    uint32_t lane = tes__defer_lane_index(job->w);
    tes__assert(lane == (uint32_t)thread);
    for (;;) {
        unsigned u = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (u >= ss->unit_count)
            return;
        const tes__unit_t *unit = &ss->units[u];
        tes__defer_span_t *span = &ss->spans[u];
        span->lane = lane;
        span->first = tes__defer_lane_count(job->w, lane);
        run_block(ss, unit->system, &unit->system->chunks[unit->chunk], unit->begin, unit->end,
                  thread);
        span->end = tes__defer_lane_count(job->w, lane);
    }
}

/* A split system on the calling thread: the same blocks in order, over a
 * live walk (nothing captured), its changes queued into the world's queue
 * and applied when it ends. The walk gathers nothing, so its chunks are
 * the ones capture() sees. Returns the first error its changes met. */
static int run_blocks_inline(tes_world_t *w, const tes__systems_t *ss, tes_system_t *s)
{
    if (!s->query) {
        /* One call, count 0: a block of its own. The flag stays up through
         * the flush, which queues no ensure (hooks may not call it). */
        tes__defer_stage_ensures(w, true);
        int rc = run_live(w, ss, s);
        tes__defer_stage_ensures(w, false);
        return rc;
    }
    s->rows = 0;
    tes__defer_open(w);
    uint8_t refuse = tes__refuse(w);
    tes__world_refuse_set(w, refuse | TES__REFUSE_CREATE);
    tes_iter_t it = tes_query_iter(s->query);
    tes__iter_keep_fields(&it);
    hold_window(s, &it);
    tes__defer_stage_ensures(w, true);
    while (tes_iter_next(&it)) {
        s->rows += it.count;
        tes__chunk_t c = {it.count, it.entities, {0}};
        for (int32_t i = 0; i < s->term_count; i++)
            c.fields[i] = tes_field(&it, i);
        for (int32_t b = 0; b < c.count; b += SPLIT_ROWS)
            run_block(ss, s, &c, b, c.count - b > SPLIT_ROWS ? b + SPLIT_ROWS : c.count, 0);
    }
    tes__defer_stage_ensures(w, false);
    tes__world_refuse_set(w, refuse);
    return tes__defer_end(w);
}

/* The blocks of a prepared split system, in row order (the spans are
 * applied in unit order). TES_OK or TES_ERR_NOMEM. */
static int plan_blocks(tes_world_t *w, tes__systems_t *ss, tes_system_t *s)
{
    for (uint32_t i = 0; i < s->chunk_count; i++) {
        for (int32_t b = 0; b < s->chunks[i].count; b += SPLIT_ROWS) {
            int32_t e = s->chunks[i].count - b > SPLIT_ROWS ? b + SPLIT_ROWS : s->chunks[i].count;
            int rc = push_unit(w, ss, (tes__unit_t){s, i, b, e, 0, 0});
            if (rc)
                return rc;
        }
    }
    return TES_OK;
}

/* A structural, parallel system (see the top of the file): its blocks over
 * the threads. Without workers, when its plan, its spans or the lanes
 * cannot be had, or it is one block, the same blocks run on the calling
 * thread instead: same result. Returns the first error its changes met. */
static int run_split_once(tes_world_t *w, tes__systems_t *ss, tes_system_t *s);

/* A split system; a change window its capture opened ends with it. */
static int run_split(tes_world_t *w, tes__systems_t *ss, tes_system_t *s)
{
    int rc = run_split_once(w, ss, s);
    end_held(s);
    return rc;
}

static int run_split_once(tes_world_t *w, tes__systems_t *ss, tes_system_t *s)
{
    ss->unit_count = 0;
    if (!w->pool || !s->query || tes__defer_lanes_reserve(w) || prepare_system(w, s) ||
        plan_blocks(w, ss, s))
        return run_blocks_inline(w, ss, s);
    if (ss->unit_count == 0)
        return TES_OK; /* its query matches nothing: not called */
    if (ss->unit_count == 1 ||
        tes__grow(&w->alloc, (void **)&ss->spans, &ss->span_cap, ss->unit_count,
                  sizeof *ss->spans, 16))
        return run_blocks_inline(w, ss, s);
    split_job_t job = {w, ss, 0};
    atomic_init(&job.next, 0);
    uint8_t refuse = tes__refuse(w);
    tes__world_refuse_set(w, refuse | TES__REFUSE_CREATE);
    for (int32_t t = 0; t < w->threads; t++)
        w->thread_errors[t] = w->last_error;
    tes__defer_lanes_begin(w);
    tes__changes_settle_all(w); /* workers never touch pending ranges */
    w->parallel = true;
    tes__pool_run(w->pool, split_worker, &job);
    w->parallel = false;
    tes__world_refuse_set(w, refuse);
    return tes__defer_lanes_end(w, ss->spans, ss->unit_count);
}

int tes__schedule_run(tes_world_t *w, tes__systems_t *ss)
{
    int first_error = TES_OK;
    uint32_t n = ss->count;
    /* The workers watch for the next level instead of sleeping until the
     * frame ends (thread_pool.h). */
    if (w->pool)
        tes__pool_hold(w->pool, true);
    for (uint32_t i = 0; i < n;) {
        tes_system_t *s = ss->items[ss->order[i]];
        if (s->structural) {
            if (!s->doomed) {
                uint64_t start = tes__clock_ns();
                int rc = s->parallel && !by_depth(s) ? run_split(w, ss, s) : run_live(w, ss, s);
                record_run(s, tes__clock_since(start));
                if (rc && first_error == TES_OK)
                    first_error = rc;
            }
            i++;
            continue;
        }
        uint32_t j = i + 1;
        while (j < n && ss->items[ss->order[j]]->level == s->level)
            j++;
        run_level(w, ss, i, j);
        i = j;
    }
    if (w->pool)
        tes__pool_hold(w->pool, false);
    return first_error;
}
