/*
 * The by-depth walk: queries with TES_QUERY_CASCADE or a TES_SRC_PARENT
 * term. Tuned for transform propagation over scene forests (a million
 * entities, trees a few levels deep): one pass, every parent's chunk
 * before its children's.
 *
 * An iteration's first step collects the matches with the query's own walk
 * (iter.c, so the self terms are decided by the one matcher, change
 * filters included), learns each match's parent and depth from the
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
 * its own chunk left.
 *
 * The state lives on the world's allocator for the iteration and is freed
 * when it ends (its last step or tes_iter_fini). Structural changes wait
 * while the iteration lives, so the collected entities stay alive and in
 * place; values written meanwhile (tes_set, the loop itself) are read when
 * the chunks that need them are made.
 */
#include <string.h>

#include "query/changes_iter.h"
#include "query/query.h"

/* The most entities of a chunk; fewer when the parent values of a chunk
 * would take more than SCRATCH_BYTES. */
#define CHUNK_MAX 1024u
#define SCRATCH_BYTES (64u * 1024u)

typedef struct cascade {
    tes_entity_t *ents;    /* the matches, by depth */
    tes_entity_t *parents; /* their parents (TES_NULL for roots) */
    int32_t *depths;
    uint32_t count;
    uint32_t ents_cap, parents_cap, depths_cap;
    uint32_t cursor;
    uint32_t chunk_max;
    size_t offsets[TES_MAX_TERMS]; /* each parent data term's array in scratch */
    unsigned char *scratch;
    size_t scratch_bytes;
} cascade_t;

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

/* Where live entity e's component of term t lies, or NULL (absent, or a
 * tag); *has says whether e has it. */
static const void *parent_value(const tes_query_t *q, const tes__term_info_t *t, tes_entity_t e,
                            bool *has)
{
    const tes__component_t *info = t->info;
    if (info->storage == TES_STORAGE_SPARSE) {
        uint32_t pos = tes__sparse_set_find(&info->store.set, e);
        *has = pos != TES_NULL_INDEX;
        return *has && info->size ? tes__sparse_store_at(&info->store, pos) : NULL;
    }
    const tes__slot_t *slot = tes__entity_slot(&q->w->entities, e);
    *has = false;
    if (!slot)
        return NULL;
    const tes__table_t *table = tes__slot_table(q->w, slot);
    if (tes__table_type_index(table, t->comp) < 0)
        return NULL;
    *has = true;
    int32_t col = info->size ? tes__table_column_index(table, t->comp) : -1;
    return col >= 0 ? tes__table_cell(table, (uint32_t)col, slot->row) : NULL;
}

static bool parent_has(const tes_query_t *q, const tes__term_info_t *t, tes_entity_t p)
{
    bool has = false;
    if (p != TES_NULL)
        (void)parent_value(q, t, p, &has);
    return has;
}

