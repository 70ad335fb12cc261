/*
 * fault_sweep: the allocation-failure sweep (see fault.h for the method).
 * This file holds the runner (steps, snapshots, checks, hooks) and main;
 * the scenarios are in scenarios.c, scenarios_query.c, scenarios_sites.c and
 * scenarios_lifecycle.c, the query and deferral steps in steps_query.c, the
 * prefab and instance steps in steps_lifecycle.c.
 *
 * A snapshot is the observable state serialized to bytes: entity count,
 * stats (alive, slots, retired, free, components, tables, instances), hook
 * counters and ctor - dtor per component, then for every entity the
 * scenario ever made: alive, tes_components_of, each data value from
 * tes_get, tes_enabled, tes_instance_of, tes_prefab_members; then for every
 * instance it made, tes_instance_members; then for every tracked query its
 * tes_query_count and the entities its iteration visits, sorted. Two
 * states are equal when their bytes are; on a mismatch the field or entity
 * that differs is named. Allocated bytes and capacities are not part of it:
 * a failed call may keep a grown buffer, which nobody can observe.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault/fault.h"
#include "query/query.h"
#include "query/filter.h"
#include "world/check.h"
#include "world/world.h" /* the deferred queue's length: a failed call queues nothing */

/* ------------------------------------------------------------------ problems */

static int printed_problems;

void fs_problem(fs_run_t *r, const char *fmt, ...)
{
    r->problems++;
    if (printed_problems++ >= 10)
        return; /* per scenario; the count still goes into the summary */
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->reference)
        printf("fault: PROBLEM [%s, no failure, step %u] %s\n", r->scenario, r->step, msg);
    else
        printf("fault: PROBLEM [%s, failing allocation %" PRIu64 ", step %u] %s\n", r->scenario,
               r->ca.fail_at, r->step, msg);
}

/* ------------------------------------------------------------------ hooks */

#define FS_POISON 0xDD
#define FS_CTOR_BYTE 0xC3

static void h_ctor(void *ptr, int32_t count, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    memset(ptr, FS_CTOR_BYTE, (size_t)count * c->size);
    c->r->counts[c->k].ctor += (uint64_t)count;
}

static void h_dtor(void *ptr, int32_t count, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    memset(ptr, FS_POISON, (size_t)count * c->size);
    c->r->counts[c->k].dtor += (uint64_t)count;
}

static void h_copy(void *dst, const void *src, int32_t count, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    memmove(dst, src, (size_t)count * c->size);
}

static void h_move(void *dst, void *src, int32_t count, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    memmove(dst, src, (size_t)count * c->size);
}

/* Snapshots: a hooked value is saved and loaded as its raw bytes. */
static int h_save(const void *ptr, const tes_writer_t *out, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    return out->write(ptr, c->size, out->user);
}

static int h_load(void *ptr, const tes_reader_t *in, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    return in->read(ptr, c->size, in->user);
}

static void h_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    (void)w, (void)e, (void)ptr;
    c->r->counts[c->k].on_add++;
}

static void h_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    (void)w, (void)e, (void)ptr;
    c->r->counts[c->k].on_set++;
}

static void h_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    fs_hook_ctx_t *c = ctx;
    (void)w, (void)e, (void)ptr;
    c->r->counts[c->k].on_remove++;
}

/* ------------------------------------------------------------------ snapshots */

static void snap_put(fs_snap_t *s, const void *p, size_t n)
{
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->len + n)
            cap *= 2;
        uint8_t *b = realloc(s->bytes, cap);
        if (!b) {
            fprintf(stderr, "fault: out of memory\n");
            exit(2);
        }
        s->bytes = b;
        s->cap = cap;
    }
    memcpy(s->bytes + s->len, p, n);
    s->len += n;
}

static void snap_u64(fs_snap_t *s, uint64_t v) { snap_put(s, &v, sizeof v); }

static void snap_free(fs_snap_t *s)
{
    free(s->bytes);
    free(s->ent_off);
    memset(s, 0, sizeof *s);
}

/* Query i's matches: its count, then the entities its iteration visits,
 * sorted (NULL for a freed query). */
static int cmp_entity(const void *a, const void *b)
{
    tes_entity_t x = *(const tes_entity_t *)a, y = *(const tes_entity_t *)b;
    return (x > y) - (x < y);
}

