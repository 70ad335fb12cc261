/*
 * The component registry: what the world knows about each component id
 * (name, size, alignment, storage kind, hooks, members and entity fields). Records are
 * allocated one by one and never freed before the world, so a pointer to a
 * record is stable: tables keep them in their columns. A sparse component's
 * store lives inside its record.
 *
 * Ids are dense, starting at 1 (TES_DISABLED) and 2 (TES_PREFAB), so the
 * lookup by id is one array index; the lookup by name goes through a hash
 * map and is meant for setup code, not for loops.
 */
#ifndef TES_STORAGE_COMPONENT_H
#define TES_STORAGE_COMPONENT_H

#include "core/bytes.h"
#include "core/detail.h"
#include "core/hash.h"
#include "storage/members.h"
#include "storage/sparse_store.h"

/* How single-entity calls on a component are carried out (chosen when the
 * component is registered, see tes__component_t.dispatch): the generic
 * path that runs hooks and tells watchers, or a quiet path for a component
 * without hooks, table or sparse, which the world takes while nothing
 * unusual is going on (see world.h). */
#define TES__DISPATCH_GENERIC 0
#define TES__DISPATCH_TABLE 1
/* A sparse component's dispatch also says the shape of its store, so that
 * the quiet path runs code made for it (the value's size a constant, no
 * tombstones to reuse) without testing that on every call: the dispatch
 * is TES__DISPATCH_SPARSE + one of the shapes below. SPARSE_ANY covers
 * every store (stable ones, tags, other sizes); the others are stores
 * that are not stable and whose values have that many bytes. */
#define TES__DISPATCH_SPARSE 2
#define TES__SPARSE_SHAPE_ANY 0
#define TES__SPARSE_SHAPE_TAG 1
#define TES__SPARSE_SHAPE_4 2
#define TES__SPARSE_SHAPE_8 3
#define TES__SPARSE_SHAPE_12 4
#define TES__SPARSE_SHAPE_16 5
#define TES__SPARSE_SHAPES 6
/* A table component that tracks changes and has no hook: its quiet set
 * writes the value and stamps it (quiet_ops.c); its add and remove take
 * the generic paths. */
#define TES__DISPATCH_TRACKED (TES__DISPATCH_SPARSE + TES__SPARSE_SHAPES)

/* The store shape of a sparse component of this size and stability. */
static inline uint8_t tes__sparse_shape(uint32_t size, bool stable)
{
    if (stable)
        return TES__SPARSE_SHAPE_ANY;
    switch (size) {
    case 0: return TES__SPARSE_SHAPE_TAG;
    case 4: return TES__SPARSE_SHAPE_4;
    case 8: return TES__SPARSE_SHAPE_8;
    case 12: return TES__SPARSE_SHAPE_12;
    case 16: return TES__SPARSE_SHAPE_16;
    default: return TES__SPARSE_SHAPE_ANY;
    }
}

typedef struct tes__component {
    tes_comp_t id;
    uint32_t size;  /* 0 = tag */
    uint32_t align;
    tes_storage_t storage;
    bool stable;
    tes_hooks_t hooks;
    /* The described members and the one list of entity fields (the
     * entity members' elements, or the desc's entity_fields when it
     * describes no members): see members.h. */
    tes__members_t members;
    char *name;
    size_t name_size;
    tes__sparse_store_t store; /* used when storage == TES_STORAGE_SPARSE */
    void *owner;               /* the owning group that orders this store, if any */
    /* TES__DISPATCH_*: `plain_dispatch` is fixed at registration (TABLE or
     * SPARSE + the store's shape for a component with no hook at all,
     * GENERIC otherwise);
     * `dispatch` is the one calls use: GENERIC while some watcher hears
     * changes of the component (the world keeps it up to date). */
    uint8_t plain_dispatch;
    uint8_t dispatch;
    /* Change detection (changes.h): a tracked sparse component's stamps
     * live in its store (sparse_store.h: no companions, `stamps` 0); a
     * tracked table component's stamps live in
     * two hidden companion components registered right after it, with ids
     * `stamps` ("changed" ticks) and `stamps + 1` ("added" ticks). Every
     * table that holds the component holds their columns too (right after
     * its own), so every row move, swap and growth carries the stamps with
     * no code of its own. The companions are `hidden`: never in a type,
     * never named, never a term, and never in the registry's items (their
     * ids have no record there, so every call given one refuses it as
     * not registered, whatever its path): the owner holds them in
     * `stamp_info`. */
    bool track_changes;
    bool hidden;
    tes_comp_t stamps; /* a tracked component: its first companion; else 0 */
    struct tes__component *stamp_info[2]; /* a tracked component: its companions */
} tes__component_t;

/* The dispatch a component is registered with (its plain_dispatch): the
 * generic path for a component with any hook; TRACKED for a tracked one
 * (its quiet set stamps; its adds and removes take the generic paths,
 * which stamp adds); else TABLE, or SPARSE + its store's shape. Computed
 * once, at registration; tes__world_check computes it again. */
static inline uint8_t tes__plain_dispatch(const tes__component_t *c)
{
    const tes_hooks_t *h = &c->hooks;
    bool hooked = h->ctor || h->dtor || h->copy || h->move || h->on_add || h->on_set ||
                  h->on_remove;
    if (hooked)
        return TES__DISPATCH_GENERIC;
    /* A tracked component takes a path that stamps its writes: a tracked
     * sparse one the generic path (its stamps live in its store), a
     * tracked table one the tracked path (its stamps are columns). */
    if (c->track_changes)
        return c->storage == TES_STORAGE_SPARSE ? TES__DISPATCH_GENERIC : TES__DISPATCH_TRACKED;
    if (c->storage == TES_STORAGE_SPARSE)
        return (uint8_t)(TES__DISPATCH_SPARSE + tes__sparse_shape(c->size, c->stable));
    return TES__DISPATCH_TABLE;
}

