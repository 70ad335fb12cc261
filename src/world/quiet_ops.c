/*
 * The quiet paths of tes_add, tes_set, tes_remove and tes_destroy: the
 * single-entity calls as a game's update loop makes them, on components
 * without hooks, while nothing unusual is going on.
 *
 * One decision chooses the path, from two things each written by one
 * writer when it changes: the component's dispatch byte (TES__DISPATCH_
 * TABLE, TRACKED or SPARSE + its store's shape, fixed at registration for
 * a component with no hook at all, GENERIC while any watcher hears it;
 * the registry's dispatch_of holds it for a small id) and the class of
 * the world's quiet state (tes__quiet_class: quiet, only deferred, or
 * busy; one load of the word that records deferral, hooks, running
 * systems and waiting dependents). The pair indexes one table of forms
 * per call (see the dispatch below). A sparse component's dispatch names
 * its store's shape (a tag or 4, 8, 12 or 16-byte values in a store that
 * is not stable), whose forms are compiled for that size, so a 4-byte add
 * tests no size, no tombstone list and no value pointer. In a quiet world
 * no user code can run and no one needs telling, so the plain forms skip
 * the begin/end guard, the watcher reserve, the value image and the
 * observer checks; a table move follows the edge's cached plan
 * (tes__edge_plan_t: the destination, where the column lists part,
 * whether the two tables move rows as plain bytes, the cell copy made for
 * its columns) and a sparse removal finds its entry once. In a world that
 * is only deferred, a plain table component's tes_set goes straight to
 * the queue's plain recorder (tes__defer_set_plain), the usual deferred
 * set. Every other pair takes the generic path. The quiet table form is
 * inlined into tes_set and tes_add: no record loaded, no indirect call.
 *
 * The hottest table case, tuned for: an entity built up one component at
 * a time (spawn, then tes_set after tes_set), each step taking the same
 * cached add edge as the entity before it. The plan is found with one
 * compare; the entity is its table's last row, so the source just counts
 * one row less (no hole to fill, no other entity's slot to touch); the
 * slot turns to the destination by one addition; the cells are copied by
 * the edge plan's copy routine (move_plan.h), chosen when the edge was
 * cached (straight code for up to four columns of 8 to 16 bytes, a loop
 * per size class otherwise), in a tail call that tests nothing per
 * column.
 *
 * Guarantees are the generic path's: handles are checked, statuses are the
 * same, and a failed call changes nothing. A step the quiet path does not
 * cover (an edge whose tables run move, ctor or dtor hooks for the
 * entity's other components, a value inside the destination table, which
 * may move when it grows) hands the call to the generic path before
 * anything has changed.
 */
#include "world/move.h"
#include "world/changes.h"
#include "world/defer.h"
#include "world/entity_ops.h"
#include "world/last_error.h"
#include "world/world.h"
#include "world/quiet.h"

#include <string.h>

/* The record of a component whose dispatch is not GENERIC (so it is
 * registered): the dispatch's forms take the id and load it. */
static inline tes__component_t *record_of(const tes_world_t *w, tes_comp_t c)
{
    tes__assert(c < w->components.count && w->components.items[c]);
    return w->components.items[c];
}

/* Records a stale handle: out of line, so that the quiet paths, whose hot
 * paths make calls only in tail position, save no registers for it. */
static tes__noinline int quiet_stale(tes_world_t *w, tes_entity_t e) { return tes__fail_stale(w, e); }

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
        return src->last_edge[add].move.dst;
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
    (void)slot;
    return tes__apply(w, &src->last_edge[1].move, e, value, 1);
}

/* Adds c to e if missing (the new cell a copy of value, zeroed for NULL);
 * assigns value to a present cell. is_set says which public call this is,
 * for the hand-over; cells is value, or a zero cell for NULL, for the
 * edge's copy (which takes no NULL).
 *
 * The hot case is handled here: e takes its table's last add edge again
 * (one compare finds the edge and its plan), a plain edge into a table
 * with room; the row then moves by the edge's move plan through
 * tes__apply, whose own hot case (e the last row of its table, as a
 * freshly spawned entity built up one component at a time always is)
 * leaves no hole and ends in the plan's copy routine, in tail position, so
 * that this path saves few registers and makes no other call. Every other
 * case goes to quiet_table_add_slow, in tail position. Inlined into
 * tes_set and tes_add. */
static tes__always_inline int quiet_table_add(tes_world_t *w, tes_entity_t e, tes_comp_t c,
                                              const void *value, const void *cells, bool is_set)
{
    tes__slot_t *slot;
    tes__table_t *src;
    if (!quiet_enter(w, e, &slot, &src))
        return quiet_stale(w, e);
    const tes__edge_plan_t *edge = &src->last_edge[1];
    if (!tes__likely(edge->plain_comp == c))
        return quiet_table_add_slow(w, e, c, value, is_set);
    const tes__table_t *dst = edge->move.dst;
    if (dst->count >= dst->cap || TES__DEBUG_MOVES)
        return quiet_table_add_slow(w, e, c, value, is_set);
    /* A table with room does not move for the new row, so a value inside
     * it stays put: no image is needed. */
    return tes__apply_one(w, &edge->move, e, slot, src, cells);
}

