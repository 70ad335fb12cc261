/*
 * API misuse test (ctest api_misuse): every public function of tessera.h
 * called with each kind of bad input that applies to it, checking that it
 * returns its documented error, records it in tes_last_error exactly when
 * the reference says it does, leaves the world unchanged (entity counts,
 * registered components, the values and components of tracked entities,
 * instance membership, observer calls, deferral) and keeps
 * tes__world_check passing.
 *
 * Bad inputs covered: NULL world; NULL out-pointers with cap/n > 0;
 * negative caps and counts; TES_NULL; a destroyed handle; the old handle of
 * a recycled slot (the new entity must stay untouched); indices never
 * issued (a fresh index, TES_NULL_INDEX, generation 0, a future
 * generation, one past generation_limit, TES_MAX_GENERATION); handles
 * of a retired slot (generation_limit 2) and the
 * tombstone generation; component id 0 and ids never registered; tags where
 * data is expected; NULL/invalid component and query descs (names, sizes,
 * aligns, storage, entity fields, too many or repeated terms, bad
 * oper/access/flags, bad group setups); stale, zero and never-issued
 * instance ids; non-prefab entities given to prefab calls; structural calls
 * from inside hooks (TES_ERR_BUSY); tes_defer_end without begin; finished,
 * zeroed and NULL iterators; NULL queries and worlds; unknown status codes;
 * and TES_ERR_FULL / TES_ERR_OWNED where they apply.
 *
 * Files: misuse.c (harness, fixture, world, components, entities),
 * misuse_query.c (queries, iterators, deferral), misuse_prefab.c (prefabs,
 * instances, entity limit), misuse_hooks.c (calls from inside hooks),
 * misuse_bulk.c (bundles, bulk and batch calls), misuse_round3.c and
 * misuse_round3_io.c (hierarchy, names, depth order, change detection,
 * reflection, JSON, systems, snapshots; misuse_r3.h).
 * Prints "misuse: N cases, M failures" and exits nonzero on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "api/misuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/counting_alloc.h"
#include "world/check.h"

mis_fixture_t F;
tes_world_t *g_w;
const char *g_note;
int g_in_hook;
int g_cases, g_failures;
int32_t g_obs[3];
tes_entity_t g_tracked[MIS_MAX_TRACKED];
int32_t g_ntracked;
tes_instance_t g_track_inst;

/* ------------------------------------------------------------------ harness */

void mis_snap_take(mis_snap_t *s)
{
    memset(s, 0, sizeof *s);
    tes_world_stats_t st;
    memset(&st, 0, sizeof st);
    int stats_rc = tes_world_stats(g_w, &st);
    s->alive = stats_rc == TES_OK ? st.entities_alive : UINT32_MAX;
    s->slots = st.entity_slots;
    s->retired = st.entities_retired;
    s->free_ = st.entities_free;
    s->components = st.components;
    /* Not st.tables: a failed call may leave an empty table behind
     * (docs/guarantees.md, what a failed call leaves behind). */
    s->tables = 0;
    s->instances = st.instances_alive;
    s->deferred = tes_is_deferred(g_w) ? 1 : 0;
    memcpy(s->obs, g_obs, sizeof s->obs);
    if (g_track_inst != 0) {
        s->inst_n = tes_instance_members(g_w, g_track_inst, s->inst_m, 8);
    }
    s->ntracked = g_ntracked;
    for (int32_t i = 0; i < g_ntracked; i++) {
        mis_ent_snap_t *es = &s->ent[i];
        tes_entity_t e = g_tracked[i];
        es->e = e;
        es->alive = tes_alive(g_w, e) ? 1 : 0;
        es->ncomps = tes_components_of(g_w, e, es->comps, MIS_MAX_COMPS);
        const void *v = tes_get(g_w, e, F.pos);
        if (v) {
            es->has_pos = 1;
            memcpy(es->pos, v, sizeof es->pos);
        }
        v = tes_get(g_w, e, F.vel);
        if (v) {
            es->has_vel = 1;
            memcpy(es->vel, v, sizeof es->vel);
        }
        v = tes_get(g_w, e, F.stab);
        if (v) {
            es->has_stab = 1;
            memcpy(es->stab, v, sizeof es->stab);
        }
        es->inst = tes_instance_of(g_w, e);
    }
}

