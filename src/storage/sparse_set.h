/*
 * A paged sparse set of entities, as seed 001 describes.
 *
 * The sparse array maps an entity index to a 64-bit entry holding the
 * entity's packed position (low 32 bits) AND its generation (high 32 bits).
 * An empty entry holds the null index with the tombstone generation (all
 * ones). Membership is then one page check plus one branch-free XOR and
 * compare: (generation bits of e) ^ entry is below TES_NULL_INDEX only when
 * the generations match and the position is not null. A stale handle, a
 * never-added entity and an empty entry all fail the same compare.
 *
 * The sparse array is paged (4096 entries, 32 KiB a page) and pages are
 * allocated on first touch, so a set holding a few entities with large
 * indices stays small. The packed array holds full entity handles.
 *
 * Reads go through a second table beside the page pointers: bases[p] is
 * the address of page p minus p * 32 KiB, so entry i is at bases[i >> 12]
 * + i * 8 with no mask, and a page never touched has the base of a shared
 * read-only page of empty entries instead of a NULL to test. Random reads
 * are bound by how many of them the processor keeps in flight, which each
 * read's instructions limit (a reorder buffer holds fewer reads the longer
 * each one is), so these two instructions fewer per read are worth 16 bytes
 * per page pointer instead of 8. Writers still use `pages` (NULL = absent).
 *
 * Two deletion policies:
 * - swap-and-pop keeps the packed array dense (the last entity moves into
 *   the hole; its data must move too);
 * - in-place deletion writes a tombstone into the packed slot (generation
 *   TES_TOMBSTONE, index = next free packed slot), threading the holes into
 *   an implicit free list that the next insert reuses. Nothing else moves,
 *   which is what gives stable components their fixed addresses. Iteration
 *   skips tombstones; tes__sparse_set_compact squeezes them out on request.
 */
#ifndef TES_STORAGE_SPARSE_SET_H
#define TES_STORAGE_SPARSE_SET_H

#include "core/alloc.h"
#include "core/assert.h"

#define TES__SPARSE_PAGE_BITS 12
#define TES__SPARSE_PAGE_SIZE (UINT32_C(1) << TES__SPARSE_PAGE_BITS)
#define TES__SPARSE_PAGE_MASK (TES__SPARSE_PAGE_SIZE - 1)
/* An empty sparse entry: null position, tombstone generation. */
#define TES__SPARSE_EMPTY UINT64_MAX

typedef struct tes__sparse_set {
    uint64_t **pages;      /* sparse pages, NULL until first touched */
    /* Biased page addresses for reads (see above); length page_count, in
     * the same block as `pages`. */
    uintptr_t *bases;
    uint32_t page_count;   /* length of `pages` and of `bases` */
    uint32_t count;        /* packed slots in use, tombstones included */
    uint32_t cap;          /* packed capacity */
    uint32_t live;         /* live entities (count minus tombstones) */
    uint32_t free_head;    /* first tombstoned packed slot, or TES_NULL_INDEX */
    tes_entity_t *packed;
} tes__sparse_set_t;

/* 4096 empty entries (all ones), shared read-only by every set: the page
 * that `bases` names for an index whose page was never allocated. A
 * function rather than a global so that the single-file build can make it
 * static with every other internal name. */
const uint64_t *tes__sparse_empty_page(void);

/* The read base of page p whose entries start at `entries`: the address
 * entry index i would have if pages were one array. Unsigned arithmetic:
 * it may wrap, and wraps back when i * 8 is added. */
static inline uintptr_t tes__sparse_base_of(const uint64_t *entries, uint32_t page)
{
    return (uintptr_t)entries - ((uintptr_t)page << TES__SPARSE_PAGE_BITS) * sizeof(uint64_t);
}

void tes__sparse_set_init(tes__sparse_set_t *s);
void tes__sparse_set_fini(tes__sparse_set_t *s, tes__alloc_t *a);

static inline bool tes__sparse_is_tombstone(tes_entity_t packed_entry)
{
    return tes_entity_generation(packed_entry) == TES_TOMBSTONE;
}

