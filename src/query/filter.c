/*
 * The filter index (see filter.h). Built from the entity index once, then
 * maintained by a watcher: after any change the world reports for an
 * entity, its byte is recomputed from its table's flags; a destroy clears
 * it. Room for the bytes is reserved before the world commits a change, and
 * the list has its fixed size from the start, so the updates themselves
 * cannot fail.
 */
#include "query/filter.h"

#include "world/check_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stale entries (indices that lost their tag) are dropped once there are
 * more than the tagged ones plus this many. */
#define STALE_SLACK 16u

static uint8_t tags_of(const tes_world_t *w, tes_entity_t e)
{
    const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
    if (!slot)
        return 0;
    uint32_t flags = tes__slot_table(w, slot)->flags;
    return (uint8_t)(((flags & TES__TABLE_DISABLED) ? TES__FILTER_DISABLED : 0) |
                     ((flags & TES__TABLE_PREFAB) ? TES__FILTER_PREFAB : 0));
}

/* Drops the listed indices that no longer carry a tag. */
static void compact(struct tes__filters *f)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < f->listed_count; i++) {
        uint32_t index = f->list[i];
        if (f->tags[index] & TES__FILTER_TAGS)
            f->list[kept++] = index;
        else
            f->tags[index] &= (uint8_t)~TES__FILTER_LISTED;
    }
    f->listed_count = kept;
}

/* Stops listing: walks test every entity until relist. */
static void overflow(struct tes__filters *f)
{
    for (uint32_t i = 0; i < f->listed_count; i++)
        f->tags[f->list[i]] &= (uint8_t)~TES__FILTER_LISTED;
    f->listed_count = 0;
    f->overflowed = true;
}

/* Lists every tagged index again: an O(cap) scan, paid for by the more
 * than TES__FILTER_LIST_MAX / 4 entities that lost their tag since the
 * overflow (it happens with more than half of the list's length tagged). */
static void relist(struct tes__filters *f)
{
    tes__assert(f->tagged <= TES__FILTER_LIST_MAX);
    f->listed_count = 0;
    for (uint32_t index = 0; index < f->cap; index++) {
        if (f->tags[index] & TES__FILTER_TAGS) {
            f->list[f->listed_count++] = index;
            f->tags[index] |= TES__FILTER_LISTED;
        }
    }
    f->overflowed = false;
}

/* Room for one more listed index: a full list is compacted, and overflows
 * when that frees less than half of it (so each compaction is paid for by
 * as many listings as it scans). */
static bool list_room(struct tes__filters *f)
{
    if (f->listed_count < TES__FILTER_LIST_MAX)
        return true;
    compact(f);
    if (f->listed_count <= TES__FILTER_LIST_MAX / 2)
        return true;
    overflow(f);
    return false;
}

/* How a count of the entities carrying one of `bits` changes when an
 * entity's tags go from `was` to `now`: +1, 0, or -1 (wrapping, as the
 * counts are unsigned). */
static uint32_t delta(uint8_t was, uint8_t now, uint8_t bits)
{
    return (uint32_t)((now & bits) != 0) - (uint32_t)((was & bits) != 0);
}

/* Records the tags of the entity with this index: its byte, the counts,
 * and the list (a newly tagged index joins it; an untagged one stays until
 * the next compaction). */
static void put(struct tes__filters *f, uint32_t index, uint8_t tags)
{
    tes__assert(index < f->cap || !tags);
    if (index >= f->cap)
        return;
    uint8_t old = f->tags[index];
    f->tagged += delta(old, tags, TES__FILTER_TAGS);
    f->disabled += delta(old, tags, TES__FILTER_DISABLED);
    f->prefabs += delta(old, tags, TES__FILTER_PREFAB);
    uint8_t byte = (uint8_t)(tags | (old & TES__FILTER_LISTED));
    if (tags && !(byte & TES__FILTER_LISTED) && !f->overflowed && list_room(f)) {
        f->list[f->listed_count++] = index;
        byte |= TES__FILTER_LISTED;
    }
    f->tags[index] = byte;
    if (f->overflowed) {
        if (f->tagged <= TES__FILTER_LIST_MAX / 4)
            relist(f);
    } else if (f->listed_count - f->tagged > f->tagged + STALE_SLACK) {
        compact(f); /* paid for by the untagging since the last one */
    }
}

