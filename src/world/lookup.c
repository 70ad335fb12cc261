/*
 * Lookup views (tes_lookup_t): a snapshot of where one component's values
 * live, read by the inline tes_lookup_get of the public header. Tuned for
 * loops of random reads over many entities, where an out-of-line tes_get
 * spends about ten loads per read finding the component's storage again;
 * inlined, those loads become loop invariants and only the two cache
 * misses of each read remain (the entity's slot or sparse entry, then the
 * value).
 *
 * The header's inline reads the world's own arrays (entity slots; the
 * biased bases of sparse entry pages and data pages, which the stores keep
 * beside their page pointers for their own reads) through public mirror
 * types. This file is the one
 * place that knows both sides: the static asserts below tie the public
 * encoding to the internal one, so a change of the slot or sparse layout
 * fails to compile here instead of making the inline read garbage. A
 * table component's view adds one array, built here: the first value of
 * the component in each table (O(tables)), so that a read goes from the
 * slot to the value's column without the table's descriptor. Its length
 * is a power of two with NULL entries past the last table, so a read masks
 * the slot's table field into it and one NULL test answers both "this
 * slot is free or retired" and "this table has no such column".
 *
 * The encoding, private to the header's inline readers and this file (the
 * public docs promise only what a view answers and how long it stays
 * valid, so any of it may change with the header):
 * - Table components (sparse == false): `slots` is the world's slot array,
 *   one tes_lookup_slot_t per entity index below slot_count. A live slot
 *   holds its generation, its table id OR-ed with TES_LOOKUP_SLOT_HINT (the
 *   world's sparse-hint bit, masked off by the read) and its row; a free or
 *   retired slot holds TES_LOOKUP_SLOT_FREE in `table`. columns[id] is the
 *   first value of c in table id, NULL when that table has no such column.
 *   table_count (the length of `columns`, 0 in a sparse or zeroed view) is
 *   a power of two larger than every table id and every entry past the
 *   world's tables is NULL, so `table & (table_count - 1)` is the table of
 *   a live slot and a NULL entry for a free or retired one.
 * - Sparse components (sparse == true): entry_pages (entry_page_count of
 *   them, each NULL or TES_LOOKUP_ENTRY_PAGE entries) map an entity index
 *   to a 64-bit entry: generation in the high 32 bits, packed position in
 *   the low 32, all ones when empty. The value at packed position p is in
 *   data_pages[p >> page_shift], slot p & ((1 << page_shift) - 1). The
 *   inline read uses the biased bases instead (no NULL page test, no
 *   masks): the entry of index i is the uint64_t at entry_bases[i >>
 *   TES_LOOKUP_ENTRY_PAGE_BITS] + i * 8 (an absent page reads as a shared
 *   read-only page of empty entries), the value at data_bases[p >>
 *   page_shift] + p * size. Each base is its page's address minus the
 *   offset of the page's first cell in wrapping uintptr_t arithmetic, so a
 *   base alone is not an address to read.
 */
#include "core/checked.h"
#include "world/last_error.h"
#include "world/world.h"

#include <stddef.h>
#include <string.h>

_Static_assert(sizeof(tes_lookup_slot_t) == sizeof(tes__slot_t), "slot mirror size");
_Static_assert(offsetof(tes_lookup_slot_t, generation) == offsetof(tes__slot_t, generation),
               "slot mirror generation");
_Static_assert(offsetof(tes_lookup_slot_t, table) == offsetof(tes__slot_t, table),
               "slot mirror table");
_Static_assert(offsetof(tes_lookup_slot_t, row) == offsetof(tes__slot_t, row), "slot mirror row");
_Static_assert(TES_LOOKUP_SLOT_FREE == TES__SLOT_FREE, "free slot marker");
_Static_assert(TES_LOOKUP_SLOT_HINT == TES__SLOT_SPARSE, "sparse hint bit");
_Static_assert((TES_LOOKUP_SLOT_HINT | TES__SLOT_TABLE_MASK) == UINT32_MAX, "table id mask");
/* The free marker is all ones, so any mask of the table field turns it
 * into the mask itself: the last entry of a view's column array. */
