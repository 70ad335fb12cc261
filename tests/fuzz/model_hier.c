/*
 * The model of the hierarchy (see model.h), written from the header's
 * "Hierarchy and names" section with nothing clever in it:
 * - A link is kept on both ends: the child's parent (index + 1) and the
 *   parent's child list in order, so the order is plainly the order of
 *   appends (a reparent is a removal from one list and an append to the
 *   other; the same parent again changes nothing).
 * - Depth is the length of the parent chain; a cycle check walks up from
 *   the new parent.
 * - Names are strings on the slots; a sibling is found by scanning the
 *   parent's children, or every live root for the roots.
 * - A destroy's plan is each listed subtree in post-order (children before
 *   their parent, siblings in child order), skipping listed entities that
 *   a listed ancestor's subtree covers; a strict world refuses a plan that
 *   holds a member of an instance the call does not destroy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/model.h"

#define NAME_MAX_BYTES 255u

static uint32_t live_index(const fz_model_t *m, tes_entity_t e)
{
    return fz_model_get(m, e) ? tes_entity_index(e) : UINT32_MAX;
}

tes_entity_t fz_model_prefab_root_of(const fz_model_t *m, tes_entity_t e)
{
    for (uint32_t i = 0; i < m->nprefabs; i++) {
        const fz_mprefab_t *p = &m->prefabs[i];
        if (!p->n || !fz_model_alive(m, p->members[0]))
            continue;
        for (uint32_t j = 0; j < p->n; j++)
            if (p->members[j] == e)
                return p->members[0];
    }
    return TES_NULL;
}

uint32_t fz_model_sibling_named(const fz_model_t *m, uint32_t parent1, const char *name,
                                size_t len)
{
    if (parent1) {
        const fz_mslot_t *p = &m->slots[parent1 - 1];
        for (uint32_t i = 0; i < p->nkids; i++) {
            const char *s = m->slots[p->kids[i]].name;
            if (s && strlen(s) == len && memcmp(s, name, len) == 0)
                return p->kids[i] + 1;
        }
        return 0;
    }
    for (uint32_t i = 0; i < m->nlive; i++) {
        const fz_mslot_t *s = &m->slots[m->live[i]];
        if (!s->parent && s->name && strlen(s->name) == len && memcmp(s->name, name, len) == 0)
            return m->live[i] + 1;
    }
    return 0;
}

int fz_model_link_status(const fz_model_t *m, tes_entity_t child, tes_entity_t parent)
{
    uint32_t c = live_index(m, child);
    if (c == UINT32_MAX)
        return TES_ERR_STALE;
    uint32_t p1 = 0;
    if (parent != TES_NULL) {
        uint32_t p = live_index(m, parent);
        if (p == UINT32_MAX)
            return TES_ERR_STALE;
        if (p == c)
            return TES_ERR_INVALID; /* its own parent */
        for (uint32_t a = p + 1; a; a = m->slots[a - 1].parent)
            if (a == c + 1)
                return TES_ERR_INVALID; /* a cycle */
        bool cp = fz_model_has(m, c, FZ_C_PREFAB), pp = fz_model_has(m, p, FZ_C_PREFAB);
        if (cp != pp)
            return TES_ERR_INVALID;
        if (cp && fz_model_prefab_root_of(m, child) != fz_model_prefab_root_of(m, parent))
            return TES_ERR_INVALID;
        p1 = p + 1;
    }
    const fz_mslot_t *s = &m->slots[c];
    if (s->name && s->parent != p1) {
        uint32_t other = fz_model_sibling_named(m, p1, s->name, strlen(s->name));
        if (other && other != c + 1)
            return TES_ERR_INVALID;
    }
    return TES_OK;
}

