/*
 * json.c — tes_json_world of N/10 entities (100,000 by default) with three
 * reflected table components: Position and Velocity (three f32 members
 * each) and Stats (an i32, a f32 and a f64), eight values per entity, the
 * floats non-integral so every one goes through the shortest-form search.
 *
 * Baseline: a plain C writer over arrays of the same structs that writes
 * the same text (checked byte for byte before timing) into the same kind
 * of 4 KiB buffer and the same writer, formatting floats with the same
 * function. So the ratio is what the library's walk, member dispatch and
 * escaping cost over a hand-written dump. When the workload ends, both
 * sides' MB/s and ns per value are printed, and the memory check: the
 * allocator calls and live bytes tes_json_world adds (none: its only
 * memory is the fixed buffer on its stack, whatever N).
 */
#include "bench.h" /* first: it sets _POSIX_C_SOURCE for clock_gettime */

#include <time.h>

#include "json/json_out.h"

typedef struct Stats {
    int32_t hp;
    float shield;
    double score;
} Stats;

TES_MEMBERS(Position, TES_MEMBER(Position, x, TES_TYPE_F32), TES_MEMBER(Position, y, TES_TYPE_F32),
            TES_MEMBER(Position, z, TES_TYPE_F32));
TES_MEMBERS(Velocity, TES_MEMBER(Velocity, x, TES_TYPE_F32), TES_MEMBER(Velocity, y, TES_TYPE_F32),
            TES_MEMBER(Velocity, z, TES_TYPE_F32));
TES_MEMBERS(Stats, TES_MEMBER(Stats, hp, TES_TYPE_I32), TES_MEMBER(Stats, shield, TES_TYPE_F32),
            TES_MEMBER(Stats, score, TES_TYPE_F64));

#define VALUES_PER_ENTITY 8

/* The sink both sides write to: counts bytes and folds them into a sum. */
typedef struct sink {
    uint64_t bytes, sum;
    char *copy; /* when set (untimed check), the text is kept here */
    size_t copy_cap;
} sink_t;

static int sink_write(const void *data, size_t size, void *user)
{
    sink_t *s = (sink_t *)user;
    const unsigned char *p = (const unsigned char *)data;
    if (s->copy && s->bytes + size <= s->copy_cap)
        memcpy(s->copy + s->bytes, data, size);
    s->bytes += size;
    s->sum = s->sum * 31u + p[0] + p[size - 1] + size;
    return TES_OK;
}

typedef struct json_state {
    uint32_t n;
    tes_world_t *w;
    tes_entity_t *ents;
    Position *pos;
    Velocity *vel;
    Stats *stats;
    uint64_t allocations, bytes; /* what tes_json_world added (world stats) */
} json_state_t;

/* Per-run seconds of each side, and the output size. */
#define MAX_RUNS 256
static double tes_secs[MAX_RUNS], base_secs[MAX_RUNS];
static int tes_runs, base_runs;
static uint64_t out_bytes;
static json_state_t *shared; /* the baseline writes the tessera side's data */
static uint32_t shared_n;
static uint64_t shared_allocations, shared_bytes;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill(json_state_t *s, uint32_t i)
{
    float f = (float)i;
    s->pos[i] = (Position){f * 0.37f + 0.1f, f * -1.3f + 0.7f, 1.0f / (f + 3.0f)};
    s->vel[i] = (Velocity){0.01f * (float)(i % 977) + 0.003f, -2.5f + 0.11f * (float)(i % 31), 3.3f};
    s->stats[i] = (Stats){(int32_t)(i * 7u % 1000u), 0.5f + (float)(i % 13) * 0.1f, (double)i / 7.0};
}

/* ---- the baseline writer: the same text, by hand ---- */

static void out_u64(tes__json_out_t *o, uint64_t v)
{
    char buf[24];
    char *p = buf + sizeof buf;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    tes__json_raw(o, p, (size_t)(buf + sizeof buf - p));
}

static void out_f32(tes__json_out_t *o, const char *key, size_t klen, float v)
{
    char buf[32];
    tes__json_raw(o, key, klen);
    int n = tes__json_format_f32(buf, v);
    tes__json_raw(o, buf, (size_t)n);
}

static void baseline_write(const json_state_t *s, const char *head, size_t head_len, tes__json_out_t *o)
{
    tes__json_raw(o, head, head_len);
    for (uint32_t i = 0; i < s->n; i++) {
        tes__json_raw(o, i ? ",{\"id\":\"" : "{\"id\":\"", i ? 8 : 7);
        out_u64(o, s->ents[i]);
        static const char mid[] = "\",\"name\":null,\"path\":null,\"parent\":null,\"disabled\":false,"
                                  "\"prefab\":false,\"components\":{\"Position\":{";
        tes__json_raw(o, mid, sizeof mid - 1);
        out_f32(o, "\"x\":", 4, s->pos[i].x);
        out_f32(o, ",\"y\":", 5, s->pos[i].y);
        out_f32(o, ",\"z\":", 5, s->pos[i].z);
        tes__json_raw(o, "},\"Velocity\":{", 14);
        out_f32(o, "\"x\":", 4, s->vel[i].x);
        out_f32(o, ",\"y\":", 5, s->vel[i].y);
        out_f32(o, ",\"z\":", 5, s->vel[i].z);
        tes__json_raw(o, "},\"Stats\":{\"hp\":", 16);
        tes__json_i64(o, s->stats[i].hp);
        out_f32(o, ",\"shield\":", 10, s->stats[i].shield);
        tes__json_raw(o, ",\"score\":", 9);
        char buf[32];
        int n = tes__json_format_f64(buf, s->stats[i].score);
        tes__json_raw(o, buf, (size_t)n);
        tes__json_raw(o, "}}}", 3);
    }
    tes__json_raw(o, "]}", 2);
}

