/*
 * The invariant check behind tes__world_check. It re-derives every count
 * and back-pointer from scratch and compares: entity index against tables,
 * tables against the entity index, sparse sets against themselves and the
 * entity index, and every cached move plan (each table's last edges,
 * tes_spawn_with's bundle) against the plan made afresh. Slow on purpose;
 * only tests call it.
 */
#include "world/check.h"

#include <stdio.h>

#include "storage/move_plan.h"
#include "world/changes.h"
#include "world/depth_order.h"
#include "world/world.h"
#include "world/quiet_word.h"

#define CHECK(...) TES__CHECK("tes__world_check", __VA_ARGS__)

static int check_entities(const tes_world_t *w)
{
    const tes__entity_index_t *ei = &w->entities;
    CHECK(ei->count <= ei->cap, "slot count %u exceeds capacity %u", ei->count, ei->cap);
    uint32_t alive = 0, retired = 0, free_slots = 0;
    for (uint32_t i = 0; i < ei->count; i++) {
        const tes__slot_t *s = &ei->slots[i];
        if (s->table == TES__SLOT_FREE) {
            if (s->generation == TES_TOMBSTONE)
                retired++;
            else
                free_slots++;
            continue;
        }
        alive++;
        uint32_t t = s->table & TES__SLOT_TABLE_MASK;
        CHECK(s->generation >= 1 && s->generation <= ei->generation_limit,
              "slot %u has generation %u", i, s->generation);
        CHECK(t < w->tables.count, "slot %u points at table %u of %u", i, t, w->tables.count);
        const tes__table_t *table = w->tables.tables[t];
        if (table->flags & TES__TABLE_VIRTUAL) {
            CHECK(s->row == 0 || (s->row == TES__ROW_PENDING && tes__deferred(w)),
                  "slot %u in the virtual root has row %u", i, s->row);
            continue;
        }
        CHECK(s->row < table->count, "slot %u row %u past table %u count %u", i, s->row, t,
              table->count);
        CHECK(table->entities[s->row] == tes_entity_make(i, s->generation),
              "slot %u: table %u row %u holds another entity", i, t, s->row);
    }
    CHECK(alive == ei->alive, "alive count %u, slots say %u", ei->alive, alive);
    CHECK(retired == ei->retired, "retired count %u, slots say %u", ei->retired, retired);
    CHECK(free_slots == ei->available, "available %u, free slots %u", ei->available, free_slots);
    /* The free list reaches exactly the free slots, each once. */
    uint32_t walked = 0;
    for (uint32_t i = ei->next; i != TES_NULL_INDEX; i = ei->slots[i].row) {
        CHECK(i < ei->count, "free list reaches index %u past %u", i, ei->count);
        CHECK(ei->slots[i].table == TES__SLOT_FREE && ei->slots[i].generation != TES_TOMBSTONE,
              "free list reaches a non-free slot %u", i);
        CHECK(++walked <= ei->available, "free list longer than available (%u)", ei->available);
    }
    CHECK(walked == ei->available, "free list has %u entries, available says %u", walked,
          ei->available);
    return TES_OK;
}

