/*
 * Allocation-failure scenarios for snapshots. A source world (plain libc
 * allocator, outside the sweep) holds every feature a snapshot carries:
 * table, sparse and stable components (the hooked ones saved through save
 * hooks), tags, a disabled entity, a prefab with a child, instances with a
 * detached member, links and names, a free list and a retired slot. Its
 * bytes are loaded into the sweep's world as one step, so every allocation
 * the loader makes (input buffer, parse scratch, staged slots, tables,
 * stores, instance records, prefab records, link pages and names, group
 * room) fails once: the load must return
 * TES_ERR_NOMEM, leave the world empty and balanced, and succeed on the
 * retry. Then the loaded world is saved as one step (every allocation the
 * saver makes fails once) and changed a little, so the final state is
 * compared with the reference run's.
 *
 * A second scenario loads a table of large components: more bytes than the
 * loader reserves ahead of their arrival, so its payload goes through the
 * bounce buffer, whose growth and the block after it fail once each too.
 */
#include <stdlib.h>
#include <string.h>

#include "fault/fault.h"
#include "snapshot/mem_stream.h"

static int load_step(tes_world_t *w, const sw_buf_t *b) { return sw_load(w, b->data, b->size); }

/* Saves into out, reusing its buffer. */
static int save_step(tes_world_t *w, sw_buf_t *out)
{
    out->size = 0;
    tes_writer_t wr = {sw_buf_write, out};
    return tes_snapshot_save(w, &wr);
}

/* The sweep's hooked components hold raw bytes; the source saves them
 * through this hook (ctx = the size), so they are framed like any hooked
 * component's values. */
static int src_save(const void *ptr, const tes_writer_t *out, void *ctx)
{
    return out->write(ptr, (size_t)(uintptr_t)ctx, out->user);
}

/* The source world: the sweep's base components by name and layout. */
static tes_world_t *source_world(tes_comp_t ids[FS_NBASE])
{
    tes_world_t *w = tes_world_new(NULL);
    if (!w)
        return NULL;
    static const struct {
        const char *name;
        uint32_t size, align;
        tes_storage_t storage;
        bool stable, hooked;
    } base[FS_NBASE] = {
        {"", 0, 0, TES_STORAGE_TABLE, false, false},
        {"f_t4", 4, 4, TES_STORAGE_TABLE, false, false},
        {"f_t24", 24, 8, TES_STORAGE_TABLE, false, true},
        {"f_ttag", 0, 0, TES_STORAGE_TABLE, false, false},
        {"f_s8", 8, 8, TES_STORAGE_SPARSE, false, true},
        {"f_sst", 16, 8, TES_STORAGE_SPARSE, true, true},
        {"f_stag", 0, 0, TES_STORAGE_SPARSE, false, false},
        {"f_t16", 16, 16, TES_STORAGE_TABLE, false, false},
        {"f_s4", 4, 4, TES_STORAGE_SPARSE, false, false},
    };
    ids[0] = TES_DISABLED;
    for (int k = 1; k < FS_NBASE; k++) {
        tes_component_desc_t d;
        memset(&d, 0, sizeof d);
        d.name = base[k].name;
        d.size = base[k].size;
        d.align = base[k].align;
        d.storage = base[k].storage;
        d.stable = base[k].stable;
        if (base[k].hooked) {
            d.hooks.save = src_save;
            d.hooks.ctx = (void *)(uintptr_t)base[k].size;
        }
        ids[k] = tes_component(w, &d);
    }
    /* Entities with mixed components and values. */
    tes_entity_t e[24];
    for (int i = 0; i < 24; i++) {
        e[i] = tes_spawn(w);
        uint8_t v[24];
        memset(v, 0x10 + i, sizeof v);
        for (int k = 1; k < FS_NBASE; k++)
            if ((i + k) % 3 == 0)
                tes_set(w, e[i], ids[k], v);
    }
    tes_disable(w, e[4]);
    tes_destroy(w, e[6]);
    tes_destroy(w, e[9]);
    tes_remove(w, e[7], ids[FS_C_SST]);
    /* A prefab with a child, two instances, one member detached. */
    tes_entity_t prefab = tes_prefab_new(w);
    uint8_t v[24];
    memset(v, 0x77, sizeof v);
    tes_set(w, prefab, ids[FS_C_T24], v);
    tes_entity_t child = tes_prefab_child(w, prefab);
    tes_set(w, child, ids[FS_C_S8], v);
    /* A forest: plain entities linked and named, the prefab's child under
     * its root (its instances copy the link), so the load stages the
     * hierarchy section and checks its links against the prefab records. */
    tes_set_parent(w, e[1], e[0]);
    tes_set_parent(w, e[2], e[0]);
    tes_set_parent(w, e[5], e[2]);
    tes_set_name(w, e[0], "root");
    tes_set_name(w, e[2], "two");
    tes_set_parent(w, child, prefab);
    tes_entity_t out[2];
    tes_instantiate(w, prefab, out, 2);
    tes_instantiate(w, prefab, NULL, 0);
    tes_instance_detach(w, out[1]);
    return w;
}

