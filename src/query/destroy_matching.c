/*
 * tes_destroy_matching: destroys what a query matches. It lives in the
 * query layer because it needs the query's table cache; it changes the
 * world only through the world layer's own destroy primitives.
 *
 * Two ways, chosen per call:
 * - whole tables: when the query has no sparse term and no group, every row
 *   of every table in its cache matches, so each such table is emptied at
 *   once: on_remove for every row, watchers, one destructor call per column
 *   (not one per row), sparse components of the rows that have any, then
 *   the entity slots are freed in row order and the table's count drops to
 *   zero (it keeps its block for the next arrivals). Entities of the
 *   virtual root (a query with no AND term) are destroyed one by one.
 * - otherwise (sparse terms, groups, or a deferred world): the matches are
 *   collected by iterating the query, then destroyed one by one, or queued
 *   as deferred destroys.
 * Either way the entities die in the order an iteration would visit them,
 * so their indices are recycled in that order, and nothing is destroyed
 * unless every match may be (strict lifecycle) and every allocation the
 * call needs has succeeded.
 *
 * Tuned for clearing a level or a wave: millions of rows in a few tables,
 * where the per-row cost is freeing the entity slot.
 */
#include "query/iter.h"
#include "storage/move_plan.h"
#include "world/cascade.h"
#include "world/defer.h"
#include "world/entity_ops.h"
#include "world/last_error.h"
#include "world/move.h"
#include "world/quiet.h"

#include <string.h>

/* Handles collected for destruction, in iteration order. */
typedef struct handle_list {
    tes_entity_t *items;
    uint32_t count, cap;
} handle_list_t;

static int list_push(tes_world_t *w, handle_list_t *l, const tes_entity_t *es, uint32_t n)
{
    if (tes__grow(&w->alloc, (void **)&l->items, &l->cap, (uint64_t)l->count + n, sizeof *l->items,
                  64))
        return TES_ERR_NOMEM;
    memcpy(l->items + l->count, es, (size_t)n * sizeof *es);
    l->count += n;
    return TES_OK;
}

static void list_free(tes_world_t *w, handle_list_t *l)
{
    tes__free(&w->alloc, l->items, (size_t)l->cap * sizeof *l->items);
}

/* TES_ERR_OWNED if a strict world forbids destroying one of es. */
static int check_owned(const tes_world_t *w, const tes_entity_t *es, uint32_t n)
{
    if (!w->strict_lifecycle || !w->entities.instances)
        return TES_OK;
    for (uint32_t i = 0; i < n; i++)
        if (tes__entity_instance(&w->entities, tes_entity_index(es[i])))
            return TES_ERR_OWNED;
    return TES_OK;
}

static void fire_on_remove(tes_world_t *w, tes__component_t *info, tes_entity_t e, void *ptr)
{
    tes__fire(w, info->hooks.on_remove, info, e, ptr);
}

/* Destroys e's sparse components (their on_remove has fired). */
static void matching_drop_sparse(tes_world_t *w, tes_entity_t e)
{
    const tes__registry_t *reg = &w->components;
    for (uint32_t i = 0; i < reg->sparse_count; i++) {
        tes__component_t *info = reg->items[reg->sparse[i]];
        if (!info->store.set.live || !tes__sparse_set_contains(&info->store.set, e))
            continue;
        void *ptr = tes__sparse_store_get(&info->store, e);
        if (ptr)
            tes__component_destruct(info, ptr, 1);
        tes__sparse_store_remove(&info->store, e, &info->hooks);
    }
}

/* Destroys every entity of table t at once; see the file comment. Runs
 * between tes__world_begin and end; cannot fail. */
static void empty_table(tes_world_t *w, tes__table_t *t)
{
    tes__entity_index_t *ei = &w->entities;
    uint32_t n = t->count;
    /* Rows may own sparse components only if some sparse component is
     * registered: without one, the per-row passes below are skipped. */
    bool sparse = w->components.sparse_count > 0;
    /* Observers first, while every entity of the table is whole. */
    bool on_remove = (t->flags & TES__TABLE_HAS_ON_REMOVE) != 0;
    for (uint32_t row = 0; (on_remove || sparse) && row < n; row++) {
        /* Read afresh for every row: observers run in between. */
        const tes__slot_t *slot = &ei->slots[tes_entity_index(t->entities[row])];
        if (on_remove || (slot->table & TES__SLOT_SPARSE))
            tes__world_each(w, t->entities[row], fire_on_remove);
    }
    for (uint32_t row = 0; row < n && w->watcher_count; row++)
        tes__watch_before(w, t->entities[row], TES__WATCH_DESTROY);
    /* Then destructors: the rows move to the root by a plan, which
     * destroys their cells (one call per column), then the sparse
     * components of the rows that may have some. The rows' entities stay
     * readable in the table's block until it moves (see tes__apply). */
    tes__world_hook_up(w);
    tes__move_plan_t plan;
    tes__plan_make(&plan, t, w->tables.tables[0], NULL, 0, 0, false, 0);
    tes_entity_t only = t->entities[0]; /* a single row's block moves at once */
    const tes_entity_t *es = n == 1 ? &only : t->entities;
    tes__apply(w, &plan, only, NULL, n);
    for (uint32_t row = 0; sparse && row < n; row++)
        if (ei->slots[tes_entity_index(es[row])].table & TES__SLOT_SPARSE)
            matching_drop_sparse(w, es[row]);
    tes__world_hook_down(w);
    tes__entity_free_n(ei, es, n);
    tes__table_debug_move(t, &w->alloc);
}

