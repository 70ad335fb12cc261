/*
 * API misuse, part 2: tes_query_new with bad descs (and the 16-term limit),
 * tes_query_free/count/iter on NULL, tes_iter_next/tes_field/tes_iter_fini
 * on NULL, finished and zeroed iterators and out-of-range terms,
 * tes_defer_begin/end misuse, and bad calls made while deferred (refused at
 * once, nothing queued).
 */
#include "api/misuse.h"

#include <string.h>

#include "world/check.h"

static tes_query_desc_t qd_empty(void)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    return d;
}

static tes_query_desc_t qd1(tes_comp_t c, tes_oper_t oper, tes_access_t access, uint32_t flags)
{
    tes_query_desc_t d = qd_empty();
    d.terms[0].comp = c;
    d.terms[0].oper = oper;
    d.terms[0].access = access;
    d.flags = flags;
    return d;
}

/* Creates a query that must be refused; frees it if it was not. */
static bool q_refused(tes_query_desc_t d)
{
    tes_query_t *q = tes_query_new(F.w, &d);
    if (q) {
        tes_query_free(q);
        return false;
    }
    return true;
}

static bool q_accepted(tes_query_desc_t d)
{
    tes_query_t *q = tes_query_new(F.w, &d);
    if (!q) {
        return false;
    }
    tes_query_free(q);
    return true;
}

static tes_query_desc_t qd_all16(void)
{
    tes_query_desc_t d = qd_empty();
    for (int i = 0; i < TES_MAX_TERMS; i++) {
        d.terms[i].comp = F.extra[i];
        d.terms[i].oper = (tes_oper_t)(i % 3);
        d.terms[i].access = (tes_access_t)(i % 4);
    }
    return d;
}

static bool zero_next(void)
{
    tes_iter_t z;
    memset(&z, 0, sizeof z);
    return !tes_iter_next(&z) && !tes_is_deferred(F.w);
}

static bool zero_field(void)
{
    tes_iter_t z;
    memset(&z, 0, sizeof z);
    return tes_field(&z, 0) == NULL;
}

static bool zero_field_neg(void)
{
    tes_iter_t z;
    memset(&z, 0, sizeof z);
    return tes_field(&z, -1) == NULL;
}

static bool zero_fini(void)
{
    tes_iter_t z;
    memset(&z, 0, sizeof z);
    tes_iter_fini(&z);
    return !tes_is_deferred(F.w);
}

/* Inside an explicit level: a zeroed iterator must not close it. */
static bool zero_next_deferred(void)
{
    tes_iter_t z;
    memset(&z, 0, sizeof z);
    bool ok = tes_defer_begin(F.w) == TES_OK;
    ok = ok && !tes_iter_next(&z) && tes_is_deferred(F.w);
    return ok && tes_defer_end(F.w) == TES_OK && !tes_is_deferred(F.w);
}

static bool zero_fini_deferred(void)
{
    tes_iter_t z;
    memset(&z, 0, sizeof z);
    bool ok = tes_defer_begin(F.w) == TES_OK;
    tes_iter_fini(&z);
    ok = ok && tes_is_deferred(F.w);
    return ok && tes_defer_end(F.w) == TES_OK && !tes_is_deferred(F.w);
}

