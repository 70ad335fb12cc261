/*
 * tes_set_parent_n: a batch means its pairs applied in order by
 * tes_set_parent, all or nothing. Checked against single calls on a twin
 * world over random batches (with and without names, so both the quick
 * and the general decision run), and one refusal at a time, including
 * those only an earlier pair of the same batch creates (a cycle, a sibling
 * name), each leaving the forest, child order included, exactly as it
 * was, with the pair's index in the detail. Also: argument errors,
 * deferral (one command, checked again at the flush), hooks, allocation
 * failures.
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

/* ------------------------------------------------------------------ helpers */

/* A text picture of the forest over ents[0..n): each entity's parent,
 * depth, name and children in order. */
static void picture(const tes_world_t *w, const tes_entity_t *ents, int n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        tes_entity_t kids[256];
        bool alive = tes_alive(w, ents[i]);
        int32_t k = alive ? tes_children(w, ents[i], kids, 256) : -1;
        const char *name = tes_name(w, ents[i]);
        at += (size_t)snprintf(buf + at, cap - at, "[%d p=%llx d=%d n=%s:", i,
                               (unsigned long long)tes_parent(w, ents[i]),
                               alive ? (int)tes_depth(w, ents[i]) : -9, name ? name : "-");
        for (int32_t j = 0; j < k && j < 256; j++)
            at += (size_t)snprintf(buf + at, cap - at, " %llx", (unsigned long long)kids[j]);
        at += (size_t)snprintf(buf + at, cap - at, "]");
        assert_true(at < cap);
    }
}

