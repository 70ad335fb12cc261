/*
 * The plain recorder (src/world/defer_plain.c, tes__defer_set_plain): a deferred
 * tes_set of a plain table component, made while the world is only
 * deferred, goes from tes_set straight to a recorder that checks its room
 * with one compare (plain_room), bumps the staged value in the arena's
 * current block and writes the command. Each test makes the same calls in
 * a twin world without deferral and compares the results.
 *
 * - Values of every size class (1 to 64 bytes, the inline copies; 65 and
 *   more, the slow path; a tag, handed to the generic set), aligned 1 to
 *   16, enough of them to cross many arena blocks, interleaved on the same
 *   entities with adds, removes, ensures and sets of the same component.
 *   A deferred ensure after a set returns a value staged for it: aligned,
 *   and holding the bytes that were set.
 * - The room check: sets interleaved with commands that add entity
 *   records (adds of a tag, deferred spawns whose indices lie past the
 *   queue's entity lookup) around every growth point; the world check
 *   verifies plain_room after each step.
 * - A failed set (stale handle, unknown id, NULL value) queues nothing.
 * - The flush applies a run (one shape of commands on entity after entity
 *   of one table) after one reserve for all its rows: as one block when
 *   the entities are their table's last rows in order, else back to
 *   front. Every shape (sets, adds of data and of tags, groups with a
 *   repeated component, the table's end, its start, reversed, with gaps)
 *   gives the immediate result, and a query finds each entity once. When
 *   that reserve fails once, the rows move one reserve at a time and all
 *   apply; when nothing can grow, the result is that of the same calls
 *   made one by one in a twin world where nothing can grow either.
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

#include "unit/tracker.h"

/* Sizes and alignments of the components under test: the tag first, then
 * every class of tes__copy_small, then sizes past TES__SMALL_BYTES. */
#define NSIZES 20
static const size_t sizes[NSIZES] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28,
                                     32, 40, 48, 60, 64, 65, 96, 200};
static const size_t aligns[NSIZES] = {0, 1, 2, 1, 4, 2, 8, 4, 16, 4, 8, 4,
                                      16, 8, 16, 4, 16, 1, 16, 8};
#define MAXSIZE 200
#define NENTS 300

typedef struct {
    tes_world_t *w;
    tes_comp_t c[NSIZES];
    tes_entity_t e[NENTS + 64];
    uint32_t n;
} twin_t;

static void twin_new(twin_t *t)
{
    t->w = tes_world_new(NULL);
    assert_non_null(t->w);
    for (int k = 0; k < NSIZES; k++) {
        char name[16];
        snprintf(name, sizeof name, "c%02d", k);
        tes_component_desc_t d = {0};
        d.name = name;
        d.size = sizes[k];
        d.align = aligns[k];
        t->c[k] = tes_component(t->w, &d);
        assert_true(t->c[k]);
    }
    t->n = NENTS;
    for (uint32_t i = 0; i < NENTS; i++) {
        t->e[i] = tes_spawn(t->w);
        assert_true(t->e[i] != TES_NULL);
    }
}

/* The value a call writes: every byte depends on the entity, the
 * component, the byte and a stamp, so a wrong cell, a wrong size or a
 * stale value shows. */
static void fill(uint8_t *out, uint32_t i, int k, uint32_t stamp)
{
    for (size_t b = 0; b < sizes[k]; b++)
        out[b] = (uint8_t)(i * 7u + (uint32_t)k * 31u + b * 3u + stamp * 13u + 1u);
}

static void set_value(twin_t *t, uint32_t i, int k, uint32_t stamp)
{
    uint8_t buf[MAXSIZE];
    fill(buf, i, k, stamp);
    assert_int_equal(tes_set(t->w, t->e[i], t->c[k], sizes[k] ? buf : NULL), TES_OK);
}

/* A deferred ensure right after a set returns the value the entity will
 * hold: in the deferred world a value staged for the ensure, a copy of the
 * set's. It must be aligned for the component and hold the bytes just
 * set. */
