/*
 * The world: ties the entity index, the component registry and the table
 * graph together. This header is internal; the public type is opaque.
 *
 * Structural operations live in entity_ops.c (spawn, destroy, clone, clear)
 * and component_ops.c (add, set, remove, ensure; the reads are in get.c);
 * both follow one discipline so that a failed call leaves the world as it
 * was: validate, reserve every allocation the call may need, then commit
 * with code that cannot fail, then fire hooks. The quiet state is in
 * world/quiet_word.h, the guards every structural call runs between
 * (tes__world_begin / tes__world_end) in world/quiet.h; world lifetime is
 * in world_life.c, at the top of the layer.
 */
#ifndef TES_WORLD_WORLD_H
#define TES_WORLD_WORLD_H

#include "core/thread_pool.h"
#include "entity/entity_index.h"
#include "storage/table_graph.h"
#include "world/defer_types.h"

struct tes__pool;

typedef void (*tes__observer_fn)(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);

/* A watcher hears about structural changes: higher layers (groups, the
 * lifecycle layer, the query filter index) register one to keep their own
 * structures up to date without the world knowing what they are. Events
 * are routed: a change of component c reaches only the watchers that
 * subscribed to c (see tes__world_watch), so k groups on unrelated
 * components cost a change nothing; whole-entity events (spawn, clone,
 * clear: c == 0) and destroys (c == TES__WATCH_DESTROY) reach every
 * watcher, with one exception: a watcher that sets creations_by_comps is
 * told of a new entity only when it holds one of the watcher's components,
 * so the spawn of an empty entity (c == TES__WATCH_EMPTY, told to the
 * callbacks as c == 0) skips it, and so may the quiet path of
 * tes_spawn_with. An entity holding none of them cannot concern a group
 * (which has an AND term among its components) or the filter index (its
 * byte is 0 already); without this, one sparse query would send every
 * spawn down the watched path. For each change the world calls reserve
 * (before committing anything; may fail with TES_ERR_NOMEM, and the change
 * is then abandoned), before (the entity is still as it was), and after
 * (the change is done). */
#define TES__WATCH_DESTROY UINT32_C(0xFFFFFFFF)
#define TES__WATCH_EMPTY UINT32_C(0xFFFFFFFE)
/* The most components one watcher subscribes to (a query's terms and the
 * two default-filtered tags). */
#define TES__WATCH_MAX_COMPS (TES_MAX_TERMS + 2)
typedef struct tes__watcher {
    int (*reserve)(void *ctx, uint32_t entity_index, uint32_t extra);
    void (*before)(void *ctx, tes_entity_t e, tes_comp_t c);
    void (*after)(void *ctx, tes_entity_t e, tes_comp_t c);
    void *ctx;
    bool destroy_only; /* hears only before(e, TES__WATCH_DESTROY) */
    bool creations_by_comps; /* told of a new entity only when it holds one
                                of comps[] (never of an empty spawn) */
    bool dead;         /* removed during a walk; dropped when it ends */
    void (*release)(void *ctx); /* a dead watcher's deferred release */
    /* The components whose changes it hears (set by tes__world_watch). */
    tes_comp_t comps[TES__WATCH_MAX_COMPS];
    uint32_t ncomps;
} tes__watcher_t;

/* The entities whose changes the structural call in progress reports to
 * watchers. Hooks run between a call's reserve and its last after: a
 * watcher they register (a group built by an observer) has not reserved
 * anything, so tes__world_watch has it reserve room for these entities
 * before it joins the list. Set by tes__watch_reserve_one (one entity) or
 * tes__watch_scope_list (a batch); cleared when the call ends. A list
 * points at the caller's array, valid until then. */
typedef struct tes__watch_scope {
    uint32_t count;              /* 0 when no call is in progress */
    uint32_t index;              /* the one entity's index (no list) */
    const uint32_t *indices;     /* or a list of entity indices */
    const tes_entity_t *handles; /* or a list of handles */
} tes__watch_scope_t;

static inline uint32_t tes__watch_scope_index(const tes__watch_scope_t *s, uint32_t i)
{
    if (s->indices)
        return s->indices[i];
    if (s->handles)
        return tes_entity_index(s->handles[i]);
    return s->index;
}

