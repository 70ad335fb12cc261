/*
 * Query creation, table matching and the table cache. A query validates its
 * terms once, scans the existing tables once, and then learns about every
 * new table from the table graph (a two-phase listener: room is reserved
 * before the table is committed, so a table is never missed for lack of
 * memory). Nothing here runs per entity except tes__query_match_entity,
 * the per-entity test of the DRIVEN and ALL modes and of groups.
 */
#include "query/query.h"

#include <string.h>

#include "query/group.h"

static bool type_has(const tes__table_t *t, tes_comp_t c) { return tes__table_type_index(t, c) >= 0; }

bool tes__query_table_ok(const tes_query_t *q, const tes__table_t *t)
{
    if (q->skip_disabled && (t->flags & TES__TABLE_DISABLED))
        return false;
    if (q->skip_prefab && (t->flags & TES__TABLE_PREFAB))
        return false;
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse && q->terms[i].oper == TES_NOT && type_has(t, q->terms[i].comp))
            return false;
    return true;
}

/* Whether t belongs in the table cache: it passes the filters, holds every
 * table AND term, and is a real table (the virtual root owns no rows). */
static bool table_matches(const tes_query_t *q, const tes__table_t *t)
{
    if ((t->flags & TES__TABLE_VIRTUAL) || !tes__query_table_ok(q, t))
        return false;
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse && q->terms[i].oper == TES_AND && !type_has(t, q->terms[i].comp))
            return false;
    return true;
}

static void fill_match(const tes_query_t *q, tes__table_t *t, tes__query_match_t *m)
{
    m->table = t;
    for (int32_t i = 0; i < TES_MAX_TERMS; i++) {
        int32_t col = -1;
        if (i < q->term_count && !q->terms[i].sparse && q->terms[i].data)
            col = tes__table_column_index(t, q->terms[i].comp);
        m->column[i] = col;
    }
}

/* Reserve (commit = false) or record (commit = true) a new table. */
static int on_table(void *ctx, tes__table_t *t, bool commit)
{
    tes_query_t *q = ctx;
    tes__alloc_t *a = &q->w->alloc;
    bool match = q->mode != TES__QUERY_DRIVEN && table_matches(q, t);
    if (!commit) {
        if (match && tes__grow(a, (void **)&q->matches, &q->match_cap, (uint64_t)q->match_count + 1,
                               sizeof *q->matches, 8))
            return TES_ERR_NOMEM;
        uint32_t cap = q->table_ok_cap;
        if (tes__grow(a, (void **)&q->table_ok, &cap, (uint64_t)t->id + 1, 1, 64))
            return TES_ERR_NOMEM;
        memset(q->table_ok + q->table_ok_cap, 0, cap - q->table_ok_cap);
        q->table_ok_cap = cap;
        return TES_OK;
    }
    q->table_ok[t->id] = tes__query_table_ok(q, t);
    q->tables_failing += !q->table_ok[t->id];
    if (match)
        fill_match(q, t, &q->matches[q->match_count++]);
    return TES_OK;
}

