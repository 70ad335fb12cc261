/*
 * Prefabs and instantiation (seed 004). A prefab is a root entity plus an
 * ordered list of members, all tagged TES_PREFAB so queries skip them.
 * Instantiating copies every member into a new entity (copy hooks, or
 * memcpy), drops the TES_PREFAB tag, remaps entity_fields that point at
 * members of the same prefab to the corresponding new entities, and groups
 * the new entities under a fresh instance id.
 *
 * tes_instantiate_n is the bulk path: it reserves all ids, rows and store
 * room up front, then fills member by member, so each member's n copies
 * land in consecutive rows of one table and are copied column by column.
 * Like every structural call, instantiation reserves everything before it
 * changes anything; while the world is deferred, the new entities and the
 * instance exist at once and receive their components at the flush.
 */
#include <string.h>

#include "core/checked.h"
#include "lifecycle/instance.h"
#include "world/defer.h"
#include "world/last_error.h"
#include "world/quiet.h"

/* ------------------------------------------------------------------ records */

static tes__prefab_rec_t *prefab_of(const tes__lifecycle_t *lc, tes_entity_t root)
{
    uint64_t index;
    if (!lc || !tes__map_get(&lc->prefab_by_root, root, &index))
        return NULL;
    return &lc->prefabs[index];
}

/* Resolves a prefab handle: TES_ERR_STALE if dead, TES_ERR_INVALID if it is
 * not a prefab root. */
static int lookup_prefab(tes_world_t *w, tes_entity_t prefab, tes__prefab_rec_t **rec)
{
    if (!tes_alive(w, prefab))
        return tes__fail_stale(w, prefab);
    *rec = prefab_of(w->lifecycle, prefab);
    return *rec ? TES_OK : tes__fail_detail(w, TES_ERR_INVALID, "entity %u:%u is not a prefab root", tes_entity_index(prefab), tes_entity_generation(prefab));
}

/* Spawns one entity tagged TES_PREFAB (deferred like any spawn). */
static tes_entity_t spawn_prefab_entity(tes_world_t *w)
{
    tes_comp_t tag = TES_PREFAB;
    tes_entity_t e = TES_NULL;
    return tes_spawn_n(w, 1, &tag, 1, &e) == TES_OK ? e : TES_NULL;
}

tes_entity_t tes_prefab_new(tes_world_t *w)
{
    if (!w)
        return TES_NULL;
    if (tes__refused(w, TES__REFUSE_CREATING)) {
        tes__fail_busy(w, "tes_prefab_new");
        return TES_NULL;
    }
    tes__lifecycle_t *lc = tes__lifecycle(w);
    tes__alloc_t *a = &w->alloc;
    tes_entity_t *members = NULL;
    bool reuse = lc && lc->prefab_free != TES_NULL_INDEX;
    if (!lc ||
        (!reuse && tes__grow(a, (void **)&lc->prefabs, &lc->prefab_cap,
                             (uint64_t)lc->prefab_count + 1, sizeof *lc->prefabs, 16)) ||
        tes__map_reserve(&lc->prefab_by_root, a, 1) ||
        !(members = tes__malloc(a, 4 * sizeof *members))) {
        tes__fail(w, TES_ERR_NOMEM);
        return TES_NULL;
    }
    tes_entity_t root = spawn_prefab_entity(w);
    if (!root) {
        tes__free(a, members, 4 * sizeof *members);
        return TES_NULL;
    }
    uint32_t index = reuse ? lc->prefab_free : lc->prefab_count++;
    if (reuse)
        lc->prefab_free = lc->prefabs[index].count;
    members[0] = root;
    lc->prefabs[index] = (tes__prefab_rec_t){members, 1, 4};
    lc->prefabs_alive++;
    tes__map_insert(&lc->prefab_by_root, root, index);
    return root;
}

/* Drops members that died, keeping the order: called when the list is full,
 * so a prefab whose children come and go never grows without bound. */
static void prune_members(const tes_world_t *w, tes__prefab_rec_t *rec)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < rec->count; i++)
        if (i == 0 || tes_alive(w, rec->members[i]))
            rec->members[k++] = rec->members[i];
    rec->count = k;
}

