/*
 * Move plans (move_plan.h): making a plan, and its copy routines. Each
 * plan has two, picked once, in tes__plan_make, from what the plan's
 * tables and values are: `one` for a single row (the quiet add's hot
 * case: the plan, the two rows and the value, no test per call) and
 * `cells` for n rows (flushed runs, bulk spawns, whole tables):
 *
 * - the edge forms, for a plain plan that adds one component given as a
 *   direct value (a cached add edge: tes_set and tes_add one component at
 *   a time). Every column of the wider table falls in one size class (8 to
 *   16 bytes, 4 to 8, or any size up to TES__SMALL_BYTES), and for up to
 *   four columns of 8 to 16 bytes the column count and split are
 *   constants, so the copy is straight code; when every column of both
 *   tables holds 12 bytes (the commonest shape: three floats per
 *   component) a second set of these forms has the cell size as a
 *   constant too, so a cell's address loads no size and its copy tests
 *   nothing;
 * - the drop forms, their mirror for a plain plan that removes one
 *   component (a cached remove edge), straight the same way;
 * - the value forms, for a plain bundle placed from the root (every cell
 *   a value of 8 to 16 bytes read from the call's table): straight for up
 *   to four values, of constant size for 12-byte cells the same way;
 * - the list forms, for the other plain plans: three lists (moved, value,
 *   constructed) walked as bytes, with a form for columns of 8 to 16 bytes
 *   that tests no size; several rows go column by column;
 * - the walk, for plans whose tables run hooks, hold large values, or are
 *   too wide to list: it matches the columns by id and runs the move,
 *   ctor, copy and dtor hooks.
 *
 * Tuned for one row at a time on the quiet add and for runs of thousands
 * of rows on the flush and the bulk spawn: the one-row forms are the
 * straight per-shape copies the quiet paths had before there was one
 * plan type, and cost the same instructions.
 */
#include "storage/move_plan.h"

#include "storage/table.h"

/* The size classes: every column holds 8 to 16 bytes (two 8-byte moves
 * per cell, or 8 + 4 for 12: tes__copy_mid), 4 to 8 bytes (two 4-byte
 * moves), anything up to TES__SMALL_BYTES (tes__copy_small, which tests
 * the size), or exactly 12 bytes (8 + 4, nothing tested). */
enum { CELLS_MID, CELLS_SMALL, CELLS_ANY, CELLS_12 };

/* The size of the cells of column c, as the size class says: CELLS_12 (a
 * plan whose every column holds 12 bytes, see cell12) makes it a
 * constant, so the cell's address needs no load of the size and its copy
 * (8 + 4 bytes) tests nothing. */
static tes__always_inline uint32_t cell_size(const tes__column_t *c, int cls)
{
    return cls == CELLS_12 ? 12u : c->size;
}

