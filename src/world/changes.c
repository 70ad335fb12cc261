/*
 * Change detection's world half (see changes.h): the tick, the stamp
 * columns' hooks, stamping of explicit writes, tes_world_tick and
 * tes_mark_changed.
 */
#include "world/changes.h"

#include "world/last_error.h"

#include <string.h>

/* Any move or construction of stamps: summaries must be rebuilt before a
 * query trusts them again. */
static void stamps_moved(tes_world_t *w)
{
    atomic_fetch_add_explicit(&w->changes.epoch, 1, memory_order_relaxed);
}

static void fill(void *ptr, int32_t count, uint32_t tick)
{
    uint32_t *p = ptr;
    for (int32_t i = 0; i < count; i++)
        p[i] = tick;
}

/* Writes sum s's pending range into t's stamps: each row's "changed"
 * tick becomes the newer of its own and the pending one (a row written
 * after the range was recorded keeps its newer tick). Rows past the
 * table's capacity are left alone (the table may have been emptied and
 * refilled meanwhile: any row constructed since has a newer tick). */
static void settle_sum(const tes_world_t *w, tes__table_t *t, tes__stamp_sum_t *s)
{
    const tes__component_t *c = tes__registry_get(&w->components, s->comp);
    int32_t col = tes__table_column_index(t, c->stamps);
    tes__assert(col >= 0);
    uint32_t *stamps = (uint32_t *)(void *)t->columns[col].data;
    uint32_t rows = s->pend_rows < t->cap ? s->pend_rows : t->cap, tick = s->pend_tick;
    for (uint32_t r = 0; r < rows; r++)
        if (!tes__tick_after(stamps[r], tick))
            stamps[r] = tick;
    s->pend_rows = 0;
}

/* Settles every pending range of the table at pending[i] and drops it
 * from the list. */
static void settle_at(tes_world_t *w, uint32_t i)
{
    tes__table_t *t = w->changes.pending[i];
    for (uint32_t k = 0; k < t->sum_count; k++)
        if (t->sums[k].pend_rows)
            settle_sum(w, t, &t->sums[k]);
    w->changes.pending[i] = w->changes.pending[--w->changes.pending_count];
}

void tes__changes_settle_slow(tes_world_t *w, const tes__table_t *t)
{
    for (uint32_t i = 0; i < w->changes.pending_count; i++)
        if (w->changes.pending[i] == t) {
            settle_at(w, i);
            return;
        }
}

void tes__changes_settle_all(tes_world_t *w)
{
    while (w->changes.pending_count)
        settle_at(w, w->changes.pending_count - 1);
}

/* The move hook is about to read or overwrite the stamps at p: a pending
 * range of the table whose block holds p is settled first, so that a
 * row moved out carries the pending tick and an older row moved in is not
 * raised by it later. (Constructed and copied rows need none of this:
 * they are stamped now, which a later settle keeps.) */
static void settle_at_address(tes_world_t *w, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (uint32_t i = 0; i < w->changes.pending_count; i++) {
        const tes__table_t *t = w->changes.pending[i];
        uintptr_t lo = (uintptr_t)t->block;
        if (a >= lo && a - lo < t->block_size) {
            settle_at(w, i);
            return;
        }
    }
}

/* A value being added: both its ticks are now. */
static void stamp_ctor(void *ptr, int32_t count, void *ctx)
{
    tes_world_t *w = ctx;
    /* Now is newer than any pending tick: a later settle leaves these. */
    fill(ptr, count, tes__tick_now(w));
    stamps_moved(w);
}

/* A copied value (clone, instantiate) is a new value: added now. */
static void stamp_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    (void)src;
    stamp_ctor(dst, count, ctx);
}

/* A relocated value keeps its ticks (pending ones included). */
static void stamp_move(void *dst, void *src, int32_t count, void *ctx)
{
    tes_world_t *w = ctx;
    if (w->changes.pending_count) {
        settle_at_address(w, src);
        settle_at_address(w, dst);
    }
    memcpy(dst, src, (size_t)count * sizeof(uint32_t));
    stamps_moved(w);
}

void tes__changes_init(tes_world_t *w)
{
    atomic_store_explicit(&w->changes.tick, 1, memory_order_relaxed);
    atomic_store_explicit(&w->changes.epoch, 1, memory_order_relaxed);
    w->components.tick = &w->changes.tick;
    w->components.stamp_hooks = (tes_hooks_t){
        .ctor = stamp_ctor, .copy = stamp_copy, .move = stamp_move, .ctx = w};
}

