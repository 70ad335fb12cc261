/*
 * table_spawn_set.c — spawn N entities one at a time and tes_set Position,
 * Velocity and Rotation (12 bytes each, table storage) on each.
 *
 * This is the "naive user" path: every tes_set of a new component moves the
 * entity to the next archetype table (root -> {P} -> {P,V} -> {P,V,R}), so
 * it measures spawn plus three table moves through the cached graph edges.
 * Baseline: a plain struct-of-arrays ECS with one generation array and three
 * component arrays, all growing by realloc doubling, written in place.
 * Checksum: the handles (a fresh world issues index i, generation 1).
 */
#include "bench.h"

static const Velocity VEL = {1.0f, 2.0f, 3.0f};
static const Rotation ROT = {0.0f, 0.0f, 1.0f};

typedef struct {
    uint32_t n;
    tes_world_t *w;
    bench_comps_t c;
    tes_entity_t *out;
} tes_state_t;

static void *tes_init(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->out = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->out);
    return s;
}

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->w = bench_world_new();
    if (s->w)
        s->c = bench_register3(s->w, TES_STORAGE_TABLE);
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    bench_comps_t c = s->c;
    uint64_t sum = 0;
    int bad = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        tes_entity_t e = tes_spawn(w);
        Position pos = bench_position(i);
        bad |= tes_set(w, e, c.pos, &pos);
        bad |= tes_set(w, e, c.vel, &VEL);
        bad |= tes_set(w, e, c.rot, &ROT);
        s->out[i] = e;
        sum += e;
    }
    if (bad)
        bench_fail("spawn/tes_set failed: %s", tes_strerror(tes_last_error(w)));
    return sum;
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        uint32_t last = s->n - 1;
        const Position *pos = (const Position *)tes_get(s->w, s->out[last], s->c.pos);
        Position want = bench_position(last);
        if (!pos || memcmp(pos, &want, sizeof want) != 0)
            bench_fail("tes_get after spawn+set returned the wrong Position");
    }
    tes_world_free(s->w);
    s->w = NULL;
}

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    free(s->out);
    free(s);
}

typedef struct {
    uint32_t n, count, cap;
    uint32_t *gen;
    Position *pos;
    Velocity *vel;
    Rotation *rot;
    tes_entity_t *out;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->out = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->out);
    return s;
}

static bool base_grow(base_state_t *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : 1024;
    void *g = realloc(s->gen, (size_t)cap * sizeof *s->gen);
    if (g)
        s->gen = (uint32_t *)g;
    void *p = realloc(s->pos, (size_t)cap * sizeof *s->pos);
    if (p)
        s->pos = (Position *)p;
    void *v = realloc(s->vel, (size_t)cap * sizeof *s->vel);
    if (v)
        s->vel = (Velocity *)v;
    void *r = realloc(s->rot, (size_t)cap * sizeof *s->rot);
    if (r)
        s->rot = (Rotation *)r;
    if (!g || !p || !v || !r) {
        bench_fail("realloc failed");
        return false;
    }
    s->cap = cap;
    return true;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->count == s->cap && !base_grow(s))
            return 0;
        uint32_t index = s->count++;
        s->gen[index] = 1;
        tes_entity_t e = tes_entity_make(index, 1);
        s->pos[index] = bench_position(i);
        s->vel[index] = VEL;
        s->rot[index] = ROT;
        s->out[i] = e;
        sum += e;
    }
    return sum;
}

static void base_after(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->gen);
    free(s->pos);
    free(s->vel);
    free(s->rot);
    s->gen = NULL;
    s->pos = NULL;
    s->vel = NULL;
    s->rot = NULL;
    s->count = s->cap = 0;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_after(s);
    free(s->out);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_table_spawn_set = {
    "table: spawn + set 3 comps 1-by-1",
    "entity",
    ops,
    true,
    {tes_init, tes_before, tes_run, tes_after, tes_fini},
    {base_init, NULL, base_run, base_after, base_fini},
};
