/*
 * The entity index: one 12-byte slot per entity index, as seeds 000 and 003
 * describe. A live slot holds the entity's generation and location (table,
 * row). The prefab instance each entity belongs to sits in a parallel array
 * that exists only once a world uses instances, so worlds without prefabs
 * pay nothing for it (and every world gets denser slots for random access). Free slots form an implicit
 * LIFO list threaded through the slot array itself: `next` is the head, each
 * free slot's `row` field holds the next free index, `available` counts them.
 * Create pops the head, destroy pushes the slot, so the most recently
 * destroyed index is reused first and recycling never allocates.
 *
 * Destroy bumps the slot's generation, so old handles no longer match. A
 * slot whose generation would pass the world's generation_limit is retired
 * for good (never put back on the list), so no 64-bit handle is ever issued
 * twice. Alive checks are two loads and two compares; they are inline
 * because every world call starts with one.
 */
#ifndef TES_ENTITY_INDEX_H
#define TES_ENTITY_INDEX_H

#include "core/alloc.h"
#include "core/assert.h"

/* `table` value of a free or retired slot. */
#define TES__SLOT_FREE UINT32_C(0xFFFFFFFF)
/* Bit set in `table` when the entity may own sparse components (a hint that
 * lets destroy skip the sparse stores for table-only entities). */
#define TES__SLOT_SPARSE UINT32_C(0x80000000)
#define TES__SLOT_TABLE_MASK UINT32_C(0x7FFFFFFF)

typedef struct tes__slot {
    uint32_t generation; /* live: the entity's; free: the next one to issue;
                            retired: TES_TOMBSTONE */
    uint32_t table;      /* table id | TES__SLOT_SPARSE, or TES__SLOT_FREE */
    uint32_t row;        /* live: row in the table; free: next free index */
} tes__slot_t;

typedef struct tes__entity_index {
    tes__slot_t *slots;
    uint32_t *instances; /* per slot: instance index + 1 (0 = none); NULL
                            until tes__entity_track_instances */
    uint32_t instance_cap; /* length of `instances`, >= cap while tracking */
    uint32_t count;     /* slots ever created */
    uint32_t cap;
    uint32_t room;      /* slots creatable without a reserve: min(cap, entity_limit) */
    uint32_t next;      /* head of the free list, TES_NULL_INDEX if empty */
    uint32_t available; /* free slots on the list */
    uint32_t alive;
    uint32_t retired;
    uint32_t generation_limit;
    uint32_t entity_limit; /* maximum slot count */
} tes__entity_index_t;

/* Slot state accessors: code outside this module (snapshots) reads and
 * writes slots through these, so the slot encoding can change in one place.
 * A slot is live (holds an entity), free (on the free list, `generation` is
 * the next one it issues) or retired (its generations are used up). */
static inline bool tes__slot_is_live(const tes__slot_t *s) { return s->table != TES__SLOT_FREE; }
static inline bool tes__slot_is_retired(const tes__slot_t *s)
{
    return s->table == TES__SLOT_FREE && s->generation == TES_TOMBSTONE;
}
/* The next index on the free list after free slot s (TES_NULL_INDEX at the end). */
static inline uint32_t tes__slot_free_next(const tes__slot_t *s) { return s->row; }
static inline void tes__slot_make_free(tes__slot_t *s, uint32_t generation, uint32_t next)
{
    *s = (tes__slot_t){generation, TES__SLOT_FREE, next};
}
static inline void tes__slot_make_retired(tes__slot_t *s)
{
    *s = (tes__slot_t){TES_TOMBSTONE, TES__SLOT_FREE, 0};
}
/* Whether a live slot carries the hint that it may own sparse components. */
static inline bool tes__slot_has_sparse_hint(const tes__slot_t *s)
{
    return (s->table & TES__SLOT_SPARSE) != 0;
}
static inline void tes__slot_make_live(tes__slot_t *s, uint32_t generation, uint32_t table,
                                       uint32_t row, bool sparse)
{
    *s = (tes__slot_t){generation, table | (sparse ? TES__SLOT_SPARSE : 0), row};
}

void tes__entity_index_init(tes__entity_index_t *ei, uint32_t generation_limit,
                            uint32_t entity_limit);
void tes__entity_index_fini(tes__entity_index_t *ei, tes__alloc_t *a);