/* Something built on the world (a query) that tes_world_free must finalise
 * first if the user has not freed it. */
typedef struct tes__dependent {
    void (*fini)(void *ctx);
    void *ctx;
    /* Set when the user freed the dependent from inside a hook: the world
     * calls it once the outermost structural call ends (see
     * tes__world_doom). */
    void (*release)(void *ctx);
    /* Set while the dependent waits to finish, once the outermost
     * structural call ends, what it could not do inside a hook (see
     * tes__world_settle_later). */
    void (*settle)(void *ctx);
} tes__dependent_t;

/* The deferral levels whose holder the world records (iter_levels). */
#define TES__ITER_LEVELS 8u

struct tes__lifecycle; /* the lifecycle layer's state, opaque here */
struct tes__filters;   /* the query layer's filter index, opaque here */
struct tes__systems;   /* the system layer's state, opaque here */

/* The last table-only bundle tes_spawn_with placed (bulk_ops.c), keyed by
 * its ids as given, with the move plan that places it: from the root into
 * its table, value k read from the ptr of the call's value k. A repeated
 * bundle skips validation, the table lookup and the planning. Never
 * stale: tables, columns and components are never deleted. */
#define TES__BUNDLE_MAX TES__PLAN_VALUES
typedef struct tes__bundle_cache {
    tes_comp_t ids[TES__BUNDLE_MAX];
    uint32_t n;                    /* 0: empty */
    bool hooked;                   /* some value has on_add or on_set */
    bool quiet;                    /* neither hooked nor a hooked plan: runs no user code */
    tes__move_plan_t plan;
} tes__bundle_cache_t;

/* Change detection's clock (changes.c). `tick` stamps writes of tracked
 * values; `epoch` counts every move or construction of stamps (it never
 * wraps in practice), so a table's summary counts only while no stamp
 * moved since it was rebuilt. Atomic: systems on worker threads read the
 * tick while stamping and the epoch while filtering. */
/* Tables whose whole-table written chunks are stamped lazily (see
 * tes__stamp_sum_t.pend_rows), at most this many at once; a chunk of a
 * further table is stamped row by row. */
#define TES__STAMP_PENDING 8

typedef struct tes__changes {
    _Atomic uint32_t tick;
    _Atomic uint64_t epoch;
    /* Tables with a pending range in some summary. Touched only by the
     * calling thread: the scheduler settles them all before workers run
     * (tes__changes_settle_all), and a chunk stamped while `parallel` is
     * filled at once, so a worker's nested walk finds none. */
    struct tes__table *pending[TES__STAMP_PENDING];
    uint32_t pending_count;
} tes__changes_t;

