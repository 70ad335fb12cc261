/*
 * libFuzzer target over tes_snapshot_load. The first input byte is a mode:
 * bit 0 patches the header's meta size and both checksums to fit the rest
 * of the input (the stated payload size is kept when the input can hold
 * it), so mutations reach the parser's validation instead of dying at a
 * checksum; bit 1 registers the components in reverse order; bit 2
 * adds an unused component. The rest is the snapshot.
 *
 * Oracles (any violation aborts, so libFuzzer keeps the input):
 * - a refused input returns FORMAT, IO or INVALID and leaves the world
 *   empty, consistent (tes__world_check) and able to load a genuine
 *   snapshot; no string a load hook made is leaked;
 * - an accepted input of the current format version is canonical: saving
 *   the loaded world gives back exactly the snapshot bytes, and the world
 *   passes tes__world_check; an accepted input of an older version (the
 *   loader reads those too) saves as the current version, and that save
 *   loads into a fresh world and saves back to the same bytes;
 * - any input, accepted or not, allocates at most 32 times its size plus
 *   1 MiB through the world's allocator (a counting allocator): for this
 *   world that bound covers the storage granularity too (its sparse and
 *   hooked values are at most 16 bytes, its table components make at most
 *   512 tables), so a loader that sized anything by a claimed count, or
 *   reserved pages or rows nobody listed, trips it.
 * Seeds: tests/fuzz/snapshot_corpus (make_seeds writes the current
 * version's; the v2-* files are the same worlds saved in version 2). The
 * ctest snapshot_corpus runs every seed through these oracles without
 * libFuzzer (snapshot_corpus_replay.c) and checks that the committed seeds
 * are what make_seeds writes now, so a format change that leaves the
 * corpus behind fails `make test`, not the next `make fuzz`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/format.h"
#include "snapshot/snap_world.h"
#include "support/counting_alloc.h"
#include "world/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, int rc)
{
    fprintf(stderr, "fuzz_snapshot_load: %s (status %d)\n", what, rc);
    abort();
}

/* An accepted snapshot of an older version, which the loaded world saved
 * as `again`: that must be the current version, load into a fresh world
 * registered the same way, and save back to exactly the same bytes. */
static void check_upgrade(const sw_buf_t *again, bool shuffle, bool extra)
{
    if (again->size < TES__SNAP_HEADER_SIZE ||
        tes__get_u32(again->data + 8) != TES__SNAP_VERSION)
        die("an older snapshot does not save as the current version", 0);
    tes_world_desc_t d = sw_desc();
    tes_world_t *v = tes_world_new(&d);
    sw_ids_t ids;
    if (!v || !sw_register(v, &ids, shuffle, extra))
        die("setup failed", 0);
    int rc = sw_load(v, again->data, again->size);
    if (rc != TES_OK)
        die("the save of an older snapshot does not load", rc);
    sw_buf_t third;
    rc = sw_save(v, &third);
    if (rc != TES_OK)
        die("the save of an older snapshot does not save again", rc);
    if (third.size != again->size || memcmp(third.data, again->data, again->size) != 0)
        die("the save of an older snapshot is not canonical (saving it again gives other bytes)",
            0);
    sw_buf_free(&third);
    tes_world_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    size_t n = size - 1;
    uint8_t *snap = malloc(n ? n : 1);
    if (!snap)
        return 0;
    memcpy(snap, data + 1, n);
    if ((mode & 1) && n >= TES__SNAP_HEADER_SIZE + 2 * TES__SNAP_SUM_SIZE) {
        size_t room = n - TES__SNAP_HEADER_SIZE - 2 * TES__SNAP_SUM_SIZE;
        uint64_t payload = tes__get_u64(snap + 24);
        if (payload > room)
            payload = 0;
        size_t meta = room - (size_t)payload;
        tes__put_u64(snap + 16, (uint64_t)meta);
        tes__put_u64(snap + 24, payload);
        size_t meta_end = TES__SNAP_HEADER_SIZE + meta;
        uint64_t sum = tes__snap_hash(snap, meta_end, 0);
        tes__put_u64(snap + meta_end, sum);
        tes__put_u64(snap + n - 8, tes__snap_hash(snap + meta_end + 8, (size_t)payload, sum));
    }
    long names = sw_names_live;
    tes_world_desc_t d = sw_desc();
    ca_state_t pk;
    ca_init(&pk, 0);
    d.allocator = ca_allocator(&pk);
    tes_world_t *w = tes_world_new(&d);
    sw_ids_t ids;
    if (!w || !sw_register(w, &ids, (mode & 2) != 0, (mode & 4) != 0))
        die("setup failed", 0);
    int64_t before = pk.live_bytes;
    pk.peak_bytes = pk.live_bytes;
    int rc = sw_load(w, snap, n);
    if ((uint64_t)(pk.peak_bytes - before) > 32 * (uint64_t)n + (UINT64_C(1) << 20))
        die("a load allocated more than 32 times its input plus 1 MiB", rc);
    if (rc == TES_OK) {
        if (tes__world_check(w) != TES_OK)
            die("an accepted snapshot broke the world", 0);
        sw_buf_t again;
        int src = sw_save(w, &again);
        if (src != TES_OK)
            die("an accepted snapshot does not save", src);
        /* Accepted, so the header (and its version) was read. */
        if (tes__get_u32(snap + 8) == TES__SNAP_VERSION) {
            size_t used = TES__SNAP_HEADER_SIZE + (size_t)tes__get_u64(snap + 16) +
                          (size_t)tes__get_u64(snap + 24) + 2 * TES__SNAP_SUM_SIZE;
            if (again.size != used || memcmp(again.data, snap, used) != 0)
                die("an accepted snapshot is not canonical (save gives other bytes)", 0);
        } else {
            check_upgrade(&again, (mode & 2) != 0, (mode & 4) != 0);
        }
        sw_buf_free(&again);
    } else {
        if (rc != TES_ERR_FORMAT && rc != TES_ERR_IO && rc != TES_ERR_INVALID)
            die("unexpected status", rc);
        if (tes_entity_count(w) != 0 || tes__world_check(w) != TES_OK)
            die("a refused snapshot changed the world", rc);
        if (sw_names_live != names)
            die("a refused snapshot leaked hook-made values", rc);
        /* Still usable: a genuine snapshot loads (made once per process). */
        static sw_buf_t good;
        if (!good.data) {
            sw_ids_t si;
            tes_world_t *src = tes_world_new(&d);
            if (!src || !sw_register(src, &si, false, false) || !sw_populate(src, &si, 1) ||
                sw_save(src, &good) != TES_OK)
                die("source world failed", 0);
            tes_world_free(src);
        }
        if (sw_load(w, good.data, good.size) != TES_OK)
            die("a genuine snapshot no longer loads after a refused one", 0);
    }
    tes_world_free(w);
    if (sw_names_live != names)
        die("hook-made values leaked", 0);
    free(snap);
    return 0;
}
