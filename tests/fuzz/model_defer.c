/*
 * The model of deferred mode (see model.h): a queue of changes in call
 * order, applied by fz_model_flush exactly as tes_defer_end documents it.
 * Each queued change is applied with the immediate-mode model operations,
 * after a liveness test that drops changes to entities that died earlier
 * in the queue. A queued set owns a staged value from the moment it is
 * queued until the flush (constructed then, destroyed at the flush whether
 * or not it was assigned), which is why the model counts them apart.
 */
#include "fuzz/model.h"

#include <string.h>

static fz_qop_t *push(fz_model_t *m)
{
    if (!fz_grow((void **)&m->queue, &m->queue_cap, m->nqueue + 1, sizeof *m->queue))
        return NULL;
    fz_qop_t *op = &m->queue[m->nqueue++];
    memset(op, 0, sizeof *op);
    return op;
}

bool fz_model_queue(fz_model_t *m, fz_qkind_t kind, tes_entity_t e, int k, tes_entity_t src)
{
    fz_qop_t *op = push(m);
    if (!op)
        return false;
    op->kind = kind;
    op->e = e;
    op->k = k;
    op->src = src;
    return true;
}

bool fz_model_queue_batch(fz_model_t *m, const tes_entity_t *kids, const tes_entity_t *parents,
                          uint32_t n)
{
    fz_qop_t *op = push(m);
    if (!op)
        return false;
    op->kind = FZ_Q_SET_PARENT_N;
    op->e = kids[0];
    op->src = TES_NULL;
    op->nbatch = n;
    memcpy(op->batch, kids, n * sizeof *kids);
    memcpy(op->batch + n, parents, n * sizeof *parents);
    return true;
}

int32_t fz_model_queue_ensure(fz_model_t *m, tes_entity_t e, int k, const uint8_t *init)
{
    fz_qop_t *op = push(m);
    if (!op)
        return -1;
    op->kind = FZ_Q_ENSURE;
    op->e = e;
    op->k = k;
    fz_default_value(k, op->val);
    if (init && fz_comps[k].size) {
        uint32_t off = fz_payload_offset(k);
        memcpy(op->val + off, init + off, fz_msize(k) - off);
        if (fz_comps[k].tracked)
            m->expect[k].copy++; /* staging copies the value it starts from */
    }
    m->staged[k]++;
    return (int32_t)(m->nqueue - 1);
}

int32_t fz_model_queue_set(fz_model_t *m, tes_entity_t e, int k, const uint8_t *value)
{
    fz_qop_t *op = push(m);
    if (!op)
        return -1;
    op->kind = FZ_Q_SET;
    op->e = e;
    op->k = k;
    fz_default_value(k, op->val);
    if (fz_comps[k].size) {
        m->staged[k]++;
        if (value) {
            uint32_t off = fz_payload_offset(k);
            memcpy(op->val + off, value + off, fz_msize(k) - off);
            if (fz_comps[k].tracked)
                m->expect[k].copy++; /* staging copies the caller's value */
        }
    }
    return (int32_t)(m->nqueue - 1);
}

/* The live slot index of e, or UINT32_MAX. */
static uint32_t live_index(const fz_model_t *m, tes_entity_t e);

bool fz_model_queued_destroy(const fz_model_t *m, tes_entity_t e)
{
    for (uint32_t i = 0; i < m->nqueue; i++)
        if (m->queue[i].kind == FZ_Q_DESTROY && m->queue[i].e == e)
            return true;
    return false;
}

/* Whether the library applies queued op alone, in its place (a barrier:
 * it runs observers or copies values; see defer_flush.c). */
static bool barrier(const fz_qop_t *op)
{
    switch (op->kind) {
    case FZ_Q_MATERIALIZE: return false;
    case FZ_Q_ADD:
    case FZ_Q_REMOVE:
    case FZ_Q_SET:
    case FZ_Q_ENSURE: return op->k >= 0 && (fz_comps[op->k].tracked || fz_comps[op->k].observed);
    default: return true;
    }
}

