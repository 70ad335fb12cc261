/*
 * The re-entrancy matrix: every public call of tessera.h is made from every
 * hook kind (ctor, dtor, copy, move, on_add, on_set, on_remove) of a
 * component, in every context a hook can run in (an immediate call, the
 * flush of tes_defer_end, the flush that ends an iteration and the calls
 * queued during it, tes_instantiate / tes_instance_destroy, tes_world_free,
 * building an owning group, a by-depth query with a parent term and the
 * cascading destroy of a tree), for the component in a table, in a sparse
 * store, and in a store an owning group reorders. The hierarchy's calls
 * are rows too: links and names are structural (refused inside hooks),
 * its reads work, and the snapshot of "nothing changed" holds links and
 * names. Each cell asserts the
 * documented outcome (docs/reference.md, "Hook rules"): the call works as documented, or it is refused with
 * TES_ERR_BUSY and changes nothing (same entities, same components, same
 * values, same bytes allocated).
 *
 * The matrix is generated from three tables: CALLS (reentrancy_calls.h: one
 * wrapper per public call, with valid arguments prepared by the fixture),
 * the hook kinds, and CONTEXTS (a function that makes every hook kind fire,
 * and the kinds that fire there for each storage). A hook armed with a
 * (call, kind) pair runs the call each time that kind fires (once for calls
 * that consume a fixture object). Failures are recorded inside the hook and
 * asserted after the context returns, so a failing cell never unwinds
 * through the library. Each cell also checks it really ran: a cell whose
 * hook kind never fires in its context is listed as not applicable, and
 * every other one must have run at least once.
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
#include "unit/reentrancy_calls.h"

enum { K_CTOR, K_DTOR, K_COPY, K_MOVE, K_ON_ADD, K_ON_SET, K_ON_REMOVE, K_COUNT };
static const char *const KIND_NAMES[K_COUNT] = {"ctor",   "dtor",   "copy",     "move",
                                                "on_add", "on_set", "on_remove"};

enum { ST_TABLE, ST_SPARSE, ST_OWNED, ST_COUNT };
static const char *const STORAGE_NAMES[ST_COUNT] = {"table", "sparse", "owned"};

/* What a state snapshot holds: entity-level facts plus the world stats. */
#define NSNAP (NBY + NSUBJ + 10)
typedef struct snapshot {
    tes_world_stats_t stats;
    bool deferred;
    int32_t count;
    bool alive[NSNAP];
    int32_t ncomps[NSNAP];
    tes_comp_t comps[NSNAP][8];
    int64_t values[NBY];
    tes_entity_t parent[NSNAP]; /* the links and names of the same entities */
    char name[NSNAP][8];
} snapshot_t;

static fixture_t F;

/* ------------------------------------------------------------------ harness */

typedef struct armed {
    const call_t *call;
    int kind;
    int runs;
    char failure[256];
} armed_t;

static armed_t A;
static int fired[K_COUNT];

static void snap(snapshot_t *s)
{
    memset(s, 0, sizeof *s);
    tes_world_stats(F.w, &s->stats);
    s->stats.allocations = 0; /* allocator calls made and undone are no change */
    s->deferred = tes_is_deferred(F.w);
    s->count = tes_entity_count(F.w);
    tes_entity_t list[NSNAP] = {F.fresh, F.tgt, F.dis, F.prefab, F.child, F.member, TES_NULL};
    for (int i = 0; i < NBY; i++)
        list[7 + i] = F.by[i];
    for (int i = 0; i < NSUBJ; i++)
        list[7 + NBY + i] = F.subj[i];
    list[7 + NBY + NSUBJ] = F.root;
    list[8 + NBY + NSUBJ] = F.kid[0];
    list[9 + NBY + NSUBJ] = F.kid[1];
    for (int i = 0; i < NSNAP; i++) {
        s->alive[i] = tes_alive(F.w, list[i]);
        s->ncomps[i] = tes_components_of(F.w, list[i], s->comps[i], 8);
        s->parent[i] = tes_parent(F.w, list[i]);
        const char *name = s->alive[i] ? tes_name(F.w, list[i]) : NULL;
        if (name)
            snprintf(s->name[i], sizeof s->name[i], "%s", name);
    }
    for (int i = 0; i < NBY; i++) {
        const int64_t *v = tes_get(F.w, F.by[i], F.b);
        s->values[i] = v ? *v : -1;
    }
}

