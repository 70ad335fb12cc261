/*
 * The tracked lifecycle hooks (see track.h). A hook cannot return an error,
 * so a broken expectation is recorded in the tracker (first message wins)
 * and the driver reports it after the op that triggered it.
 */
#include "fuzz/track.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes a destroyed or moved-from value is overwritten with: its serial
 * then names no record, so any later use of it is caught. */
#define POISON 0xDD

static void track_fail(fz_tracker_t *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    t->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg, sizeof t->msg, fmt, ap);
    va_end(ap);
}

void fz_tracker_init(fz_tracker_t *t, bool probe)
{
    memset(t, 0, sizeof *t);
    t->probe = probe;
    t->set_expect_k = -1;
    for (int k = 0; k < FZ_NCOMP; k++) {
        t->ctx[k].t = t;
        t->ctx[k].k = k;
    }
}

void fz_tracker_fini(fz_tracker_t *t)
{
    free(t->recs);
    t->recs = NULL;
    t->nrecs = t->cap = 0;
}

static uint64_t read_serial(const void *p)
{
    uint64_t s;
    memcpy(&s, p, sizeof s);
    return s;
}

static fz_track_rec_t *rec_of(const fz_tracker_t *t, uint64_t serial)
{
    if (serial == 0 || serial > t->nrecs)
        return NULL;
    return &t->recs[serial - 1];
}

bool fz_tracker_valid(const fz_tracker_t *t, int k, const void *ptr)
{
    fz_track_rec_t *r = rec_of(t, read_serial(ptr));
    return r && r->live && r->comp == k && r->addr == ptr;
}

static uint64_t new_serial(fz_tracker_t *t)
{
    uint32_t serial;
    if (t->free_head) {
        serial = t->free_head;
        t->free_head = t->recs[serial - 1].next_free;
    } else {
        if (t->nrecs == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 1024;
            fz_track_rec_t *p = realloc(t->recs, (size_t)cap * sizeof *p);
            if (!p) {
                track_fail(t, "tracker out of memory");
                return 0;
            }
            t->recs = p;
            t->cap = cap;
        }
        serial = ++t->nrecs;
    }
    t->live++;
    return serial;
}

/* Checks the value at p is live, of component k, recorded at p. */
static fz_track_rec_t *expect_live(fz_tracker_t *t, int k, const void *p, const char *hook)
{
    fz_track_rec_t *r = rec_of(t, read_serial(p));
    if (!r || !r->live || r->comp != k || r->addr != p) {
        track_fail(t, "%s(%s) at %p: not a live constructed value there (serial %llu%s)", hook,
                   fz_comps[k].name, p, (unsigned long long)read_serial(p),
                   !r ? ", unknown" : !r->live ? ", destroyed" : r->comp != k ? ", other component"
                                                                            : ", lives elsewhere");
        return NULL;
    }
    return r;
}

/* Checks the value at p is (a bitwise image of) a live value of k. */
static void expect_image(fz_tracker_t *t, int k, const void *p, const char *hook)
{
    fz_track_rec_t *r = rec_of(t, read_serial(p));
    if (!r || !r->live || r->comp != k)
        track_fail(t, "%s(%s) at %p: not an image of a live value (serial %llu%s)", hook,
                   fz_comps[k].name, p, (unsigned long long)read_serial(p),
                   !r ? ", unknown" : !r->live ? ", destroyed" : ", other component");
}

static void check_align(fz_tracker_t *t, int k, const void *p, const char *hook)
{
    if ((uintptr_t)p % fz_comps[k].align)
        track_fail(t, "%s(%s): misaligned pointer %p", hook, fz_comps[k].name, p);
}

static void hook_ctor(void *ptr, int32_t count, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    fz_tracker_t *t = c->t;
    uint32_t size = fz_comps[c->k].size;
    if (count <= 0)
        track_fail(t, "ctor(%s) with count %d", fz_comps[c->k].name, (int)count);
    for (int32_t i = 0; i < count; i++) {
        uint8_t *p = (uint8_t *)ptr + (size_t)i * size;
        check_align(t, c->k, p, "ctor");
        uint64_t serial = new_serial(t);
        if (serial) {
            fz_track_rec_t *r = &t->recs[serial - 1];
            r->addr = p;
            r->comp = (uint8_t)c->k;
            r->live = true;
        }
        uint8_t def[FZ_MAXSIZE];
        fz_default_value(c->k, def);
        memcpy(p, def, size);
        memcpy(p, &serial, sizeof serial);
    }
    t->counts[c->k].ctor += (uint64_t)(count > 0 ? count : 0);
}

