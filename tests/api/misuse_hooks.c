/*
 * API misuse, part 4: structural calls from inside hooks. F.hk's observers
 * (on_add, on_set, on_remove) try every structural call and each must fail
 * with TES_ERR_BUSY, record it and change nothing, while reads keep working;
 * its value hooks (ctor, dtor) try a spawn and an add, which must be
 * refused too. The hooks fire from tes_add, tes_set, tes_remove,
 * tes_spawn_n, tes_destroy, tes_clear and from a deferred flush.
 */
#include "api/misuse.h"

#include "world/check.h"

static int g_armed;      /* hooks try calls only while set */
static int g_batteries;  /* observer batteries run */
static int g_value_runs; /* value hooks that tried calls */
static int g_value_bad;  /* value-hook calls that were not refused */

static void busy_battery(tes_world_t *w, tes_entity_t self, const char *where)
{
    const int busy = TES_ERR_BUSY;
    const mis_pos_t v = {50, 60};
    const tes_comp_t comps[] = {F.pos};
    tes_entity_t ebuf[4];
    tes_instance_t ibuf[2];
    g_batteries++;
    g_in_hook++;
    g_note = where;
    CASE_REC(tes_spawn(w) == TES_NULL, busy);
    CASE_ST(tes_spawn_n(w, 2, comps, 1, ebuf), busy);
    CASE_ST(tes_spawn_n(w, 1, NULL, 0, ebuf), busy);
    CASE_ST(tes_destroy(w, F.b), busy);
    CASE_ST(tes_destroy(w, self), busy);
    CASE_ST(tes_add(w, F.b, F.tag), busy);
    CASE_ST(tes_add(w, F.b, F.vel), busy);
    CASE_ST(tes_add(w, self, F.pos), busy);
    CASE_ST(tes_set(w, F.b, F.pos, &v), busy);
    CASE_ST(tes_set(w, F.b, F.vel, &v), busy);
    CASE_ST(tes_set(w, F.b, F.tag, NULL), busy);
    CASE_REC(tes_ensure(w, F.b, F.vel) == NULL, busy);
    CASE_REC(tes_ensure(w, F.b, F.stab) == NULL, busy);
    CASE_ST(tes_remove(w, F.a, F.pos), busy);
    CASE_ST(tes_remove(w, F.a, F.vel), busy);
    CASE_ST(tes_remove(w, self, F.hk), busy);
    CASE_ST(tes_clear(w, F.a), busy);
    CASE_ST(tes_clear(w, self), busy);
    CASE_REC(tes_clone(w, F.a) == TES_NULL, busy);
    CASE_REC(tes_clone(w, self) == TES_NULL, busy);
    CASE_ST(tes_disable(w, F.b), busy);
    CASE_ST(tes_enable(w, F.dis), busy);
    CASE_REC(tes_prefab_new(w) == TES_NULL, busy);
    CASE_REC(tes_prefab_child(w, F.p) == TES_NULL, busy);
    CASE_REC(tes_instantiate(w, F.p, ebuf, 4) == 0, busy);
    CASE_ST(tes_instantiate_n(w, F.p, 2, ibuf), busy);
    CASE_ST(tes_instance_destroy(w, F.inst), busy);
    CASE_ST(tes_instance_detach(w, F.m[0]), busy);
    CASE_ST(tes_instance_adopt(w, F.inst, F.b), busy);
    /* Reads and tes_get_mut still work. */
    CASE_NOREC(tes_alive(w, F.a) && tes_has(w, F.a, F.pos) && tes_get(w, F.a, F.pos) != NULL);
    CASE_NOREC(tes_get_mut(w, F.b, F.pos) != NULL);
    CASE_NOREC(tes_alive(w, self));
    g_note = NULL;
    g_in_hook--;
}

static void value_battery(void)
{
    tes_world_t *w = F.w;
    g_value_runs++;
    if (tes_spawn(w) != TES_NULL || tes_last_error(w) != TES_ERR_BUSY) {
        g_value_bad++;
    }
    if (tes_add(w, F.b, F.tag) != TES_ERR_BUSY || tes_last_error(w) != TES_ERR_BUSY) {
        g_value_bad++;
    }
    if (tes_destroy(w, F.b) != TES_ERR_BUSY) {
        g_value_bad++;
    }
}

void mis_hk_ctor(void *ptr, int32_t count, void *ctx)
{
    (void)ctx;
    int32_t *v = ptr;
    for (int32_t i = 0; i < count; i++) {
        v[i] = 0;
    }
    if (g_armed) value_battery();
}

void mis_hk_dtor(void *ptr, int32_t count, void *ctx)
{
    (void)ptr, (void)count, (void)ctx;
    if (g_armed) value_battery();
}

void mis_hk_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr, (void)ctx;
    if (g_armed) busy_battery(w, e, "inside on_add");
}

void mis_hk_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr, (void)ctx;
    if (g_armed) busy_battery(w, e, "inside on_set");
}

void mis_hk_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)ptr, (void)ctx;
    if (g_armed) busy_battery(w, e, "inside on_remove");
}

