/*
 * tes_snapshot_load: the loader's last part (load_parse.c proves the meta
 * part well-formed first, load_payload.c reads and verifies the raw
 * columns into column blocks the plan owns). Restoring follows the world's
 * discipline for calls that must leave it unchanged on failure:
 *
 * 1. stage: every array the loaded world will own is built in fresh
 *    allocations (entity slots, sparse stores, instance ids and records,
 *    prefab records); the target tables are created and take the column
 *    blocks the payload was read into (or get room for their rows), which
 *    changes no entity (the world has none);
 * 2. fill: the staged stores are written (the entity columns were, beside
 *    the slots, and raw table columns are already in place); values with a
 *    load hook are read value by value through it (a hook that fails has
 *    every value constructed so far destroyed again);
 * 3. commit: the staged arrays replace the world's (the old ones, which
 *    hold no entity, are freed), table row counts are set, and watchers
 *    (groups) hear about every entity. Nothing here can fail.
 *
 * No observer fires; load hooks run with the world marked busy, so they
 * cannot make structural changes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "world/changes.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "world/quiet.h"

typedef struct stage {
    tes__slot_t *slots;
    uint32_t slot_cap;
    uint32_t *instances;   /* per entity slot, when the world tracks instances */
    uint32_t instance_cap;
    uint32_t alive;
    tes__entity_index_t ids; /* instance ids */
    tes__instance_rec_t *recs;
    uint32_t rec_cap;
    tes__member_link_t *links;
    uint32_t link_cap;
    tes__prefab_rec_t *prefabs;
    uint32_t prefab_cap;
    tes__map_t prefab_map;
    uint32_t instances_alive;
    tes_comp_t *type;      /* scratch for one table type */
    /* Fill progress, for unwinding: tables before `table` are full, then
     * `col` columns of it and `row` values of the next. Likewise stores. */
    uint32_t table, col, row, store, pos;
} stage_t;

static uint32_t slot_gen(const tes__snap_index_t *ix, uint32_t i)
{
    return tes__get_u32(ix->slots + 8 * (size_t)i);
}
static uint32_t slot_link(const tes__snap_index_t *ix, uint32_t i)
{
    return tes__get_u32(ix->slots + 8 * (size_t)i + 4);
}
static tes_entity_t handle(const tes__snap_plan_t *p, uint32_t index)
{
    return tes_entity_make(index, slot_gen(&p->entities, index));
}

static void stage_free(tes__snap_plan_t *p, stage_t *s)
{
    tes__alloc_t *a = p->a;
    tes__free(a, s->slots, (size_t)s->slot_cap * sizeof *s->slots);
    tes__free(a, s->instances, (size_t)s->instance_cap * sizeof *s->instances);
    tes__entity_index_fini(&s->ids, a);
    tes__free(a, s->recs, (size_t)s->rec_cap * sizeof *s->recs);
    tes__free(a, s->links, (size_t)s->link_cap * sizeof *s->links);
    for (uint32_t r = 0; s->prefabs && r < p->nprefabs; r++)
        tes__free(a, s->prefabs[r].members, (size_t)s->prefabs[r].cap * sizeof(tes_entity_t));
    tes__free(a, s->prefabs, (size_t)s->prefab_cap * sizeof *s->prefabs);
    tes__map_fini(&s->prefab_map, a);
    tes__free(a, s->type, (size_t)p->ncomps * sizeof *s->type);
    for (uint32_t i = 0; p->stores && i < p->nstores; i++)
        tes__sparse_store_fini(&p->stores[i].staged, a);
}

/* Builds one staged entity index (entities or instance ids) from the
 * input: generations, free list, retired slots; live slots are filled in
 * by the caller. */
