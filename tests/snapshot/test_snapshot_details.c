/*
 * The detail sentences of failed snapshot calls (tes_last_error_detail):
 * file errors name the path and the system error, malformed input names
 * what was malformed and the byte offset where it starts, a failed load
 * hook names its component. Checked by substring, so the wording may
 * improve without breaking the tests, but the facts a user needs to act
 * (path, system error, offset, field) must be there.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "snapshot/format.h"
#include "snapshot/snap_world.h"

static void assert_detail(const tes_world_t *w, int rc, int want, const char *const *parts)
{
    const char *d = tes_last_error_detail(w);
    if (rc != want)
        fail_msg("status %d, want %d (detail '%s')", rc, want, d);
    if (tes_last_error(w) != want)
        fail_msg("tes_last_error %d, want %d", tes_last_error(w), want);
    for (; *parts; parts++)
        if (!strstr(d, *parts))
            fail_msg("detail '%s' lacks '%s'", d, *parts);
    print_message("  %s\n", d);
}
#define EXPECT(w, rc, want, ...) assert_detail(w, rc, want, (const char *const[]){__VA_ARGS__, NULL})

static tes_world_t *target(sw_ids_t *ids)
{
    tes_world_desc_t d = sw_desc();
    tes_world_t *w = tes_world_new(&d);
    assert_non_null(w);
    assert_true(sw_register(w, ids, false, false));
    return w;
}

static tes_world_t *saved(sw_ids_t *ids, sw_buf_t *snap)
{
    tes_world_t *w = target(ids);
    assert_true(sw_populate(w, ids, 1));
    memset(snap, 0, sizeof *snap);
    assert_int_equal(sw_save(w, snap), TES_OK);
    return w;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

static void test_file_errors(void **state)
{
    (void)state;
    sw_ids_t ids, ib;
    sw_buf_t snap;
    tes_world_t *a = saved(&ids, &snap);
    tes_world_t *b = target(&ib);
    /* Missing file. */
    EXPECT(b, tes_snapshot_load_file(b, "/nonexistent-dir/x/y.snap"), TES_ERR_IO,
           "open '/nonexistent-dir/x/y.snap'", "No such file or directory");
    /* Unwritable paths: a missing directory, a directory, a full device. */
    EXPECT(a, tes_snapshot_save_file(a, "/nonexistent-dir/x/y.snap"), TES_ERR_IO,
           "open '/nonexistent-dir/x/y.snap'", "No such file or directory");
    EXPECT(a, tes_snapshot_save_file(a, "/tmp"), TES_ERR_IO, "open '/tmp'", "Is a directory");
    if (access("/dev/full", W_OK) == 0)
        EXPECT(a, tes_snapshot_save_file(a, "/dev/full"), TES_ERR_IO, "'/dev/full'",
               "No space left on device");
    /* A truncated file: the path, the end of file and where it came. */
    char path[] = "/tmp/tes_snap_detail_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    size_t cut = snap.size / 2;
    write_file(path, snap.data, cut);
    char at[64];
    snprintf(at, sizeof at, "at byte %zu", cut);
    EXPECT(b, tes_snapshot_load_file(b, path), TES_ERR_IO, path, "unexpected end of file", at);
    write_file(path, snap.data, 20); /* inside the header */
    EXPECT(b, tes_snapshot_load_file(b, path), TES_ERR_IO, path, "unexpected end of file",
           "at byte 20");
    /* The whole file loads. */
    write_file(path, snap.data, snap.size);
    assert_int_equal(tes_snapshot_load_file(b, path), TES_OK);
    remove(path);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

/* The meta checksum recomputed after an edit, as a forger would. */
static void reseal(uint8_t *data)
{
    size_t meta_end = TES__SNAP_HEADER_SIZE + (size_t)tes__get_u64(data + 16);
    tes__put_u64(data + meta_end, tes__snap_hash(data, meta_end, 0));
}

