/*
 * Differential fuzzer for the hierarchy: random links, reparents, names,
 * clones, cascading destroys (tes_destroy and tes_destroy_n, immediate and
 * deferred), path lookups and snapshot round trips against a small
 * reference model (parent, ordered children, name per entity). Every
 * status is predicted by the model (cycles, self links, stale handles,
 * sibling name clashes, bad names), the destroy order seen by on_remove
 * must be the model's post-order, and after every op the forest, depths,
 * names and paths must equal the model's. Two by-depth queries with a
 * parent term, kept for the world's whole life, then propagate a sum down
 * the forest, each twice from reset sums: their chunks must come by the
 * model's depths and every sum must be the model's. tes_sort_by_depth
 * runs at random (refused while deferred), so each query takes the
 * sorted walk after a sort; once a change ended the sorted order, the
 * first (plain self values) takes the pointer walk, whose order is kept
 * between iterations while nothing it depends on changes (the second pass
 * mostly keeps it, and meets every kind of change across ops), and the
 * second (an OPTIONAL self term) the general walk. Each iteration's walk
 * is predicted and checked, and the forest must come out of every sort
 * unchanged. A quarter of the entities carry a tag
 * that puts them in a second table, so parents lie in two tables.
 *
 * tes_set_parent_n runs too (a quarter of the link ops: a few pairs, some
 * reversing the pair before, so a cycle can come only from an earlier
 * pair): the model applies the pairs in order, all or nothing, and a
 * refusal's detail must name the pair; deferred, the batch is queued
 * whole after the checks that hold whatever the links are.
 *
 * Usage: hier_fuzz [--seeds N] [--first-seed F] [--ops N] [--seed S] (seeds
 * F .. F + N - 1, F = 1 by default; --seed S runs S alone). Exit 1 on the first
 * divergence, printing the seed and op number to replay.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/mem_stream.h"
#include "query/cascade.h"
#include "tessera.h"
#include "world/check.h"
#include "world/depth_order.h"

#define MAXE 160

typedef struct ment {
    tes_entity_t h; /* the handle, kept after death (a stale handle) */
    bool live;
    int parent;     /* model index, -1 for a root */
    int kids[MAXE];
    int nkids;
    char name[8]; /* "" for none */
    int32_t val;  /* its Marker value (a clone copies it) */
} ment_t;

#define BATCH 6

typedef struct qop {
    int kind; /* 0 set_parent, 1 destroy, 2 set_parent_n */
    int a, b; /* model indices (b -1: TES_NULL) */
    int n, ks[BATCH], ps[BATCH]; /* set_parent_n: the pairs */
} qop_t;

static ment_t M[MAXE * 4];
static int NM;
static uint64_t rng;
static unsigned long long g_seed, g_op;
static tes_entity_t seen_log[MAXE * 4];
static int seen_n;
static tes_comp_t TAG, SUM, SIDE, OPT;
static tes_query_t *PROP; /* SUM = parent's SUM + Marker, by depth */
static tes_query_t *PROP_GENERAL; /* the same with an OPTIONAL self term */
/* Coverage counters, printed at the end: a run that never reaches a case
 * proves nothing about it. */
static unsigned long long c_link_ok, c_link_invalid, c_link_stale, c_cascade, c_name_invalid,
    c_defer_error, c_batch_ok, c_batch_refused, c_max_live, c_sort, c_sorted_walks, c_sort_refused, c_pointer_walks, c_kept_walks, c_general_walks;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "hier_fuzz: seed %llu op %llu: %s failed (line %d)\n", g_seed,  \
                    g_op, #cond, __LINE__);                                                 \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static void on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)ptr, (void)ctx;
    if (seen_n < MAXE * 4)
        seen_log[seen_n++] = e;
}

