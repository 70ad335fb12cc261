/*
 * A bump arena in chunked blocks, for values that live together and die
 * together: the deferred command queue stages every queued component value
 * here, and releases them all at once when the queue has been applied.
 *
 * Blocks come from the world's allocator and are never reallocated, so an
 * address handed out stays valid until the next reset: the queue can keep
 * pointers to staged values in its commands and records while the arena
 * keeps growing. A reset keeps every block for the next round (a game queues
 * about the same amount every frame), so steady state allocates nothing.
 */
#ifndef TES_CORE_ARENA_H
#define TES_CORE_ARENA_H

#include "core/alloc.h"

#include <stddef.h>

typedef struct tes__arena_block tes__arena_block_t;
struct tes__arena_block {
    tes__arena_block_t *next;
    size_t size; /* usable bytes after the header */
};

/* The header rounded up so a block's data starts at the allocator's
 * alignment. */
#define TES__ARENA_HEADER \
    ((sizeof(tes__arena_block_t) + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1))

/* The current block is filled through a cursor kept here (cur, end), not
 * in the block: a bump is then one add, one mask and one compare, with no
 * block header to read. Blocks after the current one are empty; blocks
 * before it are full (their tails are never used again before a reset).
 * With no block, cur and end are both NULL, and every bump fails. */
typedef struct tes__arena {
    tes__arena_block_t *first;   /* every block, in the order they were made */
    tes__arena_block_t *current; /* the block being filled; later ones are empty */
    uintptr_t cur;               /* the current block's first free byte */
    uintptr_t end;               /* the current block's end */
    size_t bytes;                /* total block bytes held (stats, tests) */
} tes__arena_t;

/* Returns size bytes aligned to align (a power of two, 0 = 1), or NULL when
 * the allocator fails or the size overflows (nothing changed). size 0
 * returns NULL without failing: callers never ask for tags. */
void *tes__arena_alloc_slow(tes__arena_t *a, tes__alloc_t *alloc, size_t size, size_t align);
/* Where a bump of size bytes (0 < size <= TES__ARENA_BUMP_MAX) aligned to
 * align (a power of two) would start, when it fits in the current block;
 * 0 when it does not (or there is no block). The start rounded up may pass
 * `end` by less than align, and then start + size passes it too: one
 * compare. tes__arena_take then takes the bytes. Calls nothing, so a
 * caller keeps its own hot path free of calls. */
#define TES__ARENA_BUMP_MAX ((size_t)1 << 16)
static inline uintptr_t tes__arena_fit(const tes__arena_t *a, size_t size, size_t align)
{
    uintptr_t at = (a->cur + (align - 1)) & ~(uintptr_t)(align - 1);
    return at + size <= a->end ? at : 0;
}
static inline void *tes__arena_take(tes__arena_t *a, uintptr_t at, size_t size)
{
    a->cur = at + size;
    return (void *)at;
}
/* The common case of tes__arena_alloc: size bytes from the current block,
 * or NULL (nothing changed) when it has no room or there is none. */
static inline void *tes__arena_alloc_here(tes__arena_t *a, size_t size, size_t align)
{
    if (!size || size > TES__ARENA_BUMP_MAX)
        return NULL;
    uintptr_t at = tes__arena_fit(a, size, align ? align : 1);
    return at ? tes__arena_take(a, at, size) : NULL;
}
static inline void *tes__arena_alloc(tes__arena_t *a, tes__alloc_t *alloc, size_t size,
                                     size_t align)
{
    void *p = tes__arena_alloc_here(a, size, align);
    return p ? p : tes__arena_alloc_slow(a, alloc, size, align);
}
/* Forgets every value; keeps the blocks. */
void tes__arena_reset(tes__arena_t *a);
/* Frees every block. */
void tes__arena_fini(tes__arena_t *a, tes__alloc_t *alloc);

#endif
