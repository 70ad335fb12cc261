/*
 * The reference model for the differential fuzzer: the simplest thing that
 * can be obviously right, so that any disagreement with the library points at
 * the library. Entities are a plain array of slots (alive flag + generation),
 * the free list is an explicit LIFO stack of indices, and each slot stores a
 * presence bitmask plus a fixed byte array per component. Nothing here is
 * fast or clever on purpose.
 *
 * The model also knows the fuzzer's fixed component set (fz_comps: the
 * core set, then the extra ones: 72 wide table components, two huge
 * ones, whose 64 KiB values the model keeps as the seed of their bytes,
 * and the cells variant's ten) and keeps
 * the hook-call counts the library must produce (on_add, on_set, on_remove,
 * copy) and the number of live values per component (which ctor - dtor must
 * equal, counting the values staged by queued sets).
 *
 * Deferred mode: the model's state is always the current state (what reads
 * see); changes made while the world is deferred go to an explicit queue,
 * applied in call order by fz_model_flush. Entities spawned or cloned in a
 * deferred block are alive at once but `pending` (no query sees them) until
 * the flush. Queries live in model_query.h.
 *
 * Prefabs and instances (model_lifecycle.c): prefab records (root, then
 * children in order), instance ids issued by an allocator of their own that
 * works exactly like the entity one, per-entity membership with each
 * instance's members in join order, and instantiation as a plan (live
 * members, new entities) applied at once or at the flush, with the entity
 * fields of components TREF and SREF remapped.
 */
#ifndef TES_FUZZ_MODEL_H
#define TES_FUZZ_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

/* Component k of the model; k = 0 is the built-in TES_DISABLED and the last
 * one the built-in TES_PREFAB (both table tags the queries filter on). */
enum {
    FZ_C_DISABLED = 0,
    FZ_C_T4,    /* table, 4 bytes */
    FZ_C_T12,   /* table, 12 bytes, align 4 */
    FZ_C_T24,   /* table, 24 bytes, align 8, tracked hooks */
    FZ_C_T16A,  /* table, 16 bytes, align 16 */
    FZ_C_TTAG,  /* table tag */
    FZ_C_TTAG2, /* table tag with observer hooks */
    FZ_C_S4,    /* sparse, 4 bytes */
    FZ_C_S16,   /* sparse, 16 bytes, align 8, tracked hooks */
    FZ_C_SST,   /* stable sparse, 24 bytes, align 8, tracked hooks */
    FZ_C_STAG,  /* sparse tag with observer hooks */
    FZ_C_SST8,  /* stable sparse, 8 bytes, no hooks */
    FZ_C_TREF,  /* table, 24 bytes, tracked hooks, entity fields at 8 and 16 */
    FZ_C_SREF,  /* sparse, 16 bytes, no hooks, an entity field at 8 */
    FZ_C_S8,    /* sparse, 8 bytes, no hooks */
    FZ_C_S12,   /* sparse, 12 bytes, align 4, no hooks */
    FZ_C_SPTAG, /* sparse tag, no hooks */
    FZ_C_PREFAB, /* the built-in TES_PREFAB */
    FZ_NCOMP,
    /* The extra components, which the op mix picks rarely (and the
     * per-op checks skip: they have no hooks): two huge ones and enough
     * wide ones that an entity holding most of them sits in a table with
     * more than 64 columns. */
    FZ_C_HUGE = FZ_NCOMP, /* table, 64 KiB, align 16 */
    FZ_C_SHUGE,           /* sparse, 64 KiB, align 8 */
    FZ_C_W0,              /* table, 4 bytes: FZ_C_W0 + i, i < FZ_NWIDE */
    FZ_C_WLAST = FZ_C_W0 + 71,
    /* The cells components: hook-free table components that only the
     * cells variant (fz_config_t.cells) picks, registered after all the
     * others so that every other variant's ids and op streams stay as they
     * were. Entities built of them alone take every form of the quiet
     * add's cell copy: 8 to 16 bytes (up to four columns straight, more in
     * a loop), 4 to 8 bytes, mixed sizes, and a tag. No query names them,
     * so they keep their quiet dispatch. */
    FZ_C_C8,   /* 8 bytes, align 8 */
    FZ_C_C8B,  /* 8 bytes, align 4 */
    FZ_C_C12,  /* 12 bytes, align 4 */
    FZ_C_C12B, /* 12 bytes, align 4 */
    FZ_C_C16,  /* 16 bytes, align 8 */
    FZ_C_C16B, /* 16 bytes, align 16 */
    FZ_C_C4,   /* 4 bytes */
    FZ_C_C4B,  /* 4 bytes */
    FZ_C_C6,   /* 6 bytes, align 2 */
    FZ_C_CTAG, /* a table tag */
    FZ_NALL
};
#define FZ_NWIDE 72
#define FZ_C_CELLS0 FZ_C_C8
#define FZ_NCELLS (FZ_NALL - FZ_C_CELLS0)
#define FZ_HUGE_SIZE 65536u

