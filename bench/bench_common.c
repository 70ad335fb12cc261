/*
 * bench_common.c — the untimed set-up and tear-down most workloads share.
 *
 * Design: many workloads keep the same Tessera-side state (a population
 * size, a world, Position/Velocity/Rotation and one handle per entity) and
 * build it the same ways (an empty world, a world with the three table
 * components, a world populated with tes_spawn_n), and many baselines keep
 * the same plain arrays (slots or generations, three component columns,
 * handles). Those states and their hooks live here once, so each workload
 * file holds only its timed `run` functions and what is particular to it.
 * Nothing here runs inside a timed region but bench_tes_destroy_each,
 * itself a whole timed run (the pieces a timed loop uses are inline in
 * bench.h): the driver calls these as the init, before, after and fini
 * hooks, and the workloads call them from theirs. Every function reports a
 * failure through bench_fail and leaves the state freeable by its fini.
 */
#include "bench.h"

/* ------------------------------------------------------------------------ */
/* Tessera side                                                              */
/* ------------------------------------------------------------------------ */

/* The state with n entities' worth of handle space; NULL only when the
 * state itself cannot be allocated (a failed handle array is recorded). */
static void *tes_state_new(int64_t n)
{
    bench_tes_state_t *s = (bench_tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    return s;
}

void *bench_tes_init(const bench_cfg_t *cfg) { return tes_state_new(cfg->n); }

void *bench_tes_init_small(const bench_cfg_t *cfg) { return tes_state_new(cfg->small_n); }

void bench_tes_fini(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    tes_world_free(s->w);
    free(s->h);
    free(s);
}

void bench_tes_world(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    s->w = bench_world_new();
}

void bench_tes_world3(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    s->c = bench_register3(s->w, TES_STORAGE_TABLE);
    s->comps[0] = s->c.pos;
    s->comps[1] = s->c.vel;
    s->comps[2] = s->c.rot;
}

void bench_tes_spawned(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, NULL, 0, s->h);
    if (rc != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
}

void bench_tes_spawned3(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    bench_tes_world3(s);
    if (!s->w || bench_failed())
        return;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, s->comps, 3, s->h);
    if (rc != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
}

void bench_tes_spawned_extra(bench_tes_state_t *s, const char *name, size_t size,
                             tes_storage_t storage)
{
    s->w = bench_world_new();
    if (!s->w)
        return;
    s->c.pos = bench_register(s->w, "Position", sizeof(Position), TES_STORAGE_TABLE);
    s->extra = bench_register(s->w, name, size, storage);
    if (bench_failed())
        return;
    int rc = tes_spawn_n(s->w, (int32_t)s->n, &s->c.pos, 1, s->h);
    if (rc != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
}

/* The one timed function here: the driver calls it through the workload
 * descriptor exactly as it would call a per-file copy. */
uint64_t bench_tes_destroy_each(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    tes_world_t *w = s->w;
    uint64_t ok = 0;
    for (uint32_t i = 0; i < s->n; i++)
        ok += tes_destroy(w, s->h[i]) == TES_OK;
    return ok;
}

void bench_tes_after_add_remove(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    if (s->w && !bench_failed()) {
        tes_entity_t e = s->h[s->n / 2];
        if (!tes_has(s->w, e, s->c.pos) || tes_has(s->w, e, s->extra))
            bench_fail("wrong component set after add/remove");
    }
    bench_tes_drop_world(s);
}

void bench_tes_drop_world(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    tes_world_free(s->w);
    s->w = NULL;
}

void bench_tes_after_alive(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    if (s->w && tes_entity_count(s->w) != (int32_t)s->n)
        bench_fail("tes_entity_count = %d, expected %u", tes_entity_count(s->w), s->n);
    bench_tes_drop_world(s);
}

void bench_tes_after_none_alive(void *p)
{
    bench_tes_state_t *s = (bench_tes_state_t *)p;
    if (s->w && tes_entity_count(s->w) != 0)
        bench_fail("%d entities alive after destroying all", tes_entity_count(s->w));
    bench_tes_drop_world(s);
}

/* A new world of n entities spawned with tes_spawn_n (handles in h, spawn
 * order) whose Position holds bench_position(entity index), its component
 * in *pos. On failure (bench_fail recorded) returns what it built so far,
 * possibly NULL, for the caller to free. */
static tes_world_t *positions_world(uint32_t n, tes_storage_t storage, tes_entity_t *h,
                                    tes_comp_t *pos)
{
    tes_world_t *w = bench_world_new();
    if (!w)
        return NULL;
    tes_comp_t comps[3];
    int count = 1;
    if (storage == TES_STORAGE_SPARSE) {
        comps[0] = bench_register(w, "SparsePosition", sizeof(Position), TES_STORAGE_SPARSE);
    } else {
        bench_comps_t c = bench_register3(w, TES_STORAGE_TABLE);
        comps[0] = c.pos;
        comps[1] = c.vel;
        comps[2] = c.rot;
        count = 3;
    }
    *pos = comps[0];
    if (bench_failed())
        return w;
    int rc = tes_spawn_n(w, (int32_t)n, comps, count, h);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        return w;
    }
    for (uint32_t i = 0; i < n; i++) {
        Position *p = (Position *)tes_get_mut(w, h[i], comps[0]);
        if (!p) {
            bench_fail("tes_get_mut returned NULL");
            return w;
        }
        *p = bench_position(tes_entity_index(h[i]));
    }
    return w;
}

void *bench_get_init(const bench_cfg_t *cfg, tes_storage_t storage, uint64_t seed_mix)
{
    bench_get_state_t *s = (bench_get_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    if (s->h)
        s->w = positions_world(s->n, storage, s->h, &s->pos);
    if (bench_failed())
        return s;
    uint64_t rng = cfg->seed ^ seed_mix;
    bench_shuffle_entities(s->h, s->n, &rng);
    return s;
}

void bench_get_fini(void *p)
{
    bench_get_state_t *s = (bench_get_state_t *)p;
    tes_world_free(s->w);
    free(s->h);
    free(s);
}

tes_query_t *bench_query1(tes_world_t *w, tes_comp_t comp)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = comp;
    tes_query_t *q = tes_query_new(w, &d);
    if (!q)
        bench_fail("tes_query_new: %s", tes_strerror(tes_last_error(w)));
    return q;
}

uint64_t bench_state_checksum(const tes_world_t *w, const tes_entity_t *h, uint32_t count,
                              tes_comp_t comp, uint64_t (*mix)(uint32_t k, const void *value))
{
    uint64_t sum = 0;
    for (uint32_t k = 0; k < count; k++) {
        const void *value = tes_get(w, h[k], comp);
        if (!value) {
            bench_fail("tes_get returned NULL for handle %u of %u", k, count);
            return sum;
        }
        sum += mix(k, value);
    }
    return sum;
}

/* ------------------------------------------------------------------------ */
/* Baseline side                                                             */
/* ------------------------------------------------------------------------ */

void *bench_base_init(const bench_cfg_t *cfg)
{
    bench_base_state_t *s = (bench_base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    return s;
}

void bench_base_release(void *p)
{
    bench_base_state_t *s = (bench_base_state_t *)p;
    free(s->slots);
    free(s->gen);
    free(s->pos);
    free(s->vel);
    free(s->rot);
    s->slots = NULL;
    s->gen = NULL;
    s->pos = NULL;
    s->vel = NULL;
    s->rot = NULL;
    s->count = s->cap = 0;
}

void bench_base_fini(void *p)
{
    bench_base_state_t *s = (bench_base_state_t *)p;
    bench_base_release(s);
    free(s->h);
    free(s);
}

void *bench_lookup_init(const bench_cfg_t *cfg, tes_storage_t storage, uint64_t seed_mix)
{
    bench_lookup_state_t *s = (bench_lookup_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->get = (bench_get_state_t *)bench_get_init(cfg, storage, seed_mix);
    if (!s->get) {
        free(s);
        return NULL;
    }
    if (!bench_failed() && tes_lookup_init(&s->view, s->get->w, s->get->pos) != TES_OK)
        bench_fail("tes_lookup_init: %s", tes_strerror(tes_last_error(s->get->w)));
    return s;
}

void bench_lookup_fini(void *p)
{
    bench_lookup_state_t *s = (bench_lookup_state_t *)p;
    tes_lookup_fini(&s->view);
    bench_get_fini(s->get);
    free(s);
}

bool bench_get_handles(const bench_cfg_t *cfg, uint64_t seed_mix, uint32_t **gen,
                       tes_entity_t **h)
{
    uint32_t n = bench_u32(cfg->n);
    *gen = (uint32_t *)bench_alloc((size_t)n * sizeof **gen);
    *h = (tes_entity_t *)bench_alloc((size_t)n * sizeof **h);
    if (!*gen || !*h)
        return false;
    bench_fresh_handles(*gen, *h, n);
    uint64_t rng = cfg->seed ^ seed_mix;
    bench_shuffle_entities(*h, n, &rng);
    return true;
}

void bench_fresh_handles(uint32_t *gen, tes_entity_t *h, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (gen)
            gen[i] = 1;
        h[i] = tes_entity_make(i, 1);
    }
}
