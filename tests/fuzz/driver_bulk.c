/*
 * The bundle, bulk and batch ops of the differential fuzzer: tes_spawn_with,
 * tes_spawn_bulk, tes_destroy_n, tes_destroy_matching and tes_get_n. The
 * model has no bulk notion of its own: each call must do exactly what the
 * single-entity calls it stands for would do, in the order the header
 * gives (spawn then add, write, on_set per value; destroys in list order,
 * or in the order an iteration of the query visits the matches), and
 * deferred the same commands the single calls queue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"

static bool deferred(const fz_driver_t *d) { return d->defer_depth > 0; }

/* A live, visible entity of the model holding k, or UINT32_MAX. */
static uint32_t holder_of(fz_driver_t *d, int k)
{
    const fz_model_t *m = &d->m;
    for (int tries = 0; tries < 6 && m->nlive; tries++) {
        uint32_t i = m->live[fzd_draw(d, m->nlive)];
        if (fz_model_has(m, i, k))
            return i;
    }
    return UINT32_MAX;
}

/* The model side of one new entity's component k, given value bytes or
 * not (NULL: the default, a plain add). */
static void model_give(fz_driver_t *d, tes_entity_t e, int k, bool given, const uint8_t *value)
{
    bool data = fz_comps[k].size > 0;
    if (deferred(d)) {
        if (!given)
            fzd_queue(d, FZ_Q_ADD, e, k, TES_NULL);
        else if (fz_model_queue_set(&d->m, e, k, data ? value : NULL) < 0)
            fzd_fail(d, "model out of memory");
        return;
    }
    uint32_t index = tes_entity_index(e);
    fz_model_add(&d->m, index, k);
    if (!given)
        return;
    if (data) {
        fz_model_write(&d->m, index, k, value);
        if (fz_comps[k].tracked)
            d->m.expect[k].copy++;
    }
    d->m.expect[k].on_set++;
}

#define FZ_CELLS_BUNDLE 5

void fzd_op_spawn_with(fz_driver_t *d)
{
    d->op = "tes_spawn_with";
    tes_value_t vals[FZ_NCOMP + 2];
    int ks[FZ_NCOMP + 2];
    uint8_t bytes[FZ_NCOMP + 2][FZ_MAXSIZE];
    int32_t n = 0;
    uint32_t used = 0;
    bool invalid = false;
    /* Now and then one of three fixed table-only bundles, so the library's
     * cache of the last bundle is hit (and missed) often: two with hooks,
     * one without (its values copied as bytes, with no hook level). */
    static const int fixed[3][3] = {{FZ_C_T24, FZ_C_T4, FZ_C_TTAG2},
                                    {FZ_C_T12, FZ_C_TREF, FZ_C_T16A},
                                    {FZ_C_T16A, FZ_C_TTAG, FZ_C_T12}};
    /* The cells variant: half the time one of its bundles, mostly of 8 to
     * 16 byte values (tes_spawn_with's loop for those), one with a tag and
     * one of mixed sizes (its byte copies by size); values of the caller's
     * or NULL (zeroes), as below. */
    static const int cells_fixed[5][FZ_CELLS_BUNDLE] = {
        {FZ_C_C8, FZ_C_C12, FZ_C_C16, -1},
        {FZ_C_C16B, FZ_C_C8B, FZ_C_C12B, FZ_C_C16, FZ_C_C8},
        {FZ_C_C12, FZ_C_C16B, -1},
        {FZ_C_C16, FZ_C_CTAG, FZ_C_C8, -1},
        {FZ_C_C4, FZ_C_C12, FZ_C_C6, FZ_C_C16B, -1}};
    const int *cells = d->cfg->cells && fzd_draw(d, 2) ? cells_fixed[fzd_draw(d, 5)] : NULL;
    uint32_t bundle = cells ? 0 : fzd_draw(d, 100) < 35 ? 1 + fzd_draw(d, 3) : 0;
    uint32_t want_n = cells ? FZ_CELLS_BUNDLE : bundle ? 3 : fzd_draw(d, 6);
    for (uint32_t i = 0; i < want_n; i++) {
        if (cells && cells[i] < 0)
            break;
        int k = cells ? cells[i] : bundle ? fixed[bundle - 1][i] : (int)fzd_draw(d, FZ_NCOMP);
        if (cells) {
            ks[n] = k;
            vals[n].comp = d->ids[k];
            vals[n].ptr = NULL;
            if (fzd_draw(d, 8)) {
                fzd_make_value(d, k, bytes[n]);
                vals[n].ptr = bytes[n];
            }
            n++;
            continue;
        }
        if ((used >> k & 1u) && fzd_draw(d, 8)) /* now and then a repeat */
            continue;
        invalid |= (used >> k & 1u) != 0;
        used |= 1u << k;
        ks[n] = k;
        vals[n].comp = d->ids[k];
        vals[n].ptr = NULL;
        uint32_t r = fzd_draw(d, 100);
        if (r >= 25) {
            /* A value of the caller's, or one that lives in the world (it
             * may sit in the table the new entity goes to). */
            uint32_t src = fz_comps[k].size && r >= 85 ? holder_of(d, k) : UINT32_MAX;
            if (src != UINT32_MAX) {
                vals[n].ptr = fzd_get(d, fz_model_handle(&d->m, src), d->ids[k]);
                fzd_check_value(d, src, k, vals[n].ptr, "tes_get (a tes_spawn_with source)");
                memcpy(bytes[n], d->m.slots[src].val[k], FZ_MAXSIZE);
                if (fzd_failed(d))
                    return;
            } else {
                fzd_make_value(d, k, bytes[n]);
                vals[n].ptr = bytes[n];
            }
        }
        n++;
    }
    int32_t call_n = n;
    const tes_value_t *arg = vals;
    if (fzd_draw(d, 100) < 3) {
        switch (fzd_draw(d, 3)) {
        case 0:
            vals[n].comp = fzd_draw(d, 2) ? 0 : d->max_id + 1 + fzd_draw(d, 3); /* unknown */
            vals[n].ptr = NULL;
            call_n = n + 1;
            break;
        case 1:
            call_n = -1 - (int32_t)fzd_draw(d, 3);
            break;
        default:
            arg = NULL;
            call_n = n ? n : 1;
            break;
        }
        invalid = true;
    }
    int want = invalid ? TES_ERR_INVALID : fz_model_can_spawn(&d->m, 1) ? TES_OK : TES_ERR_FULL;
    tes_entity_t expect = want == TES_OK ? fz_model_peek_spawn(&d->m) : TES_NULL;
    tes_entity_t e = tes_spawn_with(d->w, arg, call_n);
    if (e != expect) {
        fzd_fail(d, "returned %#llx, model %#llx (n=%d, status %d)", ull(e), ull(expect),
                 (int)call_n, tes_last_error(d->w));
        return;
    }
    if (want != TES_OK) {
        fzd_check_error(d, want, 1);
        if (want == TES_ERR_FULL)
            d->res->full++;
        return;
    }
    if (fzd_model_spawn(d) != e)
        return;
    for (int32_t i = 0; i < n; i++)
        model_give(d, e, ks[i], vals[i].ptr != NULL, bytes[i]);
    fzd_hist_add(d, e);
}

