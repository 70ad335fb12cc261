/*
 * API misuse of the bundle, bulk and batch calls (see misuse.c for the
 * harness): every bad argument of tes_spawn_with, tes_spawn_bulk,
 * tes_spawn_n, tes_destroy_n, tes_destroy_matching, tes_get_n and
 * tes_lookup_init (with tes_lookup_get on every bad handle) returns
 * its documented status and changes nothing, immediately and deferred.
 * The fixture world is strict, so instance members are refused.
 */
#include <stdio.h>
#include <string.h>

#include "api/misuse.h"
#include "world/check.h"

static const int inv = TES_ERR_INVALID;

static void bad_spawns(tes_world_t *w)
{
    mis_pos_t v = {1, 2};
    tes_value_t one = {F.pos, &v};
    tes_value_t repeated[] = {{F.pos, &v}, {F.vel, NULL}, {F.pos, NULL}};
    tes_value_t unknown[] = {{F.pos, &v}, {F.unknown, NULL}};
    tes_value_t zero[] = {{F.tag, &v}, {0, NULL}};
    CASE_REC(tes_spawn_with(w, repeated, 3) == TES_NULL, inv);
    CASE_REC(tes_spawn_with(w, unknown, 2) == TES_NULL, inv);
    CASE_REC(tes_spawn_with(w, zero, 2) == TES_NULL, inv);
    CASE_REC(tes_spawn_with(w, &one, -1) == TES_NULL, inv);
    CASE_REC(tes_spawn_with(w, &one, INT32_MIN) == TES_NULL, inv);
    CASE_REC(tes_spawn_with(w, NULL, 1) == TES_NULL, inv);
    CASE_NOREC(tes_spawn_with(NULL, &one, 1) == TES_NULL);

    tes_comp_t comps[] = {F.pos, F.vel, F.pos};
    tes_comp_t unknown_ids[] = {F.stab, F.unknown};
    const void *data[] = {&v, NULL, NULL};
    tes_entity_t out[4];
    tes_bulk_desc_t bad[] = {
        {-1, comps, 1, data, out},  {INT32_MIN, NULL, 0, NULL, NULL}, {2, comps, -1, data, out},
        {2, NULL, 1, NULL, out},    {2, comps, 3, data, out},          {2, unknown_ids, 2, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CASE_ST(tes_spawn_bulk(w, &bad[i]), inv);
    CASE_ST(tes_spawn_bulk(w, NULL), inv);
    CASE_NOREC(tes_spawn_bulk(NULL, &bad[0]) == inv);
    CASE_ST(tes_spawn_n(w, 2, comps, 3, NULL), inv);
    CASE_ST(tes_spawn_n(w, 1, unknown_ids, 2, NULL), inv);
}

static void bad_destroys(tes_world_t *w)
{
    /* A stale entry anywhere: nothing is destroyed, even the live ones
     * listed before it. */
    for (int i = 0; i < MIS_NBAD; i++) {
        g_note = F.bad_name[i];
        tes_entity_t list[] = {F.b, F.bad[i], F.y};
        CASE_ST(tes_destroy_n(w, list, 3), TES_ERR_STALE);
    }
    g_note = NULL;
    tes_entity_t twice[] = {F.b, F.y, F.b};
    tes_entity_t owned[] = {F.b, F.m[1]};
    tes_entity_t stale_then_twice[] = {F.b, F.bad[1], F.b};
    tes_entity_t twice_then_owned[] = {F.y, F.y, F.m[0]};
    CASE_ST(tes_destroy_n(w, twice, 3), inv);
    CASE_ST(tes_destroy_n(w, owned, 2), TES_ERR_OWNED);
    CASE_ST(tes_destroy_n(w, stale_then_twice, 3), TES_ERR_STALE);
    CASE_ST(tes_destroy_n(w, twice_then_owned, 3), inv);
    CASE_ST(tes_destroy_n(w, twice, -1), inv);
    CASE_ST(tes_destroy_n(w, NULL, 1), inv);
    CASE_NOREC(tes_destroy_n(NULL, twice, 1) == inv);
    CASE_NOREC(tes_destroy_n(w, NULL, 0) == TES_OK);
    CASE_PLAIN(tes__world_check(w) == TES_OK); /* no listing mark left behind */

    CASE_NOREC(tes_destroy_matching(NULL) == inv);
    /* The instance members match: a strict world refuses them all. */
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{F.pos}}});
    CASE_PLAIN(q != NULL);
    if (q)
        CASE_REC(tes_destroy_matching(q) == TES_ERR_OWNED, TES_ERR_OWNED);
    tes_query_t *qs = tes_query_new(w, &(tes_query_desc_t){.terms = {{F.vel}, {F.pos}}});
    if (qs)
        CASE_REC(tes_destroy_matching(qs) == TES_ERR_OWNED, TES_ERR_OWNED);
    tes_query_free(q);
    tes_query_free(qs);
}