tes_entity_t tes_prefab_child(tes_world_t *w, tes_entity_t prefab)
{
    if (!w)
        return TES_NULL;
    if (tes__refused(w, TES__REFUSE_CREATING)) {
        tes__fail_busy(w, "tes_prefab_child");
        return TES_NULL;
    }
    tes__prefab_rec_t *rec;
    int rc = lookup_prefab(w, prefab, &rec);
    if (!rc && rec->count == rec->cap)
        prune_members(w, rec);
    if (!rc && tes__grow(&w->alloc, (void **)&rec->members, &rec->cap, (uint64_t)rec->count + 1,
                         sizeof *rec->members, 4))
        rc = TES_ERR_NOMEM;
    if (rc) {
        tes__fail(w, rc);
        return TES_NULL;
    }
    tes_entity_t child = spawn_prefab_entity(w);
    /* The spawn ran watchers: the record is found again by its root. */
    rec = prefab_of(w->lifecycle, prefab);
    if (child && rec)
        rec->members[rec->count++] = child;
    return child;
}

int32_t tes_prefab_members(const tes_world_t *w, tes_entity_t prefab, tes_entity_t *out, int32_t cap)
{
    if (!w)
        return -1;
    if (!tes_alive(w, prefab))
        return tes__fail_const_stale(w, &w->entities, prefab, TES__STALE_ENTITY), -1;
    if (cap < 0 || (cap > 0 && !out))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_prefab_members: cap = %d with out %s", (int)cap, out ? "set" : "NULL"), -1;
    const tes__prefab_rec_t *rec = prefab_of(w->lifecycle, prefab);
    if (!rec)
        return tes__fail_const(w, TES_ERR_INVALID, "tes_prefab_members: entity %u:%u is not a prefab root", tes_entity_index(prefab), tes_entity_generation(prefab)), -1;
    uint64_t n = 0; /* reported up to INT32_MAX */
    for (uint32_t i = 0; i < rec->count; i++) {
        if (!tes_alive(w, rec->members[i]))
            continue;
        if (n < (uint64_t)cap)
            out[n] = rec->members[i];
        n++;
    }
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

/* ------------------------------------------------------------------ plans */

/* What one instantiation copies: m members (TES_NULL for a member that died
 * since the plan was made), into n instances of m entities each, laid out
 * instance by instance in `ents` (whose indices are in `indices`). */
typedef struct plan {
    tes_entity_t *members;
    tes__table_t **dst;
    uint32_t m;
    uint32_t n;
    tes_entity_t *ents;
    uint32_t *indices;
    uint8_t *skip;       /* per entity: died before a deferred plan ran */
    void *links;         /* the hierarchy's prepared links and names, or NULL */
} plan_t;

/* Walks the indices of the copies of the members that have a given sparse
 * component (a tes__sparse_store_reserve index callback). */
typedef struct store_walk {
    const plan_t *p;
    const tes__sparse_store_t *st;
    uint32_t member;
    uint32_t instance;
} store_walk_t;

static bool member_has(const plan_t *p, uint32_t i, const tes__sparse_store_t *st)
{
    return p->members[i] && tes__sparse_set_contains(&st->set, p->members[i]);
}

static uint32_t store_walk_next(void *ctx)
{
    store_walk_t *sw = ctx;
    while (!member_has(sw->p, sw->member, sw->st))
        sw->member++;
    uint32_t index = sw->p->indices[sw->instance * sw->p->m + sw->member];
    if (++sw->instance == sw->p->n) {
        sw->instance = 0;
        sw->member++;
    }
    return index;
}

/* Reserves every table row and store slot the copies need. TES_OK or
 * TES_ERR_NOMEM, with nothing observable changed. */
static int plan_reserve(tes_world_t *w, plan_t *p)
{
    tes__alloc_t *a = &w->alloc;
    for (uint32_t i = 0; i < p->m; i++) {
        p->dst[i] = NULL;
        if (!p->members[i])
            continue;
        const tes__slot_t *slot = tes__entity_slot(&w->entities, p->members[i]);
        p->dst[i] = tes__graph_step(&w->tables, a, &w->components, tes__slot_table(w, slot),
                                    TES_PREFAB, false);
        if (!p->dst[i])
            return TES_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < p->m; i++) {
        uint64_t rows = 0;
        bool first = true;
        for (uint32_t j = 0; j < p->m; j++) {
            if (p->dst[j] && p->dst[j] == p->dst[i]) {
                first &= j >= i;
                rows += p->n;
            }
        }
        if (p->dst[i] && first && (rows > UINT32_MAX || tes__table_reserve(p->dst[i], a, (uint32_t)rows)))
            return TES_ERR_NOMEM;
    }
    const tes__registry_t *reg = &w->components;
    for (uint32_t s = 0; s < reg->sparse_count; s++) {
        tes__sparse_store_t *st = &reg->items[reg->sparse[s]]->store;
        uint64_t count = 0;
        for (uint32_t i = 0; i < p->m; i++)
            count += member_has(p, i, st) ? p->n : 0;
        store_walk_t sw = {p, st, 0, 0};
        if (count && (count > UINT32_MAX ||
                      tes__sparse_store_reserve(st, a, (uint32_t)count, 0, store_walk_next, &sw)))
            return TES_ERR_NOMEM;
    }
    for (uint32_t k = 0; w->watcher_count && k < p->n * p->m; k++)
        if (tes__watch_reserve(w, 0, p->indices[k], k ? 0 : p->n * p->m))
            return TES_ERR_NOMEM;
    /* Last: nothing after it can fail, so a prepared copy is always used. */
    if (w->hier && !p->links &&
        w->hier_ops->instance_prepare(w, p->members, p->m, p->n, p->indices, &p->links))
        return TES_ERR_NOMEM;
    return TES_OK;
}

/* Points every entity field of the value at a member of the plan to the
 * corresponding entity of instance k. References elsewhere are kept. */
static void remap_value(const plan_t *p, uint32_t k, const tes__component_t *info, void *value)
{
    for (uint32_t f = 0; f < info->members.entity_count; f++) {
        uint8_t *field = (uint8_t *)value + info->members.entity_offsets[f];
        tes_entity_t ref;
        memcpy(&ref, field, sizeof ref);
        for (uint32_t j = 0; ref != TES_NULL && j < p->m; j++) {
            if (p->members[j] == ref) {
                memcpy(field, &p->ents[k * p->m + j], sizeof ref);
                break;
            }
        }
    }
}

/* Copies member i into its n entities (which sit in the root, empty),
 * except those the plan skips. */
static void copy_member(tes_world_t *w, const plan_t *p, uint32_t i)
{
    tes_entity_t member = p->members[i];
    /* The copies run ctor and copy hooks: the member's location is read
     * once, before any of them. */
    const tes__slot_t *src_slot = tes__entity_slot(&w->entities, member);
    const tes__table_t *src = tes__slot_table(w, src_slot);
    uint32_t src_row = src_slot->row;
    tes__table_t *dst = p->dst[i];
    bool sparse = (src_slot->table & TES__SLOT_SPARSE) != 0;
    uint32_t first_row = dst->count, rows = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        tes_entity_t e = p->ents[k * p->m + i];
        if (p->skip[k * p->m + i])
            continue;
        tes__slot_t *slot = &w->entities.slots[tes_entity_index(e)];
        tes__slot_set_table(slot, dst->id, tes__table_push(dst, e));
        tes__slot_hint_sparse(slot, sparse);
        rows++;
    }
    /* dst's type is src's without TES_PREFAB, a tag: the columns match one
     * to one. Column by column, the copies are consecutive rows. */
    for (uint32_t c = 0; c < dst->column_count; c++) {
        const tes__component_t *info = dst->columns[c].info;
        const void *value = tes__table_cell(src, c, src_row);
        bool plain = !info->hooks.ctor && !info->hooks.copy;
        for (uint32_t r = 0, k = 0; r < rows; r++, k++) {
            while (p->skip[k * p->m + i])
                k++;
            void *cell = tes__table_cell(dst, c, first_row + r);
            if (plain) {
                tes__copy_bytes(cell, value, info->size);
            } else {
                tes__component_construct1(info, cell);
                tes__component_copy1(info, cell, value);
            }
            remap_value(p, k, info, cell);
        }
    }
    const tes__registry_t *reg = &w->components;
    for (uint32_t s = 0; sparse && s < reg->sparse_count; s++) {
        tes__component_t *info = reg->items[reg->sparse[s]];
        if (!tes__sparse_set_contains(&info->store.set, member))
            continue;
        for (uint32_t k = 0; k < p->n; k++) {
            if (p->skip[k * p->m + i])
                continue;
            void *cell = tes__sparse_store_insert(&info->store, p->ents[k * p->m + i]);
            if (!cell)
                continue;
            tes__component_construct1(info, cell);
            tes__component_copy1(info, cell, tes__sparse_store_get(&info->store, member));
            remap_value(p, k, info, cell);
        }
    }
}

