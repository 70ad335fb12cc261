/*
 * Queries: a validated list of terms, the cache of tables that match the
 * table terms, and (optionally) a group. Internal layout shared by
 * query.c (creation, matching, counting), iter.c (chunk iteration) and
 * group.c (groups over sparse stores).
 *
 * A query runs in one of three modes, chosen once at creation:
 * - TABLE: at least one AND term is a table component. The cache lists the
 *   matching tables; a chunk is a whole table (or, when sparse terms are
 *   present, a run of rows whose sparse fields are contiguous too).
 * - DRIVEN: every AND term is sparse. The smallest AND pool drives (seed 002
 *   a): its packed array is walked and the other terms are checked with the
 *   sparse set's branch-free contains; table filters are a per-table byte.
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
    uint32_t tables_failing; /* tables whose table_ok is 0 */
    bool sparse_only;     /* every term is on a sparse component */
    bool and_only;        /* every term is an AND term */
    tes__group_t *group;
    /* A non-owning group asked for from inside a hook: built by the first
     * tes_query_iter / tes_query_count outside hooks (until then the query
     * walks its tables or pools, with the same results). */
    bool group_pending;
};

/* A walk over q's chunks, as an iteration yields them, without a deferral
 * level: for library code during which no user code runs (counting,
 * collecting matches), also from inside a structural call. Start, then
 * call next until it returns false; nothing to end. */
tes_iter_t tes__query_walk_start(tes_query_t *q);
bool tes__query_walk_next(tes_iter_t *it);

/* Builds a pending group if no hook runs; on failure (no memory) it stays
 * pending and the query keeps working without it. */
void tes__query_settle_group(tes_query_t *q);

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

/* True when live entity e satisfies every term (used by DRIVEN and ALL
 * modes and by groups). Fills ptrs[term] with the field address of each
 * data term (NULL for absent optional terms) when ptrs is not NULL. */
bool tes__query_match_entity(const tes_query_t *q, tes_entity_t e, void **ptrs);

/* True when the fields `next` continue a run whose last entity had fields
 * `prev`: every data term (every sparse one, with sparse_only) is one value
 * further, or absent in both. The test that cuts chunks in per-entity walks. */
bool tes__query_contiguous(const tes_query_t *q, void *const *prev, void *const *next,
                           bool sparse_only);

#endif
