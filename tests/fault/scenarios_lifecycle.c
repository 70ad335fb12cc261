/*
 * The allocation-failure sweep's scenarios for prefabs and instances. Like
 * scenarios.c, straight-line use of the API sized so that the growth paths
 * really grow: the lifecycle state created on first use, prefab records
 * and their member lists past their first capacity (and reused after their
 * root dies), instantiation's plan and the tables, sparse pages, entity
 * slots, instance records and member links it reserves, the deferred queue
 * and the plans and arguments deferred lifecycle calls keep in it.
 *
 * The prefabs carry table and sparse components with hooks, tags, a
 * disabled member, a sparse-only member, an empty one, and two components
 * with entity fields (a table one with two references, declared as
 * TES_TYPE_ENTITY members, a sparse one with one, declared through
 * entity_fields) that point into the prefab (remapped per instance), outside it and
 * at nothing. Groups listen with a plain twin each, so an instantiation
 * that a failure left half-registered in a group shows up as a
 * disagreement.
 */
#include <stdio.h>
#include <string.h>

#include "fault/fault.h"

/* The components with entity fields. */
typedef struct ref_t {
    tes_entity_t a, b;
    uint64_t payload;
} ref_t;

typedef struct ref_s {
    uint64_t payload;
    tes_entity_t to;
} ref_s;

typedef struct lc {
    int ref_t, ref_s; /* component indices */
} lc_t;

/* A world, the base components and the two with entity fields. */
static bool setup(fs_run_t *r, lc_t *c, const tes_world_desc_t *desc)
{
    if (!fs_world_new(r, desc))
        return false;
    fs_register_base(r);
    /* One described by members (its entity members are its entity
     * fields), one by the older entity_fields: both are remapped. */
    static const tes_member_t tm[] = {TES_MEMBER(ref_t, a, TES_TYPE_ENTITY),
                                      TES_MEMBER(ref_t, b, TES_TYPE_ENTITY),
                                      TES_MEMBER(ref_t, payload, TES_TYPE_U64)};
    const size_t sf[] = {offsetof(ref_s, to)};
    c->ref_t = fs_register_members(r, "f_ref_t", sizeof(ref_t), TES_STORAGE_TABLE, true, tm, 3);
    c->ref_s = fs_register_refs(r, "f_ref_s", sizeof(ref_s), TES_STORAGE_SPARSE, true, sf, 1);
    return !r->dead;
}

static void set_ref_t(fs_run_t *r, const lc_t *c, tes_entity_t e, tes_entity_t a, tes_entity_t b,
                      uint64_t payload)
{
    ref_t v = {a, b, payload};
    fs_set_value(r, e, c->ref_t, &v);
}

static void set_ref_s(fs_run_t *r, const lc_t *c, tes_entity_t e, tes_entity_t to,
                      uint64_t payload)
{
    ref_s v = {payload, to};
    fs_set_value(r, e, c->ref_s, &v);
}

/* A prefab of five: a root with table, sparse and reference components; a
 * child with sparse ones and a reference to the root; one with a
 * reference to a sibling and one to nothing, plus a tag; an empty one; a
 * disabled one with only a sparse component. */
static tes_entity_t make_prefab(fs_run_t *r, const lc_t *c, tes_entity_t outside, uint32_t seed)
{
    tes_entity_t p = fs_prefab_new(r);
    tes_entity_t m[4];
    for (int i = 0; i < 4; i++)
        m[i] = fs_prefab_child(r, p);
    if (r->dead)
        return TES_NULL;
    fs_set(r, p, FS_C_T4, seed);
    fs_set(r, p, FS_C_T24, seed + 1);
    fs_set(r, p, FS_C_S8, seed + 2);
    set_ref_t(r, c, p, m[0], outside, seed + 3);
    fs_set(r, m[0], FS_C_S8, seed + 4);
    fs_set(r, m[0], FS_C_SST, seed + 5);
    set_ref_s(r, c, m[0], p, seed + 6);
    fs_set(r, m[1], FS_C_T24, seed + 7);
    set_ref_t(r, c, m[1], m[2], TES_NULL, seed + 8);
    fs_add(r, m[1], FS_C_STAG);
    fs_set(r, m[3], FS_C_S4, seed + 9);
    fs_disable(r, m[3], true);
    return p;
}

#define A(k) {.comp = (k), .oper = TES_AND, .access = TES_INOUT}
#define O(k) {.comp = (k), .oper = TES_OPTIONAL, .access = TES_INOUT}

/* A query over (k, oper) terms given by component index, and a non-owning
 * group twin of it. */
