/*
 * The op loop of the differential fuzzer (see driver.h). Each op draws its
 * arguments from the source, computes what the model says must happen
 * (status, handle, value), calls the library, compares, and only then
 * applies the change to the model. Arguments are biased towards the
 * interesting: mostly live entities, but also destroyed handles from a
 * history ring, never-issued and null handles, and ids that name no
 * component; where two errors apply at once (a stale entity and an unknown
 * component) either status is accepted, since the header does not order
 * them.
 *
 * After every op: entity count, hook counters against the model, ctor - dtor
 * against the model's live values, and any failure a hook recorded. Every
 * check_every ops and at the end: every slot, every component value, stale
 * handles, stats, and tes__world_check.
 */
#include "fuzz/driver.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/model.h"
#include "fuzz/track.h"
#include "world/check.h"

/* ------------------------------------------------------------------ source */

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

void fz_source_seed(fz_source_t *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->state = seed;
}

void fz_source_bytes(fz_source_t *s, const uint8_t *data, size_t size)
{
    memset(s, 0, sizeof *s);
    s->data = data ? data : (const uint8_t *)"";
    s->size = data ? size : 0;
}

uint32_t fz_draw(fz_source_t *s, uint32_t bound)
{
    if (bound <= 1)
        return 0;
    if (!s->data) {
        s->state += UINT64_C(0x9E3779B97F4A7C15);
        uint64_t x = mix64(s->state);
        return (uint32_t)(x % bound);
    }
    /* Byte mode: as few bytes as the bound needs, so that libFuzzer's
     * mutations map to small, local changes of the op sequence. */
    uint32_t nbytes = bound <= 0x100u ? 1 : bound <= 0x10000u ? 2 : 4;
    uint32_t x = 0;
    for (uint32_t i = 0; i < nbytes; i++) {
        if (s->pos >= s->size) {
            s->exhausted = true;
            return 0;
        }
        x = (x << 8) | s->data[s->pos++];
    }
    return x % bound;
}

/* ------------------------------------------------------------------ config */

void fz_config_variant(uint32_t variant, fz_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->check_every = 500;
    switch (variant % FZ_VARIANTS) {
    case 0: /* defaults: long-lived slots, moderate population */
        cfg->name = "default";
        cfg->pop_target = 300;
        break;
    case 1: /* slots retire after 3 generations: retirement under churn */
        cfg->name = "gen3";
        cfg->generation_limit = 3;
        cfg->pop_target = 100;
        break;
    case 2: /* a tiny id space that batches keep running into */
        cfg->name = "cap64";
        cfg->entity_limit = 64;
        cfg->pop_target = 56;
        break;
    default: /* both limits: the id space is used up for good mid-run
              * (at 125k ops per seed, after about half of them) */
        cfg->name = "gen4cap2000";
        cfg->generation_limit = 4;
        cfg->entity_limit = 2000;
        cfg->pop_target = 60;
        break;
    }
}

/* ------------------------------------------------------------------ driver */

#define HIST 256
#define MAX_SPAWN_N 80

typedef struct fz_driver {
    tes_world_t *w;
    fz_model_t m;
    fz_tracker_t t;
    tes_comp_t ids[FZ_NCOMP];
    tes_comp_t max_id;
    fz_source_t *src;
    const fz_config_t *cfg;
    uint64_t step;
    const char *op;
    tes_entity_t hist[HIST]; /* issued handles, some since destroyed */
    uint32_t hist_n, hist_pos;
    int last_error; /* what tes_last_error must say: successes keep it */
    fz_result_t *res;
} fz_driver_t;

static void fail(fz_driver_t *d, const char *fmt, ...)
{
    if (d->res->diverged)
        return;
    d->res->diverged = true;
    d->res->step = d->step;
    int n = snprintf(d->res->msg, sizeof d->res->msg, "%s: ", d->op ? d->op : "?");
    if (n < 0)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->res->msg + n, sizeof d->res->msg - (size_t)n, fmt, ap);
    va_end(ap);
}

static bool failed(const fz_driver_t *d) { return d->res->diverged; }

static uint32_t draw(fz_driver_t *d, uint32_t bound) { return fz_draw(d->src, bound); }

static unsigned long long ull(uint64_t x) { return (unsigned long long)x; }

static void hist_add(fz_driver_t *d, tes_entity_t e)
{
    d->hist[d->hist_pos] = e;
    d->hist_pos = (d->hist_pos + 1) % HIST;
    if (d->hist_n < HIST)
        d->hist_n++;
}