/* Room for a byte at `index`. TES_OK or TES_ERR_NOMEM. */
static int cover(struct tes__filters *f, uint64_t count)
{
    if (count <= f->cap)
        return TES_OK;
    uint32_t cap = f->cap;
    if (tes__grow(&f->w->alloc, (void **)&f->tags, &cap, count, 1, 256))
        return TES_ERR_NOMEM;
    memset(f->tags + f->cap, 0, cap - f->cap);
    f->cap = cap;
    return TES_OK;
}

static int filter_watch_reserve(void *ctx, uint32_t index, uint32_t extra)
{
    (void)extra; /* bulk changes reserve each index they touch */
    return cover(ctx, (uint64_t)index + 1);
}

static void filter_watch_before(void *ctx, tes_entity_t e, tes_comp_t c)
{
    if (c == TES__WATCH_DESTROY)
        put(ctx, tes_entity_index(e), 0);
}

static void filter_watch_after(void *ctx, tes_entity_t e, tes_comp_t c)
{
    struct tes__filters *f = ctx;
    (void)c;
    put(f, tes_entity_index(e), tags_of(f->w, e));
}

static void filters_free(tes__alloc_t *a, struct tes__filters *f)
{
    tes__free(a, f->list, (size_t)TES__FILTER_LIST_MAX * sizeof *f->list);
    tes__free(a, f->tags, f->cap);
    tes__free(a, f, sizeof *f);
}

/* World teardown: the watcher list goes away with the world. */
static void filters_fini(void *ctx)
{
    struct tes__filters *f = ctx;
    f->w->filters = NULL;
    filters_free(&f->w->alloc, f);
}

int tes__filters_use(tes_world_t *w, struct tes__filters **out)
{
    if (w->filters) {
        *out = w->filters;
        return TES_OK;
    }
    struct tes__filters *f = tes__calloc(&w->alloc, sizeof *f);
    if (!f)
        return TES_ERR_NOMEM;
    f->w = w;
    f->scan_ratio = TES__FILTER_SCAN_RATIO;
    const tes__entity_index_t *ei = &w->entities;
    int rc = cover(f, ei->count);
    if (!rc && !(f->list = tes__malloc(&w->alloc, (size_t)TES__FILTER_LIST_MAX * sizeof *f->list)))
        rc = TES_ERR_NOMEM;
    for (uint32_t i = 0; !rc && i < ei->count; i++) {
        const tes__slot_t *s = &ei->slots[i];
        if (s->table != TES__SLOT_FREE)
            put(f, i, tags_of(w, tes_entity_make(i, s->generation)));
    }
    tes_comp_t tags[2] = {TES_DISABLED, TES_PREFAB};
    tes__watcher_t watcher = {.reserve = filter_watch_reserve, .before = filter_watch_before,
                              .after = filter_watch_after, .ctx = f,
                              .creations_by_comps = true /* an empty entity's byte is 0 */};
    if (!rc && (rc = tes__world_watch(w, &watcher, tags, 2)) == TES_OK &&
        (rc = tes__world_depend(w, filters_fini, f)) != TES_OK)
        tes__world_unwatch(w, f, NULL);
    if (rc) {
        filters_free(&w->alloc, f);
        return rc;
    }
    w->filters = f;
    *out = f;
    return TES_OK;
}

