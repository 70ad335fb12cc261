/*
 * Hierarchy and names: tes_set_parent, tes_parent, tes_children, tes_depth
 * (order, reparenting, roots, no table changes), cascading destroys through
 * every destroy call (post-order seen by on_remove, strict lifecycle checked
 * first, deferred and re-checked when applied), names and paths, and every
 * refusal with its detail and the forest unchanged. Allocation failures of
 * link pages, name maps and deferred links leave the world as it was.
 *
 * Every test ends with tes__world_check.
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
#include "support/counting_alloc.h"
#include "world/check.h"

typedef struct Pos {
    float x, y;
} Pos;

/* ------------------------------------------------------------------ helpers */

/* A text picture of the forest over ents[0..n): each entity's parent,
 * children in order, depth and name, so a refused call can be shown to
 * change nothing. */
static void picture(const tes_world_t *w, const tes_entity_t *ents, int n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        tes_entity_t kids[64];
        int32_t k = tes_alive(w, ents[i]) ? tes_children(w, ents[i], kids, 64) : -1;
        const char *name = tes_name(w, ents[i]);
        at += (size_t)snprintf(buf + at, cap - at, "[%d p=%llx d=%d n=%s:", i,
                               (unsigned long long)tes_parent(w, ents[i]),
                               tes_alive(w, ents[i]) ? (int)tes_depth(w, ents[i]) : -9,
                               name ? name : "-");
        for (int32_t j = 0; j < k && j < 64; j++)
            at += (size_t)snprintf(buf + at, cap - at, " %llx", (unsigned long long)kids[j]);
        at += (size_t)snprintf(buf + at, cap - at, "]");
        assert_true(at < cap);
    }
}

static void expect_children(const tes_world_t *w, tes_entity_t p, const tes_entity_t *want, int32_t n)
{
    tes_entity_t got[64];
    assert_int_equal(tes_children(w, p, got, 64), n);
    for (int32_t i = 0; i < n; i++)
        assert_true(got[i] == want[i]);
}

static void expect_detail(const tes_world_t *w, int status, const char *word)
{
    assert_int_equal(tes_last_error(w), status);
    const char *d = tes_last_error_detail(w);
    assert_non_null(d);
    assert_true(strlen(d) > 10);
    if (word && !strstr(d, word)) {
        printf("detail \"%s\" lacks \"%s\"\n", d, word);
        fail();
    }
}

static tes_entity_t spawn_named(tes_world_t *w, tes_entity_t parent, const char *name)
{
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, e, parent), TES_OK);
    if (name)
        assert_int_equal(tes_set_name(w, e, name), TES_OK);
    return e;
}

/* ------------------------------------------------------------------ links */

