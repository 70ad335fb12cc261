/*
 * tessera.h — the one public header of Tessera, an entity component system
 * for C11.
 *
 * Everything hangs off a world (tes_world_t); there is no global mutable
 * state. Handles are plain 64-bit integers: an entity is a 32-bit index plus
 * a 32-bit generation, so zero-initialised memory holds TES_NULL and a handle
 * to a destroyed entity is detected, never confused with a newer one.
 *
 * Error model: calls that can fail return an int status (TES_OK = 0, negative
 * on error). Calls that return a pointer or a handle return NULL / 0 on
 * failure, and tes_last_error() tells why. A failed call leaves the world
 * exactly as it was. No call aborts on bad input or on out-of-memory.
 * tes_last_error_detail() says in a sentence what was wrong.
 *
 * The header compiles as C11 and as C++11 or later.
 *
 * Copyright (c) 2026 The Tessera authors. SPDX-License-Identifier: MIT
 * (the full text is in the LICENSE file that ships with Tessera).
 */
#ifndef TESSERA_H
#define TESSERA_H

/* TES_API marks every public function. A static library or the
 * single-file build (dist/tessera.c) needs nothing. The shared-library build
 * compiles Tessera with TES_BUILDING_SHARED (exports, with every other symbol
 * hidden); on Windows, programs that use the DLL define TES_SHARED (imports).
 * Define TES_API yourself to override both. */
#ifndef TES_API
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(TES_BUILDING_SHARED)
#define TES_API __declspec(dllexport)
#elif defined(TES_SHARED)
#define TES_API __declspec(dllimport)
#else
#define TES_API
#endif
#elif defined(TES_BUILDING_SHARED) && (defined(__GNUC__) || defined(__clang__))
#define TES_API __attribute__((visibility("default")))
#else
#define TES_API
#endif
#endif

/* TES_PURE marks the readers that change nothing in the world: tes_get
 * and tes_get_mut (a read that finds nothing records why for the calling
 * thread only, see tes_last_error). The compiler may then
 * keep what a loop of reads uses (the handle array, its length) in
 * registers across the calls instead of loading it again after each one,
 * which matters to random reads, whose speed is set by how many loads the
 * processor keeps in flight. Any store or other call in between still
 * makes the compiler read the world again. (A call whose result is
 * discarded then draws an unused-value warning: it does nothing.) */
#ifndef TES_PURE
#if defined(__GNUC__) || defined(__clang__)
#define TES_PURE __attribute__((pure))
#else
#define TES_PURE
#endif
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TES_VERSION_MAJOR 0
#define TES_VERSION_MINOR 1
#define TES_VERSION_PATCH 0

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

enum {
    TES_OK = 0,
    TES_ERR_STALE = -1,   /* entity/instance not alive: destroyed, null, never issued */
    TES_ERR_NOMEM = -2,   /* the allocator returned NULL; nothing was changed */
    TES_ERR_INVALID = -3, /* bad argument or descriptor */
    TES_ERR_FULL = -4,    /* id space exhausted (entity_limit reached) */
    TES_ERR_OWNED = -5,   /* destroying a member of an instance in a strict world */
    TES_ERR_FORMAT = -6,  /* malformed serialized data */
    TES_ERR_IO = -7,      /* an I/O operation failed */
    TES_ERR_BUSY = -8     /* refused: inside a hook, or a system not allowed to make the change */
};

/* A static, human-readable description of a status code ("unknown status"
 * for values that are not one of the codes above). Never returns NULL. */
TES_API const char *tes_strerror(int status);

/* ------------------------------------------------------------------------ */
/* Handles                                                                   */
/* ------------------------------------------------------------------------ */

typedef uint64_t tes_entity_t;   /* low 32 bits index, high 32 bits generation */
typedef uint32_t tes_comp_t;     /* component id; 0 is invalid */
typedef uint64_t tes_instance_t; /* prefab instance id; 0 is invalid */

#define TES_NULL ((tes_entity_t)0)
/* Reserved index value: no entity ever has this index. */
#define TES_NULL_INDEX UINT32_C(0xFFFFFFFF)
/* Reserved generation value: no live entity ever has this generation. */
#define TES_TOMBSTONE UINT32_C(0xFFFFFFFF)
/* The largest generation a slot can reach before it is retired. */
#define TES_MAX_GENERATION UINT32_C(0xFFFFFFFE)

static inline uint32_t tes_entity_index(tes_entity_t e) { return (uint32_t)e; }
static inline uint32_t tes_entity_generation(tes_entity_t e) { return (uint32_t)(e >> 32); }
static inline tes_entity_t tes_entity_make(uint32_t index, uint32_t generation)
{
    return ((tes_entity_t)generation << 32) | (tes_entity_t)index;
}

/* Built-in tags that exist in every world. */
#define TES_DISABLED ((tes_comp_t)1) /* hides an entity from queries by default */
#define TES_PREFAB ((tes_comp_t)2)   /* marks prefab entities */

/* ------------------------------------------------------------------------ */
/* World                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct tes_world tes_world_t;

/* The world's allocator. Every byte Tessera allocates goes through it. A
 * zeroed allocator means libc (malloc/realloc/free). Returned memory must be
 * aligned to at least 16 bytes (as malloc is on 64-bit platforms), because
 * component columns are carved from it. `realloc` may return NULL, in which
 * case the old block must be left untouched. `free` receives the size that
 * was requested for the block. */
