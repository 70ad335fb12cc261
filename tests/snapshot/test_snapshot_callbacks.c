/*
 * What a snapshot's user callbacks may do. A tes_writer_t, a tes_reader_t,
 * a save hook and a load hook all run inside the world's hook level: every
 * call refused from a hook is refused from them, with TES_ERR_BUSY and a
 * detail, and the save or load that runs them carries on and succeeds. In
 * particular tes_world_free from a writer used to free the world under the
 * running save (a use after free under ASan); it is now refused and the
 * world stays usable.
 *
 * One probe runs the whole list of refused calls from inside a callback
 * and records each status and detail; each test runs the probe from one
 * kind of callback and checks every entry. The probe also makes calls
 * hooks may make (registering components, creating and freeing a query):
 * they work from snapshot callbacks too, and the query made mid-load sees
 * the loaded entities.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot/mem_stream.h"
#include "world/check.h"

/* The refused calls, in the order the probe makes them. */
enum {
    CALL_WORLD_FREE,
    CALL_SPAWN,
    CALL_ADD,
    CALL_SET,
    CALL_DESTROY,
    CALL_CLEAR,
    CALL_SAVE,
    CALL_LOAD,
    CALL_SAVE_FILE,
    CALL_LOAD_FILE,
    CALL_DEFER_BEGIN,
    CALL_DEFER_END,
    CALL_PROGRESS,
    CALL_COUNT
};
static const char *const call_names[CALL_COUNT] = {
    "tes_world_free", "tes_spawn", "tes_add", "tes_set", "tes_destroy", "tes_clear",
    "tes_snapshot_save", "tes_snapshot_load", "tes_snapshot_save_file",
    "tes_snapshot_load_file", "tes_defer_begin", "tes_defer_end", "tes_progress"};

typedef struct probe {
    tes_world_t *w;
    tes_entity_t e;   /* a live entity of w */
    tes_comp_t comp;  /* a component e does not have */
    const char *path; /* a file the file calls must not touch */
    int runs;         /* probe runs so far (it runs once) */
    tes_query_t *query; /* made by the probe over Blob; freed by the test */
    tes_comp_t late_table, late_sparse; /* registered by the probe */
    int status[CALL_COUNT];
    char detail[CALL_COUNT][256];
} probe_t;

static void record(probe_t *p, int call, int status)
{
    p->status[call] = status;
    snprintf(p->detail[call], sizeof p->detail[call], "%s", tes_last_error_detail(p->w));
}

/* Makes every refused call once; the first callback run only. */
static void probe_run(probe_t *p)
{
    if (p->runs++)
        return;
    tes_world_t *w = p->w;
    tes_world_free(w); /* must be refused: the world is in use */
    record(p, CALL_WORLD_FREE, tes_last_error(w));
    tes_entity_t spawned = tes_spawn(w);
    record(p, CALL_SPAWN, spawned ? TES_OK : tes_last_error(w));
    record(p, CALL_ADD, tes_add(w, p->e, p->comp));
    uint32_t v = 7;
    record(p, CALL_SET, tes_set(w, p->e, p->comp, &v));
    record(p, CALL_DESTROY, tes_destroy(w, p->e));
    record(p, CALL_CLEAR, tes_clear(w, p->e));
    sw_buf_t b = {0};
    record(p, CALL_SAVE, sw_save(w, &b));
    sw_buf_free(&b);
    record(p, CALL_LOAD, sw_load(w, (const uint8_t *)"", 0));
    record(p, CALL_SAVE_FILE, tes_snapshot_save_file(w, p->path));
    record(p, CALL_LOAD_FILE, tes_snapshot_load_file(w, p->path));
    record(p, CALL_DEFER_BEGIN, tes_defer_begin(w));
    record(p, CALL_DEFER_END, tes_defer_end(w));
    record(p, CALL_PROGRESS, tes_progress(w, 0.0f));
    /* Allowed, as from hooks. */
    p->late_table = tes_component(w, &(tes_component_desc_t){.name = "LateTable", .size = 8});
    p->late_sparse = tes_component(w, &(tes_component_desc_t){
                                          .name = "LateSparse", .size = 8,
                                          .storage = TES_STORAGE_SPARSE});
    tes_comp_t blob = tes_component_lookup(w, "Blob");
    tes_query_t *scratch = tes_query_new(w, &(tes_query_desc_t){.terms = {{blob}}});
    tes_query_free(scratch);
    p->query = tes_query_new(w, &(tes_query_desc_t){.terms = {{blob}}});
}

/* Every call was refused with TES_ERR_BUSY; those refused for the hook
 * level say so in their detail. */
