/*
 * Sparse set growth, insertion and the two deletion policies. The hot
 * lookups are inline in sparse_set.h; everything here is O(1) except
 * compaction, which is O(count) and only runs when asked.
 */
#include "storage/sparse_set.h"

#include <string.h>

void tes__sparse_set_init(tes__sparse_set_t *s)
{
    memset(s, 0, sizeof *s);
    s->free_head = TES_NULL_INDEX;
}

void tes__sparse_set_fini(tes__sparse_set_t *s, tes__alloc_t *a)
{
    for (uint32_t i = 0; i < s->page_count; i++)
        tes__free(a, s->pages[i], TES__SPARSE_PAGE_SIZE * sizeof(uint64_t));
    tes__free(a, s->pages, (size_t)s->page_count * sizeof *s->pages);
    tes__free(a, s->packed, (size_t)s->cap * sizeof *s->packed);
    tes__sparse_set_init(s);
}

static void set_entry(tes__sparse_set_t *s, uint32_t index, uint64_t entry)
{
    uint64_t *page = s->pages[index >> TES__SPARSE_PAGE_BITS];
    tes__assert(page);
    page[index & TES__SPARSE_PAGE_MASK] = entry;
}

int tes__sparse_set_reserve_index(tes__sparse_set_t *s, tes__alloc_t *a, uint32_t index)
{
    uint32_t page = index >> TES__SPARSE_PAGE_BITS;
    if (page < s->page_count && s->pages[page])
        return TES_OK;
    if (page >= s->page_count) {
        uint32_t count = page + 1;
        if (count < s->page_count * 2)
            count = s->page_count * 2;
        uint64_t **pages = tes__realloc(a, s->pages, (size_t)s->page_count * sizeof *pages,
                                        (size_t)count * sizeof *pages);
        if (!pages)
            return TES_ERR_NOMEM;
        memset(pages + s->page_count, 0, (size_t)(count - s->page_count) * sizeof *pages);
        s->pages = pages;
        s->page_count = count;
    }
    uint64_t *entries = tes__malloc(a, TES__SPARSE_PAGE_SIZE * sizeof *entries);
    if (!entries)
        return TES_ERR_NOMEM;
    memset(entries, 0xFF, TES__SPARSE_PAGE_SIZE * sizeof *entries); /* all empty */
    s->pages[page] = entries;
    return TES_OK;
}

int tes__sparse_set_reserve_packed(tes__sparse_set_t *s, tes__alloc_t *a, uint32_t extra)
{
    return tes__grow(a, (void **)&s->packed, &s->cap, (uint64_t)s->count + extra,
                     sizeof *s->packed, 64);
}

uint32_t tes__sparse_set_insert(tes__sparse_set_t *s, tes_entity_t e, bool reuse_holes)
{
    tes__assert(!tes__sparse_set_contains(s, e));
    uint32_t pos;
    if (reuse_holes && s->free_head != TES_NULL_INDEX) {
        pos = s->free_head;
        s->free_head = tes_entity_index(s->packed[pos]);
    } else {
        tes__assert(s->count < s->cap);
        pos = s->count++;
    }
    s->packed[pos] = e;
    s->live++;
    set_entry(s, tes_entity_index(e), (e & ~(uint64_t)TES_NULL_INDEX) | pos);
    return pos;
}

void tes__sparse_set_swap_remove(tes__sparse_set_t *s, tes_entity_t e, uint32_t pos)
{
    tes__assert(pos == tes__sparse_set_find(s, e));
    tes__assert(s->free_head == TES_NULL_INDEX); /* swap-pop sets hold no tombstones */
    uint32_t last = --s->count;
    if (pos != last) {
        tes_entity_t moved = s->packed[last];
        s->packed[pos] = moved;
        set_entry(s, tes_entity_index(moved), (moved & ~(uint64_t)TES_NULL_INDEX) | pos);
    }
    set_entry(s, tes_entity_index(e), TES__SPARSE_EMPTY);
    s->live--;
}

void tes__sparse_set_tomb_remove(tes__sparse_set_t *s, tes_entity_t e, uint32_t pos)
{
    tes__assert(pos == tes__sparse_set_find(s, e));
    s->packed[pos] = tes_entity_make(s->free_head, TES_TOMBSTONE);
    s->free_head = pos;
    set_entry(s, tes_entity_index(e), TES__SPARSE_EMPTY);
    s->live--;
}

uint32_t tes__sparse_set_compact(tes__sparse_set_t *s,
                                 void (*move)(void *ctx, uint32_t from, uint32_t to), void *ctx)
{
    /* Fill holes from the front with live entities taken from the back; the
     * free list is rebuilt as empty afterwards, so its order is irrelevant. */
    uint32_t moved = 0;
    uint32_t hole = 0;
    uint32_t end = s->count;
    for (;;) {
        while (hole < end && !tes__sparse_is_tombstone(s->packed[hole]))
            hole++;
        while (end > hole && tes__sparse_is_tombstone(s->packed[end - 1]))
            end--;
        if (hole >= end)
            break;
        uint32_t from = end - 1;
        tes_entity_t e = s->packed[from];
        s->packed[hole] = e;
        set_entry(s, tes_entity_index(e), (e & ~(uint64_t)TES_NULL_INDEX) | hole);
        if (move)
            move(ctx, from, hole);
        moved++;
        end--;
        hole++;
    }
    s->count = end;
    s->free_head = TES_NULL_INDEX;
    tes__assert(s->count == s->live);
    return moved;
}
