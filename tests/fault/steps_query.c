/*
 * Steps for queries and deferred changes in the allocation-failure sweep
 * (see fault.h). Creating a query is an ordinary step: a failure must
 * leave NULL with TES_ERR_NOMEM and no trace (the snapshot covers every
 * other query, the end of the run covers leaks). Applying the deferred
 * queue is the one kind of step that cannot be undone: tes_defer_end
 * applies every queued change it can and returns the first error, so a
 * failure injected there loses that one change. Such a step is checked
 * for what the header promises (TES_ERR_NOMEM reported, the world
 * consistent, the staged values destroyed, nothing leaked), and the run is
 * then no longer compared with the reference run.
 */
#include <inttypes.h>
#include <string.h>

#include "fault/fault.h"
#include "world/check.h"

int fs_query_new(fs_run_t *r, const tes_query_desc_t *desc, int twin)
{
    tes_query_t *q = NULL;
    FS_STEP(r, fs_query(r, &q, tes_query_new(r->w, desc)));
    if (r->dead || !q)
        return -1;
    if (r->nqueries == FS_MAX_QUERIES) {
        fs_problem(r, "more than %d queries in a scenario", FS_MAX_QUERIES);
        tes_query_free(q);
        r->dead = true;
        return -1;
    }
    r->queries[r->nqueries] = q;
    r->twin[r->nqueries] = twin;
    return r->nqueries++;
}

void fs_query_free(fs_run_t *r, int i)
{
    if (r->dead || i < 0 || !r->queries[i])
        return;
    tes_query_free(r->queries[i]);
    r->queries[i] = NULL;
}

void fs_defer_begin(fs_run_t *r)
{
    FS_STEP(r, tes_defer_begin(r->w));
    if (!r->dead)
        r->defer_depth++;
}

/* After the last level closed: what applying the queue did. rc is the
 * status the library reported for it, failures the injected count before
 * the step. */
static void applied(fs_run_t *r, int rc, uint64_t failures, const char *what)
{
    r->defer_depth--;
    if (r->defer_depth == 0)
        memset(r->staged, 0, sizeof r->staged); /* every staged value is gone */
    if (r->ca.failures == failures) {
        if (rc != TES_OK) {
            fs_problem(r, "%s returned %d (%s) with no failure injected", what, rc,
                       tes_strerror(rc));
            r->dead = true;
            return;
        }
        fs_step_done(r);
        return;
    }
    r->injected++;
    if (rc == TES_OK) {
        /* A cache absorbed it: the flush did all it does without it (the
         * final comparison with the run without failure says if not). */
        r->absorbed++;
        r->flush_absorbed = what;
        if (tes__world_check(r->w) != TES_OK)
            fs_problem(r, "%s: tes__world_check failed after an absorbed failure", what);
        fs_step_done(r);
        return;
    }
    if (rc != TES_ERR_NOMEM)
        fs_problem(r, "%s: a failure while applying the queue gave %d (%s), want TES_ERR_NOMEM",
                   what, rc, tes_strerror(rc));
    if (tes_last_error(r->w) != TES_ERR_NOMEM)
        fs_problem(r, "%s: tes_last_error is %d after a failed flush, want TES_ERR_NOMEM", what,
                   tes_last_error(r->w));
    if (tes__world_check(r->w) != TES_OK)
        fs_problem(r, "%s: tes__world_check failed after a failed flush", what);
    if (tes_is_deferred(r->w) != (r->defer_depth > 0))
        fs_problem(r, "%s: still deferred after the flush", what);
    fs_check_live(r, what);
    fs_check_twins(r, what);
    r->flush_failed = true;
    r->in_flush++;
    fs_step_done(r);
}

void fs_defer_end(fs_run_t *r)
{
    if (!fs_before(r))
        return;
    uint64_t failures = r->ca.failures;
    int rc = tes_defer_end(r->w);
    applied(r, rc, failures, "tes_defer_end");
}

/* tes_progress as a step: a structural system's queued changes are
 * applied when it ends, so a failure among them is reported like a
 * flush's; a failure while chunks are captured must be absorbed. */
void fs_progress(fs_run_t *r)
{
    if (!fs_before(r))
        return;
    uint64_t failures = r->ca.failures;
    int rc = tes_progress(r->w, 0.5f);
    applied(r, rc, failures, "tes_progress");
}

tes_iter_t fs_iter(fs_run_t *r, int i)
{
    tes_iter_t it = tes_query_iter(r->queries[i]); /* allocates nothing */
    r->defer_depth++;
    return it;
}

bool fs_iter_next(fs_run_t *r, tes_iter_t *it)
{
    if (!fs_before(r)) {
        tes_iter_fini(it);
        return false;
    }
    uint64_t failures = r->ca.failures;
    int before = tes_last_error(r->w);
    if (tes_iter_next(it)) {
        if (r->ca.failures != failures) {
            fs_problem(r, "tes_iter_next allocated (and met a failure) in mid-loop");
            r->dead = true;
        }
        fs_step_done(r);
        return !r->dead;
    }
    /* The loop's end applied the queue; tes_last_error is the only report. */
    int rc = r->ca.failures != failures && tes_last_error(r->w) == TES_ERR_NOMEM &&
                     before != TES_ERR_NOMEM
                 ? TES_ERR_NOMEM
                 : TES_OK;
    applied(r, rc, failures, "tes_iter_next (end of loop)");
    return false;
}

void fs_iter_fini(fs_run_t *r, tes_iter_t *it)
{
    if (!fs_before(r)) {
        tes_iter_fini(it);
        return;
    }
    uint64_t failures = r->ca.failures;
    int before = tes_last_error(r->w);
    tes_iter_fini(it);
    int rc = r->ca.failures != failures && tes_last_error(r->w) == TES_ERR_NOMEM &&
                     before != TES_ERR_NOMEM
                 ? TES_ERR_NOMEM
                 : TES_OK;
    applied(r, rc, failures, "tes_iter_fini");
}
