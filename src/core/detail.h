/*
 * Error details: the sentence tes_last_error_detail() returns. A failure
 * that reports TES_ERR_INVALID also says which argument was wrong and what
 * its value was, formatted into a small fixed buffer that lives in the
 * world, so recording a detail never allocates and cannot fail (a long
 * sentence is cut short). Lower layers that cannot see the world write
 * into a buffer the world hands them.
 */
#ifndef TES_CORE_DETAIL_H
#define TES_CORE_DETAIL_H

#include <stddef.h>

#define TES__DETAIL_SIZE 256

typedef struct tes__detail {
    char text[TES__DETAIL_SIZE];
} tes__detail_t;

#if defined(__GNUC__) || defined(__clang__)
#define TES__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TES__PRINTF(fmt, args)
#endif

/* Formats into d (NULL: nothing is recorded). Never fails. */
void tes__detail_set(tes__detail_t *d, const char *fmt, ...) TES__PRINTF(2, 3);

#endif
