/*
 * table_destroy.c — destroy N entities that carry Position, Velocity and
 * Rotation in one archetype table, one at a time, in spawn order.
 *
 * Tessera: world populated untimed with tes_spawn_n, then tes_destroy per
 * handle: generation check, swap-remove of the table row (the last row
 * moves into the hole and its entity's location is patched), free-list
 * push. Baseline: the same packed structure in plain arrays: per entity a
 * generation, a row and a free-list link; per row the entity and three
 * component arrays; destroy does the same swap-remove and patch.
 */
#include "bench.h"

typedef struct {
    uint32_t generation;
    uint32_t row; /* live: row; free: next free index */
} base_slot_t;

typedef struct {
    uint32_t n, slot_count, head, rows;
    base_slot_t *slots;
    uint32_t *row_entity; /* index of the entity in each row */
    Position *pos;
    Velocity *vel;
    Rotation *rot;
    tes_entity_t *h;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    size_t n = s->n;
    s->h = (tes_entity_t *)bench_alloc(n * sizeof *s->h);
    s->slots = (base_slot_t *)bench_alloc(n * sizeof *s->slots);
    s->row_entity = (uint32_t *)bench_alloc(n * sizeof *s->row_entity);
    s->pos = (Position *)bench_alloc(n * sizeof *s->pos);
    s->vel = (Velocity *)bench_alloc(n * sizeof *s->vel);
    s->rot = (Rotation *)bench_alloc(n * sizeof *s->rot);
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    for (uint32_t i = 0; i < s->n; i++) {
        s->slots[i].generation = 1;
        s->slots[i].row = i;
        s->row_entity[i] = i;
    }
    bench_fresh_handles(NULL, s->h, s->n);
    memset(s->pos, 0, (size_t)s->n * sizeof *s->pos);
    memset(s->vel, 0, (size_t)s->n * sizeof *s->vel);
    memset(s->rot, 0, (size_t)s->n * sizeof *s->rot);
    s->slot_count = s->rows = s->n;
    s->head = BENCH_NONE;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_slot_t *slots = s->slots;
    uint32_t *row_entity = s->row_entity;
    Position *pos = s->pos;
    Velocity *vel = s->vel;
    Rotation *rot = s->rot;
    uint32_t rows = s->rows, head = s->head;
    uint64_t ok = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        tes_entity_t e = s->h[i];
        uint32_t index = tes_entity_index(e);
        if (index >= s->slot_count || slots[index].generation != tes_entity_generation(e))
            continue;
        uint32_t row = slots[index].row, last = --rows;
        if (row != last) {
            uint32_t moved = row_entity[last];
            row_entity[row] = moved;
            pos[row] = pos[last];
            vel[row] = vel[last];
            rot[row] = rot[last];
            slots[moved].row = row;
        }
        slots[index].generation++;
        slots[index].row = head;
        head = index;
        ok++;
    }
    s->rows = rows;
    s->head = head;
    return ok;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->h);
    free(s->slots);
    free(s->row_entity);
    free(s->pos);
    free(s->vel);
    free(s->rot);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_table_destroy = {
    "table: destroy 3 comps 1-by-1",
    "entity",
    ops,
    true,
    {bench_tes_init, bench_tes_spawned3, bench_tes_destroy_each, bench_tes_after_none_alive, bench_tes_fini},
    {base_init, base_before, base_run, NULL, base_fini},
};