/* Largest component size the model stores: a huge component's value is
 * the 8-byte seed its bytes are drawn from (fz_huge_fill), 0 = all zero. */
#define FZ_MAXSIZE 24

/* A set of components (bit k = component k). */
typedef struct fz_bits {
    uint64_t w[2];
} fz_bits_t;
static inline bool fz_bits_has(fz_bits_t b, int k) { return (b.w[k >> 6] >> (k & 63)) & 1u; }
static inline void fz_bits_set(fz_bits_t *b, int k) { b->w[k >> 6] |= UINT64_C(1) << (k & 63); }
static inline void fz_bits_clr(fz_bits_t *b, int k) { b->w[k >> 6] &= ~(UINT64_C(1) << (k & 63)); }
static inline bool fz_bits_any(fz_bits_t b) { return (b.w[0] | b.w[1]) != 0; }
static inline fz_bits_t fz_bits_or(fz_bits_t a, fz_bits_t b)
{
    a.w[0] |= b.w[0];
    a.w[1] |= b.w[1];
    return a;
}
static inline fz_bits_t fz_bits_minus(fz_bits_t a, fz_bits_t b)
{
    a.w[0] &= ~b.w[0];
    a.w[1] &= ~b.w[1];
    return a;
}
/* All of b in a. */
static inline bool fz_bits_all(fz_bits_t a, fz_bits_t b)
{
    return (a.w[0] & b.w[0]) == b.w[0] && (a.w[1] & b.w[1]) == b.w[1];
}
static inline bool fz_bits_meet(fz_bits_t a, fz_bits_t b)
{
    return ((a.w[0] & b.w[0]) | (a.w[1] & b.w[1])) != 0;
}
/* Tracked components keep a 64-bit serial at offset 0 (see driver_hooks.c);
 * only the bytes after it are the user-visible payload the model compares. */
#define FZ_TRACK_HDR 8

typedef struct fz_comp_info {
    const char *name;
    uint32_t size;
    uint32_t align;
    tes_storage_t storage;
    bool stable;
    bool tracked;   /* ctor/dtor/copy/move + observers, checked by serial */
    bool observed;  /* observers only (tags) */
    uint8_t nrefs;  /* entity_fields: tes_entity_t members at ref_off[] */
    uint8_t ref_off[2];
    bool huge;      /* FZ_HUGE_SIZE bytes, modelled by a seed */
    /* The references are declared as TES_TYPE_ENTITY members (with the
     * tracked serial as a u64 member), not through entity_fields: the
     * library derives its entity fields from them, remapped alike. */
    bool ref_members;
} fz_comp_info_t;

/* Filled in by fz_model_init (the extra components' entries on first use). */
extern fz_comp_info_t fz_comps[FZ_NALL];

/* The bytes the model keeps for a value of k: its size, or the seed's 8. */
static inline uint32_t fz_msize(int k) { return fz_comps[k].huge ? 8u : fz_comps[k].size; }
/* The bytes of a huge value with this seed (size bytes to out). */
void fz_huge_fill(uint64_t seed, uint8_t *out, size_t size);

