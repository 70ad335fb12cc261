/*
 * Prefabs and instances in the differential fuzzer (see driver_internal.h
 * and model.h). The ops: tes_prefab_new and tes_prefab_child (a handful of
 * live prefabs, a few members each), ordinary changes made to a prefab's
 * members (entity references into the same prefab among them, which
 * instantiation must remap), tes_instantiate and tes_instantiate_n (out
 * order, ids, the exact slots taken, FULL), tes_instance_destroy (deferred
 * too: applied at the flush to the members the instance has then),
 * tes_instance_of / _alive / _members, tes_prefab_members, detach and adopt.
 * In a strict world tes_destroy refuses members (driver_ops.c asks
 * fzd_destroy_status). The full check (fzd_check_lifecycle) compares every
 * instance id ever issued, every prefab record and every entity reference a
 * component holds with the model: a reference to a destroyed entity must
 * never come back to life.

 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"

static bool deferred(const fz_driver_t *d) { return d->defer_depth > 0; }

static void ihist_add(fz_driver_t *d, tes_instance_t id)
{
    d->ihist[d->ihist_pos] = id;
    d->ihist_pos = (d->ihist_pos + 1) % FZ_HIST;
    if (d->ihist_n < FZ_HIST)
        d->ihist_n++;
}

static void oom(fz_driver_t *d) { fzd_fail(d, "model out of memory"); }

/* ------------------------------------------------------------------ picks */

static uint32_t live_prefab_count(const fz_driver_t *d)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < d->m.nprefabs; i++)
        n += fz_model_alive(&d->m, d->m.prefabs[i].members[0]);
    return n;
}

static fz_mprefab_t *random_live_prefab(fz_driver_t *d)
{
    uint32_t n = live_prefab_count(d);
    if (!n)
        return NULL;
    uint32_t pick = fzd_draw(d, n);
    for (uint32_t i = 0; i < d->m.nprefabs; i++)
        if (fz_model_alive(&d->m, d->m.prefabs[i].members[0]) && pick-- == 0)
            return &d->m.prefabs[i];
    return NULL;
}

/* A prefab argument: mostly a live root, else a child, a dead root or any
 * entity. */
static tes_entity_t pick_prefab(fz_driver_t *d)
{
    uint32_t r = fzd_draw(d, 100);
    fz_mprefab_t *p = r < 80 ? random_live_prefab(d) : NULL;
    if (p)
        return p->members[0];
    if (r < 92 && d->m.nprefabs) {
        const fz_mprefab_t *q = &d->m.prefabs[fzd_draw(d, d->m.nprefabs)];
        return q->members[fzd_draw(d, q->n)];
    }
    return fzd_pick_entity(d);
}

/* An instance argument: mostly live, else dead, never issued or 0. */
static tes_instance_t pick_instance(fz_driver_t *d)
{
    const fz_model_t *m = &d->m;
    uint32_t r = fzd_draw(d, 100);
    if (r < 75 && m->nilive) {
        uint32_t i = m->ilive[fzd_draw(d, m->nilive)];
        return tes_entity_make(i, m->insts[i].gen);
    }
    if (r < 88 && d->ihist_n)
        return d->ihist[fzd_draw(d, d->ihist_n)];
    uint32_t idx = m->ninsts ? fzd_draw(d, m->ninsts) : 0;
    uint32_t gen = m->ninsts ? m->insts[idx].gen : 1;
    switch (fzd_draw(d, 5)) {
    case 0:
        return 0;
    case 1:
        return tes_entity_make(m->ninsts + fzd_draw(d, 3), 1 + fzd_draw(d, 2));
    case 2:
        return tes_entity_make(idx, gen + 1 + fzd_draw(d, 2));
    case 3:
        return tes_entity_make(idx, TES_TOMBSTONE);
    default: /* alive, or the id a free slot issues next */
        return tes_entity_make(idx, gen);
    }
}

/* An entity argument that is often a member of a live instance. */
static tes_entity_t pick_member(fz_driver_t *d, uint32_t percent)
{
    const fz_model_t *m = &d->m;
    if (m->nilive && fzd_draw(d, 100) < percent) {
        const fz_minst_t *in = &m->insts[m->ilive[fzd_draw(d, m->nilive)]];
        return in->members[fzd_draw(d, in->n)];
    }
    return fzd_pick_entity(d);
}

