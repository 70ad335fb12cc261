/*
 * What every structural operation shares at the floor of the world layer:
 * status strings, the watchers (the routes that send a component's changes
 * to the groups that hear it, so an unheard component costs one load) and
 * the scratch buffer. World lifetime is in world_life.c, the dependents in
 * dependents.c, visiting and stripping an entity in strip.c.
 */
#include "world/world.h"

#include <string.h>

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
