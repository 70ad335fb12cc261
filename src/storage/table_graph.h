/*
 * The table graph: every table, found by its type through a hash map, plus
 * cached edges on each table ("this table + component c" and "this table -
 * component c"), so a repeated add or remove costs one small map lookup and
 * no type arithmetic. Table 0 is the root: the table of entities with no
 * table components. It is virtual (TES__TABLE_VIRTUAL): its entities own no
 * row, so empty entities cost only their entity slot.
 *
 * Tables and edges are never deleted, which keeps every edge valid forever.
 * Higher layers (queries) learn about new tables through listeners that
 * they register here; the graph never knows who listens.
 */
#ifndef TES_STORAGE_TABLE_GRAPH_H
#define TES_STORAGE_TABLE_GRAPH_H

#include "storage/table.h"

/* Table ids must fit below the slot flag bit of the entity index. */
#define TES__TABLE_ID_LIMIT UINT32_C(0x7FFFFFFF)

/* Called twice for every new table: first with commit = false, before the
 * table joins the graph, to reserve what the listener will need (returning
 * TES_ERR_NOMEM abandons the table's creation); then with commit = true,
 * when it must not fail. */
typedef int (*tes__table_listener_fn)(void *ctx, tes__table_t *table, bool commit);

typedef struct tes__table_listener {
    tes__table_listener_fn fn;
    void *ctx;
} tes__table_listener_t;

typedef struct tes__table_graph {
    tes__table_t **tables; /* by id; tables[0] is the root */
    uint32_t count;
    uint32_t cap;
    tes__map_t by_type;    /* type hash -> table id */
    tes__table_listener_t *listeners;
    uint32_t listener_count;
    uint32_t listener_cap;
} tes__table_graph_t;

/* Creates the root table. TES_OK or TES_ERR_NOMEM. */
int tes__graph_init(tes__table_graph_t *g, tes__alloc_t *a, const tes__registry_t *r);
/* Frees every table; runs no destructors. */
void tes__graph_fini(tes__table_graph_t *g, tes__alloc_t *a);

/* The table of `type` (sorted, unique), created if needed. NULL on
 * TES_ERR_NOMEM, with the graph unchanged. */
tes__table_t *tes__graph_ensure(tes__table_graph_t *g, tes__alloc_t *a, const tes__registry_t *r,
                                const tes_comp_t *type, uint32_t type_count);

/* The table reached from t by adding (add = true) or removing c, through the
 * cached edge or by computing and caching it. If the type does not change,
 * returns t. NULL on TES_ERR_NOMEM. */
tes__table_t *tes__graph_step(tes__table_graph_t *g, tes__alloc_t *a, const tes__registry_t *r,
                              tes__table_t *t, tes_comp_t c, bool add);

/* Registers fn to be called for every table created from now on. */
int tes__graph_listen(tes__table_graph_t *g, tes__alloc_t *a, tes__table_listener_fn fn,
                      void *ctx);
/* Removes the listener registered with ctx. */
void tes__graph_unlisten(tes__table_graph_t *g, void *ctx);

#endif
