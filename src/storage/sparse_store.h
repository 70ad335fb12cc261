/*
 * A sparse component store: a sparse set plus the component data, kept in
 * fixed-size pages indexed by packed position. Growing the store adds pages
 * and never moves a component, so the only thing that moves data is the
 * deletion policy:
 * - stable components delete in place (tombstones, reused by later inserts):
 *   a component's address is fixed from add to remove;
 * - other components swap-and-pop: the last component moves into the hole
 *   (with the move hook), so a pointer to it becomes invalid.
 * Tags (size 0) store no data at all: the store is then just the set.
 *
 * Tuned for cheap add/remove and O(1) random access by entity: a lookup is
 * the set's branch-free contains plus one page index. As in the set, reads
 * use biased bases (bases[k] = address of page k minus its first
 * position's offset, k << page_shift values), so the value at position p
 * is at bases[p >> page_shift] + p * size: no mask on the way to the value.
 */
#ifndef TES_STORAGE_SPARSE_STORE_H
#define TES_STORAGE_SPARSE_STORE_H

#include <stdatomic.h>

#include "core/bytes.h"
#include "storage/sparse_set.h"

/* Target size of one data page. Large pages make long chunks for owning
 * groups and sparse views (fewer chunk boundaries per million entities);
 * the price is up to 64 KiB for a store that holds a single component. */
#define TES__STORE_PAGE_BYTES 65536u

typedef struct tes__sparse_store {
    tes__sparse_set_t set;
    uint8_t **pages;     /* data pages, allocated as positions reach them */
    uintptr_t *bases;    /* biased page addresses for reads, in the block of `pages` */
    uint32_t page_count;
    uint32_t page_cap;   /* room in `pages` and in `bases` */
    uint32_t size;       /* bytes per component, 0 for tags */
    uint32_t page_shift; /* log2 of components per page */
    uint32_t page_mask;  /* components per page - 1 (a position's slot in its page) */
    bool stable;         /* in-place deletion */
    /* Change detection (a tracked component; world/changes.h): `tick` is
     * the world's clock, NULL for an untracked store, which skips every
     * stamp path below. Each data page then has a stamp page (in
     * `stamp_pages`, which shares the block of `pages`): a "changed" tick
     * per position, then an "added" tick per position, then a summary word
     * per TES__STORE_STAMP_BLOCK positions, which is at least (modulo 2^32,
     * counted back from now) every "changed" tick of its block: raised by
     * every stamp and every value moved in, never lowered, so it always
     * bounds them. Stamps move with the values (swap-and-pop, swaps,
     * compaction); a tombstone's are meaningless. */
    uint32_t **stamp_pages;
    const _Atomic uint32_t *tick;
} tes__sparse_store_t;

/* Positions per summary word of a tracked store's stamp page. */
#define TES__STORE_STAMP_BITS 6u
#define TES__STORE_STAMP_BLOCK (1u << TES__STORE_STAMP_BITS)

/* log2 of the values a data page holds for this size (0 for tags): the
 * store's page_shift, as a function of the size alone so that code made
 * for one size gets it as a constant. */
static inline uint32_t tes__sparse_store_shift_for(uint32_t size)
{
    uint32_t shift = 0;
    while (size && ((uint64_t)size << (shift + 1)) <= TES__STORE_PAGE_BYTES)
        shift++;
    return shift;
}

void tes__sparse_store_init(tes__sparse_store_t *st, uint32_t size, bool stable);
/* Makes an empty store (no page yet) keep stamps, read from `tick`. */
static inline void tes__sparse_store_track(tes__sparse_store_t *st, const _Atomic uint32_t *tick)
{
    st->tick = tick;
}

/* Positions per data page, and the summary words of a stamp page. */
static inline uint32_t tes__store_stamp_per(const tes__sparse_store_t *st)
{
    return UINT32_C(1) << st->page_shift;
}
/* The "changed" tick of position pos ("added" is tes__store_stamp_per
 * words further). */