static void record_failure(const char *what)
{
    if (!A.failure[0])
        snprintf(A.failure, sizeof A.failure, "%s (run %d)", what, A.runs);
}

static void run_armed(int kind)
{
    fired[kind]++;
    if (!A.call || A.kind != kind || (A.call->once && A.runs))
        return;
    A.runs++;
    /* A status the call must replace (BUSY) or keep (a read). The
     * snapshots read before the provocation and after the status is taken:
     * a read that fails (tes_components_of of TES_NULL) records too. */
    snapshot_t before, after;
    snap(&before);
    if (tes_query_new(F.w, NULL) != NULL || tes_last_error(F.w) != TES_ERR_INVALID)
        record_failure("could not provoke TES_ERR_INVALID");
    const char *why = A.call->fn(&F);
    if (why)
        record_failure(why);
    int status = tes_last_error(F.w);
    snap(&after);
    if (A.call->expect == BUSY) {
        if (status != TES_ERR_BUSY)
            record_failure("refused call did not record TES_ERR_BUSY");
        if (memcmp(&before, &after, sizeof before) != 0)
            record_failure("refused call changed the world");
    } else {
        /* A working call changes no entity (only queries and components). */
        before.stats = after.stats;
        if (memcmp(&before, &after, sizeof before) != 0)
            record_failure("call changed entities");
    }
}

/* H's hooks: the default behaviour (zero-fill, memcpy), plus the armed call. */
static void h_ctor(void *ptr, int32_t n, void *ctx)
{
    (void)ctx;
    memset(ptr, 0, (size_t)n * sizeof(int64_t));
    run_armed(K_CTOR);
}
static void h_dtor(void *ptr, int32_t n, void *ctx)
{
    (void)ctx;
    memset(ptr, 0xdd, (size_t)n * sizeof(int64_t));
    run_armed(K_DTOR);
}
static void h_copy(void *dst, const void *src, int32_t n, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)n * sizeof(int64_t));
    run_armed(K_COPY);
}
static void h_move(void *dst, void *src, int32_t n, void *ctx)
{
    (void)ctx;
    memcpy(dst, src, (size_t)n * sizeof(int64_t));
    run_armed(K_MOVE);
}
static void h_on_add(tes_world_t *w, tes_entity_t e, void *p, void *c)
{
    (void)w, (void)e, (void)p, (void)c;
    run_armed(K_ON_ADD);
}
static void h_on_set(tes_world_t *w, tes_entity_t e, void *p, void *c)
{
    (void)w, (void)e, (void)p, (void)c;
    run_armed(K_ON_SET);
}
static void h_on_remove(tes_world_t *w, tes_entity_t e, void *p, void *c)
{
    (void)w, (void)e, (void)p, (void)c;
    run_armed(K_ON_REMOVE);
}

static tes_comp_t reg(const char *name, size_t size, tes_storage_t storage, tes_hooks_t hooks)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage, .hooks = hooks};
    tes_comp_t c = tes_component(F.w, &d);
    assert_int_not_equal(c, 0);
    return c;
}

