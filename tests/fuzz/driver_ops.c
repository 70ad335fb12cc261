/*
 * The entity and component ops of the differential fuzzer (see driver.h and
 * driver_internal.h). Each draws its arguments, works out the status the
 * library must return, calls it, compares, and then applies the change to
 * the model, or queues it when the world is deferred.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/driver_internal.h"

/* ------------------------------------------------------------------ deferral */

static bool deferred(const fz_driver_t *d) { return d->defer_depth > 0; }

void fzd_queue(fz_driver_t *d, fz_qkind_t kind, tes_entity_t e, int k, tes_entity_t src)
{
    if (!fz_model_queue(&d->m, kind, e, k, src))
        fzd_fail(d, "model out of memory");
}

/* The model side of a successful spawn (or of a clone's new entity): in a
 * deferred block the entity is alive at once but pending until the flush
 * reaches its MATERIALIZE. */
tes_entity_t fzd_model_spawn(fz_driver_t *d)
{
    tes_entity_t e = fz_model_spawn(&d->m);
    if (e == TES_NULL) {
        fzd_fail(d, "model out of memory");
        return TES_NULL;
    }
    if (deferred(d)) {
        d->m.slots[tes_entity_index(e)].pending = true;
        fzd_queue(d, FZ_Q_MATERIALIZE, e, 0, TES_NULL);
    }
    return e;
}

/* The owning group's query over k's store, or NULL. */
static const fz_mquery_t *owner_of(const fz_driver_t *d, int k)
{
    for (int i = 0; i < FZ_MAX_QUERIES; i++)
        if (d->queries[i].q && fz_bits_has(fz_mquery_owns(&d->queries[i].mq), k))
            return &d->queries[i].mq;
    return NULL;
}

/* For a set of k whose value lives in k's owned store: an entity that joins
 * the group when it gets k, and a source outside the group (the group
 * swaps the newcomer into the first position past its members, where such
 * a source may sit). Leaves *e / *src alone when no such pair turns up. */
static void pick_joiner(fz_driver_t *d, const fz_mquery_t *g, int k, tes_entity_t *e,
                        uint32_t *src)
{
    fz_model_t *m = &d->m;
    for (int tries = 0; tries < 8; tries++) {
        uint32_t i = m->live[fzd_draw(d, m->nlive)];
        if (fz_model_has(m, i, k) || m->slots[i].pending)
            continue;
        fz_bits_set(&m->slots[i].mask, k); /* would it match with k? */
        bool joins = fz_mquery_match(m, g, i);
        fz_bits_clr(&m->slots[i].mask, k);
        if (joins) {
            *e = fz_model_handle(m, i);
            break;
        }
    }
    for (int tries = 0; tries < 8; tries++) {
        uint32_t i = m->live[fzd_draw(d, m->nlive)];
        if (fz_model_has(m, i, k) && !fz_mquery_match(m, g, i)) {
            *src = i;
            break;
        }
    }
}

/* ------------------------------------------------------------------ ops */

/* The cells variant's orders (-1 ends one): tables of up to four 8 to 16
 * byte columns entered at every position, a tag added to each of them
 * (and to the root), five and more 8 to 16 byte columns, columns of 4 to
 * 8 bytes, and mixed sizes. */
#define CELLS_STEPS 8
static const int cells_orders[][CELLS_STEPS] = {
    {FZ_C_C8, FZ_C_C12, FZ_C_C16, FZ_C_C16B, FZ_C_CTAG, -1},
    {FZ_C_CTAG, FZ_C_C16B, FZ_C_C16, FZ_C_C12, FZ_C_C8, -1},
    {FZ_C_C8, FZ_C_CTAG, FZ_C_C16B, FZ_C_C12, FZ_C_C16, -1},
    {FZ_C_C12, FZ_C_C8, FZ_C_CTAG, FZ_C_C16, FZ_C_C16B, -1},
    {FZ_C_C16, FZ_C_C8, FZ_C_C16B, FZ_C_C12, FZ_C_CTAG, -1},
    {FZ_C_C16, FZ_C_C8, FZ_C_C12, FZ_C_CTAG, FZ_C_C16B, FZ_C_C8B, FZ_C_C12B, -1},
    {FZ_C_C8, FZ_C_C12, FZ_C_C16, FZ_C_C16B, FZ_C_C8B, FZ_C_C12B, FZ_C_CTAG, -1},
    {FZ_C_C4, FZ_C_C8, FZ_C_C6, FZ_C_C4B, FZ_C_C8B, FZ_C_CTAG, -1},
    {FZ_C_C12, FZ_C_C4, FZ_C_C16, FZ_C_C6, FZ_C_C8, FZ_C_CTAG, -1},
};
#define CELLS_ORDERS ((uint32_t)(sizeof cells_orders / sizeof cells_orders[0]))