static void test_links_basics(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t p = tes_spawn(w), a = tes_spawn(w), b = tes_spawn(w), c = tes_spawn(w);
    assert_true(tes_parent(w, a) == TES_NULL);
    assert_int_equal(tes_depth(w, a), 0);
    assert_int_equal(tes_children(w, p, NULL, 0), 0);
    assert_int_equal(tes_set_parent(w, a, p), TES_OK);
    assert_int_equal(tes_set_parent(w, b, p), TES_OK);
    assert_int_equal(tes_set_parent(w, c, p), TES_OK);
    assert_true(tes_parent(w, b) == p);
    assert_int_equal(tes_depth(w, b), 1);
    expect_children(w, p, (tes_entity_t[]){a, b, c}, 3);
    /* The same parent again: nothing moves. */
    assert_int_equal(tes_set_parent(w, a, p), TES_OK);
    expect_children(w, p, (tes_entity_t[]){a, b, c}, 3);
    /* Reparenting appends; the old list closes up (first, middle, last). */
    tes_entity_t q = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, b, q), TES_OK);
    expect_children(w, p, (tes_entity_t[]){a, c}, 2);
    assert_int_equal(tes_set_parent(w, a, q), TES_OK);
    expect_children(w, p, (tes_entity_t[]){c}, 1);
    assert_int_equal(tes_set_parent(w, c, q), TES_OK);
    expect_children(w, p, NULL, 0);
    expect_children(w, q, (tes_entity_t[]){b, a, c}, 3);
    /* Depth follows the chain. */
    assert_int_equal(tes_set_parent(w, q, p), TES_OK);
    assert_int_equal(tes_depth(w, c), 2);
    /* A short cap still counts them all. */
    tes_entity_t one[1];
    assert_int_equal(tes_children(w, q, one, 1), 3);
    assert_true(one[0] == b);
    /* Unlinking makes a root. */
    assert_int_equal(tes_set_parent(w, a, TES_NULL), TES_OK);
    assert_true(tes_parent(w, a) == TES_NULL);
    expect_children(w, q, (tes_entity_t[]){b, c}, 2);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_links_do_not_move_rows(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Pos);
    tes_entity_t p = tes_spawn(w), c = tes_spawn(w);
    assert_int_equal(tes_set(w, p, pos, &(Pos){1, 2}), TES_OK);
    assert_int_equal(tes_set(w, c, pos, &(Pos){3, 4}), TES_OK);
    const void *before = tes_get(w, c, pos);
    tes_world_stats_t s0, s1;
    tes_world_stats(w, &s0);
    assert_int_equal(tes_set_parent(w, c, p), TES_OK);
    tes_world_stats(w, &s1);
    assert_int_equal(s0.tables, s1.tables);
    assert_ptr_equal(before, tes_get(w, c, pos));
    /* Links are not components. */
    tes_comp_t ids[8];
    assert_int_equal(tes_components_of(w, c, ids, 8), 1);
    assert_int_equal(tes_clear(w, c), TES_OK);
    assert_true(tes_parent(w, c) == p);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_link_refusals(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t e[6];
    for (int i = 0; i < 6; i++)
        e[i] = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, e[1], e[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[2], e[1]), TES_OK);
    tes_entity_t dead = tes_spawn(w);
    assert_int_equal(tes_destroy(w, dead), TES_OK);
    char before[2048], after[2048];
    picture(w, e, 6, before, sizeof before);

    assert_int_equal(tes_set_parent(w, e[0], e[0]), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "own parent");
    assert_int_equal(tes_set_parent(w, e[0], e[2]), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "cycle");
    assert_int_equal(tes_set_parent(w, e[1], e[2]), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "cycle");
    assert_int_equal(tes_set_parent(w, dead, e[0]), TES_ERR_STALE);
    expect_detail(w, TES_ERR_STALE, NULL);
    assert_int_equal(tes_set_parent(w, e[3], dead), TES_ERR_STALE);
    expect_detail(w, TES_ERR_STALE, NULL);
    assert_int_equal(tes_set_parent(w, TES_NULL, e[0]), TES_ERR_STALE);
    assert_int_equal(tes_set_parent(NULL, e[1], e[0]), TES_ERR_INVALID);

    /* Prefab entities link only within their own prefab. */
    tes_entity_t pf = tes_prefab_new(w), m1 = tes_prefab_child(w, pf), m2 = tes_prefab_child(w, pf);
    tes_entity_t pf2 = tes_prefab_new(w), n1 = tes_prefab_child(w, pf2);
    assert_int_equal(tes_set_parent(w, m1, e[0]), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "prefab");
    assert_int_equal(tes_set_parent(w, e[3], m1), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "prefab");
    assert_int_equal(tes_set_parent(w, n1, m1), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "different prefabs");
    assert_true(tes_parent(w, n1) == TES_NULL);
    picture(w, e, 6, after, sizeof after);
    assert_string_equal(before, after);
    /* Members of one prefab link. */
    assert_int_equal(tes_set_parent(w, m1, pf), TES_OK);
    assert_int_equal(tes_set_parent(w, m2, m1), TES_OK);
    assert_int_equal(tes_depth(w, m2), 2);

    /* Reads of dead entities. */
    assert_true(tes_parent(w, dead) == TES_NULL);
    assert_int_equal(tes_depth(w, dead), TES_ERR_STALE);
    assert_int_equal(tes_children(w, dead, NULL, 0), TES_ERR_STALE);
    assert_int_equal(tes_children(w, e[0], NULL, 3), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "cap");
    assert_int_equal(tes_children(w, e[0], NULL, -1), TES_ERR_INVALID);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_clone_keeps_parent(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t p = tes_spawn(w), a = tes_spawn(w), b = tes_spawn(w), kid = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, a, p), TES_OK);
    assert_int_equal(tes_set_parent(w, b, p), TES_OK);
    assert_int_equal(tes_set_parent(w, kid, a), TES_OK);
    assert_int_equal(tes_set_name(w, a, "a"), TES_OK);
    tes_entity_t copy = tes_clone(w, a);
    expect_children(w, p, (tes_entity_t[]){a, b, copy}, 3);
    assert_int_equal(tes_children(w, copy, NULL, 0), 0); /* not its subtree */
    assert_null(tes_name(w, copy));
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_entity_t later = tes_clone(w, b);
    assert_int_equal(tes_defer_end(w), TES_OK);
    expect_children(w, p, (tes_entity_t[]){a, b, copy, later}, 4);
    tes_entity_t root_copy = tes_clone(w, p);
    assert_true(tes_parent(w, root_copy) == TES_NULL);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ cascades */