static void setup_fixture(int storage)
{
    memset(&F, 0, sizeof F);
    F.storage = storage;
    F.w = tes_world_new(NULL);
    assert_non_null(F.w);
    tes_hooks_t hooks = {h_ctor, h_dtor, h_copy, h_move, h_on_add, h_on_set, h_on_remove, NULL, NULL, NULL};
    tes_storage_t hs = storage == ST_TABLE ? TES_STORAGE_TABLE : TES_STORAGE_SPARSE;
    F.h = reg("H", sizeof(int64_t), hs, hooks);
    F.b = reg("B", sizeof(int64_t), TES_STORAGE_TABLE, (tes_hooks_t){0});
    F.x = reg("X", sizeof(int64_t), TES_STORAGE_TABLE, (tes_hooks_t){0});
    F.t = reg("T", 0, TES_STORAGE_TABLE, (tes_hooks_t){0});
    F.g = reg("G", 0, TES_STORAGE_SPARSE, (tes_hooks_t){0});
    F.s1 = reg("S1", sizeof(int64_t), TES_STORAGE_SPARSE, (tes_hooks_t){0});
    F.s2 = reg("S2", sizeof(int64_t), TES_STORAGE_SPARSE, (tes_hooks_t){0});
    F.o1 = reg("O1", sizeof(int64_t), TES_STORAGE_SPARSE, (tes_hooks_t){0});
    F.o2 = reg("O2", sizeof(int64_t), TES_STORAGE_SPARSE, (tes_hooks_t){0});
    tes_world_t *w = F.w;
    for (int i = 0; i < NBY; i++) {
        int64_t v = 100 + i;
        F.by[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, F.by[i], F.b, &v), TES_OK);
    }
    for (int i = 0; i < NSUBJ; i++) {
        int64_t v = 10 + i;
        F.subj[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, F.subj[i], F.h, &v), TES_OK);
    }
    /* A non-member at the front of the owned store, so joining swaps. */
    assert_int_equal(tes_add(w, F.subj[0], F.g), TES_OK);
    /* The bystanders by[0] and by[1] are a named pair; root, kid[0] and
     * kid[1] a chain of three subjects. */
    assert_int_equal(tes_set_parent(w, F.by[1], F.by[0]), TES_OK);
    assert_int_equal(tes_set_name(w, F.by[0], "by0"), TES_OK);
    assert_int_equal(tes_set_name(w, F.by[1], "by1"), TES_OK);
    tes_entity_t chain[3];
    for (int i = 0; i < 3; i++) {
        int64_t v = 20 + i;
        chain[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, chain[i], F.h, &v), TES_OK);
        if (i)
            assert_int_equal(tes_set_parent(w, chain[i], chain[i - 1]), TES_OK);
    }
    F.root = chain[0];
    F.kid[0] = chain[1];
    F.kid[1] = chain[2];
    F.fresh = tes_spawn(w);
    F.tgt = tes_spawn(w);
    F.dis = tes_spawn(w);
    assert_int_equal(tes_add(w, F.dis, F.t), TES_OK);
    assert_int_equal(tes_disable(w, F.dis), TES_OK);
    F.prefab = tes_prefab_new(w);
    F.child = tes_prefab_child(w, F.prefab);
    int64_t pv = 7;
    assert_int_equal(tes_set(w, F.prefab, F.h, &pv), TES_OK);
    assert_int_equal(tes_set(w, F.child, F.h, &pv), TES_OK);
    tes_entity_t out[2];
    F.inst = tes_instantiate(w, F.prefab, out, 2);
    assert_true(F.inst != 0);
    F.member = out[0];
    tes_query_desc_t qb = {.terms = {{F.b}}};
    F.q_b = tes_query_new(w, &qb);
    F.q_victim = tes_query_new(w, &qb);
    tes_query_desc_t qg = {.terms = {{F.b}, {F.t, TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP};
    F.q_group = tes_query_new(w, &qg);
    tes_query_desc_t qo = {.terms = {{F.o1}, {F.o2}}, .flags = TES_QUERY_OWNING_GROUP};
    if (storage == ST_OWNED)
        qo = (tes_query_desc_t){.terms = {{F.h}, {F.g}}, .flags = TES_QUERY_OWNING_GROUP};
    F.q_own = tes_query_new(w, &qo);
    assert_non_null(F.q_b);
    assert_non_null(F.q_victim);
    assert_non_null(F.q_group);
    assert_non_null(F.q_own);
    assert_int_equal(tes__world_check(w), TES_OK);
}

/* ------------------------------------------------------------------ contexts */

/* Makes every hook kind of H fire: an add (ctor, on_add), a set (copy,
 * on_set), a row move or a store reorder (move), a remove (on_remove,
 * dtor). Returns the first failed status. */
static int change_everything(void)
{
    tes_world_t *w = F.w;
    int rc = TES_OK, r;
    int64_t v = 55;
#define STEP(call) ((r = (call)) != TES_OK && rc == TES_OK ? (rc = r) : 0)
    STEP(tes_add(w, F.fresh, F.h));
    STEP(tes_set(w, F.subj[0], F.h, &v));
    if (F.storage == ST_TABLE)
        STEP(tes_add(w, F.subj[1], F.x)); /* H's row moves */
    else
        STEP(tes_remove(w, F.subj[1], F.h)); /* the last value fills the hole */
    STEP(tes_add(w, F.subj[2], F.g));        /* joins the owning group: swaps */
    int64_t *p = tes_ensure(w, F.subj[2], F.h); /* deferred: staged, assigned at the flush */
    STEP(p ? TES_OK : tes_last_error(w));
    if (p)
        *p = 12;
    STEP(tes_remove(w, F.subj[3], F.h));
    /* The bulk, clone, clear, destroy and instance paths run the same hooks
     * from code of their own. */
    STEP(tes_spawn_n(w, 2, &F.h, 1, F.bulk));
    F.copy = tes_clone(w, F.subj[2]);
    STEP(F.copy ? TES_OK : tes_last_error(w));
    STEP(tes_clear(w, F.bulk[0]));
    STEP(tes_destroy(w, F.bulk[1]));
    tes_entity_t out[2];
    tes_instance_t inst = tes_instantiate(w, F.prefab, out, 2);
    STEP(inst ? TES_OK : tes_last_error(w));
    STEP(tes_instance_destroy(w, inst));
    F.gone = out[0];
#undef STEP
    return rc;
}

/* What change_everything leaves behind. */
static void check_changed(void)
{
    tes_world_t *w = F.w;
    const int64_t *v = tes_get(w, F.subj[0], F.h);
    assert_non_null(v);
    assert_int_equal(*v, 55);
    assert_true(tes_has(w, F.fresh, F.h));
    assert_int_equal(*(const int64_t *)tes_get(w, F.fresh, F.h), 0);
    if (F.storage == ST_TABLE) {
        assert_true(tes_has(w, F.subj[1], F.x));
        assert_int_equal(*(const int64_t *)tes_get(w, F.subj[1], F.h), 11);
    } else {
        assert_false(tes_has(w, F.subj[1], F.h));
    }
    assert_true(tes_has(w, F.subj[2], F.g));
    assert_int_equal(*(const int64_t *)tes_get(w, F.subj[2], F.h), 12);
    assert_false(tes_has(w, F.subj[3], F.h));
    assert_true(tes_alive(w, F.bulk[0]));
    assert_int_equal(tes_components_of(w, F.bulk[0], NULL, 0), 0);
    assert_false(tes_alive(w, F.bulk[1]));
    assert_int_equal(*(const int64_t *)tes_get(w, F.copy, F.h), 12);
    assert_true(tes_has(w, F.copy, F.g));
    assert_false(tes_alive(w, F.gone));
}

static void ctx_immediate(void)
{
    assert_int_equal(change_everything(), TES_OK);
    check_changed();
}

static void ctx_flush(void)
{
    assert_int_equal(tes_defer_begin(F.w), TES_OK);
    assert_int_equal(change_everything(), TES_OK);
    assert_int_equal(tes_defer_end(F.w), TES_OK);
    assert_false(tes_is_deferred(F.w));
    check_changed();
}

static void ctx_iteration(void)
{
    tes_iter_t it = tes_query_iter(F.q_b);
    int32_t n = 0;
    bool changed = false;
    while (tes_iter_next(&it)) {
        if (!changed) {
            assert_int_equal(change_everything(), TES_OK);
            changed = true;
        }
        n += it.count;
    }
    assert_int_equal(n, NBY);
    assert_false(tes_is_deferred(F.w));
    check_changed();
}

static void ctx_instances(void)
{
    tes_entity_t a[2], b[2];
    tes_instance_t ia = tes_instantiate(F.w, F.prefab, a, 2);
    tes_instance_t ib = tes_instantiate(F.w, F.prefab, b, 2);
    assert_true(ia && ib);
    assert_int_equal(tes_instance_destroy(F.w, ia), TES_OK);
    assert_false(tes_alive(F.w, a[0]) || tes_alive(F.w, a[1]));
    assert_int_equal(*(const int64_t *)tes_get(F.w, b[0], F.h), 7);
    assert_int_equal(*(const int64_t *)tes_get(F.w, b[1], F.h), 7);
}

/* Building an owning group moves values of the stores it takes over. */
static void ctx_owning_build(void)
{
    if (F.storage != ST_SPARSE)
        return; /* H is in a table, or already owned */
    assert_int_equal(tes_add(F.w, F.subj[2], F.g), TES_OK);
    tes_query_desc_t d = {.terms = {{F.h}, {F.g}}, .flags = TES_QUERY_OWNING_GROUP};
    tes_query_t *q = tes_query_new(F.w, &d);
    assert_non_null(q);
    assert_int_equal(tes_query_count(q), 2);
    assert_int_equal(*(const int64_t *)tes_get(F.w, F.subj[2], F.h), 12);
    assert_int_equal(*(const int64_t *)tes_get(F.w, F.subj[1], F.h), 11);
}

/* Cascades: a by-depth query reading the parents' H, whose loop changes
 * everything (deferred, flushed when the iteration ends), then the destroy
 * of the chain's root, which destroys its descendants first (their hooks
 * fire in post-order, inside the one destroy call). */
static void ctx_cascade(void)
{
    tes_world_t *w = F.w;
    tes_query_desc_t d = {.terms = {{F.h, .access = TES_IN},
                                    {F.h, .oper = TES_OPTIONAL, .access = TES_IN,
                                     .src = TES_SRC_PARENT}},
                          .flags = TES_QUERY_CASCADE};
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    tes_iter_t it = tes_query_iter(q);
    bool changed = false;
    int32_t depth = 0, chain = 0;
    while (tes_iter_next(&it)) {
        assert_true(it.depth >= depth);
        depth = it.depth;
        const int64_t *up = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++)
            if (it.entities[i] == F.kid[0] || it.entities[i] == F.kid[1])
                chain += up && up[i] == (it.entities[i] == F.kid[0] ? 20 : 21);
        if (!changed) {
            assert_int_equal(change_everything(), TES_OK);
            changed = true;
        }
    }
    assert_int_equal(chain, 2);
    tes_query_free(q);
    check_changed();
    assert_int_equal(tes_destroy(w, F.root), TES_OK);
    assert_false(tes_alive(w, F.root) || tes_alive(w, F.kid[0]) || tes_alive(w, F.kid[1]));
}