struct tes_world {
    tes__alloc_t alloc;
    tes__changes_t changes;
    tes__entity_index_t entities;
    tes__registry_t components;
    tes__table_graph_t tables;
    tes__defer_t defer;
    tes__watcher_t *watchers;    /* every watcher: whole-entity events */
    uint32_t watcher_count;
    uint32_t watcher_cap;
    uint32_t creation_watchers; /* live watchers told of every new entity */
    uint32_t *watch_routes; /* per component id: live watchers subscribed */
    uint32_t watch_route_cap;
    uint32_t watch_walking; /* > 0 while before/after notifications run */
    bool watch_dead;        /* a watcher was removed during a walk */
    tes__watch_scope_t watch_scope;
    struct tes__lifecycle *lifecycle; /* created by the lifecycle layer on first use */
    uint32_t instances_alive;         /* kept by the lifecycle layer, for stats */
    uint64_t last_frame_ns;           /* written by tes_progress, for stats */
    struct tes__filters *filters;     /* created by the query layer on first use */
    void *scratch;      /* room for one component value (tes_set's image) */
    size_t scratch_size;
    tes__dependent_t *dependents;
    uint32_t dependent_count;
    uint32_t dependent_cap;
    int last_error;
    tes__detail_t detail; /* tes_last_error_detail's sentence */
    /* Every failure recorded on the world counts here, so that the
     * per-thread record of a failed const call (last_error.c) can tell
     * whether it is the newer one; serial tells apart worlds that take the
     * same address one after the other. */
    uint64_t fail_epoch;
    uint64_t serial;
    /* Names the queries whose iterators are still open (set by the query
     * layer when it makes its first query), for the detail of a call
     * refused while the world is deferred (explain.c). */
    size_t (*describe_iters)(const tes_world_t *w, char *buf, size_t cap);
    /* Checks what the live queries keep between iterations (set by the
     * query layer with describe_iters), for tes__world_check: TES_OK or
     * an error after printing what is wrong. */
    int (*check_queries)(const tes_world_t *w);
    tes__bundle_cache_t bundle;
    bool strict_lifecycle;
    /* Threads (tes_progress). While systems run on several threads at once,
     * `parallel` is set and failures are recorded per thread in
     * thread_errors (index: tes__pool_thread), so that no two threads write
     * the same word; the quiet state's refusal bits (tes__refuse) say which
     * calls the running systems may not make. Both are written only by the calling thread, between
     * jobs. */
    struct tes__pool *pool;       /* NULL with threads <= 1 */
    int32_t threads;              /* 1 + workers */
    int *thread_errors;           /* threads entries */
    bool parallel;
    _Atomic uint64_t quiet; /* the quiet state: see world/quiet_word.h */
    /* Who holds deferral levels 1..TES__ITER_LEVELS: an iterator records
     * its query (as a token the query layer reads back) at the level its
     * tes_query_iter opened and clears it when it ends, so that a call
     * refused while the world is deferred can name the query of a loop
     * left without tes_iter_fini (explain.c) without a shared counter to
     * update on every iteration. Written with relaxed stores, by the
     * thread that opened the level only (see tes__world_level_mark). */
    _Atomic uintptr_t iter_levels[TES__ITER_LEVELS];
    /* Per-thread command queues (defer_lanes.c), made on first use; while
     * lanes_live, queuing calls, hook depth and scratch are per thread. */
    tes__lane_t *lanes;           /* threads entries, or NULL */
    bool lanes_live;
    struct tes__systems *systems; /* created by the system layer on first use */
    /* The hierarchy layer's state and callbacks (src/hierarchy): NULL until
     * the first link or name, so a world without them pays one test per
     * destroy. */
    struct tes__hier *hier;
    const struct tes__hier_ops *hier_ops;
    /* Counts every change of a link (the hierarchy layer bumps it), so a
     * by-depth walk can tell whether the order it keeps still holds. */
    uint64_t link_changes;
    /* The depth order tes_sort_by_depth left (world/depth_order.h), NULL
     * before the first sort. */
    struct tes__depth_order *depth_order;
};

/* What the hierarchy layer tells the world, registered with its state
 * (the world never calls that layer by name). */
