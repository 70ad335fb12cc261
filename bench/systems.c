/*
 * systems.c — one frame of seven systems over N entities of three kinds,
 * run by tes_progress on 1, 2 and 4 threads, beside the same seven loops
 * written by hand with queries on the calling thread (the baseline: what a
 * user writes without systems). Plus the scheduler's own cost: 100 systems
 * whose queries match nothing, beside 100 hand-iterated empty queries.
 *
 * The kinds: heroes (Position, Velocity, Data, Health, Damage, Sprite),
 * monsters (Position, Velocity, Health, Damage, Sprite) and NPCs (Position,
 * Velocity, Data, Sprite), in thirds. The systems, in creation order:
 * movement (Position += Velocity), data (a per-entity integer update),
 * steering (Velocity from Position and Data), health (regeneration),
 * damage (Health -= Damage), sprite (a character from Health), and a
 * structural one that toggles a sparse Stunned tag on the few entities
 * whose health hits a multiple of 4096. All seven are `parallel`: the
 * structural one is split over the threads too, each recording its
 * changes into its own command queue. One op = one entity per frame. The
 * world is built once (init), so runs time only frames.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "bench.h"
#include "query/query.h"

typedef struct Data { int32_t thingy; uint32_t numgy; double dingy; } Data;
typedef struct Damage { int32_t atk, def; } Damage;
typedef struct Sprite { char c; } Sprite;

enum { POS, VEL, DATA, HEALTH, DAMAGE, SPRITE, STUNNED, NCOMP };

static void movement(tes_iter_t *it)
{
    Position *p = tes_field(it, 0);
    const Velocity *v = tes_field(it, 1);
    float dt = it->delta_time;
    for (int32_t i = 0; i < it->count; i++) {
        p[i].x += v[i].x * dt;
        p[i].y += v[i].y * dt;
    }
}

static void data_update(tes_iter_t *it)
{
    Data *d = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        d[i].thingy = (d[i].thingy + 1) % 1000000;
        d[i].dingy += 0.0001 * it->delta_time;
        d[i].numgy = d[i].numgy * 1664525u + 1013904223u;
    }
}

static void steering(tes_iter_t *it)
{
    const Position *p = tes_field(it, 0);
    Velocity *v = tes_field(it, 1);
    const Data *d = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++) {
        if ((d[i].numgy & 3u) == 0) {
            v[i].x = -p[i].y * 0.001f;
            v[i].y = p[i].x * 0.001f;
        }
    }
}

static void health(tes_iter_t *it)
{
    Health *h = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        if (h[i].hp < 100000)
            h[i].hp += 3;
}

static void damage(tes_iter_t *it)
{
    Health *h = tes_field(it, 0);
    const Damage *d = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        int32_t dmg = d[i].atk - d[i].def;
        h[i].hp -= dmg > 0 ? dmg : 0;
        if (h[i].hp < 0)
            h[i].hp = 50000;
    }
}

static void sprite(tes_iter_t *it)
{
    Sprite *s = tes_field(it, 0);
    const Health *h = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++)
        s[i].c = h[i].hp > 50000 ? '@' : (h[i].hp > 1000 ? '#' : '_');
}

typedef struct stun_ctx { tes_comp_t stunned; } stun_ctx_t;

static void stun(tes_iter_t *it)
{
    const stun_ctx_t *c = it->ctx;
    const Health *h = tes_field(it, 0);
    /* A cheap test first: the structural calls go to the few entities whose
     * health hits a multiple of 4096 (stunned if not yet, else unstunned). */
    for (int32_t i = 0; i < it->count; i++) {
        if ((h[i].hp & 4095) != 0)
            continue;
        if (tes_has(it->world, it->entities[i], c->stunned))
            tes_remove(it->world, it->entities[i], c->stunned);
        else
            tes_add(it->world, it->entities[i], c->stunned);
    }
}

