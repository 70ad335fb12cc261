/*
 * The calls of the twin-world property test (see driver_twin.c): each makes
 * one deferrable call, with the same arguments, in the deferred world and
 * in its immediate twin, and checks what can be checked at once (return
 * codes, handles made, the value a tes_ensure starts from).
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/twin.h"

/* ------------------------------------------------------------------ calls */

/* Both return codes must agree. */
static void same_rc(tw_t *t, int rd, int ri)
{
    if (rd != ri)
        tw_fail(t, "returned %d deferred, %d immediate", rd, ri);
}

static void op_set(tw_t *t, int e)
{
    t->op = "set";
    int k = tw_data_comp(t);
    int32_t x = (int32_t)tw_draw(t, 1000);
    union { tw_v_t v; tw_r_t r; int32_t i; } vals[2];
    snprintf(t->trace, sizeof t->trace, "#%d %s %d", e, tw_names[k], x);
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tw_make_value(t, s, k, x, &vals[s]);
        rc[s] = tes_set(t->s[s].w, t->s[s].h[e], t->s[s].id[k], &vals[s]);
    }
    same_rc(t, rc[0], rc[1]);
}

static void op_add_remove(tw_t *t, int e, bool add)
{
    t->op = add ? "add" : "remove";
    int k = (int)tw_draw(t, TW_NCOMP);
    int rc[2];
    snprintf(t->trace, sizeof t->trace, "#%d %s", e, tw_names[k]);
    for (int s = 0; s < 2; s++)
        rc[s] = add ? tes_add(t->s[s].w, t->s[s].h[e], t->s[s].id[k])
                    : tes_remove(t->s[s].w, t->s[s].h[e], t->s[s].id[k]);
    same_rc(t, rc[0], rc[1]);
}

/* tes_ensure, then (two times in three) a write through the pointer:
 * an increment or a plain store. */
static void op_ensure(tw_t *t, int e)
{
    t->op = "ensure";
    int k = tw_data_comp(t);
    uint32_t how = tw_draw(t, 3);
    int32_t x = 1 + (int32_t)tw_draw(t, 600);
    snprintf(t->trace, sizeof t->trace, "#%d %s %s %d", e, tw_names[k],
             how == 0 ? "no write" : how == 1 ? "+=" : "=", x);
    void *p[2];
    for (int s = 0; s < 2; s++)
        p[s] = tes_ensure(t->s[s].w, t->s[s].h[e], t->s[s].id[k]);
    if (!p[0] || !p[1]) {
        if (p[0] || p[1])
            tw_fail(t, "ensure of %s on #%d: a pointer in one world only", tw_names[k], e);
        return;
    }
    int32_t vd[2], vi[2];
    tw_logical_value(t, 0, k, p[0], vd);
    tw_logical_value(t, 1, k, p[1], vi);
    if (vd[0] != vi[0] || vd[1] != vi[1]) {
        tw_fail(t, "ensure of %s on #%d starts from %d (ref #%d) deferred, %d (ref #%d) immediate",
             tw_names[k], e, vd[0], vd[1], vi[0], vi[1]);
        return;
    }
    for (int s = 0; s < 2; s++) {
        if (how == 1)
            tw_bump(k, p[s], x);
        else if (how == 2 && k != TW_R)
            *(int32_t *)p[s] = x;
    }
}

static void op_clone(tw_t *t, int e)
{
    t->op = "clone";
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++)
        c[s] = tes_clone(t->s[s].w, t->s[s].h[e]);
    tw_fresh(t, c[0], c[1]);
    snprintf(t->trace, sizeof t->trace, "#%d -> #%d", e, tw_logical(&t->s[1], t, c[1]));
}

static void op_destroy_n(tw_t *t)
{
    t->op = "destroy_n";
    int ids[3], n = 0;
    for (int j = 0; j < 3; j++) {
        int e = tw_pick(t);
        bool dup = e < 0;
        for (int m = 0; m < n; m++)
            dup |= ids[m] == e;
        if (!dup)
            ids[n++] = e;
    }
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tes_entity_t es[3];
        for (int m = 0; m < n; m++)
            es[m] = t->s[s].h[ids[m]];
        rc[s] = tes_destroy_n(t->s[s].w, es, n);
    }
    same_rc(t, rc[0], rc[1]);
}

/* tes_clear, tes_disable, tes_enable or tes_destroy of e. */
static void op_simple(tw_t *t, int e, int which)
{
    static const char *const names[] = {"clear", "disable", "enable", "destroy"};
    t->op = names[which];
    snprintf(t->trace, sizeof t->trace, "#%d", e);
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tes_world_t *w = t->s[s].w;
        tes_entity_t h = t->s[s].h[e];
        rc[s] = which == 0   ? tes_clear(w, h)
                : which == 1 ? tes_disable(w, h)
                : which == 2 ? tes_enable(w, h)
                             : tes_destroy(w, h);
    }
    same_rc(t, rc[0], rc[1]);
}

static void op_destroy(tw_t *t, int e) { op_simple(t, e, 3); }

