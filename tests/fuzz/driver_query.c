/*
 * Queries in the differential fuzzer. Every run starts with a fixed set
 * that covers each way the library walks a query (table cache with and
 * without sparse terms, a driven walk over sparse pools with a stable
 * store's tombstones, sparse-only walks with and without the default
 * filters, the root walk of NOT-only and OPTIONAL-only queries,
 * tags, TES_DISABLED named in a term, the include flags, a non-owning and
 * an owning group, groups with NOT and OPTIONAL terms on sparse stores),
 * plus the descriptions tes_query_new must refuse; op QUERY_NEW then frees
 * and creates random queries for the rest of the run, and so do observers
 * while they run (driver_hooks.c).
 *
 * Checking a query: tes_query_count against the model, then a full
 * iteration where every chunk is held to the contract (count > 0; each
 * entity alive, visible, matching and seen once; each data field an array
 * aligned with it.entities, i.e. field + i * size is exactly where tes_get
 * finds entity i's value, and that value is the model's; NULL for NOT
 * terms, tags and absent optional terms, and an optional term present in
 * all of the chunk or none), and at the end the set of visited entities
 * equal to the model's answer. Values are also written through fields now
 * and then, so a field that points at a copy shows up later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"
#include "query/query.h"

/* ------------------------------------------------------------------ model answers */

/* Which walk yielded the iterator's current chunk (FZ_WALK_*). */
static int walk_of(const tes_iter_t *it)
{
    switch (it->priv_phase) {
    case TES__WALK_TABLES:
    case TES__WALK_WHOLE:
    case TES__WALK_CHANGES: return FZ_WALK_TABLES;
    case TES__WALK_ROOT: return FZ_WALK_ROOT;
    case TES__WALK_OWNED: return FZ_WALK_OWNED;
    default:
        if (!it->priv_query->group)
            return FZ_WALK_DRIVEN;
        return it->priv_driver >= 0 ? FZ_WALK_POOL : FZ_WALK_MEMBERS;
    }
}

static uint32_t model_count(const fz_driver_t *d, const fz_mquery_t *q)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < d->m.nlive; i++)
        n += fz_mquery_match(&d->m, q, d->m.live[i]);
    return n;
}

/* A short description of q for messages: "T4&!S4?T24 [flags]". */
static const char *describe(const fz_mquery_t *q, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < q->nterms && n + 16 < cap; i++) {
        const char *op = q->terms[i].oper == TES_AND ? "" : q->terms[i].oper == TES_NOT ? "!" : "?";
        int w = snprintf(buf + n, cap - n, "%s%s%s%s", i ? "," : "", op,
                         q->terms[i].src == TES_SRC_PARENT ? "^" : "", fz_comps[q->terms[i].k].name);
        if (w > 0)
            n += (size_t)w;
    }
    if (n < cap)
        snprintf(buf + n, cap - n, " flags %#x", q->flags);
    return buf;
}

/* ------------------------------------------------------------------ chunks */

typedef struct iter_state {
    fz_dquery_t *dq;
    fz_seen_t *marks; /* this iteration's own (iterations nest) */
    uint32_t seen;
    int32_t depth;    /* TES_QUERY_CASCADE: the last chunk's depth */
    char desc[160];
} iter_state_t;