static void expect_detail(const tes_world_t *w, const char *word)
{
    const char *d = tes_last_error_detail(w);
    if (!d || !strstr(d, word))
        fail_msg("detail \"%s\" lacks \"%s\"", d ? d : "(none)", word);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define PIC 32768

/* ------------------------------------------------------------------ equivalence */

#define NE 40

/* Builds the same world twice: NE entities, a random forest, some names. */
static tes_world_t *twin(tes_entity_t *e, uint64_t seed, bool names)
{
    tes_world_t *w = tes_world_new(NULL);
    for (int i = 0; i < NE; i++)
        e[i] = tes_spawn(w);
    uint64_t s = seed;
    for (int i = 1; i < NE; i++)
        if (rng_next(&s) % 3)
            tes_set_parent(w, e[i], e[rng_next(&s) % (uint64_t)i]);
    if (names)
        for (int i = 0; i < NE; i += 2) {
            char name[8];
            snprintf(name, sizeof name, "n%d", (int)(rng_next(&s) % 6));
            tes_set_name(w, e[i], name); /* a clash with a sibling is refused: fine */
        }
    return w;
}

/* Random batches on world a, the same pairs one by one on world b: when
 * every single call succeeds the batch must too and the worlds agree;
 * when single call k fails, the batch fails with the same status, names
 * pair k, and world a is as before. b is then rebuilt from a's state by
 * undoing nothing: the twins are rebuilt each round from the same seed. */
static void equivalence(bool names, bool with_dead)
{
    for (uint64_t round = 1; round <= 300; round++) {
        tes_entity_t ea[NE], eb[NE];
        tes_world_t *a = twin(ea, round * 7919u, names), *b = twin(eb, round * 7919u, names);
        uint64_t s = round * 104729u;
        if (with_dead) {
            int d = (int)(rng_next(&s) % NE);
            tes_destroy(a, ea[d]);
            tes_destroy(b, eb[d]);
        }
        size_t n = 1 + (size_t)(rng_next(&s) % 24);
        tes_entity_t ka[24], pa[24], kb[24], pb[24];
        for (size_t i = 0; i < n; i++) {
            int c = (int)(rng_next(&s) % NE), p = (int)(rng_next(&s) % (NE + 4));
            ka[i] = ea[c], kb[i] = eb[c];
            pa[i] = p < NE ? ea[p] : TES_NULL;
            pb[i] = p < NE ? eb[p] : TES_NULL;
        }
        char before[PIC], got[PIC], want[PIC];
        picture(a, ea, NE, before, sizeof before);
        int first = TES_OK;
        size_t at = 0;
        for (size_t i = 0; i < n && first == TES_OK; i++) {
            first = tes_set_parent(b, kb[i], pb[i]);
            at = i;
        }
        int rc = tes_set_parent_n(a, ka, pa, n);
        assert_int_equal(rc, first);
        picture(a, ea, NE, got, sizeof got);
        if (rc == TES_OK) {
            picture(b, eb, NE, want, sizeof want);
            assert_string_equal(got, want);
        } else {
            assert_string_equal(got, before);
            char word[32];
            snprintf(word, sizeof word, "pair %zu", at);
            expect_detail(a, word);
        }
        assert_int_equal(tes__world_check(a), 0);
        assert_int_equal(tes__world_check(b), 0);
        tes_world_free(a);
        tes_world_free(b);
    }
}

static void test_same_as_single_calls(void **state)
{
    (void)state;
    equivalence(false, false);
}

static void test_same_as_single_calls_named(void **state)
{
    (void)state;
    equivalence(true, false);
}

static void test_same_as_single_calls_with_dead(void **state)
{
    (void)state;
    equivalence(true, true);
    equivalence(false, true);
}

/* A batch long enough to run the prefetching loop far ahead, on a world
 * with many leaves: the same forest as single calls. */
static void test_long_batch(void **state)
{
    (void)state;
    enum { KIDS = 5000, PARENTS = 50, PAIRS = 20000 };
    tes_world_t *a = tes_world_new(NULL), *b = tes_world_new(NULL);
    tes_entity_t *ea = malloc(sizeof *ea * (KIDS + PARENTS)), *eb = malloc(sizeof *eb * (KIDS + PARENTS));
    tes_entity_t *ka = malloc(sizeof *ka * PAIRS), *pa = malloc(sizeof *pa * PAIRS);
    assert_non_null(ea);
    assert_non_null(eb);
    assert_non_null(ka);
    assert_non_null(pa);
    assert_int_equal(tes_spawn_n(a, KIDS + PARENTS, NULL, 0, ea), TES_OK);
    assert_int_equal(tes_spawn_n(b, KIDS + PARENTS, NULL, 0, eb), TES_OK);
    for (int i = 0; i < KIDS; i++) {
        assert_int_equal(tes_set_parent(a, ea[PARENTS + i], ea[i % PARENTS]), TES_OK);
        assert_int_equal(tes_set_parent(b, eb[PARENTS + i], eb[i % PARENTS]), TES_OK);
    }
    uint64_t s = 12345;
    for (int i = 0; i < PAIRS; i++) {
        int k = PARENTS + (int)(rng_next(&s) % KIDS), p = (int)(rng_next(&s) % (PARENTS + 1));
        ka[i] = ea[k];
        pa[i] = p < PARENTS ? ea[p] : TES_NULL;
        assert_int_equal(tes_set_parent(b, eb[k], p < PARENTS ? eb[p] : TES_NULL), TES_OK);
    }
    assert_int_equal(tes_set_parent_n(a, ka, pa, PAIRS), TES_OK);
    for (int p = 0; p < PARENTS; p++) {
        static tes_entity_t ga[KIDS], gb[KIDS];
        int32_t na = tes_children(a, ea[p], ga, KIDS), nb = tes_children(b, eb[p], gb, KIDS);
        assert_int_equal(na, nb);
        assert_memory_equal(ga, gb, (size_t)na * sizeof *ga);
    }
    /* A refusal at the very end undoes the 20000 pairs before it. */
    char before[1 << 16], after[1 << 16];
    picture(a, ea, PARENTS, before, sizeof before);
    pa[PAIRS - 1] = ka[PAIRS - 1];
    assert_int_equal(tes_set_parent_n(a, ka, pa, PAIRS), TES_ERR_INVALID);
    expect_detail(a, "pair 19999");
    picture(a, ea, PARENTS, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(tes__world_check(a), 0);
    free(ea), free(eb), free(ka), free(pa);
    tes_world_free(a);
    tes_world_free(b);
}

/* ------------------------------------------------------------------ refusals */

/* Runs a batch that must be refused with status and a detail holding both
 * words, and checks the forest over ents is exactly as before. */
static void refused(tes_world_t *w, const tes_entity_t *ents, int n, const tes_entity_t *kids,
                    const tes_entity_t *parents, size_t count, int status, const char *w1,
                    const char *w2)
{
    char before[PIC], after[PIC];
    picture(w, ents, n, before, sizeof before);
    assert_int_equal(tes_set_parent_n(w, kids, parents, count), status);
    assert_int_equal(tes_last_error(w), status);
    expect_detail(w, w1);
    if (w2)
        expect_detail(w, w2);
    picture(w, ents, n, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(tes__world_check(w), 0);
}

static void test_refusals(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t e[8];
    for (int i = 0; i < 8; i++)
        e[i] = tes_spawn(w);
    /* e0 has children e1 e2 e3 (in that order); e4 under e1. */
    for (int i = 1; i <= 3; i++)
        assert_int_equal(tes_set_parent(w, e[i], e[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[4], e[1]), TES_OK);
    tes_entity_t dead = tes_spawn(w);
    tes_destroy(w, dead);

    /* A stale child or parent, after pairs that moved things. */
    refused(w, e, 8, (tes_entity_t[]){e[2], e[3], dead}, (tes_entity_t[]){e[5], TES_NULL, e[5]}, 3,
            TES_ERR_STALE, "pair 2", "child");
    refused(w, e, 8, (tes_entity_t[]){e[1], e[3]}, (tes_entity_t[]){e[5], dead}, 2,
            TES_ERR_STALE, "pair 1", "parent");
    /* Self. */
    refused(w, e, 8, (tes_entity_t[]){e[2], e[6]}, (tes_entity_t[]){e[6], e[6]}, 2,
            TES_ERR_INVALID, "pair 1", "own parent");
    /* A cycle there already: e0 under its grandchild e4. */
    refused(w, e, 8, (tes_entity_t[]){e[2], e[0]}, (tes_entity_t[]){e[7], e[4]}, 2,
            TES_ERR_INVALID, "pair 1", "cycle");
    /* A cycle only the first pair makes: e5 under e6, then e6 under e5. */
    refused(w, e, 8, (tes_entity_t[]){e[5], e[6]}, (tes_entity_t[]){e[6], e[5]}, 2,
            TES_ERR_INVALID, "pair 1", "cycle");
    /* Deeper: e6 under e4 (under e1 under e0), then e0 under e6. */
    refused(w, e, 8, (tes_entity_t[]){e[3], e[6], e[0]}, (tes_entity_t[]){e[7], e[4], e[6]}, 3,
            TES_ERR_INVALID, "pair 2", "cycle");
    /* Moves around a parent's list, then a refusal: the order comes back
     * (e1 e2 e3 under e0): the middle, the first, the last, a no-op, a
     * move back to the same parent (appended), unlinks. */
    refused(w, e, 8,
            (tes_entity_t[]){e[2], e[1], e[3], e[3], e[2], e[1], e[3], e[0], e[5]},
            (tes_entity_t[]){e[7], e[5], e[0], e[0], e[0], TES_NULL, e[6], e[7], e[5]}, 9,
            TES_ERR_INVALID, "pair 8", "own parent");
    tes_entity_t kids[8];
    assert_int_equal(tes_children(w, e[0], kids, 8), 3);
    assert_true(kids[0] == e[1] && kids[1] == e[2] && kids[2] == e[3]);

    /* Names: e5 "x" under e6, e7 "x" a root, e2 "x" under e0. Moving e7
     * under e6 clashes with e5. A clash only an earlier pair makes: e7
     * leaves the roots, e5 joins them (no clash: e7 left), then e2 joins
     * them and meets e5. */
    assert_int_equal(tes_set_parent(w, e[5], e[6]), TES_OK);
    assert_int_equal(tes_set_name(w, e[5], "x"), TES_OK);
    assert_int_equal(tes_set_name(w, e[7], "x"), TES_OK);
    assert_int_equal(tes_set_name(w, e[2], "x"), TES_OK);
    refused(w, e, 8, (tes_entity_t[]){e[1], e[7]}, (tes_entity_t[]){e[6], e[6]}, 2,
            TES_ERR_INVALID, "pair 1", "\"x\"");
    refused(w, e, 8, (tes_entity_t[]){e[7], e[5], e[2]}, (tes_entity_t[]){e[3], TES_NULL, TES_NULL},
            3, TES_ERR_INVALID, "pair 2", "\"x\"");
    /* Without the clash the same moves are made, names following. */
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){e[7], e[5]},
                                      (tes_entity_t[]){e[3], TES_NULL}, 2),
                     TES_OK);
    assert_true(tes_lookup_path(w, "x") == e[5]);
    assert_true(tes_parent(w, e[7]) == e[3]);
    assert_true(tes_parent(w, e[5]) == TES_NULL);
    assert_string_equal(tes_name(w, e[7]), "x");
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_prefab_refusals(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t pf = tes_prefab_new(w), m1 = tes_prefab_child(w, pf), m2 = tes_prefab_child(w, pf);
    tes_entity_t pf2 = tes_prefab_new(w), n1 = tes_prefab_child(w, pf2);
    tes_entity_t a = tes_spawn(w), b = tes_spawn(w);
    tes_entity_t all[7] = {pf, m1, m2, pf2, n1, a, b};
    refused(w, all, 7, (tes_entity_t[]){a, m1}, (tes_entity_t[]){b, a}, 2, TES_ERR_INVALID,
            "pair 1", "prefab");
    refused(w, all, 7, (tes_entity_t[]){m1, a}, (tes_entity_t[]){pf, m2}, 2, TES_ERR_INVALID,
            "pair 1", "prefab");
    refused(w, all, 7, (tes_entity_t[]){m1, m2}, (tes_entity_t[]){pf, n1}, 2, TES_ERR_INVALID,
            "pair 1", "different prefabs");
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){m1, m2, a}, (tes_entity_t[]){pf, m1, b}, 3),
                     TES_OK);
    assert_true(tes_parent(w, m2) == m1 && tes_parent(w, m1) == pf && tes_parent(w, a) == b);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

