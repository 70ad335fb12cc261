/*
 * Counting allocator (see counting_alloc.h): a header before each block
 * records the requested size and a magic word that is cleared on free, so
 * double frees and size mismatches are counted rather than corrupting the
 * heap.
 */
#include "fault/counting_alloc.h"

#include <stdlib.h>
#include <string.h>

#define HDR 16
#define MAGIC UINT64_C(0x7E55E7A7A11C0CA7)

typedef struct ca_hdr {
    uint64_t size;
    uint64_t magic;
} ca_hdr_t;

_Static_assert(sizeof(ca_hdr_t) == HDR, "header keeps 16-byte alignment");

void ca_init(ca_state_t *s, uint64_t fail_at)
{
    memset(s, 0, sizeof *s);
    s->fail_at = fail_at;
}

/* Counts the call; true if this is the one to fail. */
static int inject(ca_state_t *s)
{
    s->calls++;
    if (s->fail_at && s->calls == s->fail_at) {
        s->failures++;
        return 1;
    }
    return 0;
}

static void *raw_alloc(ca_state_t *s, size_t size)
{
    ca_hdr_t *h = malloc(HDR + size);
    if (!h)
        return NULL;
    h->size = size;
    h->magic = MAGIC;
    s->live_bytes += (int64_t)size;
    s->live_blocks++;
    return (char *)h + HDR;
}

/* The header of a block the library hands back, or NULL if it is not live. */
static ca_hdr_t *header(ca_state_t *s, void *ptr, size_t size)
{
    ca_hdr_t *h = (ca_hdr_t *)(void *)((char *)ptr - HDR);
    if (h->magic != MAGIC) {
        s->bad_ptrs++;
        return NULL;
    }
    if (h->size != size)
        s->bad_sizes++;
    return h;
}

static void *ca_alloc(size_t size, void *user)
{
    ca_state_t *s = user;
    if (inject(s))
        return NULL;
    return raw_alloc(s, size);
}

static void *ca_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    ca_state_t *s = user;
    if (inject(s))
        return NULL; /* the old block stays untouched, as the contract says */
    if (!ptr)
        return raw_alloc(s, new_size);
    ca_hdr_t *h = header(s, ptr, old_size);
    if (!h)
        return NULL;
    size_t real_old = (size_t)h->size;
    ca_hdr_t *n = realloc(h, HDR + new_size);
    if (!n)
        return NULL;
    n->size = new_size;
    s->live_bytes += (int64_t)new_size - (int64_t)real_old;
    return (char *)n + HDR;
}

static void ca_free(void *ptr, size_t size, void *user)
{
    ca_state_t *s = user;
    if (!ptr)
        return;
    ca_hdr_t *h = header(s, ptr, size);
    if (!h)
        return;
    s->live_bytes -= (int64_t)h->size;
    s->live_blocks--;
    h->magic = 0;
    free(h);
}

tes_allocator_t ca_allocator(ca_state_t *s)
{
    tes_allocator_t a;
    a.alloc = ca_alloc;
    a.realloc = ca_realloc;
    a.free = ca_free;
    a.user = s;
    return a;
}
