/*
 * Instance ids and membership; see instance.h. Destroying an instance walks
 * its member list and destroys each entity directly (bypassing the
 * strict-lifecycle refusal that only applies to single-entity destroys);
 * the watcher unlinks each one, and the id retires with the last.
 */
#include "lifecycle/instance.h"
#include "world/cascade.h"
#include "world/defer.h"
#include "world/entity_ops.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"

#include <string.h>


static void lifecycle_fini(void *ctx)
{
    tes__lifecycle_t *lc = ctx;
    tes__alloc_t *a = &lc->w->alloc;
    for (uint32_t i = 0; i < lc->prefab_count; i++)
        if (lc->prefabs[i].members)
            tes__free(a, lc->prefabs[i].members, (size_t)lc->prefabs[i].cap * sizeof(tes_entity_t));
    tes__free(a, lc->prefabs, (size_t)lc->prefab_cap * sizeof *lc->prefabs);
    tes__map_fini(&lc->prefab_by_root, a);
    tes__free(a, lc->recs, (size_t)lc->rec_cap * sizeof *lc->recs);
    tes__free(a, lc->links, (size_t)lc->link_cap * sizeof *lc->links);
    tes__entity_index_fini(&lc->ids, a);
    lc->w->lifecycle = NULL;
    tes__free(a, lc, sizeof *lc);
}

static void unlink_member(tes__lifecycle_t *lc, uint32_t index)
{
    uint32_t *instance = &lc->w->entities.instances[index];
    uint32_t inst_index = *instance - 1;
    tes__instance_rec_t *rec = &lc->recs[inst_index];
    tes__member_link_t *l = &lc->links[index];
    if (l->prev != TES_NULL_INDEX)
        lc->links[l->prev].next = l->next;
    else
        rec->first = l->next;
    if (l->next != TES_NULL_INDEX)
        lc->links[l->next].prev = l->prev;
    else
        rec->last = l->prev;
    *instance = 0;
    if (--rec->count == 0) {
        /* The last member left: the instance is over. */
        tes_entity_t id = tes_entity_make(inst_index, lc->ids.slots[inst_index].generation);
        tes__entity_free(&lc->ids, id);
        lc->w->instances_alive--;
    }
}

/* Releases the record of a prefab root that is being destroyed. */
static void prefab_forget(tes__lifecycle_t *lc, tes_entity_t root)
{
    uint64_t index;
    if (!tes__map_get(&lc->prefab_by_root, root, &index))
        return;
    tes__prefab_rec_t *rec = &lc->prefabs[index];
    tes__free(&lc->w->alloc, rec->members, (size_t)rec->cap * sizeof *rec->members);
    *rec = (tes__prefab_rec_t){NULL, lc->prefab_free, 0};
    lc->prefab_free = (uint32_t)index;
    lc->prefabs_alive--;
    tes__map_remove(&lc->prefab_by_root, root, index);
}

static int lifecycle_watch_reserve(void *ctx, uint32_t index, uint32_t extra)
{
    (void)ctx, (void)index, (void)extra;
    return TES_OK;
}

/* A destroyed entity leaves its instance; a destroyed prefab root takes its
 * prefab record with it. */
static void lifecycle_watch_before(void *ctx, tes_entity_t e, tes_comp_t c)
{
    tes__lifecycle_t *lc = ctx;
    if (c != TES__WATCH_DESTROY)
        return;
    if (tes__entity_instance(&lc->w->entities, tes_entity_index(e)))
        unlink_member(lc, tes_entity_index(e));
    if (lc->prefabs_alive)
        prefab_forget(lc, e);
}

static void lifecycle_watch_after(void *ctx, tes_entity_t e, tes_comp_t c) { (void)ctx, (void)e, (void)c; }

tes__lifecycle_t *tes__lifecycle(tes_world_t *w)
{
    if (w->lifecycle)
        return w->lifecycle;
    tes__lifecycle_t *lc = tes__calloc(&w->alloc, sizeof *lc);
    if (!lc)
        return NULL;
    lc->w = w;
    if (tes__entity_track_instances(&w->entities, &w->alloc)) {
        tes__free(&w->alloc, lc, sizeof *lc);
        return NULL;
    }
    tes__entity_index_init(&lc->ids, w->entities.generation_limit, 0);
    lc->prefab_free = TES_NULL_INDEX;
    tes__watcher_t watcher = {.reserve = lifecycle_watch_reserve, .before = lifecycle_watch_before,
                              .after = lifecycle_watch_after, .ctx = lc, .destroy_only = true};
    if (tes__world_watch(w, &watcher, NULL, 0)) {
        tes__free(&w->alloc, lc, sizeof *lc);
        return NULL;
    }
    if (tes__world_depend(w, lifecycle_fini, lc)) {
        tes__world_unwatch(w, lc, NULL);
        tes__free(&w->alloc, lc, sizeof *lc);
        return NULL;
    }
    w->lifecycle = lc;
    return lc;
}

