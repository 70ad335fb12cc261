/*
 * Differential fuzzer for change detection: random streams of every kind
 * of write (set, ensure, get_mut, add, spawn_with, spawn_bulk, spawn_n,
 * clone, instantiate, mark_changed, chunks handed out through TES_INOUT),
 * moves that must keep stamps (other components, tags, disable/enable,
 * destroys that swap rows), deferred writes (explicit blocks and inside
 * query loops, stamped when applied), iterations left early with
 * tes_iter_fini, and several queries with their own histories, run against
 * a naive model: per entity an "added" and a "changed" tick, per query the
 * tick its last iteration ended at. Every iteration's entities and every
 * tes_query_count are compared with the model, and the world's invariants
 * are checked now and then. Each seed runs three times: with Pos stored in
 * tables, in a sparse store, and in a stable (pointer-stable) one.
 *
 * Usage: changes_fuzz [--seeds N] [--first-seed F] [--ops N] [--seed S]
 * (default: 16 seeds of 3000 operations from seed 1, short enough for
 * valgrind; ctest runs 64 of 4000; --first-seed F runs seeds F .. F + N - 1
 * to search past the ones the suite runs, --seed S runs S alone)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"
#include "world/check.h"

/* Queries 0-3 filter on changes; query 4 writes every Pos through a
 * TES_INOUT term with no filter (as a W4 pass does): its chunks are whole
 * tables, which the world stamps lazily (a pending range per table) until
 * a read, a move or a construction of the stamps settles them. */
enum { MAXE = 600, NQ = 5 };

typedef struct { float x, y, z; } Pos;

typedef struct ment {
    tes_entity_t e;
    bool alive, pos, vel, tag, disabled, prefab;
    uint32_t added, changed;
} ment_t;

typedef struct mquery {
    tes_query_t *q;
    tes_change_t change;
    bool inout;      /* a TES_INOUT term: yielded entities are stamped */
    bool with_vel;   /* a second AND term on Vel */
    bool ended;      /* some iteration ended */
    uint32_t last;
} mquery_t;

typedef struct fz {
    tes_world_t *w;
    tes_comp_t pos, vel, tag;
    ment_t ents[MAXE];
    int n;
    uint32_t tick;
    mquery_t qs[NQ];
    uint64_t rng;
    tes_entity_t prefab;
    /* deferred writes, applied in the model at the flush */
    int pending[64];
    int npending;
    uint64_t step;
    int failed;
} fz_t;

static uint32_t draw(fz_t *f, uint32_t bound)
{
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return bound ? (uint32_t)(f->rng % bound) : 0;
}

#define FAIL(f, ...)                                                       \
    do {                                                                   \
        fprintf(stderr, "changes_fuzz step %llu: ", (unsigned long long)(f)->step); \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
        (f)->failed = 1;                                                   \
    } while (0)

static ment_t *find(fz_t *f, tes_entity_t e)
{
    for (int i = 0; i < f->n; i++)
        if (f->ents[i].e == e)
            return &f->ents[i];
    return NULL;
}

static ment_t *track(fz_t *f, tes_entity_t e)
{
    if (f->n >= MAXE)
        return NULL;
    ment_t *m = &f->ents[f->n++];
    memset(m, 0, sizeof *m);
    m->e = e;
    m->alive = true;
    return m;
}

static void stamp_add(fz_t *f, ment_t *m)
{
    m->pos = true;
    m->added = m->changed = f->tick;
}

/* A live entity, or NULL. */
static ment_t *pick(fz_t *f)
{
    for (int tries = 0; tries < 8 && f->n; tries++) {
        ment_t *m = &f->ents[draw(f, (uint32_t)f->n)];
        if (m->alive && !m->prefab)
            return m;
    }
    return NULL;
}

static bool passes(const fz_t *f, const mquery_t *mq, const ment_t *m)
{
    (void)f;
    if (!m->alive || !m->pos || m->disabled || m->prefab || (mq->with_vel && !m->vel))
        return false;
    if (!mq->ended || mq->change == TES_CHANGE_NONE)
        return true;
    uint32_t t = mq->change == TES_CHANGE_ADDED ? m->added : m->changed;
    return (int32_t)(t - mq->last) > 0;
}

static int expected(fz_t *f, const mquery_t *mq)
{
    int n = 0;
    for (int i = 0; i < f->n; i++)
        n += passes(f, mq, &f->ents[i]);
    return n;
}