typedef struct tes__hier_ops {
    /* Whether live entity `index` has children: its destroy cascades. */
    bool (*has_children)(const tes_world_t *w, uint32_t index);
    /* The destroy order of n listed live entities: each listed entity's
     * subtree in post-order (children before parents, siblings in order),
     * a listed entity under another listed one only once, with its
     * ancestor's subtree. *out is allocated (*bytes long). TES_OK or
     * TES_ERR_NOMEM (nothing allocated). */
    int (*plan)(tes_world_t *w, const tes_entity_t *es, uint32_t n, tes_entity_t **out,
                uint32_t *count, size_t *bytes);
    /* Told just before live entity e is freed (its hooks have run): drops
     * its link and name. Cannot fail. */
    void (*destroyed)(tes_world_t *w, tes_entity_t e);
    /* A clone gets its source's parent (appended): with commit false,
     * reserves what linking `copy` (entity index) needs (TES_OK or
     * TES_ERR_NOMEM); with commit true, links it. A deferred clone is
     * linked at the flush and may have been named since: a link that
     * would repeat a sibling's name is not made (TES_ERR_INVALID,
     * recorded with a detail; the clone stays a root). */
    int (*clone_link)(tes_world_t *w, tes_entity_t src, uint32_t copy, bool commit);
    /* Instantiation: n instances of the m prefab members (TES_NULL for a
     * dead one) go to the entity indices indices[k * m + i]. Prepare
     * reserves what copying the links among the members (remapped, child
     * order kept) and the names of members under another member needs:
     * TES_OK with *prep (NULL: nothing to copy) or TES_ERR_NOMEM (nothing
     * kept). Commit applies and frees prep, skipping entities marked in
     * skip (NULL: none); a copy named while pending (a deferred
     * instantiation) keeps its name, and a link that would repeat a
     * sibling's name is not made: TES_ERR_INVALID (recorded), the rest
     * applied; else TES_OK. Discard frees an unused prep. */
    int (*instance_prepare)(tes_world_t *w, const tes_entity_t *members, uint32_t m, uint32_t n,
                            const uint32_t *indices, void **prep);
    int (*instance_commit)(tes_world_t *w, void *prep, const uint32_t *indices,
                           const uint8_t *skip);
    void (*instance_discard)(tes_world_t *w, void *prep);
    /* For queries reading parents (by-depth walks): live entity `index`'s
     * parent (index + 1, 0 for a root) into *parent, and its depth (0 for
     * a root) as the result. Cannot fail. */
    int32_t (*lineage)(const tes_world_t *w, uint32_t index, uint32_t *parent);
    /* Live entity `index`'s parent as index + 1 (0 for a root): one step
     * up, for walks that keep depths of their own. Cannot fail. */
    uint32_t (*parent_of)(const tes_world_t *w, uint32_t index);
    /* The hierarchy's invariants, for tes__world_check: TES_OK, or
     * TES_ERR_INVALID after printing the first broken one to stderr. */
    int (*check)(const tes_world_t *w);
} tes__hier_ops_t;

/* The entities a destroy of a listed set really destroys, in order: the
 * listed ones themselves when none has children (nothing allocated), else
 * the hierarchy's post-order plan. */
typedef struct tes__destroy_plan {
    const tes_entity_t *items;
    uint32_t count;
    tes_entity_t *owned; /* allocated list, or NULL */
    size_t bytes;
} tes__destroy_plan_t;

/* Whether some live entity has children (a destroy may cascade). */
static inline bool tes__world_has_links(const tes_world_t *w) { return w->hier != NULL; }

/* Makes w->scratch hold at least size bytes. TES_OK or TES_ERR_NOMEM. */
int tes__world_scratch(tes_world_t *w, size_t size);

/* Registers / removes a dependent (removal matches on ctx). */
int tes__world_depend(tes_world_t *w, void (*fini)(void *ctx), void *ctx);
void tes__world_undepend(tes_world_t *w, void *ctx);

/* Frees a dependent later: a dependent freed from inside a hook may still be
 * in use by the call that runs the hook (an owning group's watcher runs move
 * hooks while it reorders its stores), so the dependent stays registered
 * and working until the outermost structural call ends; then the world
 * removes it and calls release(ctx). World teardown finalises it with its
 * fini like any other. Allocates nothing, cannot fail. */
void tes__world_doom(tes_world_t *w, void *ctx, void (*release)(void *ctx));
/* Releases every doomed dependent (hook depth zero only). */
void tes__world_release_doomed(tes_world_t *w);

/* Calls settle(ctx) once the outermost structural call ends, for a
 * dependent made inside a hook that has work it could not do there (a
 * non-owning group's build). The world then has a single user (the rules
 * for threads), so settle may change shared state, which a reader such as
 * tes_query_iter never may. It runs once per request and may ask again (a
 * build that failed for lack of memory retries after the next call).
 * Allocates nothing, cannot fail; ctx must be a registered dependent, and
 * a doomed or removed one is never settled. */
void tes__world_settle_later(tes_world_t *w, void *ctx, void (*settle)(void *ctx));
/* Settles every dependent waiting to (hook depth zero only). */
void tes__world_settle(tes_world_t *w);

