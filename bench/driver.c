/*
 * driver.c — main() of tessera_bench.
 *
 * Runs every workload (bench.h) in one process: per workload, both the
 * Tessera implementation and the plain-array baseline get one cold run
 * (timed but left out of the statistics and shown as "cold") and then
 * `--runs` warm runs, Tessera and baseline alternating. Only `run` is timed,
 * with CLOCK_MONOTONIC; world creation, population and teardown happen in
 * the untimed before/after hooks. Memory stays in the process between runs:
 * `make bench` sets MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_ and
 * MALLOC_TOP_PAD_ so glibc keeps freed pages, and warm runs measure the
 * library rather than page faults.
 *
 * Output: one aligned table of ns per op (median and min of the warm runs,
 * the cold run, the baseline median and min, and the ratio of medians), then
 * a memory section (bytes per entity from tes_world_stats), then the
 * checksum sink that keeps every loop alive.
 *
 * With --csv PATH the same numbers also go to two CSV files, written row by
 * row as workloads finish (so a crash keeps what was measured): PATH gets
 * one row per workload (workload, unit, tes_median_ns, tes_min_ns,
 * tes_cold_ns, base_median_ns, base_min_ns, ratio; a failed workload has
 * empty numbers), and PATH with "_memory" inserted before its extension
 * gets the memory probes (probe, entities, bytes, bytes_per_entity,
 * payload_bytes_per_entity, base_bytes_per_entity). Text fields are quoted
 * (workload names contain commas); numbers are ns per op, as in the table.
 *
 * Options: --filter SUBSTRING  only workloads whose name contains it
 *          --runs N            warm runs per implementation (default 7)
 *          --n N               population size (default 1000000; the
 *                              add/remove workloads use N/100)
 *          --seed N            RNG seed (default fixed)
 *          --csv PATH          also write the results as CSV (see above)
 *          --list              print workload names and exit
 */
#include "bench.h"

#include <time.h>

char bench_error[256];

static volatile uint64_t bench_sink;

/* CSV outputs (NULL when --csv is not given). */
static FILE *csv_times;
static FILE *csv_memory;

static const bench_workload_t *const workloads[] = {
    &bench_spawn,
    &bench_spawn_n,
    &bench_destroy,
    &bench_churn,
    &bench_table_spawn_set,
    &bench_table_spawn_n,
    &bench_table_destroy,
    &bench_table_add_remove,
    &bench_table_get,
    &bench_table_lookup_get,
    &bench_sparse_add_remove,
    &bench_sparse_get,
    &bench_sparse_lookup_get,
    &bench_sparse_iter,
    &bench_w4_table,
    &bench_w4_group,
    &bench_w4_view,
    &bench_w5_fragmented,
    &bench_w8_table,
    &bench_w8_view,
    &bench_w8_group,
    &bench_w8_floor,
    &bench_w8_floor_in_place,
    &bench_w9_heavy,
    &bench_query_create,
    &bench_query_iter_empty,
    &bench_instantiate_n,
    &bench_instantiate_single,
    &bench_defer_ensure,
    &bench_defer_set,
    &bench_defer_set3,
    &bench_bulk_spawn_with,
    &bench_bulk_spawn_bulk,
    &bench_bulk_destroy_n,
    &bench_bulk_destroy_matching,
    &bench_bulk_get_n_table,
    &bench_bulk_get_n_sparse,
    &bench_snapshot_save,
    &bench_snapshot_load,
    &bench_json_world,
    &bench_json_deep_path,
    &bench_systems_1,
    &bench_systems_2,
    &bench_systems_4,
    &bench_systems_bound_fused,
    &bench_systems_bound_barrier,
    &bench_systems_empty,
    &bench_cliff_tax_table,
    &bench_cliff_tax_sparse,
    &bench_cliff_prefab,
    &bench_cliff_disabled,
    &bench_cliff_nonowning_w4,
    &bench_h1_reparent,
    &bench_h1n_reparent,
    &bench_h2_cascade,
    &bench_h3_paths,
    &bench_h4_propagate,
    &bench_h4_unsorted,
    &bench_h4_sort,
    &bench_w4_linked,
    &bench_cliff_nonowning_w8,
    &bench_cliff_w8_view,
    &bench_cliff_spawns,
    &bench_changes_set,
    &bench_changes_w4,
    &bench_changes_idle,
    &bench_changes_some,
    &bench_changes_sparse,
};
#define WORKLOAD_COUNT ((int)(sizeof workloads / sizeof workloads[0]))

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* One run: untimed before, timed run, untimed after. Returns the elapsed
 * nanoseconds (or -1 on failure) and the checksum in *sum. */