static int check_tables(const tes_world_t *w)
{
    /* Entities in the virtual root own no row; count them from the index. */
    uint64_t rows = 0;
    for (uint32_t i = 0; i < w->entities.count; i++)
        rows += w->entities.slots[i].table != TES__SLOT_FREE &&
                (w->entities.slots[i].table & TES__SLOT_TABLE_MASK) == 0;
    CHECK(w->tables.count && (w->tables.tables[0]->flags & TES__TABLE_VIRTUAL) &&
              w->tables.tables[0]->count == 0 && w->tables.tables[0]->type_count == 0,
          "table 0 is not the empty virtual root");
    for (uint32_t t = 0; t < w->tables.count; t++) {
        const tes__table_t *table = w->tables.tables[t];
        CHECK(table->id == t, "table %u has id %u", t, table->id);
        CHECK(table->count <= table->cap, "table %u count %u > cap %u", t, table->count,
              table->cap);
        uint32_t columns = 0;
        for (uint32_t i = 0; i < table->type_count; i++) {
            const tes__component_t *info = tes__registry_get(&w->components, table->type[i]);
            CHECK(info && info->storage == TES_STORAGE_TABLE, "table %u holds bad component %u",
                  t, table->type[i]);
            CHECK(!i || table->type[i - 1] < table->type[i], "table %u type not sorted", t);
            if (info->size) {
                CHECK(columns < table->column_count && table->columns[columns].info == info,
                      "table %u column %u does not match its type", t, columns);
                CHECK(((uintptr_t)table->columns[columns].data & (info->align - 1)) == 0 ||
                          !table->cap,
                      "table %u column %u misaligned", t, columns);
                columns++;
                /* A tracked component's two stamp columns follow its own. */
                for (uint32_t k = 0; info->track_changes && k < 2; k++, columns++)
                    CHECK(columns < table->column_count &&
                              table->columns[columns].id == info->stamps + k,
                          "table %u column %u is not a stamp column of its type", t, columns);
            }
        }
        CHECK(columns == table->column_count, "table %u has %u columns, type says %u", t,
              table->column_count, columns);
        /* tes_get's map: a small id's column start, NULL for any other id
         * (a tag, a component the table lacks, or a table with no block). */
        for (tes_comp_t c = 0; c < TES__TABLE_DIRECT_IDS; c++) {
            int32_t col = tes__table_column_index(table, c);
            const uint8_t *want = col >= 0 && table->block ? table->columns[col].data : NULL;
            CHECK(table->data_of[c] == want, "table %u: data_of[%u] is not its column's start",
                  t, c);
        }
        for (uint32_t r = 0; r < table->count; r++) {
            tes_entity_t e = table->entities[r];
            const tes__slot_t *s = tes__entity_slot(&w->entities, e);
            CHECK(s, "table %u row %u holds a dead entity", t, r);
            CHECK((s->table & TES__SLOT_TABLE_MASK) == t && s->row == r,
                  "table %u row %u: entity's location disagrees", t, r);
        }
        rows += table->count;
    }
    CHECK(rows == w->entities.alive, "tables hold %llu rows for %u live entities",
          (unsigned long long)rows, w->entities.alive);
    return TES_OK;
}