/* One of the cells orders, or (one time in four) a random order of a
 * random number of cells components, to *order; returns its length. */
static int cells_order(fz_driver_t *d, int order[CELLS_STEPS])
{
    uint32_t r = fzd_draw(d, CELLS_ORDERS + CELLS_ORDERS / 3);
    int n = 0;
    if (r < CELLS_ORDERS) {
        while (n < CELLS_STEPS && cells_orders[r][n] >= 0) {
            order[n] = cells_orders[r][n];
            n++;
        }
        return n;
    }
    int pool[FZ_NCELLS];
    for (int i = 0; i < FZ_NCELLS; i++)
        pool[i] = FZ_C_CELLS0 + i;
    int want = 1 + (int)fzd_draw(d, CELLS_STEPS);
    for (; n < want; n++) {
        int j = n + (int)fzd_draw(d, (uint32_t)(FZ_NCELLS - n));
        order[n] = pool[j];
        pool[j] = pool[n];
    }
    return n;
}

/* A fresh entity built up at once, one component per tes_set or tes_add,
 * in one of a few fixed orders of hook-free table components, so that the
 * tables' cached edges are taken again and again: outside a deferred block
 * the entity is the last row of every table it passes through (the quiet
 * add's hot case, where the row moves with no hole to fill). Now and then
 * a step's value is the entity's own previous component (same size), read
 * from the row that the step moves out of. The cells variant mostly
 * takes a cells order instead (up to eight steps). */
static void build_up(fz_driver_t *d, tes_entity_t e)
{
    static const int orders[4][3] = {{FZ_C_T4, FZ_C_T12, FZ_C_T16A},
                                     {FZ_C_T16A, FZ_C_TTAG, FZ_C_T12},
                                     {FZ_C_T4, FZ_C_W0, FZ_C_W0 + 1},
                                     {FZ_C_T12, FZ_C_T4, FZ_C_TTAG}};
    int cells[CELLS_STEPS];
    const int *order;
    int steps = 3;
    if (d->cfg->cells && fzd_draw(d, 4) != 0) {
        steps = cells_order(d, cells);
        order = cells;
    } else {
        order = orders[fzd_draw(d, 4)];
    }
    d->op = "tes_set / tes_add (build up)";
    for (int i = 0; i < steps && !fzd_failed(d); i++) {
        int k = order[i];
        bool set = fzd_draw(d, 3) != 0;
        uint8_t value[FZ_MAXSIZE];
        const void *arg = value;
        fzd_make_value(d, k, value);
        int prev = i ? order[i - 1] : -1;
        if (set && !deferred(d) && prev >= 0 && fz_comps[prev].size == fz_comps[k].size &&
            fz_comps[k].size && fzd_draw(d, 2)) {
            arg = fzd_get(d, e, d->ids[prev]);
            fzd_check_value(d, tes_entity_index(e), prev, arg, "tes_get (a build-up source)");
            memcpy(value, fz_val(&d->m, tes_entity_index(e), prev), FZ_MAXSIZE);
            if (fzd_failed(d))
                return;
        }
        int rc = set ? tes_set(d->w, e, d->ids[k], arg) : tes_add(d->w, e, d->ids[k]);
        fzd_check_status(d, rc, TES_OK, 1);
        if (fzd_failed(d))
            return;
        if (deferred(d)) {
            if (set ? fz_model_queue_set(&d->m, e, k, fz_comps[k].size ? value : NULL) < 0
                    : !fz_model_queue(&d->m, FZ_Q_ADD, e, k, TES_NULL))
                fzd_fail(d, "model out of memory");
            continue;
        }
        fz_model_add(&d->m, tes_entity_index(e), k);
        if (set) {
            if (fz_comps[k].size)
                fz_model_write(&d->m, tes_entity_index(e), k, value);
            d->m.expect[k].on_set++;
        }
    }
}

