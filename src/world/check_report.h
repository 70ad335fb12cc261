/*
 * How an invariant check reports: the one macro every part of
 * tes__world_check uses (check.c and the parts it calls in other files),
 * kept apart from check.h so that a part can report without naming the
 * whole check that calls it. Failure output only: stderr, then
 * TES_ERR_INVALID.
 */
#ifndef TES_WORLD_CHECK_REPORT_H
#define TES_WORLD_CHECK_REPORT_H

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

#endif
