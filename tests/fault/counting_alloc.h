/*
 * A counting tes_allocator_t for the allocation-failure sweep. It counts
 * every alloc and realloc call, fails exactly the fail_at-th one (1-based;
 * 0 = never), and keeps its own tally of live bytes and blocks, independent
 * of the library's accounting. Each block carries a 16-byte header with its
 * size, so a free or realloc that passes the wrong size (or a pointer the
 * allocator never returned) is detected instead of silently trusted. The
 * header keeps the 16-byte alignment the library requires.
 */
#ifndef TES_FAULT_COUNTING_ALLOC_H
#define TES_FAULT_COUNTING_ALLOC_H

#include <stdint.h>

#include "tessera.h"

typedef struct ca_state {
    uint64_t calls;       /* alloc + realloc calls so far, failed ones included */
    uint64_t fail_at;     /* the call to fail, 0 = none */
    uint64_t failures;    /* failures injected */
    int64_t live_bytes;
    int64_t live_blocks;
    uint64_t bad_sizes;   /* free/realloc with a size that does not match */
    uint64_t bad_ptrs;    /* free/realloc of something that is not a live block */
} ca_state_t;

void ca_init(ca_state_t *s, uint64_t fail_at);
/* The allocator to put in tes_world_desc_t; user = s. */
tes_allocator_t ca_allocator(ca_state_t *s);

#endif