bool fz_model_link(fz_model_t *m, uint32_t child, uint32_t parent1)
{
    fz_mslot_t *s = &m->slots[child];
    if (s->parent == parent1)
        return true;
    if (parent1) {
        fz_mslot_t *p = &m->slots[parent1 - 1];
        if (!fz_grow((void **)&p->kids, &p->kids_cap, p->nkids + 1, sizeof *p->kids))
            return false;
    }
    if (s->parent) {
        fz_mslot_t *old = &m->slots[s->parent - 1];
        uint32_t j = 0;
        while (j < old->nkids && old->kids[j] != child)
            j++;
        if (j == old->nkids) {
            fprintf(stderr, "fuzz: model: %u is not among its parent's children\n", child);
            abort();
        }
        memmove(old->kids + j, old->kids + j + 1, (size_t)(old->nkids - j - 1) * sizeof *old->kids);
        old->nkids--;
    }
    s->parent = parent1;
    if (parent1) {
        fz_mslot_t *p = &m->slots[parent1 - 1];
        p->kids[p->nkids++] = child;
    }
    return true;
}

/* The position of child index c among its parent's children (0 for a root). */
static uint32_t kid_position(const fz_model_t *m, uint32_t c)
{
    const fz_mslot_t *s = &m->slots[c];
    if (!s->parent)
        return 0;
    const fz_mslot_t *p = &m->slots[s->parent - 1];
    uint32_t j = 0;
    while (j < p->nkids && p->kids[j] != c)
        j++;
    return j;
}

int fz_model_link_n(fz_model_t *m, const tes_entity_t *kids, const tes_entity_t *parents,
                    uint32_t n, bool flush, uint32_t *at)
{
    uint32_t old1[FZ_BATCH_MAX], pos[FZ_BATCH_MAX];
    uint32_t i = 0;
    int rc = TES_OK;
    for (; i < n; i++) {
        rc = fz_model_link_status(m, kids[i], parents[i]);
        if (rc == TES_ERR_STALE && flush)
            rc = TES_ERR_INVALID;
        if (rc != TES_OK)
            break;
        uint32_t c = tes_entity_index(kids[i]);
        old1[i] = m->slots[c].parent;
        pos[i] = kid_position(m, c);
        if (!fz_model_link(m, c, parents[i] == TES_NULL ? 0 : tes_entity_index(parents[i]) + 1))
            return FZ_OOM;
    }
    if (rc == TES_OK)
        return TES_OK;
    *at = i;
    /* Back, last pair first: each child returns to its old place. */
    while (i-- > 0) {
        uint32_t c = tes_entity_index(kids[i]);
        if (m->slots[c].parent == old1[i])
            continue;
        if (!fz_model_link(m, c, old1[i]))
            return FZ_OOM;
        if (old1[i]) {
            fz_mslot_t *p = &m->slots[old1[i] - 1];
            memmove(p->kids + pos[i] + 1, p->kids + pos[i],
                    (size_t)(p->nkids - 1 - pos[i]) * sizeof *p->kids);
            p->kids[pos[i]] = c;
        }
    }
    return rc;
}

int fz_model_link_n_static(const fz_model_t *m, const tes_entity_t *kids,
                           const tes_entity_t *parents, uint32_t n, uint32_t *at)
{
    for (uint32_t i = 0; i < n; i++) {
        *at = i;
        uint32_t c = live_index(m, kids[i]);
        if (c == UINT32_MAX)
            return TES_ERR_STALE;
        if (parents[i] == TES_NULL)
            continue;
        uint32_t p = live_index(m, parents[i]);
        if (p == UINT32_MAX)
            return TES_ERR_STALE;
        if (p == c)
            return TES_ERR_INVALID;
        bool cp = fz_model_has(m, c, FZ_C_PREFAB), pp = fz_model_has(m, p, FZ_C_PREFAB);
        if (cp != pp || (cp && fz_model_prefab_root_of(m, kids[i]) !=
                                   fz_model_prefab_root_of(m, parents[i])))
            return TES_ERR_INVALID;
    }
    return TES_OK;
}

int32_t fz_model_depth(const fz_model_t *m, uint32_t index)
{
    int32_t depth = 0;
    for (uint32_t a = m->slots[index].parent; a; a = m->slots[a - 1].parent)
        depth++;
    return depth;
}

