/*
 * tes__world_check: the world's full invariant check, for tests, the fuzzer
 * and the allocation-failure sweep. It walks every structure (entity index,
 * free list, tables, sparse stores) and verifies they agree. O(everything):
 * never call it on a hot path.
 */
#ifndef TES_WORLD_CHECK_H
#define TES_WORLD_CHECK_H

#include "tessera.h"

/* Returns TES_OK, or TES_ERR_INVALID after printing the first broken
 * invariant to stderr. */
int tes__world_check(const tes_world_t *w);

#endif
