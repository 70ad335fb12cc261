/*
 * Making and freeing a query: the top of the query layer. A query
 * validates its terms once and picks its mode here, then takes its parts
 * from the files below: the change filters (changes_iter.c), the by-depth
 * order's checks (cascade_iter.c), the gathering plan (gather.c), the
 * table cache (query.c), the filter index (filter.c) and the group
 * (group.c). Freeing releases them in turn. Creation is rare next to
 * iteration, so this file is written for clear failure paths (every
 * refusal recorded with a detail, every allocation undone), not speed. It
 * also answers the world's two questions about live queries: which hold
 * open iterators (for a refusal's detail) and whether their kept by-depth
 * orders hold (for the world check).
 */
#include "query/cascade.h"
#include "query/changes_iter.h"
#include "query/query.h"
#include "world/explain.h"
#include "world/last_error.h"

#include <stdio.h>

#include "query/filter.h"
#include "query/gather.h"
#include "query/group.h"
#include "world/quiet.h"

/* Checks and copies the terms; picks the mode. TES_OK or TES_ERR_INVALID. */
static int setup_terms(tes_query_t *q, const tes_query_desc_t *d)
{
    const uint32_t known = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB |
                           TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP | TES_QUERY_CASCADE;
    if (d->flags & ~known)
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x include unknown bits 0x%x", (unsigned)d->flags, (unsigned)(d->flags & ~known));
    if ((d->flags & TES_QUERY_NONOWNING_GROUP) && (d->flags & TES_QUERY_OWNING_GROUP))
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x ask for both an owning and a non-owning group", (unsigned)d->flags);
    q->flags = d->flags;
    q->skip_disabled = !(d->flags & TES_QUERY_INCLUDE_DISABLED);
    q->skip_prefab = !(d->flags & TES_QUERY_INCLUDE_PREFAB);
    bool table_and = false, any_and = false;
    int32_t n = 0;
    int rc = tes__query_desc_terms(q->w, d, &n);
    if (rc)
        return rc;
    if (n == 0)
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query has no terms (terms[0].comp is 0)");
    for (int32_t i = 0; i < n; i++) {
        const tes_term_t *t = &d->terms[i];
        tes__component_t *info = tes__registry_get(&q->w->components, t->comp);
        if (!info || (unsigned)t->oper > TES_OPTIONAL || (unsigned)t->access > TES_NOACCESS)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: %s %u", (int)i, !info ? "component id is not registered:" : (unsigned)t->oper > TES_OPTIONAL ? "oper is not a tes_oper_t:" : "access is not a tes_access_t:", !info ? (unsigned)t->comp : (unsigned)t->oper > TES_OPTIONAL ? (unsigned)t->oper : (unsigned)t->access);
        if ((unsigned)t->src > TES_SRC_PARENT)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: src %u is not a tes_src_t", (int)i, (unsigned)t->src);
        for (int32_t j = 0; j < i; j++)
            if (d->terms[j].comp == t->comp && d->terms[j].src == t->src)
                return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d] and terms[%d] both name component '%.64s'%s", (int)j, (int)i, info->name, t->src ? " of the parent" : "");
        tes__term_info_t *ti = &q->terms[i];
        ti->comp = t->comp;
        ti->oper = t->oper;
        ti->access = t->access;
        ti->info = info;
        if (t->src == TES_SRC_PARENT) {
            /* Invisible to the self matcher (query.h); cascade_iter.c
             * validates and reads it. */
            ti->parent = true;
            ti->sparse = false;
            ti->data = false;
            continue;
        }
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
    q->sparse_only = true;
    for (int32_t i = 0; i < n; i++) {
        if (q->terms[i].parent)
            continue;
        q->sparse_only &= q->terms[i].sparse;
        q->table_data |= !q->terms[i].sparse && q->terms[i].data;
        if (q->terms[i].sparse)
            q->sparse_terms[q->sparse_count++] = (uint8_t)i;
    }
    q->mode = table_and ? TES__QUERY_TABLE : any_and ? TES__QUERY_DRIVEN : TES__QUERY_ALL;
    q->filter_mask = (uint8_t)((q->skip_disabled ? TES__FILTER_DISABLED : 0) |
                               (q->skip_prefab ? TES__FILTER_PREFAB : 0));
    if ((q->flags & (TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP)) && !any_and)
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x ask for a group, which needs at least one TES_AND term", (unsigned)q->flags);
    tes__gather_plan(q);
    if ((rc = tes__cascade_setup(q, d)) != TES_OK)
        return rc;
    return tes__query_changes_setup(q, d);
}

/* A term list ends at its first all-zero term. A term whose component is
 * 0 but which is not all zero, or which a set term follows, is a term the
 * caller meant to write with an id that was never filled in: most often a
 * component registered after the desc was built. Reading it as the end
 * would quietly drop the terms after it and match more entities, so it is
 * refused. */
