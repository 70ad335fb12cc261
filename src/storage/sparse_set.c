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



void tes__sparse_set_tomb_remove(tes__sparse_set_t *s, tes_entity_t e, uint32_t pos)
{
    tes__assert(pos == tes__sparse_set_find(s, e));
    s->packed[pos] = tes_entity_make(s->free_head, TES_TOMBSTONE);
    s->free_head = pos;
    tes__sparse_set_entry_write(s, tes_entity_index(e), TES__SPARSE_EMPTY);
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
        tes__sparse_set_entry_write(s, tes_entity_index(e), (e & ~(uint64_t)TES_NULL_INDEX) | hole);
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
