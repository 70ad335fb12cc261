/*
 * The op loop of the differential fuzzer (see driver.h; the ops themselves
 * are in driver_ops.c, driver_query.c and driver_defer.c, the checks in
 * driver_check.c). Each op draws its
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
 * handles, stats, every query, and tes__world_check.
 *
 * Every run creates a set of queries first (driver_query.c) and keeps them
 * up to date through the whole run, so every structural op also exercises
 * the query caches and the group watchers. Some ops run other ops: a
 * deferred block, and a query loop that makes changes from inside chunks
 * (driver_defer.c); ops nest up to FZ_MAX_NEST deep.
 *
 * Prefabs and instances (driver_lifecycle.c) are ops of the mix too, in
 * blocks and loops as well; components TREF and SREF hold entity
 * references (fzd_make_value fills them with prefab members, other handles
 * or TES_NULL). Half the configurations are strict_lifecycle worlds.
 *
 * The hierarchy (driver_hier.c): links, names and their reads are ops of
 * the mix, in blocks and loops as well; every destroy cascades in the
 * model, and queries by depth and about the parent are among the fixed
 * and random queries.
 *
 * Observers act while they run (driver_hooks.c): they make and free
 * queries and groups and try what they may not do (TES_ERR_BUSY). Rarely,
 * ops pick the extra components: wide ones (OP_WIDEN gives an entity more
 * than 64 components) and huge ones (64 KiB values). In the cells variant
 * (fz_config_t.cells) they also pick the cells components, hook-free
 * table ones of 4 to 16 bytes and a tag, which no query names: entities
 * built of them take every form of the quiet add's cell copy.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"
#include "query/filter.h"

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
    cfg->hook_busy = true;
    cfg->strict = (variant % FZ_VARIANTS) / 5 != 0;
    switch (variant % 5) {
    case 0: /* defaults: long-lived slots, moderate population */
        cfg->name = cfg->strict ? "default-strict" : "default";
        cfg->pop_target = 300;
        break;
    case 1: /* slots retire after 3 generations: retirement under churn */
        cfg->name = cfg->strict ? "gen3-strict" : "gen3";
        cfg->generation_limit = 3;
        cfg->pop_target = 100;
        break;
    case 2: /* a tiny id space that batches keep running into */
        cfg->name = cfg->strict ? "cap64-strict" : "cap64";
        cfg->entity_limit = 64;
        cfg->pop_target = 56;
        break;
    case 4: /* every slot retires after one use: entity indices climb
             * through the pages of every sparse set (a group's included),
             * so pages are reserved for the first time again and again, by
             * every kind of change; the id space (four pages) runs out
             * after about 55k ops */
        cfg->name = cfg->strict ? "gen1cap16k-strict" : "gen1cap16k";
        cfg->generation_limit = 1;
        cfg->entity_limit = 16384;
        cfg->pop_target = 80;
        break;
    default: /* both limits: the id space is used up for good mid-run
              * (at 125k ops per seed, after about half of them) */
        cfg->name = cfg->strict ? "gen4cap2000-strict" : "gen4cap2000";
        cfg->generation_limit = 4;
        cfg->entity_limit = 2000;
        cfg->pop_target = 60;
        break;
    }
}

void fz_config_seed(uint64_t seed, fz_config_t *cfg)
{
    static const char *const cells_names[FZ_VARIANTS] = {
        "cells-default", "cells-gen3", "cells-cap64", "cells-gen4cap2000",
        "cells-gen1cap16k", "cells-default-strict", "cells-gen3-strict",
        "cells-cap64-strict", "cells-gen4cap2000-strict", "cells-gen1cap16k-strict"};
    uint32_t variant = (uint32_t)(seed % FZ_VARIANTS);
    fz_config_variant(variant, cfg);
    if (seed & FZ_CELLS_SEED_BIT) {
        cfg->cells = true;
        cfg->name = cells_names[variant];
    }
    if (seed & FZ_TWIN_SEED_BIT) {
        cfg->twin = true;
        cfg->name = "twin";
    }
}

/* ------------------------------------------------------------------ helpers */

void fzd_fail(fz_driver_t *d, const char *fmt, ...)
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

void fzd_hist_add(fz_driver_t *d, tes_entity_t e)
{
    d->hist[d->hist_pos] = e;
    d->hist_pos = (d->hist_pos + 1) % FZ_HIST;
    if (d->hist_n < FZ_HIST)
        d->hist_n++;
}