/* What e holds for k once the first `upto` queued ops have run, as
 * applying them in call order leaves it: *present, and the value to val. A
 * clone copies what its source holds at the clone's own place, an
 * instantiation what the member holds at its place (remapped). True when
 * a queued op decides it. */
static bool held(const fz_model_t *m, tes_entity_t e, int k, uint32_t upto, bool *present,
                 bool *fresh, uint8_t val[FZ_MAXSIZE])
{
    uint32_t self = live_index(m, e);
    bool touched = false, dead = false;
    *fresh = false;
    *present = self != UINT32_MAX && fz_model_has(m, self, k);
    if (*present)
        memcpy(val, fz_val(m, self, k), FZ_MAXSIZE);
    for (uint32_t i = 0; i < upto && !dead; i++) {
        const fz_qop_t *op = &m->queue[i];
        if (op->kind == FZ_Q_INSTANTIATE) {
            tes_entity_t member;
            uint32_t at;
            if (!fz_model_plan_member(&m->plans[op->plan], e, &member, &at))
                continue;
            touched = true;
            *present = *fresh = false;
            if (k != FZ_C_PREFAB && fz_model_alive(m, member)) {
                (void)held(m, member, k, i, present, fresh, val);
                if (*present)
                    fz_model_plan_remap(&m->plans[op->plan], at, k, val);
            }
            continue;
        }
        if (op->e != e)
            continue;
        bool mine = op->k == k;
        switch (op->kind) {
        case FZ_Q_SET:
        case FZ_Q_ENSURE:
            if (mine)
                touched = *present = true, *fresh = false, memcpy(val, op->val, FZ_MAXSIZE);
            break;
        case FZ_Q_ADD:
            if (mine && !*present)
                touched = *present = *fresh = true, fz_default_value(k, val);
            break;
        case FZ_Q_REMOVE:
            if (mine)
                touched = true, *present = *fresh = false;
            break;
        case FZ_Q_DESTROY:
            dead = true; /* every later op of e is dropped */
            /* fall through */
        case FZ_Q_CLEAR:
            touched = true, *present = *fresh = false;
            break;
        case FZ_Q_CLONE:
            touched = true;
            (void)held(m, op->src, k, i, present, fresh, val);
            break;
        case FZ_Q_MATERIALIZE:
        case FZ_Q_INSTANTIATE:
        case FZ_Q_INST_DESTROY: /* (the members it kills are dropped after it) */
        case FZ_Q_SET_PARENT:
        case FZ_Q_SET_PARENT_N:
            break;
        }
    }
    return touched;
}

void fz_model_lookup(const fz_model_t *m, tes_entity_t e, int k, fz_lookup_t *out)
{
    memset(out, 0, sizeof *out);
    bool present, fresh;
    bool touched = held(m, e, k, m->nqueue, &present, &fresh, out->init);
    bool barriers = false;
    for (uint32_t i = 0; i < m->nqueue && !barriers; i++)
        barriers = barrier(&m->queue[i]);
    out->via_instance = false;
    for (uint32_t i = 0; i < m->nqueue; i++)
        if (m->queue[i].kind == FZ_Q_INSTANTIATE) {
            tes_entity_t member;
            uint32_t at;
            out->via_instance |= fz_model_plan_member(&m->plans[m->queue[i].plan], e, &member, &at);
        }
    out->op = -1;
    /* A default a queued add made is staged as a new default (no copy). */
    out->has_init = present && !fresh;
    if (!touched && !barriers && present) {
        out->queued = FZ_QUEUED_NONE; /* its current address */
        return;
    }
    const fz_qop_t *last = m->nqueue ? &m->queue[m->nqueue - 1] : NULL;
    if (last && last->kind == FZ_Q_ENSURE && last->e == e && last->k == k) {
        out->queued = FZ_QUEUED_STAGED; /* the same ensure again */
        out->op = (int32_t)(m->nqueue - 1);
        return;
    }
    out->queued = FZ_QUEUED_OTHER;
}