/* First byte of the payload the model compares for component k. */
static inline uint32_t fz_payload_offset(int k) { return fz_comps[k].tracked ? FZ_TRACK_HDR : 0; }

/* The value a freshly added component holds: zero, or the pattern the
 * tracked ctor writes (so a library that zero-fills instead of calling the
 * ctor shows up as a value mismatch). */
void fz_default_value(int k, uint8_t out[FZ_MAXSIZE]);

typedef struct fz_mslot {
    uint32_t gen;     /* live: its generation; free: the next one to issue */
    bool alive;
    bool retired;
    bool pending;     /* spawned or cloned in a deferred block, not flushed yet:
                         alive, but no query sees it */
    uint32_t live_pos; /* position in fz_model_t.live while alive */
    uint32_t inst;    /* the instance it belongs to: instance slot + 1, 0 = none */
    fz_bits_t mask;   /* bit k set = has component k */
    uint8_t val[FZ_NCOMP][FZ_MAXSIZE];
    /* The extra components' values, allocated when the slot first gets one
     * (few do; see fz_val). */
    uint8_t (*xval)[FZ_MAXSIZE];
    /* Address first seen for a stable component; it must never change until
     * the component is removed. NULL = not observed yet. */
    const void *stable_ptr[FZ_NCOMP];
    /* The hierarchy (model_hier.c): the parent's index + 1 (0: a root),
     * the children's indices in order, and the name (NULL: none). */
    uint32_t parent;
    uint32_t *kids;
    uint32_t nkids, kids_cap;
    char *name;
} fz_mslot_t;

typedef struct fz_hook_expect {
    uint64_t on_add, on_set, on_remove, copy;
} fz_hook_expect_t;

/* A queued structural change (deferred mode); see model_defer.c. */
typedef enum fz_qkind {
    FZ_Q_MATERIALIZE, /* a deferred spawn / clone becomes visible */
    FZ_Q_DESTROY,
    FZ_Q_ADD,
    FZ_Q_REMOVE,
    FZ_Q_SET,    /* val: the staged value (payload bytes); fires on_set */
    FZ_Q_ENSURE, /* a deferred tes_ensure: like SET, without on_set */
    FZ_Q_CLEAR,
    FZ_Q_CLONE, /* e receives copies of src's components */
    FZ_Q_INSTANTIATE, /* plan `plan` copies its prefab into its entities */
    FZ_Q_INST_DESTROY, /* the members instance `inst` has then die */
    FZ_Q_SET_PARENT,   /* e becomes the last child of src (TES_NULL: a root) */
    FZ_Q_SET_PARENT_N  /* tes_set_parent_n of batch[0..nbatch) under batch[nbatch..) */
} fz_qkind_t;

/* The most pairs a fuzzed tes_set_parent_n holds. */
#define FZ_BATCH_MAX 6u

typedef struct fz_qop {
    fz_qkind_t kind;
    int k;
    tes_entity_t e, src;
    tes_instance_t inst; /* INST_DESTROY */
    uint32_t plan;       /* INSTANTIATE: index in fz_model_t.plans */
    uint32_t nbatch;     /* SET_PARENT_N: the pairs, children then parents */
    tes_entity_t batch[2 * FZ_BATCH_MAX];
    uint8_t val[FZ_MAXSIZE];
    /* SET / ENSURE: the library's staged value, once a deferred tes_ensure
     * has revealed its address (NULL until then). */
    const void *staged;
} fz_qop_t;

/* Prefabs and instances (model_lifecycle.c). An instance id is issued like
 * an entity handle: its own slots, LIFO free stack, generations, retirement
 * at the generation limit. */
typedef struct fz_minst {
    uint32_t gen;     /* live: its generation; free: the next one to issue */
    bool alive;
    bool retired;
    uint32_t live_pos; /* position in fz_model_t.ilive while alive */
    tes_entity_t *members; /* in the order they joined */
    uint32_t n, cap;
} fz_minst_t;

/* A prefab record: the root, then the children in the order they were
 * added, dead ones included (the live ones are the prefab's members). The
 * record is live while its root is. */