static double time_one(const bench_impl_t *impl, void *st, uint64_t *sum)
{
    if (impl->before)
        impl->before(st);
    if (bench_failed())
        return -1.0;
    uint64_t t0 = now_ns();
    uint64_t c = impl->run(st);
    uint64_t t1 = now_ns();
    if (impl->after)
        impl->after(st);
    *sum = c;
    bench_sink = bench_sink * UINT64_C(0x100000001B3) ^ c;
    return bench_failed() ? -1.0 : (double)(t1 - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

#define NAME_W 34

static void print_header(void)
{
    printf("%-*s %-6s %10s %10s %10s %10s %10s %7s\n", NAME_W, "workload", "per",
           "tes med", "tes min", "tes cold", "base med", "base min", "ratio");
    printf("%-*s %-6s %10s %10s %10s %10s %10s %7s\n", NAME_W, "", "", "ns", "ns", "ns",
           "ns", "ns", "med/med");
    for (int i = 0; i < NAME_W + 7 + 5 * 11 + 8; i++)
        putchar('-');
    putchar('\n');
}

/* Writes s as a quoted CSV field (inner quotes doubled). */
static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* One timing row; failed = true leaves the numbers empty. */
static void csv_time_row(const bench_workload_t *wl, bool failed, double tmed, double tmin,
                         double tcold, double bmed, double bmin, double ratio)
{
    if (!csv_times)
        return;
    csv_text(csv_times, wl->name);
    fputc(',', csv_times);
    csv_text(csv_times, wl->unit);
    if (failed)
        fputs(",,,,,,\n", csv_times);
    else
        fprintf(csv_times, ",%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", tmed, tmin, tcold, bmed, bmin,
                ratio);
    fflush(csv_times);
}

/* "dir/name.csv" -> "dir/name_memory.csv" (suffix appended when there is
 * no extension). Returns a malloc'ed string, NULL on failure. */
static char *memory_csv_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash))
        dot = path + strlen(path);
    size_t stem = (size_t)(dot - path);
    char *out = (char *)malloc(strlen(path) + sizeof "_memory");
    if (out)
        sprintf(out, "%.*s_memory%s", (int)stem, path, dot);
    return out;
}

static bool open_csv(const char *path)
{
    char *mem_path = memory_csv_path(path);
    csv_times = fopen(path, "w");
    csv_memory = mem_path ? fopen(mem_path, "w") : NULL;
    if (!csv_times || !csv_memory) {
        const char *bad = !csv_times ? path : mem_path ? mem_path : "the memory CSV";
        fprintf(stderr, "tessera_bench: cannot write %s\n", bad);
        free(mem_path);
        return false;
    }
    fputs("workload,unit,tes_median_ns,tes_min_ns,tes_cold_ns,base_median_ns,base_min_ns,"
          "ratio\n",
          csv_times);
    fputs("probe,entities,bytes,bytes_per_entity,payload_bytes_per_entity,"
          "base_bytes_per_entity\n",
          csv_memory);
    free(mem_path);
    return true;
}

static void close_csv(void)
{
    if (csv_times)
        fclose(csv_times);
    if (csv_memory)
        fclose(csv_memory);
    csv_times = csv_memory = NULL;
}

static void run_workload(const bench_workload_t *wl, const bench_cfg_t *cfg)
{
    bench_error[0] = 0;
    int64_t op_count = wl->ops(cfg);
    double ops = (double)op_count;
    int runs = cfg->runs;
    double *tt = (double *)bench_alloc((size_t)runs * sizeof *tt);
    double *bt = (double *)bench_alloc((size_t)runs * sizeof *bt);
    void *ts = NULL, *bs = NULL;
    double tcold = 0;
    if (!bench_failed() && !(ts = wl->tes.init(cfg)))
        bench_fail("tessera init failed");
    if (!bench_failed() && !(bs = wl->base.init(cfg)))
        bench_fail("baseline init failed");
    for (int r = -1; r < runs && !bench_failed(); r++) {
        uint64_t ct = 0, cb = 0;
        double t = time_one(&wl->tes, ts, &ct);
        if (bench_failed())
            break;
        double b = time_one(&wl->base, bs, &cb);
        if (bench_failed())
            break;
        if (wl->same_checksum && ct != cb) {
            bench_fail("checksum mismatch: tessera %016llx, baseline %016llx",
                       (unsigned long long)ct, (unsigned long long)cb);
            break;
        }
        if (r < 0) {
            tcold = t;
        } else {
            tt[r] = t;
            bt[r] = b;
        }
    }
    /* fini must tolerate a NULL state from a failed init. */
    if (ts)
        wl->tes.fini(ts);
    if (bs)
        wl->base.fini(bs);
    if (bench_failed()) {
        printf("%-*s %-6s FAILED: %s\n", NAME_W, wl->name, wl->unit, bench_error);
        csv_time_row(wl, true, 0, 0, 0, 0, 0, 0);
    } else {
        double tmin = minimum(tt, runs), bmin = minimum(bt, runs);
        double tmed = median(tt, runs), bmed = median(bt, runs);
        printf("%-*s %-6s %10.2f %10.2f %10.2f %10.2f %10.2f %7.2f\n", NAME_W, wl->name,
               wl->unit, tmed / ops, tmin / ops, tcold / ops, bmed / ops, bmin / ops,
               bmed > 0 ? tmed / bmed : 0.0);
        csv_time_row(wl, false, tmed / ops, tmin / ops, tcold / ops, bmed / ops, bmin / ops,
                     bmed > 0 ? tmed / bmed : 0.0);
    }
    fflush(stdout);
    free(tt);
    free(bt);
}

