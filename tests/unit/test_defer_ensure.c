/*
 * Deferred tes_ensure against the same calls made immediately (issue 30,
 * defects 3 and 4, and the class they belong to): the pointer a deferred
 * ensure returns starts from exactly the value the entity holds at the
 * call's place in the command order, and writes through it take effect at
 * that place, never earlier or later. Each test runs one script twice, in
 * a world inside tes_defer_begin/tes_defer_end and in a twin without
 * deferral, and compares values, the value each ensure started from and
 * the observers' log.
 *
 * - A pending clone of an entity with a queued set starts from the set's
 *   value (defect 3), also through a chain of clones, each taken at its
 *   own place, and through an instantiation of a prefab with a queued set
 *   (references remapped to the instance).
 * - An ensure after a queued set gets a value of its own: the set still
 *   applies its value, its on_set sees it, an earlier clone and another
 *   component's on_add see it (defect 4).
 * - An ensure of a value an earlier queued clone, instantiation or hook
 *   reads does not write it before they run (the current address is
 *   handed out only when nothing queued could see the write).
 * - An add after a clone of a source that loses the component first gives
 *   a default, whatever the source holds now.
 * - A deferred instantiation does not copy a member whose destroy is
 *   queued before it, and fails with TES_ERR_STALE when the root's is.
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

typedef struct {
    tes_entity_t ref;
    int32_t x;
} ref_t;

#define LOG_MAX 64

typedef struct {
    tes_world_t *w;
    tes_comp_t p, h, q, r;
    bool deferred;
    /* Observer calls: which hook ('s' H's on_set, 'q' Q's on_add) and the
     * value of H or P it saw. */
    char hook[LOG_MAX];
    int32_t seen[LOG_MAX];
    int nlog;
    /* The value each ensure started from, in call order. */
    int32_t started[LOG_MAX];
    int nstarted;
} tw_t;

static void on_set_h(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e;
    tw_t *t = ctx;
    if (t->nlog < LOG_MAX) {
        t->hook[t->nlog] = 's';
        t->seen[t->nlog++] = *(const int32_t *)ptr;
    }
}

/* Q's on_add reads P of its entity: a hook reading another component. */
static void on_add_q(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr;
    tw_t *t = ctx;
    const int32_t *p = tes_get(w, e, t->p);
    if (t->nlog < LOG_MAX) {
        t->hook[t->nlog] = 'q';
        t->seen[t->nlog++] = p ? *p : -1;
    }
}

static void tw_init(tw_t *t, bool deferred)
{
    memset(t, 0, sizeof *t);
    t->deferred = deferred;
    t->w = tes_world_new(NULL);
    assert_non_null(t->w);
    tes_component_desc_t d = {.name = "P", .size = sizeof(int32_t)};
    t->p = tes_component(t->w, &d);
    d = (tes_component_desc_t){.name = "H", .size = sizeof(int32_t),
                               .hooks = {.on_set = on_set_h, .ctx = t}};
    t->h = tes_component(t->w, &d);
    d = (tes_component_desc_t){.name = "Q", .size = sizeof(int32_t),
                               .hooks = {.on_add = on_add_q, .ctx = t}};
    t->q = tes_component(t->w, &d);
    d = (tes_component_desc_t){.name = "R", .size = sizeof(ref_t),
                               .entity_fields = {offsetof(ref_t, ref)},
                               .entity_field_count = 1};
    t->r = tes_component(t->w, &d);
    assert_true(t->p && t->h && t->q && t->r);
}

static void begin(tw_t *t)
{
    if (t->deferred)
        assert_int_equal(tes_defer_begin(t->w), TES_OK);
}

static void end(tw_t *t)
{
    if (t->deferred)
        assert_int_equal(tes_defer_end(t->w), TES_OK);
    assert_int_equal(tes__world_check(t->w), TES_OK);
}

static void set(tw_t *t, tes_entity_t e, tes_comp_t c, int32_t v)
{
    assert_int_equal(tes_set(t->w, e, c, &v), TES_OK);
}

static int32_t get(tw_t *t, tes_entity_t e, tes_comp_t c)
{
    const int32_t *p = tes_get(t->w, e, c);
    assert_non_null(p);
    return *p;
}

/* tes_ensure of an int component, noting the value it started from. */
static int32_t *ensure(tw_t *t, tes_entity_t e, tes_comp_t c)
{
    int32_t *p = tes_ensure(t->w, e, c);
    assert_non_null(p);
    assert_true(t->nstarted < LOG_MAX);
    t->started[t->nstarted++] = *p;
    return p;
}

