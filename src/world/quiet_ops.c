/*
 * The quiet paths of tes_add, tes_set, tes_remove and tes_destroy: the
 * single-entity calls as a game's update loop makes them, on components
 * without hooks, while nothing unusual is going on.
 *
 * Two things choose the path, each decided once: the component's dispatch
 * (TES__DISPATCH_TABLE or _SPARSE, fixed at registration for a component
 * with no hook at all, GENERIC while any watcher hears it) and the world's
 * state (tes__world_quiet: no hook or structural call running, nothing
 * deferred, no system running; one word, w->unquiet.word, kept exact by
 * the only writers of the state it sums up). For a small component id one
 * load from the registry (quiet_of) gives both the record and whether its
 * dispatch allows a quiet path, and the dispatch byte indexes a table of
 * forms per call: a sparse component's dispatch names its store's shape (a tag or
 * 4, 8, 12 or 16-byte values in a store that is not stable), whose forms
 * are compiled for that size, so a 4-byte add tests no size, no
 * tombstone list and no value pointer. Then no user code can run and no
 * one needs telling, so the call skips the begin/end guard, the watcher
 * reserve, the value image and the observer checks; a table move follows
 * the edge's cached plan (tes__edge_plan_t: the destination, where the
 * column lists part, whether the two tables move rows as plain bytes, the
 * cell copy made for its columns) and a sparse removal finds its entry
 * once. The same two loads also send a tes_set made while the world is
 * only deferred (the word is then the deferral depth alone) of a plain
 * table component straight to the queue's plain recorder
 * (tes__defer_set_plain), the usual deferred set. A table component with
 * a small id needs less still: its bit in quiet_tables and the quiet word
 * send tes_set and tes_add down the table path inlined into them, with no
 * record loaded and no indirect call.
 *
 * The hottest table case, tuned for: an entity built up one component at
 * a time (spawn, then tes_set after tes_set), each step taking the same
 * cached add edge as the entity before it. The plan is found with one
 * compare; the entity is its table's last row, so the source just counts
 * one row less (no hole to fill, no other entity's slot to touch); the
 * slot turns to the destination by one addition; the cells are copied by
 * the edge's add_cells, chosen when the edge was cached (straight code for
 * up to four columns of 8 to 16 bytes, a loop per size class otherwise),
 * in a tail call that tests nothing per column. Callgrind counts 354
 * instructions per entity for a spawn and three such sets in the bench
 * (474 with a loop over the columns and a dispatch per call).
 *
 * Guarantees are the generic path's: handles are checked, statuses are the
 * same, and a failed call changes nothing. A step the quiet path does not
 * cover (an edge whose tables run move, ctor or dtor hooks for the
 * entity's other components, a value inside the destination table, which
 * may move when it grows) hands the call to the generic path before
 * anything has changed.
 */
#include "world/world.h"

#include <string.h>

/* The component of a call when the world is quiet and c takes a quiet
 * path; NULL otherwise (an unknown id included: the generic path reports
 * it). */
static inline tes__component_t *quiet_component(const tes_world_t *w, tes_comp_t c)
{
    if (!w || !tes__world_quiet(w))
        return NULL;
    /* A small id: one load says both which record and whether it applies. */
    if (tes__likely(c < TES__REGISTRY_SMALL_IDS))
        return w->components.quiet_of[c];
    tes__component_t *info = tes__registry_get(&w->components, c);
    return info && info->dispatch != TES__DISPATCH_GENERIC ? info : NULL;
}

/* Records a stale handle: out of line, so that the quiet paths, whose hot
 * paths make calls only in tail position, save no registers for it. */
static tes__noinline int quiet_stale(tes_world_t *w, tes_entity_t e) { return tes__fail_stale(w, e); }

tes__noinline int tes__world_fill_hole_plain(tes_world_t *w, tes__table_t *t, uint32_t row,
                                             uint32_t last)
{
    tes_entity_t moved = tes__table_fill_hole_plain(t, row, last);
    w->entities.slots[tes_entity_index(moved)].row = row;
    return TES_OK;
}

