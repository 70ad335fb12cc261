/*
 * Sparse set growth, insertion and the two deletion policies. The hot
 * lookups are inline in sparse_set.h; everything here is O(1) except
 * compaction, which is O(count) and only runs when asked.
 */
#include "storage/sparse_set.h"

#include <string.h>

/* 4096 all-ones entries, spelled out by doubling. */
#define EMPTY1 UINT64_MAX
#define EMPTY2 EMPTY1, EMPTY1
#define EMPTY4 EMPTY2, EMPTY2
#define EMPTY8 EMPTY4, EMPTY4
#define EMPTY16 EMPTY8, EMPTY8
#define EMPTY32 EMPTY16, EMPTY16
#define EMPTY64 EMPTY32, EMPTY32
#define EMPTY128 EMPTY64, EMPTY64
#define EMPTY256 EMPTY128, EMPTY128
#define EMPTY512 EMPTY256, EMPTY256
#define EMPTY1024 EMPTY512, EMPTY512
#define EMPTY2048 EMPTY1024, EMPTY1024
#define EMPTY4096 EMPTY2048, EMPTY2048
_Static_assert(TES__SPARSE_PAGE_SIZE == 4096, "the empty page initialiser spells 4096 entries");
_Static_assert(TES__SPARSE_EMPTY == UINT64_MAX, "the empty page holds empty entries");
static const uint64_t empty_page[TES__SPARSE_PAGE_SIZE] = {EMPTY4096};

const uint64_t *tes__sparse_empty_page(void) { return empty_page; }

/* Bytes of the block holding `pages` and `bases` for count pages. */
static size_t entry_table_bytes(uint32_t count)
{
    return (size_t)count * (sizeof(uint64_t *) + sizeof(uintptr_t));
}

void tes__sparse_set_init(tes__sparse_set_t *s)
{
    memset(s, 0, sizeof *s);
    s->free_head = TES_NULL_INDEX;
}

void tes__sparse_set_fini(tes__sparse_set_t *s, tes__alloc_t *a)
{
    for (uint32_t i = 0; i < s->page_count; i++)
        tes__free(a, s->pages[i], TES__SPARSE_PAGE_SIZE * sizeof(uint64_t));
    tes__free(a, s->pages, entry_table_bytes(s->page_count));
    tes__free(a, s->packed, (size_t)s->cap * sizeof *s->packed);
    tes__sparse_set_init(s);
}


int tes__sparse_set_reserve_index(tes__sparse_set_t *s, tes__alloc_t *a, uint32_t index)
{
    uint32_t page = index >> TES__SPARSE_PAGE_BITS;
    if (page < s->page_count && s->pages[page])
        return TES_OK;
    if (page >= s->page_count) {
        /* page < 2^20, so count and the block's size cannot overflow. The
         * two tables share one block, replaced whole: on failure the old
         * one stays as it was. */
        uint32_t count = page + 1;
        if (count < s->page_count * 2)
            count = s->page_count * 2;
        uint64_t **pages = tes__malloc(a, entry_table_bytes(count));
        if (!pages)
            return TES_ERR_NOMEM;
        uintptr_t *bases = (uintptr_t *)(void *)(pages + count);
        for (uint32_t p = 0; p < count; p++) {
            pages[p] = p < s->page_count ? s->pages[p] : NULL;
            bases[p] = p < s->page_count ? s->bases[p]
                                         : tes__sparse_base_of(empty_page, p);
        }
        tes__free(a, s->pages, entry_table_bytes(s->page_count));
        s->pages = pages;
        s->bases = bases;
        s->page_count = count;
    }
    uint64_t *entries = tes__malloc(a, TES__SPARSE_PAGE_SIZE * sizeof *entries);
    if (!entries)
        return TES_ERR_NOMEM;
    memset(entries, 0xFF, TES__SPARSE_PAGE_SIZE * sizeof *entries); /* all empty */
    s->pages[page] = entries;
    s->bases[page] = tes__sparse_base_of(entries, page);
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
