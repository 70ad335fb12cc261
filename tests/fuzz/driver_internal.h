/*
 * What the driver's files share (driver.c: entropy, helpers, setup and the
 * op loop; driver_ops.c: entity and component ops; driver_check.c: per-op
 * and full-state checks; driver_query.c: queries; driver_defer.c: deferred
 * blocks and changes made from inside query loops; driver_bulk.c: bundle,
 * bulk and batch calls; driver_lifecycle.c: prefabs and instances;
 * driver_hooks.c: what observers do while they run; driver_hier.c: links,
 * names, their reads, and the forest's checks).
 *
 * One rule ties the op code to deferred mode: while defer_depth > 0 (an
 * explicit tes_defer_begin level or a live iterator the driver opened), a
 * structural op checks the status the library returns at queue time, then
 * appends the change to the model's queue instead of applying it; reads
 * keep comparing with the model's current state. The level that brings
 * defer_depth back to zero flushes the model's queue right after the
 * library flushed its own.
 */
#ifndef TES_FUZZ_DRIVER_INTERNAL_H
#define TES_FUZZ_DRIVER_INTERNAL_H

#include "fuzz/driver.h"
#include "fuzz/model.h"
#include "fuzz/model_query.h"
#include "fuzz/track.h"

#define FZ_HIST 256
#define FZ_MAX_SPAWN_N 80
/* Prefabs: at most this many live, with at most this many live members
 * each (the small id spaces get fewer; see driver_lifecycle.c), and up to
 * FZ_MAX_INST_N instances per tes_instantiate_n. */
#define FZ_MAX_PREFABS 6
#define FZ_MAX_MEMBERS 7
#define FZ_MAX_INST_N 6
#define FZ_MAX_QUERIES 32
/* Nesting limits for ops started from inside other ops (a defer block runs
 * ops, a query loop runs ops, and either may contain the other). */
#define FZ_MAX_NEST 3
/* Iterations open at once, at most (one per nested loop, plus a check). */
#define FZ_MAX_ITERS (FZ_MAX_NEST + 3)

typedef struct fz_dquery {
    tes_query_t *q; /* NULL: a free entry */
    fz_mquery_t mq;
    uint32_t busy;  /* live iterators over it: it must not be freed */
    bool fresh;     /* made by a hook: checked once the op is over */
} fz_dquery_t;

/* Which slots an iteration has visited: seen[index] == stamp. */
typedef struct fz_seen {
    uint32_t *seen;
    uint32_t cap;
    uint32_t stamp;
} fz_seen_t;

/* Systems (driver_systems.c): at most this many alive. */
#define FZ_MAX_SYSTEMS 6
struct fz_dsys;

typedef struct fz_driver {
    tes_world_t *w;
    fz_model_t m;
    fz_tracker_t t;
    tes_comp_t ids[FZ_NALL];
    tes_comp_t max_id;
    fz_source_t *src;
    const fz_config_t *cfg;
    uint64_t step;
    uint64_t vals;  /* values made so far: each one differs */
    const char *op;
    tes_entity_t hist[FZ_HIST]; /* issued handles, some since destroyed */
    uint32_t hist_n, hist_pos;
    int last_error; /* what tes_last_error must say: successes keep it */
    int last_error_alt; /* another acceptable value (0: none); see fzd_level_closed */
    fz_result_t *res;
    /* Deferred mode. */
    int32_t defer_depth; /* levels open in the library, as the driver knows them */
    int32_t blocks;      /* those opened by tes_defer_begin (tes_defer_end ends only these) */
    int32_t nest;        /* ops running inside other ops */
    /* Entities of the chunk a query loop is at: pick_entity favours them. */
    const tes_entity_t *prefer;
    uint32_t nprefer;
    /* Queries. */
    fz_dquery_t queries[FZ_MAX_QUERIES];
    fz_bits_t owned;   /* bit k: an owning group holds k's store */
    /* Prefabs and instances. */
    tes_instance_t ihist[FZ_HIST]; /* issued instance ids, some dead since */
    uint32_t ihist_n, ihist_pos;
    tes_entity_t ref_root; /* references favour this prefab's members (0: none) */
    uint32_t max_prefabs, max_members;
    fz_seen_t seen[FZ_MAX_ITERS]; /* one per iteration open at once */
    int32_t iters;                /* iterations the driver has open */
    /* Observers' actions (driver_hooks.c). */
    uint32_t fresh;               /* queries made by hooks, not checked yet */
    uint32_t full_checks;         /* full checks so far */
    bool in_action;
    /* Huge values: the bytes of one (to pass to tes_set), and of the one
     * a comparison expects (FZ_HUGE_SIZE each). */
    uint8_t *huge_arg, *huge_want;
    /* Systems. */
    struct fz_dsys *systems;      /* FZ_MAX_SYSTEMS entries */
    uint32_t system_serial;       /* systems made so far: creation order */
    uint32_t frames;              /* tes_progress calls that ran a frame */
    int32_t threads;              /* the world's threads */
} fz_driver_t;