typedef struct frame_world {
    tes_world_t *w;
    tes_comp_t c[NCOMP];
    stun_ctx_t stun;
    tes_query_t *q[7]; /* the baseline's queries */
    void (*fn[7])(tes_iter_t *);
    int64_t n;
} frame_world_t;

static const tes_access_t IN = TES_IN;

static bool build(frame_world_t *f, const bench_cfg_t *cfg, int32_t threads, bool systems)
{
    f->n = cfg->n;
    f->w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    if (!f->w)
        return bench_fail("tes_world_new(threads = %d) failed", threads), false;
    f->c[POS] = bench_register(f->w, "Position", sizeof(Position), TES_STORAGE_TABLE);
    f->c[VEL] = bench_register(f->w, "Velocity", sizeof(Velocity), TES_STORAGE_TABLE);
    f->c[DATA] = bench_register(f->w, "Data", sizeof(Data), TES_STORAGE_TABLE);
    f->c[HEALTH] = bench_register(f->w, "Health", sizeof(Health), TES_STORAGE_TABLE);
    f->c[DAMAGE] = bench_register(f->w, "Damage", sizeof(Damage), TES_STORAGE_TABLE);
    f->c[SPRITE] = bench_register(f->w, "Sprite", sizeof(Sprite), TES_STORAGE_TABLE);
    f->c[STUNNED] = bench_register(f->w, "Stunned", 0, TES_STORAGE_SPARSE);
    if (bench_failed())
        return false;
    const tes_comp_t *c = f->c;
    tes_comp_t hero[] = {c[POS], c[VEL], c[DATA], c[HEALTH], c[DAMAGE], c[SPRITE]};
    tes_comp_t monster[] = {c[POS], c[VEL], c[HEALTH], c[DAMAGE], c[SPRITE]};
    tes_comp_t npc[] = {c[POS], c[VEL], c[DATA], c[SPRITE]};
    int32_t third = (int32_t)(cfg->n / 3);
    int32_t rest = (int32_t)cfg->n - 2 * third;
    tes_entity_t *h = bench_alloc((size_t)rest * sizeof *h);
    bool ok = h && !tes_spawn_n(f->w, third, hero, 6, h) &&
              !tes_spawn_n(f->w, third, monster, 5, h) && !tes_spawn_n(f->w, rest, npc, 4, h);
    free(h);
    if (!ok)
        return bench_fail("tes_spawn_n failed"), false;
    /* Starting values, written through a query. */
    tes_query_t *all = tes_query_new(f->w, &(tes_query_desc_t){.terms = {{c[POS]}, {c[VEL]}}});
    uint32_t k = 0;
    tes_iter_t it = tes_query_iter(all);
    while (tes_iter_next(&it)) {
        Position *p = tes_field(&it, 0);
        Velocity *v = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++, k++) {
            p[i] = bench_position(k);
            v[i] = (Velocity){1.0f, 0.5f, 0};
        }
    }
    tes_query_free(all);
    tes_query_t *dq = tes_query_new(f->w, &(tes_query_desc_t){.terms = {{c[DAMAGE]}, {c[HEALTH]}}});
    it = tes_query_iter(dq);
    while (tes_iter_next(&it)) {
        Damage *d = tes_field(&it, 0);
        Health *h = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++, k++) {
            d[i] = (Damage){(int32_t)(k % 7) + 2, (int32_t)(k % 3)};
            h[i].hp = (int32_t)(k % 90000) + 1000;
        }
    }
    tes_query_free(dq);

    f->stun.stunned = c[STUNNED];
    struct { const char *name; tes_query_desc_t q; void (*fn)(tes_iter_t *); bool st; } defs[7] = {
        {"movement", {.terms = {{c[POS]}, {c[VEL], TES_AND, IN}}}, movement, false},
        {"data", {.terms = {{c[DATA]}}}, data_update, false},
        {"steering", {.terms = {{c[POS], TES_AND, IN}, {c[VEL]}, {c[DATA], TES_AND, IN}}},
         steering, false},
        {"health", {.terms = {{c[HEALTH]}}}, health, false},
        {"damage", {.terms = {{c[HEALTH]}, {c[DAMAGE], TES_AND, IN}}}, damage, false},
        {"sprite", {.terms = {{c[SPRITE], TES_AND, TES_OUT}, {c[HEALTH], TES_AND, IN}}}, sprite,
         false},
        {"stun", {.terms = {{c[HEALTH], TES_AND, IN}}}, stun, true},
    };
    for (int i = 0; i < 7; i++) {
        f->fn[i] = defs[i].fn;
        if (systems) {
            tes_system_desc_t d = {.name = defs[i].name, .query = defs[i].q, .run = defs[i].fn,
                                   .ctx = &f->stun, .parallel = true,
                                   .structural = defs[i].st};
            if (!tes_system_new(f->w, &d))
                return bench_fail("tes_system_new(%s) failed", defs[i].name), false;
        } else if (!(f->q[i] = tes_query_new(f->w, &defs[i].q))) {
            return bench_fail("tes_query_new(%s) failed", defs[i].name), false;
        }
    }
    return true;
}

