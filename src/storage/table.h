/*
 * An archetype table (seed 002): every entity whose table-stored components
 * are exactly `type` lives in one row here. The entity column and one column
 * per data component share one count and capacity; tags are part of the
 * type but own no column. Rows are swap-removed, so a table stays dense and
 * a query visits it as plain arrays.
 *
 * All columns live in one block: the entity column first, then each column
 * at an offset aligned for its component (the allocator's blocks are 16-byte
 * aligned, the largest alignment a component may ask for). Growing a table
 * allocates a new block and relocates each column with the move hook (or
 * memcpy), so it is one allocation that either happens or does not.
 *
 * Tuned for iteration and for moving single rows between tables; a table
 * never shrinks (emptied tables keep their block for the next arrivals).
 * Each table caches the move plan of its last edge in each direction; it
 * holds the plan's type (move_plan_types.h) only: making a plan, which
 * reads tables, is the move plan's (move_plan.h), a layer above this one.
 */
#ifndef TES_STORAGE_TABLE_H
#define TES_STORAGE_TABLE_H

#include "core/hash.h"
#include "storage/component.h"
#include "storage/move_plan_types.h"

/* Table flags, computed once from the type (hooks never change after a
 * component is registered), so hot paths skip loops that would do nothing. */
#define TES__TABLE_HAS_CTOR (1u << 0)      /* some column has a ctor */
#define TES__TABLE_HAS_DTOR (1u << 1)      /* some column has a dtor */
#define TES__TABLE_HAS_MOVE (1u << 2)      /* some column has a move hook */
#define TES__TABLE_HAS_ON_ADD (1u << 3)    /* some type entry has on_add */
#define TES__TABLE_HAS_ON_REMOVE (1u << 4) /* some type entry has on_remove */
#define TES__TABLE_DISABLED (1u << 5)      /* the type holds TES_DISABLED */
#define TES__TABLE_PREFAB (1u << 6)        /* the type holds TES_PREFAB */
/* The root table is virtual: its entities (those with no table components)
 * own no row, so spawning and destroying an empty entity touches only the
 * entity index. push returns row 0 and stores nothing; remove_row does
 * nothing; reserve never allocates. Queries that must see every entity
 * enumerate root entities from the entity index instead. */
#define TES__TABLE_VIRTUAL (1u << 7)
/* The flags that make moving a row run user code: a table without them
 * relocates, constructs and destroys cells as plain bytes. */
#define TES__TABLE_HOOKED (TES__TABLE_HAS_CTOR | TES__TABLE_HAS_DTOR | TES__TABLE_HAS_MOVE)
/* Some column's values are larger than TES__SMALL_BYTES: rows are not
 * moved by the plain (call-free) copies. */
#define TES__TABLE_LARGE (1u << 8)
/* Some type entry tracks changes: the table holds stamp columns (their
 * hooks make it HOOKED too, so no plain path moves its rows). */
#define TES__TABLE_TRACKED (1u << 9)
/* What makes a table's rows move other than as small plain bytes. */
#define TES__TABLE_NOT_PLAIN (TES__TABLE_HOOKED | TES__TABLE_LARGE)

typedef struct tes__column {
    uint8_t *data;
    const tes__component_t *info;
    tes_comp_t id; /* info->id, kept here so lookups touch one cache line */
    uint32_t size;
} tes__column_t;

/* Component ids below this are found in a table's column_of map (the
 * registry's small ids: tes_get reads both maps with one index). */
#define TES__TABLE_DIRECT_IDS TES__REGISTRY_SMALL_IDS

struct tes__table;

/* Rows per summary block of a tracked column (see tes__stamp_sum_t). */
#define TES__STAMP_BLOCK_BITS 6u
#define TES__STAMP_BLOCK (1u << TES__STAMP_BLOCK_BITS)