static tes_entity_t *query_matches(fs_run_t *r, int i, uint32_t *n)
{
    size_t cap = 256;
    tes_entity_t *buf = malloc(cap * sizeof *buf);
    *n = 0;
    if (!buf) {
        fprintf(stderr, "fault: out of memory\n");
        exit(2);
    }
    /* A query with change terms or a tracked TES_INOUT term is not
     * iterated here: an iteration ends its change window or stamps what
     * it yields, which would make the check change what it checks. Its
     * tes_query_count (which changes nothing) is still compared. */
    if (!r->queries[i] || r->queries[i]->change_window || r->queries[i]->stamp_count)
        return buf;
    tes_iter_t it = tes_query_iter(r->queries[i]);
    while (tes_iter_next(&it)) {
        for (int32_t j = 0; j < it.count; j++) {
            if (*n == cap) {
                cap *= 2;
                tes_entity_t *p = realloc(buf, cap * sizeof *buf);
                if (!p) {
                    fprintf(stderr, "fault: out of memory\n");
                    exit(2);
                }
                buf = p;
            }
            buf[(*n)++] = it.entities[j];
        }
    }
    qsort(buf, *n, sizeof *buf, cmp_entity);
    return buf;
}

static void snap_query(fs_run_t *r, fs_snap_t *s, int i)
{
    uint32_t n;
    tes_entity_t *m = query_matches(r, i, &n);
    snap_u64(s, r->queries[i] ? (uint64_t)(int64_t)tes_query_count(r->queries[i]) : UINT64_MAX);
    snap_u64(s, n);
    snap_put(s, m, (size_t)n * sizeof *m);
    free(m);
}

void fs_check_twins(fs_run_t *r, const char *what)
{
    for (int i = 0; i < r->nqueries; i++) {
        int j = r->twin[i];
        if (j < 0 || !r->queries[i] || !r->queries[j])
            continue;
        uint32_t na, nb;
        tes_entity_t *a = query_matches(r, i, &na);
        tes_entity_t *b = query_matches(r, j, &nb);
        if (na != nb || memcmp(a, b, (size_t)na * sizeof *a))
            fs_problem(r, "%s: query #%d (a group) matches %u entities, its plain twin #%d %u%s",
                       what, i, na, j, nb, na == nb ? " (other ones)" : "");
        free(a);
        free(b);
    }
}

/* Number of uint64 fields in the global part, and their names. */
#define GLOBAL_FIXED 8
static const char *const global_names[GLOBAL_FIXED] = {
    "entity_count", "stats.entities_alive", "stats.entity_slots", "stats.entities_retired",
    "stats.entities_free", "stats.components", "stats.tables", "stats.instances_alive"};
static const char *const counter_names[4] = {"on_add", "on_set", "on_remove", "ctor-dtor"};

/* with_tables: whether stats.tables counts. A failed call may leave behind
 * the (empty) table it created for its target type: like spare capacity it
 * changes no entity, value or query result, so the comparison around a
 * failed call leaves it out; the final comparison with the reference run
 * keeps it, unless a flush absorbed a failure. */