static void frame_fini(void *p)
{
    frame_world_t *f = p;
    tes_world_free(f->w);
    free(f);
}

static uint64_t checksum(frame_world_t *f)
{
    const Health *h = NULL;
    tes_query_t *q = tes_query_new(f->w, &(tes_query_desc_t){.terms = {{f->c[HEALTH], TES_AND, IN}}});
    uint64_t sum = 0;
    tes_iter_t it = tes_query_iter(q);
    if (tes_iter_next(&it)) {
        h = tes_field(&it, 0);
        sum = (uint64_t)h[0].hp + (uint64_t)it.count;
        tes_iter_fini(&it);
    }
    tes_query_free(q);
    return sum;
}

static void *sys_init(const bench_cfg_t *cfg, int32_t threads)
{
    frame_world_t *f = calloc(1, sizeof *f);
    if (f && !build(f, cfg, threads, true)) {
        frame_fini(f);
        return NULL;
    }
    return f;
}

static void *init1(const bench_cfg_t *cfg) { return sys_init(cfg, 1); }
static void *init2(const bench_cfg_t *cfg) { return sys_init(cfg, 2); }
static void *init4(const bench_cfg_t *cfg) { return sys_init(cfg, 4); }

static uint64_t progress_run(void *p)
{
    frame_world_t *f = p;
    if (tes_progress(f->w, 0.016f) != TES_OK)
        bench_fail("tes_progress failed");
    return checksum(f);
}

static void *hand_init(const bench_cfg_t *cfg)
{
    frame_world_t *f = calloc(1, sizeof *f);
    if (f && !build(f, cfg, 1, false)) {
        frame_fini(f);
        return NULL;
    }
    return f;
}

/* The same seven systems as a user writes them without tes_progress. */
static uint64_t hand_run(void *p)
{
    frame_world_t *f = p;
    for (int i = 0; i < 7; i++) {
        tes_iter_t it = tes_query_iter(f->q[i]);
        it.delta_time = 0.016f;
        it.ctx = &f->stun;
        while (tes_iter_next(&it))
            f->fn[i](&it);
    }
    return checksum(f);
}

static int64_t frame_ops(const bench_cfg_t *cfg) { return cfg->n; }

