/*
 * The command queue behind deferred mode: queuing, the per-entity and
 * per-pair records, and deferred tes_ensure (see defer.h). The flush lives in
 * defer_flush.c.
 *
 * Every queuing call first reserves all the room it may need (a command,
 * an entity record, a pair record, a staged value) and only then writes,
 * so a call that fails with TES_ERR_NOMEM leaves the queue as it was. No
 * pointer into the queue's arrays is kept across a reserve: records are
 * looked up again by entity index after it.
 */
#include "world/defer.h"

#include <string.h>

#include "world/world.h"

/* ------------------------------------------------------------------ records */

static tes__defer_entity_t *entity_find(const tes__defer_t *d, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    if (index >= d->ent_at_cap)
        return NULL;
    uint32_t at = d->ent_at[index];
    return at < d->ent_count && d->ents[at].e == e ? &d->ents[at] : NULL;
}

/* The record of e, made if missing (room reserved). */
static tes__defer_entity_t *entity_get(tes__defer_t *d, tes_entity_t e)
{
    tes__defer_entity_t *rec = entity_find(d, e);
    if (rec)
        return rec;
    tes__assert(d->ent_count < d->ent_cap && tes_entity_index(e) < d->ent_at_cap);
    d->ent_at[tes_entity_index(e)] = d->ent_count;
    rec = &d->ents[d->ent_count++];
    *rec = (tes__defer_entity_t){.e = e, .last_op = TES__OP_END};
    return rec;
}

static uint64_t pair_key(tes_entity_t e, tes_comp_t c)
{
    return (uint64_t)tes_entity_index(e) << 32 | c; /* c >= 1: never 0 */
}

/* The pair record of (e, c) that is still valid for e's record (NULL if
 * none). */
static tes__defer_pair_t *pair_find(const tes__defer_t *d, const tes__defer_entity_t *er,
                                    tes_entity_t e, tes_comp_t c)
{
    uint64_t at;
    if (!er || !tes__map_get(&d->pair_map, pair_key(e, c), &at))
        return NULL;
    tes__defer_pair_t *p = &d->pairs[at];
    return p->resets == er->resets ? p : NULL;
}

/* Writes the pair record of (e, c) (room reserved). */
static void pair_put(tes__defer_t *d, const tes__defer_entity_t *er, tes_entity_t e, tes_comp_t c,
                     uint8_t state, void *staged)
{
    uint64_t key = pair_key(e, c), at;
    if (!tes__map_get(&d->pair_map, key, &at)) {
        tes__assert(d->pair_count < d->pair_cap);
        at = d->pair_count++;
        tes__map_insert(&d->pair_map, key, at);
    }
    d->pairs[at] = (tes__defer_pair_t){key, er->resets, state, staged};
}

/* Whether e holds c once the queue's last whole-entity command on e has
 * run (before the pair commands that follow it). */
static bool base_has(const tes_world_t *w, const tes__defer_entity_t *er, tes_entity_t e,
                     tes_comp_t c)
{
    switch (er ? er->reset : TES__RESET_NONE) {
    case TES__RESET_EMPTY: return false;
    case TES__RESET_CLONE: return tes_has(w, er->src, c);
    case TES__RESET_FILL: return er->fill(w, er->fill_arg, e, c, NULL) == TES__FILL_HAS;
    default: return tes_has(w, e, c);
    }
}

/* ------------------------------------------------------------------ queuing */