static void fill_index(tes__slot_t *slots, const tes__snap_index_t *ix, const uint8_t *state)
{
    for (uint32_t i = 0; i < ix->count; i++) {
        if (state[i] & TES__SNAP_PLACED)
            continue; /* stage_entities writes it with its table and row */
        if (state[i] & TES__SNAP_RETIRED)
            tes__slot_make_retired(&slots[i]);
        else if (state[i] & TES__SNAP_FREE)
            tes__slot_make_free(&slots[i], slot_gen(ix, i), slot_link(ix, i));
        else /* in the root table until a snapshot table places it */
            tes__slot_make_live(&slots[i], slot_gen(ix, i), 0, 0, (state[i] & TES__SNAP_SPARSE) != 0);
    }
}

static void init_index(tes__entity_index_t *ei, const tes__entity_index_t *like,
                       const tes__snap_index_t *ix, tes__slot_t *slots, uint32_t cap)
{
    uint32_t generation_limit = like->generation_limit, entity_limit = like->entity_limit;
    tes__entity_index_init(ei, generation_limit, entity_limit); /* ei may be like */
    ei->slots = slots;
    ei->cap = cap;
    ei->room = cap < ei->entity_limit ? cap : ei->entity_limit;
    ei->count = ix->count;
    ei->next = ix->free_head;
    ei->available = ix->free_count;
    ei->retired = ix->retired;
    ei->alive = ix->count - ix->free_count - ix->retired;
}

/* The target tables, each adopting the block its rows were laid out in. */
static int stage_tables(tes__snap_plan_t *p, stage_t *s)
{
    tes_world_t *w = p->w;
    if (p->ncomps && !(s->type = tes__malloc(p->a, (size_t)p->ncomps * sizeof *s->type)))
        return TES_ERR_NOMEM;
    for (uint32_t t = 0; t < p->ntables; t++) {
        tes__snap_table_t *st = &p->tables[t];
        /* The type in the world's ids, sorted (insertion: types are short). */
        for (uint32_t k = 0; k < st->type_count; k++) {
            tes_comp_t id = p->comps[tes__get_u32(st->type + 4 * k)].info->id;
            uint32_t at = k;
            while (at && s->type[at - 1] > id) {
                s->type[at] = s->type[at - 1];
                at--;
            }
            s->type[at] = id;
        }
        st->target = tes__graph_ensure(&w->tables, p->a, &w->components, s->type, st->type_count);
        if (!st->target)
            return TES_ERR_NOMEM;
        tes__assert(st->target->count == 0); /* the world has no entities */
        /* The block is laid out for this table and exactly its rows, the
         * payload already in it. */
        tes__assert(st->block);
        tes__table_adopt(st->target, p->a, st->block, st->block_size, st->rows);
        st->block = NULL;
    }
    return TES_OK;
}

/* The staged stores: packed positions and data pages for every position
 * (holes included: stable stores keep them), the holes marked, then one
 * index page for each 4096-slot range some live position's entity falls
 * in, allocated as the positions that need it come, and no other. */
static int stage_stores(tes__snap_plan_t *p)
{
    for (uint32_t i = 0; i < p->nstores; i++) {
        tes__snap_store_t *st = &p->stores[i];
        const tes__component_t *info = p->comps[st->comp].info;
        tes__sparse_store_init(&st->staged, info->size, info->stable);
        tes__sparse_store_track(&st->staged, info->store.tick); /* stamp pages too */
        tes__sparse_set_t *set = &st->staged.set;
        if (tes__sparse_store_reserve_positions(&st->staged, p->a, st->count))
            return TES_ERR_NOMEM;
        /* Tombstones are exactly the hole list; every other position holds
         * a live entity (TES_NULL marks "not a tombstone" meanwhile: no
         * live handle is null). */
        memset(set->packed, 0, (size_t)st->count * sizeof *set->packed);
        for (uint32_t at = st->free_head; at != TES_NULL_INDEX;) {
            uint32_t next = tes__get_u32(st->refs + 4 * (size_t)at);
            set->packed[at] = tes_entity_make(next, TES_TOMBSTONE);
            at = next;
        }
        for (uint32_t pos = 0; pos < st->count; pos++)
            if (set->packed[pos] == TES_NULL &&
                tes__sparse_set_reserve_index(set, p->a, tes__get_u32(st->refs + 4 * (size_t)pos)))
                return TES_ERR_NOMEM;
    }
    return TES_OK;
}

