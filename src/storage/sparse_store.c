/*
 * Paged component data beside a sparse set. Page size targets 64 KiB with a
 * power-of-two component count so that position -> address is a shift and a
 * mask. Pages are only added, never moved or freed before the store dies.
 */
#include "storage/sparse_store.h"

#include <string.h>

void tes__sparse_store_init(tes__sparse_store_t *st, uint32_t size, bool stable)
{
    memset(st, 0, sizeof *st);
    tes__sparse_set_init(&st->set);
    st->size = size;
    st->stable = stable;
    st->page_shift = tes__sparse_store_shift_for(size);
    st->page_mask = (UINT32_C(1) << st->page_shift) - 1;
}

static size_t page_bytes(const tes__sparse_store_t *st)
{
    return ((size_t)1 << st->page_shift) * st->size;
}

/* Bytes of the block holding `pages` and `bases` for cap pages. */
static size_t data_table_bytes(uint32_t cap)
{
    return (size_t)cap * (sizeof(uint8_t *) + sizeof(uintptr_t));
}

/* Makes room for `need` page pointers and bases (doubling). The two
 * tables share one block, replaced whole: on failure the old one stays.
 * TES_OK, or TES_ERR_NOMEM when the allocator fails or the block's size
 * would not fit a size_t. */
static int grow_tables(tes__sparse_store_t *st, tes__alloc_t *a, uint64_t need)
{
    if (need <= st->page_cap)
        return TES_OK;
    if (need > UINT32_MAX)
        return TES_ERR_NOMEM;
    uint64_t cap = st->page_cap ? (uint64_t)st->page_cap * 2 : 8;
    if (cap < need)
        cap = need;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    if (cap > SIZE_MAX / (sizeof(uint8_t *) + sizeof(uintptr_t)))
        return TES_ERR_NOMEM;
    uint8_t **pages = tes__malloc(a, data_table_bytes((uint32_t)cap));
    if (!pages)
        return TES_ERR_NOMEM;
    uintptr_t *bases = (uintptr_t *)(void *)(pages + cap);
    if (st->page_count) {
        memcpy(pages, st->pages, (size_t)st->page_count * sizeof *pages);
        memcpy(bases, st->bases, (size_t)st->page_count * sizeof *bases);
    }
    tes__free(a, st->pages, data_table_bytes(st->page_cap));
    st->pages = pages;
    st->bases = bases;
    st->page_cap = (uint32_t)cap;
    return TES_OK;
}

void tes__sparse_store_fini(tes__sparse_store_t *st, tes__alloc_t *a)
{
    for (uint32_t i = 0; i < st->page_count; i++)
        tes__free(a, st->pages[i], page_bytes(st));
    tes__free(a, st->pages, data_table_bytes(st->page_cap));
    tes__sparse_set_fini(&st->set, a);
    uint32_t size = st->size;
    bool stable = st->stable;
    tes__sparse_store_init(st, size, stable);
}

/* Makes sure data pages cover positions [0, count). */
static int reserve_data(tes__sparse_store_t *st, tes__alloc_t *a, uint64_t count)
{
    if (!st->size || !count)
        return TES_OK;
    uint64_t need = ((count - 1) >> st->page_shift) + 1;
    if (need <= st->page_count)
        return TES_OK;
    int rc = grow_tables(st, a, need);
    if (rc)
        return rc;
    while (st->page_count < need) {
        uint8_t *page = tes__malloc(a, page_bytes(st));
        if (!page)
            return TES_ERR_NOMEM; /* pages already added stay: they are free room */
        st->bases[st->page_count] =
            tes__sparse_store_base_of(page, st->page_count, st->page_shift, st->size);
        st->pages[st->page_count++] = page;
    }
    return TES_OK;
}

int tes__sparse_store_reserve_positions(tes__sparse_store_t *st, tes__alloc_t *a, uint32_t count)
{
    if (count > st->set.count) {
        int rc = tes__sparse_set_reserve_packed(&st->set, a, count - st->set.count);
        if (rc)
            return rc;
    }
    return reserve_data(st, a, count);
}

int tes__sparse_store_reserve(tes__sparse_store_t *st, tes__alloc_t *a, uint32_t n,
                              uint32_t index, uint32_t (*next_index)(void *ctx), void *ctx)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = next_index ? next_index(ctx) : index;
        int rc = tes__sparse_set_reserve_index(&st->set, a, idx);
        if (rc)
            return rc;
    }
    /* Stable stores refill holes first, so only the rest needs fresh room. */
    uint32_t holes = 0;
    if (st->stable)
        holes = st->set.live < st->set.count ? st->set.count - st->set.live : 0;
    uint32_t fresh = n > holes ? n - holes : 0;
    int rc = tes__sparse_set_reserve_packed(&st->set, a, fresh);
    if (rc)
        return rc;
    return reserve_data(st, a, (uint64_t)st->set.count + fresh);
}




typedef struct compact_ctx {
    tes__sparse_store_t *st;
    const tes_hooks_t *hooks;
} compact_ctx_t;

static void compact_move(void *ctx, uint32_t from, uint32_t to)
{
    compact_ctx_t *c = ctx;
    if (c->st->size)
        tes__sparse_store_move_value(c->hooks, tes__sparse_store_at(c->st, to), tes__sparse_store_at(c->st, from),
                    c->st->size);
}

uint32_t tes__sparse_store_compact(tes__sparse_store_t *st, const tes_hooks_t *hooks)
{
    compact_ctx_t ctx = {st, hooks};
    return tes__sparse_set_compact(&st->set, compact_move, &ctx);
}
