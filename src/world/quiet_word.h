/*
 * The world's quiet state: one atomic word (tes_world.quiet) records the
 * deferral depth, the hook depth, the running systems' refusals and
 * whether some dependent waits, and every call that may take a plain path
 * decides so from one load of it. This header holds the word's layout, its
 * readers and its one writer per transition; it calls nothing, so every
 * file of the world layer may read the state. The guards that structural
 * calls run between are in quiet.h. Tuned for the single-entity calls of a
 * game loop: the quiet test is one load and one compare, and the writers
 * are single stores except for the deferral depth, which reader threads
 * move with atomic additions.
 */
#ifndef TES_WORLD_QUIET_WORD_H
#define TES_WORLD_QUIET_WORD_H

#include "world/world.h"

/* The world's quiet state (see tes__world_quiet): ONE word that is the
 * only record of the five things that decide whether a call may take a
 * plain path. Nothing mirrors it; every reader derives what it needs from
 * it (tes__defer_depth, tes__hook_depth, tes__refuse, ...), and each
 * transition has one writer beside tes__world_quiet:
 *   bits  0..30  deferral depth: levels opened by tes_defer_begin and by
 *                live iterators (tes__world_depth_up/down, atomic: reader
 *                threads open and end iterators at once);
 *   bits 32..47  hook depth: > 0 while a user hook or a structural call
 *                that may run one is in progress (tes__world_hook_up/down);
 *   bits 48..55  TES__REFUSE_* bits, set by tes_progress for as long as
 *                systems run (tes__world_refuse_set);
 *   bit  56      some dependent waits for its release (tes__world_doom);
 *   bit  57      some dependent waits to settle (tes__world_settle_later);
 *                both written by tes__world_pending_set, from the
 *                dependents list, after every change of that list.
 * The word is 0 exactly when the world is quiet, and at most the deferral
 * depth when the world is only deferred (TES__QUIET_ONLY_DEFERRED), so a
 * call tells the three states it cares about apart with one load. Hook
 * depth, refusals and the pending bits are written by the one thread that
 * owns the world, never while reader threads run, so their writers' relaxed
 * load and store suffice; the depth, which readers move, is moved by
 * atomic additions. tes__world_check verifies the pending bits against the
 * dependents list and the depth against the levels tes_defer_begin opened. */
#define TES__QUIET_DEPTH_MASK UINT64_C(0x7FFFFFFF)
#define TES__QUIET_HOOK_SHIFT 32
#define TES__QUIET_HOOK_ONE (UINT64_C(1) << TES__QUIET_HOOK_SHIFT)
#define TES__QUIET_HOOK_MASK (UINT64_C(0xFFFF) << TES__QUIET_HOOK_SHIFT)
#define TES__QUIET_REFUSE_SHIFT 48
#define TES__QUIET_REFUSE_MASK (UINT64_C(0xFF) << TES__QUIET_REFUSE_SHIFT)
#define TES__QUIET_DOOMED (UINT64_C(1) << 56)
#define TES__QUIET_SETTLING (UINT64_C(1) << 57)
/* Every bit the word may hold. */
#define TES__QUIET_ALL                                                                      \
    (TES__QUIET_DEPTH_MASK | TES__QUIET_HOOK_MASK | TES__QUIET_REFUSE_MASK |                \
     TES__QUIET_DOOMED | TES__QUIET_SETTLING)

/* What tes_progress refuses while systems run: structural calls (a system
 * without the structural flag), entity-creating calls (a parallel system),
 * and calls that would end or re-enter the frame (tes_world_free,
 * tes_defer_begin/end; any system). Unlike a hook level, queries work. */
#define TES__REFUSE_STRUCTURAL 1u
#define TES__REFUSE_CREATE 2u
#define TES__REFUSE_FRAME 4u

/* The quiet state's readers (see TES__QUIET_DEPTH_MASK). */
static inline uint64_t tes__quiet_word(const tes_world_t *w)
{
    return atomic_load_explicit(&w->quiet, memory_order_relaxed);
}
/* Levels of deferral open: tes_defer_begin's and live iterators'. */
static inline int32_t tes__defer_depth(const tes_world_t *w)
{
    return (int32_t)(tes__quiet_word(w) & TES__QUIET_DEPTH_MASK);
}
static inline bool tes__deferred(const tes_world_t *w)
{
    return (tes__quiet_word(w) & TES__QUIET_DEPTH_MASK) != 0;
}
/* The world's own hook depth (a lane keeps its own: see tes__in_hook). */
static inline int32_t tes__hook_depth(const tes_world_t *w)
{
    return (int32_t)((tes__quiet_word(w) & TES__QUIET_HOOK_MASK) >> TES__QUIET_HOOK_SHIFT);
}
/* The TES__REFUSE_* bits of the running systems (0 outside tes_progress). */
static inline uint8_t tes__refuse(const tes_world_t *w)
{
    return (uint8_t)((tes__quiet_word(w) & TES__QUIET_REFUSE_MASK) >> TES__QUIET_REFUSE_SHIFT);
}

/* Whether a hook runs or a system refuses any of the TES__REFUSE_* bits
 * in `refuse` (0: whether a hook runs): the refusal test of the calls
 * refused there, one masked load. */
static inline bool tes__refused(const tes_world_t *w, uint8_t refuse)
{
    return (tes__quiet_word(w) &
            (TES__QUIET_HOOK_MASK | ((uint64_t)refuse << TES__QUIET_REFUSE_SHIFT))) != 0;
}
/* The refusal of calls that create entities: a hook, a system that may
 * make no structural call or no entity. */
#define TES__REFUSE_CREATING (TES__REFUSE_STRUCTURAL | TES__REFUSE_CREATE)
/* Any refusal: a system is running. */
#define TES__REFUSE_ANY 0xFFu

