/*
 * The world's quiet state and the dispatch it drives. One word records
 * the deferral depth, the hook depth, the running systems' refusals and
 * whether some dependent waits to be released or to settle; tes_add,
 * tes_set and tes_remove choose their form from that word's class (quiet,
 * only deferred, busy) and the component's dispatch byte. These tests pin
 * down:
 * - that the word follows every transition (deferral levels, iterators,
 *   hooks, a query freed inside a hook) and returns to zero;
 * - that every pair of class and dispatch (table, sparse of each shape,
 *   tracked, tags, hooked components, ids past the small ones) behaves as
 *   the generic path would: applied when quiet, queued when deferred,
 *   refused inside hooks, and a NULL value refused for data;
 * - that the world check reports a word out of step with what it records
 *   (pending bits, depth, unknown bits) and a dispatch byte out of step
 *   with its record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "world/check.h"
#include "world/world.h"
#include "world/quiet.h"

static tes_comp_t reg_hooked(tes_world_t *w, const char *name, uint32_t size,
                             tes_storage_t storage, bool stable, bool track, const tes_hooks_t *hooks)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    d.stable = stable;
    d.track_changes = track;
    if (hooks)
        d.hooks = *hooks;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

static tes_comp_t reg(tes_world_t *w, const char *name, uint32_t size, tes_storage_t storage)
{
    return reg_hooked(w, name, size, storage, false, false, NULL);
}

/* ---- the word follows every transition -------------------------------- */

static uint64_t seen_word;
static void note_word(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    seen_word = tes__quiet_word(w);
}

static void test_word_follows_transitions(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", 8, TES_STORAGE_TABLE);
    tes_hooks_t hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.on_add = note_word;
    tes_comp_t h = reg_hooked(w, "H", 4, TES_STORAGE_TABLE, false, false, &hooks);
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_true(tes__world_quiet(w));
    assert_int_equal(tes__quiet_class(tes__quiet_word(w)), 0);

    /* Deferral levels: explicit and an iterator's, nested. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes__defer_depth(w), 1);
    assert_int_equal(tes__quiet_class(tes__quiet_word(w)), 1);
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = a;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    tes_iter_t it = tes_query_iter(q);
    assert_int_equal(tes__defer_depth(w), 2);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_iter_fini(&it);
    assert_int_equal(tes__defer_depth(w), 1);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes__quiet_word(w), 0);

    /* A hook level: the call's own and the observer's. */
    seen_word = 0;
    assert_int_equal(tes_add(w, e, h), TES_OK);
    assert_int_equal((seen_word & TES__QUIET_HOOK_MASK) >> TES__QUIET_HOOK_SHIFT, 2);
    assert_int_equal(tes__quiet_class(seen_word), 2);
    assert_int_equal(tes__quiet_word(w), 0);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(q);
    tes_world_free(w);
}

/* A query freed inside a hook waits for the call's end: the word's
 * pending bit is set meanwhile (no quiet path may skip that end), and
 * clear once the query is released. */
static tes_query_t *doomed_query;
static uint64_t doomed_word;
static void free_query(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    tes_query_free(doomed_query);
    doomed_word = tes__quiet_word(w);
}

static void test_pending_bit_while_doomed(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", 8, TES_STORAGE_TABLE);
    tes_hooks_t hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.on_add = free_query;
    tes_comp_t h = reg_hooked(w, "H", 4, TES_STORAGE_TABLE, false, false, &hooks);
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = a;
    doomed_query = tes_query_new(w, &qd);
    assert_non_null(doomed_query);
    tes_entity_t e = tes_spawn(w);
    doomed_word = 0;
    assert_int_equal(tes_add(w, e, h), TES_OK);
    assert_true(doomed_word & TES__QUIET_DOOMED);
    assert_int_equal(tes__quiet_word(w), 0);
    assert_int_equal(w->dependent_count, 0);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Quiet again: the next add takes the plain path and works. */
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_true(tes_has(w, e, a));
    tes_world_free(w);
}

/* ---- every class and dispatch ------------------------------------------ */

static int hooked_sets;
static void count_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
    hooked_sets++;
}

typedef struct kind {
    tes_comp_t c;
    uint32_t size;
} kind_t;

