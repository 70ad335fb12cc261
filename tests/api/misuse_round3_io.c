/*
 * API misuse of the calls that stream or run user code: tes_json_world,
 * tes_json_entity, tes_json_components, the systems (tes_system_new,
 * tes_system_free, tes_systems, tes_system_stats, tes_progress) and the
 * snapshots (tes_snapshot_save/_file, tes_snapshot_load/_file); and the
 * round-3 calls made from inside hooks, JSON and snapshot callbacks and
 * systems (see misuse.c for the harness, misuse_r3.h for the
 * fingerprint).
 *
 * Writers and readers fail on their k-th call for every k, with
 * TES_ERR_IO, an unknown negative status and a positive one; the call
 * returns the status (a positive one as TES_ERR_IO), calls its callback no
 * more, records a detail and changes nothing, and the snapshot world's
 * counting allocator holds no block once the world is freed.
 */
#define _POSIX_C_SOURCE 200809L
#include "api/misuse_r3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "support/counting_alloc.h"
#include "world/check.h"

static const int inv = TES_ERR_INVALID, busy = TES_ERR_BUSY, io = TES_ERR_IO;
static char g_tmp[64];     /* a snapshot file that exists */
static char g_missing[64]; /* a path that does not */

/* ------------------------------------------------------------------ sinks */

typedef struct sink {
    int calls, fail_at, status;
    int bad_sizes; /* calls with size 0 or above 4 KiB (JSON) */
    size_t size, cap;
    unsigned char *data;
    void (*battery)(void); /* run once, from the first call */
} sink_t;

/* What a test writer and reader do first on each call: run their battery
 * once (on the first call that finds one), then say whether this call is
 * the one that must fail. */
static bool stream_call(void (**battery)(void), int calls, int fail_at)
{
    if (*battery) {
        void (*b)(void) = *battery;
        *battery = NULL;
        b();
    }
    return calls == fail_at;
}

static int sink_write(const void *data, size_t size, void *user)
{
    sink_t *s = user;
    s->calls++;
    if (size == 0 || size > 4096)
        s->bad_sizes++;
    if (stream_call(&s->battery, s->calls, s->fail_at))
        return s->status;
    if (s->size + size > s->cap) {
        size_t cap = (s->size + size) * 2;
        unsigned char *d = realloc(s->data, cap);
        if (!d)
            return TES_ERR_NOMEM;
        s->data = d, s->cap = cap;
    }
    memcpy(s->data + s->size, data, size);
    s->size += size;
    return TES_OK;
}

static sink_t sink_make(int fail_at, int status)
{
    sink_t s;
    memset(&s, 0, sizeof s);
    s.fail_at = fail_at, s.status = status;
    return s;
}

typedef struct source {
    const unsigned char *data;
    size_t size, at;
    int calls, fail_at, status, zero_reads;
    void (*battery)(void);
} source_t;

static int source_read(void *data, size_t size, void *user)
{
    source_t *s = user;
    s->calls++;
    if (size == 0)
        s->zero_reads++;
    if (stream_call(&s->battery, s->calls, s->fail_at))
        return s->status;
    if (size > s->size - s->at)
        return TES_ERR_IO;
    memcpy(data, s->data + s->at, size);
    s->at += size;
    return TES_OK;
}

static int expect_of(int status) { return status > 0 ? TES_ERR_IO : status; }

/* ------------------------------------------------------------------ batteries */

static void noop_run(tes_iter_t *it) { (void)it; }

/* The system and snapshot calls every battery expects refused with
 * TES_ERR_BUSY: creating a system named `name`, a frame, saves into *s and
 * loads from *src (which must see no call), a load from `existing` (a
 * readable snapshot file, when not NULL) and from a missing file (which
 * must not be created). */
static void refused_systems_and_streams(tes_world_t *w, const char *name, sink_t *s,
                                        source_t *src, const char *existing)
{
    tes_system_desc_t d = {.name = name, .run = noop_run};
    R3_REC(tes_system_new(w, &d) == NULL, busy, "tes_system_new");
    R3_ST(tes_progress(w, 0.f), busy, "tes_progress");
    tes_writer_t wr = {sink_write, s};
    R3_ST(tes_snapshot_save(w, &wr), busy, "tes_snapshot_save");
    R3_ST(tes_snapshot_save_file(w, g_missing), busy, "tes_snapshot_save_file");
    tes_reader_t rd = {source_read, src};
    R3_ST(tes_snapshot_load(w, &rd), busy, "tes_snapshot_load");
    if (existing)
        R3_ST(tes_snapshot_load_file(w, existing), busy, "tes_snapshot_load_file");
    R3_ST(tes_snapshot_load_file(w, g_missing), busy, "tes_snapshot_load_file");
}

