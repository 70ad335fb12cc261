/*
 * The quiet single-entity moves and the quiet cached tes_spawn_with: an
 * entity taking its table's cached add edge (a plain one, into a table
 * with room) moves as bytes, and when it is its table's last row (a fresh
 * entity built up one component at a time always is) the source just
 * loses its last row: no hole to fill, no other entity's slot touched. A
 * repeated hook-free bundle places the entity and copies its values as
 * bytes. These tests pin down that every observable result is the one
 * the generic path gives:
 * - the small copies (every size up to 64 bytes, copied and zeroed
 *   exactly, the neighbouring bytes untouched);
 * - a move of the last row and of a middle row (the other entities'
 *   addresses: all kept, or only the hole filler's changed);
 * - a long mixed run against a twin world whose components have an
 *   observer (so every call there takes the generic path): the same
 *   values, the same table order;
 * - tes_add's zeroed cell in a recycled row, a value read from the row the
 *   move leaves, tags (no column for the edge's component), removals;
 * - tes_spawn_with of a hook-free bundle: values, zeroes, a value inside
 *   the destination table (with room, and when it must grow), the same
 *   results with a watcher present (the non-quiet path).
 * Each test checks the full world invariant.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/bytes.h"
#include "tessera.h"
#include "world/check.h"

#include "unit/vec3.h"

static void noop_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
}

/* Registers a table component; `observed` gives it an on_set observer,
 * which sends every single-entity call on it down the generic path. */
static tes_comp_t reg(tes_world_t *w, const char *name, size_t size, bool observed)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.align = size % 4 == 0 && size ? 4 : size ? 1 : 0;
    if (observed)
        d.hooks.on_set = noop_on_set;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

/* Addresses are kept in ordinary builds; a TES_DEBUG build moves every
 * table a row enters or leaves to fresh memory (so that a kept pointer is
 * caught), and there only the values can be compared. */
#ifdef TES_DEBUG
#define assert_same_address(a, b) ((void)(a), (void)(b))
#else
#define assert_same_address(a, b) assert_ptr_equal(a, b)
#endif

/* Checks the world invariant, then frees the world. */
static void check_and_free(tes_world_t *w)
{
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

/* Spawns n entities with A = B = vec(base + i) into out. */
static void spawn_ab(tes_world_t *w, tes_comp_t a, tes_comp_t b, int n, float base,
                     tes_entity_t *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = tes_spawn(w);
        vec3_t v = vec(base + (float)i);
        assert_int_equal(tes_set(w, out[i], a, &v), TES_OK);
        assert_int_equal(tes_set(w, out[i], b, &v), TES_OK);
    }
}

/* ------------------------------------------------------------------------ */

/* tes__copy_small and tes__zero_small against memcpy and memset for every
 * size they take, at odd offsets, with guard bytes on both sides. */
static void test_small_copies_every_size(void **state)
{
    (void)state;
    unsigned char src[TES__SMALL_BYTES + 16], dst[TES__SMALL_BYTES + 32],
        want[TES__SMALL_BYTES + 32];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 37u + 11u);
    for (size_t size = 0; size <= TES__SMALL_BYTES; size++) {
        for (size_t off = 0; off < 4; off++) {
            memset(dst, 0xA5, sizeof dst);
            memcpy(want, dst, sizeof want);
            memcpy(want + 8 + off, src + off, size);
            tes__copy_small(dst + 8 + off, src + off, size);
            assert_memory_equal(dst, want, sizeof dst);
            memset(want + 8 + off, 0, size);
            tes__zero_small(dst + 8 + off, size);
            assert_memory_equal(dst, want, sizeof dst);
        }
    }
    for (size_t i = 0; i < TES__SMALL_BYTES; i++)
        assert_int_equal(tes__zero_cell[i], 0);
}

/* A world where {A, B} has room for 32 more rows (tables never shrink) and
 * the edge {A} -> {A, B} is cached; es[0..7] in {A} (A = i), es[7] last;
 * before[i] is es[i]'s A as the tests start. */
typedef struct {
    tes_world_t *w;
    tes_comp_t a, b;
    tes_entity_t es[8];
    const void *before[8];
} rows_t;

