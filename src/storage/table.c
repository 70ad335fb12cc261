/*
 * Table rows and columns: construction, relocation between tables, and
 * growth of the single column block. Relocation walks both tables' columns
 * as two sorted lists (a merge), so moving an entity costs one pass over
 * the columns with no lookups. The quiet add along a cached plain edge
 * copies its row with one of the add_cells forms at the end of this file,
 * picked per edge when the edge is cached: an entity built up one
 * component at a time takes a form whose copies are straight code.
 */
#include "storage/table.h"

#include "core/checked.h"

#include <stdatomic.h>
#include <string.h>

uint64_t tes__type_hash(const tes_comp_t *type, uint32_t count)
{
    return tes__hash_bytes(type, (size_t)count * sizeof *type);
}

tes__table_t *tes__table_new(tes__alloc_t *a, const tes__registry_t *r, uint32_t id,
                             const tes_comp_t *type, uint32_t type_count)
{
    /* Column and type positions are int32_t (tes__table_type_index): a
     * longer type is refused, like any request too large to allocate. A
     * tracked component brings two stamp columns (component.h). */
    size_t type_bytes, column_bytes;
    if (type_count > INT32_MAX / 3 || !tes__size_mul(&type_bytes, type_count, sizeof *type) ||
        !tes__size_mul(&column_bytes, type_count, 3 * sizeof(tes__column_t)))
        return NULL;
    tes__table_t *t = tes__calloc(a, sizeof *t);
    if (!t)
        return NULL;
    t->id = id;
    t->hash = tes__type_hash(type, type_count);
    uint32_t columns = 0, tracked = 0;
    for (uint32_t i = 0; i < type_count; i++) {
        const tes__component_t *info = tes__registry_get(r, type[i]);
        columns += info->size ? 1 : 0;
        t->flags |= (info->hooks.ctor ? TES__TABLE_HAS_CTOR : 0) |
                    (info->hooks.dtor ? TES__TABLE_HAS_DTOR : 0) |
                    (info->hooks.move ? TES__TABLE_HAS_MOVE : 0) |
                    (info->hooks.on_add ? TES__TABLE_HAS_ON_ADD : 0) |
                    (info->hooks.on_remove ? TES__TABLE_HAS_ON_REMOVE : 0) |
                    (type[i] == TES_DISABLED ? TES__TABLE_DISABLED : 0) |
                    (type[i] == TES_PREFAB ? TES__TABLE_PREFAB : 0) |
                    (info->size > TES__SMALL_BYTES ? TES__TABLE_LARGE : 0);
        if (info->track_changes) {
            const tes__component_t *stamp = tes__registry_get(r, info->stamps);
            columns += 2;
            tracked++;
            t->flags |= TES__TABLE_TRACKED | (stamp->hooks.ctor ? TES__TABLE_HAS_CTOR : 0) |
                        (stamp->hooks.move ? TES__TABLE_HAS_MOVE : 0);
        }
    }
    if (type_count) {
        t->type = tes__malloc(a, type_bytes);
        if (!t->type)
            goto fail;
        memcpy(t->type, type, type_bytes);
        t->type_count = type_count;
    }
    if (tracked) {
        t->sums = tes__calloc(a, (size_t)tracked * sizeof *t->sums);
        if (!t->sums)
            goto fail;
        t->sum_count = tracked;
    }
    if (columns) {
        t->columns = tes__calloc(a, (size_t)columns * sizeof *t->columns); /* <= column_bytes */
        if (!t->columns)
            goto fail;
        t->column_count = columns;
        uint32_t col = 0, sum = 0;
        for (uint32_t i = 0; i < type_count; i++) {
            const tes__component_t *info = tes__registry_get(r, type[i]);
            for (uint32_t k = 0; info->size && k < (info->track_changes ? 3u : 1u); k++) {
                const tes__component_t *ci = k ? tes__registry_get(r, info->stamps + k - 1) : info;
                t->columns[col].info = ci;
                t->columns[col].id = ci->id;
                t->columns[col].size = ci->size;
                if (ci->id < TES__TABLE_DIRECT_IDS)
                    t->column_of[ci->id] = col < UINT8_MAX - 1 ? (uint8_t)(col + 1) : UINT8_MAX;
                col++;
            }
            if (info->track_changes)
                t->sums[sum++].comp = info->id;
        }
    }
    return t;
fail:
    tes__table_free(t, a);
    return NULL;
}

