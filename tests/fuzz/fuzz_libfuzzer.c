/*
 * libFuzzer front end of the differential fuzzer: the first input byte picks
 * the world configuration, the rest is decoded by the shared driver into
 * ops until it runs out. A divergence aborts, so libFuzzer saves the input;
 * full-state checks run more often than in fuzz_runner because inputs are
 * short.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fz_config_t cfg;
    fz_config_variant(data[0], &cfg);
    cfg.check_every = 64;
    fz_source_t src;
    fz_source_bytes(&src, data + 1, size - 1);
    fz_result_t res;
    fz_run(&cfg, &src, UINT64_MAX, &res);
    if (res.diverged) {
        fprintf(stderr, "fuzz: DIVERGENCE (config %s) at step %llu: %s\n", cfg.name,
                (unsigned long long)res.step, res.msg);
        abort();
    }
    return 0;
}