static void rows_open(rows_t *r)
{
    tes_world_t *w = r->w = tes_world_new(NULL);
    r->a = reg(w, "A", sizeof(vec3_t), false);
    r->b = reg(w, "B", sizeof(vec3_t), false);
    tes_entity_t tmp[32];
    spawn_ab(w, r->a, r->b, 32, 100.0f, tmp);
    for (int i = 0; i < 32; i++)
        assert_int_equal(tes_destroy(w, tmp[i]), TES_OK);
    for (int i = 0; i < 8; i++) {
        r->es[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        assert_int_equal(tes_set(w, r->es[i], r->a, &v), TES_OK);
    }
    for (int i = 0; i < 8; i++)
        r->before[i] = tes_get(w, r->es[i], r->a);
}

/* The last row moves out: every other entity keeps its address. */
static void test_last_row_move_keeps_other_addresses(void **state)
{
    (void)state;
    rows_t r;
    rows_open(&r);
    for (int k = 7; k >= 4; k--) { /* each time the last row of {A} */
        vec3_t v = vec(50.0f + (float)k);
        assert_int_equal(tes_set(r.w, r.es[k], r.b, &v), TES_OK);
        /* Right after the call, e's own cells are where tes_get says. */
        assert_vec(tes_get(r.w, r.es[k], r.a), (float)k);
        assert_vec(tes_get(r.w, r.es[k], r.b), 50.0f + (float)k);
        for (int i = 0; i < k; i++) {
            assert_same_address(tes_get(r.w, r.es[i], r.a), r.before[i]);
            assert_vec(tes_get(r.w, r.es[i], r.a), (float)i);
        }
        /* The ones moved before stay put in {A, B}, which had room. */
        for (int i = k + 1; i < 8; i++) {
            assert_vec(tes_get(r.w, r.es[i], r.a), (float)i);
            assert_vec(tes_get(r.w, r.es[i], r.b), 50.0f + (float)i);
        }
        assert_int_equal(tes__world_check(r.w), TES_OK);
    }
    check_and_free(r.w);
}

/* A middle row moves out: the last row fills its hole, and only that
 * entity's address changes. */
static void test_middle_row_move_fills_hole(void **state)
{
    (void)state;
    rows_t r;
    rows_open(&r);
    vec3_t v = vec(70.0f);
    assert_int_equal(tes_set(r.w, r.es[2], r.b, &v), TES_OK);
    assert_vec(tes_get(r.w, r.es[2], r.a), 2.0f);
    assert_vec(tes_get(r.w, r.es[2], r.b), 70.0f);
    assert_same_address(tes_get(r.w, r.es[7], r.a), r.before[2]); /* the hole's filler */
    assert_vec(tes_get(r.w, r.es[7], r.a), 7.0f);
    for (int i = 0; i < 7; i++)
        if (i != 2)
            assert_same_address(tes_get(r.w, r.es[i], r.a), r.before[i]);
    /* Then the last row again (es[6]), then the first (es[0]). */
    assert_int_equal(tes_set(r.w, r.es[6], r.b, &v), TES_OK);
    assert_int_equal(tes_set(r.w, r.es[0], r.b, &v), TES_OK);
    for (int i = 0; i < 8; i++)
        assert_vec(tes_get(r.w, r.es[i], r.a), (float)i);
    check_and_free(r.w);
}

/* ------------------------------------------------------------------------ */
/* Twin worlds: the same calls on plain components (quiet paths) and on
 * observed ones (generic paths) leave the same worlds. */

enum { NCOMP = 6, NENT = 400 };
static const size_t sizes[NCOMP] = {12, 12, 4, 0, 7, 40};

typedef struct {
    tes_world_t *w;
    tes_comp_t ids[NCOMP];
} twin_t;

static void twin_init(twin_t *t, bool observed)
{
    static const char *const names[NCOMP] = {"A", "B", "C", "T", "D7", "E40"};
    t->w = tes_world_new(NULL);
    assert_non_null(t->w);
    for (int k = 0; k < NCOMP; k++)
        t->ids[k] = reg(t->w, names[k], sizes[k], observed);
}

static void fill(unsigned char *out, size_t size, uint32_t seed)
{
    for (size_t i = 0; i < size; i++)
        out[i] = (unsigned char)(seed * 131u + i * 7u + 1u);
}

/* One call on both worlds; both must agree on the status. */
static void twin_set(twin_t *q, twin_t *g, tes_entity_t e, int k, uint32_t seed, bool add)
{
    unsigned char v[64];
    fill(v, sizes[k], seed);
    int rq = add ? tes_add(q->w, e, q->ids[k]) : tes_set(q->w, e, q->ids[k], v);
    int rg = add ? tes_add(g->w, e, g->ids[k]) : tes_set(g->w, e, g->ids[k], v);
    assert_int_equal(rq, rg);
}

static void twin_compare(twin_t *q, twin_t *g, const tes_entity_t *es, int n)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(tes_alive(q->w, es[i]), tes_alive(g->w, es[i]));
        for (int k = 0; k < NCOMP; k++) {
            assert_int_equal(tes_has(q->w, es[i], q->ids[k]), tes_has(g->w, es[i], g->ids[k]));
            const void *pq = tes_get(q->w, es[i], q->ids[k]);
            const void *pg = tes_get(g->w, es[i], g->ids[k]);
            assert_int_equal(pq != NULL, pg != NULL);
            if (pq)
                assert_memory_equal(pq, pg, sizes[k]);
        }
    }
    /* The same tables in the same order: every query walk agrees. */
    for (int k = 0; k < NCOMP; k++) {
        tes_query_desc_t dq = {.terms = {{.comp = q->ids[k], .oper = TES_AND, .access = TES_IN}}};
        tes_query_desc_t dg = {.terms = {{.comp = g->ids[k], .oper = TES_AND, .access = TES_IN}}};
        tes_query_t *qq = tes_query_new(q->w, &dq);
        tes_query_t *qg = tes_query_new(g->w, &dg);
        assert_non_null(qq);
        assert_non_null(qg);
        tes_iter_t iq = tes_query_iter(qq), ig = tes_query_iter(qg);
        for (;;) {
            bool mq = tes_iter_next(&iq), mg = tes_iter_next(&ig);
            assert_int_equal(mq, mg);
            if (!mq)
                break;
            assert_int_equal(iq.count, ig.count);
            assert_memory_equal(iq.entities, ig.entities, (size_t)iq.count * sizeof(tes_entity_t));
        }
        tes_query_free(qq);
        tes_query_free(qg);
    }
    assert_int_equal(tes__world_check(q->w), TES_OK);
    assert_int_equal(tes__world_check(g->w), TES_OK);
}