/* The start of a quiet table add or remove: e's slot and table into *slot
 * and *src. False for a handle that is not alive (the caller records
 * TES_ERR_STALE). */
static inline bool quiet_enter(tes_world_t *w, tes_entity_t e, tes__slot_t **slot,
                               tes__table_t **src)
{
    *slot = tes__entity_slot(&w->entities, e);
    if (!*slot)
        return false;
    *src = tes__slot_table(w, *slot);
    return true;
}

/* The table an entity of src moves to when c is added (add) or removed:
 * the destination of src's last edge in that direction when that edge is
 * c's (a cached add edge means src lacks c, a cached remove edge that it
 * has c: no presence test); src itself when the type would not change;
 * NULL on TES_ERR_NOMEM (nothing changed). Whenever the type changes,
 * src->last_edge[add] afterwards holds the step's move plan. */
static inline tes__table_t *quiet_step(tes_world_t *w, tes__table_t *src,
                                       const tes__component_t *info, bool add)
{
    tes_comp_t c = info->id;
    if (src->last_edge[add].comp == c)
        return src->last_edge[add].dst;
    bool has = info->size ? tes__table_column_index(src, c) >= 0
                          : tes__table_type_index(src, c) >= 0;
    if (has == add)
        return src;
    return tes__graph_step(&w->tables, &w->alloc, &w->components, src, c, add);
}

/* quiet_table_add for everything but a cached plain edge into a table with
 * room: the component already there (the value assigned), an edge to look
 * up or create, a destination to grow, an edge whose tables run hooks
 * (handed to the generic path before anything has changed). e is alive
 * (the caller checked); its record and slot are looked up again here, so
 * that the hot path keeps fewer values live for the hand-over. */
