/*
 * The pointer walk of by-depth queries (TES_QUERY_CASCADE or a parent
 * term) whose self values are plain (every self data term an AND term
 * copied bitwise, nothing stamped): tuned for transform propagation over
 * big forests, where the matches of one depth lie scattered over their
 * tables and every value is a cache miss.
 *
 * Collecting a match records, besides its depth, the address of each of
 * its self values (from the base walk's fields) and of each of its
 * parent's values (its parent's slot read once): chunks are then made
 * from these addresses alone, with prefetches running ahead of the
 * copies. Depths come from a memo per entity index (a parent met before
 * its children costs one read, not a walk up the chain).
 *
 * The order is kept for the next iteration when its matches and their
 * parents all live in tables and no change filter applies: it holds as
 * long as no link changed (the world's link_changes), no table joined the
 * query and every table it was collected from holds the same entities in
 * the same rows of the same block (same address and capacity, so the
 * columns lie where they did). A steady iteration then compares those
 * entity columns (sequential reads) and makes the chunks, with no walk
 * over links, slots or tables and no allocation. tes__world_check
 * verifies a kept order that holds against a fresh look at the world
 * (tes__cascade_check_kept).
 */
#include "query/cascade.h"

#include <stdio.h>
#include <stdlib.h>

#include "world/check_report.h"

/* Gathers read values scattered over their storage: each loop asks for
 * the value WALK_AHEAD places on, so that many misses overlap (second-level
 * cache, as tes_get_n's pipeline does). */
#if defined(__GNUC__) || defined(__clang__)
#define walk_prefetch(p) __builtin_prefetch((p), 0, 2)
#else
#define walk_prefetch(p) ((void)(p))
#endif
#define WALK_AHEAD 16u

/* The address a parent term of a tag holds when the parent has it. */
static const unsigned char walk_present_tag;
#define WALK_PRESENT ((void *)(uintptr_t)&walk_present_tag)

/* The depth of entity `index`, whose parent is index + 1 `p1` (not 0):
 * a walk up to the first ancestor whose depth is known this iteration (or
 * a root), which then records the depths of the ancestors it passed. With
 * parents met before their children, as in most forests, it is one memo
 * read per entity instead of a walk of the whole chain. */
static int32_t walk_depth(cascade_t *c, const tes_world_t *w, uint32_t index, uint32_t p1)
{
    uint32_t (*up)(const tes_world_t *, uint32_t) = w->hier_ops->parent_of;
    uint16_t tag = (uint16_t)(c->epoch << 8);
    uint32_t steps = 0, a = p1;
    int32_t known = -1;
    while (a) {
        uint16_t m = c->memo[a - 1];
        if ((m & 0xFF00u) == tag && (m & 0xFFu)) {
            known = (int32_t)(m & 0xFFu) - 1;
            break;
        }
        steps++;
        a = up(w, a - 1);
    }
    /* The depth of p1: the walk stopped at a root (the last of the steps
     * is one, at depth 0) or at an ancestor of known depth. */
    int32_t dp = known >= 0 ? known + (int32_t)steps : (int32_t)steps - 1;
    a = p1;
    for (uint32_t k = 0; k < steps; k++, a = up(w, a - 1))
        if (dp - (int32_t)k < 254)
            c->memo[a - 1] = (uint16_t)(tag | (uint16_t)(dp - (int32_t)k + 1));
    if (dp + 1 < 254)
        c->memo[index] = (uint16_t)(tag | (uint16_t)(dp + 2));
    return dp + 1;
}

/* Makes the depth memo cover every entity index and starts a new epoch.
 * TES_OK or TES_ERR_NOMEM. */
int tes__cascade_memo_begin(tes_world_t *w, cascade_t *c)
{
    uint32_t need = w->entities.count, old = c->memo_cap;
    if (need > old) {
        if (tes__grow(&w->alloc, (void **)&c->memo, &c->memo_cap, need, sizeof *c->memo, 1024))
            return TES_ERR_NOMEM;
        memset(c->memo + old, 0, (size_t)(c->memo_cap - old) * sizeof *c->memo);
    }
    if (++c->epoch > 0xFF) { /* the tags wrapped: forget them all */
        memset(c->memo, 0, (size_t)c->memo_cap * sizeof *c->memo);
        c->epoch = 1;
    }
    return TES_OK;
}