int tes__query_desc_terms(tes_world_t *w, const tes_query_desc_t *d, int32_t *count)
{
    int32_t n = 0;
    while (n < TES_MAX_TERMS && d->terms[n].comp)
        n++;
    *count = n;
    if (n == TES_MAX_TERMS)
        return TES_OK;
    for (int32_t i = n + 1; i < TES_MAX_TERMS; i++)
        if (d->terms[i].comp || d->terms[i].oper != TES_AND || d->terms[i].access != TES_INOUT ||
            d->terms[i].src != TES_SRC_SELF)
            return tes__fail_detail(w, TES_ERR_INVALID, "terms[%d] has component 0 but terms[%d] is set: was a component registered?", (int)n, (int)i);
    const tes_term_t *t = &d->terms[n];
    if (t->oper != TES_AND)
        return tes__fail_detail(w, TES_ERR_INVALID, "terms[%d] has component 0 but oper %u (TES_AND is 0): was a component registered?", (int)n, (unsigned)t->oper);
    if (t->access != TES_INOUT)
        return tes__fail_detail(w, TES_ERR_INVALID, "terms[%d] has component 0 but access %u (TES_INOUT is 0): was a component registered?", (int)n, (unsigned)t->access);
    return TES_OK;
}

static void query_release(tes_query_t *q)
{
    tes__alloc_t *a = &q->w->alloc;
    /* The levels its unfinished iterators hold are no longer its: a query
     * made later at the same address must not be named for them. */
    for (uint32_t k = 0; k < TES__ITER_LEVELS; k++)
        if (atomic_load_explicit(&q->w->iter_levels[k], memory_order_relaxed) == (uintptr_t)q)
            atomic_store_explicit(&q->w->iter_levels[k], 0, memory_order_relaxed);
    tes__group_free(q);
    tes__cascade_release_spare(q);
    tes__free(a, q->matches, (size_t)q->match_cap * sizeof *q->matches);
    tes__free(a, q->table_ok, q->table_ok_cap);
    tes__free(a, q, sizeof *q);
}

static void settle_group(void *ctx);

/* World teardown with the query still alive: the graph and the watcher list
 * are going away too, so only the query's own memory needs releasing. */
static void query_fini(void *ctx) { query_release(ctx); }

/* True while a system's run may be executing (inside tes_progress, but not
 * in the flush that applies a structural system's changes, which runs on
 * the calling thread alone): creating or freeing a query there would
 * change the world's query lists while other systems walk them, on some
 * thread counts and not others, so both are refused on every one. */
static bool in_system_run(const tes_world_t *w)
{
    return (tes__refuse(w) & TES__REFUSE_FRAME) && !w->defer.flushing;
}

/* Appends "{A, B}" for query q to buf (at len; the text is cut at cap). */
static size_t append_terms(const tes_query_t *q, char *buf, size_t cap, size_t len)
{
    for (int32_t i = 0; i < q->term_count && len < cap; i++) {
        const tes__term_info_t *t = &q->terms[i];
        int n = snprintf(buf + len, cap - len, "%s%s%s%.48s%s", i ? ", " : "{",
                         t->oper == TES_NOT ? "NOT " : t->oper == TES_OPTIONAL ? "OPTIONAL " : "",
                         t->parent ? "PARENT " : "",
                         t->info->name, i + 1 == q->term_count ? "}" : "");
        len += n > 0 ? (size_t)n : 0;
    }
    return len < cap ? len : cap;
}

/* The world's describe_iters (explain.c): the terms of every live query
 * with an iterator that holds a deferral level (recorded in the world's
 * iter_levels, see tes__world_level_mark), in creation order; returns
 * how many there are. Queries are the world's dependents whose fini is
 * query_fini. */
static size_t describe_open_iters(const tes_world_t *w, char *buf, size_t cap)
{
    size_t found = 0, len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        if (w->dependents[i].fini != query_fini)
            continue;
        const tes_query_t *q = w->dependents[i].ctx;
        uint32_t open = 0;
        for (uint32_t k = 0; k < TES__ITER_LEVELS; k++)
            open += atomic_load_explicit(&w->iter_levels[k], memory_order_relaxed) == (uintptr_t)q;
        if (!open)
            continue;
        if (found++ && len < cap) {
            int n = snprintf(buf + len, cap - len, ", ");
            len += n > 0 ? (size_t)n : 0;
        }
        len = append_terms(q, buf, cap, len < cap ? len : cap);
        if (open > 1 && len < cap) {
            int n = snprintf(buf + len, cap - len, " (%u iterators)", (unsigned)open);
            len += n > 0 ? (size_t)n : 0;
        }
    }
    return found;
}

/* The world's check_queries (tes__world_check): each live query's kept
 * by-depth order, when it holds, against the world. */