static tes__noinline int quiet_table_add_slow(tes_world_t *w, tes_entity_t e, tes_comp_t c,
                                              const void *value, bool is_set)
{
    const tes__component_t *info = tes__registry_get(&w->components, c);
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    tes__table_t *src = tes__slot_table(w, slot);
    tes__table_t *dst = quiet_step(w, src, info, true);
    if (!dst)
        return tes__fail(w, TES_ERR_NOMEM);
    if (dst == src) {
        if (value && info->size)
            tes__copy_bytes(tes__table_cell(src, (uint32_t)tes__table_column_index(src, info->id),
                                            slot->row),
                            value, info->size);
        return TES_OK;
    }
    /* A value inside dst would move if dst moves for the new row: only
     * then does the generic path (which keeps an image) take the call. */
    bool dst_moves = TES__DEBUG_MOVES || dst->count >= dst->cap;
    if (!src->last_edge[1].plain || (value && dst_moves && tes__table_holds(dst, value)))
        return is_set ? tes__set_generic(w, e, info->id, value) : tes__add_generic(w, e, info->id);
    if (tes__table_reserve(dst, &w->alloc, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    return tes__world_move_plain(w, e, slot, src, dst, src->last_edge[1].col, true, value);
}

/* quiet_table_add along the cached plain edge (which leads into a table
 * with room) for an entity that is not its table's last row: the last row
 * fills the hole it leaves. */
static tes__noinline int quiet_add_from_middle(tes_world_t *w, tes_entity_t e, const void *value)
{
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    tes__table_t *src = tes__slot_table(w, slot);
    const tes__edge_plan_t *edge = &src->last_edge[1];
    return tes__world_move_plain(w, e, slot, src, edge->dst, edge->col, true, value);
}

/* Adds c to e if missing (the new cell a copy of value, zeroed for NULL);
 * assigns value to a present cell. is_set says which public call this is,
 * for the hand-over; cells is value, or a zero cell for NULL, for the
 * edge's copy (which takes no NULL).
 *
 * The hot case is handled here: e takes its table's last add edge again
 * (one compare finds the edge and its plan), a plain edge into a table
 * with room, and e is the last row of its table (or in the virtual root),
 * as a freshly spawned entity built up one component at a time always is.
 * Its row then moves as bytes and leaves no hole: the source table just
 * counts one row less, and no other entity's slot changes. e's new place
 * is written first, then the edge's own copy (add_cells, made for its
 * columns when the edge was cached) moves the cells, in tail position, so
 * that this path saves no registers and makes no other call. An entity in
 * the middle of its table goes to quiet_add_from_middle, every other case
 * to quiet_table_add_slow, both in tail position. Inlined into tes_set and
 * tes_add. */
static tes__always_inline int quiet_table_add(tes_world_t *w, tes_entity_t e, tes_comp_t c,
                                              const void *value, const void *cells, bool is_set)
{
    tes__slot_t *slot;
    tes__table_t *src;
    if (!quiet_enter(w, e, &slot, &src))
        return quiet_stale(w, e);
    const tes__edge_plan_t *edge = &src->last_edge[1];
    tes__table_t *dst = edge->dst;
    if (!tes__likely(edge->plain_comp == c))
        return quiet_table_add_slow(w, e, c, value, is_set);
    size_t dst_row = dst->count; /* a size_t: no widening for the index below */
    if (dst_row >= dst->cap || TES__DEBUG_MOVES)
        return quiet_table_add_slow(w, e, c, value, is_set);
    /* e is src's last row: its row is the count src keeps, src->count - 1.
     * A root entity is at row 0 of the root, whose count stays 0: the
     * count it keeps is src->count - 0. That count is then also the row
     * the cells are read from, so one value serves as both. A table with
     * room does not move for the new row, so a value inside it stays put:
     * no image is needed. */
    uint32_t src_keeps = src->count - edge->pop;
    if (slot->row != src_keeps)
        return quiet_add_from_middle(w, e, value);
    dst->entities[dst_row] = e;
    dst->count = (uint32_t)dst_row + 1;
    /* The source's count is written between the slot's two fields: stores
     * to adjacent fields get merged by compilers, through a vector
     * register, which costs more than the two stores. */
    slot->table += edge->id_step; /* (sparse bit | src's id) + step: sparse bit | dst's id */
    src->count = src_keeps;
    slot->row = (uint32_t)dst_row;
    return edge->add_cells(dst, dst_row, src, cells, src_keeps);
}

static tes__noinline int quiet_table_remove(tes_world_t *w, tes_entity_t e,
                                            const tes__component_t *info)
{
    tes__slot_t *slot;
    tes__table_t *src;
    if (!quiet_enter(w, e, &slot, &src))
        return quiet_stale(w, e);
    tes__table_t *dst = quiet_step(w, src, info, false);
    if (!dst)
        return tes__fail(w, TES_ERR_NOMEM);
    if (dst == src)
        return TES_OK;
    if (!src->last_edge[0].plain)
        return tes__remove_generic(w, e, info->id);
    if (tes__table_reserve(dst, &w->alloc, 1))
        return tes__fail(w, TES_ERR_NOMEM);
    return tes__world_move_plain(w, e, slot, src, dst, src->last_edge[0].col, false, NULL);
}

/* The sparse forms: no watcher means no owning group, so stored values
 * never move on insert and value needs no image. The entity's sparse page
 * is looked up once, for the membership test and the insert. Their hot
 * paths make calls only in tail position (a failure, a growth, a value of
 * an unusual size), so they save no registers. */


/* Copies value into a fresh cell, or zeroes it for NULL; TES_OK. */
static tes__noinline int fill_cell(void *cell, const void *value, uint32_t size)
{
    if (value)
        memcpy(cell, value, size);
    else
        memset(cell, 0, size);
    return TES_OK;
}

/* The same, inline for the common sizes. */
static inline int fill_cell_fast(void *cell, const void *value, uint32_t size)
{
    if (size == 4 || size == 8 || size == 12 || size == 16) {
        if (value)
            tes__copy_bytes(cell, value, size);
        else
            tes__zero_bytes(cell, size);
        return TES_OK;
    }
    return fill_cell(cell, value, size);
}

/* quiet_sparse_add when the store needs room first or reuses a hole (a
 * stable store with tombstones): the general insert, after a reserve. */
static tes__noinline int quiet_sparse_add_slow(tes_world_t *w, tes_entity_t e,
                                               tes__component_t *info, const void *value)
{
    tes__sparse_store_t *st = &info->store;
    uint32_t index = tes_entity_index(e);
    if (!tes__sparse_store_has_room(st, index) &&
        tes__sparse_store_reserve(st, &w->alloc, 1, index, NULL, NULL))
        return tes__fail(w, TES_ERR_NOMEM);
    w->entities.slots[index].table |= TES__SLOT_SPARSE;
    void *ptr = tes__sparse_store_insert(st, e);
    return ptr ? fill_cell_fast(ptr, value, st->size) : TES_OK;
}

/* The entity's sparse entry is read once, for the membership test and the
 * insert; the common insert appends to the packed array (a store with no
 * tombstone to reuse, room for one more member and its value). */
static tes__noinline int quiet_sparse_add(tes_world_t *w, tes_entity_t e,
                                          tes__component_t *info, const void *value)
{
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return quiet_stale(w, e);
    tes__sparse_store_t *st = &info->store;
    tes__sparse_set_t *set = &st->set;
    uint32_t index = tes_entity_index(e);
    uint64_t *page = tes__sparse_set_page(set, index);
    if (!page)
        return quiet_sparse_add_slow(w, e, info, value);
    uint64_t *entry = &page[index & TES__SPARSE_PAGE_MASK];
    uint32_t size = st->size;
    if (((e & ~(uint64_t)TES_NULL_INDEX) ^ *entry) < TES_NULL_INDEX) {
        if (!value || !size)
            return TES_OK;
        return fill_cell_fast(tes__sparse_store_at(st, (uint32_t)*entry), value, size);
    }
    uint32_t pos = set->count;
    if (set->free_head != TES_NULL_INDEX || pos >= set->cap ||
        (size && (pos >> st->page_shift) >= st->page_count))
        return quiet_sparse_add_slow(w, e, info, value);
    tes__sparse_set_append_at(set, e, entry);
    slot->table |= TES__SLOT_SPARSE;
    if (!size)
        return TES_OK;
    return fill_cell_fast(tes__sparse_store_at(st, pos), value, size);
}

/* The sparse entry of e when e is a member of set (its generation
 * matches), NULL otherwise: one lookup that both removal paths keep the
 * address of. */
static tes__always_inline uint64_t *member_entry(tes__sparse_set_t *set, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    uint64_t *page = tes__sparse_set_page(set, index);
    uint64_t *entry = page ? &page[index & TES__SPARSE_PAGE_MASK] : NULL;
    return entry && ((e & ~(uint64_t)TES_NULL_INDEX) ^ *entry) < TES_NULL_INDEX ? entry : NULL;
}

/* One lookup: the entry found is the one removed. A sparse entry carries
 * its entity's generation and is erased before the entity dies, so a found
 * entry answers for liveness: the entity slot is read only when the entity
 * has no such component (to tell a stale handle apart). */
static tes__noinline int quiet_sparse_remove(tes_world_t *w, tes_entity_t e,
                                             tes__component_t *info)
{
    tes__sparse_store_t *st = &info->store;
    uint64_t *entry = member_entry(&st->set, e);
    if (!entry)
        return tes__entity_slot(&w->entities, e) ? TES_OK : quiet_stale(w, e);
    if (st->stable)
        tes__sparse_set_tomb_remove(&st->set, e, (uint32_t)*entry);
    else
        tes__sparse_store_swap_remove_plain(st, entry);
    return TES_OK;
}

/* The forms made for one store shape (TES__SPARSE_SHAPE_TAG, _4, _8, _12,
 * _16; chosen at registration, see component.h): the store is not stable,
 * so it holds no tombstone, an insert appends and a removal swaps the last
 * member in; and the value size is the constant `size` (0 for a tag), so
 * a cell's address is a shift and a mask by constants and its fill, zero
 * or move is one or two moves. Each is written once below and compiled
 * once per size. */

/* The cell at packed position pos of a store of values of `size` bytes. */
static tes__always_inline void *fixed_cell(const tes__sparse_store_t *st, uint32_t pos,
                                           uint32_t size)
{
    uint32_t shift = tes__sparse_store_shift_for(size);
    return (void *)(st->bases[pos >> shift] + (uintptr_t)pos * size);
}

/* quiet_sparse_add for a fixed shape: tes_add's form (is_set false, value
 * NULL: a new cell is zeroed) or tes_set's (value not NULL unless the
 * component is a tag). The append needs a free packed slot and, for a
 * value, a data page at the new position; without them (or without the
 * entity's sparse page) the general insert reserves first. */
static tes__always_inline int fixed_sparse_add(tes_world_t *w, tes_entity_t e,
                                               tes__component_t *info, const void *value,
                                               uint32_t size, bool is_set)
{
    tes__assert(is_set ? value || !size : !value);
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return quiet_stale(w, e);
    tes__sparse_store_t *st = &info->store;
    tes__sparse_set_t *set = &st->set;
    tes__assert(!st->stable && st->size == size && set->free_head == TES_NULL_INDEX &&
                st->page_shift == tes__sparse_store_shift_for(size));
    uint32_t index = tes_entity_index(e);
    uint64_t *page = tes__sparse_set_page(set, index);
    if (!page)
        return quiet_sparse_add_slow(w, e, info, value);
    uint64_t *entry = &page[index & TES__SPARSE_PAGE_MASK];
    /* A sparse entry that is not empty belongs to the live entity of its
     * index (entries are erased before their entity dies; tes__world_check
     * checks it), and e is that entity: the slot said so. */
    if (*entry != TES__SPARSE_EMPTY) {
        tes__assert(((e & ~(uint64_t)TES_NULL_INDEX) ^ *entry) < TES_NULL_INDEX);
        if (size && is_set)
            tes__copy_bytes(fixed_cell(st, (uint32_t)*entry, size), value, size);
        return TES_OK;
    }
    uint32_t pos = set->count;
    uint32_t data_page = pos >> tes__sparse_store_shift_for(size);
    if (pos >= set->cap || (size && data_page >= st->page_count))
        return quiet_sparse_add_slow(w, e, info, value);
    tes__sparse_set_append_at(set, e, entry);
    slot->table |= TES__SLOT_SPARSE;
    if (size) {
        void *cell = fixed_cell(st, pos, size);
        if (is_set)
            tes__copy_bytes(cell, value, size);
        else
            tes__zero_bytes(cell, size);
    }
    return TES_OK;
}

/* quiet_sparse_remove for a fixed shape: one lookup, a swap-and-pop, the
 * last value moved into the hole by constant-size moves. */
static tes__always_inline int fixed_sparse_remove(tes_world_t *w, tes_entity_t e,
                                                  tes__component_t *info, uint32_t size)
{
    tes__sparse_store_t *st = &info->store;
    uint64_t *entry = member_entry(&st->set, e);
    if (!entry)
        return tes__entity_slot(&w->entities, e) ? TES_OK : quiet_stale(w, e);
    tes__assert(!st->stable && st->size == size);
    uint32_t pos = tes__sparse_set_swap_remove_at(&st->set, entry);
    uint32_t last = st->set.count; /* the old last position */
    if (size && pos != last)
        tes__copy_bytes(fixed_cell(st, pos, size), fixed_cell(st, last, size), size);
    return TES_OK;
}

/* One out-of-line copy of each form per shape. */
#define FIXED_SPARSE_FORMS(name, size)                                                      \
    static tes__noinline int quiet_sparse_add_##name(tes_world_t *w, tes_entity_t e,       \
                                                     tes__component_t *info)               \
    {                                                                                       \
        return fixed_sparse_add(w, e, info, NULL, size, false);                             \
    }                                                                                       \
    static tes__noinline int quiet_sparse_set_##name(tes_world_t *w, tes_entity_t e,       \
                                                     tes__component_t *info,               \
                                                     const void *value)                    \
    {                                                                                       \
        return fixed_sparse_add(w, e, info, value, size, true);                             \
    }                                                                                       \
    static tes__noinline int quiet_sparse_remove_##name(tes_world_t *w, tes_entity_t e,    \
                                                        tes__component_t *info)            \
    {                                                                                       \
        return fixed_sparse_remove(w, e, info, size);                                       \
    }