/* The summary of one tracked column of a table: for each block of
 * TES__STAMP_BLOCK rows, the newest "changed" tick written into the block
 * (every stamp of the block is at most it), so that a change filter skips
 * a block without reading its stamps. Stamping writes keep it; any move
 * or construction of stamps (changes.c's hooks) advances the world's
 * stamp epoch, after which the summary counts only once a query that had
 * to read the stamps anyway has rebuilt it (`epoch` then equals the
 * world's). Blocks past `blocks` (rows the array has not grown to yet)
 * are always read. Entries are atomic: parallel systems stamp disjoint
 * rows that may share a block. */
typedef struct tes__stamp_sum {
    tes_comp_t comp;          /* the tracked component */
    uint32_t blocks;          /* entries in max */
    _Atomic uint32_t *max;
    _Atomic uint64_t epoch;   /* the world's stamp epoch when last exact */
    /* A chunk handed out for writing that covered the whole table is
     * stamped lazily: rows [0, pend_rows) count as changed at pend_tick
     * (each row's "changed" tick is the newer of its stamp and pend_tick)
     * until the world settles the range into the stamps (changes.c), which
     * it does before anything reads, moves or constructs the table's
     * stamps. pend_rows 0: nothing pending. The summary's blocks are raised
     * when the range is recorded, so they bound the pending ticks too. */
    uint32_t pend_tick;
    uint32_t pend_rows;
} tes__stamp_sum_t;

/* The last graph edge a table took in one direction, with its move plan
 * (its type from move_plan_types.h; made by tes__plan_make of move_plan.h
 * when the table graph caches the edge); tables and edges are never
 * deleted, so the plan never goes stale. `plain_comp` (the component when
 * neither table runs hooks when a row moves or holds values larger than
 * TES__SMALL_BYTES, else 0) lets the quiet add of quiet_ops.c decide with
 * one compare that its path applies; `col` is the component's column in
 * the wider table (-1 for a tag). An add edge's plan takes the added value
 * directly (value 0, the call's value; NULL constructs); a remove edge's
 * takes none. */
typedef struct tes__edge_plan {
    tes_comp_t plain_comp;
    tes_comp_t comp;        /* the edge's component; 0 before any edge is taken */
    int32_t col;
    bool plain;
    tes__move_plan_t move;
} tes__edge_plan_t;

typedef struct tes__table {
    /* What a single-entity move reads, first: one or two cache lines. */
    uint32_t id;
    uint32_t flags;          /* TES__TABLE_* */
    uint32_t count;
    uint32_t cap;
    /* Counts every change of which entity sits in which row (a row
     * appended, removed or moved): its one writer is tes__table_set_count,
     * through which every change of `count` goes, and the depth sort
     * (tes__table_permute), which moves rows in place. A reader that
     * recorded it knows the rows are as they were while it is unchanged. */
    uint64_t row_changes;
    tes__column_t *columns;  /* data components, ascending by id */
    tes_entity_t *entities;  /* the entity column */
    uint32_t column_count;
    uint32_t type_count;
    tes__edge_plan_t last_edge[2]; /* per direction (remove = 0, add = 1) */
    tes_comp_t *type;        /* sorted ascending, tags included */
    void *block;             /* holds all columns */
    size_t block_size;
    uint64_t hash;           /* of the type */
    tes__map_t edges;        /* cached graph edges: key -> table id */
    /* Column of each small component id (ids below TES__TABLE_DIRECT_IDS,
     * which most worlds' components are): 0 when absent or a tag, column
     * + 1, or UINT8_MAX for a column past 253 (then the ids are scanned).
     * Saves tes_get and every move the scan over the column ids. */
    uint8_t column_of[TES__TABLE_DIRECT_IDS];
    /* The first cell of each small component id's column (NULL when the
     * table has no such column, or no block yet), kept in step with the
     * block. A random tes_get is bound by how many lookups the processor
     * keeps in flight, so its path from the entity's slot to the cell is
     * one load here (the table pointer and this line are hot), instead of
     * column_of, the column array and the column. */
    uint8_t *data_of[TES__TABLE_DIRECT_IDS];
    /* Tracked columns' summaries (TES__TABLE_TRACKED), one per tracked
     * component, in column order. */
    tes__stamp_sum_t *sums;
    uint32_t sum_count;
} tes__table_t;

