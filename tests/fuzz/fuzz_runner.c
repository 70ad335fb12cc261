/*
 * fuzz_runner: the differential fuzzer as a deterministic test. It spreads
 * --ops N operations over a fixed list of seeds (1 to 10); each seed picks
 * one of the world configurations (seed % FZ_VARIANTS), so every run covers
 * default limits, generation retirement (after 3 generations, and after one
 * use, which walks entity indices through many sparse-set pages), a tiny id
 * space and one used up mid-run, in plain and strict_lifecycle worlds. A
 * seed with bit 62 set (FZ_CELLS_SEED_BIT, 4611686018427387904) runs the
 * same configuration as the cells variant (see fz_config_t.cells). Two
 * more fixed seeds, with bit 61 set (FZ_TWIN_SEED_BIT), run the twin
 * variant (driver_twin.c): a deferred world against an immediate twin, one
 * batch of calls per op (an eighth of the seed's share of ops).
 * Fixed seeds keep ctest fuzz_differential reproducible; fuzz_commit_range
 * and libFuzzer (fuzz_libfuzzer.c) search further.
 *
 *   fuzz_runner [--ops N] [--seed S | --seeds K [--first-seed F]] [--check-every C]
 *               [--trace-from T] [--announce] [--no-hook-busy] [--verbose]
 *   fuzz_runner --replay FILE [--verbose]
 *
 * With --seed, all N ops run on that one seed, which is how a reported
 * divergence is replayed; --trace-from T then prints every op (nested ops
 * indented) from step T on, to stderr.
 *
 * --seeds K runs the seeds F, F+1, ..., F+K-1 (F = --first-seed, default 1)
 * instead of the fixed list, the N ops split evenly over them; `make
 * fuzz-long` runs two of these on disjoint seed ranges, and ctest
 * fuzz_commit_range a range derived from the commit (commit_range.sh). A
 * divergence found that way is replayed with --seed as above (same config,
 * same ops). --announce prints each seed's replay line before it runs, so a
 * crash (an assertion, a sanitizer report) names its seed too.
 *
 * --no-hook-busy stops observers from calling tes_defer_begin/_end and
 * creating owning groups (which they do by default, expecting TES_ERR_BUSY):
 * for a library that does not refuse those yet.
 *
 * --replay FILE runs the regression list (tests/fuzz/regress_seeds.txt, the
 * ctest fuzz_regressions): one case a line, `#` starts a comment,
 *
 *   seed S ops N [check-every C]                a PRNG seed, as with --seed
 *   bytes PATH                                  a libFuzzer input (PATH is
 *                                               relative to FILE's folder)
 *
 * and fails if any of them diverges.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver.h"

/* Ten seeds of the model variants, then two of the twin variant (3: a
 * deferred ensure after a queued set, which once rewrote the set's value;
 * 26: an ensure on a pending clone of an entity with a queued change, which
 * once ignored it; both in the first batch). */
static const uint64_t default_seeds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                         FZ_TWIN_SEED_BIT | 3, FZ_TWIN_SEED_BIT | 26};
#define NSEEDS (sizeof default_seeds / sizeof default_seeds[0])

static int usage(void)
{
    fprintf(stderr, "usage: fuzz_runner [--ops N] [--seed S | --seeds K [--first-seed F]] "
                    "[--check-every C] [--trace-from T] [--announce] [--no-hook-busy] [--verbose]\n"
                    "       fuzz_runner --replay FILE [--verbose]\n");
    return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (!*s || *end)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* The libFuzzer front end, on a file: same config choice and check period. */
/* Every walk must have run in a model-variant seed of 10,000 ops or more:
 * the fixed queries (driver_query.c) are made to reach each of them within
 * a few thousand ops. The twin variant runs no queries of the model driver,
 * and the cells variant no groups, so neither is held to it. A walk that
 * never ran is reported as a divergence at the last step. */
static void check_walks(const fz_config_t *cfg, fz_result_t *res)
{
    static const char *const walk_names[6] = {"table", "root", "driven", "group pool",
                                              "group members", "owned"};
    for (int w = 0; w < 6 && !cfg->twin && !cfg->cells && !res->diverged && res->ops >= 10000; w++)
        if (!res->walks[w]) {
            res->diverged = true;
            res->step = res->ops;
            snprintf(res->msg, sizeof res->msg, "the %s walk never ran", walk_names[w]);
        }
}

static int replay_bytes(const char *path, fz_result_t *res, fz_config_t *cfg)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    memset(res, 0, sizeof *res);
    fz_config_variant(n ? buf[0] : 0, cfg);
    if (n >= 1) {
        cfg->check_every = 64;
        fz_source_t src;
        fz_source_bytes(&src, buf + 1, n - 1);
        fz_run(cfg, &src, UINT64_MAX, res);
    }
    free(buf);
    return 0;
}