int mis_prime(int not_this)
{
    if (g_in_hook) {
        /* Structural calls are refused inside hooks; registration is not. */
        (void)tes_component(g_w, NULL);
        return tes_last_error(g_w);
    }
    if (not_this == TES_ERR_STALE) {
        (void)tes_component(g_w, NULL); /* TES_ERR_INVALID */
    } else {
        (void)tes_destroy(g_w, TES_NULL); /* TES_ERR_STALE */
    }
    return tes_last_error(g_w);
}

int mis_prime_norec(void)
{
    /* TES_ERR_OWNED, which none of the checked calls returns, so any
     * recording shows; other worlds and hooks fall back to mis_prime. */
    if (!g_in_hook && g_w == F.w && F.w != NULL) {
        (void)tes_destroy(g_w, F.m[0]);
        return tes_last_error(g_w);
    }
    return mis_prime(TES_ERR_INVALID);
}

static void fail_head(const char *expr, const char *file, int line)
{
    g_failures++;
    fprintf(stderr, "FAIL %s:%d: %s%s%s%s\n", file, line, expr, g_note ? " [" : "",
            g_note ? g_note : "", g_note ? "]" : "");
}

/* A stale handle's detail names the handle ("entity 5:1 ...", "instance
 * ...", or the null handle) and its case. */
static bool stale_detail_ok(const char *d)
{
    bool handle = strncmp(d, "entity ", 7) == 0 || strncmp(d, "instance ", 9) == 0 ||
                  strncmp(d, "the entity handle is 0", 22) == 0 ||
                  strncmp(d, "the instance handle is 0", 24) == 0;
    bool why = strstr(d, "destroyed") || strstr(d, "never issued") || strstr(d, "no longer alive") ||
               strstr(d, "never set");
    return handle && why;
}

void mis_finish(const char *expr, const char *file, int line, bool ok, const mis_snap_t *before,
                int want_last)
{
    g_cases++;
    bool failed = false;
    if (!ok) {
        fail_head(expr, file, line);
        failed = true;
        fprintf(stderr, "    wrong result\n");
    }
    int le = tes_last_error(g_w);
    if (le != want_last) {
        if (!failed) fail_head(expr, file, line);
        failed = true;
        fprintf(stderr, "    tes_last_error = %d (%s), expected %d (%s)\n", le, tes_strerror(le),
                want_last, tes_strerror(want_last));
    }
    /* Every TES_ERR_INVALID names what was wrong (priming for it records a
     * TES_ERR_STALE, which leaves no detail, so this one is the case's). */
    if (le == TES_ERR_INVALID && want_last == TES_ERR_INVALID && !tes_last_error_detail(g_w)[0]) {
        if (!failed) fail_head(expr, file, line);
        failed = true;
        fprintf(stderr, "    TES_ERR_INVALID without a tes_last_error_detail\n");
    }
    /* Every TES_ERR_STALE says which handle and which case (priming for
     * it records a TES_ERR_INVALID whose detail names no handle, so a
     * site that leaves the detail alone shows). */
    if (le == TES_ERR_STALE && want_last == TES_ERR_STALE && !stale_detail_ok(tes_last_error_detail(g_w))) {
        if (!failed) fail_head(expr, file, line);
        failed = true;
        fprintf(stderr, "    TES_ERR_STALE with detail \"%s\"\n", tes_last_error_detail(g_w));
    }
    mis_snap_t after;
    mis_snap_take(&after);
    if (memcmp(before, &after, sizeof after) != 0) {
        if (!failed) fail_head(expr, file, line);
        failed = true;
        fprintf(stderr,
                "    world changed: alive %u->%u slots %u->%u retired %u->%u free %u->%u "
                "components %u->%u tables %u->%u instances %u->%u deferred %d->%d "
                "observers %d,%d,%d->%d,%d,%d inst members %d->%d\n",
                before->alive, after.alive, before->slots, after.slots, before->retired,
                after.retired, before->free_, after.free_, before->components, after.components,
                before->tables, after.tables, before->instances, after.instances,
                before->deferred, after.deferred, before->obs[0], before->obs[1],
                before->obs[2], after.obs[0], after.obs[1], after.obs[2], before->inst_n,
                after.inst_n);
        for (int32_t i = 0; i < after.ntracked; i++) {
            if (memcmp(&before->ent[i], &after.ent[i], sizeof after.ent[i]) != 0) {
                fprintf(stderr, "    tracked entity #%d (%#llx) changed: alive %d->%d comps %d->%d\n",
                        (int)i, (unsigned long long)after.ent[i].e, before->ent[i].alive,
                        after.ent[i].alive, before->ent[i].ncomps, after.ent[i].ncomps);
            }
        }
    }
    if (!g_in_hook && tes__world_check(g_w) != TES_OK) {
        if (!failed) fail_head(expr, file, line);
        fprintf(stderr, "    tes__world_check failed\n");
    }
}