int tes__defer_reserve(tes_world_t *w, uint32_t n)
{
    tes__defer_t *d = &w->defer;
    tes__alloc_t *a = &w->alloc;
    uint32_t old_at = d->ent_at_cap;
    if (tes__grow(a, (void **)&d->ops, &d->cap, (uint64_t)d->count + n, sizeof *d->ops, 64) ||
        tes__grow(a, (void **)&d->ents, &d->ent_cap, (uint64_t)d->ent_count + n, sizeof *d->ents,
                  64) ||
        tes__grow(a, (void **)&d->pairs, &d->pair_cap, (uint64_t)d->pair_count + n,
                  sizeof *d->pairs, 64) ||
        tes__map_reserve(&d->pair_map, a, n) ||
        tes__grow(a, (void **)&d->ent_at, &d->ent_at_cap, w->entities.cap, sizeof *d->ent_at, 64))
        return TES_ERR_NOMEM; /* what did grow is only capacity */
    if (d->ent_at_cap > old_at) /* never read uninitialised memory */
        memset(d->ent_at + old_at, 0xFF, (size_t)(d->ent_at_cap - old_at) * sizeof *d->ent_at);
    return TES_OK;
}

void tes__defer_push(tes_world_t *w, tes__op_kind_t kind, tes_entity_t e, tes_comp_t comp,
                     tes_entity_t src, void *value)
{
    tes__defer_t *d = &w->defer;
    tes__assert(d->count < d->cap);
    uint32_t at = d->count++;
    d->ops[at] = (tes__op_t){kind, comp, TES__OP_END, e, src, value, NULL};
    tes__defer_entity_t *er = entity_get(d, e);
    if (er->last_op != TES__OP_END)
        d->ops[er->last_op].next = at;
    er->last_op = at;
    switch (kind) {
    case TES__OP_DESTROY:
    case TES__OP_CLEAR:
        er->reset = TES__RESET_EMPTY;
        er->resets++;
        break;
    case TES__OP_CLONE:
        er->reset = TES__RESET_CLONE;
        er->src = src;
        er->resets++;
        break;
    case TES__OP_ADD: {
        /* An add changes nothing when c is there already. */
        const tes__defer_pair_t *p = pair_find(d, er, e, comp);
        if (p ? p->state == TES__PAIR_ABSENT : !base_has(w, er, e, comp))
            pair_put(d, er, e, comp, TES__PAIR_FRESH, NULL);
        break;
    }
    case TES__OP_REMOVE: pair_put(d, er, e, comp, TES__PAIR_ABSENT, NULL); break;
    case TES__OP_SET:
    case TES__OP_ENSURE:
        pair_put(d, er, e, comp, value ? TES__PAIR_STAGED : TES__PAIR_FRESH, value);
        break;
    default: break;
    }
}

void tes__defer_push_call(tes_world_t *w, tes__defer_fn fn, tes__defer_fill_fn fill, void *arg,
                          const tes_entity_t *filled, uint32_t nfilled)
{
    tes__defer_t *d = &w->defer;
    tes__assert(d->count < d->cap);
    d->ops[d->count++] = (tes__op_t){TES__OP_CALL, 0, TES__OP_END, TES_NULL, TES_NULL, arg, fn};
    for (uint32_t i = 0; fill && i < nfilled; i++) {
        /* The call acts on each entity it fills like a clone whose source
         * only the call knows. */
        tes__defer_entity_t *er = entity_get(d, filled[i]);
        er->reset = TES__RESET_FILL;
        er->fill = fill;
        er->fill_arg = arg;
        er->resets++;
    }
}

/* A staged value of c: constructed, then a copy of init when not NULL.
 * NULL when the arena cannot grow (nothing changed). */