static void apply_pending(fz_t *f)
{
    for (int i = 0; i < f->npending; i++) {
        ment_t *m = &f->ents[f->pending[i]];
        if (!m->alive)
            continue;
        if (m->pos)
            m->changed = f->tick;
        else
            stamp_add(f, m);
    }
    f->npending = 0;
}

/* One deferred tes_set of Pos (queued; applied at the flush). */
static void deferred_set(fz_t *f)
{
    ment_t *m = pick(f);
    if (!m || f->npending >= 64)
        return;
    Pos p = {1, 2, 3};
    if (tes_set(f->w, m->e, f->pos, &p) != TES_OK)
        FAIL(f, "deferred tes_set failed");
    f->pending[f->npending++] = (int)(m - f->ents);
}

static void iterate(fz_t *f, mquery_t *mq)
{
    int want = expected(f, mq);
    int counted = tes_query_count(mq->q);
    if (counted != want)
        FAIL(f, "tes_query_count = %d, model %d", counted, want);
    static uint8_t seen[MAXE];
    memset(seen, 0, sizeof seen);
    /* Which entities pass is decided at the start: writes inside the loop
     * touch only entities already yielded, and deferred ones wait. */
    static uint8_t pass[MAXE];
    for (int i = 0; i < f->n; i++)
        pass[i] = passes(f, mq, &f->ents[i]);
    bool early = draw(f, 6) == 0;
    int got = 0;
    /* Only a query with a change filter opens a window (advances the tick
     * at its start and end); a plain writer stamps at the current tick. */
    bool window = mq->change != TES_CHANGE_NONE;
    tes_iter_t it = tes_query_iter(mq->q);
    f->tick += window; /* the iteration's T */
    while (tes_iter_next(&it)) {
        for (int32_t i = 0; i < it.count; i++) {
            ment_t *m = find(f, it.entities[i]);
            if (!m || !pass[m - f->ents] || seen[m - f->ents]) {
                FAIL(f, "iteration yielded an entity the model does not expect");
                tes_iter_fini(&it);
                return;
            }
            seen[m - f->ents] = 1;
            got++;
            if (mq->inout)
                m->changed = f->tick;
        }
        /* Writes from inside the loop: an immediate stamp on this chunk's
         * entities, deferred sets anywhere. */
        if (it.count && draw(f, 3) == 0) {
            ment_t *m = find(f, it.entities[draw(f, (uint32_t)it.count)]);
            if (draw(f, 2)) {
                if (tes_mark_changed(f->w, m->e, f->pos) != TES_OK)
                    FAIL(f, "tes_mark_changed in a loop failed");
            } else if (!tes_get_mut(f->w, m->e, f->pos)) {
                FAIL(f, "tes_get_mut in a loop failed");
            }
            m->changed = f->tick;
        }
        if (draw(f, 4) == 0)
            deferred_set(f);
        if (early) {
            tes_iter_fini(&it);
            break;
        }
    }
    if (!early && got != want)
        FAIL(f, "iteration yielded %d entities, model %d", got, want);
    apply_pending(f); /* the flush at the end, inside the window */
    if (window) {
        mq->last = f->tick;
        mq->ended = true;
        f->tick++;
    }
    if (tes_world_tick(f->w) != f->tick)
        FAIL(f, "tick %u, model %u", tes_world_tick(f->w), f->tick);
}