/* Calls on F.w from a hook level (observer, JSON writer, flush). */
void r3_hook_battery(tes_world_t *w, const char *where)
{
    g_in_hook++;
    const char *note = g_note;
    g_note = where;
    tes_entity_t ch[] = {R.leaf}, pa[] = {R.b};
    R3_ST(tes_set_parent(w, R.leaf, R.b), busy, "tes_set_parent");
    R3_ST(tes_set_parent(w, R.leaf, R.a), busy, "tes_set_parent");
    R3_ST(tes_set_parent_n(w, ch, pa, 1), busy, "tes_set_parent_n");
    R3_ST(tes_set_name(w, R.anon, "x"), busy, "tes_set_name");
    R3_ST(tes_set_name(w, R.a, NULL), busy, "tes_set_name");
    R3_ST(tes_sort_by_depth(w), busy, "tes_sort_by_depth");
    sink_t s = sink_make(0, 0);
    tes_writer_t wr = {sink_write, &s};
    source_t src = {0};
    refused_systems_and_streams(w, "r3hook", &s, &src, g_tmp);
    CASE_PLAIN(s.calls == 0 && src.calls == 0 && access(g_missing, F_OK) != 0);
    /* Every structural call's refusal names the call (one guard for all). */
    const mis_pos_t v = {1, 2};
    const tes_value_t val = {F.pos, &v};
    const tes_comp_t comps[] = {F.pos};
    const void *data[] = {&v};
    tes_entity_t ebuf[2];
    tes_instance_t ibuf[1];
    tes_bulk_desc_t bulk = {1, comps, 1, data, ebuf};
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = R.tracked}}});
    CASE_PLAIN(q != NULL);
    R3_ST(tes_add(w, R.b, F.tag), busy, "tes_add");
    R3_ST(tes_set(w, R.b, F.pos, &v), busy, "tes_set");
    R3_REC(tes_ensure(w, R.b, F.pos) == NULL, busy, "tes_ensure");
    R3_ST(tes_remove(w, R.leaf, F.pos), busy, "tes_remove");
    R3_ST(tes_clear(w, R.leaf), busy, "tes_clear");
    R3_ST(tes_destroy(w, R.leaf), busy, "tes_destroy");
    R3_ST(tes_destroy_n(w, &R.leaf, 1), busy, "tes_destroy_n");
    R3_REC(tes_destroy_matching(q) == busy, busy, "tes_destroy_matching");
    R3_REC(tes_clone(w, R.leaf) == TES_NULL, busy, "tes_clone");
    R3_REC(tes_spawn(w) == TES_NULL, busy, "tes_spawn");
    R3_ST(tes_spawn_n(w, 1, comps, 1, ebuf), busy, "tes_spawn_n");
    R3_REC(tes_spawn_with(w, &val, 1) == TES_NULL, busy, "tes_spawn_with");
    R3_ST(tes_spawn_bulk(w, &bulk), busy, "tes_spawn_bulk");
    R3_ST(tes_disable(w, R.leaf), busy, "tes_disable");
    R3_ST(tes_enable(w, F.dis), busy, "tes_enable");
    R3_REC(tes_prefab_new(w) == TES_NULL, busy, "tes_prefab_new");
    R3_REC(tes_prefab_child(w, F.p) == TES_NULL, busy, "tes_prefab_child");
    R3_REC(tes_instantiate(w, F.p, ebuf, 2) == 0, busy, "tes_instantiate");
    R3_ST(tes_instantiate_n(w, F.p, 1, ibuf), busy, "tes_instantiate_n");
    R3_ST(tes_instance_destroy(w, F.inst), busy, "tes_instance_destroy");
    R3_ST(tes_instance_detach(w, F.m[0]), busy, "tes_instance_detach");
    R3_ST(tes_instance_adopt(w, F.inst, R.leaf), busy, "tes_instance_adopt");
    R3_ST(tes_defer_begin(w), busy, "tes_defer_begin");
    R3_ST(tes_defer_end(w), busy, "tes_defer_end");
    tes_query_free(q);
    /* Reads, tes_mark_changed and JSON work. */
    R3_NOREC(tes_parent(w, R.leaf) == R.a && tes_depth(w, R.leaf) == 2 &&
             tes_lookup_path(w, "root/a/leaf") == R.leaf && tes_path(w, R.leaf, NULL, 0) == 11 &&
             strcmp(tes_name(w, R.leaf), "leaf") == 0 && tes_children(w, R.root, NULL, 0) == 2);
    R3_NOREC(tes_mark_changed(w, R.a, R.tracked) == TES_OK);
    R3_NOREC(tes_json_entity(w, R.leaf, &wr) == TES_OK && tes_json_components(w, &wr) == TES_OK);
    tes_component_info_t info;
    R3_NOREC(tes_component_info(w, R.tracked, &info) == TES_OK && tes_components(w, NULL, 0) > 0 &&
             tes_entities(w, 0, NULL, 0) == 0 && tes_systems(w, NULL, 0) >= 0 &&
             tes_world_tick(w) > 0);
    free(s.data);
    g_note = note;
    g_in_hook--;
}

static int g_hook_armed;
static void hk_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (g_hook_armed)
        r3_hook_battery(w, "inside on_add");
}
static void hk_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (g_hook_armed)
        r3_hook_battery(w, "inside on_remove");
}
static void battery_in_writer(void) { r3_hook_battery(F.w, "inside a JSON writer"); }