/* Whether an entity with parent p passes the AND and NOT parent terms. */
static bool parents_pass(const tes_query_t *q, tes_entity_t p)
{
    for (int32_t k = 0; k < q->parent_count; k++) {
        const tes__term_info_t *t = &q->terms[q->parent_terms[k]];
        if (t->oper != TES_OPTIONAL && parent_has(q, t, p) != (t->oper == TES_AND))
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
    tes__free(a, c->scratch, c->scratch_bytes);
    tes__free(a, c, sizeof *c);
}

void tes__cascade_free(tes_iter_t *it)
{
    if (it->priv_cascade) {
        cascade_release(it->world, it->priv_cascade);
        it->priv_cascade = NULL;
    }
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
        if (q->parent_count && !parents_pass(q, p))
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
    int32_t most = 0;
    for (uint32_t i = 0; i < c->count; i++)
        most = c->depths[i] > most ? c->depths[i] : most;
    if (most == 0 || c->count < 2)
        return TES_OK;
    tes__alloc_t *a = &w->alloc;
    size_t nb = ((size_t)most + 2) * sizeof(uint32_t);
    size_t eb = (size_t)c->count * sizeof(tes_entity_t);
    uint32_t *start = tes__calloc(a, nb);
    tes_entity_t *ents = tes__malloc(a, eb);
    tes_entity_t *parents = tes__malloc(a, eb);
    if (!start || !ents || !parents) {
        tes__free(a, start, nb);
        tes__free(a, ents, eb);
        tes__free(a, parents, eb);
        return TES_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < c->count; i++)
        start[c->depths[i] + 1]++;
    for (int32_t d = 1; d <= most + 1; d++)
        start[d] += start[d - 1];
    for (uint32_t i = 0; i < c->count; i++) {
        uint32_t at = start[c->depths[i]]++;
        ents[at] = c->ents[i];
        parents[at] = c->parents[i];
    }
    memcpy(c->ents, ents, eb);
    memcpy(c->parents, parents, eb);
    /* The depths, now in order: each depth's run ends where start says. */
    uint32_t i = 0;
    for (int32_t d = 0; d <= most; d++)
        while (i < start[d])
            c->depths[i++] = d;
    tes__free(a, start, nb);
    tes__free(a, ents, eb);
    tes__free(a, parents, eb);
    return TES_OK;
}

/* The walk's state, made by its first step. NULL with TES_ERR_NOMEM (not
 * recorded). */
static cascade_t *cascade_build(tes_iter_t *it)
{
    tes_query_t *q = it->priv_query;
    tes_world_t *w = q->w;
    tes__alloc_t *a = &w->alloc;
    cascade_t *c = tes__calloc(a, sizeof *c);
    if (!c)
        return NULL;
    /* The parents' values: one array per parent data term, each aligned
     * for any type. */
    size_t per_entity = 0;
    for (int32_t k = 0; k < q->parent_count; k++) {
        const tes__term_info_t *t = &q->terms[q->parent_terms[k]];
        if (t->oper != TES_NOT)
            per_entity += t->info->size;
    }
    c->chunk_max = CHUNK_MAX;
    if (per_entity && per_entity * CHUNK_MAX > SCRATCH_BYTES)
        c->chunk_max = per_entity >= SCRATCH_BYTES ? 1u : (uint32_t)(SCRATCH_BYTES / per_entity);
    size_t at = 0;
    for (int32_t k = 0; k < q->parent_count; k++) {
        const tes__term_info_t *t = &q->terms[q->parent_terms[k]];
        if (t->oper == TES_NOT || !t->info->size)
            continue;
        c->offsets[q->parent_terms[k]] = at;
        at += ((size_t)t->info->size * c->chunk_max + 15u) & ~(size_t)15u;
    }
    c->scratch_bytes = at;
    if (at && !(c->scratch = tes__malloc(a, at))) {
        tes__free(a, c, sizeof *c);
        return NULL;
    }
    /* The matches of the base walk, with the iteration's change window. */
    tes_iter_t base = tes__query_base_start(q);
    tes__iter_keep_fields(&base); /* only the entities are read */
    base.priv_change_since = it->priv_change_since;
    base.priv_change_live = it->priv_change_live & TES__CHANGE_ALL;
    int rc = TES_OK;
    while (rc == TES_OK && tes__query_base_next(&base))
        rc = collect_matches(w, q, c, base.entities, (uint32_t)base.count);
    if (rc == TES_OK)
        rc = sort_by_depth(w, c);
    if (rc) {
        cascade_release(w, c);
        return NULL;
    }
    return c;
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
    while (c->cursor < c->count) {
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
        /* OPTIONAL parent terms: every parent of the chunk has it, or none. */
        for (int32_t t = 0; t < q->parent_count; t++) {
            const tes__term_info_t *ti = &q->terms[q->parent_terms[t]];
            if (ti->oper != TES_OPTIONAL)
                continue;
            bool first = parent_has(q, ti, c->parents[p]);
            uint32_t j = 1;
            while (j < k && parent_has(q, ti, c->parents[p + j]) == first)
                j++;
            k = j;
        }
        tes__query_fields(q, m.pos, m.slot, it->priv_fields);
        for (int32_t t = 0; t < q->parent_count; t++) {
            int32_t i = q->parent_terms[t];
            const tes__term_info_t *ti = &q->terms[i];
            uint32_t size = ti->info->size;
            it->priv_fields[i] = NULL;
            if (ti->oper == TES_NOT || !size || !parent_has(q, ti, c->parents[p]))
                continue;
            unsigned char *out = c->scratch + c->offsets[i];
            for (uint32_t j = 0; j < k; j++) {
                bool has;
                const void *v = parent_value(q, ti, c->parents[p + j], &has);
                tes__assert(v != NULL);
                memcpy(out + (size_t)j * size, v, size);
            }
            it->priv_fields[i] = out;
        }
        it->count = (int32_t)k;
        it->entities = c->ents + p;
        it->depth = (q->flags & TES_QUERY_CASCADE) ? depth : 0;
        c->cursor = p + k;
        return true;
    }
    tes__cascade_free(it);
    return false;
}