tes_entity_t fzd_pick_ref(fz_driver_t *d)
{
    uint32_t r = fzd_draw(d, 100);
    if (r < 25)
        return TES_NULL;
    if (r < 70 && d->m.nprefabs) {
        const fz_mprefab_t *p = fz_model_prefab(&d->m, d->ref_root);
        if (!p || fzd_draw(d, 3) == 0)
            p = &d->m.prefabs[fzd_draw(d, d->m.nprefabs)];
        return p->members[fzd_draw(d, p->n)];
    }
    return fzd_pick_entity(d);
}

int fzd_destroy_status(fz_driver_t *d, const tes_entity_t *es, uint32_t n)
{
    int rc = fz_model_destroy_status(&d->m, es, n, 0);
    if (rc == FZ_OOM) {
        oom(d);
        return TES_OK;
    }
    return rc;
}

/* ------------------------------------------------------------------ prefabs */

/* The model side of a prefab entity: spawned, tagged TES_PREFAB (both
 * queued when deferred, as tes_spawn_n does). */
static tes_entity_t model_prefab_entity(fz_driver_t *d)
{
    tes_entity_t e = fzd_model_spawn(d);
    if (!e)
        return TES_NULL;
    if (deferred(d))
        fzd_queue(d, FZ_Q_ADD, e, FZ_C_PREFAB, TES_NULL);
    else
        fz_model_add(&d->m, tes_entity_index(e), FZ_C_PREFAB);
    fzd_hist_add(d, e);
    return e;
}

void fzd_op_prefab_new(fz_driver_t *d)
{
    if (live_prefab_count(d) >= d->max_prefabs) {
        fzd_op_instance_read(d);
        return;
    }
    d->op = "tes_prefab_new";
    fz_model_prefab_prune(&d->m);
    bool can = fz_model_can_spawn(&d->m, 1);
    tes_entity_t want = can ? fz_model_peek_spawn(&d->m) : TES_NULL;
    tes_entity_t e = tes_prefab_new(d->w);
    if (e != want) {
        fzd_fail(d, "returned %#llx, model %#llx (error %d)", ull(e), ull(want),
                 tes_last_error(d->w));
        return;
    }
    if (!can) {
        fzd_check_error(d, TES_ERR_FULL, 1);
        d->res->full++;
        return;
    }
    if (!model_prefab_entity(d) || !fz_model_prefab_add(&d->m, e))
        oom(d);
    d->res->prefabs++;
}

void fzd_op_prefab_child(fz_driver_t *d)
{
    d->op = "tes_prefab_child";
    tes_entity_t pf = pick_prefab(d);
    fz_mprefab_t *rec = fz_model_prefab(&d->m, pf);
    if (rec && fz_model_prefab_live(&d->m, rec, NULL) >= d->max_members) {
        fzd_op_instance_read(d);
        return;
    }
    bool can = fz_model_can_spawn(&d->m, 1);
    int want = !fz_model_alive(&d->m, pf) ? TES_ERR_STALE
               : !rec                     ? TES_ERR_INVALID
               : !can                     ? TES_ERR_FULL
                                          : TES_OK;
    tes_entity_t expect = want == TES_OK ? fz_model_peek_spawn(&d->m) : TES_NULL;
    tes_entity_t c = tes_prefab_child(d->w, pf);
    if (c != expect) {
        fzd_fail(d, "tes_prefab_child(%#llx) = %#llx, model %#llx (error %d, model %d)", ull(pf),
                 ull(c), ull(expect), tes_last_error(d->w), want);
        return;
    }
    if (want != TES_OK) {
        fzd_check_error(d, want, 1);
        if (want == TES_ERR_FULL)
            d->res->full++;
        return;
    }
    if (!model_prefab_entity(d) || !fz_model_prefab_child(&d->m, rec, c))
        oom(d);
    d->res->children++;
}

