/*
 * The command queue behind deferred mode: queuing, the per-entity and
 * per-pair records, and deferred tes_ensure (see defer.h). The flush lives in
 * defer_flush.c, the plain recorder (a deferred set of a plain component)
 * in defer_plain.c, the levels a user opens and the queues' teardown in
 * defer_levels.c: this file calls none of them, so every structural call
 * may queue through it.
 *
 * Every queuing call first reserves all the room it may need (a command,
 * an entity record, a pair record, a staged value; and the records the
 * pending plain sets will need when they catch up) and only then writes,
 * so a call that fails with TES_ERR_NOMEM leaves the queue as it was. No
 * pointer into the queue's arrays is kept across a reserve: records are
 * looked up again by entity index after it, and refer to each other and to
 * commands by position.
 */
#include "world/defer.h"
#include "world/explain.h"
#include "world/get.h"

#include <string.h>

#include "world/world.h"
#include "world/quiet.h"

/* ------------------------------------------------------------------ records */

static tes__defer_entity_t *entity_find(const tes__defer_t *d, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    if (index >= d->ent_at_cap)
        return NULL;
    uint32_t at = d->ent_at[index].rec;
    return at < d->ent_count && d->ents[at].e == e ? &d->ents[at] : NULL;
}

/* The record of e, made if missing (room reserved). */
static tes__defer_entity_t *entity_get(tes__defer_t *d, tes_entity_t e)
{
    tes__defer_entity_t *rec = entity_find(d, e);
    if (rec)
        return rec;
    tes__assert(d->ent_count < d->ent_cap && tes_entity_index(e) < d->ent_at_cap);
    d->ent_at[tes_entity_index(e)].rec = d->ent_count;
    rec = &d->ents[d->ent_count++];
    *rec = (tes__defer_entity_t){e, TES__OP_END, TES__OP_END, TES__OP_END, TES__OP_END, 0};
    return rec;
}

/* The pair record of (e, c) since e's last reset (NULL if none). */
static tes__defer_pair_t *pair_find(const tes__defer_t *d, const tes__defer_entity_t *er,
                                    tes_comp_t c)
{
    for (uint32_t at = er ? er->first_pair : TES__OP_END; at != TES__OP_END;
         at = d->pairs[at].next)
        if (d->pairs[at].comp == c)
            return &d->pairs[at];
    return NULL;
}

/* Writes the pair record of (e, c) (room reserved: at most one per
 * command). */
static void pair_put(tes__defer_t *d, tes__defer_entity_t *er, tes_comp_t c, uint32_t state,
                     uint32_t op)
{
    tes__defer_pair_t *p = pair_find(d, er, c);
    if (!p) {
        tes__assert(d->pair_count < d->pair_cap);
        p = &d->pairs[d->pair_count];
        p->comp = c;
        p->next = er->first_pair;
        er->first_pair = d->pair_count++;
    }
    p->state = state;
    p->op = op;
}

/* What an entity holds for a component at some place in the queue: the
 * answer of held_at. */
enum { HELD_NONE, HELD_DEFAULT, HELD_VALUE };
#define HELD_ADJUST 4 /* filling calls passed through (one in practice) */
typedef struct held {
    int kind;
    const void *value; /* HELD_VALUE: a current value or a staged one */
    /* The filling calls the value passed through, outermost first: each
     * adjusts its copy (fill with dst), innermost first. */
    uint32_t adjusts;
    tes__defer_call_t call[HELD_ADJUST];
    tes_entity_t filled[HELD_ADJUST];
} held_t;

/* What e holds for c once the commands before position `at` have run, as
 * applying them in call order would leave it: the value a queued set or
 * ensure staged; a default for an add to an entity without c; none after a
 * remove, clear or destroy; what the source held at the clone's own place
 * for a queued clone; what the member held at the call's place for a
 * filling call; else e's current value. A clone's or call's source is
 * followed in a loop (its own commands before that place are walked the
 * same way), so chains of clones cost no stack. Walks e's commands, and
 * each source's, before `at` (by the chain from the entity record's
 * first_op). Values a hook writes at the flush are not foreseen. */
