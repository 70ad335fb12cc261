/*
 * The deferral levels a user opens (tes_defer_begin / tes_defer_end,
 * tes_is_deferred) and the teardown of the world's queues. Ending the
 * outermost level applies the queue (defer_flush.c), and teardown frees
 * the threads' lanes (defer_lanes.c), so this file stands above both;
 * the queue itself is defer.c. Called a few times per frame.
 */
#include "world/defer.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"
#include "world/world.h"

void tes__defer_fini(tes_world_t *w)
{
    tes__defer_t *d = &w->defer;
    tes__alloc_t *a = &w->alloc;
    for (uint32_t i = 0; i < d->count; i++) {
        tes__op_t op = d->ops[i]; /* a copy: hooks run below */
        if ((op.kind == TES__OP_SET || op.kind == TES__OP_ENSURE) && op.value) {
            const tes__component_t *info = tes__registry_get(&w->components, op.comp);
            tes__hook_enter(w);
            tes__component_destruct(info, op.value, 1);
            tes__world_end(w);
        } else if (op.kind == TES__OP_CALL) {
            tes__defer_call_t call = d->calls[op.call];
            call.run(w, call.arg, false);
        }
    }
    tes__defer_queue_release(d, a);
    tes__defer_lanes_fini(w);
}

/* A deferral level opened or closed from inside a hook would change how
 * the call that runs the hook goes on (during a flush: queue the remaining
 * commands onto the queue being applied), so both are refused there:
 * TES_ERR_BUSY (recorded, with why). TES_ERR_INVALID for a NULL world,
 * TES_OK when the call may go on. */
static int level_entry(tes_world_t *w, const char *call)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!tes__in_hook_or_frame(w) && !w->defer.flushing)
        return TES_OK;
    tes__fail_busy(w, call);
    return TES_ERR_BUSY;
}

int tes_defer_begin(tes_world_t *w)
{
    int rc = level_entry(w, "tes_defer_begin");
    if (rc)
        return rc;
    tes__world_depth_up(w);
    w->defer.explicit_depth++;
    return TES_OK;
}

int tes_defer_end(tes_world_t *w)
{
    int rc = level_entry(w, "tes_defer_end");
    if (rc)
        return rc;
    /* Only levels opened by tes_defer_begin: an iterator's level ends with
     * the iterator. */
    if (w->defer.explicit_depth <= 0) {
        char why[TES__DETAIL_SIZE];
        tes__explain_deferred(w, why, sizeof why);
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_defer_end: no tes_defer_begin level is open%s%s", why[0] ? "; the world is deferred by " : "", why);
    }
    w->defer.explicit_depth--;
    return tes__defer_end(w);
}

bool tes_is_deferred(const tes_world_t *w) { return w && tes__deferred(w); }