static void probe_check(const probe_t *p, const char *where)
{
    if (p->runs < 1)
        fail_msg("%s: the callback never ran", where);
    for (int k = 0; k < CALL_COUNT; k++) {
        if (p->status[k] != TES_ERR_BUSY)
            fail_msg("%s: %s returned %d, not TES_ERR_BUSY", where, call_names[k], p->status[k]);
        if (k == CALL_PROGRESS)
            continue; /* the system layer's own refusal */
        if (!strstr(p->detail[k], "refused"))
            fail_msg("%s: %s: detail '%s' does not say it was refused", where, call_names[k],
                     p->detail[k]);
    }
    if (!strstr(p->detail[CALL_WORLD_FREE], "tes_world_free") ||
        !strstr(p->detail[CALL_WORLD_FREE], "snapshot"))
        fail_msg("%s: world free detail '%s'", where, p->detail[CALL_WORLD_FREE]);
    if (!strstr(p->detail[CALL_LOAD], "tes_snapshot_load"))
        fail_msg("%s: load detail '%s'", where, p->detail[CALL_LOAD]);
    if (!p->late_table || !p->late_sparse || !p->query)
        fail_msg("%s: registration or query creation failed in the callback", where);
}

/* After the save or load: the probe's query sees the one Blob entity,
 * the late components work; frees the query. */
static void probe_after(probe_t *p, tes_entity_t e)
{
    assert_int_equal(tes_query_count(p->query), 1);
    uint64_t v = 5;
    assert_int_equal(tes_set(p->w, e, p->late_table, &v), TES_OK);
    assert_int_equal(tes_set(p->w, e, p->late_sparse, &v), TES_OK);
    assert_int_equal(tes__world_check(p->w), TES_OK);
    tes_query_free(p->query);
    p->query = NULL;
}

/* A file the probe's file calls would overwrite or read if not refused. */
static const char *keep_file(char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite("keep", 1, 4, f), 4);
    fclose(f);
    return path;
}

static void assert_file_kept(const char *path)
{
    char text[8] = "";
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(text, 1, sizeof text, f), 4);
    assert_memory_equal(text, "keep", 4);
    fclose(f);
    remove(path);
}

/* A value with save and load hooks (ctx: the probe), so that they run. */
typedef struct blob { uint32_t v; } blob_t;
static int blob_save(const void *ptr, const tes_writer_t *out, void *ctx)
{
    probe_t *p = ctx;
    if (p)
        probe_run(p);
    return out->write(ptr, sizeof(blob_t), out->user);
}
static int blob_load(void *ptr, const tes_reader_t *in, void *ctx)
{
    probe_t *p = ctx;
    if (p)
        probe_run(p);
    return in->read(ptr, sizeof(blob_t), in->user);
}

/* A world with one entity holding a hooked value; *probe_ctx becomes the
 * hooks' ctx (NULL: hooks do not probe). */
static tes_world_t *world_with(probe_t *probe_ctx, tes_comp_t *blob, tes_comp_t *other)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    tes_component_desc_t d = {.name = "Blob", .size = sizeof(blob_t)};
    d.hooks.save = blob_save;
    d.hooks.load = blob_load;
    d.hooks.ctx = probe_ctx;
    *blob = tes_component(w, &d);
    *other = tes_component(w, &(tes_component_desc_t){.name = "Other", .size = 4});
    assert_true(*blob && *other);
    return w;
}

static void populate(tes_world_t *w, tes_comp_t blob, tes_entity_t *e)
{
    *e = tes_spawn(w);
    blob_t v = {42};
    assert_int_equal(tes_set(w, *e, blob, &v), TES_OK);
}

/* The world after the save or load: intact, consistent, and usable. */
static void assert_usable(tes_world_t *w, tes_comp_t blob, tes_entity_t e)
{
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_true(tes_alive(w, e));
    const blob_t *v = tes_get(w, e, blob);
    assert_non_null(v);
    assert_int_equal(v->v, 42);
    assert_true(tes_spawn(w) != TES_NULL);
}

/* A writer that runs the probe, then appends. */
typedef struct probing_writer {
    probe_t *probe;
    sw_buf_t buf;
} probing_writer_t;
static int probing_write(const void *data, size_t size, void *user)
{
    probing_writer_t *pw = user;
    probe_run(pw->probe);
    return sw_buf_write(data, size, &pw->buf);
}

static void test_writer_callback(void **state)
{
    (void)state;
    tes_comp_t blob, other;
    tes_world_t *w = world_with(NULL, &blob, &other);
    tes_entity_t e;
    populate(w, blob, &e);
    char path[] = "/tmp/tes_snap_writer_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    probe_t probe = {.w = w, .e = e, .comp = other, .path = keep_file(path)};
    probing_writer_t pw = {&probe, {0}};
    tes_writer_t out = {probing_write, &pw};
    assert_int_equal(tes_snapshot_save(w, &out), TES_OK);
    probe_check(&probe, "writer");
    assert_file_kept(path);
    assert_usable(w, blob, e);
    probe_after(&probe, e);
    /* The bytes the writer got are a whole snapshot. */
    tes_comp_t blob2, other2;
    tes_world_t *copy = world_with(NULL, &blob2, &other2);
    assert_int_equal(sw_load(copy, pw.buf.data, pw.buf.size), TES_OK);
    assert_usable(copy, blob2, e);
    sw_buf_free(&pw.buf);
    tes_world_free(copy);
    tes_world_free(w);
}

