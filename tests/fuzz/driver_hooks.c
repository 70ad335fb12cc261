/*
 * What the fuzzer's observers do while they run, besides their checks
 * (driver_track.c calls fzd_hook_action from every on_add, on_set and
 * on_remove). Now and then (a few percent of calls) an observer:
 * - makes a query or a group from a random description, or a non-owning
 *   group that names the component being observed (AND or NOT, beside a
 *   sparse term): the group fills while the change that fired the hook is
 *   half done, and must still agree with the model once the op is over;
 * - frees a query or group (never one a live loop walks; only while half
 *   the entries or more are in use), while the world
 *   may be notifying that group's watcher list;
 * - with cfg->hook_busy, tries what observers may not do: tes_defer_begin,
 *   tes_defer_end and owning groups, which must be refused with
 *   TES_ERR_BUSY and change nothing.
 * The model is half-way through the op while a hook runs, so nothing is
 * compared here: a query made in a hook is marked fresh and checked (a full
 * iteration and tes_query_count) after the op, by fzd_check_step. A call a
 * hook makes that fails sets tes_last_error, which the tracker records
 * (hook_error) for the step check.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/driver_internal.h"

/* A free query entry, or FZ_MAX_QUERIES. */
static uint32_t free_slot(fz_driver_t *d)
{
    uint32_t start = fzd_draw(d, FZ_MAX_QUERIES);
    for (uint32_t i = 0; i < FZ_MAX_QUERIES; i++)
        if (!d->queries[(start + i) % FZ_MAX_QUERIES].q)
            return (start + i) % FZ_MAX_QUERIES;
    return FZ_MAX_QUERIES;
}

/* Makes a query from desc inside the hook; want (or alt) is the status the
 * model predicts. */
static void make(fz_driver_t *d, tes_world_t *w, uint32_t slot, const tes_query_desc_t *desc,
                 const fz_mquery_t *mq, int want, int alt, const char *hook, int k)
{
    tes_query_t *q = tes_query_new(w, desc);
    if (want != TES_OK) {
        if (q) {
            fzd_fail(d, "%s(%s) hook: tes_query_new (flags %#x) made a query, want error %d",
                     hook, fz_comps[k].name, desc->flags, want);
            tes_query_free(q);
            return;
        }
        int got = tes_last_error(w);
        if (got != want && got != alt)
            fzd_fail(d, "%s(%s) hook: tes_query_new (flags %#x) failed with %d (%s), want %d (%s)",
                     hook, fz_comps[k].name, desc->flags, got, tes_strerror(got), want,
                     tes_strerror(want));
        d->t.hook_error = got;
        d->res->queries_refused++;
        return;
    }
    if (!q) {
        int got = tes_last_error(w);
        fzd_fail(d, "%s(%s) hook: tes_query_new (flags %#x) refused with %d (%s)", hook,
                 fz_comps[k].name, desc->flags, got, tes_strerror(got));
        return;
    }
    fz_dquery_t *dq = &d->queries[slot];
    memset(dq, 0, sizeof *dq);
    dq->q = q;
    dq->mq = *mq;
    dq->fresh = true;
    d->fresh++;
    d->owned = fz_bits_or(d->owned, fz_mquery_owns(mq));
    d->res->queries_made++;
    d->res->hook_queries++;
}

static void hook_query_new(fz_driver_t *d, tes_world_t *w, const char *hook, int k)
{
    uint32_t slot = free_slot(d);
    if (slot == FZ_MAX_QUERIES)
        return;
    tes_query_desc_t desc;
    fz_mquery_t mq;
    int want = fzd_random_desc(d, &desc, &mq), alt = 1;
    if (desc.flags & TES_QUERY_OWNING_GROUP) {
        /* An owning group reorders stores the change under way may hold
         * pointers into: refused inside a hook (before or after the other
         * checks). */
        if (!d->cfg->hook_busy)
            return;
        if (want == TES_OK)
            want = TES_ERR_BUSY;
        else
            alt = TES_ERR_BUSY;
    }
    make(d, w, slot, &desc, &mq, want, alt, hook, k);
}

/* A non-owning group over the observed component k and another one: {x,
 * NOT k}, {k, NOT x} or {k, OPTIONAL x}, x mostly sparse. */