void fzd_op_spawn(fz_driver_t *d)
{
    d->op = "tes_spawn";
    bool can = fz_model_can_spawn(&d->m, 1);
    tes_entity_t want = can ? fz_model_peek_spawn(&d->m) : TES_NULL;
    tes_entity_t e = tes_spawn(d->w);
    if (e != want) {
        fzd_fail(d, "returned %#llx, model %#llx", ull(e), ull(want));
        return;
    }
    if (!can) {
        fzd_check_error(d, TES_ERR_FULL, 1);
        d->res->full++;
        return;
    }
    fzd_model_spawn(d);
    fzd_hist_add(d, e);
    bool build = fzd_draw(d, 3) == 0;
    if (!build && d->cfg->cells)
        build = fzd_draw(d, 2) == 0; /* the cells variant builds more */
    if (build)
        build_up(d, e);
}

void fzd_op_spawn_n(fz_driver_t *d)
{
    d->op = "tes_spawn_n";
    /* Big batches only while the population is below its target, or they
     * would outgrow every destroy; inside a query loop now and then up to
     * twice the target (a deferred batch reserves room in the groups). */
    uint32_t r = d->m.nlive < d->cfg->pop_target ||
                         (d->nprefer && d->m.nlive < 2 * d->cfg->pop_target && fzd_draw(d, 4) == 0)
                     ? fzd_draw(d, 100)
                     : 30 * fzd_draw(d, 2);
    int32_t n = r < 60 ? (int32_t)fzd_draw(d, 5)
                : r < 90 ? 5 + (int32_t)fzd_draw(d, 16)
                : r < 98 ? 21 + (int32_t)fzd_draw(d, FZ_MAX_SPAWN_N - 21)
                         : -1 - (int32_t)fzd_draw(d, 3);
    tes_comp_t comps[FZ_NALL + 1];
    int ks[FZ_NALL];
    int32_t ncomps = 0;
    uint32_t want_n = fzd_draw(d, 4);
    fz_bits_t used = {{0, 0}};
    for (uint32_t i = 0; i < want_n; i++) {
        int k = (int)fzd_draw(d, FZ_NCOMP);
        if (fz_bits_has(used, k))
            continue;
        fz_bits_set(&used, k);
        ks[ncomps] = k;
        comps[ncomps++] = d->ids[k];
    }
    bool invalid = n < 0;
    bool null_out = false;
    if (fzd_draw(d, 100) < 4) {
        switch (fzd_draw(d, 4)) {
        case 0:
            if (ncomps > 0) {
                comps[ncomps++] = comps[0]; /* repeated */
                invalid = true;
            }
            break;
        case 1:
            comps[ncomps++] = d->max_id + 1 + fzd_draw(d, 3); /* unknown */
            invalid = true;
            break;
        case 2:
            ncomps = -1;
            invalid = true;
            break;
        default: /* out may be NULL: the handles are the model's next ones */
            null_out = true;
            break;
        }
    }
    bool can = n >= 0 && fz_model_can_spawn(&d->m, (uint32_t)n);
    int alt = 1;
    int want = TES_OK;
    if (invalid) {
        want = TES_ERR_INVALID;
        if (n >= 0 && !can)
            alt = TES_ERR_FULL;
    } else if (!can) {
        want = TES_ERR_FULL;
    }
    tes_entity_t out[FZ_MAX_SPAWN_N + 1];
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (int i = 0; i <= FZ_MAX_SPAWN_N; i++)
        out[i] = sentinel;
    int rc = tes_spawn_n(d->w, n, ncomps >= 0 ? comps : NULL, ncomps, null_out ? NULL : out);
    fzd_check_status(d, rc, want, alt);
    if (rc == TES_ERR_FULL)
        d->res->full++;
    if (fzd_failed(d)) {
        char *msg = d->res->msg;
        size_t len = strlen(msg);
        snprintf(msg + len, sizeof d->res->msg - len, " [n=%d ncomps=%d%s comps:", (int)n,
                 (int)ncomps, null_out ? " out=NULL" : "");
        for (int32_t i = 0; i < ncomps; i++) {
            len = strlen(msg);
            snprintf(msg + len, sizeof d->res->msg - len, " %u", comps[i]);
        }
        len = strlen(msg);
        snprintf(msg + len, sizeof d->res->msg - len, "]");
        return;
    }
    if (fzd_failed(d) || rc != TES_OK)
        return;
    /* Deferred: each entity now, its components queued after its
     * MATERIALIZE (applied with tes_add at the flush). */
    for (int32_t i = 0; i < n; i++) {
        tes_entity_t e = fzd_model_spawn(d);
        if (!null_out && out[i] != e) {
            fzd_fail(d, "n=%d ncomps=%d: out[%d] = %#llx, model %#llx", (int)n, (int)ncomps, (int)i,
                 ull(out[i]), ull(e));
            return;
        }
        for (int32_t j = 0; j < ncomps; j++) {
            if (deferred(d))
                fzd_queue(d, FZ_Q_ADD, e, ks[j], TES_NULL);
            else
                fz_model_add(&d->m, tes_entity_index(e), ks[j]);
        }
        fzd_hist_add(d, e);
    }
    if (out[n] != sentinel)
        fzd_fail(d, "wrote past out[%d]", (int)n);
}