/* A reader that runs the probe, then reads. */
typedef struct probing_reader {
    probe_t *probe;
    sw_src_t src;
} probing_reader_t;
static int probing_read(void *data, size_t size, void *user)
{
    probing_reader_t *pr = user;
    probe_run(pr->probe);
    return sw_src_read(data, size, &pr->src);
}

static void test_reader_callback(void **state)
{
    (void)state;
    tes_comp_t blob, other;
    tes_world_t *src = world_with(NULL, &blob, &other);
    tes_entity_t e;
    populate(src, blob, &e);
    /* A second live entity, so the probe's tes_destroy has one to name
     * in the loaded world (the world being loaded has none yet). */
    sw_buf_t snap = {0};
    assert_int_equal(sw_save(src, &snap), TES_OK);
    tes_world_t *w = world_with(NULL, &blob, &other);
    char path[] = "/tmp/tes_snap_reader_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    probe_t probe = {.w = w, .e = e, .comp = other, .path = keep_file(path)};
    probing_reader_t pr = {&probe, {snap.data, snap.size, 0}};
    tes_reader_t in = {probing_read, &pr};
    assert_int_equal(tes_snapshot_load(w, &in), TES_OK);
    probe_check(&probe, "reader");
    assert_file_kept(path);
    assert_usable(w, blob, e);
    probe_after(&probe, e);
    sw_buf_free(&snap);
    tes_world_free(src);
    tes_world_free(w);
}

static void test_save_hook(void **state)
{
    (void)state;
    probe_t probe = {0};
    tes_comp_t blob, other;
    tes_world_t *w = world_with(&probe, &blob, &other);
    tes_entity_t e;
    populate(w, blob, &e);
    char path[] = "/tmp/tes_snap_save_hook_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    probe.w = w, probe.e = e, probe.comp = other, probe.path = keep_file(path);
    sw_buf_t snap = {0};
    assert_int_equal(sw_save(w, &snap), TES_OK);
    probe_check(&probe, "save hook");
    assert_file_kept(path);
    assert_usable(w, blob, e);
    probe_after(&probe, e);
    sw_buf_free(&snap);
    tes_world_free(w);
}

static void test_load_hook(void **state)
{
    (void)state;
    tes_comp_t blob, other;
    tes_world_t *src = world_with(NULL, &blob, &other);
    tes_entity_t e;
    populate(src, blob, &e);
    sw_buf_t snap = {0};
    assert_int_equal(sw_save(src, &snap), TES_OK);
    probe_t probe = {0};
    tes_world_t *w = world_with(&probe, &blob, &other);
    char path[] = "/tmp/tes_snap_load_hook_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    probe.w = w, probe.e = e, probe.comp = other, probe.path = keep_file(path);
    assert_int_equal(sw_load(w, snap.data, snap.size), TES_OK);
    probe_check(&probe, "load hook");
    assert_file_kept(path);
    assert_usable(w, blob, e);
    probe_after(&probe, e);
    sw_buf_free(&snap);
    tes_world_free(src);
    tes_world_free(w);
}

/* A refusal seen inside a callback stays visible after the call that ran
 * it succeeds (the successful save does not put the older detail back). */
static int freeing_write(const void *data, size_t size, void *user)
{
    probing_writer_t *pw = user;
    tes_world_free(pw->probe->w);
    return sw_buf_write(data, size, &pw->buf);
}

static void test_refusal_detail_survives(void **state)
{
    (void)state;
    tes_comp_t blob, other;
    tes_world_t *w = world_with(NULL, &blob, &other);
    tes_entity_t e;
    populate(w, blob, &e);
    probe_t probe = {.w = w};
    probing_writer_t pw = {&probe, {0}};
    tes_writer_t out = {freeing_write, &pw};
    assert_int_equal(tes_snapshot_save(w, &out), TES_OK);
    assert_int_equal(tes_last_error(w), TES_ERR_BUSY);
    assert_non_null(strstr(tes_last_error_detail(w), "tes_world_free: refused"));
    assert_usable(w, blob, e);
    sw_buf_free(&pw.buf);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_callback),
        cmocka_unit_test(test_reader_callback),
        cmocka_unit_test(test_save_hook),
        cmocka_unit_test(test_load_hook),
        cmocka_unit_test(test_refusal_detail_survives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
