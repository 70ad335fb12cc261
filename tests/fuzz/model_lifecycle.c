/*
 * The model of prefabs and instances (see model.h), written from the
 * header's "Prefabs and instances" section:
 * - A prefab record is its root followed by its children in the order they
 *   were added; the prefab's members are the live ones, and the record
 *   lives as long as its root.
 * - Instance ids come from an allocator of their own that behaves like the
 *   entity one: LIFO reuse of freed slots, a new generation on reuse, and
 *   retirement at the world's generation limit, so an id never repeats.
 * - An instance keeps its members in join order; it dies when its last
 *   member leaves (destroyed or detached).
 * - Instantiating spawns one entity per live member, instance by instance
 *   and member by member (so free slots are taken LIFO in that order), then
 *   issues the instance ids; each new entity gets a copy of every component
 *   of its member except TES_PREFAB (on_add each, a copy-hook call per
 *   tracked value), with entity fields that name a member of the plan
 *   pointed at the same instance's copy of that member.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/model.h"

/* ------------------------------------------------------------------ instances */

fz_minst_t *fz_model_inst(const fz_model_t *m, tes_instance_t id)
{
    uint32_t index = tes_entity_index(id);
    if (index >= m->ninsts)
        return NULL;
    fz_minst_t *in = &m->insts[index];
    return in->alive && in->gen == tes_entity_generation(id) ? in : NULL;
}

tes_instance_t fz_model_inst_peek(const fz_model_t *m)
{
    if (m->ninst_free) {
        uint32_t index = m->inst_free[m->ninst_free - 1];
        return tes_entity_make(index, m->insts[index].gen);
    }
    return tes_entity_make(m->ninsts, 1);
}

static tes_instance_t inst_create(fz_model_t *m)
{
    if (!fz_grow((void **)&m->ilive, &m->ilive_cap, m->nilive + 1, sizeof *m->ilive))
        return 0;
    uint32_t index;
    if (m->ninst_free) {
        index = m->inst_free[--m->ninst_free];
    } else {
        if (!fz_grow((void **)&m->insts, &m->insts_cap, m->ninsts + 1, sizeof *m->insts) ||
            !fz_grow((void **)&m->inst_free, &m->inst_free_cap, m->ninsts + 1,
                     sizeof *m->inst_free))
            return 0;
        index = m->ninsts++;
        memset(&m->insts[index], 0, sizeof m->insts[index]);
        m->insts[index].gen = 1;
    }
    fz_minst_t *in = &m->insts[index];
    in->alive = true;
    in->n = 0;
    in->live_pos = m->nilive;
    m->ilive[m->nilive++] = index;
    return tes_entity_make(index, in->gen);
}

/* The last member left: the id is freed like an entity slot. */
static void inst_free(fz_model_t *m, uint32_t index)
{
    fz_minst_t *in = &m->insts[index];
    in->alive = false;
    uint32_t last = m->ilive[--m->nilive];
    m->ilive[in->live_pos] = last;
    m->insts[last].live_pos = in->live_pos;
    if (in->gen >= m->generation_limit) {
        in->retired = true;
        m->inst_retired++;
        return;
    }
    in->gen++;
    m->inst_free[m->ninst_free++] = index;
}

tes_instance_t fz_model_instance_of(const fz_model_t *m, tes_entity_t e)
{
    const fz_mslot_t *s = fz_model_get(m, e);
    if (!s || !s->inst)
        return 0;
    return tes_entity_make(s->inst - 1, m->insts[s->inst - 1].gen);
}

bool fz_model_inst_link(fz_model_t *m, tes_instance_t id, uint32_t index)
{
    fz_minst_t *in = &m->insts[tes_entity_index(id)];
    if (!fz_grow((void **)&in->members, &in->cap, in->n + 1, sizeof *in->members))
        return false;
    in->members[in->n++] = fz_model_handle(m, index);
    m->slots[index].inst = tes_entity_index(id) + 1;
    return true;
}

void fz_model_inst_unlink(fz_model_t *m, uint32_t index)
{
    fz_mslot_t *s = &m->slots[index];
    if (!s->inst)
        return;
    uint32_t ii = s->inst - 1;
    fz_minst_t *in = &m->insts[ii];
    tes_entity_t e = fz_model_handle(m, index);
    uint32_t j = 0;
    while (j < in->n && in->members[j] != e)
        j++;
    if (j < in->n) {
        memmove(in->members + j, in->members + j + 1, (size_t)(in->n - j - 1) * sizeof *in->members);
        in->n--;
    }
    s->inst = 0;
    if (in->n == 0)
        inst_free(m, ii);
}