static tes_world_t *new_world(void)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_component_desc_t d = {0};
    d.name = "Marker";
    d.size = 4;
    d.align = 4;
    d.hooks.on_remove = on_remove;
    TAG = tes_component(w, &d);
    SUM = tes_component(w, &(tes_component_desc_t){.name = "Sum", .size = 4, .align = 4});
    SIDE = tes_component(w, &(tes_component_desc_t){.name = "Side"}); /* a tag: a second table */
    PROP = tes_query_new(w, &(tes_query_desc_t){
                                .terms = {{SUM, .access = TES_OUT},
                                          {TAG, .access = TES_IN},
                                          {SUM, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT}},
                                .flags = TES_QUERY_CASCADE});
    /* No entity has Opt: the OPTIONAL self term only makes the query's
     * self values not plain (the general walk when unsorted). */
    OPT = tes_component(w, &(tes_component_desc_t){.name = "Opt", .size = 4, .align = 4});
    PROP_GENERAL = tes_query_new(w, &(tes_query_desc_t){
                                        .terms = {{SUM, .access = TES_OUT},
                                                  {TAG, .access = TES_IN},
                                                  {SUM, .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT},
                                                  {OPT, .oper = TES_OPTIONAL, .access = TES_IN}},
                                        .flags = TES_QUERY_CASCADE});
    if (!PROP || !PROP_GENERAL) {
        fprintf(stderr, "hier_fuzz: the propagation query: %s\n", tes_last_error_detail(w));
        exit(1);
    }
    return w;
}

static bool alive(int i) { return i >= 0 && i < NM && M[i].live; }

static int live_pick(void)
{
    for (int tries = 0; tries < 40; tries++) {
        int i = (int)rnd((uint32_t)(NM ? NM : 1));
        if (alive(i))
            return i;
    }
    return NM ? (int)rnd((uint32_t)NM) : -1; /* maybe dead */
}

static bool is_descendant(int x, int of) /* x in of's subtree (x == of counts) */
{
    for (int p = x; p >= 0; p = M[p].parent)
        if (p == of)
            return true;
    return false;
}

static int sibling_named(int parent, const char *name, int except)
{
    for (int i = 0; i < NM; i++)
        if (alive(i) && i != except && M[i].parent == parent && M[i].name[0] && !strcmp(M[i].name, name))
            return i;
    return -1;
}

static void unlink_m(int c)
{
    int p = M[c].parent;
    if (p < 0)
        return;
    int k = 0;
    while (M[p].kids[k] != c)
        k++;
    memmove(&M[p].kids[k], &M[p].kids[k + 1], (size_t)(M[p].nkids - k - 1) * sizeof(int));
    M[p].nkids--;
    M[c].parent = -1;
}

/* The model's status for tes_set_parent(a, b), and the change if OK. */
static int m_set_parent(int a, int b, bool apply)
{
    if (!alive(a) || (b >= 0 && !alive(b)))
        return TES_ERR_STALE;
    if (b >= 0 && is_descendant(b, a))
        return TES_ERR_INVALID;
    if (M[a].parent == b)
        return TES_OK;
    if (M[a].name[0] && sibling_named(b, M[a].name, a) >= 0)
        return TES_ERR_INVALID;
    if (apply) {
        unlink_m(a);
        if (b >= 0) {
            M[b].kids[M[b].nkids++] = a;
            M[a].parent = b;
        }
    }
    return TES_OK;
}

/* The model's status for tes_set_parent_n of the n pairs, and the change
 * if OK: the pairs in order by m_set_parent, all or nothing (the model is
 * copied first and copied back on a refusal, *at the refused pair). At a
 * flush a dead child or parent is TES_ERR_INVALID. */
static ment_t M_BEFORE[MAXE * 4];
static int m_set_parent_n(const int *ks, const int *ps, int n, bool flush, int *at)
{
    memcpy(M_BEFORE, M, sizeof M);
    for (int i = 0; i < n; i++) {
        int rc = flush && (!alive(ks[i]) || (ps[i] >= 0 && !alive(ps[i])))
                     ? TES_ERR_INVALID
                     : m_set_parent(ks[i], ps[i], true);
        if (rc) {
            memcpy(M, M_BEFORE, sizeof M);
            *at = i;
            return rc;
        }
    }
    return TES_OK;
}

/* The status of tes_set_parent_n called while deferred: only the checks
 * that hold whatever the links are (alive, self). */
