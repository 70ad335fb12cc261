/*
 * API misuse, part 3: prefab and instance calls with NULL worlds, bad
 * handles, non-prefab entities, stale/zero/never-issued instance ids, bad
 * caps and counts; and TES_ERR_FULL from every call that creates entities,
 * in a world whose entity_limit is nearly reached.
 */
#include "api/misuse.h"

#include <string.h>

#include "world/check.h"

void mis_cases_prefab(void)
{
    tes_world_t *w = F.w;
    const int inv = TES_ERR_INVALID, stale = TES_ERR_STALE;
    tes_entity_t ebuf[4];
    tes_instance_t ibuf[4];

    /* NULL world. */
    CASE_NOREC(tes_prefab_new(NULL) == TES_NULL);
    CASE_NOREC(tes_prefab_child(NULL, F.p) == TES_NULL);
    CASE_NOREC(tes_prefab_members(NULL, F.p, ebuf, 4) == -1);
    CASE_NOREC(tes_instantiate(NULL, F.p, ebuf, 4) == 0);
    CASE_NOREC(tes_instantiate_n(NULL, F.p, 1, ibuf) == inv);
    CASE_NOREC(tes_instance_destroy(NULL, F.inst) == inv);
    CASE_NOREC(tes_instance_of(NULL, F.m[0]) == 0);
    CASE_NOREC(!tes_instance_alive(NULL, F.inst));
    CASE_NOREC(tes_instance_members(NULL, F.inst, ebuf, 4) == -1);
    CASE_NOREC(tes_instance_detach(NULL, F.m[0]) == inv);
    CASE_NOREC(tes_instance_adopt(NULL, F.inst, F.b) == inv);

    /* Bad entity handles. */
    for (int i = 0; i < MIS_NBAD; i++) {
        tes_entity_t e = F.bad[i];
        g_note = F.bad_name[i];
        CASE_REC(tes_prefab_child(w, e) == TES_NULL, stale);
        CASE_REC(tes_prefab_members(w, e, ebuf, 4) == -1, stale);
        CASE_REC(tes_prefab_members(w, e, NULL, 0) == -1, stale);
        CASE_REC(tes_instantiate(w, e, ebuf, 4) == 0, stale);
        CASE_REC(tes_instantiate(w, e, NULL, 0) == 0, stale);
        CASE_ST(tes_instantiate_n(w, e, 2, ibuf), stale);
        CASE_ST(tes_instantiate_n(w, e, 0, NULL), stale);
        CASE_NOREC(tes_instance_of(w, e) == 0);
        CASE_ST(tes_instance_detach(w, e), stale);
        CASE_ST(tes_instance_adopt(w, F.inst, e), stale);
    }
    g_note = NULL;

    /* Entities that are not prefab roots: a plain entity, a prefab child, an
     * entity tagged TES_PREFAB by hand, an instance member. */
    const tes_entity_t notroot[] = {F.a, F.pc, F.hand, F.m[0]};
    const char *notroot_name[] = {"plain entity", "prefab child", "hand-tagged", "member"};
    for (int i = 0; i < 4; i++) {
        tes_entity_t e = notroot[i];
        g_note = notroot_name[i];
        CASE_REC(tes_prefab_child(w, e) == TES_NULL, inv);
        CASE_REC(tes_prefab_members(w, e, ebuf, 4) == -1, inv);
        CASE_REC(tes_instantiate(w, e, ebuf, 4) == 0, inv);
        CASE_REC(tes_instantiate(w, e, NULL, 0) == 0, inv);
        CASE_ST(tes_instantiate_n(w, e, 2, ibuf), inv);
        CASE_ST(tes_instantiate_n(w, e, 0, ibuf), inv);
    }
    g_note = NULL;

    /* Bad caps, counts and out-pointers on a real prefab. */
    CASE_REC(tes_prefab_members(w, F.p, NULL, 1) == -1, inv);
    CASE_REC(tes_prefab_members(w, F.p, ebuf, -1) == -1, inv);
    CASE_REC(tes_prefab_members(w, F.p, NULL, -1) == -1, inv);
    CASE_NOREC(tes_prefab_members(w, F.p, NULL, 0) == 2);
    CASE_REC(tes_instantiate(w, F.p, NULL, 1) == 0, inv);
    CASE_REC(tes_instantiate(w, F.p, NULL, 2) == 0, inv);
    CASE_REC(tes_instantiate(w, F.p, ebuf, -1) == 0, inv);
    CASE_REC(tes_instantiate(w, F.p, ebuf, INT32_MIN) == 0, inv);
    CASE_ST(tes_instantiate_n(w, F.p, -1, ibuf), inv);
    CASE_ST(tes_instantiate_n(w, F.p, INT32_MIN, ibuf), inv);
    CASE_ST(tes_instantiate_n(w, F.p, 1, NULL), inv);
    CASE_ST(tes_instantiate_n(w, F.p, 3, NULL), inv);

    /* Short buffers: only cap entries are written. */
    {
        tes_entity_t sb[3] = {TES_NULL, 77, 77};
        CASE_NOREC(tes_prefab_members(w, F.p, sb, 1) == 2 && sb[0] == F.p && sb[1] == 77);
        sb[0] = 77;
        CASE_NOREC(tes_instance_members(w, F.inst, sb, 1) == 2 && sb[0] == F.m[0] &&
                   sb[1] == 77);
        tes_comp_t cb[3] = {0, 77, 77};
        CASE_NOREC(tes_components_of(w, F.a, cb, 1) == 4 && cb[0] == F.pos && cb[1] == 77);
        sb[0] = sb[1] = sb[2] = 77;
        tes_instance_t si = tes_instantiate(w, F.p, sb, 1);
        CASE_PLAIN(si != 0 && sb[0] != 77 && sb[1] == 77);
        CASE_PLAIN(tes_instance_destroy(w, si) == TES_OK && tes__world_check(w) == TES_OK);
    }

    /* Bad instance ids. */
    for (int i = 0; i < MIS_NBAD_INST; i++) {
        tes_instance_t in = F.bad_inst[i];
        g_note = F.bad_inst_name[i];
        CASE_ST(tes_instance_destroy(w, in), stale);
        CASE_NOREC(!tes_instance_alive(w, in));
        CASE_REC(tes_instance_members(w, in, ebuf, 4) == -1, stale);
        CASE_REC(tes_instance_members(w, in, NULL, 0) == -1, stale);
        CASE_ST(tes_instance_adopt(w, in, F.b), stale);
        CASE_ST(tes_instance_adopt(w, in, F.m[0]), stale);
    }
    g_note = NULL;
    CASE_REC(tes_instance_members(w, F.inst, NULL, 1) == -1, inv);
    CASE_REC(tes_instance_members(w, F.inst, ebuf, -1) == -1, inv);
    CASE_REC(tes_instance_members(w, F.inst, NULL, -1) == -1, inv);
    CASE_NOREC(tes_instance_members(w, F.inst, NULL, 0) == 2);

    /* Membership misuse. */
    CASE_NOREC(tes_instance_of(w, F.a) == 0);
    CASE_NOREC(tes_instance_of(w, F.p) == 0);
    CASE_ST(tes_instance_detach(w, F.a), inv);
    CASE_ST(tes_instance_detach(w, F.p), inv);
    CASE_ST(tes_instance_detach(w, F.pc), inv);
    CASE_ST(tes_instance_adopt(w, F.inst, F.m[0]), inv); /* already in it */
    CASE_ST(tes_instance_adopt(w, F.inst, F.m[1]), inv);
    /* Both stale: either STALE is right; it must fail and record it. */
    CASE_ST(tes_instance_adopt(w, F.bad_inst[1], F.bad[1]), stale);

    /* A member of another instance cannot be adopted. */
    tes_entity_t om[2];
    tes_instance_t other = tes_instantiate(w, F.p, om, 2);
    CASE_PLAIN(other != 0);
    CASE_ST(tes_instance_adopt(w, F.inst, om[0]), inv);
    CASE_ST(tes_instance_adopt(w, other, F.m[1]), inv);
    CASE_PLAIN(tes_instance_destroy(w, other) == TES_OK);
    CASE_ST(tes_instance_destroy(w, other), stale);
    CASE_ST(tes_instance_adopt(w, other, F.b), stale);
    CASE_NOREC(tes_instance_of(w, om[0]) == 0);

    /* A destroyed prefab root: STALE; its former child is not a root. */
    tes_entity_t p2 = tes_prefab_new(w);
    tes_entity_t c2 = tes_prefab_child(w, p2);
    CASE_PLAIN(p2 != TES_NULL && c2 != TES_NULL && tes_destroy(w, p2) == TES_OK);
    CASE_REC(tes_prefab_child(w, p2) == TES_NULL, stale);
    CASE_REC(tes_prefab_members(w, p2, ebuf, 4) == -1, stale);
    CASE_REC(tes_instantiate(w, p2, ebuf, 4) == 0, stale);
    CASE_ST(tes_instantiate_n(w, p2, 1, ibuf), stale);
    CASE_REC(tes_prefab_child(w, c2) == TES_NULL, inv);
    CASE_REC(tes_instantiate(w, c2, ebuf, 4) == 0, inv);
    CASE_PLAIN(tes_destroy(w, c2) == TES_OK);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
}

