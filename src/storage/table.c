/*
 * Table rows and columns: construction, removal of rows, and growth of
 * the single column block. Moving rows between tables is the move plan's
 * (move_plan.h, which stands above this unit).
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
            const tes__component_t *stamp = info->stamp_info[0];
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
                const tes__component_t *ci = k ? info->stamp_info[k - 1] : info;
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
    /* The new column offsets: on the stack for the common case. */
    size_t small[32];
    size_t *offsets = small;
    size_t scratch;
    if (!tes__size_mul(&scratch, t->column_count, sizeof *offsets))
        return TES_ERR_NOMEM;
    if (t->column_count > 32 && !(offsets = tes__malloc(a, scratch)))
        return TES_ERR_NOMEM;
    size_t size = 0;
    int rc = TES_ERR_NOMEM;
    uint8_t *block;
    if (!block_layout(t, (uint32_t)cap, offsets, &size)) {
        /* Larger than any block can be: rc stays TES_ERR_NOMEM. */
    } else if ((block = tes__malloc(a, size)) != NULL) {
        /* Fresh memory and one copy of each column's rows (move hooks
         * relocate): a realloc would copy the whole block and the columns
         * would then slide to their new offsets, a second copy. */
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

/* Where column c of t starts in a block laid out for t's capacity (the
 * layout of tes__table_layout, which the caller's block was made by). */
static size_t permute_column_offset(const tes__table_t *t, uint32_t c)
{
    size_t end = (size_t)t->cap * sizeof(tes_entity_t);
    for (uint32_t i = 0;; i++) {
        size_t align = t->columns[i].info->align ? t->columns[i].info->align : 1;
        end = (end + align - 1) / align * align;
        if (i == c)
            return end;
        end += (size_t)t->cap * t->columns[i].size;
    }
}

void tes__table_permute(tes__table_t *t, tes__alloc_t *a, void *block, size_t size,
                        const uint32_t *perm)
{
    tes__assert(!(t->flags & TES__TABLE_VIRTUAL) && block);
    uint32_t n = t->count;
    tes_entity_t *ents = (tes_entity_t *)block;
    for (uint32_t i = 0; i < n; i++)
        ents[i] = t->entities[perm[i]];
    for (uint32_t c = 0; c < t->column_count; c++) {
        const tes__column_t *col = &t->columns[c];
        uint8_t *dst = (uint8_t *)block + permute_column_offset(t, c);
        size_t sz = col->size;
        tes__assert(dst + (size_t)t->cap * sz <= (uint8_t *)block + size);
        if (col->info->hooks.move) {
            for (uint32_t i = 0; i < n; i++)
                tes__component_move1(col->info, dst + i * sz, col->data + (size_t)perm[i] * sz);
        } else {
            /* A loop per common size: a fixed-size copy the compiler
             * inlines, not a call into libc per value. */
#define PERMUTE_COPY(size)                                                                   \
    for (uint32_t i = 0; i < n; i++)                                                         \
        memcpy(dst + i * (size), col->data + (size_t)perm[i] * (size), (size));
            switch (sz) {
            case 4: PERMUTE_COPY(4) break;
            case 8: PERMUTE_COPY(8) break;
            case 12: PERMUTE_COPY(12) break;
            case 16: PERMUTE_COPY(16) break;
            default: PERMUTE_COPY(sz) break;
            }
#undef PERMUTE_COPY
        }
    }
    /* Same columns and capacity: only the addresses change. */
    for (uint32_t c = 0; c < t->column_count; c++)
        t->columns[c].data = (uint8_t *)block + permute_column_offset(t, c);
    tes__free(a, t->block, t->block_size);
    sync_data_of(t);
    t->block = block;
    t->block_size = size;
    t->entities = ents;
    t->row_changes++;
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
    uint32_t last = t->count - 1;
    tes__table_set_count(t, last);
    if (row == last)
        return TES_NULL;
    t->entities[row] = t->entities[last];
    for (uint32_t i = 0; i < t->column_count; i++)
        tes__component_move1(t->columns[i].info, tes__table_cell(t, i, row),
                             tes__table_cell(t, i, last));
    return t->entities[row];
}
