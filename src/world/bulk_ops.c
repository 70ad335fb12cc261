/*
 * Bundles, bulk and batch: the calls that do the work of many single-entity
 * calls at once. tes_spawn_with places one entity with all its values
 * straight into its final table (a spawn plus n tes_set calls would move it
 * n times); tes_spawn_bulk (and tes_spawn_n, which is tes_spawn_bulk
 * without data) does the same for a batch and copies the values in column
 * by column, one memcpy per column for components without ctor and copy
 * hooks; tes_destroy_n checks a whole list of handles before destroying
 * any. (tes_get_n, the batch read, lives in batch_get.c.)
 *
 * Every call follows the discipline of world.h: validate, reserve every
 * allocation, commit with code that cannot fail, then fire observers. While
 * the world is deferred the spawning calls issue live handles at once and
 * queue the same commands as the single-entity calls would (a MATERIALIZE,
 * then one tes_set or tes_add per component), with the values copied into
 * staged memory at the call, so a deferred batch behaves exactly like the
 * deferred single calls it stands for.
 *
 * Tuned for spawning thousands to millions of entities with their data (a
 * level load, a particle burst) and destroying them again.
 */
#include "storage/move_plan.h"
#include "world/cascade.h"
#include "world/defer.h"
#include "world/entity_ops.h"
#include "world/get.h"
#include "world/last_error.h"
#include "world/move.h"
#include "world/world.h"
#include "world/quiet.h"

#include <string.h>

/* ------------------------------------------------------------------ components */

/* A call's component ids three ways: ascending (`sorted`), and split into
 * the table ones and the sparse ones (each ascending). Small lists live in
 * `small`; longer ones in memory from the world's allocator. */
typedef struct comp_lists {
    tes_comp_t *sorted, *table_ids, *sparse_ids;
    uint32_t n, table_count, sparse_count;
    bool hooked; /* some component has an on_add or on_set observer */
    tes_comp_t small[3 * 16];
} comp_lists_t;

/* Fills the lists from n ids given by `at` (an array of tes_comp_t when
 * stride is sizeof(tes_comp_t), of tes_value_t when it is sizeof
 * (tes_value_t)). TES_ERR_INVALID for an unknown or repeated id,
 * TES_ERR_NOMEM; the caller calls lists_free in every case. */
static int lists_init(tes_world_t *w, comp_lists_t *l, const void *at, size_t stride, uint32_t n)
{
    l->n = n;
    l->sorted = l->small;
    l->table_count = l->sparse_count = 0;
    l->hooked = false;
    if (n > 16 && !(l->sorted = tes__malloc(&w->alloc, (size_t)n * 3 * sizeof *l->sorted)))
        return TES_ERR_NOMEM;
    l->table_ids = l->sorted + n;
    l->sparse_ids = l->sorted + 2 * n;
    const uint8_t *p = at;
    for (uint32_t i = 0; i < n; i++)
        memcpy(&l->sorted[i], p + i * stride, sizeof(tes_comp_t));
    /* Insertion sort: lists are short, and a library qsort call costs more
     * than sorting three ids. Long lists pay n^2 / 4 compares, still far
     * below the cost of spawning with that many components. */
    for (uint32_t i = 1; i < n; i++) {
        tes_comp_t c = l->sorted[i];
        uint32_t j = i;
        for (; j > 0 && l->sorted[j - 1] > c; j--)
            l->sorted[j] = l->sorted[j - 1];
        l->sorted[j] = c;
    }
    for (uint32_t i = 0; i < n; i++) {
        const tes__component_t *info = tes__registry_get(&w->components, l->sorted[i]);
        if (!info || (i && l->sorted[i] == l->sorted[i - 1]))
            return tes__fail_detail(w, TES_ERR_INVALID, "component id %u is %s", (unsigned)l->sorted[i], info ? "listed twice" : "not registered");
        l->hooked |= info->hooks.on_add || info->hooks.on_set;
        if (info->storage == TES_STORAGE_SPARSE)
            l->sparse_ids[l->sparse_count++] = l->sorted[i];
        else
            l->table_ids[l->table_count++] = l->sorted[i];
    }
    return TES_OK;
}

static void lists_free(tes_world_t *w, comp_lists_t *l)
{
    if (l->sorted != l->small)
        tes__free(&w->alloc, l->sorted, (size_t)l->n * 3 * sizeof *l->sorted);
}

/* The index the next tes__entity_create will hand out. */
static uint32_t next_index(const tes__entity_index_t *ei)
{
    return ei->available ? ei->next : ei->count;
}

