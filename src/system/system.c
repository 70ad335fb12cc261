/*
 * System creation and lifetime, and tes_progress's entry checks. The
 * world keeps the registry as an opaque pointer created here on first use
 * and torn down through the world's dependent list, so the world never
 * needs to know what a system is. A system owns its query; the query is
 * also a dependent of the world, so whichever of the two tes_world_free
 * finalises first, the other finds nothing left to free twice. The
 * layout of a system and of the registry is system_types.h; tes_progress
 * plans and runs each frame through the scheduler below (schedule.h).
 */
#include "system/schedule.h"
#include "system/system_types.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"

#include <string.h>

/* Frees the system struct and what it owns except its query. */
static void free_struct(tes_world_t *w, tes_system_t *s)
{
    tes__free(&w->alloc, s->chunks, (size_t)s->chunk_cap * sizeof *s->chunks);
    tes__free(&w->alloc, s->handles, (size_t)s->handle_cap * sizeof *s->handles);
    tes__free(&w->alloc, s->name, s->name_size);
    tes__free(&w->alloc, s, sizeof *s);
}

/* World teardown: queries are the world's to free (they are dependents of
 * their own), so only the systems' own memory goes here. */
static void registry_fini(void *ctx)
{
    tes_world_t *w = ctx;
    tes__systems_t *ss = w->systems;
    for (uint32_t i = 0; i < ss->count; i++)
        free_struct(w, ss->items[i]);
    tes__free(&w->alloc, ss->items, (size_t)ss->cap * sizeof *ss->items);
    tes__free(&w->alloc, ss->order, (size_t)ss->order_cap * sizeof *ss->order);
    tes__free(&w->alloc, ss->units, (size_t)ss->unit_cap * sizeof *ss->units);
    tes__free(&w->alloc, ss->spans, (size_t)ss->span_cap * sizeof *ss->spans);
    tes__free(&w->alloc, ss, sizeof *ss);
    w->systems = NULL;
}

static tes__systems_t *registry(tes_world_t *w)
{
    if (w->systems)
        return w->systems;
    tes__systems_t *ss = tes__calloc(&w->alloc, sizeof *ss);
    if (!ss)
        return NULL;
    w->systems = ss;
    if (tes__world_depend(w, registry_fini, w)) {
        tes__free(&w->alloc, ss, sizeof *ss);
        w->systems = NULL;
        return NULL;
    }
    return ss;
}

static tes_system_t *find_system(const tes__systems_t *ss, const char *name)
{
    for (uint32_t i = 0; i < ss->count; i++)
        if (!ss->items[i]->doomed && strcmp(ss->items[i]->name, name) == 0)
            return ss->items[i];
    return NULL;
}

/* Fills in the field sizes and the read/write sets from the query's terms.
 * NOT terms and tags touch no data; TES_NOACCESS touches none either. */
static void derive_access(tes_world_t *w, tes_system_t *s, const tes_query_desc_t *q)
{
    for (int32_t i = 0; i < TES_MAX_TERMS && q->terms[i].comp; i++) {
        const tes_term_t *t = &q->terms[i];
        const tes__component_t *info = tes__registry_get(&w->components, t->comp);
        s->term_count = i + 1;
        s->field_size[i] = info && t->oper != TES_NOT ? info->size : 0;
        if (!s->field_size[i] || t->access == TES_NOACCESS)
            continue;
        if (t->access == TES_IN)
            s->reads[s->read_count++] = t->comp;
        else
            s->writes[s->write_count++] = t->comp;
    }
}

static tes_system_t *system_new(tes_world_t *w, const tes_system_desc_t *d)
{
    if (tes__in_hook(w) || (w->systems && w->systems->running)) {
        tes__fail_detail(w, TES_ERR_BUSY, "tes_system_new: called from %s; create systems "
                                          "outside hooks and tes_progress",
                         tes__in_hook(w) ? "a hook" : "inside tes_progress");
        return NULL;
    }
    if (!d || !d->name || !d->run) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_system_new: %s is NULL", !d ? "desc" : !d->name ? "name" : "run");
        return NULL;
    }
    /* A name is what tes_system_stats and the tools show: "" names
     * nothing, as for components. */
    if (!d->name[0]) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_system_new: the name is empty");
        return NULL;
    }
    tes__systems_t *ss = registry(w);
    if (!ss) {
        tes__fail(w, TES_ERR_NOMEM);
        return NULL;
    }
    if (find_system(ss, d->name)) {
        tes__fail_detail(w, TES_ERR_INVALID, "tes_system_new: a system named '%.64s' exists", d->name);
        return NULL;
    }
    if (tes__grow(&w->alloc, (void **)&ss->items, &ss->cap, (uint64_t)ss->count + 1,
                  sizeof *ss->items, 8) ||
        tes__grow(&w->alloc, (void **)&ss->order, &ss->order_cap, (uint64_t)ss->count + 1,
                  sizeof *ss->order, 8)) {
        tes__fail(w, TES_ERR_NOMEM);
        return NULL;
    }
    tes_system_t *s = tes__calloc(&w->alloc, sizeof *s);
    if (!s || !(s->name = tes__strdup(&w->alloc, d->name, &s->name_size))) {
        if (s)
            tes__free(&w->alloc, s, sizeof *s);
        tes__fail(w, TES_ERR_NOMEM);
        return NULL;
    }
    s->w = w;
    s->run = d->run;
    s->ctx = d->ctx;
    s->parallel = d->parallel;
    s->structural = d->structural;
    int32_t nterms;
    if (tes__query_desc_terms(w, &d->query, &nterms)) {
        free_struct(w, s);
        return NULL;
    }
    if (nterms) {
        s->query = tes_query_new(w, &d->query); /* records its own failure */
        if (!s->query) {
            free_struct(w, s);
            return NULL;
        }
        derive_access(w, s, &d->query);
    } else if (d->query.flags) {
        free_struct(w, s); /* flags without terms: nothing to apply them to */
        tes__fail_detail(w, TES_ERR_INVALID, "tes_system_new: query flags 0x%x without terms", (unsigned)d->query.flags);
        return NULL;
    }
    ss->items[ss->count++] = s;
    ss->dirty = true;
    return s;
}