/* A set of TREF or SREF on e, with references that favour e's prefab. */
static void set_ref(fz_driver_t *d, tes_entity_t e)
{
    d->op = "tes_set (references)";
    int k = fzd_draw(d, 2) ? FZ_C_TREF : FZ_C_SREF;
    uint8_t value[FZ_MAXSIZE];
    fzd_make_value(d, k, value);
    bool alive = fz_model_alive(&d->m, e);
    d->t.set_expect = value;
    d->t.set_expect_k = k;
    int rc = tes_set(d->w, e, d->ids[k], value);
    d->t.set_expect = NULL;
    d->t.set_expect_k = -1;
    fzd_check_status(d, rc, alive ? TES_OK : TES_ERR_STALE, 1);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    if (deferred(d)) {
        if (fz_model_queue_set(&d->m, e, k, value) < 0)
            oom(d);
        return;
    }
    uint32_t index = tes_entity_index(e);
    fz_model_add(&d->m, index, k);
    fz_model_write(&d->m, index, k, value);
    if (fz_comps[k].tracked)
        d->m.expect[k].copy++;
    d->m.expect[k].on_set++;
}

void fzd_op_prefab_edit(fz_driver_t *d)
{
    fz_mprefab_t *p = random_live_prefab(d);
    if (!p) {
        fzd_op_prefab_new(d);
        return;
    }
    tes_entity_t root = p->members[0];
    tes_entity_t *members = malloc((size_t)p->n * sizeof *members);
    if (!members) {
        oom(d);
        return;
    }
    uint32_t n = fz_model_prefab_live(&d->m, p, members);
    /* pick_entity favours the prefab's members, make_value its references. */
    const tes_entity_t *saved = d->prefer;
    uint32_t saved_n = d->nprefer;
    tes_entity_t saved_root = d->ref_root;
    d->prefer = members;
    d->nprefer = n;
    d->ref_root = root;
    uint32_t r = fzd_draw(d, 100);
    if (r < 35)
        set_ref(d, members[fzd_draw(d, n)]);
    else if (r < 58)
        fzd_op_set(d);
    else if (r < 78)
        fzd_op_add(d);
    else if (r < 88)
        fzd_op_remove(d);
    else if (r < 93)
        fzd_op_ensure(d);
    else if (r < 96)
        fzd_op_disable(d);
    else if (r < 98)
        fzd_op_clear(d);
    else
        fzd_op_destroy(d);
    d->prefer = saved;
    d->nprefer = saved_n;
    d->ref_root = saved_root;
    free(members);
}

/* ------------------------------------------------------------------ instantiation */

/* The status of an instantiation of pf: the prefab's, else FULL when its
 * `entities` do not fit. */
static int prefab_status(const fz_driver_t *d, tes_entity_t pf, const fz_mprefab_t *rec)
{
    /* A root whose destroy is queued is dead at the call's place. */
    return !fz_model_alive(&d->m, pf)          ? TES_ERR_STALE
           : !rec                               ? TES_ERR_INVALID
           : fz_model_queued_destroy(&d->m, pf) ? TES_ERR_STALE
                                                : TES_OK;
}

/* tes_instance_members(id) must list `want` (n of them), in order. */
static void check_members(fz_driver_t *d, tes_instance_t id, const tes_entity_t *want, uint32_t n,
                          const char *what)
{
    tes_entity_t got[2 * FZ_MAX_MEMBERS + 4];
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (uint32_t i = 0; i < 2 * FZ_MAX_MEMBERS + 4; i++)
        got[i] = sentinel;
    int32_t cap = (int32_t)(n < 2 * FZ_MAX_MEMBERS ? n + 1 : 2 * FZ_MAX_MEMBERS);
    int32_t c = fzd_instance_members(d, id, got, cap);
    if (c != (int32_t)n) {
        fzd_fail(d, "%s: tes_instance_members(%#llx) = %d, model %u", what, ull(id), (int)c, n);
        return;
    }
    for (int32_t i = 0; i < cap; i++)
        if (got[i] != ((uint32_t)i < n ? want[i] : sentinel)) {
            fzd_fail(d, "%s: tes_instance_members(%#llx)[%d] = %#llx, model %#llx", what, ull(id),
                     (int)i, ull(got[i]), ull((uint32_t)i < n ? want[i] : sentinel));
            return;
        }
}

