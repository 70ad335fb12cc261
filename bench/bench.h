/*
 * bench.h — the contract between the benchmark driver and its workloads.
 *
 * Design: a workload is a descriptor with two implementations of the same
 * work, one through Tessera and one on plain C arrays (the baseline). Each
 * implementation has untimed hooks around one timed `run`:
 *   init   once per workload (allocate handle arrays, build read-only data),
 *   before before every run (e.g. create a world and populate it),
 *   run    TIMED; returns a checksum of what it computed,
 *   after  after every run (e.g. free the world; glibc keeps the pages),
 *   fini   once.
 * The driver times `run` with CLOCK_MONOTONIC: one cold run (reported on its
 * own) and then cfg->runs warm runs, alternating Tessera and baseline so
 * that drift hits both equally. Checksums feed a volatile sink that is
 * printed at the end, so no loop can be optimised away; workloads marked
 * `same_checksum` must compute the same value both ways, which doubles as a
 * cheap correctness check of the library.
 *
 * Everything here is header-only and static so each workload file stays
 * self-contained: components, RNG, shuffles, error reporting.
 */
#ifndef TES_BENCH_H
#define TES_BENCH_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime with -std=c11 */
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

typedef struct bench_cfg {
    int64_t n;       /* the big population (default 1,000,000) */
    int64_t small_n; /* the add/remove population (n / 100, default 10,000) */
    int runs;        /* warm runs per implementation */
    uint64_t seed;   /* fixed seed for every random choice */
} bench_cfg_t;

typedef struct bench_impl {
    void *(*init)(const bench_cfg_t *cfg); /* NULL return = failure */
    void (*before)(void *st);              /* optional */
    uint64_t (*run)(void *st);             /* timed */
    void (*after)(void *st);               /* optional */
    void (*fini)(void *st);
} bench_impl_t;

typedef struct bench_workload {
    const char *name;
    const char *unit; /* what one "op" is: entity, get, pair, ... */
    int64_t (*ops)(const bench_cfg_t *cfg);
    bool same_checksum;
    bench_impl_t tes;
    bench_impl_t base;
} bench_workload_t;

/* A memory probe: builds a world, reports bytes per entity. */
typedef struct bench_memory {
    const char *name;
    double payload;  /* bytes of component data per entity */
    double baseline; /* bytes per entity of the plain-array equivalent */
    /* Fills *bytes and *entities; returns false (after bench_fail) on error. */
    bool (*measure)(const bench_cfg_t *cfg, uint64_t *bytes, uint64_t *entities);
} bench_memory_t;

/* Every workload, one file each (a file may hold the variants of one
 * workload, e.g. W4 table query / owning group / sparse view). */
extern const bench_workload_t bench_spawn;
extern const bench_workload_t bench_spawn_n;
extern const bench_workload_t bench_destroy;
extern const bench_workload_t bench_churn;
extern const bench_workload_t bench_snapshot_save;
extern const bench_workload_t bench_snapshot_load;
extern const bench_workload_t bench_table_spawn_set;
extern const bench_workload_t bench_table_spawn_n;
extern const bench_workload_t bench_table_destroy;
extern const bench_workload_t bench_table_add_remove;
extern const bench_workload_t bench_table_get;
extern const bench_workload_t bench_sparse_add_remove;
extern const bench_workload_t bench_sparse_get;
extern const bench_workload_t bench_sparse_iter;
extern const bench_workload_t bench_w4_table;
extern const bench_workload_t bench_w4_group;
extern const bench_workload_t bench_w4_view;
extern const bench_workload_t bench_w5_fragmented;
extern const bench_workload_t bench_w8_table;
extern const bench_workload_t bench_w8_view;
extern const bench_workload_t bench_w8_group;
extern const bench_workload_t bench_w8_floor;
extern const bench_workload_t bench_w9_heavy;
extern const bench_workload_t bench_query_create;
extern const bench_workload_t bench_query_iter_empty;
extern const bench_workload_t bench_instantiate_n;
extern const bench_workload_t bench_instantiate_single;
extern const bench_workload_t bench_defer_ensure;
extern const bench_workload_t bench_defer_set;
extern const bench_workload_t bench_defer_set3;
extern const bench_workload_t bench_bulk_spawn_with;
extern const bench_workload_t bench_bulk_spawn_bulk;
extern const bench_workload_t bench_bulk_destroy_n;
extern const bench_workload_t bench_bulk_destroy_matching;
extern const bench_workload_t bench_bulk_get_n_table;
extern const bench_workload_t bench_bulk_get_n_sparse;
extern const bench_workload_t bench_systems_1;
extern const bench_workload_t bench_systems_2;
extern const bench_workload_t bench_systems_4;
extern const bench_workload_t bench_systems_bound_fused;
extern const bench_workload_t bench_systems_bound_barrier;
extern const bench_workload_t bench_systems_empty;
extern const bench_workload_t bench_cliff_tax_table;
extern const bench_workload_t bench_cliff_tax_sparse;
extern const bench_workload_t bench_cliff_prefab;
extern const bench_workload_t bench_cliff_disabled;
extern const bench_workload_t bench_cliff_nonowning_w4;
extern const bench_workload_t bench_cliff_nonowning_w8;
extern const bench_workload_t bench_cliff_w8_view;
extern const bench_memory_t bench_memory_probes[];
extern const int bench_memory_probe_count;

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                         */
/* ------------------------------------------------------------------------ */

