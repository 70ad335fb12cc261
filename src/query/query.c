/*
 * What a query is, below every walk: the table cache and the one
 * per-entity matcher (query.h). The cache is filled from the existing
 * tables when the query is made (create.c) and then learns about every new
 * table from the table graph (a two-phase listener: room is reserved
 * before the table is committed, so a table is never missed for lack of
 * memory). The matcher, with the sparse change filters' stamp test, and
 * the fields of a chunk it accepts are what every walk and group asks;
 * this file calls no walk.
 */
#include "query/query.h"

#include <string.h>

#include "query/filter.h"
#include "world/changes.h"

static bool type_has(const tes__table_t *t, tes_comp_t c) { return tes__table_type_index(t, c) >= 0; }

/* True when table t passes the filters that do not depend on AND terms:
 * no table NOT term in its type, and the default filters (table_ok). */
static bool table_ok(const tes_query_t *q, const tes__table_t *t)
{
    if (q->skip_disabled && (t->flags & TES__TABLE_DISABLED))
        return false;
    if (q->skip_prefab && (t->flags & TES__TABLE_PREFAB))
        return false;
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse && !q->terms[i].parent && q->terms[i].oper == TES_NOT &&
            type_has(t, q->terms[i].comp))
            return false;
    return true;
}

/* Whether t belongs in the table cache: it passes the filters, holds every
 * table AND term, and is a real table (the virtual root owns no rows). */
static bool table_matches(const tes_query_t *q, const tes__table_t *t)
{
    if ((t->flags & TES__TABLE_VIRTUAL) || !table_ok(q, t))
        return false;
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse && !q->terms[i].parent && q->terms[i].oper == TES_AND &&
            !type_has(t, q->terms[i].comp))
            return false;
    return true;
}

/* The data pointer of the terms a table has no column for. */
static uint8_t *const no_column = NULL;

static void fill_match(const tes_query_t *q, tes__table_t *t, tes__query_match_t *m)
{
    m->table = t;
    for (int32_t i = 0; i < TES_MAX_TERMS; i++) {
        int32_t col = -1;
        if (i < q->term_count && !q->terms[i].sparse && q->terms[i].data)
            col = tes__table_column_index(t, q->terms[i].comp);
        m->column[i] = col;
        m->data[i] = col >= 0 ? &t->columns[col].data : &no_column;
    }
}

int tes__query_on_table(void *ctx, tes__table_t *t, bool commit)
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
    q->table_ok[t->id] = table_ok(q, t);
    if (match)
        fill_match(q, t, &q->matches[q->match_count++]);
    return TES_OK;
}

/* Sizes the filter bytes for every existing table, then fills them and the
 * table cache (grown as matches are found: a match is ~200 bytes and most
 * queries match few of many tables). */
int tes__query_cache_fill(tes_query_t *q)
{
    tes__alloc_t *a = &q->w->alloc;
    const tes__table_graph_t *g = &q->w->tables;
    uint32_t cap = q->table_ok_cap;
    if (tes__grow(a, (void **)&q->table_ok, &cap, g->count, 1, 64))
        return TES_ERR_NOMEM;
    q->table_ok_cap = cap;
    for (uint32_t i = 0; i < g->count; i++) {
        q->table_ok[i] = table_ok(q, g->tables[i]);
        if (q->mode == TES__QUERY_DRIVEN || !table_matches(q, g->tables[i]))
            continue;
        if (tes__grow(a, (void **)&q->matches, &q->match_cap, (uint64_t)q->match_count + 1,
                      sizeof *q->matches, 8))
            return TES_ERR_NOMEM;
        fill_match(q, g->tables[i], &q->matches[q->match_count++]);
    }
    return TES_OK;
}

/* How many of n entities of the packed walk driven by a sparse change
 * term, from the first, have a newer stamp there (on the first's data
 * page); n when the driver has no change filter. */
static uint32_t driver_changes(const tes_query_t *q, const tes__match_t *m, uint32_t n)
{
    int32_t d = m->driver;
    if (d < 0 || q->terms[d].change == TES_CHANGE_NONE)
        return n;
    const tes__sparse_store_t *st = &q->terms[d].info->store;
    uint32_t pos = m->pos[d];
    uint32_t room = tes__store_stamp_per(st) - (pos & st->page_mask); /* to the page's end */
    if (n > room)
        n = room;
    const uint32_t *stamps = tes__sparse_store_stamp(st, pos);
    if (q->terms[d].change == TES_CHANGE_ADDED)
        stamps += tes__store_stamp_per(st);
    uint32_t k = 1;
    while (k < n && tes__tick_after(stamps[k], m->since))
        k++;
    return k;
}

/* The change test (m->changes): how many of the n entities from the
 * first, whose sparse data terms sit at consecutive positions from m->pos,
 * have every sparse change term's stamp newer than m->since; 0 when the
 * first has not. */
static uint32_t changes_pass(const tes_query_t *q, const tes__match_t *m, uint32_t n)
{
    for (int32_t s = 0; s < q->sparse_change_count && n; s++) {
        const tes__term_info_t *ti = &q->terms[q->sparse_change_terms[s]];
        const tes__sparse_store_t *st = &ti->info->store;
        uint32_t pos = m->pos[q->sparse_change_terms[s]];
        tes__assert(pos != TES_NULL_INDEX);
        const uint32_t *stamps = tes__sparse_store_stamp(st, pos);
        if (ti->change == TES_CHANGE_ADDED)
            stamps += tes__store_stamp_per(st);
        uint32_t k = 0;
        while (k < n && tes__tick_after(stamps[k], m->since))
            k++;
        n = k;
    }
    return n;
}