static int check_sparse(const tes_world_t *w)
{
    const tes__registry_t *reg = &w->components;
    /* tes_get's read descriptors: size and storage of each small data
     * component, 0 for the others (which take the general path). */
    for (tes_comp_t c = 0; c < TES__REGISTRY_SMALL_IDS; c++) {
        const tes__component_t *info = tes__registry_get(reg, c);
        uint32_t want = info && info->size && info->size < TES__GET_SPARSE &&
                                !info->track_changes && !info->hidden
                            ? info->size | (info->storage == TES_STORAGE_SPARSE ? TES__GET_SPARSE : 0)
                            : 0;
        CHECK(reg->get_of[c] == want, "component %u: read descriptor %x, want %x", c,
              reg->get_of[c], want);
        const tes__sparse_store_t *store = want & TES__GET_SPARSE ? &info->store : NULL;
        CHECK(reg->sparse_of[c] == store, "component %u: sparse read store out of step", c);
        uint8_t dispatch = info ? info->dispatch : TES__DISPATCH_GENERIC;
        CHECK(reg->dispatch_of[c] == dispatch, "component %u: dispatch byte %u, the record says %u",
              c, (unsigned)reg->dispatch_of[c], (unsigned)dispatch);
    }
    for (uint32_t k = 0; k < reg->sparse_count; k++) {
        const tes__component_t *info = reg->items[reg->sparse[k]];
        const tes__sparse_set_t *s = &info->store.set;
        CHECK(info->storage == TES_STORAGE_SPARSE, "component %u listed as sparse", info->id);
        /* The quiet forms of a shape assume its store: size, no stable
         * deletion, the page shift of the size. */
        CHECK(info->plain_dispatch == TES__DISPATCH_GENERIC ||
                  info->plain_dispatch ==
                      TES__DISPATCH_SPARSE + tes__sparse_shape(info->size, info->stable),
              "component %u: dispatch %u does not fit its store", info->id,
              info->plain_dispatch);
        CHECK(info->dispatch == info->plain_dispatch || info->dispatch == TES__DISPATCH_GENERIC,
              "component %u: dispatch %u, registered %u", info->id, info->dispatch,
              info->plain_dispatch);
        CHECK(info->store.size == info->size && info->store.stable == info->stable &&
                  info->store.page_shift == tes__sparse_store_shift_for(info->size),
              "component %u: store layout out of step", info->id);
        uint32_t live = 0;
        for (uint32_t pos = 0; pos < s->count; pos++) {
            tes_entity_t e = s->packed[pos];
            if (tes__sparse_is_tombstone(e))
                continue;
            live++;
            CHECK(tes__sparse_set_find(s, e) == pos, "store %u: entry of packed %u disagrees",
                  info->id, pos);
            const tes__slot_t *slot = tes__entity_slot(&w->entities, e);
            CHECK(slot, "store %u holds a dead entity at %u", info->id, pos);
            CHECK(slot->table & TES__SLOT_SPARSE, "store %u: entity without sparse hint",
                  info->id);
        }
        CHECK(live == s->live, "store %u: live %u, packed says %u", info->id, s->live, live);
        uint32_t holes = 0;
        for (uint32_t pos = s->free_head; pos != TES_NULL_INDEX;
             pos = tes_entity_index(s->packed[pos])) {
            CHECK(pos < s->count && tes__sparse_is_tombstone(s->packed[pos]),
                  "store %u: free list reaches a live slot", info->id);
            CHECK(++holes <= s->count, "store %u: free list loops", info->id);
        }
        CHECK(holes + live == s->count, "store %u: %u holes + %u live != %u", info->id, holes,
              live, s->count);
        CHECK(info->stable || !holes, "store %u: swap-pop store has tombstones", info->id);
        /* The read bases (sparse_set.h, sparse_store.h) name the pages the
         * writers use; an absent entry page reads as empty entries. */
        for (uint32_t p = 0; p < s->page_count; p++) {
            const uint64_t *page = s->pages[p] ? s->pages[p] : tes__sparse_empty_page();
            CHECK(s->bases[p] == tes__sparse_base_of(page, p),
                  "store %u: entry page %u's base is stale", info->id, p);
        }
        for (uint32_t dp = 0; dp < info->store.page_count; dp++)
            CHECK(info->store.bases[dp] == tes__sparse_store_base_of(info->store.pages[dp], dp,
                                                                    info->store.page_shift,
                                                                    info->store.size),
                  "store %u: data page %u's base is stale", info->id, dp);
        /* Every sparse entry points back at a packed slot holding it. */
        for (uint32_t p = 0; p < s->page_count; p++) {
            if (!s->pages[p])
                continue;
            for (uint32_t i = 0; i < TES__SPARSE_PAGE_SIZE; i++) {
                uint64_t entry = s->pages[p][i];
                if (entry == TES__SPARSE_EMPTY)
                    continue;
                uint32_t pos = (uint32_t)entry;
                uint32_t index = (p << TES__SPARSE_PAGE_BITS) | i;
                CHECK(pos < s->count &&
                          s->packed[pos] == tes_entity_make(index, (uint32_t)(entry >> 32)),
                      "store %u: sparse entry %u points at a wrong slot", info->id, index);
            }
        }
    }
    return TES_OK;
}

