/*
 * Table lookup and creation, and the edge cache. Creation reserves the id
 * array and the type map before building the table, then commits, so an
 * allocation failure leaves the graph as it was. Edges are caches, but room
 * for one is reserved before the step, so a step either fully succeeds or
 * fails with nothing observable changed. Each cached edge carries its move
 * plan, made here (tes__plan_make, move_plan.h) when the edge is cached:
 * the graph stands above both the tables and the plans.
 */
#include "storage/table_graph.h"

#include "storage/move_plan.h"

#include <string.h>

int tes__graph_init(tes__table_graph_t *g, tes__alloc_t *a, const tes__registry_t *r)
{
    memset(g, 0, sizeof *g);
    tes__table_t *root = tes__graph_ensure(g, a, r, NULL, 0);
    if (!root)
        return TES_ERR_NOMEM;
    root->flags |= TES__TABLE_VIRTUAL;
    return TES_OK;
}

void tes__graph_fini(tes__table_graph_t *g, tes__alloc_t *a)
{
    for (uint32_t i = 0; i < g->count; i++)
        tes__table_free(g->tables[i], a);
    tes__free(a, g->tables, (size_t)g->cap * sizeof *g->tables);
    tes__free(a, g->listeners, (size_t)g->listener_cap * sizeof *g->listeners);
    tes__map_fini(&g->by_type, a);
    memset(g, 0, sizeof *g);
}

static tes__table_t *find(const tes__table_graph_t *g, uint64_t hash, const tes_comp_t *type,
                          uint32_t type_count)
{
    uint32_t cursor = 0;
    uint64_t id;
    while (tes__map_next(&g->by_type, hash, &cursor, &id)) {
        tes__table_t *t = g->tables[id];
        if (t->type_count == type_count &&
            (!type_count || memcmp(t->type, type, type_count * sizeof *type) == 0))
            return t;
    }
    return NULL;
}

tes__table_t *tes__graph_ensure(tes__table_graph_t *g, tes__alloc_t *a, const tes__registry_t *r,
                                const tes_comp_t *type, uint32_t type_count)
{
    uint64_t hash = tes__type_hash(type, type_count);
    tes__table_t *t = find(g, hash, type, type_count);
    if (t)
        return t;
    if (g->count >= TES__TABLE_ID_LIMIT)
        return NULL;
    if (tes__grow(a, (void **)&g->tables, &g->cap, (uint64_t)g->count + 1, sizeof *g->tables, 16))
        return NULL;
    if (tes__map_reserve(&g->by_type, a, 1))
        return NULL;
    t = tes__table_new(a, r, g->count, type, type_count);
    if (!t)
        return NULL;
    for (uint32_t i = 0; i < g->listener_count; i++) {
        if (g->listeners[i].fn(g->listeners[i].ctx, t, false)) {
            tes__table_free(t, a);
            return NULL;
        }
    }
    g->tables[g->count++] = t;
    tes__map_insert(&g->by_type, hash, t->id);
    for (uint32_t i = 0; i < g->listener_count; i++)
        g->listeners[i].fn(g->listeners[i].ctx, t, true);
    return t;
}

/* Caches the edge t -> next (adding or removing c) as t's last edge in that
 * direction, with its move plan (whose copy routine is chosen here, once). */
static void remember_edge(tes__table_t *t, tes__table_t *next, tes_comp_t c, bool add)
{
    tes__edge_plan_t *e = &t->last_edge[add];
    bool plain = !((t->flags | next->flags) & TES__TABLE_NOT_PLAIN);
    e->plain_comp = plain ? c : 0;
    e->comp = c;
    e->col = tes__table_column_index(add ? next : t, c);
    e->plain = plain;
    tes__plan_make(&e->move, t, next, &c, add ? 1u : 0u, add ? 1u : 0u, add, 0);
}

tes__table_t *tes__graph_step(tes__table_graph_t *g, tes__alloc_t *a, const tes__registry_t *r,
                              tes__table_t *t, tes_comp_t c, bool add)
{
    /* Systems tend to add and remove the same component over and over: the
     * last edge taken in each direction is one compare away. */
    if (t->last_edge[add].comp == c)
        return t->last_edge[add].move.dst;
    uint64_t key = (uint64_t)c | ((uint64_t)add << 32);
    uint64_t id;
    if (tes__map_get(&t->edges, key, &id)) {
        remember_edge(t, g->tables[id], c, add);
        return g->tables[id];
    }
    int32_t at = tes__table_type_index(t, c);
    if ((at >= 0) == add)
        return t;
    /* Room for the edge first, so that every allocation failure surfaces as
     * a failed step rather than a silently missing cache entry. */
    if (tes__map_reserve(&t->edges, a, 1))
        return NULL;
    /* Build the neighbouring type: insert or drop c, keeping it sorted. */
    uint32_t n = add ? t->type_count + 1 : t->type_count - 1;
    tes_comp_t small[32];
    tes_comp_t *type = small;
    if (n > 32) {
        type = tes__malloc(a, (size_t)n * sizeof *type);
        if (!type)
            return NULL;
    }
    uint32_t k = 0;
    bool placed = !add;
    for (uint32_t i = 0; i < t->type_count; i++) {
        if (!placed && t->type[i] > c) {
            type[k++] = c;
            placed = true;
        }
        if (add || t->type[i] != c)
            type[k++] = t->type[i];
    }
    if (!placed)
        type[k++] = c;
    tes__table_t *next = tes__graph_ensure(g, a, r, type, n);
    if (type != small)
        tes__free(a, type, (size_t)n * sizeof *type);
    if (next) {
        tes__map_insert(&t->edges, key, next->id);
        remember_edge(t, next, c, add);
    }
    return next;
}

int tes__graph_listen(tes__table_graph_t *g, tes__alloc_t *a, tes__table_listener_fn fn,
                      void *ctx)
{
    if (tes__grow(a, (void **)&g->listeners, &g->listener_cap, (uint64_t)g->listener_count + 1,
                  sizeof *g->listeners, 4))
        return TES_ERR_NOMEM;
    g->listeners[g->listener_count++] = (tes__table_listener_t){fn, ctx};
    return TES_OK;
}

void tes__graph_unlisten(tes__table_graph_t *g, void *ctx)
{
    for (uint32_t i = 0; i < g->listener_count; i++) {
        if (g->listeners[i].ctx == ctx) {
            g->listeners[i] = g->listeners[--g->listener_count];
            return;
        }
    }
}