static tes__always_inline void copy_cell(uint8_t *d, const uint8_t *s, uint32_t size, int cls)
{
    if (cls == CELLS_MID || cls == CELLS_12) {
        /* For CELLS_12, size is the constant of cell_size. */
        tes__copy_mid(d, s, size);
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

/* The cell value r of n gives: the r-th of n consecutive values, or a zero
 * cell for no value. */
static tes__always_inline const uint8_t *nth_value(const void *value, size_t r, uint32_t size)
{
    return value ? (const uint8_t *)value + r * size : tes__zero_cell;
}

/* ------------------------------------------------------------ edge forms */

/* The body of every edge form, for one row and ncols columns in dst (src
 * has ncols - 1, or ncols for a tag) of which the one at split is the
 * added cell (split == ncols for a tag): the added cell first (value is
 * then no longer needed), then the columns below split, which sit at the
 * same position in both tables, then the ones above it, one further on in
 * dst. The forms made for a small table pass ncols and split as
 * constants, so the loops unroll into straight code that keeps every
 * value in the registers a call may use; the others read them from the
 * plan. */
static tes__always_inline int edge_cells(const tes__move_plan_t *p, size_t dst_row,
                                         size_t src_row, const void *value, uint32_t ncols,
                                         uint32_t split, int cls)
{
    /* Read once: the byte copies could alias any field of the plan. */
    const tes__column_t *dc = p->dst_cols, *sc = p->src_cols;
    bool cell = split < ncols;
    tes__assert(ncols == p->dst->column_count && ncols == p->src->column_count + cell &&
                dc == p->dst->columns && sc == p->src->columns);
    if (cell) {
        uint32_t size = cell_size(&dc[split], cls);
        copy_cell(dc[split].data + dst_row * size, value, size, cls);
    }
    for (uint32_t i = 0; i < split; i++) {
        uint32_t size = cell_size(&dc[i], cls);
        copy_cell(dc[i].data + dst_row * size, sc[i].data + src_row * size, size, cls);
    }
    for (uint32_t i = split + 1; i < ncols; i++) {
        uint32_t size = cell_size(&dc[i], cls);
        copy_cell(dc[i].data + dst_row * size, sc[i - 1].data + src_row * size, size, cls);
    }
    return TES_OK;
}

/* Several rows along an edge: one at a time (edges move rows one by one;
 * a run of them takes a list form). */
static int edge_rows(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                     const void *value, size_t n)
{
    tes__table_t *dst = p->dst;
    uint32_t size = p->split < dst->column_count ? dst->columns[p->split].size : 0;
    tes__assert(p->value_direct);
    for (size_t r = 0; r < n; r++)
        edge_cells(p, dst_row + r, src_row + r, nth_value(value, r, size), dst->column_count,
                   p->split, CELLS_ANY);
    return TES_OK;
}

/* The forms for any table: the column count from dst, the split from the
 * plan. */
#define LOOP_FORM(cls_name, cls)                                                               \
    static int edge_##cls_name(const tes__move_plan_t *p, size_t dst_row, size_t src_row,      \
                               const void *value)                                              \
    {                                                                                          \
        return edge_cells(p, dst_row, src_row, value, p->dst->column_count, p->split, cls);    \
    }
LOOP_FORM(mid, CELLS_MID)
LOOP_FORM(small, CELLS_SMALL)
LOOP_FORM(any, CELLS_ANY)
#undef LOOP_FORM

/* The straight forms: tables of up to four columns, all of 8 to 16 bytes
 * (three 4-byte floats, two doubles, a pointer and a count...), the
 * common case of an entity being built up one component at a time. */
#define STRAIGHT_FORM(ncols, split)                                                            \
    static int edge_##ncols##_##split(const tes__move_plan_t *p, size_t dst_row,               \
                                      size_t src_row, const void *value)                       \
    {                                                                                          \
        return edge_cells(p, dst_row, src_row, value, ncols, split, CELLS_MID);                \
    }                                                                                          \
    static int edge12_##ncols##_##split(const tes__move_plan_t *p, size_t dst_row,             \
                                        size_t src_row, const void *value)                     \
    {                                                                                          \
        return edge_cells(p, dst_row, src_row, value, ncols, split, CELLS_12);                 \
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

/* Nothing to copy: a tag added to a table with no column, or rows that
 * leave a table with no column. */
static int one_none(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                    const void *value)
{
    (void)p, (void)dst_row, (void)src_row, (void)value;
    return TES_OK;
}
static int cells_none(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                      const void *value, size_t n)
{
    (void)p, (void)dst_row, (void)src_row, (void)value, (void)n;
    return TES_OK;
}

/* The drop forms, the edge forms' mirror for a plain plan that removes
 * one component: ncols columns in dst (src has ncols + 1, or ncols for a
 * tag), the source column at split dropped (split == ncols for a tag):
 * the columns below split sit at the same position in both tables, the
 * ones from it on one further on in src. Nothing is given; the dropped
 * cell is left behind as bytes. */
static tes__always_inline int drop_cells(const tes__move_plan_t *p, size_t dst_row,
                                         size_t src_row, uint32_t ncols, uint32_t split, int cls)
{
    const tes__column_t *dc = p->dst_cols, *sc = p->src_cols;
    tes__assert(ncols == p->dst->column_count && split <= ncols &&
                (p->src->column_count == ncols || p->src->column_count == ncols + 1) &&
                dc == p->dst->columns && sc == p->src->columns);
    for (uint32_t i = 0; i < split; i++) {
        uint32_t size = cell_size(&dc[i], cls);
        copy_cell(dc[i].data + dst_row * size, sc[i].data + src_row * size, size, cls);
    }
    for (uint32_t i = split; i < ncols; i++) {
        uint32_t size = cell_size(&dc[i], cls);
        copy_cell(dc[i].data + dst_row * size, sc[i + 1].data + src_row * size, size, cls);
    }
    return TES_OK;
}

#define DROP_LOOP(cls_name, cls)                                                               \
    static int drop_##cls_name(const tes__move_plan_t *p, size_t dst_row, size_t src_row,      \
                               const void *value)                                              \
    {                                                                                          \
        (void)value;                                                                           \
        return drop_cells(p, dst_row, src_row, p->dst->column_count, p->split, cls);           \
    }