/* How a word classes the world for a call's dispatch: quiet (0), only
 * deferred (1: the word is the deferral depth alone, so no hook runs, no
 * system runs and no dependent waits) or anything else (2). The one
 * encoding of "only deferred"; branch-free. */
#define TES__QUIET_CLASSES 3u
static inline uint32_t tes__quiet_class(uint64_t word)
{
    return (uint32_t)(word != 0) + (uint32_t)(word > TES__QUIET_DEPTH_MASK);
}

/* The writers: one per transition, and nothing else writes the word. A
 * plain store, for the fields only the owning thread writes. */
static inline void tes__quiet_store(tes_world_t *w, uint64_t word)
{
    tes__assert((word & ~TES__QUIET_ALL) == 0);
    atomic_store_explicit(&w->quiet, word, memory_order_relaxed);
}
/* Hook entry and exit. hook_down returns the new depth. */
static inline void tes__world_hook_up(tes_world_t *w)
{
    uint64_t word = tes__quiet_word(w);
    tes__assert((word & TES__QUIET_HOOK_MASK) != TES__QUIET_HOOK_MASK);
    tes__quiet_store(w, word + TES__QUIET_HOOK_ONE);
}
static inline int32_t tes__world_hook_down(tes_world_t *w)
{
    uint64_t word = tes__quiet_word(w);
    tes__assert((word & TES__QUIET_HOOK_MASK) != 0);
    word -= TES__QUIET_HOOK_ONE;
    tes__quiet_store(w, word);
    return (int32_t)((word & TES__QUIET_HOOK_MASK) >> TES__QUIET_HOOK_SHIFT);
}
/* The systems' refusals (tes_progress), replaced as a whole. */
static inline void tes__world_refuse_set(tes_world_t *w, uint8_t refuse)
{
    uint64_t word = tes__quiet_word(w) & ~TES__QUIET_REFUSE_MASK;
    tes__quiet_store(w, word | ((uint64_t)refuse << TES__QUIET_REFUSE_SHIFT));
}
/* Whether some dependent waits for its release or to settle: written by
 * the world's dependents list (dependents.c) after each change of it. */
static inline void tes__world_pending_set(tes_world_t *w, bool doomed, bool settling)
{
    uint64_t word = tes__quiet_word(w) & ~(TES__QUIET_DOOMED | TES__QUIET_SETTLING);
    tes__quiet_store(w, word | (doomed ? TES__QUIET_DOOMED : 0u) | (settling ? TES__QUIET_SETTLING : 0u));
}
/* Deferral levels: atomic, as reader threads open and end iterators at
 * once. depth_up returns the level it opened (the new depth), depth_down
 * the new depth. */
static inline uint32_t tes__world_depth_up(tes_world_t *w)
{
    uint64_t old = atomic_fetch_add_explicit(&w->quiet, 1u, memory_order_relaxed);
    tes__assert((old & TES__QUIET_DEPTH_MASK) != TES__QUIET_DEPTH_MASK);
    return (uint32_t)(old & TES__QUIET_DEPTH_MASK) + 1u;
}
/* Records `owner` (0: none) as the holder of deferral level `level` (see
 * tes_world.iter_levels); levels past TES__ITER_LEVELS are not recorded.
 * An iterator marks the level its depth_up returned and clears that same
 * level when it ends, whatever the record holds by then. Two iterators on
 * different threads may hold the same level number (one below them ended
 * first), so a record may be overwritten or cleared by the other one and
 * its holder go unnamed; but every iterator clears its level after
 * writing it, so the record a level holds is 0 or that of an iterator
 * that has not ended: no query is named that holds no level. On one
 * thread levels end in the order they were opened, and every holder of
 * the first TES__ITER_LEVELS levels is named. */
static inline void tes__world_level_mark(tes_world_t *w, uint32_t level, uintptr_t owner)
{
    if (level - 1u < TES__ITER_LEVELS)
        atomic_store_explicit(&w->iter_levels[level - 1u], owner, memory_order_relaxed);
}
static inline int32_t tes__world_depth_down(tes_world_t *w)
{
    uint64_t old = atomic_fetch_sub_explicit(&w->quiet, 1u, memory_order_relaxed);
    tes__assert((old & TES__QUIET_DEPTH_MASK) != 0);
    return (int32_t)((old - 1u) & TES__QUIET_DEPTH_MASK);
}

/* True while nothing unusual is going on: no hook or structural call is
 * running, nothing is deferred, no system is running, no dependent waits
 * to settle or to be released (a group asked for inside a hook whose
 * build failed, see tes__world_settle_later: only the generic path's end
 * settles them). A call made then on a component whose dispatch is not
 * GENERIC (no hooks, no watcher hears it) runs no user code and tells no
 * one, so it may take a quiet path that skips the begin/end guard, the
 * watcher reserve and the observer checks. The quiet state's word is
 * then 0: one load, one test. */
static inline bool tes__world_quiet(const tes_world_t *w) { return tes__quiet_word(w) == 0; }

/* True while a user hook runs (or a structural call that may run one is in
 * progress): the calls refused there check it. */
static inline bool tes__in_hook(const tes_world_t *w)
{
    if (tes__unlikely(w->lanes_live))
        return tes__lane(w)->hook_depth > 0;
    return (tes__quiet_word(w) & TES__QUIET_HOOK_MASK) != 0;
}

/* True for the calls refused both in hooks and in systems (tes_world_free,
 * tes_defer_begin/end). */
static inline bool tes__in_hook_or_frame(const tes_world_t *w)
{
    return tes__in_hook(w) || (tes__refuse(w) & TES__REFUSE_FRAME);
}

#endif
