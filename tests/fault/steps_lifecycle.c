/*
 * Steps for prefabs and instances in the allocation-failure sweep (see
 * fault.h). Each is one FS_STEP: a failed call must report TES_ERR_NOMEM
 * (directly, or as 0 / TES_NULL with tes_last_error), and leave the
 * snapshot unchanged, which covers the entity count, stats.instances_alive,
 * every tracked entity's components, values, instance and prefab members,
 * and every tracked instance's members: no half-built instance, no
 * instance id or entity slot used up (the final comparison with the run
 * without failure sees ids and remapped references), no queued command
 * (fs_after compares the queue's length). Then it is retried and must
 * succeed. What a step makes is tracked for the snapshots.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fault/fault.h"

void fs_track_inst(fs_run_t *r, tes_instance_t id)
{
    if (r->ninsts == r->insts_cap) {
        uint32_t cap = r->insts_cap ? r->insts_cap * 2 : 256;
        tes_instance_t *p = realloc(r->insts, (size_t)cap * sizeof *p);
        if (!p) {
            fprintf(stderr, "fault: out of memory\n");
            exit(2);
        }
        r->insts = p;
        r->insts_cap = cap;
    }
    r->insts[r->ninsts++] = id;
}

static int fs_inst(fs_run_t *r, tes_instance_t *out, tes_instance_t id)
{
    *out = id;
    return id ? TES_OK : tes_last_error(r->w);
}

/* Tracks id and every member it has now. */
static void track_instance(fs_run_t *r, tes_instance_t id)
{
    int32_t n = tes_instance_members(r->w, id, NULL, 0);
    if (n < 0) {
        fs_problem(r, "instance %#llx made by a successful call is not alive",
                   (unsigned long long)id);
        r->dead = true;
        return;
    }
    tes_entity_t *m = malloc(((size_t)n + 1) * sizeof *m);
    if (!m) {
        fprintf(stderr, "fault: out of memory\n");
        exit(2);
    }
    tes_instance_members(r->w, id, m, n);
    for (int32_t i = 0; i < n; i++)
        fs_track(r, m[i]);
    free(m);
    fs_track_inst(r, id);
}

tes_entity_t fs_prefab_new(fs_run_t *r)
{
    tes_entity_t e = TES_NULL;
    FS_STEP(r, fs_ent(r, &e, tes_prefab_new(r->w)));
    if (!r->dead)
        fs_track(r, e);
    return e;
}

tes_entity_t fs_prefab_child(fs_run_t *r, tes_entity_t prefab)
{
    tes_entity_t e = TES_NULL;
    FS_STEP(r, fs_ent(r, &e, tes_prefab_child(r->w, prefab)));
    if (!r->dead)
        fs_track(r, e);
    return e;
}

tes_instance_t fs_instantiate(fs_run_t *r, tes_entity_t prefab, int32_t cap)
{
    tes_entity_t out[64];
    tes_instance_t id = 0;
    if (cap > 64)
        cap = 64;
    FS_STEP(r, fs_inst(r, &id, tes_instantiate(r->w, prefab, out, cap)));
    if (r->dead)
        return 0;
    /* out[] is the start of the member list. */
    tes_entity_t m[64];
    int32_t n = tes_instance_members(r->w, id, m, 64);
    for (int32_t i = 0; i < cap && i < n; i++)
        if (out[i] != m[i]) {
            fs_problem(r, "tes_instantiate: out[%d] is not the instance's member %d", (int)i,
                       (int)i);
            break;
        }
    track_instance(r, id);
    return id;
}

void fs_instantiate_n(fs_run_t *r, tes_entity_t prefab, int32_t n)
{
    tes_instance_t *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    if (!out) {
        fprintf(stderr, "fault: out of memory\n");
        exit(2);
    }
    FS_STEP(r, tes_instantiate_n(r->w, prefab, n, out));
    for (int32_t k = 0; k < n && !r->dead; k++)
        track_instance(r, out[k]);
    free(out);
}

void fs_instance_destroy(fs_run_t *r, tes_instance_t id)
{
    FS_STEP(r, tes_instance_destroy(r->w, id));
}

void fs_adopt(fs_run_t *r, tes_instance_t id, tes_entity_t e)
{
    FS_STEP(r, tes_instance_adopt(r->w, id, e));
}

void fs_detach(fs_run_t *r, tes_entity_t e) { FS_STEP(r, tes_instance_detach(r->w, e)); }

void fs_set_value(fs_run_t *r, tes_entity_t e, int k, const void *value)
{
    FS_STEP(r, tes_set(r->w, e, r->ids[k], value));
    if (!r->dead && r->defer_depth > 0 && r->ctx[k].size)
        r->staged[k]++; /* staged until the flush */
}