static void same(const tw_t *a, const tw_t *b)
{
    assert_int_equal(a->nstarted, b->nstarted);
    for (int i = 0; i < a->nstarted; i++)
        assert_int_equal(a->started[i], b->started[i]);
    assert_int_equal(a->nlog, b->nlog);
    for (int i = 0; i < a->nlog; i++) {
        assert_int_equal(a->hook[i], b->hook[i]);
        assert_int_equal(a->seen[i], b->seen[i]);
    }
    assert_int_equal(tes_entity_count(a->w), tes_entity_count(b->w));
}

/* Defect 3: set(x,P,5); y = clone(x); tes_ensure(y,P) and no write. */
static void script_pending_clone(tw_t *t, int32_t out[4])
{
    tes_entity_t x = tes_spawn(t->w);
    set(t, x, t->p, 1);
    begin(t);
    set(t, x, t->p, 5);
    tes_entity_t y = tes_clone(t->w, x);
    ensure(t, y, t->p);
    /* A chain: z copies y as y is at z's place (5), not x's later 9. */
    set(t, x, t->p, 9);
    tes_entity_t z = tes_clone(t->w, y);
    *ensure(t, z, t->p) += 100;
    end(t);
    out[0] = get(t, y, t->p);
    out[1] = get(t, z, t->p);
    out[2] = get(t, x, t->p);
    out[3] = 0;
}