typedef struct order_log {
    tes_entity_t seen[64];
    int n;
} order_log_t;

static void log_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr;
    order_log_t *log = ctx;
    /* Hooks run while the links are still there, and may not relink. */
    assert_int_equal(tes_set_parent(w, e, TES_NULL), TES_ERR_BUSY);
    assert_int_equal(tes_destroy(w, e), TES_ERR_BUSY);
    if (log->n < 64)
        log->seen[log->n++] = e;
}

static tes_comp_t logged_comp(tes_world_t *w, order_log_t *log, tes_storage_t storage)
{
    tes_component_desc_t d = {0};
    d.name = storage == TES_STORAGE_SPARSE ? "LoggedSparse" : "Logged";
    d.size = sizeof(int);
    d.align = _Alignof(int);
    d.storage = storage;
    d.hooks.on_remove = log_remove;
    d.hooks.ctx = log;
    return tes_component(w, &d);
}

/*   r
 *  / \
 * a   b
 *    / \
 *   c   d      post-order: a c d b r */
static void build_tree(tes_world_t *w, tes_comp_t comp, tes_entity_t t[5])
{
    for (int i = 0; i < 5; i++) {
        t[i] = tes_spawn(w);
        assert_int_equal(tes_add(w, t[i], comp), TES_OK);
    }
    assert_int_equal(tes_set_parent(w, t[1], t[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, t[2], t[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, t[3], t[2]), TES_OK);
    assert_int_equal(tes_set_parent(w, t[4], t[2]), TES_OK);
}

static void expect_post_order(const order_log_t *log, const tes_entity_t t[5])
{
    const int want[5] = {1, 3, 4, 2, 0};
    assert_int_equal(log->n, 5);
    for (int i = 0; i < 5; i++)
        assert_true(log->seen[i] == t[want[i]]);
}

static void test_cascade_destroy(void **state)
{
    (void)state;
    for (int sparse = 0; sparse < 2; sparse++) {
        order_log_t log = {0};
        tes_world_t *w = tes_world_new(NULL);
        tes_comp_t comp = logged_comp(w, &log, sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
        tes_entity_t t[5], other = tes_spawn(w);
        build_tree(w, comp, t);
        assert_int_equal(tes_set_parent(w, other, TES_NULL), TES_OK);
        assert_int_equal(tes_destroy(w, t[0]), TES_OK);
        expect_post_order(&log, t);
        for (int i = 0; i < 5; i++)
            assert_false(tes_alive(w, t[i]));
        assert_true(tes_alive(w, other));
        /* Destroying a subtree unlinks it from the survivors. */
        log.n = 0;
        build_tree(w, comp, t);
        assert_int_equal(tes_destroy(w, t[2]), TES_OK);
        assert_int_equal(log.n, 3);
        expect_children(w, t[0], (tes_entity_t[]){t[1]}, 1);
        assert_int_equal(tes__world_check(w), 0);
        tes_world_free(w);
    }
}

static void test_cascade_destroy_n_and_matching(void **state)
{
    (void)state;
    order_log_t log = {0};
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t comp = logged_comp(w, &log, TES_STORAGE_TABLE);
    tes_comp_t pos = TES_COMPONENT(w, Pos);
    tes_entity_t t[5];
    build_tree(w, comp, t);
    /* A listed child of a listed parent dies once, with its parent's subtree. */
    assert_int_equal(tes_destroy_n(w, (tes_entity_t[]){t[3], t[0]}, 2), TES_OK);
    assert_int_equal(log.n, 5);
    for (int i = 0; i < 5; i++)
        assert_false(tes_alive(w, t[i]));

    /* destroy_matching counts matches, not descendants. */
    log.n = 0;
    build_tree(w, comp, t);
    assert_int_equal(tes_add(w, t[0], pos), TES_OK);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{pos}}});
    assert_int_equal(tes_destroy_matching(q), 1);
    expect_post_order(&log, t);
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_cascade_strict_lifecycle(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.strict_lifecycle = true});
    tes_comp_t pos = TES_COMPONENT(w, Pos);
    tes_entity_t pf = tes_prefab_new(w);
    tes_entity_t m = tes_prefab_child(w, pf);
    assert_int_equal(tes_set_parent(w, m, pf), TES_OK);
    tes_entity_t inst_ents[2];
    tes_instance_t inst = tes_instantiate(w, pf, inst_ents, 2);
    assert_true(inst != 0);
    tes_entity_t root = tes_spawn(w), mid = tes_spawn(w);
    assert_int_equal(tes_add(w, root, pos), TES_OK);
    assert_int_equal(tes_set_parent(w, mid, root), TES_OK);
    assert_int_equal(tes_set_parent(w, inst_ents[0], mid), TES_OK);
    tes_entity_t ents[3] = {root, mid, inst_ents[0]};
    char before[2048], after[2048];
    picture(w, ents, 3, before, sizeof before);
    /* A member of an instance in the subtree refuses every destroy call. */
    assert_int_equal(tes_destroy(w, root), TES_ERR_OWNED);
    expect_detail(w, TES_ERR_OWNED, "instance");
    assert_int_equal(tes_destroy_n(w, &root, 1), TES_ERR_OWNED);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{pos}}});
    assert_int_equal(tes_destroy_matching(q), TES_ERR_OWNED);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, root), TES_ERR_OWNED);
    assert_int_equal(tes_defer_end(w), TES_OK);
    picture(w, ents, 3, after, sizeof after);
    assert_string_equal(before, after);
    assert_true(tes_alive(w, inst_ents[1]));
    /* The instance's own destroy takes the members' descendants too. */
    tes_entity_t leaf = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, leaf, inst_ents[1]), TES_OK);
    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    assert_false(tes_alive(w, leaf));
    assert_false(tes_alive(w, inst_ents[0]));
    assert_int_equal(tes_children(w, mid, NULL, 0), 0);
    /* Now nothing owned is left under root. */
    assert_int_equal(tes_destroy(w, root), TES_OK);
    assert_false(tes_alive(w, mid));
    tes_query_free(q);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_instance_destroy_refuses_foreign_member(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.strict_lifecycle = true});
    tes_entity_t pf = tes_prefab_new(w);
    tes_entity_t a[1], b[1];
    tes_instance_t ia = tes_instantiate(w, pf, a, 1);
    tes_instance_t ib = tes_instantiate(w, pf, b, 1);
    assert_int_equal(tes_set_parent(w, b[0], a[0]), TES_OK);
    assert_int_equal(tes_instance_destroy(w, ia), TES_ERR_OWNED);
    expect_detail(w, TES_ERR_OWNED, NULL);
    assert_true(tes_alive(w, a[0]) && tes_alive(w, b[0]));
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_instance_destroy(w, ia), TES_ERR_OWNED);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_alive(w, a[0]));
    assert_int_equal(tes_instance_destroy(w, ib), TES_OK);
    assert_int_equal(tes_instance_destroy(w, ia), TES_OK);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ deferred */