/* tes_remove's table form: the step's edge plan, or the generic path for
 * an edge whose tables run hooks (before anything has changed). */
static tes__noinline int remove_table(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    const tes__component_t *info = record_of(w, c);
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
    (void)slot;
    return tes__apply(w, &src->last_edge[0].move, e, NULL, 1);
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
    tes__slot_hint_sparse(&w->entities.slots[index], true);
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
    tes__slot_hint_sparse(slot, true);
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
static tes__noinline int remove_sparse_any(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    tes__component_t *info = record_of(w, c);
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
    return tes__sparse_value_at(st->bases, tes__sparse_store_shift_for(size), size, pos);
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
    tes__slot_hint_sparse(slot, true);
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

/* One out-of-line copy of each form per shape, in the signature of the
 * dispatch's tables (below). */
#define FIXED_SPARSE_FORMS(name, size)                                                      \
    static tes__noinline int add_sparse_##name(tes_world_t *w, tes_entity_t e, tes_comp_t c) \
    {                                                                                       \
        return fixed_sparse_add(w, e, record_of(w, c), NULL, size, false);                  \
    }                                                                                       \
    static tes__noinline int set_sparse_##name(tes_world_t *w, tes_entity_t e, tes_comp_t c, \
                                               const void *value)                           \
    {                                                                                       \
        return fixed_sparse_add(w, e, record_of(w, c), value, size, true);                  \
    }                                                                                       \
    static tes__noinline int remove_sparse_##name(tes_world_t *w, tes_entity_t e,           \
                                                  tes_comp_t c)                             \
    {                                                                                       \
        return fixed_sparse_remove(w, e, record_of(w, c), size);                            \
    }
FIXED_SPARSE_FORMS(tag, 0)
FIXED_SPARSE_FORMS(4, 4)
FIXED_SPARSE_FORMS(8, 8)
FIXED_SPARSE_FORMS(12, 12)
FIXED_SPARSE_FORMS(16, 16)
#undef FIXED_SPARSE_FORMS

/* The dispatch: one decision per call. The world's quiet state says in
 * one load whether the world is quiet, only deferred, or neither
 * (tes__quiet_class); the component's dispatch byte, written when it is
 * registered and when a watcher starts or stops hearing it, says which
 * plain form it has. Together they index one table of forms per call, and
 * the call jumps there: no other test chooses the path. The table form of
 * a quiet world, the hottest, is inlined into the call instead of jumped
 * to; its entry in the table is the same code out of line.
 *
 * The forms take the component id; the ones that need its record load it
 * (a component with a plain dispatch is registered). */
#define DISPATCHES (TES__DISPATCH_TRACKED + 1u)
#define FORMS (TES__QUIET_CLASSES * DISPATCHES)
/* The form of a table component in a quiet world: class 0. */
#define FORM_QUIET_TABLE TES__DISPATCH_TABLE

/* The dispatch of c (GENERIC for an id not issued): a small id's byte,
 * or a larger id's record. Inline, with no call, so that the calls keep
 * their registers free for the inlined table form. */
static tes__always_inline uint32_t dispatch_of(const tes_world_t *w, tes_comp_t c)
{
    if (tes__likely(c < TES__REGISTRY_SMALL_IDS))
        return w->components.dispatch_of[c];
    const tes__component_t *info = tes__registry_get(&w->components, c);
    return info ? info->dispatch : TES__DISPATCH_GENERIC;
}

/* The form of a call: its class * DISPATCHES + its dispatch (< DISPATCHES). */
static tes__always_inline uint32_t form_of(uint64_t word, uint32_t dispatch)
{
    return tes__quiet_class(word) * DISPATCHES + dispatch;
}

/* form_of(word, dispatch) == FORM_QUIET_TABLE (a quiet world: word 0),
 * as one test of values at hand. */
static tes__always_inline bool quiet_table_form(uint64_t word, uint32_t dispatch)
{
    return (word | (dispatch ^ TES__DISPATCH_TABLE)) == 0;
}

/* tes_add's forms. */
static int add_table(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    return quiet_table_add(w, e, c, NULL, tes__zero_cell, false);
}
static int add_sparse_any(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    return quiet_sparse_add(w, e, record_of(w, c), NULL);
}

/* tes_set's forms (value is not NULL, or c is a tag). A tracked
 * component's set of a value the entity has is a copy and a stamp; a set
 * that adds is the generic path's, which stamps adds. In a world that is
 * only deferred, a plain table component's set goes to the queue's plain
 * recorder (tes__defer_set_plain: the usual deferred set, a system's loop
 * inside tes_defer_begin/end or an iteration). */
