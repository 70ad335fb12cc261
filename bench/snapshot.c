/*
 * snapshot.c — tes_snapshot_save and tes_snapshot_load of N entities with
 * Position, Velocity and Rotation (three 12-byte table components), through
 * an in-memory writer and reader.
 *
 * Save: the world is built untimed; the timed run writes the whole snapshot
 * into a preallocated buffer. Load: the snapshot is made once; before each
 * run a fresh world with the three components registered; the timed run
 * reads it back (checksum verified, every field validated, columns copied).
 * Baseline for both: one plain memcpy of the same number of bytes (the
 * snapshot's size: every byte the load must read or the save must write)
 * between two buffers whose pages are already mapped, as the library's are
 * in warm runs. Besides ns per entity, each side's throughput in MB/s
 * (bytes of snapshot per second) is printed when the workload ends,
 * measured around the same runs: the median of the warm runs with their
 * ratio and, apart, the cold first run, which also pays for first-touch
 * page faults.
 */
#include "bench.h" /* first: it sets _POSIX_C_SOURCE for clock_gettime */

#include <time.h>

typedef struct {
    uint32_t n;
    tes_world_t *w;     /* save: the world saved; load: the target */
    tes_entity_t *out;
    uint8_t *snap;      /* the snapshot (load) / the output buffer (save) */
    size_t snap_size, snap_cap;
    size_t pos;
    bool load;
} snap_state_t;

