/*
 * Queries: a validated list of terms, the cache of tables that match the
 * table terms, the per-entity matcher, and (optionally) a group. Internal
 * layout shared by the query layer, whose files stand on each other in
 * this order, from the ground up (none calls a file above it):
 * - query.c: the table cache and the matcher (with the sparse change
 *   filters' stamp test), below every walk; filter.c (the default
 *   filters' index) beside it;
 * - changes_iter.c (change filters, the change-filtered walk, stamping),
 *   group.c (groups over sparse stores, the owned walk) and gather.c
 *   (gathered chunks of scattered values);
 * - base_walk.c: the start that chooses a walk, the table, root and
 *   packed walks, and the step of every walk but the by-depth one;
 * - cascade_iter.c (with cascade_keep.c and cascade_sorted.c): the
 *   by-depth walk, which collects its matches with a base walk;
 * - iter.c: the public iteration, which steps the by-depth walk or a base
 *   walk;
 * - create.c (making and freeing a query, which takes every part above)
 *   and destroy_matching.c.
 *
 * Membership has two halves, each decided in one place:
 * - per table: the table terms and the default filters, a byte per table
 *   (table_ok) and, for queries with a table AND term, the cache of
 *   matching tables (matches), both kept by tes__query_on_table in query.c;
 * - per entity: the sparse terms, by tes__query_match below, the one
 *   matcher every walk and every group asks. It answers for a run of
 *   entities at once: how many of them match and keep every field a plain
 *   array, so it also draws each chunk's bounds.
 *
 * The walks yield the chunks. One is chosen when an iteration starts
 * (tes_iter_t.priv_phase, the TES__WALK_* values below, by tes__walk_start
 * in base_walk.h) and only the table walk of a query without AND terms
 * moves on, to the root walk. Which entities a chunk holds is always the
 * matcher's answer, or the table cache's where no term is per entity; the
 * walks differ in where their entities come from:
 * - table walk (base_walk.c; a table AND term, or no AND term at all): the
 *   cache's tables in order, empty ones skipped. Without sparse terms
 *   (WHOLE) a chunk is a whole table, the only per-chunk work being one
 *   load per field; with them (TABLES) the runs of rows the matcher
 *   accepts;
 * - change-filtered table walk (changes_iter.c; a term with a change
 *   filter): the same tables, in runs of rows whose stamps pass every
 *   filter, then cut by the matcher when there are sparse terms;
 * - root walk (base_walk.c; no AND term): after the tables, the entities
 *   of the virtual root read from the entity index, in runs the matcher
 *   accepts;
 * - packed walk (base_walk.c): runs of a packed array of entities that the
 *   matcher accepts: the smallest AND pool when every AND term is sparse
 *   (seed 002 a), or, for a non-owning group, a pool that holds exactly its
 *   members or else its own member set (the entities are then known to
 *   match and the matcher only locates their fields). Short runs of
 *   scattered values become gathered chunks where the query allows it
 *   (gather.h: an overlay on this walk, not a walk of its own);
 * - owned walk (group.c): an owning group's prefix, slices of every owned
 *   store;
 * - by-depth walk (cascade_iter.c; TES_QUERY_CASCADE or a parent term):
 *   collects the matches with the walk the query would otherwise use,
 *   sorts them by depth, and hands out runs of one depth that the matcher
 *   keeps contiguous.
 * Internal callers (counting, tes_destroy_matching) use the same walks
 * through tes__query_walk_start/next (iter.h), without a deferral level;
 * the by-depth walk's collection uses tes__query_base_start/next
 * (base_walk.h).
 */
#ifndef TES_QUERY_QUERY_H
#define TES_QUERY_QUERY_H

#include "world/world.h"

/* Chosen once at creation: TABLE has a table AND term (table walk),
 * DRIVEN only sparse AND terms (packed walk), ALL no AND term (table walk,
 * then root walk). */
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
    tes_change_t change; /* the term's change filter (changes_iter.c) */
    /* A TES_SRC_PARENT term: about the entity's parent. The self matcher,
     * the table cache and the walks ignore it (data and sparse are false,
     * the table filters skip it); only the by-depth walk (cascade_iter.c)
     * reads it. */
    bool parent;
} tes__term_info_t;

