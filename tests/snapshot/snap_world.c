/*
 * The shared snapshot test world (see snap_world.h).
 */
#include "snapshot/snap_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long sw_names_live;
int sw_fail_load_at;

static char *dup_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) {
        memcpy(p, s, n);
        sw_names_live++;
    }
    return p;
}

static void name_dtor(void *ptr, int32_t count, void *ctx)
{
    (void)ctx;
    sw_name_t *v = ptr;
    for (int32_t i = 0; i < count; i++)
        if (v[i].text) {
            free(v[i].text);
            sw_names_live--;
            v[i].text = NULL;
        }
}

static void name_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    (void)ctx;
    sw_name_t *d = dst;
    const sw_name_t *s = src;
    for (int32_t i = 0; i < count; i++) {
        name_dtor(&d[i], 1, NULL);
        d[i].text = s[i].text ? dup_text(s[i].text) : NULL;
    }
}

static int name_save(const void *ptr, const tes_writer_t *out, void *ctx)
{
    (void)ctx;
    const sw_name_t *v = ptr;
    uint32_t len = v->text ? (uint32_t)strlen(v->text) : UINT32_MAX;
    int rc = out->write(&len, sizeof len, out->user);
    if (!rc && v->text)
        rc = out->write(v->text, len, out->user);
    return rc;
}

static int name_load(void *ptr, const tes_reader_t *in, void *ctx)
{
    (void)ctx;
    sw_name_t *v = ptr;
    if (sw_fail_load_at > 0 && --sw_fail_load_at == 0)
        return TES_ERR_INVALID;
    uint32_t len;
    int rc = in->read(&len, sizeof len, in->user);
    if (rc || len == UINT32_MAX)
        return rc;
    if (len > 4096)
        return TES_ERR_FORMAT;
    char text[4097];
    rc = in->read(text, len, in->user);
    if (rc)
        return rc;
    text[len] = 0;
    if (memchr(text, 0, len))
        return TES_ERR_FORMAT; /* save never writes a NUL inside */
    v->text = dup_text(text);
    return v->text ? TES_OK : TES_ERR_NOMEM;
}

tes_world_desc_t sw_desc(void)
{
    tes_world_desc_t d;
    memset(&d, 0, sizeof d);
    d.generation_limit = 3;
    return d;
}

bool sw_register(tes_world_t *w, sw_ids_t *ids, bool shuffle, bool extra)
{
    tes_component_desc_t d[9];
    memset(d, 0, sizeof d);
    d[0] = (tes_component_desc_t){.name = "Position", .size = sizeof(sw_pos_t)};
    d[1] = (tes_component_desc_t){.name = "Velocity", .size = sizeof(sw_pos_t)};
    d[2] = (tes_component_desc_t){.name = "Health", .size = 4};
    d[3] = (tes_component_desc_t){.name = "Tag"};
    d[4] = (tes_component_desc_t){.name = "SparseU64", .size = 8, .storage = TES_STORAGE_SPARSE};
    d[5] = (tes_component_desc_t){.name = "Stable", .size = 16, .stable = true};
    d[6] = (tes_component_desc_t){.name = "SparseTag", .storage = TES_STORAGE_SPARSE};
    d[7] = (tes_component_desc_t){.name = "Link", .size = sizeof(sw_link_t),
                                  .entity_fields = {offsetof(sw_link_t, target)},
                                  .entity_field_count = 1};
    d[8] = (tes_component_desc_t){.name = "Name", .size = sizeof(sw_name_t)};
    d[8].hooks.dtor = name_dtor;
    d[8].hooks.copy = name_copy;
    d[8].hooks.save = name_save;
    d[8].hooks.load = name_load;
    tes_comp_t *out[9] = {&ids->pos, &ids->vel, &ids->health, &ids->tag, &ids->sparse,
                          &ids->stable, &ids->stag, &ids->link, &ids->name};
    if (extra && !tes_component(w, &(tes_component_desc_t){.name = "Unused", .size = 32}))
        return false;
    for (int i = 0; i < 9; i++) {
        int k = shuffle ? 8 - i : i;
        *out[k] = tes_component(w, &d[k]);
        if (!*out[k])
            return false;
    }
    return true;
}