static void ensure_reads_set(twin_t *t, uint32_t i, int k, uint32_t stamp)
{
    if (!sizes[k])
        return;
    uint8_t want[MAXSIZE];
    fill(want, i, k, stamp);
    const uint8_t *p = tes_ensure(t->w, t->e[i], t->c[k]);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % aligns[k], 0);
    assert_memory_equal(p, want, sizes[k]);
}

/* Both worlds hold the same components with the same bytes. */
static void twin_compare(const twin_t *a, const twin_t *b)
{
    assert_int_equal(a->n, b->n);
    for (uint32_t i = 0; i < a->n; i++) {
        assert_int_equal(tes_alive(a->w, a->e[i]), tes_alive(b->w, b->e[i]));
        for (int k = 0; k < NSIZES; k++) {
            bool has = tes_has(a->w, a->e[i], a->c[k]);
            assert_int_equal(has, tes_has(b->w, b->e[i], b->c[k]));
            if (has && sizes[k])
                assert_memory_equal(tes_get(a->w, a->e[i], a->c[k]),
                                    tes_get(b->w, b->e[i], b->c[k]), sizes[k]);
        }
    }
    check(a->w);
    check(b->w);
}

/* One pass of calls on entity i, made on one world. */
static void calls_on(twin_t *t, uint32_t i, uint32_t pass)
{
    uint32_t stamp = pass * 1000u + i;
    for (int k = 1; k < NSIZES; k++) {
        if ((i + (uint32_t)k + pass) % 3 == 0)
            continue; /* each entity gets two thirds of the components */
        set_value(t, i, k, stamp);
        if ((i + (uint32_t)k) % 11 == 0)
            ensure_reads_set(t, i, k, stamp);
        if ((i * 5u + (uint32_t)k) % 17 == 0) {
            /* Removed, then set again: the last value, in a new cell. */
            assert_int_equal(tes_remove(t->w, t->e[i], t->c[k]), TES_OK);
            set_value(t, i, k, stamp + 7u);
        }
        if ((i + (uint32_t)k * 3u) % 19 == 0)
            set_value(t, i, k, stamp + 9u); /* set twice: the last one wins */
        if ((i + (uint32_t)k) % 23 == 0)
            assert_int_equal(tes_remove(t->w, t->e[i], t->c[k]), TES_OK); /* set, then gone */
    }
    if (i % 7 == 0)
        set_value(t, i, 0, stamp); /* a tag: the generic set */
    if (i % 13 == 5)
        assert_int_equal(tes_add(t->w, t->e[i], t->c[4]), TES_OK);
}

static void test_record_every_size(void **state)
{
    (void)state;
    twin_t imm, def;
    twin_new(&imm);
    twin_new(&def);
    for (uint32_t pass = 0; pass < 3; pass++) {
        assert_int_equal(tes_defer_begin(def.w), TES_OK);
        for (uint32_t i = 0; i < NENTS; i++) {
            calls_on(&imm, i, pass);
            calls_on(&def, i, pass);
        }
        /* Nothing is visible before the flush: the first pass started
         * from empty entities. */
        if (pass == 0)
            for (int k = 1; k < NSIZES; k++)
                assert_false(tes_has(def.w, def.e[1], def.c[k]));
        check(def.w);
        assert_int_equal(tes_defer_end(def.w), TES_OK);
        twin_compare(&imm, &def);
    }
    tes_world_free(imm.w);
    tes_world_free(def.w);
}

