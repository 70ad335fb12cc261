/*
 * The staging arena (see arena.h). Blocks double in size up to a cap, so a
 * queue that stages a million values makes about twenty blocks, and a value
 * bigger than the next block gets a block of its own size. Allocation is a
 * pointer bump in the current block; when it does not fit, the next
 * (already empty) block is tried before a new one is made.
 */
#include "core/arena.h"

#define ARENA_FIRST_BLOCK ((size_t)4096)
#define ARENA_MAX_BLOCK ((size_t)1 << 20)

#define ARENA_HEADER TES__ARENA_HEADER

static uintptr_t block_data(tes__arena_block_t *b) { return (uintptr_t)b + ARENA_HEADER; }

/* Makes b (empty) the block being filled. */
static void arena_enter(tes__arena_t *a, tes__arena_block_t *b)
{
    a->current = b;
    a->cur = block_data(b);
    a->end = a->cur + b->size;
}

/* size bytes aligned to align at the start of the current block, which
 * the caller made sure can take them with any padding. */
static void *arena_place(tes__arena_t *a, size_t size, size_t align)
{
    uintptr_t at = (a->cur + (align - 1)) & ~(uintptr_t)(align - 1);
    return tes__arena_take(a, at, size);
}

void *tes__arena_alloc_slow(tes__arena_t *a, tes__alloc_t *alloc, size_t size, size_t align)
{
    if (!size)
        return NULL;
    if (!align)
        align = 1;
    void *p = tes__arena_alloc_here(a, size, align);
    if (p)
        return p;
    tes__arena_block_t *next = a->current ? a->current->next : NULL;
    if (next && size <= next->size && align <= next->size - size) { /* with any padding */
        arena_enter(a, next);
        return arena_place(a, size, align);
    }
    /* A new block, placed after the current one (later empty blocks stay
     * in the chain for the next round). */
    size_t want = a->current ? a->current->size * 2 : ARENA_FIRST_BLOCK;
    if (want > ARENA_MAX_BLOCK)
        want = ARENA_MAX_BLOCK;
    if (size > SIZE_MAX - align - ARENA_HEADER)
        return NULL;
    if (want < size + align)
        want = size + align;
    tes__arena_block_t *b = tes__malloc(alloc, ARENA_HEADER + want);
    if (!b)
        return NULL;
    b->size = want;
    if (a->current) {
        b->next = a->current->next;
        a->current->next = b;
    } else {
        b->next = a->first;
        a->first = b;
    }
    a->bytes += ARENA_HEADER + want;
    arena_enter(a, b);
    return arena_place(a, size, align);
}

void tes__arena_reset(tes__arena_t *a)
{
    if (a->first)
        arena_enter(a, a->first);
}

void tes__arena_fini(tes__arena_t *a, tes__alloc_t *alloc)
{
    for (tes__arena_block_t *b = a->first, *next; b; b = next) {
        next = b->next;
        tes__free(alloc, b, ARENA_HEADER + b->size);
    }
    a->first = a->current = NULL;
    a->cur = a->end = 0;
    a->bytes = 0;
}
