/*
 * Wide entities: more components than the stack buffers of tes_spawn_n and
 * the table graph hold (32), so the heap-buffer paths run: a batch with 40
 * components (table and sparse mixed), adds and removes on a 40-component
 * type, and a duplicate among 40 ids rejected without creating anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "tessera.h"
#include "world/check.h"

enum { WIDE = 40 };

static void register_wide(tes_world_t *w, tes_comp_t *ids)
{
    for (int i = 0; i < WIDE; i++) {
        char name[16];
        snprintf(name, sizeof name, "W%d", i);
        tes_component_desc_t d = {.name = name, .size = 4,
                                  .storage = i % 4 == 3 ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE};
        ids[i] = tes_component(w, &d);
        assert_int_not_equal(ids[i], 0);
    }
}

static void test_spawn_n_wide(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t ids[WIDE];
    register_wide(w, ids);
    tes_entity_t out[10];
    assert_int_equal(tes_spawn_n(w, 10, ids, WIDE, out), TES_OK);
    for (int k = 0; k < 10; k++) {
        assert_int_equal(tes_components_of(w, out[k], NULL, 0), WIDE);
        for (int i = 0; i < WIDE; i++)
            assert_int_equal(*(const int *)tes_get(w, out[k], ids[i]), 0);
    }
    /* A duplicate among many ids: invalid, nothing created. */
    tes_comp_t dup[WIDE];
    for (int i = 0; i < WIDE; i++)
        dup[i] = ids[i];
    dup[WIDE - 1] = ids[0];
    assert_int_equal(tes_spawn_n(w, 3, dup, WIDE, out), TES_ERR_INVALID);
    assert_int_equal(tes_entity_count(w), 10);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_add_remove_on_wide_type(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t ids[WIDE];
    register_wide(w, ids);
    tes_entity_t e = tes_spawn(w);
    for (int i = 0; i < WIDE; i++) {
        int v = i * 3;
        assert_int_equal(tes_set(w, e, ids[i], &v), TES_OK);
    }
    for (int i = 0; i < WIDE; i += 2)
        assert_int_equal(tes_remove(w, e, ids[i]), TES_OK);
    assert_int_equal(tes_components_of(w, e, NULL, 0), WIDE / 2);
    for (int i = 1; i < WIDE; i += 2)
        assert_int_equal(*(const int *)tes_get(w, e, ids[i]), i * 3);
    tes_entity_t copy = tes_clone(w, e);
    assert_int_equal(tes_components_of(w, copy, NULL, 0), WIDE / 2);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spawn_n_wide),
        cmocka_unit_test(test_add_remove_on_wide_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