/* Turns raw memory into the value *src (constructed, then assigned), or
 * into the default value when src is NULL. Without ctor and copy hooks the
 * construction would be overwritten at once, so the bytes are just copied. */
static void write_value(const tes__component_t *info, void *cell, const void *src)
{
    if (src && !info->hooks.ctor && !info->hooks.copy) {
        tes__copy_bytes(cell, src, info->size);
        return;
    }
    tes__component_construct1(info, cell);
    if (src)
        tes__component_copy1(info, cell, src);
}

/* Stages a constructed copy of *value (the default when NULL) for a queued
 * command, as a deferred tes_set does. NULL on TES_ERR_NOMEM. */
static void *stage_value(tes_world_t *w, const tes__component_t *info, const void *value)
{
    return tes__defer_stage(w, info, value); /* in the queue's arena */
}

/* Ends a staged value that will never be queued (its arena bytes are
 * reclaimed at the next flush). */
static void unstage_value(tes_world_t *w, const tes__component_t *info, void *staged)
{
    (void)w;
    tes__component_destruct(info, staged, 1);
}

/* ------------------------------------------------------------------ spawn_with */

/* Deferred: a pending entity now; at the flush a MATERIALIZE, then a
 * tes_set (staged copy of ptr) or tes_add (NULL ptr) per value. */
static tes_entity_t spawn_with_deferred(tes_world_t *w, const tes_value_t *values, uint32_t n)
{
    void *small[16];
    void **staged = small;
    int rc = TES_OK;
    if (n > 16 && !(staged = tes__calloc(&w->alloc, (size_t)n * sizeof *staged)))
        rc = TES_ERR_NOMEM;
    /* The entity slot first: the queue's records are sized by the slots. */
    if (!rc)
        rc = tes__entity_reserve(&w->entities, &w->alloc, 1);
    if (!rc && tes__defer_reserve(w, n + 1))
        rc = TES_ERR_NOMEM;
    uint32_t made = 0;
    for (; !rc && made < n; made++) {
        const tes__component_t *info = tes__registry_get(&w->components, values[made].comp);
        staged[made] = NULL;
        if (values[made].ptr && info->size &&
            !(staged[made] = stage_value(w, info, values[made].ptr)))
            rc = TES_ERR_NOMEM;
    }
    tes_entity_t e = TES_NULL;
    if (rc) {
        for (uint32_t i = 0; i < made; i++)
            if (staged[i])
                unstage_value(w, tes__registry_get(&w->components, values[i].comp), staged[i]);
        tes__fail(w, rc);
    } else {
        /* Alive, hidden from root scans until the flush. */
        e = tes__entity_create(&w->entities, 0, TES__ROW_PENDING);
        tes__defer_push(w, TES__OP_MATERIALIZE, e, 0, TES_NULL, NULL);
        for (uint32_t i = 0; i < n; i++)
            tes__defer_push(w, values[i].ptr ? TES__OP_SET : TES__OP_ADD, e, values[i].comp,
                            TES_NULL, staged[i]);
    }
    if (staged && staged != small)
        tes__free(&w->alloc, staged, (size_t)n * sizeof *staged);
    return e;
}

/* Where plans made for tes_spawn_with read value k: the ptr of values[k]. */
static inline const void *bundle_values(const tes_value_t *values)
{
    return (const unsigned char *)values + offsetof(tes_value_t, ptr);
}

/* Keeps a table-only bundle, with its plan, for the fast path of
 * tes_spawn_with. */
static void remember_bundle(tes_world_t *w, const tes_value_t *values, const comp_lists_t *l,
                            tes__table_t *table)
{
    tes__bundle_cache_t *b = &w->bundle;
    if (l->sparse_count || !l->n || l->n > TES__BUNDLE_MAX)
        return;
    for (uint32_t i = 0; i < l->n; i++)
        b->ids[i] = values[i].comp;
    tes__plan_make(&b->plan, w->tables.tables[0], table, b->ids, l->n, (1u << l->n) - 1u, false,
                   sizeof *values);
    b->n = l->n;
    b->hooked = l->hooked;
    b->quiet = !b->plan.hooked && !b->hooked;
}

/* The quiet form of spawn_with_cached (see there): no ctor, copy or
 * observer to run, no watcher to tell: the entity is created in the root
 * and moved into the bundle's table by its plan, whose routine (chosen
 * when the bundle was cached) copies the values as bytes (a NULL value
 * copies zeroes), with no call but the routine's. Inlined into
 * tes_spawn_with. */
