/*
 * The allocation-failure sweep's runner, shared by the scenarios
 * (scenarios.c) and the driver (fault_sweep.c).
 *
 * A scenario is straight-line code: a sequence of library calls, each
 * wrapped in FS_STEP. The sweep runs a scenario once with no failure to
 * count its allocations K (and to record, per step, how many allocations
 * had happened by its end and the final state), then once for every k in
 * 1..K with the k-th allocation failing. FS_STEP knows from that record
 * which step will meet the failure, snapshots the whole observable state
 * just before it, and after the call checks: the status is TES_ERR_NOMEM
 * (tes_last_error too), tes__world_check passes, the state equals the
 * snapshot, hook counters show no phantom events and ctor - dtor still
 * equals the live values. Then it retries the same call, which must now
 * succeed, so the scenario continues and ends in the same final state as
 * the reference run.
 *
 * Prefabs and instances too: stats.instances_alive, each tracked
 * entity's instance and prefab members, each tracked instance's liveness
 * and members in order; a failed tes_instantiate must leave no entity, no
 * instance id used up and no copy behind.
 *
 * Queries are part of the observable state: the snapshot holds each
 * tracked query's count and matching entities, and a group query can be
 * paired with a plain twin over the same terms that must agree with it.
 * Deferred changes: a failed queueing call must queue nothing (the flush
 * would otherwise apply it twice, which the final comparison catches);
 * a failure while the queue is applied is reported by tes_defer_end (or,
 * at the end of a query loop, by tes_last_error) and only that change is
 * lost, so such a run is checked for consistency, balance and leaks but
 * not compared with the reference run (steps_query.c).
 */
#ifndef TES_FAULT_FAULT_H
#define TES_FAULT_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "support/counting_alloc.h"
#include "tessera.h"

/* The sweep's component set; index 0 is the built-in TES_DISABLED. */
enum {
    FS_C_DISABLED = 0,
    FS_C_T4,   /* table, 4 bytes */
    FS_C_T24,  /* table, 24 bytes, align 8, hooks */
    FS_C_TTAG, /* table tag */
    FS_C_S8,   /* sparse, 8 bytes, hooks */
    FS_C_SST,  /* stable sparse, 16 bytes, hooks */
    FS_C_STAG, /* sparse tag */
    FS_C_T16,  /* table, 16 bytes, align 16 */
    FS_C_S4,   /* sparse, 4 bytes */
    FS_NBASE
};

/* Base components plus extras that a scenario may register. */
#define FS_MAX_COMPS 96
#define FS_MAX_ID 256
#define FS_MAX_QUERIES 16

typedef struct fs_hook_counts {
    uint64_t ctor, dtor, on_add, on_set, on_remove;
} fs_hook_counts_t;

struct fs_run;
typedef struct fs_hook_ctx {
    struct fs_run *r;
    int k;
    uint32_t size;
} fs_hook_ctx_t;

/* A serialized snapshot of the observable state (see fs_snapshot). */
typedef struct fs_snap {
    uint8_t *bytes;
    size_t len, cap;
    size_t *ent_off; /* where each tracked entity's record starts */
    uint32_t nents;
    size_t query_off; /* where the query records start (after the instances) */
} fs_snap_t;

typedef struct fs_ref {
    uint64_t *step_end; /* allocation calls made by the end of each step */
    uint32_t nsteps, cap;
    fs_snap_t final;
    fs_snap_t final_no_tables; /* the same without stats.tables (see fs_snapshot) */
} fs_ref_t;

typedef struct fs_run {
    ca_state_t ca;
    uint64_t calls_at_world; /* allocator calls before the world that lived */
    tes_world_t *w;
    const char *scenario;
    bool reference;        /* the counting run: no failure injected */
    fs_ref_t *ref;
    /* Components: id per index, size per id. */
    tes_comp_t ids[FS_MAX_COMPS];
    int ncomps;
    uint32_t size_of[FS_MAX_ID];
    fs_hook_counts_t counts[FS_MAX_COMPS];
    fs_hook_ctx_t ctx[FS_MAX_COMPS];
    /* Every entity the scenario created, alive or not. */
    tes_entity_t *ents;
    uint32_t nents, ents_cap;
    /* Every instance the scenario created, alive or not. */
    tes_instance_t *insts;
    uint32_t ninsts, insts_cap;
    /* Queries the snapshot covers (NULL once freed); twin[i] >= 0 names a
     * query that must match exactly what query i matches. */
    tes_query_t *queries[FS_MAX_QUERIES];
    int twin[FS_MAX_QUERIES];
    int nqueries;
    /* Deferred mode: levels the scenario opened, and the values staged by
     * queued sets (constructed, not attached: ctor - dtor counts them). */
    int32_t defer_depth;
    uint64_t staged[FS_MAX_COMPS];
    bool flush_failed;     /* a change was lost in a flush: no final comparison */
    const char *flush_absorbed; /* a flush met a failure nobody reported (its step) */
    /* Step bookkeeping. */
    uint32_t step;
    uint64_t failures_before;
    bool have_snap;
    fs_snap_t snap;
    uint32_t queued_before; /* deferred changes queued before the step */
    bool dead;             /* a problem stopped the scenario */
    /* Worker threads allocate (a split structural system's per-thread
     * queues grow by how the threads happened to share the work): a run
     * may make fewer allocations than the reference, so a run whose k-th
     * allocation never came is not a problem. */
    bool varying_allocs;
    int problems;
    uint64_t injected;
    uint64_t absorbed;     /* injected failures the call survived (caches) */
    uint64_t in_world_new; /* injected failures that hit tes_world_new */
    uint64_t in_flush;     /* injected failures that cost a queued change */
} fs_run_t;