static void test_malformed_input(void **state)
{
    (void)state;
    sw_ids_t ids, ib;
    sw_buf_t snap;
    tes_world_t *a = saved(&ids, &snap);
    tes_world_t *b = target(&ib);
    uint8_t *copy = malloc(snap.size);
    assert_non_null(copy);
    size_t meta_end = TES__SNAP_HEADER_SIZE + (size_t)tes__get_u64(snap.data + 16);
    char at[64];

    /* Truncated (a memory reader: the offset and what was being read). */
    EXPECT(b, sw_load(b, snap.data, 100), TES_ERR_IO, "input ends", "at byte 32",
           "meta part");
    snprintf(at, sizeof at, "at byte %zu", meta_end + 8);
    EXPECT(b, sw_load(b, snap.data, meta_end + 8), TES_ERR_IO, "input ends", at, "payload");

    /* Bad magic. */
    memcpy(copy, snap.data, snap.size);
    copy[0] = 'X';
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "bad magic", "at byte 0");

    /* Bad version. */
    memcpy(copy, snap.data, snap.size);
    tes__put_u32(copy + 8, 7);
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "version 7", "at byte 8");

    /* Bad meta checksum: a flipped byte inside the meta part. */
    memcpy(copy, snap.data, snap.size);
    copy[meta_end - 3] ^= 0x10;
    snprintf(at, sizeof at, "at byte %zu", meta_end);
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "meta checksum mismatch", at);

    /* Bad payload checksum: a flipped byte in the raw columns. */
    memcpy(copy, snap.data, snap.size);
    copy[meta_end + 8 + 2] ^= 0x01;
    snprintf(at, sizeof at, "at byte %zu", snap.size - 8);
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "payload checksum mismatch", at);

    /* A corrupted count, checksum forged to match: the entity slot count
     * (right after the component records) claims far more slots than the
     * meta part holds. Find it: the first u32 after the limits and the
     * component records. */
    memcpy(copy, snap.data, snap.size);
    size_t off = TES__SNAP_HEADER_SIZE + 8;
    uint32_t ncomps = tes__get_u32(copy + off);
    off += 4;
    for (uint32_t i = 0; i < ncomps; i++)
        off += 4 + tes__get_u32(copy + off) + 12;
    tes__put_u32(copy + off, 0x10000000u);
    reseal(copy);
    snprintf(at, sizeof at, "at byte %zu", off);
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "entities", "slot count 268435456",
           at);

    /* The component count itself. */
    memcpy(copy, snap.data, snap.size);
    tes__put_u32(copy + TES__SNAP_HEADER_SIZE + 8, 0x7FFFFFFFu);
    reseal(copy);
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "components: count 2147483647",
           "at byte 40");

    /* The header's payload size, checksum forged. */
    memcpy(copy, snap.data, snap.size);
    tes__put_u64(copy + 24, tes__get_u64(copy + 24) + 4);
    reseal(copy);
    EXPECT(b, sw_load(b, copy, snap.size), TES_ERR_FORMAT, "payload size", "at byte 24");

    /* Every failure left the world as it was; the genuine bytes load. */
    assert_int_equal(tes_entity_count(b), 0);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    free(copy);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

/* A failing load hook names its component; a failing writer its status. */
static int failing_write(const void *data, size_t size, void *user)
{
    (void)data, (void)size, (void)user;
    return -42;
}

static void test_callback_failures(void **state)
{
    (void)state;
    sw_ids_t ids, ib;
    sw_buf_t snap;
    tes_world_t *a = saved(&ids, &snap);
    tes_world_t *b = target(&ib);
    sw_fail_load_at = 1;
    EXPECT(b, sw_load(b, snap.data, snap.size), TES_ERR_INVALID, "load hook of 'Name'",
           "at byte");
    sw_fail_load_at = 0;
    tes_writer_t bad = {failing_write, NULL};
    EXPECT(a, tes_snapshot_save(a, &bad), -42, "writer returned -42");
    /* A second identical failure reports the same sentence (not a
     * fallback for an unchanged detail). */
    EXPECT(a, tes_snapshot_save(a, &bad), -42, "writer returned -42");
    EXPECT(b, tes_snapshot_load_file(b, "/nonexistent-dir/x/y.snap"), TES_ERR_IO,
           "No such file or directory");
    EXPECT(b, tes_snapshot_load_file(b, "/nonexistent-dir/x/y.snap"), TES_ERR_IO,
           "No such file or directory");
    /* A successful call keeps the last failure's detail beside its status. */
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_int_equal(tes_last_error(b), TES_ERR_IO);
    assert_non_null(strstr(tes_last_error_detail(b), "No such file or directory"));
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_malformed_input),
        cmocka_unit_test(test_callback_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
