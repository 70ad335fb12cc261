/*
 * Counting allocator (see counting_alloc.h): a header before each block
 * records the requested size and a magic word that is cleared on free, so
 * double frees and size mismatches are counted rather than corrupting the
 * heap.
 */
#include "support/counting_alloc.h"

#include <stdlib.h>
#include <string.h>

#define HDR 16
#define MAGIC UINT64_C(0x7E55E7A7A11C0CA7)
#define POISON 0xA5

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

void ca_fail_in(ca_state_t *s, uint64_t k)
{
    s->fail_at = k ? s->calls + k : 0;
}

/* Counts the call; true if it is to fail. */
static bool inject(ca_state_t *s, size_t size)
{
    s->calls++;
    if (s->fail_all || (s->fail_at && s->calls == s->fail_at) ||
        (s->max_block && size > s->max_block)) {
        s->failures++;
        return true;
    }
    return false;
}

static void count_bytes(ca_state_t *s, int64_t delta)
{
    s->live_bytes += delta;
    if (s->live_bytes > s->peak_bytes)
        s->peak_bytes = s->live_bytes;
}

static void *raw_alloc(ca_state_t *s, size_t size)
{
    if (size > SIZE_MAX - HDR)
        return NULL;
    ca_hdr_t *h = malloc(HDR + size);
    if (!h)
        return NULL;
    h->size = size;
    h->magic = MAGIC;
    count_bytes(s, (int64_t)size);
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

static void raw_free(ca_state_t *s, ca_hdr_t *h)
{
    count_bytes(s, -(int64_t)h->size);
    s->live_blocks--;
    if (s->poison)
        memset(h + 1, POISON, (size_t)h->size);
    h->magic = 0;
    free(h);
}

static void *ca_alloc(size_t size, void *user)
{
    ca_state_t *s = user;
    if (inject(s, size))
        return NULL;
    return raw_alloc(s, size);
}

static void *ca_realloc(void *ptr, size_t old_size, size_t new_size, void *user)
{
    ca_state_t *s = user;
    if (inject(s, new_size))
        return NULL; /* the old block stays untouched, as the contract says */
    if (!ptr)
        return raw_alloc(s, new_size);
    ca_hdr_t *h = header(s, ptr, old_size);
    if (!h)
        return NULL;
    size_t real_old = (size_t)h->size;
    if (s->poison) {
        /* Always a new place, the old one overwritten. */
        void *q = raw_alloc(s, new_size);
        if (!q)
            return NULL;
        memcpy(q, ptr, real_old < new_size ? real_old : new_size);
        raw_free(s, h);
        return q;
    }
    if (new_size > SIZE_MAX - HDR)
        return NULL;
    ca_hdr_t *n = realloc(h, HDR + new_size);
    if (!n)
        return NULL;
    n->size = new_size;
    count_bytes(s, (int64_t)new_size - (int64_t)real_old);
    return (char *)n + HDR;
}

static void ca_free(void *ptr, size_t size, void *user)
{
    ca_state_t *s = user;
    if (!ptr)
        return;
    ca_hdr_t *h = header(s, ptr, size);
    if (h)
        raw_free(s, h);
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