static void test_twin_worlds_agree(void **state)
{
    (void)state;
    twin_t q, g;
    twin_init(&q, false);
    twin_init(&g, true);
    static tes_entity_t es[NENT];
    int n = 0;
    /* A few fixed build-up orders, tags and odd sizes included. */
    static const int orders[4][4] = {{0, 1, 2, -1}, {0, 3, 1, 2}, {4, 5, 0, -1}, {3, 4, -1, -1}};
    uint32_t rng = 12345u;
    for (int step = 0; step < 3000; step++) {
        rng = rng * 1103515245u + 12345u;
        uint32_t r = (rng >> 16) % 100u;
        if (r < 35 && n < NENT) {
            /* Spawn and build up: a last row at every step. */
            tes_entity_t e = tes_spawn(q.w);
            assert_true(e == tes_spawn(g.w));
            es[n++] = e;
            const int *order = orders[(rng >> 8) % 4u];
            for (int i = 0; i < 4 && order[i] >= 0; i++)
                twin_set(&q, &g, e, order[i], (uint32_t)step * 4u + (uint32_t)i,
                         ((rng >> (i + 3)) & 3u) == 0);
        } else if (r < 75 && n) {
            /* A set or add on any entity: last, middle or stale. */
            tes_entity_t e = es[(rng >> 4) % (uint32_t)n];
            int k = (int)((rng >> 12) % NCOMP);
            twin_set(&q, &g, e, k, (uint32_t)step, ((rng >> 20) & 3u) == 0);
        } else if (r < 90 && n) {
            tes_entity_t e = es[(rng >> 4) % (uint32_t)n];
            int k = (int)((rng >> 12) % NCOMP);
            assert_int_equal(tes_remove(q.w, e, q.ids[k]), tes_remove(g.w, e, g.ids[k]));
        } else if (n) {
            tes_entity_t e = es[(rng >> 4) % (uint32_t)n];
            assert_int_equal(tes_destroy(q.w, e), tes_destroy(g.w, e));
        }
        if (step % 250 == 0)
            twin_compare(&q, &g, es, n);
    }
    twin_compare(&q, &g, es, n);
    tes_world_free(q.w);
    tes_world_free(g.w);
}

