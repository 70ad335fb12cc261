/*
 * Table rows and columns: construction, relocation between tables, and
 * growth of the single column block. Relocation walks both tables' columns
 * as two sorted lists (a merge), so moving an entity costs one pass over
 * the columns with no lookups.
 */
#include "storage/table.h"

#include <string.h>

uint64_t tes__type_hash(const tes_comp_t *type, uint32_t count)
{
    return tes__hash_bytes(type, (size_t)count * sizeof *type);
}

tes__table_t *tes__table_new(tes__alloc_t *a, const tes__registry_t *r, uint32_t id,
                             const tes_comp_t *type, uint32_t type_count)
{
    tes__table_t *t = tes__calloc(a, sizeof *t);
    if (!t)
        return NULL;
    t->id = id;
    t->hash = tes__type_hash(type, type_count);
    uint32_t columns = 0;
    for (uint32_t i = 0; i < type_count; i++)
        if (tes__registry_get(r, type[i])->size)
            columns++;
    if (type_count) {
        t->type = tes__malloc(a, (size_t)type_count * sizeof *t->type);
        if (!t->type)
            goto fail;
        memcpy(t->type, type, (size_t)type_count * sizeof *type);
        t->type_count = type_count;
    }
    if (columns) {
        t->columns = tes__calloc(a, (size_t)columns * sizeof *t->columns);
        if (!t->columns)
            goto fail;
        t->column_count = columns;
        uint32_t col = 0;
        for (uint32_t i = 0; i < type_count; i++) {
            const tes__component_t *info = tes__registry_get(r, type[i]);
            if (info->size) {
                t->columns[col].info = info;
                t->columns[col].size = info->size;
                col++;
            }
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

int32_t tes__table_column_index(const tes__table_t *t, tes_comp_t c)
{
    /* Types are short: a linear scan beats a binary search here. */
    for (uint32_t i = 0; i < t->column_count; i++) {
        tes_comp_t id = t->columns[i].info->id;
        if (id >= c)
            return id == c ? (int32_t)i : -1;
    }
    return -1;
}

static size_t align_up(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }

/* Lays the columns out in a block for `cap` rows; returns the block size and
 * fills offsets (entities at offset 0). */
static size_t block_layout(const tes__table_t *t, uint32_t cap, size_t *offsets)
{
    size_t size = (size_t)cap * sizeof(tes_entity_t);
    for (uint32_t i = 0; i < t->column_count; i++) {
        size = align_up(size, t->columns[i].info->align);
        offsets[i] = size;
        size += (size_t)cap * t->columns[i].size;
    }
    return size;
}

int tes__table_reserve(tes__table_t *t, tes__alloc_t *a, uint32_t extra)
{
    uint64_t need = (uint64_t)t->count + extra;
    if (need <= t->cap)
        return TES_OK;
    if (need > UINT32_MAX / 2)
        return TES_ERR_NOMEM;
    uint64_t cap = t->cap ? (uint64_t)t->cap * 2 : 16;
    if (cap < need)
        cap = need;
    /* Offsets live on the stack for the common case, else in a temporary. */
    size_t small[16];
    size_t *offsets = small;
    if (t->column_count > 16) {
        offsets = tes__malloc(a, (size_t)t->column_count * sizeof *offsets);
        if (!offsets)
            return TES_ERR_NOMEM;
    }
    size_t size = block_layout(t, (uint32_t)cap, offsets);
    uint8_t *block = tes__malloc(a, size);
    int rc = TES_ERR_NOMEM;
    if (block) {
        rc = TES_OK;
        if (t->count)
            memcpy(block, t->entities, (size_t)t->count * sizeof *t->entities);
        for (uint32_t i = 0; i < t->column_count; i++) {
            tes__column_t *col = &t->columns[i];
            uint8_t *data = block + offsets[i];
            if (t->count)
                tes__component_move(col->info, data, col->data, t->count);
            col->data = data;
        }
        tes__free(a, t->block, t->block_size);
        t->block = block;
        t->block_size = size;
        t->entities = (tes_entity_t *)(void *)block;
        t->cap = (uint32_t)cap;
    }
    if (offsets != small)
        tes__free(a, offsets, (size_t)t->column_count * sizeof *offsets);
    return rc;
}

void tes__table_construct(tes__table_t *t, uint32_t column, uint32_t row, uint32_t n)
{
    tes__component_construct(t->columns[column].info, tes__table_cell(t, column, row), n);
}

void tes__table_destruct_row(tes__table_t *t, uint32_t row)
{
    for (uint32_t i = 0; i < t->column_count; i++)
        tes__component_destruct(t->columns[i].info, tes__table_cell(t, i, row), 1);
}

tes_entity_t tes__table_remove_row(tes__table_t *t, uint32_t row)
{
    tes__assert(row < t->count);
    uint32_t last = --t->count;
    if (row == last)
        return TES_NULL;
    t->entities[row] = t->entities[last];
    for (uint32_t i = 0; i < t->column_count; i++)
        tes__component_move(t->columns[i].info, tes__table_cell(t, i, row), tes__table_cell(t, i, last), 1);
    return t->entities[row];
}

uint32_t tes__table_move_row(tes__table_t *dst, tes__table_t *src, uint32_t src_row,
                             tes_entity_t *moved)
{
    uint32_t dst_row = tes__table_push(dst, src->entities[src_row]);
    uint32_t i = 0, j = 0; /* i walks dst columns, j walks src columns */
    while (i < dst->column_count || j < src->column_count) {
        tes_comp_t di = i < dst->column_count ? dst->columns[i].info->id : UINT32_MAX;
        tes_comp_t sj = j < src->column_count ? src->columns[j].info->id : UINT32_MAX;
        if (di == sj) {
            tes__component_move(dst->columns[i].info, tes__table_cell(dst, i, dst_row),
                     tes__table_cell(src, j, src_row), 1);
            i++, j++;
        } else if (di < sj) {
            tes__table_construct(dst, i, dst_row, 1);
            i++;
        } else {
            tes__component_destruct(src->columns[j].info, tes__table_cell(src, j, src_row), 1);
            j++;
        }
    }
    *moved = tes__table_remove_row(src, src_row);
    return dst_row;
}