static void group_and_twin(fs_run_t *r, const tes_term_t *terms, int n)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < n; i++) {
        d.terms[i] = terms[i];
        d.terms[i].comp = r->ids[terms[i].comp];
    }
    int twin = fs_query_new(r, &d, -1);
    d.flags = TES_QUERY_NONOWNING_GROUP;
    fs_query_new(r, &d, twin);
}

static void listen(fs_run_t *r, const lc_t *c)
{
    const tes_term_t g1[] = {A(FS_C_T24), A(FS_C_S8)};
    const tes_term_t g2[] = {A((tes_comp_t)c->ref_s), O(FS_C_SST)};
    group_and_twin(r, g1, 2);
    group_and_twin(r, g2, 2);
}

/* Prefab records and their member lists: more prefabs than the first
 * record block, more children than the first member list, records freed
 * with their root and reused, a list pruned of dead children, and prefab
 * calls queued in a deferred block. */
void fs_sc_prefab(fs_run_t *r)
{
    lc_t c;
    if (!setup(r, &c, NULL))
        return;
    tes_entity_t roots[24];
    for (uint32_t i = 0; i < 24 && !r->dead; i++) {
        roots[i] = fs_prefab_new(r);
        for (uint32_t j = 0; j < i % 7; j++) {
            tes_entity_t ch = fs_prefab_child(r, roots[i]);
            fs_set(r, ch, j % 2 ? FS_C_S8 : FS_C_T4, i * 10 + j);
        }
        fs_set(r, roots[i], FS_C_T24, i);
        set_ref_s(r, &c, roots[i], i ? roots[i - 1] : TES_NULL, i);
    }
    /* Their records go with the roots; new prefabs take them. */
    for (uint32_t i = 0; i < 24 && !r->dead; i += 4)
        fs_destroy(r, roots[i]);
    for (uint32_t i = 0; i < 8 && !r->dead; i++) {
        tes_entity_t p = fs_prefab_new(r);
        fs_prefab_child(r, p);
        fs_instantiate(r, p, 2);
    }
    /* Children that come and go: the list is pruned when full. */
    tes_entity_t p = roots[1];
    for (uint32_t round = 0; round < 4 && !r->dead; round++) {
        uint32_t first = r->nents;
        for (int j = 0; j < 9; j++)
            fs_prefab_child(r, p);
        for (uint32_t j = 0; j < 8 && !r->dead; j++)
            fs_destroy(r, r->ents[first + j]);
    }
    fs_instantiate(r, p, 8);
    /* Queued: the roots and children exist at once, tagged at the flush. */
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 6 && !r->dead; i++) {
        tes_entity_t q = fs_prefab_new(r);
        tes_entity_t ch = fs_prefab_child(r, q);
        fs_set(r, ch, FS_C_S8, 500 + i);
        set_ref_t(r, &c, q, ch, roots[2], 600 + i);
        fs_prefab_child(r, roots[3]);
    }
    fs_defer_end(r);
}

/* Single instantiation: the lifecycle state on first use, copies with
 * hooks, remapped references, out[] and its cap, instances destroyed and
 * their slots reused, members destroyed one by one, with groups listening. */
void fs_sc_instantiate(fs_run_t *r)
{
    lc_t c;
    if (!setup(r, &c, NULL))
        return;
    listen(r, &c);
    tes_entity_t outside = fs_spawn(r);
    fs_set(r, outside, FS_C_S8, 1);
    tes_entity_t p = make_prefab(r, &c, outside, 10);
    tes_instance_t insts[120];
    for (uint32_t i = 0; i < 120 && !r->dead; i++)
        insts[i] = fs_instantiate(r, p, (int32_t)(i % 7));
    for (uint32_t i = 0; i < 120 && !r->dead; i += 5)
        fs_instance_destroy(r, insts[i]);
    /* Reuses the freed slots, LIFO. */
    for (uint32_t i = 0; i < 30 && !r->dead; i++)
        fs_instantiate(r, p, 5);
    /* A member destroyed alone (the instance lives on), then the rest. */
    for (uint32_t i = 1; i < 40 && !r->dead; i += 5) {
        tes_entity_t m[5];
        if (tes_instance_members(r->w, insts[i], m, 5) == 5) {
            fs_destroy(r, m[0]);
            fs_destroy(r, m[2]);
        }
    }
    /* The prefab changes: the copies follow it. */
    fs_remove(r, p, FS_C_S8);
    fs_set(r, p, FS_C_SST, 77);
    tes_entity_t lone = fs_prefab_new(r);
    for (uint32_t i = 0; i < 20 && !r->dead; i++) {
        fs_instantiate(r, p, 1);
        fs_instantiate(r, lone, 1);
    }
}