static void op(fz_t *f)
{
    Pos p = {(float)draw(f, 100), 0, 0};
    ment_t *m = pick(f);
    switch (draw(f, 24)) {
    case 0: case 1: { /* spawn + set */
        tes_entity_t e = tes_spawn(f->w);
        ment_t *n = track(f, e);
        if (!n) {
            tes_destroy(f->w, e);
            break;
        }
        if (tes_set(f->w, e, f->pos, &p) != TES_OK)
            FAIL(f, "tes_set on a new entity failed");
        stamp_add(f, n);
        break;
    }
    case 2: /* set */
        if (m) {
            if (tes_set(f->w, m->e, f->pos, &p) != TES_OK)
                FAIL(f, "tes_set failed");
            if (m->pos)
                m->changed = f->tick;
            else
                stamp_add(f, m);
        }
        break;
    case 3: /* ensure */
        if (m) {
            if (!tes_ensure(f->w, m->e, f->pos))
                FAIL(f, "tes_ensure failed");
            if (m->pos)
                m->changed = f->tick;
            else
                stamp_add(f, m);
        }
        break;
    case 4: /* get_mut / get */
        if (m) {
            bool mut = draw(f, 2);
            const void *ptr = mut ? tes_get_mut(f->w, m->e, f->pos) : tes_get(f->w, m->e, f->pos);
            if ((ptr != NULL) != m->pos)
                FAIL(f, "get found %p, model has pos %d", ptr, m->pos);
            if (ptr && mut)
                m->changed = f->tick;
        }
        break;
    case 5: /* add (present: nothing) */
        if (m) {
            if (tes_add(f->w, m->e, f->pos) != TES_OK)
                FAIL(f, "tes_add failed");
            if (!m->pos)
                stamp_add(f, m);
        }
        break;
    case 6: /* remove */
        if (m) {
            if (tes_remove(f->w, m->e, f->pos) != TES_OK)
                FAIL(f, "tes_remove failed");
            m->pos = false;
        }
        break;
    case 7: /* moves: Vel */
        if (m) {
            int rc = m->vel ? tes_remove(f->w, m->e, f->vel) : tes_add(f->w, m->e, f->vel);
            if (rc != TES_OK)
                FAIL(f, "Vel move failed");
            m->vel = !m->vel;
        }
        break;
    case 8: /* moves: a tag */
        if (m) {
            int rc = m->tag ? tes_remove(f->w, m->e, f->tag) : tes_add(f->w, m->e, f->tag);
            if (rc != TES_OK)
                FAIL(f, "tag move failed");
            m->tag = !m->tag;
        }
        break;
    case 9: /* disable / enable */
        if (m) {
            int rc = m->disabled ? tes_enable(f->w, m->e) : tes_disable(f->w, m->e);
            if (rc != TES_OK)
                FAIL(f, "disable/enable failed");
            m->disabled = !m->disabled;
        }
        break;
    case 10: /* destroy: the last row moves into the hole */
        if (m) {
            if (tes_destroy(f->w, m->e) != TES_OK)
                FAIL(f, "tes_destroy failed");
            m->alive = false;
        }
        break;
    case 11: { /* mark_changed */
        if (!m)
            break;
        int rc = tes_mark_changed(f->w, m->e, f->pos);
        if (rc != (m->pos ? TES_OK : TES_ERR_INVALID))
            FAIL(f, "tes_mark_changed = %d, model has pos %d", rc, m->pos);
        if (m->pos)
            m->changed = f->tick;
        break;
    }
    case 12: { /* clone */
        if (!m || f->n >= MAXE)
            break;
        tes_entity_t c = tes_clone(f->w, m->e);
        if (!c) {
            FAIL(f, "tes_clone failed");
            break;
        }
        ment_t *n = track(f, c);
        n->vel = m->vel;
        n->tag = m->tag;
        n->disabled = m->disabled;
        if (m->pos)
            stamp_add(f, n);
        break;
    }
    case 13: { /* spawn_n / spawn_bulk with Pos (and maybe Vel) */
        tes_entity_t out[8];
        int32_t k = 1 + (int32_t)draw(f, 8);
        if (f->n + k > MAXE)
            break;
        bool vel = draw(f, 2);
        tes_comp_t comps[2] = {f->pos, f->vel};
        int rc;
        if (draw(f, 2)) {
            rc = tes_spawn_n(f->w, k, comps, vel ? 2 : 1, out);
        } else {
            Pos vals[8];
            memset(vals, 0, sizeof vals);
            const void *data[2] = {vals, NULL};
            tes_bulk_desc_t bd = {k, comps, vel ? 2 : 1, data, out};
            rc = tes_spawn_bulk(f->w, &bd);
        }
        if (rc != TES_OK) {
            FAIL(f, "bulk spawn failed");
            break;
        }
        for (int32_t i = 0; i < k; i++) {
            ment_t *n = track(f, out[i]);
            n->vel = vel;
            stamp_add(f, n);
        }
        break;
    }
    case 14: { /* spawn_with */
        if (f->n >= MAXE)
            break;
        bool vel = draw(f, 2);
        tes_value_t vals[2] = {{f->pos, &p}, {f->vel, NULL}};
        tes_entity_t e = tes_spawn_with(f->w, vals, vel ? 2 : 1);
        if (!e) {
            FAIL(f, "tes_spawn_with failed");
            break;
        }
        ment_t *n = track(f, e);
        n->vel = vel;
        stamp_add(f, n);
        break;
    }
    case 15: { /* instantiate the prefab (it has Pos and Vel) */
        if (f->n >= MAXE)
            break;
        tes_entity_t out[1];
        if (!tes_instantiate(f->w, f->prefab, out, 1)) {
            FAIL(f, "tes_instantiate failed");
            break;
        }
        ment_t *n = track(f, out[0]);
        n->vel = true;
        stamp_add(f, n);
        break;
    }
    case 16: { /* an explicit deferred block */
        if (tes_defer_begin(f->w) != TES_OK)
            FAIL(f, "tes_defer_begin failed");
        int k = (int)draw(f, 4);
        for (int i = 0; i < k; i++)
            deferred_set(f);
        if (tes_defer_end(f->w) != TES_OK)
            FAIL(f, "tes_defer_end failed");
        apply_pending(f);
        break;
    }
    default: /* iterate a query */
        iterate(f, &f->qs[draw(f, NQ)]);
        break;
    }
}