/* ---- the bound: the same loops hand-parallelised over plain pthreads ----
 *
 * What two threads can get out of this frame at best, with no scheduler at
 * all: the calling thread captures each query's chunks, then it and one
 * pthread each run the loops over a fixed half of every chunk. Every loop
 * is row-local (entity i's values depend only on entity i's), so in the
 * "fused" form each thread runs all six data loops over its half without
 * waiting for the other; in the "barrier" form the threads meet after each
 * loop, as a scheduler that runs one system at a time over both threads
 * would. The structural loop's scan is split too, each thread noting the
 * entities to toggle; the calling thread applies them afterwards, first
 * half first (the order one thread would have used). One wake-up and one
 * join per frame. The halves are fixed, so when the pthread wakes late
 * (a busy machine) the calling thread waits for it at the end, where a
 * scheduler handing out small pieces would have done more of the work
 * itself: beside other programs this bound can come out slower than
 * tes_progress. The baseline is the same loops on one thread. */

typedef struct bound_chunk { int32_t count; const tes_entity_t *e; void *fields[3]; } bound_chunk_t;

enum { BOUND_MAX_CHUNKS = 8, BOUND_MAX_HITS = 1 << 16 };

typedef struct bound_world {
    frame_world_t f;
    bool fused;
    bound_chunk_t chunks[7][BOUND_MAX_CHUNKS];
    int chunk_count[7];
    pthread_t worker;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint64_t posted; /* frames handed to the worker (under lock) */
    bool stop;
    _Atomic int done;  /* the worker finished the posted frame */
    _Atomic int meet[2]; /* barrier arrivals per thread (barrier form) */
    tes_entity_t *hits[2];
    int32_t hit_count[2];
} bound_world_t;

/* Waits for *flag >= value. It spins, but gives the core away now and
 * then: the other thread may be waiting for this very core. */
static void bound_wait(_Atomic int *flag, int value)
{
    for (unsigned i = 1; atomic_load_explicit(flag, memory_order_acquire) < value; i++)
        if ((i & 1023) == 0)
            sched_yield();
}

static void bound_meet(bound_world_t *b, int t, int *round)
{
    (*round)++;
    atomic_store_explicit(&b->meet[t], *round, memory_order_release);
    bound_wait(&b->meet[1 - t], *round);
}

static void bound_half(bound_world_t *b, int t)
{
    int round = 0;
    for (int q = 0; q < 6; q++) {
        for (int c = 0; c < b->chunk_count[q]; c++) {
            const bound_chunk_t *ch = &b->chunks[q][c];
            int32_t lo = t ? ch->count / 2 : 0, hi = t ? ch->count : ch->count / 2;
            tes_iter_t it = {0};
            it.count = hi - lo;
            it.entities = ch->e + lo;
            it.delta_time = 0.016f;
            it.world = b->f.w;
            it.priv_query = b->f.q[q];
            it.priv_phase = TES__ITER_DETACHED;
            /* the field sizes of each loop's terms */
            static const size_t sizes[6][3] = {
                {sizeof(Position), sizeof(Velocity), 0}, {sizeof(Data), 0, 0},
                {sizeof(Position), sizeof(Velocity), sizeof(Data)}, {sizeof(Health), 0, 0},
                {sizeof(Health), sizeof(Damage), 0}, {sizeof(Sprite), sizeof(Health), 0}};
            for (int i = 0; i < 3; i++)
                if (ch->fields[i])
                    it.priv_fields[i] = (char *)ch->fields[i] + (size_t)lo * sizes[q][i];
            b->f.fn[q](&it);
        }
        if (!b->fused)
            bound_meet(b, t, &round);
    }
    b->hit_count[t] = 0;
    for (int c = 0; c < b->chunk_count[6]; c++) {
        const bound_chunk_t *ch = &b->chunks[6][c];
        int32_t lo = t ? ch->count / 2 : 0, hi = t ? ch->count : ch->count / 2;
        const Health *h = ch->fields[0];
        for (int32_t i = lo; i < hi; i++)
            if ((h[i].hp & 4095) == 0 && b->hit_count[t] < BOUND_MAX_HITS)
                b->hits[t][b->hit_count[t]++] = ch->e[i];
    }
}