/* Runs `ok` (the outer call's success) and checks the batteries ran. */
static void outer(const char *what, const char *file, int line, bool ok, int want_batteries)
{
    mis_plain(what, file, line, ok);
    mis_plain("observer batteries ran", file, line, g_batteries == want_batteries);
    mis_plain("value hooks refused structural calls", file, line, g_value_bad == 0);
    mis_plain("tes__world_check after the outer call", file, line,
              tes__world_check(F.w) == TES_OK);
    g_batteries = 0;
}
#define OUTER(call, n) outer(#call, __FILE__, __LINE__, (call), (n))

void mis_cases_hooks(void)
{
    tes_world_t *w = F.w;
    const int32_t one = 1;
    tes_entity_t h = tes_spawn(w);
    CASE_PLAIN(h != TES_NULL);
    g_armed = 1;
    g_batteries = 0;
    g_value_runs = 0;

    OUTER(tes_add(w, h, F.hk) == TES_OK, 1);
    CASE_PLAIN(g_value_runs > 0);
    OUTER(tes_set(w, h, F.hk, &one) == TES_OK, 1);
    OUTER(tes_remove(w, h, F.hk) == TES_OK, 1);
    OUTER(tes_set(w, h, F.hk, &one) == TES_OK, 2); /* on_add, then on_set */
    OUTER(tes_clear(w, h) == TES_OK, 1);

    /* Bulk spawn: on_add per entity. */
    tes_entity_t sp[2];
    const tes_comp_t hkc[] = {F.hk, F.tag};
    OUTER(tes_spawn_n(w, 2, hkc, 2, sp) == TES_OK, 2);
    OUTER(tes_destroy(w, sp[0]) == TES_OK, 1);
    OUTER(tes_destroy(w, sp[1]) == TES_OK, 1);

    /* Hooks run by a deferred flush see an undeferred world and are still
     * refused; those refusals are not command failures. */
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    OUTER(tes_add(w, h, F.hk) == TES_OK, 0);
    OUTER(tes_defer_end(w) == TES_OK, 1);
    CASE_PLAIN(tes_has(w, h, F.hk));
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    OUTER(tes_destroy(w, h) == TES_OK, 0);
    OUTER(tes_defer_end(w) == TES_OK, 1);
    CASE_PLAIN(!tes_alive(w, h));

    /* Clone, prefab instantiation (single and bulk) and instance destroy. */
    g_armed = 0;
    tes_entity_t src = tes_spawn(w);
    tes_entity_t pf = tes_prefab_new(w);
    tes_entity_t pfc = tes_prefab_child(w, pf);
    CASE_PLAIN(src && pf && pfc && tes_set(w, src, F.hk, &one) == TES_OK &&
               tes_set(w, pf, F.hk, &one) == TES_OK && tes_set(w, pfc, F.hk, &one) == TES_OK);
    g_armed = 1;
    tes_entity_t cl = TES_NULL;
    OUTER((cl = tes_clone(w, src)) != TES_NULL, 1);
    tes_entity_t im[2];
    tes_instance_t in1 = 0;
    OUTER((in1 = tes_instantiate(w, pf, im, 2)) != 0, 2);
    tes_instance_t inn[2] = {0, 0};
    OUTER(tes_instantiate_n(w, pf, 2, inn) == TES_OK, 4);
    OUTER(tes_instance_destroy(w, in1) == TES_OK, 2);
    OUTER(tes_instance_destroy(w, inn[0]) == TES_OK, 2);

    /* Hooks run by the flush at the end of an iteration. */
    tes_query_desc_t qd = {.terms = {{.comp = F.hk}}};
    tes_query_t *q = tes_query_new(w, &qd);
    CASE_PLAIN(q != NULL);
    tes_iter_t it = tes_query_iter(q);
    OUTER(tes_iter_next(&it) && tes_remove(w, cl, F.hk) == TES_OK, 0);
    tes_iter_fini(&it);
    outer("flush by tes_iter_fini", __FILE__, __LINE__, !tes_is_deferred(w), 1);
    tes_query_free(q);

    OUTER(tes_instance_destroy(w, inn[1]) == TES_OK, 2);
    OUTER(tes_destroy(w, src) == TES_OK, 1);
    OUTER(tes_destroy(w, cl) == TES_OK, 0); /* its hk went at the flush */
    g_armed = 0;
    CASE_PLAIN(tes_destroy(w, pf) == TES_OK && tes_destroy(w, pfc) == TES_OK);

    /* Nothing the batteries tried took effect. */
    CASE_PLAIN(!tes_has(w, F.b, F.tag) && !tes_has(w, F.b, F.vel) && tes_alive(w, F.b));
    CASE_PLAIN(tes_has(w, F.a, F.pos) && tes_has(w, F.a, F.vel));
    CASE_PLAIN(tes_instance_of(w, F.m[0]) == F.inst && !tes_enabled(w, F.dis));
    const mis_pos_t *bp = tes_get(w, F.b, F.pos);
    CASE_PLAIN(bp != NULL && bp->x == 9 && bp->y == 10);
}