static tes__always_inline tes_entity_t spawn_quiet(tes_world_t *w, const tes_value_t *values)
{
    return tes__apply_spawn(w, &w->bundle.plan, bundle_values(values));
}

/* Whether a watcher must be told of an entity created with bundle b:
 * one told of every new entity, or one subscribed to a component of b
 * (see creations_by_comps in world.h). */
static inline bool bundle_heard(const tes_world_t *w, const tes__bundle_cache_t *b)
{
    return tes__watched(w, tes__creation_event(w, b->ids, b->n));
}

/* The fast path: the bundle tes_spawn_with placed last, again, in a world
 * where nothing unusual is going on (tes__world_quiet). Returns false to
 * take the general path (a different bundle, a value that lives in the
 * destination table when the table must grow, a slot array to grow); *e
 * is TES_NULL on failure. */
static bool spawn_with_cached(tes_world_t *w, const tes_value_t *values, int32_t n,
                              tes_entity_t *out)
{
    const tes__bundle_cache_t *b = &w->bundle;
    if (!b->n || (uint32_t)n != b->n || !values)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (values[i].comp != b->ids[i])
            return false; /* another bundle */
    tes__entity_index_t *ei = &w->entities;
    if (!ei->available && ei->count >= ei->room)
        return false;
    tes__table_t *t = b->plan.dst;
    /* A table with room does not move for the new row, so a value inside
     * it stays put; one that must grow first would move it. */
    if (TES__DEBUG_MOVES || t->count >= t->cap) {
        for (int32_t i = 0; i < n; i++)
            if (tes__table_holds(t, values[i].ptr))
                return false;
        if (tes__table_reserve(t, &w->alloc, 1)) {
            tes__fail(w, TES_ERR_NOMEM);
            *out = TES_NULL;
            return true;
        }
    }
    /* Quiet: no ctor, copy or observer to run and no watcher to tell (all
     * fixed for the cached bundle but the watchers). */
    if (b->quiet && !bundle_heard(w, b)) {
        *out = spawn_quiet(w, values);
        return true;
    }
    if (tes__watch_reserve_one(w, 0, next_index(ei))) {
        tes__fail(w, TES_ERR_NOMEM);
        *out = TES_NULL;
        return true;
    }
    tes_entity_t e = tes__entity_create(ei, 0, 0);
    tes__hook_enter(w); /* ctor and copy hooks may not change the world */
    tes__apply(w, &b->plan, e, bundle_values(values), 1);
    if (w->watcher_count)
        tes__watch_after(w, e, 0);
    if (b->hooked) {
        for (int32_t i = 0; i < n; i++) {
            tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
            if (info->hooks.on_add)
                tes__fire(w, info->hooks.on_add, info, e, tes__get(w, e, info->id));
        }
        for (int32_t i = 0; i < n; i++) {
            tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
            if (values[i].ptr && info->hooks.on_set)
                tes__fire(w, info->hooks.on_set, info, e, tes__get(w, e, info->id));
        }
    }
    tes__world_end(w); /* releases queries a hook freed */
    *out = e;
    return true;
}

/* Fills the table cells of the n new entities of `table` (e, or with n >
 * 1 the entities already placed in its next rows) from the values a call
 * gives for components comps[0..nc) (src[k]: n consecutive values of
 * comps[k], or NULL for the default; values of other tables' components
 * are not read), by a plan from the root. Past TES__PLAN_VALUES values,
 * the plan constructs every cell and the values are then assigned, which
 * is the same. Runs ctor and copy hooks: between a begin and an end. */
static void place_values(tes_world_t *w, tes__table_t *table, tes_entity_t e, uint32_t n,
                         const tes_comp_t *comps, const void *const *src, uint32_t nc)
{
    bool fits = nc <= TES__PLAN_VALUES;
    tes__move_plan_t plan;
    tes__plan_make(&plan, w->tables.tables[0], table, comps, fits ? nc : 0,
                   fits ? (1u << nc) - 1u : 0u, false, sizeof *src);
    uint32_t first_row = table->count;
    tes__apply(w, &plan, e, fits ? src : NULL, n);
    for (uint32_t k = 0; !fits && k < nc; k++) {
        int32_t col = tes__table_column_index(table, comps[k]);
        if (col < 0 || !src[k])
            continue;
        const tes__component_t *info = table->columns[col].info;
        uint8_t *cells = tes__table_cell(table, (uint32_t)col, first_row);
        if (info->hooks.copy)
            info->hooks.copy(cells, src[k], (int32_t)n, info->hooks.ctx);
        else
            memcpy(cells, src[k], (size_t)n * info->size);
    }
}