static void *bound_worker(void *p)
{
    bound_world_t *b = p;
    uint64_t seen = 0;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (b->posted == seen && !b->stop)
            pthread_cond_wait(&b->wake, &b->lock);
        if (b->stop)
            break;
        seen = b->posted;
        pthread_mutex_unlock(&b->lock);
        atomic_store_explicit(&b->meet[1], 0, memory_order_relaxed);
        bound_half(b, 1);
        atomic_store_explicit(&b->done, 1, memory_order_release);
        pthread_mutex_lock(&b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static void bound_fini(void *p)
{
    bound_world_t *b = p;
    if (b->worker) {
        pthread_mutex_lock(&b->lock);
        b->stop = true;
        pthread_cond_signal(&b->wake);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->worker, NULL);
    }
    free(b->hits[0]);
    free(b->hits[1]);
    tes_world_free(b->f.w);
    free(b);
}

static void *bound_init(const bench_cfg_t *cfg, bool fused)
{
    bound_world_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->fused = fused;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->wake, NULL);
    b->hits[0] = malloc(BOUND_MAX_HITS * sizeof(tes_entity_t));
    b->hits[1] = malloc(BOUND_MAX_HITS * sizeof(tes_entity_t));
    if (!b->hits[0] || !b->hits[1] || !build(&b->f, cfg, 1, false) ||
        pthread_create(&b->worker, NULL, bound_worker, b)) {
        bound_fini(b);
        return NULL;
    }
    return b;
}

static void *bound_fused_init(const bench_cfg_t *cfg) { return bound_init(cfg, true); }
static void *bound_barrier_init(const bench_cfg_t *cfg) { return bound_init(cfg, false); }

static uint64_t bound_run(void *p)
{
    bound_world_t *b = p;
    for (int q = 0; q < 7; q++) {
        b->chunk_count[q] = 0;
        tes_iter_t it = tes_query_iter(b->f.q[q]);
        while (tes_iter_next(&it)) {
            if (b->chunk_count[q] == BOUND_MAX_CHUNKS) {
                bench_fail("more chunks than the bound expects");
                tes_iter_fini(&it);
                break;
            }
            bound_chunk_t *ch = &b->chunks[q][b->chunk_count[q]++];
            ch->count = it.count;
            ch->e = it.entities;
            for (int i = 0; i < 3; i++)
                ch->fields[i] = i < it.priv_query->term_count ? tes_field(&it, i) : NULL;
        }
    }
    atomic_store_explicit(&b->done, 0, memory_order_relaxed);
    atomic_store_explicit(&b->meet[0], 0, memory_order_relaxed);
    pthread_mutex_lock(&b->lock);
    b->posted++;
    pthread_cond_signal(&b->wake);
    pthread_mutex_unlock(&b->lock);
    bound_half(b, 0);
    bound_wait(&b->done, 1);
    for (int t = 0; t < 2; t++) {
        for (int32_t i = 0; i < b->hit_count[t]; i++) {
            tes_entity_t e = b->hits[t][i];
            if (tes_has(b->f.w, e, b->f.c[STUNNED]))
                tes_remove(b->f.w, e, b->f.c[STUNNED]);
            else
                tes_add(b->f.w, e, b->f.c[STUNNED]);
        }
    }
    return checksum(&b->f);
}

const bench_workload_t bench_systems_bound_fused = {
    .name = "S1 bound: the 7 loops by hand on 2 pthreads, fused (base: hand loops)",
    .unit = "entity",
    .ops = frame_ops,
    .tes = {.init = bound_fused_init, .run = bound_run, .fini = bound_fini},
    .base = {.init = hand_init, .run = hand_run, .fini = frame_fini},
};

const bench_workload_t bench_systems_bound_barrier = {
    .name = "S1 bound: the 7 loops by hand on 2 pthreads, a barrier per loop (base: hand loops)",
    .unit = "entity",
    .ops = frame_ops,
    .tes = {.init = bound_barrier_init, .run = bound_run, .fini = bound_fini},
    .base = {.init = hand_init, .run = hand_run, .fini = frame_fini},
};

