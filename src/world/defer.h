/*
 * Deferred structural changes. While the world is deferred (tes_defer_begin,
 * or any live query iterator), structural calls validate their arguments at
 * once and then append a command to this queue instead of changing tables
 * and stores that an iterator may be walking. The queue is applied in call
 * order when the outermost level ends.
 *
 * Spawned and cloned entities get their handle at once: the slot is issued
 * immediately, in the virtual root table (which owns no rows, so no table an
 * iterator walks is touched), marked pending until the flush reaches its
 * MATERIALIZE command. Values passed to a deferred tes_set (and values of a
 * deferred tes_ensure) are staged in memory of their own: constructed and
 * copied at queue time, assigned and destroyed at the flush, so ctor/dtor
 * stay balanced even when the target entity dies before the flush.
 *
 * Tuned for the usual frame: a few hundred commands per iteration, applied
 * once; the queue array keeps its capacity between flushes.
 */
#ifndef TES_WORLD_DEFER_H
#define TES_WORLD_DEFER_H

#include "tessera.h"

typedef enum tes__op_kind {
    TES__OP_MATERIALIZE, /* a deferred spawn/clone becomes visible */
    TES__OP_DESTROY,
    TES__OP_ADD,
    TES__OP_REMOVE,
    TES__OP_SET,         /* value: staged, constructed; fires on_set */
    TES__OP_ENSURE,      /* like SET, without on_set (a deferred tes_ensure) */
    TES__OP_CLEAR,
    TES__OP_CLONE,       /* e receives copies of src's components */
    TES__OP_CALL         /* a higher layer's deferred work: call(w, arg) */
} tes__op_kind_t;

/* The function of a TES__OP_CALL command. `run` is false when the queue is
 * discarded at world teardown: the function must then only release what
 * `arg` owns. Returns a status like any applied command. */
typedef int (*tes__defer_fn)(tes_world_t *w, void *arg, bool run);

/* What a queued call will do to entity e's component c, for a deferred
 * tes_ensure that must return the value e will hold: TES__FILL_NONE (the
 * call does not create e), TES__FILL_LACKS (it fills e, without c), or
 * TES__FILL_HAS (it gives e a c; when dst is not NULL, also assigns into the
 * constructed value dst what the flush would give e). */
enum { TES__FILL_NONE, TES__FILL_LACKS, TES__FILL_HAS };
typedef int (*tes__defer_fill_fn)(const tes_world_t *w, void *arg, tes_entity_t e, tes_comp_t c,
                                  void *dst);

typedef struct tes__op {
    tes__op_kind_t kind;
    tes_comp_t comp;
    tes_entity_t e;
    tes_entity_t src;
    void *value;       /* SET: staged value; CALL: the argument */
    tes__defer_fn call;
    tes__defer_fill_fn fill; /* CALL: what it gives the entities it fills */
} tes__op_t;

typedef struct tes__defer {
    tes__op_t *ops;
    uint32_t count;
    uint32_t cap;
    int32_t depth;          /* all levels: explicit blocks and live iterators */
    int32_t explicit_depth; /* levels opened by tes_defer_begin */
    bool flushing;
} tes__defer_t;

/* Row value of an entity in the virtual root whose spawn is still queued. */
#define TES__ROW_PENDING UINT32_C(1)

/* Makes room for n more commands. TES_OK or TES_ERR_NOMEM. */
int tes__defer_reserve(tes_world_t *w, uint32_t n);
/* Appends a command into reserved room. */
void tes__defer_push(tes_world_t *w, tes__op_kind_t kind, tes_entity_t e, tes_comp_t comp,
                     tes_entity_t src, void *value);
/* Appends a deferred call into reserved room; fill may be NULL (the call
 * gives no entity components). */
void tes__defer_push_call(tes_world_t *w, tes__defer_fn fn, tes__defer_fill_fn fill, void *arg);

/* Queues a set (on_set = true) or an ensure of c on e: stages a
 * constructed copy of value (a constructed default when value is NULL).
 * Returns the staged value's address (NULL for a tag) through *staged.
 * TES_OK or TES_ERR_NOMEM (nothing queued). */
int tes__defer_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value, bool on_set,
                   void **staged);

/* What a deferred tes_ensure of c on e must do, given the commands queued
 * for e so far. */
enum {
    TES__QUEUED_NONE,   /* nothing queued changes c on e: use its address now */
    TES__QUEUED_STAGED, /* a queued set/ensure stages c: return *staged */
    TES__QUEUED_NEW,    /* stage a new value, a copy of *init (NULL: default) */
    TES__QUEUED_FILL    /* stage a new default value and let the queued call
                           at position *filler fill it */
};
/* *filler is a position in the queue, not a pointer: staging a value
 * appends to the queue, which may move it. */
int tes__defer_lookup(const tes_world_t *w, tes_entity_t e, tes_comp_t c, void **staged,
                      const void **init, uint32_t *filler);

/* Ends one level; at zero applies the queue. Returns the first error met
 * while applying (the rest is still applied). */
int tes__defer_end(tes_world_t *w);
/* Releases the queue, destroying staged values (world teardown). */
void tes__defer_fini(tes_world_t *w);

#endif