/* Registers / removes a watcher (removal matches on ctx). The watcher hears
 * whole-entity events and the changes of the n components in comps (at most
 * TES__WATCH_MAX_COMPS; a destroy_only watcher passes none): events are
 * routed, so a change of a component no watcher names costs one load.
 * TES_OK or TES_ERR_NOMEM (nothing registered). release, when
 * not NULL, frees what ctx owns: at once, or, when a hook run by a
 * notification removes the watcher (freeing a group's query from a move
 * hook that the group's own swap runs), once the walk that is using ctx is
 * over. */
int tes__world_watch(tes_world_t *w, const tes__watcher_t *watcher, const tes_comp_t *comps,
                     uint32_t n);
void tes__world_unwatch(tes_world_t *w, void *ctx, void (*release)(void *ctx));

/* Drops the watchers removed during a walk (see tes__world_unwatch). */
void tes__world_watch_compact(tes_world_t *w);

/* True when some live watcher hears changes of component c (it may then
 * reorder stores); always true for whole-entity events (c == 0 or
 * TES__WATCH_DESTROY) when any watcher exists. */
static inline bool tes__watched(const tes_world_t *w, tes_comp_t c)
{
    if (c == 0 || c == TES__WATCH_DESTROY)
        return w->watcher_count != 0;
    if (c == TES__WATCH_EMPTY)
        return w->creation_watchers != 0;
    return c < w->watch_route_cap && w->watch_routes[c] != 0;
}

/* Whether watcher wt hears an event about c. */
static inline bool tes__watch_hears(const tes__watcher_t *wt, tes_comp_t c)
{
    if (wt->dead)
        return false;
    if (c == 0 || c == TES__WATCH_DESTROY)
        return true;
    if (c == TES__WATCH_EMPTY)
        return !wt->creations_by_comps;
    for (uint32_t i = 0; i < wt->ncomps; i++)
        if (wt->comps[i] == c)
            return true;
    return false;
}

/* The event that tells watchers of a new entity holding comps[0..n): 0
 * (every watcher) when some watcher hears one of comps, else
 * TES__WATCH_EMPTY, which reaches only the watchers told of every new
 * entity (often none, and then a creation walks no list at all). A call
 * reserves and reports with the same event. */
static inline tes_comp_t tes__creation_event(const tes_world_t *w, const tes_comp_t *comps,
                                             uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (tes__watched(w, comps[i]))
            return 0;
    return TES__WATCH_EMPTY;
}

/* Asks every watcher of c (0: every watcher) for room for a change of the
 * entity with this index
 * (extra: how many more entities may join, in all, for a batch). The loops
 * read the list by position on every step: a hook may register a watcher
 * (growing the list) or remove one (leaving a dead entry) while they run. */
static inline int tes__watch_reserve(tes_world_t *w, tes_comp_t c, uint32_t entity_index,
                                     uint32_t extra)
{
    if (!tes__watched(w, c))
        return TES_OK;
    for (uint32_t i = 0; i < w->watcher_count; i++) {
        tes__watcher_t *wt = &w->watchers[i];
        if (wt->destroy_only || !tes__watch_hears(wt, c))
            continue;
        int rc = wt->reserve(wt->ctx, entity_index, extra);
        if (rc)
            return rc;
    }
    return TES_OK;
}

/* The reserve of a single-entity structural call: also records the entity
 * as the call's scope, so that a watcher a hook registers before the call
 * is over reserves room for it too. */
static inline int tes__watch_reserve_one(tes_world_t *w, tes_comp_t c, uint32_t entity_index)
{
    w->watch_scope = (tes__watch_scope_t){1, entity_index, NULL, NULL};
    return tes__watch_reserve(w, c, entity_index, 1);
}

/* Records a batch call's entities (indices or handles, one of them NULL)
 * as its scope; the list must live until the call ends. */
static inline void tes__watch_scope_list(tes_world_t *w, const uint32_t *indices,
                                         const tes_entity_t *handles, uint32_t count)
{
    w->watch_scope = (tes__watch_scope_t){count, 0, indices, handles};
}

static inline void tes__watch_before(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!tes__watched(w, c))
        return;
    w->watch_walking++;
    for (uint32_t i = 0; i < w->watcher_count; i++) {
        const tes__watcher_t *wt = &w->watchers[i];
        if (tes__watch_hears(wt, c) && (!wt->destroy_only || c == TES__WATCH_DESTROY))
            wt->before(wt->ctx, e, c);
    }
    if (--w->watch_walking == 0 && w->watch_dead)
        tes__world_watch_compact(w);
}