/* Pos's storage in a run: the same model holds for each. */
static const char *const storage_names[3] = {"table", "sparse", "stable sparse"};

static int run_seed(uint64_t seed, uint64_t ops, int storage)
{
    fz_t *f = calloc(1, sizeof *f);
    if (!f)
        return 1;
    f->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    f->w = tes_world_new(NULL);
    tes_component_desc_t pd = {.name = "Pos", .size = sizeof(Pos), .track_changes = true,
                               .storage = storage ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE,
                               .stable = storage == 2};
    tes_component_desc_t vd = {.name = "Vel", .size = 8};
    tes_component_desc_t td = {.name = "Tag"};
    f->pos = tes_component(f->w, &pd);
    f->vel = tes_component(f->w, &vd);
    f->tag = tes_component(f->w, &td);
    f->tick = 1;
    f->prefab = tes_prefab_new(f->w);
    Pos pp = {7, 7, 7};
    tes_set(f->w, f->prefab, f->pos, &pp);
    tes_add(f->w, f->prefab, f->vel);
    ment_t *pm = track(f, f->prefab);
    pm->prefab = true;
    for (int i = 0; i < NQ; i++) {
        mquery_t *mq = &f->qs[i];
        mq->change = i == 4 ? TES_CHANGE_NONE : i == 3 ? TES_CHANGE_ADDED : TES_CHANGE_CHANGED;
        mq->inout = i == 2 || i == 4;
        mq->with_vel = i == 1;
        tes_query_desc_t d;
        memset(&d, 0, sizeof d);
        d.terms[0].comp = f->pos;
        d.terms[0].access = mq->inout ? TES_INOUT : TES_IN;
        d.terms[0].change = mq->change;
        if (mq->with_vel) {
            d.terms[1].comp = f->vel;
            d.terms[1].access = TES_IN;
        }
        mq->q = tes_query_new(f->w, &d);
        if (!mq->q)
            FAIL(f, "tes_query_new failed");
    }
    for (f->step = 0; f->step < ops && !f->failed; f->step++) {
        op(f);
        if (f->step % 97 == 0 && tes__world_check(f->w) != TES_OK)
            FAIL(f, "world check failed");
    }
    for (int i = 0; i < NQ && !f->failed; i++)
        iterate(f, &f->qs[i]);
    int failed = f->failed;
    if (failed)
        fprintf(stderr, "changes_fuzz: seed %llu diverged (Pos in %s storage)\n",
                (unsigned long long)seed, storage_names[storage]);
    tes_world_free(f->w);
    free(f);
    return failed;
}

int main(int argc, char **argv)
{
    uint64_t seeds = 16, ops = 3000, first = 1;
    bool one = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seeds"))
            seeds = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--ops"))
            ops = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed"))
            first = strtoull(argv[i + 1], NULL, 10), one = true;
        else if (!strcmp(argv[i], "--first-seed") && !one)
            first = strtoull(argv[i + 1], NULL, 10);
    }
    int bad = 0;
    /* Every seed runs with Pos in each storage. */
    for (uint64_t s = first; s < first + (one ? 1 : seeds); s++)
        for (int storage = 0; storage < 3; storage++)
            bad += run_seed(s, ops, storage);
    uint64_t n = (one ? 1 : seeds) * 3;
    printf("%llu passed, %d failed\n", (unsigned long long)(n - (uint64_t)bad), bad);
    return bad ? 1 : 0;
}