static void op_spawn(tw_t *t)
{
    t->op = "spawn";
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++)
        c[s] = tes_spawn(t->s[s].w);
    snprintf(t->trace, sizeof t->trace, "-> #%d", tw_fresh(t, c[0], c[1]));
}

/* A bundle of up to three distinct components, each given a value or not. */
static int bundle(tw_t *t, int comps[3], bool given[3], int32_t xs[3])
{
    int n = 0;
    for (int j = 0, want = 1 + (int)tw_draw(t, 3); j < want; j++) {
        /* Not the observed H and S: a deferred bundle applies its values
         * one after the other, so their observers would see what the
         * immediate call, which places every value first, does not (a
         * documented difference, see docs/reference.md). */
        static const int bundled[] = {TW_A, TW_V, TW_R, TW_T};
        int k = bundled[tw_draw(t, 4)];
        bool dup = false;
        for (int m = 0; m < n; m++)
            dup |= comps[m] == k;
        if (dup)
            continue;
        comps[n] = k;
        given[n] = k != TW_T && tw_draw(t, 3) != 0;
        xs[n++] = (int32_t)tw_draw(t, 1000);
    }
    return n;
}

static void op_spawn_with(tw_t *t)
{
    t->op = "spawn_with";
    int comps[3];
    bool given[3];
    int32_t xs[3];
    int n = bundle(t, comps, given, xs);
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++) {
        union { tw_v_t v; tw_r_t r; int32_t i; } vals[3];
        tes_value_t tv[3];
        for (int m = 0; m < n; m++) {
            tw_make_value(t, s, comps[m], xs[m], &vals[m]);
            tv[m] = (tes_value_t){t->s[s].id[comps[m]], given[m] ? (void *)&vals[m] : NULL};
        }
        c[s] = tes_spawn_with(t->s[s].w, tv, n);
    }
    int id = tw_fresh(t, c[0], c[1]);
    int len = snprintf(t->trace, sizeof t->trace, "-> #%d:", id);
    for (int m = 0; m < n && len > 0 && (size_t)len < sizeof t->trace; m++)
        len += snprintf(t->trace + len, sizeof t->trace - (size_t)len, " %s%s%d",
                        tw_names[comps[m]], given[m] ? "=" : "", given[m] ? xs[m] : 0);
}

/* tes_spawn_n (no data) or tes_spawn_bulk (data for each component). */
static void op_spawn_many(tw_t *t, bool bulk)
{
    t->op = bulk ? "spawn_bulk" : "spawn_n";
    int comps[3];
    bool given[3];
    int32_t xs[3];
    int n = bundle(t, comps, given, xs);
    int count = 1 + (int)tw_draw(t, 3);
    tes_entity_t out[2][3];
    int rc[2];
    for (int s = 0; s < 2; s++) {
        tes_comp_t ids[3];
        const void *data[3];
        for (int m = 0; m < n; m++) { /* count values of the component's own size */
            static _Alignas(8) uint8_t packed[2][3][3 * sizeof(tw_r_t)];
            union { tw_v_t v; tw_r_t r; int32_t i; } one;
            size_t size = comps[m] == TW_V ? sizeof(tw_v_t) : comps[m] == TW_R ? sizeof(tw_r_t)
                                                                              : sizeof(int32_t);
            ids[m] = t->s[s].id[comps[m]];
            for (int j = 0; j < count; j++) {
                tw_make_value(t, s, comps[m], xs[m] + j, &one);
                memcpy(packed[s][m] + (size_t)j * size, &one, size);
            }
            data[m] = given[m] ? (const void *)packed[s][m] : NULL;
        }
        if (bulk) {
            tes_bulk_desc_t bd = {count, ids, n, data, out[s]};
            rc[s] = tes_spawn_bulk(t->s[s].w, &bd);
        } else
            rc[s] = tes_spawn_n(t->s[s].w, count, ids, n, out[s]);
    }
    same_rc(t, rc[0], rc[1]);
    int first = -1;
    for (int j = 0; rc[0] == TES_OK && j < count; j++) {
        int id = tw_fresh(t, out[0][j], out[1][j]);
        first = j ? first : id;
    }
    snprintf(t->trace, sizeof t->trace, "%d from #%d, %d comps", count, first, n);
}

static void op_prefab(tw_t *t)
{
    int root = tw_pick_prefab(t);
    bool child = root >= 0 && tw_draw(t, 3) != 0;
    t->op = child ? "prefab_child" : "prefab_new";
    tes_entity_t c[2];
    for (int s = 0; s < 2; s++)
        c[s] = child ? tes_prefab_child(t->s[s].w, t->s[s].h[root]) : tes_prefab_new(t->s[s].w);
    int id = tw_fresh(t, c[0], c[1]);
    snprintf(t->trace, sizeof t->trace, "of #%d -> #%d", root, id);
    if (id >= 0 && !child)
        t->prefab[id] = true;
}

