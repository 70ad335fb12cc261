/*
 * The differential fuzzer's op loop, shared by fuzz_runner (PRNG seeds) and
 * fuzz_libfuzzer (raw bytes). Both front ends go through one entropy source,
 * so a byte stream and a seed drive exactly the same code: every decision
 * the driver makes is one fz_draw call.
 *
 * A run creates a world with a config (generation and entity limits small or
 * default), registers the fuzzer's component set and a set of queries, then
 * performs ops, each compared with the reference model (fuzz/model.h,
 * model_query.h) right away; every check_every ops and at the end it
 * compares the whole state, every query, and calls tes__world_check. Some
 * ops contain ops: deferred blocks and query loops that make changes from
 * inside their chunks (one step each). The first divergence stops the run
 * and is reported with its step number.
 */
#ifndef TES_FUZZ_DRIVER_H
#define TES_FUZZ_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fz_source {
    const uint8_t *data; /* byte mode when non-NULL */
    size_t size;
    size_t pos;
    uint64_t state;      /* PRNG mode state */
    bool exhausted;      /* byte mode ran out of input */
} fz_source_t;

void fz_source_seed(fz_source_t *s, uint64_t seed);
void fz_source_bytes(fz_source_t *s, const uint8_t *data, size_t size);
/* A number in [0, bound) (bound >= 1). In byte mode, once the input is used
 * up it returns 0 and sets `exhausted`, which ends the run after this op. */
uint32_t fz_draw(fz_source_t *s, uint32_t bound);

typedef struct fz_config {
    const char *name;
    uint32_t generation_limit; /* 0 = default */
    uint32_t entity_limit;     /* 0 = default */
    uint32_t pop_target;       /* live entities the op mix steers towards */
    uint32_t check_every;      /* full-state comparison period, in ops */
    uint64_t trace_from;       /* print every op from this step on (0 = never) */
    bool strict;               /* strict_lifecycle world */
    /* Observers call tes_defer_begin/_end and create owning groups, and
     * expect TES_ERR_BUSY (fz_config_variant turns it on). */
    bool hook_busy;
    /* The cells variant: the op mix also picks the cells components
     * (hook-free table components of 4 to 16 bytes and a tag, see
     * model.h), builds entities of five and more of them with tes_set /
     * tes_add, and spawns them in bundles with tes_spawn_with, so that
     * the quiet add takes every form of its cell copy and tes_spawn_with
     * its bundle path for 8 to 16 byte values. */
    bool cells;
    /* The twin variant (driver_twin.c): instead of the reference model, a
     * deferred world against an immediate twin, batch by batch. */
    bool twin;
} fz_config_t;

/* The fixed configurations; a seed or the first input byte picks one:
 * variant % 5 the limits, variant / 5 a strict_lifecycle world. */
#define FZ_VARIANTS 10
void fz_config_variant(uint32_t variant, fz_config_t *cfg);

/* A seed's configuration: fz_config_variant(seed % FZ_VARIANTS), in the
 * cells variant when the seed has FZ_CELLS_SEED_BIT set (a bit no fixed
 * seed and no commit-range seed has, so their op streams are unchanged). */
#define FZ_CELLS_SEED_BIT (UINT64_C(1) << 62)
void fz_config_seed(uint64_t seed, fz_config_t *cfg);

/* A seed with this bit runs the twin variant (fz_config_t.twin): a bit no
 * fixed seed of the model variants and no commit-range seed has. */
#define FZ_TWIN_SEED_BIT (UINT64_C(1) << 61)

/* The walks a query's chunks can come from (fz_result_t.walks): the table
 * walk, the root walk, the packed walk over the driving pool, over a
 * non-owning group's pool, over its member set, and the owned walk. */
enum { FZ_WALK_TABLES, FZ_WALK_ROOT, FZ_WALK_DRIVEN, FZ_WALK_POOL, FZ_WALK_MEMBERS, FZ_WALK_OWNED };

typedef struct fz_result {
    uint64_t ops;      /* ops performed */
    bool diverged;
    uint64_t step;     /* the failing op (0-based), when diverged */
    char msg[1024];
    /* The run's shape, for --verbose: final population, slots, retired
     * slots, spawns refused with TES_ERR_FULL, tracked values constructed. */
    uint32_t alive, slots, retired, tables;
    uint64_t full, hooks;
    /* Query and deferral coverage, for --verbose: iterations, chunks and
     * entities checked; ops run from inside query loops; changes queued
     * and flushes; staged values a deferred tes_ensure handed out; queries
     * created and refused. */
    uint64_t iterations, chunks, visited, loop_ops, queued, flushes, staged_ensures;
    uint64_t gathered_chunks; /* fields that were the iterator's gathered copies */
    /* Chunks per walk (FZ_WALK_*): which ways of walking a query ran. */
    uint64_t walks[6];
    uint64_t queries_made, queries_refused;
    /* Observers' actions: queries made by hooks, queries freed by hooks,
     * deferral calls tried (and refused) from hooks. */
    uint64_t hook_queries, hook_frees, hook_defers;
    /* Entities given most of the wide components (more than 64). */
    uint64_t widened;
    /* Prefabs and instances: prefabs and children made, instances made (by
     * tes_instantiate, by tes_instantiate_n), deferred instantiations,
     * instances destroyed (deferred), adoptions and detaches, destroys
     * refused with TES_ERR_OWNED, references remapped in checked copies. */
    uint64_t prefabs, children, instances, instances_n, inst_deferred, inst_destroyed,
        inst_destroy_deferred, adopts, detaches, owned;
    /* From the model: references remapped, copies a flush skipped (their
     * member died first), queued destroys the flush refused (owned). */
    uint64_t remaps, skipped_members, owned_at_flush;
    uint32_t inst_slots, inst_retired; /* instance id slots made, retired */
    /* The hierarchy: links made (tes_set_parent that succeeded), names set,
     * and from the model: links instantiation copied, names it copied,
     * queued links a flush dropped, destroys that cascaded and the
     * descendants they took. */
    uint64_t links, names, inst_links, inst_names, links_dropped, cascades, cascaded;
    uint64_t cascade_chunks; /* chunks of TES_QUERY_CASCADE iterations checked */
} fz_result_t;

/* Runs up to max_ops ops (fewer if a byte source runs out). */
void fz_run(const fz_config_t *cfg, fz_source_t *src, uint64_t max_ops, fz_result_t *res);
/* fz_run of the twin variant: each op is one batch of calls. */
void fz_twin_run(const fz_config_t *cfg, fz_source_t *src, uint64_t max_ops, fz_result_t *res);

#endif
