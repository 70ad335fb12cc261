/*
 * bulk.c — the bundle, bulk and batch calls, each beside a plain C loop
 * doing the same work in the same run (workloads named "bulk: ..."):
 *
 * - spawn_with: N entities one at a time, each with Position, Velocity and
 *   Rotation given as values (one tes_spawn_with call). Baseline: a plain
 *   struct-of-arrays push (generation + three component arrays, growing by
 *   realloc doubling), as in table_spawn_set.c.
 * - spawn_bulk: N entities with the three components and their values from
 *   three arrays, in one tes_spawn_bulk call (out = NULL). Baseline: plain
 *   bulk: allocate the four arrays for N, memcpy the three columns, fill
 *   the generations.
 * - destroy_n: the N entities of one table destroyed with one
 *   tes_destroy_n call, in spawn order. Baseline: table_destroy.c's
 *   swap-remove structure, entity by entity.
 * - destroy_matching: the N entities destroyed with tes_destroy_matching
 *   of a query on Position. Baseline: plain bulk destroy: every slot's
 *   generation bumped and pushed on the free list, the row count zeroed.
 * - get_n (table, sparse): Position of N entities in random order, read
 *   through tes_get_n in batches of 256 and summed. Baselines: the
 *   generation-checked lookups of table_get.c and sparse_get.c.
 * Spawning workloads build a fresh world per run (untimed); the checksums
 * are the handles or the value bits, equal both ways.
 */
#include "bench.h"

static const Velocity VEL = {1.0f, 2.0f, 3.0f};
static const Rotation ROT = {0.0f, 0.0f, 1.0f};

static inline uint64_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static int64_t ops_n(const bench_cfg_t *cfg) { return cfg->n; }

/* ------------------------------------------------------------------ Tessera side */

typedef struct {
    uint32_t n;
    tes_world_t *w;
    bench_comps_t c;
    tes_entity_t *h;
    const void **out;
    Position *pos;
    Velocity *vel;
    Rotation *rot;
    tes_query_t *q;
    bool sparse;
} tes_state_t;

static void *tes_init_common(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    s->pos = (Position *)bench_alloc((size_t)s->n * sizeof *s->pos);
    s->vel = (Velocity *)bench_alloc((size_t)s->n * sizeof *s->vel);
    s->rot = (Rotation *)bench_alloc((size_t)s->n * sizeof *s->rot);
    s->out = (const void **)bench_alloc(256 * sizeof *s->out);
    for (uint32_t i = 0; s->pos && s->vel && s->rot && i < s->n; i++) {
        s->pos[i] = bench_position(i);
        s->vel[i] = VEL;
        s->rot[i] = ROT;
    }
    return s;
}

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_query_free(s->q);
    tes_world_free(s->w);
    free(s->h);
    free(s->pos);
    free(s->vel);
    free(s->rot);
    free(s->out);
    free(s);
}

static void tes_fresh_world(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->w = bench_world_new();
    if (s->w)
        s->c = bench_register3(s->w, TES_STORAGE_TABLE);
}

static void tes_drop_world(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_query_free(s->q);
    s->q = NULL;
    tes_world_free(s->w);
    s->w = NULL;
}

/* A world with the N entities (spawn order in h), positions written. */
static void tes_populated(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_fresh_world(s);
    if (!s->w)
        return;
    tes_comp_t comps[3] = {s->c.pos, s->c.vel, s->c.rot};
    const void *data[3] = {s->pos, s->vel, s->rot};
    tes_bulk_desc_t d = {(int32_t)s->n, comps, 3, data, s->h};
    int rc = tes_spawn_bulk(s->w, &d);
    if (rc != TES_OK)
        bench_fail("tes_spawn_bulk: %s", tes_strerror(rc));
}

static uint64_t spawn_with_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    bench_comps_t c = s->c;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        Position pos = bench_position(i);
        tes_value_t vals[3] = {{c.pos, &pos}, {c.vel, &VEL}, {c.rot, &ROT}};
        tes_entity_t e = tes_spawn_with(w, vals, 3);
        s->h[i] = e;
        sum += e;
    }
    if (tes_entity_count(w) != (int32_t)s->n)
        bench_fail("tes_spawn_with failed: %s", tes_strerror(tes_last_error(w)));
    return sum;
}

static void spawned_check(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        uint32_t last = s->n - 1;
        const Position *pos = (const Position *)tes_get(s->w, s->h[last], s->c.pos);
        Position want = bench_position(last);
        if (!pos || memcmp(pos, &want, sizeof want) != 0)
            bench_fail("wrong Position after the spawn");
    }
    tes_drop_world(s);
}

