/*
 * The plain recorder: a deferred tes_set of a component with no hook and
 * no watcher, the bulk of a system's queue, recorded with no entity or
 * pair record (they are written when something asks: see `paired` in
 * defer_types.h). quiet_ops.c calls it while the world is only deferred.
 * The common case is three compares, a bump in the arena and a few
 * stores, a leaf that saves no registers; anything short of room, a stale
 * entity, a large value or a tag goes the slow way, and a tag is handed to
 * the generic set, which is why this stands above component_ops.c and
 * apart from the queue it writes into (defer.c).
 */
#include "world/defer.h"
#include "world/last_error.h"
#include "world/quiet_word.h"
#include "world/world.h"

/* How far plain sets may be queued with no other room check (see
 * `plain_room`): below room, and while each new command's entity record
 * (written when the records catch up) still fits in ents, that is while
 * ent_count + (count - paired) + 1 <= ent_cap. Right after a reserve of
 * one command, so at least count + 1. */
static uint32_t plain_room_of(const tes__defer_t *d)
{
    uint64_t records = (uint64_t)d->ent_cap + d->paired - d->ent_count;
    return records < d->room ? (uint32_t)records : d->room;
}

/* Writes the plain set of component comp on e, its value staged already,
 * as command `at` (the next one, below plain_room) and chains it. */
static tes__always_inline int queue_plain(tes__defer_t *d, uint32_t at, tes_entity_t e,
                                          tes_comp_t comp, void *staged)
{
    tes__assert(at == d->count && at < d->room);
    d->count = at + 1;
    tes__op_t *op = &d->ops[at];
    op->kind = TES__OP_SET;
    op->merge = TES__OP_MERGED;
    op->comp = comp;
    op->next = TES__OP_END;
    op->e = e;
    op->value = staged;
    tes__defer_chain(d, at, e);
    return TES_OK;
}

/* tes__defer_set_plain when the queue, its entity lookup or its arena
 * needs room first, the value is large, the entity is stale, or the
 * component is a tag. Out of line: the common case stays a leaf. */
static tes__noinline int set_plain_slow(tes_world_t *w, tes_entity_t e,
                                        const tes__component_t *info, const void *value)
{
    if (!tes__entity_slot(&w->entities, e))
        return tes__fail_stale(w, e);
    if (!info->size) /* a tag stages nothing: the generic set queues it */
        return tes__set_generic(w, e, info->id, value);
    tes__defer_t *d = &w->defer;
    if (tes__defer_reserve(w, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    d->plain_room = plain_room_of(d);
    /* No hook: the staged value is a bitwise copy, and nothing runs between
     * the reserve and the push. */
    void *staged = tes__arena_alloc(&d->arena, &w->alloc, info->size, info->align);
    if (!staged)
        return tes__fail(w, TES_ERR_NOMEM);
    tes__copy_bytes(staged, value, info->size);
    return queue_plain(d, d->count, e, info->id, staged);
}

int tes__defer_set_plain(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    const tes__component_t *info = w->components.items[c];
    tes__assert(tes__quiet_class(tes__quiet_word(w)) == 1 && !w->lanes_live && !w->parallel &&
                info->dispatch == TES__DISPATCH_TABLE && value);
    tes__defer_t *d = &w->defer;
    /* Three compares cover the room (plain_room), the entity lookup's
     * (an entity made since the last reserve may lie past it) and the
     * staged value's (a bump in the arena's current block); anything short
     * goes the slow way, which changes nothing before it reserves. So do
     * tags and values past TES__SMALL_BYTES (size - 1 wraps for 0): the
     * copy here is inline moves, no call, and this stays a leaf that
     * saves no registers. */
    uint32_t at = d->count, size = info->size;
    uintptr_t fit;
    if (!tes__entity_slot(&w->entities, e) || at >= d->plain_room ||
        tes_entity_index(e) >= d->ent_at_cap || size - 1u >= TES__SMALL_BYTES ||
        !(fit = tes__arena_fit(&d->arena, size, info->align)))
        return set_plain_slow(w, e, info, value);
    void *staged = tes__arena_take(&d->arena, fit, size);
    tes__copy_small(staged, value, size);
    return queue_plain(d, at, e, info->id, staged);
}