typedef struct tes_allocator_t {
    void *(*alloc)(size_t size, void *user);
    void *(*realloc)(void *ptr, size_t old_size, size_t new_size, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} tes_allocator_t;

typedef struct tes_world_desc_t {
    tes_allocator_t allocator; /* zeroed = libc */
    /* Highest generation a slot may reach; a slot that would pass it is
     * retired for good. 0 = TES_MAX_GENERATION. */
    uint32_t generation_limit;
    /* Maximum number of entity slots (indices). Past it tes_spawn fails with
     * TES_ERR_FULL. 0 = 2^32 - 1 (every index but the reserved null index). */
    uint32_t entity_limit;
    /* When set, tes_destroy refuses members of a prefab instance
     * (TES_ERR_OWNED). */
    bool strict_lifecycle;
    /* Threads tes_progress runs systems on: 0 or 1 = the calling thread
     * only; N > 1 = the caller plus N - 1 workers, started here, parked
     * while idle and joined by tes_world_free. At most TES_MAX_THREADS. */
    int32_t threads;
} tes_world_desc_t;

#define TES_MAX_THREADS 64

typedef struct tes_world_stats_t {
    uint32_t entities_alive;   /* live entities */
    uint32_t entity_slots;     /* slots ever created (high-water mark of indices) */
    uint32_t entities_retired; /* slots whose generation ran out; never reused */
    uint32_t entities_free;    /* slots waiting on the free list for reuse */
    uint32_t components;       /* registered components, built-ins included */
    uint32_t tables;           /* archetype tables, the root table included */
    uint32_t instances_alive;  /* live prefab instances */
    uint64_t bytes_allocated;  /* live bytes obtained through the allocator */
    uint64_t allocations;      /* allocator calls made so far (alloc + realloc) */
    uint64_t last_frame_ns;    /* wall time of the last tes_progress (0 before the first) */
} tes_world_stats_t;

/* Creates a world. NULL desc = all defaults. Returns NULL if the allocator
 * fails or the desc is invalid (a desc with only one of alloc/realloc/free
 * set is invalid). */
TES_API tes_world_t *tes_world_new(const tes_world_desc_t *desc);

/* Destroys the world: destroys values staged by deferred calls, runs the
 * destructor of every live component exactly once (no on_remove hooks
 * fire; queries are still alive while they run), frees every query still
 * alive (pointers to them dangle afterwards), then releases every byte.
 * Changes still queued (an iterator never finished) are dropped; a
 * TES_DEBUG build says so on stderr. NULL is a no-op. From inside one of the world's own hooks it does nothing
 * and records TES_ERR_BUSY. */
TES_API void tes_world_free(tes_world_t *w);

/* Fills *out. Returns TES_ERR_INVALID if w or out is NULL. */
TES_API int tes_world_stats(const tes_world_t *w, tes_world_stats_t *out);

/* The status of the last failed call on this world (TES_OK if none failed
 * yet). Successful calls do not reset it. Calls on a const world (tes_get,
 * tes_components_of, tes_component_lookup, ...) may run on several threads
 * at once, so they record their failures for the calling thread: this
 * answers for the newer of the world's last failure and the calling
 * thread's last failed const call on this world. A tes_get that returns
 * NULL records why: TES_ERR_STALE (e not alive), TES_ERR_INVALID (unknown
 * id, or a tag), or TES_OK for a live entity that lacks the component (not
 * an error; the detail then says which component is missing), so
 * `if (!p) puts(tes_last_error_detail(w));` always prints about that read. */
TES_API int tes_last_error(const tes_world_t *w);

/* A sentence about the last failure on this world (the same failure as
 * tes_last_error), naming the argument and the value that was wrong
 * ("component 'Position' is registered with size 8, this desc has size 4");
 * a stale handle's says which case it is (TES_NULL, never issued, or
 * destroyed, with the handle's generation and the slot's). "" when that
 * failure left no detail or no call failed yet (and for a NULL world).
 * Never NULL. The text lives in the world, or for a failed const call in
 * storage of the calling thread, until the next failure (or the thread's
 * next call of this function). While systems run on several threads it
 * is "" for failures of the running systems. */
TES_API const char *tes_last_error_detail(const tes_world_t *w);

/* ------------------------------------------------------------------------ */
/* Components                                                                */
/* ------------------------------------------------------------------------ */

typedef enum tes_storage_t {
    TES_STORAGE_TABLE = 0, /* archetype table: fastest iteration (default) */
    TES_STORAGE_SPARSE = 1 /* sparse set: cheap add/remove, never moves the entity */
} tes_storage_t;

/* Byte streams for snapshots (tes_snapshot_save / tes_snapshot_load). Each
 * callback returns TES_OK or a negative status; a reader that cannot deliver
 * all `size` bytes returns TES_ERR_IO. */
typedef struct tes_writer_t {
    int (*write)(const void *data, size_t size, void *user);
    void *user;
} tes_writer_t;

typedef struct tes_reader_t {
    int (*read)(void *data, size_t size, void *user);
    void *user;
} tes_reader_t;

/* Lifecycle hooks. Any may be NULL.
 * - ctor: turns raw memory into `count` values (default: zero-fill).
 * - dtor: ends `count` values (default: nothing).
 * - copy: assigns src values into constructed dst values (default: memcpy).
 * - move: relocates src values into raw dst memory and leaves src as raw
 *   memory, with no dtor for it (default: memcpy).
 * So every value is constructed once and destroyed once.
 * - on_add: after a component was added and constructed.
 * - on_set: after a value was written by tes_set.
 * - on_remove: before a component is destroyed (remove, clear, destroy).
 *   tes_world_free fires no on_remove.
 * Observers (on_add/on_set/on_remove) may read the world (tes_get, tes_has,
 * tes_alive, tes_query_count, ...) and write through tes_get_mut, but
 * structural changes (spawn, destroy, add, remove, set, clear, clone,
 * prefab and instance calls) made from inside any hook are refused with
 * TES_ERR_BUSY, and so are tes_defer_begin, tes_defer_end, tes_query_iter
 * (a finished iterator), owning groups and tes_world_free of the hook's own
 * world. Creating other queries and freeing queries work in every hook.
 * Value hooks run in the middle of a change: what they read about the
 * entities being changed is unspecified. */
typedef struct tes_hooks_t {
    void (*ctor)(void *ptr, int32_t count, void *ctx);
    void (*dtor)(void *ptr, int32_t count, void *ctx);
    void (*copy)(void *dst, const void *src, int32_t count, void *ctx);
    void (*move)(void *dst, void *src, int32_t count, void *ctx);
    void (*on_add)(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);
    void (*on_set)(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);
    void (*on_remove)(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);
    void *ctx;
    /* Snapshots of components that own memory (those with a copy hook, a
     * move hook or a dtor; others are saved as raw bytes): save writes one
     * value to `out`, load reads one back into constructed memory (ctor or
     * zeroed) and must read exactly the bytes save wrote. Both return TES_OK
     * or a negative status, which fails the whole save or load. */
    int (*save)(const void *ptr, const tes_writer_t *out, void *ctx);
    int (*load)(void *ptr, const tes_reader_t *in, void *ctx);
} tes_hooks_t;

#define TES_MAX_ENTITY_FIELDS 8

/* ------------------------------------------------------------------------ */
/* Reflection: components that describe their members                        */
/* ------------------------------------------------------------------------ */

/* The type of a described member. Sizes: BOOL, I8, U8 and CHAR 1 byte; I16
 * and U16 2; I32, U32 and F32 4; I64, U64, F64 and ENTITY 8. A member must
 * sit at an offset that is a multiple of its type's alignment (that of the
 * C type: int64_t, double, tes_entity_t, ...). */
typedef enum tes_type_t {
    TES_TYPE_BOOL = 1, /* a C bool (any nonzero byte reads as true) */
    TES_TYPE_I8,
    TES_TYPE_I16,
    TES_TYPE_I32,
    TES_TYPE_I64,
    TES_TYPE_U8,
    TES_TYPE_U16,
    TES_TYPE_U32,
    TES_TYPE_U64,
    TES_TYPE_F32,
    TES_TYPE_F64,
    TES_TYPE_ENTITY, /* a tes_entity_t: an entity field (remapped on instantiate) */
    TES_TYPE_CHAR    /* a NUL-terminated string in a fixed array of `count` bytes */
} tes_type_t;

/* One member of a component: `count` values of `type` starting `offset`
 * bytes into the value (count 0 means 1; for TES_TYPE_CHAR, count is the
 * array's size in bytes, the string ends at the first NUL or there). */
typedef struct tes_member_t {
    const char *name; /* required, unique within the component; copied */
    tes_type_t type;
    uint32_t offset;
    uint32_t count;
} tes_member_t;

/* The size in bytes of one value of `type` (0 for a value that is not a
 * tes_type_t). A constant expression when `type` is one. */
#define TES_TYPE_SIZE(type)                                                                   \
    ((type) == TES_TYPE_BOOL || (type) == TES_TYPE_I8 || (type) == TES_TYPE_U8 ||             \
             (type) == TES_TYPE_CHAR                                                          \
         ? 1u                                                                                 \
     : (type) == TES_TYPE_I16 || (type) == TES_TYPE_U16 ? 2u                                  \
     : (type) == TES_TYPE_I32 || (type) == TES_TYPE_U32 || (type) == TES_TYPE_F32 ? 4u        \
     : (type) == TES_TYPE_I64 || (type) == TES_TYPE_U64 || (type) == TES_TYPE_F64 ||          \
             (type) == TES_TYPE_ENTITY                                                        \
         ? 8u                                                                                 \
         : 0u)

/* One tes_member_t for field `field` of struct T: its name, type and
 * offset, and a count taken from the field's size (1 for a scalar, N for
 * an array `float v[N]` or `char name[N]`). A field whose size is not a
 * multiple of the type's size (a float described as TES_TYPE_F64) gets
 * count UINT32_MAX, which registration refuses with a detail. Usable in a
 * static initializer, in C and C++. */
#define TES_MEMBER(T, field, type)                                                            \
    {#field, (type), (uint32_t)offsetof(T, field),                                            \
     (uint32_t)(TES_TYPE_SIZE(type) && sizeof(((T *)0)->field) % TES_TYPE_SIZE(type) == 0     \
                    ? sizeof(((T *)0)->field) / TES_TYPE_SIZE(type)                           \
                    : 0xFFFFFFFFu)}

/* Declares the members of struct T beside it (at file scope, once per
 * translation unit that registers T), for TES_COMPONENT_REFLECTED and
 * TES_REGISTER_REFLECTED:
 *   typedef struct Position { float x, y; } Position;
 *   TES_MEMBERS(Position, TES_MEMBER(Position, x, TES_TYPE_F32),
 *                         TES_MEMBER(Position, y, TES_TYPE_F32));
 * It defines a static inline function (no warning when unused);
 * TES_MEMBERS_OF(T) is its array and TES_MEMBER_COUNT(T) its length, for
 * filling a tes_component_desc_t by hand. */
#define TES_MEMBERS(T, ...)                                                                   \
    static inline const tes_member_t *tes_members_of_##T(int32_t *count)                      \
    {                                                                                         \
        static const tes_member_t members[] = {__VA_ARGS__};                                  \
        if (count)                                                                            \
            *count = (int32_t)(sizeof members / sizeof members[0]);                           \
        return members;                                                                       \
    }                                                                                         \
    typedef int tes__members_declared_##T
#define TES_MEMBERS_OF(T) tes_members_of_##T(NULL)
#define TES_MEMBER_COUNT(T) tes__member_count(tes_members_of_##T)
static inline int32_t tes__member_count(const tes_member_t *(*of)(int32_t *count))
{
    int32_t n = 0;
    of(&n);
    return n;
}

typedef struct tes_component_desc_t {
    const char *name;     /* required, unique; copied */
    size_t size;          /* 0 = tag (no data) */
    size_t align;         /* 0 = natural for the size (largest power of two
                             dividing it, at most 16); else a power of two
                             <= 16 that divides size */
    tes_storage_t storage;
    bool stable;          /* sparse storage with in-place deletion: the
                             component's address never changes until it is
                             removed. Implies TES_STORAGE_SPARSE. */
    tes_hooks_t hooks;
    size_t entity_fields[TES_MAX_ENTITY_FIELDS]; /* byte offsets of tes_entity_t members */
    int32_t entity_field_count;
    /* Keep an "added" and a "changed" tick beside every value (8 bytes per
     * value), so that queries can filter with tes_term_t.change. Any
     * storage; a size > 0 only (TES_ERR_INVALID for a tag). Components
     * without it pay nothing. See "Change detection" below. */
    bool track_changes;
    /* The component's members (copied), for tes_json_* and tools that read
     * values by name. NULL / 0: undescribed (JSON shows the bytes). Each
     * must lie inside `size`, be aligned for its type (and the component's
     * align at least that), not overlap another, have a known type and a
     * non-empty name unique in the component. TES_TYPE_ENTITY members are
     * the component's entity fields: with members, entity_fields may only
     * repeat their offsets (or be left empty). */
    const tes_member_t *members;
    int32_t member_count;
} tes_component_desc_t;

/* Registers a component and returns its id. Registering the same name with
 * the same layout (size, align, storage, stability) and the same members
 * (same names, types, offsets and counts in the same order; none for none)
 * returns the same id and keeps the first registration's hooks and
 * entity_fields. Fails with 0 and TES_ERR_INVALID for
 * a NULL/empty name, a name already used with another layout or other
 * members, a bad align, a size that is not a multiple of align,
 * entity_fields that do not fit in the component, or members that are
 * invalid (see tes_component_desc_t.members; the detail names the member
 * and the rule); TES_ERR_NOMEM if the allocator fails. A failed call
 * registers nothing. */
TES_API tes_comp_t tes_component(tes_world_t *w, const tes_component_desc_t *desc);

/* The id registered under `name`, or 0 if there is none (recorded as
 * TES_OK with a detail naming the name) or name is NULL (TES_ERR_INVALID);
 * recorded for the calling thread, as every failed const call. */
TES_API tes_comp_t tes_component_lookup(const tes_world_t *w, const char *name);

/* What the world knows of a registered component, as tes_component_info
 * reports it. The name and members point into the world and stay valid
 * and unchanged until tes_world_free (components are never
 * unregistered); they are not the desc's copies. */
typedef struct tes_component_info_t {
    tes_comp_t id;
    const char *name;
    size_t size;  /* 0 for a tag */
    size_t align;
    tes_storage_t storage;
    bool stable;        /* pointer-stable sparse storage */
    bool track_changes; /* added/changed stamps are kept (change detection) */
    const tes_member_t *members; /* member_count entries (NULL when 0), in
                                    registration order */
    int32_t member_count;
} tes_component_info_t;

/* Fills *out with what the world knows of component c. Fails with
 * TES_ERR_INVALID (NULL w or out, or c not registered in this world: the
 * detail says which), leaving *out unchanged. A const read: several
 * threads may make it at once. */
TES_API int tes_component_info(const tes_world_t *w, tes_comp_t c, tes_component_info_t *out);

/* The ids of every registered component, ascending, the built-in
 * TES_DISABLED and TES_PREFAB included: writes min(count, cap) of them to
 * out and returns count (tes_components(w, NULL, 0) asks the count). A
 * negative cap, or out NULL with cap > 0, is TES_ERR_INVALID (returned,
 * with a detail); NULL w returns TES_ERR_INVALID. */
TES_API int32_t tes_components(const tes_world_t *w, tes_comp_t *out, int32_t cap);

/* Registers a C type under its own name: TES_COMPONENT(w, Position) or
 * TES_COMPONENT(w, Position, .storage = TES_STORAGE_SPARSE). In C++ the
 * extra designated fields need C++20 (write them in declaration order;
 * before C++20 a static_assert says so); TES_COMPONENT(w, T) alone works
 * from C++11 on. */
#ifndef __cplusplus
#define TES_COMPONENT(w, ...) \
    tes_component((w), &(tes_component_desc_t){TES__COMPONENT_FIELDS(__VA_ARGS__, )})
#define TES__COMPONENT_FIELDS(T, ...) \
    .name = #T, .size = sizeof(T), .align = _Alignof(T), __VA_ARGS__
#elif __cplusplus >= 202002L
#define TES_COMPONENT(w, ...) tes_component((w), tes__cxx_ptr(TES__COMPONENT_DESC(__VA_ARGS__, )))
#define TES__COMPONENT_DESC(T, ...) \
    tes__cxx_desc_with(tes__cxx_desc(#T, sizeof(T), alignof(T)), tes__cxx_options{__VA_ARGS__})
#else
/* Before C++20 the optional fields cannot be designated: they are only
 * stringified, so that a call with any fails with a static_assert that
 * says so (tes__cxx_fields_need_cxx20) rather than a parse error here. */
#define TES_COMPONENT(w, ...) \
    tes_component((w), tes__cxx_ptr(TES__COMPONENT_DESC(__VA_ARGS__, )))
#define TES__COMPONENT_DESC(T, ...)                             \
    (tes__cxx_fields_need_cxx20<sizeof(#__VA_ARGS__)>(),        \
     tes__cxx_desc(#T, sizeof(T), alignof(T)))
#endif

/* TES_COMPONENT with the members TES_MEMBERS(T, ...) declared for T:
 * TES_COMPONENT_REFLECTED(w, Position), and TES_REGISTER_REFLECTED(w, T)
 * as TES_REGISTER. Optional fields follow the type as for TES_COMPONENT
 * (in C++ they need C++20; TES_COMPONENT_REFLECTED(w, T) alone works from
 * C++11 on). */
#ifndef __cplusplus
#define TES_COMPONENT_REFLECTED(w, ...) \
    tes_component((w), &(tes_component_desc_t){TES__REFLECTED_FIELDS(__VA_ARGS__, )})
#define TES__REFLECTED_FIELDS(T, ...)                                                       \
    .name = #T, .size = sizeof(T), .align = _Alignof(T), .members = tes_members_of_##T(NULL), \
    .member_count = tes__member_count(tes_members_of_##T), __VA_ARGS__
#else
#define TES_COMPONENT_REFLECTED(w, ...) \
    tes_component((w), tes__cxx_ptr(TES__REFLECTED_DESC(__VA_ARGS__, )))
#define TES__REFLECTED_DESC(T, ...)                                              \
    tes__cxx_desc_members(TES__COMPONENT_DESC(T, __VA_ARGS__), tes_members_of_##T)
#endif
#define TES_REGISTER_REFLECTED(w, ...) \
    (TES__REGISTER_ID(__VA_ARGS__, ) = TES_COMPONENT_REFLECTED(w, __VA_ARGS__))

/* Typed convenience. TES_DECLARE(T); declares the variable TES_ID(T) that
 * holds T's id (file or block scope); TES_REGISTER(w, T, ...) registers T
 * as TES_COMPONENT does (same optional fields), stores the id in TES_ID(T)
 * and evaluates to it. The accessors then take the type instead of an id
 * and return typed pointers, so reading a component as the wrong type is a
 * compile-time diagnostic:
 *   TES_DECLARE(Position);
 *   TES_REGISTER(w, Position);
 *   TES_SET(w, e, Position, {1, 2});
 *   const Position *p = TES_GET(w, e, Position);
 * TES_SET's value is an initializer in braces. */
#define TES_ID(T) tes_id_##T
#define TES_DECLARE(T) tes_comp_t TES_ID(T) = 0
#define TES_REGISTER(w, ...) (TES__REGISTER_ID(__VA_ARGS__, ) = TES_COMPONENT(w, __VA_ARGS__))
#define TES__REGISTER_ID(T, ...) TES_ID(T)
#define TES_GET(w, e, T) ((const T *)tes_get((w), (e), TES_ID(T)))
#define TES_GET_MUT(w, e, T) ((T *)tes_get_mut((w), (e), TES_ID(T)))
#define TES_ADD(w, e, T) tes_add((w), (e), TES_ID(T))
#define TES_REMOVE(w, e, T) tes_remove((w), (e), TES_ID(T))
#define TES_HAS(w, e, T) tes_has((w), (e), TES_ID(T))
#ifndef __cplusplus
#define TES_SET(w, e, T, ...) tes_set((w), (e), TES_ID(T), &(T)__VA_ARGS__)
#else
#define TES_SET(w, e, T, ...) tes_set((w), (e), TES_ID(T), tes__cxx_ptr(T __VA_ARGS__))
#endif

/* ------------------------------------------------------------------------ */
/* Entities                                                                  */
/* ------------------------------------------------------------------------ */

/* Creates an empty entity. Returns TES_NULL with TES_ERR_FULL when the index
 * space is exhausted, TES_ERR_NOMEM when the allocator fails. The most
 * recently destroyed index is reused first, with a newer generation. */
TES_API tes_entity_t tes_spawn(tes_world_t *w);

/* Creates n entities at once, each carrying the ncomps components in comps
 * (constructed or zero-filled; on_add fires for each), straight into their
 * final table. Writes the handles to out (which must hold n) unless out is
 * NULL. Either all n are created or none: TES_ERR_FULL, TES_ERR_NOMEM,
 * TES_ERR_INVALID (n < 0, an unknown or repeated component, ncomps < 0,
 * comps NULL with ncomps > 0). The same as tes_spawn_bulk without data. */
TES_API int tes_spawn_n(tes_world_t *w, int32_t n, const tes_comp_t *comps, int32_t ncomps,
                tes_entity_t *out);

/* ------------------------------------------------------------------------ */
/* Bundles, bulk and batch                                                   */
/* ------------------------------------------------------------------------ */

/* One component and its value for tes_spawn_with. ptr NULL = the default
 * value (constructed, or zero-filled); a ptr given for a tag is ignored. */
typedef struct tes_value_t {
    tes_comp_t comp;
    const void *ptr;
} tes_value_t;

/* Creates one entity with all n components, placed straight into its final
 * table (no intermediate moves): each value is constructed, then assigned
 * from its ptr (copy hook or memcpy); then on_add fires for every component
 * and on_set for every one given a ptr, in the order of `values`. ptr may
 * point into the world's own storage. All or nothing: TES_NULL with
 * TES_ERR_INVALID (n < 0, values NULL with n > 0, an unknown or repeated
 * component), TES_ERR_FULL, TES_ERR_NOMEM, TES_ERR_BUSY (inside a hook).
 * While the world is deferred the handle is live at once and the components
 * arrive at the flush, one after the other (each as a deferred tes_set, or
 * tes_add for a NULL ptr), their values copied at the call. */
TES_API tes_entity_t tes_spawn_with(tes_world_t *w, const tes_value_t *values, int32_t n);

/* A batch for tes_spawn_bulk. */
typedef struct tes_bulk_desc_t {
    int32_t count;             /* entities to create */
    const tes_comp_t *comps;   /* ncomps distinct components */
    int32_t ncomps;
    /* NULL, or ncomps pointers: data[k] is NULL (defaults) or `count`
     * contiguous values of comps[k] (ignored for a tag). */
    const void *const *data;
    tes_entity_t *out;         /* NULL, or room for count handles */
} tes_bulk_desc_t;

/* Creates d->count entities with the d->ncomps components straight into
 * their final table, copying each data column in one pass (one memcpy for
 * components without ctor and copy hooks). on_add fires for every component
 * of every entity (component by component), then on_set for every value
 * copied from data. All or nothing: TES_ERR_INVALID (d NULL, count < 0,
 * ncomps < 0, comps NULL with ncomps > 0, an unknown or repeated
 * component), TES_ERR_FULL, TES_ERR_NOMEM, TES_ERR_BUSY. Deferred like
 * tes_spawn_n (handles at once, components at the flush, values copied at
 * the call). */
TES_API int tes_spawn_bulk(tes_world_t *w, const tes_bulk_desc_t *d);

/* Destroys n entities, as tes_destroy would one after the other, in list
 * order. Every handle is checked first, so it is all or nothing:
 * TES_ERR_STALE if any is not alive, TES_ERR_INVALID if one is listed twice
 * (or n < 0, or es NULL with n > 0), TES_ERR_OWNED if any belongs to an
 * instance in a strict_lifecycle world; the first bad entry in list order
 * decides. Needs no memory unless an entry has children: descendants die
 * first (see tes_set_parent), checked first too (TES_ERR_OWNED for an
 * owned descendant), and a cascade's plan may fail with TES_ERR_NOMEM,
 * nothing destroyed. Deferred like tes_destroy. */
TES_API int tes_destroy_n(tes_world_t *w, const tes_entity_t *es, int32_t n);

/* out[i] = tes_get(w, es[i], c) for i < n; returns how many are not NULL.
 * Built for random access: it computes the addresses of a batch of
 * entities with the loads of all of them in flight at once, and prefetches
 * the values; out is its working buffer meanwhile, so it must not overlap
 * es. -1 for a NULL world, n < 0, or es / out NULL with n > 0
 * (TES_ERR_INVALID, recorded for the calling thread, see tes_last_error);
 * 0 with TES_ERR_INVALID for an unknown id or a tag. Single misses record
 * nothing. A reader like tes_get: safe from several threads while nothing
 * changes the world. */
TES_API int32_t tes_get_n(const tes_world_t *w, tes_comp_t c, const tes_entity_t *es, int32_t n,
                  const void **out);

/* Destroys an entity: fires on_remove for each component, runs destructors,
 * frees the slot (and takes it out of its instance). TES_ERR_STALE if e is
 * not alive; TES_ERR_OWNED if e belongs to an instance and the world is
 * strict_lifecycle (destroy the instance, or detach e first). Its
 * descendants are destroyed first, in post-order (see tes_set_parent); the
 * whole subtree is checked first (TES_ERR_OWNED if any member of it is
 * owned), and a cascade's plan may fail with TES_ERR_NOMEM, nothing
 * destroyed. */
TES_API int tes_destroy(tes_world_t *w, tes_entity_t e);

TES_API bool tes_alive(const tes_world_t *w, tes_entity_t e);
TES_API int32_t tes_entity_count(const tes_world_t *w);
/* Pages through every live entity in index order: skips the first `offset`
 * live entities, writes up to cap of the next ones to out and returns how
 * many it wrote (0 past the end or for a NULL world; TES_ERR_INVALID for a
 * negative offset or cap, or a NULL out with cap > 0). Costs a pass over
 * the entity slots up to the last one written, so a page deep in a large
 * world costs more than the first page. */
TES_API int32_t tes_entities(const tes_world_t *w, int64_t offset, tes_entity_t *out, int32_t cap);

/* Adds component c (constructed, or zero-filled without a ctor); on_add
 * fires. Adding a component the entity already has does nothing and returns
 * TES_OK. TES_ERR_STALE, TES_ERR_INVALID (unknown c), TES_ERR_NOMEM. */
TES_API int tes_add(tes_world_t *w, tes_entity_t e, tes_comp_t c);

/* Adds c if missing (as tes_add), copies *value into it (copy hook or
 * memcpy), then fires on_set. value must not be NULL for a data component;
 * it is ignored for a tag. value may point into the world's own storage
 * (for instance tes_get of another entity's component): when the add moves
 * rows, the copy is made from a bitwise image taken before the move. */
TES_API int tes_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value);

/* A pointer to e's c, adding it first if missing. NULL on failure (see
 * tes_last_error) and for tags (with TES_ERR_INVALID, as tags have no data).
 * Deferred, it gives what the same calls made one after another give: the
 * pointer starts from the value c holds at the call's place in the queue,
 * and writes through it (made before the next call) take effect there; it
 * is c itself when nothing queued touches the value or could look at it,
 * else a staged value the flush assigns (valid until the flush). */
TES_API void *tes_ensure(tes_world_t *w, tes_entity_t e, tes_comp_t c);

/* Removes c (on_remove, then dtor). Removing a component the entity does not
 * have does nothing and returns TES_OK. */
TES_API int tes_remove(tes_world_t *w, tes_entity_t e, tes_comp_t c);

TES_API bool tes_has(const tes_world_t *w, tes_entity_t e, tes_comp_t c);

/* A pointer to e's c, or NULL if e is not alive, lacks c, or c is a tag
 * (the reason is recorded for the calling thread: see tes_last_error).
 * A pointer into table storage is valid until the next structural change;
 * a pointer to a non-stable sparse component until the next add/remove of
 * that component on any entity (and, if an owning group owns its store,
 * until any entity joins or leaves that group, which any structural change
 * of the group's components or of TES_DISABLED/TES_PREFAB can cause); a
 * pointer to a stable component until that component is removed from that
 * entity. */
TES_API TES_PURE const void *tes_get(const tes_world_t *w, tes_entity_t e, tes_comp_t c);
TES_API TES_PURE void *tes_get_mut(tes_world_t *w, tes_entity_t e, tes_comp_t c);

/* Removes every component of e (on_remove, then dtor for each); e stays
 * alive and empty. */
TES_API int tes_clear(tes_world_t *w, tes_entity_t e);

/* A new entity with a copy of every component of e (constructed, then
 * assigned with the copy hook or memcpy; on_add fires for each). TES_NULL on
 * failure (stale e, no memory, full). */
TES_API tes_entity_t tes_clone(tes_world_t *w, tes_entity_t e);

/* Writes up to cap of e's component ids to out in ascending order and
 * returns how many e has (which may exceed cap; INT32_MAX for more than
 * INT32_MAX). -1 if e is not alive (TES_ERR_STALE) or out is NULL with
 * cap > 0 or cap < 0 (TES_ERR_INVALID), recorded for the calling thread
 * (see tes_last_error). */
TES_API int32_t tes_components_of(const tes_world_t *w, tes_entity_t e, tes_comp_t *out, int32_t cap);

/* Adds / removes the TES_DISABLED tag. */
TES_API int tes_disable(tes_world_t *w, tes_entity_t e);
TES_API int tes_enable(tes_world_t *w, tes_entity_t e);
/* True if e is alive and not disabled. */
TES_API bool tes_enabled(const tes_world_t *w, tes_entity_t e);


/* ------------------------------------------------------------------------ */
/* Lookup views: random reads of one component, inlined                     */
/* ------------------------------------------------------------------------ */

/* A lookup view answers tes_get_mut(w, e, c) for one component c with an
 * inline function, for loops that read many entities in random order. An
 * out-of-line tes_get reloads where the world keeps c on every call; with
 * the view inlined into the loop the compiler keeps those addresses in
 * registers, so each read costs little beyond its two cache misses and
 * more reads overlap.
 *
 * The view snapshots where c's values live. It is valid until the world's
 * next structural change: any call that adds or removes a component,
 * creates or destroys an entity (deferred spawns included, as they issue
 * their handle at once), clears, clones, instantiates, loads a snapshot,
 * creates a grouped query, or applies deferred commands (tes_defer_end,
 * the end of the last iterator, the end of a system), whether the call
 * succeeds or fails (a failed call leaves the world's contents as they
 * were, not necessarily its arrays where they were). Writing values
 * through the pointers it returns, tes_set of a component an entity
 * already has, iterating queries and every read keep it valid. After a
 * structural change, call tes_lookup_fini and tes_lookup_init again; a
 * stale view may read freed memory. A debug build with TES_DEBUG catches
 * many such uses of a table component's view under AddressSanitizer
 * (tables move on every change there).
 *
 * Every field of tes_lookup_t, and tes_lookup_slot_t with the
 * TES_LOOKUP_* constants below, is private: they are in this header only so
 * that tes_lookup_get can be inline. Their layout and encoding may change
 * in any release (the inline readers ship with the header of the same
 * version, so a program rebuilt against a new header stays correct). Do
 * not read or write them; use tes_lookup_init, tes_lookup_get (or its two
 * storage-specific forms) and tes_lookup_fini. A zeroed view is a valid
 * "no view": every read misses and tes_lookup_fini does nothing.
 */
/* Private (see above): used by the inline readers only. */
typedef struct tes_lookup_slot_t {
    uint32_t generation;
    uint32_t table;
    uint32_t row;
} tes_lookup_slot_t;

#define TES_LOOKUP_SLOT_FREE UINT32_C(0xFFFFFFFF)
#define TES_LOOKUP_SLOT_HINT UINT32_C(0x80000000)
#define TES_LOOKUP_ENTRY_PAGE_BITS 12
#define TES_LOOKUP_ENTRY_PAGE (UINT32_C(1) << TES_LOOKUP_ENTRY_PAGE_BITS)

typedef struct tes_lookup_t {
    /* PRIVATE, every field: do not read or write; layout and encoding may
     * change in any release (see above). */
    bool sparse;
    uint32_t size;
    const tes_lookup_slot_t *slots;
    uint32_t slot_count;
    uint32_t table_count;
    uint8_t *const *columns;
    const uint64_t *const *entry_pages;
    uint32_t entry_page_count;
    uint32_t page_shift;
    uint8_t *const *data_pages;
    const uintptr_t *entry_bases;
    const uintptr_t *data_bases;
    tes_world_t *priv_world;
    void *priv_block;
    size_t priv_bytes;
} tes_lookup_t;

/* Builds a view of component c in w into *out. TES_OK; TES_ERR_INVALID for
 * a NULL out or world, an unknown id, or a tag (a component without data);
 * TES_ERR_NOMEM if the allocator fails. A table component's view allocates
 * memory in proportion to the world's number of tables; a sparse one
 * allocates nothing. On failure
 * *out is zeroed (tes_lookup_fini is then a no-op) and nothing stays
 * allocated. Recorded in tes_last_error when w is not NULL. Not a
 * concurrent reader: build views on one thread, then read through them
 * from any number (inside systems, any system may build its own, on any
 * thread count: the scheduler serialises their allocations). */
TES_API int tes_lookup_init(tes_lookup_t *out, tes_world_t *w, tes_comp_t c);

/* Frees what tes_lookup_init allocated and zeroes the view. Safe on a
 * zeroed view and twice in a row; must come before tes_world_free. */
TES_API void tes_lookup_fini(tes_lookup_t *l);

/* PRIVATE: the two reads behind tes_lookup_get, on a view's private
 * fields passed by value (so a loop of calls keeps them in registers). Not
 * part of the API: their parameters and the encoding they read may change
 * in any release, together with this header. Call tes_lookup_get or its
 * two storage-specific forms. */
static inline void *tes__lookup_sparse_at(const uintptr_t *entry_bases, uint32_t entry_page_count,
                                          const uintptr_t *data_bases, uint32_t shift, size_t size,
                                          tes_entity_t e)
{
    const uint32_t index = (uint32_t)e;
    if ((index >> TES_LOOKUP_ENTRY_PAGE_BITS) >= entry_page_count)
        return NULL;
    const uint64_t entry = *(const uint64_t *)(entry_bases[index >> TES_LOOKUP_ENTRY_PAGE_BITS] +
                                               (uintptr_t)index * sizeof(uint64_t));
    /* Below TES_NULL_INDEX only when the generations match and the entry
     * is not empty; the generation bits then cancel, so `pos` is the
     * packed position itself, already zero-extended (no copies of it
     * before the shift and the multiply: fewer instructions per read let
     * more of a loop's reads be in flight). */
    const uint64_t pos = (e & ~(uint64_t)TES_NULL_INDEX) ^ entry;
    if (pos >= TES_NULL_INDEX)
        return NULL;
    void *const value = (void *)(data_bases[pos >> shift] + (uintptr_t)pos * size);
#if defined(__GNUC__)
    /* Spares the caller's NULL test on this path. */
    if (!value)
        __builtin_unreachable();
#endif
    return value;
}
static inline void *tes__lookup_table_at(const tes_lookup_slot_t *slots, uint32_t slot_count,
                                         uint8_t *const *columns, uint32_t table_mask,
                                         size_t size, tes_entity_t e)
{
    const uint32_t index = (uint32_t)e;
    if (index >= slot_count)
        return NULL;
    const tes_lookup_slot_t *const slot = &slots[index];
    if (slot->generation != (uint32_t)(e >> 32))
        return NULL;
    /* Two 4-byte loads from the slot's line rather than one 8-byte load
     * split in registers: the loop's random reads overlap as far as its
     * instruction window reaches, so fewer instructions per read let more
     * reads be in flight. */
    uint8_t *const column = columns[slot->table & table_mask];
    return column ? column + (size_t)slot->row * size : NULL;
}

/* The same pointer as tes_get_mut(w, e, c) for the world and component the
 * view was built for, while the view is valid (see above): NULL when e is
 * not alive (null, destroyed, stale generation, index never issued) or
 * lacks c. Any handle value is safe to pass. Changes nothing, so it may be
 * called from several threads at once while nothing changes the world. */
static inline void *tes_lookup_get(const tes_lookup_t *l, tes_entity_t e)
{
    /* Every field is read up front, on every path: a loop of calls then
     * reads each one once, before the loop (a read made on one branch
     * only could not be moved out of it). */
    const bool sparse = l->sparse;
    const size_t size = l->size;
    const tes_lookup_slot_t *const slots = l->slots;
    const uint32_t slot_count = l->slot_count;
    uint8_t *const *const columns = l->columns;
    const uint32_t table_mask = l->table_count - 1u;
    const uintptr_t *const entry_bases = l->entry_bases;
    const uint32_t entry_page_count = l->entry_page_count;
    const uint32_t shift = l->page_shift;
    const uintptr_t *const data_bases = l->data_bases;
    return sparse ? tes__lookup_sparse_at(entry_bases, entry_page_count, data_bases, shift, size, e)
                  : tes__lookup_table_at(slots, slot_count, columns, table_mask, size, e);
}

/* tes_lookup_get for a loop that knows its component's storage (the
 * storage it was registered with): the view's kind is not tested on each
 * read, which leaves the loop fewer instructions and registers (about 15%
 * faster on random table reads in the project's benchmark). The same
 * answers as tes_lookup_get on a view of that kind; on a view of the other
 * kind they return NULL for every handle (never reading out of bounds). */
static inline void *tes_lookup_get_table(const tes_lookup_t *l, tes_entity_t e)
{
    return tes__lookup_table_at(l->slots, l->slot_count, l->columns, l->table_count - 1u,
                                l->size, e);
}
static inline void *tes_lookup_get_sparse(const tes_lookup_t *l, tes_entity_t e)
{
    return tes__lookup_sparse_at(l->entry_bases, l->entry_page_count, l->data_bases,
                                 l->page_shift, l->size, e);
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */
/* ------------------------------------------------------------------------ */

#define TES_MAX_TERMS 16

typedef enum tes_oper_t {
    TES_AND = 0,     /* the entity must have the component */
    TES_NOT = 1,     /* the entity must not have it */
    TES_OPTIONAL = 2 /* field is the component if present, else NULL */
} tes_oper_t;

/* How a term's field is used. Systems declare it and tes_progress runs
 * systems whose accesses do not conflict at the same time; it is checked
 * for validity, not enforced on the memory, and does not change what a
 * query matches. */
typedef enum tes_access_t {
    TES_INOUT = 0,
    TES_IN = 1,
    TES_OUT = 2,
    TES_NOACCESS = 3
} tes_access_t;

/* A term's change filter (components registered with track_changes only,
 * on TES_AND terms; TES_ERR_INVALID otherwise, and for a sparse component's
 * filter in an owning-group or by-depth query). */
typedef enum tes_change_t {
    TES_CHANGE_NONE = 0,
    TES_CHANGE_ADDED = 1,   /* added since this query's previous iteration */
    TES_CHANGE_CHANGED = 2  /* added or written since then */
} tes_change_t;

/* Whose component a term is about. TES_SRC_PARENT: the entity's parent's
 * (see tes_set_parent). Such a term's field is an array aligned with
 * it.entities holding each parent's value, copied when the chunk is made
 * (read-only: the term's access must be TES_IN). TES_AND: only entities
 * whose parent has the component match; TES_NOT: only those whose parent
 * does not (roots included); TES_OPTIONAL: chunks are split so that every
 * parent in a chunk has it (field non-NULL) or none does (NULL). A query
 * may name a component once per source (World of the entity and World of
 * its parent). Refused (TES_ERR_INVALID) with a group flag or a change
 * filter on the parent term. */
typedef enum tes_src_t {
    TES_SRC_SELF = 0,
    TES_SRC_PARENT = 1
} tes_src_t;

typedef struct tes_term_t {
    tes_comp_t comp; /* 0 ends the term list */
    tes_oper_t oper;
    tes_access_t access;
    tes_change_t change;
    tes_src_t src;
} tes_term_t;

enum {
    TES_QUERY_INCLUDE_DISABLED = 1 << 0, /* also match entities with TES_DISABLED */
    TES_QUERY_INCLUDE_PREFAB = 1 << 1,   /* also match entities with TES_PREFAB */
    /* Keep a sparse set of the matching entities up to date on every change:
     * iteration walks exactly the matches. On a query with a
     * table AND term it builds nothing: the table cache already does it. */
    TES_QUERY_NONOWNING_GROUP = 1 << 2,
    /* Keep the matching entities packed at the front of every AND term's
     * sparse store, in the same order: every chunk is fully
     * contiguous. Every AND term must be a non-stable sparse component not
     * owned by another group; otherwise tes_query_new fails with
     * TES_ERR_INVALID. */
    TES_QUERY_OWNING_GROUP = 1 << 3,
    /* Yield matches by depth in the hierarchy: every match at depth d
     * before any at depth d + 1, each chunk of one depth (it.depth). With
     * a TES_SRC_PARENT term, the parents' values a chunk reads are those
     * their own chunks left, so one query propagates values down a whole
     * forest in one pass. Not with a group flag (TES_ERR_INVALID). */
    TES_QUERY_CASCADE = 1 << 4
};

typedef struct tes_query_desc_t {
    /* End at the first term that is all zero. A term with comp 0 followed
     * by a set term (or with an oper or access) is refused: it is almost
     * always a component registered after the desc was written. */
    tes_term_t terms[TES_MAX_TERMS];
    uint32_t flags;
} tes_query_desc_t;

typedef struct tes_query tes_query_t;

/* An iteration over a query, in chunks. Public fields: count, entities,
 * world, delta_time, ctx, thread and depth (read them; do not write them).
 * Every priv_* field below is PRIVATE: the iterator's own state, whose
 * names, layout, meaning and size may change in any release; do not read,
 * write or rely on them. The three sizes below are that private state's;
 * they are in this header only because the iterator is returned by value. */
#define TES_ITER_SCRATCH 8
/* Room for the values an iteration gathers from scattered sparse stores
 * (see tes_field). */
#define TES_ITER_GATHER_BYTES 4096
/* Room for the entities hidden by the default filters (disabled ones,
 * prefabs) that a sparse-driven iteration steps over without testing each
 * entity. */
#define TES_ITER_HIDDEN 64

typedef struct tes_iter_t {
    int32_t count;                 /* entities in this chunk */
    const tes_entity_t *entities;  /* count entities */
    tes_world_t *world;
    float delta_time;              /* tes_progress's delta_time (systems); 0 otherwise */
    void *ctx;                     /* the system's ctx (systems); NULL otherwise */
    int32_t thread;                /* 0 on the calling thread, 1..threads-1 on workers */
    int32_t depth;                 /* TES_QUERY_CASCADE: the chunk's depth; else 0 */
    /* ---- PRIVATE from here on: do not touch, may change in any release.
     * The iterator's own state (see above); the notes say what each field
     * does today, not what it will do. ---- */
    void *priv_fields[TES_MAX_TERMS];
    tes_query_t *priv_query;
    uint32_t priv_phase;           /* which walk is running */
    uint32_t priv_cursor;          /* table index / packed position / slot */
    uint32_t priv_row;             /* row within the current table */
    int32_t priv_driver;           /* driving term of a sparse walk */
    uint32_t priv_done;            /* nonzero once finished */
    tes_entity_t priv_scratch[TES_ITER_SCRATCH]; /* handles of root chunks */
    uint32_t priv_gather_count;    /* entities of a gathered chunk */
    uint32_t priv_gather_mask;     /* its terms whose values go back */
    uint32_t priv_hidden_count;    /* positions in priv_hidden (or markers: test each
                                      entity, not listed yet) */
    uint32_t priv_hidden_next;     /* the first of them the walk has not passed */
    uint32_t priv_hidden[TES_ITER_HIDDEN]; /* ascending */
    uint64_t priv_gather[TES_ITER_GATHER_BYTES / 8]; /* gathered values */
    uint32_t priv_change_since;    /* change filters: ticks after this one pass */
    uint32_t priv_change_tick;     /* the tick this iteration advanced to */
    uint32_t priv_change_live;     /* nonzero: this iteration ends a change window */
    void *priv_cascade;            /* a by-depth walk's state (cascade or parent terms) */
    uint32_t priv_level;           /* the deferral level it holds (0: none) */
} tes_iter_t;

/* Creates a query. Fails with NULL and TES_ERR_INVALID for no terms, a
 * term with comp 0 before a set term ("terms[1] has component 0 but
 * terms[2] is set: was a component registered?"), an unknown component, a term repeated, an unknown oper/access/flag, a group
 * flag without an AND term, both group flags, or an owning group with an
 * OPTIONAL term or an AND term on a stable store, a table component or a
 * store another group owns; TES_ERR_BUSY for an owning group while the
 * world is deferred or inside a hook (building it reorders stores a live
 * iterator or the running call may be using); TES_ERR_NOMEM if the
 * allocator fails. A non-owning group asked for inside a hook is built
 * when the call that ran the hook returns (short of memory then: when a
 * later structural call returns; same results until then). TES_ERR_BUSY
 * too from a system's run (other systems may be walking the query lists). */
TES_API tes_query_t *tes_query_new(tes_world_t *w, const tes_query_desc_t *desc);
/* Frees a query (NULL: no-op). Inside a hook it is released when the call
 * running the hook returns (it may be in use by that call). Refused
 * (TES_ERR_BUSY recorded, nothing freed) from a system's run. */
TES_API void tes_query_free(tes_query_t *q);

/* The number of entities the query matches now (INT32_MAX for more). */
TES_API int32_t tes_query_count(tes_query_t *q);

/* Destroys every entity the query matches now and returns how many, in the
 * order an iteration of the query would visit them (so their indices are
 * recycled in that order). Tables whose every row matches are emptied
 * whole: on_remove for all their rows, then one destructor call per column.
 * Negative status on failure, with nothing destroyed: TES_ERR_INVALID (q
 * NULL, or more than INT32_MAX matches), TES_ERR_OWNED (a match belongs to
 * an instance in a strict world), TES_ERR_NOMEM, TES_ERR_BUSY. Deferred
 * (while iterating, or inside tes_defer_begin/end): the matches are taken
 * at the call and their count returned; they are destroyed at the flush. */
TES_API int32_t tes_destroy_matching(tes_query_t *q);

/* Starts an iteration. While any iterator is live, structural changes are
 * deferred (see tes_defer_begin). Call tes_iter_next until it returns
 * false; leaving the loop early requires tes_iter_fini. An iterator never
 * finished keeps the world deferred: later changes queue and are never
 * applied, and the calls refused while deferred (tes_progress, snapshots,
 * owning groups, tes_defer_end) say so in their detail, naming the terms
 * of the query whose iterator is open; a TES_DEBUG build also reports it
 * on stderr when the world is freed. Inside a hook the iterator is
 * already finished and TES_ERR_BUSY is recorded. */
TES_API tes_iter_t tes_query_iter(tes_query_t *q);
/* Advances to the next non-empty chunk; false when done (the iterator is
 * then finished and deferred changes may have been applied). A NULL or
 * zeroed iterator counts as finished. */
TES_API bool tes_iter_next(tes_iter_t *it);
/* The field of term `term` for this chunk: an array of it->count values
 * aligned with it->entities. NULL for NOT terms, tags, an OPTIONAL term the
 * chunk's entities lack, out-of-range terms (which also record
 * TES_ERR_INVALID on the world, with a detail), and an iterator with no
 * chunk (before the first tes_iter_next, or finished).
 *
 * Where a sparse-driven query's matches sit scattered in a store (Position
 * on every entity, Velocity on a few), the iterator may gather their values
 * into arrays of its own so that chunks stay long. The values of terms that
 * are not TES_IN go back to the stores when the iterator moves to the next
 * chunk or ends: each value the loop changed, unless the stored value was
 * itself changed meanwhile (through tes_get_mut), which is then kept. So in
 * such a chunk, tes_get of a chunk entity's gathered component reads the
 * value as it was when the chunk began. Only components without copy or
 * move hooks, not `stable`, and with an alignment of at most 8 are
 * gathered. */
TES_API void *tes_field(const tes_iter_t *it, int32_t term);
/* tes_field, checked against the element size the caller expects: NULL
 * with TES_ERR_INVALID recorded on the world (and a detail) when `size`
 * differs from term `term`'s component size or the term is out of range.
 * TES_FIELD(it, T, i) is the typed form: a `T *`. */
TES_API void *tes_field_checked(const tes_iter_t *it, int32_t term, size_t size);
#define TES_FIELD(it, T, i) ((T *)tes_field_checked((it), (i), sizeof(T)))
/* Ends an iteration early (idempotent; harmless after tes_iter_next
 * returned false). */
TES_API void tes_iter_fini(tes_iter_t *it);

/* ------------------------------------------------------------------------ */
/* Deferred changes                                                          */
/* ------------------------------------------------------------------------ */

/* Between tes_defer_begin and the matching tes_defer_end (they nest, and a
 * live iterator counts as one level), spawn, spawn_n, destroy, add, set,
 * ensure (unless nothing queued touches the value or could look at it),
 * remove, clear, clone, disable, enable, tes_prefab_new,
 * tes_prefab_child, tes_instantiate(_n) and tes_instance_destroy are queued
 * and applied in call order when the outermost level ends. Arguments are
 * checked at once (a call on a dead entity fails with TES_ERR_STALE then).
 * tes_spawn, tes_clone and tes_instantiate still return live handles at once
 * (their components arrive at the flush). tes_instance_detach/adopt take
 * effect at once. Reads (tes_get, tes_has, tes_alive, ...) see the current
 * state, before the queued changes. Queued operations on entities that died
 * before the flush are dropped (their staged values destroyed).
 * tes_defer_end returns the first error met while applying (the rest is
 * still applied), or TES_ERR_INVALID when no level opened by
 * tes_defer_begin is open (an iterator's level ends with the iterator). When
 * the flush happens as an iterator ends, its errors are reported through
 * tes_last_error only. Both are refused with TES_ERR_BUSY inside a hook
 * (nothing changes), so nothing can queue onto a queue being applied. */
TES_API int tes_defer_begin(tes_world_t *w);
TES_API int tes_defer_end(tes_world_t *w);
TES_API bool tes_is_deferred(const tes_world_t *w);

/* ------------------------------------------------------------------------ */
/* Prefabs and instances                                                     */
/* ------------------------------------------------------------------------ */

/* Creates a prefab root: an entity tagged TES_PREFAB (so queries skip it by
 * default) to which components are added with the ordinary calls. TES_NULL
 * on failure (TES_ERR_NOMEM, TES_ERR_FULL, TES_ERR_BUSY). Destroying the
 * root ends the prefab (its record is released); its children are ordinary
 * TES_PREFAB entities then, to be destroyed by the caller (read them with
 * tes_prefab_members first). */
TES_API tes_entity_t tes_prefab_new(tes_world_t *w);
/* Adds a member to a prefab: a new entity tagged TES_PREFAB. TES_NULL with
 * TES_ERR_STALE (prefab not alive), TES_ERR_INVALID (not a prefab root),
 * TES_ERR_NOMEM, TES_ERR_FULL. */
TES_API tes_entity_t tes_prefab_child(tes_world_t *w, tes_entity_t prefab);
/* The prefab's live members, root first, then children in the order they
 * were added: writes up to cap to out and returns the count (INT32_MAX for
 * more; -1 if prefab is not a live prefab root). */
TES_API int32_t tes_prefab_members(const tes_world_t *w, tes_entity_t prefab, tes_entity_t *out,
                           int32_t cap);

/* Instantiates a prefab: one new entity per live member (out[0] = the root's
 * copy, then the members in prefab order; up to cap are written), each with
 * a copy of every component of its member (constructed then assigned with
 * the copy hook, or memcpy) except TES_PREFAB. entity_fields that refer to a
 * member of the same prefab are remapped to the corresponding new entity;
 * other references are kept. on_add fires for every new component. Returns
 * the new instance, or 0 with TES_ERR_STALE (prefab dead), TES_ERR_INVALID
 * (not a prefab, bad out/cap), TES_ERR_NOMEM or TES_ERR_FULL; a failed call
 * creates nothing. While the world is deferred, the entities and the
 * instance exist at once and receive their components at the flush (from
 * the prefab as it is then). */
TES_API tes_instance_t tes_instantiate(tes_world_t *w, tes_entity_t prefab, tes_entity_t *out,
                               int32_t cap);
/* Instantiates n times at once (much cheaper per entity than n calls):
 * writes the n instances to out. All or nothing, with the errors of
 * tes_instantiate. Use tes_instance_members to reach the entities. */
TES_API int tes_instantiate_n(tes_world_t *w, tes_entity_t prefab, int32_t n, tes_instance_t *out);

/* Destroys every member of an instance (on_remove, dtors) in one pass, even
 * in a strict world; the instance id then dies. Deferred while iterating.
 * TES_ERR_STALE if inst is not alive. */
TES_API int tes_instance_destroy(tes_world_t *w, tes_instance_t inst);
/* The instance e belongs to, or 0 (none, or e not alive). */
TES_API tes_instance_t tes_instance_of(const tes_world_t *w, tes_entity_t e);
/* An instance is alive until it is destroyed or its last member leaves it
 * (destroyed or detached). Instance ids are never reused. */
TES_API bool tes_instance_alive(const tes_world_t *w, tes_instance_t inst);
/* Writes up to cap members (in the order they joined) and returns their
 * count (INT32_MAX for more); -1 if inst is not alive or out is NULL with
 * cap > 0. */
TES_API int32_t tes_instance_members(const tes_world_t *w, tes_instance_t inst, tes_entity_t *out,
                             int32_t cap);
/* Takes e out of its instance: it then lives on its own (and may be
 * destroyed in a strict world). TES_ERR_STALE, TES_ERR_INVALID (e belongs to
 * no instance). */
TES_API int tes_instance_detach(tes_world_t *w, tes_entity_t e);
/* Puts e, which belongs to no instance, into inst. TES_ERR_STALE (e or inst
 * not alive), TES_ERR_INVALID (e already belongs to an instance),
 * TES_ERR_NOMEM. */
TES_API int tes_instance_adopt(tes_world_t *w, tes_instance_t inst, tes_entity_t e);

/* ------------------------------------------------------------------------ */
/* Hierarchy and names                                                       */
/* ------------------------------------------------------------------------ */

/* Parent/child links are kept outside tables: linking or reparenting never
 * moves a row or creates a table, and touches O(1) entities. Links are not
 * components (tes_clear keeps them, tes_components_of does not list them).
 * Destroying an entity destroys its descendants first, in post-order
 * (children before their parent, siblings in child order); see
 * tes_destroy. */

/* Makes child the last child of parent (parent TES_NULL: a root). Setting
 * the same parent again changes nothing (the order stays). Fails, with
 * nothing changed: TES_ERR_STALE (child, or a parent other than TES_NULL,
 * not alive); TES_ERR_INVALID with a detail when parent is child or one of
 * its descendants (a cycle), when exactly one of them is a prefab entity or
 * they are members of different prefabs, or when child has a name that
 * another child of parent already has; TES_ERR_NOMEM; TES_ERR_BUSY (inside
 * a hook, or from a system without the structural flag). Deferred like
 * tes_add: checked when called and again when applied (a link whose child
 * or parent died before the flush, or that would then close a cycle or
 * repeat a sibling name, is dropped and reported as tes_defer_end's
 * error). */
TES_API int tes_set_parent(tes_world_t *w, tes_entity_t child, tes_entity_t parent);
/* The same as tes_set_parent(w, children[i], parents[i]) for i = 0 .. n-1
 * in order (parents[i] TES_NULL: a root), all or nothing: each pair is
 * checked against the forest the earlier pairs left, and if any pair is
 * refused (including a cycle or a sibling-name clash that only an earlier
 * pair creates) the world is left as it was and the detail names the
 * pair's index. Faster than n single calls for large n: the pairs' memory
 * is fetched ahead. Fails, with nothing changed: TES_ERR_INVALID when
 * children or parents is NULL with n > 0 (n = 0 is TES_OK); every failure
 * of tes_set_parent, for the first refused pair (TES_ERR_STALE,
 * TES_ERR_INVALID); TES_ERR_NOMEM; TES_ERR_BUSY (inside a hook, or from a
 * system without the structural flag). Deferred as one command: while
 * deferred, the checks that do not depend on the links (alive, self,
 * prefab rules) run when called, and the whole batch is checked again when
 * applied; a refused batch is dropped whole and reported as
 * tes_defer_end's error. */
TES_API int tes_set_parent_n(tes_world_t *w, const tes_entity_t *children,
                             const tes_entity_t *parents, size_t n);
/* e's parent; TES_NULL for a root or an entity that is not alive. */
TES_API tes_entity_t tes_parent(const tes_world_t *w, tes_entity_t e);
/* Writes up to cap children of parent, in order, and returns how many it
 * has. TES_ERR_STALE if parent is not alive, TES_ERR_INVALID if cap < 0 or
 * out is NULL with cap > 0 (recorded for the calling thread), or w is NULL
 * (not recorded). */
TES_API int32_t tes_children(const tes_world_t *w, tes_entity_t parent, tes_entity_t *out,
                             int32_t cap);
/* 0 for a root, 1 for its children, and so on; TES_ERR_STALE (negative) if
 * e is not alive (recorded for the calling thread); TES_ERR_INVALID for a
 * NULL world. */
TES_API int32_t tes_depth(const tes_world_t *w, tes_entity_t e);

/* Names e (copied), or removes its name (name NULL). A name is 1 to 255
 * bytes, without '/', and unique among its siblings (the roots are
 * siblings of each other). Fails, with nothing changed: TES_ERR_STALE;
 * TES_ERR_INVALID with a detail (empty, too long, contains '/', or a
 * sibling has it); TES_ERR_NOMEM; TES_ERR_BUSY (inside a hook, from a system
 * without the structural flag or from a parallel one). Applied at
 * once, even while the world is deferred. An entity a deferred tes_clone or
 * tes_instantiate made, named before the flush, keeps its name; the link
 * the flush then gives it follows the sibling rule (when its new parent
 * has a child of that name the link is not made, the entity stays a root,
 * and tes_defer_end reports TES_ERR_INVALID). */
TES_API int tes_set_name(tes_world_t *w, tes_entity_t e, const char *name);
/* e's name, or NULL (no name, or e not alive). Valid until e's name
 * changes or e dies. */
TES_API const char *tes_name(const tes_world_t *w, tes_entity_t e);
/* The entity at path: names separated by '/', from the roots down
 * ("ship/turret/barrel"). O(1) expected per segment. TES_NULL if there is
 * none, recorded for the calling thread with a detail: TES_ERR_INVALID for
 * a path no entity can have (NULL, empty, an empty segment, a segment past
 * 255 bytes), TES_OK for a well-formed path that names nothing (the detail
 * says where it stops). */
TES_API tes_entity_t tes_lookup_path(const tes_world_t *w, const char *path);
/* Writes e's path (its ancestors' names and its own, joined by '/') to buf,
 * NUL-terminated when it fits in cap bytes, and returns its length without
 * the NUL (0, writing "", when e or an ancestor has no name). TES_ERR_STALE
 * if e is not alive; TES_ERR_INVALID if cap < 0 or buf is NULL with cap > 0
 * (recorded for the calling thread), or w is NULL. Nothing is written on
 * failure, or when cap is 0. */
TES_API int32_t tes_path(const tes_world_t *w, tes_entity_t e, char *buf, int32_t cap);

/* Depth order. Linking never moves rows, so a by-depth query
 * (TES_QUERY_CASCADE, TES_SRC_PARENT terms) over a forest built in any
 * order reads each entity's values from scattered rows. tes_sort_by_depth
 * moves the rows of every table into depth order (roots first; entities of
 * one depth keep their relative order), inside their tables: an entity
 * keeps its table and components, values move with their change-detection
 * stamps, sparse components stay where they are, and no hook but the
 * components' move hooks runs (it adds and removes nothing). While nothing
 * moves a row of a table afterwards (no spawn, destroy, add, remove,
 * enable, disable or clear of an entity in it) and no link changes, by-depth
 * queries walk that table's rows of each depth in place and read parents'
 * values from positions recorded by the sort; after such a change they
 * take the general walk (same results, slower) until the next sort. Like
 * any row move it invalidates pointers to table values and lookup views.
 * Cost: linear in the entities, plus a copy of the largest table it
 * reorders while it runs. Fails, with nothing changed: TES_ERR_BUSY with a
 * detail (inside a hook, inside tes_progress, while an iterator is open or
 * inside tes_defer_begin/tes_defer_end: it is not deferred); TES_ERR_NOMEM
 * with a detail; TES_ERR_INVALID for a NULL world. */
TES_API int tes_sort_by_depth(tes_world_t *w);

/* ------------------------------------------------------------------------ */
/* Change detection                                                          */
/* ------------------------------------------------------------------------ */

/* The world's tick: starts at 1; each iteration of a query with change
 * terms advances it when it starts and again when it ends. Every write of
 * a tracked value (tes_set, tes_ensure, tes_get_mut, adds, chunks handed
 * out through TES_INOUT/TES_OUT terms, tes_mark_changed) is stamped with
 * the tick current at the write. Ticks wrap: a stamp older than 2^31 ticks
 * reads as changed. 0 for a NULL world. */
TES_API uint32_t tes_world_tick(const tes_world_t *w);

/* Stamps e's c as changed at the current tick, for a value written
 * through a pointer the stamp did not see (one kept from tes_get_mut
 * across a tick, or a raw field array). TES_ERR_STALE if e is not alive;
 * TES_ERR_INVALID (with a detail) if c is not registered, not tracked
 * (track_changes) or e does not have it. Not structural: works while
 * deferred and from a system's run. */
TES_API int tes_mark_changed(tes_world_t *w, tes_entity_t e, tes_comp_t c);

/* ------------------------------------------------------------------------ */
/* Snapshots                                                                 */
/* ------------------------------------------------------------------------ */

/* Writes the whole world to `out` (format: docs/snapshot_format.md): every
 * entity slot (live, free, retired) with its generation and the free list,
 * every component value, prefabs, instances and their membership. The
 * snapshot is built in memory and handed to out->write in one call, so a
 * writer sees all of it or nothing. Fails with TES_ERR_INVALID (NULL
 * arguments, a component in use with a copy hook, a move hook or a dtor but
 * no save hook), TES_ERR_BUSY (from inside a hook, or while the world is
 * deferred), TES_ERR_NOMEM, or the status a writer or save hook returned;
 * the status is recorded for tes_last_error with a detail. Nothing in the
 * world changes. out->write runs inside the world's hook level, like the
 * save hooks: what a hook may not do (structural calls, tes_world_free,
 * snapshot calls, deferral levels) it may not do either (TES_ERR_BUSY). */
TES_API int tes_snapshot_save(const tes_world_t *w, const tes_writer_t *out);

/* Restores a snapshot into w, which must have no live entities and must
 * have every component the snapshot names registered under the same name
 * and layout (size, align, storage, stability), and the same
 * generation_limit and entity_limit (TES_ERR_INVALID otherwise; extra
 * components are fine). Every entity keeps its exact handle; the free list
 * and retired slots come back as saved, so w issues the same handles the
 * saved world would have. entity_fields are restored as saved (no
 * remapping). No observers fire; values of components with a load hook are
 * constructed, then read by it. Any malformed, truncated or corrupted input
 * fails with TES_ERR_FORMAT (or the reader's TES_ERR_IO), with a detail
 * naming the field and its byte offset, and leaves the world as it was.
 * Memory: at most 8 times the input plus the world's storage granularity
 * (docs/reference.md, tes_snapshot_load), forged checksums or not.
 * TES_ERR_BUSY from inside a hook or while deferred; TES_ERR_NOMEM. in->read
 * and the load hooks run inside the world's hook level, under the rules of
 * hooks. */
TES_API int tes_snapshot_load(tes_world_t *w, const tes_reader_t *in);

/* The same through a file (created or truncated / opened for reading);
 * TES_ERR_IO when it cannot be opened, written or read, with a detail that
 * names the path and the system error ("open '/x/y.snap': No such file or
 * directory"). A call refused whatever the input (TES_ERR_BUSY; for a load,
 * also TES_ERR_INVALID for a world with live entities) is refused before
 * the file is opened. */
TES_API int tes_snapshot_save_file(const tes_world_t *w, const char *path);
TES_API int tes_snapshot_load_file(tes_world_t *w, const char *path);
/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

/* Writes entity e as one JSON object (RFC 8259) to `out`:
 *   {"id":"4294967297","name":null,"path":null,"parent":null,
 *    "disabled":false,"prefab":false,
 *    "components":{"Position":{"x":1.5,"y":-2},"Player":true,
 *                  "Blob":{"bytes":"AAECAw=="}}}
 * The id, the parent and every TES_TYPE_ENTITY value are 64-bit handles
 * written as decimal strings (null for TES_NULL / no parent); name and path
 * come from the hierarchy (null when there is none). Components (never the
 * built-in TES_DISABLED and TES_PREFAB, which are the two flags) appear
 * under their names: an object of their members when they have members
 * (arrays of count > 1 as JSON arrays, TES_TYPE_CHAR as a string), `true`
 * for a tag, {"bytes":"<base64>"} for data without members. Integers are
 * JSON numbers (64-bit ones in full: a reader that holds numbers as doubles
 * loses precision past 2^53). Floats are the shortest decimal that reads
 * back (strtof / strtod) to the same value, f32 and f64 alike; NaN and
 * the infinities are the strings "nan", "inf" and "-inf"; -0 is "-0.0".
 * Strings are escaped (every control character, quotes, backslashes);
 * bytes that are not valid UTF-8 are each replaced by U+FFFD, so the
 * output is valid UTF-8 and valid JSON for every world.
 *
 * Output is streamed: `out->write` receives pieces of at most 4 KiB, and
 * the call uses a fixed amount of memory whatever the world's size (it
 * allocates nothing). The writer returns TES_OK or a negative status;
 * the first failure stops the output and is returned (a positive value
 * reads as TES_ERR_IO), so a reader may see a cut document. The writer
 * runs inside the world's hook level: structural calls, snapshot calls
 * and tes_world_free from it are refused with TES_ERR_BUSY.
 * Fails with TES_ERR_INVALID (NULL out or out->write), TES_ERR_STALE (e
 * not alive), TES_ERR_BUSY (while systems run); each with a detail. Works
 * inside hooks and while the world is deferred (it writes the current
 * state). Not one of the reads several threads may make at once: it
 * raises the world's hook level while it runs. */
TES_API int tes_json_entity(const tes_world_t *w, tes_entity_t e, const tes_writer_t *out);

/* Writes the whole world as {"components":[...],"entities":[...]}:
 * every registered component but the two built-ins, in id order, as
 *   {"name":"Position","id":3,"size":8,"align":4,"storage":"table",
 *    "stable":false,"members":[{"name":"x","type":"f32","offset":0,
 *    "count":1},...]}
 * (storage "table" or "sparse"; type one of bool, i8, i16, i32, i64, u8,
 * u16, u32, u64, f32, f64, entity, char), then every live entity in
 * index order as tes_json_entity writes it. Same streaming, memory and
 * failure rules as tes_json_entity. */
TES_API int tes_json_world(const tes_world_t *w, const tes_writer_t *out);

/* Writes only the "components" array tes_json_world begins with (same
 * form, same order, same rules and failures, less TES_ERR_STALE): a
 * world's schema, at a cost that does not grow with its entities. */
TES_API int tes_json_components(const tes_world_t *w, const tes_writer_t *out);

/* ------------------------------------------------------------------------
 * Systems and the scheduler
 *
 * A system is a query plus a function. tes_progress runs every system once,
 * in creation order as far as the result is concerned: systems whose term
 * accesses do not conflict run at the same time on the world's threads, and
 * a `parallel` system's chunks are split over them, yet the result is the
 * one of running the systems one after another, for any thread count.
 * ------------------------------------------------------------------------ */

typedef struct tes_system tes_system_t;

typedef struct tes_system_desc_t {
    const char *name;        /* required, unique among live systems; copied */
    tes_query_desc_t query;  /* no terms: run is called once per frame, count 0 */
    void (*run)(tes_iter_t *it); /* required: called once per chunk */
    void *ctx;               /* handed to run as it->ctx */
    /* run may be called on sub-ranges of chunks on several threads at once;
     * it must write only the fields of the range it is given. Entity-creating
     * calls from it fail with TES_ERR_BUSY. */
    bool parallel;
    /* run may make structural changes: they are queued and applied when the
     * system ends. The system is a barrier: it runs alone. Without this flag
     * structural calls from run fail with TES_ERR_BUSY. With `parallel` too,
     * its rows are split over the threads, each queuing into a command queue
     * of its own; the queues are applied in row order (as one thread would
     * have queued them). Each call of run then gets a block of up to 1024
     * rows of one chunk (the same blocks on every thread count), and a
     * deferred tes_ensure sees only what the same call queued and always
     * returns a staged value, applied in row order when the system ends. */
    bool structural;
} tes_system_desc_t;

/* Creates a system. NULL with TES_ERR_INVALID for a NULL desc, a missing,
 * empty or already used name, a missing run or a query tes_query_new would refuse;
 * TES_ERR_NOMEM; TES_ERR_BUSY from inside a hook or tes_progress. */
TES_API tes_system_t *tes_system_new(tes_world_t *w, const tes_system_desc_t *desc);

/* Frees a system (NULL is a no-op); its name can be used again. Called from
 * inside tes_progress (from any thread), the system is only marked: it runs
 * no more from the next level on and is freed when the frame ends.
 * tes_world_free frees the systems still alive. */
TES_API void tes_system_free(tes_system_t *s);

/* From run, on every thread count: tes_progress, tes_system_new,
 * tes_world_free, tes_defer_begin/end, tes_snapshot_save/load and
 * tes_query_new/free are refused with TES_ERR_BUSY; reads, lookup views,
 * nested walks and tes_system_free work. */

/* Runs every system once. TES_OK; TES_ERR_INVALID for a NULL world;
 * TES_ERR_BUSY from inside a hook, a system, or while the world is
 * deferred (the detail then names the unfinished iterators' queries and
 * the open tes_defer_begin levels); else the first error a structural system's queued changes met
 * when they were applied (the rest were still applied). */
TES_API int tes_progress(tes_world_t *w, float delta_time);

/* What one system cost. Times are nanoseconds of thread time: a system
 * whose rows were split over several threads counts every thread's share,
 * and a structural system's time includes applying its queued changes. */
typedef struct tes_system_stats_t {
    const char *name;  /* the system's name; valid while the system lives */
    int64_t matched;   /* entities its query matched in the last frame it ran */
    uint64_t runs;     /* frames it ran in (tes_progress calls) */
    uint64_t last_ns;  /* time of the last frame it ran in */
    uint64_t mean_ns;  /* mean over every frame it ran in */
} tes_system_stats_t;

/* Fills *out. TES_ERR_INVALID if s or out is NULL. Reads what the last
 * tes_progress recorded: call it between frames, not from a system. */
TES_API int tes_system_stats(const tes_system_t *s, tes_system_stats_t *out);

/* Writes up to cap of the world's live systems, in creation order, to out
 * (out may be NULL when cap is 0) and returns how many there are (0 for a
 * NULL world; TES_ERR_INVALID for a negative cap or a NULL out with cap > 0). */
TES_API int32_t tes_systems(const tes_world_t *w, tes_system_t **out, int32_t cap);

#ifdef __cplusplus
}

/* C++ support for the macros above: a braced temporary lives until the end
 * of the full expression that contains the call, so its address may be
 * passed to tes_set or tes_component. */
template <typename T> static inline const T *tes__cxx_ptr(const T &value) { return &value; }

/* The C++11-to-17 form of TES_COMPONENT's desc (no designated fields). */
static inline tes_component_desc_t tes__cxx_desc(const char *name, size_t size, size_t align)
{
    tes_component_desc_t d = {};
    d.name = name;
    d.size = size;
    d.align = align;
    return d;
}

/* TES_COMPONENT_REFLECTED's desc: d with the members T declared. */
static inline tes_component_desc_t tes__cxx_desc_members(tes_component_desc_t d,
                                                         const tes_member_t *(*of)(int32_t *))
{
    d.members = of(&d.member_count);
    return d;
}

#if __cplusplus < 202002L
/* TES_COMPONENT's check before C++20: n is the size of its stringified
 * optional fields, 1 (an empty string) when there are none. */
template <size_t n> static inline void tes__cxx_fields_need_cxx20()
{
    static_assert(n == 1, "TES_COMPONENT / TES_REGISTER: fields after the type (.storage = ..., "
                          ".hooks = ...) need C++20 designated initializers; before C++20 fill a "
                          "tes_component_desc_t and call tes_component (see docs/guide.md)");
}
#endif

#if __cplusplus >= 202002L
/* The optional fields TES_COMPONENT takes in C++20, by designator:
 * TES_COMPONENT(w, T, .storage = TES_STORAGE_SPARSE, .hooks = h). */
struct tes__cxx_options {
    tes_storage_t storage = TES_STORAGE_TABLE;
    bool stable = false;
    tes_hooks_t hooks = {};
    size_t entity_fields[TES_MAX_ENTITY_FIELDS] = {};
    int32_t entity_field_count = 0;
    bool track_changes = false;
    const tes_member_t *members = nullptr;
    int32_t member_count = 0;
};

static inline tes_component_desc_t tes__cxx_desc_with(tes_component_desc_t d,
                                                      const tes__cxx_options &o)
{
    d.storage = o.storage;
    d.stable = o.stable;
    d.hooks = o.hooks;
    for (int i = 0; i < TES_MAX_ENTITY_FIELDS; i++)
        d.entity_fields[i] = o.entity_fields[i];
    d.entity_field_count = o.entity_field_count;
    d.track_changes = o.track_changes;
    d.members = o.members;
    d.member_count = o.member_count;
    return d;
}
#endif
#endif

#endif /* TESSERA_H */