/* Marks for a new iteration, sized for every slot, with a fresh stamp. */
static bool start_marks(fz_driver_t *d, fz_seen_t *s)
{
    uint32_t need = d->m.nslots + 1;
    if (need > s->cap) {
        uint32_t cap = s->cap ? s->cap : 256;
        while (cap < need)
            cap *= 2;
        uint32_t *p = realloc(s->seen, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        memset(p + s->cap, 0, (size_t)(cap - s->cap) * sizeof *p);
        s->seen = p;
        s->cap = cap;
    }
    if (++s->stamp == 0) {
        memset(s->seen, 0, (size_t)s->cap * sizeof *s->seen);
        s->stamp = 1;
    }
    return true;
}

/* Holds one chunk to the contract. first: count its entities as visited
 * (and, now and then, write a value through a field). */
static void check_chunk(fz_driver_t *d, iter_state_t *st, tes_iter_t *it, bool first)
{
    const fz_mquery_t *q = &st->dq->mq;
    fz_model_t *m = &d->m;
    if (it->count <= 0 || !it->entities) {
        fzd_fail(d, "[%s] a chunk with count %d, entities %p", st->desc, (int)it->count,
                 (const void *)it->entities);
        return;
    }
    if (it->world != d->w) {
        fzd_fail(d, "[%s] it.world is %p, not the world", st->desc, (void *)it->world);
        return;
    }
    /* By depth: each chunk one depth, never less than the chunk before. */
    if (first && !fzd_check_chunk_depth(d, st->desc, q, it, &st->depth))
        return;
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t e = it->entities[i];
        fz_mslot_t *s = fz_model_get(m, e);
        if (!s) {
            fzd_fail(d, "[%s] chunk entity %d is %#llx, which is not alive", st->desc, (int)i,
                     ull(e));
            return;
        }
        uint32_t index = tes_entity_index(e);
        if (!fz_mquery_match(m, q, index)) {
            fzd_fail(d, "[%s] chunk entity %#llx does not match (model mask %#llx:%#llx%s)",
                     st->desc, ull(e), ull(s->mask.w[1]), ull(s->mask.w[0]),
                     s->pending ? ", spawned in a deferred block, not flushed" : "");
            return;
        }
        if (first) {
            fz_seen_t *mk = st->marks;
            if (index >= mk->cap) {
                fzd_fail(d, "[%s] chunk entity %#llx past the slots seen so far", st->desc, ull(e));
                return;
            }
            if (mk->seen[index] == mk->stamp) {
                fzd_fail(d, "[%s] entity %#llx visited twice", st->desc, ull(e));
                return;
            }
            mk->seen[index] = mk->stamp;
            st->seen++;
        }
    }
    for (int32_t t = 0; t < q->nterms && !fzd_failed(d); t++) {
        int k = q->terms[t].k;
        const fz_comp_info_t *c = &fz_comps[k];
        if (q->terms[t].src == TES_SRC_PARENT) {
            fzd_check_parent_field(d, st->desc, &q->terms[t], it, t, first);
            continue;
        }
        uint8_t *f = tes_field(it, t);
        if (q->terms[t].oper == TES_NOT || !c->size) {
            if (f)
                fzd_fail(d, "[%s] field %d (%s%s) is %p, want NULL", st->desc, (int)t,
                         q->terms[t].oper == TES_NOT ? "NOT " : "tag ", c->name, (void *)f);
            continue;
        }
        if (q->terms[t].oper == TES_OPTIONAL) {
            bool has = fz_model_has(m, tes_entity_index(it->entities[0]), k);
            for (int32_t i = 1; i < it->count; i++)
                if (fz_model_has(m, tes_entity_index(it->entities[i]), k) != has) {
                    fzd_fail(d, "[%s] one chunk holds entities with and without optional %s "
                                "(%#llx and %#llx)",
                             st->desc, c->name, ull(it->entities[0]), ull(it->entities[i]));
                    return;
                }
            if (!has) {
                if (f)
                    fzd_fail(d, "[%s] optional field %d (%s) is %p, but the chunk lacks it",
                             st->desc, (int)t, c->name, (void *)f);
                continue;
            }
        }
        if (!f) {
            fzd_fail(d, "[%s] field %d (%s) is NULL in a chunk of %d that has it", st->desc, (int)t,
                     c->name, (int)it->count);
            return;
        }
        /* A field is the stored values themselves, or (a sparse walk over
         * scattered values) the iterator's gathered copy of them. */
        const uint8_t *gather = (const uint8_t *)it->priv_gather;
        bool gathered = f >= gather && f < gather + sizeof it->priv_gather;
        if (gathered)
            d->res->gathered_chunks += first;
        /* A by-depth walk may hand out copies of scattered values too
         * (written back when the chunk ends). */
        bool copied = !gathered && q->by_depth && fzd_get(d, it->entities[0], d->ids[k]) != f;
        if (copied) {
            for (int32_t i = 0; first && i < it->count; i++)
                if (!fzd_lib_equal(d, k, f + (size_t)i * c->size,
                                   fz_val(m, tes_entity_index(it->entities[i]), k))) {
                    fzd_fail(d, "[%s] field %d (%s) row %d (a copy): not the value of %#llx",
                             st->desc, (int)t, c->name, (int)i, ull(it->entities[i]));
                    return;
                }
            gathered = true; /* written through like a gathered copy, below */
        }
        for (int32_t i = 0; i < it->count && !fzd_failed(d); i++) {
            uint8_t *p = f + (size_t)i * c->size;
            tes_entity_t e = it->entities[i];
            const void *g = fzd_get(d, e, d->ids[k]);
            if (!gathered && g != p) {
                fzd_fail(d, "[%s] field %d (%s) row %d of %d is %p, but tes_get(%#llx) is %p",
                         st->desc, (int)t, c->name, (int)i, (int)it->count, (void *)p, ull(e), g);
                return;
            }
            /* After ops inside the chunk a gathered copy still holds the
             * values the chunk began with (plus the loop's writes). */
            if (!copied && (!gathered || first))
                fzd_check_value(d, tes_entity_index(e), k, p, "tes_field");
        }
        /* Writing through the field must reach the stored value. A write
         * into a gathered copy reaches it when the chunk ends; the driver
         * mirrors it into the store at once (tes_get_mut), which the
         * write-back must leave as it is, so the model can be checked
         * inside the chunk. */
        if (first && !fzd_failed(d) && fzd_draw(d, 100) < 15) {
            int32_t i = (int32_t)fzd_draw(d, (uint32_t)it->count);
            uint8_t value[FZ_MAXSIZE];
            fzd_make_value(d, k, value);
            fzd_lib_write(d, k, f + (size_t)i * c->size, value);
            if (gathered) { /* the field is a copy: the store gets it too */
                uint8_t *stored = fzd_get_mut(d, it->entities[i], d->ids[k]);
                if (stored)
                    fzd_lib_write(d, k, stored, value);
            }
            fz_model_write(m, tes_entity_index(it->entities[i]), k, value);
        }
    }
    if (fzd_failed(d))
        return;
    int32_t out = q->nterms + (int32_t)fzd_draw(d, (uint32_t)(TES_MAX_TERMS - q->nterms + 1));
    if ((out < TES_MAX_TERMS && tes_field(it, out)) || tes_field(it, -1) ||
        tes_field(it, TES_MAX_TERMS))
        fzd_fail(d, "[%s] tes_field of a term out of range is not NULL", st->desc);
    else if (tes_last_error(d->w) != TES_ERR_INVALID || !tes_last_error_detail(d->w)[0])
        fzd_fail(d, "[%s] tes_field of a term out of range recorded %d, detail \"%s\"", st->desc,
                 tes_last_error(d->w), tes_last_error_detail(d->w));
    d->last_error = TES_ERR_INVALID; /* the refused out-of-range fields */
}

