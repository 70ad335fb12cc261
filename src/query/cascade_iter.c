/*
 * The by-depth walk: queries with TES_QUERY_CASCADE or a TES_SRC_PARENT
 * term. Tuned for transform propagation over scene forests (a million
 * entities, trees a few levels deep): one pass, every parent's chunk
 * before its children's.
 *
 * An iteration's first step collects the matches with the query's own walk
 * (a base walk, base_walk.c, so the self terms are decided by the one
 * matcher, change filters included), learns each match's parent and depth from the
 * hierarchy through the world's registered callbacks (this layer never
 * names the hierarchy), drops those its parent terms refuse (AND: the
 * parent has the component; NOT: it does not, roots included) and sorts
 * them by depth, stably, so the order within a depth is the walk's (rows
 * of a table stay together). Each chunk is then a run of one depth that
 * the matcher keeps contiguous (tes__query_match with TES__MATCH_KNOWN: the
 * entities are known to match, only their fields are located), cut where
 * an OPTIONAL parent term's presence changes. The parent terms' values are
 * copied into the walk's scratch when the chunk is made, after the chunks
 * before it were handed out: with depth order, a parent's value is what
 * its own chunk left. That is the general walk.
 *
 * Two walks take its place where they can, chosen once when an iteration
 * starts (cascade_build): when every table the query matches is still in
 * the depth order tes_sort_by_depth left, the sorted walk of
 * cascade_sorted.c (no collection: each depth's rows are contiguous in
 * their tables); otherwise, for a query whose self values are plain, the
 * pointer walk of cascade_keep.c (each match's value addresses found
 * once, and the whole order kept between iterations while nothing it
 * depends on changes), so that a forest nobody sorted still propagates
 * without a collection per frame. Everything else takes the general walk.
 *
 * The state lives on the world's allocator and goes back to its query when
 * the iteration ends (its last step or tes_iter_fini), for the next one.
 * Structural changes wait while the iteration lives, so the collected
 * entities stay alive and in place; values written meanwhile (tes_set, the
 * loop itself) are read when the chunks that need them are made.
 */
#include <stdatomic.h>
#include <string.h>

#include "query/base_walk.h"
#include "query/cascade.h"
#include "world/last_error.h"

/* The most entities of a chunk; fewer when the parent values of a chunk
 * would take more than SCRATCH_BYTES. */
#define CHUNK_MAX 1024u
#define SCRATCH_BYTES (64u * 1024u)

static void cascade_write_back(cascade_t *c, const tes_query_t *q);

int tes__cascade_setup(tes_query_t *q, const tes_query_desc_t *d)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (!t->parent)
            continue;
        if (t->access != TES_IN)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: a TES_SRC_PARENT term ('%.64s') reads the parents' values from a copy: its access must be TES_IN", (int)i, t->info->name);
        if (d->terms[i].change != TES_CHANGE_NONE)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: a change filter on a TES_SRC_PARENT term ('%.64s'); change filters go on the entity's own terms", (int)i, t->info->name);
        q->parent_terms[q->parent_count++] = (uint8_t)i;
    }
    q->cascade_walk = (q->flags & TES_QUERY_CASCADE) || q->parent_count;
    if (q->cascade_walk && (q->flags & (TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP)))
        return tes__fail_detail(q->w, TES_ERR_INVALID, "query flags 0x%x: a group keeps its own order, which cannot be the by-depth order of TES_QUERY_CASCADE or a TES_SRC_PARENT term; drop the group flag", (unsigned)q->flags);
    return TES_OK;
}

/* Where live entity e's component of term i lies, or NULL (absent, or a
 * tag); *has says whether e has it. */
static void *cascade_value(cascade_t *c, const tes_query_t *q, int32_t i, tes_entity_t e, bool *has)
{
    const tes__slot_t *slot = tes__entity_slot(&q->w->entities, e);
    *has = false;
    return slot ? tes__cascade_value_at(c, q, i, slot, tes_entity_index(e), has) : NULL;
}

static bool parent_has(cascade_t *c, const tes_query_t *q, int32_t i, tes_entity_t p)
{
    bool has = false;
    if (p != TES_NULL)
        (void)cascade_value(c, q, i, p, &has);
    return has;
}

