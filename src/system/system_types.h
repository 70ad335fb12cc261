/*
 * Systems' layout: a system (a query, a function and the access the
 * query's terms declare), a captured chunk, a unit of work and the
 * world's registry of systems. The public type is opaque. Both halves of
 * the system code read these: system.c (creation, lifetime, tes_progress)
 * and the scheduler (schedule.h, schedule.c), which system.c calls to
 * plan and run a frame. Kept apart from both so that every include and
 * call runs one way: system -> schedule -> system_types.
 *
 * The scheduler turns creation order plus access into levels:
 * a system's level is one more than the highest level of any earlier system
 * it conflicts with (one writes a component the other reads or writes; a
 * structural system conflicts with everything). Systems of one level touch
 * disjoint data, so they may run at the same time; levels run in order.
 * That is what makes the result the one of creation order for any thread
 * count.
 */
#ifndef TES_SYSTEM_SYSTEM_TYPES_H
#define TES_SYSTEM_SYSTEM_TYPES_H

#include <stdatomic.h>

#include "query/query.h"

/* One chunk of a system's query, captured before its level runs. Every
 * address it holds is the world's (a table, a store, a pool's packed
 * array) or the system's own (`handles`), never the walking iterator's:
 * the iterator is gone when the level runs (see capture in schedule.c). */
typedef struct tes__chunk {
    int32_t count;
    const tes_entity_t *entities;
    void *fields[TES_MAX_TERMS];
} tes__chunk_t;

struct tes_system {
    tes_world_t *w;
    char *name;
    size_t name_size;
    tes_query_t *query;       /* NULL for a system without terms */
    void (*run)(tes_iter_t *it);
    void *ctx;
    bool parallel;
    bool structural;
    /* capture() walked the query and left its change window open: it is
     * ended once the system's run is over (end_held in schedule.c), so
     * writes made during the run fall inside it, as with a live loop. */
    bool change_held;
    /* Freed inside tes_progress (maybe from a worker thread, hence atomic):
     * runs no more from the next level on, freed when the frame ends. */
    _Atomic bool doomed;
    uint32_t level;           /* set by the scheduler */
    int32_t term_count;
    size_t field_size[TES_MAX_TERMS]; /* bytes per value of each term's field */
    tes_comp_t reads[TES_MAX_TERMS];
    tes_comp_t writes[TES_MAX_TERMS];
    int32_t read_count;
    int32_t write_count;
    tes__chunk_t *chunks;     /* this frame's chunks, while its level runs */
    uint32_t chunk_count;
    uint32_t chunk_cap;
    /* Copies of the handles of chunks whose handles the walk kept in the
     * iterator itself (root entities, which no array of the world holds in
     * a row): the chunks point here. */
    tes_entity_t *handles;
    uint32_t handle_count;
    uint32_t handle_cap;
    int64_t rows;             /* rows of this frame's chunks */
    /* What a row costs, measured on earlier frames (0: not yet), and the
     * time its units took in the running level (threads add to it). Only
     * the sizes and order of work units depend on them, never a result. */
    double ns_per_row;
    _Atomic uint64_t spent_ns;
    /* tes_system_stats: written between levels by the thread that runs
     * tes_progress, read between frames. */
    int64_t stat_matched;
    uint64_t stat_runs;
    uint64_t stat_last_ns;
    uint64_t stat_total_ns;
};

/* A piece of work for one thread: rows [begin, end) of chunk `chunk` of a
 * system, or every chunk of it in order when chunk == TES__ALL_CHUNKS. */
#define TES__ALL_CHUNKS UINT32_C(0xFFFFFFFF)
typedef struct tes__unit {
    tes_system_t *system;
    uint32_t chunk;
    int32_t begin;
    int32_t end;
    uint32_t seq;  /* position when planned: ties in `cost` keep it */
    double cost;   /* estimated ns: a level's units run costliest first */
} tes__unit_t;

typedef struct tes__systems {
    tes_system_t **items;     /* creation order */
    uint32_t count;
    uint32_t cap;
    uint32_t *order;          /* items sorted by (level, creation) */
    uint32_t order_cap;
    bool dirty;               /* levels need recomputing */
    bool running;             /* inside tes_progress */
    tes__unit_t *units;       /* the running level's work */
    uint32_t unit_count;
    uint32_t unit_cap;
    tes__defer_span_t *spans; /* a split structural system: each unit's commands */
    uint32_t span_cap;
    float delta_time;
} tes__systems_t;

#endif