/* Where index's entry is, read through a set's biased `bases`, for an
 * index whose page is below the set's page_count (an absent page reads
 * the shared empty page). Takes the bases rather than the set so a loop
 * can keep them in a register. */
static inline const uint64_t *tes__sparse_entry_at(const uintptr_t *bases, uint32_t index)
{
    return (const uint64_t *)(bases[index >> TES__SPARSE_PAGE_BITS] +
                              (uintptr_t)index * sizeof(uint64_t));
}

/* The entry for an index, TES__SPARSE_EMPTY when its page is absent (an
 * absent page below page_count reads the shared empty page). */
static inline uint64_t tes__sparse_entry(const tes__sparse_set_t *s, uint32_t index)
{
    if ((index >> TES__SPARSE_PAGE_BITS) >= s->page_count)
        return TES__SPARSE_EMPTY;
    return *tes__sparse_entry_at(s->bases, index);
}

/* The sparse page holding index's entry, NULL when it is absent. */
static inline uint64_t *tes__sparse_set_page(const tes__sparse_set_t *s, uint32_t index)
{
    uint32_t page = index >> TES__SPARSE_PAGE_BITS;
    return page < s->page_count ? s->pages[page] : NULL;
}

/* Seed 001's contains: presence and generation in one compare. */
static inline bool tes__sparse_set_contains(const tes__sparse_set_t *s, tes_entity_t e)
{
    uint64_t entry = tes__sparse_entry(s, tes_entity_index(e));
    return ((e & ~(uint64_t)TES_NULL_INDEX) ^ entry) < TES_NULL_INDEX;
}

/* Packed position of e, or TES_NULL_INDEX if e is not in the set. */
static inline uint32_t tes__sparse_set_find(const tes__sparse_set_t *s, tes_entity_t e)
{
    uint64_t entry = tes__sparse_entry(s, tes_entity_index(e));
    return ((e & ~(uint64_t)TES_NULL_INDEX) ^ entry) < TES_NULL_INDEX ? (uint32_t)entry
                                                                        : TES_NULL_INDEX;
}

/* The packed position the next insert will use. */
static inline uint32_t tes__sparse_set_next_pos(const tes__sparse_set_t *s, bool reuse_holes)
{
    return reuse_holes && s->free_head != TES_NULL_INDEX ? s->free_head : s->count;
}

/* Makes sure the sparse page for `index` exists. TES_OK or TES_ERR_NOMEM. */
int tes__sparse_set_reserve_index(tes__sparse_set_t *s, tes__alloc_t *a, uint32_t index);
/* Makes room for `extra` more packed slots. TES_OK or TES_ERR_NOMEM. */
int tes__sparse_set_reserve_packed(tes__sparse_set_t *s, tes__alloc_t *a, uint32_t extra);

/* Writes the sparse entry of an index whose page exists. */
static inline void tes__sparse_set_entry_write(tes__sparse_set_t *s, uint32_t index, uint64_t entry)
{
    uint64_t *page = s->pages[index >> TES__SPARSE_PAGE_BITS];
    tes__assert(page);
    page[index & TES__SPARSE_PAGE_MASK] = entry;
}

/* Inserts e (which must not be present) into reserved room and returns its
 * packed position. With reuse_holes the tombstone free list is used first. */
static inline uint32_t tes__sparse_set_insert(tes__sparse_set_t *s, tes_entity_t e, bool reuse_holes)
{
    tes__assert(!tes__sparse_set_contains(s, e));
    uint32_t pos;
    if (reuse_holes && s->free_head != TES_NULL_INDEX) {
        pos = s->free_head;
        s->free_head = tes_entity_index(s->packed[pos]);
    } else {
        tes__assert(s->count < s->cap);
        pos = s->count++;
    }
    s->packed[pos] = e;
    s->live++;
    tes__sparse_set_entry_write(s, tes_entity_index(e), (e & ~(uint64_t)TES_NULL_INDEX) | pos);
    return pos;
}

/* Swap-and-pop: removes e, which sits at packed position pos. If pos was
 * not the last slot, the last entity now sits there (its data must be moved
 * from position s->count to pos). */