/* Whether an entity with parent p passes the AND and NOT parent terms. */
static bool parents_pass(cascade_t *c, const tes_query_t *q, tes_entity_t p)
{
    for (int32_t k = 0; k < q->parent_count; k++) {
        int32_t i = q->parent_terms[k];
        if (q->terms[i].oper != TES_OPTIONAL && parent_has(c, q, i, p) != (q->terms[i].oper == TES_AND))
            return false;
    }
    return true;
}

static void cascade_release(tes_world_t *w, cascade_t *c)
{
    tes__alloc_t *a = &w->alloc;
    tes__free(a, c->ents, (size_t)c->ents_cap * sizeof *c->ents);
    tes__free(a, c->parents, (size_t)c->parents_cap * sizeof *c->parents);
    tes__free(a, c->depths, (size_t)c->depths_cap * sizeof *c->depths);
    tes__free(a, c->ents2, (size_t)c->ents2_cap * sizeof *c->ents2);
    tes__free(a, c->parents2, (size_t)c->parents2_cap * sizeof *c->parents2);
    tes__free(a, c->scratch, c->scratch_bytes);
    tes__free(a, c->ptrs, (size_t)c->ptrs_cap * sizeof *c->ptrs);
    tes__free(a, c->ptrs2, (size_t)c->ptrs2_cap * sizeof *c->ptrs2);
    tes__free(a, c->memo, (size_t)c->memo_cap * sizeof *c->memo);
    tes__free(a, c->tabs, (size_t)c->tabs_cap * sizeof *c->tabs);
    tes__free(a, c->saved, (size_t)c->saved_cap * sizeof *c->saved);
    tes__free(a, (void *)c->rows, (size_t)c->rows_cap * sizeof *c->rows);
    tes__free(a, c, sizeof *c);
}

/* An ended iteration's state goes back to its query, whose next
 * iteration reuses its arrays (a million-entity list allocated and faulted
 * in every frame would cost more than the walk); a state already kept
 * there is released instead. */
void tes__cascade_free(tes_iter_t *it)
{
    cascade_t *c = it->priv_cascade;
    if (!c)
        return;
    cascade_write_back(c, it->priv_query);
    it->priv_cascade = NULL;
    c->cursor = 0;
    cascade_t *old = atomic_exchange_explicit(&it->priv_query->cascade_spare, c, memory_order_acq_rel);
    if (old)
        cascade_release(it->world, old);
}

void tes__cascade_release_spare(tes_query_t *q)
{
    cascade_t *c = atomic_exchange_explicit(&q->cascade_spare, NULL, memory_order_acq_rel);
    if (c)
        cascade_release(q->w, c);
}

/* Appends the matches of one chunk of the base walk that the parent terms
 * pass. TES_OK or TES_ERR_NOMEM. */
static int collect_matches(tes_world_t *w, const tes_query_t *q, cascade_t *c, const tes_entity_t *es,
                   uint32_t n)
{
    tes__alloc_t *a = &w->alloc;
    uint64_t need = (uint64_t)c->count + n;
    /* Each array keeps its own capacity, so a failure midway leaves
     * nothing to undo (the state is released whole). */
    if (tes__grow(a, (void **)&c->ents, &c->ents_cap, need, sizeof *c->ents, 256) ||
        tes__grow(a, (void **)&c->parents, &c->parents_cap, need, sizeof *c->parents, 256) ||
        tes__grow(a, (void **)&c->depths, &c->depths_cap, need, sizeof *c->depths, 256))
        return TES_ERR_NOMEM;
    const tes__hier_ops_t *ops = w->hier ? w->hier_ops : NULL;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = es[i], p = TES_NULL;
        int32_t depth = 0;
        if (ops) {
            uint32_t pi = 0;
            depth = ops->lineage(w, tes_entity_index(e), &pi);
            if (pi)
                p = tes_entity_make(pi - 1, w->entities.slots[pi - 1].generation);
        }
        if (q->parent_count && !parents_pass(c, q, p))
            continue;
        c->ents[c->count] = e;
        c->parents[c->count] = p;
        c->depths[c->count] = depth;
        c->count++;
    }
    return TES_OK;
}

/* Sorts the matches by depth, stably (a counting sort). TES_OK or
 * TES_ERR_NOMEM. */
