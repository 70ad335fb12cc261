/*
 * Gathered chunks (see gather.h). Tuned for the W8 shape: a small driving
 * pool whose entities sit scattered in a big store. Per entity the cost is
 * one lookup (needed to match anyway) plus a copy in and, for written
 * terms, a copy out; per chunk of up to gather_k entities, one call into
 * the user's loop instead of gather_k.
 */
#include "query/gather.h"

#include <string.h>

#include "query/filter.h"

/* Copies (or compares) one value. Components are small and their sizes
 * few, so the common sizes get a fixed-size copy the compiler inlines
 * instead of a libc call per value. */
static inline void copy_value(void *dst, const void *src, uint32_t size)
{
    switch (size) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 12: memcpy(dst, src, 12); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, size); break;
    }
}

static inline bool same_value(const void *a, const void *b, uint32_t size)
{
    switch (size) {
    case 4: return memcmp(a, b, 4) == 0;
    case 8: return memcmp(a, b, 8) == 0;
    case 12: return memcmp(a, b, 12) == 0;
    case 16: return memcmp(a, b, 16) == 0;
    default: return memcmp(a, b, size) == 0;
    }
}

static uint32_t round8(uint64_t n) { return (uint32_t)((n + 7u) & ~(uint64_t)7u); }

/* Bytes the layout takes for k entities. */
static uint64_t layout_bytes(const tes_query_t *q, uint32_t k)
{
    uint64_t bytes = 0;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        const tes__term_info_t *t = &q->terms[q->sparse_terms[s]];
        if (t->data)
            bytes += 2 * round8((uint64_t)k * t->info->size) + round8((uint64_t)k * 4u);
    }
    return bytes;
}

void tes__gather_plan(tes_query_t *q)
{
    q->gather_k = 0;
    if (q->mode != TES__QUERY_DRIVEN || q->table_data)
        return;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        const tes__term_info_t *t = &q->terms[q->sparse_terms[s]];
        if (t->data && (t->info->hooks.copy || t->info->hooks.move || t->info->align > 8 ||
                        t->info->stable))
            return;
    }
    uint32_t k = 64;
    while (k >= 2 * TES__GATHER_MIN && layout_bytes(q, k) > TES_ITER_GATHER_BYTES)
        k--;
    if (k < 2 * TES__GATHER_MIN)
        return;
    uint32_t off = 0;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        if (!t->data)
            continue;
        q->gather_off[i] = off;
        off += 2 * round8((uint64_t)k * t->info->size) + round8((uint64_t)k * 4u);
    }
    q->gather_k = k;
}

static unsigned char *values_of(tes_iter_t *it, int32_t i)
{
    return (unsigned char *)it->priv_gather + it->priv_query->gather_off[i];
}

/* The values as gathered, to tell what the loop changed. */
static unsigned char *originals_of(tes_iter_t *it, int32_t i)
{
    const tes_query_t *q = it->priv_query;
    return values_of(it, i) + round8((uint64_t)q->gather_k * q->terms[i].info->size);
}

static uint32_t *positions_of(tes_iter_t *it, int32_t i)
{
    const tes_query_t *q = it->priv_query;
    return (uint32_t *)(values_of(it, i) + 2 * round8((uint64_t)q->gather_k * q->terms[i].info->size));
}

