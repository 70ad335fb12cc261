/*
 * The quiet sparse forms made for one store shape. A hook-free sparse
 * component that is not stable and whose values have 0, 4, 8, 12 or 16
 * bytes gets, at registration, a dispatch naming that shape, and its quiet
 * tes_add, tes_set and tes_remove run code compiled for the size; every
 * other sparse component (stable, other sizes) keeps the general form.
 * These tests check which form each component gets, and that every form
 * keeps values, handles and the store's invariants exactly as the general
 * one does: across sparse pages (4096 entities) and data pages (16384
 * values of 4 bytes), through the slow routes (a sparse page not yet made,
 * a full packed array, a new data page), for present and absent
 * components, stale handles, and while a group watches the component (the
 * generic path then, and the shape's form again after).
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

typedef struct {
    const char *name;
    size_t size;
    bool stable;
    uint8_t dispatch; /* the plain dispatch registration must choose */
} shape_case_t;

static const shape_case_t cases[] = {
    {"tag", 0, false, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_TAG},
    {"s4", 4, false, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_4},
    {"s8", 8, false, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_8},
    {"s12", 12, false, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_12},
    {"s16", 16, false, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_16},
    {"s20", 20, false, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_ANY},
    {"st4", 4, true, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_ANY},
    {"st0", 0, true, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_ANY},
};
#define NCASES (sizeof cases / sizeof cases[0])

static tes_comp_t reg_case(tes_world_t *w, const shape_case_t *sc)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = sc->name;
    d.size = sc->size;
    d.align = sc->size == 12 || sc->size == 20 ? 4 : 0;
    d.storage = TES_STORAGE_SPARSE;
    d.stable = sc->stable;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

static const tes__component_t *record(const tes_world_t *w, tes_comp_t c)
{
    const tes__component_t *info = tes__registry_get(&w->components, c);
    assert_non_null(info);
    return info;
}

/* The value entity i holds in round `round` (never all zero). */
static void pattern(uint8_t *out, size_t size, uint32_t i, uint32_t round)
{
    for (size_t b = 0; b < size; b++)
        out[b] = (uint8_t)(i * 13u + round * 101u + b * 7u + 1u);
}

static void assert_value(const tes_world_t *w, tes_entity_t e, tes_comp_t c, size_t size,
                         bool has, bool zero, uint32_t i, uint32_t round)
{
    assert_int_equal(tes_has(w, e, c), has);
    const void *p = tes_get(w, e, c);
    if (!has || !size) {
        assert_null(p);
        return;
    }
    assert_non_null(p);
    uint8_t want[32];
    if (zero)
        memset(want, 0, size);
    else
        pattern(want, size, i, round);
    assert_memory_equal(p, want, size);
}

/* Registration chooses the form: the shape for plain non-stable stores of
 * the listed sizes, the general form for the rest and for hooked ones. */
static void test_registration_chooses_shape(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    for (size_t k = 0; k < NCASES; k++) {
        const tes__component_t *info = record(w, reg_case(w, &cases[k]));
        assert_int_equal(info->plain_dispatch, cases[k].dispatch);
        assert_int_equal(info->dispatch, cases[k].dispatch);
    }
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "table4";
    d.size = 4;
    assert_int_equal(record(w, tes_component(w, &d))->plain_dispatch, TES__DISPATCH_TABLE);
    for (uint32_t size = 0; size <= 64; size++) {
        uint8_t shape = tes__sparse_shape(size, false);
        bool fixed = size == 0 || size == 4 || size == 8 || size == 12 || size == 16;
        assert_int_equal(shape != TES__SPARSE_SHAPE_ANY, fixed);
        assert_int_equal(tes__sparse_shape(size, true), TES__SPARSE_SHAPE_ANY);
        /* The constant page shift the shapes use is the store's. */
        tes__sparse_store_t st;
        tes__sparse_store_init(&st, size, false);
        assert_int_equal(st.page_shift, tes__sparse_store_shift_for(size));
        assert_int_equal(st.page_mask, (UINT32_C(1) << st.page_shift) - 1);
        assert_true(!size || (size_t)(st.page_mask + 1) * size <= TES__STORE_PAGE_BYTES);
        assert_true(!size || (size_t)(st.page_mask + 1) * 2 * size > TES__STORE_PAGE_BYTES);
    }
    tes_world_free(w);
}

/* Every form over many entities: added in descending index order (the high
 * sparse pages first), half with tes_set and half with tes_add (zeroed);
 * then set again while present, a third removed, re-added, and a random
 * churn checked against a shadow; stale handles refused. */
