/*
 * driver_systems.c — systems in the differential fuzzer. The op creates or
 * frees a system, or runs a frame with tes_progress; the model runs the
 * same frame with sequential semantics (systems one after another in
 * creation order, each structural system's changes applied when it ends),
 * so every frame checks the parallel scheduler — the world has 1 to 4
 * threads depending on the seed — against the order the contract defines.
 *
 * A system's run computes, for each entity, a hash of the values its
 * readable terms hold (TES_IN, TES_INOUT), its seed, the frame and the
 * entity's index, and writes bytes derived from it into every writable
 * term (TES_INOUT, TES_OUT). Systems that share a component therefore
 * depend on their order. A structural system also toggles one component
 * on a quarter of its entities (added if missing — with tes_set and a
 * value from the hash for an untracked data component, half the time —
 * removed if present), and clears one entity in 256, queued until it
 * ends; the model queues the same commands and flushes them when the
 * system ends. A structural system that is also `parallel` is split over
 * the threads, each recording into its own command queue: the model's
 * single queue is the order they must be applied in. Runs may happen on
 * worker threads, so they read only the system's own record and write only
 * their chunk's fields (and stage values only of components without hooks,
 * whose counters live in the driver).
 *
 * Some systems walk root entities: their query has no AND term (every data
 * term OPTIONAL, perhaps a NOT tag), so entities without any table
 * component are matched too. Some structural systems (parallel or not)
 * write other rows' entities: a row sets a component of its partner
 * entity (index ^ 1, read from the model, which nothing changes while the
 * frame runs), a component the system does not toggle; such a system
 * clears nothing, so each partner's value has one writer and the model's
 * index order gives the library's row order result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"

struct fz_dsys {
    tes_system_t *s;       /* NULL: a free entry */
    const tes_comp_t *ids; /* the driver's ids (read only while frames run) */
    fz_mquery_t mq;
    tes_access_t access[TES_MAX_TERMS];
    uint32_t seed;
    uint32_t frame;        /* set before each tes_progress */
    bool structural;
    bool parallel;
    bool cross;            /* sets cross_k on partner entities */
    int toggle_k;
    int cross_k;
    const fz_model_t *m;   /* read only while frames run */
    uint32_t order;        /* creation order */
};

/* Components a system's terms may name (data whose bytes are free to
 * write: no entity fields) and components it may toggle. */
static const int data_comps[] = {FZ_C_T4, FZ_C_T12, FZ_C_T24, FZ_C_T16A,
                                 FZ_C_S4, FZ_C_S16, FZ_C_SST, FZ_C_SST8};
static const int toggle_comps[] = {FZ_C_T4, FZ_C_S4, FZ_C_TTAG, FZ_C_STAG, FZ_C_T24, FZ_C_S16};
#define NDATA ((uint32_t)(sizeof data_comps / sizeof data_comps[0]))
#define NTOGGLE ((uint32_t)(sizeof toggle_comps / sizeof toggle_comps[0]))

static uint32_t entity_hash(const struct fz_dsys *s, uint32_t index)
{
    uint32_t h = s->seed ^ (s->frame * 2654435761u) ^ (index * 40503u);
    h ^= h >> 15;
    h *= 0x2c1b3c6dU;
    h ^= h >> 12;
    return h;
}

/* The system's work on one entity whose term values are at val[t]. */
static uint32_t transform(const struct fz_dsys *s, uint32_t index, uint8_t *const *val)
{
    uint32_t acc = entity_hash(s, index);
    for (int32_t t = 0; t < s->mq.nterms; t++) {
        int k = s->mq.terms[t].k;
        if (!val[t] || s->access[t] == TES_OUT || s->access[t] == TES_NOACCESS)
            continue;
        for (uint32_t j = fz_payload_offset(k); j < fz_comps[k].size; j++)
            acc = acc * 31u + val[t][j];
    }
    for (int32_t t = 0; t < s->mq.nterms; t++) {
        int k = s->mq.terms[t].k;
        if (!val[t] || s->access[t] == TES_IN || s->access[t] == TES_NOACCESS)
            continue;
        for (uint32_t j = fz_payload_offset(k); j < fz_comps[k].size; j++)
            val[t][j] = (uint8_t)((acc >> ((j % 4) * 8)) ^ j);
    }
    return acc;
}