/* Component ids below this have a read descriptor in the registry itself
 * (tes__registry_t.get_of), one load from the world. */
#define TES__REGISTRY_SMALL_IDS 64u
/* Bit of a read descriptor: the component is sparse. */
#define TES__GET_SPARSE UINT32_C(0x80000000)

typedef struct tes__registry {
    /* What tes_get needs to know of a small id, so that a random read
     * spends no dependent load on the record: the value size, with
     * TES__GET_SPARSE for a sparse component; 0 sends the read down the
     * general path (an id not issued, a tag, a size past 31 bits). Fixed
     * at registration, like everything it describes. */
    uint32_t get_of[TES__REGISTRY_SMALL_IDS];
    /* The store of a small sparse id whose get_of is set (NULL for every
     * other id), so that a sparse read reaches the store in one load that
     * does not wait on another (instead of items, then the record).
     * Records never move, so neither do their stores. */
    const struct tes__sparse_store *sparse_of[TES__REGISTRY_SMALL_IDS];
    /* The dispatch of each small id (TES__DISPATCH_*; GENERIC for an id
     * not issued), so that tes_add, tes_set and tes_remove choose their
     * form with one byte loaded from the world and no record. Kept by
     * tes__registry_set_dispatch, the only writer of a record's dispatch. */
    uint8_t dispatch_of[TES__REGISTRY_SMALL_IDS];
    tes__component_t **items; /* items[id]; NULL for 0 and stamp companions */
    uint32_t count;           /* ids issued + 1 */
    uint32_t hidden_count;    /* ids issued to stamp companions */
    uint32_t cap;
    tes__map_t by_name;       /* name hash -> id */
    tes_comp_t *sparse;       /* ids of sparse components, ascending */
    uint32_t sparse_count;
    uint32_t sparse_cap;
    tes__detail_t *detail;    /* where a refusal is explained (the world's); may be NULL */
    /* The hooks of the stamp companions (4-byte ticks): set by the world
     * (changes.c), which owns the tick; the registry only copies them. */
    tes_hooks_t stamp_hooks;
    /* The world's clock, which tracked sparse stores read (changes.c). */
    const _Atomic uint32_t *tick;
} tes__registry_t;

void tes__registry_init(tes__registry_t *r);
/* Frees records and sparse store memory; runs no hooks. */
void tes__registry_fini(tes__registry_t *r, tes__alloc_t *a);

/* The record of id c, or NULL if c was never issued. */
static inline tes__component_t *tes__registry_get(const tes__registry_t *r, tes_comp_t c)
{
    return c < r->count ? r->items[c] : NULL;
}

tes_comp_t tes__registry_lookup(const tes__registry_t *r, const char *name);

/* Sets the dispatch calls use for c (TES__DISPATCH_*) and keeps
 * dispatch_of in step with it: the only writer of either (registration,
 * and the world when a watcher starts or stops hearing c). */
static inline void tes__registry_set_dispatch(tes__registry_t *r, tes__component_t *c,
                                              uint8_t dispatch)
{
    c->dispatch = dispatch;
    if (c->id < TES__REGISTRY_SMALL_IDS)
        r->dispatch_of[c->id] = dispatch;
}

/* Validates desc and registers it (or returns the id already registered
 * under that name with the same layout). Returns 0 and sets *status to
 * TES_ERR_INVALID or TES_ERR_NOMEM on failure, changing nothing. */
tes_comp_t tes__registry_add(tes__registry_t *r, tes__alloc_t *a, const tes_component_desc_t *d,
                             int *status);



/* Constructs one value (ctor hook, or inline zero-fill). */
static inline void tes__component_construct1(const tes__component_t *c, void *ptr)
{
    if (c->hooks.ctor)
        c->hooks.ctor(ptr, 1, c->hooks.ctx);
    else
        tes__zero_bytes(ptr, c->size);
}

/* Assigns one value (copy hook, or an inline copy). */
static inline void tes__component_copy1(const tes__component_t *c, void *dst, const void *src)
{
    if (c->hooks.copy)
        c->hooks.copy(dst, src, 1, c->hooks.ctx);
    else
        tes__copy_bytes(dst, src, c->size);
}

/* Relocates one value (move hook, or an inline copy). */
static inline void tes__component_move1(const tes__component_t *c, void *dst, void *src)
{
    if (c->hooks.move)
        c->hooks.move(dst, src, 1, c->hooks.ctx);
    else
        tes__copy_bytes(dst, src, c->size);
}

/* Turns n raw values into constructed ones (ctor hook, or zero-fill). */
void tes__component_construct(const tes__component_t *c, void *ptr, uint32_t n);
/* Relocates n values into raw memory (move hook, or memcpy). */
void tes__component_move(const tes__component_t *c, void *dst, void *src, uint32_t n);
/* Ends n values (dtor hook, or nothing). */
static inline void tes__component_destruct(const tes__component_t *c, void *ptr, uint32_t n)
{
    if (c->hooks.dtor)
        c->hooks.dtor(ptr, (int32_t)n, c->hooks.ctx);
}
#endif
