/*
 * The fuzzer's checks: after every op (entity count, hook counters, ctor -
 * dtor against the model's live and staged values, hook failures,
 * tes_last_error, live instances) and every check_every ops (every slot,
 * value and stale handle, stats, every instance id, prefab and held entity
 * reference, every query, tes__world_check and the query filter index's
 * own check).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"
#include "query/filter.h"
#include "world/check.h"

static int cmp_comp(const void *a, const void *b)
{
    tes_comp_t x = *(const tes_comp_t *)a, y = *(const tes_comp_t *)b;
    return x < y ? -1 : x > y;
}

/* The model's component ids of a slot, ascending. */
static int32_t model_comps(const fz_driver_t *d, uint32_t index, tes_comp_t out[FZ_NALL])
{
    int32_t n = 0;
    for (int k = 0; k < FZ_NALL; k++)
        if (fz_model_has(&d->m, index, k))
            out[n++] = d->ids[k];
    qsort(out, (size_t)n, sizeof *out, cmp_comp);
    return n;
}

void fzd_check_components_of(fz_driver_t *d, tes_entity_t e, int32_t cap, bool null_out)
{
    fz_mslot_t *s = fz_model_get(&d->m, e);
    tes_comp_t want[FZ_NALL];
    int32_t nwant = s ? model_comps(d, tes_entity_index(e), want) : -1;
    if (null_out && cap > 0)
        nwant = -1; /* out NULL with cap > 0 is invalid */
    tes_comp_t got[FZ_NALL + 4];
    const tes_comp_t sentinel = UINT32_C(0xA5A5A5A5);
    for (int i = 0; i < FZ_NALL + 4; i++)
        got[i] = sentinel;
    int32_t n = fzd_components_of(d, e, null_out ? NULL : got, cap);
    if (n != nwant) {
        fzd_fail(d, "tes_components_of(%#llx, cap %d) = %d, model %d", ull(e), (int)cap, (int)n,
             (int)nwant);
        return;
    }
    if (null_out || n < 0)
        return;
    int32_t written = n < cap ? n : cap;
    for (int32_t i = 0; i < written; i++)
        if (got[i] != want[i]) {
            fzd_fail(d, "tes_components_of(%#llx)[%d] = %u, model %u", ull(e), (int)i, got[i],
                 want[i]);
            return;
        }
    for (int32_t i = written; i < FZ_NALL + 4; i++)
        if (got[i] != sentinel) {
            fzd_fail(d, "tes_components_of(%#llx, cap %d) wrote past %d entries", ull(e), (int)cap,
                 (int)written);
            return;
        }
}

void fzd_check_stats(fz_driver_t *d)
{
    tes_world_stats_t st;
    if (tes_world_stats(d->w, &st) != TES_OK) {
        fzd_fail(d, "tes_world_stats failed");
        return;
    }
    const fz_model_t *m = &d->m;
    if (st.entities_alive != m->nlive || st.entity_slots != m->nslots ||
        st.entities_retired != m->retired || st.entities_free != m->nfree)
        fzd_fail(d, "stats alive/slots/retired/free = %u/%u/%u/%u, model %u/%u/%u/%u",
             st.entities_alive, st.entity_slots, st.entities_retired, st.entities_free, m->nlive,
             m->nslots, m->retired, m->nfree);
    else if (st.components != FZ_NALL) /* the two built-ins are in the set */
        fzd_fail(d, "stats components = %u, want %u", st.components, (unsigned)FZ_NALL);
    else if (st.instances_alive != m->nilive)
        fzd_fail(d, "stats instances_alive = %u, model %u", st.instances_alive, m->nilive);
}

/* ------------------------------------------------------------------ checks */