/* The quiet state (the word behind tes__world_quiet) against what it
 * records: a stale word would let a call skip hooks, deferral or a waiting
 * dependent. Its pending bits say exactly whether some dependent waits
 * for its release or to settle; the deferral depth counts at least the
 * levels tes_defer_begin opened (live iterators hold the others); no bit
 * outside the fields is set, and no refusal but the TES__REFUSE_* ones;
 * a split system's lanes live only while systems run (refusals set). */
static int check_quiet(const tes_world_t *w)
{
    uint64_t word = tes__quiet_word(w);
    CHECK((word & ~TES__QUIET_ALL) == 0, "quiet word %#llx has bits outside its fields",
          (unsigned long long)word);
    bool doomed = false, settling = false;
    for (uint32_t i = 0; i < w->dependent_count; i++) {
        doomed = doomed || w->dependents[i].release;
        settling = settling || w->dependents[i].settle;
    }
    CHECK(((word & TES__QUIET_DOOMED) != 0) == doomed,
          "quiet word says %s dependent waits for its release, the list says %s",
          (word & TES__QUIET_DOOMED) ? "a" : "no", doomed ? "one does" : "none does");
    CHECK(((word & TES__QUIET_SETTLING) != 0) == settling,
          "quiet word says %s dependent waits to settle, the list says %s",
          (word & TES__QUIET_SETTLING) ? "a" : "no", settling ? "one does" : "none does");
    CHECK(w->defer.explicit_depth >= 0 && tes__defer_depth(w) >= w->defer.explicit_depth,
          "deferral depth %d, below the %d levels tes_defer_begin opened",
          (int)tes__defer_depth(w), (int)w->defer.explicit_depth);
    uint8_t refuse = tes__refuse(w);
    CHECK((refuse & ~(TES__REFUSE_STRUCTURAL | TES__REFUSE_CREATE | TES__REFUSE_FRAME)) == 0,
          "quiet word refuses %#x, past the known refusals", (unsigned)refuse);
    CHECK(!w->lanes_live || refuse, "lanes live while no system runs");
    return TES_OK;
}

/* The plain recorder's room (see plain_room in defer.h): a plain set
 * queued at plain_room - 1 must still fit the queue's arrays and leave
 * room for its entity record. */
static int check_plain_room(const tes_world_t *w)
{
    const tes__defer_t *d = &w->defer;
    CHECK(d->paired <= d->count && d->count <= d->cap && d->ent_count <= d->ent_cap,
          "queue counts: paired %u, count %u of %u, entity records %u of %u", d->paired,
          d->count, d->cap, d->ent_count, d->ent_cap);
    /* The lanes' ensure mode (see tes__defer_t): every lane stages, as
     * the lanes serve only structural, parallel systems. */
    for (int32_t t = 0; w->lanes && t < w->threads; t++)
        CHECK(w->lanes[t].queue.stage_ensures, "lane %d does not stage ensures", (int)t);
    if (d->plain_room <= d->count)
        return TES_OK;
    uint64_t records = (uint64_t)d->ent_count + (d->plain_room - 1u - d->paired) + 1u;
    CHECK(d->plain_room <= d->room && records <= d->ent_cap,
          "plain room %u: room %u, %llu entity records of %u", d->plain_room, d->room,
          (unsigned long long)records, d->ent_cap);
    return TES_OK;
}

/* The watcher counts that let calls skip the watched paths: the count of
 * watchers told of every new entity (the spawn fast paths test it) and
 * each component's route count must match the live watchers. */
static int check_watchers(const tes_world_t *w)
{
    uint32_t empty = 0;
    for (uint32_t i = 0; i < w->watcher_count; i++) {
        const tes__watcher_t *wt = &w->watchers[i];
        empty += !wt->dead && !wt->destroy_only && !wt->creations_by_comps;
        for (uint32_t k = 0; !wt->dead && k < wt->ncomps; k++)
            CHECK(wt->comps[k] < w->watch_route_cap && w->watch_routes[wt->comps[k]] > 0,
                  "watcher %u hears component %u, which has no route", i, wt->comps[k]);
    }
    CHECK(empty == w->creation_watchers, "%u watchers hear every creation, the count says %u", empty,
          w->creation_watchers);
    return TES_OK;
}