static void hooks(tes_world_t *w)
{
    tes_hooks_t h = {0};
    h.on_add = hk_on_add;
    h.on_remove = hk_on_remove;
    R.hooked = tes_component(w, &(tes_component_desc_t){.name = "R3Hooked", .size = 4, .hooks = h});
    CASE_PLAIN(R.hooked != 0);
    g_hook_armed = 1;
    int f0 = g_failures;
    CASE_PLAIN(tes_add(w, R.root, R.hooked) == TES_OK);
    CASE_PLAIN(tes_remove(w, R.root, R.hooked) == TES_OK);
    /* From a flush. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK && tes_add(w, R.root, R.hooked) == TES_OK);
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    CASE_PLAIN(tes_remove(w, R.root, R.hooked) == TES_OK);
    /* From a cascading destroy. */
    tes_entity_t t = tes_spawn(w);
    CASE_PLAIN(t && tes_add(w, t, R.hooked) == TES_OK && tes_set_parent(w, t, R.other) == TES_OK);
    CASE_PLAIN(tes_destroy(w, t) == TES_OK);
    g_hook_armed = 0;
    /* From a JSON writer. */
    sink_t s = sink_make(0, 0);
    s.battery = battery_in_writer;
    tes_writer_t wr = {sink_write, &s};
    CASE_PLAIN(tes_json_entity(w, R.root, &wr) == TES_OK && s.battery == NULL);
    free(s.data);
    CASE_PLAIN(g_failures == f0 && tes__world_check(w) == TES_OK);
}

/* ------------------------------------------------------------------ JSON */

static void deep_chain(void);

static void json(tes_world_t *w)
{
    sink_t s = sink_make(0, 0);
    tes_writer_t wr = {sink_write, &s}, nowrite = {NULL, &s};
    R3_NOREC(tes_json_world(NULL, &wr) == inv && tes_json_entity(NULL, R.a, &wr) == inv &&
             tes_json_components(NULL, &wr) == inv && s.calls == 0);
    R3_ST(tes_json_world(w, NULL), inv, "tes_json_world");
    R3_ST(tes_json_world(w, &nowrite), inv, "tes_json_world");
    R3_ST(tes_json_components(w, NULL), inv, "tes_json_components");
    R3_ST(tes_json_components(w, &nowrite), inv, "tes_json_components");
    R3_ST(tes_json_entity(w, R.a, NULL), inv, "tes_json_entity");
    R3_ST(tes_json_entity(w, R.a, &nowrite), inv, "tes_json_entity");
    for (int i = 0; i < MIS_NBAD; i++) {
        g_note = F.bad_name[i];
        R3_ST(tes_json_entity(w, F.bad[i], &wr), TES_ERR_STALE, NULL);
    }
    g_note = NULL;
    CASE_PLAIN(s.calls == 0);

    /* Writers failing on their k-th call, for every k. */
    const int statuses[] = {TES_ERR_IO, -42, 1, TES_ERR_NOMEM};
    for (int which = 0; which < 3; which++) {
        const char *fn = which == 0 ? "tes_json_world" : which == 1 ? "tes_json_entity" : "tes_json_components";
        sink_t full = sink_make(0, 0);
        tes_writer_t fw = {sink_write, &full};
        int rc = which == 0 ? tes_json_world(w, &fw) : which == 1 ? tes_json_entity(w, R.leaf, &fw) : tes_json_components(w, &fw);
        CASE_PLAIN(rc == TES_OK && full.calls > 0 && full.bad_sizes == 0);
        for (int k = 1; k <= full.calls; k++) {
            for (size_t si = 0; si < sizeof statuses / sizeof statuses[0]; si++) {
                sink_t f = sink_make(k, statuses[si]);
                tes_writer_t fwk = {sink_write, &f};
                int want = expect_of(statuses[si]);
                g_note = fn;
                if (want == TES_ERR_NOMEM) {
                    /* No detail to check for NOMEM (the record clears it). */
                    R3_ST(which == 0 ? tes_json_world(w, &fwk) : which == 1 ? tes_json_entity(w, R.leaf, &fwk) : tes_json_components(w, &fwk), want, NULL);
                } else {
                    R3_ST(which == 0 ? tes_json_world(w, &fwk) : which == 1 ? tes_json_entity(w, R.leaf, &fwk) : tes_json_components(w, &fwk), want, fn);
                }
                CASE_PLAIN(f.calls == k && f.size < full.size && f.bad_sizes == 0 &&
                           memcmp(f.data ? f.data : full.data, full.data, f.size) == 0);
                free(f.data);
            }
        }
        free(full.data);
    }
    g_note = NULL;

    /* Names that are not UTF-8 come out as U+FFFD: valid UTF-8. */
    CASE_PLAIN(tes_set_name(w, R.anon, "\xff\xc0\xaf") == TES_OK);
    sink_t u = sink_make(0, 0);
    tes_writer_t uw = {sink_write, &u};
    CASE_PLAIN(tes_json_entity(w, R.deep, &uw) == TES_OK);
    bool clean = u.data != NULL;
    for (size_t i = 0; clean && i < u.size; i++)
        clean = u.data[i] != 0xff && u.data[i] != 0xc0;
    bool replaced = false;
    for (size_t i = 0; clean && i + 9 <= u.size; i++)
        replaced = replaced || memcmp(u.data + i, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9) == 0;
    CASE_PLAIN(clean && replaced);
    free(u.data);
    CASE_PLAIN(tes_set_name(w, R.anon, NULL) == TES_OK);
    free(s.data);
    deep_chain();
}