int fz_model_inst_destroy_status(const fz_model_t *m, tes_instance_t id)
{
    const fz_minst_t *in = fz_model_inst(m, id);
    if (!in)
        return TES_ERR_STALE;
    return fz_model_destroy_status(m, in->members, in->n, tes_entity_index(id) + 1);
}

int fz_model_inst_destroy(fz_model_t *m, tes_instance_t id)
{
    fz_minst_t *in = fz_model_inst(m, id);
    if (!in)
        return TES_ERR_STALE;
    /* The plan of its members in join order: each member's subtree in
     * post-order, a member under another one with that one's. */
    uint32_t *plan = NULL;
    int64_t count = fz_model_plan(m, in->members, in->n, &plan);
    if (count < 0) {
        fprintf(stderr, "fuzz: model out of memory\n");
        abort();
    }
    int rc = TES_OK;
    if (fz_model_plan_owned(m, plan, (uint32_t)count, tes_entity_index(id) + 1))
        rc = TES_ERR_OWNED;
    else
        for (int64_t i = 0; i < count; i++)
            fz_model_destroy(m, plan[i]);
    free(plan);
    return rc;
}

/* ------------------------------------------------------------------ prefabs */

fz_mprefab_t *fz_model_prefab(const fz_model_t *m, tes_entity_t root)
{
    if (!fz_model_alive(m, root))
        return NULL;
    for (uint32_t i = 0; i < m->nprefabs; i++)
        if (m->prefabs[i].n && m->prefabs[i].members[0] == root)
            return &m->prefabs[i];
    return NULL;
}

static bool prefab_append(fz_mprefab_t *p, tes_entity_t e)
{
    if (!fz_grow((void **)&p->members, &p->cap, p->n + 1, sizeof *p->members))
        return false;
    p->members[p->n++] = e;
    return true;
}

bool fz_model_prefab_add(fz_model_t *m, tes_entity_t root)
{
    if (!fz_grow((void **)&m->prefabs, &m->prefabs_cap, m->nprefabs + 1, sizeof *m->prefabs))
        return false;
    fz_mprefab_t *p = &m->prefabs[m->nprefabs++];
    memset(p, 0, sizeof *p);
    return prefab_append(p, root);
}

bool fz_model_prefab_child(fz_model_t *m, fz_mprefab_t *p, tes_entity_t child)
{
    /* Dead children are forgotten now and then (the library prunes them
     * too); the order of the others stays. */
    if (p->n >= 32) {
        uint32_t k = 1;
        for (uint32_t i = 1; i < p->n; i++)
            if (fz_model_alive(m, p->members[i]))
                p->members[k++] = p->members[i];
        p->n = k;
    }
    return prefab_append(p, child);
}

uint32_t fz_model_prefab_live(const fz_model_t *m, const fz_mprefab_t *p, tes_entity_t *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->n; i++)
        if (fz_model_alive(m, p->members[i])) {
            if (out)
                out[n] = p->members[i];
            n++;
        }
    return n;
}

uint32_t fz_model_prefab_copied(const fz_model_t *m, const fz_mprefab_t *p)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->n; i++)
        n += fz_model_alive(m, p->members[i]) && !fz_model_queued_destroy(m, p->members[i]);
    return n;
}

void fz_model_prefab_prune(fz_model_t *m)
{
    if (m->nprefabs < 24)
        return;
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->nprefabs; i++) {
        if (fz_model_alive(m, m->prefabs[i].members[0]))
            m->prefabs[k++] = m->prefabs[i];
        else
            free(m->prefabs[i].members);
    }
    m->nprefabs = k;
}

/* ------------------------------------------------------------------ instantiation */

/* Points the entity fields of a value that name a member of the plan at
 * instance k's copy of that member. */
static uint32_t remap(const fz_mplan_t *p, uint32_t k, int c, uint8_t *val)
{
    uint32_t n = 0;
    for (uint32_t f = 0; f < fz_comps[c].nrefs; f++) {
        tes_entity_t ref;
        memcpy(&ref, val + fz_comps[c].ref_off[f], sizeof ref);
        for (uint32_t j = 0; ref != TES_NULL && j < p->m; j++) {
            if (p->members[j] == ref) {
                memcpy(val + fz_comps[c].ref_off[f], &p->ents[k * p->m + j], sizeof ref);
                n++;
                break;
            }
        }
    }
    return n;
}