/* Each component's dispatch against what decides it: its registration
 * (plain_dispatch, computed again) and the watchers that hear it (a route
 * count per component, counted again from the live watchers): the generic
 * path while any watcher hears it, its plain dispatch otherwise. A stale
 * dispatch would send a call down a plain path that tells no watcher. */
static int check_dispatch(const tes_world_t *w)
{
    const tes__registry_t *reg = &w->components;
    for (tes_comp_t c = 1; c < reg->count; c++) {
        uint32_t heard = 0;
        for (uint32_t i = 0; i < w->watcher_count; i++) {
            const tes__watcher_t *wt = &w->watchers[i];
            for (uint32_t k = 0; !wt->dead && k < wt->ncomps; k++)
                heard += wt->comps[k] == c;
        }
        uint32_t routes = c < w->watch_route_cap ? w->watch_routes[c] : 0;
        CHECK(routes == heard, "component %u: route count %u, %u live watchers hear it", c,
              routes, heard);
        const tes__component_t *info = reg->items[c];
        if (!info)
            continue;
        CHECK(info->plain_dispatch == tes__plain_dispatch(info),
              "component %u: registered dispatch %u, its hooks and storage say %u", c,
              (unsigned)info->plain_dispatch, (unsigned)tes__plain_dispatch(info));
        uint8_t want = heard ? TES__DISPATCH_GENERIC : info->plain_dispatch;
        CHECK(info->dispatch == want, "component %u: dispatch %u, want %u (%u watchers hear it)",
              c, (unsigned)info->dispatch, (unsigned)want, heard);
    }
    return TES_OK;
}

/* Each table's last edge in each direction: it leads to the table of the
 * type with its component added or removed, it is the edge the graph
 * caches, and its plan is the plan made now for that step. */
static int check_edges(const tes_world_t *w)
{
    for (uint32_t t = 0; t < w->tables.count; t++) {
        tes__table_t *table = w->tables.tables[t];
        for (uint32_t add = 0; add < 2; add++) {
            const tes__edge_plan_t *e = &table->last_edge[add];
            if (!e->comp)
                continue;
            tes__table_t *dst = e->move.dst;
            uint64_t id;
            CHECK(dst && e->move.src == table &&
                      tes__map_get(&table->edges, (uint64_t)e->comp | ((uint64_t)add << 32), &id) &&
                      id == dst->id,
                  "table %u: last %s edge (component %u) is not a cached edge", t,
                  add ? "add" : "remove", e->comp);
            bool in_src = tes__table_type_index(table, e->comp) >= 0;
            bool in_dst = tes__table_type_index(dst, e->comp) >= 0;
            CHECK(in_src != add && in_dst == add &&
                      dst->type_count == table->type_count + (add ? 1u : 0u) - (add ? 0u : 1u),
                  "table %u: last %s edge (component %u) leads to table %u of another type", t,
                  add ? "add" : "remove", e->comp, dst->id);
            bool plain = !((table->flags | dst->flags) & TES__TABLE_NOT_PLAIN);
            CHECK(e->plain == plain && e->plain_comp == (plain ? e->comp : 0) &&
                      e->col == tes__table_column_index(add ? dst : table, e->comp),
                  "table %u: last %s edge (component %u) is out of step", t,
                  add ? "add" : "remove", e->comp);
            tes__move_plan_t fresh;
            tes_comp_t c = e->comp;
            tes__plan_make(&fresh, table, dst, &c, add, add, add != 0, 0);
            CHECK(tes__plan_same(&fresh, &e->move),
                  "table %u: the plan of its last %s edge (component %u) is stale", t,
                  add ? "add" : "remove", e->comp);
        }
    }
    return TES_OK;
}

