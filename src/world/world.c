/*
 * World lifetime, statistics, status strings and the helpers every
 * structural operation shares (the entry guard, hook firing, stripping an
 * entity of all its components).
 */
#include "world/move.h"
#include "world/world.h"
#include "world/changes.h"
#include "world/depth_order.h"

#include <stdio.h>
#include <string.h>

#include "core/thread_pool.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"

const char *tes_strerror(int status)
{
    switch (status) {
    case TES_OK: return "ok";
    case TES_ERR_STALE: return "entity or instance is not alive (destroyed, null or never issued)";
    case TES_ERR_NOMEM: return "out of memory";
    case TES_ERR_INVALID: return "invalid argument";
    case TES_ERR_FULL: return "id space exhausted";
    case TES_ERR_OWNED: return "entity belongs to an instance and the world is strict";
    case TES_ERR_FORMAT: return "malformed data";
    case TES_ERR_IO: return "i/o error";
    case TES_ERR_BUSY: return "refused: inside a hook, or a system not allowed to make this change";
    default: return "unknown status";
    }
}

static tes_comp_t register_builtin(tes_world_t *w, const char *name)
{
    int status;
    tes_component_desc_t d = {.name = name};
    return tes__registry_add(&w->components, &w->alloc, &d, &status);
}

tes_world_t *tes_world_new(const tes_world_desc_t *desc)
{
    tes_world_desc_t defaults = {0};
    if (!desc)
        desc = &defaults;
    tes__alloc_t alloc;
    if (tes__alloc_init(&alloc, &desc->allocator))
        return NULL;
    tes_world_t *w = tes__calloc(&alloc, sizeof *w);
    if (!w)
        return NULL;
    w->alloc = alloc;
    w->serial = tes__world_serial_next();
    w->strict_lifecycle = desc->strict_lifecycle;
    w->threads = 1;
    if (desc->threads < 0 || desc->threads > TES_MAX_THREADS) {
        tes__free(&alloc, w, sizeof *w);
        return NULL;
    }
    tes__entity_index_init(&w->entities, desc->generation_limit, desc->entity_limit);
    tes__registry_init(&w->components);
    w->components.detail = &w->detail;
    tes__changes_init(w);
    if (register_builtin(w, "tes.Disabled") != TES_DISABLED ||
        register_builtin(w, "tes.Prefab") != TES_PREFAB ||
        tes__graph_init(&w->tables, &w->alloc, &w->components)) {
        tes_world_free(w);
        return NULL;
    }
    if (desc->threads > 1) {
        /* Error slots first: the pool is the last thing that can fail. */
        w->threads = desc->threads;
        w->thread_errors = tes__calloc(&w->alloc, (size_t)desc->threads * sizeof(int));
        w->pool = w->thread_errors ? tes__pool_new(&w->alloc, desc->threads - 1) : NULL;
        if (!w->pool) {
            tes_world_free(w);
            return NULL;
        }
    }
    return w;
}

/* Runs the destructor of every live component, firing no observers. */
static void destroy_all_values(tes_world_t *w)
{
    for (uint32_t t = 0; t < w->tables.count; t++) {
        tes__table_t *table = w->tables.tables[t];
        for (uint32_t i = 0; i < table->column_count && table->count; i++) {
            const tes__component_t *info = table->columns[i].info;
            if (info->hooks.dtor)
                info->hooks.dtor(table->columns[i].data, (int32_t)table->count, info->hooks.ctx);
        }
    }
    for (uint32_t i = 0; i < w->components.sparse_count; i++) {
        tes__component_t *info = w->components.items[w->components.sparse[i]];
        tes__sparse_store_t *st = &info->store;
        if (!info->hooks.dtor || !st->size)
            continue;
        for (uint32_t pos = tes__sparse_set_next_live(&st->set, 0); pos < st->set.count;
             pos = tes__sparse_set_next_live(&st->set, pos + 1))
            info->hooks.dtor(tes__sparse_store_at(st, pos), 1, info->hooks.ctx);
    }
}