static int replay(const char *list, int verbose, bool hook_busy)
{
    FILE *f = fopen(list, "r");
    if (!f) {
        fprintf(stderr, "fuzz: cannot open %s\n", list);
        return 2;
    }
    /* Paths of `bytes` lines are relative to the list's folder. */
    char dir[1024];
    const char *slash = strrchr(list, '/');
    size_t dlen = slash ? (size_t)(slash - list) + 1 : 0;
    if (dlen >= sizeof dir)
        dlen = 0;
    memcpy(dir, list, dlen);
    dir[dlen] = 0;

    char line[1024];
    unsigned lineno = 0, cases = 0, bad = 0;
    int divergences = 0;
    uint64_t total = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *tok[8];
        int nt = 0;
        for (char *t = strtok(line, " \t\r\n"); t && nt < 8; t = strtok(NULL, " \t\r\n"))
            tok[nt++] = t;
        if (nt == 0)
            continue;
        fz_config_t cfg;
        fz_result_t res;
        char what[1200];
        if (!strcmp(tok[0], "seed")) {
            uint64_t seed, ops, ce = 0;
            int ok = nt >= 4 && !parse_u64(tok[1], &seed) && !strcmp(tok[2], "ops") &&
                     !parse_u64(tok[3], &ops);
            for (int i = 4; ok && i < nt; i++) {
                if (!strcmp(tok[i], "check-every") && i + 1 < nt &&
                         !parse_u64(tok[i + 1], &ce) && ce > 0)
                    i++;
                else
                    ok = 0;
            }
            if (!ok) {
                fprintf(stderr, "fuzz: %s:%u: bad line\n", list, lineno);
                bad++;
                continue;
            }
            fz_config_seed(seed, &cfg);
            if (ce)
                cfg.check_every = (uint32_t)ce;
            cfg.hook_busy = hook_busy;
            fz_source_t src;
            fz_source_seed(&src, seed);
            fz_run(&cfg, &src, ops, &res);
            snprintf(what, sizeof what, "seed %" PRIu64 " ops %" PRIu64, seed, ops);
        } else if (!strcmp(tok[0], "bytes") && nt == 2) {
            char path[2048];
            snprintf(path, sizeof path, "%s%s", tok[1][0] == '/' ? "" : dir, tok[1]);
            if (replay_bytes(path, &res, &cfg)) {
                bad++;
                continue;
            }
            snprintf(what, sizeof what, "bytes %s", tok[1]);
        } else {
            fprintf(stderr, "fuzz: %s:%u: bad line\n", list, lineno);
            bad++;
            continue;
        }
        cases++;
        total += res.ops;
        if (verbose)
            printf("fuzz: replay %s (%s): %" PRIu64 " ops\n", what, cfg.name, res.ops);
        check_walks(&cfg, &res);
        if (res.diverged) {
            divergences++;
            printf("fuzz: DIVERGENCE replaying %s (%s:%u, config %s) at step %" PRIu64 ": %s\n",
                   what, list, lineno, cfg.name, res.step, res.msg);
        }
    }
    fclose(f);
    printf("fuzz: replayed %u cases (%" PRIu64 " ops), %d divergences%s\n", cases, total,
           divergences, bad ? ", unreadable lines" : "");
    return divergences || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    uint64_t ops = 1000000, seed = 0, check_every = 0, trace_from = 0, nrange = 0, first = 1;
    int have_seed = 0, verbose = 0, announce = 0;
    bool hook_busy = true;
    const char *replay_list = NULL;
    for (int i = 1; i < argc; i++) {
        uint64_t *dst = NULL;
        if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--announce")) {
            announce = 1;
            continue;
        }
        if (!strcmp(argv[i], "--no-hook-busy")) {
            hook_busy = false;
            continue;
        }
        if (!strcmp(argv[i], "--ops"))
            dst = &ops;
        else if (!strcmp(argv[i], "--seed")) {
            dst = &seed;
            have_seed = 1;
        } else if (!strcmp(argv[i], "--seeds"))
            dst = &nrange;
        else if (!strcmp(argv[i], "--first-seed"))
            dst = &first;
        else if (!strcmp(argv[i], "--replay")) {
            if (++i >= argc)
                return usage();
            replay_list = argv[i];
            continue;
        } else if (!strcmp(argv[i], "--check-every"))
            dst = &check_every;
        else if (!strcmp(argv[i], "--trace-from"))
            dst = &trace_from;
        else
            return usage();
        if (++i >= argc || parse_u64(argv[i], dst))
            return usage();
    }

    /* Line by line, so that what was printed survives a crash. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (replay_list)
        return replay(replay_list, verbose, hook_busy);
    if (have_seed && nrange)
        return usage();

    const uint64_t *seeds = have_seed ? &seed : default_seeds;
    size_t nseeds = have_seed ? 1 : nrange ? (size_t)nrange : NSEEDS;
    uint64_t total = 0;
    int divergences = 0;
    for (size_t i = 0; i < nseeds; i++) {
        uint64_t this_seed = nrange ? first + i : seeds[i];
        /* Split N evenly; the first seeds take the remainder. */
        uint64_t n = ops / nseeds + (i < ops % nseeds ? 1 : 0);
        fz_config_t cfg;
        fz_config_seed(this_seed, &cfg);
        /* A twin op is a batch of up to 15 calls and a whole comparison of
         * two worlds: a twin seed runs an eighth of its share (at least
         * one op), so it costs about what a model seed does. */
        if (cfg.twin && !have_seed)
            n = n / 8 + 1;
        if (check_every)
            cfg.check_every = (uint32_t)check_every;
        cfg.trace_from = trace_from;
        cfg.hook_busy = hook_busy;
        if (announce) {
            printf("fuzz: seed %" PRIu64 " (%s): fuzz_runner --seed %" PRIu64 " --ops %" PRIu64
                   "%s\n",
                   this_seed, cfg.name, this_seed, n, hook_busy ? "" : " --no-hook-busy");
            fflush(stdout);
        }
        fz_source_t src;
        fz_source_seed(&src, this_seed);
        fz_result_t res;
        fz_run(&cfg, &src, n, &res);
        total += res.ops;
        if (verbose)
            printf("fuzz: seed %" PRIu64 " (%s): %" PRIu64 " ops, %u alive, %u slots, %u retired, "
                   "%" PRIu64 " refused as full, %" PRIu64 " tracked values made, %u tables\n",
                   this_seed, cfg.name, res.ops, res.alive, res.slots, res.retired, res.full,
                   res.hooks, res.tables);
        if (verbose)
            printf("fuzz:   %" PRIu64 " iterations, %" PRIu64 " chunks, %" PRIu64
                   " entities visited, %" PRIu64 " ops inside loops, %" PRIu64
                   " changes queued, %" PRIu64 " flushes, %" PRIu64 " staged ensures, %" PRIu64
                   " queries made, %" PRIu64 " refused, %" PRIu64 " gathered fields\n",
                   res.iterations, res.chunks, res.visited, res.loop_ops, res.queued, res.flushes,
                   res.staged_ensures, res.queries_made, res.queries_refused, res.gathered_chunks);
        if (verbose)
            printf("fuzz:   chunks per walk: %" PRIu64 " table, %" PRIu64 " root, %" PRIu64
                   " driven, %" PRIu64 " group pool, %" PRIu64 " group members, %" PRIu64
                   " owned\n",
                   res.walks[FZ_WALK_TABLES], res.walks[FZ_WALK_ROOT], res.walks[FZ_WALK_DRIVEN],
                   res.walks[FZ_WALK_POOL], res.walks[FZ_WALK_MEMBERS], res.walks[FZ_WALK_OWNED]);
        if (verbose)
            printf("fuzz:   from observers: %" PRIu64 " queries made, %" PRIu64
                   " freed, %" PRIu64 " deferral calls refused; %" PRIu64 " entities widened\n",
                   res.hook_queries, res.hook_frees, res.hook_defers, res.widened);
        if (verbose)
            printf("fuzz:   %" PRIu64 " prefabs, %" PRIu64 " children, %" PRIu64
                   " instances (+%" PRIu64 " in bulk, %" PRIu64 " deferred), %" PRIu64
                   " instances destroyed (+%" PRIu64 " deferred), %" PRIu64 " adopts, %" PRIu64
                   " detaches, %" PRIu64 " destroys refused as owned (%" PRIu64
                   " at a flush), %" PRIu64 " references remapped, %" PRIu64
                   " copies skipped at a flush, %u instance slots (%u retired)\n",
                   res.prefabs, res.children, res.instances, res.instances_n, res.inst_deferred,
                   res.inst_destroyed, res.inst_destroy_deferred, res.adopts, res.detaches,
                   res.owned, res.owned_at_flush, res.remaps, res.skipped_members, res.inst_slots,
                   res.inst_retired);
        if (verbose)
            printf("fuzz:   hierarchy: %" PRIu64 " links made, %" PRIu64 " names set, %" PRIu64
                   " links and %" PRIu64 " names copied by instantiation, %" PRIu64
                   " queued links dropped at a flush, %" PRIu64 " cascading destroys (%" PRIu64
                   " descendants), %" PRIu64 " by-depth chunks\n",
                   res.links, res.names, res.inst_links, res.inst_names, res.links_dropped,
                   res.cascades, res.cascaded, res.cascade_chunks);
        check_walks(&cfg, &res);
        if (res.diverged) {
            divergences++;
            printf("fuzz: DIVERGENCE seed %" PRIu64 " (config %s) at step %" PRIu64 ": %s\n",
                   this_seed, cfg.name, res.step, res.msg);
            printf("fuzz:   reproduce: fuzz_runner --seed %" PRIu64 " --ops %" PRIu64 "\n", this_seed,
                   res.step + 1);
        }
    }
    printf("fuzz: %" PRIu64 " ops, %zu seeds, %d divergences\n", total, nseeds, divergences);
    return divergences ? 1 : 0;
}