FIXED_SPARSE_FORMS(tag, 0)
FIXED_SPARSE_FORMS(4, 4)
FIXED_SPARSE_FORMS(8, 8)
FIXED_SPARSE_FORMS(12, 12)
FIXED_SPARSE_FORMS(16, 16)
#undef FIXED_SPARSE_FORMS

/* The general quiet paths in the tables' signatures. */
static int quiet_table_add_only(tes_world_t *w, tes_entity_t e, tes__component_t *info)
{
    return quiet_table_add(w, e, info->id, NULL, tes__zero_cell, false);
}
static int quiet_table_set(tes_world_t *w, tes_entity_t e, tes__component_t *info,
                           const void *value)
{
    return quiet_table_add(w, e, info->id, value, value ? value : tes__zero_cell, true);
}
static int quiet_sparse_add_any(tes_world_t *w, tes_entity_t e, tes__component_t *info)
{
    return quiet_sparse_add(w, e, info, NULL);
}
static int quiet_table_remove_form(tes_world_t *w, tes_entity_t e, tes__component_t *info)
{
    return quiet_table_remove(w, e, info);
}

/* The quiet forms by dispatch (TABLE, or SPARSE + the store's shape), one
 * table per call, so that a dispatcher makes one indirect jump with the
 * byte it has loaded and no test of it. GENERIC has no entry: such a
 * component has no quiet_of record. */