void fzd_op_instantiate(fz_driver_t *d)
{
    d->op = "tes_instantiate";
    tes_entity_t pf = pick_prefab(d);
    const fz_mprefab_t *rec = fz_model_prefab(&d->m, pf);
    /* The members an instance copies: alive, and no destroy of them queued. */
    uint32_t mm = rec ? fz_model_prefab_copied(&d->m, rec) : 0;
    if (mm > FZ_MAX_MEMBERS)
        return; /* prefab_child keeps them smaller */
    int32_t cap;
    bool null_out = false;
    uint32_t r = fzd_draw(d, 100);
    if (r < 50) {
        cap = (int32_t)mm;
    } else if (r < 80) {
        cap = (int32_t)fzd_draw(d, mm + 3);
    } else if (r < 88) {
        cap = 0;
        null_out = true;
    } else if (r < 94) {
        cap = 1 + (int32_t)fzd_draw(d, 3);
        null_out = true;
    } else {
        cap = -1 - (int32_t)fzd_draw(d, 2);
    }
    int pst = prefab_status(d, pf, rec);
    int want = pst, alt = 1;
    if (cap < 0 || (cap > 0 && null_out)) {
        want = TES_ERR_INVALID;
        alt = pst != TES_OK ? pst : 1;
    } else if (pst == TES_OK && !fz_model_can_spawn(&d->m, mm)) {
        want = TES_ERR_FULL;
    }
    enum { NOUT = 2 * FZ_MAX_MEMBERS + 8 };
    tes_entity_t out[NOUT];
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (int i = 0; i < NOUT; i++)
        out[i] = sentinel;
    tes_instance_t expect = want == TES_OK ? fz_model_inst_peek(&d->m) : 0;
    tes_instance_t inst = tes_instantiate(d->w, pf, null_out ? NULL : out, cap);
    if (inst != expect) {
        fzd_fail(d, "tes_instantiate(%#llx, cap %d%s) = %#llx, model %#llx (error %d, model %d)",
                 ull(pf), (int)cap, null_out ? ", out NULL" : "", ull(inst), ull(expect),
                 tes_last_error(d->w), want);
        return;
    }
    int32_t written = want == TES_OK ? (cap < (int32_t)mm ? cap : (int32_t)mm) : 0;
    if (want != TES_OK) {
        fzd_check_error(d, want, alt);
        if (want == TES_ERR_FULL)
            d->res->full++;
    }
    tes_entity_t ents[2 * FZ_MAX_MEMBERS];
    if (want == TES_OK && !fz_model_instantiate(&d->m, rec, 1, deferred(d), NULL, ents)) {
        oom(d);
        return;
    }
    for (int32_t i = 0; i < NOUT && !fzd_failed(d); i++)
        if (out[i] != (i < written ? ents[i] : sentinel))
            fzd_fail(d, "cap %d: out[%d] = %#llx, model %#llx", (int)cap, (int)i, ull(out[i]),
                     ull(i < written ? ents[i] : sentinel));
    if (fzd_failed(d) || want != TES_OK)
        return;
    check_members(d, inst, ents, mm, "after tes_instantiate");
    ihist_add(d, inst);
    for (uint32_t i = 0; i < mm; i++)
        fzd_hist_add(d, ents[i]);
    d->res->instances++;
    d->res->inst_deferred += deferred(d);
}