static void bad_reads(tes_world_t *w)
{
    tes_entity_t es[MIS_NBAD + 2];
    const void *out[MIS_NBAD + 2];
    for (int i = 0; i < MIS_NBAD; i++)
        es[i] = F.bad[i];
    es[MIS_NBAD] = F.a;
    es[MIS_NBAD + 1] = F.b;
    CASE_NOREC(tes_get_n(w, F.pos, es, MIS_NBAD + 2, out) == 2 && out[0] == NULL &&
               out[MIS_NBAD] == tes_get(w, F.a, F.pos));
    CASE_NOREC(tes_get_n(w, F.vel, es, MIS_NBAD + 2, out) == 1 && out[MIS_NBAD + 1] == NULL);
    CASE_REC(tes_get_n(w, F.unknown, es, 2, out) == 0 && !out[0] && !out[1], TES_ERR_INVALID);
    CASE_REC(tes_get_n(w, 0, es, 2, out) == 0, TES_ERR_INVALID);
    CASE_REC(tes_get_n(w, F.tag, es + MIS_NBAD, 1, out) == 0 && out[0] == NULL, TES_ERR_INVALID);
    CASE_REC(tes_get_n(w, F.pos, es, -1, out) == -1, TES_ERR_INVALID);
    CASE_REC(tes_get_n(w, F.pos, NULL, 1, out) == -1, TES_ERR_INVALID);
    CASE_REC(tes_get_n(w, F.pos, es, 1, NULL) == -1, TES_ERR_INVALID);
    CASE_NOREC(tes_get_n(NULL, F.pos, es, 1, out) == -1);
    CASE_NOREC(tes_get_n(w, F.pos, NULL, 0, NULL) == 0);
}

/* Lookup views: every bad handle misses (as tes_get), every entity of
 * the fixture reads as tes_get reads it; bad ids and NULLs are refused
 * with TES_ERR_INVALID and leave a zeroed view. */
static bool lookup_agrees(tes_world_t *w, tes_comp_t c)
{
    tes_lookup_t l;
    if (tes_lookup_init(&l, w, c) != TES_OK)
        return false;
    bool same = true;
    for (int i = 0; i < MIS_NBAD; i++)
        same &= tes_lookup_get(&l, F.bad[i]) == NULL && tes_get(w, F.bad[i], c) == NULL;
    tes_entity_t good[] = {F.a, F.b, F.y, F.dis, F.p, F.pc, F.hand, F.m[0], F.m[1]};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        same &= tes_lookup_get(&l, good[i]) == tes_get(w, good[i], c);
    same &= tes_lookup_get(&l, F.a) != NULL;
    tes_lookup_fini(&l);
    return same;
}

static void bad_lookups(tes_world_t *w)
{
    CASE_PLAIN(lookup_agrees(w, F.pos));
    CASE_PLAIN(lookup_agrees(w, F.vel));
    CASE_PLAIN(lookup_agrees(w, F.stab));
    tes_lookup_t l;
    const tes_comp_t bad_ids[] = {0, F.unknown, F.tag, TES_DISABLED, TES_PREFAB, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++)
        CASE_REC(tes_lookup_init(&l, w, bad_ids[i]) == inv && l.priv_block == NULL &&
                     l.size == 0,
                 inv);
    CASE_REC(tes_lookup_init(NULL, w, F.pos) == inv, inv);
    CASE_NOREC(tes_lookup_init(&l, NULL, F.pos) == inv && l.priv_block == NULL);
    tes_lookup_fini(NULL);
    tes_lookup_fini(&l);
}

void mis_cases_bulk(void)
{
    tes_world_t *w = F.w;
    bad_spawns(w);
    bad_destroys(w);
    bad_reads(w);
    bad_lookups(w);
    /* The same while deferred: refused at the call, nothing queued. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    bad_spawns(w);
    bad_destroys(w);
    bad_reads(w);
    bad_lookups(w);
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
}