typedef int (*quiet_add_fn)(tes_world_t *, tes_entity_t, tes__component_t *);
typedef int (*quiet_set_fn)(tes_world_t *, tes_entity_t, tes__component_t *, const void *);
typedef int (*quiet_remove_fn)(tes_world_t *, tes_entity_t, tes__component_t *);
#define QUIET_FORMS (TES__DISPATCH_SPARSE + TES__SPARSE_SHAPES)
#define SHAPE(name) [TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_##name]
static const quiet_add_fn quiet_add_of[QUIET_FORMS] = {
    [TES__DISPATCH_TABLE] = quiet_table_add_only,
    SHAPE(ANY) = quiet_sparse_add_any, SHAPE(TAG) = quiet_sparse_add_tag,
    SHAPE(4) = quiet_sparse_add_4, SHAPE(8) = quiet_sparse_add_8,
    SHAPE(12) = quiet_sparse_add_12, SHAPE(16) = quiet_sparse_add_16,
};
static const quiet_set_fn quiet_set_of[QUIET_FORMS] = {
    [TES__DISPATCH_TABLE] = quiet_table_set,
    SHAPE(ANY) = quiet_sparse_add, SHAPE(TAG) = quiet_sparse_set_tag,
    SHAPE(4) = quiet_sparse_set_4, SHAPE(8) = quiet_sparse_set_8,
    SHAPE(12) = quiet_sparse_set_12, SHAPE(16) = quiet_sparse_set_16,
};
static const quiet_remove_fn quiet_remove_of[QUIET_FORMS] = {
    [TES__DISPATCH_TABLE] = quiet_table_remove_form,
    SHAPE(ANY) = quiet_sparse_remove, SHAPE(TAG) = quiet_sparse_remove_tag,
    SHAPE(4) = quiet_sparse_remove_4, SHAPE(8) = quiet_sparse_remove_8,
    SHAPE(12) = quiet_sparse_remove_12, SHAPE(16) = quiet_sparse_remove_16,
};
#undef SHAPE

