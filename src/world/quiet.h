/*
 * The guards every structural call runs between (tes__world_begin /
 * tes__world_end, tes__hook_enter, tes__fire for a hook): they read and
 * write the quiet word (quiet_word.h), refuse a call made where it may not
 * run (recording why), and at the outermost end release and settle the
 * dependents that waited. Tuned for the single-entity calls of a game
 * loop: a guard is a load, a compare and a store.
 */
#ifndef TES_WORLD_QUIET_H
#define TES_WORLD_QUIET_H

#include "world/quiet_word.h"
#include "world/world.h"

/* Every structural call runs between begin and end: begin refuses calls
 * made while a user hook runs (any hook: ctor, dtor, copy, move or an
 * observer), and raises the hook depth so that hooks the call itself runs
 * cannot start structural changes of their own. `call` is the public
 * function the user called ("tes_add"): a refusal's detail names it, so
 * every guard says which call it refused (a constant, costing nothing
 * until a refusal formats it). */
static inline int tes__world_begin(tes_world_t *w, const char *call)
{
    if (!w)
        return TES_ERR_INVALID;
    if (tes__unlikely(w->lanes_live)) {
        /* A split structural system: every call only queues, into the
         * thread's lane; the hook depth is the thread's own. */
        tes__lane_t *lane = tes__lane(w);
        if (lane->hook_depth)
            return tes__fail_busy(w, call);
        lane->hook_depth++;
        return TES_OK;
    }
    if (tes__refused(w, TES__REFUSE_STRUCTURAL))
        return tes__fail_busy(w, call);
    tes__world_hook_up(w);
    w->watch_scope.count = 0;
    return TES_OK;
}

/* Lowers the hook depth raised by tes__world_begin or tes__hook_enter; the
 * outermost end forgets the call's list scope (it points at the call's
 * memory), releases the dependents freed from inside hooks and settles
 * the ones made there. */
static inline void tes__world_end(tes_world_t *w)
{
    if (tes__unlikely(w->lanes_live)) {
        tes__lane(w)->hook_depth--;
        return;
    }
    if (tes__world_hook_down(w) == 0) {
        w->watch_scope.count = 0;
        uint64_t word = tes__quiet_word(w);
        if (word & TES__QUIET_DOOMED)
            tes__world_release_doomed(w);
        if (word & TES__QUIET_SETTLING)
            tes__world_settle(w);
    }
}

/* Raises the hook depth around library code that runs user hooks outside a
 * structural call (a deferred flush destroying staged values, building an
 * owning group); end it with tes__world_end. */
static inline void tes__hook_enter(tes_world_t *w)
{
    if (tes__unlikely(w->lanes_live))
        tes__lane(w)->hook_depth++;
    else
        tes__world_hook_up(w);
}

/* tes__world_begin for calls that create entities (spawn, clone, prefab and
 * instantiate calls), which a parallel system may not make. */
static inline int tes__world_begin_create(tes_world_t *w, const char *call)
{
    if (w && tes__unlikely(tes__refuse(w) & TES__REFUSE_CREATING))
        return tes__fail_busy(w, call);
    return tes__world_begin(w, call);
}

/* The body of public structural call `name` ("tes_add"): runs `call`
 * between begin and end. A refused call returns the begin status (int
 * calls) or `failed` (calls that return a handle or a pointer). */
#define TES__STRUCTURAL(name, type, w, failed, call) \
    TES__GUARDED(tes__world_begin, name, type, w, failed, call)
/* The same for calls that create entities. */
#define TES__CREATING(name, type, w, failed, call) \
    TES__GUARDED(tes__world_begin_create, name, type, w, failed, call)
#define TES__GUARDED(begin, name, type, w, failed, call)                         \
    do {                                                                         \
        int tes__status = begin(w, name);                                        \
        if (tes__status)                                                         \
            return (failed);                                                     \
        type tes__result = (call);                                               \
        tes__world_end(w);                                                       \
        return tes__result;                                                      \
    } while (0)

/* Fires a component's on_add / on_set / on_remove hook, if any; structural
 * calls made by the hook are refused while it runs. */
static inline void tes__fire(tes_world_t *w, tes__observer_fn fn, const tes__component_t *info,
                             tes_entity_t e, void *ptr)
{
    if (!fn)
        return;
    /* Observers run only inside a structural call (or another hook level),
     * so the rules for calls made from hooks hold. */
    tes__assert(tes__hook_depth(w) > 0);
    tes__world_hook_up(w);
    fn(w, e, ptr, info->hooks.ctx);
    tes__world_hook_down(w);
}

#endif