static void fs_snapshot(fs_run_t *r, fs_snap_t *s, bool with_tables)
{
    s->len = 0;
    tes_world_stats_t st;
    memset(&st, 0, sizeof st);
    tes_world_stats(r->w, &st);
    snap_u64(s, (uint64_t)(int64_t)tes_entity_count(r->w));
    snap_u64(s, st.entities_alive);
    snap_u64(s, st.entity_slots);
    snap_u64(s, st.entities_retired);
    snap_u64(s, st.entities_free);
    snap_u64(s, st.components);
    snap_u64(s, with_tables ? st.tables : 0);
    snap_u64(s, st.instances_alive);
    for (int k = 0; k < FS_MAX_COMPS; k++) {
        const fs_hook_counts_t *c = &r->counts[k];
        snap_u64(s, c->on_add);
        snap_u64(s, c->on_set);
        snap_u64(s, c->on_remove);
        snap_u64(s, c->ctor - c->dtor);
    }
    free(s->ent_off);
    s->ent_off = malloc(((size_t)r->nents + 1) * sizeof *s->ent_off);
    if (!s->ent_off) {
        fprintf(stderr, "fault: out of memory\n");
        exit(2);
    }
    s->nents = r->nents;
    for (uint32_t i = 0; i < r->nents; i++) {
        tes_entity_t e = r->ents[i];
        s->ent_off[i] = s->len;
        uint8_t alive = tes_alive(r->w, e);
        snap_put(s, &alive, 1);
        if (!alive)
            continue;
        tes_comp_t ids[FS_MAX_COMPS + 8];
        int32_t n = tes_components_of(r->w, e, ids, FS_MAX_COMPS + 8);
        snap_put(s, &n, sizeof n);
        for (int32_t j = 0; j < n && j < FS_MAX_COMPS + 8; j++) {
            snap_put(s, &ids[j], sizeof ids[j]);
            uint32_t size = ids[j] < FS_MAX_ID ? r->size_of[ids[j]] : 0;
            if (!size)
                continue;
            const void *p = tes_get(r->w, e, ids[j]);
            uint8_t present = p != NULL;
            snap_put(s, &present, 1);
            if (p)
                snap_put(s, p, size);
        }
        uint8_t enabled = tes_enabled(r->w, e);
        snap_put(s, &enabled, 1);
        snap_u64(s, tes_instance_of(r->w, e));
        tes_entity_t members[64];
        int32_t nm = tes_prefab_members(r->w, e, members, 64);
        snap_put(s, &nm, sizeof nm);
        if (nm > 0)
            snap_put(s, members, (size_t)(nm < 64 ? nm : 64) * sizeof *members);
        /* The hierarchy: parent, children in order, name. */
        tes_entity_t parent = tes_parent(r->w, e);
        snap_put(s, &parent, sizeof parent);
        tes_entity_t kids[64];
        int32_t nk = tes_children(r->w, e, kids, 64);
        snap_put(s, &nk, sizeof nk);
        if (nk > 0)
            snap_put(s, kids, (size_t)(nk < 64 ? nk : 64) * sizeof *kids);
        const char *name = tes_name(r->w, e);
        snap_put(s, name ? name : "", name ? strlen(name) + 1 : 1);
    }
    s->ent_off[r->nents] = s->len;
    for (uint32_t i = 0; i < r->ninsts; i++) {
        tes_entity_t members[256];
        int32_t nm = tes_instance_members(r->w, r->insts[i], members, 256);
        snap_put(s, &nm, sizeof nm);
        if (nm > 0)
            snap_put(s, members, (size_t)(nm < 256 ? nm : 256) * sizeof *members);
    }
    s->query_off = s->len;
    for (int i = 0; i < r->nqueries; i++)
        snap_query(r, s, i);
}

/* Names the first difference between two snapshots; true if equal. */
static bool snap_equal(fs_run_t *r, const fs_snap_t *a, const fs_snap_t *b, const char *what)
{
    if (a->len == b->len && a->nents == b->nents && !memcmp(a->bytes, b->bytes, a->len))
        return true;
    if (a->nents != b->nents) {
        fs_problem(r, "%s: %u entities tracked vs %u", what, a->nents, b->nents);
        return false;
    }
    size_t n = a->len < b->len ? a->len : b->len;
    size_t off = 0;
    while (off < n && a->bytes[off] == b->bytes[off])
        off++;
    size_t nglobal = (GLOBAL_FIXED + 4 * FS_MAX_COMPS) * sizeof(uint64_t);
    if (off < nglobal) {
        size_t f = off / sizeof(uint64_t);
        uint64_t va, vb;
        memcpy(&va, a->bytes + f * 8, 8);
        memcpy(&vb, b->bytes + f * 8, 8);
        if (f < GLOBAL_FIXED) {
            fs_problem(r, "%s: %s is %" PRIu64 ", was %" PRIu64, what, global_names[f], vb, va);
        } else {
            size_t k = (f - GLOBAL_FIXED) / 4;
            tes_comp_t id = r->ids[k];
            fs_problem(r, "%s: component #%zu (id %u) %s is %" PRIu64 ", was %" PRIu64, what, k, id,
                       counter_names[(f - GLOBAL_FIXED) % 4], vb, va);
        }
        return false;
    }
    if (off >= a->query_off || off >= b->query_off) {
        fs_problem(r, "%s: the matches of a query differ", what);
        return false;
    }
    if (off >= a->ent_off[a->nents] || off >= b->ent_off[b->nents]) {
        fs_problem(r, "%s: an instance differs (alive or members)", what);
        return false;
    }
    uint32_t i = 0;
    while (i + 1 < a->nents && a->ent_off[i + 1] <= off)
        i++;
    fs_problem(r, "%s: entity %#" PRIx64 " (tracked #%u) differs: alive, components or values",
               what, r->ents[i < r->nents ? i : 0], i);
    return false;
}