void fzd_op_destroy(fz_driver_t *d)
{
    d->op = "tes_destroy";
    tes_entity_t e = fzd_pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    int want = alive ? fzd_destroy_status(d, &e, 1) : TES_ERR_STALE;
    int rc = tes_destroy(d->w, e);
    fzd_check_status(d, rc, want, 1);
    if (rc == TES_ERR_OWNED)
        d->res->owned++;
    if (fzd_failed(d) || rc != TES_OK)
        return;
    if (deferred(d))
        fzd_queue(d, FZ_Q_DESTROY, e, 0, TES_NULL);
    else if (!fz_model_destroy_tree(&d->m, &e, 1))
        fzd_fail(d, "model out of memory");
    fzd_hist_add(d, e);
}

void fzd_op_alive(fz_driver_t *d)
{
    d->op = "tes_alive";
    tes_entity_t e = fzd_pick_entity(d);
    bool want = fz_model_alive(&d->m, e);
    if (tes_alive(d->w, e) != want)
        fzd_fail(d, "tes_alive(%#llx) = %d, model %d", ull(e), !want, want);
}

void fzd_op_add(fz_driver_t *d)
{
    d->op = "tes_add";
    tes_entity_t e = fzd_pick_entity(d);
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    int alt;
    int want = fzd_expect2(alive, k >= 0, &alt);
    int rc = tes_add(d->w, e, id);
    fzd_check_status(d, rc, want, alt);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    if (deferred(d))
        fzd_queue(d, FZ_Q_ADD, e, k, TES_NULL);
    else
        fz_model_add(&d->m, tes_entity_index(e), k);
}

