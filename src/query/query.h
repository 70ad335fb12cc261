/*
 * Queries: a validated list of terms, the cache of tables that match the
 * table terms, the compiled per-entity matcher, and (optionally) a group.
 * Internal layout shared by query.c (creation, the matcher), iter.c (chunk
 * iteration), group.c (groups over sparse stores), gather.c (gathered
 * chunks of scattered values) and filter.c (the default filters' index).
 *
 * A query runs in one of three modes, chosen once at creation:
 * - TABLE: at least one AND term is a table component. The cache lists the
 *   matching tables; a chunk is a whole table (or, when sparse terms are
 *   present, a run of rows whose sparse fields are contiguous too).
 * - DRIVEN: every AND term is sparse. The smallest AND pool drives (seed 002
 *   a): its packed array is walked and the other terms are checked with the
 *   sparse set's branch-free contains; table filters are a per-table byte,
 *   or for sparse-only queries the filter index (filter.h): the positions
 *   of the few hidden entities, listed when an iteration starts, or one
 *   byte per entity when there are many.
 * - ALL: no AND term at all. Every table that passes the filters, plus the
 *   entities of the virtual root (read from the entity index).
 * A group (TES_QUERY_NONOWNING_GROUP / TES_QUERY_OWNING_GROUP) replaces the
 * mode's walk by a walk over the group's own list of matches.
 */
#ifndef TES_QUERY_QUERY_H
#define TES_QUERY_QUERY_H

#include "world/world.h"

typedef enum tes__query_mode {
    TES__QUERY_TABLE,
    TES__QUERY_DRIVEN,
    TES__QUERY_ALL
} tes__query_mode_t;

typedef struct tes__term_info {
    tes_comp_t comp;
    tes_oper_t oper;
    tes_access_t access;
    tes__component_t *info;
    bool sparse; /* stored in a sparse store */
    bool data;   /* has a field (size > 0 and not a NOT term) */
} tes__term_info_t;

/* One matching table and, per term, its column there (-1: no column). */
typedef struct tes__query_match {
    tes__table_t *table;
    int32_t column[TES_MAX_TERMS]; /* a table may have more than 32767 columns */
} tes__query_match_t;

typedef struct tes__group tes__group_t;

/* priv_phase of a detached chunk: an iterator built by the scheduler around
 * one chunk (or part of one) that a system runs on. It has fields but no
 * walk: tes_iter_next returns false and tes_iter_fini does nothing. */
#define TES__ITER_DETACHED UINT32_C(0xFFFFFFFF)

struct tes_query {
    tes_world_t *w;
    tes__term_info_t terms[TES_MAX_TERMS];
    int32_t term_count;
    uint32_t flags;
    tes__query_mode_t mode;
    bool has_sparse;      /* any term on a sparse component */
    bool skip_disabled;   /* default filter active for TES_DISABLED */
    bool skip_prefab;     /* default filter active for TES_PREFAB */
    tes__query_match_t *matches;
    uint32_t match_count;
    uint32_t match_cap;
    uint8_t *table_ok;    /* per table id: passes the table-level filters */
    uint32_t table_ok_cap;
    bool sparse_only;     /* every term is on a sparse component */
    uint8_t filter_mask;  /* TES__FILTER_* bits the default filters hide */
    struct tes__filters *filters; /* the world's filter index (sparse_only
                                     queries with a default filter) */
    bool and_only;        /* every term is an AND term */
    bool table_data;      /* some table term has a field */
    uint8_t sparse_terms[TES_MAX_TERMS]; /* indices of the sparse terms */
    int32_t sparse_count;
    uint8_t member_terms[TES_MAX_TERMS]; /* a group's packed-run terms */
    int32_t member_count; /* -1: members' runs need the general test */
    bool skip_tables;     /* the driven walk never reads entities' tables:
                             sparse-only, default filters by the filter index */
    uint32_t gather_k;    /* entities per gathered chunk of a group walk, 0:
                             the query never gathers (gather.h) */
    uint32_t gather_cap[TES_MAX_TERMS]; /* the same for a walk driven by term i */
    bool gather_and[TES_MAX_TERMS]; /* driven by term i, another AND term is
                                       sparse: its lookups reject tombstones */
    tes__group_t *group;
    /* A non-owning group asked for from inside a hook: built when the
     * structural call that ran the hook ends (until then the query walks
     * its tables or pools, with the same results). */
    bool group_pending;
    /* Iterators of this query that hold a deferral level (started and not
     * finished), so that a call refused while the world is deferred can
     * name the query of a loop left without tes_iter_fini. Atomic: several
     * threads may iterate one query at once. */
    _Atomic uint32_t iters_open;
};

/* Counts the terms of d into *count: those before the first term whose
 * component is 0. TES_OK, or TES_ERR_INVALID recorded in w (with a detail
 * naming both terms) when a term after that one is set, or that term has
 * an oper or access: an id that was never filled in, not an end. */
int tes__query_desc_terms(tes_world_t *w, const tes_query_desc_t *d, int32_t *count);

/* A walk over q's chunks, as an iteration yields them, without a deferral
 * level: for library code during which no user code runs (counting,
 * collecting matches), also from inside a structural call. Start, then
 * call next until it returns false; nothing to end. */
tes_iter_t tes__query_walk_start(tes_query_t *q);
bool tes__query_walk_next(tes_iter_t *it);

/* A chunk holds at most INT32_MAX entities (tes_iter_t.count is an
 * int32_t, and a sparse set or a group may hold more): the end of a chunk
 * that starts at pos and could run to end. */