/* ctor - dtor must equal the number of live entities holding the value,
 * plus the values staged by queued sets. */
void fs_check_live(fs_run_t *r, const char *what)
{
    for (int k = 0; k < r->ncomps; k++) {
        const fs_hook_counts_t *c = &r->counts[k];
        if (!c->ctor && !c->dtor)
            continue;
        uint64_t live = 0;
        for (uint32_t i = 0; i < r->nents; i++)
            if (tes_has(r->w, r->ents[i], r->ids[k]))
                live++;
        if (c->ctor - c->dtor != live + r->staged[k])
            fs_problem(r, "%s: component id %u: ctor %" PRIu64 " - dtor %" PRIu64
                          " != %" PRIu64 " live + %" PRIu64 " staged values",
                       what, r->ids[k], c->ctor, c->dtor, live, r->staged[k]);
    }
}

/* ------------------------------------------------------------------ steps */

bool fs_before(fs_run_t *r)
{
    if (r->dead)
        return false;
    r->failures_before = r->ca.failures;
    /* Will this step meet the injected failure? The run is identical to the
     * reference run up to it, so the reference's per-step counts say. */
    if (!r->reference && r->w && !r->have_snap && r->ca.failures == 0 &&
        r->step < r->ref->nsteps && r->ref->step_end[r->step] >= r->ca.fail_at) {
        fs_snapshot(r, &r->snap, false);
        r->have_snap = true;
        r->queued_before = r->w->defer.count;
    }
    return true;
}

void fs_step_done(fs_run_t *r)
{
    if (r->reference) {
        fs_ref_t *ref = r->ref;
        if (ref->nsteps == ref->cap) {
            uint32_t cap = ref->cap ? ref->cap * 2 : 1024;
            uint64_t *p = realloc(ref->step_end, (size_t)cap * sizeof *p);
            if (!p) {
                fprintf(stderr, "fault: out of memory\n");
                exit(2);
            }
            ref->step_end = p;
            ref->cap = cap;
        }
        ref->step_end[ref->nsteps++] = r->ca.calls;
    }
    r->step++;
    r->have_snap = false;
}

bool fs_after(fs_run_t *r, int rc, const char *what)
{
    bool injected = r->ca.failures != r->failures_before;
    if (!injected) {
        if (rc != TES_OK) {
            fs_problem(r, "%s returned %d (%s) with no failure injected", what, rc,
                       tes_strerror(rc));
            r->dead = true;
            return false;
        }
        fs_step_done(r);
        return false;
    }
    r->injected++;
    if (rc == TES_OK) {
        /* Allowed for allocations that only feed a cache (table graph
         * edges): the call must then have done exactly what it does
         * without the failure, which the final comparison with the
         * reference run checks. */
        r->absorbed++;
        if (tes__world_check(r->w) != TES_OK)
            fs_problem(r, "%s: tes__world_check failed after an absorbed failure", what);
        fs_step_done(r);
        return false;
    }
    if (rc != TES_ERR_NOMEM) {
        fs_problem(r, "%s returned %d (%s), want TES_ERR_NOMEM", what, rc, tes_strerror(rc));
        r->dead = true;
        return false;
    }
    if (tes_last_error(r->w) != TES_ERR_NOMEM)
        fs_problem(r, "%s: tes_last_error is %d, want TES_ERR_NOMEM", what, tes_last_error(r->w));
    if (tes__world_check(r->w) != TES_OK)
        fs_problem(r, "%s: tes__world_check failed after the failure", what);
    if (tes__filters_check(r->w) != TES_OK)
        fs_problem(r, "%s: the query filter index disagrees after the failure", what);
    if (!r->have_snap) {
        fs_problem(r, "%s: the failure came at a step the reference run did not predict", what);
    } else {
        fs_snap_t now = {0};
        fs_snapshot(r, &now, false);
        char label[160];
        snprintf(label, sizeof label, "state after failed %s", what);
        if (!snap_equal(r, &r->snap, &now, label))
            r->dead = true; /* the rest would only repeat the difference */
        snap_free(&now);
        if (r->w->defer.count != r->queued_before) {
            fs_problem(r, "%s: the failed call queued %d deferred changes", what,
                       (int)(r->w->defer.count - r->queued_before));
            r->dead = true;
        }
    }
    fs_check_live(r, what);
    fs_check_twins(r, what);
    return !r->dead; /* retry: the allocator now succeeds */
}

