/*
 * Snapshot tests: exact round trips (handles, free list, retired slots,
 * prefabs, instances, hooks, queries made after the load), canonical bytes
 * (save -> load -> save is identical), every truncation and every bit flip
 * of a small snapshot refused with the world unchanged, bounded allocation
 * on hostile headers (a counting allocator), and every documented error.
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
#include "support/counting_alloc.h"
#include "world/check.h"

static tes_world_t *new_world(sw_ids_t *ids, bool shuffle, bool extra)
{
    tes_world_desc_t d = sw_desc();
    tes_world_t *w = tes_world_new(&d);
    assert_non_null(w);
    assert_true(sw_register(w, ids, shuffle, extra));
    return w;
}

static tes_world_t *populated(sw_ids_t *ids, int scale)
{
    tes_world_t *w = new_world(ids, false, false);
    assert_true(sw_populate(w, ids, scale));
    return w;
}

static void assert_equal_worlds(tes_world_t *a, const sw_ids_t *ia, tes_world_t *b,
                                const sw_ids_t *ib)
{
    char why[256] = "";
    if (!sw_equal(a, ia, b, ib, why))
        fail_msg("worlds differ: %s", why);
}

static void test_round_trip_exact(void **state)
{
    (void)state;
    sw_ids_t ia, ib;
    long names0 = sw_names_live;
    tes_world_t *a = populated(&ia, 2);
    sw_buf_t snap;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    /* Another registration order and an extra component. */
    tes_world_t *b = new_world(&ib, true, true);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_int_equal(tes__world_check(b), TES_OK);
    assert_equal_worlds(a, &ia, b, &ib);
    /* Canonical bytes. */
    sw_buf_t again;
    assert_int_equal(sw_save(b, &again), TES_OK);
    assert_int_equal(again.size, snap.size);
    assert_memory_equal(again.data, snap.data, snap.size);
    /* Both issue the same handles and instance ids from here on, and keep
     * agreeing after the same changes. */
    for (int i = 0; i < 20; i++) {
        tes_entity_t x = tes_spawn(a), y = tes_spawn(b);
        assert_int_equal(x, y);
        if (i % 3 == 0) {
            assert_int_equal(tes_destroy(a, x), TES_OK);
            assert_int_equal(tes_destroy(b, y), TES_OK);
        }
    }
    tes_entity_t roots[8];
    tes_entity_t pa[8];
    int32_t n = 0;
    for (uint32_t i = 0; i < 200 && n < 1; i++)
        for (uint32_t g = 1; g <= 3; g++) {
            tes_entity_t e = tes_entity_make(i, g);
            if (tes_alive(a, e) && tes_prefab_members(a, e, pa, 8) > 0)
                roots[n++] = e;
        }
    assert_int_equal(n, 1);
    tes_entity_t oa[4] = {0}, ob[4] = {0};
    tes_instance_t x = tes_instantiate(a, roots[0], oa, 4);
    tes_instance_t y = tes_instantiate(b, roots[0], ob, 4);
    assert_true(x != 0);
    assert_int_equal(x, y);
    assert_memory_equal(oa, ob, sizeof oa);
    /* The copied reference points at the new instance in both. */
    const sw_link_t *la = tes_get(a, oa[1], ia.link), *lb = tes_get(b, ob[1], ib.link);
    assert_non_null(la);
    assert_non_null(lb);
    assert_int_equal(la->target, oa[0]);
    assert_int_equal(lb->target, ob[0]);
    assert_equal_worlds(a, &ia, b, &ib);
    sw_buf_t sa, sb;
    assert_int_equal(sw_save(a, &sa), TES_OK);
    assert_int_equal(sw_save(b, &sb), TES_OK);
    assert_int_equal(sa.size, sb.size);
    assert_memory_equal(sa.data, sb.data, sa.size);
    sw_buf_free(&sa);
    sw_buf_free(&sb);
    sw_buf_free(&again);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
    assert_int_equal(sw_names_live, names0);
}

