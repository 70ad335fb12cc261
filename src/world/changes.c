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

/* A value being added: both its ticks are now. */
static void stamp_ctor(void *ptr, int32_t count, void *ctx)
{
    tes_world_t *w = ctx;
    fill(ptr, count, tes__tick_now(w));
    stamps_moved(w);
}

/* A copied value (clone, instantiate) is a new value: added now. */
static void stamp_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    (void)src;
    stamp_ctor(dst, count, ctx);
}

/* A relocated value keeps its ticks. */
static void stamp_move(void *dst, void *src, int32_t count, void *ctx)
{
    memcpy(dst, src, (size_t)count * sizeof(uint32_t));
    stamps_moved(ctx);
}

void tes__changes_init(tes_world_t *w)
{
    atomic_store_explicit(&w->changes.tick, 1, memory_order_relaxed);
    atomic_store_explicit(&w->changes.epoch, 1, memory_order_relaxed);
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
    tes__table_t *t = tes__slot_table(w, slot);
    if (tes__table_column_index(t, c) < 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_mark_changed: the entity has no '%.64s'", info->name);
    tes__stamp_rows(w, t, slot->row, 1, info);
    return TES_OK;
}
