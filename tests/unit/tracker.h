/*
 * Helpers shared by the query and deferral tests: a seeded splitmix64 PRNG,
 * the world check, and hook tracking. Every data value starts with a header
 * (liveness magic, component, stamp); the hooks count their calls and flag
 * any value used when it is not live (never constructed, destroyed or moved
 * away) and any observer handed a pointer other than tes_get's. Include it
 * after cmocka.h.
 */
#ifndef TES_TEST_TRACKER_H
#define TES_TEST_TRACKER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tessera.h"
#include "world/check.h"

static uint64_t rng_state;

static inline void rng_seed(uint64_t seed) { rng_state = seed; }

static inline uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline uint32_t rng_below(uint32_t n) { return (uint32_t)(rng_next() % n); }
static inline bool rng_chance(uint32_t percent) { return rng_below(100) < percent; }

static inline void check(const tes_world_t *w) { assert_int_equal(tes__world_check(w), TES_OK); }

#define LIVE UINT32_C(0x1A7E1A7E)
#define DEAD UINT32_C(0xDEADDEAD)

/* The head of every data component: a liveness magic, the component it was
 * written for and a stamp chosen by the test (0 = constructed). Components
 * may be larger (the rest is zero padding), so misplaced values show. */
typedef struct val_t {
    uint32_t magic;
    uint32_t comp;
    uint64_t stamp;
} val_t;

typedef struct counters_t {
    int64_t ctor, dtor, copy, move;
    int64_t on_add, on_set, on_remove;
    int64_t bad;     /* a hook saw a value that was not live */
    int64_t bad_ptr; /* an observer got a pointer other than tes_get's */
} counters_t;

typedef struct comp_ctx_t {
    counters_t *n;
    size_t size;
    tes_comp_t id;
} comp_ctx_t;

static inline val_t *val_at(void *base, size_t size, int32_t i)
{
    return (val_t *)(void *)((uint8_t *)base + (size_t)i * size);
}

static inline void h_ctor(void *ptr, int32_t count, void *ctx)
{
    comp_ctx_t *c = ctx;
    for (int32_t i = 0; i < count; i++) {
        val_t *v = val_at(ptr, c->size, i);
        memset(v, 0, c->size);
        v->magic = LIVE;
    }
    c->n->ctor += count;
}

static inline void h_dtor(void *ptr, int32_t count, void *ctx)
{
    comp_ctx_t *c = ctx;
    for (int32_t i = 0; i < count; i++) {
        val_t *v = val_at(ptr, c->size, i);
        if (v->magic != LIVE)
            c->n->bad++;
        v->magic = DEAD;
    }
    c->n->dtor += count;
}

static inline void h_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    comp_ctx_t *c = ctx;
    for (int32_t i = 0; i < count; i++) {
        val_t *d = val_at(dst, c->size, i);
        const val_t *s = val_at((void *)(uintptr_t)src, c->size, i);
        if (d->magic != LIVE || s->magic != LIVE)
            c->n->bad++;
        memcpy(d, s, c->size);
    }
    c->n->copy += count;
}

static inline void h_move(void *dst, void *src, int32_t count, void *ctx)
{
    comp_ctx_t *c = ctx;
    for (int32_t i = 0; i < count; i++) {
        val_t *d = val_at(dst, c->size, i);
        val_t *s = val_at(src, c->size, i);
        if (s->magic != LIVE)
            c->n->bad++;
        memcpy(d, s, c->size);
        s->magic = DEAD;
    }
    c->n->move += count;
}

static inline void observe(tes_world_t *w, tes_entity_t e, void *ptr, comp_ctx_t *c)
{
    if (ptr != tes_get(w, e, c->id))
        c->n->bad_ptr++;
    if (ptr && ((const val_t *)ptr)->magic != LIVE)
        c->n->bad++;
}

static inline void h_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    comp_ctx_t *c = ctx;
    c->n->on_add++;
    observe(w, e, ptr, c);
}

static inline void h_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    comp_ctx_t *c = ctx;
    c->n->on_set++;
    observe(w, e, ptr, c);
}

static inline void h_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    comp_ctx_t *c = ctx;
    c->n->on_remove++;
    observe(w, e, ptr, c);
}

/* Registers a tracked component whose hooks count into n through c (a tag
 * gets the observers only: it has no value to construct or copy). Returns
 * its id, always above the built-in tags. */
static inline tes_comp_t register_tracked(tes_world_t *w, comp_ctx_t *c, counters_t *n,
                                          const char *name, size_t size, tes_storage_t storage,
                                          bool stable)
{
    c->n = n;
    c->size = size;
    tes_component_desc_t d = {.name = name,
                              .size = size,
                              .storage = storage,
                              .stable = stable,
                              .hooks = {h_ctor, h_dtor, h_copy, h_move, h_on_add, h_on_set,
                                        h_on_remove, c}};
    if (!size)
        d.hooks = (tes_hooks_t){.on_add = h_on_add, .on_set = h_on_set,
                                .on_remove = h_on_remove, .ctx = c};
    c->id = tes_component(w, &d);
    assert_true(c->id > TES_PREFAB);
    return c->id;
}

#endif