/* The kinds a call may meet: every dispatch, small and large ids. */
#define KINDS 12
static void make_kinds(tes_world_t *w, kind_t *k)
{
    tes_hooks_t hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.on_set = count_set;
    uint32_t n = 0;
    k[n++] = (kind_t){reg(w, "table", 12, TES_STORAGE_TABLE), 12};
    k[n++] = (kind_t){reg(w, "table_tag", 0, TES_STORAGE_TABLE), 0};
    k[n++] = (kind_t){reg(w, "sparse4", 4, TES_STORAGE_SPARSE), 4};
    k[n++] = (kind_t){reg(w, "sparse16", 16, TES_STORAGE_SPARSE), 16};
    k[n++] = (kind_t){reg(w, "sparse_tag", 0, TES_STORAGE_SPARSE), 0};
    k[n++] = (kind_t){reg_hooked(w, "sparse_stable", 20, TES_STORAGE_SPARSE, true, false, NULL), 20};
    k[n++] = (kind_t){reg_hooked(w, "tracked", 8, TES_STORAGE_TABLE, false, true, NULL), 8};
    k[n++] = (kind_t){reg_hooked(w, "hooked", 8, TES_STORAGE_TABLE, false, false, &hooks), 8};
    /* Past the small ids: the dispatch comes from the record. */
    char name[32];
    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof name, "filler%d", i);
        reg(w, name, 4, TES_STORAGE_TABLE);
    }
    k[n++] = (kind_t){reg(w, "large_table", 12, TES_STORAGE_TABLE), 12};
    k[n++] = (kind_t){reg(w, "large_sparse", 8, TES_STORAGE_SPARSE), 8};
    k[n++] = (kind_t){reg(w, "large_tag", 0, TES_STORAGE_TABLE), 0};
    k[n++] = (kind_t){reg_hooked(w, "large_tracked", 8, TES_STORAGE_TABLE, false, true, NULL), 8};
    assert_int_equal(n, KINDS);
    assert_true(k[KINDS - 1].c >= TES__REGISTRY_SMALL_IDS);
}

static void fill(uint8_t *v, uint32_t size, uint8_t seed)
{
    for (uint32_t i = 0; i < size; i++)
        v[i] = (uint8_t)(seed + i);
}

static void assert_value(tes_world_t *w, tes_entity_t e, const kind_t *k, uint8_t seed)
{
    assert_true(tes_has(w, e, k->c));
    if (!k->size)
        return;
    uint8_t want[32];
    fill(want, k->size, seed);
    const void *got = tes_get(w, e, k->c);
    assert_non_null(got);
    assert_memory_equal(got, want, k->size);
}

/* Quiet, then only deferred: set, set again, NULL, add and remove of each
 * kind, with the same outcome as the generic path. */
static void test_every_class_and_dispatch(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    kind_t k[KINDS];
    make_kinds(w, k);
    for (int deferred = 0; deferred < 2; deferred++) {
        tes_entity_t e = tes_spawn(w);
        hooked_sets = 0;
        if (deferred)
            assert_int_equal(tes_defer_begin(w), TES_OK);
        for (uint32_t i = 0; i < KINDS; i++) {
            uint8_t v[32];
            fill(v, k[i].size, (uint8_t)(i * 7 + 1));
            assert_int_equal(tes_set(w, e, k[i].c, k[i].size ? v : NULL), TES_OK);
            fill(v, k[i].size, (uint8_t)(i * 7 + 2));
            assert_int_equal(tes_set(w, e, k[i].c, k[i].size ? v : NULL), TES_OK);
            /* A NULL value is refused for data, in every class. */
            if (k[i].size)
                assert_int_equal(tes_set(w, e, k[i].c, NULL), TES_ERR_INVALID);
            assert_int_equal(tes_add(w, e, k[i].c), TES_OK); /* present: nothing */
            assert_int_equal(tes_has(w, e, k[i].c), !deferred);
        }
        if (deferred) {
            assert_int_equal(tes__world_check(w), TES_OK);
            assert_int_equal(hooked_sets, 0);
            assert_int_equal(tes_defer_end(w), TES_OK);
        }
        assert_int_equal(hooked_sets, 2);
        for (uint32_t i = 0; i < KINDS; i++)
            assert_value(w, e, &k[i], (uint8_t)(i * 7 + 2));
        assert_int_equal(tes__world_check(w), TES_OK);
        if (deferred)
            assert_int_equal(tes_defer_begin(w), TES_OK);
        for (uint32_t i = 0; i < KINDS; i++)
            assert_int_equal(tes_remove(w, e, k[i].c), TES_OK);
        if (deferred) {
            for (uint32_t i = 0; i < KINDS; i++)
                assert_true(tes_has(w, e, k[i].c));
            assert_int_equal(tes_defer_end(w), TES_OK);
        }
        for (uint32_t i = 0; i < KINDS; i++)
            assert_false(tes_has(w, e, k[i].c));
        assert_int_equal(tes__world_check(w), TES_OK);
    }
    /* A stale handle and an unknown id, quiet and deferred. */
    tes_entity_t dead = tes_spawn(w);
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    uint8_t v[32] = {0};
    for (int deferred = 0; deferred < 2; deferred++) {
        if (deferred)
            assert_int_equal(tes_defer_begin(w), TES_OK);
        for (uint32_t i = 0; i < KINDS; i++) {
            assert_int_equal(tes_set(w, dead, k[i].c, v), TES_ERR_STALE);
            assert_int_equal(tes_add(w, dead, k[i].c), TES_ERR_STALE);
            assert_int_equal(tes_remove(w, dead, k[i].c), TES_ERR_STALE);
        }
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, 100000, v), TES_ERR_INVALID);
        assert_int_equal(tes_add(w, e, 100000), TES_ERR_INVALID);
        assert_int_equal(tes_remove(w, e, 100000), TES_ERR_INVALID);
        if (deferred)
            assert_int_equal(tes_defer_end(w), TES_OK);
    }
    assert_int_equal(tes_set(NULL, 1, k[0].c, v), TES_ERR_INVALID);
    assert_int_equal(tes_add(NULL, 1, k[0].c), TES_ERR_INVALID);
    assert_int_equal(tes_remove(NULL, 1, k[0].c), TES_ERR_INVALID);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Busy: inside a hook every structural call of every kind is refused. */