static void held_at(const tes_world_t *w, const tes__defer_t *d, tes_entity_t e, tes_comp_t c,
                    uint32_t at, held_t *h)
{
    h->kind = HELD_NONE;
    h->value = NULL;
    h->adjusts = 0;
    bool or_default = false; /* an add followed the source: lacking c, a default */
    for (;;) {
        const tes__defer_entity_t *er = entity_find(d, e);
        enum { BASE, ABSENT, DEFAULT, STAGED, CLONED } st = BASE;
        const void *staged = NULL;
        tes_entity_t src = TES_NULL;
        uint32_t src_at = 0;
        bool added = false;
        for (uint32_t j = er ? er->first_op : TES__OP_END; j < at; j = d->ops[j].next) {
            const tes__op_t *op = &d->ops[j];
            tes__assert(op->e == e);
            if (op->kind == TES__OP_DESTROY) {
                st = ABSENT; /* every later command of e is dropped */
                break;
            }
            if (op->kind == TES__OP_CLEAR)
                st = ABSENT;
            else if (op->kind == TES__OP_CLONE)
                st = CLONED, src = op->src, src_at = j, added = false;
            else if (op->comp != c)
                continue;
            else if (op->kind == TES__OP_REMOVE)
                st = ABSENT;
            else if (op->kind == TES__OP_ADD) {
                if (st == ABSENT)
                    st = DEFAULT;
                else if (st == BASE || st == CLONED)
                    added = true;
            } else if (op->kind == TES__OP_SET || op->kind == TES__OP_ENSURE)
                st = op->value ? STAGED : DEFAULT, staged = op->value;
        }
        if (st == ABSENT || st == DEFAULT || st == STAGED) {
            h->kind = st == ABSENT ? (or_default ? HELD_DEFAULT : HELD_NONE)
                      : st == DEFAULT ? HELD_DEFAULT
                                      : HELD_VALUE;
            h->value = staged;
            if (st == ABSENT)
                h->adjusts = 0; /* no copy made: a default of the entity's own */
            return;
        }
        or_default |= added; /* an add after the source or the current state */
        if (st == CLONED) { /* what src held where the clone is queued */
            e = src;
            at = src_at;
            continue;
        }
        if (er && er->fill_op < at) { /* what the member held at the call */
            const tes__defer_call_t *call = &d->calls[d->ops[er->fill_op].call];
            tes_entity_t member = call->fill(w, call->arg, e, c, NULL);
            if (member == TES_NULL) {
                h->kind = or_default ? HELD_DEFAULT : HELD_NONE;
                h->adjusts = 0;
                return;
            }
            tes__assert(h->adjusts < HELD_ADJUST);
            h->call[h->adjusts] = *call;
            h->filled[h->adjusts++] = e;
            at = er->fill_op;
            e = member;
            continue;
        }
        /* Nothing queued before `at` changed e: its current state. */
        bool has = tes_has(w, e, c);
        h->value = has ? tes__get(w, e, c) : NULL;
        h->kind = h->value ? HELD_VALUE : has || or_default ? HELD_DEFAULT : HELD_NONE;
        if (!has)
            h->adjusts = 0;
        return;
    }
}

/* Whether e holds c once the queue's last whole-entity command on e has
 * run (before the pair commands that follow it). */
static bool base_has(const tes_world_t *w, const tes__defer_t *d, const tes__defer_entity_t *er,
                     tes_entity_t e, tes_comp_t c)
{
    if (!er || er->reset_op == TES__OP_END)
        return tes_has(w, e, c);
    held_t h;
    held_at(w, d, e, c, er->reset_op + 1, &h);
    return h.kind != HELD_NONE;
}

/* ------------------------------------------------------------------ queuing */

int tes__defer_reserve_slow(tes_world_t *w, uint32_t n)
{
    tes__defer_t *d = tes__defer_queue(w);
    tes__alloc_t *a = &w->alloc;
    uint32_t old_at = d->ent_at_cap;
    uint64_t need = (uint64_t)d->count + n;
    if (tes__grow(a, (void **)&d->ops, &d->cap, need, sizeof *d->ops, 64) ||
        tes__grow(a, (void **)&d->pairs, &d->pair_cap, need, sizeof *d->pairs, 64) ||
        tes__grow(a, (void **)&d->barriers, &d->barrier_cap, need, sizeof *d->barriers, 64) ||
        tes__grow(a, (void **)&d->ents, &d->ent_cap, tes__defer_ent_need(d, n), sizeof *d->ents,
                  64) ||
        tes__grow(a, (void **)&d->ent_at, &d->ent_at_cap, w->entities.cap, sizeof *d->ent_at, 64))
        return TES_ERR_NOMEM; /* what did grow is only capacity */
    if (d->ent_at_cap > old_at) /* never read uninitialised memory */
        memset(d->ent_at + old_at, 0xFF, (size_t)(d->ent_at_cap - old_at) * sizeof *d->ent_at);
    d->room = d->cap < d->pair_cap ? d->cap : d->pair_cap;
    d->room = d->room < d->barrier_cap ? d->room : d->barrier_cap;
    return TES_OK;
}