/* After every op: cheap global agreement. */
void fzd_check_step(fz_driver_t *d)
{
    if (fzd_failed(d))
        return;
    if (d->t.failed) {
        fzd_fail(d, "hook: %s", d->t.msg);
        return;
    }
    /* A hook's refused structural call is a failed call too. */
    bool probed = d->t.hook_error != 0;
    if (probed) {
        d->last_error = d->t.hook_error;
        d->t.hook_error = 0;
    }
    int got = tes_last_error(d->w);
    if (got != d->last_error && (d->last_error_alt == 0 || got != d->last_error_alt)) {
        fzd_fail(d, "tes_last_error is %d, want %d (%s)", got, d->last_error,
                 probed ? "the last failed call was one a hook made during this op"
                        : "successful calls must not change it");
        return;
    }
    /* Every TES_ERR_INVALID is explained. */
    if (got == TES_ERR_INVALID && !tes_last_error_detail(d->w)[0]) {
        fzd_fail(d, "tes_last_error is TES_ERR_INVALID with an empty tes_last_error_detail");
        return;
    }
    d->last_error = got;
    d->last_error_alt = 0;
    if (d->fresh) {
        fzd_check_fresh(d); /* queries hooks made, now the op is over */
        if (fzd_failed(d))
            return;
    }
    if (tes_is_deferred(d->w) != (d->defer_depth > 0)) {
        fzd_fail(d, "tes_is_deferred = %d with %d levels open", !(d->defer_depth > 0),
                 (int)d->defer_depth);
        return;
    }
    int32_t count = tes_entity_count(d->w);
    if (count < 0 || (uint32_t)count != d->m.nlive) {
        fzd_fail(d, "tes_entity_count = %d, model %u", (int)count, d->m.nlive);
        return;
    }
    tes_world_stats_t st;
    if (tes_world_stats(d->w, &st) != TES_OK || st.instances_alive != d->m.nilive) {
        fzd_fail(d, "stats instances_alive = %u, model %u", st.instances_alive, d->m.nilive);
        return;
    }
    for (int k = 0; k < FZ_NCOMP; k++) {
        const fz_counts_t *c = &d->t.counts[k];
        const fz_hook_expect_t *x = &d->m.expect[k];
        const char *name = fz_comps[k].name;
        if (fz_comps[k].tracked) {
            if (c->ctor - c->dtor != (uint64_t)d->m.values[k] + d->m.staged[k]) {
                fzd_fail(d, "%s: ctor %llu - dtor %llu != %u live + %u staged values in the model",
                         name, ull(c->ctor), ull(c->dtor), d->m.values[k], d->m.staged[k]);
                return;
            }
            if (c->copy != x->copy) {
                fzd_fail(d, "%s: %llu copy hook calls, model %llu", name, ull(c->copy), ull(x->copy));
                return;
            }
        }
        if (fz_comps[k].tracked || fz_comps[k].observed) {
            if (c->on_add != x->on_add || c->on_set != x->on_set || c->on_remove != x->on_remove) {
                fzd_fail(d, "%s: on_add/on_set/on_remove fired %llu/%llu/%llu times, model %llu/%llu/%llu",
                     name, ull(c->on_add), ull(c->on_set), ull(c->on_remove), ull(x->on_add),
                     ull(x->on_set), ull(x->on_remove));
                return;
            }
        }
    }
}

/* The typed read form of l's kind answers p (what tes_lookup_get answered);
 * the other form answers NULL. */
static bool typed_forms_agree(const tes_lookup_t *l, tes_entity_t e, const void *p)
{
    const void *same = l->sparse ? tes_lookup_get_sparse(l, e) : tes_lookup_get_table(l, e);
    const void *other = l->sparse ? tes_lookup_get_table(l, e) : tes_lookup_get_sparse(l, e);
    return same == p && other == NULL;
}

/* What a sparse view's page pointers (entry_pages, data_pages: the first
 * form of the documented encoding) say of e, to hold against the inline
 * read through the biased bases. */
static void *sparse_by_pages(const tes_lookup_t *l, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e), page = index >> TES_LOOKUP_ENTRY_PAGE_BITS;
    if (page >= l->entry_page_count || !l->entry_pages[page])
        return NULL;
    uint64_t entry = l->entry_pages[page][index & (TES_LOOKUP_ENTRY_PAGE - 1u)];
    if (entry == UINT64_MAX || (uint32_t)(entry >> 32) != tes_entity_generation(e))
        return NULL;
    uint32_t pos = (uint32_t)entry;
    return l->data_pages[pos >> l->page_shift] +
           (size_t)(pos & ((UINT32_C(1) << l->page_shift) - 1u)) * l->size;
}

/* A lookup view of component k, built now, against tes_get_mut and the
 * model: for every slot (retired ones in turns, as the full check does)
 * its current handle and four stale ones, and handles never issued. A tag
 * must be refused with TES_ERR_INVALID. */
