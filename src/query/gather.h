/*
 * Gathered chunks for sparse-driven walks (item "W8": Position on every
 * entity, Velocity on 10%). When the driving pool's matches sit scattered
 * in another term's store, no two consecutive matches have contiguous
 * fields and a plain walk yields chunks of one entity. Instead the walk
 * gathers up to q->gather_k matches: their values are copied into the
 * iterator's own buffer (tes_iter_t.priv_gather), one array per scattered
 * term, so every field is again a plain array aligned with it.entities;
 * the values of terms that are not TES_IN are copied back to the stores
 * before the next chunk is made or when the iterator ends: each value the
 * loop changed, unless the stored value itself changed meanwhile (a write
 * through tes_get_mut), which is then kept. Copies are bitwise, so only
 * terms without copy or move hooks are gathered, and never a `stable` one
 * (its address is its contract).
 *
 * The buffer's layout depends only on the query and the walk's driver
 * (per gathered term: its values, then for a written term their originals
 * as gathered and the addresses they came from), so the write-back needs
 * nothing but the iterator. The driver's field is always a slice of its
 * own store, and so is any other term's whose values happen to be
 * contiguous: only scattered values are copied.
 */
#ifndef TES_QUERY_GATHER_H
#define TES_QUERY_GATHER_H

#include "query/query.h"

/* Chunks shorter than this are worth gathering. */
#define TES__GATHER_MIN 8u
/* The longest gathered chunk: long enough that the per-chunk costs (the
 * first entity's lookups, the user's call) are small beside the per-entity
 * ones, short enough that the values stay in L1 between the copy in, the
 * user's loop and the write-back. */
#define TES__GATHER_MAX 64u

/* Plans q's gathering: sets gather_k and gather_cap (0 when the query
 * cannot gather). */
void tes__gather_plan(tes_query_t *q);

/* Builds a gathered chunk over entities[0..avail) for the packed walk
 * (base_walk.c): over a pool (it->priv_driver >= 0) consecutive live entities of
 * the driving pool from position driver_pos that match and pass the
 * filters (hide) or, when `known`, that are all known to match (a group
 * walking a pool that holds exactly its members); over a group's member
 * set (priv_driver < 0, known) consecutive members. pos holds the first entity's positions. Returns the
 * chunk's length (fields, count and entities set; the caller moves its
 * cursor), or 0 when gathering would not make a longer chunk than `run`. */
uint32_t tes__gather_chunk(tes_iter_t *it, const tes_entity_t *entities, uint32_t avail,
                           uint32_t driver_pos, const uint32_t *pos, uint32_t run, uint8_t hide,
                           bool known);

/* Writes the previous gathered chunk's values back (terms not TES_IN). */
void tes__gather_flush(tes_iter_t *it);

#endif