static int stage_lifecycle(tes__snap_plan_t *p, stage_t *s)
{
    tes__alloc_t *a = p->a;
    const tes__snap_index_t *ix = &p->instances;
    tes__lifecycle_t *lc = tes__lifecycle(p->w);
    if (!lc)
        return TES_ERR_NOMEM;
    tes__slot_t *slots = NULL;
    if (ix->count && !(slots = tes__malloc(a, (size_t)ix->count * sizeof *slots)))
        return TES_ERR_NOMEM;
    init_index(&s->ids, &lc->ids, ix, slots, ix->count);
    if (ix->count && !(s->recs = tes__malloc(a, (size_t)ix->count * sizeof *s->recs)))
        return TES_ERR_NOMEM;
    s->rec_cap = ix->count;
    s->link_cap = p->entities.count;
    if (s->link_cap && !(s->links = tes__malloc(a, (size_t)s->link_cap * sizeof *s->links)))
        return TES_ERR_NOMEM;
    if (p->nprefabs) {
        if (!(s->prefabs = tes__calloc(a, (size_t)p->nprefabs * sizeof *s->prefabs)))
            return TES_ERR_NOMEM;
        s->prefab_cap = p->nprefabs;
        if (tes__map_reserve(&s->prefab_map, a, p->nprefabs))
            return TES_ERR_NOMEM;
    }
    /* Instance ids and member lists. */
    fill_index(slots, ix, p->inst_state);
    tes__cursor_t c = {p->members, p->buf + p->body_end, false};
    for (uint32_t i = 0; i < ix->count; i++) {
        if (!(p->inst_state[i] & TES__SNAP_LIVE))
            continue;
        s->instances_alive++;
        uint32_t n = tes__cursor_u32(&c);
        tes__instance_rec_t *rec = &s->recs[i];
        *rec = (tes__instance_rec_t){TES_NULL_INDEX, TES_NULL_INDEX, 0};
        for (uint32_t k = 0; k < n; k++) {
            uint32_t index = tes__cursor_u32(&c);
            s->links[index] = (tes__member_link_t){TES_NULL_INDEX, rec->last};
            if (rec->last != TES_NULL_INDEX)
                s->links[rec->last].next = index;
            else
                rec->first = index;
            rec->last = index;
            rec->count++;
        }
    }
    /* Prefab records, in saved order. */
    uint32_t n_prefab = tes__cursor_u32(&c);
    tes__assert(n_prefab == p->nprefabs);
    (void)n_prefab;
    for (uint32_t r = 0; r < p->nprefabs; r++) {
        uint32_t n = tes__cursor_u32(&c);
        uint32_t cap = n < 4 ? 4 : n;
        tes_entity_t *members = tes__malloc(a, (size_t)cap * sizeof *members);
        if (!members)
            return TES_ERR_NOMEM;
        for (uint32_t k = 0; k < n; k++)
            members[k] = handle(p, tes__cursor_u32(&c));
        s->prefabs[r] = (tes__prefab_rec_t){members, n, cap};
        tes__map_insert(&s->prefab_map, members[0], r);
    }
    return TES_OK;
}

/* Constructs one value and reads it with the load hook. A failure is
 * recorded with the component and the value's offset in the input (a
 * detail the hook recorded itself, through a failed call, stays). */