/* Runs up to n ops from inside a chunk; the library must defer all of them
 * and leave the chunk exactly as it was. */
static void ops_in_chunk(fz_driver_t *d, iter_state_t *st, tes_iter_t *it, uint32_t n)
{
    size_t bytes = (size_t)it->count * sizeof *it->entities;
    tes_entity_t *copy = malloc(bytes);
    if (!copy) {
        fzd_fail(d, "out of memory");
        return;
    }
    memcpy(copy, it->entities, bytes);
    const tes_entity_t *saved = d->prefer;
    uint32_t saved_n = d->nprefer;
    d->prefer = copy;
    d->nprefer = (uint32_t)it->count;
    d->nest++;
    d->res->loop_ops += n;
    for (uint32_t i = 0; i < n && !fzd_failed(d); i++) {
        /* Mostly changes; sometimes a query made (or freed) under the loop,
         * which must not disturb it either; else anything, nested loops and
         * blocks included. */
        uint32_t r = fzd_draw(d, 100);
        if (r < 4)
            fzd_op_query_new(d);
        else
            fzd_run_op(d, r < 70 ? fzd_pick_structural_op(d) : fzd_pick_op(d));
        fzd_check_step(d);
    }
    d->nest--;
    d->prefer = saved;
    d->nprefer = saved_n;
    d->op = "query loop";
    if (!fzd_failed(d) && memcmp(copy, it->entities, bytes) != 0) {
        int32_t i = 0;
        while (i < it->count && copy[i] == it->entities[i])
            i++;
        fzd_fail(d, "[%s] it.entities changed while the loop made (deferred) changes: entry %d "
                    "of %d was %#llx, is %#llx",
                 st->desc, (int)i, (int)it->count, ull(copy[i < it->count ? i : 0]),
                 ull(it->entities[i < it->count ? i : 0]));
    }
    free(copy);
    if (!fzd_failed(d))
        check_chunk(d, st, it, false);
}

/* ------------------------------------------------------------------ iteration */

/* The iteration visited fewer entities than the model matches: names one
 * it missed (every visited one was checked to match already). */
static void name_missed(fz_driver_t *d, const iter_state_t *st, uint32_t want)
{
    const fz_seen_t *mk = st->marks;
    for (uint32_t i = 0; i < d->m.nlive; i++) {
        uint32_t index = d->m.live[i];
        if (fz_mquery_match(&d->m, &st->dq->mq, index) &&
            (index >= mk->cap || mk->seen[index] != mk->stamp)) {
            fzd_fail(d, "[%s] visited %u entities, model %u; missed %#llx (mask %#llx:%#llx)",
                     st->desc, st->seen, want, ull(fz_model_handle(&d->m, index)),
                     ull(d->m.slots[index].mask.w[1]), ull(d->m.slots[index].mask.w[0]));
            return;
        }
    }
    fzd_fail(d, "[%s] visited %u entities, model %u", st->desc, st->seen, want);
}

