/*
 * The world's allocator. Every byte Tessera allocates passes through one
 * tes__alloc_t, which forwards to the user's tes_allocator_t (or libc) and
 * keeps the count of live bytes that tes_world_stats reports. Sizes are
 * always passed back on free and realloc, so custom allocators can be
 * simple arenas or counting wrappers.
 *
 * Growth helpers never change the caller's block or capacity when the
 * allocator fails: callers reserve first and commit after, which is how a
 * failed call leaves the world as it was.
 *
 * The user's allocator need not be thread-safe: the library calls it from
 * one thread at a time. Worker threads allocate only while a split
 * structural system records into per-thread command queues, and then every
 * call goes through `lock` (set for that window by the scheduler).
 */
#ifndef TES_CORE_ALLOC_H
#define TES_CORE_ALLOC_H

#include <pthread.h>

#include "tessera.h"

typedef struct tes__alloc {
    tes_allocator_t fn;
    uint64_t bytes;       /* live bytes */
    uint64_t allocations; /* calls to alloc and realloc */
    pthread_mutex_t *lock; /* NULL, or held around every call (threads) */
} tes__alloc_t;

/* Fills in libc defaults when `fn` is all zero. Returns TES_ERR_INVALID if
 * only some of alloc/realloc/free are set. */
int tes__alloc_init(tes__alloc_t *a, const tes_allocator_t *fn);

/* NULL on failure (or for size 0). */
void *tes__malloc(tes__alloc_t *a, size_t size);
/* Like tes__malloc, then zero-filled. */
void *tes__calloc(tes__alloc_t *a, size_t size);
/* NULL on failure, leaving ptr untouched. ptr may be NULL (old_size 0). */
void *tes__realloc(tes__alloc_t *a, void *ptr, size_t old_size, size_t new_size);
void tes__free(tes__alloc_t *a, void *ptr, size_t size);

/* Makes room for at least `need` elements of `elem_size` bytes in *array,
 * whose capacity is *cap; grows geometrically (x2, at least `min_cap`).
 * Returns TES_OK or TES_ERR_NOMEM (nothing changed). */
int tes__grow(tes__alloc_t *a, void **array, uint32_t *cap, uint64_t need, size_t elem_size,
              uint32_t min_cap);

/* Copies a NUL-terminated string through the allocator; NULL on failure. */
char *tes__strdup(tes__alloc_t *a, const char *s, size_t *out_size);

#endif
