/*
 * Small fixed-size byte copies and fills. Components are mostly 4 to 16
 * bytes; a call into libc's memcpy/memset for 12 bytes costs more than the
 * copy itself, so these switch on the common sizes and let the compiler
 * emit plain moves for them.
 */
#ifndef TES_CORE_BYTES_H
#define TES_CORE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/assert.h"

/* Copies size bytes; inline for the small sizes components usually have,
 * where a call into libc's memcpy would cost more than the copy. */
static inline void tes__copy_bytes(void *dst, const void *src, size_t size)
{
    switch (size) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 12: memcpy(dst, src, 12); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, size); break;
    }
}

/* Zeroes size bytes; inline for small sizes, like tes__copy_bytes. */
static inline void tes__zero_bytes(void *dst, size_t size)
{
    switch (size) {
    case 4: memset(dst, 0, 4); break;
    case 8: memset(dst, 0, 8); break;
    case 12: memset(dst, 0, 12); break;
    case 16: memset(dst, 0, 16); break;
    default: memset(dst, 0, size); break;
    }
}

/* Copies 8 to 16 bytes as two moves: 8 bytes at the start, then the last
 * 4 bytes for 12 (three floats, the most common size) and the last 8
 * otherwise. A 12-byte value is then written as two stores that do not
 * overlap. That matters when the value is read back soon (a row copied on
 * through the next table of an entity being built up one component at a
 * time): a load can take its bytes from an earlier store still in flight
 * only if no younger store covers part of them, and with overlapping 8-byte
 * stores (bytes 0-7 and 4-11) the first load waits for both to reach the
 * cache (measured: 3% of spawn + 3 sets). Other sizes from 9 to 15 still
 * overlap; they are rare. */
static inline void tes__copy_mid(void *dst, const void *src, size_t size)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    uint64_t a;
    memcpy(&a, s, 8);
    if ((size & 7) == 4) {
        uint32_t b;
        memcpy(&b, s + size - 4, 4);
        memcpy(d, &a, 8);
        memcpy(d + size - 4, &b, 4);
    } else {
        uint64_t b;
        memcpy(&b, s + size - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + size - 8, &b, 8);
    }
}

/* The largest value tes__copy_small copies. */
#define TES__SMALL_BYTES 64u

/* A zeroed value of any small size: copying from it zeroes a cell, so a
 * loop that fills cells from values or zeroes needs one copy, no branch. */
static const unsigned char tes__zero_cell[TES__SMALL_BYTES];

/* Copies size <= TES__SMALL_BYTES bytes without calling into libc: hot
 * loops that copy cells of several columns then need no registers saved
 * around a call. Each size range is two fixed-width copies that overlap
 * in the middle (10 bytes: bytes 0-7 and 2-9; 12 bytes, the exception,
 * are 0-7 and 8-11: tes__copy_mid), loaded before they are stored, so one
 * compare or two pick the copy for any size, not only the sizes a switch
 * lists. */
static inline void tes__copy_small(void *dst, const void *src, size_t size)
{
    typedef struct { unsigned char b[16]; } chunk16;
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (tes__likely(size - 8 <= 8)) { /* 8 to 16 bytes, the most common sizes */
        tes__copy_mid(d, s, size);
    } else if (size > 16) {
        chunk16 a, b, c, e;
        memcpy(&a, s, 16);
        memcpy(&b, s + size - 16, 16);
        if (size > 32) {
            memcpy(&c, s + 16, 16);
            memcpy(&e, s + size - 32, 16);
            memcpy(d + 16, &c, 16);
            memcpy(d + size - 32, &e, 16);
        }
        memcpy(d, &a, 16);
        memcpy(d + size - 16, &b, 16);
    } else if (size >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + size - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + size - 4, &b, 4);
    } else if (size >= 2) {
        uint16_t a, b;
        memcpy(&a, s, 2);
        memcpy(&b, s + size - 2, 2);
        memcpy(d, &a, 2);
        memcpy(d + size - 2, &b, 2);
    } else if (size) {
        *d = *s;
    }
}

/* Zeroes size <= TES__SMALL_BYTES bytes without calling into libc, with
 * the overlapping stores of tes__copy_small. */
static inline void tes__zero_small(void *dst, size_t size)
{
    unsigned char *d = dst;
    if (size - 8 <= 8) {
        memset(d, 0, 8);
        memset(d + size - 8, 0, 8);
    } else if (size > 16) {
        memset(d, 0, 16);
        memset(d + size - 16, 0, 16);
        if (size > 32) {
            memset(d + 16, 0, 16);
            memset(d + size - 32, 0, 16);
        }
    } else if (size >= 4) {
        memset(d, 0, 4);
        memset(d + size - 4, 0, 4);
    } else if (size) {
        /* 1 to 3 bytes: the first, middle and last cover them all. */
        d[0] = 0;
        d[size / 2] = 0;
        d[size - 1] = 0;
    }
}

#endif