static void ctx_world_free(void)
{
    tes_world_free(F.w);
    F.w = NULL;
}

typedef struct context {
    const char *name;
    void (*run)(void);
    uint32_t kinds[ST_COUNT]; /* per storage: the hook kinds that fire here */
} context_t;

#define ALL_KINDS ((1u << K_COUNT) - 1)
#define EVERY(kinds) {kinds, kinds, kinds}
static const context_t CONTEXTS[] = {
    {"immediate", ctx_immediate, EVERY(ALL_KINDS)},
    {"flush", ctx_flush, EVERY(ALL_KINDS)},
    {"iteration", ctx_iteration, EVERY(ALL_KINDS)},
    /* Instantiation fires no on_set. */
    {"instantiate/instance_destroy", ctx_instances, EVERY(ALL_KINDS & ~(1u << K_ON_SET))},
    {"cascade query/cascading destroy", ctx_cascade, EVERY(ALL_KINDS)},
    /* tes_world_free runs destructors only. */
    {"world_free", ctx_world_free, EVERY(1u << K_DTOR)},
    /* Only a sparse H can be taken over (moves only). */
    {"owning group build", ctx_owning_build, {0, 1u << K_MOVE, 0}},
};
#define NCONTEXTS ((int)(sizeof CONTEXTS / sizeof CONTEXTS[0]))