/* Immediate: reserve the row, the slot, the sparse room and the watchers'
 * room; then write every value into place and fire the observers. */
static int spawn_with_now(tes_world_t *w, const tes_value_t *values, const comp_lists_t *l,
                          const void **src, tes_entity_t *out)
{
    tes__alloc_t *a = &w->alloc;
    tes__table_t *table =
        tes__graph_ensure(&w->tables, a, &w->components, l->table_ids, l->table_count);
    if (!table)
        return TES_ERR_NOMEM;
    /* A value that lives in the destination table moves when the table
     * grows: keep a bitwise image of it in the world's scratch memory. */
    size_t held = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        const tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
        src[i] = info->size ? values[i].ptr : NULL;
        if (src[i] && tes__table_holds(table, src[i]))
            held += ((size_t)info->size + 15) & ~(size_t)15;
    }
    if (held) {
        if (tes__world_scratch(w, held))
            return TES_ERR_NOMEM;
        uint8_t *image = w->scratch;
        for (uint32_t i = 0; i < l->n; i++) {
            const tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
            if (src[i] && tes__table_holds(table, src[i])) {
                memcpy(image, src[i], info->size);
                src[i] = image;
                image += ((size_t)info->size + 15) & ~(size_t)15;
            }
        }
    }
    if (tes__table_reserve(table, a, 1))
        return TES_ERR_NOMEM;
    tes__entity_index_t *ei = &w->entities;
    int rc = tes__entity_reserve(ei, a, 1);
    if (rc)
        return rc;
    uint32_t index = next_index(ei);
    for (uint32_t i = 0; i < l->sparse_count; i++) {
        tes__sparse_store_t *st = &tes__registry_get(&w->components, l->sparse_ids[i])->store;
        if (!tes__sparse_store_has_room(st, index) &&
            tes__sparse_store_reserve(st, a, 1, index, NULL, NULL))
            return TES_ERR_NOMEM;
    }
    if (tes__watch_reserve_one(w, 0, index))
        return TES_ERR_NOMEM;
    /* Commit: nothing below can fail. The table values by the plan, then
     * the sparse ones. */
    tes_entity_t e = tes__entity_create(ei, l->sparse_count ? TES__SLOT_SPARSE : 0, 0);
    tes_comp_t comps_small[TES__PLAN_VALUES];
    for (uint32_t i = 0; i < l->n && l->n <= TES__PLAN_VALUES; i++)
        comps_small[i] = values[i].comp;
    if (l->n <= TES__PLAN_VALUES) {
        place_values(w, table, e, 1, comps_small, src, l->n);
    } else {
        /* More values than a plan takes: constructed, then assigned. */
        place_values(w, table, e, 1, NULL, NULL, 0);
        for (uint32_t i = 0; i < l->n; i++) {
            int32_t col = tes__table_column_index(table, values[i].comp);
            if (col >= 0 && src[i])
                tes__component_copy1(table->columns[col].info,
                                     tes__table_cell(table, (uint32_t)col, table->count - 1),
                                     src[i]);
        }
    }
    for (uint32_t i = 0; i < l->n; i++) {
        tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
        if (info->storage != TES_STORAGE_SPARSE)
            continue;
        void *cell = tes__sparse_store_insert(&info->store, e);
        if (cell)
            write_value(info, cell, src[i]);
    }
    if (w->watcher_count)
        tes__watch_after(w, e, 0);
    *out = e;
    remember_bundle(w, values, l, table);
    if (!l->hooked)
        return TES_OK;
    /* Observers see the finished entity: on_add for every component, then
     * on_set for every one given a value. Addresses are read again for
     * each hook, as a watcher may have reordered a store. */
    for (uint32_t i = 0; i < l->n; i++) {
        tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
        if (info->hooks.on_add)
            tes__fire(w, info->hooks.on_add, info, e, tes__get(w, e, info->id));
    }
    for (uint32_t i = 0; i < l->n; i++) {
        tes__component_t *info = tes__registry_get(&w->components, values[i].comp);
        if (values[i].ptr && info->hooks.on_set)
            tes__fire(w, info->hooks.on_set, info, e, tes__get(w, e, info->id));
    }
    return TES_OK;
}