static int sort_by_depth(tes_world_t *w, cascade_t *c)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t *start;
    int32_t most;
    if (tes__cascade_depth_starts(a, c, &start, &most))
        return TES_ERR_NOMEM;
    if (!start)
        return TES_OK;
    if (tes__grow(a, (void **)&c->ents2, &c->ents2_cap, c->count, sizeof *c->ents2, 256) ||
        tes__grow(a, (void **)&c->parents2, &c->parents2_cap, c->count, sizeof *c->parents2, 256)) {
        tes__free(a, start, ((size_t)most + 2) * sizeof(uint32_t));
        return TES_ERR_NOMEM;
    }
    tes_entity_t *ents = c->ents2, *parents = c->parents2;
    for (uint32_t i = 0; i < c->count; i++) {
        uint32_t at = start[c->depths[i]]++;
        ents[at] = c->ents[i];
        parents[at] = c->parents[i];
    }
    /* Swap the sorted parents in (with their capacity); depth_finish
     * swaps the entities. */
    c->parents2 = c->parents;
    c->parents = parents;
    uint32_t cap = c->parents_cap;
    c->parents_cap = c->parents2_cap;
    c->parents2_cap = cap;
    tes__cascade_depth_finish(a, c, start, most);
    return TES_OK;
}

/* The walk's state, made by its first step. NULL with TES_ERR_NOMEM (not
 * recorded). */
static cascade_t *collect_all(tes_iter_t *it, cascade_t *c);

static cascade_t *cascade_build(tes_iter_t *it)
{
    tes_query_t *q = it->priv_query;
    tes_world_t *w = q->w;
    tes__alloc_t *a = &w->alloc;
    cascade_t *c = atomic_exchange_explicit(&q->cascade_spare, NULL, memory_order_acq_rel);
    if (c) { /* the last iteration's arrays, and its scratch (same layout) */
        c->gathered = 0;
        for (int32_t i = 0; i < TES_MAX_TERMS; i++)
            c->last_table[i] = NULL;
        return collect_all(it, c);
    }
    c = tes__calloc(a, sizeof *c);
    if (!c)
        return NULL;
    for (int32_t i = 0; i < TES_MAX_TERMS; i++)
        c->last_column[i] = -1;
    /* Self values are gathered only when every self data term is an AND
     * term copied bitwise (no copy or move hook, not stable) and no chunk
     * is stamped as written (stamps are per row of a table). */
    c->self_gather = q->stamp_count == 0;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (!t->parent && t->data &&
            (t->oper != TES_AND || t->info->hooks.copy || t->info->hooks.move || t->info->stable))
            c->self_gather = false;
    }
    /* Such a query takes the pointer walk (unless the sorted walk
     * applies): each match's values located once, when it is collected. */
    c->fast = c->self_gather;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        c->self_slot[i] = -1;
        if (!t->parent && t->data) {
            c->self_slot[i] = (int32_t)c->nself;
            c->self_terms[c->nself++] = i;
        } else if (t->parent && t->oper != TES_NOT) {
            c->par_terms[c->npar++] = i;
        }
    }
    c->stride = c->nself + c->npar;
    /* The pointer walk's order is kept across iterations when every match
     * and parent value is in a table and the matches do not depend on the
     * iteration (no change filter). */
    c->keepable = c->fast && !q->change_count && !q->has_sparse && q->mode == TES__QUERY_TABLE;
    for (int32_t k = 0; k < q->parent_count; k++)
        if (q->terms[q->parent_terms[k]].info->storage == TES_STORAGE_SPARSE)
            c->keepable = false;
    /* The sorted walk reads every value in its table's columns and takes
     * each depth's rows in order: for queries of table terms only, without
     * change filters (whose runs of rows are the change walk's). */
    c->sorted_ok = q->mode == TES__QUERY_TABLE && !q->has_sparse && !q->change_count;
    for (int32_t k = 0; k < q->parent_count; k++)
        if (q->terms[q->parent_terms[k]].info->storage == TES_STORAGE_SPARSE)
            c->sorted_ok = false;
    /* The scratch: per parent data term its values, and per self data term
     * (when gathering) its values, originals and sources; each array
     * aligned for any type. */
    size_t per_entity = 0;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (t->parent && t->oper != TES_NOT)
            per_entity += t->info->size;
        else if (!t->parent && t->data && c->self_gather)
            per_entity += 2u * (size_t)t->info->size + sizeof(void *);
    }
    c->chunk_max = CHUNK_MAX;
    if (per_entity && per_entity * CHUNK_MAX > SCRATCH_BYTES)
        c->chunk_max = per_entity >= SCRATCH_BYTES ? 1u : (uint32_t)(SCRATCH_BYTES / per_entity);
    size_t at = 0;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        size_t bytes = ((size_t)t->info->size * c->chunk_max + 15u) & ~(size_t)15u;
        if (t->parent && t->oper != TES_NOT && t->info->size) {
            c->offsets[i] = at;
            at += bytes;
        } else if (!t->parent && t->data && c->self_gather) {
            c->offsets[i] = at;
            c->originals[i] = at + bytes;
            c->sources[i] = at + 2 * bytes;
            at += 2 * bytes + ((sizeof(void *) * c->chunk_max + 15u) & ~(size_t)15u);
        }
    }
    c->scratch_bytes = at;
    if (at && !(c->scratch = tes__malloc(a, at))) {
        tes__free(a, c, sizeof *c);
        return NULL;
    }
    return collect_all(it, c);
}