/* A named chain 1200 deep, in a world of its own: the JSON path of every
 * entity whose path passes the writer's 1 KiB stack buffer (written in
 * blocks of ancestors) equals tes_path's. What the blocks are for, the
 * cost (a walk up per level made tes_json_world cubic in the depth: 27 s
 * for a chain of 2000), is measured by the bench's "json: entity 1200
 * deep" line, not here: tests assert behaviour, never timings. */
static void deep_chain(void)
{
    enum { D = 1200 };
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t *chain = malloc(D * sizeof *chain);
    char *path = malloc(D * 6 + 16);
    CASE_PLAIN(w && chain && path);
    if (!w || !chain || !path) {
        tes_world_free(w), free(chain), free(path);
        return;
    }
    bool built = true;
    for (int i = 0; i < D; i++) {
        char name[16];
        snprintf(name, sizeof name, "L%04d", i);
        chain[i] = tes_spawn(w);
        built = built && (!i || tes_set_parent(w, chain[i], chain[i - 1]) == TES_OK) &&
                tes_set_name(w, chain[i], name) == TES_OK;
    }
    CASE_PLAIN(built);
    bool same = true;
    for (int i = 160; built && same && i < D; i++) {
        int32_t len = tes_path(w, chain[i], path, D * 6 + 16);
        sink_t s = sink_make(0, 0);
        tes_writer_t wr = {sink_write, &s};
        same = tes_json_entity(w, chain[i], &wr) == TES_OK && len > 0;
        const char *key = "\"path\":\"";
        size_t at = 0;
        while (same && at + 8 < s.size && memcmp(s.data + at, key, 8) != 0)
            at++;
        same = same && at + 8 + (size_t)len < s.size &&
               memcmp(s.data + at + 8, path, (size_t)len) == 0 && s.data[at + 8 + (size_t)len] == '"';
        free(s.data);
    }
    CASE_PLAIN(same);
    tes_world_free(w);
    free(chain);
    free(path);
}

/* ------------------------------------------------------------------ systems */

static _Atomic int g_parallel_runs, g_parallel_bad;
static tes_entity_t g_named;

/* From a parallel structural system: tes_set_name is refused, links are
 * queued as from any structural system. */
static void parallel_run(tes_iter_t *it)
{
    g_parallel_runs++;
    tes_world_t *w = it->world;
    if (tes_set_name(w, g_named ? g_named : R.anon, "p") != TES_ERR_BUSY)
        g_parallel_bad++;
}

/* The same in a world of `threads` threads with rows enough to be split:
 * the outcome does not depend on the thread count. */
static void parallel_world(int32_t threads)
{
    tes_world_desc_t wd;
    memset(&wd, 0, sizeof wd);
    wd.threads = threads;
    tes_world_t *w = tes_world_new(&wd);
    tes_comp_t c = tes_component(w, &(tes_component_desc_t){.name = "C", .size = 4});
    bool ok = w && c;
    for (int32_t i = 0; ok && i < 5000; i++)
        ok = tes_set(w, tes_spawn(w), c, &i) == TES_OK;
    g_named = tes_spawn(w);
    tes_system_desc_t pd = {.name = "p", .run = parallel_run, .structural = true, .parallel = true,
                            .query = {.terms = {{.comp = c, .access = TES_INOUT}}}};
    g_parallel_runs = 0;
    g_parallel_bad = 0;
    ok = ok && tes_system_new(w, &pd) && tes_progress(w, 0.f) == TES_OK;
    CASE_PLAIN(ok && g_parallel_runs > 1 && g_parallel_bad == 0 && tes_name(w, g_named) == NULL);
    g_named = TES_NULL;
    tes_world_free(w);
}

static int g_sys_batteries;

/* From a structural system: links are queued and applied when it ends,
 * names apply at once, bad calls fail at once; the sort, tes_progress and
 * snapshots stay refused. */
static void structural_run(tes_iter_t *it)
{
    tes_world_t *w = it->world;
    g_in_hook++;
    g_r3_nofp = 1;
    g_note = "inside a structural system";
    R3_ST(tes_set_parent(w, R.root, R.leaf), inv, "tes_set_parent");
    R3_ST(tes_set_parent(w, F.bad[1], R.root), TES_ERR_STALE, NULL);
    R3_ST(tes_set_name(w, R.anon, "a/b"), inv, "tes_set_name");
    R3_ST(tes_sort_by_depth(w), busy, "tes_sort_by_depth");
    R3_ST(tes_progress(w, 0.f), busy, "tes_progress");
    R3_ST(tes_snapshot_save_file(w, g_missing), busy, "tes_snapshot_save_file");
    CASE_PLAIN(tes_set_parent(w, R.anon, R.root) == TES_OK && tes_parent(w, R.anon) == R.b);
    CASE_PLAIN(tes_set_name(w, R.anon, "moved") == TES_OK && tes_lookup_path(w, "root/b/moved") == R.anon);
    g_note = NULL;
    g_r3_nofp = 0;
    g_in_hook--;
}