/* Checks and copies the terms; picks the mode. TES_OK or TES_ERR_INVALID. */
static int setup_terms(tes_query_t *q, const tes_query_desc_t *d)
{
    const uint32_t known = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB |
                           TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP;
    if (d->flags & ~known)
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x include unknown bits 0x%x", (unsigned)d->flags, (unsigned)(d->flags & ~known));
    if ((d->flags & TES_QUERY_NONOWNING_GROUP) && (d->flags & TES_QUERY_OWNING_GROUP))
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x ask for both an owning and a non-owning group", (unsigned)d->flags);
    q->flags = d->flags;
    q->skip_disabled = !(d->flags & TES_QUERY_INCLUDE_DISABLED);
    q->skip_prefab = !(d->flags & TES_QUERY_INCLUDE_PREFAB);
    bool table_and = false, any_and = false;
    int32_t n = 0;
    while (n < TES_MAX_TERMS && d->terms[n].comp)
        n++;
    if (n == 0)
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query has no terms (terms[0].comp is 0)");
    for (int32_t i = 0; i < n; i++) {
        const tes_term_t *t = &d->terms[i];
        tes__component_t *info = tes__registry_get(&q->w->components, t->comp);
        if (!info || (unsigned)t->oper > TES_OPTIONAL || (unsigned)t->access > TES_NOACCESS)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: %s %u", (int)i, !info ? "component id is not registered:" : (unsigned)t->oper > TES_OPTIONAL ? "oper is not a tes_oper_t:" : "access is not a tes_access_t:", !info ? (unsigned)t->comp : (unsigned)t->oper > TES_OPTIONAL ? (unsigned)t->oper : (unsigned)t->access);
        for (int32_t j = 0; j < i; j++)
            if (d->terms[j].comp == t->comp)
                return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d] and terms[%d] both name component '%.64s'", (int)j, (int)i, info->name);
        tes__term_info_t *ti = &q->terms[i];
        ti->comp = t->comp;
        ti->oper = t->oper;
        ti->access = t->access;
        ti->info = info;
        ti->sparse = info->storage == TES_STORAGE_SPARSE;
        ti->data = info->size > 0 && t->oper != TES_NOT;
        q->has_sparse |= ti->sparse;
        any_and |= t->oper == TES_AND;
        table_and |= t->oper == TES_AND && !ti->sparse;
        /* Naming a default-filtered tag turns its filter off. */
        if (t->comp == TES_DISABLED)
            q->skip_disabled = false;
        if (t->comp == TES_PREFAB)
            q->skip_prefab = false;
    }
    q->term_count = n;
    q->sparse_only = q->and_only = true;
    for (int32_t i = 0; i < n; i++) {
        q->sparse_only &= q->terms[i].sparse;
        q->and_only &= q->terms[i].oper == TES_AND;
    }
    q->mode = table_and ? TES__QUERY_TABLE : any_and ? TES__QUERY_DRIVEN : TES__QUERY_ALL;
    if ((q->flags & (TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP)) && !any_and)
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x ask for a group, which needs at least one TES_AND term", (unsigned)q->flags);
    return TES_OK;
}

static void query_release(tes_query_t *q)
{
    tes__alloc_t *a = &q->w->alloc;
    tes__group_free(q);
    tes__free(a, q->matches, (size_t)q->match_cap * sizeof *q->matches);
    tes__free(a, q->table_ok, q->table_ok_cap);
    tes__free(a, q, sizeof *q);
}

/* World teardown with the query still alive: the graph and the watcher list
 * are going away too, so only the query's own memory needs releasing. */
static void query_fini(void *ctx) { query_release(ctx); }