void mis_plain(const char *expr, const char *file, int line, bool ok)
{
    g_cases++;
    if (!ok) {
        fail_head(expr, file, line);
    }
}

void mis_isolated(const char *expr, const char *file, int line, bool (*fn)(void))
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int f0 = g_failures;
        mis_snap_t s;
        mis_snap_take(&s);
        int primed = mis_prime_norec();
        bool ok = fn();
        mis_finish(expr, file, line, ok, &s, primed);
        fflush(stderr);
        _exit(g_failures == f0 ? 0 : 1);
    }
    g_cases++;
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) {
        fail_head(expr, file, line);
        fprintf(stderr, "    could not run the isolated case\n");
    } else if (WIFSIGNALED(status)) {
        fail_head(expr, file, line);
        fprintf(stderr, "    crashed (signal %d)\n", WTERMSIG(status));
    } else if (WEXITSTATUS(status) != 0) {
        g_failures++; /* the child printed why (or the sanitizer did) */
        fprintf(stderr, "    (isolated case %s:%d failed in its child process)\n", file, line);
    }
}

void mis_watch(tes_world_t *w, const tes_entity_t *tracked, int32_t n, tes_instance_t inst)
{
    g_w = w;
    g_ntracked = n;
    for (int32_t i = 0; i < n; i++) {
        g_tracked[i] = tracked[i];
    }
    g_track_inst = inst;
}

void mis_watch_fixture(void)
{
    const tes_entity_t t[] = {F.a, F.b, F.y, F.dis, F.p, F.pc, F.hand, F.m[0], F.m[1]};
    mis_watch(F.w, t, (int32_t)(sizeof t / sizeof t[0]), F.inst);
}

/* ------------------------------------------------------------------ fixture */

static void count_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
    g_obs[0]++;
}
static void count_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
    g_obs[1]++;
}
static void count_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)e, (void)ptr, (void)ctx;
    g_obs[2]++;
}

static void require(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "misuse: fixture setup failed: %s\n", what);
        exit(2);
    }
}

