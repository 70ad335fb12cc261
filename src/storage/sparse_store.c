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

/* Bytes per page entry of the block holding `pages`, `bases` and, for a
 * tracked store, `stamp_pages`. */
static size_t entry_bytes(const tes__sparse_store_t *st)
{
    return sizeof(uint8_t *) + sizeof(uintptr_t) + (st->tick ? sizeof(uint32_t *) : 0);
}

/* Bytes of that block for cap pages. */
static size_t data_table_bytes(const tes__sparse_store_t *st, uint32_t cap)
{
    return (size_t)cap * entry_bytes(st);
}

/* Bytes of a tracked store's stamp page: two ticks per position and a
 * summary word per block of positions. */
static size_t stamp_page_bytes(const tes__sparse_store_t *st)
{
    uint32_t per = tes__store_stamp_per(st);
    uint32_t sums = (per + TES__STORE_STAMP_BLOCK - 1) >> TES__STORE_STAMP_BITS;
    return ((size_t)2 * per + sums) * sizeof(uint32_t);
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
    if (cap > SIZE_MAX / entry_bytes(st))
        return TES_ERR_NOMEM;
    uint8_t **pages = tes__malloc(a, data_table_bytes(st, (uint32_t)cap));
    if (!pages)
        return TES_ERR_NOMEM;
    uintptr_t *bases = (uintptr_t *)(void *)(pages + cap);
    uint32_t **stamp_pages = st->tick ? (uint32_t **)(void *)(bases + cap) : NULL;
    if (st->page_count) {
        memcpy(pages, st->pages, (size_t)st->page_count * sizeof *pages);
        memcpy(bases, st->bases, (size_t)st->page_count * sizeof *bases);
        if (stamp_pages)
            memcpy(stamp_pages, st->stamp_pages, (size_t)st->page_count * sizeof *stamp_pages);
    }
    tes__free(a, st->pages, data_table_bytes(st, st->page_cap));
    st->pages = pages;
    st->bases = bases;
    st->stamp_pages = stamp_pages;
    st->page_cap = (uint32_t)cap;
    return TES_OK;
}

void tes__sparse_store_fini(tes__sparse_store_t *st, tes__alloc_t *a)
{
    for (uint32_t i = 0; i < st->page_count; i++) {
        tes__free(a, st->pages[i], page_bytes(st));
        if (st->tick)
            tes__free(a, st->stamp_pages[i], stamp_page_bytes(st));
    }
    tes__free(a, st->pages, data_table_bytes(st, st->page_cap));
    tes__sparse_set_fini(&st->set, a);
    uint32_t size = st->size;
    bool stable = st->stable;
    const _Atomic uint32_t *tick = st->tick;
    tes__sparse_store_init(st, size, stable);
    st->tick = tick;
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
        uint32_t *stamps = NULL;
        if (st->tick && !(stamps = tes__calloc(a, stamp_page_bytes(st))))
            return TES_ERR_NOMEM; /* pages already added stay: they are free room */
        uint8_t *page = tes__malloc(a, page_bytes(st));
        if (!page) {
            tes__free(a, stamps, stamps ? stamp_page_bytes(st) : 0);
            return TES_ERR_NOMEM;
        }
        if (st->tick)
            st->stamp_pages[st->page_count] = stamps;
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
    if (c->st->tick)
        tes__sparse_store_stamp_move(c->st, to, from);
}

/* Raises the summary word of pos's block to `changed` when that tick is
 * newer (the fewer ticks before now). */
static void raise_sum(const tes__sparse_store_t *st, uint32_t pos, uint32_t changed)
{
    uint32_t now = atomic_load_explicit(st->tick, memory_order_relaxed);
    _Atomic uint32_t *sum = tes__sparse_store_sum(st, pos);
    if (now - changed < now - atomic_load_explicit(sum, memory_order_relaxed))
        atomic_store_explicit(sum, changed, memory_order_relaxed);
}

void tes__sparse_store_stamp_move(const tes__sparse_store_t *st, uint32_t to, uint32_t from)
{
    uint32_t per = tes__store_stamp_per(st);
    uint32_t *d = tes__sparse_store_stamp(st, to);
    const uint32_t *f = tes__sparse_store_stamp(st, from);
    d[0] = f[0];
    d[per] = f[per];
    raise_sum(st, to, d[0]);
}

void tes__sparse_store_stamp_swap(const tes__sparse_store_t *st, uint32_t a, uint32_t b)
{
    uint32_t per = tes__store_stamp_per(st);
    uint32_t *x = tes__sparse_store_stamp(st, a), *y = tes__sparse_store_stamp(st, b);
    uint32_t c = x[0], ad = x[per];
    x[0] = y[0];
    x[per] = y[per];
    y[0] = c;
    y[per] = ad;
    raise_sum(st, a, x[0]);
    raise_sum(st, b, y[0]);
}

void tes__sparse_store_stamp_all(tes__sparse_store_t *st)
{
    for (uint32_t pos = 0; pos < st->set.count; pos++)
        tes__sparse_store_stamp_now(st, pos, true);
}

uint32_t tes__sparse_store_compact(tes__sparse_store_t *st, const tes_hooks_t *hooks)
{
    compact_ctx_t ctx = {st, hooks};
    return tes__sparse_set_compact(&st->set, compact_move, &ctx);
}