/* ------------------------------------------------------------------ names */

int fz_model_name_status(const fz_model_t *m, tes_entity_t e, const char *name)
{
    uint32_t i = live_index(m, e);
    if (i == UINT32_MAX)
        return TES_ERR_STALE;
    if (!name)
        return TES_OK;
    size_t len = strlen(name);
    if (len == 0 || len > NAME_MAX_BYTES || memchr(name, '/', len))
        return TES_ERR_INVALID;
    uint32_t other = fz_model_sibling_named(m, m->slots[i].parent, name, len);
    return other && other != i + 1 ? TES_ERR_INVALID : TES_OK;
}

bool fz_model_set_name(fz_model_t *m, uint32_t index, const char *name)
{
    char *copy = NULL;
    if (name) {
        size_t len = strlen(name);
        if (!(copy = malloc(len + 1)))
            return false;
        memcpy(copy, name, len + 1);
    }
    free(m->slots[index].name);
    m->slots[index].name = copy;
    return true;
}

size_t fz_model_path(const fz_model_t *m, uint32_t index, char *buf, size_t cap)
{
    size_t total = 0;
    for (uint32_t a = index + 1; a; a = m->slots[a - 1].parent) {
        const char *s = m->slots[a - 1].name;
        if (!s)
            return 0;
        total += strlen(s) + (total ? 1 : 0);
    }
    if (total + 1 > cap)
        return total;
    size_t end = total;
    buf[total] = '\0';
    for (uint32_t a = index + 1; a; a = m->slots[a - 1].parent) {
        const char *s = m->slots[a - 1].name;
        size_t len = strlen(s);
        memcpy(buf + end - len, s, len);
        if (end > len)
            buf[end - len - 1] = '/';
        end = end > len ? end - len - 1 : 0;
    }
    return total;
}

tes_entity_t fz_model_lookup_path(const fz_model_t *m, const char *path)
{
    if (!path)
        return TES_NULL;
    uint32_t at = 0;
    const char *s = path;
    for (;;) {
        const char *end = strchr(s, '/');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len == 0 || len > NAME_MAX_BYTES)
            return TES_NULL;
        at = fz_model_sibling_named(m, at, s, len);
        if (!at)
            return TES_NULL;
        if (!end)
            break;
        s = end + 1;
    }
    return fz_model_handle(m, at - 1);
}

/* ------------------------------------------------------------------ destroys */

/* Appends the subtree of index i in post-order. */
static void post_order(const fz_model_t *m, uint32_t i, uint32_t *out, uint32_t *n)
{
    const fz_mslot_t *s = &m->slots[i];
    for (uint32_t k = 0; k < s->nkids; k++)
        post_order(m, s->kids[k], out, n);
    out[(*n)++] = i;
}

static uint32_t subtree_size(const fz_model_t *m, uint32_t i)
{
    uint32_t n = 1;
    for (uint32_t k = 0; k < m->slots[i].nkids; k++)
        n += subtree_size(m, m->slots[i].kids[k]);
    return n;
}

/* Whether a proper ancestor of index i is among es. */
static bool covered(const fz_model_t *m, const tes_entity_t *es, uint32_t n, uint32_t i)
{
    for (uint32_t a = m->slots[i].parent; a; a = m->slots[a - 1].parent)
        for (uint32_t j = 0; j < n; j++)
            if (es[j] == fz_model_handle(m, a - 1))
                return true;
    return false;
}

int64_t fz_model_plan(const fz_model_t *m, const tes_entity_t *es, uint32_t n, uint32_t **out)
{
    uint64_t total = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = tes_entity_index(es[j]);
        if (n > 1 && covered(m, es, n, i))
            continue;
        total += subtree_size(m, i);
    }
    uint32_t *plan = malloc((size_t)(total ? total : 1) * sizeof *plan);
    if (!plan)
        return -1;
    uint32_t at = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = tes_entity_index(es[j]);
        if (n > 1 && covered(m, es, n, i))
            continue;
        post_order(m, i, plan, &at);
    }
    *out = plan;
    return at;
}

