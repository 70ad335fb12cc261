/*
 * Gathered chunks (see gather.h). Tuned for the W8 shape: a small driving
 * pool whose entities sit scattered in a big store. The work per entity is
 * what any view that hands out plain arrays must do — one sparse lookup
 * per other term (needed to match anyway), a copy in and, for written
 * terms, a compare and a copy out — and the code is arranged so that
 * little else runs: the chunk is built term by term (one tight loop per
 * term with the term's store hoisted out of it, which also prefetches the
 * next chunk's sparse entries and this chunk's scattered values, so that
 * their cache misses overlap), values are copied with
 * fixed-size copies chosen once per term, the copy in writes the values
 * and their originals in one pass, and the write-back is one pass per
 * written term. What remains is memory traffic: bench "W8 sparse view vs
 * gather floor" runs plain C doing the same on the same layout.
 */
#include "query/gather.h"

#include <string.h>

#include "query/filter.h"

static uint32_t round8(uint64_t n) { return (uint32_t)((n + 7u) & ~(uint64_t)7u); }

/* Whether term i gets a buffer area in a walk driven by term d (-1: a
 * group walk): every sparse data term but the driver, whose field is
 * always a slice of its own store. */
static bool gathers(const tes_query_t *q, int32_t i, int32_t d)
{
    return q->terms[i].sparse && q->terms[i].data && i != d;
}

/* Entities per gathered chunk in a walk driven by d (0: too few fit): per
 * entity a term takes its value, and a written term also the original and
 * the address the write-back needs; each area may round up by 7 bytes. */
static uint32_t layout_cap(const tes_query_t *q, int32_t d)
{
    uint64_t per_entity = 0, slack = 0;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        const tes__term_info_t *t = &q->terms[q->sparse_terms[s]];
        if (!gathers(q, q->sparse_terms[s], d))
            continue;
        per_entity += t->access == TES_IN ? t->info->size : 2u * (uint64_t)t->info->size + sizeof(void *);
        slack += t->access == TES_IN ? 7u : 14u;
    }
    if (slack >= TES_ITER_GATHER_BYTES)
        return 0;
    uint64_t k = per_entity ? (TES_ITER_GATHER_BYTES - slack) / per_entity : TES__GATHER_MAX;
    if (k > TES__GATHER_MAX)
        k = TES__GATHER_MAX;
    return k < 2 * TES__GATHER_MIN ? 0 : (uint32_t)k;
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
    /* Per possible driver, and for the group walk (which gathers every
     * data term: the most any walk needs, so 0 there means never). */
    q->gather_k = layout_cap(q, -1);
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t d = q->sparse_terms[s];
        q->gather_cap[d] = q->gather_k ? layout_cap(q, d) : 0;
        q->gather_and[d] = false;
        for (int32_t r = 0; r < q->sparse_count; r++)
            q->gather_and[d] |= q->sparse_terms[r] != d && q->terms[q->sparse_terms[r]].oper == TES_AND;
    }
}

/* The buffer areas of a walk driven by d with room for cap entities per
 * term: per gathered term its values, and for a written term their
 * originals and the addresses they came from (NULL for TES_IN terms).
 * Recomputed by the write-back from the same inputs, so the iterator keeps
 * nothing but the buffer. */
typedef struct areas {
    unsigned char *values[TES_MAX_TERMS];
    unsigned char *originals[TES_MAX_TERMS];
    unsigned char **sources[TES_MAX_TERMS];
} areas_t;

static void layout(tes_iter_t *it, int32_t d, uint32_t cap, areas_t *a)
{
    const tes_query_t *q = it->priv_query;
    unsigned char *at = (unsigned char *)it->priv_gather;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        if (!gathers(q, i, d))
            continue;
        const tes__term_info_t *t = &q->terms[i];
        uint32_t bytes = round8((uint64_t)cap * t->info->size);
        a->values[i] = at;
        at += bytes;
        a->originals[i] = NULL;
        a->sources[i] = NULL;
        if (t->access != TES_IN) {
            a->originals[i] = at;
            at += bytes;
            a->sources[i] = (unsigned char **)(void *)at;
            at += (size_t)cap * sizeof(void *);
        }
    }
}

/*
 * Lookups, one term at a time over entities[from..limit): each returns the
 * length of the prefix that keeps the chunk's shape (the term present, or
 * absent, as it is for the first entity) and stores the positions into at.
 */

/* How far ahead lookup_present prefetches sparse entries: a whole chunk. */
#define TES__GATHER_AHEAD TES__GATHER_MAX

#if defined(__GNUC__) || defined(__clang__)
/* A hint that addr will be read soon; no effect on meaning. */
#define prefetch_r(addr) __builtin_prefetch((const void *)(addr), 0, 3)
#else
#define prefetch_r(addr) ((void)(addr))
#endif