/* An entity argument: mostly live, sometimes stale or never issued; inside
 * a query loop, often one of the current chunk. */
tes_entity_t fzd_pick_entity(fz_driver_t *d)
{
    const fz_model_t *m = &d->m;
    if (d->nprefer && fzd_draw(d, 100) < 60)
        return d->prefer[fzd_draw(d, d->nprefer)];
    uint32_t r = fzd_draw(d, 100);
    if (r < 80 && m->nlive)
        return fz_model_handle(m, m->live[fzd_draw(d, m->nlive)]);
    if (r < 93 && d->hist_n)
        return d->hist[fzd_draw(d, d->hist_n)];
    uint32_t idx = m->nslots ? fzd_draw(d, m->nslots) : 0;
    uint32_t gen = m->nslots ? m->slots[idx].gen : 1;
    switch (fzd_draw(d, 7)) {
    case 0:
        return TES_NULL;
    case 1: /* an index never issued */
        return tes_entity_make(m->nslots + fzd_draw(d, 4), 1 + fzd_draw(d, 2));
    case 2: /* a generation not issued yet */
        return tes_entity_make(idx, gen + 1 + fzd_draw(d, 2));
    case 3:
        return tes_entity_make(idx, TES_TOMBSTONE);
    case 4:
        return tes_entity_make(TES_NULL_INDEX, fzd_draw(d, 3));
    case 5:
        return tes_entity_make(idx, 0);
    default: /* current generation: alive, or the next one a free slot issues */
        return tes_entity_make(idx, gen);
    }
}

/* A component argument: k in [0, FZ_NALL) (an extra one rarely: the first
 * or last wide one, or a huge one), or -1 with *id naming nothing.
 * (Few wide ones: each set an entity can have is a table queries walk.) */
int fzd_pick_comp(fz_driver_t *d, tes_comp_t *id)
{
    /* The cells variant draws once more, first: a cells component a third
     * of the time (the other variants' streams are untouched). */
    if (d->cfg->cells && fzd_draw(d, 3) == 0) {
        int k = FZ_C_CELLS0 + (int)fzd_draw(d, FZ_NCELLS);
        *id = d->ids[k];
        return k;
    }
    uint32_t r = fzd_draw(d, 1000);
    if (r < 960) {
        int k = r < 935 ? (int)fzd_draw(d, FZ_NCOMP)
                : r < 955 ? (fzd_draw(d, 2) ? FZ_C_W0 : FZ_C_WLAST)
                          : FZ_C_HUGE + (int)fzd_draw(d, 2);
        *id = d->ids[k];
        return k;
    }
    switch (fzd_draw(d, 3)) {
    case 0:
        *id = 0;
        break;
    case 1:
        *id = d->max_id + 1 + fzd_draw(d, 4);
        break;
    default:
        *id = UINT32_C(0xFFFFFFFF) - fzd_draw(d, 2);
        break;
    }
    return -1;
}

/* The status an (entity, component) call must return; *alt is a second
 * acceptable one when two errors apply at once. */
int fzd_expect2(bool alive, bool comp_ok, int *alt)
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

void fzd_check_status(fz_driver_t *d, int got, int want, int alt)
{
    if (got != want && got != alt) {
        fzd_fail(d, "returned %d (%s), model says %d (%s)", got, tes_strerror(got), want,
             tes_strerror(want));
        return;
    }
    if (got != TES_OK && tes_last_error(d->w) != got)
        fzd_fail(d, "returned %d but tes_last_error is %d", got, tes_last_error(d->w));
    if (got != TES_OK)
        d->last_error = got;
}