typedef struct fz_mprefab {
    tes_entity_t *members;
    uint32_t n, cap;
} fz_mprefab_t;

/* One instantiation: n instances of the m members the prefab had (alive)
 * when it was made; ents[k * m + i] is instance k's copy of member i. A
 * deferred plan waits in fz_model_t.plans for its flush, which first turns
 * the members dead by then into TES_NULL. */
typedef struct fz_mplan {
    tes_entity_t *members;
    tes_entity_t *ents;
    uint32_t m, n;
} fz_mplan_t;

typedef struct fz_model {
    uint32_t generation_limit; /* normalised: never 0 */
    uint32_t entity_limit;     /* normalised: never 0 */
    fz_mslot_t *slots;
    uint32_t nslots, slots_cap;
    uint32_t *free_stack; /* LIFO: top = most recently destroyed */
    uint32_t nfree, free_cap;
    uint32_t *live;       /* indices of live slots, any order (for random picks) */
    uint32_t nlive, live_cap;
    uint32_t retired;
    uint32_t values[FZ_NALL]; /* entities holding component k */
    uint32_t staged[FZ_NALL]; /* values staged by queued sets (constructed) */
    fz_hook_expect_t expect[FZ_NALL];
    fz_qop_t *queue;           /* deferred changes, in call order */
    uint32_t nqueue, queue_cap;
    /* Prefabs and instances. */
    bool strict;               /* strict_lifecycle: tes_destroy refuses members */
    fz_minst_t *insts;         /* instance slots */
    uint32_t ninsts, insts_cap;
    uint32_t *inst_free;       /* LIFO free stack of instance slots */
    uint32_t ninst_free, inst_free_cap;
    uint32_t *ilive;           /* live instance slots, any order */
    uint32_t nilive, ilive_cap;
    uint32_t inst_retired;
    fz_mprefab_t *prefabs;
    uint32_t nprefabs, prefabs_cap;
    fz_mplan_t *plans;         /* deferred instantiations not flushed yet */
    uint32_t nplans, plans_cap;
    /* Coverage: references remapped by instantiation, copies skipped at a
     * flush (member dead by then), queued destroys refused at the flush. */
    uint64_t remaps, skipped_members, owned_at_flush;
    /* Hierarchy coverage: links made by instantiation, names copied with
     * them, queued links the flush dropped, cascades (destroys that took
     * descendants) and the descendants they took. */
    uint64_t inst_links, inst_names, links_dropped, cascades, cascaded;
    /* The last error the last flush met (tes_last_error after it). */
    int flush_last;
} fz_model_t;

/* The model's value of component k in slot `index` (which has k). */
static inline uint8_t *fz_val(const fz_model_t *m, uint32_t index, int k)
{
    return k < FZ_NCOMP ? m->slots[index].val[k] : m->slots[index].xval[k - FZ_NCOMP];
}

/* What a model function returns when the model itself ran out of memory
 * (no status of the library's). */
#define FZ_OOM (-1000)

/* Grows *arr (of *cap elements) to hold at least need elements. */
bool fz_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Returns false if out of memory (the harness then gives up). */
bool fz_model_init(fz_model_t *m, uint32_t generation_limit, uint32_t entity_limit);
void fz_model_fini(fz_model_t *m);

/* The live slot of e, or NULL. */
fz_mslot_t *fz_model_get(const fz_model_t *m, tes_entity_t e);
static inline bool fz_model_alive(const fz_model_t *m, tes_entity_t e) { return fz_model_get(m, e) != NULL; }
static inline tes_entity_t fz_model_handle(const fz_model_t *m, uint32_t index)
{
    return tes_entity_make(index, m->slots[index].gen);
}

/* Whether n more entities fit (free slots first, then new slots). */
bool fz_model_can_spawn(const fz_model_t *m, uint32_t n);
/* The handle the next spawn will issue (requires can_spawn(1)). */
tes_entity_t fz_model_peek_spawn(const fz_model_t *m);
/* Spawns an empty entity (requires can_spawn(1)). Returns its handle, or
 * TES_NULL if the model itself ran out of memory. */
