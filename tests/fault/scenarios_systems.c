/*
 * The allocation-failure sweep over systems: a world with worker threads
 * (the pool's memory is the first thing tes_world_new can fail on past
 * the world itself), tes_system_new (registry, order list, name, query),
 * and frames of tes_progress, whose capture of chunks and work units
 * allocates: a failure there must cost nothing but speed (the level runs
 * on the calling thread instead), and a failure while a structural
 * system's changes are queued or applied is reported like a flush's.
 * A structural system that is also parallel records into per-thread
 * command queues: a failure while one of them grows fails that one call
 * (the system retries it), and a failure while the lanes are made or their
 * commands are moved into the world's queue costs only speed (the system
 * runs live, or the commands are applied one by one). A system whose query
 * has no AND term walks root entities, whose handles capture copies into
 * the system's own array (a failure there: the level runs live); a split
 * system's tes_ensure stages a copy of the value in its thread's queue.
 */
#include <stdio.h>

#include "fault/fault.h"

static int fs_system(fs_run_t *r, const tes_system_desc_t *d)
{
    return tes_system_new(r->w, d) ? TES_OK : tes_last_error(r->w);
}

/* Adds 1 to every T4 value: a parallel, non-structural system. */
static void bump(tes_iter_t *it)
{
    int32_t *v = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        v[i] += 1;
}

/* Copies the first bytes of S8 into T24: reads one, writes the other. */
static void copy_s8(tes_iter_t *it)
{
    const uint8_t *s = tes_field(it, 0);
    uint8_t *t = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++)
        t[(size_t)i * 24] = s[(size_t)i * 8];
}

/* Structural: toggles tags. A queueing call that fails for want of memory
 * queues nothing, so retrying it is what a careful system does. */
static void toggle(tes_iter_t *it)
{
    fs_run_t *r = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t e = it->entities[i];
        int k = tes_entity_index(e) % 3 ? FS_C_STAG : FS_C_TTAG;
        bool has = tes_has(it->world, e, r->ids[k]);
        for (int attempt = 0; attempt < 2; attempt++) {
            int rc = has ? tes_remove(it->world, e, r->ids[k]) : tes_add(it->world, e, r->ids[k]);
            if (rc != TES_ERR_NOMEM)
                break;
        }
    }
}

/* Structural and parallel: sets T4 of every entity with TTAG to a value
 * from its index (a value staged in the thread's queue arena); retries a
 * call that failed for want of memory once. */
static void stamp(tes_iter_t *it)
{
    fs_run_t *r = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t e = it->entities[i];
        int32_t v = (int32_t)tes_entity_index(e) * 3 + 1;
        for (int attempt = 0; attempt < 2; attempt++) {
            int rc = tes_set(it->world, e, r->ids[FS_C_T4], &v);
            if (rc != TES_ERR_NOMEM)
                break;
        }
    }
}

/* Structural and parallel: adds 1 to the first byte of S4 through
 * tes_ensure (a staged value, applied when the system ends); retries a
 * call that failed for want of memory once. S4 has no hooks: staging runs
 * on the worker threads, and the sweep's hook counters are not atomic. */
static void ensure_s4(tes_iter_t *it)
{
    fs_run_t *r = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        for (int attempt = 0; attempt < 2; attempt++) {
            uint8_t *p = tes_ensure(it->world, it->entities[i], r->ids[FS_C_S4]);
            if (p) {
                p[0] = (uint8_t)(p[0] + 1);
                break;
            }
            if (tes_last_error(it->world) != TES_ERR_NOMEM)
                break;
        }
    }
}

/* Walks root entities (and others without T24) and changes nothing. */
static void visit(tes_iter_t *it) { (void)it; }

void fs_sc_systems(fs_run_t *r)
{
    if (!fs_world_new(r, &(tes_world_desc_t){.threads = 2}))
        return;
    fs_register_base(r);
    static const int kinds[] = {FS_C_T4, FS_C_T24, FS_C_S8};
    fs_spawn_n(r, 300, kinds, 3);
    static const int fewer[] = {FS_C_T4, FS_C_TTAG};
    fs_spawn_n(r, 1000, fewer, 2);
    fs_spawn_n(r, 40, NULL, 0); /* root entities */
    tes_comp_t *id = r->ids;
    tes_system_desc_t d1 = {.name = "bump", .run = bump, .parallel = true,
                            .query = {.terms = {{id[FS_C_T4]}}}};
    FS_STEP(r, fs_system(r, &d1));
    tes_system_desc_t d2 = {.name = "copy", .run = copy_s8,
                            .query = {.terms = {{id[FS_C_S8], TES_AND, TES_IN},
                                                {id[FS_C_T24], TES_AND, TES_OUT}}}};
    FS_STEP(r, fs_system(r, &d2));
    /* Before the toggles: its commands are the first to grow the world's
     * queue, so a failure there meets the one-by-one path. */
    tes_system_desc_t d4 = {.name = "stamp", .run = stamp, .ctx = r, .structural = true,
                            .parallel = true,
                            .query = {.terms = {{id[FS_C_TTAG], TES_AND, TES_NOACCESS}}}};
    FS_STEP(r, fs_system(r, &d4));
    tes_system_desc_t d5 = {.name = "ensure", .run = ensure_s4, .ctx = r, .structural = true,
                            .parallel = true,
                            .query = {.terms = {{id[FS_C_TTAG], TES_AND, TES_NOACCESS}}}};
    FS_STEP(r, fs_system(r, &d5));
    tes_system_desc_t d6 = {.name = "roots", .run = visit, .parallel = true,
                            .query = {.terms = {{id[FS_C_T24], TES_NOT}}}};
    FS_STEP(r, fs_system(r, &d6));
    r->varying_allocs = true;
    tes_system_desc_t d3 = {.name = "toggle", .run = toggle, .ctx = r, .structural = true,
                            .query = {.terms = {{id[FS_C_T4], TES_AND, TES_NOACCESS}}}};
    FS_STEP(r, fs_system(r, &d3));
    for (int frame = 0; frame < 3 && !r->dead; frame++)
        fs_progress(r);
}