/* Copies member i of the plan into instance k's entity (alive, empty). */
static void copy_member(fz_model_t *m, const fz_mplan_t *p, uint32_t k, uint32_t i)
{
    uint32_t dst = tes_entity_index(p->ents[k * p->m + i]);
    uint32_t src = tes_entity_index(p->members[i]);
    for (int c = 0; c < FZ_NALL; c++) {
        if (c == FZ_C_PREFAB || !fz_model_has(m, src, c))
            continue;
        fz_model_add(m, dst, c);
        if (!fz_comps[c].size)
            continue;
        fz_model_write(m, dst, c, fz_val(m, src, c));
        if (fz_comps[c].tracked)
            m->expect[c].copy++;
        m->remaps += remap(p, k, c, fz_val(m, dst, c));
    }
}

int fz_model_plan_apply(fz_model_t *m, fz_mplan_t *p)
{
    /* Members that died since the plan was made are copied to nobody and
     * no longer remapped. */
    for (uint32_t i = 0; i < p->m; i++)
        if (!fz_model_alive(m, p->members[i])) {
            p->members[i] = TES_NULL;
            m->skipped_members++;
        }
    for (uint32_t k = 0; k < p->n; k++)
        for (uint32_t i = 0; i < p->m; i++) {
            fz_mslot_t *s = fz_model_get(m, p->ents[k * p->m + i]);
            if (!s)
                continue;
            s->pending = false;
            if (p->members[i])
                copy_member(m, p, k, i);
        }
    /* The links among the members, as they are now, remapped. */
    int rc = fz_model_plan_links(m, p);
    if (rc == FZ_OOM) {
        fprintf(stderr, "fuzz: model out of memory\n");
        abort();
    }
    return rc;
}

bool fz_model_plan_member(const fz_mplan_t *p, tes_entity_t e, tes_entity_t *member,
                          uint32_t *at)
{
    for (uint32_t q = 0; q < p->n * p->m; q++) {
        if (p->ents[q] != e)
            continue;
        *member = p->members[q % p->m];
        *at = q;
        return true;
    }
    return false;
}

void fz_model_plan_remap(const fz_mplan_t *p, uint32_t at, int k, uint8_t val[FZ_MAXSIZE])
{
    (void)remap(p, at / p->m, k, val);
}

static void plan_free(fz_mplan_t *p)
{
    free(p->members);
    free(p->ents);
    memset(p, 0, sizeof *p);
}

void fz_model_plans_clear(fz_model_t *m)
{
    for (uint32_t i = 0; i < m->nplans; i++)
        plan_free(&m->plans[i]);
    m->nplans = 0;
}

bool fz_model_instantiate(fz_model_t *m, const fz_mprefab_t *pf, uint32_t n, bool deferred,
                          tes_instance_t *insts, tes_entity_t *ents)
{
    fz_mplan_t p;
    memset(&p, 0, sizeof p);
    p.n = n;
    /* The members alive at the call's place: a member whose destroy is
     * queued is dead there. */
    p.members = malloc((size_t)(pf->n ? pf->n : 1) * sizeof *p.members);
    if (!p.members)
        return false;
    uint32_t live = fz_model_prefab_live(m, pf, p.members);
    for (uint32_t i = 0; i < live; i++)
        if (!fz_model_queued_destroy(m, p.members[i]))
            p.members[p.m++] = p.members[i];
    uint32_t total = n * p.m;
    p.ents = malloc((size_t)(total ? total : 1) * sizeof *p.ents);
    if (!p.ents) {
        plan_free(&p);
        return false;
    }
    for (uint32_t q = 0; q < total; q++) {
        p.ents[q] = fz_model_spawn(m);
        if (!p.ents[q]) {
            plan_free(&p);
            return false;
        }
        m->slots[tes_entity_index(p.ents[q])].pending = deferred;
        if (ents)
            ents[q] = p.ents[q];
    }
    for (uint32_t k = 0; k < n; k++) {
        tes_instance_t id = inst_create(m);
        if (!id) {
            plan_free(&p);
            return false;
        }
        for (uint32_t i = 0; i < p.m; i++)
            if (!fz_model_inst_link(m, id, tes_entity_index(p.ents[k * p.m + i]))) {
                plan_free(&p);
                return false;
            }
        if (insts)
            insts[k] = id;
    }
    if (!deferred) {
        (void)fz_model_plan_apply(m, &p); /* fresh copies: no name to refuse */
        plan_free(&p);
        return true;
    }
    if (!fz_grow((void **)&m->plans, &m->plans_cap, m->nplans + 1, sizeof *m->plans) ||
        !fz_model_queue(m, FZ_Q_INSTANTIATE, TES_NULL, 0, TES_NULL)) {
        plan_free(&p);
        return false;
    }
    m->queue[m->nqueue - 1].plan = m->nplans;
    m->plans[m->nplans++] = p;
    return true;
}