void fzd_iterate(fz_driver_t *d, fz_dquery_t *dq, uint32_t ops_per_chunk, bool may_break)
{
    if (fzd_failed(d))
        return;
    d->op = ops_per_chunk ? "query loop" : "query iteration";
    iter_state_t st;
    memset(&st, 0, sizeof st);
    st.dq = dq;
    describe(&dq->mq, st.desc, sizeof st.desc);
    if (d->iters >= FZ_MAX_ITERS) {
        fzd_fail(d, "driver: more than %d iterations nested", FZ_MAX_ITERS);
        return;
    }
    st.marks = &d->seen[d->iters];
    if (!start_marks(d, st.marks)) {
        fzd_fail(d, "out of memory");
        return;
    }
    uint32_t want = model_count(d, &dq->mq);
    uint32_t budget = 64; /* ops per loop, all chunks together */

    tes_iter_t it = tes_query_iter(dq->q);
    dq->busy++;
    d->iters++;
    d->defer_depth++;
    if (!tes_is_deferred(d->w))
        fzd_fail(d, "[%s] a live iterator does not defer the world", st.desc);
    bool broke = false;
    d->res->iterations++;
    while (!fzd_failed(d) && tes_iter_next(&it)) {
        d->res->chunks++;
        d->res->walks[walk_of(&it)]++;
        d->res->visited += (uint64_t)(it.count > 0 ? it.count : 0);
        check_chunk(d, &st, &it, true);
        if (ops_per_chunk && budget && !fzd_failed(d)) {
            uint32_t n = fzd_draw(d, ops_per_chunk + 1);
            n = n < budget ? n : budget;
            budget -= n;
            ops_in_chunk(d, &st, &it, n);
        }
        if (may_break && !fzd_failed(d) && fzd_draw(d, 100) < 10) {
            tes_iter_fini(&it);
            broke = true;
            break;
        }
    }
    d->op = ops_per_chunk ? "query loop" : "query iteration";
    if (fzd_failed(d) && !broke)
        tes_iter_fini(&it); /* the run is over; leave the world consistent */
    /* The library has applied its queue; the model has not yet, so it
     * still holds the state the loop walked. */
    if (!fzd_failed(d) && !broke && st.seen != want)
        name_missed(d, &st, want);
    dq->busy--;
    d->iters--;
    fzd_level_closed(d); /* its errors: tes_last_error only */
    if (fzd_failed(d))
        return;
    /* A finished iterator stays finished and holds no level. */
    if (it.count != 0 || it.entities != NULL || tes_field(&it, 0) != NULL || tes_iter_next(&it)) {
        fzd_fail(d, "[%s] a finished iterator still has a chunk", st.desc);
        return;
    }
    tes_iter_fini(&it); /* idempotent */
    if (tes_is_deferred(d->w) != (d->defer_depth > 0))
        fzd_fail(d, "[%s] tes_is_deferred = %d after the loop, %d levels open", st.desc,
                 !(d->defer_depth > 0), (int)d->defer_depth);
}

static void check_count(fz_driver_t *d, fz_dquery_t *dq)
{
    d->op = "tes_query_count";
    uint32_t want = model_count(d, &dq->mq);
    int32_t got = tes_query_count(dq->q);
    if (got < 0 || (uint32_t)got != want) {
        char buf[160];
        fzd_fail(d, "[%s] tes_query_count = %d, model %u", describe(&dq->mq, buf, sizeof buf),
                 (int)got, want);
        return;
    }
    if (tes_is_deferred(d->w) != (d->defer_depth > 0))
        fzd_fail(d, "tes_is_deferred wrong after tes_query_count");
}

void fzd_check_queries(fz_driver_t *d)
{
    for (int i = 0; i < FZ_MAX_QUERIES && !fzd_failed(d); i++) {
        fz_dquery_t *dq = &d->queries[i];
        if (!dq->q)
            continue;
        fzd_iterate(d, dq, 0, false); /* first: it names a wrong entity */
        check_count(d, dq);
    }
}

void fzd_check_fresh(fz_driver_t *d)
{
    for (int i = 0; i < FZ_MAX_QUERIES && d->fresh && !fzd_failed(d); i++) {
        fz_dquery_t *dq = &d->queries[i];
        if (!dq->q || !dq->fresh)
            continue;
        dq->fresh = false;
        d->fresh--;
        fzd_iterate(d, dq, 0, false);
        check_count(d, dq);
    }
}

void fzd_op_query_check(fz_driver_t *d)
{
    d->op = "query check";
    fzd_check_queries(d);
}

/* ------------------------------------------------------------------ creation */

/* Creates a query from (desc, model) and checks the outcome; on success
 * stores it in entry `slot` and checks it at once (a group's first fill).
 * want: the status tes_query_new must end with. */