static bool toggles(const struct fz_dsys *s, uint32_t acc) { return s->structural && (acc & 3) == 0; }

/* Whether a toggle that adds uses tes_set with a value: untracked data
 * components only (a tracked one's copy hook counts in the driver). */
static bool toggle_sets(const struct fz_dsys *s, uint32_t acc)
{
    const fz_comp_info_t *c = &fz_comps[s->toggle_k];
    return c->size && !c->tracked && ((acc >> 2) & 1);
}

static bool clears(const struct fz_dsys *s, uint32_t acc)
{
    return s->structural && !s->cross && ((acc >> 8) & 255) == 5;
}

/* Components a row may set on its partner: data without hooks. */
static const int cross_comps[] = {FZ_C_T4, FZ_C_S4};

/* The partner a row of entity index writes (TES_NULL: none this frame). */
static tes_entity_t cross_target(const struct fz_dsys *s, uint32_t index, uint32_t acc)
{
    uint32_t p = index ^ 1u;
    if (!s->cross || ((acc >> 12) & 3) != 0 || p >= s->m->nslots)
        return TES_NULL;
    tes_entity_t e = fz_model_handle(s->m, p);
    return fz_model_alive(s->m, e) ? e : TES_NULL;
}

static void cross_value(const struct fz_dsys *s, uint32_t acc, uint8_t *value)
{
    memset(value, 0, FZ_MAXSIZE);
    for (uint32_t j = fz_payload_offset(s->cross_k); j < fz_comps[s->cross_k].size; j++)
        value[j] = (uint8_t)((acc >> ((j % 3) * 8)) + j * 13u + 3u);
}

/* The value a setting toggle gives (payload bytes; the rest zero). */
static void toggle_value(const struct fz_dsys *s, uint32_t acc, uint8_t *value)
{
    memset(value, 0, FZ_MAXSIZE);
    for (uint32_t j = fz_payload_offset(s->toggle_k); j < fz_comps[s->toggle_k].size; j++)
        value[j] = (uint8_t)((acc >> ((j % 4) * 8)) + j * 7u + 1u);
}

static void system_run(tes_iter_t *it)
{
    const struct fz_dsys *s = it->ctx;
    for (int32_t i = 0; i < it->count; i++) {
        uint8_t *val[TES_MAX_TERMS] = {0};
        for (int32_t t = 0; t < s->mq.nterms; t++) {
            uint8_t *f = tes_field(it, t);
            val[t] = f ? f + (size_t)i * fz_comps[s->mq.terms[t].k].size : NULL;
        }
        tes_entity_t e = it->entities[i];
        uint32_t acc = transform(s, tes_entity_index(e), val);
        if (toggles(s, acc)) {
            tes_comp_t c = s->ids[s->toggle_k];
            /* Checked against the model when the frame ends (the structural
             * system's changes are applied then). */
            if (tes_has(it->world, e, c)) {
                tes_remove(it->world, e, c);
            } else if (toggle_sets(s, acc)) {
                uint8_t value[FZ_MAXSIZE];
                toggle_value(s, acc, value);
                tes_set(it->world, e, c, value);
            } else {
                tes_add(it->world, e, c);
            }
        }
        tes_entity_t partner = cross_target(s, tes_entity_index(e), acc);
        if (partner != TES_NULL) {
            uint8_t value[FZ_MAXSIZE];
            cross_value(s, acc, value);
            tes_set(it->world, partner, s->ids[s->cross_k], value);
        }
        if (clears(s, acc))
            tes_clear(it->world, e);
    }
}

