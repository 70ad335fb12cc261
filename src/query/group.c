/*
 * Group maintenance and iteration. Membership is decided by the query's
 * own per-entity test, so a group can never disagree with the query it
 * belongs to. An owning group moves entities in and out of the prefix with
 * swaps in every owned store (three moves through a scratch value), which
 * keeps add/remove O(terms).
 */
#include "query/group.h"
#include "world/last_error.h"

#include <string.h>

static bool is_member(const tes__group_t *g, tes_entity_t e)
{
    if (!g->owning)
        return tes__sparse_set_contains(&g->members, e);
    uint32_t pos = tes__sparse_set_find(&g->owned[0]->store.set, e);
    return pos != TES_NULL_INDEX && pos < g->length;
}

/* Owning: swaps e into position `to` of every owned store. */
static void place(tes__group_t *g, tes_entity_t e, uint32_t to)
{
    for (int32_t k = 0; k < g->owned_count; k++) {
        tes__component_t *c = g->owned[k];
        uint32_t pos = tes__sparse_set_find(&c->store.set, e);
        tes__sparse_store_swap(&c->store, pos, to, &c->hooks, g->scratch);
    }
}

static void join(tes__group_t *g, tes_entity_t e)
{
    if (g->owning) {
        place(g, e, g->length);
        g->length++;
    } else {
        tes__sparse_set_insert(&g->members, e, false);
    }
}

static void leave(tes__group_t *g, tes_entity_t e)
{
    if (g->owning) {
        g->length--;
        place(g, e, g->length);
    } else {
        tes__sparse_set_swap_remove(&g->members, e, tes__sparse_set_find(&g->members, e));
    }
}

static int watch_reserve(void *ctx, uint32_t index, uint32_t extra)
{
    tes__group_t *g = ctx;
    if (g->owning)
        return TES_OK;
    tes__alloc_t *a = &g->q->w->alloc;
    if (tes__sparse_set_reserve_index(&g->members, a, index))
        return TES_ERR_NOMEM;
    return tes__sparse_set_reserve_packed(&g->members, a, extra);
}

static void watch_before(void *ctx, tes_entity_t e, tes_comp_t c)
{
    tes__group_t *g = ctx;
    (void)c; /* routing delivers only the changes that concern the group */
    if (is_member(g, e))
        leave(g, e);
}

/* Whether live-or-dead entity e matches q now: the matcher, asked about
 * one entity whose table it reads. */
static bool matches(const tes_query_t *q, tes_entity_t e)
{
    tes__match_t m = {.how = TES__MATCH_TABLE, .hide = 0, .driver = -1};
    return tes__query_match(q, &m, &e, 1) != 0;
}

static void watch_after(void *ctx, tes_entity_t e, tes_comp_t c)
{
    tes__group_t *g = ctx;
    (void)c;
    if (!is_member(g, e) && matches(g->q, e))
        join(g, e);
}

/* Validates an owning group's terms and claims its stores. */
static int claim_stores(tes__group_t *g)
{
    const tes_query_t *q = g->q;
    size_t scratch = 0;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (t->oper == TES_OPTIONAL)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "owning group: terms[%d] ('%.64s') is TES_OPTIONAL, which an owning group cannot order", (int)i, t->info->name);
        if (t->oper != TES_AND)
            continue;
        if (!t->sparse || t->info->stable || t->info->owner)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "owning group: terms[%d] component '%.64s' is %s", (int)i, t->info->name, !t->sparse ? "a table component (an owning group needs sparse components)" : t->info->stable ? "stable (its values may not move)" : "already owned by another group");
        g->owned[g->owned_count++] = t->info;
        if (t->info->size > scratch)
            scratch = t->info->size;
    }
    if (scratch && !(g->scratch = tes__malloc(&q->w->alloc, scratch)))
        return TES_ERR_NOMEM;
    g->scratch_size = scratch;
    return TES_OK;
}

/* Every entity the query matches now, into a temporary array: the smallest
 * AND pool's entities that match (groups are DRIVEN-mode queries). */
static int collect(const tes_query_t *q, tes_entity_t **out, uint32_t *count, uint32_t *cap)
{
    tes__alloc_t *a = &q->w->alloc;
    *out = NULL;
    *count = *cap = 0;
    const tes__sparse_set_t *pool = &q->terms[tes__query_driver(q)].info->store.set;
    for (uint32_t p = tes__sparse_set_next_live(pool, 0); p < pool->count;
         p = tes__sparse_set_next_live(pool, p + 1)) {
        if (!matches(q, pool->packed[p]))
            continue;
        if (tes__grow(a, (void **)out, cap, (uint64_t)*count + 1, sizeof **out, 64))
            return TES_ERR_NOMEM;
        (*out)[(*count)++] = pool->packed[p];
    }
    return TES_OK;
}

static void group_release(tes__group_t *g, tes__alloc_t *a)
{
    tes__sparse_set_fini(&g->members, a);
    tes__free(a, g->scratch, g->scratch_size);
    tes__free(a, g, sizeof *g);
}