static tes_entity_t spawn_with_impl(tes_world_t *w, const tes_value_t *values, int32_t n)
{
    if (n < 0 || (n > 0 && !values)) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_spawn_with: n = %d with values %s", (int)n, values ? "set" : "NULL");
        return TES_NULL;
    }
    uint32_t nc = (uint32_t)n;
    comp_lists_t l;
    int rc = lists_init(w, &l, values, sizeof *values, nc);
    tes_entity_t e = TES_NULL;
    if (!rc && tes__deferred(w)) {
        lists_free(w, &l);
        return spawn_with_deferred(w, values, nc);
    }
    const void *small[16];
    const void **src = small;
    if (!rc && nc > 16 && !(src = tes__malloc(&w->alloc, (size_t)nc * sizeof *src)))
        rc = TES_ERR_NOMEM;
    if (!rc)
        rc = spawn_with_now(w, values, &l, src, &e);
    if (src != small && src)
        tes__free(&w->alloc, src, (size_t)nc * sizeof *src);
    lists_free(w, &l);
    if (rc)
        tes__fail(w, rc);
    return e;
}

/* Every tes_spawn_with but the quiet repeat of the cached bundle: the
 * cached bundle's other forms, then the guarded general path. Out of line,
 * so that tes_spawn_with saves no registers for it. */
static tes__noinline tes_entity_t spawn_with_slow(tes_world_t *w, const tes_value_t *values,
                                                  int32_t n)
{
    tes_entity_t e;
    if (w && tes__likely(tes__world_quiet(w)) && spawn_with_cached(w, values, n, &e))
        return e;
    TES__CREATING("tes_spawn_with", tes_entity_t, w, TES_NULL, spawn_with_impl(w, values, n));
}

/* The hot case inline: the world quiet, the cached bundle again (quiet:
 * see spawn_quiet), a fresh or free entity slot without growth, room in
 * its table. Anything else is spawn_with_slow's, in tail position. */
tes_entity_t tes_spawn_with(tes_world_t *w, const tes_value_t *values, int32_t n)
{
    if (!w || !tes__world_quiet(w))
        return spawn_with_slow(w, values, n);
    const tes__bundle_cache_t *b = &w->bundle;
    const tes__entity_index_t *ei = &w->entities;
    if ((uint32_t)n != b->n || !values || !b->quiet || w->watcher_count ||
        (!ei->available && ei->count >= ei->room))
        return spawn_with_slow(w, values, n);
    for (int32_t i = 0; i < n; i++)
        if (values[i].comp != b->ids[i])
            return spawn_with_slow(w, values, n); /* another bundle */
    const tes__table_t *t = b->plan.dst;
    if (TES__DEBUG_MOVES || t->count >= t->cap)
        return spawn_with_slow(w, values, n); /* growth: see spawn_with_cached */
    return spawn_quiet(w, values);
}

/* ------------------------------------------------------------------ spawn_bulk */

/* data[k] for component k of the desc, or NULL (no data, or a tag). */
static const void *bulk_column(const tes_world_t *w, const tes_bulk_desc_t *d, uint32_t k)
{
    if (!d->data || !d->data[k])
        return NULL;
    return tes__registry_get(&w->components, d->comps[k])->size ? d->data[k] : NULL;
}

/* Deferred: pending entities now; per entity at the flush, a MATERIALIZE
 * and then a tes_set (staged copy of its value) or tes_add per component,
 * exactly as the single-entity calls queue them. */