/* An AND term: present.
 * W8's matches sit scattered in the looked-up store, so each lookup and
 * each value copied in may miss the cache. The loop keeps those misses in
 * flight instead of waiting on them one chunk at a time:
 * - it prefetches the sparse entry of the entity TES__GATHER_AHEAD
 *   positions on in the walk's packed array (entities[k] for k < avail may
 *   be read: the rest of the run, which the next chunk looks up), so the
 *   next chunk's entries arrive while this chunk is copied and run;
 * - for a gathered term (values set) it prefetches the value of each
 *   entity it finds, which copy_in reads after the loop, unless the step
 *   from the previous position repeats: values at a steady stride are
 *   already fetched ahead by the processor, and on W8's layout (every 10th
 *   entity) the prefetches would cost more instructions than they save.
 * Only hints: an entity ahead that is not in the set reads the shared
 * empty page, one past the last page is skipped, and a found entry's
 * position is live, so its data page exists. Entries are read through the
 * biased page bases (sparse_set.h), which leaves registers for the
 * prefetches. Measured distances: 48 to 96 entities ahead gain alike, 16
 * and 32 gain less or lose. */
static tes__noinline uint32_t lookup_present(const tes__sparse_set_t *set, const tes__sparse_store_t *values,
                                             const tes_entity_t *entities, uint32_t from, uint32_t limit,
                                             uint32_t avail, uint32_t *at)
{
    /* Locals: the stores to at[] could alias the fields they come from.
     * last and step: the previous position found, and the step to it. */
    const uintptr_t *bases = set->bases;
    uint32_t page_count = set->page_count;
    uint32_t ahead_end = avail > TES__GATHER_AHEAD ? avail - TES__GATHER_AHEAD : 0;
    const uintptr_t *value_bases = values ? values->bases : NULL;
    uint32_t value_shift = values ? values->page_shift : 0, value_size = values ? values->size : 0;
    uint32_t k = from, last = from && from < limit ? at[from - 1] : 0, step = 0;
    for (; k < limit; k++) {
        if (k < ahead_end) {
            uint32_t ahead = tes_entity_index(entities[k + TES__GATHER_AHEAD]);
            if ((ahead >> TES__SPARSE_PAGE_BITS) < page_count)
                prefetch_r(tes__sparse_entry_at(bases, ahead));
        }
        tes_entity_t e = entities[k];
        uint32_t index = tes_entity_index(e);
        if ((index >> TES__SPARSE_PAGE_BITS) >= page_count)
            break;
        uint64_t entry = *tes__sparse_entry_at(bases, index);
        if (((e & ~(uint64_t)TES_NULL_INDEX) ^ entry) >= TES_NULL_INDEX)
            break;
        uint32_t pos = (uint32_t)entry;
        at[k] = pos;
        if (value_bases && pos - last != step)
            prefetch_r(tes__sparse_value_at(value_bases, value_shift, value_size, pos));
        step = pos - last;
        last = pos;
    }
    return k;
}

/* Presence as `present` says (NOT terms, and OPTIONAL ones). */
static uint32_t lookup_as(const tes__sparse_set_t *set, const tes_entity_t *entities,
                          uint32_t from, uint32_t limit, bool present, uint32_t *at)
{
    uint32_t k = from;
    for (; k < limit; k++) {
        uint32_t p = tes__sparse_set_find(set, entities[k]);
        if ((p != TES_NULL_INDEX) != present)
            break;
        at[k] = p;
    }
    return k;
}

/* Group members sit in a store in the order they joined more often than
 * not: how many of entities[from..limit) follow the first one's position
 * pos0 in the packed array (one compare each, a sequential read), stopping
 * at the end of the data page. The positions go to at, except when all of
 * them follow (the field is then a slice and needs none). */
static uint32_t follow(const tes__sparse_store_t *st, const tes_entity_t *entities, uint32_t from,
                       uint32_t limit, uint32_t pos0, uint32_t *at)
{
    uint64_t end = st->set.count;
    if (st->size) {
        uint64_t page_end = ((uint64_t)(pos0 >> st->page_shift) + 1) << st->page_shift;
        if (page_end < end)
            end = page_end;
    }
    uint32_t room = end - pos0 < limit ? (uint32_t)(end - pos0) : limit;
    const tes_entity_t *packed = st->set.packed + pos0;
    /* All of them, the common case: one block compare (libc's is wide). */
    if (room == limit && from < limit &&
        memcmp(packed + from, entities + from, (size_t)(limit - from) * sizeof *packed) == 0)
        return limit;
    uint32_t k = from;
    for (; k < room && packed[k] == entities[k]; k++)
        at[k] = pos0 + k;
    return k;
}