static uint64_t spawn_bulk_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_comp_t comps[3] = {s->c.pos, s->c.vel, s->c.rot};
    const void *data[3] = {s->pos, s->vel, s->rot};
    tes_bulk_desc_t d = {(int32_t)s->n, comps, 3, data, NULL};
    int rc = tes_spawn_bulk(s->w, &d);
    if (rc != TES_OK)
        bench_fail("tes_spawn_bulk: %s", tes_strerror(rc));
    /* A fresh world issues index i, generation 1: the handles' sum. */
    return (uint64_t)s->n * (s->n - 1) / 2 + ((uint64_t)s->n << 32);
}

static void spawn_bulk_check(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    uint32_t last = s->n - 1;
    const Position *pos = s->w ? (const Position *)tes_get(s->w, tes_entity_make(last, 1), s->c.pos) : NULL;
    Position want = bench_position(last);
    if (!bench_failed() && (!pos || memcmp(pos, &want, sizeof want) != 0))
        bench_fail("wrong Position after tes_spawn_bulk");
    tes_drop_world(s);
}

static uint64_t destroy_n_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int rc = tes_destroy_n(s->w, s->h, (int32_t)s->n);
    if (rc != TES_OK)
        bench_fail("tes_destroy_n: %s", tes_strerror(rc));
    return rc == TES_OK ? s->n : 0;
}

static void destroyed_check(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && tes_entity_count(s->w) != 0)
        bench_fail("%d entities alive after destroying all", tes_entity_count(s->w));
    tes_drop_world(s);
}

static void matching_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_populated(s);
    if (s->w)
        s->q = tes_query_new(s->w, &(tes_query_desc_t){.terms = {{s->c.pos}}});
    if (!s->q)
        bench_fail("tes_query_new failed");
}

static uint64_t destroy_matching_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    int32_t n = tes_destroy_matching(s->q);
    if (n < 0)
        bench_fail("tes_destroy_matching: %s", tes_strerror(n));
    return n < 0 ? 0 : (uint64_t)n;
}

/* get_n: a world built once (only read), handles shuffled. */
static void *get_init(const bench_cfg_t *cfg, bool sparse)
{
    tes_state_t *s = (tes_state_t *)tes_init_common(cfg);
    if (!s || bench_failed())
        return s;
    s->sparse = sparse;
    s->w = bench_world_new();
    if (!s->w)
        return s;
    s->c = bench_register3(s->w, sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
    tes_comp_t comps[3] = {s->c.pos, s->c.vel, s->c.rot};
    const void *data[3] = {s->pos, NULL, NULL};
    tes_bulk_desc_t d = {(int32_t)s->n, comps, sparse ? 1 : 3, data, s->h};
    int rc = tes_spawn_bulk(s->w, &d);
    if (rc != TES_OK)
        bench_fail("tes_spawn_bulk: %s", tes_strerror(rc));
    uint64_t rng = cfg->seed ^ (sparse ? UINT64_C(0x59A) : UINT64_C(0x6E7));
    bench_shuffle_entities(s->h, s->n, &rng);
    return s;
}

static void *get_table_init(const bench_cfg_t *cfg) { return get_init(cfg, false); }
static void *get_sparse_init(const bench_cfg_t *cfg) { return get_init(cfg, true); }

static uint64_t get_n_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    const tes_world_t *w = s->w;
    tes_comp_t c = s->c.pos;
    const void **out = s->out;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < s->n; i += 256) {
        int32_t m = (int32_t)(s->n - i < 256 ? s->n - i : 256);
        int32_t found = tes_get_n(w, c, s->h + i, m, out);
        missing += (uint64_t)(m - found);
        for (int32_t j = 0; j < m; j++)
            if (out[j])
                sum += bits_of(((const Position *)out[j])->x);
    }
    if (missing)
        bench_fail("tes_get_n missed %llu live entities", (unsigned long long)missing);
    return sum;
}

/* ------------------------------------------------------------------ baselines */

typedef struct {
    uint32_t n, count, cap, rows, head;
    uint32_t *gen;
    uint32_t *row; /* per slot: row, or next free index */
    uint32_t *row_entity;
    Position *pos;
    Velocity *vel;
    Rotation *rot;
    tes_entity_t *h;
    const Position *src_pos;
    uint32_t *where; /* sparse baseline: index -> packed position */
    Position *storage[3];
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    for (int k = 0; k < 3; k++)
        s->storage[k] = (Position *)bench_alloc((size_t)s->n * sizeof(Position));
    for (uint32_t i = 0; !bench_failed() && i < s->n; i++) {
        s->storage[0][i] = bench_position(i);
        memcpy(&s->storage[1][i], &VEL, sizeof VEL);
        memcpy(&s->storage[2][i], &ROT, sizeof ROT);
    }
    return s;
}

