/*
 * memory.c — the memory section: bytes per live entity as Tessera counts
 * them (tes_world_stats().bytes_allocated / entities_alive, i.e. every byte
 * obtained through the world's allocator, growth slack included).
 *
 * Probes, each on a fresh world with N live entities: empty entities
 * spawned one by one and in bulk; three 12-byte table components
 * (Position, Velocity, Rotation) via tes_spawn_n and via spawn + tes_set;
 * the same three as sparse components. Alongside: the payload (component
 * bytes per entity) and the footprint of the plain-array baselines used in
 * the timed workloads: 8 B for a {index, generation} entity list; 4 B
 * generation + 36 B data for table-like arrays; 4 B generation + 3 x (4 B
 * index + 4 B packed entity + 12 B data) for three unpaged sparse sets.
 */
#include "bench.h"

typedef enum { COMPS_NONE, COMPS_TABLE, COMPS_SPARSE } comps_kind_t;

static bool measure(const bench_cfg_t *cfg, comps_kind_t kind, bool bulk, uint64_t *bytes,
                    uint64_t *entities)
{
    uint32_t n = bench_u32(cfg->n);
    tes_world_t *w = bench_world_new();
    if (!w)
        return false;
    tes_comp_t comps[3] = {0, 0, 0};
    int ncomps = 0;
    if (kind != COMPS_NONE) {
        bench_comps_t c = bench_register3(
            w, kind == COMPS_SPARSE ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
        comps[0] = c.pos;
        comps[1] = c.vel;
        comps[2] = c.rot;
        ncomps = 3;
    }
    bool ok = !bench_failed();
    if (ok && bulk) {
        tes_entity_t *h = (tes_entity_t *)bench_alloc((size_t)n * sizeof *h);
        int rc = h ? tes_spawn_n(w, (int32_t)n, comps, ncomps, h) : TES_ERR_NOMEM;
        if (rc != TES_OK)
            bench_fail("tes_spawn_n: %s", tes_strerror(rc));
        free(h);
    } else if (ok) {
        Position v = {1.0f, 2.0f, 3.0f};
        for (uint32_t i = 0; i < n && !bench_failed(); i++) {
            tes_entity_t e = tes_spawn(w);
            if (!e)
                bench_fail("tes_spawn: %s", tes_strerror(tes_last_error(w)));
            for (int k = 0; k < ncomps && !bench_failed(); k++)
                if (tes_set(w, e, comps[k], &v) != TES_OK)
                    bench_fail("tes_set: %s", tes_strerror(tes_last_error(w)));
        }
    }
    tes_world_stats_t st;
    if (!bench_failed() && tes_world_stats(w, &st) != TES_OK)
        bench_fail("tes_world_stats failed");
    if (!bench_failed() && st.entities_alive != n)
        bench_fail("%u entities alive, expected %u", st.entities_alive, n);
    if (!bench_failed()) {
        *bytes = st.bytes_allocated;
        *entities = st.entities_alive;
    }
    tes_world_free(w);
    return !bench_failed();
}

static bool empty_spawn(const bench_cfg_t *c, uint64_t *b, uint64_t *e)
{
    return measure(c, COMPS_NONE, false, b, e);
}
static bool empty_spawn_n(const bench_cfg_t *c, uint64_t *b, uint64_t *e)
{
    return measure(c, COMPS_NONE, true, b, e);
}
static bool table_spawn_n(const bench_cfg_t *c, uint64_t *b, uint64_t *e)
{
    return measure(c, COMPS_TABLE, true, b, e);
}
static bool table_set(const bench_cfg_t *c, uint64_t *b, uint64_t *e)
{
    return measure(c, COMPS_TABLE, false, b, e);
}
static bool sparse_spawn_n(const bench_cfg_t *c, uint64_t *b, uint64_t *e)
{
    return measure(c, COMPS_SPARSE, true, b, e);
}
static bool sparse_set(const bench_cfg_t *c, uint64_t *b, uint64_t *e)
{
    return measure(c, COMPS_SPARSE, false, b, e);
}

/* One 12-byte table component, tracked or not: the difference between the
 * two lines is the bytes a tracked value costs (its two ticks). */
static bool one_comp_in(const bench_cfg_t *cfg, bool tracked, bool sparse, uint64_t *bytes,
                        uint64_t *entities)
{
    uint32_t n = bench_u32(cfg->n);
    tes_world_t *w = bench_world_new();
    if (!w)
        return false;
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "Position";
    d.size = sizeof(Position);
    d.track_changes = tracked;
    d.storage = sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE;
    tes_comp_t c = tes_component(w, &d);
    tes_entity_t *h = (tes_entity_t *)bench_alloc((size_t)n * sizeof *h);
    if (!c || !h || tes_spawn_n(w, (int32_t)n, &c, 1, h) != TES_OK)
        bench_fail("one_comp: %s", tes_strerror(tes_last_error(w)));
    free(h);
    tes_world_stats_t st;
    if (!bench_failed() && tes_world_stats(w, &st) == TES_OK) {
        *bytes = st.bytes_allocated;
        *entities = st.entities_alive;
    }
    tes_world_free(w);
    return !bench_failed();
}
static bool one_plain(const bench_cfg_t *c, uint64_t *b, uint64_t *e) { return one_comp_in(c, false, false, b, e); }
static bool one_tracked(const bench_cfg_t *c, uint64_t *b, uint64_t *e) { return one_comp_in(c, true, false, b, e); }
/* The same in a sparse store: the difference is a tracked sparse value's. */
static bool one_sparse(const bench_cfg_t *c, uint64_t *b, uint64_t *e) { return one_comp_in(c, false, true, b, e); }
static bool one_sparse_tracked(const bench_cfg_t *c, uint64_t *b, uint64_t *e) { return one_comp_in(c, true, true, b, e); }

const bench_memory_t bench_memory_probes[] = {
    {"memory: 1 table comp (spawn_n)", 12, 16, one_plain},
    {"memory: 1 tracked table comp (spawn_n)", 12, 24, one_tracked},
    {"memory: 1 sparse comp (spawn_n)", 12, 24, one_sparse},
    {"memory: 1 tracked sparse comp (spawn_n)", 12, 32, one_sparse_tracked},
    {"memory: empty (tes_spawn)", 0, 8, empty_spawn},
    {"memory: empty (spawn_n)", 0, 8, empty_spawn_n},
    {"memory: 3 table comps (spawn_n)", 36, 40, table_spawn_n},
    {"memory: 3 table comps (spawn+set)", 36, 40, table_set},
    {"memory: 3 sparse comps (spawn_n)", 36, 64, sparse_spawn_n},
    {"memory: 3 sparse comps (spawn+set)", 36, 64, sparse_set},
    {"memory: links only (every entity linked)", 0, 16, bench_memory_linked},
};
const int bench_memory_probe_count =
    (int)(sizeof bench_memory_probes / sizeof bench_memory_probes[0]);