static void set_name(tes_world_t *w, tes_comp_t c, tes_entity_t e, const char *text)
{
    sw_name_t tmp = {dup_text(text)};
    tes_set(w, e, c, &tmp);
    name_dtor(&tmp, 1, NULL);
}

bool sw_populate(tes_world_t *w, const sw_ids_t *ids, int scale)
{
    tes_entity_t e[64];
    int n = 12 * scale > 64 ? 64 : 12 * scale;
    for (int i = 0; i < n; i++) {
        e[i] = tes_spawn(w);
        if (!e[i])
            return false;
        sw_pos_t p = {(float)i, (float)i * 2, 0.5f};
        if (i % 2 == 0)
            tes_set(w, e[i], ids->pos, &p);
        if (i % 3 == 0)
            tes_set(w, e[i], ids->vel, &p);
        if (i % 4 == 1) {
            uint32_t h = 100u + (uint32_t)i;
            tes_set(w, e[i], ids->health, &h);
            tes_add(w, e[i], ids->tag);
        }
        if (i % 3 == 1) {
            uint64_t v = 0x1111111111111111u * (uint64_t)(i % 15);
            tes_set(w, e[i], ids->sparse, &v);
        }
        if (i % 2 == 1) {
            uint8_t v[16];
            memset(v, 0x40 + i, sizeof v);
            tes_set(w, e[i], ids->stable, v);
        }
        if (i % 5 == 0)
            tes_add(w, e[i], ids->stag);
        if (i % 4 == 3) {
            char text[32];
            snprintf(text, sizeof text, "entity-%d", i);
            set_name(w, ids->name, e[i], text);
        }
        if (i % 6 == 2)
            tes_disable(w, e[i]);
    }
    for (int i = 0; i < n; i++) {
        sw_link_t l = {e[(i * 7) % n], (uint32_t)i, 0};
        if (i % 5 == 4)
            tes_set(w, e[i], ids->link, &l);
    }
    /* Holes: a free list, stable-store tombstones, and a retired slot
     * (generation_limit 3: destroy the same index three times). */
    tes_destroy(w, e[3]);
    tes_destroy(w, e[5]);
    tes_remove(w, e[7], ids->stable);
    for (int k = 0; k < 3; k++) {
        tes_entity_t t = tes_spawn(w);
        tes_destroy(w, t);
    }
    /* A prefab with two children (one with a reference to the root and a
     * name), two instances, one member detached, one adopted. */
    tes_entity_t prefab = tes_prefab_new(w);
    sw_pos_t pp = {9, 9, 9};
    tes_set(w, prefab, ids->pos, &pp);
    tes_entity_t child = tes_prefab_child(w, prefab);
    sw_link_t l = {prefab, 7, 0};
    tes_set(w, child, ids->link, &l);
    set_name(w, ids->name, child, "child");
    tes_entity_t child2 = tes_prefab_child(w, prefab);
    uint64_t sv = 42;
    tes_set(w, child2, ids->sparse, &sv);
    tes_entity_t out[3];
    tes_instance_t i1 = tes_instantiate(w, prefab, out, 3);
    tes_instance_t i2 = tes_instantiate(w, prefab, NULL, 0);
    if (!prefab || !child || !i1 || !i2)
        return false;
    tes_instance_detach(w, out[2]);
    tes_instance_adopt(w, i2, e[0]);
    /* A second prefab destroyed: a free prefab record and instance slot. */
    tes_entity_t gone = tes_prefab_new(w);
    tes_instance_t i3 = tes_instantiate(w, gone, NULL, 0);
    tes_instance_destroy(w, i3);
    tes_destroy(w, gone);
    return tes_last_error(w) == TES_OK;
}

#define FAIL(...) (snprintf(why, 256, __VA_ARGS__), false)

static bool same_value(tes_world_t *a, tes_comp_t ca, tes_world_t *b, tes_comp_t cb,
                       tes_entity_t e, size_t size, bool is_name)
{
    const void *va = tes_get(a, e, ca), *vb = tes_get(b, e, cb);
    if (!va || !vb)
        return va == vb;
    if (!is_name)
        return memcmp(va, vb, size) == 0;
    const sw_name_t *na = va, *nb = vb;
    if (!na->text || !nb->text)
        return na->text == nb->text;
    return strcmp(na->text, nb->text) == 0;
}