/* From a running system without the structural flag: every call that
 * changes the world, streams it or runs systems is refused; reads and
 * tes_mark_changed (of the component the system writes) work. */
static void sys_battery(tes_world_t *w)
{
    g_sys_batteries++;
    g_in_hook++;
    g_r3_nofp = 1;
    g_note = "inside a system";
    tes_entity_t ch[] = {R.leaf}, pa[] = {R.b};
    R3_ST(tes_set_parent(w, R.leaf, R.b), busy, "tes_set_parent");
    R3_ST(tes_set_parent_n(w, ch, pa, 1), busy, "tes_set_parent_n");
    R3_ST(tes_set_name(w, R.anon, "x"), busy, "tes_set_name");
    R3_ST(tes_sort_by_depth(w), busy, "tes_sort_by_depth");
    sink_t s = sink_make(0, 0);
    tes_writer_t wr = {sink_write, &s};
    source_t src = {0};
    refused_systems_and_streams(w, "r3inner", &s, &src, NULL);
    R3_ST(tes_json_world(w, &wr), busy, "tes_json_world");
    R3_ST(tes_json_entity(w, R.a, &wr), busy, "tes_json_entity");
    R3_ST(tes_json_components(w, &wr), busy, "tes_json_components");
    CASE_PLAIN(s.calls == 0 && src.calls == 0 && access(g_missing, F_OK) != 0);
    R3_NOREC(tes_mark_changed(w, R.a, R.tracked) == TES_OK);
    R3_NOREC(tes_parent(w, R.leaf) == R.a && tes_depth(w, R.leaf) == 2 &&
             tes_lookup_path(w, "root/a/leaf") == R.leaf && tes_path(w, R.leaf, NULL, 0) == 11);
    tes_system_t *sys[4];
    R3_NOREC(tes_systems(w, sys, 4) >= 1 && tes_components(w, NULL, 0) > 0);
    free(s.data);
    g_note = NULL;
    g_r3_nofp = 0;
    g_in_hook--;
}

static void sys_run(tes_iter_t *it)
{
    if (it->ctx)
        sys_battery(it->world);
}

static tes_system_t *g_self_free;
static void free_self_run(tes_iter_t *it)
{
    (void)it;
    tes_system_free(g_self_free);
    tes_system_free(g_self_free); /* marked twice: freed once */
}

