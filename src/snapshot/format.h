/*
 * Snapshot format helpers: little-endian encoding into a growable buffer
 * (saving), a bounds-checked cursor over untrusted bytes (loading), and the
 * checksum. The layout itself is documented field by field in
 * docs/snapshot_format.md; save.c writes it and load_parse.c validates it.
 *
 * Every read from a cursor checks the bytes remaining first and turns a
 * short read into a sticky error, so the parser can read a whole record and
 * test once. Counts taken from the input are checked against the bytes
 * remaining before anything is sized from them (tes__cursor_count), which is
 * what bounds the loader's allocations by the input's size.
 *
 * The checksum is an eight-lane xor-rotate-multiply-add hash over 8-byte
 * words: one multiply per two words and eight independent chains, so it
 * runs faster than memory on the megabytes a large world produces. It
 * detects corruption, not tampering.
 */
#ifndef TES_SNAPSHOT_FORMAT_H
#define TES_SNAPSHOT_FORMAT_H

#include <string.h>

#include "core/alloc.h"

#define TES__SNAP_MAGIC "TESSNAP\0"
#define TES__SNAP_VERSION 3u
/* The oldest version this library still reads (2: no hierarchy section). */
#define TES__SNAP_VERSION_MIN 2u
/* magic (8), version (4), flags (4), meta size (8), payload size (8) */
#define TES__SNAP_HEADER_SIZE 32u
/* each of the two checksums: after the meta, after the payload */
#define TES__SNAP_SUM_SIZE 8u
/* Longest component name a snapshot may carry. */
#define TES__SNAP_MAX_NAME 4096u

/* Little-endian loads and stores. On little-endian hosts they are one
 * unaligned move each (memcpy); elsewhere, byte by byte. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline void tes__put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void tes__put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint32_t tes__get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t tes__get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
#else
static inline void tes__put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
static inline void tes__put_u64(uint8_t *p, uint64_t v)
{
    tes__put_u32(p, (uint32_t)v);
    tes__put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t tes__get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tes__get_u64(const uint8_t *p)
{
    return (uint64_t)tes__get_u32(p) | (uint64_t)tes__get_u32(p + 4) << 32;
}
#endif

/* The checksum of `size` bytes with `seed`. */
uint64_t tes__snap_hash(const void *data, size_t size, uint64_t seed);

/* The same checksum computed piece by piece (the loader hashes each chunk
 * right after reading it, while it is still in cache): init, then blocks
 * over consecutive pieces whose sizes are multiples of TES__SNAP_HASH_BLOCK,
 * then finish with the last size % TES__SNAP_HASH_BLOCK bytes and the total
 * size. */
#define TES__SNAP_HASH_LANES 8
#define TES__SNAP_HASH_BLOCK (16 * TES__SNAP_HASH_LANES)
typedef struct tes__snap_hash {
    uint64_t v[TES__SNAP_HASH_LANES];
} tes__snap_hash_t;
void tes__snap_hash_init(tes__snap_hash_t *h, uint64_t seed);
void tes__snap_hash_blocks(tes__snap_hash_t *h, const void *data, size_t size);
uint64_t tes__snap_hash_finish(const tes__snap_hash_t *h, const void *rest, size_t n, size_t total);

/* The same checksum over pieces of any size (the loader reads column
 * payloads straight into table storage in pieces that need not be whole
 * blocks): a partial block waits in `carry` for the next piece. */
typedef struct tes__snap_stream {
    tes__snap_hash_t h;
    uint8_t carry[TES__SNAP_HASH_BLOCK];
    size_t carry_n;
    size_t total;
} tes__snap_stream_t;
void tes__snap_stream_init(tes__snap_stream_t *s, uint64_t seed);
void tes__snap_stream_add(tes__snap_stream_t *s, const void *data, size_t size);
uint64_t tes__snap_stream_finish(const tes__snap_stream_t *s);

/* ------------------------------------------------------------------ output */

/* A growable output buffer. A failed growth is sticky (status), so writers
 * can emit a whole section and check once. */
typedef struct tes__outbuf {
    tes__alloc_t *a;
    uint8_t *data;
    size_t size;
    size_t cap;
    int status;
} tes__outbuf_t;

/* Room for `extra` more bytes; false (status TES_ERR_NOMEM) on failure. */
bool tes__out_reserve_slow(tes__outbuf_t *o, size_t extra);
static inline bool tes__out_reserve(tes__outbuf_t *o, size_t extra)
{
    if (o->status)
        return false;
    return o->cap - o->size >= extra || tes__out_reserve_slow(o, extra);
}
static inline void tes__out_u32(tes__outbuf_t *o, uint32_t v)
{
    if (tes__out_reserve(o, 4)) {
        tes__put_u32(o->data + o->size, v);
        o->size += 4;
    }
}
static inline void tes__out_bytes(tes__outbuf_t *o, const void *p, size_t n)
{
    if (n && tes__out_reserve(o, n)) {
        memcpy(o->data + o->size, p, n);
        o->size += n;
    }
}
/* A tes_writer_t callback appending to a tes__outbuf_t (user). */
int tes__out_write(const void *data, size_t size, void *user);
void tes__out_free(tes__outbuf_t *o);

/* ------------------------------------------------------------------ input */

/* A cursor over untrusted bytes. `bad` is sticky: after a short read every
 * later read returns zeros, and the caller reports TES_ERR_FORMAT. */
typedef struct tes__cursor {
    const uint8_t *p;
    const uint8_t *end;
    bool bad;
} tes__cursor_t;

static inline size_t tes__cursor_left(const tes__cursor_t *c) { return (size_t)(c->end - c->p); }

static inline uint32_t tes__cursor_u32(tes__cursor_t *c)
{
    if (c->bad || tes__cursor_left(c) < 4) {
        c->bad = true;
        return 0;
    }
    uint32_t v = tes__get_u32(c->p);
    c->p += 4;
    return v;
}
static inline uint8_t tes__cursor_u8(tes__cursor_t *c)
{
    if (c->bad || tes__cursor_left(c) < 1) {
        c->bad = true;
        return 0;
    }
    return *c->p++;
}
/* A pointer to the next n bytes (skipped), or NULL when fewer remain. */
static inline const uint8_t *tes__cursor_take(tes__cursor_t *c, uint64_t n)
{
    if (c->bad || tes__cursor_left(c) < n) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *at = c->p;
    c->p += n;
    return at;
}
/* A count of items that each take at least `min_bytes` of the input: the
 * count is refused (cursor bad, 0 returned) when the bytes left could not
 * hold that many, so nothing is ever sized from a count the input cannot
 * back. */
static inline uint32_t tes__cursor_count(tes__cursor_t *c, uint32_t min_bytes)
{
    uint32_t n = tes__cursor_u32(c);
    if (!c->bad && min_bytes && (uint64_t)n * min_bytes > tes__cursor_left(c)) {
        c->bad = true;
        return 0;
    }
    return n;
}

/* A tes_reader_t over one value's bytes (what a load hook reads): reading
 * past them is TES_ERR_IO. */
int tes__cursor_read(void *data, size_t size, void *user);

#endif
