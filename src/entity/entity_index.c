/*
 * Entity index growth and lifetime; the per-entity operations are inline in
 * entity_index.h. The slot array grows by doubling through the world's
 * allocator; a reserve is the only place that can fail.
 */
#include "entity/entity_index.h"

#include "core/checked.h"

#include <string.h>

void tes__entity_index_init(tes__entity_index_t *ei, uint32_t generation_limit,
                            uint32_t entity_limit)
{
    memset(ei, 0, sizeof *ei);
    ei->next = TES_NULL_INDEX;
    ei->generation_limit = generation_limit ? generation_limit : TES_MAX_GENERATION;
    if (ei->generation_limit > TES_MAX_GENERATION)
        ei->generation_limit = TES_MAX_GENERATION;
    /* Index TES_NULL_INDEX is reserved, so at most 2^32 - 1 slots. */
    ei->entity_limit = entity_limit ? entity_limit : TES_NULL_INDEX;
}

void tes__entity_index_fini(tes__entity_index_t *ei, tes__alloc_t *a)
{
    tes__free(a, ei->slots, (size_t)ei->cap * sizeof *ei->slots);
    tes__free(a, ei->instances, (size_t)ei->instance_cap * sizeof *ei->instances);
    ei->instances = NULL;
    ei->instance_cap = 0;
    ei->slots = NULL;
    ei->cap = ei->room = ei->count = 0;
}

int tes__entity_reserve(tes__entity_index_t *ei, tes__alloc_t *a, uint32_t n)
{
    if (n <= ei->available)
        return TES_OK;
    uint64_t fresh = (uint64_t)n - ei->available;
    uint64_t need = (uint64_t)ei->count + fresh;
    if (need > ei->entity_limit)
        return TES_ERR_FULL;
    if (need <= ei->room)
        return TES_OK;
    /* Grow to the capacity the slot array would double to, and grow the
     * instance array to it first: if the slots then fail, a longer instance
     * array is merely room for later. Invariant: instance_cap >= cap. */
    uint64_t target = ei->cap ? (uint64_t)ei->cap * 2 : 1024;
    if (target < need)
        target = need;
    if (target > UINT32_MAX)
        target = UINT32_MAX;
    if (ei->instances && tes__grow(a, (void **)&ei->instances, &ei->instance_cap, target,
                                   sizeof *ei->instances, 1024))
        return TES_ERR_NOMEM;
    int rc = tes__grow(a, (void **)&ei->slots, &ei->cap, target, sizeof *ei->slots, 1024);
    if (rc)
        return rc;
    ei->room = ei->cap < ei->entity_limit ? ei->cap : ei->entity_limit;
    return TES_OK;
}

int tes__entity_track_instances(tes__entity_index_t *ei, tes__alloc_t *a)
{
    if (ei->instances)
        return TES_OK;
    uint32_t cap = ei->cap > 64 ? ei->cap : 64;
    size_t bytes;
    if (!tes__size_mul(&bytes, cap, sizeof *ei->instances))
        return TES_ERR_NOMEM;
    ei->instances = tes__calloc(a, bytes);
    if (!ei->instances)
        return TES_ERR_NOMEM;
    ei->instance_cap = cap;
    return TES_OK;
}


void tes__entity_create_n(tes__entity_index_t *ei, uint32_t n, uint32_t table, uint32_t first_row,
                          uint32_t row_step, tes_entity_t *out)
{
    uint32_t i = 0;
    uint32_t row = first_row;
    for (; i < n && ei->available; i++, row += row_step)
        out[i] = tes__entity_create(ei, table, row);
    /* Fresh slots: generation 1, written whole so the loop stays simple. */
    uint32_t fresh = n - i;
    tes__assert(ei->count + fresh <= ei->room);
    tes__slot_t *slots = ei->slots + ei->count;
    tes_entity_t *dst = out + i;
    uint32_t base = ei->count;
    if (row_step == 0) {
        for (uint32_t k = 0; k < fresh; k++)
            slots[k] = (tes__slot_t){1, table, row};
    } else {
        for (uint32_t k = 0; k < fresh; k++)
            slots[k] = (tes__slot_t){1, table, row + k};
    }
    if (ei->instances)
        memset(ei->instances + base, 0, (size_t)fresh * sizeof *ei->instances);
    for (uint32_t k = 0; k < fresh; k++)
        dst[k] = tes_entity_make(base + k, 1);
    ei->count += fresh;
    ei->alive += fresh;
}

void tes__entity_free_n(tes__entity_index_t *ei, const tes_entity_t *es, uint32_t n)
{
    if (ei->instances) {
        for (uint32_t i = 0; i < n; i++)
            tes__entity_free(ei, es[i]);
        return;
    }
    tes__slot_t *slots = ei->slots;
    uint32_t next = ei->next, limit = ei->generation_limit, freed = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t index = tes_entity_index(es[i]);
        tes__slot_t *s = &slots[index];
        s->table = TES__SLOT_FREE;
        if (tes__unlikely(s->generation >= limit)) {
            s->generation = TES_TOMBSTONE; /* retired for good */
            continue;
        }
        s->generation++;
        s->row = next;
        next = index;
        freed++;
    }
    ei->retired += n - freed;
    ei->available += freed;
    ei->alive -= n;
    ei->next = next;
}