/* driver.c: helpers. */
void fzd_fail(fz_driver_t *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static inline bool fzd_failed(const fz_driver_t *d) { return d->res->diverged; }
static inline uint32_t fzd_draw(fz_driver_t *d, uint32_t bound) { return fz_draw(d->src, bound); }
static inline unsigned long long ull(uint64_t x) { return (unsigned long long)x; }
void fzd_hist_add(fz_driver_t *d, tes_entity_t e);
tes_entity_t fzd_pick_entity(fz_driver_t *d);
int fzd_pick_comp(fz_driver_t *d, tes_comp_t *id);
int fzd_expect2(bool alive, bool comp_ok, int *alt);

/* The driver's reads (driver_reads.c): the call, and on a miss a check
 * that tes_last_error says why, which becomes the expected status.
 * has_values: c is a registered component with data. */
const void *fzd_get(fz_driver_t *d, tes_entity_t e, tes_comp_t c);
void *fzd_get_mut(fz_driver_t *d, tes_entity_t e, tes_comp_t c);
int32_t fzd_components_of(fz_driver_t *d, tes_entity_t e, tes_comp_t *out, int32_t cap);
int32_t fzd_prefab_members(fz_driver_t *d, tes_entity_t prefab, tes_entity_t *out, int32_t cap);
int32_t fzd_instance_members(fz_driver_t *d, tes_instance_t inst, tes_entity_t *out, int32_t cap);
int32_t fzd_get_n(fz_driver_t *d, tes_comp_t c, bool has_values, const tes_entity_t *es,
                  int32_t n, const void **out);
void fzd_check_status(fz_driver_t *d, int got, int want, int alt);
void fzd_check_error(fz_driver_t *d, int want, int alt);
void fzd_check_value(fz_driver_t *d, uint32_t index, int k, const void *ptr, const char *what);
/* Compares a staged value (a queued set's) with the model's bytes. */
void fzd_check_staged(fz_driver_t *d, const fz_qop_t *op, const void *ptr, const char *what);
void fzd_make_value(fz_driver_t *d, int k, uint8_t out[FZ_MAXSIZE]);
/* The library's side of a model value of k: the bytes to pass to tes_set
 * (a huge value expanded from its seed), whether the value at ptr equals
 * it (payload only), and writing it through ptr. */
const void *fzd_lib_value(fz_driver_t *d, int k, const uint8_t val[FZ_MAXSIZE]);
bool fzd_lib_equal(fz_driver_t *d, int k, const void *ptr, const uint8_t val[FZ_MAXSIZE]);
void fzd_lib_write(fz_driver_t *d, int k, void *ptr, const uint8_t val[FZ_MAXSIZE]);
/* The model side of a successful spawn (pending and queued when deferred). */
tes_entity_t fzd_model_spawn(fz_driver_t *d);
/* Queues a change in the model. */
void fzd_queue(fz_driver_t *d, fz_qkind_t kind, tes_entity_t e, int k, tes_entity_t src);
/* Describes c's entity references in cd: as TES_TYPE_ENTITY members
 * (after a u64 serial member for a tracked component) when c says so,
 * else through entity_fields. `members` holds 3 entries and must outlive
 * the tes_component call. */
static inline void fzd_describe_refs(const fz_comp_info_t *c, tes_component_desc_t *cd,
                                     tes_member_t members[3])
{
    if (!c->ref_members) {
        cd->entity_field_count = c->nrefs;
        for (uint32_t f = 0; f < c->nrefs; f++)
            cd->entity_fields[f] = c->ref_off[f];
        return;
    }
    static const char *const names[2] = {"ref0", "ref1"};
    int32_t n = 0;
    if (c->tracked)
        members[n++] = (tes_member_t){"serial", TES_TYPE_U64, 0, 1};
    for (uint32_t f = 0; f < c->nrefs; f++)
        members[n++] = (tes_member_t){names[f], TES_TYPE_ENTITY, c->ref_off[f], 1};
    cd->members = members;
    cd->member_count = n;
}

/* Runs one op of the mix (ops nested inside blocks and loops included). */
void fzd_run_op(fz_driver_t *d, int op);
int fzd_pick_op(fz_driver_t *d);
/* An op of the mix that changes the world (or writes a value). */
int fzd_pick_structural_op(fz_driver_t *d);

/* driver_ops.c */
void fzd_op_spawn(fz_driver_t *d);
void fzd_op_spawn_n(fz_driver_t *d);
void fzd_op_destroy(fz_driver_t *d);
void fzd_op_alive(fz_driver_t *d);
void fzd_op_add(fz_driver_t *d);
void fzd_op_set(fz_driver_t *d);
void fzd_op_ensure(fz_driver_t *d);
void fzd_op_remove(fz_driver_t *d);
void fzd_op_has(fz_driver_t *d);
void fzd_op_get(fz_driver_t *d);
void fzd_op_clear(fz_driver_t *d);
void fzd_op_clone(fz_driver_t *d);
void fzd_op_components_of(fz_driver_t *d);
void fzd_op_disable(fz_driver_t *d);
void fzd_op_enabled(fz_driver_t *d);
void fzd_op_stats(fz_driver_t *d);
/* Gives an entity most of the wide components (a table of more than 64
 * columns), one call each or in one tes_spawn_n. */
void fzd_op_widen(fz_driver_t *d);
/* Removes one component from every entity that has it (a burst). */
void fzd_op_strip(fz_driver_t *d);

/* driver_check.c */
void fzd_check_components_of(fz_driver_t *d, tes_entity_t e, int32_t cap, bool null_out);
void fzd_check_stats(fz_driver_t *d);
void fzd_check_step(fz_driver_t *d);
void fzd_check_full(fz_driver_t *d);

/* driver_query.c */
bool fzd_queries_setup(fz_driver_t *d);
void fzd_queries_fini(fz_driver_t *d, bool free_them);
/* Iterates q and compares every chunk with the model. ops_per_chunk > 0
 * also runs that many ops (at most) from inside each chunk, which the
 * library defers; may_break lets the loop end early with tes_iter_fini. */
void fzd_iterate(fz_driver_t *d, fz_dquery_t *dq, uint32_t ops_per_chunk, bool may_break);
/* Checks every query (count and full iteration). */
void fzd_check_queries(fz_driver_t *d);
void fzd_op_query_check(fz_driver_t *d);
void fzd_op_query_new(fz_driver_t *d);
/* A random description (usually well-formed: the model's status; now and
 * then malformed: TES_ERR_INVALID). */
int fzd_random_desc(fz_driver_t *d, tes_query_desc_t *desc, fz_mquery_t *mq);
/* Frees the query of entry dq (no live iterator over it). */
void fzd_free_query(fz_driver_t *d, fz_dquery_t *dq);
/* Checks the queries hooks made during the last op (iteration and count). */
void fzd_check_fresh(fz_driver_t *d);

/* driver_hooks.c: what observers do now and then while they run (the
 * tracker's action): make and free queries and non-owning groups, try to
 * open or close deferral levels and make owning groups (refused with
 * TES_ERR_BUSY when cfg->hook_busy). */
void fzd_hook_action(fz_tracker_t *t, tes_world_t *w, tes_entity_t e, int k, const char *hook);

/* driver_lifecycle.c */
void fzd_op_prefab_new(fz_driver_t *d);
void fzd_op_prefab_child(fz_driver_t *d);
void fzd_op_prefab_edit(fz_driver_t *d);
void fzd_op_instantiate(fz_driver_t *d);
void fzd_op_instantiate_n(fz_driver_t *d);
void fzd_op_instance_destroy(fz_driver_t *d);
void fzd_op_instance_read(fz_driver_t *d);
void fzd_op_detach(fz_driver_t *d);
void fzd_op_adopt(fz_driver_t *d);
/* A reference for an entity field: null, a prefab member, or any handle. */
tes_entity_t fzd_pick_ref(fz_driver_t *d);
/* The status destroying live es (n of them) with their descendants must
 * return: TES_ERR_OWNED when a strict world protects an entity of the
 * plan, else TES_OK. */
int fzd_destroy_status(fz_driver_t *d, const tes_entity_t *es, uint32_t n);
/* Full check of instances, prefabs and held references. */
void fzd_check_lifecycle(fz_driver_t *d);

/* driver_hier.c */
void fzd_op_set_parent(fz_driver_t *d);
void fzd_op_set_name(fz_driver_t *d);
/* tes_parent, tes_children, tes_depth, tes_name, tes_path, tes_lookup_path. */
void fzd_op_hier_read(fz_driver_t *d);
/* Full check of the forest: links, child order, depth, names, paths. */
void fzd_check_hier(fz_driver_t *d);
/* A chunk's it.depth: 0 without TES_QUERY_CASCADE; with it, every entity's
 * depth and never less than *last (the chunk before; updated). False
 * after a failure. */
bool fzd_check_chunk_depth(fz_driver_t *d, const char *desc, const fz_mquery_t *q,
                           const tes_iter_t *it, int32_t *last);
/* Field t of a chunk, a TES_SRC_PARENT term (desc names the query):
 * NULL for NOT terms, tags and (OPTIONAL) chunks whose parents lack the
 * component; else the parents' values, compared with the model when the
 * chunk is made (first). */
void fzd_check_parent_field(fz_driver_t *d, const char *desc, const fz_mterm_t *term,
                            tes_iter_t *it, int32_t t, bool first);

/* driver_bulk.c */
void fzd_op_spawn_with(fz_driver_t *d);
void fzd_op_spawn_bulk(fz_driver_t *d);
void fzd_op_destroy_n(fz_driver_t *d);
void fzd_op_destroy_matching(fz_driver_t *d);
void fzd_op_get_n(fz_driver_t *d);
/* driver_snapshot.c */
/* Adds save/load hooks to a tracked component's hooks. */
void fzd_snapshot_hooks(int k, tes_hooks_t *hooks);
/* Save, load into a fresh world, compare bytes, carry on with the loaded
 * world (at top level; inside a deferred level only checks the refusal). */
void fzd_op_snapshot(fz_driver_t *d);
/* driver_systems.c */
/* Creates or frees a system, or runs a frame checked against the model. */
void fzd_op_systems(fz_driver_t *d);
/* Frees the systems (free_them) or forgets them (tes_world_free will). */
void fzd_systems_fini(fz_driver_t *d, bool free_them);
/* Makes the systems again in a world that replaced the driver's (a
 * snapshot load), in creation order. */
void fzd_systems_rehome(fz_driver_t *d);
size_t fzd_systems_size(void);

/* driver_defer.c */
/* Closes one deferred level the driver opened; at zero the model applies
 * its queue. Returns what applying it must report (TES_OK if it did not). */
int fzd_level_closed(fz_driver_t *d);
void fzd_op_defer_block(fz_driver_t *d);
void fzd_op_query_mutate(fz_driver_t *d);
void fzd_op_defer_burst(fz_driver_t *d);

#endif