tes_entity_t fz_model_spawn(fz_model_t *m);
/* Removes every component (counting on_remove) and frees the slot: bumps its
 * generation and pushes it, or retires it at the generation limit. */
void fz_model_destroy(fz_model_t *m, uint32_t index);

bool fz_model_has(const fz_model_t *m, uint32_t index, int k);
/* Adds k with its default value if missing (counting on_add); returns true
 * if it was added. */
bool fz_model_add(fz_model_t *m, uint32_t index, int k);
/* Removes k if present (counting on_remove); returns true if it was. */
bool fz_model_remove(fz_model_t *m, uint32_t index, int k);
void fz_model_clear(fz_model_t *m, uint32_t index);
/* Stores the payload bytes of a value (the bytes before the payload offset
 * are ignored). */
void fz_model_write(fz_model_t *m, uint32_t index, int k, const uint8_t *value);
/* Copies every component of src into dst (which has none): on_add for each,
 * plus a copy-hook call per tracked value; dst joins src's parent (see
 * fz_model_clone_link, whose status it returns). */
int fz_model_clone_into(fz_model_t *m, uint32_t dst, uint32_t src);

/* Deferred mode (model_defer.c). Queues a change; false if the model ran
 * out of memory. */
bool fz_model_queue(fz_model_t *m, fz_qkind_t kind, tes_entity_t e, int k, tes_entity_t src);
/* Queues a set of k on e with the caller's bytes (a copy-hook call now, for
 * tracked data). Counts the staged value. Returns the op's index or -1. */
int32_t fz_model_queue_set(fz_model_t *m, tes_entity_t e, int k, const uint8_t *value);
/* Queues the ensure of k on e a deferred tes_ensure makes: a staged value,
 * a copy of init (counted as a copy) or the default when init is NULL,
 * assigned at the flush without on_set. Returns the index or -1. */
int32_t fz_model_queue_ensure(fz_model_t *m, tes_entity_t e, int k, const uint8_t *init);

/* What a deferred tes_ensure of k on e returns, replaying the commands
 * queued (as the library's rule says: writes land at the call's place). */
typedef enum fz_queued {
    FZ_QUEUED_NONE,   /* its current address: e has k, nothing queued
                         changes it and nothing queued runs observers or
                         copies values */
    FZ_QUEUED_STAGED, /* the same ensure again, the last op queued: op */
    FZ_QUEUED_OTHER   /* a new staged value: a copy of init when has_init,
                         else the default */
} fz_queued_t;
typedef struct fz_lookup {
    fz_queued_t queued;
    int32_t op;
    bool has_init;
    uint8_t init[FZ_MAXSIZE]; /* what e holds for k after the queued ops */
    /* e is the copy of a queued instantiation (for the op's name). */
    bool via_instance;
} fz_lookup_t;
void fz_model_lookup(const fz_model_t *m, tes_entity_t e, int k, fz_lookup_t *out);
/* Applies the queue in order (ops on entities dead by then are dropped,
 * staged values released) and empties it. Returns the first error met
 * (TES_ERR_OWNED: a queued destroy of an entity that joined an instance
 * since, in a strict world; TES_ERR_INVALID: a queued link dropped, or a
 * link a clone or instantiation would make refused), as tes_defer_end
 * does; the last one goes to flush_last. */
int fz_model_flush(fz_model_t *m);

/* ------------------------------------------------------------------ lifecycle */

/* The live instance named by id, or NULL. */
fz_minst_t *fz_model_inst(const fz_model_t *m, tes_instance_t id);
/* The id the next instance gets. */
tes_instance_t fz_model_inst_peek(const fz_model_t *m);
/* The instance e belongs to (0: none, or e not alive). */
tes_instance_t fz_model_instance_of(const fz_model_t *m, tes_entity_t e);
/* Appends live entity `index` (in no instance) to live instance id. */
bool fz_model_inst_link(fz_model_t *m, tes_instance_t id, uint32_t index);
/* Takes live entity `index` out of its instance (if any); the instance
 * dies with its last member. */