static int load_framed(tes__snap_plan_t *p, const tes__component_t *info, void *cell,
                       tes__cursor_t *c)
{
    uint32_t len;
    uint64_t at = (uint64_t)(c->p - p->buf);
    const uint8_t *bytes = tes__snap_value(c, true, info->size, &len);
    tes__cursor_t value = {bytes, bytes + len, false};
    tes_reader_t reader = {tes__cursor_read, &value};
    tes__component_construct1(info, cell);
    int rc = info->hooks.load(cell, &reader, info->hooks.ctx);
    if (!rc && value.p != value.end) {
        tes__component_destruct(info, cell, 1);
        return tes__snap_bad(p, at, "the load hook of '%.64s' read %zu of the value's %u bytes",
                             info->name, (size_t)(value.p - bytes), (unsigned)len);
    }
    if (rc) {
        tes__component_destruct(info, cell, 1);
        rc = rc < 0 ? rc : TES_ERR_FORMAT;
        if (!p->w->detail.text[0])
            tes__fail_detail(p->w, rc, "snapshot: the load hook of '%.64s' returned %d for the "
                             "value at byte %llu", info->name, rc, (unsigned long long)at);
        return rc;
    }
    return TES_OK;
}

static int fill_tables(tes__snap_plan_t *p, stage_t *s)
{
    for (s->table = 0; s->table < p->ntables; s->table++) {
        const tes__snap_table_t *st = &p->tables[s->table];
        tes__table_t *t = st->target;
        tes__cursor_t c = {st->data, p->buf + p->body_end, false};
        for (s->col = 0; s->col < st->type_count; s->col++) {
            const tes__snap_comp_t *comp = &p->comps[tes__get_u32(st->type + 4 * s->col)];
            int32_t col = tes__table_column_index(t, comp->info->id);
            if (col < 0)
                continue;
            uint8_t *cells = t->columns[col].data;
            if (!comp->framed)
                continue; /* read into place from the payload */
            for (s->row = 0; s->row < st->rows; s->row++) {
                int rc = load_framed(p, comp->info, cells + (size_t)s->row * comp->info->size, &c);
                if (rc)
                    return rc;
            }
            s->row = 0;
        }
        s->col = 0;
    }
    return TES_OK;
}

static int fill_stores(tes__snap_plan_t *p, stage_t *s)
{
    for (s->store = 0; s->store < p->nstores; s->store++) {
        tes__snap_store_t *st = &p->stores[s->store];
        const tes__snap_comp_t *comp = &p->comps[st->comp];
        tes__sparse_store_t *staged = &st->staged;
        tes__sparse_set_t *set = &staged->set;
        uint32_t size = comp->info->size;
        tes__cursor_t c = {st->data, p->buf + p->body_end, false};
        /* stage_stores marked the tombstones; the rest are TES_NULL. */
        set->count = st->count;
        set->live = st->live;
        set->free_head = st->free_head;
        s->pos = 0;
        for (uint32_t pos = 0; pos < st->count; pos++) {
            if (set->packed[pos] != TES_NULL)
                continue;
            tes_entity_t e = handle(p, tes__get_u32(st->refs + 4 * (size_t)pos));
            set->packed[pos] = e;
            tes__sparse_set_entry_write(set, tes_entity_index(e), (e & ~(uint64_t)TES_NULL_INDEX) | pos);
            if (!size)
                continue;
            void *cell = tes__sparse_store_at(staged, pos);
            if (!comp->framed) {
                memcpy(cell, tes__cursor_take(&c, size), size);
                continue;
            }
            int rc = load_framed(p, comp->info, cell, &c);
            if (rc)
                return rc;
            s->pos++;
        }
    }
    return TES_OK;
}

/* Destroys the values fill_tables and fill_stores constructed before a
 * load hook failed (progress in s). */