static int m_set_parent_n_static(const int *ks, const int *ps, int n, int *at)
{
    for (int i = 0; i < n; i++) {
        *at = i;
        if (!alive(ks[i]) || (ps[i] >= 0 && !alive(ps[i])))
            return TES_ERR_STALE;
        if (ks[i] == ps[i])
            return TES_ERR_INVALID;
    }
    return TES_OK;
}

static void post_order(int r, int *out, int *n)
{
    for (int k = 0; k < M[r].nkids; k++)
        post_order(M[r].kids[k], out, n);
    out[(*n)++] = r;
}

/* Destroys r's subtree in the model; appends the order to want. */
static void m_destroy(int r, tes_entity_t *want, int *nwant)
{
    int order[MAXE * 4], n = 0;
    post_order(r, order, &n);
    unlink_m(r);
    for (int k = 0; k < n; k++) {
        want[(*nwant)++] = M[order[k]].h;
        M[order[k]].live = false;
        M[order[k]].nkids = 0;
        M[order[k]].parent = -1;
        M[order[k]].name[0] = '\0';
    }
}

static tes_entity_t H(int i) { return i >= 0 ? M[i].h : TES_NULL; }

static void model_path(int i, char *buf, size_t cap)
{
    char tmp[300] = "";
    for (int p = i; p >= 0; p = M[p].parent) {
        if (!M[p].name[0]) {
            buf[0] = '\0';
            return;
        }
        char t2[300];
        snprintf(t2, sizeof t2, "%.8s%s%.280s", M[p].name, tmp[0] ? "/" : "", tmp);
        strcpy(tmp, t2);
    }
    snprintf(buf, cap, "%.250s", tmp);
}

/* One propagation by q from sums reset to -1, its walk predicted (sorted:
 * every matched table in sorted state) and checked: every live entity
 * once, by the model's depths, each sum its chain's Marker values. */
static void propagate(tes_world_t *w, tes_query_t *q, bool sorted, int live, const int *depth_of)
{
    for (int i = 0; i < NM; i++)
        if (alive(i))
            *(int32_t *)tes_get_mut(w, M[i].h, SUM) = -1;
    tes__cascade_walk_t want = sorted ? TES__CASCADE_SORTED
                               : q == PROP ? TES__CASCADE_POINTER
                                           : TES__CASCADE_GENERAL;
    const cascade_t *before = atomic_load(&q->cascade_spare);
    if (want == TES__CASCADE_POINTER && before && tes__cascade_order_holds(w, q, before))
        c_kept_walks++;
    int seen = 0, last = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        int32_t *sum = tes_field(&it, 0);
        const int32_t *mark = tes_field(&it, 1);
        const int32_t *up = tes_field(&it, 2);
        CHECK(it.depth >= last);
        last = it.depth;
        for (int32_t k = 0; k < it.count; k++) {
            CHECK(tes_depth(w, it.entities[k]) == it.depth);
            CHECK((up != NULL) == (it.depth > 0));
            sum[k] = (up ? up[k] : 0) + mark[k];
        }
        seen += it.count;
    }
    CHECK(seen == live);
    const cascade_t *after = atomic_load(&q->cascade_spare);
    CHECK(after != NULL && after->walk == want);
    c_sorted_walks += want == TES__CASCADE_SORTED;
    c_pointer_walks += want == TES__CASCADE_POINTER;
    c_general_walks += want == TES__CASCADE_GENERAL;
    for (int i = 0; i < NM; i++) {
        if (!alive(i))
            continue;
        int32_t sum = 0;
        for (int p = i; p >= 0; p = M[p].parent)
            sum += M[p].val;
        const int32_t *got = tes_get(w, M[i].h, SUM);
        CHECK(got && *got == sum && depth_of[i] == tes_depth(w, M[i].h));
    }
}