static void test_deferred_links(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t a = tes_spawn(w), b = tes_spawn(w), c = tes_spawn(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent(w, b, a), TES_OK);
    assert_true(tes_parent(w, b) == TES_NULL); /* not yet */
    tes_entity_t d = tes_spawn(w);             /* a deferred spawn links too */
    assert_int_equal(tes_set_parent(w, d, b), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_parent(w, b) == a);
    assert_true(tes_parent(w, d) == b);

    /* A cycle that appears only when applied is refused by the flush. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent(w, c, d), TES_OK);
    assert_int_equal(tes_set_parent(w, a, c), TES_OK); /* fine now: c is a root */
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "cycle");
    assert_true(tes_parent(w, c) == d);
    assert_true(tes_parent(w, a) == TES_NULL);

    /* A child that dies before the flush: the link is dropped and reported. */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, e), TES_OK);
    assert_int_equal(tes_set_parent(w, e, a), TES_OK); /* e is alive until the flush */
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "died before the flush");
    assert_int_equal(tes_children(w, a, NULL, 0), 1);

    /* A deferred destroy cascades over the tree as it is when applied. */
    tes_entity_t late = tes_spawn(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent(w, late, d), TES_OK);
    assert_int_equal(tes_destroy(w, a), TES_OK);
    assert_int_equal(tes_children(w, d, NULL, 0), 1); /* c only: nothing applied yet */
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_false(tes_alive(w, a) || tes_alive(w, b) || tes_alive(w, d) || tes_alive(w, c));
    assert_false(tes_alive(w, late));
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ names */