/* Starts keeping an instance per slot (all 0). TES_OK or TES_ERR_NOMEM. */
int tes__entity_track_instances(tes__entity_index_t *ei, tes__alloc_t *a);

/* The instance (index + 1) of slot `index`, 0 for none. */
static inline uint32_t tes__entity_instance(const tes__entity_index_t *ei, uint32_t index)
{
    return ei->instances ? ei->instances[index] : 0;
}

/* Guarantees that the next n creates succeed without allocating. Returns
 * TES_ERR_FULL when the index space cannot hold them, TES_ERR_NOMEM when
 * the slot array cannot grow; nothing changes on failure. */
int tes__entity_reserve(tes__entity_index_t *ei, tes__alloc_t *a, uint32_t n);

/* Issues a handle, placed at (table, row) of its slot; requires a prior
 * successful reserve. A free index is taken first (LIFO), else a fresh
 * one. The one way an entity is created (tes__entity_create_n repeats it). */
static inline tes_entity_t tes__entity_create(tes__entity_index_t *ei, uint32_t table,
                                              uint32_t row)
{
    uint32_t index;
    tes__slot_t *s;
    if (ei->available) {
        index = ei->next;
        s = &ei->slots[index];
        ei->next = s->row;
        ei->available--;
    } else {
        tes__assert(ei->count < ei->room);
        index = ei->count++;
        s = &ei->slots[index];
        s->generation = 1;
        /* A freed index had its instance cleared by tes__entity_free. */
        if (ei->instances)
            ei->instances[index] = 0;
    }
    s->table = table;
    s->row = row;
    ei->alive++;
    return tes_entity_make(index, s->generation);
}

/* Issues n handles at once (reserved beforehand) into out and places them:
 * slot table `table`, rows first_row, first_row + row_step, ... Free slots
 * are taken first, in LIFO order (tes__entity_create), then fresh ones in a
 * tight loop that writes each slot whole. */
void tes__entity_create_n(tes__entity_index_t *ei, uint32_t n, uint32_t table, uint32_t first_row,
                          uint32_t row_step, tes_entity_t *out);

/* Walks the indices the next creates will use, in order: the free list
 * (LIFO), then fresh indices. Lets callers reserve per-index room (sparse
 * pages, links) before any entity exists. */
typedef struct tes__index_walk {
    const tes__entity_index_t *ei;
    uint32_t next;
    uint32_t free_left;
    uint32_t fresh;
} tes__index_walk_t;

static inline tes__index_walk_t tes__index_walk_start(const tes__entity_index_t *ei)
{
    return (tes__index_walk_t){ei, ei->next, ei->available, ei->count};
}

/* The next index; `ctx` is a tes__index_walk_t (callback-compatible). */
static inline uint32_t tes__index_walk_next(void *ctx)
{
    tes__index_walk_t *it = ctx;
    if (it->free_left) {
        uint32_t index = it->next;
        it->next = it->ei->slots[index].row;
        it->free_left--;
        return index;
    }
    return it->fresh++;
}

/* The slot of a live entity, or NULL if e is null, stale or never issued. */
static inline tes__slot_t *tes__entity_slot(const tes__entity_index_t *ei, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    if (index >= ei->count)
        return NULL;
    tes__slot_t *s = &ei->slots[index];
    if (s->generation != tes_entity_generation(e) || s->table == TES__SLOT_FREE)
        return NULL;
    return s;
}

/* Frees the slot of a live entity: bumps its generation and pushes it on the
 * free list, or retires it when the generation limit is reached. The one
 * way an entity is freed (tes__entity_free_n repeats it). */
static inline void tes__entity_free(tes__entity_index_t *ei, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    tes__slot_t *s = &ei->slots[index];
    s->table = TES__SLOT_FREE;
    if (ei->instances)
        ei->instances[index] = 0;
    ei->alive--;
    if (s->generation >= ei->generation_limit) {
        s->generation = TES_TOMBSTONE;
        ei->retired++;
        return;
    }
    s->generation++;
    s->row = ei->next;
    ei->next = index;
    ei->available++;
}

/* Frees the slots of n live entities, in order, as tes__entity_free
 * would one by one, with the per-world tests taken out of the loop. */
void tes__entity_free_n(tes__entity_index_t *ei, const tes_entity_t *es, uint32_t n);

#endif
