/*
 * tes__world_check: the world's full invariant check, for tests, the fuzzer
 * and the allocation-failure sweep. It walks every structure (entity index,
 * free list, tables, sparse stores) and verifies they agree. O(everything):
 * never call it on a hot path. Each part of the world keeps its own
 * check beside its code and reports through check_report.h, which is
 * below this file: check.c calls the parts, the parts never call check.c.
 */
#ifndef TES_WORLD_CHECK_H
#define TES_WORLD_CHECK_H

#include "tessera.h"
#include "world/check_report.h"

/* Returns TES_OK, or TES_ERR_INVALID after printing the first broken
 * invariant to stderr. */
int tes__world_check(const tes_world_t *w);

#endif