/* Fills the plan's entities (reserved, in the root, empty); then watchers
 * and on_add observers see the finished instances. Returns TES_OK, or
 * TES_ERR_INVALID (recorded) when a link among the copies was not made
 * (a copy named while the world was deferred; see instance_commit): the
 * rest is applied all the same. */
static int plan_commit(tes_world_t *w, plan_t *p)
{
    int rc = TES_OK;
    /* Copy hooks and observers run from here on; the watchers will still
     * hear of every entity of the plan. */
    tes__watch_scope_list(w, p->indices, NULL, p->n * p->m);
    /* Links and names first: hooks see an instance shaped like its prefab. */
    if (p->links) {
        rc = w->hier_ops->instance_commit(w, p->links, p->indices, p->skip);
        p->links = NULL;
    }
    for (uint32_t i = 0; i < p->m; i++)
        if (p->members[i])
            copy_member(w, p, i);
    for (uint32_t k = 0; k < p->n * p->m; k++) {
        if (p->skip[k])
            continue;
        tes_entity_t e = p->ents[k];
        tes__watch_after(w, e, 0); /* may run move hooks: the slot is read after */
        const tes__slot_t *slot = &w->entities.slots[tes_entity_index(e)];
        if ((tes__slot_table(w, slot)->flags & TES__TABLE_HAS_ON_ADD) ||
            (slot->table & TES__SLOT_SPARSE))
            tes__world_each(w, e, tes__fire_on_add);
    }
    return rc;
}

