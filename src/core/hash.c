/*
 * Open addressing with linear probing; see hash.h for why removal is rare. Probing starts at a slot picked by mixing the key again, so that
 * keys that are small integers (edge keys are component ids) spread out.
 */
#include "core/hash.h"

#include "core/assert.h"
#include "core/checked.h"

#include <string.h>

static uint32_t slot_of(uint64_t key, uint32_t cap)
{
    return (uint32_t)(tes__hash_u64(key) & (cap - 1));
}

void tes__map_fini(tes__map_t *m, tes__alloc_t *a)
{
    tes__free(a, m->entries, (size_t)m->cap * sizeof *m->entries);
    memset(m, 0, sizeof *m);
}

static void map_place(tes__map_entry_t *entries, uint32_t cap, uint64_t key, uint64_t value)
{
    uint32_t i = slot_of(key, cap);
    while (entries[i].key)
        i = (i + 1) & (cap - 1);
    entries[i].key = key;
    entries[i].value = value;
}

int tes__map_reserve(tes__map_t *m, tes__alloc_t *a, uint32_t extra)
{
    uint64_t need = (uint64_t)m->count + extra;
    if (need * 2 <= m->cap)
        return TES_OK;
    uint64_t cap = m->cap ? m->cap : 8;
    while (cap < need * 2)
        cap *= 2;
    size_t bytes;
    if (cap > UINT32_MAX / 2 + 1 || !tes__size_mul(&bytes, (size_t)cap, sizeof(tes__map_entry_t)))
        return TES_ERR_NOMEM;
    tes__map_entry_t *entries = tes__calloc(a, bytes);
    if (!entries)
        return TES_ERR_NOMEM;
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->entries[i].key)
            map_place(entries, (uint32_t)cap, m->entries[i].key, m->entries[i].value);
    tes__free(a, m->entries, (size_t)m->cap * sizeof *m->entries);
    m->entries = entries;
    m->cap = (uint32_t)cap;
    return TES_OK;
}

void tes__map_insert(tes__map_t *m, uint64_t key, uint64_t value)
{
    /* 0 marks an empty entry. Every key is a hash (the hashes never return
     * 0), an index + 1, a handle or a component id with a flag, so a 0 here
     * is a bug in the caller, not bad input. */
    tes__assert(key != 0 && m->count < m->cap);
    map_place(m->entries, m->cap, key, value);
    m->count++;
}

bool tes__map_next(const tes__map_t *m, uint64_t key, uint32_t *cursor, uint64_t *value)
{
    if (!m->cap)
        return false;
    /* The cursor holds the number of probes already made, plus one. */
    uint32_t i = (slot_of(key, m->cap) + *cursor) & (m->cap - 1);
    for (uint32_t probes = *cursor; probes < m->cap; probes++) {
        const tes__map_entry_t *e = &m->entries[i];
        if (!e->key)
            return false;
        if (e->key == key) {
            *cursor = probes + 1;
            *value = e->value;
            return true;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return false;
}

uint64_t tes__hash_bytes(const void *data, size_t size)
{
    /* FNV-1a, then a final mix for better low bits. */
    const unsigned char *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return tes__hash_u64(h);
}

bool tes__map_remove(tes__map_t *m, uint64_t key, uint64_t value)
{
    if (!m->cap)
        return false;
    uint32_t mask = m->cap - 1;
    uint32_t i = slot_of(key, m->cap);
    while (m->entries[i].key && !(m->entries[i].key == key && m->entries[i].value == value))
        i = (i + 1) & mask;
    if (!m->entries[i].key)
        return false;
    /* Shift later entries of the cluster back when their home slot allows. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & mask; m->entries[j].key; j = (j + 1) & mask) {
        uint32_t home = slot_of(m->entries[j].key, m->cap);
        /* The entry at j may move to the hole if its home is not inside
         * the cyclic range (hole, j]. */
        bool home_in_range = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!home_in_range) {
            m->entries[hole] = m->entries[j];
            hole = j;
        }
    }
    m->entries[hole].key = 0;
    m->entries[hole].value = 0;
    m->count--;
    return true;
}