void fzd_op_instantiate_n(fz_driver_t *d)
{
    d->op = "tes_instantiate_n";
    tes_entity_t pf = pick_prefab(d);
    const fz_mprefab_t *rec = fz_model_prefab(&d->m, pf);
    /* The members an instance copies: alive, and no destroy of them queued. */
    uint32_t mm = rec ? fz_model_prefab_copied(&d->m, rec) : 0;
    if (mm > FZ_MAX_MEMBERS)
        return;
    bool null_out = false;
    int32_t n;
    uint32_t r = fzd_draw(d, 100);
    if (r < 55) {
        n = 1 + (int32_t)fzd_draw(d, 3);
    } else if (r < 82) {
        n = (int32_t)fzd_draw(d, FZ_MAX_INST_N + 1);
    } else if (r < 88) {
        n = 0;
        null_out = fzd_draw(d, 2);
    } else if (r < 94) {
        n = fzd_draw(d, 4) ? -1 - (int32_t)fzd_draw(d, 2) : INT32_MIN;
    } else {
        n = 1 + (int32_t)fzd_draw(d, 3);
        null_out = true;
    }
    if (n > 2 && d->m.nlive >= d->cfg->pop_target)
        n = 1 + (int32_t)fzd_draw(d, 2);
    int pst = prefab_status(d, pf, rec);
    int want = pst, alt = 1;
    if (n < 0 || (n > 0 && null_out)) {
        want = TES_ERR_INVALID;
        alt = pst != TES_OK ? pst : 1;
    } else if (pst == TES_OK && n > 0 && !fz_model_can_spawn(&d->m, (uint32_t)n * mm)) {
        want = TES_ERR_FULL;
    }
    tes_instance_t out[FZ_MAX_INST_N + 2];
    const tes_instance_t sentinel = UINT64_C(0xA5A5A5A5A5A5A5A5);
    for (int i = 0; i < FZ_MAX_INST_N + 2; i++)
        out[i] = sentinel;
    int rc = tes_instantiate_n(d->w, pf, n, null_out ? NULL : out);
    fzd_check_status(d, rc, want, alt);
    if (rc == TES_ERR_FULL)
        d->res->full++;
    int32_t made = rc == TES_OK && n > 0 ? n : 0;
    tes_instance_t insts[FZ_MAX_INST_N];
    tes_entity_t ents[FZ_MAX_INST_N * FZ_MAX_MEMBERS];
    if (!fzd_failed(d) && made &&
        !fz_model_instantiate(&d->m, rec, (uint32_t)n, deferred(d), insts, ents)) {
        oom(d);
        return;
    }
    for (int32_t i = 0; i < FZ_MAX_INST_N + 2 && !fzd_failed(d); i++)
        if (out[i] != (i < made ? insts[i] : sentinel))
            fzd_fail(d, "n %d: out[%d] = %#llx, model %#llx", (int)n, (int)i, ull(out[i]),
                     ull(i < made ? insts[i] : sentinel));
    for (int32_t k = 0; k < made && !fzd_failed(d); k++) {
        check_members(d, insts[k], ents + (uint32_t)k * mm, mm, "after tes_instantiate_n");
        ihist_add(d, insts[k]);
        for (uint32_t i = 0; i < mm; i++)
            fzd_hist_add(d, ents[(uint32_t)k * mm + i]);
    }
    d->res->instances_n += (uint64_t)made;
    d->res->inst_deferred += deferred(d) ? (uint64_t)made : 0;
}

/* ------------------------------------------------------------------ instances */

void fzd_op_instance_destroy(fz_driver_t *d)
{
    d->op = "tes_instance_destroy";
    tes_instance_t id = pick_instance(d);
    fz_minst_t *in = fz_model_inst(&d->m, id);
    /* Its members' descendants die too: a strict world refuses a plan
     * with a member of another instance (checked at the call when
     * deferred, and again at the flush). */
    int want = fz_model_inst_destroy_status(&d->m, id);
    int rc = tes_instance_destroy(d->w, id);
    fzd_check_status(d, rc, want, 1);
    if (rc == TES_ERR_OWNED)
        d->res->owned++;
    if (fzd_failed(d) || rc != TES_OK)
        return;
    for (uint32_t i = 0; i < in->n; i++)
        fzd_hist_add(d, in->members[i]);
    ihist_add(d, id);
    if (deferred(d)) {
        /* Still alive until the flush, which destroys the members it has then. */
        if (!fz_model_queue(&d->m, FZ_Q_INST_DESTROY, TES_NULL, 0, TES_NULL)) {
            oom(d);
            return;
        }
        d->m.queue[d->m.nqueue - 1].inst = id;
        d->res->inst_destroy_deferred++;
        if (!tes_instance_alive(d->w, id))
            fzd_fail(d, "a deferred tes_instance_destroy(%#llx) ended it at once", ull(id));
        return;
    }
    (void)fz_model_inst_destroy(&d->m, id);
    d->res->inst_destroyed++;
    if (tes_instance_alive(d->w, id))
        fzd_fail(d, "instance %#llx alive after tes_instance_destroy", ull(id));
}