static void test_arguments(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t a = tes_spawn(w), b = tes_spawn(w);
    assert_int_equal(tes_set_parent_n(NULL, &a, &b, 1), TES_ERR_INVALID);
    assert_int_equal(tes_set_parent_n(w, NULL, NULL, 0), TES_OK);
    assert_int_equal(tes_set_parent_n(w, NULL, &b, 1), TES_ERR_INVALID);
    expect_detail(w, "children is NULL");
    assert_int_equal(tes_set_parent_n(w, &a, NULL, 1), TES_ERR_INVALID);
    expect_detail(w, "parents is NULL");
    assert_true(tes_parent(w, a) == TES_NULL);
    /* Setting the same parent again keeps the order, as single calls. */
    tes_entity_t c = tes_spawn(w);
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){a, c, a}, (tes_entity_t[]){b, b, b}, 3),
                     TES_OK);
    tes_entity_t kids[4];
    assert_int_equal(tes_children(w, b, kids, 4), 2);
    assert_true(kids[0] == a && kids[1] == c);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ deferral and hooks */

static void test_deferred(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t e[5];
    for (int i = 0; i < 5; i++)
        e[i] = tes_spawn(w);
    char before[PIC], after[PIC];

    /* Queued as one command, applied at the flush in order. */
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){e[1], e[2], e[1]},
                                      (tes_entity_t[]){e[0], e[0], e[2]}, 3),
                     TES_OK);
    assert_true(tes_parent(w, e[1]) == TES_NULL);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_parent(w, e[1]) == e[2] && tes_parent(w, e[2]) == e[0]);
    assert_int_equal(tes_depth(w, e[1]), 2);

    /* Checks that hold whatever the links are run when called. */
    tes_entity_t dead = tes_spawn(w);
    tes_destroy(w, dead);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){e[3], e[4]}, (tes_entity_t[]){e[0], dead}, 2),
                     TES_ERR_STALE);
    expect_detail(w, "pair 1");
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){e[3], e[4]}, (tes_entity_t[]){e[0], e[4]}, 2),
                     TES_ERR_INVALID);
    expect_detail(w, "pair 1");
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_true(tes_parent(w, e[3]) == TES_NULL);

    /* A cycle only the flush sees (the earlier pair makes it): the batch
     * is dropped whole and tes_defer_end reports it. */
    picture(w, e, 5, before, sizeof before);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){e[3], e[4], e[0]},
                                      (tes_entity_t[]){e[1], e[3], e[4]}, 3),
                     TES_OK);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    expect_detail(w, "(deferred): pair 2");
    expect_detail(w, "cycle");
    picture(w, e, 5, after, sizeof after);
    assert_string_equal(before, after);

    /* An entity dies before the flush: dropped whole, reported. */
    tes_entity_t f = tes_spawn(w);
    tes_entity_t all[6] = {e[0], e[1], e[2], e[3], e[4], f};
    picture(w, all, 5, before, sizeof before);
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, f), TES_OK); /* queued first: applied first */
    assert_int_equal(tes_set_parent_n(w, (tes_entity_t[]){e[3], f}, (tes_entity_t[]){e[4], e[3]}, 2),
                     TES_OK);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    expect_detail(w, "died before the flush");
    picture(w, all, 5, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

typedef struct hook_ctx {
    tes_entity_t kid, parent;
    int rc;
    int calls;
} hook_ctx_t;

static void add_hook(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr;
    hook_ctx_t *h = ctx;
    h->rc = tes_set_parent_n(w, &h->kid, &h->parent, 1);
    h->calls++;
}

static void test_in_hook(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    hook_ctx_t ctx = {0};
    tes_component_desc_t d = {0};
    d.name = "Hooked";
    d.size = sizeof(int);
    d.align = _Alignof(int);
    d.hooks.on_add = add_hook;
    d.hooks.ctx = &ctx;
    tes_comp_t c = tes_component(w, &d);
    ctx.kid = tes_spawn(w);
    ctx.parent = tes_spawn(w);
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, c), TES_OK);
    assert_int_equal(ctx.calls, 1);
    assert_int_equal(ctx.rc, TES_ERR_BUSY);
    assert_true(tes_parent(w, ctx.kid) == TES_NULL);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* ------------------------------------------------------------------ memory */

