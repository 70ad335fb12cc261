/*
 * The public iteration's internal face (iter.c): a walk over a query's
 * chunks, as an iteration yields them, without a deferral level, for
 * library code during which no user code runs (counting, tes_destroy_matching),
 * also from inside a structural call.
 */
#ifndef TES_QUERY_ITER_H
#define TES_QUERY_ITER_H

#include "query/query.h"

/* Start, then call next until it returns false; nothing to end, unless the
 * walk is left before its end: then end it (frees a by-depth walk's
 * state). */
tes_iter_t tes__query_walk_start(tes_query_t *q);
bool tes__query_walk_next(tes_iter_t *it);
void tes__query_walk_end(tes_iter_t *it);

#endif