static void op_instantiate(tw_t *t)
{
    int root = tw_pick_prefab(t);
    if (root < 0)
        return;
    bool many = tw_draw(t, 3) == 0;
    t->op = many ? "instantiate_n" : "instantiate";
    int32_t n = many ? 1 + (int32_t)tw_draw(t, 2) : 1;
    tes_entity_t out[2][64];
    int32_t got[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        tes_world_t *w = t->s[s].w;
        tes_instance_t inst[2] = {0, 0};
        if (many) {
            if (tes_instantiate_n(w, t->s[s].h[root], n, inst))
                continue;
        } else if (!(inst[0] = tes_instantiate(w, t->s[s].h[root], NULL, 0)))
            continue;
        for (int32_t j = 0; j < n; j++) {
            int32_t m = tes_instance_members(w, inst[j], out[s] + got[s], 32);
            got[s] += m > 32 ? 32 : m < 0 ? 0 : m;
        }
    }
    if (got[0] != got[1]) {
        tw_fail(t, "instances of #%d: %d members deferred, %d immediate", root, got[0], got[1]);
        return;
    }
    int first = -1;
    for (int32_t j = 0; j < got[0]; j++) {
        int id = tw_fresh(t, out[0][j], out[1][j]);
        first = j ? first : id;
    }
    snprintf(t->trace, sizeof t->trace, "#%d x%d -> %d from #%d", root, n, got[0], first);
}

static void op_instance_destroy(tw_t *t, int e)
{
    t->op = "instance_destroy";
    snprintf(t->trace, sizeof t->trace, "of #%d", e);
    tes_instance_t inst[2] = {tes_instance_of(t->s[0].w, t->s[0].h[e]),
                              tes_instance_of(t->s[1].w, t->s[1].h[e])};
    if (!inst[0] || !inst[1]) {
        if (inst[0] || inst[1])
            tw_fail(t, "#%d: an instance in one world only", e);
        return;
    }
    int rc[2];
    for (int s = 0; s < 2; s++)
        rc[s] = tes_instance_destroy(t->s[s].w, inst[s]);
    same_rc(t, rc[0], rc[1]);
}

/* First in a batch only: writes through tes_get_mut land at once, and
 * tes_destroy_matching takes its matches at the call. */
void tw_op_first(tw_t *t)
{
    if (tw_draw(t, 2)) {
        t->op = "destroy_matching";
        uint32_t which = tw_draw(t, 2);
        snprintf(t->trace, sizeof t->trace, "%s", which ? "S,A" : "T");
        int32_t n[2];
        for (int s = 0; s < 2; s++)
            n[s] = tes_destroy_matching(t->s[s].q[which]);
        same_rc(t, n[0], n[1]);
        t->unordered = t->s[1].nlog;
        return;
    }
    int e = tw_pick(t);
    if (e < 0)
        return;
    t->op = "get_mut";
    int k = tw_data_comp(t);
    int32_t x = (int32_t)tw_draw(t, 100);
    snprintf(t->trace, sizeof t->trace, "#%d %s += %d", e, tw_names[k], x);
    for (int s = 0; s < 2; s++) {
        void *p = tes_get_mut(t->s[s].w, t->s[s].h[e], t->s[s].id[k]);
        if (p)
            tw_bump(k, p, x);
    }
}

/* Logical ids not in use. An id comes free only at the compare after the
 * batch in which its entity died in both worlds, so many spawns and
 * instances in a row can use up the table although the live population
 * stays near TW_POP. */
static int ids_left(const tw_t *t)
{
    int n = 0;
    for (int i = 0; i < TW_MAX; i++)
        n += !t->used[i];
    return n;
}

void tw_one_call(tw_t *t)
{
    /* Near the end of the id table a call that makes entities could find
     * no id for them, which would end the run as a false divergence: such
     * a call becomes a destroy until the compare frees ids again. */
    if (ids_left(t) < TW_GROWTH) {
        int e = tw_pick(t);
        if (e >= 0)
            op_destroy(t, e);
        return;
    }
    uint32_t pop = tw_population(t);
    uint32_t r = tw_draw(t, 100);
    if (pop < 4 || (pop < TW_POP && r < 12)) {
        uint32_t how = tw_draw(t, 10);
        if (how < 3)
            op_spawn(t);
        else if (how < 5)
            op_spawn_with(t);
        else if (how < 6)
            op_spawn_many(t, false);
        else if (how < 7)
            op_spawn_many(t, true);
        else if (how < 9)
            op_prefab(t);
        else
            op_instantiate(t);
        return;
    }
    int e = tw_pick(t);
    if (e < 0)
        return;
    if (pop > TW_POP && r < 25) {
        op_destroy(t, e);
        return;
    }
    if (r < 30)
        op_set(t, e);
    else if (r < 50)
        op_ensure(t, e);
    else if (r < 58)
        op_add_remove(t, e, true);
    else if (r < 66)
        op_add_remove(t, e, false);
    else if (r < 74)
        op_clone(t, e);
    else if (r < 78)
        op_instantiate(t);
    else if (r < 81)
        op_prefab(t);
    else if (r < 84)
        op_destroy(t, e);
    else if (r < 86)
        op_destroy_n(t);
    else if (r < 89)
        op_simple(t, e, 0);
    else if (r < 92)
        op_simple(t, e, 1);
    else if (r < 95)
        op_simple(t, e, 2);
    else if (r < 97)
        op_instance_destroy(t, e);
    else
        op_spawn(t);
}