static void create(fz_driver_t *d, uint32_t slot, const tes_query_desc_t *desc,
                   const fz_mquery_t *mq, int want)
{
    d->op = "tes_query_new";
    char buf[160];
    tes_query_t *q = tes_query_new(d->w, desc);
    /* An owning group reorders its stores as it is made, under any live
     * loop: while deferred, refusing it (TES_ERR_BUSY, before or after the
     * other checks) is fine too; if it is made, the loops going on must
     * not notice. */
    if (!q && (desc->flags & TES_QUERY_OWNING_GROUP) && d->defer_depth > 0 &&
        tes_last_error(d->w) == TES_ERR_BUSY)
        want = TES_ERR_BUSY;
    if (want != TES_OK) {
        if (q) {
            fzd_fail(d, "[%s] created, but it must be refused with %d", describe(mq, buf, sizeof buf),
                     want);
            tes_query_free(q);
            return;
        }
        fzd_check_error(d, want, 1);
        d->res->queries_refused++;
        return;
    }
    if (!q) {
        fzd_fail(d, "[%s] refused with %d (%s)", describe(mq, buf, sizeof buf),
                 tes_last_error(d->w), tes_strerror(tes_last_error(d->w)));
        return;
    }
    fz_dquery_t *dq = &d->queries[slot];
    memset(dq, 0, sizeof *dq);
    dq->q = q;
    dq->mq = *mq;
    d->owned = fz_bits_or(d->owned, fz_mquery_owns(mq));
    d->res->queries_made++;
    fzd_iterate(d, dq, 0, false);
    check_count(d, dq);
}

void fzd_free_query(fz_driver_t *d, fz_dquery_t *dq)
{
    d->op = "tes_query_free";
    d->owned = fz_bits_minus(d->owned, fz_mquery_owns(&dq->mq));
    if (dq->fresh)
        d->fresh--;
    tes_query_free(dq->q);
    memset(dq, 0, sizeof *dq);
}

/* Fills desc and the model from a list of (k, oper) pairs. */
static void build(fz_driver_t *d, tes_query_desc_t *desc, fz_mquery_t *mq, const fz_mterm_t *terms,
                  int32_t n, uint32_t flags)
{
    memset(desc, 0, sizeof *desc);
    memset(mq, 0, sizeof *mq);
    for (int32_t i = 0; i < n; i++) {
        desc->terms[i].comp = d->ids[terms[i].k];
        desc->terms[i].oper = terms[i].oper;
        desc->terms[i].src = terms[i].src;
        /* A parent term's access is the model's (TES_IN unless refused). */
        desc->terms[i].access = terms[i].src == TES_SRC_PARENT
                                    ? terms[i].access
                                    : (tes_access_t)((uint32_t)i % 4u);
        mq->terms[i] = terms[i];
    }
    desc->flags = mq->flags = flags;
    mq->nterms = n;
    fz_mquery_init(mq);
}

#define T(k, o) {FZ_C_##k, TES_##o, TES_SRC_SELF, TES_INOUT}
/* A term about the parent (read-only). */
#define P(k, o) {FZ_C_##k, TES_##o, TES_SRC_PARENT, TES_IN}

typedef struct fixed_query {
    fz_mterm_t terms[6];
    int32_t n;
    uint32_t flags;
} fixed_query_t;