int tes__defer_reserve_call(tes_world_t *w, uint32_t nfilled)
{
    tes__defer_t *d = tes__defer_queue(w);
    if (tes__defer_reserve(w, 1) ||
        tes__grow(&w->alloc, (void **)&d->ents, &d->ent_cap, tes__defer_ent_need(d, nfilled),
                  sizeof *d->ents, 64) ||
        tes__grow(&w->alloc, (void **)&d->calls, &d->call_cap, (uint64_t)d->call_count + 1,
                  sizeof *d->calls, 8))
        return TES_ERR_NOMEM;
    return TES_OK;
}

/* See the rule in defer_flush.c: commands whose hooks could look at the
 * world, and whole-entity commands, are barriers. */
static uint8_t pair_class(const tes__component_t *info)
{
    if (info->hooks.on_add || info->hooks.on_set || info->hooks.on_remove)
        return TES__OP_BARRIER;
    return info->storage == TES_STORAGE_TABLE ? TES__OP_MERGED : TES__OP_QUIET;
}

static uint8_t merge_class(const tes_world_t *w, tes__op_kind_t kind, tes_comp_t comp)
{
    if (kind == TES__OP_MATERIALIZE)
        return TES__OP_QUIET;
    if (kind < TES__OP_ADD || kind > TES__OP_ENSURE)
        return TES__OP_BARRIER;
    return pair_class(tes__registry_get(&w->components, comp));
}

/* Appends a command (room reserved); returns its position. */
static uint32_t append(tes__defer_t *d, tes__op_kind_t kind, uint8_t merge, tes_comp_t comp,
                       tes_entity_t e)
{
    tes__assert(d->count < d->room);
    uint32_t at = d->count++;
    tes__op_t *op = &d->ops[at];
    op->kind = (uint8_t)kind;
    op->merge = merge;
    op->comp = comp;
    op->next = TES__OP_END;
    op->e = e;
    op->src = TES_NULL;
    if (merge == TES__OP_BARRIER)
        d->barriers[d->barrier_count++] = at;
    return at;
}

/* Writes the pair records of the plain sets queued since the last record
 * was written (see `paired` in defer.h): each is a set, so its record says
 * the value it staged. Its room was reserved with the command. */
static void catch_up(tes__defer_t *d)
{
    for (uint32_t at = d->paired; at < d->count; at++) {
        const tes__op_t *op = &d->ops[at];
        tes__assert(op->kind == TES__OP_SET && op->value);
        tes__defer_entity_t *er = entity_get(d, op->e);
        if (er->first_op == TES__OP_END)
            er->first_op = at;
        pair_put(d, er, op->comp, TES__PAIR_STAGED, at);
    }
    d->paired = d->count;
}

bool tes__defer_destroyed(const tes_world_t *w, tes_entity_t e)
{
    /* A destroy is never a plain set: its record is written as it is
     * queued, so no catching up is needed. Creating calls, the only
     * callers, are refused while lanes record. */
    tes__assert(!w->lanes_live);
    const tes__defer_entity_t *er = entity_find(&w->defer, e);
    return er && er->destroyed;
}

/* tes__defer_push with the command's merge class already known. */
static void push(tes_world_t *w, tes__op_kind_t kind, uint8_t merge, tes_entity_t e,
                 tes_comp_t comp, tes_entity_t src, void *value)
{
    tes__defer_t *d = tes__defer_queue(w);
    catch_up(d); /* records stay in call order */
    uint32_t at = append(d, kind, merge, comp, e);
    d->paired = d->count;
    if (kind == TES__OP_CLONE)
        d->ops[at].src = src;
    else if (kind == TES__OP_SET || kind == TES__OP_ENSURE)
        d->ops[at].value = value;
    tes__defer_chain(d, at, e);
    tes__defer_entity_t *er = entity_get(d, e);
    if (er->first_op == TES__OP_END)
        er->first_op = at; /* records are written in command order */
    switch (kind) {
    case TES__OP_DESTROY:
        er->destroyed = 1;
        /* fall through */
    case TES__OP_CLEAR:
    case TES__OP_CLONE:
        er->reset_op = at;
        er->first_pair = TES__OP_END;
        break;
    case TES__OP_ADD: {
        /* An add changes nothing when c is there already. */
        const tes__defer_pair_t *p = pair_find(d, er, comp);
        if (p ? p->state == TES__PAIR_ABSENT : !base_has(w, d, er, e, comp))
            pair_put(d, er, comp, TES__PAIR_FRESH, at);
        break;
    }
    case TES__OP_REMOVE: pair_put(d, er, comp, TES__PAIR_ABSENT, at); break;
    case TES__OP_SET:
    case TES__OP_ENSURE:
        pair_put(d, er, comp, value ? TES__PAIR_STAGED : TES__PAIR_FRESH, at);
        break;
    default: break;
    }
}