bool fz_model_plan_owned(const fz_model_t *m, const uint32_t *plan, uint32_t n, uint32_t allowed)
{
    if (!m->strict)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t inst = m->slots[plan[i]].inst;
        if (inst && inst != allowed)
            return true;
    }
    return false;
}

int fz_model_destroy_status(const fz_model_t *m, const tes_entity_t *es, uint32_t n,
                            uint32_t allowed)
{
    uint32_t *plan = NULL;
    int64_t count = fz_model_plan(m, es, n, &plan);
    if (count < 0)
        return FZ_OOM;
    bool owned = fz_model_plan_owned(m, plan, (uint32_t)count, allowed);
    free(plan);
    return owned ? TES_ERR_OWNED : TES_OK;
}

bool fz_model_destroy_tree(fz_model_t *m, const tes_entity_t *es, uint32_t n)
{
    uint32_t *plan = NULL;
    int64_t count = fz_model_plan(m, es, n, &plan);
    if (count < 0)
        return false;
    if ((uint64_t)count > n) {
        m->cascades++;
        m->cascaded += (uint64_t)count - n;
    }
    for (int64_t i = 0; i < count; i++)
        fz_model_destroy(m, plan[i]);
    free(plan);
    return true;
}

/* ------------------------------------------------------------------ instances */

/* Links the flush makes on its own: live root ci under pi, unless ci is
 * named (while pending) and a child of pi has its name. */
static int link_named(fz_model_t *m, uint32_t ci, uint32_t pi)
{
    const char *name = m->slots[ci].name;
    if (name) {
        uint32_t other = fz_model_sibling_named(m, pi + 1, name, strlen(name));
        if (other && other != ci + 1)
            return TES_ERR_INVALID;
    }
    return fz_model_link(m, ci, pi + 1) ? TES_OK : FZ_OOM;
}

int fz_model_clone_link(fz_model_t *m, uint32_t dst, uint32_t src)
{
    uint32_t p1 = m->slots[src].parent;
    return p1 ? link_named(m, dst, p1 - 1) : TES_OK;
}

int fz_model_plan_links(fz_model_t *m, const fz_mplan_t *p)
{
    int rc = TES_OK;
    for (uint32_t j = 0; j < p->m; j++) {
        if (!p->members[j])
            continue;
        const fz_mslot_t *ps = &m->slots[tes_entity_index(p->members[j])];
        for (uint32_t q = 0; q < ps->nkids; q++) {
            tes_entity_t child = fz_model_handle(m, ps->kids[q]);
            uint32_t i = 0;
            while (i < p->m && p->members[i] != child)
                i++;
            if (i == p->m)
                continue;
            const char *name = m->slots[ps->kids[q]].name;
            for (uint32_t k = 0; k < p->n; k++) {
                uint32_t ci = live_index(m, p->ents[k * p->m + i]);
                uint32_t pi = live_index(m, p->ents[k * p->m + j]);
                if (ci == UINT32_MAX || pi == UINT32_MAX)
                    continue;
                /* A copy named while pending keeps its name; a link that
                 * would repeat a sibling's name is not made. */
                int r;
                if (m->slots[ci].name || !name) {
                    r = link_named(m, ci, pi);
                } else if (fz_model_sibling_named(m, pi + 1, name, strlen(name))) {
                    r = TES_ERR_INVALID;
                } else {
                    r = fz_model_link(m, ci, pi + 1) && fz_model_set_name(m, ci, name) ? TES_OK
                                                                                          : FZ_OOM;
                    m->inst_names++;
                }
                if (r == FZ_OOM)
                    return r;
                if (r == TES_OK)
                    m->inst_links++;
                else if (rc == TES_OK)
                    rc = r;
            }
        }
    }
    return rc;
}
