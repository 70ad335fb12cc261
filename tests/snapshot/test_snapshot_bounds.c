/*
 * How much a snapshot load allocates, measured through the world's
 * allocator, for the worst inputs we could craft. Each input is written
 * field by field (the forge below) with both checksums computed, as a
 * forger would: the loader gets past every checksum and must hold its
 * bound on the strength of the fields alone.
 *
 * The bound (docs/guarantees.md, "Bounded allocation"): the peak of
 * extra memory during a load is at most 8 times the input plus 64 KiB,
 * plus the granularity of the world's own storage: 1 KiB per table the
 * load creates (the table record); for each sparse store, one 32 KiB
 * index page for each 4096-slot range its live entities fall in and its
 * data pages (64 KiB each, covering its positions, holes included); and
 * the declared size of each value saved through a save hook, however few
 * bytes that hook wrote. The sparse and hooked terms depend on what the
 * target world registered (how many sparse components, how large each
 * value), not on the input alone. The tests compute the granularity term
 * of each file from its contents, so a loader that allocates anything
 * beyond it (a page nobody needs, rows nobody listed, scratch sized by a
 * claimed count) fails. The ratios printed show what each term costs.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snapshot/format.h"
#include "snapshot/snap_world.h"
#include "support/counting_alloc.h"
#include "world/check.h"

/* ------------------------------------------------------------ the forge */

typedef struct bytes {
    uint8_t *data;
    size_t size, cap;
} bytes_t;

static void put(bytes_t *b, const void *p, size_t n)
{
    if (b->size + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->size + n)
            cap *= 2;
        b->data = realloc(b->data, cap);
        assert_non_null(b->data);
        b->cap = cap;
    }
    memcpy(b->data + b->size, p, n);
    b->size += n;
}

static void u32(bytes_t *b, uint32_t v)
{
    uint8_t le[4];
    tes__put_u32(le, v);
    put(b, le, 4);
}

typedef struct forge {
    bytes_t meta, payload;
} forge_t;

/* The world section (limits as sw-less default worlds have them) and the
 * component list: names (ascending), size, align, storage, stable. */
typedef struct comp_spec {
    const char *name;
    uint32_t size, align;
    uint8_t sparse, stable, framed;
} comp_spec_t;

static void forge_comps(forge_t *f, const comp_spec_t *c, uint32_t n)
{
    u32(&f->meta, TES_MAX_GENERATION);
    u32(&f->meta, 0xFFFFFFFFu);
    u32(&f->meta, n);
    for (uint32_t i = 0; i < n; i++) {
        u32(&f->meta, (uint32_t)strlen(c[i].name));
        put(&f->meta, c[i].name, strlen(c[i].name));
        u32(&f->meta, c[i].size);
        u32(&f->meta, c[i].align);
        uint8_t flags[4] = {c[i].sparse, c[i].stable, c[i].framed, 0};
        put(&f->meta, flags, 4);
    }
}

/* An entity index of `count` slots, all live with generation 1. */
static void forge_live_slots(bytes_t *b, uint32_t count)
{
    u32(b, count);
    u32(b, 0xFFFFFFFFu);
    u32(b, 0);
    for (uint32_t i = 0; i < count; i++) {
        u32(b, 1);
        u32(b, 0);
    }
}

/* No instances, no prefabs; then (format version 3) no links, no names. */
static void forge_no_lifecycle(bytes_t *b)
{
    u32(b, 0);
    u32(b, 0xFFFFFFFFu);
    u32(b, 0);
    u32(b, 0);
    u32(b, 0);
    u32(b, 0);
}