void tes__defer_push(tes_world_t *w, tes__op_kind_t kind, tes_entity_t e, tes_comp_t comp,
                     tes_entity_t src, void *value)
{
    push(w, kind, merge_class(w, kind, comp), e, comp, src, value);
}

void tes__defer_push_copy(tes_world_t *w, const tes__op_t *op, const tes__defer_call_t *call)
{
    if (op->kind == TES__OP_CALL) {
        /* Lanes record only calls that fill no entity (creating calls are
         * refused there), so no filled list is lost. */
        tes__assert(!call->fill);
        tes__defer_push_call(w, call->run, NULL, call->arg, NULL, 0);
        return;
    }
    void *value = op->kind == TES__OP_SET || op->kind == TES__OP_ENSURE ? op->value : NULL;
    push(w, (tes__op_kind_t)op->kind, op->merge, op->e, op->comp, op->src, value);
}

void tes__defer_push_call(tes_world_t *w, tes__defer_fn fn, tes__defer_fill_fn fill, void *arg,
                          const tes_entity_t *filled, uint32_t nfilled)
{
    tes__defer_t *d = tes__defer_queue(w);
    tes__assert(d->call_count < d->call_cap);
    catch_up(d);
    uint32_t at = append(d, TES__OP_CALL, TES__OP_BARRIER, 0, TES_NULL);
    d->paired = d->count;
    d->ops[at].call = d->call_count;
    d->calls[d->call_count++] = (tes__defer_call_t){fn, fill, arg};
    if (fill && nfilled > 1)
        d->plain_room = 0; /* more records than commands: see plain_room */
    for (uint32_t i = 0; fill && i < nfilled; i++) {
        /* The call acts on each entity it fills like a clone whose source
         * only the call knows. */
        tes__defer_entity_t *er = entity_get(d, filled[i]);
        er->reset_op = at;
        er->fill_op = at; /* a new entity: no command of its own before */
        er->first_pair = TES__OP_END;
    }
}

/* Room for one value of `size` bytes in the scratch of the calling thread
 * (its lane's while lanes are live). NULL on TES_ERR_NOMEM. */
static void *thread_scratch(tes_world_t *w, size_t size)
{
    if (!w->lanes_live)
        return tes__world_scratch(w, size) ? NULL : w->scratch;
    tes__lane_t *lane = tes__lane(w);
    if (size > lane->scratch_size) {
        void *p = tes__realloc(&w->alloc, lane->scratch, lane->scratch_size, size);
        if (!p)
            return NULL;
        lane->scratch = p;
        lane->scratch_size = size;
    }
    return lane->scratch;
}

void *tes__defer_stage(tes_world_t *w, const tes__component_t *info, const void *init)
{
    if (init && info->hooks.ctor) {
        /* The ctor hook runs before the copy: copy from a bitwise image in
         * the thread's scratch, so a value that lives in a store stays
         * readable whatever the hook does. */
        void *image = thread_scratch(w, info->size);
        if (!image)
            return NULL;
        tes__copy_bytes(image, init, info->size);
        init = image;
    }
    void *value =
        tes__arena_alloc(&tes__defer_queue(w)->arena, &w->alloc, info->size, info->align);
    if (value && init && !info->hooks.ctor && !info->hooks.copy)
        tes__copy_bytes(value, init, info->size); /* zero-fill then copy, in one */
    else if (value) {
        tes__component_construct1(info, value);
        if (init)
            tes__component_copy1(info, value, init);
    }
    return value;
}

/* Stages a value for a command queued right after: then checks the room
 * reserved before is still there (the ctor and copy hooks ran in between).
 * NULL on TES_ERR_NOMEM, with nothing queued. */
static void *stage(tes_world_t *w, const tes__component_t *info, const void *init)
{
    void *value = tes__defer_stage(w, info, init);
    if (value && tes__defer_reserve(w, 1)) {
        tes__component_destruct(info, value, 1); /* its bytes wait for the reset */
        return NULL;
    }
    return value;
}