int tes__instances_reserve(tes__lifecycle_t *lc, uint32_t n, uint32_t max_index)
{
    tes__alloc_t *a = &lc->w->alloc;
    int rc = tes__entity_reserve(&lc->ids, a, n);
    if (rc)
        return rc;
    if (tes__grow(a, (void **)&lc->recs, &lc->rec_cap, lc->ids.cap, sizeof *lc->recs, 64))
        return TES_ERR_NOMEM;
    return tes__grow(a, (void **)&lc->links, &lc->link_cap, max_index, sizeof *lc->links, 1024);
}

tes_instance_t tes__instance_create(tes__lifecycle_t *lc)
{
    tes_instance_t id = tes__entity_create(&lc->ids, 0, 0); /* table 0: the id is alive */
    lc->recs[tes_entity_index(id)] = (tes__instance_rec_t){TES_NULL_INDEX, TES_NULL_INDEX, 0};
    lc->w->instances_alive++;
    return id;
}

void tes__instance_link(tes__lifecycle_t *lc, tes_instance_t inst, tes_entity_t e)
{
    uint32_t inst_index = tes_entity_index(inst), index = tes_entity_index(e);
    tes__instance_rec_t *rec = &lc->recs[inst_index];
    lc->links[index] = (tes__member_link_t){TES_NULL_INDEX, rec->last};
    if (rec->last != TES_NULL_INDEX)
        lc->links[rec->last].next = index;
    else
        rec->first = index;
    rec->last = index;
    rec->count++;
    lc->w->entities.instances[index] = inst_index + 1;
}

/* The record of a live instance, or NULL. */
static tes__instance_rec_t *live_rec(const tes_world_t *w, tes_instance_t inst)
{
    tes__lifecycle_t *lc = w ? w->lifecycle : NULL;
    if (!lc || !tes__entity_slot(&lc->ids, inst))
        return NULL;
    return &lc->recs[tes_entity_index(inst)];
}

/* The instance id space (NULL before the first instance). */
static const tes__entity_index_t *instance_ids(const tes_world_t *w)
{
    return w->lifecycle ? &w->lifecycle->ids : NULL;
}

static int fail_stale_instance(tes_world_t *w, tes_instance_t inst)
{
    return tes__fail_stale_instance(w, instance_ids(w), inst);
}

bool tes_instance_alive(const tes_world_t *w, tes_instance_t inst) { return live_rec(w, inst) != NULL; }

tes_instance_t tes_instance_of(const tes_world_t *w, tes_entity_t e)
{
    if (!w)
        return 0;
    if (!tes__entity_slot(&w->entities, e))
        return 0;
    uint32_t member_of = tes__entity_instance(&w->entities, tes_entity_index(e));
    if (!member_of)
        return 0;
    uint32_t index = member_of - 1;
    const tes__lifecycle_t *lc = w->lifecycle;
    return tes_entity_make(index, lc->ids.slots[index].generation);
}