/* The components part of the document (the same for both sides): taken
 * from the library's own output once, untimed. */
static char head[2048];
static size_t head_len;

static void *tes_init(const bench_cfg_t *cfg)
{
    json_state_t *s = (json_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n / 10 > 0 ? cfg->n / 10 : 1);
    s->ents = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->ents);
    s->pos = (Position *)bench_alloc((size_t)s->n * sizeof *s->pos);
    s->vel = (Velocity *)bench_alloc((size_t)s->n * sizeof *s->vel);
    s->stats = (Stats *)bench_alloc((size_t)s->n * sizeof *s->stats);
    s->w = bench_world_new();
    if (bench_failed())
        return s;
    tes_comp_t c[3] = {TES_COMPONENT_REFLECTED(s->w, Position), TES_COMPONENT_REFLECTED(s->w, Velocity),
                       TES_COMPONENT_REFLECTED(s->w, Stats)};
    if (!c[0] || !c[1] || !c[2] || tes_spawn_n(s->w, (int32_t)s->n, c, 3, s->ents) != TES_OK) {
        bench_fail("set-up failed: %s", tes_last_error_detail(s->w));
        return s;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        fill(s, i);
        tes_set(s->w, s->ents[i], c[0], &s->pos[i]);
        tes_set(s->w, s->ents[i], c[1], &s->vel[i]);
        tes_set(s->w, s->ents[i], c[2], &s->stats[i]);
    }
    /* Untimed check: the baseline writes exactly the library's text. */
    sink_t a = {0, 0, NULL, 0}, b = {0, 0, NULL, 0};
    a.copy_cap = b.copy_cap = (size_t)s->n * 400 + 4096;
    a.copy = (char *)bench_alloc(a.copy_cap);
    b.copy = (char *)bench_alloc(b.copy_cap);
    tes_writer_t wa = {sink_write, &a}, wb = {sink_write, &b};
    tes_world_stats_t st0, st1;
    tes_world_stats(s->w, &st0);
    if (!a.copy || !b.copy || tes_json_world(s->w, &wa) != TES_OK)
        bench_fail("tes_json_world failed");
    tes_world_stats(s->w, &st1);
    s->allocations = st1.allocations - st0.allocations;
    s->bytes = st1.bytes_allocated - st0.bytes_allocated;
    const char *entities = a.copy ? strstr(a.copy, "\"entities\":[") : NULL;
    if (!bench_failed() && entities && (size_t)(entities - a.copy) + 12 < sizeof head) {
        head_len = (size_t)(entities - a.copy) + 12;
        memcpy(head, a.copy, head_len);
        static tes__json_out_t o;
        tes__json_init(&o, &wb);
        baseline_write(s, head, head_len, &o);
        tes__json_flush(&o);
        if (a.bytes != b.bytes || memcmp(a.copy, b.copy, (size_t)a.bytes) != 0)
            bench_fail("the baseline's text differs from tes_json_world's");
    } else if (!bench_failed()) {
        bench_fail("unexpected tes_json_world output");
    }
    out_bytes = a.bytes;
    shared_n = s->n;
    shared_allocations = s->allocations;
    shared_bytes = s->bytes;
    free(a.copy);
    free(b.copy);
    shared = s;
    return s;
}

static uint64_t tes_run(void *p)
{
    json_state_t *s = (json_state_t *)p;
    sink_t k = {0, 0, NULL, 0};
    tes_writer_t wr = {sink_write, &k};
    double t0 = now();
    int rc = tes_json_world(s->w, &wr);
    if (tes_runs < MAX_RUNS)
        tes_secs[tes_runs++] = now() - t0;
    if (rc != TES_OK)
        bench_fail("tes_json_world: %s", tes_strerror(rc));
    return k.bytes ^ k.sum;
}

static void tes_fini(void *p)
{
    json_state_t *s = (json_state_t *)p;
    if (!s)
        return;
    tes_world_free(s->w);
    free(s->ents);
    free(s->pos);
    free(s->vel);
    free(s->stats);
    free(s);
}

static void *base_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    return shared;
}