/* Per-run seconds of each side, for the MB/s line. */
#define MAX_RUNS 256
typedef struct {
    double secs[MAX_RUNS];
    int n;
} timings_t;
static timings_t tes_times[2], base_times[2]; /* [0] save, [1] load */
static size_t payload_bytes[2];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void record(timings_t *t, double secs)
{
    if (t->n < MAX_RUNS)
        t->secs[t->n++] = secs;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The first run is the cold one (the driver reports it apart): it is left
 * out of the median of the warm runs and returned on its own. */
static double cold(const timings_t *t) { return t->n ? t->secs[0] : 0; }

static double median(timings_t *t)
{
    if (t->n < 2)
        return 0;
    double *s = t->secs + 1;
    int n = t->n - 1;
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int mem_write(const void *data, size_t size, void *user)
{
    snap_state_t *s = (snap_state_t *)user;
    if (s->snap_cap - s->snap_size < size)
        return TES_ERR_NOMEM;
    memcpy(s->snap + s->snap_size, data, size);
    s->snap_size += size;
    return TES_OK;
}

static int mem_read(void *data, size_t size, void *user)
{
    snap_state_t *s = (snap_state_t *)user;
    if (s->snap_size - s->pos < size)
        return TES_ERR_IO;
    memcpy(data, s->snap + s->pos, size);
    s->pos += size;
    return TES_OK;
}

/* A world of n entities with the three components, distinct values. */
static tes_world_t *build(uint32_t n, tes_entity_t *out)
{
    tes_world_t *w = bench_world_new();
    if (!w)
        return NULL;
    bench_comps_t c = bench_register3(w, TES_STORAGE_TABLE);
    tes_comp_t comps[3] = {c.pos, c.vel, c.rot};
    if (tes_spawn_n(w, (int32_t)n, comps, 3, out) != TES_OK) {
        bench_fail("tes_spawn_n failed");
        return w;
    }
    for (uint32_t i = 0; i < n; i += 7) {
        Position p = bench_position(i);
        tes_set(w, out[i], c.pos, &p);
    }
    return w;
}

static void *init_common(const bench_cfg_t *cfg, bool load)
{
    snap_state_t *s = (snap_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->load = load;
    s->out = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->out);
    tes_world_t *w = build(s->n, s->out);
    /* Header, slots (8 B), row indices (4 B) and 36 B of values per
     * entity, plus room for the rest. */
    s->snap_cap = (size_t)s->n * 48 + (1u << 16);
    s->snap = (uint8_t *)bench_alloc(s->snap_cap);
    memset(s->snap, 0, s->snap_cap);
    tes_writer_t wr = {mem_write, s};
    if (!w || tes_snapshot_save(w, &wr) != TES_OK)
        bench_fail("tes_snapshot_save failed");
    payload_bytes[load] = s->snap_size;
    if (load)
        tes_world_free(w);
    else
        s->w = w;
    return s;
}

static void *save_init(const bench_cfg_t *cfg) { return init_common(cfg, false); }
static void *load_init(const bench_cfg_t *cfg) { return init_common(cfg, true); }

static void save_before(void *p) { ((snap_state_t *)p)->snap_size = 0; }

static uint64_t save_run(void *p)
{
    snap_state_t *s = (snap_state_t *)p;
    tes_writer_t wr = {mem_write, s};
    double t0 = now();
    int rc = tes_snapshot_save(s->w, &wr);
    record(&tes_times[0], now() - t0);
    if (rc != TES_OK)
        bench_fail("tes_snapshot_save: %s", tes_strerror(rc));
    return s->snap_size + s->snap[s->snap_size / 2];
}

static void load_before(void *p)
{
    snap_state_t *s = (snap_state_t *)p;
    s->w = bench_world_new();
    if (s->w)
        bench_register3(s->w, TES_STORAGE_TABLE);
    s->pos = 0;
}

static uint64_t load_run(void *p)
{
    snap_state_t *s = (snap_state_t *)p;
    tes_reader_t rd = {mem_read, s};
    double t0 = now();
    int rc = tes_snapshot_load(s->w, &rd);
    record(&tes_times[1], now() - t0);
    if (rc != TES_OK)
        bench_fail("tes_snapshot_load: %s", tes_strerror(rc));
    return (uint64_t)tes_entity_count(s->w) + s->pos;
}

static void load_after(void *p)
{
    snap_state_t *s = (snap_state_t *)p;
    if (s->w && !bench_failed() && !tes_alive(s->w, s->out[s->n - 1]))
        bench_fail("tes_snapshot_load: the last entity is missing");
    tes_world_free(s->w);
    s->w = NULL;
}

static void print_rates(int which)
{
    double mb = (double)payload_bytes[which] / 1e6;
    double tc = cold(&tes_times[which]), bc = cold(&base_times[which]);
    double t = median(&tes_times[which]), b = median(&base_times[which]);
    printf("    snapshot %s: %.1f MB; warm medians: tessera %.0f MB/s, memcpy %.0f MB/s (%.2fx); "
           "cold: tessera %.0f MB/s, memcpy %.0f MB/s\n",
           which ? "load" : "save", mb, t > 0 ? mb / t : 0, b > 0 ? mb / b : 0, b > 0 ? t / b : 0,
           tc > 0 ? mb / tc : 0, bc > 0 ? mb / bc : 0);
    tes_times[which].n = base_times[which].n = 0;
}

static void tes_fini(void *p)
{
    snap_state_t *s = (snap_state_t *)p;
    if (!s)
        return;
    tes_world_free(s->w);
    free(s->snap);
    free(s->out);
    free(s);
}

/* Baseline: memcpy of the same number of bytes. */
typedef struct {
    uint8_t *src, *dst;
    size_t size;
    int which;
} base_state_t;

static void *base_init_common(const bench_cfg_t *cfg, int which)
{
    (void)cfg;
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->which = which;
    s->size = payload_bytes[which];
    s->src = (uint8_t *)bench_alloc(s->size + 1);
    s->dst = (uint8_t *)bench_alloc(s->size + 1);
    for (size_t i = 0; i < s->size; i++)
        s->src[i] = (uint8_t)(i * 31u);
    memset(s->dst, 0, s->size + 1);
    return s;
}

static void *base_save_init(const bench_cfg_t *cfg) { return base_init_common(cfg, 0); }
static void *base_load_init(const bench_cfg_t *cfg) { return base_init_common(cfg, 1); }

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    double t0 = now();
    memcpy(s->dst, s->src, s->size);
    record(&base_times[s->which], now() - t0);
    return s->size + s->dst[s->size / 2];
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    if (!s)
        return;
    free(s->src);
    free(s->dst);
    print_rates(s->which);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_snapshot_save = {
    "snapshot: save 3x12B comps (vs memcpy)",
    "entity",
    ops,
    false,
    {save_init, save_before, save_run, NULL, tes_fini},
    {base_save_init, NULL, base_run, NULL, base_fini},
};

const bench_workload_t bench_snapshot_load = {
    "snapshot: load 3x12B comps (vs memcpy)",
    "entity",
    ops,
    false,
    {load_init, load_before, load_run, load_after, tes_fini},
    {base_load_init, NULL, base_run, NULL, base_fini},
};