int tes__group_new(tes_query_t *q)
{
    tes__alloc_t *a = &q->w->alloc;
    tes__group_t *g = tes__calloc(a, sizeof *g);
    if (!g)
        return TES_ERR_NOMEM;
    g->q = q;
    g->w = q->w;
    g->owning = (q->flags & TES_QUERY_OWNING_GROUP) != 0;
    tes__sparse_set_init(&g->members);
    int rc = g->owning ? claim_stores(g) : TES_OK;
    tes_entity_t *found = NULL;
    uint32_t count = 0, cap = 0;
    if (!rc)
        rc = collect(q, &found, &count, &cap);
    /* Non-owning: room for every member, then the members, before the
     * watcher is registered. Registering reserves room beyond them for the
     * entities of a structural call in progress (a group built by an
     * observer), which may still join. Nothing is shared yet, so a failure
     * only releases the group. */
    for (uint32_t i = 0; !rc && !g->owning && i < count; i++)
        rc = watch_reserve(g, tes_entity_index(found[i]), i ? 0 : count);
    for (uint32_t i = 0; !rc && !g->owning && i < count; i++)
        join(g, found[i]);
    /* Subscribed to its terms and the two default-filtered tags. */
    tes__watcher_t watcher = {.reserve = watch_reserve, .before = watch_before,
                              .after = watch_after, .ctx = g,
                              .creations_by_comps = true /* a group has an AND term */};
    tes_comp_t comps[TES__WATCH_MAX_COMPS] = {TES_DISABLED, TES_PREFAB};
    uint32_t ncomps = 2;
    for (int32_t i = 0; i < q->term_count; i++)
        comps[ncomps++] = q->terms[i].comp;
    if (!rc)
        rc = tes__world_watch(q->w, &watcher, comps, ncomps);
    if (rc) {
        tes__free(a, found, (size_t)cap * sizeof *found);
        group_release(g, a);
        return rc;
    }
    /* Owning: the stores are claimed before any value moves (the moves run
     * move hooks), then the matches are swapped to the front. */
    for (int32_t k = 0; k < g->owned_count; k++)
        g->owned[k]->owner = g;
    for (uint32_t i = 0; g->owning && i < count; i++)
        join(g, found[i]);
    tes__free(a, found, (size_t)cap * sizeof *found);
    q->group = g;
    return TES_OK;
}

/* The group's memory, once no notification is using it. */
static void group_release_late(void *ctx)
{
    tes__group_t *g = ctx;
    group_release(g, &g->w->alloc);
}

void tes__group_free(tes_query_t *q)
{
    tes__group_t *g = q->group;
    if (!g)
        return;
    for (int32_t k = 0; k < g->owned_count; k++)
        g->owned[k]->owner = NULL;
    q->group = NULL;
    /* Freed now, or (when a hook that this group's own swap ran frees the
     * query) when the notification is over: the swap still uses g. */
    tes__world_unwatch(q->w, g, group_release_late);
}

/* Owning walk: slices of the prefix, cut at the stores' page boundaries. */
static bool next_owned_chunk(tes_iter_t *it, const tes__group_t *g)
{
    const tes_query_t *q = g->q;
    uint32_t pos = it->priv_cursor;
    if (pos >= g->length)
        return false;
    uint64_t end = g->length;
    for (int32_t k = 0; k < g->owned_count; k++) {
        const tes__sparse_store_t *st = &g->owned[k]->store;
        if (!st->size)
            continue;
        /* 64-bit: the last page of the position space ends at 2^32. */
        uint64_t page_end = ((uint64_t)(pos >> st->page_shift) + 1) << st->page_shift;
        if (page_end < end)
            end = page_end;
    }
    end = tes__chunk_end(pos, end);
    void *ptrs[TES_MAX_TERMS] = {0};
    for (int32_t i = 0; i < q->term_count; i++)
        if (q->terms[i].oper == TES_AND && q->terms[i].data)
            ptrs[i] = tes__sparse_store_at(&q->terms[i].info->store, pos);
    memcpy(it->priv_fields, ptrs, sizeof ptrs);
    it->count = (int32_t)(end - pos);
    it->entities = g->owned[0]->store.set.packed + pos;
    it->priv_cursor = (uint32_t)end;
    return true;
}

int32_t tes__group_pool(const tes__group_t *g)
{
    if (g->owning)
        return -1;
    const tes_query_t *q = g->q;
    int32_t best = -1;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        const tes__sparse_set_t *pool = &t->info->store.set;
        if (t->oper != TES_AND || pool->live != g->members.count)
            continue;
        /* Of several such pools: one with values (its field is then a
         * slice), and without tombstones (no gaps to step over). */
        if (best < 0 || (t->data && !q->terms[best].data) ||
            (t->data == q->terms[best].data && pool->count < q->terms[best].info->store.set.count))
            best = i;
    }
    return best;
}

bool tes__group_next_owned(tes_iter_t *it) { return next_owned_chunk(it, it->priv_query->group); }