/* The first failure of the current workload (empty = none). The driver
 * clears it before each workload and prints it instead of numbers. */
extern char bench_error[256];

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static inline void bench_fail(const char *fmt, ...)
{
    if (bench_error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bench_error, sizeof bench_error, fmt, ap);
    va_end(ap);
}

static inline bool bench_failed(void) { return bench_error[0] != 0; }

/* Allocation that records a failure instead of returning NULL silently. */
static inline void *bench_alloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        bench_fail("out of memory (%zu bytes)", size);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Components shared by the workloads                                        */
/* ------------------------------------------------------------------------ */

typedef struct Position { float x, y, z; } Position;
typedef struct Velocity { float x, y, z; } Velocity;
typedef struct Rotation { float x, y, z; } Rotation;
typedef struct Health { int32_t hp; } Health;

/* Three 12-byte components: table storage or sparse storage. */
typedef struct bench_comps {
    tes_comp_t pos, vel, rot;
} bench_comps_t;

static inline tes_comp_t bench_register(tes_world_t *w, const char *name, size_t size,
                                        tes_storage_t storage)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    tes_comp_t c = tes_component(w, &d);
    if (!c)
        bench_fail("tes_component(%s): %s", name, tes_strerror(tes_last_error(w)));
    return c;
}

/* Registers Position, Velocity, Rotation with the given storage. Sparse ones
 * get distinct names so both kinds can live in one world. */
static inline bench_comps_t bench_register3(tes_world_t *w, tes_storage_t storage)
{
    bench_comps_t c;
    bool sparse = storage == TES_STORAGE_SPARSE;
    c.pos = bench_register(w, sparse ? "SparsePosition" : "Position", sizeof(Position), storage);
    c.vel = bench_register(w, sparse ? "SparseVelocity" : "Velocity", sizeof(Velocity), storage);
    c.rot = bench_register(w, sparse ? "SparseRotation" : "Rotation", sizeof(Rotation), storage);
    return c;
}

/* A new world, or NULL after bench_fail. */
static inline tes_world_t *bench_world_new(void)
{
    tes_world_t *w = tes_world_new(NULL);
    if (!w)
        bench_fail("tes_world_new failed");
    return w;
}

/* Positions hold small integers so float sums are exact and Tessera and the
 * baseline agree bit for bit. */
static inline Position bench_position(uint32_t i)
{
    Position p = {(float)(i & 1023u), (float)((i >> 10) & 1023u), 1.0f};
    return p;
}

/* ------------------------------------------------------------------------ */
/* Random numbers (fixed seed, reproducible)                                 */
/* ------------------------------------------------------------------------ */

static inline uint64_t bench_rng_next(uint64_t *state)
{
    /* splitmix64 */
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, bound). bound > 0. Multiply-shift: no modulo bias worth
 * caring about at these sizes. */
static inline uint32_t bench_rng_below(uint64_t *state, uint32_t bound)
{
    return (uint32_t)(((bench_rng_next(state) >> 32) * (uint64_t)bound) >> 32);
}

/* Fisher-Yates shuffles. */
static inline void bench_shuffle_u32(uint32_t *a, uint32_t n, uint64_t *state)
{
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = bench_rng_below(state, i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static inline void bench_shuffle_entities(tes_entity_t *a, uint32_t n, uint64_t *state)
{
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = bench_rng_below(state, i);
        tes_entity_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* 0, 1, ..., n-1 shuffled; NULL after bench_fail. */
static inline uint32_t *bench_permutation(uint32_t n, uint64_t *state)
{
    uint32_t *p = (uint32_t *)bench_alloc((size_t)n * sizeof *p);
    if (!p)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        p[i] = i;
    bench_shuffle_u32(p, n, state);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Baseline building blocks                                                  */
/* ------------------------------------------------------------------------ */

/* What a naive entity list stores per entity. */
typedef struct bench_slot {
    uint32_t index;
    uint32_t generation;
} bench_slot_t;

#define BENCH_NONE UINT32_C(0xFFFFFFFF)

static inline uint32_t bench_u32(int64_t v) { return (uint32_t)v; }
static inline int32_t bench_i32(int64_t v) { return (int32_t)v; }

#endif