static int check_queries(const tes_world_t *w)
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        if (w->dependents[i].fini != query_fini)
            continue;
        const tes_query_t *q = w->dependents[i].ctx;
        const struct cascade *c = atomic_load_explicit(&q->cascade_spare, memory_order_acquire);
        int rc = q->cascade_walk ? tes__cascade_check_kept(w, q, c) : TES_OK;
        if (rc)
            return rc;
    }
    return TES_OK;
}

tes_query_t *tes_query_new(tes_world_t *w, const tes_query_desc_t *desc)
{
    if (!w)
        return NULL;
    if (!desc) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_query_new: desc is NULL");
        return NULL;
    }
    if (in_system_run(w)) {
        tes__fail_detail(w, TES_ERR_BUSY, "tes_query_new: called from a system's run (inside "
                                          "tes_progress); create queries before tes_progress");
        return NULL;
    }
    tes__alloc_t *a = &w->alloc;
    tes_query_t *q = tes__calloc(a, sizeof *q);
    if (!q) {
        tes__fail(w, TES_ERR_NOMEM);
        return NULL;
    }
    q->w = w;
    w->describe_iters = describe_open_iters;
    w->check_queries = check_queries;
    int rc = setup_terms(q, desc);
    /* An owning group reorders its stores when it is built: never under a
     * live iterator, inside a deferred block or inside a hook (the call that
     * runs the hook may hold addresses in those stores). */
    if (!rc && (q->flags & TES_QUERY_OWNING_GROUP) && tes__in_hook(w))
        rc = tes__fail_detail(w, TES_ERR_BUSY, "tes_query_new refused: an owning group cannot be built inside a hook");
    else if (!rc && (q->flags & TES_QUERY_OWNING_GROUP) && tes__deferred(w))
        rc = tes__fail_deferred(w, TES_ERR_BUSY, "tes_query_new (an owning group)");
    /* A non-owning group asked for inside a hook would be filled from a
     * world in the middle of a change, and would hear the rest of that
     * change without the room its watchers reserved: it is built later,
     * outside hooks. */
    bool pending = !rc && (q->flags & TES_QUERY_NONOWNING_GROUP) && tes__in_hook(w);
    /* The filter bytes and the table cache, from the existing tables. */
    tes__table_graph_t *g = &w->tables;
    if (!rc)
        rc = tes__query_cache_fill(q);
    /* A sparse-only query applies its default filters through the world's
     * filter index (filter.h), never through entities' tables (a group
     * needs neither: its members are known to pass). */
    if (!rc && q->mode == TES__QUERY_DRIVEN && q->sparse_only && q->filter_mask &&
        !(q->flags & TES_QUERY_OWNING_GROUP) && (w->filters || !tes__in_hook(w)))
        rc = tes__filters_use(w, &q->filters);
    /* Inside a hook a new filter index would hear the rest of the change in
     * progress without having reserved for it, so it is not created there:
     * a query made in a hook before any index exists checks entities'
     * tables instead (same results, slower). */
    q->skip_tables = q->sparse_only && (q->filters || !q->filter_mask);
    if (!rc && (rc = tes__graph_listen(g, a, tes__query_on_table, q)) == TES_OK) {
        if ((rc = tes__world_depend(w, query_fini, q)) != TES_OK)
            tes__graph_unlisten(g, q);
    }
    /* A non-owning group on a query with a table AND term would only repeat
     * what the table cache already is (the list of places that match, kept
     * up to date), so the flag builds nothing there: the query walks its
     * tables. */
    bool group = (q->flags & TES_QUERY_OWNING_GROUP) ||
                 ((q->flags & TES_QUERY_NONOWNING_GROUP) && q->mode == TES__QUERY_DRIVEN);
    if (!rc && pending && group) {
        q->group_pending = true;
        tes__world_settle_later(w, q, settle_group);
    } else if (!rc && group) {
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
        if (rc != TES_ERR_BUSY) /* a refusal recorded its detail above */
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

/* The build of a non-owning group asked for inside a hook, when the
 * structural call that ran the hook ends (tes__world_settle_later): then,
 * unlike in tes_query_iter, the world has a single user. A build that
 * fails for lack of memory leaves the query working without its group and
 * retries when the next structural call ends. */
static void settle_group(void *ctx)
{
    tes_query_t *q = ctx;
    if (!q->group_pending)
        return;
    if (tes__group_new(q) == TES_OK) /* non-owning: runs no hook */
        q->group_pending = false;
    else
        tes__world_settle_later(q->w, q, settle_group);
}

void tes_query_free(tes_query_t *q)
{
    if (!q)
        return;
    if (in_system_run(q->w)) {
        tes__fail_detail(q->w, TES_ERR_BUSY, "tes_query_free: called from a system's run (inside "
                                             "tes_progress); free queries after tes_progress");
        return;
    }
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