/* Where follow stops at a gap, the members usually go on in the store's
 * order with a few other entities between them (walking a group's member
 * set, the smallest pool of a query most of whose entities match; walking
 * a pool, its field is a slice already): each next position is found by
 * scanning at most FOLLOW_SKIP entries on from the previous one (a
 * sequential read, where a lookup would chase the sparse array). Returns
 * how many of entities[from..limit) were found so (positions into at); the
 * first miss ends the scan, and lookups take over from there. */
#define FOLLOW_SKIP 8u
static uint32_t follow_gaps(const tes__sparse_set_t *set, const tes_entity_t *entities,
                            uint32_t from, uint32_t limit, uint32_t *at)
{
    uint32_t k = from;
    for (; k < limit; k++) {
        uint32_t j = at[k - 1] + 1;
        uint32_t stop = set->count - j < FOLLOW_SKIP ? set->count : j + FOLLOW_SKIP;
        while (j < stop && set->packed[j] != entities[k])
            j++;
        if (j >= stop)
            break;
        at[k] = j;
    }
    return k;
}

/* True when positions at[0..k) are consecutive on one data page. */
static bool contiguous(const tes__sparse_store_t *st, const uint32_t *at, uint32_t k)
{
    uint32_t j = 1;
    while (j < k && at[j] == at[0] + j && ((at[0] + j) >> st->page_shift) == (at[0] >> st->page_shift))
        j++;
    return j == k;
}

/*
 * Copies. Components are small and their sizes few, so each loop is
 * instantiated for the common sizes with a constant size the compiler
 * turns into plain loads and stores (no libc call per value).
 */

/* Copies the values at positions at[0..k) into `values`; for a written
 * term also into `originals`, with their addresses into `sources`. */
static inline void copy_in_sized(const tes__sparse_store_t *st, const uint32_t *at, uint32_t k,
                                 unsigned char *values, unsigned char *originals,
                                 unsigned char **sources, uint32_t size)
{
    uint8_t *const *pages = st->pages;
    uint32_t shift = st->page_shift, mask = (UINT32_C(1) << shift) - 1;
    if (originals) {
        for (uint32_t j = 0; j < k; j++) {
            unsigned char *src = pages[at[j] >> shift] + (size_t)(at[j] & mask) * size;
            memcpy(values + (size_t)j * size, src, size);
            memcpy(originals + (size_t)j * size, src, size);
            sources[j] = src;
        }
    } else {
        for (uint32_t j = 0; j < k; j++)
            memcpy(values + (size_t)j * size, pages[at[j] >> shift] + (size_t)(at[j] & mask) * size, size);
    }
}

static void copy_in(const tes__sparse_store_t *st, const uint32_t *at, uint32_t k,
                    unsigned char *values, unsigned char *originals, unsigned char **sources)
{
    switch (st->size) {
    case 4: copy_in_sized(st, at, k, values, originals, sources, 4); break;
    case 8: copy_in_sized(st, at, k, values, originals, sources, 8); break;
    case 12: copy_in_sized(st, at, k, values, originals, sources, 12); break;
    case 16: copy_in_sized(st, at, k, values, originals, sources, 16); break;
    default: copy_in_sized(st, at, k, values, originals, sources, st->size); break;
    }
}

/* Each value the loop changed goes back, unless the stored value itself
 * changed meanwhile (a write through tes_get_mut), which is then kept. */
static inline void write_back_sized(unsigned char *const *sources, uint32_t k,
                                    const unsigned char *values, const unsigned char *originals,
                                    uint32_t size)
{
    for (uint32_t j = 0; j < k; j++) {
        const unsigned char *value = values + (size_t)j * size, *original = originals + (size_t)j * size;
        if (memcmp(value, original, size) != 0 && memcmp(sources[j], original, size) == 0)
            memcpy(sources[j], value, size);
    }
}

static void write_back(uint32_t size, unsigned char *const *sources, uint32_t k,
                       const unsigned char *values, const unsigned char *originals)
{
    switch (size) {
    case 4: write_back_sized(sources, k, values, originals, 4); break;
    case 8: write_back_sized(sources, k, values, originals, 8); break;
    case 12: write_back_sized(sources, k, values, originals, 12); break;
    case 16: write_back_sized(sources, k, values, originals, 16); break;
    default: write_back_sized(sources, k, values, originals, size); break;
    }
}

