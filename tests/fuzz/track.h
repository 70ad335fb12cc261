/*
 * Lifecycle tracking for the fuzzer's hooked components. Every value a
 * tracked component's ctor makes gets a serial number stored in its first 8
 * bytes, and a record (serial -> address, component, live) kept here. The
 * hooks then check each call against the records: dtor and move must see a
 * live value exactly where the record says it is, move updates the address
 * and poisons the source, dtor poisons the value. So a library that memcpys
 * a value without the move hook, destroys a value twice, destroys a moved-
 * from source, leaks a value or hands out a pointer that is not where the
 * value lives is caught at the next hook call or tes_get check, not only by
 * the ctor/dtor balance.
 *
 * Observer hooks (on_add, on_set, on_remove) check that the world agrees
 * with the event (entity alive, component present, pointer = tes_get) and,
 * now and then, that a structural call made from inside the hook is refused
 * with TES_ERR_BUSY; then they run the driver's action (queries made and
 * freed from inside the hook, and the like).
 */
#ifndef TES_FUZZ_TRACK_H
#define TES_FUZZ_TRACK_H

#include "fuzz/model.h"

typedef struct fz_counts {
    uint64_t ctor, dtor, copy, move; /* in values (sums of counts) */
    uint64_t on_add, on_set, on_remove;
} fz_counts_t;

typedef struct fz_track_rec {
    const void *addr;
    uint32_t next_free;
    uint8_t comp;
    bool live;
} fz_track_rec_t;

struct fz_tracker;
typedef struct fz_hook_ctx {
    struct fz_tracker *t;
    int k;
} fz_hook_ctx_t;

typedef struct fz_tracker {
    fz_track_rec_t *recs; /* recs[serial - 1] */
    uint32_t nrecs, cap;
    uint32_t free_head;   /* serial of a free record, 0 = none */
    uint64_t live;        /* live tracked values, all components */
    fz_counts_t counts[FZ_NCOMP];
    fz_hook_ctx_t ctx[FZ_NCOMP];
    tes_comp_t ids[FZ_NCOMP];
    /* The value tes_set is about to write, for on_set to compare. */
    const uint8_t *set_expect;
    int set_expect_k;
    bool probe;           /* observers try structural calls (expect BUSY) */
    uint32_t probe_tick;
    /* The error of the last call a hook made that failed, since the driver
     * last looked (0: none): such a call sets tes_last_error too. */
    int hook_error;
    /* What observers do besides their checks (the driver's queries made
     * and freed, deferral levels tried; driver_hooks.c). NULL: nothing. */
    void (*action)(struct fz_tracker *t, tes_world_t *w, tes_entity_t e, int k,
                   const char *hook);
    void *user;
    bool failed;
    char msg[512];
} fz_tracker_t;

void fz_tracker_init(fz_tracker_t *t, bool probe);
void fz_tracker_fini(fz_tracker_t *t);
/* The hooks to register for component k (zeroed for plain components). */
void fz_tracker_hooks(fz_tracker_t *t, int k, tes_hooks_t *out);
/* True if ptr holds a live tracked value of component k recorded at ptr. */
bool fz_tracker_valid(const fz_tracker_t *t, int k, const void *ptr);

#endif