void tes__table_free(tes__table_t *t, tes__alloc_t *a)
{
    if (!t)
        return;
    tes__free(a, t->block, t->block_size);
    tes__free(a, t->type, (size_t)t->type_count * sizeof *t->type);
    tes__free(a, t->columns, (size_t)t->column_count * sizeof *t->columns);
    for (uint32_t i = 0; i < t->sum_count; i++)
        tes__free(a, (void *)t->sums[i].max, (size_t)t->sums[i].blocks * sizeof *t->sums[i].max);
    tes__free(a, t->sums, (size_t)t->sum_count * sizeof *t->sums);
    tes__map_fini(&t->edges, a);
    tes__free(a, t, sizeof *t);
}

int32_t tes__table_type_index(const tes__table_t *t, tes_comp_t c)
{
    uint32_t lo = 0, hi = t->type_count;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (t->type[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->type_count && t->type[lo] == c ? (int32_t)lo : -1;
}

/* Lays the columns out in a block for `cap` rows: fills offsets (entities
 * at offset 0) and *size. False when the block would not fit in size_t
 * (each column is cap * size bytes: 2^18 rows of a 1 GiB component already
 * pass 2^48, and a few thousand such columns pass 2^64). */
bool tes__table_layout(const tes__component_t *const *columns, uint32_t count, uint32_t cap,
                       size_t *offsets, size_t *size)
{
    size_t end;
    if (!tes__size_mul(&end, cap, sizeof(tes_entity_t)))
        return false;
    for (uint32_t i = 0; i < count; i++) {
        if (!tes__size_align(&end, end, columns[i]->align))
            return false;
        offsets[i] = end;
        if (!tes__size_mul_add(&end, cap, columns[i]->size, end))
            return false;
    }
    *size = end;
    return true;
}

static bool block_layout(const tes__table_t *t, uint32_t cap, size_t *offsets, size_t *size)
{
    size_t end;
    if (!tes__size_mul(&end, cap, sizeof(tes_entity_t)))
        return false;
    for (uint32_t i = 0; i < t->column_count; i++) {
        if (!tes__size_align(&end, end, t->columns[i].info->align))
            return false;
        offsets[i] = end;
        if (!tes__size_mul_add(&end, cap, t->columns[i].size, end))
            return false;
    }
    *size = end;
    return true;
}

/* Copies each small id's column start into data_of (after the columns
 * moved to a new block). */
static void sync_data_of(tes__table_t *t)
{
    for (uint32_t i = 0; i < t->column_count; i++)
        if (t->columns[i].id < TES__TABLE_DIRECT_IDS)
            t->data_of[t->columns[i].id] = t->columns[i].data;
}

/* Points the table at a new block laid out by `offsets` for cap rows. */
static void adopt_block(tes__table_t *t, uint8_t *block, size_t size, const size_t *offsets,
                        uint64_t cap)
{
    for (uint32_t i = 0; i < t->column_count; i++)
        t->columns[i].data = block + offsets[i];
    sync_data_of(t);
    t->block = block;
    t->block_size = size;
    t->entities = (tes_entity_t *)(void *)block;
    t->cap = (uint32_t)cap;
}

/* Grows every summary of a tracked table to cover cap rows (before the
 * block grows, so a failure changes nothing that matters: a longer summary
 * is only unused). New blocks hold 0 and the summary's epoch is cleared,
 * so no query trusts it before a rebuild. TES_OK or TES_ERR_NOMEM. */
static int grow_sums(tes__table_t *t, tes__alloc_t *a, uint32_t cap)
{
    uint32_t blocks = (cap + TES__STAMP_BLOCK - 1) >> TES__STAMP_BLOCK_BITS;
    for (uint32_t i = 0; i < t->sum_count; i++) {
        tes__stamp_sum_t *s = &t->sums[i];
        if (s->blocks >= blocks)
            continue;
        void *p = (void *)s->max;
        if (tes__grow(a, &p, &s->blocks, blocks, sizeof *s->max, blocks))
            return TES_ERR_NOMEM;
        s->max = p;
        atomic_store_explicit(&s->epoch, 0, memory_order_relaxed);
    }
    return TES_OK;
}

int tes__table_reserve_slow(tes__table_t *t, tes__alloc_t *a, uint32_t extra)
{
    uint64_t need = (uint64_t)t->count + extra;
    bool fits = need <= t->cap;
    if (fits && (!TES__DEBUG_MOVES || !t->cap))
        return TES_OK;
    if (need > UINT32_MAX / 2)
        return TES_ERR_NOMEM;
    uint64_t cap = fits ? t->cap : t->cap ? (uint64_t)t->cap * 2 : 16;
    if (cap < need)
        cap = need;
    if (t->sum_count && grow_sums(t, a, (uint32_t)cap))
        return TES_ERR_NOMEM;
    /* Old and new column offsets: on the stack for the common case. */
    size_t small[32];
    size_t *offsets = small;
    size_t scratch;
    if (!tes__size_mul(&scratch, t->column_count, 2 * sizeof *offsets))
        return TES_ERR_NOMEM;
    if (t->column_count > 16 && !(offsets = tes__malloc(a, scratch)))
        return TES_ERR_NOMEM;
    size_t *old = offsets + t->column_count;
    for (uint32_t i = 0; i < t->column_count; i++)
        old[i] = t->block ? (size_t)(t->columns[i].data - (uint8_t *)t->block) : 0;
    size_t size = 0;
    int rc = TES_ERR_NOMEM;
    uint8_t *block;
    if (!block_layout(t, (uint32_t)cap, offsets, &size)) {
        /* Larger than any block can be: rc stays TES_ERR_NOMEM. */
    } else if (!(t->flags & TES__TABLE_HAS_MOVE) && !TES__DEBUG_MOVES) {
        /* Plain bytes: grow in place when the allocator can, then slide the
         * columns up to their new offsets, last column first (new offsets
         * are never below old ones, so nothing is overwritten early). */
        if ((block = tes__realloc(a, t->block, t->block_size, size)) != NULL) {
            for (uint32_t i = t->column_count; i-- > 0 && t->count;)
                memmove(block + offsets[i], block + old[i],
                        (size_t)t->count * t->columns[i].size);
            adopt_block(t, block, size, offsets, cap);
            rc = TES_OK;
        }
    } else if ((block = tes__malloc(a, size)) != NULL) {
        /* Move hooks relocate into fresh memory, never overlapping. */
        if (t->count) {
            memcpy(block, t->entities, (size_t)t->count * sizeof *t->entities);
            for (uint32_t i = 0; i < t->column_count; i++)
                tes__component_move(t->columns[i].info, block + offsets[i], t->columns[i].data,
                                    t->count);
        }
        tes__free(a, t->block, t->block_size);
        adopt_block(t, block, size, offsets, cap);
        rc = TES_OK;
    }
    if (offsets != small)
        tes__free(a, offsets, scratch);
    /* A debug move of a table that had room is not a real need: failing to
     * allocate for it changes nothing. */
    return fits ? TES_OK : rc;
}

void tes__table_adopt(tes__table_t *t, tes__alloc_t *a, void *block, size_t size, uint32_t cap)
{
    tes__assert(t->count == 0 && !(t->flags & TES__TABLE_VIRTUAL));
    tes__free(a, t->block, t->block_size);
    /* The layout of tes__table_layout, recomputed column by column (the
     * caller laid the block out for these columns, so nothing overflows). */
    size_t end = (size_t)cap * sizeof(tes_entity_t);
    for (uint32_t i = 0; i < t->column_count; i++) {
        size_t align = t->columns[i].info->align ? t->columns[i].info->align : 1;
        end = (end + align - 1) / align * align;
        t->columns[i].data = (uint8_t *)block + end;
        end += (size_t)cap * t->columns[i].size;
    }
    tes__assert(end <= size);
    sync_data_of(t);
    t->block = block;
    t->block_size = size;
    t->entities = (tes_entity_t *)block;
    t->cap = cap;
}

void tes__table_construct(tes__table_t *t, uint32_t column, uint32_t row, uint32_t n)
{
    tes__component_construct(t->columns[column].info, tes__table_cell(t, column, row), n);
}

void tes__table_destruct_row(tes__table_t *t, uint32_t row)
{
    if (!(t->flags & TES__TABLE_HAS_DTOR))
        return;
    for (uint32_t i = 0; i < t->column_count; i++)
        tes__component_destruct(t->columns[i].info, tes__table_cell(t, i, row), 1);
}

tes_entity_t tes__table_remove_row(tes__table_t *t, uint32_t row)
{
    if (t->flags & TES__TABLE_VIRTUAL)
        return TES_NULL;
    tes__assert(row < t->count);
    uint32_t last = --t->count;
    if (row == last)
        return TES_NULL;
    t->entities[row] = t->entities[last];
    for (uint32_t i = 0; i < t->column_count; i++)
        tes__component_move1(t->columns[i].info, tes__table_cell(t, i, row),
                             tes__table_cell(t, i, last));
    return t->entities[row];
}

uint32_t tes__table_move_row(tes__table_t *dst, tes__table_t *src, uint32_t src_row,
                             tes_entity_t e, tes_entity_t *moved)
{
    uint32_t dst_row = tes__table_push(dst, e);
    uint32_t i = 0, j = 0; /* i walks dst columns, j walks src columns */
    while (i < dst->column_count || j < src->column_count) {
        tes_comp_t di = i < dst->column_count ? dst->columns[i].id : UINT32_MAX;
        tes_comp_t sj = j < src->column_count ? src->columns[j].id : UINT32_MAX;
        if (di == sj) {
            tes__component_move1(dst->columns[i].info, tes__table_cell(dst, i, dst_row),
                                 tes__table_cell(src, j, src_row));
            i++, j++;
        } else if (di < sj) {
            tes__component_construct1(dst->columns[i].info, tes__table_cell(dst, i, dst_row));
            i++;
        } else {
            tes__component_destruct(src->columns[j].info, tes__table_cell(src, j, src_row), 1);
            j++;
        }
    }
    *moved = tes__table_remove_row(src, src_row);
    return dst_row;
}

/* ------------------------------------------------------------ add edge copies */

/* The size classes of tes__table_add_cells_for: every column of the
 * wider table holds 8 to 16 bytes (two 8-byte moves per cell, overlapping
 * for 12), 4 to 8 bytes (two 4-byte moves), or anything up to
 * TES__SMALL_BYTES (tes__copy_small, which tests the size). */
enum { CELLS_MID, CELLS_SMALL, CELLS_ANY };

static tes__always_inline void copy_cell(uint8_t *d, const uint8_t *s, uint32_t size, int cls)
{
    if (cls == CELLS_MID) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + size - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + size - 8, &b, 8);
    } else if (cls == CELLS_SMALL) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + size - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + size - 4, &b, 4);
    } else {
        tes__copy_small(d, s, size);
    }
}