DROP_LOOP(mid, CELLS_MID)
DROP_LOOP(small, CELLS_SMALL)
DROP_LOOP(any, CELLS_ANY)
#undef DROP_LOOP

#define DROP_FORM(ncols, split)                                                                \
    static int drop_##ncols##_##split(const tes__move_plan_t *p, size_t dst_row,               \
                                      size_t src_row, const void *value)                       \
    {                                                                                          \
        (void)value;                                                                           \
        return drop_cells(p, dst_row, src_row, ncols, split, CELLS_MID);                       \
    }                                                                                          \
    static int drop12_##ncols##_##split(const tes__move_plan_t *p, size_t dst_row,             \
                                        size_t src_row, const void *value)                     \
    {                                                                                          \
        (void)value;                                                                           \
        return drop_cells(p, dst_row, src_row, ncols, split, CELLS_12);                        \
    }
DROP_FORM(1, 0)
DROP_FORM(1, 1)
DROP_FORM(2, 0)
DROP_FORM(2, 1)
DROP_FORM(2, 2)
DROP_FORM(3, 0)
DROP_FORM(3, 1)
DROP_FORM(3, 2)
DROP_FORM(3, 3)
DROP_FORM(4, 0)
DROP_FORM(4, 1)
DROP_FORM(4, 2)
DROP_FORM(4, 3)
DROP_FORM(4, 4)
#undef DROP_FORM

#define STRAIGHT_COLUMNS 4
/* The straight forms by column count and split; the second table of each
 * pair is for tables whose every column holds 12 bytes (see cell12). */
static const tes__cell1_fn straight_forms[2][STRAIGHT_COLUMNS + 1][STRAIGHT_COLUMNS + 1] = {
    {
        {one_none},
        {edge_1_0, edge_1_1},
        {edge_2_0, edge_2_1, edge_2_2},
        {edge_3_0, edge_3_1, edge_3_2, edge_3_3},
        {edge_4_0, edge_4_1, edge_4_2, edge_4_3, edge_4_4},
    },
    {
        {one_none},
        {edge12_1_0, edge12_1_1},
        {edge12_2_0, edge12_2_1, edge12_2_2},
        {edge12_3_0, edge12_3_1, edge12_3_2, edge12_3_3},
        {edge12_4_0, edge12_4_1, edge12_4_2, edge12_4_3, edge12_4_4},
    },
};

static const tes__cell1_fn drop_forms[2][STRAIGHT_COLUMNS + 1][STRAIGHT_COLUMNS + 1] = {
    {
        {one_none},
        {drop_1_0, drop_1_1},
        {drop_2_0, drop_2_1, drop_2_2},
        {drop_3_0, drop_3_1, drop_3_2, drop_3_3},
        {drop_4_0, drop_4_1, drop_4_2, drop_4_3, drop_4_4},
    },
    {
        {one_none},
        {drop12_1_0, drop12_1_1},
        {drop12_2_0, drop12_2_1, drop12_2_2},
        {drop12_3_0, drop12_3_1, drop12_3_2, drop12_3_3},
        {drop12_4_0, drop12_4_1, drop12_4_2, drop12_4_3, drop12_4_4},
    },
};

/* ------------------------------------------------------------ list forms */

/* Several rows of a list plan: column by column, one copy or fill each.
 * Out of line, so that the one-row forms save no registers for it. */