static inline uint32_t *tes__sparse_store_stamp(const tes__sparse_store_t *st, uint32_t pos)
{
    return st->stamp_pages[pos >> st->page_shift] + (pos & st->page_mask);
}
/* The summary word of pos's block. */
static inline _Atomic uint32_t *tes__sparse_store_sum(const tes__sparse_store_t *st, uint32_t pos)
{
    uint32_t *page = st->stamp_pages[pos >> st->page_shift];
    return (_Atomic uint32_t *)(void *)(page + 2 * tes__store_stamp_per(st) +
                                        ((pos & st->page_mask) >> TES__STORE_STAMP_BITS));
}
/* Stamps pos as changed now (and as added too when `added`). */
static inline void tes__sparse_store_stamp_now(const tes__sparse_store_t *st, uint32_t pos, bool added)
{
    uint32_t now = atomic_load_explicit(st->tick, memory_order_relaxed);
    uint32_t *s = tes__sparse_store_stamp(st, pos);
    s[0] = now;
    if (added)
        s[tes__store_stamp_per(st)] = now;
    atomic_store_explicit(tes__sparse_store_sum(st, pos), now, memory_order_relaxed);
}
/* Copies the stamps of position `from` to `to`, raising to's summary. */
void tes__sparse_store_stamp_move(const tes__sparse_store_t *st, uint32_t to, uint32_t from);
/* Exchanges the stamps of positions a and b, raising both summaries. */
void tes__sparse_store_stamp_swap(const tes__sparse_store_t *st, uint32_t a, uint32_t b);
/* Stamps positions [0, count) as added now (a store filled directly, by a
 * snapshot load). */
void tes__sparse_store_stamp_all(tes__sparse_store_t *st);
/* Releases memory; runs no destructors (the caller does that first). */
void tes__sparse_store_fini(tes__sparse_store_t *st, tes__alloc_t *a);

/* The read base of data page k starting at `page`, for values of `size`
 * bytes and pages of 1 << shift values (wrapping unsigned arithmetic). */
static inline uintptr_t tes__sparse_store_base_of(const uint8_t *page, uint32_t k, uint32_t shift,
                                                  uint32_t size)
{
    return (uintptr_t)page - ((uintptr_t)k << shift) * size;
}

/* Where the value at packed position pos is, read through a store's
 * biased `bases` (pages of 1 << shift values of `size` bytes). Takes the
 * fields rather than the store so a loop can keep them in registers. */
static inline void *tes__sparse_value_at(const uintptr_t *bases, uint32_t shift, uint32_t size,
                                         uint32_t pos)
{
    return (void *)(bases[pos >> shift] + (uintptr_t)pos * size);
}

/* Data of the component at packed position pos. */
static inline void *tes__sparse_store_at(const tes__sparse_store_t *st, uint32_t pos)
{
    return tes__sparse_value_at(st->bases, st->page_shift, st->size, pos);
}

/* e's component data, NULL if e has none (or the component is a tag). */
static inline void *tes__sparse_store_get(const tes__sparse_store_t *st, tes_entity_t e)
{
    uint32_t pos = tes__sparse_set_find(&st->set, e);
    if (pos == TES_NULL_INDEX || !st->size)
        return NULL;
    return tes__sparse_store_at(st, pos);
}

/* Makes the next `n` inserts succeed for entities whose indices are
 * produced by next_index(ctx) (called n times; NULL means a single index
 * given in `index`). TES_OK or TES_ERR_NOMEM, with nothing observable
 * changed. */
int tes__sparse_store_reserve(tes__sparse_store_t *st, tes__alloc_t *a, uint32_t n,
                              uint32_t index, uint32_t (*next_index)(void *ctx), void *ctx);

/* Makes the packed array and the data pages cover positions [0, count),
 * for a caller that fills positions directly (snapshot loading). TES_OK or
 * TES_ERR_NOMEM. */
int tes__sparse_store_reserve_positions(tes__sparse_store_t *st, tes__alloc_t *a, uint32_t count);

/* Inserts e into reserved room; returns its raw (unconstructed) data, or
 * NULL for a tag. */
static inline void *tes__sparse_store_insert(tes__sparse_store_t *st, tes_entity_t e)
{
    uint32_t pos = tes__sparse_set_insert(&st->set, e, st->stable);
    if (st->tick)
        tes__sparse_store_stamp_now(st, pos, true);
    return st->size ? tes__sparse_store_at(st, pos) : NULL;
}