static const fixed_query_t fixed[] = {
    /* table walk, whole tables */
    {{T(T4, AND), T(T24, AND)}, 2, 0},
    /* table walk with sparse terms: runs of rows */
    {{T(T12, AND), T(S16, OPTIONAL), T(TTAG, NOT), T(SST8, NOT)}, 4, 0},
    /* driven walk; SST's stable store keeps tombstones */
    {{T(S4, AND), T(SST, AND), T(T16A, OPTIONAL)}, 3, 0},
    /* sparse terms only, no table filtered out (the include flags): the
     * walk that reads nothing but the stores; AND-only and mixed */
    {{T(SST8, AND)}, 1, TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB},
    {{T(SST, AND), T(SST8, AND)}, 2, TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB},
    {{T(S4, AND), T(S16, AND), T(STAG, AND)}, 3,
     TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB},
    {{T(S16, AND), T(STAG, NOT), T(SST, OPTIONAL)}, 3,
     TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB},
    /* sparse terms only, with the default filters (the filter index):
     * AND-only (packed runs; S8 and S12 have no hooks, so scattered
     * values are gathered), with a NOT and an OPTIONAL term over a stable
     * store's tombstones, and with one filter of the two */
    {{T(S4, AND), T(S16, AND)}, 2, 0},
    {{T(S8, AND), T(S12, AND)}, 2, 0},
    {{T(SST8, AND), T(S4, NOT), T(S12, OPTIONAL)}, 3, TES_QUERY_INCLUDE_PREFAB},
    {{T(SPTAG, AND), T(S8, AND)}, 2, TES_QUERY_INCLUDE_DISABLED},
    /* NOT only: every table but some, plus the root entities */
    {{T(T4, NOT), T(S4, NOT)}, 2, 0},
    /* OPTIONAL only: everything visible */
    {{T(T24, OPTIONAL), T(S16, OPTIONAL), T(STAG, OPTIONAL)}, 3, 0},
    /* tags */
    {{T(TTAG, AND), T(STAG, AND), T(TTAG2, NOT), T(T4, OPTIONAL)}, 4, 0},
    /* TES_DISABLED named: its filter is off */
    {{T(DISABLED, AND), T(T12, OPTIONAL)}, 2, 0},
    {{T(DISABLED, OPTIONAL), T(SST8, AND)}, 2, 0},
    /* the include flags */
    {{T(T24, AND), T(SST8, OPTIONAL)}, 2, TES_QUERY_INCLUDE_DISABLED},
    {{T(PREFAB, OPTIONAL), T(T4, AND)}, 2, 0},
    {{T(STAG, AND), T(T12, OPTIONAL)}, 2, TES_QUERY_INCLUDE_PREFAB | TES_QUERY_INCLUDE_DISABLED},
    /* groups */
    {{T(T4, AND), T(S16, AND), T(T12, OPTIONAL), T(SST8, NOT)}, 4, TES_QUERY_NONOWNING_GROUP},
    {{T(SST, AND), T(S4, OPTIONAL)}, 2, TES_QUERY_NONOWNING_GROUP | TES_QUERY_INCLUDE_DISABLED},
    {{T(S16, AND), T(S4, AND), T(TTAG, NOT)}, 3, TES_QUERY_OWNING_GROUP},
    /* groups with NOT and OPTIONAL terms on sparse components: a change of
     * the NOT term's store moves entities in and out of the group */
    {{T(S4, AND), T(S16, NOT)}, 2, TES_QUERY_NONOWNING_GROUP},
    {{T(STAG, AND), T(S4, OPTIONAL), T(SREF, NOT), T(SST, NOT)}, 4, TES_QUERY_NONOWNING_GROUP},
    {{T(SREF, AND), T(STAG, NOT), T(SST8, NOT), T(TTAG2, NOT)}, 4, TES_QUERY_OWNING_GROUP},
    /* wide tables (columns past 64) and huge values */
    {{{FZ_C_W0 + 71, TES_AND, TES_SRC_SELF, TES_INOUT}, {FZ_C_W0 + 66, TES_AND, TES_SRC_SELF, TES_INOUT}, T(HUGE, OPTIONAL), T(S4, NOT)}, 4, 0},
    {{{FZ_C_W0 + 3, TES_AND, TES_SRC_SELF, TES_INOUT}, T(SHUGE, OPTIONAL), {FZ_C_W0 + 69, TES_OPTIONAL, TES_SRC_SELF, TES_INOUT}}, 3, 0},
    {{T(SHUGE, AND), {FZ_C_W0 + 70, TES_OPTIONAL, TES_SRC_SELF, TES_INOUT}, T(S16, NOT)}, 3, TES_QUERY_NONOWNING_GROUP},
    /* the hierarchy: by depth, propagating a value from the parent's,
     * with parent terms of every oper over table and sparse stores and
     * tags (OPTIONAL ones split chunks); random queries add more, with
     * and without the flag (a by-depth walk collects and sorts every
     * match, so the fixed set keeps one) */
    {{T(T12, AND), P(T12, AND), T(S4, OPTIONAL), P(TTAG, NOT), P(S16, OPTIONAL), P(STAG, OPTIONAL)},
     6, TES_QUERY_CASCADE},
};
#define NFIXED ((uint32_t)(sizeof fixed / sizeof fixed[0]))

/* Descriptions tes_query_new must refuse (given the fixed set's owning
 * group over S16 and S4). */
static const fixed_query_t refused[] = {
    {{T(S4, NOT)}, 1, TES_QUERY_NONOWNING_GROUP},                       /* NOT only + group */
    {{T(T4, AND)}, 1, TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP}, /* both groups */
    {{T(SST, AND)}, 1, TES_QUERY_OWNING_GROUP},                         /* stable store */
    {{T(T4, AND), T(STAG, AND)}, 2, TES_QUERY_OWNING_GROUP},            /* table term */
    {{T(S4, AND)}, 1, TES_QUERY_OWNING_GROUP},                          /* owned already */
    {{T(STAG, AND), T(S4, OPTIONAL)}, 2, TES_QUERY_OWNING_GROUP},       /* optional term */
    {{T(T4, AND)}, 1, 1u << 5},                                         /* unknown flag */
    {{T(T4, AND)}, 0, 0},                                               /* no terms */
    {{T(S4, AND)}, 1, TES_QUERY_CASCADE | TES_QUERY_NONOWNING_GROUP},   /* by depth + group */
    {{T(S4, AND), {FZ_C_T4, TES_AND, TES_SRC_PARENT, TES_INOUT}}, 2, 0}, /* parent term written */
};
#define NREFUSED ((uint32_t)(sizeof refused / sizeof refused[0]))

#undef T
#undef P