tes_query_t *tes_query_new(tes_world_t *w, const tes_query_desc_t *desc)
{
    if (!w)
        return NULL;
    if (!desc) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_query_new: desc is NULL");
        return NULL;
    }
    tes__alloc_t *a = &w->alloc;
    tes_query_t *q = tes__calloc(a, sizeof *q);
    if (!q) {
        tes__fail(w, TES_ERR_NOMEM);
        return NULL;
    }
    q->w = w;
    int rc = setup_terms(q, desc);
    /* An owning group reorders its stores when it is built: never under a
     * live iterator, inside a deferred block or inside a hook (the call that
     * runs the hook may hold addresses in those stores). */
    if (!rc && (q->flags & TES_QUERY_OWNING_GROUP) && (w->defer.depth > 0 || tes__in_hook(w)))
        rc = TES_ERR_BUSY;
    /* A non-owning group asked for inside a hook would be filled from a
     * world in the middle of a change, and would hear the rest of that
     * change without the room its watchers reserved: it is built later,
     * outside hooks. */
    bool pending = !rc && (q->flags & TES_QUERY_NONOWNING_GROUP) && tes__in_hook(w);
    /* Size the caches for every existing table, then fill them. */
    tes__table_graph_t *g = &w->tables;
    uint32_t cap = q->table_ok_cap;
    if (!rc && tes__grow(a, (void **)&q->table_ok, &cap, g->count, 1, 64))
        rc = TES_ERR_NOMEM;
    q->table_ok_cap = cap;
    if (!rc && q->mode != TES__QUERY_DRIVEN &&
        tes__grow(a, (void **)&q->matches, &q->match_cap, g->count, sizeof *q->matches, 8))
        rc = TES_ERR_NOMEM;
    if (!rc) {
        for (uint32_t i = 0; i < g->count; i++) {
            q->table_ok[i] = tes__query_table_ok(q, g->tables[i]);
            q->tables_failing += !q->table_ok[i];
            if (q->mode != TES__QUERY_DRIVEN && table_matches(q, g->tables[i]))
                fill_match(q, g->tables[i], &q->matches[q->match_count++]);
        }
    }
    if (!rc && (rc = tes__graph_listen(g, a, on_table, q)) == TES_OK) {
        if ((rc = tes__world_depend(w, query_fini, q)) != TES_OK)
            tes__graph_unlisten(g, q);
    }
    if (!rc && pending) {
        q->group_pending = true;
    } else if (!rc && (q->flags & (TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP))) {
        /* Building an owning group runs move hooks: they run as hooks. */
        tes__hook_enter(w);
        rc = tes__group_new(q);
        tes__world_end(w);
        if (rc != TES_OK) {
            tes__world_undepend(w, q);
            tes__graph_unlisten(g, q);
        }
    }
    if (rc) {
        query_release(q);
        tes__fail(w, rc);
        return NULL;
    }
    return q;
}

/* The release of a query freed from inside a hook (the world already
 * dropped it from its dependents). */
static void query_release_doomed(void *ctx)
{
    tes_query_t *q = ctx;
    tes__graph_unlisten(&q->w->tables, q);
    query_release(q);
}

void tes__query_settle_group(tes_query_t *q)
{
    if (!q->group_pending || tes__in_hook(q->w))
        return;
    if (tes__group_new(q) == TES_OK) /* non-owning: runs no hook */
        q->group_pending = false;
}

void tes_query_free(tes_query_t *q)
{
    if (!q)
        return;
    /* Inside a hook the query may be in use by the call running the hook
     * (its group's watcher may be the one reordering a store): it keeps
     * working until that call ends, and is freed then. */
    if (tes__in_hook(q->w)) {
        tes__world_doom(q->w, q, query_release_doomed);
        return;
    }
    tes__graph_unlisten(&q->w->tables, q);
    tes__world_undepend(q->w, q);
    query_release(q);
}

bool tes__query_match_entity(const tes_query_t *q, tes_entity_t e, void **ptrs)
{
    const tes_world_t *w = q->w;
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return false;
    const tes__table_t *table = tes__slot_table(w, slot);
    if (!q->table_ok[table->id])
        return false;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        void *ptr = NULL;
        bool present;
        if (t->sparse) {
            uint32_t pos = tes__sparse_set_find(&t->info->store.set, e);
            present = pos != TES_NULL_INDEX;
            if (present && t->data)
                ptr = tes__sparse_store_at(&t->info->store, pos);
        } else {
            int32_t col = t->data ? tes__table_column_index(table, t->comp) : -1;
            present = col >= 0 || (t->oper != TES_OPTIONAL && type_has(table, t->comp));
            if (col >= 0)
                ptr = tes__table_cell(table, (uint32_t)col, slot->row);
        }
        if ((t->oper == TES_AND && !present) || (t->oper == TES_NOT && present))
            return false;
        if (ptrs)
            ptrs[i] = ptr;
    }
    return true;
}

/* True when the sparse fields `next` continue the run whose last entity had
 * fields `prev` (each one address further, or absent in both). */
bool tes__query_contiguous(const tes_query_t *q, void *const *prev, void *const *next, bool sparse_only)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (!t->data || (sparse_only && !t->sparse))
            continue;
        if (!prev[i] != !next[i])
            return false;
        if (prev[i] && (uint8_t *)next[i] != (uint8_t *)prev[i] + t->info->size)
            return false;
    }
    return true;
}