/* The body of every add_cells form, for n columns in dst (src has n - 1,
 * or n for a tag) of which the one at split is the added cell (split == n
 * for a tag): the added cell first (value is then no longer needed), then
 * the columns below split, which sit at the same position in both tables,
 * then the ones above it, one further on in dst. The forms made for a
 * small table pass n and split as constants, so the loops unroll into
 * straight code that keeps every value in the registers a call may use;
 * the others read them from dst and the edge. */
static tes__always_inline int add_cells(tes__table_t *dst, size_t dst_row,
                                        const tes__table_t *src, const void *value,
                                        size_t src_row, uint32_t n, uint32_t split, int cls)
{
    /* Read once: the byte copies could alias any field of the tables. */
    const tes__column_t *dc = dst->columns, *sc = src->columns;
    bool cell = split < n;
    tes__assert(n == dst->column_count && n == src->column_count + cell);
    if (cell)
        copy_cell(dc[split].data + dst_row * dc[split].size, value, dc[split].size, cls);
    for (uint32_t i = 0; i < split; i++)
        copy_cell(dc[i].data + dst_row * dc[i].size, sc[i].data + src_row * dc[i].size,
                  dc[i].size, cls);
    for (uint32_t i = split + 1; i < n; i++)
        copy_cell(dc[i].data + dst_row * dc[i].size, sc[i - 1].data + src_row * dc[i].size,
                  dc[i].size, cls);
    return TES_OK;
}