static void systems(tes_world_t *w)
{
    tes_system_desc_t d = {.name = "r3ok", .run = noop_run};
    const char *sn = "tes_system_new";
    R3_NOREC(tes_system_new(NULL, &d) == NULL);
    R3_REC(tes_system_new(w, NULL) == NULL, inv, sn);
    d.name = NULL;
    R3_REC(tes_system_new(w, &d) == NULL, inv, sn);
    d.name = "";
    R3_REC(tes_system_new(w, &d) == NULL, inv, sn);
    d.name = "r3ok", d.run = NULL;
    R3_REC(tes_system_new(w, &d) == NULL, inv, sn);
    d.run = noop_run;
    d.query.flags = TES_QUERY_CASCADE;
    R3_REC(tes_system_new(w, &d) == NULL, inv, sn);
    d.query.flags = 0;
    d.query.terms[0].comp = 5000;
    R3_REC(tes_system_new(w, &d) == NULL, inv, NULL);
    d.query.terms[0].comp = F.pos, d.query.terms[1].comp = F.pos;
    R3_REC(tes_system_new(w, &d) == NULL, inv, NULL);
    d.query.terms[1].comp = 0;
    tes_system_t *ok = tes_system_new(w, &d);
    CASE_PLAIN(ok != NULL);
    R3_REC(tes_system_new(w, &d) == NULL, inv, sn); /* its name is taken */

    tes_system_t *out[4] = {NULL, NULL, NULL, NULL};
    R3_NOREC(tes_systems(NULL, out, 4) == 0);
    R3_REC(tes_systems(w, NULL, 1) == inv, inv, "tes_systems");
    R3_REC(tes_systems(w, out, -1) == inv && out[0] == NULL, inv, "tes_systems");
    R3_REC(tes_systems(w, NULL, INT32_MIN) == inv, inv, "tes_systems");
    R3_NOREC(tes_systems(w, NULL, 0) == 1 && tes_systems(w, out, 0) == 1 && out[0] == NULL);
    tes_system_stats_t st;
    memset(&st, 0x5A, sizeof st);
    R3_NOREC(tes_system_stats(NULL, &st) == inv);
    R3_NOREC(tes_system_stats(NULL, NULL) == inv);
    R3_REC(tes_system_stats(ok, NULL) == inv, inv, "tes_system_stats");
    R3_NOREC(tes_system_stats(ok, &st) == TES_OK && st.runs == 0 && strcmp(st.name, "r3ok") == 0);
    R3_NOREC((tes_system_free(NULL), true));
    R3_NOREC(tes_progress(NULL, 1.f) == inv);

    /* tes_progress refused while deferred and while an iterator is open. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    R3_ST(tes_progress(w, 0.f), busy, "tes_progress");
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = F.pos}}});
    tes_iter_t it = tes_query_iter(q);
    CASE_PLAIN(q && tes_iter_next(&it));
    R3_ST(tes_progress(w, 0.f), busy, "tes_progress");
    tes_iter_fini(&it);
    tes_query_free(q);
    tes_system_free(ok);

    /* From inside a system. */
    tes_system_desc_t bd = {.name = "r3battery", .run = sys_run, .ctx = &g_sys_batteries,
                            .query = {.terms = {{.comp = R.tracked, .access = TES_INOUT}}}};
    tes_system_t *bs = tes_system_new(w, &bd);
    CASE_PLAIN(bs != NULL && tes_progress(w, 0.5f) == TES_OK && g_sys_batteries == 1);
    tes_system_free(bs);
    tes_system_desc_t none = {.name = "r3battery-noterms", .run = sys_run, .ctx = &g_sys_batteries};
    bs = tes_system_new(w, &none);
    CASE_PLAIN(bs != NULL && tes_progress(w, 0.5f) == TES_OK && g_sys_batteries == 2);
    tes_system_free(bs);
    tes_system_desc_t sd = {.name = "r3structural", .run = structural_run, .structural = true};
    bs = tes_system_new(w, &sd);
    CASE_PLAIN(bs != NULL && tes_progress(w, 0.f) == TES_OK);
    CASE_PLAIN(tes_parent(w, R.anon) == R.root && tes_lookup_path(w, "root/moved") == R.anon);
    tes_system_free(bs);
    CASE_PLAIN(tes_set_parent(w, R.anon, R.b) == TES_OK && tes_set_name(w, R.anon, NULL) == TES_OK);
    tes_entity_t kids[2];
    CASE_PLAIN(tes_children(w, R.root, kids, 2) == 2 && kids[0] == R.a && kids[1] == R.b);
    /* A parallel structural system may not name: refused on one thread
     * as on several (it used to work on one thread only). */
    tes_system_desc_t pd = {.name = "r3parallel", .run = parallel_run, .structural = true,
                            .parallel = true,
                            .query = {.terms = {{.comp = R.tracked, .access = TES_INOUT}}}};
    bs = tes_system_new(w, &pd);
    g_parallel_runs = 0;
    g_parallel_bad = 0;
    CASE_PLAIN(bs != NULL && tes_progress(w, 0.f) == TES_OK && g_parallel_runs > 0 &&
               g_parallel_bad == 0 && tes_name(w, R.anon) == NULL);
    tes_system_free(bs);
    parallel_world(0);
    parallel_world(4);
    /* A system that frees itself (twice) is freed when the frame ends. */
    tes_system_desc_t fd = {.name = "r3self", .run = free_self_run};
    g_self_free = tes_system_new(w, &fd);
    CASE_PLAIN(g_self_free != NULL && tes_progress(w, 0.f) == TES_OK && tes_systems(w, NULL, 0) == 0);
    /* A long name is copied whole; freeing makes it usable again. */
    char name[2000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    d = (tes_system_desc_t){.name = name, .run = noop_run};
    tes_system_t *ls = tes_system_new(w, &d);
    CASE_PLAIN(ls != NULL && tes_system_stats(ls, &st) == TES_OK && strcmp(st.name, name) == 0);
    tes_system_free(ls);
    ls = tes_system_new(w, &d);
    CASE_PLAIN(ls != NULL);
    tes_system_free(ls);
}

/* ------------------------------------------------------------------ snapshots */

typedef struct snap_world {
    ca_state_t ca;
    tes_world_t *w;
    tes_comp_t pos, tag, vel;
    tes_entity_t e[3];
} snap_world_t;

static bool snap_world_new(snap_world_t *s, bool populate)
{
    memset(s, 0, sizeof *s);
    ca_init(&s->ca, 0);
    tes_world_desc_t wd;
    memset(&wd, 0, sizeof wd);
    wd.allocator = ca_allocator(&s->ca);
    s->w = tes_world_new(&wd);
    if (!s->w)
        return false;
    s->pos = tes_component(s->w, &(tes_component_desc_t){.name = "SPos", .size = 8});
    s->tag = tes_component(s->w, &(tes_component_desc_t){.name = "STag"});
    s->vel = tes_component(s->w, &(tes_component_desc_t){
                                     .name = "SVel", .size = 8, .storage = TES_STORAGE_SPARSE});
    if (!s->pos || !s->tag || !s->vel)
        return false;
    if (!populate)
        return true;
    tes_entity_t gone = tes_spawn(s->w);
    for (int i = 0; i < 3; i++)
        s->e[i] = tes_spawn(s->w);
    const int64_t v = 77;
    return gone && tes_destroy(s->w, gone) == TES_OK && tes_set(s->w, s->e[0], s->pos, &v) == TES_OK &&
           tes_add(s->w, s->e[1], s->tag) == TES_OK && tes_set(s->w, s->e[2], s->vel, &v) == TES_OK &&
           tes_set_name(s->w, s->e[0], "one") == TES_OK && tes_set_name(s->w, s->e[1], "two") == TES_OK &&
           tes_set_parent(s->w, s->e[1], s->e[0]) == TES_OK;
}

static bool snap_world_free(snap_world_t *s)
{
    tes_world_free(s->w);
    return s->ca.live_bytes == 0 && s->ca.live_blocks == 0 && s->ca.bad_sizes == 0 &&
           s->ca.bad_ptrs == 0;
}

static snap_world_t *g_cb; /* the world a snapshot callback battery is about */

/* From a snapshot writer or reader: the world's hook level. */
static void snap_battery(void)
{
    tes_world_t *w = g_cb->w;
    tes_world_t *prev = g_w;
    g_w = w;
    g_in_hook++;
    g_note = "inside a snapshot callback";
    tes_entity_t e0 = g_cb->e[0], e2 = g_cb->e[2];
    R3_ST(tes_set_parent(w, e2, e0), busy, "tes_set_parent");
    R3_ST(tes_set_name(w, e2, "x"), busy, "tes_set_name");
    R3_ST(tes_sort_by_depth(w), busy, "tes_sort_by_depth");
    tes_system_desc_t d = {.name = "r3snap", .run = noop_run};
    R3_REC(tes_system_new(w, &d) == NULL, busy, "tes_system_new");
    R3_ST(tes_progress(w, 0.f), busy, "tes_progress");
    sink_t s = sink_make(0, 0);
    tes_writer_t wr = {sink_write, &s};
    R3_ST(tes_snapshot_save(w, &wr), busy, "tes_snapshot_save");
    R3_ST(tes_snapshot_save_file(w, g_missing), busy, "tes_snapshot_save_file");
    R3_ST(tes_snapshot_load_file(w, g_missing), busy, "tes_snapshot_load_file");
    CASE_PLAIN(s.calls == 0 && access(g_missing, F_OK) != 0);
    R3_NOREC(tes_json_world(w, &wr) == TES_OK && s.calls > 0);
    free(s.data);
    g_note = NULL;
    g_in_hook--;
    g_w = prev;
}

static bool write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void snapshots(void)
{
    snap_world_t a;
    CASE_PLAIN(snap_world_new(&a, true));
    if (!a.w)
        return;
    mis_watch(a.w, a.e, 3, 0);
    tes_world_t *w = a.w;
    sink_t good = sink_make(0, 0);
    tes_writer_t gw = {sink_write, &good};
    CASE_PLAIN(tes_snapshot_save(w, &gw) == TES_OK && good.calls == 1);
    CASE_PLAIN(write_file(g_tmp, good.data, good.size));
    source_t gsrc = {good.data, good.size, 0, 0, 0, 0, 0, NULL};
    tes_reader_t gr = {source_read, &gsrc};
    tes_writer_t nowrite = {NULL, NULL};
    tes_reader_t noread = {NULL, NULL};

    R3_NOREC(tes_snapshot_save(NULL, &gw) == inv && tes_snapshot_save_file(NULL, g_tmp) == inv &&
             tes_snapshot_load(NULL, &gr) == inv && tes_snapshot_load_file(NULL, g_tmp) == inv);
    R3_ST(tes_snapshot_save(w, NULL), inv, "tes_snapshot_save");
    R3_ST(tes_snapshot_save(w, &nowrite), inv, "tes_snapshot_save");
    R3_ST(tes_snapshot_save_file(w, NULL), inv, "tes_snapshot_save_file");
    R3_ST(tes_snapshot_save_file(w, g_missing), io, g_missing);
    R3_ST(tes_snapshot_save_file(w, ""), io, "open ''");
    R3_ST(tes_snapshot_load(w, NULL), inv, "tes_snapshot_load");
    R3_ST(tes_snapshot_load(w, &noread), inv, "tes_snapshot_load");
    R3_ST(tes_snapshot_load(w, &gr), inv, "tes_snapshot_load"); /* live entities */
    CASE_PLAIN(gsrc.calls == 0);
    R3_ST(tes_snapshot_load_file(w, NULL), inv, "tes_snapshot_load_file");
    R3_ST(tes_snapshot_load_file(w, g_tmp), inv, "tes_snapshot_load_file");
    R3_ST(tes_snapshot_load_file(w, g_missing), inv, "tes_snapshot_load_file");
    /* A writer that fails, in every way. */
    const int statuses[] = {TES_ERR_IO, -42, 1, 7, TES_ERR_FORMAT};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        sink_t f = sink_make(1, statuses[i]);
        tes_writer_t fw = {sink_write, &f};
        R3_ST(tes_snapshot_save(w, &fw), expect_of(statuses[i]), "snapshot save");
        CASE_PLAIN(f.calls == 1);
        free(f.data);
    }
    /* Deferred and mid-iteration: refused before any file or callback. */
    for (int k = 0; k < 2; k++) {
        tes_query_t *q = NULL;
        tes_iter_t it;
        if (k == 0) {
            CASE_PLAIN(tes_defer_begin(w) == TES_OK);
        } else {
            q = tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = a.pos}}});
            it = tes_query_iter(q);
            CASE_PLAIN(q && tes_iter_next(&it));
        }
        g_note = k ? "iterating" : "deferred";
        sink_t f = sink_make(0, 0);
        tes_writer_t fw = {sink_write, &f};
        R3_ST(tes_snapshot_save(w, &fw), busy, "tes_snapshot_save");
        R3_ST(tes_snapshot_save_file(w, g_missing), busy, "tes_snapshot_save_file");
        R3_ST(tes_snapshot_load(w, &gr), busy, "tes_snapshot_load");
        R3_ST(tes_snapshot_load_file(w, g_missing), busy, "tes_snapshot_load_file");
        R3_ST(tes_snapshot_load_file(w, g_tmp), busy, "tes_snapshot_load_file");
        CASE_PLAIN(f.calls == 0 && gsrc.calls == 0 && access(g_missing, F_OK) != 0);
        if (k == 0) {
            CASE_PLAIN(tes_defer_end(w) == TES_OK);
        } else {
            tes_iter_fini(&it);
            tes_query_free(q);
        }
    }
    g_note = NULL;
    /* From the writer's own callback. */
    g_cb = &a;
    sink_t cb = sink_make(0, 0);
    cb.battery = snap_battery;
    tes_writer_t cw = {sink_write, &cb};
    CASE_PLAIN(tes_snapshot_save(w, &cw) == TES_OK && cb.battery == NULL && cb.size == good.size);
    free(cb.data);

    /* Loads into an empty world: a reader that fails on its k-th call,
     * for every k, leaves the world empty and leaks nothing. */
    snap_world_t b;
    CASE_PLAIN(snap_world_new(&b, false));
    if (b.w) {
        mis_watch(b.w, NULL, 0, 0);
        source_t probe = {good.data, good.size, 0, 0, 0, 0, 0, NULL};
        tes_reader_t pr = {source_read, &probe};
        snap_world_t c;
        CASE_PLAIN(snap_world_new(&c, false) && tes_snapshot_load(c.w, &pr) == TES_OK);
        CASE_PLAIN(snap_world_free(&c) && probe.calls > 1 && probe.zero_reads == 0);
        const int rs[] = {TES_ERR_IO, -42, 1, TES_ERR_NOMEM};
        for (int k = 1; k <= probe.calls; k++) {
            for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
                source_t f = {good.data, good.size, 0, 0, k, rs[i], 0, NULL};
                tes_reader_t fr = {source_read, &f};
                R3_ST(tes_snapshot_load(b.w, &fr), expect_of(rs[i]), rs[i] == TES_ERR_NOMEM ? NULL : "snapshot");
                CASE_PLAIN(f.calls == k && tes_entity_count(b.w) == 0);
            }
        }
        /* Short files: empty, the header only, cut in the middle. */
        const size_t cuts[] = {0, 1, 32, good.size / 2, good.size - 1};
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            CASE_PLAIN(write_file(g_tmp, good.data, cuts[i]));
            R3_ST(tes_snapshot_load_file(b.w, g_tmp), io, g_tmp);
        }
        R3_ST(tes_snapshot_load_file(b.w, "/"), io, "'/'");
        /* From the reader's callback (the loading world's hook level). */
        g_cb = &b;
        source_t rcb = {good.data, good.size, 0, 0, 0, 0, 0, snap_battery};
        tes_reader_t rr = {source_read, &rcb};
        b.e[0] = a.e[0], b.e[2] = a.e[2]; /* not alive yet: the calls are refused first */
        CASE_PLAIN(tes_snapshot_load(b.w, &rr) == TES_OK && rcb.battery == NULL &&
                   tes_entity_count(b.w) == 3);
        CASE_PLAIN(snap_world_free(&b));
    }
    free(good.data);
    mis_watch_fixture();
    CASE_PLAIN(snap_world_free(&a));
}

void mis_cases_round3_io(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/tes_misuse_r3_%ld.snap", (long)getpid());
    snprintf(g_missing, sizeof g_missing, "/tmp/tes_misuse_r3_%ld_none/x.snap", (long)getpid());
    CASE_PLAIN(write_file(g_tmp, "x", 1));
    tes_world_t *w = F.w;
    const tes_entity_t t[] = {F.a, F.b, F.y, F.dis, F.p, F.pc, F.hand, F.m[0], F.m[1],
                              R.root, R.a, R.b, R.leaf, R.anon};
    mis_watch(F.w, t, (int32_t)(sizeof t / sizeof t[0]), F.inst);
    hooks(w);
    json(w);
    systems(w);
    snapshots();
    remove(g_tmp);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
}
