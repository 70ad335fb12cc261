/*
 * The link records' layout and its world check: each parent keeps its
 * last child, siblings' next fields form a ring and their prev fields a
 * plain list. Reparenting a first, middle, last and only child keeps
 * every other child's order and the check green; every broken invariant
 * written into the records by hand is reported by tes__world_check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hierarchy/hierarchy.h"
#include "tessera.h"
#include "world/check.h"

static void expect_children(const tes_world_t *w, tes_entity_t p, const tes_entity_t *want, int32_t n)
{
    tes_entity_t got[16];
    assert_int_equal(tes_children(w, p, got, 16), n);
    for (int32_t i = 0; i < n; i++)
        assert_true(got[i] == want[i]);
    assert_int_equal(tes__world_check(w), TES_OK);
}

static tes__link_t *record(tes_world_t *w, tes_entity_t e)
{
    tes__link_t *l = tes__link(w->hier, tes_entity_index(e));
    assert_non_null(l);
    return l;
}

/* Every position of a ring: the first, a middle, the last and the only
 * child leave; the others keep their order. Both the quick link (a quiet
 * world) and the guarded one (inside tes_defer_begin/end) run. */
static void test_ring_positions(void **state)
{
    (void)state;
    for (int deferred = 0; deferred < 2; deferred++) {
        tes_world_t *w = tes_world_new(NULL);
        tes_entity_t a = tes_spawn(w), b = tes_spawn(w), k[5];
        for (int i = 0; i < 5; i++) {
            k[i] = tes_spawn(w);
            assert_int_equal(tes_set_parent(w, k[i], a), TES_OK);
        }
        expect_children(w, a, k, 5);
        const tes_entity_t *moves[] = {&k[0], &k[2], &k[4]};
        const tes_entity_t left[][4] = {{k[1], k[2], k[3], k[4]}, {k[1], k[3], k[4]}, {k[1], k[3]}};
        const tes_entity_t got[][3] = {{k[0]}, {k[0], k[2]}, {k[0], k[2], k[4]}};
        for (int m = 0; m < 3; m++) {
            if (deferred)
                assert_int_equal(tes_defer_begin(w), TES_OK);
            assert_int_equal(tes_set_parent(w, *moves[m], b), TES_OK);
            if (deferred)
                assert_int_equal(tes_defer_end(w), TES_OK);
            expect_children(w, a, left[m], 4 - m);
            expect_children(w, b, got[m], m + 1);
        }
        /* The same parent again: nothing moves. */
        assert_int_equal(tes_set_parent(w, k[0], b), TES_OK);
        expect_children(w, b, got[2], 3);
        /* Down to one child, then none. */
        assert_int_equal(tes_set_parent(w, k[1], TES_NULL), TES_OK);
        expect_children(w, a, &k[3], 1);
        assert_int_equal(tes_set_parent(w, k[3], b), TES_OK);
        expect_children(w, a, NULL, 0);
        const tes_entity_t all[] = {k[0], k[2], k[4], k[3]};
        expect_children(w, b, all, 4);
        /* A subtree moves under a root and then under a deeper entity. */
        assert_int_equal(tes_set_parent(w, b, a), TES_OK);
        assert_int_equal(tes_set_parent(w, b, k[1]), TES_OK);
        assert_int_equal(tes_depth(w, k[4]), 2);
        assert_int_equal(tes_set_parent(w, k[1], k[4]), TES_ERR_INVALID);
        assert_int_equal(tes__world_check(w), TES_OK);
        /* Destroying a middle child and a last child. */
        assert_int_equal(tes_destroy(w, k[2]), TES_OK);
        assert_int_equal(tes_destroy(w, k[3]), TES_OK);
        const tes_entity_t rest[] = {k[0], k[4]};
        expect_children(w, b, rest, 2);
        tes_world_free(w);
    }
}

/* Writes v over *field, expects the check to fail, and puts it back. */
static void corrupt(tes_world_t *w, uint32_t *field, uint32_t v)
{
    uint32_t saved = *field;
    *field = v;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    *field = saved;
    assert_int_equal(tes__world_check(w), TES_OK);
}

static void test_check_sees_broken_links(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t p = tes_spawn(w), q = tes_spawn(w), k[3], lone = tes_spawn(w);
    for (int i = 0; i < 3; i++) {
        k[i] = tes_spawn(w);
        assert_int_equal(tes_set_parent(w, k[i], p), TES_OK);
    }
    assert_int_equal(tes_set_parent(w, p, q), TES_OK);
    tes_entity_t dead = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, dead, q), TES_OK);
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    assert_int_equal(tes__world_check(w), TES_OK);
    uint32_t p1 = tes_entity_index(p) + 1, q1 = tes_entity_index(q) + 1;
    uint32_t k1[3] = {tes_entity_index(k[0]) + 1, tes_entity_index(k[1]) + 1, tes_entity_index(k[2]) + 1};
    tes__link_t *pl = record(w, p), *ql = record(w, q), *l0 = record(w, k[0]), *l1 = record(w, k[1]),
                *l2 = record(w, k[2]), *ll = record(w, lone), *dl = record(w, dead);
    /* The parent forgets its last child, or names a middle one. */
    corrupt(w, &pl->last, 0);
    corrupt(w, &pl->last, k1[1]);
    /* The ring: the last child's next is not the first; a middle next skips one. */
    corrupt(w, &l2->next, k1[1]);
    corrupt(w, &l0->next, k1[2]);
    /* The plain list: the first child's prev is not 0, a middle one's is wrong. */
    corrupt(w, &l0->prev, k1[2]);
    corrupt(w, &l1->prev, k1[2]);
    /* A child names another parent; a root claims siblings or a parent. */
    corrupt(w, &l1->parent, q1);
    corrupt(w, &ll->next, k1[0]);
    corrupt(w, &ll->parent, p1);
    /* A loop up the chain: q under p while p is under q. */
    corrupt(w, &ql->parent, p1);
    /* A dead entity keeps a link. */
    corrupt(w, &dl->parent, q1);
    /* The count of linked entities. */
    corrupt(w, &w->hier->linked, w->hier->linked + 1);
    tes_world_free(w);
}

/* The prefab rule holds for prefab tables made after the hierarchy's
 * state (a link in a world with no prefab table skips the table reads),
 * and the world check sees a note of prefab tables that lies. */
static void test_prefab_tables_made_later(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t a = tes_spawn(w), b = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, b, a), TES_OK);
    assert_false(w->hier->prefab_tables);
    tes_entity_t pf = tes_prefab_new(w), m = tes_prefab_child(w, pf);
    assert_int_equal(tes_set_parent(w, m, a), TES_ERR_INVALID);
    assert_int_equal(tes_set_parent(w, b, pf), TES_ERR_INVALID);
    assert_true(tes_parent(w, b) == a);
    assert_true(tes_parent(w, m) == TES_NULL);
    assert_true(w->hier->prefab_tables);
    assert_int_equal(tes_set_parent(w, m, pf), TES_OK);
    assert_int_equal(tes_set_parent(w, a, b), TES_ERR_INVALID); /* a cycle */
    assert_int_equal(tes__world_check(w), TES_OK);
    w->hier->prefab_tables = false;
    assert_int_not_equal(tes__world_check(w), TES_OK);
    w->hier->prefab_tables = true;
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_positions),
        cmocka_unit_test(test_check_sees_broken_links),
        cmocka_unit_test(test_prefab_tables_made_later),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