int fs_ent(fs_run_t *r, tes_entity_t *out, tes_entity_t e)
{
    *out = e;
    return e ? TES_OK : tes_last_error(r->w);
}

int fs_ptr(fs_run_t *r, void **out, void *p)
{
    *out = p;
    return p ? TES_OK : tes_last_error(r->w);
}

int fs_comp(fs_run_t *r, tes_comp_t *out, tes_comp_t c)
{
    *out = c;
    return c ? TES_OK : tes_last_error(r->w);
}

int fs_query(fs_run_t *r, tes_query_t **out, tes_query_t *q)
{
    *out = q;
    return q ? TES_OK : tes_last_error(r->w);
}

void fs_track(fs_run_t *r, tes_entity_t e)
{
    if (r->nents == r->ents_cap) {
        uint32_t cap = r->ents_cap ? r->ents_cap * 2 : 1024;
        tes_entity_t *p = realloc(r->ents, (size_t)cap * sizeof *p);
        if (!p) {
            fprintf(stderr, "fault: out of memory\n");
            exit(2);
        }
        r->ents = p;
        r->ents_cap = cap;
    }
    r->ents[r->nents++] = e;
}


bool fs_world_new(fs_run_t *r, const tes_world_desc_t *desc)
{
    tes_world_desc_t d;
    if (desc)
        d = *desc;
    else
        memset(&d, 0, sizeof d);
    d.allocator = ca_allocator(&r->ca);
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t before = r->ca.failures;
        r->calls_at_world = r->ca.calls;
        r->w = tes_world_new(&d);
        if (r->w) {
            fs_step_done(r);
            return true;
        }
        if (r->ca.failures == before)
            break;
        /* The injected failure: nothing may be left allocated. */
        r->injected++;
        r->in_world_new++;
        if (r->ca.live_bytes || r->ca.live_blocks)
            fs_problem(r, "failed tes_world_new left %" PRId64 " bytes in %" PRId64 " blocks",
                       r->ca.live_bytes, r->ca.live_blocks);
    }
    fs_problem(r, "tes_world_new returned NULL with no failure injected");
    r->dead = true;
    return false;
}

/* Registers desc (hooks added when asked); returns the index or -1. */
static int register_desc(fs_run_t *r, tes_component_desc_t *d, bool hooks)
{
    if (r->dead || r->ncomps >= FS_MAX_COMPS)
        return -1;
    int k = r->ncomps;
    uint32_t size = (uint32_t)d->size;
    r->ctx[k].size = size;
    if (hooks) {
        if (size) {
            d->hooks.ctor = h_ctor;
            d->hooks.dtor = h_dtor;
            d->hooks.copy = h_copy;
            d->hooks.move = h_move;
            d->hooks.save = h_save;
            d->hooks.load = h_load;
        }
        d->hooks.on_add = h_on_add;
        d->hooks.on_set = h_on_set;
        d->hooks.on_remove = h_on_remove;
        d->hooks.ctx = &r->ctx[k];
    }
    tes_comp_t id = 0;
    FS_STEP(r, fs_comp(r, &id, tes_component(r->w, d)));
    if (r->dead)
        return -1;
    if (id >= FS_MAX_ID) {
        fs_problem(r, "component id %u is out of the sweep's range", id);
        r->dead = true;
        return -1;
    }
    r->ids[k] = id;
    r->size_of[id] = size;
    r->ncomps++;
    return k;
}

int fs_register(fs_run_t *r, const char *name, uint32_t size, uint32_t align,
                tes_storage_t storage, bool stable, bool hooks)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.align = align;
    d.storage = storage;
    d.stable = stable;
    return register_desc(r, &d, hooks);
}