static void unwind(tes__snap_plan_t *p, const stage_t *s)
{
    for (uint32_t t = 0; t <= s->table && t < p->ntables; t++) {
        const tes__snap_table_t *st = &p->tables[t];
        uint32_t cols = t < s->table ? st->type_count : s->col + 1;
        for (uint32_t k = 0; k < cols && k < st->type_count; k++) {
            const tes__snap_comp_t *comp = &p->comps[tes__get_u32(st->type + 4 * k)];
            int32_t col = tes__table_column_index(st->target, comp->info->id);
            if (col < 0 || !comp->framed)
                continue;
            uint32_t rows = t < s->table || k < s->col ? st->rows : s->row;
            tes__component_destruct(comp->info, st->target->columns[col].data, rows);
        }
    }
    if (s->table < p->ntables)
        return; /* stores not reached */
    for (uint32_t i = 0; i <= s->store && i < p->nstores; i++) {
        const tes__snap_store_t *st = &p->stores[i];
        const tes__snap_comp_t *comp = &p->comps[st->comp];
        if (!comp->framed)
            continue;
        uint32_t n = i < s->store ? st->live : s->pos;
        for (uint32_t pos = 0; pos < st->count && n; pos++) {
            if (tes__sparse_is_tombstone(st->staged.set.packed[pos]))
                continue;
            tes__component_destruct(comp->info, tes__sparse_store_at(&st->staged, pos), 1);
            n--;
        }
    }
}

/* Stages the entity slots; tables must be staged (their ids are known). */
static int stage_entities(tes__snap_plan_t *p, stage_t *s, bool track_instances)
{
    tes__alloc_t *a = p->a;
    uint32_t count = p->entities.count;
    s->slot_cap = count;
    /* The lifecycle layer needs the instance array whenever it exists
     * (invariant: instance_cap >= slot cap). */
    if (track_instances) {
        s->instance_cap = count > 64 ? count : 64;
        if (!(s->instances = tes__calloc(a, (size_t)s->instance_cap * sizeof *s->instances)))
            return TES_ERR_NOMEM;
    }
    if (!count)
        return TES_OK;
    if (!(s->slots = tes__malloc(a, (size_t)count * sizeof *s->slots)))
        return TES_ERR_NOMEM;
    fill_index(s->slots, &p->entities, p->state);
    s->alive = count - p->entities.free_count - p->entities.retired;
    if (s->instances && p->member_of)
        memcpy(s->instances, p->member_of, (size_t)count * sizeof *s->instances);
    /* Room in the watchers (groups) for every entity they will hear of (before
     * the entity columns are written: nothing may move a table after). */
    for (uint32_t i = 0, first = 1; p->w->watcher_count && i < count; i++) {
        if (!(p->state[i] & TES__SNAP_LIVE))
            continue;
        if (tes__watch_reserve(p->w, 0, i, first ? s->alive : 0))
            return TES_ERR_NOMEM;
        first = 0;
    }
    /* Entities in tables: slot and entity column in one pass over the rows
     * (the table is empty until commit sets its count, so writing its
     * entity column changes nothing yet). */
    for (uint32_t t = 0; t < p->ntables; t++) {
        const tes__snap_table_t *st = &p->tables[t];
        uint32_t id = st->target->id;
        tes_entity_t *column = st->target->entities;
        for (uint32_t r = 0; r < st->rows; r++) {
            uint32_t index = tes__get_u32(st->entities + 4 * (size_t)r);
            uint32_t generation = slot_gen(&p->entities, index);
            tes__slot_make_live(&s->slots[index], generation, id, r,
                                (p->state[index] & TES__SNAP_SPARSE) != 0);
            column[r] = tes_entity_make(index, generation);
        }
    }
    return TES_OK;
}