/* An entity argument: mostly live, sometimes stale or never issued. */
static tes_entity_t pick_entity(fz_driver_t *d)
{
    const fz_model_t *m = &d->m;
    uint32_t r = draw(d, 100);
    if (r < 80 && m->nlive)
        return fz_model_handle(m, m->live[draw(d, m->nlive)]);
    if (r < 93 && d->hist_n)
        return d->hist[draw(d, d->hist_n)];
    uint32_t idx = m->nslots ? draw(d, m->nslots) : 0;
    uint32_t gen = m->nslots ? m->slots[idx].gen : 1;
    switch (draw(d, 7)) {
    case 0:
        return TES_NULL;
    case 1: /* an index never issued */
        return tes_entity_make(m->nslots + draw(d, 4), 1 + draw(d, 2));
    case 2: /* a generation not issued yet */
        return tes_entity_make(idx, gen + 1 + draw(d, 2));
    case 3:
        return tes_entity_make(idx, TES_TOMBSTONE);
    case 4:
        return tes_entity_make(TES_NULL_INDEX, draw(d, 3));
    case 5:
        return tes_entity_make(idx, 0);
    default: /* current generation: alive, or the next one a free slot issues */
        return tes_entity_make(idx, gen);
    }
}

/* A component argument: k in [0, FZ_NCOMP), or -1 with *id naming nothing. */
static int pick_comp(fz_driver_t *d, tes_comp_t *id)
{
    if (draw(d, 100) < 96) {
        int k = (int)draw(d, FZ_NCOMP);
        *id = d->ids[k];
        return k;
    }
    switch (draw(d, 3)) {
    case 0:
        *id = 0;
        break;
    case 1:
        *id = d->max_id + 1 + draw(d, 4);
        break;
    default:
        *id = UINT32_C(0xFFFFFFFF) - draw(d, 2);
        break;
    }
    return -1;
}

/* The status an (entity, component) call must return; *alt is a second
 * acceptable one when two errors apply at once. */
static int expect2(bool alive, bool comp_ok, int *alt)
{
    *alt = 1; /* no alternative: no status is positive */
    if (alive && comp_ok)
        return TES_OK;
    if (!alive && !comp_ok) {
        *alt = TES_ERR_INVALID;
        return TES_ERR_STALE;
    }
    return alive ? TES_ERR_INVALID : TES_ERR_STALE;
}

static void check_status(fz_driver_t *d, int got, int want, int alt)
{
    if (got != want && got != alt) {
        fail(d, "returned %d (%s), model says %d (%s)", got, tes_strerror(got), want,
             tes_strerror(want));
        return;
    }
    if (got != TES_OK && tes_last_error(d->w) != got)
        fail(d, "returned %d but tes_last_error is %d", got, tes_last_error(d->w));
    if (got != TES_OK)
        d->last_error = got;
}

/* For calls returning NULL / TES_NULL on failure. */
static void check_error(fz_driver_t *d, int want, int alt)
{
    int got = tes_last_error(d->w);
    if (got != want && got != alt)
        fail(d, "failed with tes_last_error %d (%s), model says %d (%s)", got, tes_strerror(got),
             want, tes_strerror(want));
    d->last_error = got;
}

static void hex(char *out, const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
    out[2 * n] = 0;
}

/* Compares the value at ptr (from tes_get / tes_ensure) with the model's. */
static void check_value(fz_driver_t *d, uint32_t index, int k, const void *ptr, const char *what)
{
    const fz_comp_info_t *c = &fz_comps[k];
    fz_mslot_t *s = &d->m.slots[index];
    if (!ptr) {
        fail(d, "%s(%#llx, %s) is NULL but the model has a value", what,
             ull(fz_model_handle(&d->m, index)), c->name);
        return;
    }
    if ((uintptr_t)ptr % c->align) {
        fail(d, "%s(%s) = %p is not aligned to %u", what, c->name, ptr, c->align);
        return;
    }
    uint32_t off = fz_payload_offset(k);
    if (memcmp((const uint8_t *)ptr + off, s->val[k] + off, c->size - off)) {
        char a[2 * FZ_MAXSIZE + 1], b[2 * FZ_MAXSIZE + 1];
        hex(a, (const uint8_t *)ptr + off, c->size - off);
        hex(b, s->val[k] + off, c->size - off);
        fail(d, "%s(%#llx, %s): value %s, model %s", what, ull(fz_model_handle(&d->m, index)),
             c->name, a, b);
        return;
    }
    if (c->tracked && !fz_tracker_valid(&d->t, k, ptr)) {
        fail(d, "%s(%s) = %p does not point at a live constructed value", what, c->name, ptr);
        return;
    }
    if (c->stable) {
        if (!s->stable_ptr[k])
            s->stable_ptr[k] = ptr;
        else if (s->stable_ptr[k] != ptr)
            fail(d, "%s(%#llx, %s): stable component moved from %p to %p", what,
                 ull(fz_model_handle(&d->m, index)), c->name, s->stable_ptr[k], ptr);
    }
}

/* A value derived from the step counter (tracked components: serial 0, which
 * the copy hook reads as "a user value"). */
