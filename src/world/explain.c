/*
 * Failure sentences that depend on the world's state (see explain.h): what
 * a handle that is not alive is (captured and worded by stale.c), why a
 * call is refused while a hook, a system or a flush runs, and what holds
 * the world deferred when a call is refused for it. Failure paths only.
 * It records through last_error.c, below it.
 */
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet_word.h"

#include <stdio.h>
#include <string.h>

static int fail_captured(tes_world_t *w, const tes__stale_t *st)
{
    if (tes__unlikely(w->parallel))
        return tes__fail_parallel(w, TES_ERR_STALE);
    char text[TES__DETAIL_SIZE];
    tes__stale_format(st, text, sizeof text);
    return tes__fail_detail(w, TES_ERR_STALE, "%s", text);
}

int tes__fail_stale(tes_world_t *w, tes_entity_t e)
{
    /* A command a flush applies to an entity that died after it was queued
     * is dropped, which is not an error: the flush puts the record back as
     * it was (status, detail, failure count), so the sentence is never
     * formatted. */
    if (w->defer.flushing)
        return tes__fail(w, TES_ERR_STALE);
    tes__stale_t st = tes__stale_capture(&w->entities, e, TES__STALE_ENTITY);
    return fail_captured(w, &st);
}

int tes__fail_stale_instance(tes_world_t *w, const tes__entity_index_t *ids, tes_instance_t inst)
{
    tes__stale_t st = tes__stale_capture(ids, inst, TES__STALE_INSTANCE);
    return fail_captured(w, &st);
}

void tes__explain_deferred(const tes_world_t *w, char *buf, size_t cap)
{
    buf[0] = '\0';
    int32_t depth = tes__defer_depth(w);
    int32_t explicit_levels = w->defer.explicit_depth;
    int32_t iters = depth - explicit_levels;
    size_t len = 0;
    if (iters > 0) {
        char queries[TES__DETAIL_SIZE] = "";
        size_t nq = w->describe_iters ? w->describe_iters(w, queries, sizeof queries) : 0;
        int n = snprintf(buf, cap, "%d unfinished iterator%s of %s%s (a loop left early must call tes_iter_fini)",
                         (int)iters, iters == 1 ? "" : "s", nq > 1 ? "queries " : nq ? "query " : "an unnamed query (freed, or past the named levels)",
                         queries);
        len = n > 0 ? (size_t)n : 0;
    }
    if (explicit_levels > 0 && len < cap)
        snprintf(buf + len, cap - len, "%s%d tes_defer_begin level%s without tes_defer_end",
                 len ? " and " : "", (int)explicit_levels, explicit_levels == 1 ? "" : "s");
}

#ifdef TES_DEBUG
void tes__report_deferred_at_free(const tes_world_t *w)
{
    if (tes__defer_depth(w) <= 0)
        return;
    char why[TES__DETAIL_SIZE];
    tes__explain_deferred(w, why, sizeof why);
    fprintf(stderr, "tessera (TES_DEBUG build): tes_world_free: the world is still deferred by %s; "
                    "the changes queued meanwhile were never applied\n", why);
}
#endif

int tes__fail_deferred(tes_world_t *w, int status, const char *call)
{
    char why[TES__DETAIL_SIZE];
    tes__explain_deferred(w, why, sizeof why);
    return tes__fail_detail(w, status, "%s refused: the world is deferred by %s", call, why);
}

int tes__fail_busy(tes_world_t *w, const char *call)
{
    const char *why;
    if (tes__in_hook(w))
        why = "a hook, a snapshot reader or writer, or a save or load hook of this world is "
              "running; make the call after it returns";
    else if (tes__refuse(w))
        why = "a system is running that may not make this call (see what run may do)";
    else if (w->defer.flushing)
        why = "a deferred flush is applying its queue";
    else
        why = "the world is busy";
    return tes__fail_detail(w, TES_ERR_BUSY, "%s: refused: %s", call, why);
}