/* The summary of tracked component c in t, or NULL. */
static inline tes__stamp_sum_t *tes__table_sum(const tes__table_t *t, tes_comp_t c)
{
    for (uint32_t i = 0; i < t->sum_count; i++)
        if (t->sums[i].comp == c)
            return &t->sums[i];
    return NULL;
}

/* A table for `type` (sorted, unique ids of table components), or NULL on
 * TES_ERR_NOMEM. The table starts empty, with no block. */
tes__table_t *tes__table_new(tes__alloc_t *a, const tes__registry_t *r, uint32_t id,
                             const tes_comp_t *type, uint32_t type_count);
/* Frees the table's memory; runs no destructors. */
void tes__table_free(tes__table_t *t, tes__alloc_t *a);

uint64_t tes__type_hash(const tes_comp_t *type, uint32_t count);

/* Position of c in the type, or -1. */
int32_t tes__table_type_index(const tes__table_t *t, tes_comp_t c);
/* Position of c's column, or -1 (absent or tag): one byte load for a small
 * id; otherwise a linear scan over the sorted ids (types are short, so it
 * beats a binary search). */
static inline int32_t tes__table_column_index(const tes__table_t *t, tes_comp_t c)
{
    if (c < TES__TABLE_DIRECT_IDS && t->column_of[c] != UINT8_MAX)
        return (int32_t)t->column_of[c] - 1;
    for (uint32_t i = 0; i < t->column_count; i++) {
        tes_comp_t id = t->columns[i].id;
        if (id >= c)
            return id == c ? (int32_t)i : -1;
    }
    return -1;
}

static inline void *tes__table_cell(const tes__table_t *t, uint32_t column, uint32_t row)
{
    return t->columns[column].data + (size_t)row * t->columns[column].size;
}

/* True when p points into the table's column block. */
static inline bool tes__table_holds(const tes__table_t *t, const void *p)
{
    uintptr_t b = (uintptr_t)t->block, q = (uintptr_t)p;
    return b && q >= b && q - b < t->block_size;
}

/* Debug builds (TES_DEBUG) move a table's block to fresh memory every time
 * room is reserved in it, so a pointer held across a structural change is a
 * use-after-free that AddressSanitizer reports, not a silent stale read. */
#ifdef TES_DEBUG
#define TES__DEBUG_MOVES 1
#else
#define TES__DEBUG_MOVES 0
#endif

/* The block layout of a table whose data columns hold `columns` (ascending
 * by id, as tes__table_new orders them) for `cap` rows: each column's offset
 * (the entity column is at 0) and the block size. False when the size would
 * not fit in size_t. Lets a caller fill a block before the table takes it. */
bool tes__table_layout(const tes__component_t *const *columns, uint32_t count, uint32_t cap,
                       size_t *offsets, size_t *size);
/* Gives an empty, non-virtual table `block` (allocated through `a`, laid
 * out by tes__table_layout for its columns and `cap` rows), freeing the one
 * it had. Cannot fail; the rows stay empty until the caller sets count. */
void tes__table_adopt(tes__table_t *t, tes__alloc_t *a, void *block, size_t size, uint32_t cap);

/* Reorders t's rows: new row i holds what old row perm[i] held (perm a
 * permutation of [0, count)), each column's values relocated by its move
 * hook (or memcpy) into `block`, a fresh block laid out by
 * tes__table_layout for t's columns and capacity (size bytes, allocated
 * through `a`), which the table then adopts; the old block is freed.
 * Counts a row change. Cannot fail; the caller fixes the entities' slots
 * and settles any pending stamp range of t first (stamps move as values). */
void tes__table_permute(tes__table_t *t, tes__alloc_t *a, void *block, size_t size,
                        const uint32_t *perm);