/* The forms for any table: n from dst, split from the source's add edge. */
#define LOOP_FORM(cls_name, cls)                                                               \
    static int add_cells_##cls_name(tes__table_t *dst, size_t dst_row,                         \
                                    const tes__table_t *src, const void *value,                \
                                    size_t src_row)                                            \
    {                                                                                          \
        return add_cells(dst, dst_row, src, value, src_row, dst->column_count,                 \
                         src->last_edge[1].split, cls);                                        \
    }
LOOP_FORM(mid, CELLS_MID)
LOOP_FORM(small, CELLS_SMALL)
LOOP_FORM(any, CELLS_ANY)
#undef LOOP_FORM

/* The straight forms: tables of up to four columns, all of 8 to 16 bytes
 * (three 4-byte floats, two doubles, a pointer and a count...), the
 * common case of an entity being built up one component at a time. */
#define STRAIGHT_FORM(n, split)                                                                \
    static int add_cells_##n##_##split(tes__table_t *dst, size_t dst_row,                      \
                                       const tes__table_t *src, const void *value,             \
                                       size_t src_row)                                         \
    {                                                                                          \
        return add_cells(dst, dst_row, src, value, src_row, n, split, CELLS_MID);              \
    }
STRAIGHT_FORM(1, 0)
STRAIGHT_FORM(1, 1)
STRAIGHT_FORM(2, 0)
STRAIGHT_FORM(2, 1)
STRAIGHT_FORM(2, 2)
STRAIGHT_FORM(3, 0)
STRAIGHT_FORM(3, 1)
STRAIGHT_FORM(3, 2)
STRAIGHT_FORM(3, 3)
STRAIGHT_FORM(4, 0)
STRAIGHT_FORM(4, 1)
STRAIGHT_FORM(4, 2)
STRAIGHT_FORM(4, 3)
STRAIGHT_FORM(4, 4)
#undef STRAIGHT_FORM

