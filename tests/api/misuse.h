/*
 * Shared harness of the API misuse test (api_misuse): the fixture world, the
 * world snapshot and the case macros. See misuse.c for what is covered.
 *
 * Every case snapshots the watched world (stats, tracked entities'
 * components, values and instance membership, observer counters,
 * deferral), primes tes_last_error with a status different from the one it
 * expects (after the snapshot, whose reads record their own failures),
 * runs the call, then checks the result, tes_last_error (the expected
 * status, or the primed one for calls that must not record), that the
 * snapshot is unchanged and that tes__world_check passes.
 */
#ifndef TES_TEST_API_MISUSE_H
#define TES_TEST_API_MISUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

#define MIS_MAX_TRACKED 16
#define MIS_MAX_COMPS 40
#define MIS_NBAD 12
#define MIS_NBAD_INST 4
#define MIS_NEXTRA 16

typedef struct mis_pos_t {
    int32_t x, y;
} mis_pos_t;

typedef struct mis_stab_t {
    int64_t a, b;
} mis_stab_t;

typedef struct mis_fixture_t {
    tes_world_t *w;
    tes_comp_t pos;  /* table, 8 bytes */
    tes_comp_t vel;  /* sparse, 8 bytes */
    tes_comp_t tag;  /* table tag */
    tes_comp_t stab; /* stable, 16 bytes */
    tes_comp_t hk;   /* table int32 whose hooks try structural calls */
    tes_comp_t extra[MIS_NEXTRA];
    tes_comp_t unknown; /* the next id, never registered */
    tes_entity_t a;     /* pos vel tag stab */
    tes_entity_t b;     /* pos */
    tes_entity_t y;     /* pos; reuses the index of a destroyed entity */
    tes_entity_t dis;   /* pos, disabled */
    tes_entity_t p, pc; /* prefab root (pos vel) and child (pos) */
    tes_entity_t hand;  /* TES_PREFAB added by hand, pos */
    tes_entity_t m[2];  /* the members of inst */
    tes_instance_t inst;
    tes_entity_t bad[MIS_NBAD];
    const char *bad_name[MIS_NBAD];
    tes_instance_t bad_inst[MIS_NBAD_INST];
    const char *bad_inst_name[MIS_NBAD_INST];
} mis_fixture_t;

typedef struct mis_ent_snap_t {
    tes_entity_t e;
    int32_t alive;
    int32_t ncomps;
    tes_comp_t comps[MIS_MAX_COMPS];
    unsigned char pos[sizeof(mis_pos_t)], vel[sizeof(mis_pos_t)], stab[sizeof(mis_stab_t)];
    int32_t has_pos, has_vel, has_stab;
    tes_instance_t inst;
} mis_ent_snap_t;

typedef struct mis_snap_t {
    uint32_t alive, slots, retired, free_, components, tables, instances;
    int32_t deferred;
    int32_t obs[3];
    int32_t inst_n;
    tes_entity_t inst_m[8];
    int32_t ntracked;
    mis_ent_snap_t ent[MIS_MAX_TRACKED];
} mis_snap_t;

extern mis_fixture_t F;
extern tes_world_t *g_w;          /* the world snapshots watch */
extern const char *g_note;        /* extra context printed on failure */
extern int g_in_hook;             /* skip tes__world_check while set */
extern int g_cases, g_failures;
extern int32_t g_obs[3];          /* on_add / on_set / on_remove of fixture comps */
extern tes_entity_t g_tracked[MIS_MAX_TRACKED];
extern int32_t g_ntracked;
extern tes_instance_t g_track_inst;

void mis_snap_take(mis_snap_t *s);
/* Makes tes_last_error(g_w) something other than `not_this`; returns it. */
int mis_prime(int not_this);
/* Primes tes_last_error for a case that must not record; returns it. */
int mis_prime_norec(void);
void mis_finish(const char *expr, const char *file, int line, bool ok, const mis_snap_t *before,
                int want_last);
/* Records a case checked by hand (no snapshot). */
void mis_plain(const char *expr, const char *file, int line, bool ok);
/* Runs fn in a child process (fork), as a CASE_NOREC, so a crash is a
 * failed case rather than the end of the run. */
void mis_isolated(const char *expr, const char *file, int line, bool (*fn)(void));
#define CASE_ISOLATED(fn) mis_isolated(#fn, __FILE__, __LINE__, fn)
/* Points the harness at another world (no tracked entities). */
void mis_watch(tes_world_t *w, const tes_entity_t *tracked, int32_t n, tes_instance_t inst);
void mis_watch_fixture(void);

/* A failing call that records `want` in tes_last_error. */
#define CASE_REC(cond, want)                                         \
    do {                                                             \
        int want_ = (want);                                          \
        mis_snap_t s_;                                               \
        mis_snap_take(&s_);                                          \
        mis_prime(want_);                                            \
        bool ok_ = (cond);                                           \
        mis_finish(#cond, __FILE__, __LINE__, ok_, &s_, want_);      \
    } while (0)

/* A call that must not record anything (const world, NULL world, success). */
#define CASE_NOREC(cond)                                             \
    do {                                                             \
        mis_snap_t s_;                                               \
        mis_snap_take(&s_);                                          \
        int primed_ = mis_prime_norec();                             \
        bool ok_ = (cond);                                           \
        mis_finish(#cond, __FILE__, __LINE__, ok_, &s_, primed_);    \
    } while (0)

/* A status call: returns `want` and records it. */
#define CASE_ST(call, want) CASE_REC((call) == (want), want)

/* A condition checked without snapshot or error bookkeeping. */
#define CASE_PLAIN(cond) mis_plain(#cond, __FILE__, __LINE__, (cond))

/* Hooks of F.hk (misuse_hooks.c). */
void mis_hk_ctor(void *ptr, int32_t count, void *ctx);
void mis_hk_dtor(void *ptr, int32_t count, void *ctx);
void mis_hk_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);
void mis_hk_on_set(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);
void mis_hk_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx);

void mis_setup(void);
void mis_teardown(void);
void mis_cases_world_component(void);
void mis_cases_entity(void);
void mis_cases_query(void);
void mis_cases_defer(void);
void mis_cases_prefab(void);
void mis_cases_hooks(void);
void mis_cases_bulk(void);
void mis_cases_full(void);
/* The hierarchy, names, depth order, change detection, reflection, JSON,
 * systems and snapshot calls (misuse_round3.c, misuse_round3_io.c). */
void mis_cases_round3(void);
void mis_cases_round3_io(void);

#endif
