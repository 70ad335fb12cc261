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

static unsigned char *block_data(tes__arena_block_t *b) { return (unsigned char *)b + ARENA_HEADER; }

/* Where a value of size bytes aligned to align starts in b, or NULL. */
static void *block_fit(tes__arena_block_t *b, size_t size, size_t align)
{
    uintptr_t base = (uintptr_t)block_data(b);
    uintptr_t at = (base + b->used + (align - 1)) & ~(uintptr_t)(align - 1);
    size_t offset = (size_t)(at - base);
    if (offset > b->size || b->size - offset < size)
        return NULL;
    b->used = offset + size;
    return (void *)at;
}

void *tes__arena_alloc_slow(tes__arena_t *a, tes__alloc_t *alloc, size_t size, size_t align)
{
    if (!size)
        return NULL;
    if (!align)
        align = 1;
    if (a->current) {
        void *p = block_fit(a->current, size, align);
        if (p)
            return p;
        tes__arena_block_t *next = a->current->next;
        if (next && (p = block_fit(next, size, align)) != NULL) {
            a->current = next;
            return p;
        }
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
    b->used = 0;
    if (a->current) {
        b->next = a->current->next;
        a->current->next = b;
    } else {
        b->next = a->first;
        a->first = b;
    }
    a->current = b;
    a->bytes += ARENA_HEADER + want;
    return block_fit(b, size, align);
}

void tes__arena_reset(tes__arena_t *a)
{
    for (tes__arena_block_t *b = a->first; b; b = b->next)
        b->used = 0;
    a->current = a->first;
}

void tes__arena_fini(tes__arena_t *a, tes__alloc_t *alloc)
{
    for (tes__arena_block_t *b = a->first, *next; b; b = next) {
        next = b->next;
        tes__free(alloc, b, ARENA_HEADER + b->size);
    }
    a->first = a->current = NULL;
    a->bytes = 0;
}
