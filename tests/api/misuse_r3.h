/*
 * Shared parts of the API misuse cases of the hierarchy, names, depth
 * order, change detection, reflection, JSON, systems and snapshot calls
 * (misuse_round3.c, misuse_round3_io.c), on top of the harness of
 * misuse.h.
 *
 * Beside the harness's snapshot (entity counts, tracked entities'
 * components and values), every case here compares a fingerprint of the
 * whole world taken before and after the call: the text tes_json_world
 * writes (every live entity's name, path, parent, flags and values), each
 * live entity's children in order, the world's tick and the list of live
 * systems. A case that names its function (fn) also checks that the
 * detail recorded with its failure names that function.
 */
#ifndef TES_TEST_API_MISUSE_R3_H
#define TES_TEST_API_MISUSE_R3_H

#include "api/misuse.h"

/* Skip the fingerprint (inside a running system, where tes_json_world is
 * refused). */
extern int g_r3_nofp;

uint64_t r3_fp(tes_world_t *w);
/* Checks that the last failure's detail names fn (NULL: no check). */
void r3_detail(const char *expr, const char *file, int line, const char *fn);
/* Checks that the fingerprint is still h0. */
void r3_same(const char *expr, const char *file, int line, uint64_t h0);

/* A failing call that records `want` with a detail naming fn. */
#define R3_REC(cond, want, fn)                                       \
    do {                                                             \
        int want_ = (want);                                          \
        uint64_t h_ = g_r3_nofp ? 0 : r3_fp(g_w);                    \
        mis_snap_t s_;                                               \
        mis_snap_take(&s_);                                          \
        mis_prime(want_);                                            \
        bool ok_ = (cond);                                           \
        r3_detail(#cond, __FILE__, __LINE__, (fn));                  \
        mis_finish(#cond, __FILE__, __LINE__, ok_, &s_, want_);      \
        r3_same(#cond, __FILE__, __LINE__, h_);                      \
    } while (0)

/* A status call returning and recording `want`. */
#define R3_ST(call, want, fn) R3_REC((call) == (want), want, fn)

/* A call that must record nothing and change nothing. */
#define R3_NOREC(cond)                                               \
    do {                                                             \
        uint64_t h_ = g_r3_nofp ? 0 : r3_fp(g_w);                    \
        mis_snap_t s_;                                               \
        mis_snap_take(&s_);                                          \
        int primed_ = mis_prime_norec();                             \
        bool ok_ = (cond);                                           \
        mis_finish(#cond, __FILE__, __LINE__, ok_, &s_, primed_);    \
        r3_same(#cond, __FILE__, __LINE__, h_);                      \
    } while (0)

/* Builds the forest the cases use in F.w (misuse_round3.c). */
typedef struct r3_forest_t {
    tes_entity_t root, a, b, leaf, anon, other, dup, loner, deep;
    tes_entity_t pf2; /* a second prefab root */
    tes_comp_t tracked; /* int32, track_changes */
    tes_comp_t hooked;  /* int32 whose observers run r3_hook_battery */
} r3_forest_t;
extern r3_forest_t R;

void r3_setup(void);
/* The calls of the round-3 API made from inside a hook or a snapshot or
 * JSON callback (misuse_round3_io.c). */
void r3_hook_battery(tes_world_t *w, const char *where);

#endif