void mis_setup(void)
{
    tes_world_desc_t wd;
    memset(&wd, 0, sizeof wd);
    wd.generation_limit = 2;
    wd.strict_lifecycle = true;
    tes_world_t *w = tes_world_new(&wd);
    require(w != NULL, "world");
    F.w = w;
    tes_hooks_t obs = {0};
    obs.on_add = count_add;
    obs.on_set = count_set;
    obs.on_remove = count_remove;
    F.pos = tes_component(w, &(tes_component_desc_t){
                                 .name = "Pos", .size = sizeof(mis_pos_t), .hooks = obs});
    F.vel = tes_component(w, &(tes_component_desc_t){.name = "Vel",
                                                      .size = sizeof(mis_pos_t),
                                                      .storage = TES_STORAGE_SPARSE,
                                                      .hooks = obs});
    F.tag = tes_component(w, &(tes_component_desc_t){.name = "Tag", .hooks = obs});
    F.stab = tes_component(w, &(tes_component_desc_t){.name = "Stab",
                                                       .size = sizeof(mis_stab_t),
                                                       .stable = true,
                                                       .hooks = obs});
    tes_hooks_t hk = {0};
    hk.ctor = mis_hk_ctor;
    hk.dtor = mis_hk_dtor;
    hk.on_add = mis_hk_on_add;
    hk.on_set = mis_hk_on_set;
    hk.on_remove = mis_hk_on_remove;
    F.hk = tes_component(w, &(tes_component_desc_t){
                                .name = "Hooked", .size = sizeof(int32_t), .hooks = hk});
    require(F.pos && F.vel && F.tag && F.stab && F.hk, "components");
    for (int i = 0; i < MIS_NEXTRA; i++) {
        char name[16];
        snprintf(name, sizeof name, "Extra%d", i);
        F.extra[i] = tes_component(w, &(tes_component_desc_t){
                                          .name = name,
                                          .size = (size_t)(i % 2 ? 4 : 0),
                                          .storage = i % 3 == 0 ? TES_STORAGE_SPARSE
                                                                : TES_STORAGE_TABLE});
        require(F.extra[i] != 0, "extra component");
    }
    F.unknown = F.extra[MIS_NEXTRA - 1] + 1;

    /* Slot 0 retired: generation 1 and 2 used up (generation_limit 2). */
    tes_entity_t r1 = tes_spawn(w);
    require(tes_destroy(w, r1) == TES_OK, "destroy r1");
    tes_entity_t r2 = tes_spawn(w);
    require(tes_entity_index(r2) == tes_entity_index(r1), "retire reuse");
    require(tes_destroy(w, r2) == TES_OK, "destroy r2");
    tes_world_stats_t st;
    require(tes_world_stats(w, &st) == TES_OK && st.entities_retired == 1, "retired slot");

    /* Recycled slot: old handle x, new entity y at the same index. */
    tes_entity_t x = tes_spawn(w);
    require(tes_set(w, x, F.pos, &(mis_pos_t){-1, -1}) == TES_OK, "x");
    require(tes_destroy(w, x) == TES_OK, "destroy x");
    F.y = tes_spawn(w);
    require(tes_entity_index(F.y) == tes_entity_index(x), "recycle");
    require(tes_set(w, F.y, F.pos, &(mis_pos_t){7, 8}) == TES_OK, "y");

    F.a = tes_spawn(w);
    require(tes_set(w, F.a, F.pos, &(mis_pos_t){1, 2}) == TES_OK, "a pos");
    require(tes_set(w, F.a, F.vel, &(mis_pos_t){3, 4}) == TES_OK, "a vel");
    require(tes_add(w, F.a, F.tag) == TES_OK, "a tag");
    require(tes_set(w, F.a, F.stab, &(mis_stab_t){5, 6}) == TES_OK, "a stab");
    F.b = tes_spawn(w);
    require(tes_set(w, F.b, F.pos, &(mis_pos_t){9, 10}) == TES_OK, "b");
    F.dis = tes_spawn(w);
    require(tes_set(w, F.dis, F.pos, &(mis_pos_t){11, 12}) == TES_OK, "dis");
    require(tes_disable(w, F.dis) == TES_OK, "disable");

    F.p = tes_prefab_new(w);
    require(F.p != TES_NULL, "prefab");
    require(tes_set(w, F.p, F.pos, &(mis_pos_t){13, 14}) == TES_OK, "p pos");
    require(tes_set(w, F.p, F.vel, &(mis_pos_t){15, 16}) == TES_OK, "p vel");
    F.pc = tes_prefab_child(w, F.p);
    require(F.pc != TES_NULL, "child");
    require(tes_set(w, F.pc, F.pos, &(mis_pos_t){17, 18}) == TES_OK, "pc pos");
    F.hand = tes_spawn(w);
    require(tes_add(w, F.hand, TES_PREFAB) == TES_OK, "hand");
    require(tes_set(w, F.hand, F.pos, &(mis_pos_t){19, 20}) == TES_OK, "hand pos");
    F.inst = tes_instantiate(w, F.p, F.m, 2);
    require(F.inst != 0, "instantiate");

    tes_entity_t m2[2];
    tes_instance_t inst2 = tes_instantiate(w, F.p, m2, 2);
    require(inst2 != 0 && tes_instance_destroy(w, inst2) == TES_OK, "dead instance");

    tes_entity_t dead = tes_spawn(w);
    require(tes_set(w, dead, F.pos, &(mis_pos_t){21, 22}) == TES_OK, "dead");
    require(tes_destroy(w, dead) == TES_OK, "destroy dead");

    int n = 0;
    F.bad_name[n] = "TES_NULL", F.bad[n++] = TES_NULL;
    F.bad_name[n] = "destroyed", F.bad[n++] = dead;
    F.bad_name[n] = "recycled slot's old handle", F.bad[n++] = x;
    F.bad_name[n] = "index never issued", F.bad[n++] = tes_entity_make(1000, 1);
    F.bad_name[n] = "TES_NULL_INDEX", F.bad[n++] = tes_entity_make(TES_NULL_INDEX, 1);
    F.bad_name[n] = "generation 0", F.bad[n++] = tes_entity_make(tes_entity_index(F.a), 0);
    F.bad_name[n] = "future generation",
    F.bad[n++] = tes_entity_make(tes_entity_index(F.a), tes_entity_generation(F.a) + 1);
    F.bad_name[n] = "retired slot, generation 1", F.bad[n++] = r1;
    F.bad_name[n] = "retired slot, generation 2", F.bad[n++] = r2;
    F.bad_name[n] = "retired slot, tombstone",
    F.bad[n++] = tes_entity_make(tes_entity_index(r1), TES_TOMBSTONE);
    F.bad_name[n] = "generation past the limit",
    F.bad[n++] = tes_entity_make(tes_entity_index(F.y), tes_entity_generation(F.y) + 1);
    F.bad_name[n] = "TES_MAX_GENERATION",
    F.bad[n++] = tes_entity_make(tes_entity_index(F.b), TES_MAX_GENERATION);
    require(n == MIS_NBAD, "bad handles");

    F.bad_inst_name[0] = "instance 0", F.bad_inst[0] = 0;
    F.bad_inst_name[1] = "destroyed instance", F.bad_inst[1] = inst2;
    F.bad_inst_name[2] = "instance never issued", F.bad_inst[2] = tes_entity_make(1000, 1);
    F.bad_inst_name[3] = "instance future generation",
    F.bad_inst[3] = F.inst + ((uint64_t)1 << 32);

    require(tes__world_check(w) == TES_OK, "check");
    mis_watch_fixture();
}