/* ------------------------------------------------------------------------ */

/* tes_add on the quiet hot path zeroes the new cell, even in a row whose
 * bytes a destroyed entity left behind. */
static void test_add_zeroes_recycled_row(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), false);
    tes_comp_t b = reg(w, "B", sizeof(vec3_t), false);
    for (int round = 0; round < 3; round++) {
        tes_entity_t old[4];
        spawn_ab(w, a, b, 4, 9.0f, old);
        for (int i = 3; i >= 0; i--)
            assert_int_equal(tes_destroy(w, old[i]), TES_OK);
        for (int i = 0; i < 4; i++) {
            tes_entity_t e = tes_spawn(w);
            vec3_t v = vec(1.0f);
            assert_int_equal(tes_set(w, e, a, &v), TES_OK);
            assert_int_equal(tes_add(w, e, b), TES_OK);
            const unsigned char *cell = tes_get(w, e, b);
            assert_non_null(cell);
            for (size_t j = 0; j < sizeof(vec3_t); j++)
                assert_int_equal(cell[j], 0);
            assert_vec(tes_get(w, e, a), 1.0f);
        }
        assert_int_equal(tes__world_check(w), TES_OK);
    }
    check_and_free(w);
}

/* The value is the entity's own cell in the row the move leaves (the last
 * row, which the source table counts out before the copy), or another
 * entity's cell in the destination table (which has room). */
static void test_value_from_moving_row(void **state)
{
    (void)state;
    rows_t r;
    rows_open(&r);
    assert_int_equal(tes_set(r.w, r.es[7], r.b, tes_get(r.w, r.es[7], r.a)), TES_OK);
    assert_vec(tes_get(r.w, r.es[7], r.b), 7.0f);
    assert_vec(tes_get(r.w, r.es[7], r.a), 7.0f);
    assert_int_equal(tes_set(r.w, r.es[6], r.b, tes_get(r.w, r.es[7], r.b)), TES_OK);
    assert_vec(tes_get(r.w, r.es[6], r.b), 7.0f);
    assert_vec(tes_get(r.w, r.es[6], r.a), 6.0f);
    for (int i = 0; i < 6; i++)
        assert_vec(tes_get(r.w, r.es[i], r.a), (float)i);
    check_and_free(r.w);
}

/* Tags on the way (the edge's component has no column: every column is
 * copied), then quiet removals of the last row and of a middle row. */
static void test_tags_and_removals(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), false);
    tes_comp_t t = reg(w, "T", 0, false);
    tes_comp_t c = reg(w, "C", 4, false);
    tes_entity_t es[40];
    for (int i = 0; i < 40; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = vec((float)i);
        uint32_t x = (uint32_t)i * 3u;
        assert_int_equal(tes_set(w, es[i], a, &v), TES_OK);
        assert_int_equal(tes_add(w, es[i], t), TES_OK);
        assert_int_equal(tes_set(w, es[i], t, NULL), TES_OK); /* present: no change */
        assert_int_equal(tes_set(w, es[i], c, &x), TES_OK);
        assert_true(tes_has(w, es[i], t));
        assert_null(tes_get(w, es[i], t));
    }
    for (int i = 39; i >= 0; i -= 3) { /* removals from the end and the middle */
        assert_int_equal(tes_remove(w, es[i], t), TES_OK);
        assert_int_equal(tes_remove(w, es[i / 2], c), TES_OK);
        assert_int_equal(tes__world_check(w), TES_OK);
    }
    for (int i = 0; i < 40; i++) {
        assert_vec(tes_get(w, es[i], a), (float)i);
        const uint32_t *x = tes_get(w, es[i], c);
        if (x)
            assert_int_equal(*x, (uint32_t)i * 3u);
    }
    tes_world_free(w);
}