int tes__defer_set(tes_world_t *w, tes_entity_t e, tes_comp_t c, const void *value)
{
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (tes__defer_reserve(w, 1))
        return TES_ERR_NOMEM;
    void *staged = NULL;
    if (info->size && !(staged = stage(w, info, value)))
        return TES_ERR_NOMEM;
    push(w, TES__OP_SET, pair_class(info), e, c, TES_NULL, staged);
    return TES_OK;
}

void *tes__defer_ensure(tes_world_t *w, tes_entity_t e, tes_comp_t c, int *status)
{
    tes__defer_t *d = tes__defer_queue(w);
    catch_up(d); /* the records answer for every queued command */
    const tes__component_t *info = tes__registry_get(&w->components, c);
    *status = TES_OK;
    const tes__defer_entity_t *er = entity_find(d, e);
    const tes__defer_pair_t *p = pair_find(d, er, c);
    held_t h; /* the value e holds after the queued commands */
    h.value = NULL;
    h.adjusts = 0;
    if (!p && (!er || er->reset_op == TES__OP_END)) {
        /* Untouched by the queue: its current value. If nothing queued runs
         * user code or copies values (every queued command is a quiet
         * change of other values), writing it now is writing it at this
         * place: the current address serves. In a split structural
         * system every ensure stages its value (the queue's stage_ensures), so no
         * write lands before the system's commands are applied. */
        void *now = tes__get(w, e, c);
        if (now && d->barrier_count == 0 && !d->stage_ensures)
            return now;
        h.kind = now ? HELD_VALUE : HELD_NONE;
        h.value = now;
    } else if (d->ops[d->count - 1].kind == TES__OP_ENSURE && d->ops[d->count - 1].e == e &&
               d->ops[d->count - 1].comp == c) {
        /* The same ensure again, with nothing queued since: a write at this
         * place is a write at that one, so its value serves (repeated
         * calls in a loop stage one value). Never a set's: its on_set sees
         * its value. */
        return d->ops[d->count - 1].value;
    } else if (er && er->destroyed) {
        h.kind = HELD_NONE; /* dead at the flush: its later commands are dropped */
    } else if (p && p->state == TES__PAIR_STAGED) {
        h.kind = HELD_VALUE; /* the records answer for e's own pair commands */
        h.value = d->ops[p->op].value;
    } else if (p) {
        h.kind = p->state == TES__PAIR_FRESH ? HELD_DEFAULT : HELD_NONE;
    } else {
        held_at(w, d, e, c, d->count, &h); /* a reset's source, at its place */
    }
    /* h.value is a staged value (the arena's blocks never move) or lies in
     * a table or store, which reserving queue room does not move; h keeps
     * copies of the calls, not pointers into the array. */
    void *value;
    if (tes__defer_reserve(w, 1) ||
        !(value = stage(w, info, h.kind == HELD_VALUE ? h.value : NULL))) {
        *status = TES_ERR_NOMEM;
        return NULL;
    }
    for (uint32_t k = h.adjusts; k-- > 0;) /* innermost first */
        h.call[k].fill(w, h.call[k].arg, h.filled[k], c, value);
    push(w, TES__OP_ENSURE, pair_class(info), e, c, TES_NULL, value);
    return value;
}

/* ------------------------------------------------------------------ lifetime */

void tes__defer_queue_reset(tes__defer_t *d)
{
    d->count = d->ent_count = d->pair_count = d->barrier_count = d->call_count = d->paired = 0;
    d->plain_room = 0;
    tes__arena_reset(&d->arena);
}

void tes__defer_reset(tes_world_t *w) { tes__defer_queue_reset(&w->defer); }

void tes__defer_queue_release(tes__defer_t *d, tes__alloc_t *a)
{
    tes__free(a, d->ops, (size_t)d->cap * sizeof *d->ops);
    tes__free(a, d->pairs, (size_t)d->pair_cap * sizeof *d->pairs);
    tes__free(a, d->barriers, (size_t)d->barrier_cap * sizeof *d->barriers);
    tes__free(a, d->ents, (size_t)d->ent_cap * sizeof *d->ents);
    tes__free(a, d->ent_at, (size_t)d->ent_at_cap * sizeof *d->ent_at);
    tes__free(a, d->calls, (size_t)d->call_cap * sizeof *d->calls);
    tes__arena_fini(&d->arena, a);
    memset(d, 0, sizeof *d);
}

void tes__defer_open(tes_world_t *w)
{
    tes__world_depth_up(w);
}
