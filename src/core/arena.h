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
    size_t used;
};

/* The header rounded up so a block's data starts at the allocator's
 * alignment. */
#define TES__ARENA_HEADER \
    ((sizeof(tes__arena_block_t) + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1))

typedef struct tes__arena {
    tes__arena_block_t *first;   /* every block, in the order they were made */
    tes__arena_block_t *current; /* the block being filled; later ones are empty */
    size_t bytes;                /* total block bytes held (stats, tests) */
} tes__arena_t;

/* Returns size bytes aligned to align (a power of two, 0 = 1), or NULL when
 * the allocator fails or the size overflows (nothing changed). size 0
 * returns NULL without failing: callers never ask for tags. */
void *tes__arena_alloc_slow(tes__arena_t *a, tes__alloc_t *alloc, size_t size, size_t align);
/* The common case of tes__arena_alloc: size bytes from the current block,
 * or NULL (nothing changed) when it has no room or there is none. Calls
 * nothing, so a caller can keep its own hot path free of calls. */
static inline void *tes__arena_alloc_here(tes__arena_t *a, size_t size, size_t align)
{
    tes__arena_block_t *b = a->current;
    if (b && size && align) {
        uintptr_t base = (uintptr_t)b + TES__ARENA_HEADER;
        uintptr_t at = (base + b->used + (align - 1)) & ~(uintptr_t)(align - 1);
        size_t offset = (size_t)(at - base);
        if (offset <= b->size && b->size - offset >= size) {
            b->used = offset + size;
            return (void *)at;
        }
    }
    return NULL;
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