void mis_teardown(void)
{
    tes_world_free(F.w);
    F.w = NULL;
    g_w = NULL;
}

/* ------------------------------------------------------ world, components */

static bool is_unknown(const char *s) { return s != NULL && strcmp(s, "unknown status") == 0; }

static tes_comp_t comp_try(tes_component_desc_t d) { return tes_component(F.w, &d); }

void mis_cases_world_component(void)
{
    /* tes_strerror */
    const int unknown[] = {1, 2, -9, -100, 100, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CASE_NOREC(is_unknown(tes_strerror(unknown[i])));
    }
    for (int c = TES_ERR_BUSY; c <= TES_OK; c++) {
        CASE_NOREC(tes_strerror(c) != NULL && !is_unknown(tes_strerror(c)));
    }

    /* tes_world_new: only some of alloc/realloc/free set. */
    for (int mask = 1; mask < 7; mask++) {
        ca_state_t ca;
        ca_init(&ca, 0);
        tes_allocator_t full = ca_allocator(&ca);
        tes_world_desc_t d;
        memset(&d, 0, sizeof d);
        d.allocator.user = &ca;
        if (mask & 1) d.allocator.alloc = full.alloc;
        if (mask & 2) d.allocator.realloc = full.realloc;
        if (mask & 4) d.allocator.free = full.free;
        tes_world_t *nw = tes_world_new(&d);
        CASE_NOREC(nw == NULL && ca.calls == 0);
        tes_world_free(nw);
    }
    /* tes_world_free(NULL), tes_world_stats, tes_last_error, tes_entity_count */
    CASE_NOREC((tes_world_free(NULL), true));
    tes_world_stats_t st;
    CASE_NOREC(tes_world_stats(NULL, &st) == TES_ERR_INVALID);
    CASE_REC(tes_world_stats(F.w, NULL) == TES_ERR_INVALID, TES_ERR_INVALID);
    CASE_NOREC(tes_world_stats(NULL, NULL) == TES_ERR_INVALID);
    CASE_NOREC(tes_last_error(NULL) == TES_ERR_INVALID);
    CASE_NOREC(tes_entity_count(NULL) == 0);

    /* tes_component */
    const int inv = TES_ERR_INVALID;
    tes_component_desc_t ok = {.name = "Fresh", .size = 8};
    CASE_NOREC(tes_component(NULL, &ok) == 0);
    CASE_REC(tes_component(F.w, NULL) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = NULL, .size = 8}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "", .size = 8}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Pos", .size = 16}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Pos", .size = 8, .align = 4}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){
                 .name = "Pos", .size = 8, .storage = TES_STORAGE_SPARSE}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Pos", .size = 8, .stable = true}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Pos", .size = 0}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Tag", .size = 4}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "tes.Disabled", .size = 8}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "tes.Prefab", .size = 4}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Al3", .size = 6, .align = 3}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Al6", .size = 12, .align = 6}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Al32", .size = 32, .align = 32}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "AlBig", .size = 64,
                                             .align = (size_t)1 << 40}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Al8of4", .size = 4, .align = 8}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Al8of12", .size = 12, .align = 8}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Huge", .size = (size_t)UINT32_MAX}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "HugeMax", .size = SIZE_MAX}) == 0, inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "St2", .size = 4,
                                             .storage = (tes_storage_t)2}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "StNeg", .size = 4,
                                             .storage = (tes_storage_t)-1}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "EfNeg", .size = 8,
                                             .entity_field_count = -1}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "Ef9", .size = 72,
                                             .entity_field_count = 9}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "EfFit", .size = 8,
                                             .entity_fields = {4},
                                             .entity_field_count = 1}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "EfFit2", .size = 16,
                                             .entity_fields = {0, 16},
                                             .entity_field_count = 2}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "EfWrap", .size = 16,
                                             .entity_fields = {SIZE_MAX - 3},
                                             .entity_field_count = 1}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "EfTag", .size = 0,
                                             .entity_fields = {0},
                                             .entity_field_count = 1}) == 0,
             inv);
    CASE_REC(comp_try((tes_component_desc_t){.name = "EfSmall", .size = 4,
                                             .entity_fields = {0},
                                             .entity_field_count = 1}) == 0,
             inv);
    /* None of the refused names got registered. */
    const char *refused[] = {"Al3", "Al32", "Huge", "St2", "Ef9", "EfTag", ""};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CASE_REC(tes_component_lookup(F.w, refused[i]) == 0, TES_OK);
    }

    /* tes_component_lookup */
    CASE_NOREC(tes_component_lookup(NULL, "Pos") == 0);
    CASE_REC(tes_component_lookup(F.w, NULL) == 0, inv);
    CASE_REC(tes_component_lookup(F.w, "Nope") == 0, TES_OK);
    CASE_REC(tes_component_lookup(F.w, "pos") == 0, TES_OK);
    CASE_REC(tes_component_lookup(F.w, "Pos ") == 0, TES_OK);
}