static void test_record_room_between_records(void **state)
{
    (void)state;
    twin_t imm, def;
    twin_new(&imm);
    twin_new(&def);
    /* Few existing entities' slots would be spare: the spawns below grow
     * the entity index past the queue's entity lookup while deferred. */
    assert_int_equal(tes_defer_begin(def.w), TES_OK);
    twin_t *both[2] = {&imm, &def};
    for (uint32_t i = 0; i < NENTS; i++) {
        for (int w = 0; w < 2; w++) {
            twin_t *t = both[w];
            set_value(t, i, 7, i); /* 12 bytes */
            if (i % 3 == 0) /* an entity record (and its pair) per add */
                assert_int_equal(tes_add(t->w, t->e[(i * 7u) % NENTS], t->c[0]), TES_OK);
            if (i % 5 == 0 && t->n < NENTS + 64) {
                /* A fresh entity, set at once: its index may lie past the
                 * queue's entity lookup until the next reserve. */
                uint32_t f = t->n++;
                t->e[f] = tes_spawn(t->w);
                assert_true(t->e[f] != TES_NULL);
                set_value(t, f, 8, i);
                set_value(t, f, 2, i);
            }
            set_value(t, (i * 13u) % NENTS, 16, i); /* 64 bytes, on another entity */
        }
        check(def.w);
    }
    assert_int_equal(tes_defer_end(def.w), TES_OK);
    twin_compare(&imm, &def);
    tes_world_free(imm.w);
    tes_world_free(def.w);
}

static void test_record_failures_queue_nothing(void **state)
{
    (void)state;
    twin_t def;
    twin_new(&def);
    tes_world_t *w = def.w;
    tes_entity_t dead = def.e[3];
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    uint8_t buf[MAXSIZE];
    fill(buf, 1, 7, 1);
    assert_int_equal(tes_set(w, dead, def.c[7], buf), TES_ERR_STALE);
    assert_int_equal(tes_last_error(w), TES_ERR_STALE);
    assert_int_equal(tes_set(w, def.e[1], def.c[7], NULL), TES_ERR_INVALID);
    assert_int_equal(tes_set(w, def.e[1], 999u, buf), TES_ERR_INVALID);
    assert_int_equal(tes_defer_end(w), TES_OK);
    for (int k = 0; k < NSIZES; k++)
        assert_false(tes_has(w, def.e[1], def.c[k]));
    check(w);
    tes_world_free(w);
}

/* The run shapes the flush applies as one block (the entities are the
 * last rows of their table, in row order) or back to front (otherwise),
 * each against the same calls made immediately. Entities start in the
 * table of component 7 (12 bytes), in spawn order. */
enum { SHAPE_SET, SHAPE_ADD, SHAPE_TAG, SHAPE_GROUP, SHAPE_TAIL, SHAPE_HEAD, SHAPE_REVERSED,
       SHAPE_STRIDED, SHAPES };

static void shape_calls(twin_t *t, int shape)
{
    for (uint32_t step = 0; step < NENTS; step++) {
        uint32_t i = step;
        if (shape == SHAPE_REVERSED)
            i = NENTS - 1 - step; /* the last row first: back to front fills holes */
        if (shape == SHAPE_TAIL && i < NENTS / 2)
            continue; /* the table's second half: still its last rows */
        if (shape == SHAPE_HEAD && i >= NENTS / 2)
            continue; /* the first half: not the last rows */
        if (shape == SHAPE_STRIDED && i % 3 == 1)
            continue; /* gaps: not one block */
        switch (shape) {
        case SHAPE_ADD: assert_int_equal(tes_add(t->w, t->e[i], t->c[11]), TES_OK); break;
        case SHAPE_TAG: assert_int_equal(tes_add(t->w, t->e[i], t->c[0]), TES_OK); break;
        case SHAPE_GROUP:
            set_value(t, i, 12, i);                                         /* 32 bytes */
            assert_int_equal(tes_add(t->w, t->e[i], t->c[4]), TES_OK);      /* zeroed */
            set_value(t, i, 12, i + 5);                                     /* the last wins */
            set_value(t, i, 2, i);                                          /* 2 bytes */
            break;
        default: set_value(t, i, 9, i); break; /* 20 bytes */
        }
    }
}