static void compare(tes_world_t *w)
{
    CHECK(tes__world_check(w) == 0);
    int live = 0;
    for (int i = 0; i < NM; i++) {
        if (!alive(i))
            continue;
        live++;
        tes_entity_t e = M[i].h;
        CHECK(tes_alive(w, e));
        CHECK(tes_parent(w, e) == H(M[i].parent));
        tes_entity_t kids[MAXE * 4];
        CHECK(tes_children(w, e, kids, MAXE * 4) == M[i].nkids);
        for (int k = 0; k < M[i].nkids; k++)
            CHECK(kids[k] == M[M[i].kids[k]].h);
        int d = 0;
        for (int p = M[i].parent; p >= 0; p = M[p].parent)
            d++;
        CHECK(tes_depth(w, e) == d);
        const char *name = tes_name(w, e);
        CHECK(M[i].name[0] ? name && !strcmp(name, M[i].name) : name == NULL);
        char want[256], got[256];
        model_path(i, want, sizeof want);
        CHECK(tes_path(w, e, got, sizeof got) == (int32_t)strlen(want));
        CHECK(!strcmp(got, want));
        if (want[0])
            CHECK(tes_lookup_path(w, want) == e);
    }
    CHECK(tes_entity_count(w) == live);
    /* The propagation: every live entity once, by the model's depths, each
     * sum its chain's Marker values. */
    static int depth_of[MAXE * 4];
    for (int i = 0; i < NM; i++) {
        depth_of[i] = 0;
        for (int p = M[i].parent; p >= 0; p = M[p].parent)
            depth_of[i]++;
    }
    /* Whether the iterations take the sorted walk: every table holding a
     * match still in the order the last sort left. */
    bool sorted = w->depth_order != NULL;
    for (int i = 0; sorted && i < NM; i++) {
        if (!alive(i))
            continue;
        const tes__slot_t *slot = tes__entity_slot(&w->entities, M[i].h);
        sorted = tes__depth_rows(w, tes__slot_table(w, slot)) != NULL;
    }
    for (int pass = 0; pass < 4; pass++)
        propagate(w, pass < 2 ? PROP : PROP_GENERAL, sorted, live, depth_of);
    /* The kept order the pointer walk left (checked while it holds). */
    CHECK(tes__world_check(w) == 0);
    if ((unsigned long long)live > c_max_live)
        c_max_live = (unsigned long long)live;
}

static const char *NAMES[] = {"a", "b", "c", "dd", "e"};