void mis_cases_query(void)
{
    tes_world_t *w = F.w;
    const int inv = TES_ERR_INVALID;
    const uint32_t own = TES_QUERY_OWNING_GROUP, nonown = TES_QUERY_NONOWNING_GROUP;

    tes_query_desc_t ok = qd1(F.pos, TES_AND, TES_INOUT, 0);
    CASE_NOREC(tes_query_new(NULL, &ok) == NULL);
    CASE_REC(tes_query_new(w, NULL) == NULL, inv);
    CASE_REC(q_refused(qd_empty()), inv);
    tes_query_desc_t d = qd_empty();
    d.terms[1].comp = F.pos; /* the list ends at terms[0] */
    CASE_REC(q_refused(d), inv);
    d = qd_empty();
    d.flags = TES_QUERY_INCLUDE_DISABLED;
    CASE_REC(q_refused(d), inv);

    /* Unknown components. */
    CASE_REC(q_refused(qd1(F.unknown, TES_AND, TES_INOUT, 0)), inv);
    CASE_REC(q_refused(qd1(UINT32_MAX, TES_NOT, TES_INOUT, 0)), inv);
    d = qd1(F.pos, TES_AND, TES_INOUT, 0);
    d.terms[1].comp = F.unknown + 5;
    d.terms[1].oper = TES_OPTIONAL;
    CASE_REC(q_refused(d), inv);

    /* Repeated terms, whatever their oper. */
    d = qd1(F.pos, TES_AND, TES_INOUT, 0);
    d.terms[1].comp = F.pos;
    CASE_REC(q_refused(d), inv);
    d.terms[1].oper = TES_NOT;
    CASE_REC(q_refused(d), inv);
    d = qd1(TES_DISABLED, TES_NOT, TES_INOUT, 0);
    d.terms[1].comp = F.pos;
    d.terms[2].comp = TES_DISABLED;
    d.terms[2].oper = TES_OPTIONAL;
    CASE_REC(q_refused(d), inv);

    /* Bad oper, access and flags. */
    CASE_REC(q_refused(qd1(F.pos, (tes_oper_t)3, TES_INOUT, 0)), inv);
    CASE_REC(q_refused(qd1(F.pos, (tes_oper_t)-1, TES_INOUT, 0)), inv);
    CASE_REC(q_refused(qd1(F.pos, (tes_oper_t)1000, TES_INOUT, 0)), inv);
    CASE_REC(q_refused(qd1(F.pos, TES_AND, (tes_access_t)4, 0)), inv);
    CASE_REC(q_refused(qd1(F.pos, TES_AND, (tes_access_t)-1, 0)), inv);
    d = qd1(F.pos, TES_AND, TES_INOUT, 0);
    d.terms[1].comp = F.vel;
    d.terms[1].access = (tes_access_t)7;
    CASE_REC(q_refused(d), inv);
    CASE_REC(q_refused(qd1(F.pos, TES_AND, TES_INOUT, 1u << 5)), inv);
    CASE_REC(q_refused(qd1(F.pos, TES_AND, TES_INOUT, 1u << 31)), inv);
    CASE_REC(q_refused(qd1(F.pos, TES_AND, TES_INOUT, UINT32_MAX)), inv);

    /* Bad group setups. */
    CASE_REC(q_refused(qd1(F.vel, TES_AND, TES_INOUT, own | nonown)), inv);
    CASE_REC(q_refused(qd1(F.vel, TES_NOT, TES_INOUT, nonown)), inv);
    CASE_REC(q_refused(qd1(F.vel, TES_OPTIONAL, TES_INOUT, nonown)), inv);
    CASE_REC(q_refused(qd1(F.vel, TES_NOT, TES_INOUT, own)), inv);
    CASE_REC(q_refused(qd1(F.pos, TES_AND, TES_INOUT, own)), inv);  /* table comp */
    CASE_REC(q_refused(qd1(F.stab, TES_AND, TES_INOUT, own)), inv); /* stable comp */
    CASE_REC(q_refused(qd1(F.tag, TES_AND, TES_INOUT, own)), inv);  /* table tag */
    d = qd1(F.vel, TES_AND, TES_INOUT, own);
    d.terms[1].comp = F.extra[0]; /* sparse tag */
    d.terms[1].oper = TES_OPTIONAL;
    CASE_REC(q_refused(d), inv);
    d.terms[1].comp = F.pos;
    d.terms[1].oper = TES_AND;
    CASE_REC(q_refused(d), inv);

    /* A store another owning group owns. */
    tes_query_desc_t od = qd1(F.vel, TES_AND, TES_INOUT, own);
    tes_query_t *owner = tes_query_new(w, &od);
    CASE_PLAIN(owner != NULL);
    CASE_REC(q_refused(od), inv);
    d = qd1(F.extra[3], TES_AND, TES_INOUT, own); /* a free sparse store ... */
    d.terms[1].comp = F.vel;                      /* ... plus the owned one */
    CASE_REC(q_refused(d), inv);
    CASE_NOREC(q_accepted(qd1(F.vel, TES_AND, TES_INOUT, nonown)));
    tes_query_free(owner);

    /* Owning groups while deferred: TES_ERR_BUSY. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    CASE_REC(q_refused(qd1(F.vel, TES_AND, TES_INOUT, own)), TES_ERR_BUSY);
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    tes_query_t *qp = tes_query_new(w, &ok);
    CASE_PLAIN(qp != NULL);
    tes_iter_t it = tes_query_iter(qp);
    CASE_REC(q_refused(qd1(F.vel, TES_AND, TES_INOUT, own)), TES_ERR_BUSY);
    tes_iter_fini(&it);
    CASE_PLAIN(!tes_is_deferred(w));

    /* 16 terms is the maximum: all 16 filled and valid works. */
    CASE_NOREC(q_accepted(qd_all16()));
    d = qd_all16();
    for (int i = 0; i < TES_MAX_TERMS; i++) {
        d.terms[i].oper = TES_AND;
    }
    CASE_NOREC(q_accepted(d));
    {
        tes_query_t *q16 = tes_query_new(w, &d);
        CASE_NOREC(q16 != NULL && tes_query_count(q16) == 0);
        tes_query_free(q16);
    }
    d.flags = TES_QUERY_NONOWNING_GROUP;
    CASE_NOREC(q_accepted(d));
    /* ... but not with a repeat, wherever it is. */
    d = qd_all16();
    d.terms[15].comp = d.terms[0].comp;
    CASE_REC(q_refused(d), inv);
    d = qd_all16();
    d.terms[9].comp = d.terms[8].comp;
    CASE_REC(q_refused(d), inv);
    d = qd_all16();
    d.terms[15].comp = F.unknown;
    CASE_REC(q_refused(d), inv);
    d = qd_all16();
    d.terms[15].oper = (tes_oper_t)3;
    CASE_REC(q_refused(d), inv);
    d = qd_all16();
    d.terms[15].access = (tes_access_t)4;
    CASE_REC(q_refused(d), inv);

    /* NULL queries. */
    CASE_NOREC((tes_query_free(NULL), true));
    CASE_NOREC(tes_query_count(NULL) == 0);
    it = tes_query_iter(NULL);
    CASE_NOREC(!tes_is_deferred(w));
    CASE_NOREC(!tes_iter_next(&it));
    CASE_NOREC(tes_field(&it, 0) == NULL);
    CASE_NOREC((tes_iter_fini(&it), !tes_is_deferred(w)));

    /* NULL iterators. */
    CASE_NOREC(!tes_iter_next(NULL));
    CASE_NOREC(tes_field(NULL, 0) == NULL);
    CASE_NOREC((tes_iter_fini(NULL), true));

    /* Zeroed iterators (never started), with and without a defer level
     * open. Run in child processes: see the report on a crash. */
    CASE_ISOLATED(zero_next);
    CASE_ISOLATED(zero_field);
    CASE_ISOLATED(zero_field_neg);
    CASE_ISOLATED(zero_fini);
    CASE_ISOLATED(zero_next_deferred);
    CASE_ISOLATED(zero_fini_deferred);

    /* Live chunk: out-of-range terms, NOT terms, tags. */
    tes_query_desc_t d3 = qd1(F.pos, TES_AND, TES_INOUT, 0);
    d3.terms[1].comp = F.tag;
    d3.terms[2].comp = F.extra[1];
    d3.terms[2].oper = TES_NOT;
    tes_query_t *q3 = tes_query_new(w, &d3);
    CASE_PLAIN(q3 != NULL);
    it = tes_query_iter(q3);
    CASE_PLAIN(tes_iter_next(&it) && it.count >= 1);
    CASE_NOREC(tes_field(&it, 0) != NULL);
    CASE_NOREC(tes_field(&it, 1) == NULL); /* tag */
    CASE_NOREC(tes_field(&it, 2) == NULL); /* NOT */
    CASE_REC(tes_field(&it, 3) == NULL, inv); /* past the last term */
    CASE_REC(tes_field(&it, -1) == NULL, inv);
    CASE_REC(tes_field(&it, TES_MAX_TERMS) == NULL, inv);
    CASE_REC(tes_field(&it, INT32_MAX) == NULL, inv);
    CASE_REC(tes_field(&it, INT32_MIN) == NULL, inv);
    /* An iterator's level is not closed by tes_defer_end. */
    CASE_ST(tes_defer_end(w), inv);
    CASE_NOREC(tes_is_deferred(w));
    tes_iter_fini(&it);
    CASE_NOREC(!tes_is_deferred(w));
    /* Finished by fini: next, field and fini again are harmless and close no
     * other level. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    CASE_NOREC(!tes_iter_next(&it));
    CASE_NOREC(tes_field(&it, 0) == NULL);
    CASE_NOREC((tes_iter_fini(&it), tes_is_deferred(w)));
    CASE_PLAIN(tes_defer_end(w) == TES_OK && !tes_is_deferred(w));

    /* Finished by exhaustion. */
    it = tes_query_iter(q3);
    while (tes_iter_next(&it)) {
    }
    CASE_NOREC(!tes_is_deferred(w));
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    CASE_NOREC(!tes_iter_next(&it));
    CASE_NOREC(!tes_iter_next(&it));
    CASE_NOREC(tes_field(&it, 0) == NULL);
    CASE_NOREC((tes_iter_fini(&it), tes_is_deferred(w)));
    CASE_NOREC((tes_iter_fini(&it), tes_is_deferred(w)));
    CASE_PLAIN(tes_defer_end(w) == TES_OK && !tes_is_deferred(w));
    tes_query_free(q3);
    tes_query_free(qp);
}