bool sw_equal(tes_world_t *a, const sw_ids_t *ia, tes_world_t *b, const sw_ids_t *ib, char *why)
{
    tes_world_stats_t sa, sb;
    tes_world_stats(a, &sa);
    tes_world_stats(b, &sb);
    if (sa.entities_alive != sb.entities_alive || sa.entity_slots != sb.entity_slots ||
        sa.entities_retired != sb.entities_retired || sa.entities_free != sb.entities_free ||
        sa.instances_alive != sb.instances_alive)
        return FAIL("stats differ: alive %u/%u slots %u/%u retired %u/%u free %u/%u inst %u/%u",
                    sa.entities_alive, sb.entities_alive, sa.entity_slots, sb.entity_slots,
                    sa.entities_retired, sb.entities_retired, sa.entities_free, sb.entities_free,
                    sa.instances_alive, sb.instances_alive);
    const tes_comp_t *ca = &ia->pos, *cb = &ib->pos;
    const size_t sizes[9] = {12, 12, 4, 0, 8, 16, 0, sizeof(sw_link_t), sizeof(sw_name_t)};
    for (uint32_t i = 0; i < sa.entity_slots; i++) {
        for (uint32_t g = 1; g <= 4; g++) {
            tes_entity_t e = tes_entity_make(i, g);
            if (tes_alive(a, e) != tes_alive(b, e))
                return FAIL("slot %u gen %u: alive differs", i, g);
            if (!tes_alive(a, e))
                continue;
            if (tes_enabled(a, e) != tes_enabled(b, e))
                return FAIL("%#llx: enabled differs", (unsigned long long)e);
            if (tes_has(a, e, TES_PREFAB) != tes_has(b, e, TES_PREFAB))
                return FAIL("%#llx: prefab tag differs", (unsigned long long)e);
            if (tes_components_of(a, e, NULL, 0) != tes_components_of(b, e, NULL, 0))
                return FAIL("%#llx: component count differs", (unsigned long long)e);
            for (int k = 0; k < 9; k++) {
                if (tes_has(a, e, ca[k]) != tes_has(b, e, cb[k]))
                    return FAIL("%#llx: has(component %d) differs", (unsigned long long)e, k);
                if (sizes[k] && !same_value(a, ca[k], b, cb[k], e, sizes[k], k == 8))
                    return FAIL("%#llx: value of component %d differs", (unsigned long long)e, k);
            }
            tes_instance_t inst = tes_instance_of(a, e);
            if (inst != tes_instance_of(b, e))
                return FAIL("%#llx: instance differs", (unsigned long long)e);
            if (inst) {
                tes_entity_t ma[64], mb[64];
                int32_t na = tes_instance_members(a, inst, ma, 64);
                int32_t nb = tes_instance_members(b, inst, mb, 64);
                if (na != nb || memcmp(ma, mb, (size_t)(na < 64 ? na : 64) * sizeof *ma))
                    return FAIL("instance %#llx: members differ", (unsigned long long)inst);
            }
            tes_entity_t pa[64], pb[64];
            int32_t na = tes_prefab_members(a, e, pa, 64), nb = tes_prefab_members(b, e, pb, 64);
            if (na != nb || (na > 0 && memcmp(pa, pb, (size_t)(na < 64 ? na : 64) * sizeof *pa)))
                return FAIL("%#llx: prefab members differ", (unsigned long long)e);
        }
    }
    /* Queries made now see the same entities (order may differ between
     * table ids, so counts per query). */
    for (int k = 0; k < 9; k++) {
        tes_query_desc_t qa, qb;
        memset(&qa, 0, sizeof qa);
        memset(&qb, 0, sizeof qb);
        qa.terms[0].comp = ca[k];
        qb.terms[0].comp = cb[k];
        qa.flags = qb.flags = k % 2 ? TES_QUERY_INCLUDE_DISABLED : 0;
        tes_query_t *x = tes_query_new(a, &qa), *y = tes_query_new(b, &qb);
        int32_t nx = tes_query_count(x), ny = tes_query_count(y);
        tes_query_free(x);
        tes_query_free(y);
        if (nx != ny)
            return FAIL("query on component %d: %d vs %d", k, nx, ny);
    }
    return true;
}
