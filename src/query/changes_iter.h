/*
 * Change filters and stamping in queries (see world/changes.h for the
 * stamps). A query with change terms is always a table walk (change
 * filters are on tracked table components, AND terms only); its chunks
 * are the runs of rows whose stamps pass every filter. The iteration
 * reads a block's summary first and its stamps only when the summary says
 * something in the block is newer than the query's previous iteration.
 * Chunks handed out through a tracked TES_INOUT/TES_OUT term are stamped
 * as changed. Queries without either pay nothing: they keep their walks.
 * The matcher's own test of sparse change terms (m->changes) is query.c's:
 * this file stands on the matcher, as every walk does.
 */
#ifndef TES_QUERY_CHANGES_ITER_H
#define TES_QUERY_CHANGES_ITER_H

#include "query/query.h"

/* tes_iter_t.priv_change_live bits. */
#define TES__CHANGE_WINDOW 1u /* the iteration ends a change window */
#define TES__CHANGE_STAMP 2u  /* chunks are stamped as written */
#define TES__CHANGE_HOLD 4u   /* the window is ended later, by the scheduler */
#define TES__CHANGE_ALL 8u    /* the query's first iteration: every row passes */

/* Validates the change filters of d's terms and fills q's change and
 * stamp lists (after the terms are set up). TES_OK or TES_ERR_INVALID
 * recorded with a detail. */
int tes__query_changes_setup(tes_query_t *q, const tes_query_desc_t *d);

/* A live iteration of q starts: advances the tick for a query with
 * change terms (the new tick goes to *tick, which is left alone
 * otherwise) and returns the tes_iter_t.priv_change_live bits to add
 * (TES__CHANGE_WINDOW, TES__CHANGE_STAMP). It takes no iterator: the
 * caller builds the one it returns by value without taking its address,
 * so that the compiler builds it in the caller's variable instead of
 * copying its ~4.6 KB there. */
uint32_t tes__changes_iter_begin(tes_query_t *q, uint32_t *tick);
/* A live iteration ends (after its deferred changes were applied). */
void tes__changes_iter_end(tes_iter_t *it);
/* Ends a change window held by the scheduler (TES__CHANGE_HOLD): the
 * query remembers the current tick, which then advances. */
void tes__query_changes_end(tes_query_t *q);

/* Arms the matcher's change filters on sparse terms for a walk of it
 * (nothing for a query without them, or in its first iteration, where
 * every entity passes). */
static inline void tes__changes_match_setup(const tes_iter_t *it, tes__match_t *m)
{
    m->changes = it->priv_query->sparse_change_count && !(it->priv_change_live & TES__CHANGE_ALL);
    m->since = it->priv_change_since;
}

/* The first position at or after p of the packed walk driven by term d
 * that may pass the change filters: when d is a sparse change term, the
 * blocks whose summary shows nothing newer than m->since are stepped
 * over without reading their stamps (the summary bounds "added" ticks
 * too, which are never newer than "changed" ones). */
uint32_t tes__changes_skip_slow(const tes_query_t *q, const tes__match_t *m, int32_t d, uint32_t p);
static inline uint32_t tes__changes_skip(const tes_query_t *q, const tes__match_t *m, int32_t d,
                                         uint32_t p)
{
    return m->changes && d >= 0 && q->terms[d].change ? tes__changes_skip_slow(q, m, d, p) : p;
}

/* The next chunk of a change-filtered table walk, or false. */
bool tes__changes_next_chunk(tes_iter_t *it);
/* Stamps the chunk just handed out in every tracked written term. */
void tes__changes_stamp_chunk(tes_iter_t *it);

#endif
