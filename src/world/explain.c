/*
 * Failure sentences that depend on the world's state (see explain.h): what
 * a handle that is not alive is, and what holds the world deferred when a
 * call is refused for it. Failure paths only.
 */
#include "world/explain.h"
#include "world/quiet.h"

#include <stdio.h>
#include <string.h>

/* tes__stale_t.state */
enum {
    STALE_NOT_ISSUED, /* index at or past the slots issued (or reserved) */
    STALE_LIVE,       /* the slot holds a live handle of another generation */
    STALE_FREE,       /* the slot is on the free list */
    STALE_RETIRED     /* the slot used up its generations */
};

tes__stale_t tes__stale_capture(const tes__entity_index_t *ids, uint64_t handle, int noun)
{
    tes__stale_t st = {handle, 0, 0, STALE_NOT_ISSUED, (uint8_t)noun};
    if (!ids)
        return st;
    st.issued = ids->count;
    uint32_t index = tes_entity_index(handle);
    if (index >= ids->count)
        return st;
    const tes__slot_t *s = &ids->slots[index];
    st.slot_gen = s->generation;
    st.state = tes__slot_is_retired(s) ? STALE_RETIRED
               : tes__slot_is_live(s)  ? STALE_LIVE
                                       : STALE_FREE;
    return st;
}

void tes__stale_format(const tes__stale_t *st, char *buf, size_t cap)
{
    const char *noun = st->noun == TES__STALE_INSTANCE ? "instance" : "entity";
    const char *gone = st->noun == TES__STALE_INSTANCE
                           ? "is no longer alive (destroyed, or its last member left it)"
                           : "is destroyed";
    unsigned index = tes_entity_index(st->handle), gen = tes_entity_generation(st->handle);
    if (st->handle == 0) {
        snprintf(buf, cap, "the %s handle is 0 (%s): it was never set, or holds the result of a call that failed", noun, st->noun == TES__STALE_INSTANCE ? "no instance" : "TES_NULL");
        return;
    }
    if (index == TES_NULL_INDEX) {
        snprintf(buf, cap, "%s %u:%u was never issued: index 0x%x is reserved", noun, index, gen, index);
        return;
    }
    if (st->state == STALE_NOT_ISSUED) {
        if (st->issued == 0)
            snprintf(buf, cap, "%s %u:%u was never issued: this world has issued no %s yet (a handle from another world?)", noun, index, gen, noun);
        else
            snprintf(buf, cap, "%s %u:%u was never issued: this world has issued indices 0 to %u only (a handle from another world?)", noun, index, gen, (unsigned)(st->issued - 1));
        return;
    }
    if (gen == 0 || gen == TES_TOMBSTONE) {
        snprintf(buf, cap, "%s %u:%u was never issued: generation %u is never used", noun, index, gen, gen);
        return;
    }
    switch (st->state) {
    case STALE_RETIRED:
        snprintf(buf, cap, "%s %u:%u %s: its slot used up its generations and is retired, so no handle with index %u is alive again", noun, index, gen, gone, index);
        return;
    case STALE_FREE:
        if (gen < st->slot_gen)
            snprintf(buf, cap, "%s %u:%u %s: handle generation %u, the slot is free (the next %s there gets generation %u)", noun, index, gen, gone, gen, noun, (unsigned)st->slot_gen);
        else
            snprintf(buf, cap, "%s %u:%u was never issued: generation %u is past the slot's (next generation %u)", noun, index, gen, gen, (unsigned)st->slot_gen);
        return;
    default:
        if (gen < st->slot_gen)
            snprintf(buf, cap, "%s %u:%u %s: handle generation %u, the slot now holds %s %u:%u (generation %u)", noun, index, gen, gone, gen, noun, index, (unsigned)st->slot_gen, (unsigned)st->slot_gen);
        else
            snprintf(buf, cap, "%s %u:%u was never issued: generation %u is past the slot's (current generation %u)", noun, index, gen, gen, (unsigned)st->slot_gen);
        return;
    }
}

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