/* The cached bundle of tes_spawn_with: distinct table components, whose
 * table is its plan's destination, with the plan made now for them. */
static int check_bundle(const tes_world_t *w)
{
    const tes__bundle_cache_t *b = &w->bundle;
    if (!b->n)
        return TES_OK;
    CHECK(b->n <= TES__BUNDLE_MAX, "bundle of %u values", b->n);
    tes__table_t *dst = b->plan.dst;
    CHECK(dst && b->plan.src == w->tables.tables[0] && dst->id < w->tables.count &&
              w->tables.tables[dst->id] == dst,
          "bundle plan does not lead from the root to a table");
    bool hooked = false;
    uint32_t in_type = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        const tes__component_t *info = tes__registry_get(&w->components, b->ids[i]);
        CHECK(info && info->storage == TES_STORAGE_TABLE, "bundle value %u: component %u", i,
              b->ids[i]);
        for (uint32_t j = 0; j < i; j++)
            CHECK(b->ids[j] != b->ids[i], "bundle lists component %u twice", b->ids[i]);
        hooked |= info->hooks.on_add || info->hooks.on_set;
        in_type += tes__table_type_index(dst, b->ids[i]) >= 0;
    }
    CHECK(in_type == b->n && dst->type_count == b->n,
          "bundle table %u is not the table of its components", dst->id);
    CHECK(b->hooked == hooked && b->quiet == (!b->plan.hooked && !hooked),
          "bundle flags out of step");
    tes__move_plan_t fresh;
    tes__plan_make(&fresh, w->tables.tables[0], dst, b->ids, b->n, (1u << b->n) - 1u, false,
                   sizeof(tes_value_t));
    CHECK(tes__plan_same(&fresh, &b->plan), "bundle plan is stale");
    return TES_OK;
}

/* Whether table t is in the world's list of tables with pending ranges. */
static bool listed_pending(const tes_world_t *w, const tes__table_t *t)
{
    for (uint32_t i = 0; i < w->changes.pending_count; i++)
        if (w->changes.pending[i] == t)
            return true;
    return false;
}

/* Change detection's stamps and summaries (changes.h, sparse_store.h): a
 * table is in the
 * pending list exactly when one of its summaries has a pending range; a
 * summary the world
 * trusts (its epoch is the world's) is at least every row's "changed"
 * tick in its block (a pending range counted); no value was added after
 * its last change. */