bool fzd_queries_setup(fz_driver_t *d)
{
    d->op = "query setup";
    tes_query_desc_t desc;
    fz_mquery_t mq;
    for (uint32_t i = 0; i < NREFUSED && !fzd_failed(d); i++) {
        build(d, &desc, &mq, refused[i].terms, refused[i].n, refused[i].flags);
        if (i == 4)
            continue; /* needs the owning group below */
        create(d, 0, &desc, &mq, TES_ERR_INVALID);
    }
    for (uint32_t i = 0; i < NFIXED && !fzd_failed(d); i++) {
        build(d, &desc, &mq, fixed[i].terms, fixed[i].n, fixed[i].flags);
        create(d, i, &desc, &mq, fz_mquery_expect(&mq, d->owned));
    }
    build(d, &desc, &mq, refused[4].terms, refused[4].n, refused[4].flags);
    create(d, NFIXED, &desc, &mq, TES_ERR_INVALID);
    /* Malformed descriptions and NULL arguments. */
    d->op = "tes_query_new";
    build(d, &desc, &mq, fixed[0].terms, fixed[0].n, 0);
    desc.terms[1].comp = desc.terms[0].comp; /* repeated */
    create(d, NFIXED, &desc, &mq, TES_ERR_INVALID);
    build(d, &desc, &mq, fixed[0].terms, fixed[0].n, 0);
    desc.terms[1].comp = d->max_id + 1; /* unknown */
    create(d, NFIXED, &desc, &mq, TES_ERR_INVALID);
    build(d, &desc, &mq, fixed[0].terms, fixed[0].n, 0);
    desc.terms[1].oper = (tes_oper_t)3;
    create(d, NFIXED, &desc, &mq, TES_ERR_INVALID);
    build(d, &desc, &mq, fixed[0].terms, fixed[0].n, 0);
    desc.terms[0].access = (tes_access_t)4;
    create(d, NFIXED, &desc, &mq, TES_ERR_INVALID);
    /* A component id never filled in (0) before a set term: not the end
     * of the list. */
    build(d, &desc, &mq, fixed[0].terms, fixed[0].n, 0);
    desc.terms[0].comp = 0;
    create(d, NFIXED, &desc, &mq, TES_ERR_INVALID);
    if (tes_query_new(d->w, NULL) || tes_last_error(d->w) != TES_ERR_INVALID)
        fzd_fail(d, "tes_query_new(w, NULL) was not refused with TES_ERR_INVALID");
    if (tes_query_new(NULL, &desc))
        fzd_fail(d, "tes_query_new(NULL, desc) returned a query");
    tes_query_free(NULL);
    if (tes_query_count(NULL) != 0)
        fzd_fail(d, "tes_query_count(NULL) is not 0");
    tes_iter_t it = tes_query_iter(NULL);
    if (tes_iter_next(&it) || tes_is_deferred(d->w) || tes_field(&it, 0))
        fzd_fail(d, "tes_query_iter(NULL) gave a live iterator");
    tes_iter_fini(&it);
    if (tes_is_deferred(d->w))
        fzd_fail(d, "tes_iter_fini of a NULL query's iterator left the world deferred");
    d->last_error = tes_last_error(d->w);
    return !fzd_failed(d);
}

void fzd_queries_fini(fz_driver_t *d, bool free_them)
{
    for (int i = 0; i < FZ_MAX_QUERIES; i++) {
        if (d->queries[i].q && free_them)
            tes_query_free(d->queries[i].q);
        memset(&d->queries[i], 0, sizeof d->queries[i]);
    }
    memset(&d->owned, 0, sizeof d->owned);
    d->fresh = 0;
}

/* A random description, usually well-formed (the model then decides), now
 * and then malformed (always refused). */