/* Adds table t to those the kept order depends on (once). TES_OK or
 * TES_ERR_NOMEM. */
static int walk_keep_table(tes_world_t *w, cascade_t *c, const tes__table_t *t)
{
    for (uint32_t i = 0; i < c->ntabs; i++)
        if (c->tabs[i].table == t)
            return TES_OK;
    if (tes__grow(&w->alloc, (void **)&c->tabs, &c->tabs_cap, (uint64_t)c->ntabs + 1, sizeof *c->tabs, 8))
        return TES_ERR_NOMEM;
    c->tabs[c->ntabs++] = (tes__kept_table_t){t, NULL, 0, 0, 0};
    return TES_OK;
}

/* Records what the order just collected depends on, so that the next
 * iteration can keep it (order_holds): the matched tables and the
 * parents' (collected by collect_fast), each with its block, count and
 * entities. An order whose parents include entities without table
 * components is not kept (their moves leave no trace in a table). TES_OK
 * or TES_ERR_NOMEM. */
int tes__cascade_remember(tes_world_t *w, const tes_query_t *q, cascade_t *c)
{
    for (uint32_t i = 0; i < q->match_count; i++)
        if (walk_keep_table(w, c, q->matches[i].table))
            return TES_ERR_NOMEM;
    uint64_t rows = 0;
    for (uint32_t i = 0; i < c->ntabs; i++) {
        if (c->tabs[i].table->flags & TES__TABLE_VIRTUAL)
            return TES_OK;
        rows += c->tabs[i].table->count;
    }
    if (tes__grow(&w->alloc, (void **)&c->saved, &c->saved_cap, rows ? rows : 1, sizeof *c->saved, 256))
        return TES_ERR_NOMEM;
    uint32_t at = 0;
    for (uint32_t i = 0; i < c->ntabs; i++) {
        tes__kept_table_t *k = &c->tabs[i];
        k->block = k->table->block;
        k->cap = k->table->cap;
        k->count = k->table->count;
        k->at = at;
        if (k->count) /* an empty table may have no entity array at all */
            memcpy(c->saved + at, k->table->entities, (size_t)k->count * sizeof *c->saved);
        at += k->count;
    }
    c->kept_links = w->link_changes;
    c->kept_matches = q->match_count;
    c->kept = true;
    return TES_OK;
}

/* Whether the order kept by the last iteration holds: no link changed and
 * every table it was collected from holds the same entities in the same
 * rows of the same block (so the addresses it keeps are the values'), and
 * no table joined the query. Then the values' addresses it keeps are
 * still right, and only the chunks are made again. Linear in the kept
 * tables' rows, a sequential compare, against the collection's walk over
 * every match's links, parent and values. */
bool tes__cascade_order_holds(const tes_world_t *w, const tes_query_t *q, const cascade_t *c)
{
    if (!c->kept || c->kept_links != w->link_changes || c->kept_matches != q->match_count)
        return false;
    for (uint32_t i = 0; i < c->ntabs; i++) {
        const tes__kept_table_t *k = &c->tabs[i];
        /* (An empty table's entities may be NULL: nothing to compare.) */
        if (k->table->count != k->count || k->table->block != k->block || k->table->cap != k->cap ||
            (k->count &&
             memcmp(k->table->entities, c->saved + k->at, (size_t)k->count * sizeof *c->saved) != 0))
            return false;
    }
    return true;
}

/* Appends the matches of one chunk of the base walk that the parent terms
 * pass, with their values' addresses: the self terms' from the chunk's
 * fields (valid while the iteration lives: structural changes wait), the
 * parent's from its slot, looked up once here. TES_OK or TES_ERR_NOMEM. */