/* How many of entities[1..n) keep term t (index i) as the first entity
 * has it: its value k positions on, on the same data page (a data term,
 * or the driver, present at the start), held (a tag that an AND term
 * needs) or not held (absent at the start). A data term's positions are
 * read in order from the packed array, where a lookup would chase the
 * sparse array. */
static uint32_t term_run(const tes__term_info_t *t, bool known, bool driver, uint32_t at,
                         const tes_entity_t *entities, uint32_t n)
{
    const tes__sparse_store_t *st = &t->info->store;
    const tes__sparse_set_t *set = &st->set;
    uint32_t k = 1;
    if (at != TES_NULL_INDEX && (t->data || driver)) {
        uint64_t end = set->count;
        if (t->data) { /* 64-bit: the last page ends at 2^32 */
            uint64_t page_end = ((uint64_t)(at >> st->page_shift) + 1) << st->page_shift;
            end = page_end < end ? page_end : end;
        }
        if (end - at < n)
            n = (uint32_t)(end - at);
        if (driver)
            return n; /* the entities are its packed array */
        const tes_entity_t *packed = set->packed + at;
        while (k < n && packed[k] == entities[k])
            k++;
    } else if (at != TES_NULL_INDEX) { /* a tag held at the start */
        if (known || t->oper != TES_AND)
            return n;
        while (k < n && tes__sparse_set_contains(set, entities[k]))
            k++;
    } else { /* absent at the start: a NOT term, an absent optional one */
        if (t->oper == TES_NOT ? known : !t->data)
            return n; /* a known NOT term, a tag without a field */
        while (k < n && !tes__sparse_set_contains(set, entities[k]))
            k++;
    }
    return k;
}

uint32_t tes__query_match(const tes_query_t *q, tes__match_t *m, const tes_entity_t *entities,
                          uint32_t n)
{
    bool known = (m->how & TES__MATCH_KNOWN) != 0;
    const tes__entity_index_t *ei = &q->w->entities;
    const struct tes__filters *f = q->filters;
    tes_entity_t e = entities[0];
    /* The first entity: every test, and where its terms sit. */
    if ((m->driver >= 0 && tes__sparse_is_tombstone(e)) || (m->hide && tes__filters_hide(f, m->hide, e)))
        return 0;
    const tes__slot_t *first = NULL;
    if (m->how & TES__MATCH_TABLE) {
        first = tes__entity_slot(ei, e);
        if (!first || (!known && !q->table_ok[tes__slot_table(q->w, first)->id]))
            return 0;
        m->slot = first;
    }
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        if (i == m->driver)
            continue;
        uint32_t p = TES_NULL_INDEX;
        if (!known || t->data)
            p = tes__sparse_set_find(&t->info->store.set, e);
        if (!known && ((t->oper == TES_AND && p == TES_NULL_INDEX) || (t->oper == TES_NOT && p != TES_NULL_INDEX)))
            return 0;
        m->pos[i] = p;
    }
    /* A change filter on sparse terms: the first entity's stamps first,
     * then (the cheapest cut, which keeps a run of unchanged entities from
     * being measured term by term) the driver's. */
    if (m->changes) {
        if (!changes_pass(q, m, 1))
            return 0;
        n = driver_changes(q, m, n);
    }
    /* The others: term by term, each pass shortening the run (the
     * sequential ones first, so the per-entity tests below see a short
     * run when the terms cut it short). */
    for (int32_t s = 0; s < q->sparse_count && n > 1; s++) {
        int32_t i = q->sparse_terms[s];
        n = term_run(&q->terms[i], known, i == m->driver, m->pos[i], entities, n);
    }
    uint32_t k;
    if (m->driver >= 0) {
        for (k = 1; k < n && !tes__sparse_is_tombstone(entities[k]);)
            k++;
        n = k;
    }
    if (m->changes && !(n = changes_pass(q, m, n)))
        return 0;
    if (m->hide) {
        for (k = 1; k < n && !tes__filters_hide(f, m->hide, entities[k]);)
            k++;
        n = k;
    }
    if (first) {
        for (k = 1; k < n; k++) {
            const tes__slot_t *slot = tes__entity_slot(ei, entities[k]);
            if (!slot || (!known && !q->table_ok[tes__slot_table(q->w, slot)->id]) ||
                (q->table_data && (((slot->table ^ first->table) & TES__SLOT_TABLE_MASK) != 0 ||
                                   slot->row != first->row + k)))
                break;
        }
        n = k;
    }
    return n;
}

void tes__query_fields(const tes_query_t *q, const uint32_t *pos, const tes__slot_t *slot,
                       void **fields)
{
    const tes__table_t *table = slot ? tes__slot_table(q->w, slot) : NULL;
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes__term_info_t *t = &q->terms[i];
        fields[i] = NULL;
        if (!t->data)
            continue;
        if (t->sparse) {
            if (pos[i] != TES_NULL_INDEX)
                fields[i] = tes__sparse_store_at(&t->info->store, pos[i]);
        } else if (table) {
            int32_t col = tes__table_column_index(table, t->comp);
            if (col >= 0)
                fields[i] = tes__table_cell(table, (uint32_t)col, slot->row);
        }
    }
}

int32_t tes__query_driver(const tes_query_t *q)
{
    int32_t best = -1;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        if (t->oper == TES_AND &&
            (best < 0 || t->info->store.set.live < q->terms[best].info->store.set.live))
            best = i;
    }
    return best;
}
