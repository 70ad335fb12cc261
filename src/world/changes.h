/*
 * Change detection: the world's tick, the stamps of tracked components and
 * the per-block summaries that let a change filter skip rows.
 *
 * A tracked component's stamps are two hidden companion columns of every
 * table that holds it (component.h): "changed" and "added" ticks, 4 bytes
 * each. Because they are ordinary columns with hooks, every row move,
 * swap-and-pop, growth, clone and instantiation carries or writes them
 * with no code of its own: the ctor hook stamps a value being added (both
 * ticks), the copy hook stamps a copy as added, the move hook keeps the
 * ticks. Explicit writes (tes_set, tes_ensure, tes_get_mut, deferred sets
 * applied at a flush, chunks handed out for writing, tes_mark_changed) go
 * through tes__stamp_rows, which also raises the summary of the rows'
 * blocks. Untracked components take none of these paths: their tables
 * have no stamp columns and their calls keep the quiet dispatch.
 *
 * Tuned for frames where few values change: a query that filters on
 * changes reads one summary word per 64 rows while nothing moved, and
 * reads the stamps only of the blocks that have something new.
 */
#ifndef TES_WORLD_CHANGES_H
#define TES_WORLD_CHANGES_H

#include "world/world.h"

#include <stdatomic.h>

/* Sets the tick to 1 and gives the registry the stamp columns' hooks. */
void tes__changes_init(tes_world_t *w);

static inline uint32_t tes__tick_now(const tes_world_t *w)
{
    return atomic_load_explicit(&w->changes.tick, memory_order_relaxed);
}

/* Advances the tick by one and returns the new value. */
static inline uint32_t tes__tick_advance(tes_world_t *w)
{
    return atomic_fetch_add_explicit(&w->changes.tick, 1, memory_order_relaxed) + 1;
}

/* True when a stamp is newer than `since`, modulo 2^32: a stamp more than
 * 2^31 ticks older reads as newer (changed), never as a miss. */
static inline bool tes__tick_after(uint32_t stamp, uint32_t since)
{
    return (int32_t)(stamp - since) > 0;
}

/* tes__stamp_rows for one row, inlined where a single write is stamped
 * (tes_set's quiet form): the stamp column is one byte load away for a
 * small id, and the summary is the table's first for a table with one
 * tracked component. */
static inline void tes__stamp_one(tes_world_t *w, tes__table_t *t, uint32_t row,
                                  const tes__component_t *c)
{
    int32_t col = tes__table_column_index(t, c->stamps);
    uint32_t tick = tes__tick_now(w);
    ((uint32_t *)(void *)t->columns[col].data)[row] = tick;
    tes__stamp_sum_t *s = t->sums[0].comp == c->id ? &t->sums[0] : tes__table_sum(t, c->id);
    uint32_t b = row >> TES__STAMP_BLOCK_BITS;
    if (b < s->blocks)
        atomic_store_explicit(&s->max[b], tick, memory_order_relaxed);
}

/* Stamps rows [row, row + n) of t's tracked component c as changed at the
 * current tick and raises their blocks' summary. t must hold c. */
void tes__stamp_rows(tes_world_t *w, tes__table_t *t, uint32_t row, uint32_t n,
                     const tes__component_t *c);

/* Stamps rows [row, row + n) of t's tracked c as changed, for a chunk
 * handed out through a written term: a chunk that is the whole table (and
 * long) is recorded as the summary's pending range instead of filled
 * (tes__stamp_sum_t.pend_rows), else this is tes__stamp_rows. */
void tes__stamp_chunk_rows(tes_world_t *w, tes__table_t *t, uint32_t row, uint32_t n,
                           const tes__component_t *c);

/* Writes t's pending ranges into its stamps (before a read of them);
 * the inline test is the common "nothing pending anywhere". */
void tes__changes_settle_slow(tes_world_t *w, const tes__table_t *t);
static inline void tes__changes_settle(tes_world_t *w, const tes__table_t *t)
{
    if (w->changes.pending_count)
        tes__changes_settle_slow(w, t);
}
/* Writes every pending range into its stamps. */
void tes__changes_settle_all(tes_world_t *w);

/* Stamps rows [row, row + n) of t as added now, in every tracked column
 * (both ticks), raising their summaries: for creation paths that fill
 * only the columns they were given (bulk spawns, a snapshot load). Does
 * nothing for a table that tracks nothing. */
void tes__stamp_added(tes_world_t *w, tes__table_t *t, uint32_t row, uint32_t n);

/* Stamps e's value of tracked c as changed, if e holds it in a table. */
void tes__stamp_entity(tes_world_t *w, tes_entity_t e, const tes__component_t *c);

#endif
