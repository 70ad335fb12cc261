/*
 * query_move.h — shared by the Position += Velocity workloads W4
 * (query_move.c, every entity matches) and W8 (query_move_10.c, every 10th
 * entity matches). Not a workload itself.
 *
 * N entities are spawned in order; entity i (its spawn position, the "key")
 * has Position bench_position(i), and when i % stride == 0 also Velocity
 * move_velocity(i). A pass runs Position += Velocity over the matches:
 * - Tessera: one query {Position (AND, inout), Velocity (AND, in)}, walked
 *   with tes_query_iter / tes_iter_next / tes_field and a plain inner loop
 *   over it.count, in one of three set-ups (move_kind_t);
 * - baseline: a plain loop over two matched-only arrays (Position[m],
 *   Velocity[m], the "SoA of components" layout).
 * Both run the very same inline loop (move_chunk), reps passes per run.
 *
 * Checksum: the state is never reset, both sides advance in lockstep (the
 * driver alternates them), and every value stays a small integer, so float
 * adds are exact and both sides agree bit for bit. To keep the timed loop
 * pure, the checksum of the current state is computed in the untimed
 * `before` hook (Tessera: tes_get per matched handle, independent of the
 * query) and returned by the following `run`: run k reports the state that
 * runs 0..k-1 produced. The timed run also counts the entities the query
 * visited and fails if they are not exactly reps * matches.
 */
#ifndef TES_BENCH_QUERY_MOVE_H
#define TES_BENCH_QUERY_MOVE_H

#include "bench.h"

typedef enum move_kind {
    MOVE_TABLE,     /* table components: the query caches the matching tables */
    MOVE_VIEW,      /* sparse components, no group: the smaller pool drives */
    MOVE_GROUP      /* sparse components, TES_QUERY_OWNING_GROUP */
} move_kind_t;

static inline uint64_t move_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline Velocity move_velocity(uint32_t key)
{
    Velocity v = {(float)(key % 7u), (float)(key % 5u) - 2.0f, 1.0f};
    return v;
}

/* One matched entity's share of the checksum. */
static inline uint64_t move_mix(uint32_t key, const Position *p)
{
    return (uint64_t)(key + 1u) *
           (move_bits(p->x) + 3u * move_bits(p->y) + 5u * move_bits(p->z));
}

/* The work itself, shared by both sides so they run identical code. */
static inline void move_chunk(Position *p, const Velocity *v, int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        p[i].x += v[i].x;
        p[i].y += v[i].y;
        p[i].z += v[i].z;
    }
}

/* Entities with key % stride == 0 among the first n. */
static inline uint32_t move_matches(uint32_t n, uint32_t stride)
{
    return (n + stride - 1u) / stride;
}

/* ------------------------------------------------------------------------ */
/* Tessera                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct move_tes {
    tes_world_t *w;
    tes_query_t *q;
    tes_comp_t pos;
    tes_entity_t *match; /* matched entities: match[k] has key k * stride */
    uint32_t nmatch, stride;
    int reps;
    uint64_t pending;    /* checksum of the state before this run */
} move_tes_t;

static inline void move_tes_fini(void *p)
{
    move_tes_t *s = (move_tes_t *)p;
    tes_query_free(s->q);
    tes_world_free(s->w);
    free(s->match);
    free(s);
}