void fzd_op_spawn_bulk(fz_driver_t *d)
{
    d->op = "tes_spawn_bulk";
    int32_t count = d->m.nlive < d->cfg->pop_target ? (int32_t)fzd_draw(d, 24) : (int32_t)fzd_draw(d, 4);
    if (fzd_draw(d, 100) < 3)
        count = -1 - (int32_t)fzd_draw(d, 3);
    enum { MAXC = 5 };
    tes_comp_t comps[MAXC + 1];
    int ks[MAXC];
    int32_t nc = 0;
    uint32_t used = 0;
    uint32_t want_n = fzd_draw(d, MAXC);
    for (uint32_t i = 0; i < want_n; i++) {
        int k = (int)fzd_draw(d, FZ_NCOMP);
        if (used >> k & 1u)
            continue;
        used |= 1u << k;
        ks[nc] = k;
        comps[nc++] = d->ids[k];
    }
    /* Column data: values of the component's size, back to back. */
    static _Alignas(16) uint8_t columns[MAXC][24 * FZ_MAXSIZE];
    static uint8_t model_vals[MAXC][24][FZ_MAXSIZE];
    const void *data[MAXC];
    bool with_data = fzd_draw(d, 100) < 70;
    for (int32_t k = 0; k < nc; k++) {
        data[k] = NULL;
        if (!with_data || fzd_draw(d, 100) < 30)
            continue;
        uint32_t size = fz_comps[ks[k]].size;
        for (int32_t i = 0; i < count && i < 24; i++) {
            fzd_make_value(d, ks[k], model_vals[k][i]);
            memcpy(columns[k] + (size_t)i * size, model_vals[k][i], size);
        }
        data[k] = columns[k];
    }
    tes_entity_t out[24 + 1];
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (int i = 0; i <= 24; i++)
        out[i] = sentinel;
    bool null_out = fzd_draw(d, 100) < 30;
    tes_bulk_desc_t desc = {count, comps, nc, with_data ? data : NULL, null_out ? NULL : out};
    bool invalid = count < 0;
    if (fzd_draw(d, 100) < 4) {
        switch (fzd_draw(d, 3)) {
        case 0:
            if (nc > 0) {
                comps[nc] = comps[0]; /* repeated */
                desc.ncomps = nc + 1;
                invalid = true;
            }
            break;
        case 1:
            desc.ncomps = -1;
            invalid = true;
            break;
        default:
            if (nc > 0) {
                desc.comps = NULL;
                invalid = true;
            }
            break;
        }
    }
    bool can = count >= 0 && fz_model_can_spawn(&d->m, (uint32_t)count);
    int want = invalid ? TES_ERR_INVALID : can ? TES_OK : TES_ERR_FULL;
    bool null_desc = fzd_draw(d, 200) == 0;
    if (null_desc)
        want = TES_ERR_INVALID;
    int rc = tes_spawn_bulk(d->w, null_desc ? NULL : &desc);
    fzd_check_status(d, rc, want, 1);
    if (rc == TES_ERR_FULL)
        d->res->full++;
    if (fzd_failed(d) || rc != TES_OK)
        return;
    for (int32_t i = 0; i < count; i++) {
        tes_entity_t e = fzd_model_spawn(d);
        if (!null_out && out[i] != e) {
            fzd_fail(d, "count=%d: out[%d] = %#llx, model %#llx", (int)count, (int)i, ull(out[i]),
                     ull(e));
            return;
        }
        for (int32_t k = 0; k < nc; k++)
            model_give(d, e, ks[k], with_data && data[k] != NULL, data[k] ? model_vals[k][i] : NULL);
        fzd_hist_add(d, e);
    }
    if (out[null_out ? 0 : count] != sentinel)
        fzd_fail(d, "wrote past out[%d]", (int)count);
}