/* Chooses the iteration's walk and fills c for it: the sorted walk when
 * it applies; else the pointer walk's kept order when it still holds, or
 * its matches collected again; else the general walk's matches, by depth.
 * c, or NULL (released) when memory ran out. */
static cascade_t *collect_all(tes_iter_t *it, cascade_t *c)
{
    tes_query_t *q = it->priv_query;
    tes_world_t *w = q->w;
    int rc = TES_OK;
    if (c->sorted_ok && tes__cascade_sorted_begin(w, q, c, &rc)) {
        /* The sort moved rows: a kept order is not trusted past it. */
        c->walk = TES__CASCADE_SORTED;
        c->count = 0;
        c->kept = false;
        return c;
    }
    if (rc) {
        cascade_release(w, c);
        return NULL;
    }
    c->walk = c->fast ? TES__CASCADE_POINTER : TES__CASCADE_GENERAL;
    if (c->fast && tes__cascade_order_holds(w, q, c))
        return c;
    /* The matches of the base walk, with the iteration's change window. */
    tes_iter_t base = tes__query_base_start(q);
    tes__iter_keep_fields(&base); /* only the entities are read */
    base.priv_change_since = it->priv_change_since;
    base.priv_change_live = it->priv_change_live & TES__CHANGE_ALL;
    c->count = 0;
    c->kept = false;
    c->ntabs = 0;
    c->last_parent_table = NULL;
    rc = c->fast && w->hier ? tes__cascade_memo_begin(w, c) : TES_OK;
    while (rc == TES_OK && tes__query_base_next(&base))
        rc = c->fast ? tes__cascade_collect_fast(w, q, c, &base)
                     : collect_matches(w, q, c, base.entities, (uint32_t)base.count);
    if (rc == TES_OK)
        rc = c->fast ? tes__cascade_sort_fast(w, c) : sort_by_depth(w, c);
    if (rc == TES_OK && c->keepable)
        rc = tes__cascade_remember(w, q, c);
    if (rc) {
        cascade_release(w, c);
        return NULL;
    }
    return c;
}

/* Writes the last gathered chunk's values back: each value the loop
 * changed, unless the stored value changed meanwhile (then kept), for the
 * terms that are not TES_IN. */
static void cascade_write_back(cascade_t *c, const tes_query_t *q)
{
    for (int32_t i = 0; c->gathered && i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (t->parent || !t->data || t->access == TES_IN)
            continue;
        size_t size = t->info->size;
        const unsigned char *val = c->scratch + c->offsets[i];
        const unsigned char *orig = c->scratch + c->originals[i];
        if (c->walk == TES__CASCADE_POINTER) { /* the sources are the matches' addresses */
            void *const *src = c->ptrs + (size_t)c->gathered_at * c->stride + c->self_slot[i];
            for (uint32_t j = 0; j < c->gathered; j++, val += size, orig += size, src += c->stride)
                if (!tes__cascade_same(val, orig, size) && tes__cascade_same(*src, orig, size))
                    tes__cascade_copy(*src, val, size);
            continue;
        }
        void *const *src = (void *const *)(void *)(c->scratch + c->sources[i]);
        for (uint32_t j = 0; j < c->gathered; j++, val += size, orig += size)
            if (!tes__cascade_same(val, orig, size) && tes__cascade_same(src[j], orig, size))
                tes__cascade_copy(src[j], val, size);
    }
    c->gathered = 0;
}