/* A handle that is not alive changes nothing on the quiet path. */
static void test_stale_handle_quiet(void **state)
{
    (void)state;
    rows_t r;
    rows_open(&r);
    assert_int_equal(tes_destroy(r.w, r.es[7]), TES_OK);
    vec3_t v = vec(3.0f);
    assert_int_equal(tes_set(r.w, r.es[7], r.b, &v), TES_ERR_STALE);
    assert_int_equal(tes_add(r.w, r.es[7], r.b), TES_ERR_STALE);
    assert_int_equal(tes_last_error(r.w), TES_ERR_STALE);
    for (int i = 0; i < 7; i++) {
        assert_vec(tes_get(r.w, r.es[i], r.a), (float)i);
        assert_false(tes_has(r.w, r.es[i], r.b));
    }
    check_and_free(r.w);
}

/* ------------------------------------------------------------------------ */

/* tes_spawn_with of one hook-free bundle again and again (a tag, a NULL
 * value, a value read from the destination table): the same entities as
 * spawn + tes_set each, through table growth, with and without a watcher
 * (a query whose filter index watches every spawn). */
static void spawn_with_run(bool watched)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), false);
    tes_comp_t t = reg(w, "T", 0, false);
    tes_comp_t c = reg(w, "C", 4, false);
    tes_query_t *q = NULL;
    if (watched) {
        tes_query_desc_t d = {.terms = {{.comp = a, .oper = TES_AND, .access = TES_IN}}};
        q = tes_query_new(w, &d);
        assert_non_null(q);
    }
    /* Rows with stale bytes for the NULL values to land on. */
    tes_entity_t junk[20];
    for (int i = 0; i < 20; i++) {
        uint32_t x = 0xDEADBEEFu;
        vec3_t v = vec(-1.0f);
        tes_value_t vals[3] = {{a, &v}, {t, NULL}, {c, &x}};
        junk[i] = tes_spawn_with(w, vals, 3);
        assert_true(junk[i] != TES_NULL);
    }
    for (int i = 0; i < 20; i++)
        assert_int_equal(tes_destroy(w, junk[i]), TES_OK);
    tes_entity_t es[300];
    for (int i = 0; i < 300; i++) {
        vec3_t v = vec((float)i);
        uint32_t x = (uint32_t)i;
        /* Every fourth value of A is the previous entity's, read from the
         * table the new one goes to (which may have to grow first). */
        const void *pa = i % 4 == 3 ? tes_get(w, es[i - 1], a) : &v;
        tes_value_t vals[3] = {{a, pa}, {t, NULL}, {c, i % 5 == 0 ? NULL : &x}};
        es[i] = tes_spawn_with(w, vals, 3);
        assert_true(es[i] != TES_NULL);
        assert_vec(tes_get(w, es[i], a), i % 4 == 3 ? (float)(i - 1) : (float)i);
        assert_true(tes_has(w, es[i], t));
        const uint32_t *pc = tes_get(w, es[i], c);
        assert_non_null(pc);
        assert_int_equal(*pc, i % 5 == 0 ? 0u : (uint32_t)i);
        if (i % 4 == 3) /* the next ones read this one's value as their own */
            assert_int_equal(tes_set(w, es[i], a, &v), TES_OK);
    }
    for (int i = 0; i < 300; i++)
        assert_vec(tes_get(w, es[i], a), (float)i);
    if (q)
        assert_int_equal(tes_query_count(q), 300);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_query_free(q);
    tes_world_free(w);
}

static void test_spawn_with_quiet_bundle(void **state)
{
    (void)state;
    spawn_with_run(false);
}

static void test_spawn_with_watched_bundle(void **state)
{
    (void)state;
    spawn_with_run(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_copies_every_size),
        cmocka_unit_test(test_last_row_move_keeps_other_addresses),
        cmocka_unit_test(test_middle_row_move_fills_hole),
        cmocka_unit_test(test_twin_worlds_agree),
        cmocka_unit_test(test_add_zeroes_recycled_row),
        cmocka_unit_test(test_value_from_moving_row),
        cmocka_unit_test(test_tags_and_removals),
        cmocka_unit_test(test_stale_handle_quiet),
        cmocka_unit_test(test_spawn_with_quiet_bundle),
        cmocka_unit_test(test_spawn_with_watched_bundle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