uint32_t tes__gather_chunk(tes_iter_t *it, const tes_entity_t *entities, uint32_t avail,
                           uint32_t driver_pos, const uint32_t *pos0, uint32_t run, uint8_t hide)
{
    const tes_query_t *q = it->priv_query;
    int32_t d = it->priv_driver; /* -1 for a group's members */
    const struct tes__filters *f = q->filters;
    uint32_t limit = q->gather_k < avail ? q->gather_k : avail;
    if (d >= 0 && q->terms[d].data) { /* the driver's field is a slice of one data page */
        const tes__sparse_store_t *driver = &q->terms[d].info->store;
        uint32_t page_end = ((driver_pos >> driver->page_shift) + 1) << driver->page_shift;
        if (page_end - driver_pos < limit)
            limit = page_end - driver_pos;
    }
    if (limit <= run)
        return 0;
    uint32_t *slots[TES_MAX_TERMS]; /* per data term: its positions */
    int32_t data_terms[TES_MAX_TERMS], ndata = 0;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        if (!q->terms[i].data)
            continue;
        data_terms[ndata++] = i;
        slots[i] = positions_of(it, i);
        slots[i][0] = pos0[i];
    }
    /* Consecutive driver entities that match, with the same optional
     * terms present as the first. */
    uint32_t k = 1, pos[TES_MAX_TERMS];
    bool follows[TES_MAX_TERMS]; /* group walk: members still follow pos0 */
    for (int32_t j = 0; j < ndata; j++)
        follows[data_terms[j]] = true;
    for (; k < limit; k++) {
        tes_entity_t e = entities[k];
        if (d < 0) {
            /* A group member: it matches, only its values are looked up;
             * where a store holds it right after the first member's
             * position (members keep the order they joined in), one compare
             * against the packed array replaces the lookup. */
            for (int32_t j = 0; j < ndata; j++) {
                int32_t i = data_terms[j];
                const tes__sparse_set_t *st = &q->terms[i].info->store.set;
                uint32_t next = pos0[i] + k;
                if (follows[i] && pos0[i] != TES_NULL_INDEX && next < st->count && st->packed[next] == e) {
                    pos[i] = next;
                } else { /* scattered: stop guessing for this chunk */
                    follows[i] = false;
                    pos[i] = tes__sparse_set_find(st, e);
                }
            }
        } else if (tes__sparse_is_tombstone(e) || (hide && tes__filters_hide(f, hide, e)) ||
                   !tes__query_match_sparse(q, e, d, driver_pos + k, pos)) {
            break;
        }
        int32_t j = 0;
        for (; j < ndata; j++) {
            int32_t i = data_terms[j];
            if ((pos[i] == TES_NULL_INDEX) != (pos0[i] == TES_NULL_INDEX))
                break;
            slots[i][k] = pos[i];
        }
        if (j < ndata)
            break;
    }
    if (k <= run)
        return 0;
    /* Fields: a slice where the values are contiguous, else gathered. */
    uint32_t mask = 0;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        it->priv_fields[i] = NULL;
        if (!t->data || pos0[i] == TES_NULL_INDEX)
            continue;
        const tes__sparse_store_t *st = &t->info->store;
        const uint32_t *ps = positions_of(it, i);
        uint32_t j = 1;
        while (j < k && ps[j] == ps[0] + j && ((ps[0] + j) >> st->page_shift) == (ps[0] >> st->page_shift))
            j++;
        if (j == k) {
            it->priv_fields[i] = tes__sparse_store_at(st, ps[0]);
            continue;
        }
        unsigned char *values = values_of(it, i);
        for (j = 0; j < k; j++)
            copy_value(values + (size_t)j * st->size, tes__sparse_store_at(st, ps[j]), st->size);
        it->priv_fields[i] = values;
        if (t->access != TES_IN) {
            memcpy(originals_of(it, i), values, (size_t)k * t->info->size);
            mask |= UINT32_C(1) << i;
        }
    }
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse) /* tags and NOT terms (no table data here) */
            it->priv_fields[i] = NULL;
    it->priv_gather_count = k;
    it->priv_gather_mask = mask;
    it->count = (int32_t)k;
    it->entities = entities;
    return k;
}

void tes__gather_flush(tes_iter_t *it)
{
    uint32_t mask = it->priv_gather_mask;
    if (!mask)
        return;
    it->priv_gather_mask = 0;
    const tes_query_t *q = it->priv_query;
    for (int32_t i = 0; i < q->term_count; i++) {
        if (!(mask & (UINT32_C(1) << i)))
            continue;
        const tes__sparse_store_t *st = &q->terms[i].info->store;
        const unsigned char *values = values_of(it, i), *originals = originals_of(it, i);
        const uint32_t *ps = positions_of(it, i);
        for (uint32_t j = 0; j < it->priv_gather_count; j++) {
            size_t at = (size_t)j * st->size;
            void *stored = tes__sparse_store_at(st, ps[j]);
            /* Only what the loop changed, and only where nothing else
             * (tes_get_mut) changed the stored value meanwhile. */
            if (!same_value(values + at, originals + at, st->size) &&
                same_value(stored, originals + at, st->size))
                copy_value(stored, values + at, st->size);
        }
    }
}
