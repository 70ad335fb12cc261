/*
 * The model of queries: a list of terms over the fuzzer's components and
 * the query flags, matched against a model slot by the header's rules
 * written out plainly (include/tessera.h, "Queries"):
 * - AND: the entity has the component; NOT: it does not; OPTIONAL: either.
 * - Default filters: an entity with TES_DISABLED (TES_PREFAB) is skipped
 *   unless TES_QUERY_INCLUDE_DISABLED (_PREFAB) is set or a term, of any
 *   oper, names the tag.
 * - Entities spawned or cloned in a deferred block are invisible until the
 *   flush.
 * - A TES_SRC_PARENT term is about the entity's parent: AND, the entity has
 *   a parent that has the component; NOT, it has no parent or the parent
 *   lacks it; OPTIONAL, anything. It does not touch the default filters.
 *   Its access must be TES_IN, and it (like TES_QUERY_CASCADE) refuses the
 *   group flags. A component may be named once per source.
 * Groups never change what a query matches, only how it is walked, so the
 * model has no notion of them beyond the rules tes_query_new enforces;
 * neither does TES_QUERY_CASCADE (the order: driver_query.c checks it).
 */
#ifndef TES_FUZZ_MODEL_QUERY_H
#define TES_FUZZ_MODEL_QUERY_H

#include "fuzz/model.h"

typedef struct fz_mterm {
    int k;
    tes_oper_t oper;
    tes_src_t src;        /* TES_SRC_SELF (0) or TES_SRC_PARENT */
    tes_access_t access;  /* a parent term's (a self term's is not modelled) */
} fz_mterm_t;

typedef struct fz_mquery {
    fz_mterm_t terms[TES_MAX_TERMS];
    int32_t nterms;
    uint32_t flags;
    bool skip_disabled, skip_prefab; /* derived by fz_mquery_init */
    fz_bits_t and_mask, not_mask;    /* components of AND / NOT terms */
    fz_bits_t par_and, par_not;      /* the same of the parent terms */
    bool by_depth;                   /* TES_QUERY_CASCADE or a parent term */
} fz_mquery_t;

/* Derives the filters and masks from terms and flags. */
void fz_mquery_init(fz_mquery_t *q);

/* Whether the live slot `index` satisfies q now. */
bool fz_mquery_match(const fz_model_t *m, const fz_mquery_t *q, uint32_t index);

/* The status tes_query_new must return for a well-formed description (known
 * components, no repeats, valid opers and access): TES_OK or
 * TES_ERR_INVALID. `owned` has bit k set for every store an owning group
 * holds already. */
int fz_mquery_expect(const fz_mquery_t *q, fz_bits_t owned);

/* Bit k of the stores an owning group over q claims. */
fz_bits_t fz_mquery_owns(const fz_mquery_t *q);

#endif
