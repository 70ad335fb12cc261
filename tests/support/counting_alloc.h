/*
 * The one test allocator (a tes_allocator_t), shared by the unit tests, the
 * API misuse tests, the snapshot tests and the allocation-failure sweep, so
 * that every test counting or failing allocations trusts the same
 * bookkeeping.
 *
 * It counts every alloc and realloc call, fails exactly the fail_at-th one
 * (1-based; 0 = never), and keeps its own tally of live bytes, live blocks
 * and the peak of live bytes, independent of the library's accounting.
 * Each block carries a 16-byte header with its size, so a free or realloc
 * that passes the wrong size (or a pointer the allocator never returned) is
 * counted instead of silently trusted. The header keeps the 16-byte
 * alignment the library requires.
 *
 * Options a test sets after ca_init: fail_all (every call fails while it is
 * set), max_block (any block above it is refused, as a real allocator
 * refuses a huge request) and poison (a realloc always moves the block, and
 * freed or moved-from bytes are overwritten with 0xA5, so a pointer kept
 * across a growth reads nonsense even without a sanitizer).
 */
#ifndef TES_TEST_COUNTING_ALLOC_H
#define TES_TEST_COUNTING_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

typedef struct ca_state {
    uint64_t calls;       /* alloc + realloc calls so far, failed ones included */
    uint64_t fail_at;     /* the call to fail, 0 = none */
    uint64_t failures;    /* failures injected (fail_at, fail_all, max_block) */
    int64_t live_bytes;
    int64_t live_blocks;
    int64_t peak_bytes;   /* the most live_bytes ever held (a test may lower it) */
    uint64_t bad_sizes;   /* free/realloc with a size that does not match */
    uint64_t bad_ptrs;    /* free/realloc of something that is not a live block */
    bool fail_all;
    size_t max_block;     /* 0 = no limit */
    bool poison;
} ca_state_t;

void ca_init(ca_state_t *s, uint64_t fail_at);
/* The allocator to put in tes_world_desc_t; user = s. */
tes_allocator_t ca_allocator(ca_state_t *s);
/* Fails the k-th call from now (k >= 1); k = 0 disarms. */
void ca_fail_in(ca_state_t *s, uint64_t k);

#endif