static int spawn_bulk_deferred(tes_world_t *w, const tes_bulk_desc_t *d)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t n = (uint32_t)d->count, nc = (uint32_t)d->ncomps;
    uint64_t ops = (uint64_t)n * (1 + (uint64_t)nc);
    uint64_t nstaged = 0;
    for (uint32_t k = 0; k < nc; k++)
        nstaged += bulk_column(w, d, k) ? n : 0;
    if (ops > UINT32_MAX || nstaged > SIZE_MAX / sizeof(void *))
        return TES_ERR_NOMEM;
    /* The entity slots first: the queue's records are sized by the slots. */
    int rc = tes__entity_reserve(&w->entities, a, n);
    if (rc)
        return rc;
    if (tes__defer_reserve(w, (uint32_t)ops))
        return TES_ERR_NOMEM;
    tes_entity_t *handles = d->out;
    if (!handles && !(handles = tes__malloc(a, (size_t)n * sizeof *handles)))
        return TES_ERR_NOMEM;
    void **staged = NULL;
    if (nstaged && !(staged = tes__malloc(a, (size_t)nstaged * sizeof *staged)))
        rc = TES_ERR_NOMEM;
    /* staged[] runs component by component (columns with data only). */
    uint64_t made = 0;
    for (uint32_t k = 0; !rc && k < nc; k++) {
        const uint8_t *col = bulk_column(w, d, k);
        const tes__component_t *info = tes__registry_get(&w->components, d->comps[k]);
        for (uint32_t i = 0; col && i < n; i++, made++)
            if (!(staged[made] = stage_value(w, info, col + (size_t)i * info->size))) {
                rc = TES_ERR_NOMEM;
                break;
            }
    }
    if (rc) {
        uint64_t at = 0;
        for (uint32_t k = 0; k < nc && at < made; k++) {
            const tes__component_t *info = tes__registry_get(&w->components, d->comps[k]);
            for (uint32_t i = 0; bulk_column(w, d, k) && i < n && at < made; i++)
                unstage_value(w, info, staged[at++]);
        }
    } else {
        tes__entity_create_n(&w->entities, n, 0, TES__ROW_PENDING, 0, handles);
        for (uint32_t i = 0; i < n; i++) {
            tes__defer_push(w, TES__OP_MATERIALIZE, handles[i], 0, TES_NULL, NULL);
            uint64_t at = 0;
            for (uint32_t k = 0; k < nc; k++) {
                bool data = bulk_column(w, d, k) != NULL;
                /* A tag given data gets its on_set, as tes_set of a tag does. */
                bool set = data || (d->data && d->data[k]);
                tes__defer_push(w, set ? TES__OP_SET : TES__OP_ADD, handles[i], d->comps[k],
                                TES_NULL, data ? staged[at + i] : NULL);
                at += data ? n : 0;
            }
        }
    }
    if (staged)
        tes__free(a, staged, (size_t)nstaged * sizeof *staged);
    if (handles != d->out)
        tes__free(a, handles, (size_t)n * sizeof *handles);
    return rc;
}

/* The memory one bulk spawn borrows: images of data columns that live in
 * the destination table, and a handle array when neither `out` nor the
 * table's entity column can hold the handles. */
typedef struct bulk_scratch {
    const void *src_small[16];
    const void **src;        /* per component of the desc: where its data is read */
    void **images;           /* per component: an image, or NULL */
    tes_entity_t *handles;   /* allocated handle array, or NULL */
    uint32_t n, nc;
    tes_comp_t event;        /* how watchers hear of the creations */
} bulk_scratch_t;

static void scratch_free(tes_world_t *w, bulk_scratch_t *s, const tes_bulk_desc_t *d)
{
    tes__alloc_t *a = &w->alloc;
    for (uint32_t k = 0; s->images && k < s->nc; k++)
        if (s->images[k])
            tes__free(a, s->images[k],
                      (size_t)s->n * tes__registry_get(&w->components, d->comps[k])->size);
    if (s->src && s->src != s->src_small)
        tes__free(a, s->src, (size_t)s->nc * 2 * sizeof *s->src);
    if (s->handles)
        tes__free(a, s->handles, (size_t)s->n * sizeof *s->handles);
}

/* Reserves everything an immediate bulk spawn into `table` needs. */
static int bulk_reserve(tes_world_t *w, const tes_bulk_desc_t *d, const comp_lists_t *l,
                        tes__table_t *table, bulk_scratch_t *s)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t n = s->n, nc = s->nc;
    if (nc > 8 && !(s->src = tes__calloc(a, (size_t)nc * 2 * sizeof *s->src)))
        return TES_ERR_NOMEM; /* scratch_free skips the NULL */
    s->images = (void **)(s->src + nc);
    for (uint32_t k = 0; k < nc; k++) {
        s->src[k] = bulk_column(w, d, k);
        s->images[k] = NULL;
        /* Data read from the destination table would move when it grows. */
        if (s->src[k] && tes__table_holds(table, s->src[k])) {
            uint64_t size = (uint64_t)n * tes__registry_get(&w->components, d->comps[k])->size;
            if (size > SIZE_MAX || !(s->images[k] = tes__malloc(a, (size_t)size)))
                return TES_ERR_NOMEM;
            memcpy(s->images[k], s->src[k], (size_t)size);
            s->src[k] = s->images[k];
        }
    }
    if (tes__table_reserve(table, a, n))
        return TES_ERR_NOMEM;
    int rc = tes__entity_reserve(&w->entities, a, n);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < l->sparse_count; i++) {
        tes__index_walk_t walk = tes__index_walk_start(&w->entities);
        tes__component_t *info = tes__registry_get(&w->components, l->sparse_ids[i]);
        if (tes__sparse_store_reserve(&info->store, a, n, 0, tes__index_walk_next, &walk))
            return TES_ERR_NOMEM;
    }
    /* Only the watchers that can care: none for a batch of empty entities
     * or of components nobody hears (unless one is told of every
     * creation), as for tes_spawn. The same event tells them of the
     * creations; a watcher a hook registers in between reserves room for
     * the batch (the call's scope) as it joins. */
    s->event = tes__creation_event(w, d->comps, nc);
    if (tes__watched(w, s->event)) {
        tes__index_walk_t walk = tes__index_walk_start(&w->entities);
        for (uint32_t i = 0; i < n; i++)
            if (tes__watch_reserve(w, s->event, tes__index_walk_next(&walk), i ? 0 : n))
                return TES_ERR_NOMEM;
    }
    if (!d->out && (table->flags & TES__TABLE_VIRTUAL) &&
        !(s->handles = tes__malloc(a, (size_t)n * sizeof *s->handles)))
        return TES_ERR_NOMEM;
    return TES_OK;
}