/* Whether member e is copied: alive where the call takes its place, so
 * not dead, and, while deferred, no destroy of it queued (the calls made
 * one after another would have destroyed it by then). */
static bool member_live(const tes_world_t *w, tes_entity_t e)
{
    return tes_alive(w, e) && !(tes__deferred(w) && tes__defer_destroyed(w, e));
}

/* Allocates a plan for n instances of the live members of rec. */
static int plan_new(tes_world_t *w, const tes__prefab_rec_t *rec, uint32_t n, plan_t *p)
{
    tes__alloc_t *a = &w->alloc;
    memset(p, 0, sizeof *p);
    for (uint32_t i = 0; i < rec->count; i++)
        p->m += member_live(w, rec->members[i]);
    p->n = n;
    uint64_t total = (uint64_t)n * p->m;
    if (total > UINT32_MAX / 2)
        return TES_ERR_FULL;
    /* Checked sizes: with a 32-bit size_t, 2^29 entities of 8 bytes wrap. */
    size_t member_bytes, dst_bytes, ent_bytes, index_bytes;
    if (!tes__size_mul(&member_bytes, p->m, sizeof *p->members) ||
        !tes__size_mul(&dst_bytes, p->m, sizeof *p->dst) ||
        !tes__size_mul(&ent_bytes, (size_t)total, sizeof *p->ents) ||
        !tes__size_mul(&index_bytes, (size_t)total, sizeof *p->indices)) {
        p->m = p->n = 0; /* nothing allocated: plan_free frees nothing */
        return TES_ERR_NOMEM;
    }
    p->members = tes__malloc(a, member_bytes);
    p->dst = tes__malloc(a, dst_bytes);
    p->ents = tes__malloc(a, ent_bytes);
    p->indices = tes__malloc(a, index_bytes);
    p->skip = tes__calloc(a, (size_t)total);
    if (!p->members || !p->dst || !p->ents || !p->indices || !p->skip)
        return TES_ERR_NOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < rec->count; i++)
        if (member_live(w, rec->members[i]))
            p->members[k++] = rec->members[i];
    return TES_OK;
}