/* Bulk instantiation: past the first block of entity slots, tables past
 * several doublings, sparse stores past a page, instance records and links
 * growing in one call; then reuse of freed slots, a prefab of one. */
void fs_sc_instantiate_n(fs_run_t *r)
{
    lc_t c;
    tes_world_desc_t d = {0};
    d.generation_limit = 2;
    if (!setup(r, &c, &d))
        return;
    listen(r, &c);
    tes_entity_t outside = fs_spawn(r);
    tes_entity_t p = make_prefab(r, &c, outside, 20);
    fs_instantiate_n(r, p, 250);
    fs_instantiate_n(r, p, 0);
    uint32_t ninsts = r->ninsts;
    for (uint32_t i = 0; i < ninsts && !r->dead; i += 3)
        fs_instance_destroy(r, r->insts[i]);
    fs_instantiate_n(r, p, 120); /* freed slots (some retired), then fresh ones */
    tes_entity_t lone = fs_prefab_new(r);
    fs_set(r, lone, FS_C_S4, 3);
    fs_instantiate_n(r, lone, 300);
    fs_instantiate_n(r, p, 1);
}

/* Adopting entities of every index (the member links grow to the highest
 * one), detaching them, and destroying instances with adopted members. */
void fs_sc_adopt(fs_run_t *r)
{
    lc_t c;
    if (!setup(r, &c, NULL))
        return;
    tes_entity_t p = fs_prefab_new(r);
    fs_prefab_child(r, p);
    fs_set(r, p, FS_C_T4, 1);
    fs_instantiate_n(r, p, 3);
    if (r->dead)
        return;
    tes_instance_t insts[3] = {r->insts[0], r->insts[1], r->insts[2]};
    uint32_t first = r->nents;
    const int ks[] = {FS_C_T4, FS_C_S8};
    fs_spawn_n(r, 2500, ks, 2);
    for (uint32_t i = 0; i < 2500 && !r->dead; i += 13)
        fs_adopt(r, insts[i % 3], r->ents[first + i]);
    for (uint32_t i = 0; i < 2500 && !r->dead; i += 39)
        fs_detach(r, r->ents[first + i]);
    for (uint32_t i = 0; i < 2500 && !r->dead; i += 39)
        fs_adopt(r, insts[(i + 1) % 3], r->ents[first + i]);
    /* A new instance, then adoptions into it past the links it reserved. */
    tes_instance_t late = fs_instantiate(r, p, 2);
    for (uint32_t i = 2499; i > 2000 && !r->dead; i -= 50)
        if (!tes_instance_of(r->w, r->ents[first + i]))
            fs_adopt(r, late, r->ents[first + i]);
    fs_instance_destroy(r, insts[1]);
    fs_instance_destroy(r, late);
}

/* Instantiation while deferred: the entities and instances at once (a
 * failure queues nothing and leaves none of them), the copies at the flush
 * (where a failure costs that command only, see steps_query.c), from the
 * prefab as the flush finds it: a member destroyed and a set queued before
 * later instantiations, a child added in the block. */
void fs_sc_defer_instantiate(fs_run_t *r)
{
    lc_t c;
    if (!setup(r, &c, NULL))
        return;
    listen(r, &c);
    tes_entity_t outside = fs_spawn(r);
    tes_entity_t p = make_prefab(r, &c, outside, 30);
    fs_instantiate(r, p, 5); /* the lifecycle state exists */
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 40 && !r->dead; i++)
        fs_instantiate(r, p, (int32_t)(i % 6));
    fs_instantiate_n(r, p, 25);
    uint32_t mark = r->nents;
    fs_set(r, p, FS_C_T24, 31);
    tes_entity_t m[5];
    if (!r->dead && tes_prefab_members(r->w, p, m, 5) == 5)
        fs_destroy(r, m[4]);
    tes_entity_t ch = fs_prefab_child(r, p);
    fs_set(r, ch, FS_C_S8, 32);
    for (uint32_t i = 0; i < 20 && !r->dead; i++)
        fs_instantiate(r, p, 5);
    /* Changes queued on the new entities follow their copies; so do
     * clones of them (copied at the flush, into tables that must grow). */
    uint32_t end = r->nents;
    for (uint32_t i = mark; i < end && !r->dead; i += 7)
        fs_set(r, r->ents[i], FS_C_T16, i);
    for (uint32_t i = mark; i < end && !r->dead; i += 2)
        fs_clone(r, r->ents[i]);
    fs_defer_end(r);
    /* From inside a query loop: deferred as well. */
    const tes_term_t walk[] = {A(FS_C_T24)};
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0] = walk[0];
    d.terms[0].comp = r->ids[FS_C_T24];
    int q = fs_query_new(r, &d, -1);
    if (r->dead || q < 0)
        return;
    tes_iter_t it = fs_iter(r, q);
    uint32_t n = 0;
    while (!r->dead && fs_iter_next(r, &it))
        if (n++ < 6)
            fs_instantiate_n(r, p, 3);
}