/* The index into those tables of a quiet component (its dispatch). */
static inline uint32_t quiet_form(const tes__component_t *info)
{
    tes__assert(info->dispatch != TES__DISPATCH_GENERIC && info->dispatch < QUIET_FORMS);
    return info->dispatch;
}

/* A small table component's quiet add is inlined here, chosen by the
 * quiet word and its bit in quiet_tables (no record loaded, no indirect
 * call); the other quiet forms are one indirect jump away. */
int tes_add(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (tes__likely(w && c < TES__REGISTRY_SMALL_IDS) && tes__world_quiet(w) &&
        ((w->components.quiet_tables >> c) & 1))
        return quiet_table_add(w, e, c, NULL, tes__zero_cell, false);
    tes__component_t *info = quiet_component(w, c);
    if (!info)
        return tes__add_generic(w, e, c);
    return quiet_add_of[quiet_form(info)](w, e, info);
}

/* True when the quiet word says: deferred, and nothing else unusual (no
 * hook or structural call running, no system running, no dependent
 * waiting). The word is then defer.depth alone, with TES__UNQUIET_OTHER
 * clear. Lanes and parallel runs happen only while systems run, which
 * sets `refuse` and so the other bit. */
static inline bool only_deferred(uint32_t word) { return word - 1u < TES__UNQUIET_OTHER - 1u; }