static void check_lookup(fz_driver_t *d, int k, uint32_t turn)
{
    const fz_model_t *m = &d->m;
    tes_comp_t id = d->ids[k];
    tes_lookup_t l;
    int rc = tes_lookup_init(&l, d->w, id);
    if (!fz_comps[k].size) {
        fzd_check_status(d, rc, TES_ERR_INVALID, 1);
        if (l.priv_block || l.size)
            fzd_fail(d, "tes_lookup_init(%s), a tag: the view is not zeroed", fz_comps[k].name);
        return;
    }
    if (rc != TES_OK) {
        fzd_fail(d, "tes_lookup_init(%s) = %d", fz_comps[k].name, rc);
        return;
    }
    for (uint32_t i = 0; i < m->nslots && !fzd_failed(d); i++) {
        const fz_mslot_t *s = &m->slots[i];
        if (s->retired && i % 8u != turn)
            continue;
        tes_entity_t es[5] = {tes_entity_make(i, s->gen), tes_entity_make(i, s->gen - 1),
                              tes_entity_make(i, s->gen + 1), tes_entity_make(i, TES_TOMBSTONE),
                              tes_entity_make(i, 0)};
        for (int j = 0; j < 5 && !fzd_failed(d); j++) {
            void *p = tes_lookup_get(&l, es[j]);
            if (!typed_forms_agree(&l, es[j], p))
                fzd_fail(d, "tes_lookup_get_table/_sparse(%#llx, %s) disagree with tes_lookup_get",
                         ull(es[j]), fz_comps[k].name);
            else if (l.sparse && p != sparse_by_pages(&l, es[j]))
                fzd_fail(d, "tes_lookup_get(%#llx, %s) = %p, the view's page pointers say %p",
                         ull(es[j]), fz_comps[k].name, p, sparse_by_pages(&l, es[j]));
            else if (p != fzd_get_mut(d, es[j], id))
                fzd_fail(d, "tes_lookup_get(%#llx, %s) = %p, tes_get_mut disagrees", ull(es[j]),
                         fz_comps[k].name, p);
            else if (j == 0 && s->alive && fz_model_has(m, i, k))
                fzd_check_value(d, i, k, p, "tes_lookup_get");
            else if (p)
                fzd_fail(d, "tes_lookup_get(%#llx, %s) = %p, model has no value", ull(es[j]),
                         fz_comps[k].name, p);
        }
    }
    tes_entity_t never[3] = {TES_NULL, tes_entity_make(m->nslots, 1),
                             tes_entity_make(TES_NULL_INDEX, TES_TOMBSTONE)};
    for (int j = 0; j < 3 && !fzd_failed(d); j++)
        if (tes_lookup_get(&l, never[j]) || !typed_forms_agree(&l, never[j], NULL))
            fzd_fail(d, "tes_lookup_get(%#llx, %s) found a value", ull(never[j]), fz_comps[k].name);
    tes_lookup_fini(&l);
}

/* Lookup views of every component of the op mix and a few extra ones. */
static void check_lookups(fz_driver_t *d, uint32_t turn)
{
    d->op = "lookup views";
    static const int extra[] = {FZ_C_HUGE, FZ_C_SHUGE, FZ_C_W0, FZ_C_WLAST};
    for (int k = 0; k < FZ_NCOMP && !fzd_failed(d); k++)
        check_lookup(d, k, turn);
    for (size_t j = 0; j < sizeof extra / sizeof extra[0] && !fzd_failed(d); j++)
        check_lookup(d, extra[j], turn);
    for (int k = FZ_C_CELLS0; d->cfg->cells && k < FZ_NALL && !fzd_failed(d); k++)
        check_lookup(d, k, turn);
    tes_lookup_t l;
    if (!fzd_failed(d))
        fzd_check_status(d, tes_lookup_init(&l, d->w, d->max_id + 1), TES_ERR_INVALID, 1);
    d->op = "full check";
}

/* Every slot, every value, stale handles, stats, every query, and the
 * library's own invariant check. Never runs inside a deferred level. */
/* tes_entities lists the model's live entities in index order, in pages
 * (an odd page size, so page ends fall everywhere). */
static void check_entity_pages(fz_driver_t *d)
{
    const fz_model_t *m = &d->m;
    tes_entity_t page[61];
    int64_t at = 0;
    uint32_t i = 0;
    for (;;) {
        int32_t n = tes_entities(d->w, at, page, 61);
        if (n < 0) {
            fzd_fail(d, "tes_entities(offset %lld) = %d", (long long)at, (int)n);
            return;
        }
        for (int32_t j = 0; j < n; j++, i++) {
            while (i < m->nslots && !m->slots[i].alive)
                i++;
            if (i == m->nslots || page[j] != tes_entity_make(i, m->slots[i].gen)) {
                fzd_fail(d, "tes_entities(offset %lld)[%d] = %#llx, model %#llx", (long long)at,
                         (int)j, ull(page[j]),
                         i < m->nslots ? ull(tes_entity_make(i, m->slots[i].gen)) : 0ull);
                return;
            }
        }
        at += n;
        if (n < 61)
            break;
    }
    if (at != (int64_t)m->nlive)
        fzd_fail(d, "tes_entities listed %lld entities, model %u", (long long)at, m->nlive);
}