static void make_value(fz_driver_t *d, int k, uint8_t out[FZ_MAXSIZE])
{
    for (uint32_t i = 0; i < FZ_MAXSIZE; i += 8) {
        uint64_t x = mix64(d->step * 64u + (uint64_t)k * 4u + i / 8u);
        memcpy(out + i, &x, 8);
    }
    if (fz_comps[k].tracked)
        memset(out, 0, FZ_TRACK_HDR);
}

static int cmp_comp(const void *a, const void *b)
{
    tes_comp_t x = *(const tes_comp_t *)a, y = *(const tes_comp_t *)b;
    return x < y ? -1 : x > y;
}

/* The model's component ids of a slot, ascending. */
static int32_t model_comps(const fz_driver_t *d, uint32_t index, tes_comp_t out[FZ_NCOMP])
{
    int32_t n = 0;
    for (int k = 0; k < FZ_NCOMP; k++)
        if (fz_model_has(&d->m, index, k))
            out[n++] = d->ids[k];
    qsort(out, (size_t)n, sizeof *out, cmp_comp);
    return n;
}

static void check_components_of(fz_driver_t *d, tes_entity_t e, int32_t cap, bool null_out)
{
    fz_mslot_t *s = fz_model_get(&d->m, e);
    tes_comp_t want[FZ_NCOMP];
    int32_t nwant = s ? model_comps(d, tes_entity_index(e), want) : -1;
    if (null_out && cap > 0)
        nwant = -1; /* out NULL with cap > 0 is invalid */
    tes_comp_t got[FZ_NCOMP + 4];
    const tes_comp_t sentinel = UINT32_C(0xA5A5A5A5);
    for (int i = 0; i < FZ_NCOMP + 4; i++)
        got[i] = sentinel;
    int32_t n = tes_components_of(d->w, e, null_out ? NULL : got, cap);
    if (n != nwant) {
        fail(d, "tes_components_of(%#llx, cap %d) = %d, model %d", ull(e), (int)cap, (int)n,
             (int)nwant);
        return;
    }
    if (null_out || n < 0)
        return;
    int32_t written = n < cap ? n : cap;
    for (int32_t i = 0; i < written; i++)
        if (got[i] != want[i]) {
            fail(d, "tes_components_of(%#llx)[%d] = %u, model %u", ull(e), (int)i, got[i],
                 want[i]);
            return;
        }
    for (int32_t i = written; i < FZ_NCOMP + 4; i++)
        if (got[i] != sentinel) {
            fail(d, "tes_components_of(%#llx, cap %d) wrote past %d entries", ull(e), (int)cap,
                 (int)written);
            return;
        }
}

/* ------------------------------------------------------------------ ops */

static void op_spawn(fz_driver_t *d)
{
    d->op = "tes_spawn";
    bool can = fz_model_can_spawn(&d->m, 1);
    tes_entity_t want = can ? fz_model_peek_spawn(&d->m) : TES_NULL;
    tes_entity_t e = tes_spawn(d->w);
    if (e != want) {
        fail(d, "returned %#llx, model %#llx", ull(e), ull(want));
        return;
    }
    if (!can) {
        check_error(d, TES_ERR_FULL, 1);
        d->res->full++;
        return;
    }
    if (fz_model_spawn(&d->m) != e)
        fail(d, "model out of memory");
    hist_add(d, e);
}