/* Replaces the world's arrays with the staged ones. Cannot fail. */
static void commit(tes__snap_plan_t *p, stage_t *s)
{
    tes_world_t *w = p->w;
    tes__alloc_t *a = p->a;
    /* Entities. */
    tes__entity_index_t *ei = &w->entities;
    bool tracking = ei->instances != NULL;
    tes__entity_index_fini(ei, a);
    init_index(ei, ei, &p->entities, s->slots, s->slot_cap);
    if (tracking) {
        ei->instances = s->instances;
        ei->instance_cap = s->instance_cap;
    }
    s->slots = NULL;
    s->instances = NULL;
    /* Tables. */
    for (uint32_t t = 0; t < p->ntables; t++) {
        tes__table_set_count(p->tables[t].target, p->tables[t].rows);
        /* Tracked values are stamped as added at the load. */
        tes__stamp_added(w, p->tables[t].target, 0, p->tables[t].rows);
    }
    /* Sparse stores: staged ones replace theirs; the rest are emptied (they
     * hold no entity, but a stable store may hold tombstones). */
    tes__registry_t *reg = &w->components;
    for (uint32_t i = 0; i < reg->sparse_count; i++) {
        tes__sparse_set_t *set = &reg->items[reg->sparse[i]]->store.set;
        set->count = set->live = 0;
        set->free_head = TES_NULL_INDEX;
    }
    for (uint32_t i = 0; i < p->nstores; i++) {
        tes__sparse_store_t *store = &p->comps[p->stores[i].comp].info->store;
        tes__sparse_store_fini(store, a);
        *store = p->stores[i].staged;
        tes__sparse_store_init(&p->stores[i].staged, store->size, store->stable);
        if (store->tick) /* tracked values are stamped as added at the load */
            tes__sparse_store_stamp_all(store);
    }
    /* Lifecycle. */
    tes__lifecycle_t *lc = w->lifecycle;
    if (lc) {
        tes__entity_index_fini(&lc->ids, a);
        lc->ids = s->ids;
        tes__entity_index_init(&s->ids, lc->ids.generation_limit, 0);
        tes__free(a, lc->recs, (size_t)lc->rec_cap * sizeof *lc->recs);
        lc->recs = s->recs, lc->rec_cap = s->rec_cap;
        tes__free(a, lc->links, (size_t)lc->link_cap * sizeof *lc->links);
        lc->links = s->links, lc->link_cap = s->link_cap;
        for (uint32_t r = 0; r < lc->prefab_count; r++)
            tes__free(a, lc->prefabs[r].members, (size_t)lc->prefabs[r].cap * sizeof(tes_entity_t));
        tes__free(a, lc->prefabs, (size_t)lc->prefab_cap * sizeof *lc->prefabs);
        tes__map_fini(&lc->prefab_by_root, a);
        lc->prefabs = s->prefabs, lc->prefab_cap = s->prefab_cap;
        lc->prefab_by_root = s->prefab_map;
        lc->prefab_count = lc->prefabs_alive = p->nprefabs;
        lc->prefab_free = TES_NULL_INDEX;
        s->recs = NULL, s->links = NULL, s->prefabs = NULL;
        s->rec_cap = s->link_cap = s->prefab_cap = 0;
        memset(&s->prefab_map, 0, sizeof s->prefab_map);
        w->instances_alive = s->instances_alive;
    }
    /* Groups hear about every entity, as if each had just been made. */
    for (uint32_t i = 0; w->watcher_count && i < p->entities.count; i++)
        if (p->state[i] & TES__SNAP_LIVE)
            tes__watch_after(w, handle(p, i), 0);
}

static int load(tes_world_t *w, const tes_reader_t *in)
{
    tes__snap_plan_t p;
    memset(&p, 0, sizeof p);
    p.w = w;
    p.a = &w->alloc;
    stage_t s;
    memset(&s, 0, sizeof s);
    tes__entity_index_init(&s.ids, w->entities.generation_limit, 0);
    int rc = tes__snap_parse(&p, in);
    if (!rc)
        rc = tes__snap_read_payload(&p, in);
    if (!rc && (p.lifecycle || w->lifecycle)) {
        if (p.lifecycle)
            rc = stage_lifecycle(&p, &s);
        else /* an empty lifecycle replaces the world's */
            init_index(&s.ids, &w->lifecycle->ids, &p.instances, NULL, 0);
    }
    if (!rc)
        rc = stage_tables(&p, &s);
    if (!rc)
        rc = stage_stores(&p);
    if (!rc)
        rc = stage_entities(&p, &s, w->entities.instances != NULL);
    char **names = NULL;
    if (!rc)
        rc = tes__snap_stage_hierarchy(&p, &names);
    if (!rc) {
        rc = fill_tables(&p, &s);
        if (!rc)
            rc = fill_stores(&p, &s);
        if (rc)
            unwind(&p, &s);
    }
    if (!rc) {
        commit(&p, &s);
        tes__snap_commit_hierarchy(&p, names);
    }
    tes__snap_free_hierarchy(&p, names);
    stage_free(&p, &s);
    tes__snap_parse_free(&p);
    return rc;
}