void fzd_op_set(fz_driver_t *d)
{
    d->op = "tes_set";
    tes_entity_t e = fzd_pick_entity(d);
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    uint8_t value[FZ_MAXSIZE];
    const void *arg = value;
    fzd_make_value(d, k >= 0 ? k : 0, value);
    int alt;
    int want = fzd_expect2(alive, k >= 0, &alt);
    bool data = k >= 0 && fz_comps[k].size > 0;
    /* The value may live in the world: another entity's component (or this
     * one's own), which adding the component may move, in a table or in an
     * owning group's store. */
    if (data && d->m.nlive && fzd_draw(d, 100) < 20) {
        uint32_t other = d->m.live[fzd_draw(d, d->m.nlive)];
        const fz_mquery_t *g = owner_of(d, k);
        if (g && fzd_draw(d, 2)) {
            pick_joiner(d, g, k, &e, &other);
            alive = fz_model_alive(&d->m, e);
            want = fzd_expect2(alive, true, &alt);
        } else if (alive && fzd_draw(d, 4) == 0) {
            other = tes_entity_index(e);
        }
        if (fz_model_has(&d->m, other, k)) {
            arg = fzd_get(d, fz_model_handle(&d->m, other), id);
            fzd_check_value(d, other, k, arg, "tes_get (a tes_set source)");
            memcpy(value, fz_val(&d->m, other, k), FZ_MAXSIZE);
            if (fzd_failed(d))
                return;
        }
    }
    if (arg == value && k >= 0)
        arg = fzd_lib_value(d, k, value); /* a huge value's bytes */
    /* NULL is a bad argument for a data component and ignored for a tag. */
    if (fzd_draw(d, 100) < (data ? 4u : 50u)) {
        arg = NULL;
        if (data && want == TES_OK)
            want = TES_ERR_INVALID;
        else if (data && want == TES_ERR_STALE)
            alt = TES_ERR_INVALID;
    }
    d->t.set_expect = value;
    d->t.set_expect_k = k;
    int rc = tes_set(d->w, e, id, arg);
    d->t.set_expect = NULL;
    d->t.set_expect_k = -1;
    fzd_check_status(d, rc, want, alt);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    if (deferred(d)) {
        /* Staged now (constructed, and copied from the caller's value),
         * assigned with tes_set at the flush. */
        if (fz_model_queue_set(&d->m, e, k, data ? value : NULL) < 0)
            fzd_fail(d, "model out of memory");
        return;
    }
    uint32_t index = tes_entity_index(e);
    fz_model_add(&d->m, index, k);
    if (data) {
        fz_model_write(&d->m, index, k, value);
        if (fz_comps[k].tracked)
            d->m.expect[k].copy++;
    }
    d->m.expect[k].on_set++;
}

void fzd_op_ensure(fz_driver_t *d)
{
    d->op = "tes_ensure";
    tes_entity_t e = fzd_pick_entity(d);
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    bool data = k >= 0 && fz_comps[k].size > 0;
    int alt;
    int want = fzd_expect2(alive, data, &alt);
    fz_lookup_t lk;
    lk.queued = FZ_QUEUED_NONE;
    if (want == TES_OK && deferred(d)) {
        fz_model_lookup(&d->m, e, k, &lk);
        if (lk.via_instance)
            d->op = "tes_ensure (deferred, of a component a tes_instantiate queued before "
                    "copies from the prefab)";
    }
    void *p = tes_ensure(d->w, e, id);
    if (want != TES_OK) {
        if (p)
            fzd_fail(d, "tes_ensure(%#llx, %u) = %p, model says error %d", ull(e), id, p, want);
        else
            fzd_check_error(d, want, alt);
        return;
    }
    uint32_t index = tes_entity_index(e);
    if (!p) {
        fzd_fail(d, "tes_ensure(%#llx, %s) = NULL (error %d)", ull(e), fz_comps[k].name,
             tes_last_error(d->w));
        return;
    }
    if (deferred(d) && (lk.queued != FZ_QUEUED_NONE || !fz_model_has(&d->m, index, k))) {
        /* The component as it will be after the queue: the staged value of
         * the last queued set or ensure of it, or a new staged value (a copy
         * of the value it will hold, else the default) that the flush
         * assigns (no on_set). */
        int32_t qi = lk.op;
        if (lk.queued != FZ_QUEUED_STAGED &&
            (qi = fz_model_queue_ensure(&d->m, e, k, lk.has_init ? lk.init : NULL)) < 0) {
            fzd_fail(d, "model out of memory");
            return;
        }
        fz_qop_t *op = &d->m.queue[qi];
        if (op->staged && op->staged != p) {
            fzd_fail(d, "deferred tes_ensure(%#llx, %s) = %p, but that value is staged at %p",
                     ull(e), fz_comps[k].name, p, op->staged);
            return;
        }
        op->staged = p;
        d->res->staged_ensures++;
        fzd_check_staged(d, op, p, "deferred tes_ensure");
        if (!fzd_failed(d) && fzd_draw(d, 2)) {
            uint8_t value[FZ_MAXSIZE];
            fzd_make_value(d, k, value);
            uint32_t off = fz_payload_offset(k);
            fzd_lib_write(d, k, p, value);
            memcpy(op->val + off, value + off, fz_msize(k) - off);
        }
        return;
    }
    /* Present (deferred or not): its current address. */
    fz_model_add(&d->m, index, k);
    fzd_check_value(d, index, k, p, "tes_ensure");
    if (!fzd_failed(d) && fzd_draw(d, 2)) {
        uint8_t value[FZ_MAXSIZE];
        fzd_make_value(d, k, value);
        fzd_lib_write(d, k, p, value);
        fz_model_write(&d->m, index, k, value);
    }
}