#define FRAME_WORKLOAD(var, label, init_fn)                                              \
    const bench_workload_t var = {                                                       \
        .name = label,                                                                   \
        .unit = "entity",                                                                \
        .ops = frame_ops,                                                                \
        .tes = {.init = init_fn, .run = progress_run, .fini = frame_fini},               \
        .base = {.init = hand_init, .run = hand_run, .fini = frame_fini},                \
    }

FRAME_WORKLOAD(bench_systems_1, "S1 frame of 7 systems, tes_progress 1 thread (base: hand loops)",
               init1);
FRAME_WORKLOAD(bench_systems_2, "S1 frame of 7 systems, tes_progress 2 threads (base: hand loops)",
               init2);
FRAME_WORKLOAD(bench_systems_4, "S1 frame of 7 systems, tes_progress 4 threads (base: hand loops)",
               init4);

/* ---- scheduler overhead: 100 systems over queries that match nothing ---- */

enum { EMPTY_SYSTEMS = 100 };

typedef struct empty_world {
    tes_world_t *w;
    tes_query_t *q[EMPTY_SYSTEMS];
    uint64_t calls;
} empty_world_t;

static void never(tes_iter_t *it)
{
    empty_world_t *e = it->ctx;
    e->calls++;
}

static void *empty_build(bool systems)
{
    empty_world_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->w = tes_world_new(&(tes_world_desc_t){.threads = 2});
    if (!e->w)
        return bench_fail("tes_world_new failed"), free(e), NULL;
    tes_entity_t x = tes_spawn(e->w); /* a live entity none of the queries matches */
    (void)x;
    for (int i = 0; i < EMPTY_SYSTEMS; i++) {
        char name[32];
        snprintf(name, sizeof name, "Empty%d", i);
        tes_comp_t c = bench_register(e->w, name, 4, i % 2 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
        tes_query_desc_t q = {.terms = {{c}}};
        if (systems) {
            snprintf(name, sizeof name, "system%d", i);
            if (!tes_system_new(e->w, &(tes_system_desc_t){.name = name, .query = q, .run = never,
                                                          .ctx = e, .parallel = true}))
                return bench_fail("tes_system_new failed"), NULL;
        } else {
            e->q[i] = tes_query_new(e->w, &q);
        }
    }
    return e;
}

static void *empty_sys_init(const bench_cfg_t *cfg) { (void)cfg; return empty_build(true); }
static void *empty_hand_init(const bench_cfg_t *cfg) { (void)cfg; return empty_build(false); }

static void empty_fini(void *p)
{
    empty_world_t *e = p;
    tes_world_free(e->w);
    free(e);
}

enum { EMPTY_FRAMES = 1000 };

static uint64_t empty_progress(void *p)
{
    empty_world_t *e = p;
    for (int f = 0; f < EMPTY_FRAMES; f++)
        tes_progress(e->w, 0.016f);
    return e->calls;
}

static uint64_t empty_hand(void *p)
{
    empty_world_t *e = p;
    for (int f = 0; f < EMPTY_FRAMES; f++) {
        for (int i = 0; i < EMPTY_SYSTEMS; i++) {
            tes_iter_t it = tes_query_iter(e->q[i]);
            while (tes_iter_next(&it))
                never(&it);
        }
    }
    return e->calls;
}

static int64_t empty_ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return (int64_t)EMPTY_SYSTEMS * EMPTY_FRAMES;
}

const bench_workload_t bench_systems_empty = {
    .name = "S2 scheduler, 100 systems over empty queries (base: hand-iterated queries)",
    .unit = "system",
    .ops = empty_ops,
    .same_checksum = true,
    .tes = {.init = empty_sys_init, .run = empty_progress, .fini = empty_fini},
    .base = {.init = empty_hand_init, .run = empty_hand, .fini = empty_fini},
};