static void test_run_shapes(void **state)
{
    (void)state;
    for (int shape = 0; shape < SHAPES; shape++) {
        twin_t imm, def;
        twin_t *both[2] = {&imm, &def};
        for (int k = 0; k < 2; k++) {
            twin_t *t = both[k];
            twin_new(t);
            /* The twins' spawned entities move into component 7's table,
             * in order. */
            for (uint32_t i = 0; i < NENTS; i++)
                set_value(t, i, 7, i);
        }
        assert_int_equal(tes_defer_begin(def.w), TES_OK);
        shape_calls(&def, shape);
        shape_calls(&imm, shape);
        assert_int_equal(tes_defer_end(def.w), TES_OK);
        twin_compare(&imm, &def);
        /* Every entity is found by a query on what it got, once. */
        tes_comp_t terms[2] = {def.c[7], shape == SHAPE_ADD ? def.c[11]
                                         : shape == SHAPE_TAG ? def.c[0]
                                         : shape == SHAPE_GROUP ? def.c[12]
                                                                : def.c[9]};
        tes_query_desc_t qd = {0};
        qd.terms[0].comp = terms[0];
        qd.terms[1].comp = terms[1];
        tes_query_t *q = tes_query_new(def.w, &qd);
        assert_non_null(q);
        uint32_t found = 0, want = 0;
        for (uint32_t i = 0; i < NENTS; i++)
            want += tes_has(def.w, def.e[i], terms[1]);
        tes_iter_t it = tes_query_iter(q);
        while (tes_iter_next(&it))
            found += (uint32_t)it.count;
        assert_int_equal(found, want);
        tes_query_free(q);
        tes_world_free(imm.w);
        tes_world_free(def.w);
    }
}

/* An allocator that fails on demand: `fail_next` fails the next call only,
 * `fail_all` every call, until cleared. */
static bool fail_next, fail_all;
static int failed_calls;
static bool refuse(void)
{
    if (fail_all || fail_next) {
        fail_next = false;
        failed_calls++;
        return true;
    }
    return false;
}
static void *f_alloc(size_t size, void *user)
{
    (void)user;
    return refuse() ? NULL : malloc(size);
}
static void *f_realloc(void *p, size_t old_size, size_t new_size, void *user)
{
    (void)user, (void)old_size;
    return refuse() ? NULL : realloc(p, new_size);
}
static void f_free(void *p, size_t size, void *user)
{
    (void)user, (void)size;
    free(p);
}

#define RUN_N 500

/* A world whose entities hold A (12 bytes) and one entity holding A, B and
 * C already: the tables the runs move into exist, with the room their
 * first row asked for, so the flush's first allocation is a run's
 * reserve. `groups` queues B and C on each entity (a run of groups of two),
 * else B only (a run of single commands). */
static void run_sets(tes_world_t *w, const tes_comp_t c[3], const tes_entity_t *ents, bool groups,
                     bool expect_ok)
{
    for (uint32_t i = 0; i < RUN_N; i++) {
        uint8_t b[12], d[12];
        memset(b, (int)(i & 0x7F), sizeof b);
        memset(d, (int)(0x80 | (i & 0x7F)), sizeof d);
        int rb = tes_set(w, ents[i], c[1], b);
        int rd = groups ? tes_set(w, ents[i], c[2], d) : TES_OK;
        if (expect_ok) {
            assert_int_equal(rb, TES_OK);
            assert_int_equal(rd, TES_OK);
        }
    }
}

static tes_world_t *run_world(tes_comp_t c[3], tes_entity_t *ents, bool groups, bool deferred)
{
    tes_world_desc_t desc = {0};
    desc.allocator = (tes_allocator_t){f_alloc, f_realloc, f_free, NULL};
    tes_world_t *w = tes_world_new(&desc);
    assert_non_null(w);
    for (int k = 0; k < 3; k++) {
        char name[4] = {(char)('A' + k), 0};
        tes_component_desc_t d = {0};
        d.name = name;
        d.size = 12;
        c[k] = tes_component(w, &d);
        assert_true(c[k]);
    }
    uint8_t v[12] = {0};
    tes_entity_t x = tes_spawn(w);
    for (int k = 0; k < 3; k++)
        assert_int_equal(tes_set(w, x, c[k], v), TES_OK);
    tes_entity_t y = tes_spawn(w);
    assert_int_equal(tes_set(w, y, c[0], v), TES_OK);
    assert_int_equal(tes_set(w, y, c[1], v), TES_OK);
    assert_int_equal(tes_spawn_n(w, RUN_N, &c[0], 1, ents), TES_OK);
    if (deferred) {
        assert_int_equal(tes_defer_begin(w), TES_OK);
        run_sets(w, c, ents, groups, true);
    }
    return w;
}

