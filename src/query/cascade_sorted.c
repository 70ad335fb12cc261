/*
 * The sorted walk of by-depth queries: taken when every table the query
 * matches is still in the depth order tes_sort_by_depth left
 * (world/depth_order.h). Tuned for transform propagation over big forests
 * that change shape rarely: each depth's rows of a table are contiguous,
 * so a chunk is a run of rows whose self fields point straight into the
 * columns (nothing is copied, nothing written back), and the parent
 * terms' values are gathered, chunk by chunk, from the parent positions
 * the sort recorded (parent table and row per row) into the walk's
 * scratch, which stays in cache because chunks are capped.
 *
 * Order: depth by depth; within a depth, table by table in the query's
 * table order and rows in order, as the general walk yields them. A
 * chunk holds one depth of one table, and is cut where the parents'
 * table changes in a way the parent terms see (an OPTIONAL term's
 * presence); rows whose parent an AND or NOT parent term refuses are
 * stepped over. Roots (depth 0) have no parent: AND parent terms refuse
 * them, NOT terms pass them, OPTIONAL ones give NULL. Values written by
 * the loop are read as parents' values by the chunks of the next depth,
 * which are made after the loop saw this one's.
 */
#include "query/cascade.h"

/* The most entities of a sorted chunk: the parents' values gathered for
 * it (and the rows the loop then reads and writes) stay in the first-level
 * cache; measured on H4, 512 beat both 1024 and 256. */
#define SORTED_CHUNK 512u

bool tes__cascade_sorted_begin(tes_world_t *w, const tes_query_t *q, cascade_t *c, int *rc)
{
    *rc = TES_OK;
    if (!w->depth_order)
        return false;
    int32_t deepest = 0;
    for (uint32_t i = 0; i < q->match_count; i++) {
        const tes__table_t *t = q->matches[i].table;
        if (t->count && !tes__depth_rows(w, t))
            return false;
    }
    if (tes__grow(&w->alloc, (void **)&c->rows, &c->rows_cap,
                  q->match_count ? q->match_count : 1, sizeof *c->rows, 8)) {
        *rc = TES_ERR_NOMEM;
        return false;
    }
    for (uint32_t i = 0; i < q->match_count; i++) {
        const tes__table_t *t = q->matches[i].table;
        const tes__depth_rows_t *r = t->count ? tes__depth_rows(w, t) : NULL;
        c->rows[i] = r;
        if (r && (int32_t)r->depths - 1 > deepest)
            deepest = (int32_t)r->depths - 1;
    }
    c->s_depth = 0;
    c->s_deepest = deepest;
    c->s_match = 0;
    c->s_row = 0;
    return true;
}

/* How the parent terms see a parent in table `t`: false when an AND term
 * lacks or a NOT term finds its component there; else true, with in *sig
 * a bit per parent term the table holds (what must not change within a
 * chunk). A NULL table: no parent (a root). */
static bool sorted_parent_pass(const tes_query_t *q, const tes__table_t *t, uint32_t *sig)
{
    uint32_t bits = 0;
    for (int32_t k = 0; k < q->parent_count; k++) {
        const tes__term_info_t *ti = &q->terms[q->parent_terms[k]];
        bool has = t && tes__table_type_index(t, ti->comp) >= 0;
        if ((ti->oper == TES_AND && !has) || (ti->oper == TES_NOT && has))
            return false;
        bits |= has ? 1u << k : 0u;
    }
    *sig = bits;
    return true;
}

/* Copies the chunk's parents' values of parent data term i (every parent
 * has it) into the scratch, from the positions the sort recorded. */
