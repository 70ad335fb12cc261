/*
 * Systems: what a captured chunk may point at, and what run may call.
 * - Root-walking systems (a query with no AND term walks entities that
 *   have no table component) get their own copies of the chunk handles:
 *   regression for chunks that pointed into the capturing iterator, gone
 *   by the time run was called.
 * - A structural and parallel system: its run calls get fixed blocks of
 *   rows, and a deferred tes_ensure sees only what the same call queued,
 *   so the result is the same on 1, 2, 4 and 8 threads.
 * - The calls run may make or is refused (world free, snapshots, query
 *   new and free, lookup views, freeing a system twice), the same on
 *   every thread count and level size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "world/check.h"

static const int32_t thread_counts[] = {1, 2, 4, 8};
#define NCOUNTS (sizeof thread_counts / sizeof thread_counts[0])

static tes_comp_t comp(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    tes_comp_t c = tes_component(w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

/* ---- root-walking systems --------------------------------------------- */

enum { ROOTS = 20, TABLED = 3000 };

typedef struct seen {
    tes_entity_t want[ROOTS + TABLED];
    int32_t wanted;
    atomic_int hits[ROOTS + TABLED];
    atomic_int bad;   /* a handle no entity of the world has */
    atomic_int calls;
} seen_t;

static void note_rows(tes_iter_t *it)
{
    seen_t *s = it->ctx;
    atomic_fetch_add(&s->calls, 1);
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t e = it->entities[i];
        int32_t k = 0;
        while (k < s->wanted && s->want[k] != e)
            k++;
        if (k == s->wanted || !tes_alive(it->world, e))
            atomic_fetch_add(&s->bad, 1);
        else
            atomic_fetch_add(&s->hits[k], 1);
    }
}

/* Each system below walks ROOTS entities with no component at all (and,
 * with `tabled`, TABLED entities with a table component too): run must
 * see each exactly once per frame, as live handles. The root runs come in
 * chunks of at most TES_ITER_SCRATCH, so several chunks are captured. */
static void root_walk_case(int32_t threads, bool parallel, bool structural, bool tabled)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    assert_non_null(w);
    tes_comp_t tag = comp(w, "Tag", 0, TES_STORAGE_TABLE);
    tes_comp_t other = comp(w, "Other", 4, TES_STORAGE_TABLE);
    seen_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    for (int32_t i = 0; i < ROOTS; i++)
        s->want[s->wanted++] = tes_spawn(w);
    for (int32_t i = 0; tabled && i < TABLED; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, other, &i), TES_OK);
        s->want[s->wanted++] = e;
    }
    tes_entity_t hidden = tes_spawn(w); /* has Tag: not matched */
    assert_int_equal(tes_add(w, hidden, tag), TES_OK);
    assert_non_null(tes_system_new(
        w, &(tes_system_desc_t){.name = "roots", .query = {.terms = {{tag, TES_NOT}}},
                                .run = note_rows, .ctx = s, .parallel = parallel,
                                .structural = structural}));
    for (int frame = 1; frame <= 3; frame++) {
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&s->bad), 0);
        for (int32_t k = 0; k < s->wanted; k++)
            assert_int_equal(atomic_load(&s->hits[k]), frame);
    }
    assert_true(atomic_load(&s->calls) >= 3 * (ROOTS / 8 + 1)); /* several root chunks */
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
    free(s);
}

static void test_root_walking_system_sees_live_handles(void **state)
{
    (void)state;
    for (size_t k = 0; k < NCOUNTS; k++) {
        int32_t n = thread_counts[k];
        root_walk_case(n, false, false, false);
        root_walk_case(n, true, false, false);
        root_walk_case(n, true, true, false);
        root_walk_case(n, false, true, false);
        root_walk_case(n, true, false, true);
        root_walk_case(n, true, true, true);
    }
}

/* Two root-walking systems of one level: each chunk of each keeps its own
 * handles (they once all pointed at one dead iterator's array). */
static void test_root_chunks_do_not_alias(void **state)
{
    (void)state;
    for (size_t k = 0; k < NCOUNTS; k++) {
        tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = thread_counts[k]});
        tes_comp_t a = comp(w, "A", 0, TES_STORAGE_TABLE);
        tes_comp_t b = comp(w, "B", 4, TES_STORAGE_SPARSE);
        seen_t *s1 = calloc(1, sizeof *s1), *s2 = calloc(1, sizeof *s2);
        assert_non_null(s1);
        assert_non_null(s2);
        for (int32_t i = 0; i < ROOTS; i++) {
            tes_entity_t e = tes_spawn(w);
            s1->want[s1->wanted++] = e;
            if (i % 3 == 0) { /* sparse components keep an entity a root */
                assert_int_equal(tes_set(w, e, b, &i), TES_OK);
                s2->want[s2->wanted++] = e;
            }
        }
        assert_non_null(tes_system_new(w, &(tes_system_desc_t){
                                              .name = "s1", .query = {.terms = {{a, TES_NOT}}},
                                              .run = note_rows, .ctx = s1, .parallel = true}));
        assert_non_null(tes_system_new(
            w, &(tes_system_desc_t){.name = "s2",
                                    .query = {.terms = {{a, TES_NOT}, {b, TES_OPTIONAL, TES_IN}}},
                                    .run = note_rows, .ctx = s2, .parallel = true}));
        assert_int_equal(tes_progress(w, 0), TES_OK);
        assert_int_equal(atomic_load(&s1->bad), 0);
        for (int32_t i = 0; i < s1->wanted; i++)
            assert_int_equal(atomic_load(&s1->hits[i]), 1);
        /* s2 matches every root too (B is optional); its B entities once. */
        assert_int_equal(atomic_load(&s2->bad), ROOTS - s2->wanted);
        for (int32_t i = 0; i < s2->wanted; i++)
            assert_int_equal(atomic_load(&s2->hits[i]), 1);
        tes_world_free(w);
        free(s1);
        free(s2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_walking_system_sees_live_handles),
        cmocka_unit_test(test_root_chunks_do_not_alias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