/* tes_instance_destroy while deferred: queued (a failure queues nothing),
 * applied at the flush to the members each instance has then (adopted ones
 * included, detached ones spared); twice for one instance; from a loop. */
void fs_sc_defer_instance_destroy(fs_run_t *r)
{
    lc_t c;
    if (!setup(r, &c, NULL))
        return;
    listen(r, &c);
    tes_entity_t outside = fs_spawn(r);
    tes_entity_t p = make_prefab(r, &c, outside, 40);
    fs_instantiate_n(r, p, 90);
    if (r->dead)
        return;
    tes_entity_t extra = fs_spawn(r);
    fs_set(r, extra, FS_C_T24, 41);
    fs_defer_begin(r);
    for (uint32_t i = 0; i < 90 && !r->dead; i += 2)
        fs_instance_destroy(r, r->insts[i]);
    fs_instance_destroy(r, r->insts[0]); /* queued twice: the second finds it dead */
    fs_adopt(r, r->insts[2], extra);
    tes_entity_t m[5];
    if (tes_instance_members(r->w, r->insts[4], m, 5) == 5)
        fs_detach(r, m[1]);
    for (uint32_t i = 0; i < 10 && !r->dead; i++)
        fs_instantiate(r, p, 1);
    fs_defer_end(r);
    const tes_term_t walk[] = {A(FS_C_T24)};
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0] = walk[0];
    d.terms[0].comp = r->ids[FS_C_T24];
    int q = fs_query_new(r, &d, -1);
    if (r->dead || q < 0)
        return;
    tes_iter_t it = fs_iter(r, q);
    uint32_t k = 1;
    while (!r->dead && fs_iter_next(r, &it))
        for (int j = 0; j < 4 && k < 90 && !r->dead; j++, k += 2)
            fs_instance_destroy(r, r->insts[k]);
}

/* Deferred ensures that stage a value of their own and queue an ensure
 * command (a failure queues nothing): after a queued set; on pending clones,
 * and clones of clones, of entities with queued changes (their values
 * worked out from the queue), of present, missing and sparse components;
 * on a present value once a command that runs hooks is queued; on the
 * entities of a pending instantiation of a prefab with a queued set. */
void fs_sc_defer_ensure(fs_run_t *r)
{
    lc_t c;
    if (!setup(r, &c, NULL))
        return;
    listen(r, &c);
    tes_entity_t outside = fs_spawn(r);
    tes_entity_t p = make_prefab(r, &c, outside, 50);
    fs_instantiate(r, p, 5); /* the lifecycle state exists */
    tes_entity_t e[6];
    for (uint32_t i = 0; i < 6; i++) {
        e[i] = fs_spawn(r);
        fs_set(r, e[i], FS_C_T24, i);
        fs_set(r, e[i], FS_C_S8, i);
    }
    if (r->dead)
        return;
    fs_defer_begin(r);
    fs_ensure(r, e[0], FS_C_T4, 1); /* nothing queued: a missing value, staged */
    for (uint32_t i = 0; i < 6 && !r->dead; i++) {
        fs_set(r, e[i], FS_C_T24, 100 + i);
        fs_ensure(r, e[i], FS_C_T24, 200 + i); /* after the set */
        tes_entity_t k = fs_clone(r, e[i]);
        fs_ensure(r, k, FS_C_T24, 300 + i);
        fs_ensure(r, k, FS_C_S8, 400 + i);
        tes_entity_t k2 = fs_clone(r, k);
        fs_ensure(r, k2, FS_C_T16, 500 + i); /* missing everywhere: a default */
        fs_ensure(r, k2, FS_C_T24, 600 + i);
        fs_ensure(r, e[(i + 1) % 6], FS_C_S8, 700 + i); /* present, hooks queued */
    }
    fs_set(r, p, FS_C_T24, 51);
    tes_instance_t inst = fs_instantiate(r, p, 0);
    tes_entity_t m[8];
    int32_t nm = inst && !r->dead ? tes_instance_members(r->w, inst, m, 8) : 0;
    for (int32_t i = 0; i < nm && i < 8 && !r->dead; i++) {
        fs_ensure(r, m[i], FS_C_T24, 800 + (uint32_t)i);
        fs_ensure(r, m[i], FS_C_S4, 900 + (uint32_t)i);
    }
    fs_defer_end(r);
}
