/*
 * The snapshot checksum and the growable output buffer (see format.h).
 */
#include "snapshot/format.h"

#define K1 UINT64_C(0xA0761D6478BD642F)
#define K2 UINT64_C(0xE7037ED1A0B428DB)
#define K3 UINT64_C(0x8EBC6AF09C88C6E3)

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* One lane step over one word: for a fixed state it is a bijection of the
 * word (xor, rotate, multiply by an odd constant), and for a fixed word a
 * bijection of the state. */
static inline uint64_t lane(uint64_t v, uint64_t w) { return rotl(v ^ w, 29) * K2; }

/* The bulk step takes two words for one multiply (16 bytes per multiply,
 * twice the speed of one word per step): the first goes through `lane`,
 * the second is added after the multiply. For a fixed state and either word
 * fixed it is a bijection of the other word, and for fixed words a
 * bijection of the state, so a change in any one word changes the lane's
 * state for good, and so the checksum: every single-bit change of a
 * snapshot is detected. */
static inline uint64_t lane2(uint64_t v, uint64_t w0, uint64_t w1) { return lane(v, w0) + w1; }

static inline uint64_t finish(uint64_t x)
{
    x ^= x >> 31;
    x *= K3;
    x ^= x >> 29;
    x *= K2;
    return x ^ (x >> 32);
}

void tes__snap_hash_init(tes__snap_hash_t *h, uint64_t seed)
{
    for (int i = 0; i < TES__SNAP_HASH_LANES; i++)
        h->v[i] = (seed + (uint64_t)i) * K1 ^ K3;
}

void tes__snap_hash_blocks(tes__snap_hash_t *h, const void *data, size_t size)
{
    const uint8_t *p = data;
    uint64_t v[TES__SNAP_HASH_LANES];
    memcpy(v, h->v, sizeof v);
    /* Eight independent chains keep the multiplier busy; lane i takes
     * words 2i and 2i + 1 of each block. */
    for (size_t n = size / TES__SNAP_HASH_BLOCK; n; n--, p += TES__SNAP_HASH_BLOCK)
        for (int i = 0; i < TES__SNAP_HASH_LANES; i++)
            v[i] = lane2(v[i], tes__get_u64(p + 16 * i), tes__get_u64(p + 16 * i + 8));
    memcpy(h->v, v, sizeof v);
}

uint64_t tes__snap_hash_finish(const tes__snap_hash_t *h, const void *rest, size_t n,
                               size_t total)
{
    const uint8_t *p = rest;
    uint64_t x = 0;
    for (int i = 0; i < TES__SNAP_HASH_LANES; i++)
        x = lane(x, finish(h->v[i]));
    while (n >= 8) {
        x = lane(x, tes__get_u64(p));
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    for (size_t i = 0; i < n; i++)
        tail |= (uint64_t)p[i] << (8 * i);
    x = lane(x, tail ^ ((uint64_t)n << 56));
    return finish(x ^ (uint64_t)total);
}

void tes__snap_stream_init(tes__snap_stream_t *s, uint64_t seed)
{
    tes__snap_hash_init(&s->h, seed);
    s->carry_n = 0;
    s->total = 0;
}

void tes__snap_stream_add(tes__snap_stream_t *s, const void *data, size_t size)
{
    const uint8_t *p = data;
    s->total += size;
    if (s->carry_n) {
        size_t take = TES__SNAP_HASH_BLOCK - s->carry_n;
        if (take > size)
            take = size;
        memcpy(s->carry + s->carry_n, p, take);
        s->carry_n += take;
        p += take;
        size -= take;
        if (s->carry_n < TES__SNAP_HASH_BLOCK)
            return;
        tes__snap_hash_blocks(&s->h, s->carry, TES__SNAP_HASH_BLOCK);
        s->carry_n = 0;
    }
    size_t blocks = size - size % TES__SNAP_HASH_BLOCK;
    tes__snap_hash_blocks(&s->h, p, blocks);
    memcpy(s->carry, p + blocks, size - blocks);
    s->carry_n = size - blocks;
}

uint64_t tes__snap_stream_finish(const tes__snap_stream_t *s)
{
    return tes__snap_hash_finish(&s->h, s->carry, s->carry_n, s->total);
}

uint64_t tes__snap_hash(const void *data, size_t size, uint64_t seed)
{
    tes__snap_hash_t h;
    tes__snap_hash_init(&h, seed);
    size_t blocks = size - size % TES__SNAP_HASH_BLOCK;
    tes__snap_hash_blocks(&h, data, blocks);
    return tes__snap_hash_finish(&h, (const uint8_t *)data + blocks, size - blocks, size);
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