/* Room for `extra` more rows. TES_OK or TES_ERR_NOMEM (unchanged). */
int tes__table_reserve_slow(tes__table_t *t, tes__alloc_t *a, uint32_t extra);
static inline int tes__table_reserve(tes__table_t *t, tes__alloc_t *a, uint32_t extra)
{
    if (t->flags & TES__TABLE_VIRTUAL)
        return TES_OK;
    if ((uint64_t)t->count + extra <= t->cap && !TES__DEBUG_MOVES)
        return TES_OK;
    return tes__table_reserve_slow(t, a, extra);
}

/* The one writer of a table's row count: every append and removal of
 * rows sets it here, which also counts the change (row_changes). */
static inline void tes__table_set_count(tes__table_t *t, uint32_t count)
{
    t->count = count;
    t->row_changes++;
}

/* Appends e into reserved room of a table that owns its rows (any but
 * the virtual root: a caller that knows the table holds a component skips
 * the flag test of tes__table_push); returns the row. Cells are raw. */
static inline uint32_t tes__table_push_owned(tes__table_t *t, tes_entity_t e)
{
    tes__assert(!(t->flags & TES__TABLE_VIRTUAL) && t->count < t->cap);
    uint32_t row = t->count;
    t->entities[row] = e;
    tes__table_set_count(t, row + 1);
    return row;
}

/* Appends e into reserved room; returns the row. Column cells are raw. */
static inline uint32_t tes__table_push(tes__table_t *t, tes_entity_t e)
{
    if (t->flags & TES__TABLE_VIRTUAL)
        return 0;
    return tes__table_push_owned(t, e);
}

/* Debug builds: a row left t, so t moves to fresh memory too (only when
 * the allocator agrees: this move is not needed, so failing it changes
 * nothing). A pointer held across a change of its entity is then a
 * use-after-free that AddressSanitizer reports, even when neither table
 * had to grow. Release builds: nothing. */
static inline void tes__table_debug_move(tes__table_t *t, tes__alloc_t *a)
{
    if (TES__DEBUG_MOVES)
        (void)tes__table_reserve(t, a, 0);
}

/* Constructs n cells of a column from row on (ctor, or zero-fill). */
void tes__table_construct(tes__table_t *t, uint32_t column, uint32_t row, uint32_t n);
/* Destroys the cells of every column at row (dtor hooks). */
void tes__table_destruct_row(tes__table_t *t, uint32_t row);

/* Removes row, whose cells are already destroyed or moved out: the last row
 * is relocated into it. Returns the entity now at `row`, or TES_NULL if the
 * removed row was the last one. */
tes_entity_t tes__table_remove_row(tes__table_t *t, uint32_t row);

/* Copies the last row of a table whose rows move as small plain bytes (no
 * TES__TABLE_NOT_PLAIN flag) into `row`, whose cells were moved out or
 * dropped: `last` is the last row's index, already counted out. Returns
 * the entity now at `row`. */
static inline tes_entity_t tes__table_fill_hole_plain(tes__table_t *t, uint32_t row, uint32_t last)
{
    tes__assert(row < last && last == t->count && !(t->flags & TES__TABLE_NOT_PLAIN));
    tes_entity_t moved = t->entities[last];
    t->entities[row] = moved;
    /* Read once: the byte copies below could alias any field of t. */
    const tes__column_t *columns = t->columns;
    uint32_t n = t->column_count;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t size = columns[i].size;
        uint8_t *data = columns[i].data;
        tes__copy_small(data + (size_t)row * size, data + (size_t)last * size, size);
    }
    return moved;
}

/* tes__table_remove_row for a table whose rows move as small plain bytes
 * (no TES__TABLE_NOT_PLAIN flag): the last row's cells are copied. */
static inline tes_entity_t tes__table_remove_row_plain(tes__table_t *t, uint32_t row)
{
    if (t->flags & TES__TABLE_VIRTUAL)
        return TES_NULL;
    tes__assert(row < t->count && !(t->flags & TES__TABLE_NOT_PLAIN));
    uint32_t last = t->count - 1;
    tes__table_set_count(t, last);
    if (row == last)
        return TES_NULL;
    return tes__table_fill_hole_plain(t, row, last);
}

#endif