/* tes_set for a large id (or no world): its quiet path, else the generic
 * set. */
static tes__noinline int set_other(tes_world_t *w, tes_entity_t e, tes_comp_t c,
                                   const void *value)
{
    tes__component_t *info = quiet_component(w, c);
    if (info && (value || !info->size))
        return quiet_set_of[quiet_form(info)](w, e, info, value);
    return tes__set_generic(w, e, c, value);
}

/* The quiet word and the component's bit in quiet_tables send a table
 * component's set in a quiet world down the path inlined here; otherwise
 * one load of quiet_of chooses among three paths: the quiet form (a quiet
 * world), the plain recorder (a world that is only deferred, with a value:
 * the usual deferred set, a system's loop inside tes_defer_begin/end or an
 * iteration; tags and large values are handed on from there), or the
 * generic set. */
int tes_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    if (tes__likely(w && c < TES__REGISTRY_SMALL_IDS)) {
        uint32_t word = atomic_load_explicit(&w->unquiet.word, memory_order_relaxed);
        tes__assert(word == tes__world_unquiet_expected(w));
        tes__component_t *info;
        if (tes__likely(!word)) {
            if (tes__likely(value != NULL) && ((w->components.quiet_tables >> c) & 1))
                return quiet_table_add(w, e, c, value, value, true);
            info = w->components.quiet_of[c];
            if (info && (value || !info->size))
                return quiet_set_of[quiet_form(info)](w, e, info, value);
            return tes__set_generic(w, e, c, value);
        }
        info = w->components.quiet_of[c];
        if (info && only_deferred(word) && value && info->dispatch == TES__DISPATCH_TABLE)
            return tes__defer_set_plain(w, e, info, value);
        return tes__set_generic(w, e, c, value);
    }
    return set_other(w, e, c, value);
}

int tes_remove(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    tes__component_t *info = quiet_component(w, c);
    if (!info)
        return tes__remove_generic(w, e, c);
    return quiet_remove_of[quiet_form(info)](w, e, info);
}

/* Destroy: quiet when, besides the world, no watcher exists (every watcher
 * hears destroys), the entity may own no sparse component (its slot hint)
 * and its table runs no dtor, move or on_remove hook (the table's flags,
 * fixed when it was created). The row is then removed as bytes. */
int tes_destroy(tes_world_t *w, tes_entity_t e)
{
    if (!w || !tes__world_quiet(w) || w->watcher_count || w->hier)
        return tes__destroy_generic(w, e);
    tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return tes__fail_stale(w, e);
    tes__table_t *t = tes__slot_table(w, slot);
    uint32_t index = tes_entity_index(e);
    if ((slot->table & TES__SLOT_SPARSE) ||
        (t->flags & (TES__TABLE_NOT_PLAIN | TES__TABLE_HAS_ON_REMOVE)) ||
        (w->strict_lifecycle && tes__entity_instance(&w->entities, index)))
        return tes__destroy_generic(w, e);
    if (slot->table != 0) {
        uint32_t row = slot->row;
        tes_entity_t moved = tes__table_remove_row_plain(t, row);
        if (moved != TES_NULL)
            w->entities.slots[tes_entity_index(moved)].row = row;
        tes__table_debug_move(t, &w->alloc);
    }
    tes__entity_free(&w->entities, e);
    return TES_OK;
}