void fzd_op_remove(fz_driver_t *d)
{
    d->op = "tes_remove";
    tes_entity_t e = fzd_pick_entity(d);
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    int alt;
    int want = fzd_expect2(alive, k >= 0, &alt);
    int rc = tes_remove(d->w, e, id);
    fzd_check_status(d, rc, want, alt);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    if (deferred(d))
        fzd_queue(d, FZ_Q_REMOVE, e, k, TES_NULL);
    else
        fz_model_remove(&d->m, tes_entity_index(e), k);
}

void fzd_op_has(fz_driver_t *d)
{
    d->op = "tes_has";
    tes_entity_t e = fzd_pick_entity(d);
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    bool want = k >= 0 && fz_model_alive(&d->m, e) && fz_model_has(&d->m, tes_entity_index(e), k);
    if (tes_has(d->w, e, id) != want)
        fzd_fail(d, "tes_has(%#llx, %u) = %d, model %d", ull(e), id, !want, want);
}

void fzd_op_get(fz_driver_t *d)
{
    tes_entity_t e = fzd_pick_entity(d);
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    bool mut = fzd_draw(d, 2);
    d->op = mut ? "tes_get_mut" : "tes_get";
    bool want = k >= 0 && fz_comps[k].size && fz_model_alive(&d->m, e) &&
                fz_model_has(&d->m, tes_entity_index(e), k);
    void *pm = mut ? fzd_get_mut(d, e, id) : NULL;
    const void *p = mut ? pm : fzd_get(d, e, id);
    if (!want) {
        if (p)
            fzd_fail(d, "(%#llx, %u) = %p, model has no value", ull(e), id, p);
        return;
    }
    uint32_t index = tes_entity_index(e);
    fzd_check_value(d, index, k, p, d->op);
    /* Writing through tes_get_mut must reach the stored value. */
    if (!fzd_failed(d) && mut && fzd_draw(d, 2)) {
        uint8_t value[FZ_MAXSIZE];
        fzd_make_value(d, k, value);
        fzd_lib_write(d, k, pm, value);
        fz_model_write(&d->m, index, k, value);
    }
}

void fzd_op_clear(fz_driver_t *d)
{
    d->op = "tes_clear";
    tes_entity_t e = fzd_pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    int rc = tes_clear(d->w, e);
    fzd_check_status(d, rc, alive ? TES_OK : TES_ERR_STALE, 1);
    if (fzd_failed(d) || !alive)
        return;
    if (deferred(d))
        fzd_queue(d, FZ_Q_CLEAR, e, 0, TES_NULL);
    else
        fz_model_clear(&d->m, tes_entity_index(e));
}

void fzd_op_clone(fz_driver_t *d)
{
    d->op = "tes_clone";
    tes_entity_t e = fzd_pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    bool can = fz_model_can_spawn(&d->m, 1);
    int alt = 1;
    int want = TES_OK;
    if (!alive) {
        want = TES_ERR_STALE;
        if (!can)
            alt = TES_ERR_FULL;
    } else if (!can) {
        want = TES_ERR_FULL;
    }
    tes_entity_t expect = want == TES_OK ? fz_model_peek_spawn(&d->m) : TES_NULL;
    tes_entity_t c = tes_clone(d->w, e);
    if (c != expect) {
        fzd_fail(d, "tes_clone(%#llx) = %#llx, model %#llx", ull(e), ull(c), ull(expect));
        return;
    }
    if (want != TES_OK) {
        fzd_check_error(d, want, alt);
        if (tes_last_error(d->w) == TES_ERR_FULL)
            d->res->full++;
        return;
    }
    if (fzd_model_spawn(d) != c)
        return;
    /* Deferred: the copy is taken at the flush, from e as it is then. */
    if (deferred(d))
        fzd_queue(d, FZ_Q_CLONE, c, 0, e);
    else
        (void)fz_model_clone_into(&d->m, tes_entity_index(c), tes_entity_index(e));
    fzd_hist_add(d, c);
}