/* What refuses a load whatever its input, checked by both entry points
 * before they touch the reader or open the file, so a refused
 * tes_snapshot_load_file opens nothing and its detail names it: from a
 * hook level (a hook, a snapshot callback) or a running system, while
 * deferred (TES_ERR_BUSY), or into a world with live entities
 * (TES_ERR_INVALID). */
static int load_refused(tes_world_t *w, const char *call)
{
    if (tes__refused(w, TES__REFUSE_ANY))
        return tes__fail_busy(w, call);
    if (tes__deferred(w))
        return tes__fail_deferred(w, TES_ERR_BUSY, call);
    if (w->entities.alive)
        return tes__fail_detail(w, TES_ERR_INVALID, "%s: the world has %u live entities (it must have none)", call, w->entities.alive);
    return TES_OK;
}

int tes_snapshot_load(tes_world_t *w, const tes_reader_t *in)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!in || !in->read)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_snapshot_load: reader %s", in ? "has no read function" : "is NULL");
    int refused = load_refused(w, "tes_snapshot_load");
    if (refused)
        return refused;
    /* The reader and the load hooks run inside this hook level: what they
     * may not do is what hooks may not do (no structural call, no world
     * free, no other snapshot call). */
    int rc = tes__world_begin(w, "tes_snapshot_load");
    if (rc)
        return rc;
    tes__detail_t before;
    tes__snap_begin(w, &before);
    rc = load(w, in);
    tes__world_end(w);
    return tes__snap_end(w, rc, &before, "snapshot load: the reader or a load hook failed");
}

/* A file source that counts the bytes it delivered and keeps the system
 * error of a failed read, so the detail can name them. */
typedef struct file_source {
    FILE *f;
    uint64_t at;  /* bytes delivered */
    int err;      /* errno of a failed read; -1 for the end of the file */
} file_source_t;

static int file_read(void *data, size_t size, void *user)
{
    file_source_t *src = user;
    errno = 0;
    size_t got = fread(data, 1, size, src->f);
    src->at += got;
    if (got == size)
        return TES_OK;
    src->err = ferror(src->f) ? (errno ? errno : EIO) : -1;
    return TES_ERR_IO;
}

int tes_snapshot_load_file(tes_world_t *w, const char *path)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!path)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_snapshot_load_file: path is NULL");
    int refused = load_refused(w, "tes_snapshot_load_file"); /* before the file is opened */
    if (refused)
        return refused;
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tes__fail_detail(w, TES_ERR_IO, "open '%.120s': %s", path,
                                strerror(errno ? errno : EIO));
    file_source_t src = {f, 0, 0};
    tes_reader_t reader = {file_read, &src};
    int rc = tes_snapshot_load(w, &reader);
    fclose(f);
    if (rc && src.err < 0)
        rc = tes__fail_detail(w, rc, "read '%.120s': unexpected end of file at byte %llu (the "
                              "snapshot says it is longer: truncated?)", path,
                              (unsigned long long)src.at);
    else if (rc && src.err)
        rc = tes__fail_detail(w, rc, "read '%.120s': %s at byte %llu", path, strerror(src.err),
                              (unsigned long long)src.at);
    return rc;
}