static int check_stamps(const tes_world_t *w)
{
    CHECK(w->changes.pending_count <= TES__STAMP_PENDING, "%u tables pending, room for %u",
          w->changes.pending_count, (unsigned)TES__STAMP_PENDING);
    for (uint32_t i = 0; i < w->changes.pending_count; i++)
        for (uint32_t j = 0; j < i; j++)
            CHECK(w->changes.pending[i] != w->changes.pending[j], "table %u listed twice as pending",
                  w->changes.pending[i]->id);
    uint64_t epoch = atomic_load_explicit(&w->changes.epoch, memory_order_relaxed);
    for (uint32_t t = 0; t < w->tables.count; t++) {
        const tes__table_t *table = w->tables.tables[t];
        bool pending = false;
        CHECK(!table->sum_count || (table->flags & TES__TABLE_TRACKED),
              "table %u has summaries but is not marked tracked", t);
        for (uint32_t k = 0; k < table->sum_count; k++) {
            const tes__stamp_sum_t *s = &table->sums[k];
            const tes__component_t *info = tes__registry_get(&w->components, s->comp);
            CHECK(info && info->track_changes, "table %u summary %u is of untracked component %u",
                  t, k, s->comp);
            int32_t col = tes__table_column_index(table, info->stamps);
            CHECK(col >= 0, "table %u has no stamps for tracked '%s'", t, info->name);
            CHECK(s->pend_rows <= table->cap, "table %u: pending range of %u rows past cap %u",
                  t, s->pend_rows, table->cap);
            pending = pending || s->pend_rows;
            bool exact = atomic_load_explicit(&s->epoch, memory_order_relaxed) == epoch;
            const uint32_t *changed = (const uint32_t *)(const void *)table->columns[col].data;
            const uint32_t *added = (const uint32_t *)(const void *)table->columns[col + 1].data;
            for (uint32_t r = 0; r < table->count; r++) {
                uint32_t tick = changed[r];
                if (r < s->pend_rows && !tes__tick_after(tick, s->pend_tick))
                    tick = s->pend_tick;
                CHECK(!tes__tick_after(added[r], tick),
                      "table %u row %u: '%s' added at %u after its last change at %u", t, r,
                      info->name, added[r], tick);
                uint32_t b = r >> TES__STAMP_BLOCK_BITS;
                if (!exact || b >= s->blocks) /* such rows are always read */
                    continue;
                uint32_t max = atomic_load_explicit(&s->max[b], memory_order_relaxed);
                CHECK(!tes__tick_after(tick, max),
                      "table %u row %u: '%s' changed at %u, its block's summary says %u", t, r,
                      info->name, tick, max);
            }
        }
        CHECK(pending == listed_pending(w, table), "table %u: %s", t,
              pending ? "a pending range but not in the pending list"
                      : "in the pending list with nothing pending");
    }
    /* Tracked sparse stores: every live position's summary word is at
     * least its "changed" tick, which is at least its "added" one. */
    const tes__registry_t *reg = &w->components;
    uint32_t now = atomic_load_explicit(&w->changes.tick, memory_order_relaxed);
    for (uint32_t i = 0; i < reg->sparse_count; i++) {
        const tes__component_t *info = reg->items[reg->sparse[i]];
        const tes__sparse_store_t *st = &info->store;
        CHECK(!st->tick == !info->track_changes && (!st->tick || st->tick == &w->changes.tick),
              "sparse '%s': stamps %s", info->name, st->tick ? "kept but untracked" : "missing");
        if (!st->tick)
            continue;
        CHECK(st->set.count == 0 || st->stamp_pages, "sparse '%s': no stamp pages", info->name);
        for (uint32_t pos = 0; pos < st->set.count; pos++) {
            if (tes__sparse_is_tombstone(st->set.packed[pos]))
                continue;
            const uint32_t *stamp = tes__sparse_store_stamp(st, pos);
            uint32_t changed = stamp[0], added = stamp[tes__store_stamp_per(st)];
            uint32_t sum = atomic_load_explicit(tes__sparse_store_sum(st, pos), memory_order_relaxed);
            CHECK(!tes__tick_after(added, changed),
                  "sparse '%s' position %u: added at %u after its last change at %u", info->name,
                  pos, added, changed);
            CHECK(now - sum <= now - changed,
                  "sparse '%s' position %u: changed at %u, its block's summary says %u",
                  info->name, pos, changed, sum);
        }
    }
    return TES_OK;
}

int tes__world_check(const tes_world_t *w)
{
    if (!w)
        return TES_ERR_INVALID;
    int rc = check_quiet(w);
    if (!rc)
        rc = check_plain_room(w);
    if (!rc)
        rc = check_watchers(w);
    if (!rc)
        rc = check_dispatch(w);
    if (!rc)
        rc = check_entities(w);
    if (!rc)
        rc = check_tables(w);
    if (!rc)
        rc = check_sparse(w);
    if (!rc)
        rc = check_edges(w);
    if (!rc)
        rc = check_bundle(w);
    if (!rc)
        rc = check_stamps(w);
    if (!rc && w->hier)
        rc = w->hier_ops->check(w);
    if (!rc)
        rc = tes__depth_order_check(w);
    if (!rc && w->check_queries)
        rc = w->check_queries(w);
    return rc;
}
