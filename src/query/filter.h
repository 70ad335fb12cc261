/*
 * The filter index: what queries driven by sparse pools use to skip the
 * entities the default filters hide (TES_DISABLED, TES_PREFAB), without
 * reading any entity's table. Tuned for the common world, where a handful
 * of entities (a few prefabs, a few disabled ones) carry such a tag among
 * many that do not: there the filters must cost nothing per entity.
 *
 * Two structures, kept up to date together:
 * - the list: the indices of the tagged entities, a short dense array. An
 *   iteration that starts looks each of them up in its driving pool (one
 *   sparse lookup each) and sorts the positions it finds; the walk then
 *   steps over those positions and tests nothing per entity
 *   (tes__filters_positions). Indices leave the list lazily: an entity that
 *   loses its tag stays listed (with no tag bit) until the stale entries
 *   outnumber the tagged ones and the list is compacted: tagging and
 *   untagging cost O(1) amortised, and the list is at most about twice as
 *   long as the number of tagged entities.
 * - the bytes: per entity index, one byte of TES__FILTER_* bits. When too
 *   many entities carry a tag for the list to pay (more than
 *   TES__FILTER_LIST_MAX, or more than a fraction of the walked pool, or
 *   more hidden positions than the iterator holds), the walk falls back to
 *   testing each entity's byte.
 *
 * It exists once per world, created by the first query that needs it, and
 * is kept up to date by a world watcher subscribed to the two tags (plus
 * the whole-entity events every watcher hears: spawn, clone, clear,
 * destroy). Only the watcher writes it; iterations only read it, so walks
 * on several threads share it safely.
 */
#ifndef TES_QUERY_FILTER_H
#define TES_QUERY_FILTER_H

#include "world/world.h"

enum {
    TES__FILTER_DISABLED = 1,
    TES__FILTER_PREFAB = 2,
    TES__FILTER_TAGS = 3,  /* the two tags */
    TES__FILTER_LISTED = 4 /* the index is in the list (tagged or not) */
};

/* A listed entity costs a walk that starts about 20 instructions (its
 * byte, a sparse page and an entry: random reads, likely cache misses), an
 * entry the walk tests about 9 (sequential reads): the list is looked up
 * only while the walked pool has this many entries per listed index
 * (scan_ratio), so the lookups stay well below what the tests would cost. */
#define TES__FILTER_SCAN_RATIO 8u

/* The longest list (4 KiB of indices). Past it the index stops listing
 * (overflowed) until the tagged entities are down to a quarter of it. */
#define TES__FILTER_LIST_MAX 1024u

struct tes__filters {
    tes_world_t *w;
    uint8_t *tags;      /* per entity index: TES__FILTER_* bits */
    uint32_t cap;
    uint32_t tagged;    /* indices that carry a tag */
    uint32_t disabled;  /* indices that carry TES_DISABLED */
    uint32_t prefabs;   /* indices that carry TES_PREFAB */
    uint32_t *list;     /* TES__FILTER_LIST_MAX entries, listed_count used */
    uint32_t listed_count;
    bool overflowed;    /* the list is not kept: walks test every entity */
    uint32_t scan_ratio; /* TES__FILTER_SCAN_RATIO (tests set 0: the list
                            is looked up whenever it is kept) */
};

/* The world's filter index, created on first use. TES_OK or TES_ERR_NOMEM
 * (nothing created). */
int tes__filters_use(tes_world_t *w, struct tes__filters **out);

/* True when some live entity carries a tag in mask. */
static inline bool tes__filters_any(const struct tes__filters *f, uint8_t mask)
{
    return ((mask & TES__FILTER_DISABLED) && f->disabled) ||
           ((mask & TES__FILTER_PREFAB) && f->prefabs);
}

/* True when live entity e carries a tag in mask. */
static inline bool tes__filters_hide(const struct tes__filters *f, uint8_t mask, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    return index < f->cap && (f->tags[index] & mask);
}

/* tes__filters_positions could not list the positions: test each entity. */
#define TES__FILTERS_TEST UINT32_MAX

/* The packed positions in `pool` of the live entities that carry a tag in
 * mask, ascending, into out[0..cap); returns how many, or
 * TES__FILTERS_TEST when there are more than cap, when the index has
 * overflowed, or when looking up the listed entities would cost more than
 * testing each of the pool's entries. O(listed entities); reads only. */
uint32_t tes__filters_positions(const struct tes__filters *f, uint8_t mask,
                                const tes__sparse_set_t *pool, uint32_t *out, uint32_t cap);

/* The filter index's invariants against the entity index (tests and the
 * fuzzer): each live entity's byte, the counts, the list. TES_OK, or
 * TES_ERR_INVALID after printing the first broken one to stderr; TES_OK
 * for a world without an index. */
int tes__filters_check(const tes_world_t *w);

#endif