static void base_release(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->gen);
    free(s->row);
    free(s->row_entity);
    free(s->pos);
    free(s->vel);
    free(s->rot);
    free(s->where);
    s->gen = s->row = s->row_entity = s->where = NULL;
    s->pos = NULL;
    s->vel = NULL;
    s->rot = NULL;
    s->count = s->cap = s->rows = 0;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_release(s);
    free(s->h);
    for (int k = 0; k < 3; k++)
        free(s->storage[k]);
    free(s);
}

static bool base_grow(base_state_t *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : 1024;
    void *g = realloc(s->gen, (size_t)cap * sizeof *s->gen);
    if (g)
        s->gen = (uint32_t *)g;
    void *a = realloc(s->pos, (size_t)cap * sizeof *s->pos);
    if (a)
        s->pos = (Position *)a;
    void *b = realloc(s->vel, (size_t)cap * sizeof *s->vel);
    if (b)
        s->vel = (Velocity *)b;
    void *c = realloc(s->rot, (size_t)cap * sizeof *s->rot);
    if (c)
        s->rot = (Rotation *)c;
    if (!g || !a || !b || !c) {
        bench_fail("realloc failed");
        return false;
    }
    s->cap = cap;
    return true;
}

static uint64_t base_push_run(void *p)
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
        s->h[i] = e;
        sum += e;
    }
    return sum;
}

static uint64_t base_bulk_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    size_t n = s->n;
    s->gen = (uint32_t *)malloc(n * sizeof *s->gen);
    s->pos = (Position *)malloc(n * sizeof *s->pos);
    s->vel = (Velocity *)malloc(n * sizeof *s->vel);
    s->rot = (Rotation *)malloc(n * sizeof *s->rot);
    if (!s->gen || !s->pos || !s->vel || !s->rot) {
        bench_fail("malloc failed");
        return 0;
    }
    memcpy(s->pos, s->storage[0], n * sizeof *s->pos);
    memcpy(s->vel, s->storage[1], n * sizeof *s->vel);
    memcpy(s->rot, s->storage[2], n * sizeof *s->rot);
    for (uint32_t i = 0; i < s->n; i++)
        s->gen[i] = 1;
    s->count = s->n;
    return (uint64_t)s->n * (s->n - 1) / 2 + ((uint64_t)s->n << 32);
}

/* The table_destroy.c structure, populated. */
static void base_populated(void *p)
{
    base_state_t *s = (base_state_t *)p;
    size_t n = s->n;
    s->gen = (uint32_t *)bench_alloc(n * sizeof *s->gen);
    s->row = (uint32_t *)bench_alloc(n * sizeof *s->row);
    s->row_entity = (uint32_t *)bench_alloc(n * sizeof *s->row_entity);
    s->pos = (Position *)bench_alloc(n * sizeof *s->pos);
    s->vel = (Velocity *)bench_alloc(n * sizeof *s->vel);
    s->rot = (Rotation *)bench_alloc(n * sizeof *s->rot);
    if (bench_failed())
        return;
    for (uint32_t i = 0; i < s->n; i++) {
        s->gen[i] = 1;
        s->row[i] = i;
        s->row_entity[i] = i;
        s->h[i] = tes_entity_make(i, 1);
    }
    memcpy(s->pos, s->storage[0], n * sizeof *s->pos);
    memcpy(s->vel, s->storage[1], n * sizeof *s->vel);
    memcpy(s->rot, s->storage[2], n * sizeof *s->rot);
    s->count = s->rows = s->n;
    s->head = BENCH_NONE;
}

static uint64_t base_destroy_each_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint32_t *gen = s->gen, *row_of = s->row, *row_entity = s->row_entity;
    Position *pos = s->pos;
    Velocity *vel = s->vel;
    Rotation *rot = s->rot;
    uint32_t rows = s->rows, head = s->head;
    uint64_t ok = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        if (index >= s->count || gen[index] != tes_entity_generation(e))
            continue;
        uint32_t row = row_of[index], last = --rows;
        if (row != last) {
            uint32_t moved = row_entity[last];
            row_entity[row] = moved;
            pos[row] = pos[last];
            vel[row] = vel[last];
            rot[row] = rot[last];
            row_of[moved] = row;
        }
        gen[index]++;
        row_of[index] = head;
        head = index;
        ok++;
    }
    s->rows = rows;
    s->head = head;
    return ok;
}

