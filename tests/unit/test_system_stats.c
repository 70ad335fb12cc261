/*
 * What tools read between frames: tes_system_stats (name, matched rows,
 * runs, last and mean time) on one and on several threads, for plain,
 * parallel and structural systems; tes_world_stats' last_frame_ns;
 * tes_systems (the live systems in creation order); and tes_entities
 * (the live entities page by page, in index order, skipping dead slots).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"

typedef struct pos { float x; } pos_t;

/* Enough work per row that a frame takes measurable time. */
static void busy(tes_iter_t *it)
{
    pos_t *p = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        for (int k = 0; k < 50; k++)
            p[i].x = p[i].x * 0.999f + 1.0f;
}

static void nothing(tes_iter_t *it) { (void)it; }

static void stats_on(int32_t threads)
{
    tes_world_desc_t wd = {.threads = threads};
    tes_world_t *w = tes_world_new(&wd);
    tes_component_desc_t cd = {.name = "pos", .size = sizeof(pos_t), .align = _Alignof(pos_t)};
    tes_comp_t c = tes_component(w, &cd);
    tes_comp_t tag_desc = 0;
    {
        tes_component_desc_t td = {.name = "tagged"};
        tag_desc = tes_component(w, &td);
    }
    for (int i = 0; i < 5000; i++) {
        tes_entity_t e = tes_spawn(w);
        assert_int_equal(tes_set(w, e, c, &(pos_t){1}), TES_OK);
        if (i % 5 == 0)
            assert_int_equal(tes_add(w, e, tag_desc), TES_OK);
    }
    tes_system_desc_t a = {.name = "move", .run = busy, .parallel = true};
    a.query.terms[0] = (tes_term_t){.comp = c, .access = TES_INOUT};
    tes_system_desc_t b = {.name = "few", .run = busy, .structural = true};
    b.query.terms[0] = (tes_term_t){.comp = c, .access = TES_INOUT};
    b.query.terms[1] = (tes_term_t){.comp = tag_desc};
    tes_system_desc_t e = {.name = "empty", .run = nothing};
    tes_system_t *sa = tes_system_new(w, &a), *sb = tes_system_new(w, &b), *se = tes_system_new(w, &e);
    assert_non_null(sa);
    assert_non_null(sb);
    assert_non_null(se);

    tes_system_stats_t st;
    assert_int_equal(tes_system_stats(sa, &st), TES_OK);
    assert_string_equal(st.name, "move");
    assert_int_equal(st.runs, 0);
    assert_int_equal(st.mean_ns, 0);
    tes_world_stats_t ws;
    assert_int_equal(tes_world_stats(w, &ws), TES_OK);
    assert_int_equal(ws.last_frame_ns, 0);

    for (int f = 0; f < 4; f++)
        assert_int_equal(tes_progress(w, 0.016f), TES_OK);
    assert_int_equal(tes_system_stats(sa, &st), TES_OK);
    assert_int_equal(st.runs, 4);
    assert_int_equal(st.matched, 5000);
    assert_true(st.last_ns > 0);
    assert_true(st.mean_ns > 0);
    assert_int_equal(tes_system_stats(sb, &st), TES_OK);
    assert_string_equal(st.name, "few");
    assert_int_equal(st.runs, 4);
    assert_int_equal(st.matched, 1000);
    assert_true(st.last_ns > 0);
    assert_int_equal(tes_system_stats(se, &st), TES_OK);
    assert_int_equal(st.runs, 4);
    assert_int_equal(st.matched, 0);
    assert_int_equal(tes_world_stats(w, &ws), TES_OK);
    assert_true(ws.last_frame_ns > 0);

    tes_system_t *list[4] = {0};
    assert_int_equal(tes_systems(w, list, 4), 3);
    assert_ptr_equal(list[0], sa);
    assert_ptr_equal(list[1], sb);
    assert_ptr_equal(list[2], se);
    assert_int_equal(tes_systems(w, NULL, 0), 3);
    assert_int_equal(tes_systems(w, NULL, 1), TES_ERR_INVALID);
    assert_int_equal(tes_systems(w, list, -1), TES_ERR_INVALID);
    tes_system_free(sb);
    assert_int_equal(tes_systems(w, list, 4), 2);
    assert_ptr_equal(list[1], se);
    assert_int_equal(tes_system_stats(NULL, &st), TES_ERR_INVALID);
    assert_int_equal(tes_system_stats(sa, NULL), TES_ERR_INVALID);
    tes_world_free(w);
}

static void system_stats_one_thread(void **state)
{
    (void)state;
    stats_on(1);
}

static void system_stats_three_threads(void **state)
{
    (void)state;
    stats_on(3);
}

static void entities_pages(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t e[10];
    for (int i = 0; i < 10; i++)
        e[i] = tes_spawn(w);
    assert_int_equal(tes_destroy(w, e[0]), TES_OK);
    assert_int_equal(tes_destroy(w, e[4]), TES_OK);
    tes_entity_t out[16];
    assert_int_equal(tes_entities(w, 0, out, 16), 8);
    assert_true(out[0] == e[1]);
    assert_true(out[3] == e[5]);
    assert_int_equal(tes_entities(w, 3, out, 2), 2);
    assert_true(out[0] == e[5]);
    assert_true(out[1] == e[6]);
    assert_int_equal(tes_entities(w, 7, out, 16), 1);
    assert_true(out[0] == e[9]);
    assert_int_equal(tes_entities(w, 8, out, 16), 0);
    assert_int_equal(tes_entities(w, 0, NULL, 0), 0);
    assert_int_equal(tes_entities(w, -1, out, 16), TES_ERR_INVALID);
    assert_int_equal(tes_entities(w, 0, NULL, 3), TES_ERR_INVALID);
    assert_int_equal(tes_entities(w, 0, out, -2), TES_ERR_INVALID);
    assert_int_equal(tes_entities(NULL, 0, out, 16), 0);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(system_stats_one_thread),
        cmocka_unit_test(system_stats_three_threads),
        cmocka_unit_test(entities_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