static void test_shapes_keep_values(void **state)
{
    (void)state;
    enum { N = 17000 }; /* past a sparse page and a 4-byte data page */
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t ids[NCASES];
    for (size_t k = 0; k < NCASES; k++)
        ids[k] = reg_case(w, &cases[k]);
    static tes_entity_t es[N];
    static bool has[NCASES][N], zero[NCASES][N];
    static uint32_t round_of[NCASES][N];
    assert_int_equal(tes_spawn_n(w, N, NULL, 0, es), TES_OK);
    uint8_t buf[32];
    for (size_t k = 0; k < NCASES; k++) {
        tes_comp_t c = ids[k];
        size_t size = cases[k].size;
        for (int i = N - 1; i >= 0; i--) {
            if (i % 2 || !size) {
                assert_int_equal(tes_add(w, es[i], c), TES_OK);
                zero[k][i] = true;
            } else {
                pattern(buf, size, (uint32_t)i, 0);
                assert_int_equal(tes_set(w, es[i], c, buf), TES_OK);
                zero[k][i] = false;
            }
            has[k][i] = true;
            round_of[k][i] = 0;
        }
        assert_int_equal(record(w, c)->store.set.count, N);
        /* Present: tes_add changes nothing, tes_set assigns. */
        for (int i = 0; i < N; i += 5) {
            assert_int_equal(tes_add(w, es[i], c), TES_OK);
            if (size) {
                pattern(buf, size, (uint32_t)i, 1);
                assert_int_equal(tes_set(w, es[i], c, buf), TES_OK);
                zero[k][i] = false;
                round_of[k][i] = 1;
            }
        }
        for (int i = 0; i < N; i += 3) {
            assert_int_equal(tes_remove(w, es[i], c), TES_OK);
            assert_int_equal(tes_remove(w, es[i], c), TES_OK); /* absent: nothing */
            has[k][i] = false;
        }
        for (int i = 0; i < N; i++)
            assert_value(w, es[i], c, size, has[k][i], zero[k][i], (uint32_t)i, round_of[k][i]);
    }
    uint64_t r = 777;
    for (int step = 0; step < 60000; step++) {
        r = r * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        size_t k = (size_t)((r >> 60) % NCASES);
        int i = (int)((r >> 33) % N);
        size_t size = cases[k].size;
        if (has[k][i]) {
            assert_int_equal(tes_remove(w, es[i], ids[k]), TES_OK);
            has[k][i] = false;
        } else if (step % 2 && size) {
            pattern(buf, size, (uint32_t)i, (uint32_t)step);
            assert_int_equal(tes_set(w, es[i], ids[k], buf), TES_OK);
            has[k][i] = true;
            zero[k][i] = false;
            round_of[k][i] = (uint32_t)step;
        } else {
            assert_int_equal(tes_add(w, es[i], ids[k]), TES_OK);
            has[k][i] = true;
            zero[k][i] = true;
        }
    }
    for (size_t k = 0; k < NCASES; k++)
        for (int i = 0; i < N; i++)
            assert_value(w, es[i], ids[k], cases[k].size, has[k][i], zero[k][i], (uint32_t)i,
                         round_of[k][i]);
    assert_int_equal(tes__world_check(w), TES_OK);
    /* Stale and forged handles: refused, nothing changes. */
    tes_entity_t dead = es[7];
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    tes_entity_t forged = tes_entity_make(tes_entity_index(dead), tes_entity_generation(dead) + 1);
    tes_entity_t beyond = tes_entity_make(N + 5000, 1);
    for (size_t k = 0; k < NCASES; k++) {
        uint32_t count = record(w, ids[k])->store.set.count;
        tes_entity_t bad[3] = {dead, forged, beyond};
        for (int b = 0; b < 3; b++) {
            assert_int_equal(tes_add(w, bad[b], ids[k]), TES_ERR_STALE);
            assert_int_equal(tes_remove(w, bad[b], ids[k]), TES_ERR_STALE);
            if (cases[k].size) {
                memset(buf, 1, sizeof buf);
                assert_int_equal(tes_set(w, bad[b], ids[k], buf), TES_ERR_STALE);
            }
            assert_int_equal(tes_last_error(w), TES_ERR_STALE);
        }
        assert_int_equal(record(w, ids[k])->store.set.count, count);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* While an owning group watches a shaped component its calls take the
 * generic path (the group sees every change); when the group goes, the
 * shape's form is back, and both agree on the values. */
static void test_shape_follows_watchers(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t c = reg_case(w, &cases[1]); /* s4 */
    tes_comp_t other = reg_case(w, &cases[4]); /* s16 */
    enum { N = 200 };
    tes_entity_t es[N];
    assert_int_equal(tes_spawn_n(w, N, NULL, 0, es), TES_OK);
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = c;
    qd.terms[1].comp = other;
    qd.flags = TES_QUERY_OWNING_GROUP;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    assert_int_equal(record(w, c)->dispatch, TES__DISPATCH_GENERIC);
    uint8_t buf[16];
    for (int i = 0; i < N; i++) {
        pattern(buf, 4, (uint32_t)i, 0);
        assert_int_equal(tes_set(w, es[i], c, buf), TES_OK);
        if (i % 2) {
            pattern(buf, 16, (uint32_t)i, 0);
            assert_int_equal(tes_set(w, es[i], other, buf), TES_OK);
        }
    }
    assert_int_equal(tes_query_count(q), N / 2);
    tes_query_free(q);
    assert_int_equal(record(w, c)->dispatch, TES__DISPATCH_SPARSE + TES__SPARSE_SHAPE_4);
    for (int i = 0; i < N; i += 4)
        assert_int_equal(tes_remove(w, es[i], c), TES_OK);
    for (int i = 0; i < N; i++) {
        assert_value(w, es[i], c, 4, i % 4 != 0, false, (uint32_t)i, 0);
        assert_value(w, es[i], other, 16, i % 2 != 0, false, (uint32_t)i, 0);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registration_chooses_shape),
        cmocka_unit_test(test_shapes_keep_values),
        cmocka_unit_test(test_shape_follows_watchers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
