/*
 * The record of the last failure (see last_error.h). A call that may
 * change the world records in the world (status, detail sentence, and a
 * count of failures, fail_epoch). A call on a const world cannot: several
 * threads may make such calls at once, so each thread records its own
 * last failure, stamped with the world's serial and fail_epoch as they
 * were then. Only calls on a world that nothing changes run side by side,
 * so no failure of the world's own can be recorded meanwhile: a thread's
 * record is newer than the world's exactly when the stamp still matches.
 *
 * tes_get's failures are the ones a loop may meet often (reading an
 * optional component): they store the handle and the component and leave
 * the sentence to tes_last_error_detail, which formats it into the
 * thread's own buffer.
 *
 * The ground of failure reporting: this file reads the world's layout and
 * words stale handles through stale.c, and calls nothing else of the world
 * layer. Sentences that read the world's state (why it is busy, what holds
 * it deferred) are explain.c's, which records through here.
 */
#include "world/last_error.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/thread_pool.h"

/* The kinds of per-thread record: a formatted sentence, or the parts of
 * one that tes_last_error_detail formats. */
enum { REC_TEXT, REC_STALE, REC_LACKS, REC_UNKNOWN, REC_TAG };

typedef struct const_record {
    const tes_world_t *w; /* NULL: no record */
    uint64_t serial;
    uint64_t epoch;
    int status;
    int kind;
    tes_entity_t e;
    tes_comp_t c;
    tes__stale_t stale;
    tes__detail_t text;
} const_record_t;

static _Thread_local const_record_t record;

/* Serials only tell worlds apart; they hold no state of any world. */
static _Atomic uint64_t serials;

uint64_t tes__world_serial_next(void)
{
    return atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
}

/* The calling thread's record, when it is about w and newer than the
 * world's own last failure; else NULL. */
static const_record_t *newer_record(const tes_world_t *w)
{
    const_record_t *r = &record;
    if (r->w != w || r->serial != w->serial || r->epoch != w->fail_epoch)
        return NULL;
    return r;
}

static const_record_t *start_record(const tes_world_t *w, int status, int kind)
{
    const_record_t *r = &record;
    r->w = w;
    r->serial = w->serial;
    r->epoch = w->fail_epoch;
    r->status = status;
    r->kind = kind;
    return r;
}

int tes__fail_const(const tes_world_t *w, int status, const char *fmt, ...)
{
    const_record_t *r = start_record(w, status, REC_TEXT);
    va_list args;
    va_start(args, fmt);
    vsnprintf(r->text.text, sizeof r->text.text, fmt, args);
    va_end(args);
    return status;
}

int tes__fail_const_stale(const tes_world_t *w, const tes__entity_index_t *ids, uint64_t handle,
                          int noun)
{
    const_record_t *r = start_record(w, TES_ERR_STALE, REC_STALE);
    r->stale = tes__stale_capture(ids, handle, noun);
    return TES_ERR_STALE;
}

void *tes__fail_const_get(const tes_world_t *w, tes_entity_t e, tes_comp_t c)
{
    if (!w)
        return NULL;
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info) {
        const_record_t *r = start_record(w, TES_ERR_INVALID, REC_UNKNOWN);
        r->c = c;
        return NULL;
    }
    if (!tes__entity_slot(&w->entities, e)) {
        tes__fail_const_stale(w, &w->entities, e, TES__STALE_ENTITY);
        return NULL;
    }
    const_record_t *r = start_record(w, info->size ? TES_OK : TES_ERR_INVALID,
                                     info->size ? REC_LACKS : REC_TAG);
    r->e = e;
    r->c = c;
    return NULL;
}

/* Turns a record of parts into its sentence (in the record's buffer). */
static const char *record_text(const tes_world_t *w, const_record_t *r)
{
    const tes__component_t *info = tes__registry_get(&w->components, r->c);
    const char *name = info ? info->name : "?";
    char *buf = r->text.text;
    size_t cap = sizeof r->text.text;
    switch (r->kind) {
    case REC_STALE:
        tes__stale_format(&r->stale, buf, cap);
        break;
    case REC_LACKS:
        snprintf(buf, cap, "entity %u:%u has no component '%.64s' (tes_get returns NULL for it; not an error)",
                 tes_entity_index(r->e), tes_entity_generation(r->e), name);
        break;
    case REC_UNKNOWN:
        snprintf(buf, cap, "component id %u is not registered in this world (ids run from 1 to %u): was the component registered?",
                 (unsigned)r->c, (unsigned)(w->components.count - 1));
        break;
    case REC_TAG:
        snprintf(buf, cap, "component '%.64s' is a tag: it has no value, so tes_get returns NULL (test it with tes_has)", name);
        break;
    default:
        break;
    }
    r->kind = REC_TEXT;
    return buf;
}

int tes_last_error(const tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    const const_record_t *r = newer_record(w);
    if (r)
        return r->status;
    if (w->parallel)
        return w->thread_errors[tes__pool_thread(w->pool)];
    return w->last_error;
}

const char *tes_last_error_detail(const tes_world_t *w)
{
    if (!w)
        return "";
    const_record_t *r = newer_record(w);
    if (r)
        return record_text(w, r);
    /* While systems run on several threads the world's sentence is not
     * written (failures go to the threads' own status slots): a worker's
     * own failure then has no sentence, rather than another one's. */
    if (w->parallel)
        return "";
    return w->detail.text;
}

int tes__fail_parallel(tes_world_t *w, int status)
{
    /* This thread's failure is newer than its own record of a const call. */
    record.w = NULL;
    w->thread_errors[tes__pool_thread(w->pool)] = status;
    return status;
}

int tes__fail_detail(tes_world_t *w, int status, const char *fmt, ...)
{
    /* While systems run on several threads, no shared detail: the status
     * goes to the thread's own slot. */
    if (w->parallel)
        return tes__fail_parallel(w, status);
    w->last_error = status;
    w->fail_epoch++;
    va_list args;
    va_start(args, fmt);
    vsnprintf(w->detail.text, sizeof w->detail.text, fmt, args);
    va_end(args);
    return status;
}
