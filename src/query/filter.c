/*
 * The filter index (see filter.h). Built from the entity index once, then
 * maintained by a watcher: after any change the world reports for an
 * entity, its byte is recomputed from its table's flags; a destroy clears
 * it. Room is reserved before the world commits a change, so the updates
 * themselves cannot fail.
 */
#include "query/filter.h"

#include <string.h>

static uint8_t tags_of(const tes_world_t *w, tes_entity_t e)
{
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return 0;
    uint32_t flags = tes__slot_table(w, slot)->flags;
    return (uint8_t)(((flags & TES__TABLE_DISABLED) ? TES__FILTER_DISABLED : 0) |
                     ((flags & TES__TABLE_PREFAB) ? TES__FILTER_PREFAB : 0));
}

static void put(struct tes__filters *f, uint32_t index, uint8_t tags)
{
    tes__assert(index < f->cap || !tags);
    if (index >= f->cap)
        return;
    f->tagged += (uint32_t)(tags != 0) - (uint32_t)(f->tags[index] != 0);
    f->tags[index] = tags;
}

/* Room for a byte at `index`. TES_OK or TES_ERR_NOMEM. */
static int cover(struct tes__filters *f, uint64_t count)
{
    if (count <= f->cap)
        return TES_OK;
    uint32_t cap = f->cap;
    if (tes__grow(&f->w->alloc, (void **)&f->tags, &cap, count, 1, 256))
        return TES_ERR_NOMEM;
    memset(f->tags + f->cap, 0, cap - f->cap);
    f->cap = cap;
    return TES_OK;
}

static int filter_watch_reserve(void *ctx, uint32_t index, uint32_t extra)
{
    (void)extra; /* bulk changes reserve each index they touch */
    return cover(ctx, (uint64_t)index + 1);
}

static void filter_watch_before(void *ctx, tes_entity_t e, tes_comp_t c)
{
    if (c == TES__WATCH_DESTROY)
        put(ctx, tes_entity_index(e), 0);
}

static void filter_watch_after(void *ctx, tes_entity_t e, tes_comp_t c)
{
    struct tes__filters *f = ctx;
    (void)c;
    put(f, tes_entity_index(e), tags_of(f->w, e));
}

static void filters_release(struct tes__filters *f)
{
    tes__alloc_t *a = &f->w->alloc;
    f->w->filters = NULL;
    tes__free(a, f->tags, f->cap);
    tes__free(a, f, sizeof *f);
}

/* World teardown: the watcher list goes away with the world. */
static void filters_fini(void *ctx) { filters_release(ctx); }

int tes__filters_use(tes_world_t *w, struct tes__filters **out)
{
    if (w->filters) {
        *out = w->filters;
        return TES_OK;
    }
    struct tes__filters *f = tes__calloc(&w->alloc, sizeof *f);
    if (!f)
        return TES_ERR_NOMEM;
    f->w = w;
    const tes__entity_index_t *ei = &w->entities;
    int rc = cover(f, ei->count);
    for (uint32_t i = 0; !rc && i < ei->count; i++) {
        const tes__slot_t *s = &ei->slots[i];
        if (s->table != TES__SLOT_FREE)
            put(f, i, tags_of(w, tes_entity_make(i, s->generation)));
    }
    tes_comp_t tags[2] = {TES_DISABLED, TES_PREFAB};
    tes__watcher_t watcher = {.reserve = filter_watch_reserve, .before = filter_watch_before,
                              .after = filter_watch_after, .ctx = f,
                              .creations_by_comps = true /* an empty entity's byte is 0 */};
    if (!rc && (rc = tes__world_watch(w, &watcher, tags, 2)) == TES_OK &&
        (rc = tes__world_depend(w, filters_fini, f)) != TES_OK)
        tes__world_unwatch(w, f, NULL);
    if (rc) {
        tes__free(&w->alloc, f->tags, f->cap);
        tes__free(&w->alloc, f, sizeof *f);
        return rc;
    }
    w->filters = f;
    *out = f;
    return TES_OK;
}