/* ------------------------------------------------------------------ entities */

void mis_cases_entity(void)
{
    tes_world_t *w = F.w;
    const int stale = TES_ERR_STALE, inv = TES_ERR_INVALID;
    const mis_pos_t v = {100, 200};
    tes_comp_t cbuf[8];
    tes_entity_t ebuf[4];

    /* NULL world: status calls give TES_ERR_INVALID, the others 0/NULL/false/-1. */
    CASE_NOREC(tes_spawn(NULL) == TES_NULL);
    CASE_NOREC(tes_spawn_n(NULL, 1, &F.pos, 1, ebuf) == inv);
    CASE_NOREC(tes_destroy(NULL, F.a) == inv);
    CASE_NOREC(!tes_alive(NULL, F.a));
    CASE_NOREC(tes_add(NULL, F.a, F.pos) == inv);
    CASE_NOREC(tes_set(NULL, F.a, F.pos, &v) == inv);
    CASE_NOREC(tes_ensure(NULL, F.a, F.pos) == NULL);
    CASE_NOREC(tes_remove(NULL, F.a, F.pos) == inv);
    CASE_NOREC(!tes_has(NULL, F.a, F.pos));
    CASE_NOREC(tes_get(NULL, F.a, F.pos) == NULL);
    CASE_NOREC(tes_get_mut(NULL, F.a, F.pos) == NULL);
    CASE_NOREC(tes_clear(NULL, F.a) == inv);
    CASE_NOREC(tes_clone(NULL, F.a) == TES_NULL);
    CASE_NOREC(tes_components_of(NULL, F.a, cbuf, 8) == -1);
    CASE_NOREC(tes_disable(NULL, F.a) == inv);
    CASE_NOREC(tes_enable(NULL, F.dis) == inv);
    CASE_NOREC(!tes_enabled(NULL, F.a));

    /* Bad handles, for every call taking an entity. */
    for (int i = 0; i < MIS_NBAD; i++) {
        tes_entity_t e = F.bad[i];
        g_note = F.bad_name[i];
        CASE_ST(tes_destroy(w, e), stale);
        CASE_NOREC(!tes_alive(w, e));
        CASE_ST(tes_add(w, e, F.pos), stale);
        CASE_ST(tes_add(w, e, F.vel), stale);
        CASE_ST(tes_add(w, e, F.tag), stale);
        CASE_ST(tes_set(w, e, F.pos, &v), stale);
        CASE_ST(tes_set(w, e, F.vel, &v), stale);
        CASE_ST(tes_set(w, e, F.tag, NULL), stale);
        CASE_REC(tes_ensure(w, e, F.pos) == NULL, stale);
        CASE_REC(tes_ensure(w, e, F.vel) == NULL, stale);
        CASE_ST(tes_remove(w, e, F.pos), stale);
        CASE_ST(tes_remove(w, e, F.vel), stale);
        CASE_NOREC(!tes_has(w, e, F.pos));
        CASE_NOREC(!tes_has(w, e, F.vel));
        CASE_REC(tes_get(w, e, F.pos) == NULL, stale);
        CASE_REC(tes_get(w, e, F.stab) == NULL, stale);
        CASE_REC(tes_get_mut(w, e, F.pos) == NULL, stale);
        CASE_REC(tes_get_mut(w, e, F.vel) == NULL, stale);
        CASE_ST(tes_clear(w, e), stale);
        CASE_REC(tes_clone(w, e) == TES_NULL, stale);
        CASE_REC(tes_components_of(w, e, cbuf, 8) == -1, stale);
        CASE_REC(tes_components_of(w, e, NULL, 0) == -1, stale);
        CASE_ST(tes_disable(w, e), stale);
        CASE_ST(tes_enable(w, e), stale);
        CASE_NOREC(!tes_enabled(w, e));
    }
    g_note = NULL;

    /* Component id 0 and ids never registered. */
    const tes_comp_t badc[] = {0, F.unknown, F.unknown + 1, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof badc / sizeof badc[0]; i++) {
        tes_comp_t c = badc[i];
        CASE_ST(tes_add(w, F.a, c), inv);
        CASE_ST(tes_add(w, F.b, c), inv);
        CASE_ST(tes_set(w, F.a, c, &v), inv);
        CASE_ST(tes_set(w, F.a, c, NULL), inv);
        CASE_REC(tes_ensure(w, F.a, c) == NULL, inv);
        CASE_ST(tes_remove(w, F.a, c), inv);
        CASE_NOREC(!tes_has(w, F.a, c));
        CASE_REC(tes_get(w, F.a, c) == NULL, inv);
        CASE_REC(tes_get_mut(w, F.a, c) == NULL, inv);
        CASE_ST(tes_spawn_n(w, 1, &c, 1, ebuf), inv);
        const tes_comp_t two[] = {F.pos, c};
        CASE_ST(tes_spawn_n(w, 2, two, 2, ebuf), inv);
        CASE_ST(tes_spawn_n(w, 0, two, 2, ebuf), inv);
    }

    /* Tags where data is expected, and NULL values for data components. */
    CASE_ST(tes_set(w, F.a, F.pos, NULL), inv);  /* has it */
    CASE_ST(tes_set(w, F.b, F.vel, NULL), inv);  /* lacks it (sparse) */
    CASE_ST(tes_set(w, F.b, F.stab, NULL), inv); /* lacks it (stable) */
    CASE_ST(tes_set(w, F.y, F.hk, NULL), inv);   /* lacks it, would run hooks */
    CASE_REC(tes_ensure(w, F.a, F.tag) == NULL, inv); /* has the tag */
    CASE_REC(tes_ensure(w, F.b, F.tag) == NULL, inv); /* lacks it */
    CASE_REC(tes_ensure(w, F.b, F.extra[0]) == NULL, inv); /* sparse tag */
    CASE_REC(tes_ensure(w, F.dis, TES_DISABLED) == NULL, inv);
    CASE_REC(tes_ensure(w, F.a, TES_DISABLED) == NULL, inv);
    CASE_REC(tes_ensure(w, F.a, TES_PREFAB) == NULL, inv);
    CASE_REC(tes_get(w, F.a, F.tag) == NULL, inv);
    CASE_REC(tes_get_mut(w, F.a, F.tag) == NULL, inv);
    CASE_REC(tes_get(w, F.dis, TES_DISABLED) == NULL, inv);

    /* Bad counts and NULL out-pointers. */
    CASE_ST(tes_spawn_n(w, -1, &F.pos, 1, ebuf), inv);
    CASE_ST(tes_spawn_n(w, INT32_MIN, NULL, 0, ebuf), inv);
    CASE_ST(tes_spawn_n(w, 1, &F.unknown, 1, NULL), inv);
    CASE_ST(tes_spawn_n(w, 3, NULL, 2, NULL), inv);
    CASE_ST(tes_spawn_n(w, 1, NULL, 1, ebuf), inv);
    CASE_ST(tes_spawn_n(w, 0, NULL, 1, ebuf), inv);
    CASE_ST(tes_spawn_n(w, 1, &F.pos, -1, ebuf), inv);
    CASE_ST(tes_spawn_n(w, 0, &F.pos, -1, NULL), inv);
    const tes_comp_t rep[] = {F.pos, F.vel, F.pos};
    CASE_ST(tes_spawn_n(w, 2, rep, 3, ebuf), inv);
    const tes_comp_t rep_tag[] = {F.tag, TES_DISABLED, F.tag};
    CASE_ST(tes_spawn_n(w, 2, rep_tag, 3, ebuf), inv);
    const tes_comp_t rep_sparse[] = {F.vel, F.vel};
    CASE_ST(tes_spawn_n(w, 1, rep_sparse, 2, ebuf), inv);
    CASE_REC(tes_components_of(w, F.a, NULL, 1) == -1, inv);
    CASE_REC(tes_components_of(w, F.a, cbuf, -1) == -1, inv);
    CASE_REC(tes_components_of(w, F.a, NULL, -1) == -1, inv);
    CASE_NOREC(tes_components_of(w, F.a, NULL, 0) == 4); /* sizing call still works */

    /* Strict world: destroying an instance member is refused. */
    CASE_ST(tes_destroy(w, F.m[0]), TES_ERR_OWNED);
    CASE_ST(tes_destroy(w, F.m[1]), TES_ERR_OWNED);

    /* The recycled slot's entity is untouched by all of the above. */
    const mis_pos_t *yp = tes_get(w, F.y, F.pos);
    CASE_PLAIN(yp != NULL && yp->x == 7 && yp->y == 8 && tes_alive(w, F.y));
}

int main(void)
{
    mis_setup();
    mis_cases_world_component();
    mis_cases_entity();
    mis_cases_query();
    mis_cases_defer();
    mis_cases_prefab();
    mis_cases_hooks();
    mis_cases_bulk();
    mis_cases_round3();
    mis_cases_round3_io();
    mis_teardown();
    mis_cases_full();
    printf("misuse: %d cases, %d failures\n", g_cases, g_failures);
    return g_failures == 0 ? 0 : 1;
}