static uint64_t base_destroy_all_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    uint32_t *gen = s->gen, *row_of = s->row;
    const uint32_t *row_entity = s->row_entity;
    uint32_t head = s->head;
    for (uint32_t r = 0; r < s->rows; r++) {
        uint32_t index = row_entity[r];
        gen[index]++;
        row_of[index] = head;
        head = index;
    }
    uint64_t n = s->rows;
    s->rows = 0;
    s->head = head;
    return n;
}

/* get baselines: data built once. */
static void *base_get_init(const bench_cfg_t *cfg, bool sparse)
{
    base_state_t *s = (base_state_t *)base_init(cfg);
    if (!s || bench_failed())
        return s;
    size_t n = s->n;
    s->gen = (uint32_t *)bench_alloc(n * sizeof *s->gen);
    s->where = (uint32_t *)bench_alloc(n * sizeof *s->where);
    if (bench_failed())
        return s;
    for (uint32_t i = 0; i < s->n; i++) {
        s->gen[i] = 1;
        s->where[i] = i;
        s->h[i] = tes_entity_make(i, 1);
    }
    uint64_t rng = cfg->seed ^ (sparse ? UINT64_C(0x59A) : UINT64_C(0x6E7));
    bench_shuffle_entities(s->h, s->n, &rng);
    return s;
}

static void *base_get_table_init(const bench_cfg_t *cfg) { return base_get_init(cfg, false); }
static void *base_get_sparse_init(const bench_cfg_t *cfg) { return base_get_init(cfg, true); }

static uint64_t base_get_table_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const uint32_t *gen = s->gen;
    const Position *pos = s->storage[0];
    uint32_t n = s->n;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        if (index < n && gen[index] == tes_entity_generation(e))
            sum += bits_of(pos[index].x);
        else
            missing++;
    }
    if (missing)
        bench_fail("baseline lookup missed");
    return sum;
}

static uint64_t base_get_sparse_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const uint32_t *gen = s->gen, *where = s->where;
    const Position *packed = s->storage[0];
    uint32_t n = s->n;
    uint64_t sum = 0, missing = 0;
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        uint32_t at;
        if (index < n && gen[index] == tes_entity_generation(e) && (at = where[index]) != BENCH_NONE)
            sum += bits_of(packed[at].x);
        else
            missing++;
    }
    if (missing)
        bench_fail("baseline lookup missed");
    return sum;
}

/* ------------------------------------------------------------------ workloads */

const bench_workload_t bench_bulk_spawn_with = {
    "bulk: spawn_with 3 comps 1-by-1",
    "entity",
    ops_n,
    true,
    {tes_init_common, tes_fresh_world, spawn_with_run, spawned_check, tes_fini},
    {base_init, NULL, base_push_run, base_release, base_fini},
};

const bench_workload_t bench_bulk_spawn_bulk = {
    "bulk: spawn_bulk 3 comps with data",
    "entity",
    ops_n,
    true,
    {tes_init_common, tes_fresh_world, spawn_bulk_run, spawn_bulk_check, tes_fini},
    {base_init, NULL, base_bulk_run, base_release, base_fini},
};

const bench_workload_t bench_bulk_destroy_n = {
    "bulk: destroy_n 3 comps (vs 1-by-1 plain)",
    "entity",
    ops_n,
    true,
    {tes_init_common, tes_populated, destroy_n_run, destroyed_check, tes_fini},
    {base_init, base_populated, base_destroy_each_run, base_release, base_fini},
};

const bench_workload_t bench_bulk_destroy_matching = {
    "bulk: destroy_matching 3 comps",
    "entity",
    ops_n,
    true,
    {tes_init_common, matching_before, destroy_matching_run, destroyed_check, tes_fini},
    {base_init, base_populated, base_destroy_all_run, base_release, base_fini},
};

const bench_workload_t bench_bulk_get_n_table = {
    "bulk: get_n Position random (table)",
    "get",
    ops_n,
    true,
    {get_table_init, NULL, get_n_run, NULL, tes_fini},
    {base_get_table_init, NULL, base_get_table_run, NULL, base_fini},
};

const bench_workload_t bench_bulk_get_n_sparse = {
    "bulk: get_n Position random (sparse)",
    "get",
    ops_n,
    true,
    {get_sparse_init, NULL, get_n_run, NULL, tes_fini},
    {base_get_sparse_init, NULL, base_get_sparse_run, NULL, base_fini},
};