/* The model's frame: systems in creation order. */
static void model_frame(fz_driver_t *d)
{
    fz_model_t *m = &d->m;
    struct fz_dsys *order[FZ_MAX_SYSTEMS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < FZ_MAX_SYSTEMS; i++)
        if (d->systems[i].s)
            order[n++] = &d->systems[i];
    for (uint32_t a = 1; a < n; a++) /* by creation order */
        for (uint32_t b = a; b > 0 && order[b - 1]->order > order[b]->order; b--) {
            struct fz_dsys *t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (uint32_t i = 0; i < n; i++) {
        struct fz_dsys *s = order[i];
        /* Commands of different entities commute, so the model's index
         * order gives the state the library's row order gives. */
        for (uint32_t index = 0; index < m->nslots; index++) {
            if (!fz_mquery_match(m, &s->mq, index))
                continue;
            uint8_t *val[TES_MAX_TERMS] = {0};
            for (int32_t t = 0; t < s->mq.nterms; t++) {
                int k = s->mq.terms[t].k;
                bool there = s->mq.terms[t].oper == TES_AND ||
                             (s->mq.terms[t].oper == TES_OPTIONAL && fz_model_has(m, index, k));
                if (there && fz_comps[k].size)
                    val[t] = m->slots[index].val[k];
            }
            uint32_t acc = transform(s, index, val);
            tes_entity_t e = fz_model_handle(m, index);
            bool ok = true;
            if (toggles(s, acc)) {
                if (fz_model_has(m, index, s->toggle_k)) {
                    ok = fz_model_queue(m, FZ_Q_REMOVE, e, s->toggle_k, TES_NULL);
                } else if (toggle_sets(s, acc)) {
                    uint8_t value[FZ_MAXSIZE];
                    toggle_value(s, acc, value);
                    ok = fz_model_queue_set(m, e, s->toggle_k, value) >= 0;
                } else {
                    ok = fz_model_queue(m, FZ_Q_ADD, e, s->toggle_k, TES_NULL);
                }
            }
            tes_entity_t partner = cross_target(s, index, acc);
            if (ok && partner != TES_NULL) {
                uint8_t value[FZ_MAXSIZE];
                cross_value(s, acc, value);
                ok = fz_model_queue_set(m, partner, s->cross_k, value) >= 0;
            }
            if (ok && clears(s, acc))
                ok = fz_model_queue(m, FZ_Q_CLEAR, e, 0, TES_NULL);
            if (!ok) {
                fzd_fail(d, "model out of memory");
                return;
            }
        }
        if (s->structural)
            fz_model_flush(m); /* the system's changes, applied when it ends */
    }
}

static void make_system(fz_driver_t *d, struct fz_dsys *s);

static void op_system_new(fz_driver_t *d)
{
    d->op = "tes_system_new";
    uint32_t slot = FZ_MAX_SYSTEMS;
    for (uint32_t i = 0; i < FZ_MAX_SYSTEMS; i++)
        if (!d->systems[i].s) {
            slot = i;
            break;
        }
    if (slot == FZ_MAX_SYSTEMS)
        return;
    struct fz_dsys *s = &d->systems[slot];
    memset(s, 0, sizeof *s);
    s->ids = d->ids;
    s->seed = fzd_draw(d, 1u << 30);
    s->structural = fzd_draw(d, 4) == 0;
    s->toggle_k = toggle_comps[fzd_draw(d, NTOGGLE)];
    s->order = d->system_serial++;
    s->parallel = fzd_draw(d, 2) == 0;
    uint32_t used = 0;
    int32_t nterms = 1 + (int32_t)fzd_draw(d, 3);
    for (int32_t t = 0; t < nterms; t++) {
        int k;
        do
            k = data_comps[fzd_draw(d, NDATA)];
        while (used & (1u << k));
        used |= 1u << k;
        s->access[t] = (tes_access_t)fzd_draw(d, 4);
        s->mq.terms[t] = (fz_mterm_t){.k = k, .oper = TES_AND};
    }
    s->mq.nterms = nterms;
    if (fzd_draw(d, 3) == 0) { /* a NOT term on a tag */
        int k = fzd_draw(d, 2) ? FZ_C_TTAG : FZ_C_STAG;
        s->mq.terms[nterms] = (fz_mterm_t){.k = k, .oper = TES_NOT};
        s->access[nterms] = TES_INOUT;
        s->mq.nterms++;
    }
    s->m = &d->m;
    if (fzd_draw(d, 5) == 0) /* no AND term: root entities match too */
        for (int32_t t = 0; t < nterms; t++)
            s->mq.terms[t].oper = TES_OPTIONAL;
    s->cross_k = cross_comps[fzd_draw(d, 2)];
    s->cross = s->structural && s->cross_k != s->toggle_k && fzd_draw(d, 2) == 0;
    fz_mquery_init(&s->mq);
    make_system(d, s);
}

/* Creates s's system in the driver's world (again, after a snapshot load
 * replaced the world). */
static void make_system(fz_driver_t *d, struct fz_dsys *s)
{
    tes_system_desc_t desc = {.run = system_run, .ctx = s, .structural = s->structural,
                              .parallel = s->parallel};
    char name[32];
    snprintf(name, sizeof name, "fz%u", s->order);
    desc.name = name;
    for (int32_t t = 0; t < s->mq.nterms; t++)
        desc.query.terms[t] =
            (tes_term_t){.comp = d->ids[s->mq.terms[t].k], .oper = s->mq.terms[t].oper, .access = s->access[t]};
    s->s = tes_system_new(d->w, &desc);
    if (!s->s)
        fzd_fail(d, "tes_system_new failed: %d", tes_last_error(d->w));
}

void fzd_systems_rehome(fz_driver_t *d)
{
    /* In creation order, so the new world runs them in the same order. */
    uint32_t next = 0;
    for (;;) {
        struct fz_dsys *pick = NULL;
        for (uint32_t i = 0; i < FZ_MAX_SYSTEMS; i++)
            if (d->systems[i].s && d->systems[i].order >= next &&
                (!pick || d->systems[i].order < pick->order))
                pick = &d->systems[i];
        if (!pick)
            return;
        next = pick->order + 1;
        make_system(d, pick);
    }
}

static void op_system_free(fz_driver_t *d)
{
    d->op = "tes_system_free";
    uint32_t n = 0, pick[FZ_MAX_SYSTEMS];
    for (uint32_t i = 0; i < FZ_MAX_SYSTEMS; i++)
        if (d->systems[i].s)
            pick[n++] = i;
    if (!n)
        return;
    struct fz_dsys *s = &d->systems[pick[fzd_draw(d, n)]];
    tes_system_free(s->s);
    s->s = NULL;
}

static void op_progress(fz_driver_t *d)
{
    d->op = "tes_progress";
    for (uint32_t i = 0; i < FZ_MAX_SYSTEMS; i++)
        d->systems[i].frame = d->frames;
    int rc = tes_progress(d->w, 0.25f);
    if (d->defer_depth > 0) {
        /* A deferred world (a block or a loop the driver opened) runs
         * nothing. */
        fzd_check_status(d, rc, TES_ERR_BUSY, 0);
        if (!fzd_failed(d))
            d->last_error = TES_ERR_BUSY;
        return;
    }
    d->frames++;
    model_frame(d);
    /* Toggles never fail for want of anything but memory, and a dead or
     * missing entity cannot reach a system: the frame reports TES_OK. */
    fzd_check_status(d, rc, TES_OK, 0);
}

void fzd_op_systems(fz_driver_t *d)
{
    uint32_t r = fzd_draw(d, 10);
    if (r < 2)
        op_system_new(d);
    else if (r < 3)
        op_system_free(d);
    else
        op_progress(d);
}

size_t fzd_systems_size(void) { return FZ_MAX_SYSTEMS * sizeof(struct fz_dsys); }

void fzd_systems_fini(fz_driver_t *d, bool free_them)
{
    for (uint32_t i = 0; i < FZ_MAX_SYSTEMS; i++) {
        if (free_them && d->systems[i].s)
            tes_system_free(d->systems[i].s);
        d->systems[i].s = NULL;
    }
}