static uint64_t base_run(void *p)
{
    json_state_t *s = (json_state_t *)p;
    sink_t k = {0, 0, NULL, 0};
    tes_writer_t wr = {sink_write, &k};
    static tes__json_out_t o;
    double t0 = now();
    tes__json_init(&o, &wr);
    baseline_write(s, head, head_len, &o);
    tes__json_flush(&o);
    if (base_runs < MAX_RUNS)
        base_secs[base_runs++] = now() - t0;
    return k.bytes ^ k.sum;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the warm runs (the first, cold, left out). */
static double warm_median(double *v, int n)
{
    if (n < 2)
        return v[0];
    qsort(v + 1, (size_t)(n - 1), sizeof *v, cmp_double);
    int m = n - 1;
    return m % 2 ? v[1 + m / 2] : (v[m / 2] + v[1 + m / 2]) / 2;
}

static void base_fini(void *p)
{
    (void)p; /* the tessera side's state, freed by now */
    if (!tes_runs || !base_runs)
        return;
    double t = warm_median(tes_secs, tes_runs), b = warm_median(base_secs, base_runs);
    double mb = (double)out_bytes / 1e6, values = (double)shared_n * VALUES_PER_ENTITY;
    printf("    json: %u entities, %.1f MB, %.0f values; tessera %.0f MB/s %.1f ns/value, "
           "plain C writer %.0f MB/s %.1f ns/value (%.2fx)\n",
           shared_n, mb, values, mb / t, t * 1e9 / values, mb / b, b * 1e9 / values, t / b);
    printf("    json memory: tes_json_world made %llu allocator calls and kept %lld bytes "
           "(a fixed 4 KiB buffer on its stack, whatever the entity count)\n",
           (unsigned long long)shared_allocations, (long long)shared_bytes);
    tes_runs = base_runs = 0;
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n / 10 > 0 ? cfg->n / 10 : 1; }

const bench_workload_t bench_json_world = {
    "json: tes_json_world, 3 reflected comps (vs plain C writer)",
    "entity",
    ops,
    true,
    {tes_init, NULL, tes_run, NULL, tes_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};

/* ------------------------------------------------------------------------ */
/* A deep path: tes_json_entity of the last entity of a named chain         */
/* ------------------------------------------------------------------------ */

/* JSON_DEEP entities, each the child of the one before and named, so the
 * last one's path ("L0000/L0001/...") is about 6 KiB: longer than the JSON
 * writer's stack buffer, which then writes it in blocks of ancestors. Per
 * level against tes_path of the same entity into a buffer that holds it
 * (the baseline): a writer that walked up once per level would be
 * quadratic per entity here (it was, and cubic for tes_json_world). */
#define JSON_DEEP 1200
#define JSON_DEEP_REPS 20

typedef struct deep_state {
    tes_world_t *w;
    tes_entity_t last;
    char *path;
} deep_state_t;

static int deep_sink(const void *data, size_t size, void *user)
{
    (void)data;
    *(uint64_t *)user += size;
    return TES_OK;
}

static void *deep_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    deep_state_t *s = (deep_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->w = tes_world_new(NULL);
    s->path = (char *)bench_alloc(JSON_DEEP * 6 + 16);
    if (!s->w || !s->path) {
        bench_fail("deep path: world or buffer");
        return s;
    }
    tes_entity_t parent = TES_NULL;
    for (int i = 0; i < JSON_DEEP; i++) {
        char name[16];
        snprintf(name, sizeof name, "L%04d", i);
        tes_entity_t e = tes_spawn(s->w);
        if ((i && tes_set_parent(s->w, e, parent) != TES_OK) || tes_set_name(s->w, e, name) != TES_OK) {
            bench_fail("deep path: building the chain failed at %d", i);
            return s;
        }
        parent = s->last = e;
    }
    return s;
}

static uint64_t deep_json_run(void *p)
{
    deep_state_t *s = (deep_state_t *)p;
    uint64_t bytes = 0;
    tes_writer_t wr = {deep_sink, &bytes};
    for (int r = 0; r < JSON_DEEP_REPS; r++)
        if (tes_json_entity(s->w, s->last, &wr) != TES_OK)
            bench_fail("tes_json_entity failed");
    return 0;
}

static uint64_t deep_path_run(void *p)
{
    deep_state_t *s = (deep_state_t *)p;
    for (int r = 0; r < JSON_DEEP_REPS; r++)
        if (tes_path(s->w, s->last, s->path, JSON_DEEP * 6 + 16) <= 0)
            bench_fail("tes_path failed");
    return 0;
}

static void deep_fini(void *p)
{
    deep_state_t *s = (deep_state_t *)p;
    tes_world_free(s->w);
    free(s->path);
    free(s);
}

static int64_t deep_ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return (int64_t)JSON_DEEP * JSON_DEEP_REPS;
}

const bench_workload_t bench_json_deep_path = {
    "json: entity 1200 deep (base: tes_path)",
    "level",
    deep_ops,
    false,
    {deep_init, NULL, deep_json_run, NULL, deep_fini},
    {deep_init, NULL, deep_path_run, NULL, deep_fini},
};