int tes__cascade_collect_fast(tes_world_t *w, const tes_query_t *q, cascade_t *c, const tes_iter_t *b)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t n = (uint32_t)b->count;
    uint64_t need = (uint64_t)c->count + n;
    if (tes__grow(a, (void **)&c->ents, &c->ents_cap, need, sizeof *c->ents, 256) ||
        tes__grow(a, (void **)&c->depths, &c->depths_cap, need, sizeof *c->depths, 256) ||
        tes__grow(a, (void **)&c->ptrs, &c->ptrs_cap, need * c->stride, sizeof *c->ptrs, 256))
        return TES_ERR_NOMEM;
    const bool linked = w->hier != NULL;
    const tes__slot_t *slots = w->entities.slots;
    /* The parents WALK_AHEAD places on, whose slots are asked for early. */
    uint32_t ring[WALK_AHEAD];
    for (uint32_t j = 0; linked && j < WALK_AHEAD && j < n; j++) {
        ring[j] = w->hier_ops->parent_of(w, tes_entity_index(b->entities[j]));
        if (ring[j])
            walk_prefetch(&slots[ring[j] - 1]);
    }
    for (uint32_t j = 0; j < n; j++) {
        tes_entity_t e = b->entities[j];
        uint32_t index = tes_entity_index(e);
        uint32_t p1 = 0;
        if (linked) {
            p1 = ring[j % WALK_AHEAD];
            if (j + WALK_AHEAD < n) {
                uint32_t later = w->hier_ops->parent_of(w, tes_entity_index(b->entities[j + WALK_AHEAD]));
                ring[j % WALK_AHEAD] = later;
                if (later)
                    walk_prefetch(&slots[later - 1]);
            }
        }
        if (p1 && c->keepable && q->parent_count) {
            const tes__table_t *pt = tes__slot_table(w, &slots[p1 - 1]);
            if (pt != c->last_parent_table && walk_keep_table(w, c, pt))
                return TES_ERR_NOMEM;
            c->last_parent_table = pt;
        }
        void **row = c->ptrs + (size_t)c->count * c->stride;
        bool pass = true;
        for (int32_t k = 0, s = 0; k < q->parent_count && pass; k++) {
            int32_t i = q->parent_terms[k];
            bool has = false;
            void *v = p1 ? tes__cascade_value_at(c, q, i, &slots[p1 - 1], p1 - 1, &has) : NULL;
            tes_oper_t oper = q->terms[i].oper;
            if (oper == TES_NOT)
                pass = !has;
            else if (oper == TES_AND && !has)
                pass = false;
            else
                row[c->nself + (uint32_t)s++] = has ? (v ? v : WALK_PRESENT) : NULL;
        }
        if (!pass)
            continue;
        for (uint32_t s = 0; s < c->nself; s++) {
            int32_t i = c->self_terms[s];
            row[s] = (unsigned char *)b->priv_fields[i] + (size_t)j * q->terms[i].info->size;
        }
        c->ents[c->count] = e;
        c->depths[c->count] = p1 ? walk_depth(c, w, index, p1) : 0;
        c->count++;
    }
    return TES_OK;
}

/* Sorts the pointer walk's matches by depth, stably (a counting sort; the
 * depths' runs are sequential writes). TES_OK or TES_ERR_NOMEM. */
int tes__cascade_sort_fast(tes_world_t *w, cascade_t *c)
{
    tes__alloc_t *a = &w->alloc;
    uint32_t *start;
    int32_t most;
    if (tes__cascade_depth_starts(a, c, &start, &most))
        return TES_ERR_NOMEM;
    if (!start)
        return TES_OK;
    uint64_t np = (uint64_t)c->count * c->stride;
    if (tes__grow(a, (void **)&c->ents2, &c->ents2_cap, c->count, sizeof *c->ents2, 256) ||
        tes__grow(a, (void **)&c->ptrs2, &c->ptrs2_cap, np ? np : 1, sizeof *c->ptrs2, 256)) {
        tes__free(a, start, ((size_t)most + 2) * sizeof(uint32_t));
        return TES_ERR_NOMEM;
    }
    uint32_t stride = c->stride;
    for (uint32_t i = 0; i < c->count; i++) {
        uint32_t at = start[c->depths[i]]++;
        c->ents2[at] = c->ents[i];
        for (uint32_t k = 0; k < stride; k++)
            c->ptrs2[(size_t)at * stride + k] = c->ptrs[(size_t)i * stride + k];
    }
    void **ptrs = c->ptrs2;
    c->ptrs2 = c->ptrs;
    c->ptrs = ptrs;
    uint32_t cap = c->ptrs_cap;
    c->ptrs_cap = c->ptrs2_cap;
    c->ptrs2_cap = cap;
    tes__cascade_depth_finish(a, c, start, most);
    return TES_OK;
}

/* A chunk of the pointer walk from position p: the run of one depth (cut
 * where an OPTIONAL parent term's presence changes). Where the self values
 * of the run's first entities follow each other in their storage (a table
 * whose rows are in depth order, say) the fields point there; otherwise
 * the self values are gathered into the scratch and written back before
 * the next chunk is made (cascade_write_back). The parents' values are
 * copied as they are now. Returns the chunk's size. */