uint32_t tes__filters_positions(const struct tes__filters *f, uint8_t mask,
                                const tes__sparse_set_t *pool, uint32_t *out, uint32_t cap)
{
    if (!tes__filters_any(f, mask))
        return 0;
    if (f->overflowed || (uint64_t)f->listed_count * f->scan_ratio > pool->count)
        return TES__FILTERS_TEST;
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->listed_count; i++) {
        uint32_t index = f->list[i];
        if (!(f->tags[index] & mask))
            continue;
        /* A live tagged entity is the only one with this index that a
         * store can hold (a destroy leaves every store first). */
        uint64_t entry = tes__sparse_entry(pool, index);
        if (entry == TES__SPARSE_EMPTY)
            continue;
        uint32_t pos = (uint32_t)entry;
        tes__assert(pos < pool->count && tes_entity_index(pool->packed[pos]) == index);
        if (n == cap)
            return TES__FILTERS_TEST;
        /* Sorted insertion: the list is short, and usually holds one or
         * two positions of this pool. */
        uint32_t j = n++;
        for (; j > 0 && out[j - 1] > pos; j--)
            out[j] = out[j - 1];
        out[j] = pos;
    }
    return n;
}

#define FILTERS_CHECK(...) TES__CHECK("tes__filters_check", __VA_ARGS__)

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The tags the entity with this index carries (0 when it is dead). */
static uint8_t tags_at(const tes_world_t *w, uint32_t index)
{
    const tes__entity_index_t *ei = &w->entities;
    if (index >= ei->count || ei->slots[index].table == TES__SLOT_FREE)
        return 0;
    return tags_of(w, tes_entity_make(index, ei->slots[index].generation));
}

int tes__filters_check(const tes_world_t *w)
{
    const struct tes__filters *f = w->filters;
    if (!f)
        return TES_OK;
    uint32_t tagged = 0, disabled = 0, prefabs = 0, listed = 0;
    for (uint32_t i = 0; i < f->cap; i++) {
        uint8_t byte = f->tags[i], want = tags_at(w, i);
        FILTERS_CHECK(!(byte & ~(TES__FILTER_TAGS | TES__FILTER_LISTED)), "index %u has byte %#x",
                      i, (unsigned)byte);
        FILTERS_CHECK((byte & TES__FILTER_TAGS) == want, "index %u has tags %#x, its table %#x",
                      i, (unsigned)(byte & TES__FILTER_TAGS), (unsigned)want);
        FILTERS_CHECK(f->overflowed || !want || (byte & TES__FILTER_LISTED),
                      "index %u is tagged but not listed", i);
        tagged += want != 0;
        disabled += (want & TES__FILTER_DISABLED) != 0;
        prefabs += (want & TES__FILTER_PREFAB) != 0;
        listed += (byte & TES__FILTER_LISTED) != 0;
    }
    for (uint32_t i = f->cap; i < w->entities.count; i++)
        FILTERS_CHECK(!tags_at(w, i), "index %u is tagged, past the %u bytes", i, f->cap);
    FILTERS_CHECK(tagged == f->tagged && disabled == f->disabled && prefabs == f->prefabs,
                  "counts %u/%u/%u, the bytes say %u/%u/%u", f->tagged, f->disabled, f->prefabs,
                  tagged, disabled, prefabs);
    FILTERS_CHECK(f->listed_count <= TES__FILTER_LIST_MAX && listed == f->listed_count,
                  "%u listed, %u bytes marked listed", f->listed_count, listed);
    FILTERS_CHECK(!f->overflowed || (!f->listed_count && f->tagged > TES__FILTER_LIST_MAX / 4),
                  "overflowed with %u listed, %u tagged", f->listed_count, f->tagged);
    FILTERS_CHECK(f->overflowed || f->listed_count - f->tagged <= f->tagged + STALE_SLACK,
                  "%u listed for %u tagged", f->listed_count, f->tagged);
    /* Each entry marked, and no index twice: with the count above, the
     * list is exactly the marked indices. */
    uint32_t sorted[TES__FILTER_LIST_MAX];
    for (uint32_t i = 0; i < f->listed_count; i++) {
        FILTERS_CHECK(f->list[i] < f->cap && (f->tags[f->list[i]] & TES__FILTER_LISTED),
                      "list entry %u (index %u) is not marked listed", i, f->list[i]);
        sorted[i] = f->list[i];
    }
    qsort(sorted, f->listed_count, sizeof *sorted, compare_u32);
    for (uint32_t i = 1; i < f->listed_count; i++)
        FILTERS_CHECK(sorted[i - 1] != sorted[i], "index %u is listed twice", sorted[i]);
    return TES_OK;
}

#undef FILTERS_CHECK