void fzd_op_detach(fz_driver_t *d)
{
    d->op = "tes_instance_detach";
    tes_entity_t e = pick_member(d, 60);
    const fz_mslot_t *s = fz_model_get(&d->m, e);
    int want = !s ? TES_ERR_STALE : !s->inst ? TES_ERR_INVALID : TES_OK;
    tes_instance_t was = fz_model_instance_of(&d->m, e);
    int rc = tes_instance_detach(d->w, e);
    fzd_check_status(d, rc, want, 1);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    fz_model_inst_unlink(&d->m, tes_entity_index(e)); /* at once, even deferred */
    d->res->detaches++;
    if (tes_instance_of(d->w, e) != 0)
        fzd_fail(d, "tes_instance_of(%#llx) after detach is not 0", ull(e));
    else if (tes_instance_alive(d->w, was) != (fz_model_inst(&d->m, was) != NULL))
        fzd_fail(d, "after detaching %#llx, tes_instance_alive(%#llx) = %d, model %d", ull(e),
                 ull(was), tes_instance_alive(d->w, was), fz_model_inst(&d->m, was) != NULL);
}

void fzd_op_adopt(fz_driver_t *d)
{
    d->op = "tes_instance_adopt";
    tes_instance_t id = pick_instance(d);
    tes_entity_t e = pick_member(d, 15);
    const fz_mslot_t *s = fz_model_get(&d->m, e);
    bool live = fz_model_inst(&d->m, id) != NULL;
    int want = TES_OK, alt = 1;
    if (!s || !live) {
        want = TES_ERR_STALE;
        if (s && s->inst)
            alt = TES_ERR_INVALID;
    } else if (s->inst) {
        want = TES_ERR_INVALID;
    }
    int rc = tes_instance_adopt(d->w, id, e);
    fzd_check_status(d, rc, want, alt);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    if (!fz_model_inst_link(&d->m, id, tes_entity_index(e)))
        oom(d);
    d->res->adopts++;
    if (tes_instance_of(d->w, e) != id)
        fzd_fail(d, "tes_instance_of(%#llx) after adopt = %#llx, want %#llx", ull(e),
                 ull(tes_instance_of(d->w, e)), ull(id));
}

/* tes_prefab_members, with a random cap / out. */
static void read_prefab_members(fz_driver_t *d)
{
    d->op = "tes_prefab_members";
    tes_entity_t pf = pick_prefab(d);
    const fz_mprefab_t *rec = fz_model_prefab(&d->m, pf);
    tes_entity_t want[2 * FZ_MAX_MEMBERS + 4];
    uint32_t n = 0;
    if (rec && rec->n <= 2 * FZ_MAX_MEMBERS + 4)
        n = fz_model_prefab_live(&d->m, rec, want);
    else if (rec)
        return; /* a long record: the full check covers it */
    uint32_t r = fzd_draw(d, 100);
    bool null_out = r >= 80 && r < 95;
    int32_t cap = r < 50 ? (int32_t)n : r < 80 ? (int32_t)fzd_draw(d, n + 3)
                : r < 88 ? 0 : r < 95 ? 1 + (int32_t)fzd_draw(d, 2) : -1;
    int32_t expect = !rec || cap < 0 || (cap > 0 && null_out) ? -1 : (int32_t)n;
    enum { NOUT = 2 * FZ_MAX_MEMBERS + 8 };
    tes_entity_t got[NOUT];
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (int i = 0; i < NOUT; i++)
        got[i] = sentinel;
    int32_t c = fzd_prefab_members(d, pf, null_out ? NULL : got, cap);
    if (c != expect) {
        fzd_fail(d, "tes_prefab_members(%#llx, cap %d%s) = %d, model %d", ull(pf), (int)cap,
                 null_out ? ", out NULL" : "", (int)c, (int)expect);
        return;
    }
    int32_t written = expect < 0 ? 0 : cap < expect ? cap : expect;
    for (int32_t i = 0; i < NOUT; i++)
        if (got[i] != (i < written ? want[i] : sentinel)) {
            fzd_fail(d, "tes_prefab_members(%#llx, cap %d)[%d] = %#llx, model %#llx", ull(pf),
                     (int)cap, (int)i, ull(got[i]), ull(i < written ? want[i] : sentinel));
            return;
        }
}