/* Header + meta + checksum + payload + checksum, into *out. */
static void forge_finish(forge_t *f, bytes_t *out)
{
    memset(out, 0, sizeof *out);
    uint8_t header[32];
    memcpy(header, TES__SNAP_MAGIC, 8);
    tes__put_u32(header + 8, TES__SNAP_VERSION);
    tes__put_u32(header + 12, 0);
    tes__put_u64(header + 16, f->meta.size);
    tes__put_u64(header + 24, f->payload.size);
    put(out, header, 32);
    put(out, f->meta.data, f->meta.size);
    uint64_t sum = tes__snap_hash(out->data, out->size, 0);
    uint8_t le[8];
    tes__put_u64(le, sum);
    put(out, le, 8);
    put(out, f->payload.data ? f->payload.data : (const uint8_t *)"", f->payload.size);
    tes__put_u64(le, tes__snap_hash(f->payload.data, f->payload.size, sum));
    put(out, le, 8);
    free(f->meta.data);
    free(f->payload.data);
    memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------- measuring */

/* A load hook that accepts any framed value (the one for Fat, whose save
 * hook may write nothing at all). */
static int skip_load(void *ptr, const tes_reader_t *in, void *ctx)
{
    (void)ptr, (void)ctx;
    uint8_t sink[64];
    (void)in, (void)sink;
    return TES_OK;
}
static int skip_save(const void *ptr, const tes_writer_t *out, void *ctx)
{
    (void)ptr, (void)out, (void)ctx;
    return TES_OK;
}

#define NSPARSE 64
#define NTABLE_TAGS 10
#define FAT_SIZE 65536u
#define STABLE_SIZE 4096u

static char sparse_names[NSPARSE][8];
static char table_names[NTABLE_TAGS][8];

/* The target: NTABLE_TAGS table tags "T0".."T9", a table component
 * "Pos" (12 bytes), and, when `sparse`, NSPARSE sparse tags "S00".."S63",
 * a stable sparse component "Stable" of STABLE_SIZE bytes and a hooked
 * table component "Fat" of FAT_SIZE bytes. */
static tes_world_t *bound_world(ca_state_t *pk, bool sparse)
{
    tes_world_desc_t d = {0};
    d.allocator = ca_allocator(pk);
    tes_world_t *w = tes_world_new(&d);
    assert_non_null(w);
    for (int i = 0; i < NTABLE_TAGS; i++) {
        snprintf(table_names[i], sizeof table_names[i], "T%d", i);
        assert_true(tes_component(w, &(tes_component_desc_t){.name = table_names[i]}));
    }
    assert_true(tes_component(w, &(tes_component_desc_t){.name = "Pos", .size = 12}));
    if (!sparse)
        return w;
    for (int i = 0; i < NSPARSE; i++) {
        snprintf(sparse_names[i], sizeof sparse_names[i], "S%02d", i);
        assert_true(tes_component(
            w, &(tes_component_desc_t){.name = sparse_names[i], .storage = TES_STORAGE_SPARSE}));
    }
    assert_true(tes_component(w, &(tes_component_desc_t){.name = "Stable", .size = STABLE_SIZE,
                                                          .storage = TES_STORAGE_SPARSE,
                                                          .stable = true}));
    tes_component_desc_t fat = {.name = "Fat", .size = FAT_SIZE};
    fat.hooks.save = skip_save;
    fat.hooks.load = skip_load;
    assert_true(tes_component(w, &fat));
    return w;
}

/* Loads `in` into a fresh target, returns the load status and the peak
 * of extra bytes; checks nothing leaked on failure. */
static int measure(bool sparse, const bytes_t *in, size_t *extra)
{
    ca_state_t pk;
    ca_init(&pk, 0);
    tes_world_t *w = bound_world(&pk, sparse);
    int64_t before = pk.live_bytes;
    pk.peak_bytes = pk.live_bytes;
    int rc = sw_load(w, in->data, in->size);
    *extra = (size_t)(pk.peak_bytes - before);
    if (rc)
        assert_int_equal(pk.live_bytes, before);
    else
        assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    assert_int_equal(pk.live_bytes, 0);
    return rc;
}

/* What each table the load creates may cost beyond its rows: the world's
 * table record (its type, column list, per-id lookups and graph entry). */
#define TABLE_RECORD 1024u

/* The plain bound: 8x the input plus 64 KiB. */
static size_t plain_bound(size_t input) { return 8 * input + 65536; }

static void report(const char *what, int rc, size_t input, size_t extra, size_t granularity)
{
    print_message("%-44s status %3d  input %9zu  peak extra %10zu  (%.1fx; bound %zu + %zu)\n",
                  what, rc, input, extra, (double)extra / (double)input, plain_bound(input),
                  granularity);
}

/* ------------------------------------------------------------ files */

/* Many tables: one per subset of the table tags (1023 types), one row
 * each, so each table costs the input 12 + 4 * |type| bytes. */
static void test_many_tables(void **state)
{
    (void)state;
    comp_spec_t comps[NTABLE_TAGS];
    for (int i = 0; i < NTABLE_TAGS; i++) {
        snprintf(table_names[i], sizeof table_names[i], "T%d", i);
        comps[i] = (comp_spec_t){table_names[i], 0, 0, 0, 0, 0};
    }
    uint32_t ntables = (1u << NTABLE_TAGS) - 1;
    /* Types in ascending lexicographic order: enumerate subsets as sorted
     * index lists, then sort the lists. */
    uint32_t (*types)[NTABLE_TAGS + 1] = calloc(ntables, sizeof *types);
    assert_non_null(types);
    for (uint32_t m = 1; m <= ntables; m++) {
        uint32_t n = 0;
        for (uint32_t k = 0; k < NTABLE_TAGS; k++)
            if (m & (1u << k))
                types[m - 1][1 + n++] = k;
        types[m - 1][0] = n;
    }
    for (uint32_t i = 1; i < ntables; i++) /* insertion sort, lexicographic */
        for (uint32_t j = i; j > 0; j--) {
            uint32_t *a = types[j - 1], *b = types[j];
            uint32_t k = 0;
            while (k < a[0] && k < b[0] && a[1 + k] == b[1 + k])
                k++;
            bool greater = k < a[0] && k < b[0] ? a[1 + k] > b[1 + k] : a[0] > b[0];
            if (!greater)
                break;
            uint32_t tmp[NTABLE_TAGS + 1];
            memcpy(tmp, a, sizeof tmp);
            memcpy(a, b, sizeof tmp);
            memcpy(b, tmp, sizeof tmp);
        }
    forge_t f = {0};
    forge_comps(&f, comps, NTABLE_TAGS);
    forge_live_slots(&f.meta, ntables);
    u32(&f.meta, ntables);
    for (uint32_t t = 0; t < ntables; t++) {
        u32(&f.meta, types[t][0]);
        for (uint32_t k = 0; k < types[t][0]; k++)
            u32(&f.meta, types[t][1 + k]);
        u32(&f.meta, 1);
        u32(&f.meta, t);
    }
    u32(&f.meta, 0); /* stores */
    forge_no_lifecycle(&f.meta);
    bytes_t in;
    forge_finish(&f, &in);
    size_t extra;
    int rc = measure(false, &in, &extra);
    report("1023 tables of one row", rc, in.size, extra, TABLE_RECORD * ntables);
    assert_int_equal(rc, TES_OK);
    assert_true(extra <= plain_bound(in.size) + TABLE_RECORD * ntables);
    free(types);
    free(in.data);
}

/* The components of the sparse target as the forge lists them (names
 * ascending: "Fat" < "Pos" < "S00".."S63" < "Stable" < "T0".."T9"); the
 * snapshot indices the files use follow from this order. */
enum { IX_FAT = 0, IX_POS = 1, IX_S0 = 2, IX_STABLE = IX_S0 + NSPARSE, IX_T0 = IX_STABLE + 1,
       NSPEC = IX_T0 + NTABLE_TAGS };
static void sparse_specs(comp_spec_t *c)
{
    c[IX_FAT] = (comp_spec_t){"Fat", FAT_SIZE, 16, 0, 0, 1};
    c[IX_POS] = (comp_spec_t){"Pos", 12, 4, 0, 0, 0};
    for (int i = 0; i < NSPARSE; i++) {
        snprintf(sparse_names[i], sizeof sparse_names[i], "S%02d", i);
        c[IX_S0 + i] = (comp_spec_t){sparse_names[i], 0, 0, 1, 0, 0};
    }
    c[IX_STABLE] = (comp_spec_t){"Stable", STABLE_SIZE, 16, 1, 1, 0};
    for (int i = 0; i < NTABLE_TAGS; i++) {
        snprintf(table_names[i], sizeof table_names[i], "T%d", i);
        c[IX_T0 + i] = (comp_spec_t){table_names[i], 0, 0, 0, 0, 0};
    }
}

/* Lists only the used components: a forge that uses a subset renumbers.
 * `used` flags by spec index; writes the snapshot index of each used spec
 * into ix. */
static void forge_used(forge_t *f, const bool *used, uint32_t *ix)
{
    comp_spec_t all[NSPEC], list[NSPEC];
    sparse_specs(all);
    uint32_t n = 0;
    for (uint32_t i = 0; i < NSPEC; i++)
        if (used[i]) {
            ix[i] = n;
            list[n++] = all[i];
        }
    forge_comps(f, list, n);
}

/* The sparse granularity: index pages for the live positions' slot
 * ranges, plus the page-pointer tables (16 bytes a page, doubling). */
static size_t index_pages(uint32_t distinct_pages, uint32_t highest_page)
{
    size_t table = 16;
    while (table < 16 * ((size_t)highest_page + 1))
        table *= 2;
    return (size_t)distinct_pages * 32768 + table;
}

/* Many sparse components on one entity: 64 stores of one position each,
 * about 36 bytes of input per store, each store needing one 32 KiB index
 * page (the reviewer's 1000x). */
static void test_many_sparse_stores(void **state)
{
    (void)state;
    bool used[NSPEC] = {false};
    uint32_t ix[NSPEC];
    for (int i = 0; i < NSPARSE; i++)
        used[IX_S0 + i] = true;
    forge_t f = {0};
    forge_used(&f, used, ix);
    forge_live_slots(&f.meta, 1);
    u32(&f.meta, 0); /* tables */
    u32(&f.meta, NSPARSE);
    for (int i = 0; i < NSPARSE; i++) {
        u32(&f.meta, ix[IX_S0 + i]);
        u32(&f.meta, 1);
        u32(&f.meta, 0xFFFFFFFFu);
        u32(&f.meta, 0); /* entity 0 */
    }
    forge_no_lifecycle(&f.meta);
    bytes_t in;
    forge_finish(&f, &in);
    size_t extra, grain = NSPARSE * index_pages(1, 0);
    int rc = measure(true, &in, &extra);
    report("64 sparse stores, one entity", rc, in.size, extra, grain);
    assert_int_equal(rc, TES_OK);
    assert_true(extra <= plain_bound(in.size) + grain);
    free(in.data);
}

/* Huge indices: 64 sparse stores whose positions fall in every 4096-slot
 * range of 65536 slots (each position, 4 bytes, needs its own index
 * page in each store). */
#define SPREAD_SLOTS 65536u
static void test_spread_indices(void **state)
{
    (void)state;
    bool used[NSPEC] = {false};
    uint32_t ix[NSPEC];
    for (int i = 0; i < NSPARSE; i++)
        used[IX_S0 + i] = true;
    forge_t f = {0};
    forge_used(&f, used, ix);
    forge_live_slots(&f.meta, SPREAD_SLOTS);
    u32(&f.meta, 0);
    u32(&f.meta, NSPARSE);
    uint32_t pages = SPREAD_SLOTS / 4096;
    for (int i = 0; i < NSPARSE; i++) {
        u32(&f.meta, ix[IX_S0 + i]);
        u32(&f.meta, pages);
        u32(&f.meta, 0xFFFFFFFFu);
        for (uint32_t k = 0; k < pages; k++)
            u32(&f.meta, k * 4096 + (uint32_t)i);
    }
    forge_no_lifecycle(&f.meta);
    bytes_t in;
    forge_finish(&f, &in);
    size_t extra, grain = NSPARSE * index_pages(pages, pages - 1);
    int rc = measure(true, &in, &extra);
    report("64 sparse stores over 65536 slots", rc, in.size, extra, grain);
    assert_int_equal(rc, TES_OK);
    assert_true(extra <= plain_bound(in.size) + grain);
    free(in.data);
}

/* Huge counts with little data: a stable store of 4096 positions, all
 * but one of them holes (4 bytes each in the input, no value), of a
 * 4 KiB component: its data pages cover every position. */
#define HOLES 4096u
static void test_stable_holes(void **state)
{
    (void)state;
    bool used[NSPEC] = {false};
    uint32_t ix[NSPEC];
    used[IX_STABLE] = true;
    forge_t f = {0};
    forge_used(&f, used, ix);
    forge_live_slots(&f.meta, 1);
    u32(&f.meta, 0);
    u32(&f.meta, 1);
    u32(&f.meta, ix[IX_STABLE]);
    u32(&f.meta, HOLES);
    u32(&f.meta, 1); /* hole head: position 1 */
    u32(&f.meta, 0); /* position 0: entity 0 */
    for (uint32_t pos = 1; pos < HOLES; pos++)
        u32(&f.meta, pos + 1 < HOLES ? pos + 1 : 0xFFFFFFFFu);
    uint8_t value[STABLE_SIZE];
    memset(value, 7, sizeof value);
    put(&f.meta, value, sizeof value);
    forge_no_lifecycle(&f.meta);
    bytes_t in;
    forge_finish(&f, &in);
    /* 16 values of 4 KiB per 64 KiB data page; page pointers doubling. */
    size_t data_pages = HOLES / 16, table = 8;
    while (table < data_pages)
        table *= 2;
    size_t extra, grain = index_pages(1, 0) + data_pages * 65536 + table * 16;
    int rc = measure(true, &in, &extra);
    report("4095 holes of a 4 KiB stable component", rc, in.size, extra, grain);
    assert_int_equal(rc, TES_OK);
    assert_true(extra <= plain_bound(in.size) + grain);
    free(in.data);
}

/* Hooked values whose save hook wrote nothing: 4 bytes of input (the
 * length) each, a 64 KiB value each in the world; with one row the table
 * must not reserve the 16 rows a growing table starts with (1 MiB). */
static void test_empty_hooked_values(void **state)
{
    (void)state;
    static const uint32_t row_counts[] = {1, 64};
    for (size_t v = 0; v < 2; v++) {
        uint32_t rows = row_counts[v];
        bool used[NSPEC] = {false};
        uint32_t ix[NSPEC];
        used[IX_FAT] = true;
        forge_t f = {0};
        forge_used(&f, used, ix);
        forge_live_slots(&f.meta, rows);
        u32(&f.meta, 1);
        u32(&f.meta, 1);
        u32(&f.meta, ix[IX_FAT]);
        u32(&f.meta, rows);
        for (uint32_t r = 0; r < rows; r++)
            u32(&f.meta, r);
        for (uint32_t r = 0; r < rows; r++)
            u32(&f.meta, 0); /* an empty framed value */
        u32(&f.meta, 0);
        forge_no_lifecycle(&f.meta);
        bytes_t in;
        forge_finish(&f, &in);
        size_t extra, grain = (size_t)rows * FAT_SIZE + TABLE_RECORD;
        int rc = measure(true, &in, &extra);
        char what[64];
        snprintf(what, sizeof what, "%u empty framed values of 64 KiB", (unsigned)rows);
        report(what, rc, in.size, extra, grain);
        assert_int_equal(rc, TES_OK);
        assert_true(extra <= plain_bound(in.size) + grain);
        free(in.data);
    }
}

/* Lifecycle records: many prefab records of one member, many instances
 * of one member, many free entity and instance slots; table world only. */
#define RECORDS 20000u
static void test_lifecycle_records(void **state)
{
    (void)state;
    comp_spec_t pos = {"Pos", 12, 4, 0, 0, 0};
    for (int variant = 0; variant < 3; variant++) {
        forge_t f = {0};
        forge_comps(&f, &pos, 1);
        uint32_t slots = variant == 2 ? 4 * RECORDS : 2 * RECORDS;
        uint32_t live = variant == 2 ? 1 : slots;
        /* Entities: `live` live slots, the rest free (a chain). */
        u32(&f.meta, slots);
        u32(&f.meta, live < slots ? live : 0xFFFFFFFFu);
        u32(&f.meta, slots - live);
        for (uint32_t i = 0; i < slots; i++) {
            u32(&f.meta, 1);
            u32(&f.meta, i < live ? 0 : i + 1 < slots ? i + 1 : 0xFFFFFFFFu);
        }
        /* Every entity in the table of Pos (it must be used). */
        u32(&f.meta, 1);
        u32(&f.meta, 1);
        u32(&f.meta, 0);
        u32(&f.meta, live);
        for (uint32_t i = 0; i < live; i++)
            u32(&f.meta, i);
        for (uint32_t i = 0; i < live; i++) {
            uint8_t v[12] = {0};
            put(&f.payload, v, 12);
        }
        u32(&f.meta, 0); /* stores */
        if (variant == 0) { /* instances of one member */
            forge_live_slots(&f.meta, RECORDS);
            for (uint32_t i = 0; i < RECORDS; i++) {
                u32(&f.meta, 1);
                u32(&f.meta, i);
            }
            u32(&f.meta, 0);
        } else if (variant == 1) { /* prefab records of one member */
            u32(&f.meta, 0);
            u32(&f.meta, 0xFFFFFFFFu);
            u32(&f.meta, 0);
            u32(&f.meta, RECORDS);
            for (uint32_t i = 0; i < RECORDS; i++) {
                u32(&f.meta, 1);
                u32(&f.meta, i);
            }
        } else { /* free instance slots */
            u32(&f.meta, RECORDS);
            u32(&f.meta, 0);
            u32(&f.meta, RECORDS);
            for (uint32_t i = 0; i < RECORDS; i++) {
                u32(&f.meta, 1);
                u32(&f.meta, i + 1 < RECORDS ? i + 1 : 0xFFFFFFFFu);
            }
            u32(&f.meta, 0);
        }
        u32(&f.meta, 0); /* no links */
        u32(&f.meta, 0); /* no names */
        bytes_t in;
        forge_finish(&f, &in);
        size_t extra;
        int rc = measure(false, &in, &extra);
        static const char *const what[] = {"20000 instances of one member",
                                           "20000 prefab records of one member",
                                           "80000 slots, 1 live, 20000 free ids"};
        report(what[variant], rc, in.size, extra, 0);
        assert_int_equal(rc, TES_OK);
        assert_true(extra <= plain_bound(in.size));
        free(in.data);
    }
}

/* Counts the input does not back: a table that claims rows whose payload
 * never arrives, and a meta part claiming far more than is delivered. */
static void test_claims_without_data(void **state)
{
    (void)state;
    comp_spec_t pos = {"Pos", 12, 4, 0, 0, 0};
    forge_t f = {0};
    forge_comps(&f, &pos, 1);
    uint32_t rows = 100000;
    forge_live_slots(&f.meta, rows);
    u32(&f.meta, 1);
    u32(&f.meta, 1);
    u32(&f.meta, 0);
    u32(&f.meta, rows);
    for (uint32_t i = 0; i < rows; i++)
        u32(&f.meta, i);
    u32(&f.meta, 0);
    forge_no_lifecycle(&f.meta);
    /* A payload size that matches the rows, and no payload at all. */
    bytes_t in;
    forge_finish(&f, &in);
    tes__put_u64(in.data + 24, (uint64_t)rows * 12);
    size_t meta_end = 32 + (size_t)tes__get_u64(in.data + 16);
    tes__put_u64(in.data + meta_end, tes__snap_hash(in.data, meta_end, 0));
    in.size = meta_end + 8;
    size_t extra;
    int rc = measure(false, &in, &extra);
    report("100000 rows, payload never delivered", rc, in.size, extra, 0);
    assert_int_equal(rc, TES_ERR_IO);
    assert_true(extra <= plain_bound(in.size));
    free(in.data);
}

/* Mutations of a genuine snapshot of the feature-complete test world,
 * both checksums recomputed after each (so every mutation reaches the
 * field checks): each load succeeds or fails cleanly, and allocates at
 * most 32 times the input plus 1 MiB. For this world that bound covers
 * every granularity term: its three sparse components have values of at
 * most 16 bytes, its hooked one is 8 bytes, and its table components make
 * at most 512 distinct tables. A loader that sized anything by a claimed
 * count would pass it on the first forged count. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void reseal_all(uint8_t *data, size_t size)
{
    size_t meta_end = 32 + (size_t)tes__get_u64(data + 16);
    uint64_t sum = tes__snap_hash(data, meta_end, 0);
    tes__put_u64(data + meta_end, sum);
    size_t payload = size - meta_end - 16;
    tes__put_u64(data + size - 8, tes__snap_hash(data + meta_end + 8, payload, sum));
}

static void test_mutated_snapshots(void **state)
{
    (void)state;
    tes_world_desc_t d = sw_desc();
    tes_world_t *src = tes_world_new(&d);
    sw_ids_t ids;
    assert_true(src && sw_register(src, &ids, false, false) && sw_populate(src, &ids, 2));
    sw_buf_t snap = {0};
    assert_int_equal(sw_save(src, &snap), TES_OK);
    size_t meta_end = 32 + (size_t)tes__get_u64(snap.data + 16);
    ca_state_t pk;
    ca_init(&pk, 0);
    d.allocator = ca_allocator(&pk);
    tes_world_t *w = tes_world_new(&d);
    assert_true(w && sw_register(w, &ids, true, false));
    uint8_t *copy = malloc(snap.size);
    assert_non_null(copy);
    static const uint32_t edges[] = {0, 1, 2, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu,
                                     4095, 4096, 65536, 0x10000000u};
    size_t worst = 0, loaded = 0;
    long names = sw_names_live;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(copy, snap.data, snap.size);
        int edits = 1 + (int)(rng() % 3);
        for (int k = 0; k < edits; k++) {
            /* A field of the meta part (after the header), 4-aligned or not. */
            size_t at = 32 + rng() % (meta_end - 36);
            if (rng() % 2)
                tes__put_u32(copy + at, edges[rng() % (sizeof edges / sizeof edges[0])]);
            else
                copy[at] ^= (uint8_t)(1u << (rng() % 8));
        }
        reseal_all(copy, snap.size);
        int64_t before = pk.live_bytes;
        pk.peak_bytes = pk.live_bytes;
        int rc = sw_load(w, copy, snap.size);
        size_t extra = (size_t)(pk.peak_bytes - before);
        if (extra > worst)
            worst = extra;
        if (extra > 32 * snap.size + (1u << 20))
            fail_msg("mutation %d: %zu bytes allocated for a %zu byte input (status %d)", iter,
                     extra, snap.size, rc);
        if (rc == TES_OK) {
            loaded++;
            assert_int_equal(tes__world_check(w), TES_OK);
            /* Empty it again for the next load. */
            tes_world_free(w);
            w = tes_world_new(&d);
            assert_true(w && sw_register(w, &ids, true, false));
            continue;
        }
        if (rc != TES_ERR_FORMAT && rc != TES_ERR_IO && rc != TES_ERR_INVALID)
            fail_msg("mutation %d: status %d", iter, rc);
        /* Only empty tables may remain (the load may have created them). */
        tes_world_stats_t st;
        tes_world_stats(w, &st);
        if (tes_entity_count(w) != 0 || sw_names_live != names || st.entity_slots != 0 ||
            tes__world_check(w) != TES_OK)
            fail_msg("mutation %d: a refused load left something behind (status %d, %s)", iter,
                     rc, tes_last_error_detail(w));
        if (pk.live_bytes - before > 2048 * (int64_t)st.tables)
            fail_msg("mutation %d: a refused load kept %lld bytes", iter,
                     (long long)(pk.live_bytes - before));
    }
    print_message("4000 mutated snapshots of %zu bytes: %zu loaded, peak extra %zu bytes "
                  "(%.1fx)\n", snap.size, loaded, worst, (double)worst / (double)snap.size);
    free(copy);
    sw_buf_free(&snap);
    tes_world_free(w);
    tes_world_free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_tables),
        cmocka_unit_test(test_many_sparse_stores),
        cmocka_unit_test(test_spread_indices),
        cmocka_unit_test(test_stable_holes),
        cmocka_unit_test(test_empty_hooked_values),
        cmocka_unit_test(test_lifecycle_records),
        cmocka_unit_test(test_claims_without_data),
        cmocka_unit_test(test_mutated_snapshots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