/* After the context: what the calls left must be right too. */
static void check_after(void)
{
    if (!F.w)
        return;
    tes_world_t *w = F.w;
    assert_int_equal(tes__world_check(w), TES_OK);
    assert_false(tes_is_deferred(w));
    assert_int_equal(tes_query_count(F.q_b), NBY);
    if (F.q_kept) {
        /* The group built inside a hook matches what a plain query does. */
        tes_query_desc_t d = {.terms = {{F.h}, {F.x, TES_NOT}}};
        tes_query_t *plain = tes_query_new(w, &d);
        int32_t expected = tes_query_count(plain);
        int32_t n = 0;
        tes_iter_t it = tes_query_iter(F.q_kept);
        while (tes_iter_next(&it)) {
            const int64_t *hv = tes_field(&it, 0);
            for (int32_t i = 0; i < it.count; i++) {
                assert_true(tes_has(w, it.entities[i], F.h));
                assert_false(tes_has(w, it.entities[i], F.x));
                assert_true(hv + i == tes_get(w, it.entities[i], F.h));
            }
            n += it.count;
        }
        assert_int_equal(n, expected);
        assert_int_equal(tes_query_count(F.q_kept), expected);
        /* And it keeps up with later changes. */
        assert_int_equal(tes_add(w, F.by[0], F.h), TES_OK);
        assert_int_equal(tes_query_count(F.q_kept), expected + 1);
        tes_query_free(plain);
    }
    if (F.own_freed) {
        /* The freed owning group released its stores. */
        tes_query_desc_t qo = {.terms = {{F.o1}, {F.o2}}, .flags = TES_QUERY_OWNING_GROUP};
        if (F.storage == ST_OWNED)
            qo = (tes_query_desc_t){.terms = {{F.h}, {F.g}}, .flags = TES_QUERY_OWNING_GROUP};
        tes_query_t *q = tes_query_new(w, &qo);
        assert_non_null(q);
        tes_query_free(q);
    }
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static int cells_run, cells_na, cells_failed;

static void run_cell(int storage, int ctx, int kind, int call)
{
    setup_fixture(storage);
    memset(fired, 0, sizeof fired);
    memset(&A, 0, sizeof A);
    A.call = &CALLS[call];
    A.kind = kind;
    CONTEXTS[ctx].run();
    armed_t done = A;
    A.call = NULL;
    check_after();
    bool applicable = (CONTEXTS[ctx].kinds[storage] >> kind) & 1;
    if (!applicable) {
        cells_na++;
        if (done.runs && ++cells_failed)
            print_error("cell [%s, %s, %s, %s] is listed as not applicable but ran\n",
                     STORAGE_NAMES[storage], CONTEXTS[ctx].name, KIND_NAMES[kind],
                     CALLS[call].name);
        return;
    }
    cells_run++;
    if ((!done.runs || done.failure[0]) && ++cells_failed)
        print_error("cell [%s, %s, %s, %s]: %s\n", STORAGE_NAMES[storage], CONTEXTS[ctx].name,
                 KIND_NAMES[kind], CALLS[call].name,
                 done.runs ? done.failure : "the hook never fired");
}

static void test_matrix(int storage)
{
    cells_run = cells_na = cells_failed = 0;
    for (int ctx = 0; ctx < NCONTEXTS; ctx++)
        for (int kind = 0; kind < K_COUNT; kind++)
            for (int call = 0; call < NCALLS; call++)
                run_cell(storage, ctx, kind, call);
    print_message("%s storage: %d cells checked, %d not applicable (%d calls x %d hook kinds x %d "
                  "contexts)\n",
                  STORAGE_NAMES[storage], cells_run, cells_na, NCALLS, K_COUNT, NCONTEXTS);
    assert_int_equal(cells_run + cells_na, NCALLS * K_COUNT * NCONTEXTS);
    assert_int_equal(cells_failed, 0);
}

static void test_matrix_table(void **state)
{
    (void)state;
    test_matrix(ST_TABLE);
}

static void test_matrix_sparse(void **state)
{
    (void)state;
    test_matrix(ST_SPARSE);
}

static void test_matrix_owned(void **state)
{
    (void)state;
    test_matrix(ST_OWNED);
}

/* The contexts fire what CONTEXTS says they fire, and nothing else: a hook
 * kind left out of a context's list must really never fire there. */
static void test_contexts_fire_their_hooks(void **state)
{
    (void)state;
    for (int storage = 0; storage < ST_COUNT; storage++) {
        for (int ctx = 0; ctx < NCONTEXTS; ctx++) {
            setup_fixture(storage);
            memset(fired, 0, sizeof fired);
            memset(&A, 0, sizeof A);
            CONTEXTS[ctx].run();
            for (int kind = 0; kind < K_COUNT; kind++) {
                bool listed = (CONTEXTS[ctx].kinds[storage] >> kind) & 1;
                if (listed != (fired[kind] > 0))
                    fail_msg("[%s, %s]: %s fired %d times", STORAGE_NAMES[storage],
                             CONTEXTS[ctx].name, KIND_NAMES[kind], fired[kind]);
            }
            check_after();
        }
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contexts_fire_their_hooks),
        cmocka_unit_test(test_matrix_table),
        cmocka_unit_test(test_matrix_sparse),
        cmocka_unit_test(test_matrix_owned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