int fs_register_tracked(fs_run_t *r, const char *name, uint32_t size)
{
    return fs_register_tracked_in(r, name, size, TES_STORAGE_TABLE, false);
}

int fs_register_tracked_in(fs_run_t *r, const char *name, uint32_t size, tes_storage_t storage,
                           bool stable)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    d.stable = stable;
    d.track_changes = true;
    return register_desc(r, &d, false);
}

int fs_register_refs(fs_run_t *r, const char *name, uint32_t size, tes_storage_t storage,
                     bool hooks, const size_t *fields, int32_t nfields)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.align = 8;
    d.storage = storage;
    for (int32_t i = 0; i < nfields && i < TES_MAX_ENTITY_FIELDS; i++)
        d.entity_fields[i] = fields[i];
    d.entity_field_count = nfields;
    return register_desc(r, &d, hooks);
}

int fs_register_members(fs_run_t *r, const char *name, uint32_t size, tes_storage_t storage,
                        bool hooks, const tes_member_t *members, int32_t count)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.align = 8;
    d.storage = storage;
    d.members = members;
    d.member_count = count;
    return register_desc(r, &d, hooks);
}

void fs_register_base(fs_run_t *r)
{
    r->ids[FS_C_DISABLED] = TES_DISABLED;
    r->ncomps = 1;
    fs_register(r, "f_t4", 4, 4, TES_STORAGE_TABLE, false, false);
    fs_register(r, "f_t24", 24, 8, TES_STORAGE_TABLE, false, true);
    fs_register(r, "f_ttag", 0, 0, TES_STORAGE_TABLE, false, false);
    fs_register(r, "f_s8", 8, 8, TES_STORAGE_SPARSE, false, true);
    fs_register(r, "f_sst", 16, 8, TES_STORAGE_SPARSE, true, true);
    fs_register(r, "f_stag", 0, 0, TES_STORAGE_SPARSE, false, false);
    fs_register(r, "f_t16", 16, 16, TES_STORAGE_TABLE, false, false);
    fs_register(r, "f_s4", 4, 4, TES_STORAGE_SPARSE, false, false);
}

/* ------------------------------------------------------------------ op steps */

tes_entity_t fs_spawn(fs_run_t *r)
{
    tes_entity_t e = TES_NULL;
    FS_STEP(r, fs_ent(r, &e, tes_spawn(r->w)));
    if (!r->dead)
        fs_track(r, e);
    return e;
}

void fs_spawn_n(fs_run_t *r, int32_t n, const int *ks, int32_t nk)
{
    tes_comp_t comps[FS_MAX_COMPS];
    for (int32_t i = 0; i < nk; i++)
        comps[i] = r->ids[ks[i]];
    tes_entity_t *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    if (!out) {
        fprintf(stderr, "fault: out of memory\n");
        exit(2);
    }
    FS_STEP(r, tes_spawn_n(r->w, n, comps, nk, out));
    if (!r->dead)
        for (int32_t i = 0; i < n; i++)
            fs_track(r, out[i]);
    free(out);
}

void fs_add(fs_run_t *r, tes_entity_t e, int k) { FS_STEP(r, tes_add(r->w, e, r->ids[k])); }

static void fill(uint8_t *buf, uint32_t size, uint32_t seed)
{
    for (uint32_t i = 0; i < size; i++)
        buf[i] = (uint8_t)(seed * 131u + i * 7u + 1u);
}

void fs_set(fs_run_t *r, tes_entity_t e, int k, uint32_t seed)
{
    uint8_t buf[64];
    fill(buf, r->ctx[k].size, seed);
    FS_STEP(r, tes_set(r->w, e, r->ids[k], buf));
    if (!r->dead && r->defer_depth > 0 && r->ctx[k].size)
        r->staged[k]++; /* staged until the flush */
}

/* Deferred: a pointer other than the current address is a staged value
 * of a new ensure command (one per call: the scenarios never ensure a pair
 * twice in a row), kept until the flush. */