static void op_spawn_n(fz_driver_t *d)
{
    d->op = "tes_spawn_n";
    /* Big batches only while the population is below its target, or they
     * would outgrow every destroy. */
    uint32_t r = d->m.nlive < d->cfg->pop_target ? draw(d, 100) : 30 * draw(d, 2);
    int32_t n = r < 60 ? (int32_t)draw(d, 5)
                : r < 90 ? 5 + (int32_t)draw(d, 16)
                : r < 98 ? 21 + (int32_t)draw(d, MAX_SPAWN_N - 21)
                         : -1 - (int32_t)draw(d, 3);
    tes_comp_t comps[FZ_NCOMP + 1];
    int ks[FZ_NCOMP];
    int32_t ncomps = 0;
    uint32_t want_n = draw(d, 4);
    uint32_t used = 0;
    for (uint32_t i = 0; i < want_n; i++) {
        int k = (int)draw(d, FZ_NCOMP);
        if (used & (1u << k))
            continue;
        used |= 1u << k;
        ks[ncomps] = k;
        comps[ncomps++] = d->ids[k];
    }
    bool invalid = n < 0;
    bool null_out = false;
    if (draw(d, 100) < 4) {
        switch (draw(d, 4)) {
        case 0:
            if (ncomps > 0) {
                comps[ncomps++] = comps[0]; /* repeated */
                invalid = true;
            }
            break;
        case 1:
            comps[ncomps++] = d->max_id + 1 + draw(d, 3); /* unknown */
            invalid = true;
            break;
        case 2:
            ncomps = -1;
            invalid = true;
            break;
        default:
            if (n > 0) {
                null_out = true;
                invalid = true;
            }
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
    tes_entity_t out[MAX_SPAWN_N + 1];
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (int i = 0; i <= MAX_SPAWN_N; i++)
        out[i] = sentinel;
    int rc = tes_spawn_n(d->w, n, ncomps >= 0 ? comps : NULL, ncomps, null_out ? NULL : out);
    check_status(d, rc, want, alt);
    if (rc == TES_ERR_FULL)
        d->res->full++;
    if (failed(d)) {
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
    if (failed(d) || rc != TES_OK)
        return;
    for (int32_t i = 0; i < n; i++) {
        tes_entity_t e = fz_model_spawn(&d->m);
        if (out[i] != e) {
            fail(d, "n=%d ncomps=%d: out[%d] = %#llx, model %#llx", (int)n, (int)ncomps, (int)i,
                 ull(out[i]), ull(e));
            return;
        }
        for (int32_t j = 0; j < ncomps; j++)
            fz_model_add(&d->m, tes_entity_index(e), ks[j]);
        hist_add(d, e);
    }
    if (out[n] != sentinel)
        fail(d, "wrote past out[%d]", (int)n);
}

static void op_destroy(fz_driver_t *d)
{
    d->op = "tes_destroy";
    tes_entity_t e = pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    int rc = tes_destroy(d->w, e);
    check_status(d, rc, alive ? TES_OK : TES_ERR_STALE, 1);
    if (failed(d) || !alive)
        return;
    fz_model_destroy(&d->m, tes_entity_index(e));
    hist_add(d, e);
}

static void op_alive(fz_driver_t *d)
{
    d->op = "tes_alive";
    tes_entity_t e = pick_entity(d);
    bool want = fz_model_alive(&d->m, e);
    if (tes_alive(d->w, e) != want)
        fail(d, "tes_alive(%#llx) = %d, model %d", ull(e), !want, want);
}

static void op_add(fz_driver_t *d)
{
    d->op = "tes_add";
    tes_entity_t e = pick_entity(d);
    tes_comp_t id;
    int k = pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    int alt;
    int want = expect2(alive, k >= 0, &alt);
    int rc = tes_add(d->w, e, id);
    check_status(d, rc, want, alt);
    if (!failed(d) && rc == TES_OK)
        fz_model_add(&d->m, tes_entity_index(e), k);
}

static void op_set(fz_driver_t *d)
{
    d->op = "tes_set";
    tes_entity_t e = pick_entity(d);
    tes_comp_t id;
    int k = pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    uint8_t value[FZ_MAXSIZE];
    const void *arg = value;
    make_value(d, k >= 0 ? k : 0, value);
    int alt;
    int want = expect2(alive, k >= 0, &alt);
    bool data = k >= 0 && fz_comps[k].size > 0;
    /* NULL is a bad argument for a data component and ignored for a tag. */
    if (draw(d, 100) < (data ? 4u : 50u)) {
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
    check_status(d, rc, want, alt);
    if (failed(d) || rc != TES_OK)
        return;
    uint32_t index = tes_entity_index(e);
    fz_model_add(&d->m, index, k);
    if (data) {
        fz_model_write(&d->m, index, k, value);
        if (fz_comps[k].tracked)
            d->m.expect[k].copy++;
    }
    d->m.expect[k].on_set++;
}

static void op_ensure(fz_driver_t *d)
{
    d->op = "tes_ensure";
    tes_entity_t e = pick_entity(d);
    tes_comp_t id;
    int k = pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    bool data = k >= 0 && fz_comps[k].size > 0;
    int alt;
    int want = expect2(alive, data, &alt);
    void *p = tes_ensure(d->w, e, id);
    if (want != TES_OK) {
        if (p)
            fail(d, "tes_ensure(%#llx, %u) = %p, model says error %d", ull(e), id, p, want);
        else
            check_error(d, want, alt);
        return;
    }
    uint32_t index = tes_entity_index(e);
    if (!p) {
        fail(d, "tes_ensure(%#llx, %s) = NULL (error %d)", ull(e), fz_comps[k].name,
             tes_last_error(d->w));
        return;
    }
    fz_model_add(&d->m, index, k);
    check_value(d, index, k, p, "tes_ensure");
    if (!failed(d) && draw(d, 2)) {
        uint8_t value[FZ_MAXSIZE];
        make_value(d, k, value);
        uint32_t off = fz_payload_offset(k);
        memcpy((uint8_t *)p + off, value + off, fz_comps[k].size - off);
        fz_model_write(&d->m, index, k, value);
    }
}

static void op_remove(fz_driver_t *d)
{
    d->op = "tes_remove";
    tes_entity_t e = pick_entity(d);
    tes_comp_t id;
    int k = pick_comp(d, &id);
    bool alive = fz_model_alive(&d->m, e);
    int alt;
    int want = expect2(alive, k >= 0, &alt);
    int rc = tes_remove(d->w, e, id);
    check_status(d, rc, want, alt);
    if (!failed(d) && rc == TES_OK)
        fz_model_remove(&d->m, tes_entity_index(e), k);
}

static void op_has(fz_driver_t *d)
{
    d->op = "tes_has";
    tes_entity_t e = pick_entity(d);
    tes_comp_t id;
    int k = pick_comp(d, &id);
    bool want = k >= 0 && fz_model_alive(&d->m, e) && fz_model_has(&d->m, tes_entity_index(e), k);
    if (tes_has(d->w, e, id) != want)
        fail(d, "tes_has(%#llx, %u) = %d, model %d", ull(e), id, !want, want);
}

static void op_get(fz_driver_t *d)
{
    tes_entity_t e = pick_entity(d);
    tes_comp_t id;
    int k = pick_comp(d, &id);
    bool mut = draw(d, 2);
    d->op = mut ? "tes_get_mut" : "tes_get";
    bool want = k >= 0 && fz_comps[k].size && fz_model_alive(&d->m, e) &&
                fz_model_has(&d->m, tes_entity_index(e), k);
    void *pm = mut ? tes_get_mut(d->w, e, id) : NULL;
    const void *p = mut ? pm : tes_get(d->w, e, id);
    if (!want) {
        if (p)
            fail(d, "(%#llx, %u) = %p, model has no value", ull(e), id, p);
        return;
    }
    uint32_t index = tes_entity_index(e);
    check_value(d, index, k, p, d->op);
    /* Writing through tes_get_mut must reach the stored value. */
    if (!failed(d) && mut && draw(d, 2)) {
        uint8_t value[FZ_MAXSIZE];
        make_value(d, k, value);
        uint32_t off = fz_payload_offset(k);
        memcpy((uint8_t *)pm + off, value + off, fz_comps[k].size - off);
        fz_model_write(&d->m, index, k, value);
    }
}

static void op_clear(fz_driver_t *d)
{
    d->op = "tes_clear";
    tes_entity_t e = pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    int rc = tes_clear(d->w, e);
    check_status(d, rc, alive ? TES_OK : TES_ERR_STALE, 1);
    if (!failed(d) && alive)
        fz_model_clear(&d->m, tes_entity_index(e));
}

static void op_clone(fz_driver_t *d)
{
    d->op = "tes_clone";
    tes_entity_t e = pick_entity(d);
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
        fail(d, "tes_clone(%#llx) = %#llx, model %#llx", ull(e), ull(c), ull(expect));
        return;
    }
    if (want != TES_OK) {
        check_error(d, want, alt);
        if (tes_last_error(d->w) == TES_ERR_FULL)
            d->res->full++;
        return;
    }
    uint32_t src = tes_entity_index(e);
    if (fz_model_spawn(&d->m) != c) {
        fail(d, "model out of memory");
        return;
    }
    uint32_t dst = tes_entity_index(c);
    for (int k = 0; k < FZ_NCOMP; k++) {
        if (!fz_model_has(&d->m, src, k))
            continue;
        fz_model_add(&d->m, dst, k);
        if (fz_comps[k].size) {
            fz_model_write(&d->m, dst, k, d->m.slots[src].val[k]);
            if (fz_comps[k].tracked)
                d->m.expect[k].copy++;
        }
    }
    hist_add(d, c);
}

static void op_components_of(fz_driver_t *d)
{
    d->op = "tes_components_of";
    tes_entity_t e = pick_entity(d);
    uint32_t r = draw(d, 100);
    if (r < 5)
        check_components_of(d, e, 0, true);
    else if (r < 8)
        check_components_of(d, e, 1 + (int32_t)draw(d, 4), true);
    else
        check_components_of(d, e, (int32_t)draw(d, FZ_NCOMP + 3), false);
}

static void op_disable(fz_driver_t *d)
{
    bool on = draw(d, 2);
    d->op = on ? "tes_enable" : "tes_disable";
    tes_entity_t e = pick_entity(d);
    bool alive = fz_model_alive(&d->m, e);
    int rc = on ? tes_enable(d->w, e) : tes_disable(d->w, e);
    check_status(d, rc, alive ? TES_OK : TES_ERR_STALE, 1);
    if (failed(d) || !alive)
        return;
    if (on)
        fz_model_remove(&d->m, tes_entity_index(e), FZ_C_DISABLED);
    else
        fz_model_add(&d->m, tes_entity_index(e), FZ_C_DISABLED);
}

static void op_enabled(fz_driver_t *d)
{
    d->op = "tes_enabled";
    tes_entity_t e = pick_entity(d);
    bool want = fz_model_alive(&d->m, e) &&
                !fz_model_has(&d->m, tes_entity_index(e), FZ_C_DISABLED);
    if (tes_enabled(d->w, e) != want)
        fail(d, "tes_enabled(%#llx) = %d, model %d", ull(e), !want, want);
}

static void check_stats(fz_driver_t *d)
{
    tes_world_stats_t st;
    if (tes_world_stats(d->w, &st) != TES_OK) {
        fail(d, "tes_world_stats failed");
        return;
    }
    const fz_model_t *m = &d->m;
    if (st.entities_alive != m->nlive || st.entity_slots != m->nslots ||
        st.entities_retired != m->retired || st.entities_free != m->nfree)
        fail(d, "stats alive/slots/retired/free = %u/%u/%u/%u, model %u/%u/%u/%u",
             st.entities_alive, st.entity_slots, st.entities_retired, st.entities_free, m->nlive,
             m->nslots, m->retired, m->nfree);
    else if (st.components != 2u + (FZ_NCOMP - 1u))
        fail(d, "stats components = %u, want %u", st.components, 2u + (FZ_NCOMP - 1u));
}

static void op_stats(fz_driver_t *d)
{
    d->op = "tes_world_stats";
    check_stats(d);
    tes_world_stats_t st;
    if (tes_world_stats(NULL, &st) != TES_ERR_INVALID || tes_world_stats(d->w, NULL) != TES_ERR_INVALID)
        fail(d, "NULL argument not rejected with TES_ERR_INVALID");
}

/* ------------------------------------------------------------------ checks */

/* After every op: cheap global agreement. */
static void check_step(fz_driver_t *d)
{
    if (failed(d))
        return;
    if (d->t.failed) {
        fail(d, "hook: %s", d->t.msg);
        return;
    }
    /* A hook's refused structural call is a failed call too. */
    if (d->t.probed) {
        d->last_error = TES_ERR_BUSY;
        d->t.probed = false;
    }
    if (tes_last_error(d->w) != d->last_error) {
        fail(d, "tes_last_error is %d, want %d (successful calls must not change it)",
             tes_last_error(d->w), d->last_error);
        return;
    }
    int32_t count = tes_entity_count(d->w);
    if (count < 0 || (uint32_t)count != d->m.nlive) {
        fail(d, "tes_entity_count = %d, model %u", (int)count, d->m.nlive);
        return;
    }
    for (int k = 0; k < FZ_NCOMP; k++) {
        const fz_counts_t *c = &d->t.counts[k];
        const fz_hook_expect_t *x = &d->m.expect[k];
        const char *name = fz_comps[k].name;
        if (fz_comps[k].tracked) {
            if (c->ctor - c->dtor != d->m.values[k]) {
                fail(d, "%s: ctor %llu - dtor %llu != %u live values in the model", name,
                     ull(c->ctor), ull(c->dtor), d->m.values[k]);
                return;
            }
            if (c->copy != x->copy) {
                fail(d, "%s: %llu copy hook calls, model %llu", name, ull(c->copy), ull(x->copy));
                return;
            }
        }
        if (fz_comps[k].tracked || fz_comps[k].observed) {
            if (c->on_add != x->on_add || c->on_set != x->on_set || c->on_remove != x->on_remove) {
                fail(d, "%s: on_add/on_set/on_remove fired %llu/%llu/%llu times, model %llu/%llu/%llu",
                     name, ull(c->on_add), ull(c->on_set), ull(c->on_remove), ull(x->on_add),
                     ull(x->on_set), ull(x->on_remove));
                return;
            }
        }
    }
}

/* Every slot, every value, stale handles, stats, and the library's own
 * invariant check. */
static void check_full(fz_driver_t *d)
{
    if (failed(d))
        return;
    d->op = "full check";
    const fz_model_t *m = &d->m;
    for (uint32_t i = 0; i < m->nslots && !failed(d); i++) {
        const fz_mslot_t *s = &m->slots[i];
        tes_entity_t e = tes_entity_make(i, s->gen);
        if (tes_alive(d->w, e) != s->alive) {
            fail(d, "tes_alive(%#llx) = %d, model %d (retired %d)", ull(e), !s->alive, s->alive,
                 s->retired);
            return;
        }
        tes_entity_t stale[4] = {tes_entity_make(i, s->gen - 1), tes_entity_make(i, s->gen + 1),
                                 tes_entity_make(i, TES_TOMBSTONE), tes_entity_make(i, 0)};
        for (int j = 0; j < 4; j++)
            if (tes_alive(d->w, stale[j])) {
                fail(d, "stale handle %#llx is alive", ull(stale[j]));
                return;
            }
        if (!s->alive) {
            if (tes_has(d->w, e, d->ids[FZ_C_T4]) || tes_components_of(d->w, e, NULL, 0) != -1)
                fail(d, "dead entity %#llx still answers queries", ull(e));
            continue;
        }
        for (int k = 0; k < FZ_NCOMP; k++) {
            bool has = fz_model_has(m, i, k);
            if (tes_has(d->w, e, d->ids[k]) != has) {
                fail(d, "tes_has(%#llx, %s) = %d, model %d", ull(e), fz_comps[k].name, !has, has);
                return;
            }
            const void *p = tes_get(d->w, e, d->ids[k]);
            if (has && fz_comps[k].size)
                check_value(d, i, k, p, "tes_get");
            else if (p)
                fail(d, "tes_get(%#llx, %s) = %p, model has no value", ull(e), fz_comps[k].name, p);
        }
        check_components_of(d, e, FZ_NCOMP + 2, false);
        if (tes_enabled(d->w, e) != !fz_model_has(m, i, FZ_C_DISABLED))
            fail(d, "tes_enabled(%#llx) disagrees with the model", ull(e));
    }
    if (failed(d))
        return;
    if (tes_alive(d->w, TES_NULL) || tes_alive(d->w, tes_entity_make(m->nslots, 1)) ||
        tes_alive(d->w, tes_entity_make(TES_NULL_INDEX, 1))) {
        fail(d, "null or never-issued handle is alive");
        return;
    }
    check_stats(d);
    if (!failed(d) && tes__world_check(d->w) != TES_OK)
        fail(d, "tes__world_check failed (see stderr)");
}

/* ------------------------------------------------------------------ setup */

static bool setup(fz_driver_t *d, const fz_config_t *cfg)
{
    d->op = "setup";
    tes_world_desc_t desc = {0};
    desc.generation_limit = cfg->generation_limit;
    desc.entity_limit = cfg->entity_limit;
    d->w = tes_world_new(&desc);
    if (!d->w) {
        fail(d, "tes_world_new failed");
        return false;
    }
    if (!fz_model_init(&d->m, cfg->generation_limit, cfg->entity_limit)) {
        fail(d, "model init failed");
        return false;
    }
    d->ids[FZ_C_DISABLED] = TES_DISABLED;
    d->t.ids[FZ_C_DISABLED] = TES_DISABLED;
    d->max_id = TES_PREFAB;
    for (int k = 1; k < FZ_NCOMP; k++) {
        const fz_comp_info_t *c = &fz_comps[k];
        tes_component_desc_t cd;
        memset(&cd, 0, sizeof cd);
        cd.name = c->name;
        cd.size = c->size;
        cd.align = c->align;
        cd.storage = c->storage;
        cd.stable = c->stable;
        fz_tracker_hooks(&d->t, k, &cd.hooks);
        tes_comp_t id = tes_component(d->w, &cd);
        if (id == 0 || id == TES_DISABLED || id == TES_PREFAB) {
            fail(d, "tes_component(%s) = %u (error %d)", c->name, id, tes_last_error(d->w));
            return false;
        }
        for (int j = 0; j < k; j++)
            if (d->ids[j] == id) {
                fail(d, "tes_component(%s) reused id %u", c->name, id);
                return false;
            }
        d->ids[k] = id;
        d->t.ids[k] = id;
        if (id > d->max_id)
            d->max_id = id;
    }

    /* Registration rules from the header, checked once per world. */
    tes_component_desc_t cd;
    memset(&cd, 0, sizeof cd);
    cd.name = fz_comps[FZ_C_T24].name;
    cd.size = 24;
    cd.align = 8;
    if (tes_component(d->w, &cd) != d->ids[FZ_C_T24]) /* same layout, other hooks: same id */
        fail(d, "re-registering %s with the same layout did not return its id", cd.name);
    cd.size = 32;
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fail(d, "re-registering %s with another size was not refused", cd.name);
    cd.name = "fz_bad";
    cd.size = 12;
    cd.align = 8; /* size not a multiple of align */
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fail(d, "size 12 / align 8 was not refused");
    cd.size = 6;
    cd.align = 3;
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fail(d, "align 3 was not refused");
    cd.name = NULL;
    cd.size = 4;
    cd.align = 4;
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fail(d, "a NULL name was not refused");
    if (tes_component_lookup(d->w, fz_comps[FZ_C_S16].name) != d->ids[FZ_C_S16] ||
        tes_component_lookup(d->w, "fz_nope") != 0)
        fail(d, "tes_component_lookup disagrees with registration");
    d->last_error = TES_ERR_INVALID; /* from the refused registrations */
    if (tes_last_error(d->w) != d->last_error)
        fail(d, "tes_last_error is %d after refused registrations", tes_last_error(d->w));
    return !failed(d);
}

/* ------------------------------------------------------------------ run */

enum {
    OP_SPAWN,
    OP_SPAWN_N,
    OP_DESTROY,
    OP_ALIVE,
    OP_ADD,
    OP_SET,
    OP_ENSURE,
    OP_REMOVE,
    OP_HAS,
    OP_GET,
    OP_CLEAR,
    OP_CLONE,
    OP_COMPONENTS_OF,
    OP_DISABLE,
    OP_ENABLED,
    OP_STATS,
    OP_COUNT
};

static const uint32_t op_weight[OP_COUNT] = {
    [OP_SPAWN] = 0, /* set per step from the population */
    [OP_SPAWN_N] = 3,
    [OP_DESTROY] = 0, /* likewise */
    [OP_ALIVE] = 4,
    [OP_ADD] = 14,
    [OP_SET] = 12,
    [OP_ENSURE] = 6,
    [OP_REMOVE] = 10,
    [OP_HAS] = 4,
    [OP_GET] = 10,
    [OP_CLEAR] = 2,
    [OP_CLONE] = 3,
    [OP_COMPONENTS_OF] = 3,
    [OP_DISABLE] = 4,
    [OP_ENABLED] = 2,
    [OP_STATS] = 1,
};

static int pick_op(fz_driver_t *d)
{
    uint32_t w[OP_COUNT];
    memcpy(w, op_weight, sizeof w);
    bool low = d->m.nlive < d->cfg->pop_target;
    w[OP_SPAWN] = low ? 12 : 3;
    w[OP_DESTROY] = low ? 4 : 16;
    uint32_t total = 0;
    for (int i = 0; i < OP_COUNT; i++)
        total += w[i];
    uint32_t r = draw(d, total);
    for (int i = 0; i < OP_COUNT; i++) {
        if (r < w[i])
            return i;
        r -= w[i];
    }
    return OP_STATS;
}

static void run_op(fz_driver_t *d, int op)
{
    switch (op) {
    case OP_SPAWN: op_spawn(d); break;
    case OP_SPAWN_N: op_spawn_n(d); break;
    case OP_DESTROY: op_destroy(d); break;
    case OP_ALIVE: op_alive(d); break;
    case OP_ADD: op_add(d); break;
    case OP_SET: op_set(d); break;
    case OP_ENSURE: op_ensure(d); break;
    case OP_REMOVE: op_remove(d); break;
    case OP_HAS: op_has(d); break;
    case OP_GET: op_get(d); break;
    case OP_CLEAR: op_clear(d); break;
    case OP_CLONE: op_clone(d); break;
    case OP_COMPONENTS_OF: op_components_of(d); break;
    case OP_DISABLE: op_disable(d); break;
    case OP_ENABLED: op_enabled(d); break;
    default: op_stats(d); break;
    }
}

void fz_run(const fz_config_t *cfg, fz_source_t *src, uint64_t max_ops, fz_result_t *res)
{
    memset(res, 0, sizeof *res);
    fz_driver_t *d = calloc(1, sizeof *d);
    if (!d) {
        res->diverged = true;
        snprintf(res->msg, sizeof res->msg, "out of memory");
        return;
    }
    d->src = src;
    d->cfg = cfg;
    d->res = res;
    fz_tracker_init(&d->t, true);
    if (setup(d, cfg)) {
        uint32_t every = cfg->check_every ? cfg->check_every : 1000;
        for (d->step = 0; d->step < max_ops && !src->exhausted && !failed(d); d->step++) {
            run_op(d, pick_op(d));
            check_step(d);
            if ((d->step + 1) % every == 0)
                check_full(d);
            res->ops = d->step + 1;
        }
        if (!failed(d))
            check_full(d);
        res->alive = d->m.nlive;
        res->slots = d->m.nslots;
        res->retired = d->m.retired;
        res->hooks = d->t.nrecs ? d->t.counts[FZ_C_T24].ctor + d->t.counts[FZ_C_S16].ctor +
                                      d->t.counts[FZ_C_SST].ctor
                                : 0;
    }
    /* Freeing the world runs every live value's dtor exactly once and fires
     * no on_remove. */
    if (d->w) {
        fz_counts_t before[FZ_NCOMP];
        memcpy(before, d->t.counts, sizeof before);
        tes_world_free(d->w);
        d->op = "tes_world_free";
        if (!failed(d)) {
            if (d->t.failed)
                fail(d, "hook: %s", d->t.msg);
            for (int k = 0; k < FZ_NCOMP && !failed(d); k++) {
                const fz_counts_t *c = &d->t.counts[k];
                if (c->ctor != c->dtor)
                    fail(d, "%s: ctor %llu != dtor %llu after world free", fz_comps[k].name,
                         ull(c->ctor), ull(c->dtor));
                else if (c->on_remove != before[k].on_remove)
                    fail(d, "%s: on_remove fired during tes_world_free", fz_comps[k].name);
            }
            if (!failed(d) && d->t.live != 0)
                fail(d, "%llu tracked values never destroyed", ull(d->t.live));
        }
    }
    fz_model_fini(&d->m);
    fz_tracker_fini(&d->t);
    free(d);
}