/* A tag added to a table with no column: nothing to copy. */
static int add_cells_none(tes__table_t *dst, size_t dst_row, const tes__table_t *src,
                          const void *value, size_t src_row)
{
    (void)dst, (void)dst_row, (void)src, (void)src_row, (void)value;
    return TES_OK;
}

#define STRAIGHT_COLUMNS 4
static const tes__add_cells_fn straight_forms[STRAIGHT_COLUMNS + 1][STRAIGHT_COLUMNS + 1] = {
    {add_cells_none},
    {add_cells_1_0, add_cells_1_1},
    {add_cells_2_0, add_cells_2_1, add_cells_2_2},
    {add_cells_3_0, add_cells_3_1, add_cells_3_2, add_cells_3_3},
    {add_cells_4_0, add_cells_4_1, add_cells_4_2, add_cells_4_3, add_cells_4_4},
};

tes__add_cells_fn tes__table_add_cells_for(const tes__table_t *wide, uint32_t split)
{
    uint32_t n = wide->column_count;
    bool mid = true, small = true;
    tes__assert(split <= n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t size = wide->columns[i].size;
        tes__assert(size <= TES__SMALL_BYTES);
        mid &= size >= 8 && size <= 16;
        small &= size >= 4 && size <= 8;
    }
    if (mid && n <= STRAIGHT_COLUMNS)
        return straight_forms[n][split];
    if (mid)
        return add_cells_mid;
    return small ? add_cells_small : add_cells_any;
}