/* The live slot index of e, or UINT32_MAX. */
static uint32_t live_index(const fz_model_t *m, tes_entity_t e)
{
    return fz_model_get(m, e) ? tes_entity_index(e) : UINT32_MAX;
}

static int apply(fz_model_t *m, const fz_qop_t *op)
{
    uint32_t i = live_index(m, op->e);
    switch (op->kind) {
    case FZ_Q_INSTANTIATE:
        return fz_model_plan_apply(m, &m->plans[op->plan]);
    case FZ_Q_INST_DESTROY:
        /* Planned again from the tree as it is now, checked again. */
        if (fz_model_inst(m, op->inst) && fz_model_inst_destroy(m, op->inst) == TES_ERR_OWNED) {
            m->owned_at_flush++;
            return TES_ERR_OWNED;
        }
        break;
    case FZ_Q_SET_PARENT: {
        /* Checked again: a link whose child or parent died is dropped,
         * and so is one that breaks a rule now. */
        int rc = TES_ERR_INVALID;
        if (i != UINT32_MAX && (op->src == TES_NULL || fz_model_alive(m, op->src)))
            rc = fz_model_link_status(m, op->e, op->src);
        if (rc != TES_OK) {
            m->links_dropped++;
            return rc;
        }
        if (!fz_model_link(m, i, op->src == TES_NULL ? 0 : tes_entity_index(op->src) + 1))
            return FZ_OOM;
        break;
    }
    case FZ_Q_SET_PARENT_N: {
        /* The whole batch checked again, all or nothing. */
        uint32_t at;
        int rc = fz_model_link_n(m, op->batch, op->batch + op->nbatch, op->nbatch, true, &at);
        if (rc != TES_OK && rc != FZ_OOM)
            m->links_dropped++;
        return rc;
    }
    case FZ_Q_MATERIALIZE:
        if (i != UINT32_MAX)
            m->slots[i].pending = false;
        break;
    case FZ_Q_DESTROY:
        /* tes_destroy again, with its descendants as they are now: in a
         * strict world it refuses a plan with an entity that joined an
         * instance since the destroy was queued. */
        if (i == UINT32_MAX)
            break;
        if (fz_model_destroy_status(m, &op->e, 1, 0) == TES_ERR_OWNED) {
            m->owned_at_flush++;
            return TES_ERR_OWNED;
        }
        if (!fz_model_destroy_tree(m, &op->e, 1))
            return FZ_OOM;
        break;
    case FZ_Q_ADD:
        if (i != UINT32_MAX)
            fz_model_add(m, i, op->k);
        break;
    case FZ_Q_REMOVE:
        if (i != UINT32_MAX)
            fz_model_remove(m, i, op->k);
        break;
    case FZ_Q_CLEAR:
        if (i != UINT32_MAX)
            fz_model_clear(m, i);
        break;
    case FZ_Q_CLONE: {
        uint32_t s = live_index(m, op->src);
        if (i != UINT32_MAX && s != UINT32_MAX)
            return fz_model_clone_into(m, i, s);
        break;
    }
    case FZ_Q_SET:
    case FZ_Q_ENSURE:
        if (fz_comps[op->k].size)
            m->staged[op->k]--; /* destroyed at the flush, assigned or not */
        if (i == UINT32_MAX)
            break;
        fz_model_add(m, i, op->k);
        if (fz_comps[op->k].size) {
            fz_model_write(m, i, op->k, op->val);
            if (fz_comps[op->k].tracked)
                m->expect[op->k].copy++;
        }
        if (op->kind == FZ_Q_SET)
            m->expect[op->k].on_set++; /* an ensure fires none, as immediately */
        break;
    }
    return TES_OK;
}

int fz_model_flush(fz_model_t *m)
{
    int first = TES_OK;
    m->flush_last = TES_OK;
    for (uint32_t i = 0; i < m->nqueue; i++) {
        int rc = apply(m, &m->queue[i]);
        if (rc && first == TES_OK)
            first = rc;
        if (rc)
            m->flush_last = rc;
    }
    m->nqueue = 0;
    fz_model_plans_clear(m);
    return first;
}