void tes_world_free(tes_world_t *w)
{
    if (!w)
        return;
    /* From inside one of its own hooks the world is in the middle of a call
     * that will go on using it: refused. */
    if (tes__in_hook_or_frame(w)) {
        tes__fail_detail(w, TES_ERR_BUSY,
                         "tes_world_free: refused: called from a hook, a snapshot reader or "
                         "writer, or inside tes_progress; free the world after the call returns");
        return;
    }
#ifdef TES_DEBUG
    tes__report_deferred_at_free(w);
#endif
    /* Destructors first, while the queries are still alive: a destructor may
     * free a query (it is doomed, and finalised below with the others) or
     * read one. Structural calls from destructors are refused. */
    tes__hook_enter(w); /* never left: the world is going away */
    tes__defer_fini(w);
    destroy_all_values(w);
    /* Dependents (queries, the lifecycle records) next: they point into
     * everything else. */
    while (w->dependent_count) {
        tes__dependent_t d = w->dependents[--w->dependent_count];
        d.fini(d.ctx);
    }
    tes__free(&w->alloc, w->dependents, (size_t)w->dependent_cap * sizeof *w->dependents);
    tes__pool_free(w->pool, &w->alloc);
    if (w->thread_errors)
        tes__free(&w->alloc, w->thread_errors, (size_t)w->threads * sizeof(int));
    tes__free(&w->alloc, w->watchers, (size_t)w->watcher_cap * sizeof *w->watchers);
    tes__free(&w->alloc, w->watch_routes, (size_t)w->watch_route_cap * sizeof *w->watch_routes);
    tes__free(&w->alloc, w->scratch, w->scratch_size);
    tes__depth_order_free(w);
    tes__graph_fini(&w->tables, &w->alloc);
    tes__registry_fini(&w->components, &w->alloc);
    tes__entity_index_fini(&w->entities, &w->alloc);
    tes__alloc_t alloc = w->alloc;
    tes__free(&alloc, w, sizeof *w);
}

int tes_world_stats(const tes_world_t *w, tes_world_stats_t *out)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!out)
        return tes__fail_const(w, TES_ERR_INVALID, "tes_world_stats: out is NULL");
    memset(out, 0, sizeof *out);
    out->entities_alive = w->entities.alive;
    out->entity_slots = w->entities.count;
    out->entities_retired = w->entities.retired;
    out->entities_free = w->entities.available;
    out->components = w->components.count ? w->components.count - 1 - w->components.hidden_count : 0;
    out->tables = w->tables.count;
    out->instances_alive = w->instances_alive;
    out->bytes_allocated = w->alloc.bytes;
    out->allocations = w->alloc.allocations;
    out->last_frame_ns = w->last_frame_ns;
    return TES_OK;
}

/* Adds delta to the route count of each component wt subscribes to (and
 * to the count of watchers told of empty spawns, unless wt ignores them);
 * a component some watcher hears takes the generic path of single-entity
 * calls (which tells watchers), the others their registered dispatch. */
static void route(tes_world_t *w, const tes__watcher_t *wt, int delta)
{
    if (!wt->destroy_only && !wt->creations_by_comps)
        w->creation_watchers += (uint32_t)delta;
    for (uint32_t i = 0; i < wt->ncomps; i++) {
        tes_comp_t c = wt->comps[i];
        w->watch_routes[c] += (uint32_t)delta;
        tes__component_t *info = tes__registry_get(&w->components, c);
        if (info)
            tes__registry_set_dispatch(&w->components, info,
                                       w->watch_routes[c] ? TES__DISPATCH_GENERIC
                                                          : info->plain_dispatch);
    }
}