void fzd_op_components_of(fz_driver_t *d)
{
    d->op = "tes_components_of";
    tes_entity_t e = fzd_pick_entity(d);
    uint32_t r = fzd_draw(d, 100);
    if (r < 5)
        fzd_check_components_of(d, e, 0, true);
    else if (r < 8)
        fzd_check_components_of(d, e, 1 + (int32_t)fzd_draw(d, 4), true);
    else
        fzd_check_components_of(d, e, (int32_t)fzd_draw(d, FZ_NCOMP + 3), false);
}

void fzd_op_disable(fz_driver_t *d)
{
    bool on = fzd_draw(d, 2);
    d->op = on ? "tes_enable" : "tes_disable";
    tes_entity_t e = fzd_pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    int rc = on ? tes_enable(d->w, e) : tes_disable(d->w, e);
    fzd_check_status(d, rc, alive ? TES_OK : TES_ERR_STALE, 1);
    if (fzd_failed(d) || !alive)
        return;
    if (deferred(d))
        fzd_queue(d, on ? FZ_Q_REMOVE : FZ_Q_ADD, e, FZ_C_DISABLED, TES_NULL);
    else if (on)
        fz_model_remove(&d->m, tes_entity_index(e), FZ_C_DISABLED);
    else
        fz_model_add(&d->m, tes_entity_index(e), FZ_C_DISABLED);
}

void fzd_op_enabled(fz_driver_t *d)
{
    d->op = "tes_enabled";
    tes_entity_t e = fzd_pick_entity(d);
    bool want = fz_model_alive(&d->m, e) &&
                !fz_model_has(&d->m, tes_entity_index(e), FZ_C_DISABLED);
    if (tes_enabled(d->w, e) != want)
        fzd_fail(d, "tes_enabled(%#llx) = %d, model %d", ull(e), !want, want);
}

void fzd_op_stats(fz_driver_t *d)
{
    d->op = "tes_world_stats";
    fzd_check_stats(d);
    tes_world_stats_t st;
    if (tes_world_stats(NULL, &st) != TES_ERR_INVALID || tes_world_stats(d->w, NULL) != TES_ERR_INVALID)
        fzd_fail(d, "NULL argument not rejected with TES_ERR_INVALID");
    /* Recorded for this thread, as every failed call on a const world. */
    if (tes_last_error(d->w) != TES_ERR_INVALID || !strstr(tes_last_error_detail(d->w), "out is NULL"))
        fzd_fail(d, "tes_world_stats(w, NULL) recorded %d \"%s\"", tes_last_error(d->w),
                 tes_last_error_detail(d->w));
    d->last_error = TES_ERR_INVALID;
    d->last_error_alt = 0;
    d->t.hook_error = 0;
}


/* Most of the wide components on one entity: a few new entities get them
 * all at once from tes_spawn_n (a list of more than 64 components, in a
 * random order, a huge one now and then), or a live one gets them one call
 * at a time (tes_add or tes_set, each moving it to a wider table). A few
 * fixed sets and one order of calls, since every distinct set is a table
 * that every query's walk then visits. Deferred: queued like any other
 * change. */