/* How many of the run's entities got B (and C, for groups), checking the
 * values of those they got. */
static uint32_t run_count(const tes_world_t *w, const tes_comp_t c[3], const tes_entity_t *ents,
                          bool groups)
{
    uint32_t got = 0;
    for (uint32_t i = 0; i < RUN_N; i++) {
        const uint8_t *b = tes_get(w, ents[i], c[1]);
        if (!b)
            continue;
        assert_int_equal(b[11], (uint8_t)(i & 0x7F));
        const uint8_t *d = groups ? tes_get(w, ents[i], c[2]) : NULL;
        if (d)
            assert_int_equal(d[0], (uint8_t)(0x80 | (i & 0x7F)));
        got += !groups || d;
    }
    return got;
}

/* The run's reserve for all its rows fails once: the rows then move one
 * reserve at a time, and every command still applies. */
static void test_run_reserve_fails_once(void **state)
{
    (void)state;
    for (int groups = 0; groups < 2; groups++) {
        tes_comp_t c[3];
        tes_entity_t ents[RUN_N];
        tes_world_t *w = run_world(c, ents, groups != 0, true);
        failed_calls = 0;
        fail_next = true;
        assert_int_equal(tes_defer_end(w), TES_OK);
        assert_int_equal(failed_calls, 1);
        assert_int_equal(run_count(w, c, ents, groups != 0), RUN_N);
        check(w);
        tes_world_free(w);
    }
}

/* Nothing can grow during the flush: the result is that of the same
 * calls made one by one in a twin world where nothing can grow either
 * (the entities that fit in the room the destinations had get their
 * components, every other set fails with TES_ERR_NOMEM and changes
 * nothing), and the flush stays linear (a run that cannot grow is not
 * scanned again per command). */
static void test_run_reserve_fails_always(void **state)
{
    (void)state;
    for (int groups = 0; groups < 2; groups++) {
        tes_comp_t c[3], ci[3];
        tes_entity_t ents[RUN_N], ei[RUN_N];
        tes_world_t *w = run_world(c, ents, groups != 0, true);
        tes_world_t *imm = run_world(ci, ei, groups != 0, false);
        fail_all = true;
        assert_int_equal(tes_defer_end(w), TES_ERR_NOMEM);
        run_sets(imm, ci, ei, groups != 0, false);
        fail_all = false;
        uint32_t got = run_count(w, c, ents, groups != 0);
        assert_true(got > 0 && got < RUN_N);
        assert_int_equal(got, run_count(imm, ci, ei, groups != 0));
        for (uint32_t i = 0; i < RUN_N; i++)
            for (int k = 1; k < 3; k++)
                assert_int_equal(tes_has(w, ents[i], c[k]), tes_has(imm, ei[i], ci[k]));
        check(w);
        /* Memory is back: the same sets apply. */
        assert_int_equal(tes_defer_begin(w), TES_OK);
        run_sets(w, c, ents, groups != 0, true);
        assert_int_equal(tes_defer_end(w), TES_OK);
        assert_int_equal(run_count(w, c, ents, groups != 0), RUN_N);
        check(w);
        tes_world_free(w);
        tes_world_free(imm);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_every_size),
        cmocka_unit_test(test_record_room_between_records),
        cmocka_unit_test(test_record_failures_queue_nothing),
        cmocka_unit_test(test_run_shapes),
        cmocka_unit_test(test_run_reserve_fails_once),
        cmocka_unit_test(test_run_reserve_fails_always),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