int32_t tes_instance_members(const tes_world_t *w, tes_instance_t inst, tes_entity_t *out,
                             int32_t cap)
{
    if (!w)
        return -1;
    const tes__instance_rec_t *rec = live_rec(w, inst);
    if (!rec)
        return tes__fail_const_stale(w, instance_ids(w), inst, TES__STALE_INSTANCE), -1;
    if (cap < 0 || (cap > 0 && !out))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_instance_members: cap = %d with out %s", (int)cap, out ? "set" : "NULL"), -1;
    uint64_t n = 0; /* reported up to INT32_MAX */
    for (uint32_t i = rec->first; i != TES_NULL_INDEX; i = w->lifecycle->links[i].next, n++)
        if (n < (uint64_t)cap)
            out[n] = tes_entity_make(i, w->entities.slots[i].generation);
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

/* Destroys every member of a live instance, now. */
static void destroy_members_only(tes_world_t *w, tes_instance_t inst)
{
    /* Each destroy unlinks the member; the last one retires the id. A
     * destroy runs hooks, so the record is looked up again each time
     * (never a pointer into the record array kept across them), and the
     * walk stops when the instance is gone. */
    tes__instance_rec_t *rec;
    while ((rec = live_rec(w, inst)) != NULL && rec->count) {
        uint32_t index = rec->first;
        tes__world_destroy(w, tes_entity_make(index, w->entities.slots[index].generation));
    }
}

/* Destroys every member of a live instance and the members' descendants,
 * checked first: under strict_lifecycle a descendant that belongs to
 * another instance refuses the call (TES_ERR_OWNED, nothing destroyed).
 * Without commit, only checks. TES_OK, TES_ERR_OWNED or TES_ERR_NOMEM, recorded. */
static int destroy_members(tes_world_t *w, tes_instance_t inst, bool commit)
{
    const tes__instance_rec_t *rec = live_rec(w, inst);
    bool cascades = false;
    for (uint32_t i = rec->first; w->hier && !cascades && i != TES_NULL_INDEX;
         i = w->lifecycle->links[i].next)
        cascades = w->hier_ops->has_children(w, i);
    if (!cascades) {
        if (commit)
            destroy_members_only(w, inst);
        return TES_OK;
    }
    tes__alloc_t *a = &w->alloc;
    size_t bytes = (size_t)rec->count * sizeof(tes_entity_t);
    tes_entity_t *members = tes__malloc(a, bytes);
    if (!members)
        return tes__fail(w, TES_ERR_NOMEM);
    uint32_t n = 0;
    for (uint32_t i = rec->first; i != TES_NULL_INDEX; i = w->lifecycle->links[i].next)
        members[n++] = tes_entity_make(i, w->entities.slots[i].generation);
    uint32_t own = tes_entity_index(inst) + 1;
    tes__destroy_plan_t plan;
    int rc = TES_OK;
    if (tes__world_destroy_plan(w, members, n, &plan))
        rc = tes__fail(w, TES_ERR_NOMEM);
    if (!rc)
        rc = tes__world_plan_owned(w, &plan, own);
    for (uint32_t i = 0; !rc && commit && i < plan.count; i++)
        tes__world_destroy(w, plan.items[i]);
    tes__world_plan_free(w, &plan);
    tes__free(a, members, bytes);
    return rc;
}

/* The deferred form: arg holds the instance handle. */
static int destroy_deferred(tes_world_t *w, void *arg, bool run)
{
    tes_instance_t inst;
    memcpy(&inst, arg, sizeof inst);
    tes__free(&w->alloc, arg, sizeof inst);
    if (!run)
        return TES_OK;
    if (!live_rec(w, inst))
        return TES_ERR_STALE;
    int rc = tes__world_begin(w, "tes_instance_destroy (deferred)");
    if (rc)
        return rc;
    rc = destroy_members(w, inst, true);
    tes__world_end(w);
    return rc;
}

int tes_instance_destroy(tes_world_t *w, tes_instance_t inst)
{
    int rc = tes__world_begin(w, "tes_instance_destroy");
    if (rc)
        return rc;
    if (!live_rec(w, inst))
        rc = fail_stale_instance(w, inst);
    else if (tes__deferred(w)) {
        void *arg = NULL;
        /* Checked now as well as when applied. */
        if ((rc = destroy_members(w, inst, false)) != TES_OK)
            ;
        else if (tes__defer_reserve_call(w, 0) || !(arg = tes__malloc(&w->alloc, sizeof inst)))
            rc = tes__fail(w, TES_ERR_NOMEM);
        else {
            memcpy(arg, &inst, sizeof inst);
            tes__defer_push_call(w, destroy_deferred, NULL, arg, NULL, 0);
        }
    } else {
        rc = destroy_members(w, inst, true);
    }
    tes__world_end(w);
    return rc;
}

int tes_instance_detach(tes_world_t *w, tes_entity_t e)
{
    int rc = tes__world_begin(w, "tes_instance_detach");
    if (rc)
        return rc;
    tes__slot_t *slot;
    rc = tes__world_enter(w, e, &slot);
    if (!rc && !tes__entity_instance(&w->entities, tes_entity_index(e)))
        rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_instance_detach: entity %u:%u belongs to no instance", tes_entity_index(e), tes_entity_generation(e));
    if (!rc)
        unlink_member(w->lifecycle, tes_entity_index(e));
    tes__world_end(w);
    return rc;
}

int tes_instance_adopt(tes_world_t *w, tes_instance_t inst, tes_entity_t e)
{
    int rc = tes__world_begin(w, "tes_instance_adopt");
    if (rc)
        return rc;
    tes__slot_t *slot;
    rc = tes__world_enter(w, e, &slot);
    if (!rc && !live_rec(w, inst))
        rc = fail_stale_instance(w, inst);
    if (!rc && tes__entity_instance(&w->entities, tes_entity_index(e)))
        rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_instance_adopt: entity %u:%u already belongs to an instance (detach it first)", tes_entity_index(e), tes_entity_generation(e));
    if (!rc && tes__instances_reserve(w->lifecycle, 0, w->entities.count))
        rc = tes__fail(w, TES_ERR_NOMEM);
    if (!rc)
        tes__instance_link(w->lifecycle, inst, e);
    tes__world_end(w);
    return rc;
}