/* One matching table and, per term, its column there (-1: no column), and
 * where that column keeps its data pointer: the whole-table walk's field
 * is *data[i], without a test (a term without a column there points at a
 * NULL). A table's column array never moves, only the data it points at. */
typedef struct tes__query_match {
    tes__table_t *table;
    uint8_t *const *data[TES_MAX_TERMS]; /* beside table: one line for a few terms */
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
    bool table_data;      /* some table term has a field */
    uint8_t sparse_terms[TES_MAX_TERMS]; /* indices of the sparse terms */
    int32_t sparse_count;
    bool skip_tables;     /* the packed walk never reads entities' tables:
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
    /* tes_iter_next's fast path (a whole table per chunk, nothing else to
     * do): no sparse term, no change filter, no tracked term to stamp. */
    bool whole_tables;
    /* Change detection (changes_iter.c): the terms with a change filter,
     * the tracked terms a chunk stamps (TES_INOUT/TES_OUT), and the tick
     * at which this query's previous iteration ended. */
    uint8_t change_terms[TES_MAX_TERMS]; /* table terms: the change walk's */
    int32_t change_count;
    uint8_t sparse_change_terms[TES_MAX_TERMS]; /* sparse terms: the matcher's */
    int32_t sparse_change_count;
    bool change_window; /* some change term: iterations advance the tick */
    uint8_t stamp_terms[TES_MAX_TERMS];
    int32_t stamp_count;
    _Atomic uint32_t change_last;
    _Atomic bool change_ended; /* some iteration's window has ended */
    /* The by-depth walk (cascade_iter.c): TES_QUERY_CASCADE or a parent
     * term. Its iterations order matches by depth and read parents. */
    bool cascade_walk;
    uint8_t parent_terms[TES_MAX_TERMS];
    int32_t parent_count;
    /* The state of the last by-depth iteration that ended, reused by the
     * next (cascade_iter.c); released with the query. */
    _Atomic(struct cascade *) cascade_spare;
};

/* The table cache (query.c). Fills q's filter bytes and cache from the
 * world's tables (after its terms are set up): TES_OK or TES_ERR_NOMEM
 * (not recorded; what was filled is freed with the query). */
int tes__query_cache_fill(tes_query_t *q);
/* The table graph's listener that keeps them for every new table
 * (ctx: q): reserves room (commit false) or records the table. */
int tes__query_on_table(void *ctx, tes__table_t *t, bool commit);

/* Counts the terms of d into *count (create.c): those before the first term whose
 * component is 0. TES_OK, or TES_ERR_INVALID recorded in w (with a detail
 * naming both terms) when a term after that one is set, or that term has
 * an oper or access: an id that was never filled in, not an end. */
int tes__query_desc_terms(tes_world_t *w, const tes_query_desc_t *d, int32_t *count);

/* A chunk holds at most INT32_MAX entities (tes_iter_t.count is an
 * int32_t, and a sparse set or a group may hold more): the end of a chunk
 * that starts at pos and could run to end. */
static inline uint32_t tes__chunk_end(uint32_t pos, uint64_t end)
{
    uint64_t most = (uint64_t)pos + INT32_MAX;
    return (uint32_t)(end < most ? end : most);
}

/* Whether slot s holds an entity of the virtual root (no table component)
 * that the root walk yields: alive and not a spawn still pending. Read by
 * the root walk and by tes_destroy_matching's own pass over root
 * entities, so that both see the same entities. */
static inline bool tes__slot_is_root_match(const tes__slot_t *s)
{
    return s->table != TES__SLOT_FREE && (s->table & TES__SLOT_TABLE_MASK) == 0 &&
           s->row != TES__ROW_PENDING;
}

