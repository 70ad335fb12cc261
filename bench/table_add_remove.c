/*
 * table_add_remove.c — add then remove a 4-byte table component (Health) on
 * N/100 entities (10,000 by default) that already have Position.
 *
 * One run makes AR_REPS passes; each pass adds Health to every entity
 * (moving it from table {P} to {P,H}) and then removes it from every entity
 * (moving it back). So both tables hold thousands of rows and every move is
 * a real swap-remove. One op = one add + one remove. Baseline: the same two
 * tables in plain arrays (entity + column arrays per table, a per-entity
 * location {table, row} with a generation), moving rows by hand.
 */
#include "bench.h"

#define AR_REPS 20

typedef bench_tes_state_t tes_state_t;

static void tes_before(void *p)
{
    bench_tes_spawned_extra((tes_state_t *)p, "Health", sizeof(Health), TES_STORAGE_TABLE);
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    return bench_add_remove_passes(s->w, s->h, s->n, s->extra, AR_REPS);
}

/* Baseline: table 0 = {Position}, table 1 = {Position, Health}. */
typedef struct {
    uint32_t generation;
    uint32_t table;
    uint32_t row;
} base_loc_t;

typedef struct {
    uint32_t rows;
    uint32_t *entity;
    Position *pos;
    Health *health; /* table 1 only */
} base_table_t;

typedef struct {
    uint32_t n;
    base_loc_t *loc;
    base_table_t t[2];
    tes_entity_t *h;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->small_n);
    size_t n = s->n;
    s->h = (tes_entity_t *)bench_alloc(n * sizeof *s->h);
    s->loc = (base_loc_t *)bench_alloc(n * sizeof *s->loc);
    for (int t = 0; t < 2; t++) {
        s->t[t].entity = (uint32_t *)bench_alloc(n * sizeof(uint32_t));
        s->t[t].pos = (Position *)bench_alloc(n * sizeof(Position));
    }
    s->t[1].health = (Health *)bench_alloc(n * sizeof(Health));
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    for (uint32_t i = 0; i < s->n; i++) {
        s->loc[i].generation = 1;
        s->loc[i].table = 0;
        s->loc[i].row = i;
        s->t[0].entity[i] = i;
        s->t[0].pos[i] = bench_position(i);
        s->h[i] = tes_entity_make(i, 1);
    }
    s->t[0].rows = s->n;
    s->t[1].rows = 0;
}

/* Swap-removes `row` from table t, patching the moved entity's location. */
static inline void base_swap_remove(base_state_t *s, base_table_t *t, uint32_t row)
{
    uint32_t last = --t->rows;
    if (row != last) {
        uint32_t moved = t->entity[last];
        t->entity[row] = moved;
        t->pos[row] = t->pos[last];
        if (t->health)
            t->health[row] = t->health[last];
        s->loc[moved].row = row;
    }
}

static inline base_loc_t *base_live(base_state_t *s, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    if (index >= s->n || s->loc[index].generation != tes_entity_generation(e))
        return NULL;
    return &s->loc[index];
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_table_t *a = &s->t[0], *b = &s->t[1];
    const tes_entity_t *h = s->h;
    uint32_t n = s->n;
    uint64_t ok = 0;
    for (int r = 0; r < AR_REPS; r++) {
        for (uint32_t i = 0; i < n; i++) { /* add Health: move a -> b */
            base_loc_t *l = base_live(s, h[i]);
            if (!l)
                continue;
            if (l->table == 0) {
                uint32_t index = tes_entity_index(h[i]), row = l->row, dst = b->rows++;
                b->entity[dst] = index;
                b->pos[dst] = a->pos[row];
                b->health[dst].hp = 0;
                base_swap_remove(s, a, row);
                l->table = 1;
                l->row = dst;
            }
            ok++;
        }
        for (uint32_t i = 0; i < n; i++) { /* remove Health: move b -> a */
            base_loc_t *l = base_live(s, h[i]);
            if (!l)
                continue;
            if (l->table == 1) {
                uint32_t index = tes_entity_index(h[i]), row = l->row, dst = a->rows++;
                a->entity[dst] = index;
                a->pos[dst] = b->pos[row];
                base_swap_remove(s, b, row);
                l->table = 0;
                l->row = dst;
            }
            ok++;
        }
    }
    return ok;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->h);
    free(s->loc);
    for (int t = 0; t < 2; t++) {
        free(s->t[t].entity);
        free(s->t[t].pos);
    }
    free(s->t[1].health);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return (int64_t)AR_REPS * cfg->small_n; }

const bench_workload_t bench_table_add_remove = {
    "table: add+remove 4B comp (N/100)",
    "pair",
    ops,
    true,
    {bench_tes_init_small, tes_before, tes_run, bench_tes_after_add_remove, bench_tes_fini},
    {base_init, base_before, base_run, NULL, base_fini},
};