static kind_t busy_kinds[KINDS];
static tes_entity_t busy_entity;
static int busy_refusals;
static void try_all(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    uint8_t v[32] = {0};
    for (uint32_t i = 0; i < KINDS; i++) {
        busy_refusals += tes_set(w, busy_entity, busy_kinds[i].c, v) == TES_ERR_BUSY;
        busy_refusals += tes_add(w, busy_entity, busy_kinds[i].c) == TES_ERR_BUSY;
        busy_refusals += tes_remove(w, busy_entity, busy_kinds[i].c) == TES_ERR_BUSY;
    }
}

static void test_busy_refuses_every_form(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    make_kinds(w, busy_kinds);
    tes_hooks_t hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.on_add = try_all;
    tes_comp_t trigger = reg_hooked(w, "trigger", 4, TES_STORAGE_TABLE, false, false, &hooks);
    busy_entity = tes_spawn(w);
    busy_refusals = 0;
    assert_int_equal(tes_add(w, busy_entity, trigger), TES_OK);
    assert_int_equal(busy_refusals, 3 * KINDS);
    for (uint32_t i = 0; i < KINDS; i++)
        assert_false(tes_has(w, busy_entity, busy_kinds[i].c));
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* ---- the world check sees a stale word or dispatch byte ---------------- */

static void corrupt_and_restore(tes_world_t *w, uint64_t word)
{
    uint64_t saved = tes__quiet_word(w);
    atomic_store_explicit(&w->quiet, word, memory_order_relaxed);
    assert_int_not_equal(tes__world_check(w), TES_OK);
    atomic_store_explicit(&w->quiet, saved, memory_order_relaxed);
    assert_int_equal(tes__world_check(w), TES_OK);
}

static void test_check_sees_stale_word(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", 8, TES_STORAGE_TABLE);
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, a), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Pending bits that no dependent backs. */
    corrupt_and_restore(w, TES__QUIET_DOOMED);
    corrupt_and_restore(w, TES__QUIET_SETTLING);
    /* A bit outside the fields, a refusal nobody knows. */
    corrupt_and_restore(w, UINT64_C(1) << 62);
    corrupt_and_restore(w, (uint64_t)0x80 << TES__QUIET_REFUSE_SHIFT);
    /* A depth below the levels tes_defer_begin opened. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    corrupt_and_restore(w, 1);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    /* A dependent waiting to be released whose bit is clear: a quiet call
     * would then skip the end that releases it. */
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = a;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    assert_int_equal(w->dependent_count, 1);
    void (*saved)(void *) = w->dependents[0].release;
    w->dependents[0].release = w->dependents[0].fini;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->dependents[0].release = saved;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(q);
    /* A dispatch byte out of step with its record. */
    uint8_t byte = w->components.dispatch_of[a];
    assert_int_equal(byte, TES__DISPATCH_TABLE);
    w->components.dispatch_of[a] = TES__DISPATCH_GENERIC;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->components.dispatch_of[a] = byte;
    assert_int_equal(tes__world_check(w), TES_OK);
    /* A record's dispatch out of step with the watchers that hear it (a
     * plain path would tell them nothing), or with its registration. */
    tes__component_t *info = w->components.items[a];
    info->dispatch = TES__DISPATCH_GENERIC;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    info->dispatch = TES__DISPATCH_TABLE;
    info->plain_dispatch = TES__DISPATCH_TRACKED;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    info->plain_dispatch = TES__DISPATCH_TABLE;
    assert_int_equal(tes__world_check(w), TES_OK);
    /* A group hears its components: their dispatch turns generic, and a
     * route count off by one is reported. */
    tes_comp_t s1 = reg(w, "S1", 4, TES_STORAGE_SPARSE), s2 = reg(w, "S2", 4, TES_STORAGE_SPARSE);
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = s1;
    qd.terms[1].comp = s2;
    qd.flags = TES_QUERY_OWNING_GROUP;
    q = tes_query_new(w, &qd);
    assert_non_null(q);
    assert_int_equal(w->components.items[s1]->dispatch, TES__DISPATCH_GENERIC);
    assert_int_equal(tes__world_check(w), TES_OK);
    w->watch_routes[s1]++;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->watch_routes[s1]--;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(q);
    assert_int_equal(w->components.items[s1]->dispatch, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_4);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_word_follows_transitions),
        cmocka_unit_test(test_pending_bit_while_doomed),
        cmocka_unit_test(test_every_class_and_dispatch),
        cmocka_unit_test(test_busy_refuses_every_form),
        cmocka_unit_test(test_check_sees_stale_word),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