/* The whole-table way (immediate, no sparse term, no group). */
static int32_t destroy_tables(tes_world_t *w, tes_query_t *q)
{
    tes__alloc_t *a = &w->alloc;
    /* The tables to empty, taken before any hook runs (a hook may create
     * queries, and so tables' listeners, but never a table). */
    tes__table_t *small[32];
    tes__table_t **tables = small;
    uint32_t ntables = 0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < q->match_count; i++)
        ntables += q->matches[i].table->count > 0;
    if (ntables > 32 && !(tables = tes__malloc(a, (size_t)ntables * sizeof *tables)))
        return tes__fail(w, TES_ERR_NOMEM);
    uint32_t k = 0;
    int rc = TES_OK;
    for (uint32_t i = 0; i < q->match_count; i++) {
        tes__table_t *t = q->matches[i].table;
        if (!t->count)
            continue;
        tables[k++] = t;
        total += t->count;
        if (!rc)
            rc = check_owned(w, t->entities, t->count);
    }
    /* Root entities (ALL mode): from the entity index, as the root walk
     * of an iteration reads them. */
    handle_list_t root = {0};
    const tes__entity_index_t *ei = &w->entities;
    for (uint32_t i = 0; !rc && q->mode == TES__QUERY_ALL && q->table_ok[0] && i < ei->count; i++) {
        const tes__slot_t *s = &ei->slots[i];
        if (!tes__slot_is_root_match(s))
            continue;
        tes_entity_t e = tes_entity_make(i, s->generation);
        rc = list_push(w, &root, &e, 1);
    }
    total += root.count;
    if (!rc)
        rc = check_owned(w, root.items, root.count);
    if (!rc && total > INT32_MAX)
        rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_destroy_matching: %llu matches do not fit the int32_t result", (unsigned long long)total);
    if (!rc) {
        for (uint32_t i = 0; i < ntables; i++)
            empty_table(w, tables[i]);
        for (uint32_t i = 0; i < root.count; i++)
            tes__world_destroy(w, root.items[i]);
    }
    list_free(w, &root);
    if (tables != small)
        tes__free(a, tables, (size_t)ntables * sizeof *tables);
    return rc ? tes__fail(w, rc) : (int32_t)total;
}

/* The general way: collect by iterating, then destroy or queue. */
static int32_t destroy_listed(tes_world_t *w, tes_query_t *q)
{
    handle_list_t l = {0};
    int rc = TES_OK;
    /* No user code runs during the walk: no deferral level needed. */
    tes_iter_t it = tes__query_walk_start(q);
    while (rc == TES_OK && tes__query_walk_next(&it))
        rc = list_push(w, &l, it.entities, (uint32_t)it.count);
    tes__query_walk_end(&it);
    /* Matches' descendants die too (they are not counted): the whole plan
     * is checked before anything is destroyed. */
    tes__destroy_plan_t plan = {NULL, 0, NULL, 0};
    if (!rc && tes__world_destroy_plan(w, l.items, l.count, &plan))
        rc = TES_ERR_NOMEM;
    if (!rc)
        rc = check_owned(w, plan.items, plan.count);
    if (!rc && l.count > INT32_MAX)
        rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_destroy_matching: %u matches do not fit the int32_t result", (unsigned)l.count);
    if (!rc && tes__deferred(w)) {
        if (tes__defer_reserve(w, l.count))
            rc = TES_ERR_NOMEM;
        for (uint32_t i = 0; !rc && i < l.count; i++)
            tes__defer_push(w, TES__OP_DESTROY, l.items[i], 0, TES_NULL, NULL);
    } else if (!rc) {
        for (uint32_t i = 0; i < plan.count; i++) {
            tes__assert(tes_alive(w, plan.items[i]));
            tes__world_destroy(w, plan.items[i]);
        }
    }
    tes__world_plan_free(w, &plan);
    uint32_t count = l.count;
    list_free(w, &l);
    return rc ? tes__fail(w, rc) : (int32_t)count;
}

int32_t tes_destroy_matching(tes_query_t *q)
{
    if (!q)
        return TES_ERR_INVALID;
    tes_world_t *w = q->w;
    int rc = tes__world_begin(w, "tes_destroy_matching");
    if (rc)
        return rc;
    int32_t result;
    /* Emptying tables wholesale would skip the matches' descendants. */
    if (!tes__deferred(w) && !q->group && !q->has_sparse && !q->change_count &&
        q->mode != TES__QUERY_DRIVEN && !tes__world_has_links(w) && !q->cascade_walk)
        result = destroy_tables(w, q);
    else
        result = destroy_listed(w, q);
    tes__world_end(w);
    return result;
}