static tes__noinline int list_rows(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                                   const void *values, size_t n)
{
    const tes__column_t *dc = p->dst->columns, *sc = p->src->columns;
    for (uint32_t i = 0; i < p->moves; i++) {
        const tes__column_t *col = &dc[p->move_col[i]];
        memcpy(col->data + dst_row * col->size, sc[p->move_from[i]].data + src_row * col->size,
               n * col->size);
    }
    for (uint32_t i = 0; values != TES__PLAN_RAW && i < p->values; i++) {
        const tes__column_t *col = &dc[p->value_col[i]];
        const void *v = tes__plan_value(p, values, p->value_from[i]);
        if (v)
            memcpy(col->data + dst_row * col->size, v, n * col->size);
        else
            memset(col->data + dst_row * col->size, 0, n * col->size);
    }
    for (uint32_t i = 0; i < p->constructs; i++) {
        const tes__column_t *col = &dc[p->construct_col[i]];
        memset(col->data + dst_row * col->size, 0, n * col->size);
    }
    return TES_OK;
}


/* One row of a list plan: each list walked as bytes of size class cls. */
static tes__always_inline int list_cell(const tes__move_plan_t *p, size_t dst_row,
                                        size_t src_row, const void *values, int cls)
{
    const tes__column_t *dc = p->dst_cols, *sc = p->src_cols;
    /* The counts read once: the byte copies could alias the plan. */
    uint32_t moves = p->moves, nv = p->values, constructs = p->constructs;
    for (uint32_t i = 0; i < moves; i++) {
        const tes__column_t *col = &dc[p->move_col[i]];
        copy_cell(col->data + dst_row * col->size,
                  sc[p->move_from[i]].data + src_row * col->size, col->size, cls);
    }
    const unsigned char *table = p->value_direct ? NULL : values;
    for (uint32_t i = 0; i < nv; i++) {
        const tes__column_t *col = &dc[p->value_col[i]];
        const void *v = values;
        if (table)
            memcpy(&v, table + p->value_at[i], sizeof v);
        copy_cell(col->data + dst_row * col->size, v ? v : tes__zero_cell, col->size, cls);
    }
    for (uint32_t i = 0; i < constructs; i++) {
        const tes__column_t *col = &dc[p->construct_col[i]];
        tes__zero_small(col->data + dst_row * col->size, col->size);
    }
    return TES_OK;
}

/* A row made of the call's values alone, read from a table (a bundle
 * placed from the root), each of 8 to 16 bytes: one loop over nv values,
 * no other list. The forms for up to four values pass nv as a constant,
 * so the copy is straight code. (Keeping each value's column pointer in
 * the plan would save an index per value, but every table holds two
 * plans, and the bytes per table are bounded.) */
static tes__always_inline int values_cells(const tes__move_plan_t *p, size_t dst_row,
                                           const void *values, uint32_t nv, int cls)
{
    const unsigned char *table = values;
    const tes__column_t *dc = p->dst_cols;
    tes__assert(!p->moves && !p->constructs && !p->value_direct && nv == p->values);
    for (uint32_t i = 0; i < nv; i++) {
        const tes__column_t *col = &dc[p->value_col[i]];
        const void *v;
        memcpy(&v, table + p->value_at[i], sizeof v);
        uint32_t size = cell_size(col, cls);
        copy_cell(col->data + dst_row * size, v ? v : tes__zero_cell, size, cls);
    }
    return TES_OK;
}

static int values_mid(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                      const void *values)
{
    if (tes__unlikely(!values))
        return list_rows(p, dst_row, src_row, values, 1);
    return values_cells(p, dst_row, values, p->values, CELLS_MID);
}

#define VALUES_FORM(nv)                                                                        \
    static int values_##nv(const tes__move_plan_t *p, size_t dst_row, size_t src_row,          \
                           const void *values)                                                 \
    {                                                                                          \
        if (tes__unlikely(!values))                                                            \
            return list_rows(p, dst_row, src_row, values, 1);                                  \
        return values_cells(p, dst_row, values, nv, CELLS_MID);                                \
    }                                                                                          \
    static int values12_##nv(const tes__move_plan_t *p, size_t dst_row, size_t src_row,        \
                             const void *values)                                               \
    {                                                                                          \
        if (tes__unlikely(!values))                                                            \
            return list_rows(p, dst_row, src_row, values, 1);                                  \
        return values_cells(p, dst_row, values, nv, CELLS_12);                                 \
    }