uint32_t tes__cascade_next_fast(cascade_t *c, const tes_query_t *q, tes_iter_t *it, uint32_t p)
{
    uint32_t stride = c->stride, nself = c->nself;
    int32_t depth = c->depths[p];
    uint32_t most = c->count - p < c->chunk_max ? c->count - p : c->chunk_max;
    uint32_t k = 1;
    while (k < most && c->depths[p + k] == depth)
        k++;
    void **first = c->ptrs + (size_t)p * stride;
    for (uint32_t s = 0; s < c->npar; s++) {
        if (q->terms[c->par_terms[s]].oper != TES_OPTIONAL)
            continue;
        bool has = first[nself + s] != NULL;
        for (uint32_t j = 1; j < k; j++)
            if ((c->ptrs[(size_t)(p + j) * stride + nself + s] != NULL) != has) {
                k = j;
                break;
            }
    }
    for (int32_t i = 0; i < q->term_count; i++)
        it->priv_fields[i] = NULL;
    /* The run whose self values lie side by side. */
    uint32_t run = 1;
    for (bool side = true; side && run < k; run += side) {
        void *const *at = c->ptrs + (size_t)(p + run) * stride;
        void *const *before = at - stride;
        for (uint32_t s = 0; s < nself && side; s++)
            side = at[s] == (unsigned char *)before[s] + q->terms[c->self_terms[s]].info->size;
    }
    if (run == k || run >= 32u) {
        k = run;
        for (uint32_t s = 0; s < nself; s++)
            it->priv_fields[c->self_terms[s]] = first[s];
    } else {
        for (uint32_t s = 0; s < nself; s++) {
            int32_t i = c->self_terms[s];
            size_t size = q->terms[i].info->size;
            unsigned char *val = c->scratch + c->offsets[i];
            void *const *src = c->ptrs + (size_t)p * stride + s;
            for (uint32_t j = 0; j < k && j < WALK_AHEAD; j++)
                walk_prefetch(src[(size_t)j * stride]);
            for (uint32_t j = 0; j < k; j++) {
                if (j + WALK_AHEAD < k)
                    walk_prefetch(src[(size_t)(j + WALK_AHEAD) * stride]);
                tes__cascade_copy(val + j * size, src[(size_t)j * stride], size);
            }
            if (q->terms[i].access != TES_IN)
                memcpy(c->scratch + c->originals[i], val, k * size);
            it->priv_fields[i] = val;
        }
        c->gathered = k;
        c->gathered_at = p;
    }
    for (uint32_t s = 0; s < c->npar; s++) {
        int32_t i = c->par_terms[s];
        size_t size = q->terms[i].info->size;
        if (!size || !first[nself + s])
            continue; /* a tag, or an OPTIONAL term the chunk's parents lack */
        unsigned char *out = c->scratch + c->offsets[i];
        void *const *src = c->ptrs + (size_t)p * stride + nself + s;
        for (uint32_t j = 0; j < k && j < WALK_AHEAD; j++)
            walk_prefetch(src[(size_t)j * stride]);
        for (uint32_t j = 0; j < k; j++) {
            if (j + WALK_AHEAD < k)
                walk_prefetch(src[(size_t)(j + WALK_AHEAD) * stride]);
            tes__cascade_copy(out + j * size, src[(size_t)j * stride], size);
        }
        it->priv_fields[i] = out;
    }
    return k;
}

#define KEPT_CHECK(...) TES__CHECK("tes__world_check (a by-depth query's kept order)", __VA_ARGS__)

/* tes__world_check's part for query q's spare state c (create.c asks for
 * each query): when the pointer walk's kept order holds, what the next
 * iteration would trust without looking is what a fresh collection would
 * find. Each match once (a bit per entity index, from libc: the check
 * must not touch the world's allocator), alive, of a matched table, at
 * its true depth, in depth order; its self addresses those of its values;
 * its parent addresses those of its parent's values (NULL when the parent
 * lacks the component, never for a tag it has); and no other entity of a
 * matched table passes the parent terms. TES_OK, TES_ERR_NOMEM (the bits
 * could not be had) or TES_ERR_INVALID (reported on stderr). */
