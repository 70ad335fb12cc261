/*
 * tes__world_check: the world's full invariant check, for tests, the fuzzer
 * and the allocation-failure sweep. It walks every structure (entity index,
 * free list, tables, sparse stores) and verifies they agree. O(everything):
 * never call it on a hot path.
 */
#ifndef TES_WORLD_CHECK_H
#define TES_WORLD_CHECK_H

#include <stdio.h>

#include "tessera.h"

/* The check functions' one way to fail: when cond is false, print the
 * checker's name and the printf-style message to stderr and return
 * TES_ERR_INVALID from the calling function. */
#define TES__CHECK(who, cond, ...)                                                       \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, who ": " __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                         \
            return TES_ERR_INVALID;                                                      \
        }                                                                                \
    } while (0)

/* Returns TES_OK, or TES_ERR_INVALID after printing the first broken
 * invariant to stderr. */
int tes__world_check(const tes_world_t *w);

#endif