static void *stage(tes_world_t *w, const tes__component_t *info, const void *init)
{
    void *value = tes__arena_alloc(&w->defer.arena, &w->alloc, info->size, info->align);
    if (value) {
        tes__component_construct1(info, value);
        if (init)
            tes__component_copy1(info, value, init);
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
    tes__defer_push(w, TES__OP_SET, e, c, TES_NULL, staged);
    return TES_OK;
}

void *tes__defer_ensure(tes_world_t *w, tes_entity_t e, tes_comp_t c, int *status)
{
    tes__defer_t *d = &w->defer;
    const tes__component_t *info = tes__registry_get(&w->components, c);
    *status = TES_OK;
    const tes__defer_entity_t *er = entity_find(d, e);
    const tes__defer_pair_t *p = pair_find(d, er, e, c);
    if (p && p->state == TES__PAIR_STAGED)
        return p->staged;
    /* Where the value e will hold comes from, when no queued pair command
     * decides it: e's own value, a clone source's current value (the best
     * guess for the copy the flush takes), or the filling call. */
    const void *init = NULL;
    tes__defer_fill_fn fill = NULL;
    void *fill_arg = NULL;
    if (!p) {
        switch (er ? er->reset : TES__RESET_NONE) {
        case TES__RESET_NONE:
            if (tes_has(w, e, c))
                return tes_get_mut(w, e, c); /* untouched by the queue */
            break;
        case TES__RESET_CLONE: init = tes_get(w, er->src, c); break;
        case TES__RESET_FILL:
            if (er->fill(w, er->fill_arg, e, c, NULL) == TES__FILL_HAS)
                fill = er->fill, fill_arg = er->fill_arg;
            break;
        default: break;
        }
    }
    /* init points into a table or store, which reserving queue room does
     * not move; er is not used past this point. */
    void *value;
    if (tes__defer_reserve(w, 1) || !(value = stage(w, info, init))) {
        *status = TES_ERR_NOMEM;
        return NULL;
    }
    if (fill)
        fill(w, fill_arg, e, c, value);
    tes__defer_push(w, TES__OP_ENSURE, e, c, TES_NULL, value);
    return value;
}

/* ------------------------------------------------------------------ lifetime */

void tes__defer_reset(tes_world_t *w)
{
    tes__defer_t *d = &w->defer;
    tes__map_t *m = &d->pair_map;
    if ((uint64_t)m->count * 8 < m->cap) {
        for (uint32_t i = 0; i < d->pair_count; i++)
            tes__map_remove(m, d->pairs[i].key, i);
    } else if (m->cap) {
        memset(m->entries, 0, (size_t)m->cap * sizeof *m->entries);
        m->count = 0;
    }
    d->count = d->ent_count = d->pair_count = 0;
    tes__arena_reset(&d->arena);
}

void tes__defer_fini(tes_world_t *w)
{
    tes__defer_t *d = &w->defer;
    tes__alloc_t *a = &w->alloc;
    for (uint32_t i = 0; i < d->count; i++) {
        const tes__op_t *op = &d->ops[i];
        if ((op->kind == TES__OP_SET || op->kind == TES__OP_ENSURE) && op->value) {
            const tes__component_t *info = tes__registry_get(&w->components, op->comp);
            w->hook_depth++;
            tes__component_destruct(info, op->value, 1);
            w->hook_depth--;
        } else if (op->kind == TES__OP_CALL) {
            op->call(w, op->value, false);
        }
    }
    tes__free(a, d->ops, (size_t)d->cap * sizeof *d->ops);
    tes__free(a, d->ents, (size_t)d->ent_cap * sizeof *d->ents);
    tes__free(a, d->pairs, (size_t)d->pair_cap * sizeof *d->pairs);
    tes__free(a, d->ent_at, (size_t)d->ent_at_cap * sizeof *d->ent_at);
    tes__map_fini(&d->pair_map, a);
    tes__arena_fini(&d->arena, a);
    memset(d, 0, sizeof *d);
}

int tes_defer_begin(tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    w->defer.depth++;
    w->defer.explicit_depth++;
    return TES_OK;
}

int tes_defer_end(tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    /* Only levels opened by tes_defer_begin: an iterator's level ends with
     * the iterator. */
    if (w->defer.explicit_depth <= 0)
        return tes__fail(w, TES_ERR_INVALID);
    w->defer.explicit_depth--;
    return tes__defer_end(w);
}

bool tes_is_deferred(const tes_world_t *w) { return w && w->defer.depth > 0; }