static void one_op(tes_world_t **wp, qop_t *queue, int *nq, bool deferred)
{
    tes_world_t *w = *wp;
    uint32_t r = rnd(100);
    if (r < 20 && NM < MAXE * 4 - 2) { /* spawn, maybe under a parent */
        tes_entity_t e = tes_spawn(w);
        int32_t v = (int32_t)rnd(100);
        CHECK(e != TES_NULL && tes_set(w, e, TAG, &v) == TES_OK && tes_add(w, e, SUM) == TES_OK);
        if (!rnd(4))
            CHECK(tes_add(w, e, SIDE) == TES_OK);
        M[NM] = (ment_t){.h = e, .live = true, .parent = -1, .val = v};
        NM++;
        int p = live_pick();
        if (!deferred && rnd(2) && alive(p)) {
            int want = m_set_parent(NM - 1, p, true);
            CHECK(tes_set_parent(w, e, H(p)) == want);
        }
    } else if (r < 44 && !rnd(4)) { /* set_parent_n: a few pairs, some reversing the one before */
        qop_t q = {.kind = 2, .n = 1 + (int)rnd(BATCH)};
        for (int i = 0; i < q.n; i++) {
            if (i > 0 && !rnd(5)) {
                q.ks[i] = q.ps[i - 1] >= 0 ? q.ps[i - 1] : q.ks[i - 1];
                q.ps[i] = q.ks[i - 1];
            } else {
                q.ks[i] = live_pick();
                q.ps[i] = rnd(5) ? live_pick() : -1;
            }
            if (q.ks[i] < 0)
                return;
        }
        tes_entity_t ks[BATCH], ps[BATCH];
        for (int i = 0; i < q.n; i++)
            ks[i] = H(q.ks[i]), ps[i] = H(q.ps[i]);
        int at = 0;
        int want = deferred ? m_set_parent_n_static(q.ks, q.ps, q.n, &at)
                            : m_set_parent_n(q.ks, q.ps, q.n, false, &at);
        int got = tes_set_parent_n(w, ks, ps, (size_t)q.n);
        CHECK(got == want);
        c_batch_ok += want == TES_OK;
        c_batch_refused += want != TES_OK;
        if (want) {
            char word[16];
            snprintf(word, sizeof word, "pair %d", at);
            CHECK(strstr(tes_last_error_detail(w), word) != NULL);
        }
        if (deferred && want == TES_OK)
            queue[(*nq)++] = q;
    } else if (r < 44) { /* set_parent */
        int a = live_pick(), b = rnd(5) ? live_pick() : -1;
        if (a < 0)
            return;
        int want = m_set_parent(a, b, !deferred);
        int got = tes_set_parent(w, H(a), H(b));
        CHECK(got == want);
        c_link_ok += want == TES_OK;
        c_link_invalid += want == TES_ERR_INVALID;
        c_link_stale += want == TES_ERR_STALE;
        if (want)
            CHECK(tes_last_error_detail(w)[0] != '\0');
        if (deferred && want == TES_OK)
            queue[(*nq)++] = (qop_t){.kind = 0, .a = a, .b = b};
    } else if (r < 60) { /* names */
        int a = live_pick();
        if (!alive(a))
            return;
        uint32_t pick = rnd(8);
        const char *name = pick < 5 ? NAMES[pick] : pick == 5 ? NULL : pick == 6 ? "" : "x/y";
        int want = TES_OK;
        if (name && (!name[0] || strchr(name, '/')))
            want = TES_ERR_INVALID;
        else if (name && sibling_named(M[a].parent, name, a) >= 0)
            want = TES_ERR_INVALID;
        CHECK(tes_set_name(w, M[a].h, name) == want);
        c_name_invalid += want != TES_OK;
        if (!want)
            snprintf(M[a].name, sizeof M[a].name, "%s", name ? name : "");
    } else if (r < 74) { /* destroy */
        int a = live_pick();
        if (a < 0)
            return;
        if (!alive(a)) {
            CHECK(tes_destroy(w, M[a].h) == TES_ERR_STALE);
            return;
        }
        if (deferred) {
            CHECK(tes_destroy(w, M[a].h) == TES_OK);
            queue[(*nq)++] = (qop_t){.kind = 1, .a = a, .b = -1};
            return;
        }
        tes_entity_t want[MAXE * 4];
        int nwant = 0;
        seen_n = 0;
        m_destroy(a, want, &nwant);
        CHECK(tes_destroy(w, want[nwant - 1]) == TES_OK);
        c_cascade += nwant > 1;
        CHECK(seen_n == nwant);
        for (int k = 0; k < nwant; k++)
            CHECK(seen_log[k] == want[k]);
    } else if (r < 80 && !deferred) { /* destroy_n of distinct live entities */
        int picks[4], n = 0;
        for (int t = 0; t < 4; t++) {
            int a = live_pick();
            bool dup = !alive(a);
            for (int k = 0; k < n; k++)
                dup |= picks[k] == a;
            if (!dup)
                picks[n++] = a;
        }
        tes_entity_t hs[4];
        for (int k = 0; k < n; k++)
            hs[k] = M[picks[k]].h;
        tes_entity_t want[MAXE * 4];
        int nwant = 0;
        for (int k = 0; k < n; k++) {
            /* A listed entity under another listed one dies with it. */
            bool covered = false;
            for (int j = 0; j < n; j++)
                covered |= j != k && alive(picks[j]) && is_descendant(picks[k], picks[j]) &&
                            picks[k] != picks[j];
            if (!covered && alive(picks[k]))
                m_destroy(picks[k], want, &nwant);
        }
        seen_n = 0;
        CHECK(tes_destroy_n(w, hs, n) == TES_OK);
        CHECK(seen_n == nwant);
    } else if (r < 88 && !deferred) { /* clone: same parent, no name */
        int a = live_pick();
        if (!alive(a) || NM >= MAXE * 4 - 2)
            return;
        tes_entity_t c = tes_clone(w, M[a].h);
        CHECK(c != TES_NULL);
        M[NM] = (ment_t){.h = c, .live = true, .parent = -1, .val = M[a].val};
        NM++;
        if (M[a].parent >= 0)
            m_set_parent(NM - 1, M[a].parent, true);
    } else if (r < 96 && !deferred) { /* a deferred block */
        qop_t q[32];
        int n = 0;
        CHECK(tes_defer_begin(w) == TES_OK);
        int ops = (int)rnd(6) + 1;
        for (int k = 0; k < ops && n < 30; k++)
            one_op(wp, q, &n, true);
        int first = TES_OK;
        for (int k = 0; k < n; k++) {
            if (q[k].kind == 1) {
                if (alive(q[k].a)) {
                    tes_entity_t want[MAXE * 4];
                    int nwant = 0;
                    m_destroy(q[k].a, want, &nwant);
                }
                continue;
            }
            if (q[k].kind == 2) {
                int at, rc = m_set_parent_n(q[k].ks, q[k].ps, q[k].n, true, &at);
                if (rc && !first)
                    first = rc;
                continue;
            }
            int a = q[k].a, b = q[k].b;
            int rc = (!alive(a) || (b >= 0 && !alive(b))) ? TES_ERR_INVALID : m_set_parent(a, b, true);
            if (rc && !first)
                first = rc;
        }
        CHECK(tes_defer_end(w) == first);
        c_defer_error += first != TES_OK;
    } else if (r < 98) { /* the depth sort: refused while deferred */
        if (deferred) {
            CHECK(tes_sort_by_depth(w) == TES_ERR_BUSY);
            CHECK(strstr(tes_last_error_detail(w), "deferred") != NULL);
            c_sort_refused++;
            return;
        }
        CHECK(tes_sort_by_depth(w) == TES_OK);
        c_sort++;
        /* Every table holding an entity is in depth order now. */
        for (int i = 0; i < NM; i++) {
            if (!alive(i))
                continue;
            const tes__slot_t *slot = tes__entity_slot(&w->entities, M[i].h);
            CHECK(tes__depth_rows(w, tes__slot_table(w, slot)) != NULL);
        }
    } else if (!deferred) { /* a snapshot round trip */
        sw_buf_t b = {0};
        CHECK(sw_save(w, &b) == TES_OK);
        tes_world_t *v = new_world();
        CHECK(sw_load(v, b.data, b.size) == TES_OK);
        sw_buf_free(&b);
        tes_world_free(w);
        *wp = v;
    }
}