int tes__world_watch(tes_world_t *w, const tes__watcher_t *watcher, const tes_comp_t *comps,
                     uint32_t n)
{
    tes__assert(n <= TES__WATCH_MAX_COMPS);
    tes__watcher_t wt = *watcher;
    wt.ncomps = 0;
    uint32_t most = 0;
    for (uint32_t i = 0; i < n; i++) {
        bool repeated = false;
        for (uint32_t j = 0; j < wt.ncomps; j++)
            repeated |= wt.comps[j] == comps[i];
        if (!repeated)
            wt.comps[wt.ncomps++] = comps[i];
        most = comps[i] > most ? comps[i] : most;
    }
    if (tes__grow(&w->alloc, (void **)&w->watchers, &w->watcher_cap,
                  (uint64_t)w->watcher_count + 1, sizeof *w->watchers, 4))
        return TES_ERR_NOMEM;
    if (wt.ncomps && most >= w->watch_route_cap) {
        uint32_t cap = w->watch_route_cap;
        if (tes__grow(&w->alloc, (void **)&w->watch_routes, &cap, (uint64_t)most + 1,
                      sizeof *w->watch_routes, 16))
            return TES_ERR_NOMEM;
        memset(w->watch_routes + w->watch_route_cap, 0,
               (size_t)(cap - w->watch_route_cap) * sizeof *w->watch_routes);
        w->watch_route_cap = cap;
    }
    /* Registered by a hook in the middle of a structural call: the call
     * reserved room only in the watchers it knew, and will still report
     * its entities to this one. */
    const tes__watch_scope_t *scope = &w->watch_scope;
    for (uint32_t i = 0; !wt.destroy_only && i < scope->count; i++)
        if (wt.reserve(wt.ctx, tes__watch_scope_index(scope, i), i ? 0 : scope->count))
            return TES_ERR_NOMEM;
    w->watchers[w->watcher_count++] = wt;
    route(w, &wt, +1);
    return TES_OK;
}

int tes__world_scratch(tes_world_t *w, size_t size)
{
    if (size <= w->scratch_size)
        return TES_OK;
    void *p = tes__realloc(&w->alloc, w->scratch, w->scratch_size, size);
    if (!p)
        return TES_ERR_NOMEM;
    w->scratch = p;
    w->scratch_size = size;
    return TES_OK;
}

/* The one writer of the quiet state's pending bits: whether some
 * dependent waits for its release, and whether some waits to settle, read
 * afresh from the list after every change of it (the list is short, and
 * changes when queries are made or freed). */
static void dependents_changed(tes_world_t *w)
{
    bool doomed = false, settling = false;
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        doomed = doomed || w->dependents[i].release;
        settling = settling || w->dependents[i].settle;
    }
    tes__world_pending_set(w, doomed, settling);
}

int tes__world_depend(tes_world_t *w, void (*fini)(void *ctx), void *ctx)
{
    if (tes__grow(&w->alloc, (void **)&w->dependents, &w->dependent_cap,
                  (uint64_t)w->dependent_count + 1, sizeof *w->dependents, 8))
        return TES_ERR_NOMEM;
    w->dependents[w->dependent_count++] = (tes__dependent_t){fini, ctx, NULL, NULL};
    return TES_OK;
}

void tes__world_undepend(tes_world_t *w, void *ctx)
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        if (w->dependents[i].ctx == ctx) {
            w->dependents[i] = w->dependents[--w->dependent_count];
            dependents_changed(w);
            return;
        }
    }
}

void tes__world_doom(tes_world_t *w, void *ctx, void (*release)(void *ctx))
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        if (w->dependents[i].ctx == ctx && !w->dependents[i].release) {
            w->dependents[i].release = release;
            dependents_changed(w);
            return;
        }
    }
}

void tes__world_release_doomed(tes_world_t *w)
{
    /* A release runs no user hook, so the list cannot change under us
     * except by the removal made here; the pending bits are brought in
     * step before each release runs. */
    uint32_t i = 0;
    while (i < w->dependent_count) {
        tes__dependent_t d = w->dependents[i];
        if (!d.release) {
            i++;
            continue;
        }
        w->dependents[i] = w->dependents[--w->dependent_count];
        dependents_changed(w);
        d.release(d.ctx);
    }
}

void tes__world_settle_later(tes_world_t *w, void *ctx, void (*settle)(void *ctx))
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        tes__dependent_t *d = &w->dependents[i];
        if (d->ctx == ctx && !d->release && !d->settle) {
            d->settle = settle;
            dependents_changed(w);
            return;
        }
    }
}

void tes__world_settle(tes_world_t *w)
{
    /* By index: a settle may ask again (its entry is then past us, so this
     * walk ends) but adds or removes no dependent. */
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        void (*settle)(void *ctx) = w->dependents[i].settle;
        if (!settle || w->dependents[i].release)
            continue;
        w->dependents[i].settle = NULL;
        dependents_changed(w);
        settle(w->dependents[i].ctx);
    }
}