int fzd_random_desc(fz_driver_t *d, tes_query_desc_t *desc, fz_mquery_t *mq)
{
    static const int owned_kinds[] = {FZ_C_S4,  FZ_C_S16, FZ_C_STAG, FZ_C_SREF,
                                      FZ_C_S8,  FZ_C_S12, FZ_C_SPTAG};
    static const int sparse_kinds[] = {FZ_C_S4,   FZ_C_S16, FZ_C_SST, FZ_C_STAG, FZ_C_SST8,
                                       FZ_C_SREF, FZ_C_S8,  FZ_C_S12, FZ_C_SPTAG};
    const uint32_t nowned = (uint32_t)(sizeof owned_kinds / sizeof owned_kinds[0]);
    const uint32_t nsparse = (uint32_t)(sizeof sparse_kinds / sizeof sparse_kinds[0]);
    uint32_t flags = 0;
    uint32_t r = fzd_draw(d, 100);
    if (r < 15)
        flags |= TES_QUERY_NONOWNING_GROUP;
    else if (r < 30)
        flags |= TES_QUERY_OWNING_GROUP;
    if (fzd_draw(d, 100) < 20)
        flags |= TES_QUERY_INCLUDE_DISABLED;
    if (fzd_draw(d, 100) < 15)
        flags |= TES_QUERY_INCLUDE_PREFAB;
    /* (A by-depth walk collects and sorts every match: few of them.) */
    if (fzd_draw(d, 100) < 6)
        flags |= TES_QUERY_CASCADE; /* with a group flag: refused */
    fz_mterm_t terms[TES_MAX_TERMS];
    int32_t n = 0;
    int32_t want_n = 1 + (int32_t)fzd_draw(d, fzd_draw(d, 8) ? 4 : 9);
    fz_bits_t used = {{0, 0}}, used_par = {{0, 0}};
    for (int32_t i = 0; i < want_n; i++) {
        int k;
        tes_oper_t oper;
        if ((flags & TES_QUERY_OWNING_GROUP) && fzd_draw(d, 2)) {
            k = owned_kinds[fzd_draw(d, nowned)];
            oper = TES_AND;
        } else {
            /* Groups favour sparse terms (NOT and OPTIONAL ones too). */
            k = (flags & (TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP)) && fzd_draw(d, 2)
                    ? sparse_kinds[fzd_draw(d, nsparse)]
                    : (int)fzd_draw(d, FZ_NCOMP);
            /* Now and then an extra one: a wide table's high column, a
             * huge value. */
            if (fzd_draw(d, 100) < 6)
                k = fzd_draw(d, 4) ? FZ_C_W0 + (int)fzd_draw(d, FZ_NWIDE)
                                   : FZ_C_HUGE + (int)fzd_draw(d, 2);
            uint32_t o = fzd_draw(d, 100);
            oper = o < 45 ? TES_AND : o < 72 ? TES_NOT : TES_OPTIONAL;
            if ((flags & TES_QUERY_OWNING_GROUP) && oper == TES_OPTIONAL && fzd_draw(d, 4))
                oper = TES_NOT;
        }
        /* Now and then a term about the parent (with a group: refused),
         * read-only unless it is to be refused. */
        bool par = fzd_draw(d, 100) < ((flags & TES_QUERY_CASCADE) ? 40u : 6u);
        fz_bits_t *u = par ? &used_par : &used;
        if (fz_bits_has(*u, k))
            continue;
        fz_bits_set(u, k);
        terms[n].k = k;
        terms[n].oper = oper;
        terms[n].src = par ? TES_SRC_PARENT : TES_SRC_SELF;
        terms[n].access = par && fzd_draw(d, 16) ? TES_IN : (tes_access_t)fzd_draw(d, 4);
        n++;
    }
    build(d, desc, mq, terms, n, flags);
    for (int32_t i = 0; i < n; i++)
        if (terms[i].src == TES_SRC_SELF)
            desc->terms[i].access = (tes_access_t)fzd_draw(d, 4);
    if (fzd_draw(d, 100) >= 6)
        return fz_mquery_expect(mq, d->owned);
    switch (fzd_draw(d, 6)) {
    case 0:
        desc->terms[fzd_draw(d, (uint32_t)n)].comp = fzd_draw(d, 2) ? d->max_id + 1 + fzd_draw(d, 3)
                                                                     : UINT32_C(0xFFFFFFFF);
        break;
    case 1:
        if (n < TES_MAX_TERMS) {
            desc->terms[n] = desc->terms[fzd_draw(d, (uint32_t)n)]; /* repeated */
            break;
        }
        /* fall through */
    case 2:
        desc->terms[fzd_draw(d, (uint32_t)n)].oper = (tes_oper_t)(3 + fzd_draw(d, 2));
        break;
    case 3:
        desc->terms[fzd_draw(d, (uint32_t)n)].access = (tes_access_t)(4 + fzd_draw(d, 2));
        break;
    case 4:
        desc->flags |= fzd_draw(d, 2) ? 1u << 5 : 1u << 31;
        break;
    default:
        desc->flags |= TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP;
        break;
    }
    return TES_ERR_INVALID;
}

void fzd_op_query_new(fz_driver_t *d)
{
    d->op = "tes_query_new";
    /* Free one query now and then (never one a live loop walks). */
    uint32_t victim = fzd_draw(d, FZ_MAX_QUERIES);
    fz_dquery_t *dq = &d->queries[victim];
    if (dq->q && !dq->busy && fzd_draw(d, 3))
        fzd_free_query(d, dq);
    uint32_t slot = FZ_MAX_QUERIES;
    for (uint32_t i = 0; i < FZ_MAX_QUERIES && slot == FZ_MAX_QUERIES; i++)
        if (!d->queries[(victim + i) % FZ_MAX_QUERIES].q)
            slot = (victim + i) % FZ_MAX_QUERIES;
    if (slot == FZ_MAX_QUERIES)
        return;
    tes_query_desc_t desc;
    fz_mquery_t mq;
    int want = fzd_random_desc(d, &desc, &mq);
    create(d, slot, &desc, &mq, want);
}