static void plan_free(tes_world_t *w, plan_t *p)
{
    tes__alloc_t *a = &w->alloc;
    if (p->links)
        w->hier_ops->instance_discard(w, p->links);
    size_t total = (size_t)p->n * p->m;
    tes__free(a, p->members, p->m * sizeof *p->members);
    tes__free(a, p->dst, p->m * sizeof *p->dst);
    tes__free(a, p->ents, total * sizeof *p->ents);
    tes__free(a, p->indices, total * sizeof *p->indices);
    tes__free(a, p->skip, total);
}

/* ------------------------------------------------------------------ instantiate */

/* A deferred instantiation's plan, applied at the flush. */
static int instantiate_deferred(tes_world_t *w, void *arg, bool run)
{
    plan_t *p = arg;
    int rc = TES_OK;
    if (run) {
        for (uint32_t i = 0; i < p->m; i++)
            if (!tes_alive(w, p->members[i]))
                p->members[i] = TES_NULL;
        /* Copies go only to entities still alive (nothing queued before
         * this call could have given them components). */
        for (uint32_t k = 0; k < p->n * p->m; k++) {
            tes__slot_t *slot = tes__entity_slot(&w->entities, p->ents[k]);
            p->skip[k] = !slot;
            if (slot)
                slot->row = 0; /* materialised */
        }
        rc = tes__world_begin(w, "tes_instantiate (deferred)");
        if (!rc) {
            if ((rc = plan_reserve(w, p)) == TES_OK)
                rc = plan_commit(w, p); /* TES_ERR_INVALID: a link not made */
            else
                tes__fail(w, rc); /* the flush reports it like any command's */
            tes__world_end(w);
        }
    }
    plan_free(w, p);
    tes__free(&w->alloc, p, sizeof *p);
    return rc;
}

/* What a deferred instantiation gives entity e (see tes__defer_fill_fn):
 * a copy of its member's c as the member holds it when the flush reaches
 * the call (the queue works that out), remapped to its instance. */
static tes_entity_t instantiate_fill(const tes_world_t *w, void *arg, tes_entity_t e,
                                     tes_comp_t c, void *dst)
{
    const plan_t *p = arg;
    uint32_t total = p->n * p->m, at = 0;
    while (at < total && p->ents[at] != e)
        at++;
    tes__assert(at < total);
    if (dst) {
        remap_value(p, at / p->m, tes__registry_get(&w->components, c), dst);
        return TES_NULL;
    }
    tes_entity_t member = p->members[at % p->m];
    return c == TES_PREFAB || !tes_alive(w, member) ? TES_NULL : member;
}