void fzd_op_destroy_n(fz_driver_t *d)
{
    d->op = "tes_destroy_n";
    tes_entity_t es[8];
    int32_t n = (int32_t)fzd_draw(d, 8);
    for (int32_t i = 0; i < n; i++)
        es[i] = i && fzd_draw(d, 100) < 6 ? es[fzd_draw(d, (uint32_t)i)] : fzd_pick_entity(d);
    /* Entry by entry, the first bad one decides. */
    int want = TES_OK;
    for (int32_t i = 0; i < n && want == TES_OK; i++) {
        bool repeated = false;
        for (int32_t j = 0; j < i; j++)
            repeated |= es[j] == es[i];
        if (!fz_model_alive(&d->m, es[i]))
            want = TES_ERR_STALE;
        else if (repeated)
            want = TES_ERR_INVALID;
        else if (d->m.strict && d->m.slots[tes_entity_index(es[i])].inst)
            want = TES_ERR_OWNED;
    }
    /* Then the whole plan, descendants included. */
    if (want == TES_OK && n > 0)
        want = fzd_destroy_status(d, es, (uint32_t)n);
    const tes_entity_t *arg = es;
    int32_t call_n = n;
    if (fzd_draw(d, 100) < 3) {
        if (fzd_draw(d, 2))
            call_n = -1 - (int32_t)fzd_draw(d, 4);
        else
            arg = NULL, call_n = 1 + (int32_t)fzd_draw(d, 3);
        want = TES_ERR_INVALID;
    }
    int rc = tes_destroy_n(d->w, arg, call_n);
    fzd_check_status(d, rc, want, 1);
    if (rc == TES_ERR_OWNED)
        d->res->owned++;
    if (fzd_failed(d) || rc != TES_OK)
        return;
    /* Deferred: each listed destroy cascades again when applied. */
    for (int32_t i = 0; i < n; i++) {
        if (deferred(d))
            fzd_queue(d, FZ_Q_DESTROY, es[i], 0, TES_NULL);
        fzd_hist_add(d, es[i]);
    }
    if (!deferred(d) && n > 0 && !fz_model_destroy_tree(&d->m, es, (uint32_t)n))
        fzd_fail(d, "model out of memory");
}

