/*
 * The snapshot checksum and the growable output buffer (see format.h).
 */
#include "snapshot/format.h"

#define K1 UINT64_C(0xA0761D6478BD642F)
#define K2 UINT64_C(0xE7037ED1A0B428DB)
#define K3 UINT64_C(0x8EBC6AF09C88C6E3)

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* One lane step. w * K1 and the multiply by K2 are bijections (odd
 * constants), so any change in one word changes the lane's state. */
static inline uint64_t lane(uint64_t v, uint64_t w) { return rotl(v ^ (w * K1), 29) * K2; }

static inline uint64_t finish(uint64_t x)
{
    x ^= x >> 31;
    x *= K3;
    x ^= x >> 29;
    x *= K2;
    return x ^ (x >> 32);
}

uint64_t tes__snap_hash(const void *data, size_t size, uint64_t seed)
{
    const uint8_t *p = data;
    uint64_t v0 = seed ^ K1, v1 = seed ^ K2, v2 = seed ^ K3, v3 = ~seed;
    size_t n = size;
    while (n >= 32) {
        v0 = lane(v0, tes__get_u64(p));
        v1 = lane(v1, tes__get_u64(p + 8));
        v2 = lane(v2, tes__get_u64(p + 16));
        v3 = lane(v3, tes__get_u64(p + 24));
        p += 32;
        n -= 32;
    }
    uint64_t h = finish(v0) ^ rotl(finish(v1), 17) ^ rotl(finish(v2), 34) ^ rotl(finish(v3), 51);
    while (n >= 8) {
        h = lane(h, tes__get_u64(p));
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    for (size_t i = 0; i < n; i++)
        tail |= (uint64_t)p[i] << (8 * i);
    h = lane(h, tail ^ ((uint64_t)n << 56));
    return finish(h ^ (uint64_t)size);
}

bool tes__out_reserve_slow(tes__outbuf_t *o, size_t extra)
{
    if (extra > SIZE_MAX / 2 - o->size) {
        o->status = TES_ERR_NOMEM;
        return false;
    }
    size_t cap = o->cap ? o->cap : 4096;
    while (cap - o->size < extra)
        cap *= 2;
    uint8_t *data = tes__realloc(o->a, o->data, o->cap, cap);
    if (!data) {
        o->status = TES_ERR_NOMEM;
        return false;
    }
    o->data = data;
    o->cap = cap;
    return true;
}

int tes__out_write(const void *data, size_t size, void *user)
{
    tes__outbuf_t *o = user;
    if (size && !data)
        return TES_ERR_INVALID;
    tes__out_bytes(o, data, size);
    return o->status;
}

void tes__out_free(tes__outbuf_t *o)
{
    tes__free(o->a, o->data, o->cap);
    o->data = NULL;
    o->size = o->cap = 0;
}

int tes__cursor_read(void *data, size_t size, void *user)
{
    tes__cursor_t *c = user;
    if (c->bad || tes__cursor_left(c) < size || (size && !data))
        return TES_ERR_IO;
    if (size)
        memcpy(data, c->p, size);
    c->p += size;
    return TES_OK;
}