/* The shared body of tes_instantiate and tes_instantiate_n. */
static int instantiate(tes_world_t *w, tes_entity_t prefab, uint32_t n, tes_instance_t *out_inst,
                       tes_entity_t *out, int32_t cap)
{
    tes__prefab_rec_t *rec;
    int rc = lookup_prefab(w, prefab, &rec);
    if (rc)
        return rc;
    if (!member_live(w, prefab))
        return tes__fail_detail(w, TES_ERR_STALE,
                                "entity %u:%u: its destroy is queued (the world is deferred), so "
                                "it cannot be instantiated",
                                tes_entity_index(prefab), tes_entity_generation(prefab));
    tes__lifecycle_t *lc = w->lifecycle;
    bool deferred = tes__deferred(w);
    plan_t local, *p = &local;
    if (deferred && !(p = tes__malloc(&w->alloc, sizeof *p)))
        return TES_ERR_NOMEM;
    rc = plan_new(w, rec, n, p);
    uint32_t total = p->n * p->m;
    if (!rc)
        rc = tes__entity_reserve(&w->entities, &w->alloc, total);
    if (!rc) {
        tes__index_walk_t walk = tes__index_walk_start(&w->entities);
        uint32_t max_index = 0;
        for (uint32_t k = 0; k < total; k++) {
            p->indices[k] = tes__index_walk_next(&walk);
            max_index = p->indices[k] + 1 > max_index ? p->indices[k] + 1 : max_index;
        }
        rc = tes__instances_reserve(lc, n, max_index);
    }
    if (!rc)
        rc = !deferred ? plan_reserve(w, p)
             : tes__defer_reserve_call(w, total) ? TES_ERR_NOMEM
                                                  : TES_OK;
    if (rc) {
        plan_free(w, p);
        if (p != &local)
            tes__free(&w->alloc, p, sizeof *p);
        return rc;
    }
    /* Commit: the entities (empty, in the root), their instances, copies. */
    for (uint32_t k = 0; k < total; k++) {
        p->ents[k] = tes__entity_create(&w->entities, 0, deferred ? TES__ROW_PENDING : 0);
    }
    for (uint32_t k = 0; k < n; k++) {
        tes_instance_t inst = tes__instance_create(lc);
        for (uint32_t i = 0; i < p->m; i++)
            tes__instance_link(lc, inst, p->ents[k * p->m + i]);
        if (out_inst)
            out_inst[k] = inst;
    }
    for (int32_t k = 0; k < cap && (uint32_t)k < total; k++)
        out[k] = p->ents[k];
    if (deferred) {
        tes__defer_push_call(w, instantiate_deferred, instantiate_fill, p, p->ents, total);
        return TES_OK;
    }
    /* Fresh copies have no names: no link among them can be refused. */
    int linked = plan_commit(w, p);
    tes__assert(linked == TES_OK);
    (void)linked;
    plan_free(w, p);
    return TES_OK;
}

tes_instance_t tes_instantiate(tes_world_t *w, tes_entity_t prefab, tes_entity_t *out, int32_t cap)
{
    int rc = tes__world_begin_create(w, "tes_instantiate");
    if (rc)
        return 0;
    tes_instance_t inst = 0;
    if (cap < 0 || (cap > 0 && !out))
        rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_instantiate: cap = %d with out %s", (int)cap, out ? "set" : "NULL");
    else if (!tes__lifecycle(w))
        rc = TES_ERR_NOMEM;
    else
        rc = instantiate(w, prefab, 1, &inst, out, cap);
    tes__world_end(w);
    if (rc)
        tes__fail(w, rc);
    return rc ? 0 : inst;
}

int tes_instantiate_n(tes_world_t *w, tes_entity_t prefab, int32_t n, tes_instance_t *out)
{
    int rc = tes__world_begin_create(w, "tes_instantiate_n");
    if (rc)
        return rc;
    if (n < 0 || (n > 0 && !out))
        rc = tes__fail_detail(w, TES_ERR_INVALID, "tes_instantiate_n: n = %d with out %s", (int)n, out ? "set" : "NULL");
    else if (!tes__lifecycle(w))
        rc = TES_ERR_NOMEM;
    else if (n > 0)
        rc = instantiate(w, prefab, (uint32_t)n, out, NULL, 0);
    else
        rc = tes_alive(w, prefab) ? (prefab_of(w->lifecycle, prefab) ? (member_live(w, prefab) ? TES_OK : tes__fail_detail(w, TES_ERR_STALE, "entity %u:%u: its destroy is queued (the world is deferred), so it cannot be instantiated", tes_entity_index(prefab), tes_entity_generation(prefab))) : tes__fail_detail(w, TES_ERR_INVALID, "entity %u:%u is not a prefab root", tes_entity_index(prefab), tes_entity_generation(prefab)))
                                  : tes__fail_stale(w, prefab);
    tes__world_end(w);
    return rc ? tes__fail(w, rc) : TES_OK;
}

tes_entity_t tes__prefab_root_of(const tes_world_t *w, tes_entity_t e)
{
    const tes__lifecycle_t *lc = w->lifecycle;
    for (uint32_t p = 0; lc && p < lc->prefab_count; p++) {
        const tes__prefab_rec_t *rec = &lc->prefabs[p];
        for (uint32_t i = 0; rec->members && i < rec->count; i++)
            if (rec->members[i] == e)
                return rec->members[0];
    }
    return TES_NULL;
}
