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
 * The helpers here are header-only and static (components, RNG, shuffles,
 * error reporting, and the few inline pieces a timed loop may use); the
 * untimed set-up and tear-down that many workloads share (world +
 * component set-up, populated worlds, plain-array baseline state) is in
 * bench_common.c and declared at the end of this file.
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
extern const bench_workload_t bench_json_world;
extern const bench_workload_t bench_json_deep_path;
extern const bench_workload_t bench_table_spawn_set;
extern const bench_workload_t bench_table_spawn_n;
extern const bench_workload_t bench_table_destroy;
extern const bench_workload_t bench_table_add_remove;
extern const bench_workload_t bench_table_get;
extern const bench_workload_t bench_table_lookup_get;
extern const bench_workload_t bench_sparse_add_remove;
extern const bench_workload_t bench_sparse_get;
extern const bench_workload_t bench_sparse_lookup_get;
extern const bench_workload_t bench_sparse_iter;
extern const bench_workload_t bench_w4_table;
extern const bench_workload_t bench_w4_group;
extern const bench_workload_t bench_w4_view;
extern const bench_workload_t bench_w5_fragmented;
extern const bench_workload_t bench_w8_table;
extern const bench_workload_t bench_w8_view;
extern const bench_workload_t bench_w8_group;
extern const bench_workload_t bench_w8_floor;
extern const bench_workload_t bench_w8_floor_in_place;
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
extern const bench_workload_t bench_cliff_spawns;
extern const bench_workload_t bench_changes_set;
extern const bench_workload_t bench_changes_w4;
extern const bench_workload_t bench_changes_idle;
extern const bench_workload_t bench_changes_some;
extern const bench_workload_t bench_changes_sparse;
extern const bench_workload_t bench_h1_reparent;
extern const bench_workload_t bench_h1n_reparent;
extern const bench_workload_t bench_h2_cascade;
extern const bench_workload_t bench_h4_propagate;
extern const bench_workload_t bench_h4_unsorted;
extern const bench_workload_t bench_h4_sort;
extern const bench_workload_t bench_h3_paths;
extern const bench_workload_t bench_w4_linked;
/* The hierarchy's memory probe (hierarchy.c). */
bool bench_memory_linked(const bench_cfg_t *cfg, uint64_t *bytes, uint64_t *entities);
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

/* The bits of a float, widened: checksums sum these so that Tessera and the
 * baseline must agree bit for bit. */
static inline uint64_t bench_bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* The timed add/remove passes: reps times, comp added to every handle and
 * then removed from every handle. Returns the successful calls. Inline so
 * each caller's loop compiles as if written in place. */
static inline uint64_t bench_add_remove_passes(tes_world_t *w, const tes_entity_t *h, uint32_t n,
                                               tes_comp_t comp, int reps)
{
    uint64_t ok = 0;
    for (int r = 0; r < reps; r++) {
        for (uint32_t i = 0; i < n; i++)
            ok += tes_add(w, h[i], comp) == TES_OK;
        for (uint32_t i = 0; i < n; i++)
            ok += tes_remove(w, h[i], comp) == TES_OK;
    }
    return ok;
}

/* The checksum of a handle array: the plain sum. */
static inline uint64_t bench_sum_handles(const tes_entity_t *h, uint32_t n)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += h[i];
    return sum;
}

/* ------------------------------------------------------------------------ */
/* Shared workload state and hooks (bench_common.c)                          */
/* ------------------------------------------------------------------------ */

/* The Tessera side most workloads keep: n entities' handles and a world
 * (NULL between runs for workloads that build one per run). c and comps
 * hold Position, Velocity, Rotation once registered; extra is a fourth
 * component some workloads add and remove. */
typedef struct bench_tes_state {
    uint32_t n;
    tes_world_t *w;
    bench_comps_t c;
    tes_comp_t comps[3];
    tes_comp_t extra;
    tes_entity_t *h;
} bench_tes_state_t;

/* init hooks: n = cfg->n (or cfg->small_n), h allocated, no world yet. */
void *bench_tes_init(const bench_cfg_t *cfg);
void *bench_tes_init_small(const bench_cfg_t *cfg);
/* fini hook: frees the world (if any), the handles and the state. */
void bench_tes_fini(void *st);
/* before hooks: a fresh world, ... */
void bench_tes_world(void *st);
/* ... with Position, Velocity, Rotation registered (table storage), ... */
void bench_tes_world3(void *st);
/* ... populated with n empty entities by tes_spawn_n (handles in h), ... */
void bench_tes_spawned(void *st);
/* ... or with n entities carrying the three table components. */
void bench_tes_spawned3(void *st);
/* A fresh world with table Position and the component `name` (in extra),
 * n entities spawned with Position only. */