void tes__world_unwatch(tes_world_t *w, void *ctx, void (*release)(void *ctx))
{
    for (uint32_t i = 0; i < w->watcher_count; i++) {
        tes__watcher_t *wt = &w->watchers[i];
        if (wt->dead || wt->ctx != ctx)
            continue;
        route(w, wt, -1); /* it hears nothing from now on */
        if (w->watch_walking) {
            /* A hook run by a notification removed it: the walk goes by
             * position and may still be inside this watcher's callback, so
             * it stays (dead, skipped) until the walk is over. */
            wt->dead = true;
            wt->release = release;
            w->watch_dead = true;
            return;
        }
        /* Keep registration order: watchers run in it. */
        for (uint32_t j = i + 1; j < w->watcher_count; j++)
            w->watchers[j - 1] = w->watchers[j];
        w->watcher_count--;
        if (release)
            release(ctx);
        return;
    }
    if (release) /* never registered: nothing can be using it */
        release(ctx);
}

void tes__world_watch_compact(tes_world_t *w)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < w->watcher_count; i++) {
        tes__watcher_t wt = w->watchers[i];
        if (!wt.dead)
            w->watchers[kept++] = wt;
        else if (wt.release)
            wt.release(wt.ctx);
    }
    w->watcher_count = kept;
    w->watch_dead = false;
}

/* Calls visit(w, info, e, ptr) for each sparse component e has. */
static void each_sparse(tes_world_t *w, tes_entity_t e, tes__visit_fn visit)
{
    for (uint32_t i = 0; i < w->components.sparse_count; i++) {
        tes__component_t *info = w->components.items[w->components.sparse[i]];
        if (!info->store.set.live || !tes__sparse_set_contains(&info->store.set, e))
            continue;
        visit(w, info, e, tes__sparse_store_get(&info->store, e));
    }
}

void tes__world_each(tes_world_t *w, tes_entity_t e, tes__visit_fn visit)
{
    /* visit runs hooks (observers): the slot is looked up again after each
     * one, never held across it. Hooks cannot move e to another table
     * (structural calls are refused while they run). */
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return;
    tes__table_t *table = tes__slot_table(w, slot);
    for (uint32_t i = 0; i < table->type_count; i++) {
        tes__component_t *info = tes__registry_get(&w->components, table->type[i]);
        slot = tes__entity_slot(&w->entities, e);
        if (!slot)
            return;
        tes__assert(tes__slot_table(w, slot) == table);
        /* Columns are not one per sized type entry (a tracked component's
         * stamp columns follow its own): ask the table. */
        int32_t col = tes__table_column_index(table, info->id);
        void *ptr = col >= 0 ? tes__table_cell(table, (uint32_t)col, slot->row) : NULL;
        visit(w, info, e, ptr);
    }
    slot = tes__entity_slot(&w->entities, e);
    if (slot && (slot->table & TES__SLOT_SPARSE))
        each_sparse(w, e, visit);
}

void tes__fire_on_add(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    tes__fire(w, info->hooks.on_add, info, e, ptr);
}

static void fire_remove(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    tes__fire(w, info->hooks.on_remove, info, e, ptr);
}

static void drop_sparse(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    if (ptr && info->hooks.dtor)
        info->hooks.dtor(ptr, 1, info->hooks.ctx);
    tes__sparse_store_remove(&info->store, e, &info->hooks);
    (void)w;
}

void tes__world_strip(tes_world_t *w, tes_entity_t e, bool destroying)
{
    uint32_t index = tes_entity_index(e);
    tes__table_t *table = tes__slot_table(w, &w->entities.slots[index]);
    bool sparse = (w->entities.slots[index].table & TES__SLOT_SPARSE) != 0;
    /* Observers first, while the entity is still whole; then watchers. */
    if ((table->flags & TES__TABLE_HAS_ON_REMOVE) || sparse)
        tes__world_each(w, e, fire_remove);
    tes__watch_before(w, e, destroying ? TES__WATCH_DESTROY : 0);
    /* Then destructors. Every phase runs hooks, so the slot is read by
     * index after each, never through a pointer kept across them. */
    tes__world_hook_up(w);
    uint32_t row = w->entities.slots[index].row;
    tes__assert(tes__slot_table(w, &w->entities.slots[index]) == table);
    tes__table_destruct_row(table, row);
    tes__world_vacate(w, table, row);
    if (sparse)
        each_sparse(w, e, drop_sparse);
    tes__world_hook_down(w);
    tes__slot_hint_sparse(&w->entities.slots[index], false);
}