void fz_model_inst_unlink(fz_model_t *m, uint32_t index);
/* Destroys every member the live instance has and their descendants (the
 * plan of its members in join order; see fz_model_plan). Returns
 * TES_ERR_OWNED (nothing destroyed) when the world is strict and the plan
 * holds a member of another instance. */
int fz_model_inst_destroy(fz_model_t *m, tes_instance_t id);
/* The status fz_model_inst_destroy would return now. */
int fz_model_inst_destroy_status(const fz_model_t *m, tes_instance_t id);

/* The record of live prefab root `root`, or NULL. */
fz_mprefab_t *fz_model_prefab(const fz_model_t *m, tes_entity_t root);
/* Starts the record of a new root; appends a child. False: out of memory. */
bool fz_model_prefab_add(fz_model_t *m, tes_entity_t root);
bool fz_model_prefab_child(fz_model_t *m, fz_mprefab_t *p, tes_entity_t child);
/* The live members of p in order (written to out unless NULL); returns
 * their count. */
uint32_t fz_model_prefab_live(const fz_model_t *m, const fz_mprefab_t *p, tes_entity_t *out);
/* How many members of p an instantiation made now copies: the live ones
 * without a queued destroy. */
uint32_t fz_model_prefab_copied(const fz_model_t *m, const fz_mprefab_t *p);
/* Drops records of dead roots once there are many (unobservable). */
void fz_model_prefab_prune(fz_model_t *m);

/* Instantiates p n times (the caller checked the ids fit): spawns the
 * entities instance by instance, members in order (pending when deferred),
 * then the instances, whose ids go to insts (unless NULL) and entities to
 * ents (n * live members). Immediately: copies now; deferred: queues the
 * plan for the flush. False: the model ran out of memory. */
bool fz_model_instantiate(fz_model_t *m, const fz_mprefab_t *p, uint32_t n, bool deferred,
                          tes_instance_t *insts, tes_entity_t *ents);
/* The flush's side of a deferred plan (model_defer.c calls it); returns
 * what fz_model_plan_links says. */
int fz_model_plan_apply(fz_model_t *m, fz_mplan_t *p);
/* The member of plan p whose copy entity e is (its position in the plan to
 * *at), or false when e is none of the plan's entities. */
bool fz_model_plan_member(const fz_mplan_t *p, tes_entity_t e, tes_entity_t *member,
                          uint32_t *at);
/* Remaps val (a value of k) as the plan's copy at position at is remapped. */
void fz_model_plan_remap(const fz_mplan_t *p, uint32_t at, int k, uint8_t val[FZ_MAXSIZE]);
/* Whether a destroy of e is queued (an instantiation queued after it does
 * not copy e, as the calls made one by one would not). */
bool fz_model_queued_destroy(const fz_model_t *m, tes_entity_t e);
/* Frees the plans (flushed or dropped with the world). */
void fz_model_plans_clear(fz_model_t *m);

/* ------------------------------------------------------------------ hierarchy */

/* model_hier.c: links, names and cascading destroys, written from the
 * header's "Hierarchy and names" section. A link is stored on both ends
 * (the child's parent, the parent's ordered child list); names are plain
 * strings found by a scan of the siblings. */

/* The status tes_set_parent(child, parent) must return now: TES_ERR_STALE
 * (child, or a parent other than TES_NULL, not alive), TES_ERR_INVALID
 * (self, a cycle, a prefab / non-prefab mix or members of two prefabs, a
 * named child moving under a parent with a child of that name), TES_OK. */
int fz_model_link_status(const fz_model_t *m, tes_entity_t child, tes_entity_t parent);
/* Makes live index child the last child of parent1 (index + 1; 0: a root);
 * nothing when that is its parent already. False: out of memory. */