static void hook_dtor(void *ptr, int32_t count, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    fz_tracker_t *t = c->t;
    uint32_t size = fz_comps[c->k].size;
    if (count <= 0)
        track_fail(t, "dtor(%s) with count %d", fz_comps[c->k].name, (int)count);
    for (int32_t i = 0; i < count; i++) {
        uint8_t *p = (uint8_t *)ptr + (size_t)i * size;
        fz_track_rec_t *r = expect_live(t, c->k, p, "dtor");
        if (r) {
            uint32_t serial = (uint32_t)(r - t->recs) + 1;
            r->live = false;
            r->addr = NULL;
            r->next_free = t->free_head;
            t->free_head = serial;
            t->live--;
        }
        memset(p, POISON, size);
    }
    t->counts[c->k].dtor += (uint64_t)(count > 0 ? count : 0);
}

static void hook_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    fz_tracker_t *t = c->t;
    uint32_t size = fz_comps[c->k].size;
    for (int32_t i = 0; i < count; i++) {
        uint8_t *d = (uint8_t *)dst + (size_t)i * size;
        const uint8_t *s = (const uint8_t *)src + (size_t)i * size;
        expect_live(t, c->k, d, "copy dst");
        /* Serial 0 marks a value the user passed to tes_set: not one of
         * ours, so there is nothing to check about it. Any other source
         * must be a live value of this component, though not necessarily
         * at this address: tes_set copies from a bitwise image of a value
         * that lives in the world (which also covers a deferred set's
         * staged value), as the header documents. */
        if (read_serial(s) != 0)
            expect_image(t, c->k, s, "copy src");
        memcpy(d + FZ_TRACK_HDR, s + FZ_TRACK_HDR, size - FZ_TRACK_HDR);
    }
    t->counts[c->k].copy += (uint64_t)(count > 0 ? count : 0);
}

static void move_one(fz_tracker_t *t, int k, uint8_t *d, uint8_t *s, uint32_t size)
{
    check_align(t, k, d, "move dst");
    fz_track_rec_t *r = expect_live(t, k, s, "move src");
    if (r)
        r->addr = d;
    memmove(d, s, size);
    if (d != s) {
        /* Only poison the part of the source the destination does not
         * cover (element-wise moves within one array may overlap). */
        for (uint32_t b = 0; b < size; b++)
            if (s + b < d || s + b >= d + size)
                s[b] = POISON;
    }
}

static void hook_move(void *dst, void *src, int32_t count, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    fz_tracker_t *t = c->t;
    uint32_t size = fz_comps[c->k].size;
    uint8_t *d = dst, *s = src;
    /* Walk in the direction that keeps overlapping ranges intact. */
    if (d <= s) {
        for (int32_t i = 0; i < count; i++)
            move_one(t, c->k, d + (size_t)i * size, s + (size_t)i * size, size);
    } else {
        for (int32_t i = count - 1; i >= 0; i--)
            move_one(t, c->k, d + (size_t)i * size, s + (size_t)i * size, size);
    }
    t->counts[c->k].move += (uint64_t)(count > 0 ? count : 0);
}

/* A structural call from inside a hook must be refused with TES_ERR_BUSY and
 * change nothing; so must deferral levels, iteration and owning groups,
 * while other queries can be created (and freed) there. Rotates through
 * the kinds of calls. */