static void hook_group_on(fz_driver_t *d, tes_world_t *w, const char *hook, int k)
{
    static const int others[] = {FZ_C_S4, FZ_C_S16, FZ_C_SST, FZ_C_STAG, FZ_C_SST8,
                                 FZ_C_SREF, FZ_C_T4, FZ_C_T24};
    uint32_t slot = free_slot(d);
    if (slot == FZ_MAX_QUERIES)
        return;
    int x = others[fzd_draw(d, 8)];
    if (x == k)
        x = FZ_C_S4 == k ? FZ_C_S16 : FZ_C_S4;
    fz_mquery_t mq;
    memset(&mq, 0, sizeof mq);
    mq.nterms = 2;
    switch (fzd_draw(d, 3)) {
    case 0:
        mq.terms[0] = (fz_mterm_t){.k = x, .oper = TES_AND};
        mq.terms[1] = (fz_mterm_t){.k = k, .oper = TES_NOT};
        break;
    case 1:
        mq.terms[0] = (fz_mterm_t){.k = k, .oper = TES_AND};
        mq.terms[1] = (fz_mterm_t){.k = x, .oper = TES_NOT};
        break;
    default:
        mq.terms[0] = (fz_mterm_t){.k = k, .oper = TES_AND};
        mq.terms[1] = (fz_mterm_t){.k = x, .oper = TES_OPTIONAL};
        break;
    }
    mq.flags = TES_QUERY_NONOWNING_GROUP | (fzd_draw(d, 4) ? 0u : TES_QUERY_INCLUDE_DISABLED);
    fz_mquery_init(&mq);
    tes_query_desc_t desc;
    memset(&desc, 0, sizeof desc);
    for (int32_t i = 0; i < mq.nterms; i++) {
        desc.terms[i].comp = d->ids[mq.terms[i].k];
        desc.terms[i].oper = mq.terms[i].oper;
    }
    desc.flags = mq.flags;
    make(d, w, slot, &desc, &mq, fz_mquery_expect(&mq, d->owned), 1, hook, k);
}

/* Frees a query no live loop walks, groups more often than not. */
static void hook_query_free(fz_driver_t *d)
{
    const uint32_t groups = TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP;
    uint32_t live = 0;
    for (uint32_t i = 0; i < FZ_MAX_QUERIES; i++)
        live += d->queries[i].q != NULL;
    if (live < FZ_MAX_QUERIES / 2)
        return; /* keep most of the fixed set */
    bool want_group = fzd_draw(d, 3) != 0;
    uint32_t start = fzd_draw(d, FZ_MAX_QUERIES);
    for (uint32_t pass = 0; pass < 2; pass++, want_group = false)
        for (uint32_t i = 0; i < FZ_MAX_QUERIES; i++) {
            fz_dquery_t *dq = &d->queries[(start + i) % FZ_MAX_QUERIES];
            if (dq->q && !dq->busy && (!want_group || (dq->mq.flags & groups))) {
                fzd_free_query(d, dq);
                d->res->hook_frees++;
                return;
            }
        }
}

/* tes_defer_begin or tes_defer_end from inside an observer: refused. A
 * begin only from a hook of an immediate call (no level open): should the
 * library accept it, the level is closed again at once with nothing queued,
 * so the run can end cleanly; one accepted during a flush cannot be undone
 * that way. */
static void hook_defer(fz_driver_t *d, tes_world_t *w, const char *hook, int k, bool coin)
{
    bool begin = d->defer_depth == 0 && coin;
    int rc = begin ? tes_defer_begin(w) : tes_defer_end(w);
    d->res->hook_defers++;
    if (begin && rc == TES_OK)
        (void)tes_defer_end(w);
    if (rc != TES_ERR_BUSY) {
        fzd_fail(d, "%s(%s) hook: %s returned %d (%s), want TES_ERR_BUSY (an observer may not "
                    "open or close a deferral level; --no-hook-busy skips this)",
                 hook, fz_comps[k].name, begin ? "tes_defer_begin" : "tes_defer_end", rc,
                 tes_strerror(rc));
        return;
    }
    if (tes_last_error(w) != TES_ERR_BUSY)
        fzd_fail(d, "%s(%s) hook: %s refused, but tes_last_error is %d", hook, fz_comps[k].name,
                 begin ? "tes_defer_begin" : "tes_defer_end", tes_last_error(w));
    d->t.hook_error = TES_ERR_BUSY;
}

void fzd_hook_action(fz_tracker_t *t, tes_world_t *w, tes_entity_t e, int k, const char *hook)
{
    (void)e;
    fz_driver_t *d = t->user;
    if (!d || d->in_action || fzd_failed(d) || t->failed)
        return;
    if (fzd_draw(d, 1000) >= 25)
        return;
    d->in_action = true;
    const char *saved = d->op;
    char op[96];
    snprintf(op, sizeof op, "%s (in %s(%s))", saved ? saved : "?", hook, fz_comps[k].name);
    d->op = op;
    uint32_t r = fzd_draw(d, 100);
    if (r < 35)
        hook_query_new(d, w, hook, k);
    else if (r < 55)
        hook_group_on(d, w, hook, k);
    else if (r < 85)
        hook_query_free(d);
    else {
        /* Drawn either way, so that a seed makes the same ops with and
         * without --no-hook-busy (against a library that refuses). */
        bool coin = fzd_draw(d, 2) != 0;
        if (d->cfg->hook_busy)
            hook_defer(d, w, hook, k, coin);
    }
    d->op = saved;
    d->in_action = false;
}