/* Groups made before and after a load see every entity. */
static void test_queries_and_groups(void **state)
{
    (void)state;
    sw_ids_t ia, ib;
    tes_world_t *a = populated(&ia, 2);
    sw_buf_t snap;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    tes_world_t *b = new_world(&ib, false, false);
    tes_query_desc_t before = {.terms = {{ib.sparse}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_query_t *own = tes_query_new(b, &before);
    assert_non_null(own);
    tes_query_desc_t plain = {.terms = {{ib.pos}, {ib.vel, TES_OPTIONAL, TES_INOUT}}};
    tes_query_t *tq = tes_query_new(b, &plain);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_int_equal(tes__world_check(b), TES_OK);
    tes_query_desc_t da = {.terms = {{ia.sparse}}};
    tes_query_desc_t pa = {.terms = {{ia.pos}, {ia.vel, TES_OPTIONAL, TES_INOUT}}};
    tes_query_t *qa = tes_query_new(a, &da), *qpa = tes_query_new(a, &pa);
    assert_true(tes_query_count(qa) > 0);
    assert_int_equal(tes_query_count(own), tes_query_count(qa));
    assert_int_equal(tes_query_count(tq), tes_query_count(qpa));
    tes_query_desc_t after = {.terms = {{ib.stable}, {ib.stag, TES_NOT, TES_INOUT}},
                              .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_desc_t after_a = {.terms = {{ia.stable}, {ia.stag, TES_NOT, TES_INOUT}}};
    tes_query_t *g = tes_query_new(b, &after), *ga = tes_query_new(a, &after_a);
    assert_int_equal(tes_query_count(g), tes_query_count(ga));
    /* Iterating sees values that match. */
    tes_iter_t it = tes_query_iter(own);
    int32_t seen = 0;
    while (tes_iter_next(&it)) {
        const uint64_t *v = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++, seen++)
            assert_memory_equal(&v[i], tes_get(a, it.entities[i], ia.sparse), 8);
    }
    assert_int_equal(seen, tes_query_count(qa));
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

/* A target world that must come out of every failed load unchanged. */
typedef struct target {
    tes_world_t *w;
    sw_ids_t ids;
    tes_world_stats_t stats;
    long names;
} target_t;

static void target_check(const target_t *t, int rc, const char *what, size_t at)
{
    if (rc == TES_OK)
        fail_msg("%s %zu: load succeeded", what, at);
    if (rc != TES_ERR_FORMAT && rc != TES_ERR_IO && rc != TES_ERR_INVALID)
        fail_msg("%s %zu: status %d", what, at, rc);
    tes_world_stats_t s;
    tes_world_stats(t->w, &s);
    if (s.entities_alive || s.entity_slots != t->stats.entity_slots ||
        s.entities_retired || s.instances_alive || sw_names_live != t->names)
        fail_msg("%s %zu: the world changed", what, at);
    if (tes__world_check(t->w) != TES_OK)
        fail_msg("%s %zu: world check failed", what, at);
}

static void test_truncations_and_bit_flips(void **state)
{
    (void)state;
    sw_ids_t ia;
    long names0 = sw_names_live;
    tes_world_t *a = populated(&ia, 1);
    sw_buf_t snap;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    print_message("snapshot of the small world: %zu bytes\n", snap.size);
    assert_true(snap.size < 2048);
    target_t t;
    t.w = new_world(&t.ids, true, false);
    tes_world_stats(t.w, &t.stats);
    t.names = sw_names_live;
    for (size_t len = 0; len < snap.size; len++)
        target_check(&t, sw_load(t.w, snap.data, len), "truncated to", len);
    uint8_t *copy = malloc(snap.size);
    assert_non_null(copy);
    for (size_t bit = 0; bit < snap.size * 8; bit++) {
        memcpy(copy, snap.data, snap.size);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        target_check(&t, sw_load(t.w, copy, snap.size), "bit flipped", bit);
    }
    /* The world is still usable: the genuine snapshot loads. */
    assert_int_equal(sw_load(t.w, snap.data, snap.size), TES_OK);
    assert_equal_worlds(a, &ia, t.w, &t.ids);
    free(copy);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(t.w);
    assert_int_equal(sw_names_live, names0);
}

/* A hostile input: header + meta part + a correct meta checksum, so the
 * loader gets past the checksum to the counts; then an empty payload and
 * its checksum (a stated payload size the input does not deliver). */
static size_t hostile(uint8_t *out, const uint32_t *words, size_t nwords, uint64_t claimed_meta,
                      uint64_t payload)
{
    memcpy(out, TES__SNAP_MAGIC, 8);
    tes__put_u32(out + 8, TES__SNAP_VERSION);
    tes__put_u32(out + 12, 0);
    size_t meta = nwords * 4;
    tes__put_u64(out + 16, claimed_meta ? claimed_meta : meta);
    tes__put_u64(out + 24, payload);
    for (size_t i = 0; i < nwords; i++)
        tes__put_u32(out + 32 + 4 * i, words[i]);
    uint64_t sum = tes__snap_hash(out, 32 + meta, 0);
    tes__put_u64(out + 32 + meta, sum);
    tes__put_u64(out + 40 + meta, tes__snap_hash(out, 0, sum));
    return 32 + meta + 16;
}

static void test_hostile_headers_bounded(void **state)
{
    (void)state;
    ca_state_t pk;
    ca_init(&pk, 0);
    tes_world_desc_t d = sw_desc();
    d.allocator = ca_allocator(&pk);
    tes_world_t *w = tes_world_new(&d);
    assert_non_null(w);
    sw_ids_t ids;
    assert_true(sw_register(w, &ids, false, false));
    uint8_t input[1024];
    memset(input, 0xA5, sizeof input);
    uint32_t words[200];
    memset(words, 0, sizeof words);
    words[0] = 3;          /* generation_limit */
    words[1] = 0xFFFFFFFF; /* entity_limit */
    struct {
        const char *what;
        uint32_t at, value;
        uint64_t claimed;
        int want;
    } cases[] = {
        {"2^31 entities", 3, UINT32_C(1) << 31, 0, TES_ERR_FORMAT},
        {"2^32-1 components", 2, UINT32_MAX, 0, TES_ERR_FORMAT},
        {"2^31 tables", 6, UINT32_C(1) << 31, 0, TES_ERR_FORMAT},
        {"2^31 sparse stores", 7, UINT32_C(1) << 31, 0, TES_ERR_FORMAT},
        {"2^31 instance slots", 8, UINT32_C(1) << 31, 0, TES_ERR_FORMAT},
        {"a 1 TB meta part", 3, 0, UINT64_C(1) << 40, TES_ERR_IO},
        {"a 2^63 byte meta part", 3, 0, UINT64_C(1) << 63, TES_ERR_FORMAT},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memset(words + 2, 0, sizeof words - 8);
        words[4] = TES_NULL_INDEX; /* entity free list head */
        words[9] = TES_NULL_INDEX; /* instance free list head */
        words[cases[k].at] = cases[k].value;
        size_t n = hostile(input, words, 200, cases[k].claimed, 0);
        assert_true(n <= sizeof input + 64);
        int64_t before = pk.live_bytes;
        pk.peak_bytes = pk.live_bytes;
        int rc = sw_load(w, input, n);
        size_t extra = (size_t)(pk.peak_bytes - before);
        print_message("%s: status %d, peak extra allocation %zu bytes for a %zu byte input\n",
                      cases[k].what, rc, extra, n);
        assert_int_equal(rc, cases[k].want);
        assert_true(extra <= 4 * n + 1024);
        assert_int_equal(pk.live_bytes, before);
    }
    tes_world_free(w);
}

/* Large components: the payload of their table is more than the loader may
 * reserve ahead of its bytes, so it arrives through a bounce buffer. The
 * round trip is still exact, every truncation is refused with the world
 * unchanged, and a payload that never arrives costs a few times the bytes
 * that did. */
#define BIG_SIZE 4096
#define BIG_ROWS 300
static tes_world_t *big_world(ca_state_t *pk, tes_comp_t *big, tes_comp_t *small)
{
    tes_world_desc_t d = sw_desc();
    if (pk)
        d.allocator = ca_allocator(pk);
    tes_world_t *w = tes_world_new(&d);
    assert_non_null(w);
    *small = tes_component(w, &(tes_component_desc_t){.name = "Small", .size = 4});
    *big = tes_component(w, &(tes_component_desc_t){.name = "Big", .size = BIG_SIZE});
    assert_true(*big && *small);
    return w;
}

static void test_large_components(void **state)
{
    (void)state;
    tes_comp_t big, small;
    tes_world_t *a = big_world(NULL, &big, &small);
    static uint8_t value[BIG_SIZE];
    for (uint32_t i = 0; i < BIG_ROWS; i++) {
        tes_entity_t e = tes_spawn(a);
        for (size_t k = 0; k < BIG_SIZE; k++)
            value[k] = (uint8_t)(i * 7 + k);
        assert_int_equal(tes_set(a, e, big, value), TES_OK);
        if (i % 3 == 0)
            assert_int_equal(tes_set(a, e, small, &i), TES_OK);
    }
    sw_buf_t snap, again;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    tes_comp_t big_b, small_b;
    ca_state_t pk;
    ca_init(&pk, 0);
    tes_world_t *b = big_world(&pk, &big_b, &small_b);
    /* Truncated anywhere in the payload (and just after the meta part):
     * refused, nothing left behind. */
    size_t meta_end = 32 + (size_t)tes__get_u64(snap.data + 16) + 8;
    int64_t before = pk.live_bytes;
    pk.peak_bytes = pk.live_bytes;
    assert_int_equal(sw_load(b, snap.data, meta_end), TES_ERR_IO);
    size_t extra = (size_t)(pk.peak_bytes - before);
    print_message("payload never delivered: peak extra allocation %zu bytes for a %zu byte input "
                  "(the table needs %d)\n", extra, meta_end, BIG_ROWS * (BIG_SIZE + 12));
    assert_true(extra <= 4 * meta_end + 8192);
    assert_int_equal(pk.live_bytes, before);
    for (size_t len = meta_end; len < snap.size; len += 997) {
        assert_int_equal(sw_load(b, snap.data, len), TES_ERR_IO);
        assert_int_equal(tes_entity_count(b), 0);
        assert_int_equal(pk.live_bytes, before);
    }
    snap.data[snap.size - 100] ^= 1; /* a flip in the payload */
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_ERR_FORMAT);
    assert_int_equal(pk.live_bytes, before);
    snap.data[snap.size - 100] ^= 1;
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_int_equal(tes__world_check(b), TES_OK);
    assert_int_equal(tes_entity_count(b), BIG_ROWS);
    for (uint32_t i = 0; i < BIG_ROWS; i++) {
        tes_entity_t e = tes_entity_make(i, 1);
        for (size_t k = 0; k < BIG_SIZE; k++)
            value[k] = (uint8_t)(i * 7 + k);
        assert_memory_equal(tes_get(b, e, big_b), value, BIG_SIZE);
        const uint32_t *sv = tes_get(b, e, small_b);
        if (i % 3 == 0)
            assert_true(sv && *sv == i);
        else
            assert_null(sv);
    }
    assert_int_equal(sw_save(b, &again), TES_OK);
    assert_int_equal(again.size, snap.size);
    assert_memory_equal(again.data, snap.data, snap.size);
    sw_buf_free(&again);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

/* The header's payload size must be exactly what the tables imply, even
 * when the meta checksum was recomputed to match; so must the version. */
static void test_payload_size_and_version_checked(void **state)
{
    (void)state;
    sw_ids_t ia, ib;
    tes_world_t *a = populated(&ia, 1);
    sw_buf_t snap;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    size_t meta_end = 32 + (size_t)tes__get_u64(snap.data + 16);
    uint64_t payload = tes__get_u64(snap.data + 24);
    assert_true(payload > 0);
    assert_int_equal(snap.size, meta_end + 8 + payload + 8);
    tes_world_t *b = new_world(&ib, false, false);
    uint8_t *copy = malloc(snap.size + 8);
    assert_non_null(copy);
    struct {
        uint32_t version;
        int64_t delta;
    } cases[] = {{TES__SNAP_VERSION, -1}, {TES__SNAP_VERSION, 1}, {TES__SNAP_VERSION, -(int64_t)payload}, {1, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memcpy(copy, snap.data, snap.size);
        memset(copy + snap.size, 0, 8);
        tes__put_u32(copy + 8, cases[k].version);
        tes__put_u64(copy + 24, (uint64_t)((int64_t)payload + cases[k].delta));
        tes__put_u64(copy + meta_end, tes__snap_hash(copy, meta_end, 0));
        assert_int_equal(sw_load(b, copy, snap.size + 8), TES_ERR_FORMAT);
        assert_int_equal(tes_entity_count(b), 0);
        assert_int_equal(tes__world_check(b), TES_OK);
    }
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_equal_worlds(a, &ia, b, &ib);
    free(copy);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

static void nothing_dtor(void *ptr, int32_t count, void *ctx) { (void)ptr, (void)count, (void)ctx; }

static void test_errors(void **state)
{
    (void)state;
    sw_ids_t ia, ib;
    tes_world_t *a = populated(&ia, 1);
    sw_buf_t snap;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    /* NULL arguments. */
    tes_writer_t wr = {sw_buf_write, NULL};
    assert_int_equal(tes_snapshot_save(NULL, &wr), TES_ERR_INVALID);
    assert_int_equal(tes_snapshot_save(a, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_snapshot_load(NULL, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_snapshot_load(a, NULL), TES_ERR_INVALID);
    /* A world with entities. */
    assert_int_equal(sw_load(a, snap.data, snap.size), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(a), TES_ERR_INVALID);
    /* A missing component. */
    tes_world_desc_t d = sw_desc();
    tes_world_t *b = tes_world_new(&d);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_ERR_INVALID);
    tes_world_free(b);
    /* A different layout. */
    b = tes_world_new(&d);
    assert_true(tes_component(b, &(tes_component_desc_t){.name = "Health", .size = 8}));
    assert_true(sw_register(b, &ib, false, false) == false);
    tes_world_free(b);
    b = tes_world_new(&d);
    assert_true(tes_component(b, &(tes_component_desc_t){.name = "Position", .size = 12,
                                                          .storage = TES_STORAGE_SPARSE}));
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_ERR_INVALID);
    tes_world_free(b);
    /* Other limits. */
    tes_world_desc_t other = sw_desc();
    other.generation_limit = 4;
    b = tes_world_new(&other);
    assert_true(sw_register(b, &ib, false, false));
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_ERR_INVALID);
    tes_world_free(b);
    /* Deferred: both refuse with BUSY. */
    b = new_world(&ib, false, false);
    assert_int_equal(tes_defer_begin(b), TES_OK);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_ERR_BUSY);
    sw_buf_t tmp;
    assert_int_equal(sw_save(b, &tmp), TES_ERR_BUSY);
    sw_buf_free(&tmp);
    assert_int_equal(tes_defer_end(b), TES_OK);
    /* A load hook that fails: every value made so far destroyed again. */
    long names = sw_names_live;
    sw_fail_load_at = 2;
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_ERR_INVALID);
    sw_fail_load_at = 0;
    assert_int_equal(sw_names_live, names);
    assert_int_equal(tes_entity_count(b), 0);
    assert_int_equal(tes__world_check(b), TES_OK);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_equal_worlds(a, &ia, b, &ib);
    tes_world_free(b);
    /* A component that owns memory without a save hook. */
    b = tes_world_new(&d);
    tes_component_desc_t cd = {.name = "Owner", .size = 8};
    cd.hooks.dtor = nothing_dtor;
    tes_comp_t owner = tes_component(b, &cd);
    tes_component_desc_t cd2 = {.name = "Owner2", .size = 8};
    tes_comp_t unused_owner = tes_component(b, &cd2);
    (void)unused_owner;
    tes_entity_t e = tes_spawn(b);
    assert_int_equal(sw_save(b, &tmp), TES_OK); /* unused: fine */
    sw_buf_free(&tmp);
    assert_int_equal(tes_add(b, e, owner), TES_OK);
    assert_int_equal(sw_save(b, &tmp), TES_ERR_INVALID);
    sw_buf_free(&tmp);
    tes_world_free(b);
    sw_buf_free(&snap);
    tes_world_free(a);
}

/* A target that had a life before (slots used and freed, stable-store
 * tombstones, instance ids and prefab records used): the load replaces all
 * of it, and the result is the saved world exactly. */
static void test_load_into_used_world(void **state)
{
    (void)state;
    sw_ids_t ia, ib;
    tes_world_t *a = populated(&ia, 1);
    sw_buf_t snap;
    assert_int_equal(sw_save(a, &snap), TES_OK);
    tes_world_t *b = new_world(&ib, false, false);
    assert_true(sw_populate(b, &ib, 3));
    tes_entity_t all[256];
    int32_t n = 0;
    for (uint32_t i = 0; i < 256; i++)
        for (uint32_t g = 1; g <= 3; g++)
            if (tes_alive(b, tes_entity_make(i, g)) && n < 256)
                all[n++] = tes_entity_make(i, g);
    for (int32_t i = 0; i < n; i++)
        if (tes_alive(b, all[i]))
            assert_int_equal(tes_destroy(b, all[i]), TES_OK);
    assert_int_equal(tes_entity_count(b), 0);
    assert_int_equal(sw_load(b, snap.data, snap.size), TES_OK);
    assert_int_equal(tes__world_check(b), TES_OK);
    assert_equal_worlds(a, &ia, b, &ib);
    sw_buf_t again;
    assert_int_equal(sw_save(b, &again), TES_OK);
    assert_int_equal(again.size, snap.size);
    assert_memory_equal(again.data, snap.data, snap.size);
    for (int i = 0; i < 10; i++)
        assert_int_equal(tes_spawn(a), tes_spawn(b));
    sw_buf_free(&again);
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
}

/* Snapshot calls from inside a hook are refused (TES_ERR_BUSY). */
static int hook_save_rc, hook_load_rc, hook_file_rc;
static const char *hook_path;
static void on_add_snapshot(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    sw_buf_t b;
    hook_save_rc = sw_save(w, &b);
    sw_buf_free(&b);
    hook_load_rc = sw_load(w, (const uint8_t *)"", 0);
    hook_file_rc = tes_snapshot_save_file(w, hook_path);
}

static void test_refused_inside_hooks(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t d = {.name = "Probe", .size = 4};
    d.hooks.on_add = on_add_snapshot;
    tes_comp_t probe = tes_component(w, &d);
    char path[] = "/tmp/tes_snapshot_hook_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "keep", 4), 4);
    close(fd);
    hook_path = path;
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, probe), TES_OK);
    assert_int_equal(hook_save_rc, TES_ERR_BUSY);
    assert_int_equal(hook_load_rc, TES_ERR_BUSY);
    assert_int_equal(hook_file_rc, TES_ERR_BUSY);
    FILE *f = fopen(path, "rb");
    char text[8] = "";
    assert_non_null(f);
    assert_int_equal(fread(text, 1, sizeof text, f), 4); /* the file was not touched */
    fclose(f);
    remove(path);
    tes_world_free(w);
}