/* True when inserting an entity with this index needs no allocation (the
 * common case, checked inline before calling tes__sparse_store_reserve). */
static inline bool tes__sparse_store_has_room(const tes__sparse_store_t *st, uint32_t index)
{
    uint32_t page = index >> TES__SPARSE_PAGE_BITS;
    if (page >= st->set.page_count || !st->set.pages[page])
        return false;
    uint32_t pos = tes__sparse_set_next_pos(&st->set, st->stable);
    if (pos == st->set.count && st->set.count >= st->set.cap)
        return false;
    return !st->size || (pos >> st->page_shift) < st->page_count;
}

/* Removes e, which sits at packed position pos and whose component the
 * caller has already destroyed. With swap-and-pop the last component is
 * relocated with the move hook (memcpy without one). */
/* Relocates one value with the move hook, or an inline copy. */
static inline void tes__sparse_store_move_value(const tes_hooks_t *hooks, void *dst, void *src, uint32_t size)
{
    if (hooks && hooks->move)
        hooks->move(dst, src, 1, hooks->ctx);
    else
        tes__copy_bytes(dst, src, size);
}

static inline void tes__sparse_store_remove_at(tes__sparse_store_t *st, tes_entity_t e, uint32_t pos,
                                 const tes_hooks_t *hooks)
{
    if (st->stable) {
        tes__sparse_set_tomb_remove(&st->set, e, pos);
        return;
    }
    tes__sparse_set_swap_remove(&st->set, e, pos);
    uint32_t last = st->set.count; /* the old last position */
    if (st->size && pos != last) {
        tes__sparse_store_move_value(hooks, tes__sparse_store_at(st, pos), tes__sparse_store_at(st, last),
                    st->size);
        if (st->tick)
            tes__sparse_store_stamp_move(st, pos, last);
    }
}


/* Swap-and-pop removal of the member whose sparse entry is *entry, in a
 * store that is not stable and has no move hook (the value moves as
 * bytes): the single-lookup form of tes__sparse_store_remove_at. */
static inline void tes__sparse_store_swap_remove_plain(tes__sparse_store_t *st, uint64_t *entry)
{
    tes__assert(!st->stable);
    uint32_t pos = tes__sparse_set_swap_remove_at(&st->set, entry);
    uint32_t last = st->set.count; /* the old last position */
    if (st->size && pos != last) {
        tes__copy_bytes(tes__sparse_store_at(st, pos), tes__sparse_store_at(st, last), st->size);
        if (st->tick)
            tes__sparse_store_stamp_move(st, pos, last);
    }
}

/* Removes e (which must be present); see tes__sparse_store_remove_at. */
static inline void tes__sparse_store_remove(tes__sparse_store_t *st, tes_entity_t e,
                                            const tes_hooks_t *hooks)
{
    tes__sparse_store_remove_at(st, e, tes__sparse_set_find(&st->set, e), hooks);
}

/* Exchanges the components (and entities) at positions a and b, relocating
 * data through `scratch` (room for one component) with the move hook. */
static inline void tes__sparse_store_swap(tes__sparse_store_t *st, uint32_t a, uint32_t b,
                                          const tes_hooks_t *hooks, void *scratch)
{
    if (a == b)
        return;
    tes__sparse_set_swap(&st->set, a, b);
    if (!st->size)
        return;
    void *pa = tes__sparse_store_at(st, a), *pb = tes__sparse_store_at(st, b);
    tes__sparse_store_move_value(hooks, scratch, pa, st->size);
    tes__sparse_store_move_value(hooks, pa, pb, st->size);
    tes__sparse_store_move_value(hooks, pb, scratch, st->size);
    if (st->tick)
        tes__sparse_store_stamp_swap(st, a, b);
}

/* Squeezes tombstones out of a stable store (moving data with the move
 * hook). Invalidates the addresses of moved components: an explicit call,
 * never done implicitly. Returns how many components moved. */
uint32_t tes__sparse_store_compact(tes__sparse_store_t *st, const tes_hooks_t *hooks);

#endif