int main(int argc, char **argv)
{
    unsigned long long seeds = 8, ops = 10000, only = 0, first = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seeds"))
            seeds = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--ops"))
            ops = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed"))
            only = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--first-seed"))
            first = strtoull(argv[i + 1], NULL, 10);
    }
    if (only)
        first = only, seeds = 1;
    for (unsigned long long s = first; s < first + seeds; s++) {
        g_seed = s;
        rng = s * UINT64_C(0x9E3779B97F4A7C15) | 1;
        NM = 0;
        tes_world_t *w = new_world();
        for (g_op = 0; g_op < ops; g_op++) {
            one_op(&w, NULL, NULL, false);
            compare(w);
            if (NM > MAXE * 4 - 8) { /* keep the model small: start again */
                tes_world_free(w);
                w = new_world();
                NM = 0;
            }
        }
        tes_world_free(w);
    }
    printf("hier_fuzz: %llu seeds x %llu ops: forest, names and paths equal the model's\n"
           "  links ok %llu, refused %llu (cycle/name) and %llu (stale); cascades %llu; bad "
           "names %llu; flushes with an error %llu; batches ok %llu, refused %llu; most live %llu; sorts %llu (refused %llu), "
           "walks: sorted %llu, pointer %llu (order kept %llu), general %llu\n",
           seeds, ops, c_link_ok, c_link_invalid, c_link_stale, c_cascade,
           c_name_invalid, c_defer_error, c_batch_ok, c_batch_refused, c_max_live, c_sort, c_sort_refused, c_sorted_walks, c_pointer_walks, c_kept_walks, c_general_walks);
    /* Every case must have been reached. */
    return c_link_ok && c_link_invalid && c_link_stale && c_cascade && c_name_invalid &&
                   c_defer_error && c_batch_ok && c_batch_refused && c_sort && c_sort_refused && c_sorted_walks &&
                   c_pointer_walks && c_kept_walks && c_general_walks
               ? 0
               : 1;
}