static int failing_write(const void *data, size_t size, void *user)
{
    (void)data, (void)size, (void)user;
    return TES_ERR_IO;
}

static void test_files_and_writers(void **state)
{
    (void)state;
    sw_ids_t ia, ib;
    tes_world_t *a = populated(&ia, 1);
    char path[] = "/tmp/tes_snapshot_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(tes_snapshot_save_file(a, path), TES_OK);
    tes_world_t *b = new_world(&ib, true, false);
    assert_int_equal(tes_snapshot_load_file(b, path), TES_OK);
    assert_equal_worlds(a, &ia, b, &ib);
    remove(path);
    tes_world_t *c = new_world(&ib, false, false);
    assert_int_equal(tes_snapshot_load_file(c, path), TES_ERR_IO);
    assert_int_equal(tes_snapshot_load_file(c, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_snapshot_save_file(a, "/nonexistent-dir/x/y"), TES_ERR_IO);
    tes_writer_t bad = {failing_write, NULL};
    assert_int_equal(tes_snapshot_save(a, &bad), TES_ERR_IO);
    /* An empty world round-trips too. */
    sw_buf_t snap;
    assert_int_equal(sw_save(c, &snap), TES_OK);
    tes_world_t *d = new_world(&ib, false, false);
    assert_int_equal(sw_load(d, snap.data, snap.size), TES_OK);
    assert_int_equal(tes_spawn(d), tes_entity_make(0, 1));
    sw_buf_free(&snap);
    tes_world_free(a);
    tes_world_free(b);
    tes_world_free(c);
    tes_world_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_exact),
        cmocka_unit_test(test_queries_and_groups),
        cmocka_unit_test(test_truncations_and_bit_flips),
        cmocka_unit_test(test_hostile_headers_bounded),
        cmocka_unit_test(test_large_components),
        cmocka_unit_test(test_payload_size_and_version_checked),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_files_and_writers),
        cmocka_unit_test(test_load_into_used_world),
        cmocka_unit_test(test_refused_inside_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