static void run_memory(const bench_cfg_t *cfg, const char *filter)
{
    bool any = false;
    for (int i = 0; i < bench_memory_probe_count; i++) {
        const bench_memory_t *m = &bench_memory_probes[i];
        if (filter && !strstr(m->name, filter))
            continue;
        if (!any) {
            printf("\nmemory (tes_world_stats().bytes_allocated / live entities)\n");
            printf("%-*s %12s %12s %12s %12s %12s\n", NAME_W, "probe", "entities", "bytes",
                   "B/entity", "payload B/e", "base B/e");
            for (int k = 0; k < NAME_W + 5 * 13; k++)
                putchar('-');
            putchar('\n');
            any = true;
        }
        bench_error[0] = 0;
        uint64_t bytes = 0, entities = 0;
        if (!m->measure(cfg, &bytes, &entities) || entities == 0) {
            printf("%-*s FAILED: %s\n", NAME_W, m->name,
                   bench_failed() ? bench_error : "no entities");
            if (csv_memory) {
                csv_text(csv_memory, m->name);
                fputs(",,,,,\n", csv_memory);
                fflush(csv_memory);
            }
            continue;
        }
        printf("%-*s %12llu %12llu %12.2f %12.2f %12.2f\n", NAME_W, m->name,
               (unsigned long long)entities, (unsigned long long)bytes,
               (double)bytes / (double)entities, m->payload, m->baseline);
        fflush(stdout);
        if (csv_memory) {
            csv_text(csv_memory, m->name);
            fprintf(csv_memory, ",%llu,%llu,%.4f,%.4f,%.4f\n", (unsigned long long)entities,
                    (unsigned long long)bytes, (double)bytes / (double)entities, m->payload,
                    m->baseline);
            fflush(csv_memory);
        }
    }
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--filter SUBSTRING] [--runs N] [--n N] [--seed N] [--csv PATH] "
            "[--list]\n",
            argv0);
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return false;
    *out = (int64_t)v;
    return true;
}

int main(int argc, char **argv)
{
    bench_cfg_t cfg = {1000000, 10000, 7, UINT64_C(0x7E55E4A)};
    const char *filter = NULL;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int64_t v;
        if (!strcmp(a, "--list")) {
            for (int k = 0; k < WORKLOAD_COUNT; k++)
                printf("%s\n", workloads[k]->name);
            for (int k = 0; k < bench_memory_probe_count; k++)
                printf("%s\n", bench_memory_probes[k].name);
            return 0;
        }
        if (i + 1 >= argc) {
            usage(argv[0]);
            return 2;
        }
        const char *val = argv[++i];
        if (!strcmp(a, "--filter")) {
            filter = val;
        } else if (!strcmp(a, "--csv") && *val) {
            csv_path = val;
        } else if (!strcmp(a, "--runs") && parse_i64(val, 1, 1000, &v)) {
            cfg.runs = (int)v;
        } else if (!strcmp(a, "--n") && parse_i64(val, 100, 100000000, &v)) {
            cfg.n = v;
        } else if (!strcmp(a, "--seed") && parse_i64(val, 0, INT64_MAX, &v)) {
            cfg.seed = (uint64_t)v;
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    cfg.small_n = cfg.n / 100 > 0 ? cfg.n / 100 : 1;
    if (csv_path && !open_csv(csv_path)) {
        close_csv();
        return 1;
    }

    printf("tessera_bench: N = %lld (add/remove on %lld), %d warm runs + 1 cold, "
           "ns per op; ratio = tessera median / plain-array median\n",
           (long long)cfg.n, (long long)cfg.small_n, cfg.runs);
    if (!getenv("MALLOC_TOP_PAD_"))
        printf("note: MALLOC_TOP_PAD_ is not set; run through `make bench` so warm runs "
               "reuse pages\n");
    printf("\n");

    bool any = false;
    for (int k = 0; k < WORKLOAD_COUNT; k++) {
        if (filter && !strstr(workloads[k]->name, filter))
            continue;
        if (!any)
            print_header();
        any = true;
        run_workload(workloads[k], &cfg);
    }
    run_memory(&cfg, filter);
    printf("\nchecksum sink: %016llx\n", (unsigned long long)bench_sink);
    close_csv();
    return 0;
}