void fs_ensure(fs_run_t *r, tes_entity_t e, int k, uint32_t seed)
{
    void *p = NULL;
    FS_STEP(r, fs_ptr(r, &p, tes_ensure(r->w, e, r->ids[k])));
    bool staged = r->defer_depth > 0 && p && p != tes_get_mut(r->w, e, r->ids[k]);
    if (!r->dead && p)
        fill(p, r->ctx[k].size, seed);
    if (!r->dead && staged)
        r->staged[k]++;
}

void fs_remove(fs_run_t *r, tes_entity_t e, int k) { FS_STEP(r, tes_remove(r->w, e, r->ids[k])); }

tes_entity_t fs_clone(fs_run_t *r, tes_entity_t e)
{
    tes_entity_t c = TES_NULL;
    FS_STEP(r, fs_ent(r, &c, tes_clone(r->w, e)));
    if (!r->dead)
        fs_track(r, c);
    return c;
}

void fs_destroy(fs_run_t *r, tes_entity_t e) { FS_STEP(r, tes_destroy(r->w, e)); }
void fs_clear(fs_run_t *r, tes_entity_t e) { FS_STEP(r, tes_clear(r->w, e)); }

void fs_disable(fs_run_t *r, tes_entity_t e, bool disable)
{
    if (disable)
        FS_STEP(r, tes_disable(r->w, e));
    else
        FS_STEP(r, tes_enable(r->w, e));
}

/* ------------------------------------------------------------------ runs */

static void run_init(fs_run_t *r, const char *scenario, fs_ref_t *ref, uint64_t fail_at)
{
    memset(r, 0, sizeof *r);
    ca_init(&r->ca, fail_at);
    r->scenario = scenario;
    r->reference = fail_at == 0;
    r->ref = ref;
    for (int k = 0; k < FS_MAX_COMPS; k++) {
        r->ctx[k].r = r;
        r->ctx[k].k = k;
    }
}

/* Final checks of one run, then frees everything. */
static void run_finish(fs_run_t *r)
{
    if (r->w) {
        if (tes__world_check(r->w) != TES_OK)
            fs_problem(r, "tes__world_check failed at the end");
        if (tes__filters_check(r->w) != TES_OK)
            fs_problem(r, "the query filter index disagrees at the end");
        fs_check_live(r, "end of scenario");
        fs_check_twins(r, "end of scenario");
        tes_world_stats_t st;
        if (tes_world_stats(r->w, &st) == TES_OK &&
            (st.allocations != r->ca.calls - r->calls_at_world ||
             (int64_t)st.bytes_allocated != r->ca.live_bytes))
            fs_problem(r,
                       "stats say %" PRIu64 " allocations / %" PRIu64
                       " bytes live, the allocator saw %" PRIu64 " / %" PRId64,
                       st.allocations, st.bytes_allocated, r->ca.calls - r->calls_at_world,
                       r->ca.live_bytes);
        if (!r->dead && !r->flush_failed) {
            if (r->reference) {
                fs_snapshot(r, &r->ref->final, true);
                fs_snapshot(r, &r->ref->final_no_tables, false);
            } else {
                /* A failure a flush absorbed may leave tables behind: a
                 * merged move that cannot allocate applies its commands one
                 * by one instead, through the intermediate tables call
                 * order visits (same entities, values and queries). */
                bool tables = !r->flush_absorbed;
                fs_snap_t fin = {0};
                fs_snapshot(r, &fin, tables);
                if (!snap_equal(r, tables ? &r->ref->final : &r->ref->final_no_tables, &fin,
                                "final state vs. the run without failure") &&
                    r->flush_absorbed)
                    fs_problem(r, "(the failure came while %s applied the queue, which reported "
                                  "no error: tes_last_error is %d, not TES_ERR_NOMEM, yet a "
                                  "queued change was lost)",
                               r->flush_absorbed, tes_last_error(r->w));
                snap_free(&fin);
            }
        }
        tes_world_free(r->w);
        r->w = NULL;
    }
    for (int k = 0; k < r->ncomps; k++)
        if (r->counts[k].ctor != r->counts[k].dtor)
            fs_problem(r, "after tes_world_free: component id %u ctor %" PRIu64 " != dtor %" PRIu64,
                       r->ids[k], r->counts[k].ctor, r->counts[k].dtor);
    if (r->ca.live_bytes || r->ca.live_blocks)
        fs_problem(r, "after tes_world_free: %" PRId64 " bytes in %" PRId64 " blocks still live",
                   r->ca.live_bytes, r->ca.live_blocks);
    if (r->ca.bad_sizes || r->ca.bad_ptrs)
        fs_problem(r, "allocator misuse: %" PRIu64 " wrong sizes, %" PRIu64 " bad pointers",
                   r->ca.bad_sizes, r->ca.bad_ptrs);
    if (!r->reference && r->ca.failures != 1 && !r->dead &&
        !(r->ca.failures == 0 && r->varying_allocs))
        fs_problem(r, "%" PRIu64 " failures injected, want 1", r->ca.failures);
    snap_free(&r->snap);
    free(r->ents);
    r->ents = NULL;
    free(r->insts);
    r->insts = NULL;
}

