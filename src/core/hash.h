/*
 * An open-addressing multimap from nonzero 64-bit keys to 64-bit
 * values, plus the hash functions that make those keys.
 *
 * Tessera rarely forgets a key (component names, table types and graph
 * edges live as long as the world), so the map is built for lookups: linear
 * probing over a power-of-two array kept at most half full, with the rare
 * removal done by backward shifting (no tombstones). Keys are usually hashes, so the map is a
 * multimap: lookups walk every entry with an equal key and the caller
 * compares the real thing (a name, a type) behind each value.
 *
 * Insertion is split into reserve (may fail, changes nothing) and insert
 * (cannot fail), which lets callers keep the world unchanged on NOMEM.
 */
#ifndef TES_CORE_HASH_H
#define TES_CORE_HASH_H

#include "core/alloc.h"

typedef struct tes__map_entry {
    uint64_t key; /* 0 = empty */
    uint64_t value;
} tes__map_entry_t;

typedef struct tes__map {
    tes__map_entry_t *entries;
    uint32_t cap; /* 0 or a power of two */
    uint32_t count;
} tes__map_t;

void tes__map_fini(tes__map_t *m, tes__alloc_t *a);
/* Makes room for `extra` more inserts. TES_OK or TES_ERR_NOMEM (unchanged). */
int tes__map_reserve(tes__map_t *m, tes__alloc_t *a, uint32_t extra);
/* Inserts (key, value); key must be nonzero; room must have been reserved. */
void tes__map_insert(tes__map_t *m, uint64_t key, uint64_t value);
/* Removes one entry (key, value); false if there is none. Backward-shift
 * deletion keeps probe sequences intact without tombstones. */
bool tes__map_remove(tes__map_t *m, uint64_t key, uint64_t value);
/* Walks the values stored under key: start with *cursor = 0 and call until it
 * returns false. */
bool tes__map_next(const tes__map_t *m, uint64_t key, uint32_t *cursor, uint64_t *value);

/* The value of a key stored once (edges, ids): the common lookup, inline. */
static inline bool tes__map_get(const tes__map_t *m, uint64_t key, uint64_t *value);

/* Hashes; never return 0, so the result can be used as a map key directly. */
uint64_t tes__hash_bytes(const void *data, size_t size);
static inline uint64_t tes__hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x ? x : 1;
}

static inline bool tes__map_get(const tes__map_t *m, uint64_t key, uint64_t *value)
{
    if (!m->cap)
        return false;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = (uint32_t)tes__hash_u64(key) & mask;; i = (i + 1) & mask) {
        const tes__map_entry_t *e = &m->entries[i];
        if (e->key == key) {
            *value = e->value;
            return true;
        }
        if (!e->key)
            return false;
    }
}

#endif