/* tes_instance_members, with a random cap / out. */
static void read_instance_members(fz_driver_t *d)
{
    d->op = "tes_instance_members";
    tes_instance_t id = pick_instance(d);
    const fz_minst_t *in = fz_model_inst(&d->m, id);
    uint32_t n = in ? in->n : 0;
    uint32_t r = fzd_draw(d, 100);
    bool null_out = r >= 80 && r < 95;
    int32_t cap = r < 50 ? (int32_t)n : r < 80 ? (int32_t)fzd_draw(d, n + 3)
                : r < 88 ? 0 : r < 95 ? 1 + (int32_t)fzd_draw(d, 2) : -1 - (int32_t)fzd_draw(d, 2);
    int32_t expect = !in || cap < 0 || (cap > 0 && null_out) ? -1 : (int32_t)n;
    tes_entity_t *got = malloc(((size_t)n + 8) * sizeof *got);
    if (!got) {
        oom(d);
        return;
    }
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (uint32_t i = 0; i < n + 8; i++)
        got[i] = sentinel;
    int32_t c = fzd_instance_members(d, id, null_out ? NULL : got, cap);
    if (c != expect) {
        fzd_fail(d, "tes_instance_members(%#llx, cap %d%s) = %d, model %d", ull(id), (int)cap,
                 null_out ? ", out NULL" : "", (int)c, (int)expect);
    } else {
        int32_t written = expect < 0 ? 0 : cap < expect ? cap : expect;
        for (int32_t i = 0; i < (int32_t)n + 8; i++)
            if (got[i] != (i < written ? in->members[i] : sentinel)) {
                fzd_fail(d, "tes_instance_members(%#llx, cap %d)[%d] = %#llx, model %#llx", ull(id),
                         (int)cap, (int)i, ull(got[i]), ull(i < written ? in->members[i] : sentinel));
                break;
            }
    }
    free(got);
}

void fzd_op_instance_read(fz_driver_t *d)
{
    switch (fzd_draw(d, 4)) {
    case 0: {
        d->op = "tes_instance_of";
        tes_entity_t e = pick_member(d, 50);
        tes_instance_t want = fz_model_instance_of(&d->m, e);
        tes_instance_t got = tes_instance_of(d->w, e);
        if (got != want)
            fzd_fail(d, "tes_instance_of(%#llx) = %#llx, model %#llx", ull(e), ull(got), ull(want));
        break;
    }
    case 1: {
        d->op = "tes_instance_alive";
        tes_instance_t id = pick_instance(d);
        bool want = fz_model_inst(&d->m, id) != NULL;
        if (tes_instance_alive(d->w, id) != want)
            fzd_fail(d, "tes_instance_alive(%#llx) = %d, model %d", ull(id), !want, want);
        break;
    }
    case 2:
        read_instance_members(d);
        break;
    default:
        read_prefab_members(d);
        break;
    }
}

/* ------------------------------------------------------------------ full check */

/* Every entity reference a live component holds names an entity exactly
 * when the model says it is alive: one that died never comes back. */
static void check_refs(fz_driver_t *d, uint32_t index)
{
    const fz_mslot_t *s = &d->m.slots[index];
    const int ks[2] = {FZ_C_TREF, FZ_C_SREF};
    for (int j = 0; j < 2; j++) {
        int k = ks[j];
        if (!fz_model_has(&d->m, index, k))
            continue;
        for (uint32_t f = 0; f < fz_comps[k].nrefs; f++) {
            tes_entity_t ref;
            memcpy(&ref, s->val[k] + fz_comps[k].ref_off[f], sizeof ref);
            bool want = fz_model_alive(&d->m, ref);
            if (tes_alive(d->w, ref) != want) {
                fzd_fail(d, "%#llx holds a reference (%s) to %#llx: tes_alive %d, model %d",
                         ull(fz_model_handle(&d->m, index)), fz_comps[k].name, ull(ref), !want,
                         want);
                return;
            }
        }
    }
}