tes_system_t *tes_system_new(tes_world_t *w, const tes_system_desc_t *desc)
{
    if (!w)
        return NULL;
    return system_new(w, desc);
}

/* Takes s out of the registry and frees it with its query. */
static void system_drop(tes_world_t *w, tes__systems_t *ss, tes_system_t *s)
{
    for (uint32_t i = 0; i < ss->count; i++) {
        if (ss->items[i] == s) {
            memmove(&ss->items[i], &ss->items[i + 1], (ss->count - i - 1) * sizeof *ss->items);
            ss->count--;
            break;
        }
    }
    ss->dirty = true;
    if (s->query)
        tes_query_free(s->query);
    free_struct(w, s);
}

void tes_system_free(tes_system_t *s)
{
    if (!s)
        return;
    tes_world_t *w = s->w;
    tes__systems_t *ss = w->systems;
    if (ss->running) {
        /* From a system's run, perhaps on a worker: only marked (atomic).
         * The scheduler reads the mark between levels, so the system runs
         * no more from the next level on; the frame's end frees it. */
        atomic_store_explicit(&s->doomed, true, memory_order_relaxed);
        return;
    }
    system_drop(w, ss, s);
}

int tes_progress(tes_world_t *w, float delta_time)
{
    if (!w)
        return TES_ERR_INVALID;
    tes__systems_t *ss = w->systems;
    if (tes__in_hook(w) || (ss && ss->running))
        return tes__fail_detail(w, TES_ERR_BUSY, "tes_progress refused: called from inside %s", ss && ss->running ? "a system (tes_progress is running)" : "a hook");
    if (tes_is_deferred(w))
        return tes__fail_deferred(w, TES_ERR_BUSY, "tes_progress");
    if (!ss || !ss->count)
        return TES_OK;
    if (ss->dirty) {
        int rc = tes__schedule(w, ss);
        if (rc)
            return tes__fail(w, rc);
    }
    uint64_t start = tes__clock_ns();
    ss->running = true;
    ss->delta_time = delta_time;
    tes__world_refuse_set(w, TES__REFUSE_FRAME);
    int rc = tes__schedule_run(w, ss);
    tes__world_refuse_set(w, 0);
    ss->running = false;
    for (uint32_t i = ss->count; i-- > 0;)
        if (ss->items[i]->doomed)
            system_drop(w, ss, ss->items[i]);
    w->last_frame_ns = tes__clock_since(start);
    return rc;
}

int tes_system_stats(const tes_system_t *s, tes_system_stats_t *out)
{
    if (!s || !out)
        return s ? tes__fail_const(s->w, TES_ERR_INVALID, "tes_system_stats: out is NULL")
                 : TES_ERR_INVALID;
    out->name = s->name;
    out->matched = s->stat_matched;
    out->runs = s->stat_runs;
    out->last_ns = s->stat_last_ns;
    out->mean_ns = s->stat_runs ? s->stat_total_ns / s->stat_runs : 0;
    return TES_OK;
}

int32_t tes_systems(const tes_world_t *w, tes_system_t **out, int32_t cap)
{
    if (!w)
        return 0;
    if (cap < 0 || (!out && cap > 0))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_systems: cap %d is negative or out is "
                                                   "NULL with cap > 0", (int)cap);
    const tes__systems_t *ss = w->systems;
    int32_t n = 0;
    for (uint32_t i = 0; ss && i < ss->count; i++) {
        if (ss->items[i]->doomed)
            continue;
        if (n < cap)
            out[n] = ss->items[i];
        n++;
    }
    return n;
}