void bench_tes_spawned_extra(bench_tes_state_t *s, const char *name, size_t size,
                             tes_storage_t storage);
/* after hook of the add/remove workloads: fails unless the middle entity
 * has Position and not extra, then frees the world. */
void bench_tes_after_add_remove(void *st);
/* run hook (TIMED) of the destroy 1-by-1 workloads: tes_destroy on every
 * handle in order; returns the successful calls. */
uint64_t bench_tes_destroy_each(void *st);
/* after hooks: free the world (w = NULL); the checking ones first fail
 * unless all n entities (or none) are alive. */
void bench_tes_drop_world(void *st);
void bench_tes_after_alive(void *st);
void bench_tes_after_none_alive(void *st);
/* The Tessera side of the random-order get workloads: a world built once
 * (only read) of n entities whose Position (component pos) holds
 * bench_position(entity index), their handles h shuffled. */
typedef struct bench_get_state {
    uint32_t n;
    tes_world_t *w;
    tes_comp_t pos;
    tes_entity_t *h;
} bench_get_state_t;

/* init: n = cfg->n; table storage puts Position, Velocity and Rotation in
 * one table, sparse storage registers SparsePosition alone; the shuffle is
 * seeded with cfg->seed ^ seed_mix. */
void *bench_get_init(const bench_cfg_t *cfg, tes_storage_t storage, uint64_t seed_mix);
void bench_get_fini(void *st);
/* The same world read through a lookup view of Position (tes_lookup_t),
 * built once at init, as a program builds one per frame or per batch. */
typedef struct bench_lookup_state {
    bench_get_state_t *get;
    tes_lookup_t view;
} bench_lookup_state_t;
void *bench_lookup_init(const bench_cfg_t *cfg, tes_storage_t storage, uint64_t seed_mix);
void bench_lookup_fini(void *st);
/* The baseline's side of the same: gen[i] = 1 and h = the same handles in
 * the same shuffled order. False after bench_fail (arrays left to free). */
bool bench_get_handles(const bench_cfg_t *cfg, uint64_t seed_mix, uint32_t **gen,
                       tes_entity_t **h);

/* A query on the one component comp; NULL after bench_fail. */
tes_query_t *bench_query1(tes_world_t *w, tes_comp_t comp);
/* The checksum of a world's state that the iterating workloads compare in
 * lockstep with their baseline: the sum over k < count of mix(k, value),
 * value being h[k]'s comp read with tes_get. A handle without comp records
 * a failure (the sum is then meaningless). */
uint64_t bench_state_checksum(const tes_world_t *w, const tes_entity_t *h, uint32_t count,
                              tes_comp_t comp, uint64_t (*mix)(uint32_t k, const void *value));

/* The plain-array baseline most spawning workloads keep: a naive entity
 * list (slots) or a generation array, three component columns with a count
 * and capacity, and n handles. All arrays but h are allocated by the
 * workload (usually inside its timed run, as the work being measured). */
typedef struct bench_base_state {
    uint32_t n, count, cap;
    bench_slot_t *slots;
    uint32_t *gen;
    Position *pos;
    Velocity *vel;
    Rotation *rot;
    tes_entity_t *h;
} bench_base_state_t;

/* init hook: n = cfg->n, h allocated. */
void *bench_base_init(const bench_cfg_t *cfg);
/* after hook: frees everything but h, count = cap = 0. */
void bench_base_release(void *st);
/* fini hook. */
void bench_base_fini(void *st);
/* Doubles (from 1024) gen, pos, vel and rot; false after bench_fail. It is
 * called inside timed runs, so it is inline like the code it replaced. */
static inline bool bench_base_grow(bench_base_state_t *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : 1024;
    void *g = realloc(s->gen, (size_t)cap * sizeof *s->gen);
    if (g)
        s->gen = (uint32_t *)g;
    void *p = realloc(s->pos, (size_t)cap * sizeof *s->pos);
    if (p)
        s->pos = (Position *)p;
    void *v = realloc(s->vel, (size_t)cap * sizeof *s->vel);
    if (v)
        s->vel = (Velocity *)v;
    void *r = realloc(s->rot, (size_t)cap * sizeof *s->rot);
    if (r)
        s->rot = (Rotation *)r;
    if (!g || !p || !v || !r) {
        bench_fail("realloc failed");
        return false;
    }
    s->cap = cap;
    return true;
}
/* gen[i] = 1 (unless gen is NULL) and h[i] = entity (i, generation 1), as
 * a fresh Tessera world issues them. */
void bench_fresh_handles(uint32_t *gen, tes_entity_t *h, uint32_t n);

#endif