static inline uint32_t tes__chunk_end(uint32_t pos, uint64_t end)
{
    uint64_t most = (uint64_t)pos + INT32_MAX;
    return (uint32_t)(end < most ? end : most);
}

/* True when table t passes the filters that do not depend on AND terms:
 * no table NOT term in its type, and the default filters. */
bool tes__query_table_ok(const tes_query_t *q, const tes__table_t *t);

/*
 * The per-entity matcher, compiled once per query: the list of sparse terms
 * (sparse_terms) and, per table, whether it passes the table-level terms
 * (table_ok; the table cache for TABLE mode). Every walk uses these three
 * functions and nothing else to decide membership and fields.
 */

/* The packed position of e in every sparse term's store (TES_NULL_INDEX
 * where absent) into pos; term `known` (-1: none) is already known to sit
 * at known_pos. False when e fails a sparse AND or NOT term. */
static inline bool tes__query_match_sparse(const tes_query_t *q, tes_entity_t e, int32_t known,
                                           uint32_t known_pos, uint32_t *pos)
{
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        uint32_t p = i == known ? known_pos : tes__sparse_set_find(&t->info->store.set, e);
        if ((t->oper == TES_AND && p == TES_NULL_INDEX) || (t->oper == TES_NOT && p != TES_NULL_INDEX))
            return false;
        pos[i] = p;
    }
    return true;
}

/* True when live-or-dead entity e matches a DRIVEN-mode query (every AND
 * term sparse): it is alive, its table passes, its sparse terms match
 * (positions into pos, which may be NULL). Groups decide membership by it. */
bool tes__query_match_entity(const tes_query_t *q, tes_entity_t e, uint32_t *pos);

/* True when e, k entities after the first of a run whose sparse positions
 * are `start`, extends the run: it satisfies the sparse terms (unless
 * `known`, for entities already known to match: group members) and each
 * sparse data field sits k values after the run's first, on the same data
 * page, or is absent in both. An AND term's check is one compare against
 * the store's packed array: a sequential read, where a lookup would chase
 * the sparse array. */
bool tes__query_run_continues(const tes_query_t *q, const uint32_t *start, uint32_t k,
                              tes_entity_t e, bool known);

/* The packed run (the fast case of tes__query_run_continues): given the
 * positions pos of entities[0] in the stores, how many of entities[0..limit)
 * sit at consecutive positions in the store of every term listed in
 * terms[0..n), stopping at the end of a store or of a data page, before a
 * tombstone, and before an entity the filter index hides (hide = the
 * query's mask, 0 to skip the test: pass a literal 0 so the inlined loop
 * has no test at all). The terms must be sparse AND terms:
 * for a driven walk of a sparse-only AND-only query all of them
 * (sparse_terms), for a group's members, known to match, the data terms
 * (member_terms). */
static inline uint32_t tes__query_packed_run(const tes_query_t *q, const uint8_t *terms, int32_t n,
                                             const uint32_t *pos, const tes_entity_t *entities,
                                             uint32_t limit, const uint8_t *tags, uint32_t tags_cap,
                                             uint8_t hide)
{
    const tes_entity_t *packed[TES_MAX_TERMS];
    for (int32_t s = 0; s < n; s++) {
        const tes__term_info_t *t = &q->terms[terms[s]];
        const tes__sparse_store_t *st = &t->info->store;
        uint32_t at = pos[terms[s]];
        packed[s] = st->set.packed + at;
        uint32_t room = st->set.count - at;
        if (t->data) {
            uint32_t page_end = ((at >> st->page_shift) + 1) << st->page_shift;
            if (page_end - at < room)
                room = page_end - at;
        }
        if (room < limit)
            limit = room;
    }
    uint32_t k = 1;
    for (; k < limit; k++) {
        tes_entity_t e = entities[k];
        uint32_t index = tes_entity_index(e);
        if (tes__sparse_is_tombstone(e) || /* a driver's own store "holds" it */
            (hide && index < tags_cap && (tags[index] & hide)))
            break;
        int32_t s = 0;
        while (s < n && packed[s][k] == e)
            s++;
        if (s < n)
            break;
    }
    return k < limit ? k : limit;
}

/* Points each sparse data term's field at position pos[i] of its store
 * (NULL where absent). */
void tes__query_sparse_fields(const tes_query_t *q, const uint32_t *pos, void **fields);

/* For walks that are not table walks (driven walks, groups): points each
 * table data term's field at entity's row in its table (NULL where the
 * table lacks it), and tells whether e, k entities after the run's first
 * (whose slot is `first`), keeps those fields contiguous: same table, k rows
 * further. Only queries with table_data need either. */
void tes__query_table_fields(const tes_query_t *q, const tes__slot_t *slot, void **fields);
static inline bool tes__query_rows_continue(const tes_query_t *q, const tes__slot_t *first,
                                            uint32_t k, const tes__slot_t *slot)
{
    return !q->table_data || (((slot->table ^ first->table) & TES__SLOT_TABLE_MASK) == 0 &&
                              slot->row == first->row + k);
}

/* Makes an iterator's fields stay valid after it moves on (the scheduler
 * keeps every chunk's fields of a frame): it then never gathers values
 * into its own buffer (gather.h). Call before the first tes_iter_next. */
#define TES__GATHER_OFF UINT32_MAX
static inline void tes__iter_keep_fields(tes_iter_t *it) { it->priv_gather_count = TES__GATHER_OFF; }

/* The sparse AND term with the fewest live entities (seed 002 a), or -1. */
int32_t tes__query_driver(const tes_query_t *q);

#endif