bool fz_model_link(fz_model_t *m, uint32_t child, uint32_t parent1);
/* The status tes_set_parent_n must return now for the n pairs (n <=
 * FZ_BATCH_MAX) and, if TES_OK, makes the change: each pair checked by
 * fz_model_link_status against the forest the pairs before it left, then
 * linked; the first refused pair (its index in *at) undoes the pairs
 * before it, child order included. At a flush (flush true), a dead child
 * or parent is TES_ERR_INVALID. FZ_OOM: the model ran out of memory. */
int fz_model_link_n(fz_model_t *m, const tes_entity_t *kids, const tes_entity_t *parents,
                    uint32_t n, bool flush, uint32_t *at);
/* The status a deferred tes_set_parent_n returns when called: the first
 * pair refused by a rule that holds whatever the links are (stale, self,
 * prefab mixes), its index in *at; TES_OK otherwise. */
/* Queues a tes_set_parent_n of the n pairs (FZ_Q_SET_PARENT_N). */
bool fz_model_queue_batch(fz_model_t *m, const tes_entity_t *kids, const tes_entity_t *parents,
                          uint32_t n);
int fz_model_link_n_static(const fz_model_t *m, const tes_entity_t *kids,
                           const tes_entity_t *parents, uint32_t n, uint32_t *at);
int32_t fz_model_depth(const fz_model_t *m, uint32_t index);
/* The root of the live prefab e is a member of (TES_NULL: none). */
tes_entity_t fz_model_prefab_root_of(const fz_model_t *m, tes_entity_t e);
/* The child of parent1 (0: the roots) named name (len bytes), index + 1,
 * or 0. */
uint32_t fz_model_sibling_named(const fz_model_t *m, uint32_t parent1, const char *name,
                                size_t len);
/* The status tes_set_name(e, name) must return now. */
int fz_model_name_status(const fz_model_t *m, tes_entity_t e, const char *name);
/* Names live index (NULL removes the name). False: out of memory. */
bool fz_model_set_name(fz_model_t *m, uint32_t index, const char *name);
/* e's path (its ancestors' names and its own joined by '/'), written to
 * buf when cap allows (NUL-terminated); returns its length, 0 when e or an
 * ancestor has no name. */
size_t fz_model_path(const fz_model_t *m, uint32_t index, char *buf, size_t cap);
/* What tes_lookup_path(path) must return. */
tes_entity_t fz_model_lookup_path(const fz_model_t *m, const char *path);

/* A destroy's plan: for each listed live entity in order that no listed
 * entity is an ancestor of (with more than one listed), its subtree in
 * post-order (children before their parent, siblings in child order).
 * Returns the count (indices to *out, which the caller frees), or -1 when
 * out of memory. */
int64_t fz_model_plan(const fz_model_t *m, const tes_entity_t *es, uint32_t n, uint32_t **out);
/* Whether a strict world refuses the plan: an entity of it belongs to an
 * instance other than allowed (instance slot + 1; 0: none allowed). */
bool fz_model_plan_owned(const fz_model_t *m, const uint32_t *plan, uint32_t n, uint32_t allowed);
/* The status of destroying es (all live) with their descendants:
 * TES_ERR_OWNED or TES_OK (-1: out of memory). */
int fz_model_destroy_status(const fz_model_t *m, const tes_entity_t *es, uint32_t n,
                            uint32_t allowed);
/* Destroys es (all live) and their descendants in plan order. False: out
 * of memory. */
bool fz_model_destroy_tree(fz_model_t *m, const tes_entity_t *es, uint32_t n);
/* An instantiation's links and names: the links among the plan's members
 * (alive ones, as they are now) copied to each instance's entities, each
 * copied child named like its member. A copy named while pending keeps its
 * name, and a link that would repeat a sibling's name is not made:
 * TES_ERR_INVALID (the rest applied), else TES_OK; -1: out of memory. */
int fz_model_plan_links(fz_model_t *m, const fz_mplan_t *p);
/* A clone's link: dst (a live root) joins src's parent, unless dst was
 * named while pending and a child of that parent has its name
 * (TES_ERR_INVALID). -1: out of memory. */
int fz_model_clone_link(fz_model_t *m, uint32_t dst, uint32_t src);

#endif