VALUES_FORM(1)
VALUES_FORM(2)
VALUES_FORM(3)
VALUES_FORM(4)
#undef VALUES_FORM

/* By value count; the second row for cells of 12 bytes (see cell12). */
static const tes__cell1_fn values_forms[2][5] = {
    {values_mid, values_1, values_2, values_3, values_4},
    {values_mid, values12_1, values12_2, values12_3, values12_4},
};

static int list_mid(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                    const void *values)
{
    return list_cell(p, dst_row, src_row, values, CELLS_MID);
}

static int list_any(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                    const void *values)
{
    return list_cell(p, dst_row, src_row, values, CELLS_ANY);
}

/* ------------------------------------------------------------ the walk */

/* The value the call gives for component id (the last given wins), or
 * NULL with *given false. */
static const void *value_for(const tes__move_plan_t *p, const void *values, tes_comp_t id,
                             bool *given)
{
    for (uint32_t k = p->nvalues; k-- > 0;) {
        if (p->value_comp[k] == id && (p->valued >> k & 1u)) {
            *given = true;
            return tes__plan_value(p, values, k);
        }
    }
    *given = false;
    return NULL;
}

/* Fills n raw cells with copies of the n values at v: the bytes, when
 * the component has neither ctor nor copy hook (a construction would be
 * overwritten at once), else constructed and then assigned. */
static void write_values(const tes__component_t *info, uint8_t *cells, const void *v, uint32_t n)
{
    if (!info->hooks.ctor && !info->hooks.copy) {
        memcpy(cells, v, (size_t)n * info->size);
        return;
    }
    tes__component_construct(info, cells, n);
    if (info->hooks.copy)
        info->hooks.copy(cells, v, (int32_t)n, info->hooks.ctx);
    else
        memcpy(cells, v, (size_t)n * info->size);
}

/* Walks both tables' columns as two sorted lists (a merge), column by
 * column over the n rows: a shared column is relocated (move hook), then
 * assigned a given value (copy hook); a column only dst has is written
 * from its value or constructed; a column only src has is destroyed. */
static int walk_cells(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                      const void *values, size_t n)
{
    if (values == TES__PLAN_RAW)
        values = NULL; /* constructed, then assigned by the caller */
    const tes__table_t *dst = p->dst, *src = p->src;
    uint32_t rows = (uint32_t)n;
    uint32_t i = 0, j = 0; /* i walks dst columns, j walks src columns */
    while (i < dst->column_count || j < src->column_count) {
        tes_comp_t di = i < dst->column_count ? dst->columns[i].id : UINT32_MAX;
        tes_comp_t sj = j < src->column_count ? src->columns[j].id : UINT32_MAX;
        if (di <= sj) {
            const tes__column_t *col = &dst->columns[i];
            uint8_t *cells = col->data + dst_row * col->size;
            bool given;
            const void *v = value_for(p, values, di, &given);
            if (di == sj) {
                tes__component_move(col->info, cells,
                                    src->columns[j].data + src_row * col->size, rows);
                if (v && col->info->hooks.copy)
                    col->info->hooks.copy(cells, v, (int32_t)rows, col->info->hooks.ctx);
                else if (v)
                    memcpy(cells, v, n * col->size);
                j++;
            } else if (v) {
                write_values(col->info, cells, v, rows);
            } else {
                tes__component_construct(col->info, cells, rows);
            }
            i++;
        } else {
            const tes__column_t *col = &src->columns[j];
            tes__component_destruct(col->info, col->data + src_row * col->size, rows);
            j++;
        }
    }
    return TES_OK;
}

static int walk_one(const tes__move_plan_t *p, size_t dst_row, size_t src_row,
                    const void *values)
{
    return walk_cells(p, dst_row, src_row, values, 1);
}

/* ------------------------------------------------------------ making plans */

