/*
 * Query model implementation: see model_query.h. Matching is a per-slot
 * test of every term, nothing cached, so the answer can be read off the
 * header.
 */
#include "fuzz/model_query.h"

#include <string.h>

void fz_mquery_init(fz_mquery_t *q)
{
    q->skip_disabled = !(q->flags & TES_QUERY_INCLUDE_DISABLED);
    q->skip_prefab = !(q->flags & TES_QUERY_INCLUDE_PREFAB);
    memset(&q->and_mask, 0, sizeof q->and_mask);
    memset(&q->not_mask, 0, sizeof q->not_mask);
    memset(&q->par_and, 0, sizeof q->par_and);
    memset(&q->par_not, 0, sizeof q->par_not);
    q->by_depth = (q->flags & TES_QUERY_CASCADE) != 0;
    for (int32_t i = 0; i < q->nterms; i++) {
        int k = q->terms[i].k;
        if (q->terms[i].src == TES_SRC_PARENT) {
            q->by_depth = true;
            if (q->terms[i].oper == TES_AND)
                fz_bits_set(&q->par_and, k);
            else if (q->terms[i].oper == TES_NOT)
                fz_bits_set(&q->par_not, k);
            continue;
        }
        if (k == FZ_C_DISABLED)
            q->skip_disabled = false;
        if (k == FZ_C_PREFAB)
            q->skip_prefab = false;
        if (q->terms[i].oper == TES_AND)
            fz_bits_set(&q->and_mask, k);
        else if (q->terms[i].oper == TES_NOT)
            fz_bits_set(&q->not_mask, k);
    }
}

bool fz_mquery_match(const fz_model_t *m, const fz_mquery_t *q, uint32_t index)
{
    const fz_mslot_t *s = &m->slots[index];
    if (!s->alive || s->pending)
        return false;
    if (q->skip_disabled && fz_bits_has(s->mask, FZ_C_DISABLED))
        return false;
    if (q->skip_prefab && fz_bits_has(s->mask, FZ_C_PREFAB))
        return false;
    if (!fz_bits_all(s->mask, q->and_mask) || fz_bits_meet(s->mask, q->not_mask))
        return false;
    if (!fz_bits_any(q->par_and) && !fz_bits_any(q->par_not))
        return true;
    fz_bits_t none = {{0, 0}};
    fz_bits_t pm = s->parent ? m->slots[s->parent - 1].mask : none;
    return fz_bits_all(pm, q->par_and) && !fz_bits_meet(pm, q->par_not);
}

fz_bits_t fz_mquery_owns(const fz_mquery_t *q)
{
    fz_bits_t none = {{0, 0}};
    return (q->flags & TES_QUERY_OWNING_GROUP) ? q->and_mask : none;
}

int fz_mquery_expect(const fz_mquery_t *q, fz_bits_t owned)
{
    const uint32_t known = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB |
                           TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP |
                           TES_QUERY_CASCADE;
    const uint32_t groups = TES_QUERY_NONOWNING_GROUP | TES_QUERY_OWNING_GROUP;
    if (q->nterms == 0 || (q->flags & ~known) || (q->flags & groups) == groups)
        return TES_ERR_INVALID;
    /* A parent term reads copies (TES_IN only); by depth, no group. */
    for (int32_t i = 0; i < q->nterms; i++)
        if (q->terms[i].src == TES_SRC_PARENT && q->terms[i].access != TES_IN)
            return TES_ERR_INVALID;
    if (q->by_depth && (q->flags & groups))
        return TES_ERR_INVALID;
    /* A group needs an AND term to have a list of matches to keep. */
    if ((q->flags & groups) && !fz_bits_any(q->and_mask))
        return TES_ERR_INVALID;
    if (!(q->flags & TES_QUERY_OWNING_GROUP))
        return TES_OK;
    /* Owning: every AND term a non-stable sparse store nobody owns, and no
     * OPTIONAL term (its field could not be a slice of the packed stores). */
    for (int32_t i = 0; i < q->nterms; i++) {
        const fz_comp_info_t *c = &fz_comps[q->terms[i].k];
        if (q->terms[i].oper == TES_OPTIONAL)
            return TES_ERR_INVALID;
        if (q->terms[i].oper != TES_AND)
            continue;
        if (c->storage != TES_STORAGE_SPARSE || c->stable || fz_bits_has(owned, q->terms[i].k))
            return TES_ERR_INVALID;
    }
    return TES_OK;
}
