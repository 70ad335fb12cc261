/*
 * Deferred changes in the differential fuzzer. Two composite ops:
 * - DEFER: tes_defer_begin (sometimes twice, nested), a random run of ops
 *   from the whole mix (their structural changes go to the model's queue,
 *   their reads see the state before the queue), sometimes an inner level
 *   closed early (which must not flush), then tes_defer_end, after which
 *   the model applies its queue and the next checks compare. Now and then
 *   an unmatched tes_defer_end, which must fail with TES_ERR_INVALID, also
 *   inside a query loop (an iterator's level is not the caller's to end).
 * - QUERY_MUTATE: a query loop that makes changes from inside its chunks,
 *   mostly to the chunk's own entities (fzd_iterate with ops per chunk),
 *   and sometimes leaves early with tes_iter_fini; the last level to close
 *   (the loop's end or fini) applies the queue.
 * - DEFER_BURST: one block of 16 to 96 changes, most of them adds, sets,
 *   ensures, removes and disables aimed at one or two entities, the rest
 *   any structural op on any entity. The flush merges each entity's quiet
 *   table changes into one move; the model applies the same queue one
 *   command at a time, and every check after the flush compares the two.
 * Ops nest: a block may contain query loops and blocks, a loop may contain
 * blocks and other loops, up to FZ_MAX_NEST deep.
 */
#include <string.h>

#include "fuzz/driver_internal.h"

int fzd_level_closed(fz_driver_t *d)
{
    if (--d->defer_depth > 0)
        return TES_OK;
    d->res->queued += d->m.nqueue;
    d->res->flushes++;
    int rc = fz_model_flush(&d->m);
    if (rc == TES_OK)
        return rc;
    /* Each command that failed recorded its error; so did every call a
     * hook made during the flush (refused with TES_ERR_BUSY, or a query a
     * hook made refused), in an order
     * the model does not know: the last of them is tes_last_error. */
    d->res->owned += rc == TES_ERR_OWNED;
    d->last_error = d->m.flush_last; /* the last command that failed */
    if (d->t.hook_error) {
        d->last_error_alt = d->t.hook_error;
        d->t.hook_error = 0;
    }
    return rc;
}

/* A tes_defer_end that closed a level: its status is the first error the
 * flush met (tes_last_error is checked with the step). */
static void level_ended(fz_driver_t *d, int rc)
{
    d->blocks--;
    int want = fzd_level_closed(d);
    if (rc != want)
        fzd_fail(d, "returned %d (%s), model says %d (%s)", rc, tes_strerror(rc), want,
                 tes_strerror(want));
}

void fzd_op_defer_block(fz_driver_t *d)
{
    if (d->blocks == 0 && fzd_draw(d, 100) < 3) {
        d->op = "tes_defer_end (unmatched)";
        fzd_check_status(d, tes_defer_end(d->w), TES_ERR_INVALID, 1);
        return;
    }
    d->op = "tes_defer_begin";
    int32_t levels = fzd_draw(d, 100) < 20 ? 2 : 1;
    for (int32_t l = 0; l < levels; l++) {
        int rc = tes_defer_begin(d->w);
        if (rc != TES_OK) {
            fzd_fail(d, "returned %d", rc);
            return;
        }
        d->defer_depth++;
        d->blocks++;
    }
    if (!tes_is_deferred(d->w)) {
        fzd_fail(d, "tes_is_deferred is false inside a block");
        return;
    }
    uint32_t n = 1 + fzd_draw(d, 24);
    d->nest++;
    for (uint32_t i = 0; i < n && !fzd_failed(d); i++) {
        fzd_run_op(d, fzd_pick_op(d));
        fzd_check_step(d);
        if (levels > 1 && fzd_draw(d, 100) < 5) {
            /* An inner level ends: nothing is applied yet. */
            d->op = "tes_defer_end (inner)";
            levels--;
            level_ended(d, tes_defer_end(d->w));
            fzd_check_step(d);
        }
    }
    d->nest--;
    for (; levels > 0 && !fzd_failed(d); levels--) {
        d->op = "tes_defer_end";
        level_ended(d, tes_defer_end(d->w));
    }
}

void fzd_op_query_mutate(fz_driver_t *d)
{
    d->op = "query loop";
    /* Groups walk lists of their own, which the loop's changes must not
     * disturb either: they get a larger share of the loops. */
    bool group = fzd_draw(d, 100) < 40;
    const uint32_t groups = TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP;
    uint32_t start = fzd_draw(d, FZ_MAX_QUERIES);
    for (uint32_t pass = 0; pass < 2; pass++, group = false)
    for (uint32_t i = 0; i < FZ_MAX_QUERIES; i++) {
        fz_dquery_t *dq = &d->queries[(start + i) % FZ_MAX_QUERIES];
        if (dq->q && (!group || (dq->mq.flags & groups))) {
            fzd_iterate(d, dq, 1 + fzd_draw(d, 4), true);
            return;
        }
    }
}

void fzd_op_defer_burst(fz_driver_t *d)
{
    if (!d->m.nlive)
        return;
    d->op = "tes_defer_begin (burst)";
    int rc = tes_defer_begin(d->w);
    if (rc != TES_OK) {
        fzd_fail(d, "returned %d", rc);
        return;
    }
    d->defer_depth++;
    d->blocks++;
    tes_entity_t targets[2];
    uint32_t nt = 1 + fzd_draw(d, 2);
    for (uint32_t i = 0; i < nt; i++)
        targets[i] = fz_model_handle(&d->m, d->m.live[fzd_draw(d, d->m.nlive)]);
    const tes_entity_t *saved = d->prefer;
    uint32_t saved_n = d->nprefer;
    d->prefer = targets; /* most picks (see fzd_pick_entity) */
    d->nprefer = nt;
    uint32_t n = 16 + fzd_draw(d, 81);
    d->nest++;
    for (uint32_t i = 0; i < n && !fzd_failed(d); i++) {
        uint32_t r = fzd_draw(d, 100);
        if (r < 24)
            fzd_op_add(d);
        else if (r < 48)
            fzd_op_set(d);
        else if (r < 60)
            fzd_op_ensure(d);
        else if (r < 82)
            fzd_op_remove(d);
        else if (r < 86)
            fzd_op_disable(d);
        else
            fzd_run_op(d, fzd_pick_structural_op(d));
        fzd_check_step(d);
    }
    d->nest--;
    d->prefer = saved;
    d->nprefer = saved_n;
    if (!fzd_failed(d)) {
        d->op = "tes_defer_end (burst)";
        level_ended(d, tes_defer_end(d->w));
    }
}
