/*
 * The twin-world property test's shared parts (driver_twin.c: the worlds,
 * observers, comparison and batches; driver_twin_ops.c: the calls). See
 * driver_twin.c.
 */
#ifndef TES_FUZZ_TWIN_H
#define TES_FUZZ_TWIN_H

#include <stdbool.h>
#include <stdint.h>

#include "fuzz/driver.h"
#include "tessera.h"

#define TW_MAX 160     /* logical entities */
#define TW_LOG 4096    /* observer calls logged per batch and world */
#define TW_BATCH 14    /* calls per batch, at most */
#define TW_POP 48      /* live entities the op mix steers towards */
/* The most logical ids one call can take (tes_instantiate_n of two
 * instances of up to 32 listed members each), with a margin. */
#define TW_GROWTH 72

enum { TW_A, TW_H, TW_S, TW_V, TW_R, TW_T, TW_NCOMP };
extern const char *const tw_names[TW_NCOMP];

typedef struct tw_v { int32_t v; int32_t magic; } tw_v_t;
typedef struct tw_r { tes_entity_t ref; int32_t x; int32_t pad; } tw_r_t;
#define TW_MAGIC 0x5eed

typedef struct tw_log {
    uint8_t hook; /* 0 on_add, 1 on_set, 2 on_remove */
    uint8_t comp;
    tes_entity_t e;
    int32_t value, a, h; /* the value seen; A and H of e (INT32_MIN: none) */
    int32_t other;       /* A of the watched entity, another one */
    int lid;             /* e's logical id, filled in when compared */
} tw_log_t;

typedef struct tw_side {
    tes_world_t *w;
    tes_comp_t id[TW_NCOMP];
    tes_query_t *q[2]; /* queries destroy_matching uses */
    tes_entity_t h[TW_MAX]; /* logical id -> handle */
    tes_entity_t watch;     /* the entity every observer also reads */
    tw_log_t log[TW_LOG];
    uint32_t nlog;
    int64_t live_v; /* V values constructed and not destroyed */
    bool bad_v;     /* a V hook saw an unconstructed value */
} tw_side_t;

typedef struct tw {
    fz_source_t *src;
    fz_result_t *res;
    const fz_config_t *cfg;
    tw_side_t s[2]; /* 0 deferred, 1 immediate */
    bool used[TW_MAX];
    bool prefab[TW_MAX]; /* a prefab root */
    /* Observer calls of a tes_destroy_matching first in the batch: their
     * order follows rows, whose order the two worlds need not share, so
     * they are compared sorted. */
    uint32_t unordered;
    uint64_t step;
    const char *op;
    char trace[96]; /* the last call's arguments, for --trace-from */
} tw_t;

/* driver_twin.c */
uint32_t tw_draw(tw_t *t, uint32_t bound);
void tw_fail(tw_t *t, const char *fmt, ...);
bool tw_failed(const tw_t *t);
/* The logical id of handle e in side s (-1: none). */
int tw_logical(const tw_side_t *s, const tw_t *t, tes_entity_t e);
/* A new logical id for the handles one call made in each world (-1: none). */
int tw_fresh(tw_t *t, tes_entity_t d, tes_entity_t i);
uint32_t tw_population(const tw_t *t);
/* A logical entity alive in the immediate twin, a prefab root (-1: none). */
int tw_pick(tw_t *t);
int tw_pick_prefab(tw_t *t);
int tw_data_comp(tw_t *t);
void tw_make_value(tw_t *t, int side, int k, int32_t x, void *out);
void tw_bump(int k, void *p, int32_t x);
void tw_logical_value(const tw_t *t, int side, int k, const void *p, int32_t out[2]);

/* driver_twin_ops.c: one random call in both worlds; the calls only made
 * first in a batch. */
void tw_one_call(tw_t *t);
void tw_op_first(tw_t *t);

#endif