static inline void tes__sparse_set_swap_remove(tes__sparse_set_t *s, tes_entity_t e, uint32_t pos)
{
    tes__assert(pos == tes__sparse_set_find(s, e));
    tes__assert(s->free_head == TES_NULL_INDEX); /* swap-pop sets hold no tombstones */
    uint32_t last = --s->count;
    if (pos != last) {
        tes_entity_t moved = s->packed[last];
        s->packed[pos] = moved;
        tes__sparse_set_entry_write(s, tes_entity_index(moved), (moved & ~(uint64_t)TES_NULL_INDEX) | pos);
    }
    tes__sparse_set_entry_write(s, tes_entity_index(e), TES__SPARSE_EMPTY);
    s->live--;
}

/* The single-lookup forms of insert and swap-and-pop, for callers that
 * have already read e's entry (to test membership) and keep its address:
 * the sparse page is not looked up again. */

/* Appends e (absent; no tombstone to reuse; a packed slot free) at the end
 * of the packed array and returns its position. entry is e's sparse entry. */
static inline uint32_t tes__sparse_set_append_at(tes__sparse_set_t *s, tes_entity_t e,
                                                 uint64_t *entry)
{
    tes__assert(s->free_head == TES_NULL_INDEX && s->count < s->cap);
    tes__assert(entry == &s->pages[tes_entity_index(e) >> TES__SPARSE_PAGE_BITS]
                              [tes_entity_index(e) & TES__SPARSE_PAGE_MASK]);
    uint32_t pos = s->count++;
    s->packed[pos] = e;
    s->live++;
    *entry = (e & ~(uint64_t)TES_NULL_INDEX) | pos;
    return pos;
}

/* Swap-and-pop of the member whose sparse entry is *entry; returns the
 * position it held. If that was not the last slot, the last entity now
 * sits there (its data must move from position s->count to it). */
static inline uint32_t tes__sparse_set_swap_remove_at(tes__sparse_set_t *s, uint64_t *entry)
{
    tes__assert(s->free_head == TES_NULL_INDEX); /* swap-pop sets hold no tombstones */
    uint32_t pos = (uint32_t)*entry, last = --s->count;
    *entry = TES__SPARSE_EMPTY;
    s->live--;
    if (pos != last) {
        tes_entity_t moved = s->packed[last];
        s->packed[pos] = moved;
        tes__sparse_set_entry_write(s, tes_entity_index(moved),
                                    (moved & ~(uint64_t)TES_NULL_INDEX) | pos);
    }
    return pos;
}

/* In-place: tombstones e's packed slot pos, threading it into the free list. */
void tes__sparse_set_tomb_remove(tes__sparse_set_t *s, tes_entity_t e, uint32_t pos);

/* Exchanges the entities at packed positions a and b (both live). */
static inline void tes__sparse_set_swap(tes__sparse_set_t *s, uint32_t a, uint32_t b)
{
    tes_entity_t ea = s->packed[a], eb = s->packed[b];
    s->packed[a] = eb;
    s->packed[b] = ea;
    tes__sparse_set_entry_write(s, tes_entity_index(ea), (ea & ~(uint64_t)TES_NULL_INDEX) | b);
    tes__sparse_set_entry_write(s, tes_entity_index(eb), (eb & ~(uint64_t)TES_NULL_INDEX) | a);
}

/* First live packed position at or after pos (s->count when none). */
static inline uint32_t tes__sparse_set_next_live(const tes__sparse_set_t *s, uint32_t pos)
{
    while (pos < s->count && tes__sparse_is_tombstone(s->packed[pos]))
        pos++;
    return pos;
}

/* Moves live entities into the tombstoned holes so the packed array becomes
 * dense, calling move(ctx, from, to) for each relocated position so the
 * owner can move its data. Returns how many entities moved. */
uint32_t tes__sparse_set_compact(tes__sparse_set_t *s,
                                 void (*move)(void *ctx, uint32_t from, uint32_t to), void *ctx);

#endif