/* A gathered chunk of n entities from position p: each self data term's
 * values copied to the scratch (with their originals and addresses for
 * cascade_write_back). Rows of one depth are rarely neighbours in their table
 * (a forest spawned in any order interleaves depths), so without this a
 * chunk would often hold a single entity. */
static void cascade_gather(cascade_t *c, const tes_query_t *q, tes_iter_t *it, uint32_t p,
                         uint32_t n)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        if (t->parent || !t->data)
            continue;
        size_t size = t->info->size;
        unsigned char *val = c->scratch + c->offsets[i];
        unsigned char *orig = c->scratch + c->originals[i];
        void **src = (void **)(void *)(c->scratch + c->sources[i]);
        for (uint32_t j = 0; j < n; j++) {
            bool has;
            void *v = cascade_value(c, q, i, c->ents[p + j], &has);
            tes__assert(v != NULL); /* an AND data term of a match */
            tes__cascade_copy(val + j * size, v, size);
            src[j] = v;
        }
        memcpy(orig, val, n * size);
        it->priv_fields[i] = val;
    }
    c->gathered = n;
}

bool tes__cascade_next(tes_iter_t *it)
{
    tes_query_t *q = it->priv_query;
    cascade_t *c = it->priv_cascade;
    if (!c) {
        if (it->priv_cursor) /* finished */
            return false;
        it->priv_cursor = 1;
        c = cascade_build(it);
        if (!c) {
            tes__fail_detail(q->w, TES_ERR_NOMEM, "a by-depth query iteration could not allocate its list of matches");
            return false;
        }
        it->priv_cascade = c;
    }
    cascade_write_back(c, q); /* before any parent value of the next chunk is read */
    if (c->walk == TES__CASCADE_SORTED) {
        if (tes__cascade_sorted_next(c, q, it))
            return true;
        tes__cascade_free(it);
        return false;
    }
    if (c->walk == TES__CASCADE_POINTER && c->cursor < c->count) {
        uint32_t p = c->cursor, k = tes__cascade_next_fast(c, q, it, p);
        it->count = (int32_t)k;
        it->entities = c->ents + p;
        it->depth = (q->flags & TES_QUERY_CASCADE) ? c->depths[p] : 0;
        c->cursor = p + k;
        return true;
    }
    while (c->walk == TES__CASCADE_GENERAL && c->cursor < c->count) {
        uint32_t p = c->cursor, end = p;
        int32_t depth = c->depths[p];
        uint32_t most = c->count - p < c->chunk_max ? c->count - p : c->chunk_max;
        while (end - p < most && c->depths[end] == depth)
            end++;
        tes__match_t m = {.how = TES__MATCH_KNOWN | TES__MATCH_TABLE, .hide = 0, .driver = -1};
        uint32_t k = tes__query_match(q, &m, c->ents + p, end - p);
        if (!k) { /* cannot happen while structural changes wait; skip it */
            c->cursor++;
            continue;
        }
        bool gather = c->self_gather && k < end - p && k < 8u;
        if (gather)
            k = end - p;
        tes__query_fields(q, m.pos, m.slot, it->priv_fields); /* self terms (gathered below) */
        /* The parent terms' values, copied as they are now. An OPTIONAL
         * one ends the chunk where its presence changes: every parent of
         * the chunk has it, or none. */
        for (int32_t t = 0; t < q->parent_count; t++) {
            int32_t i = q->parent_terms[t];
            const tes__term_info_t *ti = &q->terms[i];
            size_t size = ti->info->size;
            it->priv_fields[i] = NULL;
            if (ti->oper == TES_NOT)
                continue;
            unsigned char *out = c->scratch + c->offsets[i];
            bool first = parent_has(c, q, i, c->parents[p]);
            for (uint32_t j = 0; j < k; j++) {
                bool has = false;
                const void *v = c->parents[p + j] != TES_NULL ? cascade_value(c, q, i, c->parents[p + j], &has) : NULL;
                if (has != first) { /* only an OPTIONAL term changes */
                    k = j;
                    break;
                }
                if (v)
                    tes__cascade_copy(out + j * size, v, size);
            }
            if (first && size)
                it->priv_fields[i] = out;
        }
        if (gather)
            cascade_gather(c, q, it, p, k);
        it->count = (int32_t)k;
        it->entities = c->ents + p;
        it->depth = (q->flags & TES_QUERY_CASCADE) ? depth : 0;
        c->cursor = p + k;
        return true;
    }
    tes__cascade_free(it);
    return false;
}