static inline void *move_tes_init(const bench_cfg_t *cfg, uint32_t stride, move_kind_t kind,
                                  int reps)
{
    move_tes_t *s = (move_tes_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    uint32_t n = bench_u32(cfg->n);
    s->stride = stride;
    s->reps = reps;
    s->nmatch = move_matches(n, stride);
    tes_entity_t *h = (tes_entity_t *)bench_alloc((size_t)n * sizeof *h);
    s->match = (tes_entity_t *)bench_alloc((size_t)s->nmatch * sizeof *s->match);
    s->w = bench_world_new();
    if (bench_failed())
        goto done;
    tes_storage_t storage = kind == MOVE_TABLE ? TES_STORAGE_TABLE : TES_STORAGE_SPARSE;
    tes_comp_t comps[2];
    comps[0] = s->pos = bench_register(s->w, "Position", sizeof(Position), storage);
    comps[1] = bench_register(s->w, "Velocity", sizeof(Velocity), storage);
    if (bench_failed())
        goto done;
    /* stride 1: spawn straight into {Position, Velocity}; otherwise spawn
     * with Position only and add Velocity to every stride-th entity. */
    int rc = tes_spawn_n(s->w, (int32_t)n, comps, stride == 1 ? 2 : 1, h);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        Position *pos = (Position *)tes_get_mut(s->w, h[i], comps[0]);
        if (!pos) {
            bench_fail("tes_get_mut(Position) returned NULL");
            goto done;
        }
        *pos = bench_position(i);
    }
    for (uint32_t k = 0; k < s->nmatch; k++) {
        uint32_t key = k * stride;
        Velocity v = move_velocity(key);
        if (tes_set(s->w, h[key], comps[1], &v) != TES_OK) {
            bench_fail("tes_set(Velocity): %s", tes_strerror(tes_last_error(s->w)));
            goto done;
        }
        s->match[k] = h[key];
    }
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = comps[0];
    d.terms[0].access = TES_INOUT;
    d.terms[1].comp = comps[1];
    d.terms[1].access = TES_IN;
    d.flags = kind == MOVE_GROUP ? TES_QUERY_OWNING_GROUP : 0;
    s->q = tes_query_new(s->w, &d);
    if (!s->q) {
        bench_fail("tes_query_new: %s", tes_strerror(tes_last_error(s->w)));
        goto done;
    }
    int32_t count = tes_query_count(s->q);
    if (count != (int32_t)s->nmatch)
        bench_fail("query matches %d entities, expected %u", count, s->nmatch);
done:
    free(h);
    return s;
}

static inline void move_tes_before(void *p)
{
    move_tes_t *s = (move_tes_t *)p;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < s->nmatch; k++) {
        const Position *pos = (const Position *)tes_get(s->w, s->match[k], s->pos);
        if (!pos) {
            bench_fail("tes_get(Position) returned NULL");
            return;
        }
        sum += move_mix(k * s->stride, pos);
    }
    s->pending = sum;
}

static inline uint64_t move_tes_run(void *p)
{
    move_tes_t *s = (move_tes_t *)p;
    int64_t seen = 0;
    for (int r = 0; r < s->reps; r++) {
        tes_iter_t it = tes_query_iter(s->q);
        while (tes_iter_next(&it)) {
            Position *pos = (Position *)tes_field(&it, 0);
            const Velocity *vel = (const Velocity *)tes_field(&it, 1);
            move_chunk(pos, vel, it.count);
            seen += it.count;
        }
    }
    if (seen != (int64_t)s->reps * s->nmatch)
        bench_fail("query visited %lld entities, expected %lld", (long long)seen,
                   (long long)s->reps * s->nmatch);
    return s->pending;
}

/* ------------------------------------------------------------------------ */
/* Baseline: matched-only plain arrays                                       */
/* ------------------------------------------------------------------------ */

typedef struct move_base {
    Position *p;
    Velocity *v;
    uint32_t n, stride; /* n matched entities; p[k] has key k * stride */
    int reps;
    uint64_t pending;
} move_base_t;

static inline void move_base_fini(void *p)
{
    move_base_t *s = (move_base_t *)p;
    free(s->p);
    free(s->v);
    free(s);
}

static inline void *move_base_init(const bench_cfg_t *cfg, uint32_t stride, int reps)
{
    move_base_t *s = (move_base_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = move_matches(bench_u32(cfg->n), stride);
    s->stride = stride;
    s->reps = reps;
    s->p = (Position *)bench_alloc((size_t)s->n * sizeof *s->p);
    s->v = (Velocity *)bench_alloc((size_t)s->n * sizeof *s->v);
    if (bench_failed())
        return s;
    for (uint32_t k = 0; k < s->n; k++) {
        s->p[k] = bench_position(k * stride);
        s->v[k] = move_velocity(k * stride);
    }
    return s;
}

static inline void move_base_before(void *p)
{
    move_base_t *s = (move_base_t *)p;
    uint64_t sum = 0;
    for (uint32_t k = 0; k < s->n; k++)
        sum += move_mix(k * s->stride, &s->p[k]);
    s->pending = sum;
}

static inline uint64_t move_base_run(void *p)
{
    move_base_t *s = (move_base_t *)p;
    Position *pos = s->p;
    const Velocity *vel = s->v;
    int32_t n = (int32_t)s->n;
    for (int r = 0; r < s->reps; r++)
        move_chunk(pos, vel, n);
    return s->pending;
}

#endif