void fzd_check_full(fz_driver_t *d)
{
    if (fzd_failed(d))
        return;
    d->op = "full check";
    const fz_model_t *m = &d->m;
    /* Retired slots (tens of thousands in a gen1 world) in turns: one in
     * eight per check, every one of them over eight checks. */
    uint32_t turn = d->full_checks++ % 8u;
    for (uint32_t i = 0; i < m->nslots && !fzd_failed(d); i++) {
        const fz_mslot_t *s = &m->slots[i];
        if (s->retired && i % 8u != turn)
            continue;
        tes_entity_t e = tes_entity_make(i, s->gen);
        if (tes_alive(d->w, e) != s->alive) {
            fzd_fail(d, "tes_alive(%#llx) = %d, model %d (retired %d)", ull(e), !s->alive, s->alive,
                 s->retired);
            return;
        }
        tes_entity_t stale[4] = {tes_entity_make(i, s->gen - 1), tes_entity_make(i, s->gen + 1),
                                 tes_entity_make(i, TES_TOMBSTONE), tes_entity_make(i, 0)};
        for (int j = 0; j < 4; j++)
            if (tes_alive(d->w, stale[j])) {
                fzd_fail(d, "stale handle %#llx is alive", ull(stale[j]));
                return;
            }
        if (!s->alive) {
            if (tes_has(d->w, e, d->ids[FZ_C_T4]) || fzd_components_of(d, e, NULL, 0) != -1)
                fzd_fail(d, "dead entity %#llx still answers queries", ull(e));
            continue;
        }
        for (int k = 0; k < FZ_NCOMP; k++) {
            bool has = fz_model_has(m, i, k);
            if (tes_has(d->w, e, d->ids[k]) != has) {
                fzd_fail(d, "tes_has(%#llx, %s) = %d, model %d", ull(e), fz_comps[k].name, !has, has);
                return;
            }
            const void *p = fzd_get(d, e, d->ids[k]);
            if (has && fz_comps[k].size)
                fzd_check_value(d, i, k, p, "tes_get");
            else if (p)
                fzd_fail(d, "tes_get(%#llx, %s) = %p, model has no value", ull(e), fz_comps[k].name, p);
        }
        /* The extra components: their values where the model has them
         * (tes_components_of below checks which ones the entity has). */
        if (s->mask.w[0] >> FZ_C_HUGE || s->mask.w[1]) {
            for (int k = FZ_NCOMP; k < FZ_NALL && !fzd_failed(d); k++)
                if (fz_model_has(m, i, k) && fz_comps[k].size)
                    fzd_check_value(d, i, k, fzd_get(d, e, d->ids[k]), "tes_get");
        }
        /* The cells variant's: each one byte for byte, or absent. */
        for (int k = FZ_C_CELLS0; d->cfg->cells && k < FZ_NALL && !fzd_failed(d); k++) {
            bool has = fz_model_has(m, i, k);
            const void *p = fzd_get(d, e, d->ids[k]);
            if (tes_has(d->w, e, d->ids[k]) != has)
                fzd_fail(d, "tes_has(%#llx, %s) = %d, model %d", ull(e), fz_comps[k].name, !has,
                         has);
            else if (has && fz_comps[k].size)
                fzd_check_value(d, i, k, p, "tes_get");
            else if (p)
                fzd_fail(d, "tes_get(%#llx, %s) = %p, model has no value", ull(e),
                         fz_comps[k].name, p);
        }
        fzd_check_components_of(d, e, FZ_NALL + 2, false);
        if (tes_enabled(d->w, e) != !fz_model_has(m, i, FZ_C_DISABLED))
            fzd_fail(d, "tes_enabled(%#llx) disagrees with the model", ull(e));
    }
    if (fzd_failed(d))
        return;
    check_entity_pages(d);
    if (fzd_failed(d))
        return;
    if (tes_alive(d->w, TES_NULL) || tes_alive(d->w, tes_entity_make(m->nslots, 1)) ||
        tes_alive(d->w, tes_entity_make(TES_NULL_INDEX, 1))) {
        fzd_fail(d, "null or never-issued handle is alive");
        return;
    }
    check_lookups(d, turn);
    if (fzd_failed(d))
        return;
    fzd_check_stats(d);
    if (!fzd_failed(d))
        fzd_check_lifecycle(d);
    if (!fzd_failed(d))
        fzd_check_hier(d);
    if (!fzd_failed(d))
        fzd_check_queries(d);
    d->op = "full check";
    if (!fzd_failed(d) && tes__world_check(d->w) != TES_OK)
        fzd_fail(d, "tes__world_check failed (see stderr)");
    if (!fzd_failed(d) && tes__filters_check(d->w) != TES_OK)
        fzd_fail(d, "tes__filters_check failed (see stderr)");
}