static void test_allocation_failures(void **state)
{
    (void)state;
    /* The batch is retried with its k-th allocation failing until it
     * succeeds: link pages (a far entity's), the undo log (a long batch),
     * sibling-key room (names), the deferred command. */
    for (int scenario = 0; scenario < 3; scenario++) {
        for (uint64_t k = 1;; k++) {
            ca_state_t ca;
            ca_init(&ca, 0);
            tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
            enum { N = 3000 };
            static tes_entity_t e[N], kids[N], parents[N];
            assert_int_equal(tes_spawn_n(w, N, NULL, 0, e), TES_OK);
            assert_int_equal(tes_set_parent(w, e[1], e[0]), TES_OK);
            assert_int_equal(tes_set_name(w, e[1], "one"), TES_OK);
            for (int i = 0; i < N; i++) {
                kids[i] = e[N - 1 - i % 100];
                parents[i] = e[i % 7];
            }
            kids[0] = e[1]; /* named: moves its sibling key */
            parents[0] = e[3];
            char before[PIC], after[PIC];
            tes_entity_t probe[12] = {e[0], e[1], e[2], e[3], e[4], e[5], e[6],
                                      e[N - 1], e[N - 2], e[N - 50], e[N - 99], e[N - 100]};
            picture(w, probe, 12, before, sizeof before);
            if (scenario == 2)
                assert_int_equal(tes_defer_begin(w), TES_OK);
            ca_fail_in(&ca, k);
            int rc = tes_set_parent_n(w, kids, parents, scenario == 0 ? 40 : N);
            ca_fail_in(&ca, 0);
            if (scenario == 2) {
                int end = tes_defer_end(w);
                if (rc == TES_OK)
                    rc = end;
            }
            if (rc != TES_OK) {
                assert_int_equal(rc, TES_ERR_NOMEM);
                picture(w, probe, 12, after, sizeof after);
                assert_string_equal(before, after);
            }
            assert_int_equal(tes__world_check(w), 0);
            tes_world_free(w);
            assert_int_equal(ca.live_blocks, 0);
            if (rc == TES_OK)
                break;
            assert_true(k < 100);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_single_calls),
        cmocka_unit_test(test_same_as_single_calls_named),
        cmocka_unit_test(test_same_as_single_calls_with_dead),
        cmocka_unit_test(test_long_batch),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_prefab_refusals),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_deferred),
        cmocka_unit_test(test_in_hook),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
