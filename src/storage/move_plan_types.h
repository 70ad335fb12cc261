/*
 * The move plan's layout (see move_plan.h for what a plan is): the plan
 * type, the signatures of its two copy routines and how a routine reads
 * a call's values. It sits below both of the units that use it: table.h
 * caches a plan by value in each table's last edge, and move_plan.c,
 * which makes plans and holds the copy routines, reads the tables'
 * columns (table.h). Declared here, the type lets every include and call
 * run one way: move_plan -> table -> move_plan_types. Nothing here
 * costs a call: a plan is read through its fields and routine pointers,
 * and tes__plan_value is inline, as the quiet add and the spawn need it.
 */
#ifndef TES_STORAGE_MOVE_PLAN_TYPES_H
#define TES_STORAGE_MOVE_PLAN_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tessera.h"

/* Destination columns whose sources a plan lists, and values one call may
 * give (a flushed group's commands, a bundle's values). A wider table's
 * plan takes the walk, which matches the columns by id instead. */
#define TES__PLAN_COLUMNS 32
#define TES__PLAN_VALUES 8 /* bits of a plan's `valued` */

struct tes__table;
struct tes__column;
struct tes__move_plan;

/* A plan's copy routines, both with the plan first and the same next
 * three arguments. `cells` fills the n raw rows from dst_row on of p->dst
 * from the rows from src_row on of p->src (which it leaves moved-out or
 * destroyed, never removed: the caller fills the hole) and from the
 * call's values. `values` is where the call's values are, as the plan
 * says (see value_direct and value_at); NULL, or a NULL value,
 * constructs the cell instead. With n > 1 each value is n consecutive
 * cells. `one` does the same for one row, the hot case of a quiet add and
 * of tes_spawn_with: everything else it needs (the tables' column arrays,
 * the lists) is in the plan, so a caller passes four arguments, the value
 * fourth, where tes_set receives it, so that a tail call leaves it in its
 * register, and keeps no table in a register for it. Neither can fail;
 * both return TES_OK so that a quiet add returns its result in tail
 * position. Both are chosen once, by tes__plan_make. */
typedef int (*tes__cells_fn)(const struct tes__move_plan *p, size_t dst_row, size_t src_row,
                             const void *values, size_t n);
typedef int (*tes__cell1_fn)(const struct tes__move_plan *p, size_t dst_row, size_t src_row,
                             const void *values);

typedef struct tes__move_plan {
    struct tes__table *src;
    struct tes__table *dst;
    /* src's and dst's column arrays, which the copy routines read instead
     * of the tables: made with the table and never moved or freed while
     * it lives (a table that grows moves its cells, not this array). */
    const struct tes__column *src_cols;
    const struct tes__column *dst_cols;
    tes__cell1_fn one;    /* the copy routine for one row, chosen by tes__plan_make */
    tes__cells_fn cells;  /* the copy routine for n rows, chosen with it */
    /* For the world's apply of one row, so that its hot case tests one
     * compare (see tes__apply): `pop` is the rows src loses (0 when it is
     * the virtual root, whose entities own no row and whose count stays 0,
     * else 1), or UINT32_MAX when dst is the virtual root, which stores no
     * row (src's count less that is never a row, so such a move takes the
     * general case); `id_step` is dst's id minus src's (modulo 2^32),
     * which turns a slot from the one table to the other with one
     * addition and leaves its sparse bit as it was. */
    uint32_t pop;
    uint32_t id_step;
    /* The lists (plain plans of tables up to TES__PLAN_COLUMNS columns,
     * see `listed`): each destination column is in exactly one of them;
     * the source columns in none are dropped, as bytes. */
    uint8_t moves, values, constructs;
    bool listed;          /* false: the walk matches columns by id */
    bool edge;            /* `one` is an edge form: its value is never NULL
                             (tes__apply passes a zero cell for none) */
    bool hooked;          /* a column of either table has a ctor, dtor or move hook
                             or is large, or a value has a copy hook: the walk */
    /* Values: with value_direct (a plan with one value, an edge's) the
     * routine's `values` argument is the value itself; otherwise it points
     * at a table of value pointers, value k's at byte offset k *
     * value_stride (a pointer array, or the ptr fields of a tes_value_t
     * array). */
    bool value_direct;
    uint8_t nvalues;
    uint8_t valued;       /* bit k: the call gives value k */
    uint16_t value_stride;
    /* For a plan of one added component: its column in dst (the straight
     * forms' split), or dst's column count for a tag. */
    uint32_t split;
    tes_comp_t value_comp[TES__PLAN_VALUES];
    uint8_t move_col[TES__PLAN_COLUMNS], move_from[TES__PLAN_COLUMNS];
    uint8_t value_col[TES__PLAN_VALUES], value_from[TES__PLAN_VALUES];
    uint16_t value_at[TES__PLAN_VALUES]; /* value_from[i] * value_stride */
    uint8_t construct_col[TES__PLAN_COLUMNS];
} tes__move_plan_t;

/* `values` for a run of n > 1 rows whose value cells the caller fills
 * itself right after (a flushed run of staged sets): the n-row routines
 * of plans made with values given by a table (not direct) leave those
 * cells raw (or constructed, for a plan that runs hooks) instead of
 * zeroing them first. */
#define TES__PLAN_RAW ((const void *)(uintptr_t)1) /* never read: compared only */

/* Value k of a call, as plan p reads it from `values` (NULL: constructed). */
static inline const void *tes__plan_value(const tes__move_plan_t *p, const void *values,
                                          uint32_t k)
{
    if (!values || p->value_direct)
        return values;
    const void *v;
    memcpy(&v, (const unsigned char *)values + (size_t)k * p->value_stride, sizeof v);
    return v;
}

#endif