static void test_names_and_paths(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t ship = spawn_named(w, TES_NULL, "ship");
    tes_entity_t turret = spawn_named(w, ship, "turret");
    tes_entity_t barrel = spawn_named(w, turret, "barrel");
    tes_entity_t other = spawn_named(w, TES_NULL, "other");
    tes_entity_t turret2 = spawn_named(w, other, "turret");
    assert_string_equal(tes_name(w, ship), "ship");
    assert_true(tes_lookup_path(w, "ship/turret/barrel") == barrel);
    assert_true(tes_lookup_path(w, "other/turret") == turret2);
    assert_true(tes_lookup_path(w, "ship") == ship);
    assert_true(tes_lookup_path(w, "ship/barrel") == TES_NULL);
    assert_true(tes_lookup_path(w, "") == TES_NULL);
    assert_true(tes_lookup_path(w, "ship//turret") == TES_NULL);
    assert_true(tes_lookup_path(w, "ship/") == TES_NULL);
    assert_true(tes_lookup_path(w, NULL) == TES_NULL);
    char buf[64];
    assert_int_equal(tes_path(w, barrel, buf, sizeof buf), 18);
    assert_string_equal(buf, "ship/turret/barrel");
    /* A short buffer: the length, and a terminated prefix. */
    assert_int_equal(tes_path(w, barrel, buf, 8), 18);
    assert_string_equal(buf, "ship/tu");
    assert_int_equal(tes_path(w, barrel, NULL, 0), 18);
    assert_int_equal(tes_path(w, barrel, NULL, 4), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "cap");
    /* An unnamed ancestor: no path. */
    tes_entity_t anon = tes_spawn(w), kid = spawn_named(w, anon, "kid");
    assert_int_equal(tes_path(w, kid, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    /* Renaming and removing. */
    assert_int_equal(tes_set_name(w, turret, "gun"), TES_OK);
    assert_true(tes_lookup_path(w, "ship/gun/barrel") == barrel);
    assert_true(tes_lookup_path(w, "ship/turret") == TES_NULL);
    assert_int_equal(tes_set_name(w, turret, "gun"), TES_OK);
    assert_int_equal(tes_set_name(w, turret, NULL), TES_OK);
    assert_null(tes_name(w, turret));
    assert_true(tes_lookup_path(w, "ship/gun") == TES_NULL);
    assert_int_equal(tes_set_name(w, turret, "turret"), TES_OK);
    /* Reparenting carries the name: found under the new parent only. */
    assert_int_equal(tes_set_parent(w, barrel, other), TES_OK);
    assert_true(tes_lookup_path(w, "other/barrel") == barrel);
    assert_true(tes_lookup_path(w, "ship/turret/barrel") == TES_NULL);
    /* Destroy drops names. */
    assert_int_equal(tes_destroy(w, other), TES_OK);
    assert_true(tes_lookup_path(w, "other") == TES_NULL);
    assert_null(tes_name(w, barrel));
    tes_entity_t again = spawn_named(w, TES_NULL, "other");
    assert_true(tes_lookup_path(w, "other") == again);
    /* A 255-byte name is fine. */
    char longest[256];
    memset(longest, 'x', 255);
    longest[255] = '\0';
    assert_int_equal(tes_set_name(w, kid, longest), TES_OK);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_name_refusals(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t a = spawn_named(w, TES_NULL, "a");
    tes_entity_t b = spawn_named(w, TES_NULL, "b");
    tes_entity_t a1 = spawn_named(w, a, "x");
    tes_entity_t b1 = spawn_named(w, b, "x");
    tes_entity_t a2 = spawn_named(w, a, "y");
    tes_entity_t dead = tes_spawn(w);
    tes_destroy(w, dead);
    tes_entity_t ents[5] = {a, b, a1, b1, a2};
    char before[4096], after[4096];
    picture(w, ents, 5, before, sizeof before);
    char too_long[300];
    memset(too_long, 'n', 299);
    too_long[299] = '\0';
    assert_int_equal(tes_set_name(w, a2, ""), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "empty");
    assert_int_equal(tes_set_name(w, a2, too_long), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "255");
    too_long[256] = '\0';
    assert_int_equal(tes_set_name(w, a2, too_long), TES_ERR_INVALID);
    assert_int_equal(tes_set_name(w, a2, "p/q"), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "'/'");
    assert_int_equal(tes_set_name(w, a2, "x"), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "already named");
    assert_int_equal(tes_set_name(w, b, "a"), TES_ERR_INVALID); /* roots are siblings */
    expect_detail(w, TES_ERR_INVALID, "already named");
    assert_int_equal(tes_set_name(w, dead, "z"), TES_ERR_STALE);
    expect_detail(w, TES_ERR_STALE, NULL);
    /* Reparenting into a same-named sibling. */
    assert_int_equal(tes_set_parent(w, b1, a), TES_ERR_INVALID);
    expect_detail(w, TES_ERR_INVALID, "already has a child");
    picture(w, ents, 5, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(tes_set_parent(w, a1, TES_NULL), TES_OK);
    assert_int_equal(tes_set_parent(w, b1, TES_NULL), TES_ERR_INVALID); /* among the roots */
    expect_detail(w, TES_ERR_INVALID, "the roots");
    assert_true(tes_parent(w, b1) == b);
    assert_null(tes_name(w, dead));
    assert_int_equal(tes_set_name(NULL, a, "q"), TES_ERR_INVALID);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_deferred_link_name_clash(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t p = spawn_named(w, TES_NULL, "p");
    tes_entity_t c1 = spawn_named(w, TES_NULL, "c");
    tes_entity_t c2 = tes_spawn(w);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent(w, c2, p), TES_OK);
    assert_int_equal(tes_set_name(w, c2, "c"), TES_ERR_INVALID); /* a root already is */
    assert_int_equal(tes_set_parent(w, c1, p), TES_OK);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes_set_name(w, c2, "c"), TES_ERR_INVALID);
    expect_children(w, p, (tes_entity_t[]){c2, c1}, 2);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ memory */

static void test_allocation_failures(void **state)
{
    (void)state;
    /* Each call is retried with its k-th allocation failing until it
     * succeeds; every failure must leave the forest as it was. */
    for (int scenario = 0; scenario < 5; scenario++) {
        for (uint64_t k = 1;; k++) {
            ca_state_t ca;
            ca_init(&ca, 0);
            tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
            tes_entity_t e[4];
            for (int i = 0; i < 4; i++)
                e[i] = tes_spawn(w);
            for (int i = 0; i < 2000; i++)
                tes_spawn(w); /* a second link page */
            tes_entity_t far = tes_spawn(w);
            if (scenario >= 1) {
                assert_int_equal(tes_set_parent(w, e[1], e[0]), TES_OK);
                assert_int_equal(tes_set_name(w, e[1], "one"), TES_OK);
            }
            char before[2048], after[2048];
            picture(w, e, 4, before, sizeof before);
            ca_fail_in(&ca, k);
            int rc;
            switch (scenario) {
            case 0: rc = tes_set_parent(w, far, e[0]); break;
            case 1: rc = tes_set_parent(w, e[1], far); break;
            case 2: rc = tes_set_name(w, e[2], "two"); break;
            case 4: rc = tes_clone(w, e[1]) ? TES_OK : tes_last_error(w); break;
            case 3:
                assert_int_equal(tes_defer_begin(w), TES_OK);
                rc = tes_set_parent(w, e[3], e[1]);
                if (rc == TES_OK)
                    rc = tes_destroy(w, e[0]);
                ca_fail_in(&ca, 0);
                assert_int_equal(tes_defer_end(w), TES_OK);
                break;
            default: rc = TES_ERR_INVALID; fail();
            }
            ca_fail_in(&ca, 0);
            uint64_t failures = ca.failures;
            if (rc != TES_OK) {
                assert_int_equal(rc, TES_ERR_NOMEM);
                picture(w, e, 4, after, sizeof after);
                if (scenario != 3)
                    assert_string_equal(before, after);
            }
            assert_int_equal(tes__world_check(w), 0);
            tes_world_free(w);
            assert_int_equal(ca.live_blocks, 0);
            assert_int_equal(ca.live_bytes, 0);
            if (failures == 0)
                break;
            assert_true(k < 100);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_basics),
        cmocka_unit_test(test_links_do_not_move_rows),
        cmocka_unit_test(test_link_refusals),
        cmocka_unit_test(test_clone_keeps_parent),
        cmocka_unit_test(test_cascade_destroy),
        cmocka_unit_test(test_cascade_destroy_n_and_matching),
        cmocka_unit_test(test_cascade_strict_lifecycle),
        cmocka_unit_test(test_instance_destroy_refuses_foreign_member),
        cmocka_unit_test(test_deferred_links),
        cmocka_unit_test(test_names_and_paths),
        cmocka_unit_test(test_name_refusals),
        cmocka_unit_test(test_deferred_link_name_clash),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