void fzd_op_destroy_matching(fz_driver_t *d)
{
    d->op = "tes_destroy_matching";
    fz_dquery_t *pick[FZ_MAX_QUERIES];
    uint32_t nq = 0;
    for (int i = 0; i < FZ_MAX_QUERIES; i++)
        if (d->queries[i].q)
            pick[nq++] = &d->queries[i];
    if (!nq) {
        if (tes_destroy_matching(NULL) != TES_ERR_INVALID)
            fzd_fail(d, "tes_destroy_matching(NULL) did not return TES_ERR_INVALID");
        return;
    }
    fz_dquery_t *dq = pick[fzd_draw(d, nq)];
    /* The order: as an iteration visits the matches. */
    const fz_model_t *m = &d->m;
    tes_entity_t *order = malloc(((size_t)m->nlive + 1) * sizeof *order);
    if (!order) {
        fzd_fail(d, "out of memory");
        return;
    }
    uint32_t n = 0;
    bool extra = false;
    tes_iter_t it = tes_query_iter(dq->q);
    while (tes_iter_next(&it)) {
        for (int32_t i = 0; i < it.count; i++) {
            if (n < m->nlive)
                order[n++] = it.entities[i];
            else
                extra = true;
        }
    }
    /* The model's matches, and whether a strict world protects one. */
    uint32_t want_n = 0;
    bool owned = false;
    for (uint32_t i = 0; i < m->nlive; i++) {
        uint32_t index = m->live[i];
        if (m->slots[index].pending || !fz_mquery_match(m, &dq->mq, index))
            continue;
        want_n++;
    }
    for (uint32_t i = 0; i < n && !extra; i++) {
        fz_mslot_t *s = fz_model_get(m, order[i]);
        extra |= !s || s->pending || !fz_mquery_match(m, &dq->mq, tes_entity_index(order[i]));
    }
    if (extra || n != want_n) {
        fzd_fail(d, "the query iterates %u entities (%s), the model matches %u", n,
                 extra ? "some not matching" : "all matching", want_n);
        free(order);
        return;
    }
    /* The matches' descendants die too (not counted): a strict world
     * protects the whole plan. */
    owned = n && !extra && n == want_n && fzd_destroy_status(d, order, n) == TES_ERR_OWNED;
    int32_t rc = tes_destroy_matching(dq->q);
    if (owned) {
        fzd_check_status(d, rc, TES_ERR_OWNED, 1);
        d->res->owned += rc == TES_ERR_OWNED;
    } else if (rc != (int32_t)want_n) {
        fzd_fail(d, "returned %d, the model matches %u (error %d)", (int)rc, want_n,
                 tes_last_error(d->w));
    }
    if (!fzd_failed(d) && rc >= 0) {
        for (uint32_t i = 0; i < n && deferred(d); i++)
            fzd_queue(d, FZ_Q_DESTROY, order[i], 0, TES_NULL);
        if (!deferred(d) && n && !fz_model_destroy_tree(&d->m, order, n))
            fzd_fail(d, "model out of memory");
    }
    free(order);
}

void fzd_op_get_n(fz_driver_t *d)
{
    d->op = "tes_get_n";
    tes_comp_t id;
    int k = fzd_pick_comp(d, &id);
    /* Up to 64 handles: longer than tes_get_n's pipeline distance, so its
     * lead-in, steady loop and tail all run on model-checked handles. */
    tes_entity_t es[64];
    const void *out[64];
    int32_t n = (int32_t)fzd_draw(d, 65);
    for (int32_t i = 0; i < n; i++)
        es[i] = fzd_pick_entity(d);
    if (fzd_draw(d, 100) < 2) {
        int32_t bad = -1 - (int32_t)fzd_draw(d, 3);
        if (fzd_get_n(d, id, k >= 0 && fz_comps[k].size, es, bad, out) != -1 || fzd_get_n(d, id, k >= 0 && fz_comps[k].size, NULL, 1, out) != -1)
            fzd_fail(d, "bad arguments not refused with -1");
        return;
    }
    int32_t found = fzd_get_n(d, id, k >= 0 && fz_comps[k].size, es, n, out);
    int32_t want = 0;
    for (int32_t i = 0; i < n && !fzd_failed(d); i++) {
        bool has = k >= 0 && fz_comps[k].size && fz_model_alive(&d->m, es[i]) &&
                   fz_model_has(&d->m, tes_entity_index(es[i]), k);
        want += has;
        if (has)
            fzd_check_value(d, tes_entity_index(es[i]), k, out[i], "tes_get_n");
        else if (out[i])
            fzd_fail(d, "out[%d] (%#llx, %u) = %p, model has no value", (int)i, ull(es[i]), id, out[i]);
    }
    if (!fzd_failed(d) && found != want)
        fzd_fail(d, "returned %d, model finds %d", (int)found, (int)want);
    /* A lookup view built here (deferred, inside an iteration or a hook's
     * op, wherever get_n runs) gives the same answers. Draws nothing, so
     * the op stream is unchanged. */
    tes_lookup_t l;
    int rc = tes_lookup_init(&l, d->w, id);
    bool data = k >= 0 && fz_comps[k].size;
    if (!fzd_failed(d))
        fzd_check_status(d, rc, data ? TES_OK : TES_ERR_INVALID, 1);
    for (int32_t i = 0; i < n && rc == TES_OK && !fzd_failed(d); i++)
        if (tes_lookup_get(&l, es[i]) != out[i])
            fzd_fail(d, "tes_lookup_get(%#llx, %u) differs from tes_get_n", ull(es[i]), id);
    tes_lookup_fini(&l);
}