/* For calls returning NULL / TES_NULL on failure. */
void fzd_check_error(fz_driver_t *d, int want, int alt)
{
    int got = tes_last_error(d->w);
    if (got != want && got != alt)
        fzd_fail(d, "failed with tes_last_error %d (%s), model says %d (%s)", got, tes_strerror(got),
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
void fzd_check_value(fz_driver_t *d, uint32_t index, int k, const void *ptr, const char *what)
{
    const fz_comp_info_t *c = &fz_comps[k];
    fz_mslot_t *s = &d->m.slots[index];
    if (!ptr) {
        fzd_fail(d, "%s(%#llx, %s) is NULL but the model has a value", what,
             ull(fz_model_handle(&d->m, index)), c->name);
        return;
    }
    if ((uintptr_t)ptr % c->align) {
        fzd_fail(d, "%s(%s) = %p is not aligned to %u", what, c->name, ptr, c->align);
        return;
    }
    uint32_t off = fz_payload_offset(k);
    if (!fzd_lib_equal(d, k, ptr, fz_val(&d->m, index, k))) {
        char a[2 * FZ_MAXSIZE + 1], b[2 * FZ_MAXSIZE + 1];
        hex(a, (const uint8_t *)ptr + off, fz_msize(k) - off);
        hex(b, fz_val(&d->m, index, k) + off, fz_msize(k) - off);
        fzd_fail(d, "%s(%#llx, %s): value %s, model %s", what, ull(fz_model_handle(&d->m, index)),
             c->name, a, b);
        return;
    }
    if (c->tracked && !fz_tracker_valid(&d->t, k, ptr)) {
        fzd_fail(d, "%s(%s) = %p does not point at a live constructed value", what, c->name, ptr);
        return;
    }
    if (c->stable) {
        if (!s->stable_ptr[k])
            s->stable_ptr[k] = ptr;
        else if (s->stable_ptr[k] != ptr)
            fzd_fail(d, "%s(%#llx, %s): stable component moved from %p to %p", what,
                 ull(fz_model_handle(&d->m, index)), c->name, s->stable_ptr[k], ptr);
    }
}

/* Compares a queued set's staged value (its address from a deferred
 * tes_ensure) with the model's op. */
void fzd_check_staged(fz_driver_t *d, const fz_qop_t *op, const void *ptr, const char *what)
{
    const fz_comp_info_t *c = &fz_comps[op->k];
    if ((uintptr_t)ptr % c->align) {
        fzd_fail(d, "%s(%s) = %p (staged) is not aligned to %u", what, c->name, ptr, c->align);
        return;
    }
    uint32_t off = fz_payload_offset(op->k);
    if (!fzd_lib_equal(d, op->k, ptr, op->val)) {
        char a[2 * FZ_MAXSIZE + 1], b[2 * FZ_MAXSIZE + 1];
        hex(a, (const uint8_t *)ptr + off, fz_msize(op->k) - off);
        hex(b, op->val + off, fz_msize(op->k) - off);
        fzd_fail(d, "%s(%#llx, %s): staged value %s, model %s", what, ull(op->e), c->name, a, b);
        return;
    }
    if (c->tracked && !fz_tracker_valid(&d->t, op->k, ptr))
        fzd_fail(d, "%s(%s) = %p: the staged value is not a live constructed value", what,
                 c->name, ptr);
}

const void *fzd_lib_value(fz_driver_t *d, int k, const uint8_t val[FZ_MAXSIZE])
{
    if (!fz_comps[k].huge)
        return val;
    uint64_t seed;
    memcpy(&seed, val, sizeof seed);
    fz_huge_fill(seed, d->huge_arg, FZ_HUGE_SIZE);
    return d->huge_arg;
}

bool fzd_lib_equal(fz_driver_t *d, int k, const void *ptr, const uint8_t val[FZ_MAXSIZE])
{
    uint32_t off = fz_payload_offset(k);
    if (!fz_comps[k].huge)
        return memcmp((const uint8_t *)ptr + off, val + off, fz_comps[k].size - off) == 0;
    uint64_t seed;
    memcpy(&seed, val, sizeof seed);
    fz_huge_fill(seed, d->huge_want, FZ_HUGE_SIZE);
    return memcmp(ptr, d->huge_want, FZ_HUGE_SIZE) == 0;
}

void fzd_lib_write(fz_driver_t *d, int k, void *ptr, const uint8_t val[FZ_MAXSIZE])
{
    (void)d;
    uint32_t off = fz_payload_offset(k);
    if (!fz_comps[k].huge) {
        memcpy((uint8_t *)ptr + off, val + off, fz_comps[k].size - off);
        return;
    }
    uint64_t seed;
    memcpy(&seed, val, sizeof seed);
    fz_huge_fill(seed, ptr, FZ_HUGE_SIZE);
}

/* A fresh value for each call (tracked components: serial 0, which the copy
 * hook reads as "a user value"; huge ones: a seed, never 0). */
void fzd_make_value(fz_driver_t *d, int k, uint8_t out[FZ_MAXSIZE])
{
    d->vals++;
    for (uint32_t i = 0; i < FZ_MAXSIZE; i += 8) {
        uint64_t x = mix64(d->vals * 64u + (uint64_t)k * 4u + i / 8u);
        memcpy(out + i, &x, 8);
    }
    if (fz_comps[k].tracked)
        memset(out, 0, FZ_TRACK_HDR);
    if (fz_comps[k].huge && !out[0])
        out[0] = 1;
    for (uint32_t f = 0; f < fz_comps[k].nrefs; f++) {
        tes_entity_t ref = fzd_pick_ref(d);
        memcpy(out + fz_comps[k].ref_off[f], &ref, sizeof ref);
    }
}

/* ------------------------------------------------------------------ setup */

static bool setup(fz_driver_t *d, const fz_config_t *cfg)
{
    d->op = "setup";
    tes_world_desc_t desc = {0};
    desc.generation_limit = cfg->generation_limit;
    desc.entity_limit = cfg->entity_limit;
    desc.strict_lifecycle = cfg->strict;
    /* 1 to 4 threads: systems run on workers, checked against the model's
     * sequential frames. */
    d->threads = 1 + (int32_t)fzd_draw(d, 4);
    desc.threads = d->threads;
    d->systems = calloc(1, fzd_systems_size());
    if (!d->systems) {
        fzd_fail(d, "out of memory");
        return false;
    }
    d->w = tes_world_new(&desc);
    if (!d->w) {
        fzd_fail(d, "tes_world_new failed");
        return false;
    }
    if (!fz_model_init(&d->m, cfg->generation_limit, cfg->entity_limit)) {
        fzd_fail(d, "model init failed");
        return false;
    }
    d->m.strict = cfg->strict;
    /* The small id spaces hold fewer prefab entities. */
    d->max_prefabs = cfg->pop_target >= 100 ? FZ_MAX_PREFABS : 3;
    d->max_members = cfg->pop_target >= 100 ? FZ_MAX_MEMBERS : 4;
    d->ids[FZ_C_DISABLED] = TES_DISABLED;
    d->t.ids[FZ_C_DISABLED] = TES_DISABLED;
    d->ids[FZ_C_PREFAB] = TES_PREFAB;
    d->t.ids[FZ_C_PREFAB] = TES_PREFAB;
    d->max_id = TES_PREFAB;
    for (int k = 1; k < FZ_NALL; k++) {
        const fz_comp_info_t *c = &fz_comps[k];
        if (k == FZ_C_PREFAB)
            continue; /* built in */
        tes_component_desc_t cd;
        memset(&cd, 0, sizeof cd);
        cd.name = c->name;
        cd.size = c->size;
        cd.align = c->align;
        cd.storage = c->storage;
        cd.stable = c->stable;
        tes_member_t members[3];
        fzd_describe_refs(c, &cd, members);
        fz_tracker_hooks(&d->t, k, &cd.hooks);
        fzd_snapshot_hooks(k, &cd.hooks);
        tes_comp_t id = tes_component(d->w, &cd);
        if (id == 0 || id == TES_DISABLED || id == TES_PREFAB) {
            fzd_fail(d, "tes_component(%s) = %u (error %d)", c->name, id, tes_last_error(d->w));
            return false;
        }
        for (int j = 0; j < k; j++)
            if (d->ids[j] == id) {
                fzd_fail(d, "tes_component(%s) reused id %u", c->name, id);
                return false;
            }
        d->ids[k] = id;
        if (k < FZ_NCOMP)
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
        fzd_fail(d, "re-registering %s with the same layout did not return its id", cd.name);
    cd.size = 32;
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fzd_fail(d, "re-registering %s with another size was not refused", cd.name);
    cd.name = "fz_bad";
    cd.size = 12;
    cd.align = 8; /* size not a multiple of align */
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fzd_fail(d, "size 12 / align 8 was not refused");
    cd.size = 6;
    cd.align = 3;
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fzd_fail(d, "align 3 was not refused");
    cd.name = "fz_bad_ref";
    cd.size = 16;
    cd.align = 8;
    cd.entity_field_count = 1;
    cd.entity_fields[0] = 12; /* does not fit */
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fzd_fail(d, "an entity field past the end was not refused");
    cd.entity_field_count = 0;
    cd.name = NULL;
    cd.size = 4;
    cd.align = 4;
    if (tes_component(d->w, &cd) != 0 || tes_last_error(d->w) != TES_ERR_INVALID)
        fzd_fail(d, "a NULL name was not refused");
    d->last_error = TES_ERR_INVALID; /* from the refused registrations */
    if (tes_last_error(d->w) != d->last_error)
        fzd_fail(d, "tes_last_error is %d after refused registrations", tes_last_error(d->w));
    /* A name nobody registered: 0, recorded (for this thread) as TES_OK
     * with a sentence naming it. */
    if (tes_component_lookup(d->w, fz_comps[FZ_C_S16].name) != d->ids[FZ_C_S16] ||
        tes_component_lookup(d->w, "fz_nope") != 0 || tes_last_error(d->w) != TES_OK ||
        !strstr(tes_last_error_detail(d->w), "'fz_nope'"))
        fzd_fail(d, "tes_component_lookup disagrees with registration");
    d->last_error = TES_OK;
    return !fzd_failed(d);
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
    OP_WIDEN,
    OP_STRIP,
    OP_SPAWN_WITH,
    OP_SPAWN_BULK,
    OP_DESTROY_N,
    OP_DESTROY_MATCHING,
    OP_GET_N,
    OP_PREFAB_NEW,
    OP_PREFAB_CHILD,
    OP_PREFAB_EDIT,  /* an ordinary change made to a prefab's member */
    OP_INSTANTIATE,
    OP_INSTANTIATE_N,
    OP_INSTANCE_DESTROY,
    OP_INSTANCE_READ, /* tes_instance_of / _alive / _members, tes_prefab_members */
    OP_DETACH,
    OP_ADOPT,
    OP_SET_PARENT,   /* tes_set_parent (driver_hier.c) */
    OP_SET_NAME,     /* tes_set_name */
    OP_HIER_READ,    /* tes_parent / _children / _depth / _name / _path / _lookup_path */
    OP_QUERY_CHECK,  /* every query against the model */
    OP_QUERY_NEW,    /* free one query, create another */
    OP_DEFER,        /* tes_defer_begin, ops, tes_defer_end */
    OP_QUERY_MUTATE, /* ops from inside a query loop */
    OP_DEFER_BURST,  /* a deferred block of many changes to one or two entities */
    OP_SNAPSHOT,     /* save, load into a fresh world, carry on with it (driver_snapshot.c) */
    OP_SYSTEMS,      /* tes_system_new / tes_system_free / tes_progress */
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
    [OP_WIDEN] = 0, /* see composite_permille */
    [OP_STRIP] = 0,
    /* Bundles, bulk and batch (driver_bulk.c); the ones that make or kill
     * entities follow the population (see pick_op). */
    [OP_SPAWN_WITH] = 0,
    [OP_SPAWN_BULK] = 2,
    [OP_DESTROY_N] = 0,
    [OP_DESTROY_MATCHING] = 0,
    [OP_GET_N] = 4,
    /* Prefabs and instances (the ones that make entities follow the
     * population, see pick_op). */
    [OP_PREFAB_NEW] = 1,
    [OP_PREFAB_CHILD] = 2,
    [OP_PREFAB_EDIT] = 5,
    [OP_INSTANTIATE] = 0,
    [OP_INSTANTIATE_N] = 0,
    [OP_INSTANCE_DESTROY] = 0,
    [OP_INSTANCE_READ] = 3,
    [OP_DETACH] = 1,
    [OP_ADOPT] = 1,
    /* The hierarchy (driver_hier.c). */
    [OP_SET_PARENT] = 8,
    [OP_SET_NAME] = 3,
    [OP_HIER_READ] = 3,
    /* In thousandths of the above (see pick_op). */
    [OP_QUERY_CHECK] = 0,
    [OP_QUERY_NEW] = 0,
    [OP_DEFER] = 0,
    [OP_QUERY_MUTATE] = 0,
    [OP_SNAPSHOT] = 0,
};

/* The composite ops' shares, in 1/1000 of all ops: rare enough to keep a
 * million ops fast, common enough that every seed runs thousands. */
static const uint32_t composite_permille[OP_COUNT] = {
    [OP_WIDEN] = 2, /* every set of components it makes is a table queries walk */
    [OP_STRIP] = 4,
    [OP_QUERY_CHECK] = 25,
    [OP_QUERY_NEW] = 4,
    [OP_DEFER] = 35,
    [OP_QUERY_MUTATE] = 40,
    [OP_DEFER_BURST] = 20,
    [OP_SNAPSHOT] = 2,
    [OP_SYSTEMS] = 15,
};

/* Inside query loops: the structural ops (plus writes through tes_get_mut),
 * since those are what the loop must defer. */
static const uint32_t structural_weight[OP_COUNT] = {
    [OP_SPAWN] = 6, [OP_SPAWN_N] = 6, [OP_DESTROY] = 10, [OP_ADD] = 14, [OP_SET] = 12,
    [OP_ENSURE] = 8, [OP_REMOVE] = 10, [OP_CLEAR] = 4, [OP_CLONE] = 6, [OP_DISABLE] = 6,
    [OP_GET] = 6, [OP_STRIP] = 1, [OP_PREFAB_NEW] = 1, [OP_PREFAB_CHILD] = 1, [OP_PREFAB_EDIT] = 2,
    [OP_INSTANTIATE] = 4, [OP_INSTANTIATE_N] = 2, [OP_INSTANCE_DESTROY] = 4, [OP_DETACH] = 1,
    [OP_ADOPT] = 1, [OP_SPAWN_WITH] = 5, [OP_SPAWN_BULK] = 2, [OP_DESTROY_N] = 5,
    [OP_DESTROY_MATCHING] = 1, [OP_SET_PARENT] = 8, [OP_SET_NAME] = 1,
};

int fzd_pick_structural_op(fz_driver_t *d)
{
    uint32_t w[OP_COUNT];
    memcpy(w, structural_weight, sizeof w);
    if (d->m.nlive >= d->cfg->pop_target) { /* steer the population back */
        w[OP_SPAWN] = w[OP_SPAWN_N] = w[OP_CLONE] = 2;
        w[OP_INSTANTIATE] = w[OP_INSTANTIATE_N] = 1;
        w[OP_DESTROY] = 18;
        w[OP_INSTANCE_DESTROY] = 10;
        w[OP_SPAWN_WITH] = w[OP_SPAWN_BULK] = 1;
        w[OP_DESTROY_N] = 8;
    }
    uint32_t total = 0;
    for (int i = 0; i < OP_COUNT; i++)
        total += w[i];
    uint32_t r = fzd_draw(d, total);
    for (int i = 0; i < OP_COUNT; i++) {
        if (r < w[i])
            return i;
        r -= w[i];
    }
    return OP_GET;
}

int fzd_pick_op(fz_driver_t *d)
{
    uint32_t r = fzd_draw(d, 1000);
    for (int i = 0; i < OP_COUNT; i++) {
        if (r < composite_permille[i])
            return i;
        r -= composite_permille[i];
    }
    uint32_t w[OP_COUNT];
    memcpy(w, op_weight, sizeof w);
    bool low = d->m.nlive < d->cfg->pop_target;
    w[OP_SPAWN] = low ? 12 : 3;
    w[OP_DESTROY] = low ? 4 : 16;
    w[OP_INSTANTIATE] = low ? 5 : 1;
    w[OP_INSTANTIATE_N] = low ? 2 : 1;
    w[OP_INSTANCE_DESTROY] = low ? 1 : 5;
    w[OP_SPAWN_WITH] = low ? 6 : 2;
    w[OP_DESTROY_N] = low ? 1 : 4;
    w[OP_DESTROY_MATCHING] = low ? 0 : 1;
    uint32_t total = 0;
    for (int i = 0; i < OP_COUNT; i++)
        total += w[i];
    r = fzd_draw(d, total);
    for (int i = 0; i < OP_COUNT; i++) {
        if (r < w[i])
            return i;
        r -= w[i];
    }
    return OP_STATS;
}

static const char *const op_names[OP_COUNT] = {
    "spawn", "spawn_n", "destroy", "alive", "add", "set", "ensure", "remove", "has", "get",
    "clear", "clone", "components_of", "disable", "enabled", "stats", "widen", "strip",
    "spawn_with", "spawn_bulk", "destroy_n", "destroy_matching", "get_n", "prefab_new",
    "prefab_child", "prefab_edit", "instantiate", "instantiate_n", "instance_destroy",
    "instance_read", "detach", "adopt", "set_parent", "set_name", "hier_read", "query_check", "query_new", "defer", "query_mutate",
    "defer_burst", "snapshot", "systems"};

void fzd_run_op(fz_driver_t *d, int op)
{
    /* Ops inside ops stop at FZ_MAX_NEST. */
    if (op >= OP_QUERY_CHECK && d->nest >= FZ_MAX_NEST)
        op = OP_GET;
    if (d->cfg->trace_from && d->step + 1 >= d->cfg->trace_from)
        fprintf(stderr, "fuzz: step %llu%*s %s (depth %d)\n", ull(d->step), 2 * (int)d->nest + 1,
                "", op_names[op], (int)d->defer_depth);
    switch (op) {
    case OP_SPAWN: fzd_op_spawn(d); break;
    case OP_SPAWN_N: fzd_op_spawn_n(d); break;
    case OP_DESTROY: fzd_op_destroy(d); break;
    case OP_ALIVE: fzd_op_alive(d); break;
    case OP_ADD: fzd_op_add(d); break;
    case OP_SET: fzd_op_set(d); break;
    case OP_ENSURE: fzd_op_ensure(d); break;
    case OP_REMOVE: fzd_op_remove(d); break;
    case OP_HAS: fzd_op_has(d); break;
    case OP_GET: fzd_op_get(d); break;
    case OP_CLEAR: fzd_op_clear(d); break;
    case OP_CLONE: fzd_op_clone(d); break;
    case OP_COMPONENTS_OF: fzd_op_components_of(d); break;
    case OP_DISABLE: fzd_op_disable(d); break;
    case OP_ENABLED: fzd_op_enabled(d); break;
    case OP_WIDEN: fzd_op_widen(d); break;
    case OP_STRIP: fzd_op_strip(d); break;
    case OP_SPAWN_WITH: fzd_op_spawn_with(d); break;
    case OP_SPAWN_BULK: fzd_op_spawn_bulk(d); break;
    case OP_DESTROY_N: fzd_op_destroy_n(d); break;
    case OP_DESTROY_MATCHING: fzd_op_destroy_matching(d); break;
    case OP_GET_N: fzd_op_get_n(d); break;
    case OP_PREFAB_NEW: fzd_op_prefab_new(d); break;
    case OP_PREFAB_CHILD: fzd_op_prefab_child(d); break;
    case OP_PREFAB_EDIT: fzd_op_prefab_edit(d); break;
    case OP_INSTANTIATE: fzd_op_instantiate(d); break;
    case OP_INSTANTIATE_N: fzd_op_instantiate_n(d); break;
    case OP_INSTANCE_DESTROY: fzd_op_instance_destroy(d); break;
    case OP_INSTANCE_READ: fzd_op_instance_read(d); break;
    case OP_DETACH: fzd_op_detach(d); break;
    case OP_ADOPT: fzd_op_adopt(d); break;
    case OP_SET_PARENT: fzd_op_set_parent(d); break;
    case OP_SET_NAME: fzd_op_set_name(d); break;
    case OP_HIER_READ: fzd_op_hier_read(d); break;
    case OP_QUERY_CHECK: fzd_op_query_check(d); break;
    case OP_QUERY_NEW: fzd_op_query_new(d); break;
    case OP_DEFER: fzd_op_defer_block(d); break;
    case OP_QUERY_MUTATE: fzd_op_query_mutate(d); break;
    case OP_DEFER_BURST: fzd_op_defer_burst(d); break;
    case OP_SNAPSHOT: fzd_op_snapshot(d); break;
    case OP_SYSTEMS: fzd_op_systems(d); break;
    default: fzd_op_stats(d); break;
    }
}

/* Ends a run the way a program might: sometimes with changes still queued
 * (tes_world_free must destroy their staged values and free the pending
 * entities), sometimes with queries left for tes_world_free to release. */
static void teardown(fz_driver_t *d)
{
    d->op = "teardown";
    uint32_t how = fzd_draw(d, 4);
    if (how == 0 && !fzd_failed(d)) {
        if (tes_defer_begin(d->w) != TES_OK) {
            fzd_fail(d, "tes_defer_begin failed");
            return;
        }
        d->defer_depth++;
        d->blocks++;
        for (int i = 0; i < 12 && !fzd_failed(d); i++) {
            /* Queued instantiations and instance destroys too. */
            uint32_t r = fzd_draw(d, 5);
            fzd_run_op(d, r == 0   ? OP_SET
                          : r == 1 ? (fzd_draw(d, 2) ? OP_INSTANTIATE : OP_INSTANCE_DESTROY)
                          : r == 2 ? OP_SET_PARENT
                                   : (int)fzd_draw(d, OP_ADOPT + 1));
            fzd_check_step(d);
        }
        /* The queue dies with the world: no hooks but destructors. */
    }
    fzd_queries_fini(d, how != 1);
    if (d->systems)
        fzd_systems_fini(d, how == 1);
}

/* The filter index (src/query/filter.h) looks the few tagged entities up
 * in the pool a sparse-only query walks, and steps over their positions,
 * only where that pays: in a pool with 8 entries per tagged entity. These
 * worlds are small and full of disabled entities and prefabs, so it would
 * almost never; every other stretch of FZ_SCAN_PHASE ops it is told to
 * look them up whenever it can, so both walks (stepping over listed
 * positions, and testing each entity once there are more than
 * TES_ITER_HIDDEN of them) are compared with the model. */
#define FZ_SCAN_PHASE 1024u
static void tune_filters(fz_driver_t *d)
{
    if (d->w->filters)
        d->w->filters->scan_ratio = (d->step / FZ_SCAN_PHASE) % 2 ? 0 : TES__FILTER_SCAN_RATIO;
}

void fz_run(const fz_config_t *cfg, fz_source_t *src, uint64_t max_ops, fz_result_t *res)
{
    if (cfg->twin) {
        fz_twin_run(cfg, src, max_ops, res);
        return;
    }
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
    d->t.action = fzd_hook_action;
    d->t.user = d;
    d->huge_arg = malloc(FZ_HUGE_SIZE);
    d->huge_want = malloc(FZ_HUGE_SIZE);
    if (!d->huge_arg || !d->huge_want) {
        free(d->huge_arg);
        free(d->huge_want);
        free(d);
        res->diverged = true;
        snprintf(res->msg, sizeof res->msg, "out of memory");
        return;
    }
    if (setup(d, cfg) && fzd_queries_setup(d)) {
        uint32_t every = cfg->check_every ? cfg->check_every : 1000;
        for (d->step = 0; d->step < max_ops && !src->exhausted && !fzd_failed(d); d->step++) {
            tune_filters(d);
            fzd_run_op(d, fzd_pick_op(d));
            fzd_check_step(d);
            if ((d->step + 1) % every == 0)
                fzd_check_full(d);
            res->ops = d->step + 1;
        }
        if (!fzd_failed(d))
            fzd_check_full(d);
        res->alive = d->m.nlive;
        res->slots = d->m.nslots;
        res->retired = d->m.retired;
        tes_world_stats_t st;
        if (tes_world_stats(d->w, &st) == TES_OK)
            res->tables = st.tables;
        res->remaps = d->m.remaps;
        res->skipped_members = d->m.skipped_members;
        res->owned_at_flush = d->m.owned_at_flush;
        res->inst_links = d->m.inst_links;
        res->inst_names = d->m.inst_names;
        res->links_dropped = d->m.links_dropped;
        res->cascades = d->m.cascades;
        res->cascaded = d->m.cascaded;
        res->inst_slots = d->m.ninsts;
        res->inst_retired = d->m.inst_retired;
        res->hooks = d->t.nrecs ? d->t.counts[FZ_C_T24].ctor + d->t.counts[FZ_C_S16].ctor +
                                      d->t.counts[FZ_C_SST].ctor + d->t.counts[FZ_C_TREF].ctor
                                : 0;
        if (!fzd_failed(d))
            teardown(d);
    }
    /* Freeing the world runs every live value's dtor exactly once (staged
     * values of changes still queued included) and fires no on_remove. */
    if (d->w) {
        fz_counts_t before[FZ_NCOMP];
        memcpy(before, d->t.counts, sizeof before);
        tes_world_free(d->w);
        d->op = "tes_world_free";
        if (!fzd_failed(d)) {
            if (d->t.failed)
                fzd_fail(d, "hook: %s", d->t.msg);
            for (int k = 0; k < FZ_NCOMP && !fzd_failed(d); k++) {
                const fz_counts_t *c = &d->t.counts[k];
                if (c->ctor != c->dtor)
                    fzd_fail(d, "%s: ctor %llu != dtor %llu after world free", fz_comps[k].name,
                             ull(c->ctor), ull(c->dtor));
                else if (c->on_remove != before[k].on_remove || c->on_add != before[k].on_add ||
                         c->on_set != before[k].on_set)
                    fzd_fail(d, "%s: an observer fired during tes_world_free", fz_comps[k].name);
            }
            if (!fzd_failed(d) && d->t.live != 0)
                fzd_fail(d, "%llu tracked values never destroyed", ull(d->t.live));
        }
    }
    fzd_queries_fini(d, false);
    if (d->systems)
        fzd_systems_fini(d, false);
    free(d->systems);
    for (int i = 0; i < FZ_MAX_ITERS; i++)
        free(d->seen[i].seen);
    fz_model_fini(&d->m);
    fz_tracker_fini(&d->t);
    free(d->huge_arg);
    free(d->huge_want);
    free(d);
}