static inline void tes__watch_after(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!tes__watched(w, c))
        return;
    w->watch_walking++;
    for (uint32_t i = 0; i < w->watcher_count; i++) {
        const tes__watcher_t *wt = &w->watchers[i];
        if (tes__watch_hears(wt, c) && !wt->destroy_only)
            wt->after(wt->ctx, e, c == TES__WATCH_EMPTY ? 0 : c);
    }
    if (--w->watch_walking == 0 && w->watch_dead)
        tes__world_watch_compact(w);
}


/* The calling thread's lane (only while w->lanes_live). */
static inline tes__lane_t *tes__lane(const tes_world_t *w)
{
    return &w->lanes[tes__pool_thread(w->pool)];
}

/* The queue structural calls record into: the world's, or the calling
 * thread's own while a split structural system runs. */
static inline tes__defer_t *tes__defer_queue(tes_world_t *w)
{
    return tes__unlikely(w->lanes_live) ? &tes__lane(w)->queue : &w->defer;
}

/* Records TES_ERR_STALE for handle e with a detail that says which case it
 * is: TES_NULL, never issued (an index past those issued, or a generation
 * the slot never had) or destroyed (the generation seen and the slot's
 * current one, or a retired slot). Every call that reports TES_ERR_STALE
 * for an entity records it through this (explain.c). */
int tes__fail_stale(tes_world_t *w, tes_entity_t e);

/* Records TES_ERR_BUSY for `call` (a public name, or a phrase such as "a
 * structural call") with a detail that says what is running: a hook level
 * (a user hook, a structural call's hooks, a snapshot reader or writer, a
 * save or load hook: they all raise the hook depth), a system that may not
 * make the call, or a deferred flush. Every refusal of a call made from
 * inside the world's own calls goes through here, so each says why. */
int tes__fail_busy(tes_world_t *w, const char *call);

/* The table a live slot points to. */
static inline tes__table_t *tes__slot_table(const tes_world_t *w, const tes__slot_t *s)
{
    return w->tables.tables[s->table & TES__SLOT_TABLE_MASK];
}

/* Sets or clears a live slot's sparse hint (TES__SLOT_SPARSE: the entity
 * may own sparse components). The one writer of the bit: set before an
 * entity gains its first sparse component, cleared once its components
 * are all gone; creation places it with the slot (tes__entity_create's
 * table), and tes__slot_set_table keeps it. */
static inline void tes__slot_hint_sparse(tes__slot_t *s, bool on)
{
    s->table = (s->table & ~TES__SLOT_SPARSE) | (on ? TES__SLOT_SPARSE : 0u);
}

/* Sets a live slot's table, keeping its sparse hint bit. */
static inline void tes__slot_set_table(tes__slot_t *s, uint32_t table, uint32_t row)
{
    s->table = (s->table & TES__SLOT_SPARSE) | table;
    s->row = row;
}

/* The generic paths of tes_add, tes_set and tes_remove (component_ops.c;
 * tes_destroy's is in entity_ops.h): what the public calls run when the
 * quiet path (quiet_ops.c) does not apply. */
int tes__add_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c);
int tes__set_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value);
int tes__remove_generic(tes_world_t *w, tes_entity_t e, tes_comp_t c);

typedef void (*tes__visit_fn)(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr);

/* Calls visit for each component of a live entity: table components in type
 * order (ptr NULL for tags), then sparse ones by ascending id. visit may
 * run hooks: the entity is looked up again after each call. */
void tes__world_each(tes_world_t *w, tes_entity_t e, tes__visit_fn visit);
/* A tes__visit_fn that fires on_add. */
void tes__fire_on_add(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr);

/* Runs on_remove for every component of e, then destroys them all and
 * leaves e in no table row (the caller frees the slot or re-homes it).
 * `destroying` tells watchers whether e is about to die or be cleared. */
void tes__world_strip(tes_world_t *w, tes_entity_t e, bool destroying);


#endif