static void test_ensure_pending_clone(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_pending_clone(&d, vd);
    script_pending_clone(&i, vi);
    assert_int_equal(vi[0], 5);
    assert_int_equal(vi[1], 105);
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

/* Defect 3 through tes_instantiate: the member's queued set, and its
 * reference remapped to the instance. */
static void script_instance(tw_t *t, int32_t out[4])
{
    tes_entity_t root = tes_prefab_new(t->w);
    tes_entity_t child = tes_prefab_child(t->w, root);
    set(t, root, t->p, 1);
    begin(t);
    set(t, root, t->p, 5);
    ref_t r = {child, 3};
    assert_int_equal(tes_set(t->w, root, t->r, &r), TES_OK);
    tes_entity_t out_e[2];
    assert_int_not_equal(tes_instantiate(t->w, root, out_e, 2), 0);
    ensure(t, out_e[0], t->p);
    ref_t *pr = tes_ensure(t->w, out_e[0], t->r);
    assert_non_null(pr);
    assert_true(pr->ref == out_e[1]); /* remapped, at the call */
    pr->x += 10;
    end(t);
    out[0] = get(t, out_e[0], t->p);
    const ref_t *got = tes_get(t->w, out_e[0], t->r);
    assert_non_null(got);
    out[1] = got->x;
    out[2] = got->ref == out_e[1];
    out[3] = get(t, root, t->p);
}

static void test_ensure_instance(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_instance(&d, vd);
    script_instance(&i, vi);
    assert_int_equal(vi[0], 5);
    assert_int_equal(vi[1], 13);
    assert_int_equal(vi[2], 1);
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

/* Defect 4: set(x,P,530); y = clone(x); *tes_ensure(x,P) += 591. Also the
 * set's own on_set (H) and another component's on_add reading P. */
static void script_after_set(tw_t *t, int32_t out[4])
{
    tes_entity_t x = tes_spawn(t->w);
    set(t, x, t->p, 1);
    set(t, x, t->h, 1);
    begin(t);
    set(t, x, t->p, 530);
    tes_entity_t y = tes_clone(t->w, x);
    *ensure(t, x, t->p) += 591;
    set(t, x, t->h, 40);
    *ensure(t, x, t->h) += 2;
    set(t, x, t->p, 7);
    assert_int_equal(tes_add(t->w, x, t->q), TES_OK); /* on_add reads P: 7 */
    *ensure(t, x, t->p) += 1;
    end(t);
    out[0] = get(t, y, t->p);
    out[1] = get(t, x, t->p);
    out[2] = get(t, x, t->h);
    out[3] = get(t, y, t->h);
}

static void test_ensure_after_set(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_after_set(&d, vd);
    script_after_set(&i, vi);
    assert_int_equal(vi[0], 530);
    assert_int_equal(vi[1], 8);
    assert_int_equal(vi[2], 42);
    assert_int_equal(i.nlog, 3); /* the first set of H, before the block */
    assert_int_equal(i.seen[1], 40); /* the set's on_set */
    assert_int_equal(i.seen[2], 7);  /* Q's on_add */
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

/* An ensure of a value that an earlier queued clone, instantiation and
 * observer read: the write lands after them, as immediately. */
static void script_live_value(tw_t *t, int32_t out[4])
{
    tes_entity_t x = tes_spawn(t->w);
    set(t, x, t->p, 10);
    tes_entity_t root = tes_prefab_new(t->w);
    set(t, root, t->p, 20);
    begin(t);
    tes_entity_t y = tes_clone(t->w, x);
    *ensure(t, x, t->p) += 1;
    tes_entity_t inst[1];
    assert_int_not_equal(tes_instantiate(t->w, root, inst, 1), 0);
    *ensure(t, root, t->p) += 2;
    assert_int_equal(tes_add(t->w, x, t->q), TES_OK); /* reads P: 11 */
    *ensure(t, x, t->p) += 4;
    end(t);
    out[0] = get(t, y, t->p);
    out[1] = get(t, x, t->p);
    out[2] = get(t, inst[0], t->p);
    out[3] = get(t, root, t->p);
}

static void test_ensure_value_read_earlier(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_live_value(&d, vd);
    script_live_value(&i, vi);
    assert_int_equal(vi[0], 10);
    assert_int_equal(vi[1], 15);
    assert_int_equal(vi[2], 20);
    assert_int_equal(vi[3], 22);
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

/* remove(x,P); y = clone(x); add(y,P): y's P is a default, though x still
 * holds P when the calls are queued. */
static void script_add_after_clone(tw_t *t, int32_t out[4])
{
    tes_entity_t x = tes_spawn(t->w);
    set(t, x, t->p, 3);
    begin(t);
    assert_int_equal(tes_remove(t->w, x, t->p), TES_OK);
    tes_entity_t y = tes_clone(t->w, x);
    assert_int_equal(tes_add(t->w, y, t->p), TES_OK);
    *ensure(t, y, t->p) += 50;
    set(t, x, t->p, 4);
    tes_entity_t z = tes_clone(t->w, x);
    assert_int_equal(tes_add(t->w, z, t->p), TES_OK); /* z has P already */
    ensure(t, z, t->p);
    end(t);
    out[0] = get(t, y, t->p);
    out[1] = get(t, z, t->p);
    out[2] = get(t, x, t->p);
    out[3] = 0;
}

static void test_ensure_add_after_clone(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_add_after_clone(&d, vd);
    script_add_after_clone(&i, vi);
    assert_int_equal(vi[0], 50);
    assert_int_equal(vi[1], 4);
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

/* destroy(member); instantiate: the instance has no copy of it. */
static void script_member_destroyed(tw_t *t, int32_t out[4])
{
    tes_entity_t root = tes_prefab_new(t->w);
    tes_entity_t a = tes_prefab_child(t->w, root);
    tes_entity_t b = tes_prefab_child(t->w, root);
    set(t, b, t->p, 6);
    begin(t);
    assert_int_equal(tes_destroy(t->w, a), TES_OK);
    tes_instance_t inst = tes_instantiate(t->w, root, NULL, 0);
    assert_int_not_equal(inst, 0);
    tes_entity_t m[4];
    out[0] = tes_instance_members(t->w, inst, m, 4);
    end(t);
    out[1] = tes_instance_members(t->w, inst, m, 4);
    out[2] = out[1] == 2 ? get(t, m[1], t->p) : -1;
    out[3] = tes_entity_count(t->w);
}

static void test_instantiate_member_destroyed_before(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_member_destroyed(&d, vd);
    script_member_destroyed(&i, vi);
    assert_int_equal(vi[0], 2);
    assert_int_equal(vi[2], 6);
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

/* destroy(root); instantiate(root): TES_ERR_STALE in both worlds, and
 * nothing is made. */
static void script_root_destroyed(tw_t *t, int32_t out[4])
{
    tes_entity_t root = tes_prefab_new(t->w);
    (void)tes_prefab_child(t->w, root);
    begin(t);
    assert_int_equal(tes_destroy(t->w, root), TES_OK);
    out[0] = tes_instantiate(t->w, root, NULL, 0) != 0;
    out[1] = tes_last_error(t->w);
    tes_instance_t inst[1];
    out[2] = tes_instantiate_n(t->w, root, 1, inst);
    end(t);
    out[3] = tes_entity_count(t->w);
}

static void test_instantiate_root_destroyed_before(void **state)
{
    (void)state;
    tw_t d, i;
    int32_t vd[4], vi[4];
    tw_init(&d, true);
    tw_init(&i, false);
    script_root_destroyed(&d, vd);
    script_root_destroyed(&i, vi);
    assert_int_equal(vi[0], 0);
    assert_int_equal(vi[1], TES_ERR_STALE);
    assert_int_equal(vi[2], TES_ERR_STALE);
    assert_memory_equal(vd, vi, sizeof vd);
    same(&d, &i);
    tes_world_free(d.w);
    tes_world_free(i.w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ensure_pending_clone),
        cmocka_unit_test(test_ensure_instance),
        cmocka_unit_test(test_ensure_after_set),
        cmocka_unit_test(test_ensure_value_read_earlier),
        cmocka_unit_test(test_ensure_add_after_clone),
        cmocka_unit_test(test_instantiate_member_destroyed_before),
        cmocka_unit_test(test_instantiate_root_destroyed_before),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