void fs_problem(fs_run_t *r, const char *fmt, ...);

/* Before a call: false if the scenario was stopped. */
bool fs_before(fs_run_t *r);
/* Ends a step (records the reference run's allocation count). */
void fs_step_done(fs_run_t *r);
/* ctor - dtor against the live (and staged) values. */
void fs_check_live(fs_run_t *r, const char *what);
/* Every query against its twin. */
void fs_check_twins(fs_run_t *r, const char *what);
/* After a call returning rc: true if the call failed from the injected
 * failure and must be retried. */
bool fs_after(fs_run_t *r, int rc, const char *what);

/* Runs `expr` (an int status), checking it and retrying once after an
 * injected failure. */
#define FS_STEP(r, expr)                        \
    do {                                        \
        for (int fs_try_ = 0; fs_try_ < 2; fs_try_++) { \
            if (!fs_before(r))                  \
                break;                          \
            int fs_rc_ = (expr);                \
            if (!fs_after(r, fs_rc_, #expr))    \
                break;                          \
        }                                       \
    } while (0)

/* Status adapters for calls that return a handle, pointer or id. */
int fs_ent(fs_run_t *r, tes_entity_t *out, tes_entity_t e);
int fs_ptr(fs_run_t *r, void **out, void *p);
int fs_comp(fs_run_t *r, tes_comp_t *out, tes_comp_t c);
int fs_query(fs_run_t *r, tes_query_t **out, tes_query_t *q);

/* Creates the world through the counting allocator (retrying after an
 * injected failure, which must leak nothing). */
bool fs_world_new(fs_run_t *r, const tes_world_desc_t *desc);
/* Registers the base components, one step each. */
void fs_register_base(fs_run_t *r);
/* Registers one more component; returns its index or -1. */
int fs_register(fs_run_t *r, const char *name, uint32_t size, uint32_t align,
                tes_storage_t storage, bool stable, bool hooks);
/* Registers a table component with track_changes (no hooks); returns its
 * index or -1. */
int fs_register_tracked(fs_run_t *r, const char *name, uint32_t size);
/* The same in any storage (a tracked sparse component keeps its stamps
 * in its store: stamp pages beside its data pages). */
int fs_register_tracked_in(fs_run_t *r, const char *name, uint32_t size, tes_storage_t storage,
                           bool stable);
/* Registers a component whose entity_fields are the nfields offsets in
 * fields; returns its index or -1. */
int fs_register_refs(fs_run_t *r, const char *name, uint32_t size, tes_storage_t storage,
                     bool hooks, const size_t *fields, int32_t nfields);
/* Registers a component described by `count` members (its entity
 * members are its entity fields); returns its index or -1. */
int fs_register_members(fs_run_t *r, const char *name, uint32_t size, tes_storage_t storage,
                        bool hooks, const tes_member_t *members, int32_t count);
/* Remembers an entity so snapshots cover it. */
void fs_track(fs_run_t *r, tes_entity_t e);
/* Remembers an instance so snapshots cover it (its members: fs_track). */
void fs_track_inst(fs_run_t *r, tes_instance_t id);

/* Convenience steps (each one FS_STEP). */
tes_entity_t fs_spawn(fs_run_t *r);
void fs_spawn_n(fs_run_t *r, int32_t n, const int *ks, int32_t nk);
void fs_add(fs_run_t *r, tes_entity_t e, int k);
void fs_set(fs_run_t *r, tes_entity_t e, int k, uint32_t seed);
void fs_ensure(fs_run_t *r, tes_entity_t e, int k, uint32_t seed);
void fs_remove(fs_run_t *r, tes_entity_t e, int k);
tes_entity_t fs_clone(fs_run_t *r, tes_entity_t e);
void fs_destroy(fs_run_t *r, tes_entity_t e);
void fs_clear(fs_run_t *r, tes_entity_t e);
void fs_disable(fs_run_t *r, tes_entity_t e, bool disable);

/* Queries and deferred changes (steps_query.c). */
/* Creates a query (one step); returns its index or -1. twin: the index of
 * a query that must match the same entities, or -1. */
int fs_query_new(fs_run_t *r, const tes_query_desc_t *desc, int twin);
void fs_query_free(fs_run_t *r, int i);
void fs_defer_begin(fs_run_t *r);
/* tes_defer_end as a step: see the note at the top. */
void fs_defer_end(fs_run_t *r);
/* tes_progress as a step (see fs_defer_end). */
void fs_progress(fs_run_t *r);
/* Starts a loop over query i (a deferred level). */
tes_iter_t fs_iter(fs_run_t *r, int i);
/* tes_iter_next as a step; the last call applies the queue. */
bool fs_iter_next(fs_run_t *r, tes_iter_t *it);
/* Leaves a loop early (applies the queue when it was the last level). */
void fs_iter_fini(fs_run_t *r, tes_iter_t *it);

/* Prefabs and instances (steps_lifecycle.c): each one step, tracking what
 * it makes. fs_instantiate returns the instance (0 if the scenario died). */
tes_entity_t fs_prefab_new(fs_run_t *r);
tes_entity_t fs_prefab_child(fs_run_t *r, tes_entity_t prefab);
tes_instance_t fs_instantiate(fs_run_t *r, tes_entity_t prefab, int32_t cap);
void fs_instantiate_n(fs_run_t *r, tes_entity_t prefab, int32_t n);
void fs_instance_destroy(fs_run_t *r, tes_instance_t id);
void fs_adopt(fs_run_t *r, tes_instance_t id, tes_entity_t e);
void fs_detach(fs_run_t *r, tes_entity_t e);
/* tes_set of a caller-made value (a component with entity fields). */
void fs_set_value(fs_run_t *r, tes_entity_t e, int k, const void *value);

/* Scenarios of scenarios_lifecycle.c. */
void fs_sc_prefab(fs_run_t *r);
void fs_sc_instantiate(fs_run_t *r);
void fs_sc_instantiate_n(fs_run_t *r);
void fs_sc_adopt(fs_run_t *r);
void fs_sc_defer_instantiate(fs_run_t *r);
void fs_sc_defer_instance_destroy(fs_run_t *r);
void fs_sc_defer_ensure(fs_run_t *r);

/* Scenarios of scenarios_query.c. */
void fs_sc_query_new(fs_run_t *r);
void fs_sc_query_tables(fs_run_t *r);
void fs_sc_group_ops(fs_run_t *r);
void fs_sc_defer(fs_run_t *r);
void fs_sc_defer_loop(fs_run_t *r);
void fs_sc_defer_merge(fs_run_t *r);
void fs_sc_defer_plain(fs_run_t *r);

/* Scenarios of scenarios_sites.c. */
void fs_sc_group_collect(fs_run_t *r);
void fs_sc_spawn_wide(fs_run_t *r);
void fs_sc_graph_wide(fs_run_t *r);
void fs_sc_remove_group(fs_run_t *r);
void fs_sc_clear_group(fs_run_t *r);
void fs_sc_defer_spawn_grow(fs_run_t *r);
void fs_sc_defer_clear(fs_run_t *r);

/* Scenarios of scenarios_bulk.c. */
void fs_sc_bulk_spawn_with(fs_run_t *r);
void fs_sc_bulk_spawn_bulk(fs_run_t *r);
void fs_sc_bulk_destroy_n(fs_run_t *r);
void fs_sc_bulk_destroy_matching(fs_run_t *r);
/* Scenarios of scenarios_snapshot.c. */
void fs_sc_snapshot(fs_run_t *r);
void fs_sc_snapshot_large(fs_run_t *r);
/* Scenarios of scenarios_changes.c. */
void fs_sc_changes(fs_run_t *r);
void fs_sc_changes_sparse(fs_run_t *r);
void fs_sc_changes_stable(fs_run_t *r);
/* Scenarios of scenarios_systems.c. */
void fs_sc_systems(fs_run_t *r);
/* Scenarios of scenarios_hierarchy.c. */
void fs_sc_hierarchy(fs_run_t *r);
void fs_sc_hierarchy_defer(fs_run_t *r);
void fs_sc_hierarchy_batch(fs_run_t *r);
void fs_sc_hierarchy_cascade(fs_run_t *r);

typedef struct fs_scenario {
    const char *name;
    void (*run)(fs_run_t *r);
} fs_scenario_t;

extern const fs_scenario_t fs_scenarios[];
extern const int fs_nscenarios;

#endif