void fs_sc_snapshot(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    tes_comp_t ids[FS_NBASE];
    tes_world_t *src = source_world(ids);
    sw_buf_t bytes = {0}, out = {0};
    tes_writer_t wr = {sw_buf_write, &bytes};
    if (!src || tes_snapshot_save(src, &wr) != TES_OK) {
        fs_problem(r, "the source world could not be saved");
        r->dead = true;
    }
    /* Track what the load will bring to life, so every state snapshot of
     * the sweep covers it (dead before the load, alive after). */
    for (uint32_t i = 0; !r->dead && i < 64; i++)
        for (uint32_t g = 1; g < 4; g++)
            if (tes_alive(src, tes_entity_make(i, g))) {
                fs_track(r, tes_entity_make(i, g));
                tes_instance_t inst = tes_instance_of(src, tes_entity_make(i, g));
                if (inst)
                    fs_track_inst(r, inst);
            }
    tes_world_free(src);
    /* Groups that exist during the load hear of every entity (their room
     * is reserved by the load too), each paired with a plain twin. */
    tes_query_desc_t plain = {.terms = {{r->ids[FS_C_T4]}, {r->ids[FS_C_S8]}}};
    tes_query_desc_t group = plain;
    group.flags = TES_QUERY_NONOWNING_GROUP;
    int twin = fs_query_new(r, &plain, -1);
    fs_query_new(r, &group, twin);
    tes_query_desc_t oplain = {.terms = {{r->ids[FS_C_S4]}}};
    tes_query_desc_t owning = oplain;
    owning.flags = TES_QUERY_OWNING_GROUP;
    twin = fs_query_new(r, &oplain, -1);
    fs_query_new(r, &owning, twin);
    if (!r->dead)
        FS_STEP(r, load_step(r->w, &bytes));
    if (!r->dead)
        FS_STEP(r, save_step(r->w, &out));
    /* (No byte comparison here: the owning group reorders its store as
     * entities join it; test_snapshot checks canonical bytes.) */
    /* A few changes on top, so the final state covers the loaded world. */
    tes_entity_t e = fs_spawn(r);
    fs_set(r, e, FS_C_SST, 3);
    fs_set(r, e, FS_C_T24, 4);
    if (r->nents)
        fs_destroy(r, r->ents[0]);
    free(bytes.data);
    free(out.data);
}

/* A table of 1 KiB values (and a few small ones beside them). */
#define LARGE_SIZE 1024
#define LARGE_ROWS 40

void fs_sc_snapshot_large(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    fs_register(r, "f_big", LARGE_SIZE, 8, TES_STORAGE_TABLE, false, false);
    tes_world_t *src = tes_world_new(NULL);
    tes_comp_t big = 0, small = 0;
    if (src) {
        big = tes_component(src, &(tes_component_desc_t){.name = "f_big", .size = LARGE_SIZE,
                                                         .align = 8});
        small = tes_component(src, &(tes_component_desc_t){.name = "f_t4", .size = 4, .align = 4});
    }
    sw_buf_t bytes = {0}, out = {0};
    tes_writer_t wr = {sw_buf_write, &bytes};
    static uint8_t value[LARGE_SIZE];
    for (uint32_t i = 0; src && big && small && i < LARGE_ROWS; i++) {
        tes_entity_t e = tes_spawn(src);
        memset(value, (int)(0x20 + i), sizeof value);
        tes_set(src, e, big, value);
        if (i % 2)
            tes_set(src, e, small, &i);
        fs_track(r, e);
    }
    if (!src || !big || !small || tes_snapshot_save(src, &wr) != TES_OK) {
        fs_problem(r, "the large source world could not be saved");
        r->dead = true;
    }
    tes_world_free(src);
    if (!r->dead)
        FS_STEP(r, load_step(r->w, &bytes));
    if (!r->dead)
        FS_STEP(r, save_step(r->w, &out));
    if (!r->dead && (out.size != bytes.size || memcmp(out.data, bytes.data, out.size) != 0))
        fs_problem(r, "the loaded large world saves to other bytes");
    tes_entity_t e = fs_spawn(r);
    fs_set(r, e, FS_C_T4, 5);
    if (r->nents)
        fs_destroy(r, r->ents[0]);
    free(bytes.data);
    free(out.data);
}
