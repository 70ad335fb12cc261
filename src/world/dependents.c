/*
 * The world's dependents (queries, groups, lifecycle records: whatever
 * points into the world and must be finalised with it): registering and
 * removing them, freeing one later when a hook drops it while the call
 * that runs the hook may still use it, and settling work a dependent could
 * not do inside a hook. The list is short and changes when queries are
 * made or freed, so it is a plain array walked from the start.
 */
#include "world/world.h"
#include "world/quiet_word.h"

/* The one writer of the quiet state's pending bits: whether some
 * dependent waits for its release, and whether some waits to settle, read
 * afresh from the list after every change of it (the list is short, and
 * changes when queries are made or freed). */
static void dependents_changed(tes_world_t *w)
{
    bool doomed = false, settling = false;
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        doomed = doomed || w->dependents[i].release;
        settling = settling || w->dependents[i].settle;
    }
    tes__world_pending_set(w, doomed, settling);
}

int tes__world_depend(tes_world_t *w, void (*fini)(void *ctx), void *ctx)
{
    if (tes__grow(&w->alloc, (void **)&w->dependents, &w->dependent_cap,
                  (uint64_t)w->dependent_count + 1, sizeof *w->dependents, 8))
        return TES_ERR_NOMEM;
    w->dependents[w->dependent_count++] = (tes__dependent_t){fini, ctx, NULL, NULL};
    return TES_OK;
}

void tes__world_undepend(tes_world_t *w, void *ctx)
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        if (w->dependents[i].ctx == ctx) {
            w->dependents[i] = w->dependents[--w->dependent_count];
            dependents_changed(w);
            return;
        }
    }
}

void tes__world_doom(tes_world_t *w, void *ctx, void (*release)(void *ctx))
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        if (w->dependents[i].ctx == ctx && !w->dependents[i].release) {
            w->dependents[i].release = release;
            dependents_changed(w);
            return;
        }
    }
}

void tes__world_release_doomed(tes_world_t *w)
{
    /* A release runs no user hook, so the list cannot change under us
     * except by the removal made here; the pending bits are brought in
     * step before each release runs. */
    uint32_t i = 0;
    while (i < w->dependent_count) {
        tes__dependent_t d = w->dependents[i];
        if (!d.release) {
            i++;
            continue;
        }
        w->dependents[i] = w->dependents[--w->dependent_count];
        dependents_changed(w);
        d.release(d.ctx);
    }
}

void tes__world_settle_later(tes_world_t *w, void *ctx, void (*settle)(void *ctx))
{
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        tes__dependent_t *d = &w->dependents[i];
        if (d->ctx == ctx && !d->release && !d->settle) {
            d->settle = settle;
            dependents_changed(w);
            return;
        }
    }
}

void tes__world_settle(tes_world_t *w)
{
    /* By index: a settle may ask again (its entry is then past us, so this
     * walk ends) but adds or removes no dependent. */
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        void (*settle)(void *ctx) = w->dependents[i].settle;
        if (!settle || w->dependents[i].release)
            continue;
        w->dependents[i].settle = NULL;
        dependents_changed(w);
        settle(w->dependents[i].ctx);
    }
}