static int spawn_bulk_now(tes_world_t *w, const tes_bulk_desc_t *d, const comp_lists_t *l)
{
    tes__alloc_t *a = &w->alloc;
    bulk_scratch_t s = {.n = (uint32_t)d->count, .nc = (uint32_t)d->ncomps};
    s.src = s.src_small;
    uint32_t n = s.n, nc = s.nc;
    tes__table_t *table =
        tes__graph_ensure(&w->tables, a, &w->components, l->table_ids, l->table_count);
    int rc = table ? bulk_reserve(w, d, l, table, &s) : TES_ERR_NOMEM;
    if (rc) {
        scratch_free(w, &s, d);
        return rc;
    }
    /* Commit: nothing below can fail. The handles go straight into the
     * table's entity column (or out, for the virtual root). */
    bool is_virtual = (table->flags & TES__TABLE_VIRTUAL) != 0;
    uint32_t first_row = table->count;
    tes_entity_t *handles = is_virtual ? (d->out ? d->out : s.handles) : table->entities + first_row;
    /* Placed in their rows at once, but for a single entity, which the
     * plan moves from the root like any one row (see tes__apply). */
    bool placed = !is_virtual && n > 1;
    tes__entity_create_n(&w->entities, n,
                         (placed ? table->id : 0) | (l->sparse_count ? TES__SLOT_SPARSE : 0),
                         placed ? first_row : 0, placed ? 1 : 0, handles);
    if (!is_virtual && d->out)
        memcpy(d->out, handles, (size_t)n * sizeof *handles);
    /* Ctor and copy hooks run from here on, before the watchers hear of the
     * batch: a group one of them builds reserves room for all of it. The
     * table values by a plan (moving the placed rows in), then the sparse
     * ones. */
    tes__watch_scope_list(w, NULL, handles, n);
    place_values(w, table, n == 1 ? handles[0] : TES_NULL, n, d->comps, s.src, nc);
    for (uint32_t k = 0; k < nc; k++) {
        tes__component_t *info = tes__registry_get(&w->components, d->comps[k]);
        const uint8_t *src = s.src[k];
        if (info->storage != TES_STORAGE_SPARSE)
            continue;
        for (uint32_t i = 0; i < n; i++) {
            void *cell = tes__sparse_store_insert(&info->store, handles[i]);
            if (cell)
                write_value(info, cell, src ? src + (size_t)i * info->size : NULL);
        }
    }
    for (uint32_t i = 0; i < n && w->watcher_count; i++)
        tes__watch_after(w, handles[i], s.event);
    /* Observers last, once every entity of the batch is complete: on_add
     * component by component (ascending id), entity by entity; then on_set
     * likewise for the components given data. The handles are read from
     * `handles` again each time: the table's column does not move (hooks
     * make no structural changes). */
    for (uint32_t j = 0; l->hooked && j < nc; j++) {
        const tes__component_t *info = tes__registry_get(&w->components, l->sorted[j]);
        for (uint32_t i = 0; info->hooks.on_add && i < n; i++)
            tes__fire(w, info->hooks.on_add, info, handles[i], tes__get(w, handles[i], info->id));
    }
    for (uint32_t j = 0; l->hooked && d->data && j < nc; j++) {
        const tes__component_t *info = tes__registry_get(&w->components, l->sorted[j]);
        uint32_t k = 0;
        while (d->comps[k] != info->id)
            k++;
        for (uint32_t i = 0; d->data[k] && info->hooks.on_set && i < n; i++)
            tes__fire(w, info->hooks.on_set, info, handles[i], tes__get(w, handles[i], info->id));
    }
    scratch_free(w, &s, d);
    return TES_OK;
}

/* call: the public call it serves (tes_spawn_bulk, tes_spawn_n), which its
 * details name. */