void fzd_check_lifecycle(fz_driver_t *d)
{
    d->op = "full check (lifecycle)";
    const fz_model_t *m = &d->m;
    for (uint32_t i = 0; i < m->ninsts && !fzd_failed(d); i++) {
        const fz_minst_t *in = &m->insts[i];
        tes_instance_t id = tes_entity_make(i, in->gen);
        if (!in->alive) {
            if (tes_instance_alive(d->w, id) || tes_instance_alive(d->w, tes_entity_make(i, in->gen - 1)) ||
                fzd_instance_members(d, tes_entity_make(i, in->gen - 1), NULL, 0) != -1)
                fzd_fail(d, "instance slot %u (generation %u%s) is alive, model: dead", i, in->gen,
                         in->retired ? ", retired" : "");
            continue;
        }
        if (!tes_instance_alive(d->w, id) || tes_instance_alive(d->w, tes_entity_make(i, in->gen + 1))) {
            fzd_fail(d, "tes_instance_alive(%#llx) disagrees with the model (alive)", ull(id));
            return;
        }
        tes_entity_t *got = malloc(((size_t)in->n + 1) * sizeof *got);
        if (!got) {
            oom(d);
            return;
        }
        int32_t n = fzd_instance_members(d, id, got, (int32_t)in->n + 1);
        if (n != (int32_t)in->n || memcmp(got, in->members, (size_t)in->n * sizeof *got))
            fzd_fail(d, "tes_instance_members(%#llx): %d members, model %u (or another order)",
                     ull(id), (int)n, in->n);
        for (uint32_t j = 0; j < in->n && !fzd_failed(d); j++)
            if (tes_instance_of(d->w, in->members[j]) != id)
                fzd_fail(d, "tes_instance_of(%#llx) = %#llx, model %#llx", ull(in->members[j]),
                         ull(tes_instance_of(d->w, in->members[j])), ull(id));
        free(got);
    }
    if (fzd_failed(d))
        return;
    if (tes_instance_alive(d->w, 0) || tes_instance_alive(d->w, tes_entity_make(m->ninsts, 1))) {
        fzd_fail(d, "instance 0 or a never-issued instance id is alive");
        return;
    }
    for (uint32_t i = 0; i < m->nlive && !fzd_failed(d); i++) {
        uint32_t index = m->live[i];
        tes_entity_t e = fz_model_handle(m, index);
        if (tes_instance_of(d->w, e) != fz_model_instance_of(m, e)) {
            fzd_fail(d, "tes_instance_of(%#llx) = %#llx, model %#llx", ull(e),
                     ull(tes_instance_of(d->w, e)), ull(fz_model_instance_of(m, e)));
            return;
        }
        check_refs(d, index);
    }
    for (uint32_t i = 0; i < m->nprefabs && !fzd_failed(d); i++) {
        const fz_mprefab_t *p = &m->prefabs[i];
        tes_entity_t root = p->members[0];
        if (!fz_model_alive(m, root)) {
            if (fzd_prefab_members(d, root, NULL, 0) != -1)
                fzd_fail(d, "tes_prefab_members of dead root %#llx is not -1", ull(root));
            continue;
        }
        tes_entity_t *want = malloc((size_t)p->n * 2 * sizeof *want);
        if (!want) {
            oom(d);
            return;
        }
        tes_entity_t *got = want + p->n;
        uint32_t n = fz_model_prefab_live(m, p, want);
        int32_t c = fzd_prefab_members(d, root, got, (int32_t)p->n);
        if (c != (int32_t)n || memcmp(got, want, (size_t)n * sizeof *got))
            fzd_fail(d, "tes_prefab_members(%#llx) = %d, model %u (or another order)", ull(root),
                     (int)c, n);
        free(want);
    }
}
