/*
 * Small fixed-size byte copies and fills. Components are mostly 4 to 16
 * bytes; a call into libc's memcpy/memset for 12 bytes costs more than the
 * copy itself, so these switch on the common sizes and let the compiler
 * emit plain moves for them.
 */
#ifndef TES_CORE_BYTES_H
#define TES_CORE_BYTES_H

#include <stddef.h>
#include <string.h>

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

/* The largest value tes__copy_small copies. */
#define TES__SMALL_BYTES 64u

/* Copies size <= TES__SMALL_BYTES bytes without calling into libc: hot
 * loops that copy cells of several columns then need no registers saved
 * around a call. */
static inline void tes__copy_small(void *dst, const void *src, size_t size)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    switch (size) {
    case 4: memcpy(d, s, 4); return;
    case 8: memcpy(d, s, 8); return;
    case 12: memcpy(d, s, 12); return;
    case 16: memcpy(d, s, 16); return;
    default: break;
    }
    for (; size >= 8; size -= 8, d += 8, s += 8)
        memcpy(d, s, 8);
    for (; size; size--)
        *d++ = *s++;
}

/* Zeroes size <= TES__SMALL_BYTES bytes without calling into libc. */
static inline void tes__zero_small(void *dst, size_t size)
{
    unsigned char *d = dst;
    switch (size) {
    case 4: memset(d, 0, 4); return;
    case 8: memset(d, 0, 8); return;
    case 12: memset(d, 0, 12); return;
    case 16: memset(d, 0, 16); return;
    default: break;
    }
    for (; size >= 8; size -= 8, d += 8)
        memset(d, 0, 8);
    for (; size; size--)
        *d++ = 0;
}

#endif