/* Whether the command line selects scenario `name`: no arguments run every
 * scenario; `NAME...` runs the ones named; `--except NAME...` runs all but
 * those. The ctest splits the sweep in two this way so both halves run at
 * once (tests/CMakeLists.txt). */
static bool selected(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return true;
    bool except = strcmp(argv[1], "--except") == 0;
    for (int i = except ? 2 : 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return !except;
    return except;
}

/* `--stride K` (before any scenario names) fails only every Kth
 * allocation of each scenario (the first, then every Kth after it, and
 * always the last), for slow checkers such as valgrind that run beside the
 * full sweep of the sanitizer build. The default, 1, fails every one.
 * Returns the stride, or 0 for a malformed value. */
static uint64_t parse_stride(int *argc, char ***argv)
{
    if (*argc < 3 || strcmp((*argv)[1], "--stride") != 0)
        return 1;
    char *end = NULL;
    unsigned long long k = strtoull((*argv)[2], &end, 10);
    if (!end || *end || k == 0)
        return 0;
    (*argv)[2] = (*argv)[0];
    *argv += 2;
    *argc -= 2;
    return (uint64_t)k;
}

int main(int argc, char **argv)
{
    int scenarios = 0, problems = 0;
    uint64_t injected = 0;
    uint64_t stride = parse_stride(&argc, &argv);
    if (!stride) {
        fprintf(stderr, "fault: --stride needs a positive number\n");
        return 2;
    }
    fs_run_t *r = malloc(sizeof *r);
    if (!r)
        return 2;
    for (int s = 0; s < fs_nscenarios; s++) {
        const fs_scenario_t *sc = &fs_scenarios[s];
        if (!selected(argc, argv, sc->name))
            continue;
        scenarios++;
        fs_ref_t ref;
        memset(&ref, 0, sizeof ref);
        run_init(r, sc->name, &ref, 0);
        sc->run(r);
        uint64_t K = r->ca.calls;
        run_finish(r);
        int p = r->problems;
        uint64_t inj = 0, absorbed = 0, in_new = 0, in_flush = 0;
        printed_problems = 0;
        if (!p) {
            for (uint64_t k = 1; k <= K; k = k + stride <= K || k == K ? k + stride : K) {
                run_init(r, sc->name, &ref, k);
                sc->run(r);
                run_finish(r);
                p += r->problems;
                inj += r->injected;
                absorbed += r->absorbed;
                in_new += r->in_world_new;
                in_flush += r->in_flush;
            }
        }
        printf("fault: %-16s %4" PRIu64 " allocations, %4" PRIu64 " failures injected (%" PRIu64
               " in tes_world_new, %" PRIu64 " absorbed by caches, %" PRIu64
               " in flushes), %d problems\n",
               sc->name, K, inj, in_new, absorbed, in_flush, p);
        problems += p;
        injected += inj;
        free(ref.step_end);
        snap_free(&ref.final);
        snap_free(&ref.final_no_tables);
    }
    free(r);
    printf("fault: %d scenarios, %" PRIu64 " injected failures, %d problems", scenarios, injected,
           problems);
    if (stride > 1)
        printf(" (one allocation in %" PRIu64 " failed in turn, and each scenario's last)", stride);
    printf("\n");
    /* A name that matches no scenario would silently sweep nothing. */
    if (argc > 1 && strcmp(argv[1], "--except") != 0 && scenarios != argc - 1) {
        printf("fault: %d of the %d scenarios named exist\n", scenarios, argc - 1);
        return 1;
    }
    return problems ? 1 : 0;
}