static int spawn_bulk_impl(tes_world_t *w, const tes_bulk_desc_t *d, const char *call)
{
    if (!d || d->count < 0 || d->ncomps < 0 || (d->ncomps > 0 && !d->comps))
        return d ? tes__fail_detail(w, TES_ERR_INVALID, "%s: count = %d, ncomps = %d, comps %s", call, (int)d->count, (int)d->ncomps, d->comps ? "set" : "NULL")
                 : tes__fail_detail(w, TES_ERR_INVALID, "%s: desc is NULL", call);
    comp_lists_t l;
    int rc = lists_init(w, &l, d->comps, sizeof *d->comps, (uint32_t)d->ncomps);
    if (!rc && d->count > 0)
        rc = tes__deferred(w) ? spawn_bulk_deferred(w, d) : spawn_bulk_now(w, d, &l);
    lists_free(w, &l);
    return rc ? tes__fail(w, rc) : TES_OK;
}

int tes_spawn_bulk(tes_world_t *w, const tes_bulk_desc_t *d)
{
    TES__CREATING("tes_spawn_bulk", int, w, tes__status, spawn_bulk_impl(w, d, "tes_spawn_bulk"));
}

/* A batch without data is a bulk spawn. */
int tes_spawn_n(tes_world_t *w, int32_t n, const tes_comp_t *comps, int32_t ncomps,
                tes_entity_t *out)
{
    tes_bulk_desc_t d = {n, comps, ncomps, NULL, out};
    TES__CREATING("tes_spawn_n", int, w, tes__status, spawn_bulk_impl(w, &d, "tes_spawn_n"));
}

/* ------------------------------------------------------------------ destroy_n */

/* Validation marks each listed entity's slot by setting the top bit of its
 * row, which no live slot uses (table rows stay below 2^31, the root's row
 * is 0 or TES__ROW_PENDING), so a repeated handle is found in one pass
 * without allocating. Every mark is cleared before the call goes on. */
#define LISTED UINT32_C(0x80000000)

static int destroy_n_impl(tes_world_t *w, const tes_entity_t *es, int32_t n)
{
    if (n < 0 || (n > 0 && !es))
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_destroy_n: n = %d with es %s", (int)n, es ? "set" : "NULL");
    tes__entity_index_t *ei = &w->entities;
    int rc = TES_OK;
    int32_t marked = 0;
    for (; marked < n; marked++) {
        tes__slot_t *slot = tes__entity_slot(ei, es[marked]);
        if (!slot)
            rc = tes__fail_stale(w, es[marked]);
        else if (slot->row & LISTED)
            rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_destroy_n: entity %u:%u is listed twice (es[%d])", tes_entity_index(es[marked]), tes_entity_generation(es[marked]), (int)marked);
        else if (w->strict_lifecycle && tes__entity_instance(ei, tes_entity_index(es[marked])))
            rc = TES_ERR_OWNED;
        if (rc)
            break;
        slot->row |= LISTED;
    }
    for (int32_t i = 0; i < marked; i++)
        ei->slots[tes_entity_index(es[i])].row &= ~LISTED;
    if (rc)
        return tes__fail(w, rc);
    /* Descendants die too: the whole plan is checked before anything. */
    tes__destroy_plan_t plan;
    if (tes__world_destroy_plan(w, es, (uint32_t)n, &plan))
        return tes__fail(w, TES_ERR_NOMEM);
    rc = plan.owned ? tes__world_plan_owned(w, &plan, 0) : TES_OK;
    if (!rc && tes__deferred(w)) {
        /* Each listed destroy cascades again when applied. */
        if (tes__defer_reserve(w, (uint32_t)n))
            rc = tes__fail(w, TES_ERR_NOMEM);
        for (int32_t i = 0; !rc && i < n; i++)
            tes__defer_push(w, TES__OP_DESTROY, es[i], 0, TES_NULL, NULL);
    } else if (!rc) {
        /* Destroying one entity kills no entity outside the plan
         * (instances and prefabs only unlink), so every slot is live. */
        for (uint32_t i = 0; i < plan.count; i++) {
            tes__assert(tes__entity_slot(ei, plan.items[i]));
            tes__world_destroy(w, plan.items[i]);
        }
    }
    tes__world_plan_free(w, &plan);
    return rc;
}

int tes_destroy_n(tes_world_t *w, const tes_entity_t *es, int32_t n)
{
    TES__STRUCTURAL("tes_destroy_n", int, w, tes__status, destroy_n_impl(w, es, n));
}