static int set_table(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    return quiet_table_add(w, e, c, value, value ? value : tes__zero_cell, true);
}
static int set_sparse_any(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    return quiet_sparse_add(w, e, record_of(w, c), value);
}
static int set_tracked(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    const tes__component_t *info = record_of(w, c);
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (tes__likely(slot != NULL && value != NULL)) {
        tes__table_t *t = tes__slot_table(w, slot);
        int32_t col = tes__table_column_index(t, c);
        if (tes__likely(col >= 0)) {
            uint8_t *cell = tes__table_cell(t, (uint32_t)col, slot->row);
            if (info->size <= TES__SMALL_BYTES)
                tes__copy_small(cell, value, info->size);
            else
                tes__copy_bytes(cell, value, info->size);
            tes__stamp_one(w, t, slot->row, info);
            return TES_OK;
        }
    }
    return tes__set_generic(w, e, c, value);
}


/* The tables. Every entry not listed is the generic path: a GENERIC
 * dispatch in any class, any call in a busy world, and every call in a
 * world that is only deferred but a table set (the generic paths queue). */
typedef int (*add_fn)(tes_world_t *, tes_entity_t, tes_comp_t);
typedef int (*set_fn)(tes_world_t *, tes_entity_t, tes_comp_t, const void *);
typedef int (*remove_fn)(tes_world_t *, tes_entity_t, tes_comp_t);
/* Rows by class (quiet, only deferred, busy), columns by dispatch:
 * GENERIC, TABLE, SPARSE + shape ANY, TAG, 4, 8, 12, 16, TRACKED. */
_Static_assert(TES__DISPATCH_GENERIC == 0 && TES__DISPATCH_TABLE == 1 &&
                   TES__DISPATCH_SPARSE == 2 && TES__SPARSE_SHAPE_ANY == 0 &&
                   TES__SPARSE_SHAPE_TAG == 1 && TES__SPARSE_SHAPE_4 == 2 &&
                   TES__SPARSE_SHAPE_8 == 3 && TES__SPARSE_SHAPE_12 == 4 &&
                   TES__SPARSE_SHAPE_16 == 5 && DISPATCHES == 9 && TES__QUIET_CLASSES == 3,
               "the form tables below list the dispatches in this order");
#define G tes__add_generic
static const add_fn add_forms[FORMS] = {
    G, add_table, add_sparse_any, add_sparse_tag, add_sparse_4, add_sparse_8, add_sparse_12, add_sparse_16, G,
    G, G, G, G, G, G, G, G, G,
    G, G, G, G, G, G, G, G, G,
};
#undef G
#define G tes__set_generic
static const set_fn set_forms[FORMS] = {
    G, set_table, set_sparse_any, set_sparse_tag, set_sparse_4, set_sparse_8, set_sparse_12, set_sparse_16, set_tracked,
    G, tes__defer_set_plain, G, G, G, G, G, G, G,
    G, G, G, G, G, G, G, G, G,
};
#undef G
#define G tes__remove_generic
static const remove_fn remove_forms[FORMS] = {
    G, remove_table, remove_sparse_any, remove_sparse_tag, remove_sparse_4, remove_sparse_8, remove_sparse_12, remove_sparse_16, G,
    G, G, G, G, G, G, G, G, G,
    G, G, G, G, G, G, G, G, G,
};
#undef G

int tes_add(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (tes__unlikely(!w))
        return TES_ERR_INVALID;
    uint64_t word = tes__quiet_word(w);
    uint32_t d = dispatch_of(w, c);
    if (tes__likely(quiet_table_form(word, d)))
        return quiet_table_add(w, e, c, NULL, tes__zero_cell, false);
    return add_forms[form_of(word, d)](w, e, c);
}

/* tes_set without a value: a data component's is refused by the generic
 * path (TES_ERR_INVALID with its detail); a tag's is the set's form with
 * no value (a quiet table form adds the tag, a sparse one inserts it). */
static tes__noinline int set_no_value(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return TES_ERR_INVALID;
    const tes__component_t *info = tes__registry_get(&w->components, c);
    uint32_t form = form_of(tes__quiet_word(w), dispatch_of(w, c));
    if (!info || info->size || form >= DISPATCHES)
        return tes__set_generic(w, e, c, NULL);
    return set_forms[form](w, e, c, NULL);
}

int tes_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    if (tes__unlikely(!w || !value))
        return set_no_value(w, e, c);
    uint64_t word = tes__quiet_word(w);
    uint32_t d = dispatch_of(w, c);
    if (tes__likely(quiet_table_form(word, d)))
        return quiet_table_add(w, e, c, value, value, true);
    return set_forms[form_of(word, d)](w, e, c, value);
}

int tes_remove(tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (tes__unlikely(!w))
        return TES_ERR_INVALID;
    return remove_forms[form_of(tes__quiet_word(w), dispatch_of(w, c))](w, e, c);
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
    if (slot->table != 0)
        tes__world_vacate_plain(w, t, slot->row);
    tes__entity_free(&w->entities, e);
    return TES_OK;
}

/* Disabling is adding the built-in TES_DISABLED tag, so it takes the same
 * paths as any add or remove. */
int tes_disable(tes_world_t *w, tes_entity_t e) { return tes_add(w, e, TES_DISABLED); }
int tes_enable(tes_world_t *w, tes_entity_t e) { return tes_remove(w, e, TES_DISABLED); }
