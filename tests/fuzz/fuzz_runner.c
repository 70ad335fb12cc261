/*
 * fuzz_runner: the differential fuzzer as a deterministic test. It spreads
 * --ops N operations over a fixed list of seeds; each seed picks one of the
 * world configurations (seed % FZ_VARIANTS), so every run covers default
 * limits, generation retirement and a tiny id space. Fixed seeds keep ctest
 * reproducible; libFuzzer (fuzz_libfuzzer.c) is the open-ended search.
 *
 *   fuzz_runner [--ops N] [--seed S] [--check-every C] [--trace-from T] [--avoid-known]
 *               [--verbose]
 *
 * --avoid-known steers clear of the open library bugs listed in
 * driver_lifecycle.c, to look for other divergences while they are open.
 * With --seed, all N ops run on that one seed, which is how a reported
 * divergence is replayed; --trace-from T then prints every op (nested ops
 * indented) from step T on, to stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver.h"

static const uint64_t default_seeds[] = {1, 2, 3, 4, 5, 6, 7, 8};
#define NSEEDS (sizeof default_seeds / sizeof default_seeds[0])

static int usage(void)
{
    fprintf(stderr, "usage: fuzz_runner [--ops N] [--seed S] [--check-every C] [--trace-from T] "
                    "[--avoid-known] [--verbose]\n");
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

int main(int argc, char **argv)
{
    uint64_t ops = 1000000, seed = 0, check_every = 0, trace_from = 0;
    int have_seed = 0, verbose = 0, avoid_known = 0;
    for (int i = 1; i < argc; i++) {
        uint64_t *dst = NULL;
        if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--avoid-known")) {
            avoid_known = 1;
            continue;
        }
        if (!strcmp(argv[i], "--ops"))
            dst = &ops;
        else if (!strcmp(argv[i], "--seed")) {
            dst = &seed;
            have_seed = 1;
        } else if (!strcmp(argv[i], "--check-every"))
            dst = &check_every;
        else if (!strcmp(argv[i], "--trace-from"))
            dst = &trace_from;
        else
            return usage();
        if (++i >= argc || parse_u64(argv[i], dst))
            return usage();
    }

    const uint64_t *seeds = have_seed ? &seed : default_seeds;
    size_t nseeds = have_seed ? 1 : NSEEDS;
    uint64_t total = 0;
    int divergences = 0;
    for (size_t i = 0; i < nseeds; i++) {
        /* Split N evenly; the first seeds take the remainder. */
        uint64_t n = ops / nseeds + (i < ops % nseeds ? 1 : 0);
        fz_config_t cfg;
        fz_config_variant((uint32_t)(seeds[i] % FZ_VARIANTS), &cfg);
        if (check_every)
            cfg.check_every = (uint32_t)check_every;
        cfg.trace_from = trace_from;
        cfg.avoid_known = avoid_known != 0;
        fz_source_t src;
        fz_source_seed(&src, seeds[i]);
        fz_result_t res;
        fz_run(&cfg, &src, n, &res);
        total += res.ops;
        if (verbose)
            printf("fuzz: seed %" PRIu64 " (%s): %" PRIu64 " ops, %u alive, %u slots, %u retired, "
                   "%" PRIu64 " refused as full, %" PRIu64 " tracked values made\n",
                   seeds[i], cfg.name, res.ops, res.alive, res.slots, res.retired, res.full,
                   res.hooks);
        if (verbose)
            printf("fuzz:   %" PRIu64 " iterations, %" PRIu64 " chunks, %" PRIu64
                   " entities visited, %" PRIu64 " ops inside loops, %" PRIu64
                   " changes queued, %" PRIu64 " flushes, %" PRIu64 " staged ensures, %" PRIu64
                   " queries made, %" PRIu64 " refused\n",
                   res.iterations, res.chunks, res.visited, res.loop_ops, res.queued, res.flushes,
                   res.staged_ensures, res.queries_made, res.queries_refused);
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
        if (res.diverged) {
            divergences++;
            printf("fuzz: DIVERGENCE seed %" PRIu64 " (config %s) at step %" PRIu64 ": %s\n",
                   seeds[i], cfg.name, res.step, res.msg);
            printf("fuzz:   reproduce: fuzz_runner --seed %" PRIu64 " --ops %" PRIu64 "\n", seeds[i],
                   res.step + 1);
        }
    }
    printf("fuzz: %" PRIu64 " ops, %zu seeds, %d divergences\n", total, nseeds, divergences);
    return divergences ? 1 : 0;
}