static void sorted_gather(const tes_world_t *w, cascade_t *c, const tes_query_t *q, int32_t i,
                          const uint32_t *ptab, const uint32_t *prow, uint32_t k)
{
    const tes__term_info_t *ti = &q->terms[i];
    size_t size = ti->info->size;
    unsigned char *out = c->scratch + c->offsets[i];
    if (!ptab) { /* every parent in the table c->s_ptable */
        const tes__table_t *t = w->tables.tables[c->s_ptable];
        int32_t col = tes__table_column_index(t, ti->comp);
        tes__assert(col >= 0);
        const uint8_t *base = t->columns[col].data;
        /* The common sizes get a loop of their own (a fixed-size copy
         * the compiler inlines). The parents' rows lie in the previous
         * depth's range, in order for siblings: software prefetches
         * measured slower than the processor's own. */
#define SORTED_GATHER(n)                                                                \
    for (uint32_t j = 0; j < k; j++)                                                    \
        memcpy(out + (size_t)j * (n), base + (size_t)prow[j] * (n), (n));
        switch (size) {
        case 4: SORTED_GATHER(4) break;
        case 8: SORTED_GATHER(8) break;
        case 12: SORTED_GATHER(12) break;
        case 16: SORTED_GATHER(16) break;
        default: SORTED_GATHER(size) break;
        }
#undef SORTED_GATHER
        return;
    }
    uint32_t cur = UINT32_MAX;
    const uint8_t *base = NULL;
    for (uint32_t j = 0; j < k; j++) {
        if (ptab[j] != cur) {
            cur = ptab[j];
            const tes__table_t *t = w->tables.tables[cur];
            int32_t col = tes__table_column_index(t, ti->comp);
            tes__assert(col >= 0);
            base = t->columns[col].data;
        }
        tes__cascade_copy(out + (size_t)j * size, base + (size_t)prow[j] * size, size);
    }
}

bool tes__cascade_sorted_next(cascade_t *c, const tes_query_t *q, tes_iter_t *it)
{
    const tes_world_t *w = q->w;
    for (;;) {
        if (c->s_match >= q->match_count) {
            if (++c->s_depth > c->s_deepest)
                return false;
            c->s_match = 0;
            c->s_row = 0;
            continue;
        }
        const tes__query_match_t *m = &q->matches[c->s_match];
        const tes__depth_rows_t *r = c->rows[c->s_match];
        uint32_t lo = 0, hi = 0;
        if (r)
            tes__depth_range(r, c->s_depth, &lo, &hi);
        uint32_t p = c->s_row > lo ? c->s_row : lo;
        if (p >= hi) {
            c->s_match++;
            c->s_row = 0;
            continue;
        }
        uint32_t most = c->chunk_max < SORTED_CHUNK ? c->chunk_max : SORTED_CHUNK;
        uint32_t k = hi - p < most ? hi - p : most;
        const uint32_t *ptab = NULL, *prow = NULL;
        uint32_t sig = 0;
        if (q->parent_count) {
            if (c->s_depth == 0) { /* roots: no parent */
                if (!sorted_parent_pass(q, NULL, &sig)) {
                    c->s_row = hi;
                    continue;
                }
            } else if (r->nparent_tables == 1) {
                /* Every parent in one table: one answer for the range. */
                c->s_ptable = r->parent_tables[0];
                prow = r->parent_row + p;
                if (!sorted_parent_pass(q, w->tables.tables[c->s_ptable], &sig)) {
                    c->s_row = hi;
                    continue;
                }
            } else {
                ptab = r->parent_table + p;
                prow = r->parent_row + p;
                if (!sorted_parent_pass(q, w->tables.tables[ptab[0]], &sig)) {
                    c->s_row = p + 1;
                    continue;
                }
                /* The chunk ends where the parents' table changes what a
                 * parent term sees. */
                uint32_t cur = ptab[0];
                for (uint32_t j = 1; j < k; j++) {
                    if (ptab[j] == cur)
                        continue;
                    uint32_t s2;
                    if (!sorted_parent_pass(q, w->tables.tables[ptab[j]], &s2) || s2 != sig) {
                        k = j;
                        break;
                    }
                    cur = ptab[j];
                }
            }
        }
        const tes__table_t *t = m->table;
        for (int32_t i = 0; i < q->term_count; i++)
            it->priv_fields[i] = !q->terms[i].parent && m->column[i] >= 0
                                     ? tes__table_cell(t, (uint32_t)m->column[i], p)
                                     : NULL;
        for (int32_t kk = 0; kk < q->parent_count; kk++) {
            int32_t i = q->parent_terms[kk];
            if (!(sig & (1u << kk)) || !q->terms[i].info->size || q->terms[i].oper == TES_NOT)
                continue;
            sorted_gather(w, c, q, i, ptab, prow, k);
            it->priv_fields[i] = c->scratch + c->offsets[i];
        }
        it->count = (int32_t)k;
        it->entities = t->entities + p;
        it->depth = (q->flags & TES_QUERY_CASCADE) ? c->s_depth : 0;
        c->s_row = p + k;
        return true;
    }
}