int tes__cascade_check_kept(const tes_world_t *w, const tes_query_t *q, const cascade_t *c)
{
    if (!c || !c->kept || !tes__cascade_order_holds(w, q, c))
        return TES_OK;
    unsigned char *seen = calloc((size_t)w->entities.count / 8u + 1u, 1);
    if (!seen)
        return TES_ERR_NOMEM;
    int rc = TES_OK;
    cascade_t probe = {0}; /* tes__cascade_value_at's memo, fresh */
    for (int32_t i = 0; i < TES_MAX_TERMS; i++)
        probe.last_column[i] = -1;
    const tes__slot_t *slots = w->entities.slots;
    for (uint32_t p = 0; p < c->count && rc == TES_OK; p++) {
        tes_entity_t e = c->ents[p];
        const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
        uint32_t index = tes_entity_index(e);
        rc = slot ? TES_OK : TES_ERR_INVALID;
        if (rc || ((unsigned)seen[index / 8u] >> (index % 8u)) & 1u) {
            fprintf(stderr, "tes__world_check: a by-depth query's kept order holds entity %u:%u "
                            "%s at %u\n", index, tes_entity_generation(e),
                    rc ? "dead" : "twice", p);
            rc = TES_ERR_INVALID;
            break;
        }
        seen[index / 8u] = (unsigned char)((unsigned)seen[index / 8u] | 1u << (index % 8u));
        uint32_t p1 = 0;
        int32_t depth = w->hier ? w->hier_ops->lineage(w, index, &p1) : 0;
        if (c->depths[p] != depth || (p && c->depths[p] < c->depths[p - 1])) {
            fprintf(stderr, "tes__world_check: a by-depth query's kept order has entity %u at "
                            "depth %d (position %u), which is at depth %d\n", index,
                    (int)c->depths[p], p, (int)depth);
            rc = TES_ERR_INVALID;
            break;
        }
        void *const *row = c->ptrs + (size_t)p * c->stride;
        for (uint32_t s = 0; s < c->nself && rc == TES_OK; s++) {
            bool has = false;
            void *v = tes__cascade_value_at(&probe, q, c->self_terms[s], slot, index, &has);
            if (!has || row[s] != v) {
                fprintf(stderr, "tes__world_check: a by-depth query's kept order points entity "
                                "%u's term %d at %p, its value is at %p\n", index,
                        (int)c->self_terms[s], row[s], v);
                rc = TES_ERR_INVALID;
            }
        }
        for (uint32_t s = 0; s < c->npar && rc == TES_OK; s++) {
            bool has = false;
            void *v = p1 ? tes__cascade_value_at(&probe, q, c->par_terms[s], &slots[p1 - 1], p1 - 1, &has) : NULL;
            void *want = has ? (v ? v : WALK_PRESENT) : NULL;
            if (row[c->nself + s] != want) {
                fprintf(stderr, "tes__world_check: a by-depth query's kept order points entity "
                                "%u's parent term %d at %p, the parent's value is at %p\n",
                        index, (int)c->par_terms[s], row[c->nself + s], want);
                rc = TES_ERR_INVALID;
            }
        }
    }
    /* Every other entity of a matched table is one the parent terms
     * refuse. */
    for (uint32_t m = 0; m < q->match_count && rc == TES_OK; m++) {
        const tes__table_t *t = q->matches[m].table;
        for (uint32_t r = 0; r < t->count && rc == TES_OK; r++) {
            uint32_t index = tes_entity_index(t->entities[r]);
            if (((unsigned)seen[index / 8u] >> (index % 8u)) & 1u)
                continue;
            uint32_t p1 = w->hier ? w->hier_ops->parent_of(w, index) : 0;
            bool pass = true;
            for (int32_t k = 0; k < q->parent_count && pass; k++) {
                int32_t i = q->parent_terms[k];
                bool has = false;
                if (p1)
                    (void)tes__cascade_value_at(&probe, q, i, &slots[p1 - 1], p1 - 1, &has);
                tes_oper_t oper = q->terms[i].oper;
                pass = oper == TES_NOT ? !has : oper == TES_AND ? has : true;
            }
            if (pass) {
                fprintf(stderr, "tes__world_check: a by-depth query's kept order misses entity "
                                "%u (row %u of a matched table)\n", index, r);
                rc = TES_ERR_INVALID;
            }
        }
    }
    free(seen);
    return rc;
}