/* 1 when every column of both tables holds 12 bytes (three floats, the
 * commonest component), else 0: the row of the straight and value forms
 * made for cells of that constant size. */
static uint32_t cell12(const tes__table_t *src, const tes__table_t *dst)
{
    bool all = true;
    for (uint32_t i = 0; i < src->column_count; i++)
        all &= src->columns[i].size == 12;
    for (uint32_t i = 0; i < dst->column_count; i++)
        all &= dst->columns[i].size == 12;
    return all ? 1u : 0u;
}

/* The edge form for a plain plan adding one column (or tag) at split. */
static tes__cell1_fn edge_form(const tes__table_t *narrow, const tes__table_t *wide,
                               uint32_t split)
{
    uint32_t n = wide->column_count;
    bool mid = true, small = true;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t size = wide->columns[i].size;
        mid &= size >= 8 && size <= 16;
        small &= size >= 4 && size <= 8;
    }
    if (mid && n <= STRAIGHT_COLUMNS)
        return straight_forms[cell12(narrow, wide)][n][split];
    if (mid)
        return edge_mid;
    return small ? edge_small : edge_any;
}

/* The drop form for a plain plan removing the source column at split (or
 * a tag: split == dst's column count, the column lists equal). */
static tes__cell1_fn drop_form(const tes__table_t *src, const tes__table_t *dst, uint32_t split)
{
    uint32_t n = dst->column_count;
    bool mid = true, small = true;
    for (uint32_t i = 0; i < src->column_count; i++) {
        uint32_t size = src->columns[i].size;
        mid &= size >= 8 && size <= 16;
        small &= size >= 4 && size <= 8;
    }
    if (mid && n <= STRAIGHT_COLUMNS)
        return drop_forms[cell12(src, dst)][n][split];
    if (mid)
        return drop_mid;
    return small ? drop_small : drop_any;
}

