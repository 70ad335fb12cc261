/*
 * World lifetime: making a world (its registry, built-in components, table
 * graph and worker pool) and freeing it (destructors first, then the
 * dependents that point into everything else), and its statistics. The top
 * of the world layer: it sets up and tears down every part below it, and
 * runs once per world, so it is tuned for clarity, not speed.
 */
#include "world/defer.h"
#include "world/world.h"

#include <string.h>

#include "core/thread_pool.h"
#include "world/changes.h"
#include "world/depth_order.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"

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