void mis_cases_defer(void)
{
    tes_world_t *w = F.w;
    const int inv = TES_ERR_INVALID, stale = TES_ERR_STALE;
    const mis_pos_t v = {1, 1};
    tes_entity_t ebuf[4];
    tes_instance_t ibuf[2];

    CASE_NOREC(tes_defer_begin(NULL) == inv);
    CASE_NOREC(tes_defer_end(NULL) == inv);
    CASE_NOREC(!tes_is_deferred(NULL));
    CASE_ST(tes_defer_end(w), inv);
    CASE_ST(tes_defer_end(w), inv);
    /* Balanced levels, then one end too many. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK && tes_defer_begin(w) == TES_OK);
    CASE_PLAIN(tes_defer_end(w) == TES_OK && tes_defer_end(w) == TES_OK);
    CASE_ST(tes_defer_end(w), inv);

    /* Bad calls while deferred fail at once and queue nothing: the flush
     * then succeeds and the world is as before. */
    mis_snap_t before;
    mis_snap_take(&before);
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    for (int i = 0; i < MIS_NBAD; i++) {
        tes_entity_t e = F.bad[i];
        g_note = F.bad_name[i];
        CASE_ST(tes_destroy(w, e), stale);
        CASE_ST(tes_add(w, e, F.pos), stale);
        CASE_ST(tes_set(w, e, F.pos, &v), stale);
        CASE_REC(tes_ensure(w, e, F.vel) == NULL, stale);
        CASE_ST(tes_remove(w, e, F.pos), stale);
        CASE_ST(tes_clear(w, e), stale);
        CASE_REC(tes_clone(w, e) == TES_NULL, stale);
        CASE_ST(tes_disable(w, e), stale);
        CASE_ST(tes_enable(w, e), stale);
        CASE_REC(tes_prefab_child(w, e) == TES_NULL, stale);
        CASE_REC(tes_instantiate(w, e, ebuf, 4) == 0, stale);
        CASE_ST(tes_instantiate_n(w, e, 2, ibuf), stale);
        CASE_ST(tes_instance_detach(w, e), stale);
        CASE_ST(tes_instance_adopt(w, F.inst, e), stale);
    }
    g_note = NULL;
    CASE_ST(tes_add(w, F.a, 0), inv);
    CASE_ST(tes_add(w, F.b, F.unknown), inv);
    CASE_ST(tes_remove(w, F.a, F.unknown), inv);
    CASE_ST(tes_set(w, F.a, F.pos, NULL), inv);
    CASE_ST(tes_set(w, F.b, F.vel, NULL), inv);
    CASE_REC(tes_ensure(w, F.a, F.tag) == NULL, inv);
    CASE_REC(tes_ensure(w, F.b, F.tag) == NULL, inv);
    CASE_ST(tes_spawn_n(w, -1, NULL, 0, ebuf), inv);
    CASE_ST(tes_spawn_n(w, 1, &F.unknown, 1, ebuf), inv);
    CASE_ST(tes_spawn_n(w, 1, &F.unknown, 1, NULL), inv);
    CASE_ST(tes_destroy(w, F.m[0]), TES_ERR_OWNED);
    CASE_REC(tes_prefab_child(w, F.a) == TES_NULL, inv);
    CASE_REC(tes_instantiate(w, F.a, ebuf, 4) == 0, inv);
    CASE_REC(tes_instantiate(w, F.p, NULL, 2) == 0, inv);
    CASE_ST(tes_instantiate_n(w, F.p, -1, ibuf), inv);
    CASE_ST(tes_instantiate_n(w, F.p, 1, NULL), inv);
    for (int i = 0; i < MIS_NBAD_INST; i++) {
        g_note = F.bad_inst_name[i];
        CASE_ST(tes_instance_destroy(w, F.bad_inst[i]), stale);
    }
    g_note = NULL;
    CASE_ST(tes_instance_detach(w, F.a), inv);
    CASE_ST(tes_instance_adopt(w, F.inst, F.m[1]), inv);
    int before_end = tes_last_error(w);
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    CASE_PLAIN(tes_last_error(w) == before_end);
    mis_snap_t after;
    mis_snap_take(&after);
    CASE_PLAIN(memcmp(&before, &after, sizeof after) == 0);
    CASE_PLAIN(tes__world_check(w) == TES_OK);

    /* The same while an iterator is live. */
    tes_query_desc_t qd = qd1(F.pos, TES_AND, TES_INOUT, 0);
    tes_query_t *q = tes_query_new(w, &qd);
    CASE_PLAIN(q != NULL);
    tes_iter_t it = tes_query_iter(q);
    CASE_PLAIN(tes_iter_next(&it));
    CASE_ST(tes_destroy(w, F.bad[1]), stale);
    CASE_ST(tes_add(w, F.bad[2], F.pos), stale);
    CASE_ST(tes_set(w, F.a, F.vel, NULL), inv);
    CASE_REC(tes_ensure(w, F.a, F.tag) == NULL, inv);
    CASE_ST(tes_destroy(w, F.m[1]), TES_ERR_OWNED);
    CASE_ST(tes_instance_destroy(w, F.bad_inst[1]), stale);
    while (tes_iter_next(&it)) {
    }
    mis_snap_take(&after);
    CASE_PLAIN(memcmp(&before, &after, sizeof after) == 0);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
    /* Calls that pass validation but whose entity or instance dies earlier
     * in the queue: dropped at the flush, not errors. */
    tes_entity_t e1 = tes_spawn(w);
    tes_entity_t pm[2];
    tes_instance_t di = tes_instantiate(w, F.p, pm, 2);
    CASE_PLAIN(e1 != TES_NULL && di != 0 && tes_set(w, e1, F.pos, &v) == TES_OK);
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    CASE_PLAIN(tes_destroy(w, e1) == TES_OK);
    CASE_PLAIN(tes_destroy(w, e1) == TES_OK); /* still alive until the flush */
    CASE_PLAIN(tes_set(w, e1, F.vel, &v) == TES_OK);
    CASE_PLAIN(tes_ensure(w, e1, F.stab) != NULL);
    tes_entity_t cl = tes_clone(w, e1);
    CASE_PLAIN(cl != TES_NULL);
    CASE_PLAIN(tes_instance_destroy(w, di) == TES_OK);
    CASE_PLAIN(tes_instance_destroy(w, di) == TES_OK);
    CASE_PLAIN(tes_add(w, pm[0], F.tag) == TES_OK);
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    CASE_PLAIN(!tes_alive(w, e1) && !tes_instance_alive(w, di) && !tes_alive(w, pm[0]));
    /* A clone whose source died before the flush stays alive and empty. */
    CASE_PLAIN(tes_alive(w, cl) && tes_components_of(w, cl, NULL, 0) == 0);
    CASE_PLAIN(tes_destroy(w, cl) == TES_OK);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
    mis_snap_take(&after);
    CASE_PLAIN(before.alive == after.alive && before.instances == after.instances);
    tes_query_free(q);
}
