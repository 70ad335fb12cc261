/*
 * The state and the sentence of a handle that is not alive (see stale.h).
 * Failure paths only: written for clarity, not speed.
 */
#include "world/stale.h"

#include <stdio.h>

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
