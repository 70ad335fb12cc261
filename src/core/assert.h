/*
 * Internal invariant checks. tes__assert guards conditions that only a bug
 * inside Tessera can break; it is compiled out when NDEBUG is defined (the
 * Release build), so it must never guard user input: bad input is reported
 * with a status code instead.
 */
#ifndef TES_CORE_ASSERT_H
#define TES_CORE_ASSERT_H

#ifdef NDEBUG
#define tes__assert(cond) ((void)0)
#else
#include <stdio.h>
#include <stdlib.h>
#define tes__assert(cond)                                                             \
    ((cond) ? (void)0                                                                 \
            : (fprintf(stderr, "tessera: invariant failed: %s (%s:%d)\n", #cond,       \
                       __FILE__, __LINE__),                                           \
               abort()))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define tes__likely(x) __builtin_expect(!!(x), 1)
#define tes__unlikely(x) __builtin_expect(!!(x), 0)
/* Keeps a cold path out of its caller, so the hot path needs no stack frame. */
#define tes__noinline __attribute__((noinline))
/* Makes a body written once for many constant arguments (a value size, say)
 * compile into one specialised copy per caller, and inlines a helper the
 * compiler would call where the call would cost its caller a stack frame
 * (a short hot path built from a few helpers). */
#define tes__always_inline inline __attribute__((always_inline))
#else
#define tes__likely(x) (x)
#define tes__unlikely(x) (x)
#define tes__noinline
#define tes__always_inline inline
#endif

#endif