uint32_t tes__gather_chunk(tes_iter_t *it, const tes_entity_t *entities, uint32_t avail,
                           uint32_t driver_pos, const uint32_t *pos0, uint32_t run, uint8_t hide,
                           bool known)
{
    const tes_query_t *q = it->priv_query;
    int32_t d = it->priv_driver; /* -1 for a group's members */
    uint32_t cap = d < 0 ? q->gather_k : q->gather_cap[d];
    uint32_t limit = cap < avail ? cap : avail;
    if (d >= 0 && q->terms[d].data) { /* the driver's field is a slice of one data page */
        const tes__sparse_store_t *driver = &q->terms[d].info->store;
        uint32_t page_end = ((driver_pos >> driver->page_shift) + 1) << driver->page_shift;
        if (page_end - driver_pos < limit)
            limit = page_end - driver_pos;
    }
    if (limit <= run)
        return 0;
    /* The driver's own entries: its tombstones and the entities the
     * default filters hide end the chunk. A lookup of another AND term
     * fails for a tombstone anyway (no live handle has its generation), so
     * without filters and with such a term this pass is skipped; a group
     * (known) looks up only its data terms, so it runs the pass whenever
     * its pool holds tombstones. */
    const tes__sparse_set_t *pool = d >= 0 ? &q->terms[d].info->store.set : NULL;
    if (d >= 0 && (hide || !q->gather_and[d] || (known && pool->live != pool->count))) {
        const struct tes__filters *f = q->filters;
        uint32_t k = 1;
        while (k < limit && !tes__sparse_is_tombstone(entities[k]) &&
               !(hide && tes__filters_hide(f, hide, entities[k])))
            k++;
        limit = k;
    }
    areas_t a;
    layout(it, d, cap, &a);
    /* Term by term, each loop shortening the chunk to the prefix that
     * keeps its shape: first the terms that are only tested (tags, NOT
     * terms, absent optional ones), then the gathered ones, each looked up
     * into `at` and copied at once (a later term that cuts the chunk
     * shorter wastes a few copies). */
    uint32_t at[TES__GATHER_MAX];
    bool slice[TES_MAX_TERMS] = {false};
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t s = 0; s < q->sparse_count && limit > run; s++) {
            int32_t i = q->sparse_terms[s];
            const tes__term_info_t *t = &q->terms[i];
            bool buffered = gathers(q, i, d) && pos0[i] != TES_NULL_INDEX;
            if (i == d || (pass == 1) != buffered)
                continue;
            if (known && !t->data)
                continue; /* group members match: tags and NOT terms hold */
            const tes__sparse_store_t *st = &t->info->store;
            uint32_t k = 1;
            at[0] = pos0[i];
            if (known && buffered)
                k = follow(st, entities, 1, limit, pos0[i], at);
            slice[i] = k >= limit; /* (at[] is then left unset) */
            if (d < 0 && buffered && !slice[i] && t->oper == TES_AND)
                k = follow_gaps(&st->set, entities, k, limit, at);
            if (t->oper == TES_AND)
                k = lookup_present(&st->set, buffered ? st : NULL, entities, k, limit, avail, at);
            else
                k = lookup_as(&st->set, entities, k, limit, pos0[i] != TES_NULL_INDEX, at);
            limit = k;
            if (!buffered || limit <= run)
                continue;
            if (slice[i] || contiguous(st, at, limit))
                slice[i] = true;
            else
                copy_in(st, at, limit, a.values[i], a.originals[i], a.sources[i]);
        }
    }
    if (limit <= run)
        return 0;
    /* Fields: the driver's and contiguous ones are slices of their stores,
     * absent optional ones NULL, the others the gathered values. */
    uint32_t mask = 0;
    for (int32_t s = 0; s < q->sparse_count; s++) {
        int32_t i = q->sparse_terms[s];
        const tes__term_info_t *t = &q->terms[i];
        const tes__sparse_store_t *st = &t->info->store;
        if (!t->data || pos0[i] == TES_NULL_INDEX) {
            it->priv_fields[i] = NULL;
        } else if (i == d) {
            it->priv_fields[i] = tes__sparse_store_at(st, driver_pos);
        } else if (slice[i]) {
            it->priv_fields[i] = tes__sparse_store_at(st, pos0[i]);
        } else {
            it->priv_fields[i] = a.values[i];
            if (t->access != TES_IN)
                mask |= UINT32_C(1) << i;
        }
    }
    for (int32_t i = 0; i < q->term_count; i++)
        if (!q->terms[i].sparse) /* tags and NOT terms (no table data here) */
            it->priv_fields[i] = NULL;
    it->priv_gather_count = limit;
    it->priv_gather_mask = mask;
    it->count = (int32_t)limit;
    it->entities = entities;
    return limit;
}

void tes__gather_flush(tes_iter_t *it)
{
    uint32_t mask = it->priv_gather_mask;
    if (!mask)
        return;
    it->priv_gather_mask = 0;
    const tes_query_t *q = it->priv_query;
    int32_t d = it->priv_driver;
    areas_t a;
    layout(it, d, d < 0 ? q->gather_k : q->gather_cap[d], &a);
    for (int32_t i = 0; i < q->term_count; i++)
        if (mask & (UINT32_C(1) << i))
            write_back(q->terms[i].info->size, a.sources[i], it->priv_gather_count, a.values[i],
                       a.originals[i]);
}