/* TES_ERR_FULL: a world with room for one more entity refuses whatever
 * needs two, then, once full, whatever needs one. */
void mis_cases_full(void)
{
    tes_world_desc_t wd;
    memset(&wd, 0, sizeof wd);
    wd.entity_limit = 4;
    tes_world_t *w = tes_world_new(&wd);
    CASE_PLAIN(w != NULL);
    if (!w) {
        return;
    }
    tes_comp_t c = tes_component(w, &(tes_component_desc_t){.name = "C", .size = 8});
    tes_entity_t p = tes_prefab_new(w);
    tes_entity_t pc = tes_prefab_child(w, p);
    tes_entity_t e = tes_spawn(w);
    CASE_PLAIN(c != 0 && p && pc && e && tes_add(w, e, c) == TES_OK && tes_add(w, pc, c) == TES_OK);
    const tes_entity_t tracked[] = {p, pc, e};
    mis_watch(w, tracked, 3, 0);
    const int full = TES_ERR_FULL;
    tes_entity_t ebuf[4];
    tes_instance_t ibuf[2];

    CASE_ST(tes_spawn_n(w, 2, &c, 1, ebuf), full);
    CASE_ST(tes_spawn_n(w, 3, NULL, 0, ebuf), full);
    CASE_REC(tes_instantiate(w, p, ebuf, 4) == 0, full);
    CASE_ST(tes_instantiate_n(w, p, 1, ibuf), full);
    CASE_ST(tes_instantiate_n(w, p, 2, ibuf), full);

    tes_entity_t last = tes_spawn(w);
    CASE_PLAIN(last != TES_NULL);
    const tes_entity_t tracked2[] = {p, pc, e, last};
    mis_watch(w, tracked2, 4, 0);
    CASE_REC(tes_spawn(w) == TES_NULL, full);
    CASE_ST(tes_spawn_n(w, 1, NULL, 0, ebuf), full);
    CASE_REC(tes_clone(w, e) == TES_NULL, full);
    CASE_REC(tes_prefab_new(w) == TES_NULL, full);
    CASE_REC(tes_prefab_child(w, p) == TES_NULL, full);
    /* Deferred: the handle would be issued at once, so FULL at once too. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    CASE_REC(tes_spawn(w) == TES_NULL, full);
    CASE_REC(tes_clone(w, e) == TES_NULL, full);
    CASE_PLAIN(tes_defer_end(w) == TES_OK);
    /* A destroyed slot is reusable: not full any more (sanity). */
    CASE_PLAIN(tes_destroy(w, last) == TES_OK && tes_spawn(w) != TES_NULL);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
    g_w = NULL;
    g_ntracked = 0;
    tes_world_free(w);

    /* Retired slots count toward entity_limit: generation_limit 1 retires
     * a slot at its first destroy. */
    wd.entity_limit = 2;
    wd.generation_limit = 1;
    w = tes_world_new(&wd);
    CASE_PLAIN(w != NULL);
    if (!w) {
        return;
    }
    tes_entity_t r = tes_spawn(w);
    CASE_PLAIN(r != TES_NULL && tes_destroy(w, r) == TES_OK);
    tes_entity_t live = tes_spawn(w);
    CASE_PLAIN(live != TES_NULL && tes_entity_index(live) != tes_entity_index(r));
    mis_watch(w, &live, 1, 0);
    CASE_REC(tes_spawn(w) == TES_NULL, full);
    CASE_ST(tes_spawn_n(w, 1, NULL, 0, ebuf), full);
    CASE_REC(tes_clone(w, live) == TES_NULL, full);
    CASE_REC(tes_prefab_new(w) == TES_NULL, full);
    CASE_ST(tes_destroy(w, r), TES_ERR_STALE);
    CASE_REC(tes_clone(w, r) == TES_NULL, TES_ERR_STALE);
    CASE_NOREC(!tes_alive(w, r) && !tes_alive(w, tes_entity_make(tes_entity_index(r), 2)));
    g_w = NULL;
    g_ntracked = 0;
    tes_world_free(w);
}
