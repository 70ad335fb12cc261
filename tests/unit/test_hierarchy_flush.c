/*
 * Links the flush makes on its own: a deferred clone joins its source's
 * parent and a deferred instantiation links its copies when the flush
 * applies them, after tes_set_name (applied at once) may have named the
 * new entities. Those links follow the sibling-name rule like a deferred
 * tes_set_parent: one that would repeat a sibling's name is not made (the
 * entity stays a root, keeping its name) and tes_defer_end reports
 * TES_ERR_INVALID with a detail; a copy named while pending keeps the name
 * it was given (given after the instantiation, it wins over the member's).
 * Found by the differential fuzzer: the flush linked such entities without
 * moving their names, which broke the name maps (an invariant failure when
 * the entity died).
 *
 * Every test ends with tes__world_check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "world/check.h"

static void test_deferred_clone_named_while_pending(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t p = tes_spawn(w), a = tes_spawn(w), e = tes_spawn(w);
    assert_int_equal(tes_set_name(w, p, "p"), TES_OK);
    assert_int_equal(tes_set_parent(w, a, p), TES_OK);
    assert_int_equal(tes_set_name(w, a, "a"), TES_OK);
    assert_int_equal(tes_set_parent(w, e, p), TES_OK);

    /* A name no sibling has: the clone joins p with it. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t c1 = tes_clone(w, e);
    assert_int_equal(tes_set_name(w, c1, "z"), TES_OK); /* a root until the flush */
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_parent(w, c1) == p);
    assert_true(tes_lookup_path(w, "p/z") == c1);
    assert_true(tes_lookup_path(w, "z") == TES_NULL);
    assert_int_equal(tes__world_check(w), 0);

    /* A's name: the link is not made, the flush says why. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t c2 = tes_clone(w, e);
    assert_int_equal(tes_set_name(w, c2, "a"), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_true(strstr(tes_last_error_detail(w), "\"a\"") != NULL);
    assert_true(tes_parent(w, c2) == TES_NULL);
    assert_string_equal(tes_name(w, c2), "a");
    assert_true(tes_lookup_path(w, "a") == c2);
    assert_true(tes_lookup_path(w, "p/a") == a);
    tes_entity_t kids[4];
    assert_int_equal(tes_children(w, p, kids, 4), 3);
    assert_true(kids[0] == a && kids[1] == e && kids[2] == c1);
    assert_int_equal(tes__world_check(w), 0);

    /* Their names go with them. */
    assert_int_equal(tes_destroy(w, p), TES_OK);
    assert_int_equal(tes_destroy(w, c2), TES_OK);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_deferred_instance_named_while_pending(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t pf = tes_prefab_new(w);
    tes_entity_t ta = tes_prefab_child(w, pf), tb = tes_prefab_child(w, pf);
    assert_int_equal(tes_set_parent(w, ta, pf), TES_OK);
    assert_int_equal(tes_set_parent(w, tb, pf), TES_OK);
    assert_int_equal(tes_set_name(w, ta, "t"), TES_OK);
    assert_int_equal(tes_set_name(w, tb, "u"), TES_OK);

    /* Names given while pending win over the members'. */
    tes_entity_t e[3];
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_true(tes_instantiate(w, pf, e, 3) != 0);
    assert_int_equal(tes_set_name(w, e[1], "mine"), TES_OK);
    assert_int_equal(tes_set_name(w, e[2], "t"), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_parent(w, e[1]) == e[0] && tes_parent(w, e[2]) == e[0]);
    assert_string_equal(tes_name(w, e[1]), "mine");
    assert_string_equal(tes_name(w, e[2]), "t");
    assert_int_equal(tes_set_name(w, e[0], "i0"), TES_OK);
    assert_true(tes_lookup_path(w, "i0/t") == e[2]);
    assert_true(tes_lookup_path(w, "i0/mine") == e[1]);
    assert_int_equal(tes__world_check(w), 0);

    /* A clash with a sibling copy's member name: that link is not made. */
    tes_entity_t f[3];
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_instance_t inst = tes_instantiate(w, pf, f, 3);
    assert_true(inst != 0);
    assert_int_equal(tes_set_name(w, f[2], "t"), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_true(tes_last_error_detail(w)[0] != '\0');
    assert_true(tes_parent(w, f[1]) == f[0]);
    assert_string_equal(tes_name(w, f[1]), "t");
    assert_true(tes_parent(w, f[2]) == TES_NULL);
    assert_string_equal(tes_name(w, f[2]), "t");
    assert_true(tes_lookup_path(w, "t") == f[2]);
    assert_int_equal(tes__world_check(w), 0);

    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    assert_int_equal(tes_destroy(w, e[0]), TES_OK);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* A by-depth query whose matched tables include one never filled (the
 * flush makes the table of {A} on its way to {A, B}, and no entity ever
 * lives there): remembering the order copied the entities of every
 * matched table, with memcpy from that table's NULL entity array (count
 * 0), which is undefined behaviour (make sanitize reports it). Found by
 * the differential fuzzer. */
typedef struct val {
    float x;
} val_t;

static void test_cascade_query_over_a_table_never_filled(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = tes_component(w, &(tes_component_desc_t){.name = "A", .size = sizeof(val_t),
                                                            .align = _Alignof(val_t)});
    tes_comp_t b = tes_component(w, &(tes_component_desc_t){.name = "B", .size = sizeof(val_t),
                                                            .align = _Alignof(val_t)});
    tes_entity_t p = tes_spawn(w), e = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, e, p), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    for (int i = 0; i < 2; i++) {
        tes_entity_t x = i ? e : p;
        assert_int_equal(tes_add(w, x, a), TES_OK);
        assert_int_equal(tes_add(w, x, b), TES_OK);
    }
    assert_int_equal(tes_defer_end(w), TES_OK);
    tes_query_desc_t d = {.terms = {{.comp = a}}, .flags = TES_QUERY_CASCADE};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    for (int round = 0; round < 2; round++) { /* the second keeps the order */
        tes_iter_t it = tes_query_iter(q);
        int32_t seen = 0, depth = 0;
        while (tes_iter_next(&it)) {
            assert_true(it.depth >= depth);
            depth = it.depth;
            for (int32_t i = 0; i < it.count; i++)
                assert_true(it.entities[i] == (it.depth ? e : p));
            seen += it.count;
        }
        assert_int_equal(seen, 2);
    }
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deferred_clone_named_while_pending),
        cmocka_unit_test(test_deferred_instance_named_while_pending),
        cmocka_unit_test(test_cascade_query_over_a_table_never_filled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