static void probe_busy(fz_tracker_t *t, tes_world_t *w, tes_entity_t e, int k, const char *hook)
{
    if (!t->probe || (t->probe_tick++ & 7u) != 0)
        return;
    int rc = TES_OK;
    const char *what = "";
    uint32_t v = 7;
    tes_entity_t out[1];
    tes_instance_t insts[1];
    int want = TES_ERR_BUSY;
    tes_query_desc_t qd = {.terms = {{t->ids[k]}}};
    tes_query_t *q;
    switch ((t->probe_tick >> 3) % 16u) {
    case 0:
        what = "tes_spawn";
        rc = tes_spawn(w) == TES_NULL ? tes_last_error(w) : TES_OK;
        break;
    case 1:
        what = "tes_destroy";
        rc = tes_destroy(w, e);
        break;
    case 2:
        what = "tes_clear";
        rc = tes_clear(w, e);
        break;
    case 3:
        what = "tes_set";
        rc = tes_set(w, e, t->ids[FZ_C_T4], &v);
        break;
    case 4:
        what = "tes_clone";
        rc = tes_clone(w, e) == TES_NULL ? tes_last_error(w) : TES_OK;
        break;
    case 5:
        what = "tes_spawn_n";
        rc = tes_spawn_n(w, 1, NULL, 0, out);
        break;
    case 7:
        what = "tes_prefab_new";
        rc = tes_prefab_new(w) == TES_NULL ? tes_last_error(w) : TES_OK;
        break;
    case 8:
        what = "tes_instantiate";
        rc = tes_instantiate(w, e, NULL, 0) == 0 ? tes_last_error(w) : TES_OK;
        break;
    case 9:
        what = "tes_instantiate_n";
        rc = tes_instantiate_n(w, e, 1, insts);
        break;
    case 10:
        what = tes_instance_of(w, e) ? "tes_instance_destroy" : "tes_instance_detach";
        rc = tes_instance_of(w, e) ? tes_instance_destroy(w, tes_instance_of(w, e))
                                   : tes_instance_detach(w, e);
        break;
    case 11:
        what = tes_is_deferred(w) ? "tes_defer_end" : "tes_defer_begin";
        rc = tes_is_deferred(w) ? tes_defer_end(w) : tes_defer_begin(w);
        break;
    case 12: {
        /* A plain query works in a hook, its iteration is refused, its
         * count works (e has the component: observers see it). */
        what = "tes_query_iter";
        q = tes_query_new(w, &qd);
        tes_iter_t it = tes_query_iter(q);
        rc = q && !tes_iter_next(&it) ? tes_last_error(w) : TES_OK;
        if (q && tes_query_count(q) < (tes_enabled(w, e) && !tes_has(w, e, TES_PREFAB)))
            rc = TES_ERR_INVALID;
        tes_query_free(q);
        break;
    }
    case 13:
        what = "tes_query_new (owning group)";
        qd.flags = TES_QUERY_OWNING_GROUP;
        rc = tes_query_new(w, &qd) == NULL ? tes_last_error(w) : TES_OK;
        break;
    case 14:
        /* A non-owning group made and freed in a hook: built later, freed
         * after the change. */
        what = "tes_query_new (non-owning group) + tes_query_free";
        want = TES_OK;
        qd.flags = TES_QUERY_NONOWNING_GROUP;
        q = tes_query_new(w, &qd);
        rc = q ? TES_OK : tes_last_error(w);
        tes_query_free(q);
        break;
    default:
        what = "tes_remove";
        rc = tes_remove(w, e, t->ids[k]);
        break;
    }
    t->probed |= want == TES_ERR_BUSY; /* the driver then expects BUSY as the last error */
    if (rc != want)
        track_fail(t, "%s(%s) hook: %s returned %d, want %d", hook, fz_comps[k].name, what, rc,
                   want);
}

/* What every observer checks: e is alive, has the component, and (for data
 * components) ptr is where tes_get finds it and holds a live value. */
static void observe(fz_tracker_t *t, int k, tes_world_t *w, tes_entity_t e, void *ptr,
                    const char *hook)
{
    tes_comp_t id = t->ids[k];
    if (!tes_alive(w, e)) {
        track_fail(t, "%s(%s): entity %#llx not alive inside the hook", hook, fz_comps[k].name,
                   (unsigned long long)e);
        return;
    }
    if (!tes_has(w, e, id)) {
        track_fail(t, "%s(%s): tes_has is false inside the hook", hook, fz_comps[k].name);
        return;
    }
    if (fz_comps[k].size) {
        const void *g = tes_get(w, e, id);
        if (!ptr || g != ptr) {
            track_fail(t, "%s(%s): hook ptr %p but tes_get gives %p", hook, fz_comps[k].name, ptr,
                       g);
            return;
        }
        if (fz_comps[k].tracked)
            expect_live(t, k, ptr, hook);
    }
}

static void hook_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    c->t->counts[c->k].on_add++;
    observe(c->t, c->k, w, e, ptr, "on_add");
    probe_busy(c->t, w, e, c->k, "on_add");
}

static void hook_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    fz_tracker_t *t = c->t;
    t->counts[c->k].on_set++;
    observe(t, c->k, w, e, ptr, "on_set");
    uint32_t size = fz_comps[c->k].size;
    if (size && ptr && t->set_expect && t->set_expect_k == c->k &&
        memcmp((uint8_t *)ptr + FZ_TRACK_HDR, t->set_expect + FZ_TRACK_HDR, size - FZ_TRACK_HDR))
        track_fail(t, "on_set(%s): the value is not the one passed to tes_set", fz_comps[c->k].name);
    probe_busy(t, w, e, c->k, "on_set");
}

static void hook_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    fz_hook_ctx_t *c = ctx;
    c->t->counts[c->k].on_remove++;
    observe(c->t, c->k, w, e, ptr, "on_remove");
    probe_busy(c->t, w, e, c->k, "on_remove");
}

void fz_tracker_hooks(fz_tracker_t *t, int k, tes_hooks_t *out)
{
    memset(out, 0, sizeof *out);
    if (!fz_comps[k].tracked && !fz_comps[k].observed)
        return;
    if (fz_comps[k].tracked) {
        out->ctor = hook_ctor;
        out->dtor = hook_dtor;
        out->copy = hook_copy;
        out->move = hook_move;
    }
    out->on_add = hook_on_add;
    out->on_set = hook_on_set;
    out->on_remove = hook_on_remove;
    out->ctx = &t->ctx[k];
}
