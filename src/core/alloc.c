/*
 * Allocation through the world's allocator, with live-byte accounting. The
 * libc defaults ignore the size arguments; user allocators get them so they
 * need no headers of their own.
 */
#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

static void *libc_alloc(size_t size, void *user)
{
    (void)user;
    return malloc(size);
}

static void *libc_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    (void)old_size;
    (void)user;
    return realloc(ptr, new_size);
}

static void libc_free(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    free(ptr);
}

int tes__alloc_init(tes__alloc_t *a, const tes_allocator_t *fn)
{
    memset(a, 0, sizeof *a);
    if (!fn || (!fn->alloc && !fn->realloc && !fn->free)) {
        a->fn.alloc = libc_alloc;
        a->fn.realloc = libc_realloc;
        a->fn.free = libc_free;
        a->fn.user = fn ? fn->user : NULL;
        return TES_OK;
    }
    if (!fn->alloc || !fn->realloc || !fn->free)
        return TES_ERR_INVALID;
    a->fn = *fn;
    return TES_OK;
}

/* While worker threads may allocate, one call at a time (see alloc.h). */
static void alloc_enter(tes__alloc_t *a)
{
    if (a->lock)
        pthread_mutex_lock(a->lock);
}

static void alloc_leave(tes__alloc_t *a)
{
    if (a->lock)
        pthread_mutex_unlock(a->lock);
}

void *tes__malloc(tes__alloc_t *a, size_t size)
{
    if (size == 0)
        return NULL;
    alloc_enter(a);
    a->allocations++;
    void *p = a->fn.alloc(size, a->fn.user);
    if (p)
        a->bytes += size;
    alloc_leave(a);
    return p;
}

void *tes__calloc(tes__alloc_t *a, size_t size)
{
    void *p = tes__malloc(a, size);
    if (p)
        memset(p, 0, size);
    return p;
}

void *tes__realloc(tes__alloc_t *a, void *ptr, size_t old_size, size_t new_size)
{
    if (!ptr)
        return tes__malloc(a, new_size);
    if (new_size == 0) {
        tes__free(a, ptr, old_size);
        return NULL;
    }
    alloc_enter(a);
    a->allocations++;
    void *p = a->fn.realloc(ptr, old_size, new_size, a->fn.user);
    if (p)
        a->bytes = a->bytes - old_size + new_size;
    alloc_leave(a);
    return p;
}

void tes__free(tes__alloc_t *a, void *ptr, size_t size)
{
    if (!ptr)
        return;
    alloc_enter(a);
    a->bytes -= size;
    a->fn.free(ptr, size, a->fn.user);
    alloc_leave(a);
}

int tes__grow(tes__alloc_t *a, void **array, uint32_t *cap, uint64_t need, size_t elem_size,
              uint32_t min_cap)
{
    if (need <= *cap)
        return TES_OK;
    if (need > UINT32_MAX)
        return TES_ERR_NOMEM;
    uint64_t new_cap = *cap ? (uint64_t)*cap * 2 : min_cap;
    if (new_cap < need)
        new_cap = need;
    if (new_cap > UINT32_MAX)
        new_cap = UINT32_MAX;
    if (new_cap > SIZE_MAX / elem_size)
        return TES_ERR_NOMEM;
    void *p = tes__realloc(a, *array, (size_t)*cap * elem_size, (size_t)new_cap * elem_size);
    if (!p)
        return TES_ERR_NOMEM;
    *array = p;
    *cap = (uint32_t)new_cap;
    return TES_OK;
}

char *tes__strdup(tes__alloc_t *a, const char *s, size_t *out_size)
{
    size_t n = strlen(s) + 1;
    char *p = tes__malloc(a, n);
    if (p)
        memcpy(p, s, n);
    if (out_size)
        *out_size = n;
    return p;
}