void tes__plan_make(tes__move_plan_t *p, tes__table_t *src, tes__table_t *dst,
                    const tes_comp_t *comps, uint32_t nvalues, uint32_t valued, bool direct,
                    size_t stride)
{
    tes__assert(nvalues <= TES__PLAN_VALUES && (!direct || nvalues == 1) &&
                valued < (1u << TES__PLAN_VALUES) && stride * TES__PLAN_VALUES <= UINT16_MAX);
    p->src = src;
    p->dst = dst;
    p->src_cols = src->columns;
    p->dst_cols = dst->columns;
    p->pop = (dst->flags & TES__TABLE_VIRTUAL) ? UINT32_MAX
             : (src->flags & TES__TABLE_VIRTUAL) ? 0u
                                                 : 1u;
    p->id_step = dst->id - src->id;
    p->nvalues = (uint8_t)nvalues;
    p->valued = (uint8_t)valued;
    p->value_stride = (uint16_t)stride;
    p->value_direct = direct;
    p->moves = p->values = p->constructs = 0;
    for (uint32_t k = 0; k < nvalues; k++) {
        p->value_comp[k] = comps[k];
    }
    p->split = dst->column_count;
    if (nvalues == 1) {
        int32_t col = tes__table_column_index(dst, comps[0]);
        p->split = col >= 0 ? (uint32_t)col : dst->column_count;
    }
    bool hooked = ((src->flags | dst->flags) & TES__TABLE_NOT_PLAIN) != 0;
    for (uint32_t c = 0; c < dst->column_count; c++) {
        tes_comp_t id = dst->columns[c].id;
        for (uint32_t k = 0; k < nvalues; k++)
            hooked |= comps[k] == id && (valued >> k & 1u) && dst->columns[c].info->hooks.copy;
    }
    p->hooked = hooked;
    p->listed = !hooked && dst->column_count <= TES__PLAN_COLUMNS &&
                src->column_count <= TES__PLAN_COLUMNS;
    p->edge = false;
    if (!p->listed) {
        p->one = walk_one;
        p->cells = walk_cells;
        return;
    }
    /* Where each destination column's cell comes from; an edge (the one
     * value, added: every other column moved, below the split at the same
     * position, above it one further on) takes an edge form. */
    bool edge = direct && (valued & 1u) && tes__table_column_index(src, comps[0]) < 0;
    bool mid = true;
    for (uint32_t c = 0; c < dst->column_count; c++) {
        tes_comp_t id = dst->columns[c].id;
        uint32_t size = dst->columns[c].size;
        mid &= size >= 8 && size <= 16;
        int32_t value = -1;
        for (uint32_t k = 0; k < nvalues; k++) /* the last value given wins */
            if (comps[k] == id && (valued >> k & 1u))
                value = (int32_t)k;
        int32_t from = tes__table_column_index(src, id);
        if (value >= 0) {
            p->value_col[p->values] = (uint8_t)c;
            p->value_at[p->values] = (uint16_t)((uint32_t)value * stride);
            p->value_from[p->values++] = (uint8_t)value;
            edge = edge && c == p->split;
        } else if (from >= 0) {
            p->move_col[p->moves] = (uint8_t)c;
            p->move_from[p->moves++] = (uint8_t)from;
            edge = edge && (uint32_t)from == (c < p->split ? c : c - 1);
        } else {
            p->construct_col[p->constructs++] = (uint8_t)c;
            edge = false;
        }
    }
    edge = edge && src->column_count + p->values == dst->column_count;
    /* A removal edge (nothing given or constructed, every column moved,
     * below one source column at the same position, from it on one
     * further on) takes a drop form. */
    uint32_t drop = src->column_count;
    bool dropping = !nvalues && !p->constructs && p->moves == dst->column_count &&
                    (src->column_count == dst->column_count ||
                     src->column_count == dst->column_count + 1);
    for (uint32_t i = 0; dropping && i < p->moves; i++) {
        uint32_t c = p->move_col[i], from = p->move_from[i];
        if (from != c && drop == src->column_count && from == c + 1)
            drop = c;
        dropping = from == (c < drop ? c : c + 1);
    }
    if (dropping && src->column_count == dst->column_count + 1 && drop == src->column_count)
        drop = dst->column_count; /* the last source column is the one dropped */
    dropping = dropping && (drop < src->column_count || src->column_count == dst->column_count);
    p->edge = edge;
    if (edge) {
        p->one = edge_form(src, dst, p->split);
        p->cells = edge_rows;
    } else if (dropping && dst->column_count) {
        p->split = drop < dst->column_count ? drop : dst->column_count;
        p->one = drop_form(src, dst, p->split);
        p->cells = list_rows;
    } else if (!dst->column_count) {
        p->one = one_none;
        p->cells = cells_none;
    } else {
        bool only_values = mid && !direct && !p->moves && !p->constructs;
        p->one = only_values ? values_forms[cell12(src, dst)][p->values <= 4 ? p->values : 0]
                 : mid       ? list_mid
                             : list_any;
        p->cells = list_rows;
    }
}

bool tes__plan_same(const tes__move_plan_t *a, const tes__move_plan_t *b)
{
    if (a->src != b->src || a->dst != b->dst || a->src_cols != b->src_cols ||
        a->dst_cols != b->dst_cols || a->cells != b->cells || a->one != b->one || a->edge != b->edge || a->pop != b->pop ||
        a->id_step != b->id_step || a->moves != b->moves || a->values != b->values ||
        a->constructs != b->constructs || a->listed != b->listed || a->hooked != b->hooked ||
        a->value_direct != b->value_direct || a->nvalues != b->nvalues ||
        a->valued != b->valued || a->value_stride != b->value_stride || a->split != b->split)
        return false;
    for (uint32_t k = 0; k < a->nvalues; k++)
        if (a->value_comp[k] != b->value_comp[k])
            return false;
    for (uint32_t i = 0; i < a->moves; i++)
        if (a->move_col[i] != b->move_col[i] || a->move_from[i] != b->move_from[i])
            return false;
    for (uint32_t i = 0; i < a->values; i++)
        if (a->value_col[i] != b->value_col[i] || a->value_from[i] != b->value_from[i] ||
            a->value_at[i] != b->value_at[i])
            return false;
    for (uint32_t i = 0; i < a->constructs; i++)
        if (a->construct_col[i] != b->construct_col[i])
            return false;
    return true;
}
