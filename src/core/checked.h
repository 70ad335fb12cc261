/*
 * Checked size arithmetic. Every byte count Tessera computes from a count
 * and an element size (a column block, a page, a queue, a scratch array)
 * goes through these helpers, so a product or sum that does not fit in
 * size_t is reported instead of wrapping to a small number that an
 * allocator would happily grant. size_t may be 32 bits wide: a count that
 * fits in uint32_t times a component size easily overflows it there.
 *
 * Each helper returns true and writes the result when it fits, false (and
 * leaves *out alone) when it does not; callers turn false into
 * TES_ERR_NOMEM (the request is larger than any allocation can be) or
 * TES_ERR_INVALID (the input itself is unreasonable).
 */
#ifndef TES_CORE_CHECKED_H
#define TES_CORE_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* *out = a * b, unless that overflows size_t. */
static inline bool tes__size_mul(size_t *out, size_t a, size_t b)
{
    if (b && a > SIZE_MAX / b)
        return false;
    *out = a * b;
    return true;
}

/* *out = a + b, unless that overflows size_t. */
static inline bool tes__size_add(size_t *out, size_t a, size_t b)
{
    if (a > SIZE_MAX - b)
        return false;
    *out = a + b;
    return true;
}

/* *out = x rounded up to a multiple of align (a power of two, or 0 for
 * none), unless that overflows size_t. */
static inline bool tes__size_align(size_t *out, size_t x, size_t align)
{
    if (align <= 1) {
        *out = x;
        return true;
    }
    size_t up;
    if (!tes__size_add(&up, x, align - 1))
        return false;
    *out = up & ~(align - 1);
    return true;
}

/* *out = a * b + c, unless any step overflows size_t. */
static inline bool tes__size_mul_add(size_t *out, size_t a, size_t b, size_t c)
{
    size_t product;
    return tes__size_mul(&product, a, b) && tes__size_add(out, product, c);
}

/* a as a size_t, unless a 64-bit count does not fit (32-bit size_t). */
static inline bool tes__size_from_u64(size_t *out, uint64_t a)
{
#if SIZE_MAX < UINT64_MAX
    if (a > SIZE_MAX)
        return false;
#endif
    *out = (size_t)a;
    return true;
}

#endif