void fzd_op_widen(fz_driver_t *d)
{
    int ks[FZ_NWIDE + 2];
    int32_t n = 0;
    uint32_t variant = fzd_draw(d, 3);
    for (int i = 0; i < FZ_NWIDE; i++)
        if (variant == 0 || (variant == 1 && i >= 8) || (variant == 2 && i % 9 != 4))
            ks[n++] = FZ_C_W0 + i;
    bool batch = fzd_draw(d, 8) != 0;
    if (batch && fzd_draw(d, 4) == 0)
        ks[n++] = FZ_C_HUGE + (int)fzd_draw(d, 2);
    if (batch)
        for (int32_t i = n - 1; i > 0; i--) {
            int32_t j = (int32_t)fzd_draw(d, (uint32_t)i + 1);
            int t = ks[i];
            ks[i] = ks[j];
            ks[j] = t;
        }
    if (batch) {
        d->op = "tes_spawn_n (wide)";
        int32_t count = 1 + (int32_t)fzd_draw(d, 3);
        tes_comp_t comps[FZ_NWIDE + 2];
        for (int32_t i = 0; i < n; i++)
            comps[i] = d->ids[ks[i]];
        bool can = fz_model_can_spawn(&d->m, (uint32_t)count);
        tes_entity_t out[4];
        int rc = tes_spawn_n(d->w, count, comps, n, out);
        fzd_check_status(d, rc, can ? TES_OK : TES_ERR_FULL, 1);
        if (rc == TES_ERR_FULL)
            d->res->full++;
        if (fzd_failed(d) || rc != TES_OK)
            return;
        for (int32_t i = 0; i < count; i++) {
            tes_entity_t e = fzd_model_spawn(d);
            if (out[i] != e) {
                fzd_fail(d, "out[%d] = %#llx, model %#llx", (int)i, ull(out[i]), ull(e));
                return;
            }
            for (int32_t j = 0; j < n; j++) {
                if (deferred(d))
                    fzd_queue(d, FZ_Q_ADD, e, ks[j], TES_NULL);
                else
                    fz_model_add(&d->m, tes_entity_index(e), ks[j]);
            }
            fzd_hist_add(d, e);
        }
        d->res->widened += (uint64_t)count;
        return;
    }
    d->op = "tes_add / tes_set (wide)";
    tes_entity_t e = fzd_pick_entity(d);
    if (!fz_model_alive(&d->m, e))
        return;
    for (int32_t i = 0; i < n && !fzd_failed(d); i++) {
        int k = ks[i];
        bool set = fzd_draw(d, 3) == 0;
        uint8_t value[FZ_MAXSIZE];
        if (set)
            fzd_make_value(d, k, value);
        int rc = set ? tes_set(d->w, e, d->ids[k], fzd_lib_value(d, k, value))
                     : tes_add(d->w, e, d->ids[k]);
        fzd_check_status(d, rc, TES_OK, 1);
        if (fzd_failed(d))
            return;
        if (deferred(d)) {
            if (set ? fz_model_queue_set(&d->m, e, k, value) < 0
                    : !fz_model_queue(&d->m, FZ_Q_ADD, e, k, TES_NULL))
                fzd_fail(d, "model out of memory");
            continue;
        }
        fz_model_add(&d->m, tes_entity_index(e), k);
        if (set) {
            fz_model_write(&d->m, tes_entity_index(e), k, value);
            d->m.expect[k].on_set++;
        }
    }
    d->res->widened++;
}

/* One component taken from every entity that has it (up to 256 of them),
 * mostly a sparse one, in slot order: a burst of the same change, which
 * moves many entities into (or out of) a group at once, e.g. every entity
 * of {A, NOT S} joining as S goes. In a deferred block the burst is queued
 * and applied at the flush. */
void fzd_op_strip(fz_driver_t *d)
{
    static const int sparse_kinds[] = {FZ_C_S4,   FZ_C_S16, FZ_C_SST, FZ_C_STAG, FZ_C_SST8,
                                       FZ_C_SREF, FZ_C_SHUGE, FZ_C_S8, FZ_C_S12, FZ_C_SPTAG};
    int nkinds = (int)(sizeof sparse_kinds / sizeof sparse_kinds[0]);
    int k = fzd_draw(d, 4) ? sparse_kinds[fzd_draw(d, (uint32_t)nkinds)] : (int)fzd_draw(d, FZ_NCOMP);
    d->op = "tes_remove (burst)";
    fz_model_t *m = &d->m;
    uint32_t done = 0;
    for (uint32_t i = 0; i < m->nslots && done < 256 && !fzd_failed(d); i++) {
        if (!m->slots[i].alive || !fz_model_has(m, i, k))
            continue;
        tes_entity_t e = fz_model_handle(m, i);
        int rc = tes_remove(d->w, e, d->ids[k]);
        fzd_check_status(d, rc, TES_OK, 1);
        if (fzd_failed(d))
            return;
        if (deferred(d))
            fzd_queue(d, FZ_Q_REMOVE, e, k, TES_NULL);
        else
            fz_model_remove(m, i, k);
        done++;
    }
}