void tes__stamp_rows(tes_world_t *w, tes__table_t *t, uint32_t row, uint32_t n,
                     const tes__component_t *c)
{
    if (!n)
        return;
    int32_t col = tes__table_column_index(t, c->stamps);
    tes__assert(col >= 0 && row + n <= t->count);
    uint32_t tick = tes__tick_now(w);
    fill((uint32_t *)(void *)t->columns[col].data + row, (int32_t)n, tick);
    tes__stamp_sum_t *s = tes__table_sum(t, c->id);
    uint32_t last = (row + n - 1) >> TES__STAMP_BLOCK_BITS;
    for (uint32_t b = row >> TES__STAMP_BLOCK_BITS; b <= last && b < s->blocks; b++)
        atomic_store_explicit(&s->max[b], tick, memory_order_relaxed);
}

/* Rows of a whole-table chunk below this (one summary block) are stamped
 * at once: a pending range pays off only when it saves a longer fill. */
#define LAZY_MIN_ROWS 64u

void tes__stamp_chunk_rows(tes_world_t *w, tes__table_t *t, uint32_t row, uint32_t n,
                           const tes__component_t *c)
{
    tes__stamp_sum_t *s = tes__table_sum(t, c->id);
    /* Worker threads (w->parallel) stamp at once: the pending list is
     * the calling thread's, and settled before workers start. */
    if (row || n != t->count || n < LAZY_MIN_ROWS || w->parallel) {
        tes__stamp_rows(w, t, row, n, c);
        return;
    }
    if (!s->pend_rows) {
        /* The table joins the list unless another of its components is
         * already pending there; a full list stamps at once. */
        bool listed = false;
        for (uint32_t i = 0; i < t->sum_count && !listed; i++)
            listed = t->sums[i].pend_rows != 0;
        if (!listed) {
            if (w->changes.pending_count == TES__STAMP_PENDING) {
                tes__stamp_rows(w, t, row, n, c);
                return;
            }
            w->changes.pending[w->changes.pending_count++] = t;
        }
    }
    /* A pending range is simply replaced: its live rows are all in this
     * one, whose tick is newer (rows past the table's count hold no value:
     * one constructed there gets its own ticks). */
    uint32_t tick = tes__tick_now(w);
    s->pend_tick = tick;
    s->pend_rows = n;
    uint32_t blocks = (n - 1) >> TES__STAMP_BLOCK_BITS;
    for (uint32_t b = 0; b <= blocks && b < s->blocks; b++)
        atomic_store_explicit(&s->max[b], tick, memory_order_relaxed);
}

void tes__stamp_added(tes_world_t *w, tes__table_t *t, uint32_t row, uint32_t n)
{
    if (!(t->flags & TES__TABLE_TRACKED) || !n)
        return;
    uint32_t tick = tes__tick_now(w);
    for (uint32_t i = 0; i < t->sum_count; i++) {
        const tes__component_t *c = tes__registry_get(&w->components, t->sums[i].comp);
        int32_t col = tes__table_column_index(t, c->stamps);
        fill((uint32_t *)(void *)t->columns[col + 1].data + row, (int32_t)n, tick);
        tes__stamp_rows(w, t, row, n, c);
    }
}

void tes__stamp_entity(tes_world_t *w, tes_entity_t e, const tes__component_t *c)
{
    if (c->storage == TES_STORAGE_SPARSE) {
        uint32_t pos = tes__sparse_set_find(&c->store.set, e);
        if (pos != TES_NULL_INDEX)
            tes__sparse_store_stamp_now(&c->store, pos, false);
        return;
    }
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return;
    tes__table_t *t = tes__slot_table(w, slot);
    if (tes__table_column_index(t, c->id) >= 0)
        tes__stamp_one(w, t, slot->row, c);
}

uint32_t tes_world_tick(const tes_world_t *w) { return w ? tes__tick_now(w) : 0; }

int tes_mark_changed(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return TES_ERR_INVALID;
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return tes__fail_stale(w, e);
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info || info->hidden)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_mark_changed: component id %u is not registered in this world", (unsigned)c);
    if (!info->track_changes)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_mark_changed: component '%.64s' does not track changes (register it with track_changes)", info->name);
    if (info->storage == TES_STORAGE_SPARSE) {
        uint32_t pos = tes__sparse_set_find(&info->store.set, e);
        if (pos == TES_NULL_INDEX)
            return tes__fail_detail(w, TES_ERR_INVALID, "tes_mark_changed: the entity has no '%.64s'", info->name);
        tes__sparse_store_stamp_now(&info->store, pos, false);
        return TES_OK;
    }
    tes__table_t *t = tes__slot_table(w, slot);
    if (tes__table_column_index(t, c) < 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_mark_changed: the entity has no '%.64s'", info->name);
    tes__stamp_rows(w, t, slot->row, 1, info);
    return TES_OK;
}