/* The walks (tes_iter_t.priv_phase of a live iteration), chosen once when
 * it starts (base_walk.h); only the table walk of a query without AND terms
 * moves on, to the root walk. A zeroed iterator reads as TABLES without a
 * query; a finished one is DONE, so that tes_iter_next's test for the
 * whole-table walk is also its test for "not finished". */
enum {
    TES__WALK_TABLES, /* table walk with sparse terms, or stamping chunks */
    TES__WALK_WHOLE,  /* table walk, a whole table per chunk (q->whole_tables) */
    TES__WALK_ROOT,
    TES__WALK_PACKED,
    TES__WALK_OWNED,
    TES__WALK_CHANGES, /* change-filtered table walk (changes_iter.c) */
    TES__WALK_CASCADE,
    TES__WALK_DONE
};

/* How a walk asks the matcher (tes__match_t.how). */
enum {
    /* Read each entity's slot: it must be alive and its table pass
     * table_ok (unless KNOWN), and for a query with table data the rows
     * must follow each other in one table. For walks of packed arrays
     * whose entities' tables are not known to pass, and for group
     * membership. */
    TES__MATCH_TABLE = 1,
    /* The entities are known to match (a group's members): no term is
     * tested, only the data terms are located and kept contiguous. */
    TES__MATCH_KNOWN = 2
};

/* A question to the matcher, and the first entity's answers. */
typedef struct tes__match {
    uint32_t how;     /* TES__MATCH_* */
    uint8_t hide;     /* filter-index bits (filter.h) tested per entity, 0: none */
    int32_t driver;   /* the term whose packed array the entities are (-1: none):
                         its position is pos[driver], set by the caller, and its
                         tombstones end runs */
    uint32_t pos[TES_MAX_TERMS]; /* the first entity's packed position in each
                                    sparse term's store, TES_NULL_INDEX where
                                    absent (only data terms when KNOWN) */
    const tes__slot_t *slot;     /* TES__MATCH_TABLE: the first entity's slot */
    /* Change filters on sparse terms (changes_iter.h sets them for a
     * walk): when `changes`, an entity matches only if its stamps in every
     * sparse change term are newer than `since`. Zero-initialised: none. */
    bool changes;
    uint32_t since;
} tes__match_t;

/*
 * The per-entity matcher: how many of entities[0..n) (n >= 1), from the
 * first, match q and form one chunk with it, 0 when entities[0] does not
 * match. An entity matches when it passes the filter bits m->hide, with
 * TES__MATCH_TABLE when it is alive and its table passes, and when every
 * sparse AND term holds it and no sparse NOT term does (the table terms
 * are the caller's: a table walk's tables are in the cache). It joins the
 * chunk when, besides, each sparse data term's value sits k positions after
 * the first entity's on the same data page (or is absent for both), its
 * table row follows (TES__MATCH_TABLE with table data), and it is not a
 * tombstone of the driver, and (m->changes) when its sparse change terms'
 * stamps are newer than m->since. The first entity's positions and slot
 * go to m.
 * The first entity costs a lookup per sparse term; the rest cost one
 * sequential compare per data term (the packed arrays are read in order,
 * term by term) and a presence test per tag or NOT term.
 */
uint32_t tes__query_match(const tes_query_t *q, tes__match_t *m, const tes_entity_t *entities,
                          uint32_t n);

/* Points each sparse data term's field at position pos[i] of its store
 * (NULL where absent), and each table term's at slot's row of its table
 * (NULL where the table lacks it, or every table term's when slot is NULL:
 * entities without table data). */
void tes__query_fields(const tes_query_t *q, const uint32_t *pos, const tes__slot_t *slot,
                       void **fields);

/* Makes an iterator's fields stay valid after it moves on (the scheduler
 * keeps every chunk's fields of a frame): it then never gathers values
 * into its own buffer (gather.h). Call before the first tes_iter_next. */
#define TES__GATHER_OFF UINT32_MAX
static inline void tes__iter_keep_fields(tes_iter_t *it) { it->priv_gather_count = TES__GATHER_OFF; }

/* The sparse AND term with the fewest live entities (seed 002 a), or -1. */
int32_t tes__query_driver(const tes_query_t *q);

#endif