_Static_assert(TES_LOOKUP_SLOT_FREE == UINT32_MAX, "free marker is all ones");
_Static_assert(TES_LOOKUP_ENTRY_PAGE_BITS == TES__SPARSE_PAGE_BITS, "sparse entry page");
_Static_assert(TES__SPARSE_EMPTY == UINT64_MAX, "empty sparse entry");
_Static_assert(sizeof(((tes__sparse_set_t *)0)->bases[0]) == sizeof(uintptr_t),
               "entry bases are uintptr_t");
_Static_assert(sizeof(((tes__sparse_store_t *)0)->bases[0]) == sizeof(uintptr_t),
               "data bases are uintptr_t");

/* Fills the sparse half of a view: no allocation. The data page mask is
 * derived from the shift, as the store's own reads do. */
static void view_sparse(tes_lookup_t *out, const tes__sparse_store_t *st)
{
    tes__assert(st->page_mask == (UINT32_C(1) << st->page_shift) - 1u);
    out->sparse = true;
    out->entry_pages = (const uint64_t *const *)st->set.pages;
    out->entry_page_count = st->set.page_count;
    out->data_pages = st->pages;
    out->page_shift = st->page_shift;
    out->entry_bases = st->set.bases;
    out->data_bases = st->bases;
}

/* The length of a view's column array for `tables` tables: the smallest
 * power of two above every table id, so that masking a slot's table field
 * with length - 1 keeps a live slot's id, drops the hint bit and turns the
 * free marker into the last index, which no table has. 0 when no such
 * length fits the table field (more tables than ids). */
static uint32_t column_array_length(uint32_t tables)
{
    uint32_t length = 1;
    while (length <= tables) {
        if (length > TES__SLOT_TABLE_MASK / 2u)
            return 0;
        length *= 2u;
    }
    return length;
}

/* Fills the table half of a view: the first value of c in each table,
 * NULL past the last table. TES_OK or TES_ERR_NOMEM (nothing allocated). */
static int view_table(tes_lookup_t *out, tes_world_t *w, tes_comp_t c)
{
    const tes__table_graph_t *g = &w->tables;
    uint32_t length = column_array_length(g->count);
    size_t bytes;
    if (!length || !tes__size_mul(&bytes, length, sizeof(uint8_t *)))
        return TES_ERR_NOMEM;
    uint8_t **columns = tes__malloc(&w->alloc, bytes);
    if (!columns)
        return TES_ERR_NOMEM;
    for (uint32_t i = 0; i < length; i++) {
        const tes__table_t *t = i < g->count ? g->tables[i] : NULL;
        int32_t col = t ? tes__table_column_index(t, c) : -1;
        /* A table without rows may have no block yet: its entry is never
         * read, as no slot names it. */
        columns[i] = col >= 0 && t->block ? t->columns[col].data : NULL;
    }
    out->slots = (const tes_lookup_slot_t *)w->entities.slots;
    out->slot_count = w->entities.count;
    out->columns = columns;
    out->table_count = length;
    out->priv_world = w;
    out->priv_block = columns;
    out->priv_bytes = bytes;
    return TES_OK;
}

int tes_lookup_init(tes_lookup_t *out, tes_world_t *w, tes_comp_t c)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!w)
        return TES_ERR_INVALID;
    if (!out)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_lookup_init: out is NULL");
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info)
        return tes__fail_detail(w, TES_ERR_INVALID,
                                "tes_lookup_init: component id %u is not registered in this world",
                                (unsigned)c);
    if (!info->size)
        return tes__fail_detail(w, TES_ERR_INVALID,
                                "tes_lookup_init: component '%.64s' is a tag (size 0) and has no data",
                                info->name);
    out->size = info->size;
    if (info->storage == TES_STORAGE_SPARSE) {
        view_sparse(out, &info->store);
        return TES_OK;
    }
    /* In systems running on several threads the world's allocator is
     * called under the scheduler's lock, so a view can be built there as
     * on one thread (no structural change happens while they run). */
    int rc = view_table(out, w, c);
    if (rc) {
        memset(out, 0, sizeof *out);
        return tes__fail(w, rc);
    }
    return TES_OK;
}

void tes_lookup_fini(tes_lookup_t *l)
{
    if (!l)
        return;
    if (l->priv_block)
        tes__free(&l->priv_world->alloc, l->priv_block, l->priv_bytes);
    memset(l, 0, sizeof *l);
}
