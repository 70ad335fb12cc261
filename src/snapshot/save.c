/*
 * tes_snapshot_save: writes a world in the format of
 * docs/snapshot_format.md. The snapshot is built in one buffer (through the
 * world's allocator), checksummed, and handed to the writer in one call, so
 * a writer sees either the whole snapshot or a failure before any byte.
 *
 * The bytes are canonical: a world and the world loaded from its snapshot
 * save to identical bytes, whatever ids their components and tables got.
 * Components are listed by name (only those some entity or store uses),
 * tables by their type in that numbering, rows and packed positions in
 * their storage order. Component data goes column by column, so a table of
 * plain components is a few memcpys each way: the raw table columns go
 * last, in the payload part, after everything else (the meta part) and its
 * checksum, so the loader can validate the meta part first and then read
 * the columns straight into place. Components that own memory go value by
 * value through their save hook, each value framed by its length, in the
 * meta part.
 *
 * The world is const: the temporary buffers come from its allocator, whose
 * byte counters are back where they were when the call returns. Like every
 * failed call, a failed save records its status (tes_last_error), and save
 * hooks run with the world marked busy, so they cannot change it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "lifecycle/instance.h"
#include "world/explain.h"
#include "world/last_error.h"
#include "snapshot/snapshot.h"
#include "world/quiet.h"

/* Everything a save computes before writing. */
typedef struct save_plan {
    const tes_world_t *w;
    tes__alloc_t *a;
    const tes__component_t **comps; /* used components, by name */
    uint32_t ncomps;
    uint32_t *snap_index;           /* by component id: snapshot index, or UINT32_MAX */
    const tes__table_t **tables;    /* non-empty tables, canonical order */
    uint32_t *types;                /* per table: its type in snapshot indices (flat) */
    uint32_t *type_start;           /* per table: offset into types */
    uint32_t ntables;
    uint32_t ntypes;
} save_plan_t;

static int cmp_comp_name(const void *x, const void *y)
{
    const tes__component_t *a = *(const tes__component_t *const *)x;
    const tes__component_t *b = *(const tes__component_t *const *)y;
    return strcmp(a->name, b->name);
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static bool table_in_use(const tes__table_t *t)
{
    return t->count > 0 && !(t->flags & TES__TABLE_VIRTUAL);
}

/* A table's sort key: its type in snapshot numbering. */
typedef struct table_key {
    const uint32_t *type;
    uint32_t n;
    uint32_t index;
} table_key_t;

static int cmp_table(const void *x, const void *y)
{
    const table_key_t *a = x, *b = y;
    for (uint32_t k = 0; k < a->n && k < b->n; k++)
        if (a->type[k] != b->type[k])
            return a->type[k] < b->type[k] ? -1 : 1;
    return (a->n > b->n) - (a->n < b->n);
}

static void save_plan_free(save_plan_t *p)
{
    tes__alloc_t *a = p->a;
    uint32_t ncomp_ids = p->w->components.count;
    tes__free(a, p->comps, (size_t)ncomp_ids * sizeof *p->comps);
    tes__free(a, p->snap_index, (size_t)ncomp_ids * sizeof *p->snap_index);
    tes__free(a, p->tables, (size_t)p->w->tables.count * sizeof *p->tables);
    tes__free(a, p->types, (size_t)p->ntypes * sizeof *p->types);
    tes__free(a, p->type_start, ((size_t)p->w->tables.count + 1) * sizeof *p->type_start);
}

/* Finds the used components and tables and orders them canonically. */
static int plan_make(save_plan_t *p)
{
    const tes_world_t *w = p->w;
    tes__alloc_t *a = p->a;
    const tes__registry_t *reg = &w->components;
    const tes__table_graph_t *g = &w->tables;
    uint32_t ncomp_ids = reg->count;
    p->comps = tes__malloc(a, (size_t)ncomp_ids * sizeof *p->comps);
    p->snap_index = tes__malloc(a, (size_t)ncomp_ids * sizeof *p->snap_index);
    p->tables = tes__malloc(a, (size_t)g->count * sizeof *p->tables);
    p->type_start = tes__malloc(a, ((size_t)g->count + 1) * sizeof *p->type_start);
    uint64_t ntypes = 0;
    for (uint32_t t = 0; t < g->count; t++)
        if (table_in_use(g->tables[t]))
            ntypes += g->tables[t]->type_count;
    p->ntypes = (uint32_t)ntypes;
    if (ntypes)
        p->types = tes__malloc(a, (size_t)ntypes * sizeof *p->types);
    if (!p->comps || !p->snap_index || !p->tables || !p->type_start || (ntypes && !p->types))
        return TES_ERR_NOMEM;

    /* Used components: in the type of a non-empty table, or a store that
     * holds anything (tombstones included: they decide where the next
     * inserts go). */
    memset(p->snap_index, 0, (size_t)ncomp_ids * sizeof *p->snap_index); /* 0 = unused */
    for (uint32_t t = 0; t < g->count; t++)
        if (table_in_use(g->tables[t]))
            for (uint32_t k = 0; k < g->tables[t]->type_count; k++)
                p->snap_index[g->tables[t]->type[k]] = 1;
    for (uint32_t s = 0; s < reg->sparse_count; s++)
        if (reg->items[reg->sparse[s]]->store.set.count)
            p->snap_index[reg->sparse[s]] = 1;
    for (uint32_t c = 1; c < ncomp_ids; c++)
        if (p->snap_index[c])
            p->comps[p->ncomps++] = reg->items[c];
    qsort(p->comps, p->ncomps, sizeof *p->comps, cmp_comp_name);
    for (uint32_t c = 0; c < ncomp_ids; c++)
        p->snap_index[c] = UINT32_MAX;
    for (uint32_t i = 0; i < p->ncomps; i++) {
        const tes__component_t *info = p->comps[i];
        p->snap_index[info->id] = i;
        if (info->size && !info->hooks.save &&
            (info->hooks.copy || info->hooks.move || info->hooks.dtor))
            /* owns memory: only its save hook can write it */
            return tes__fail_detail((tes_world_t *)w, TES_ERR_INVALID, "snapshot save: component '%.64s' has a copy, move or dtor hook but no save hook", info->name);
    }

    /* Tables, ordered by their type in snapshot numbering. */
    uint32_t at = 0;
    for (uint32_t t = 0; t < g->count; t++) {
        const tes__table_t *table = g->tables[t];
        if (!table_in_use(table))
            continue;
        p->type_start[p->ntables] = at;
        for (uint32_t k = 0; k < table->type_count; k++)
            p->types[at + k] = p->snap_index[table->type[k]];
        qsort(p->types + at, table->type_count, sizeof *p->types, cmp_u32);
        at += table->type_count;
        p->tables[p->ntables++] = table;
    }
    p->type_start[p->ntables] = at;
    if (p->ntables < 2)
        return TES_OK;
    table_key_t *keys = tes__malloc(a, (size_t)p->ntables * sizeof *keys);
    uint32_t *starts = tes__malloc(a, ((size_t)p->ntables + 1) * sizeof *starts);
    const tes__table_t **tables = tes__malloc(a, (size_t)p->ntables * sizeof *tables);
    uint32_t *types = tes__malloc(a, (size_t)p->ntypes * sizeof *types);
    int rc = keys && starts && tables && types ? TES_OK : TES_ERR_NOMEM;
    if (!rc) {
        for (uint32_t i = 0; i < p->ntables; i++)
            keys[i] = (table_key_t){p->types + p->type_start[i],
                                    p->type_start[i + 1] - p->type_start[i], i};
        qsort(keys, p->ntables, sizeof *keys, cmp_table);
        uint32_t to = 0;
        for (uint32_t i = 0; i < p->ntables; i++) {
            starts[i] = to;
            memcpy(types + to, keys[i].type, (size_t)keys[i].n * sizeof *types);
            tables[i] = p->tables[keys[i].index];
            to += keys[i].n;
        }
        starts[p->ntables] = to;
        memcpy(p->types, types, (size_t)p->ntypes * sizeof *types);
        memcpy(p->type_start, starts, ((size_t)p->ntables + 1) * sizeof *starts);
        memcpy(p->tables, tables, (size_t)p->ntables * sizeof *tables);
    }
    tes__free(a, keys, (size_t)p->ntables * sizeof *keys);
    tes__free(a, starts, ((size_t)p->ntables + 1) * sizeof *starts);
    tes__free(a, tables, (size_t)p->ntables * sizeof *tables);
    tes__free(a, types, (size_t)p->ntypes * sizeof *types);
    return rc;
}

/* One value through the component's save hook, framed by its length. */
static int save_framed(tes__outbuf_t *o, const tes__component_t *info, const void *value)
{
    size_t at = o->size;
    tes__out_u32(o, 0);
    if (o->status)
        return o->status;
    tes_writer_t writer = {tes__out_write, o};
    int rc = info->hooks.save(value, &writer, info->hooks.ctx);
    if (rc)
        return rc < 0 ? rc : TES_ERR_INVALID;
    if (o->status)
        return o->status;
    size_t len = o->size - at - 4;
    if (len > UINT32_MAX)
        return TES_ERR_INVALID;
    tes__put_u32(o->data + at, (uint32_t)len);
    return TES_OK;
}

/* A column of n values: raw bytes, or one framed value each. */
static int save_values(tes__outbuf_t *o, const tes__component_t *info, const uint8_t *values,
                       uint32_t n)
{
    if (!info->hooks.save) {
        tes__out_bytes(o, values, (size_t)n * info->size);
        return o->status;
    }
    for (uint32_t i = 0; i < n; i++) {
        int rc = save_framed(o, info, values + (size_t)i * info->size);
        if (rc)
            return rc;
    }
    return TES_OK;
}

/* An entity index (entities or instance ids): slot count, free list head
 * and length, then generation and link per slot. */
static void save_index(tes__outbuf_t *o, const tes__entity_index_t *ei)
{
    tes__out_u32(o, ei->count);
    tes__out_u32(o, ei->next);
    tes__out_u32(o, ei->available);
    if (!tes__out_reserve(o, (size_t)ei->count * 8))
        return;
    uint8_t *dst = o->data + o->size;
    for (uint32_t i = 0; i < ei->count; i++, dst += 8) {
        const tes__slot_t *s = &ei->slots[i];
        bool free = !tes__slot_is_live(s) && !tes__slot_is_retired(s);
        tes__put_u32(dst, s->generation);
        tes__put_u32(dst + 4, free ? tes__slot_free_next(s) : 0);
    }
    o->size += (size_t)ei->count * 8;
}

static int save_tables(tes__outbuf_t *o, const save_plan_t *p)
{
    tes__out_u32(o, p->ntables);
    for (uint32_t t = 0; t < p->ntables; t++) {
        const tes__table_t *table = p->tables[t];
        const uint32_t *type = p->types + p->type_start[t];
        uint32_t n = p->type_start[t + 1] - p->type_start[t];
        tes__out_u32(o, n);
        for (uint32_t k = 0; k < n; k++)
            tes__out_u32(o, type[k]);
        tes__out_u32(o, table->count);
        if (!tes__out_reserve(o, (size_t)table->count * 4))
            return o->status;
        for (uint32_t r = 0; r < table->count; r++)
            tes__put_u32(o->data + o->size + 4 * (size_t)r, tes_entity_index(table->entities[r]));
        o->size += (size_t)table->count * 4;
        /* Hooked columns here; raw ones in the payload (save_payload). */
        for (uint32_t k = 0; k < n; k++) {
            const tes__component_t *info = p->comps[type[k]];
            int32_t col = tes__table_column_index(table, info->id);
            if (col < 0 || !info->hooks.save)
                continue; /* a tag, or raw */
            int rc = save_values(o, info, table->columns[col].data, table->count);
            if (rc)
                return rc;
        }
    }
    return o->status;
}

/* The bytes of the payload (what save_payload writes). */
static uint64_t payload_size(const save_plan_t *p)
{
    uint64_t n = 0;
    for (uint32_t t = 0; t < p->ntables; t++) {
        const uint32_t *type = p->types + p->type_start[t];
        for (uint32_t k = 0; k < p->type_start[t + 1] - p->type_start[t]; k++) {
            const tes__component_t *info = p->comps[type[k]];
            if (!info->hooks.save)
                n += (uint64_t)p->tables[t]->count * info->size;
        }
    }
    return n;
}

/* The payload: every raw table column, tables in order, columns in type
 * order. */
static void save_payload(tes__outbuf_t *o, const save_plan_t *p)
{
    for (uint32_t t = 0; t < p->ntables; t++) {
        const tes__table_t *table = p->tables[t];
        const uint32_t *type = p->types + p->type_start[t];
        for (uint32_t k = 0; k < p->type_start[t + 1] - p->type_start[t]; k++) {
            const tes__component_t *info = p->comps[type[k]];
            int32_t col = tes__table_column_index(table, info->id);
            if (col >= 0 && !info->hooks.save)
                tes__out_bytes(o, table->columns[col].data, (size_t)table->count * info->size);
        }
    }
}

static int save_stores(tes__outbuf_t *o, const save_plan_t *p)
{
    uint32_t nstores = 0;
    for (uint32_t i = 0; i < p->ncomps; i++)
        nstores += p->comps[i]->storage == TES_STORAGE_SPARSE;
    tes__out_u32(o, nstores);
    for (uint32_t i = 0; i < p->ncomps; i++) {
        const tes__component_t *info = p->comps[i];
        if (info->storage != TES_STORAGE_SPARSE)
            continue;
        const tes__sparse_store_t *st = &info->store;
        const tes__sparse_set_t *set = &st->set;
        tes__out_u32(o, i);
        tes__out_u32(o, set->count);
        tes__out_u32(o, set->free_head);
        for (uint32_t pos = 0; pos < set->count; pos++)
            tes__out_u32(o, tes_entity_index(set->packed[pos])); /* tombstone: next hole */
        if (!st->size)
            continue;
        /* Values of live positions, in packed order, one page run at a time. */
        for (uint32_t pos = tes__sparse_set_next_live(set, 0); pos < set->count;) {
            uint32_t end = pos + 1;
            uint32_t page_end = ((pos >> st->page_shift) + 1) << st->page_shift;
            while (end < set->count && end < page_end && !tes__sparse_is_tombstone(set->packed[end]))
                end++;
            int rc = save_values(o, info, tes__sparse_store_at(st, pos), end - pos);
            if (rc)
                return rc;
            pos = tes__sparse_set_next_live(set, end);
        }
    }
    return o->status;
}

static void save_lifecycle(tes__outbuf_t *o, const tes_world_t *w)
{
    const tes__lifecycle_t *lc = w->lifecycle;
    if (!lc) {
        tes__out_u32(o, 0);               /* instance slots */
        tes__out_u32(o, TES_NULL_INDEX);  /* free list head */
        tes__out_u32(o, 0);               /* free slots */
        tes__out_u32(o, 0);               /* prefabs */
        return;
    }
    save_index(o, &lc->ids);
    for (uint32_t i = 0; i < lc->ids.count; i++) {
        if (!tes__slot_is_live(&lc->ids.slots[i]))
            continue;
        const tes__instance_rec_t *rec = &lc->recs[i];
        tes__out_u32(o, rec->count);
        for (uint32_t m = rec->first; m != TES_NULL_INDEX; m = lc->links[m].next)
            tes__out_u32(o, m);
    }
    tes__out_u32(o, lc->prefabs_alive);
    for (uint32_t r = 0; r < lc->prefab_count; r++) {
        const tes__prefab_rec_t *rec = &lc->prefabs[r];
        if (!rec->members)
            continue;
        uint32_t live = 0;
        for (uint32_t m = 0; m < rec->count; m++)
            live += tes_alive(w, rec->members[m]);
        tes__out_u32(o, live);
        for (uint32_t m = 0; m < rec->count; m++)
            if (tes_alive(w, rec->members[m]))
                tes__out_u32(o, tes_entity_index(rec->members[m]));
    }
}

static int save_body(tes__outbuf_t *o, const save_plan_t *p)
{
    const tes_world_t *w = p->w;
    tes__out_u32(o, w->entities.generation_limit);
    tes__out_u32(o, w->entities.entity_limit);
    tes__out_u32(o, p->ncomps);
    for (uint32_t i = 0; i < p->ncomps; i++) {
        const tes__component_t *info = p->comps[i];
        size_t len = strlen(info->name);
        if (len > TES__SNAP_MAX_NAME)
            return TES_ERR_INVALID;
        tes__out_u32(o, (uint32_t)len);
        tes__out_bytes(o, info->name, len);
        tes__out_u32(o, info->size);
        tes__out_u32(o, info->align);
        uint8_t flags[4] = {(uint8_t)info->storage, info->stable, info->hooks.save != NULL, 0};
        tes__out_bytes(o, flags, 4);
    }
    save_index(o, &w->entities);
    int rc = save_tables(o, p);
    if (!rc)
        rc = save_stores(o, p);
    if (!rc)
        save_lifecycle(o, w);
    if (!rc)
        tes__snap_save_hierarchy(o, w);
    return rc ? rc : o->status;
}

/* The size of everything but hooked values, so a hook-free world is built
 * in one allocation. */
static size_t estimate(const save_plan_t *p)
{
    const tes_world_t *w = p->w;
    size_t n = TES__SNAP_HEADER_SIZE + 2 * TES__SNAP_SUM_SIZE + 64 + (size_t)w->entities.count * 8;
    for (uint32_t i = 0; i < p->ncomps; i++) {
        n += 16 + strlen(p->comps[i]->name);
        if (p->comps[i]->storage == TES_STORAGE_SPARSE)
            n += 12 + (size_t)p->comps[i]->store.set.count * (4 + p->comps[i]->size);
    }
    for (uint32_t t = 0; t < p->ntables; t++) {
        const tes__table_t *table = p->tables[t];
        size_t row = 4;
        for (uint32_t c = 0; c < table->column_count; c++)
            row += table->columns[c].size;
        n += 8 + 4 * (size_t)table->type_count + row * table->count;
    }
    if (w->lifecycle)
        n += (size_t)w->lifecycle->ids.count * 12 + (size_t)w->entities.count * 4;
    return n + tes__snap_hierarchy_estimate(w);
}

/* Inside a hook level (a hook, a snapshot callback), a frame of systems
 * (which may be writing values on other threads) or a deferred level
 * (queued changes would be missing): refused, before anything is touched. */
static int save_refused(const tes_world_t *w, const char *call)
{
    if (tes__refused(w, TES__REFUSE_ANY))
        return tes__fail_busy((tes_world_t *)w, call);
    if (tes__deferred(w))
        return tes__fail_deferred((tes_world_t *)w, TES_ERR_BUSY, call);
    return TES_OK;
}

int tes_snapshot_save(const tes_world_t *w, const tes_writer_t *out)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!out || !out->write)
        return tes__fail_detail((tes_world_t *)w, TES_ERR_INVALID, "tes_snapshot_save: writer %s",
                                out ? "has no write function" : "is NULL");
    int busy = save_refused(w, "tes_snapshot_save");
    if (busy)
        return busy;
    /* The world is const to the caller; only the allocator's counters move,
     * and they are back where they were when this returns. */
    tes__alloc_t *a = (tes__alloc_t *)&w->alloc;
    tes__detail_t detail_before;
    tes__snap_begin((tes_world_t *)w, &detail_before);
    save_plan_t plan = {.w = w, .a = a};
    tes__outbuf_t o = {.a = a};
    /* Save hooks run as hooks: structural calls from them are refused. */
    tes__hook_enter((tes_world_t *)w);
    int rc = plan_make(&plan);
    if (!rc && !tes__out_reserve(&o, estimate(&plan)))
        rc = o.status;
    if (!rc) {
        tes__out_bytes(&o, TES__SNAP_MAGIC, 8);
        tes__out_u32(&o, TES__SNAP_VERSION);
        tes__out_u32(&o, 0); /* flags */
        for (int k = 0; k < 4; k++)
            tes__out_u32(&o, 0); /* meta and payload sizes, patched below */
        rc = o.status ? o.status : save_body(&o, &plan);
    }
    /* The meta checksum, the payload, and the payload checksum (seeded
     * with the meta's, so it also binds the two parts together). */
    if (!rc && tes__out_reserve(&o, TES__SNAP_SUM_SIZE)) {
        size_t meta_end = o.size;
        tes__put_u64(o.data + 16, (uint64_t)(meta_end - TES__SNAP_HEADER_SIZE));
        tes__put_u64(o.data + 24, payload_size(&plan));
        uint64_t meta_sum = tes__snap_hash(o.data, meta_end, 0);
        tes__put_u64(o.data + meta_end, meta_sum);
        o.size += TES__SNAP_SUM_SIZE;
        size_t payload_at = o.size;
        save_payload(&o, &plan);
        if (tes__out_reserve(&o, TES__SNAP_SUM_SIZE)) {
            size_t payload = o.size - payload_at;
            tes__assert(payload == payload_size(&plan));
            tes__put_u64(o.data + o.size, tes__snap_hash(o.data + payload_at, payload, meta_sum));
            o.size += TES__SNAP_SUM_SIZE;
        }
    }
    if (!rc)
        rc = o.status;
    save_plan_free(&plan);
    /* The writer runs inside the same hook level as the save hooks: a
     * writer that frees the world or changes it would pull the memory
     * this call still uses (the buffer, the allocator inside the world)
     * from under it, so those calls are refused exactly as from a hook. */
    if (!rc) {
        rc = out->write(o.data, o.size, out->user);
        if (rc > 0)
            rc = TES_ERR_IO;
        if (rc && !w->detail.text[0])
            tes__fail_detail((tes_world_t *)w, rc, "snapshot save: the writer returned %d after "
                             "%zu bytes were built", rc, o.size);
    }
    tes__out_free(&o);
    tes__world_end((tes_world_t *)w);
    /* A failed call is recorded, const world or not. */
    return tes__snap_end((tes_world_t *)w, rc, &detail_before,
                          rc == TES_ERR_INVALID
                              ? "snapshot save: a save hook returned a positive status, or a "
                                "value or a component name is too large for the format"
                              : "snapshot save: a save hook failed");
}

/* A file sink that keeps the system error of a failed write, so the
 * detail can name it. */
typedef struct file_sink {
    FILE *f;
    int err; /* errno of the failed write, 0 for none */
} file_sink_t;

static int file_write(const void *data, size_t size, void *user)
{
    file_sink_t *sink = user;
    errno = 0;
    if (fwrite(data, 1, size, sink->f) == size)
        return TES_OK;
    sink->err = errno ? errno : EIO;
    return TES_ERR_IO;
}

int tes_snapshot_save_file(const tes_world_t *w, const char *path)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!path)
        return tes__fail_detail((tes_world_t *)w, TES_ERR_INVALID,
                                "tes_snapshot_save_file: path is NULL");
    int busy = save_refused(w, "tes_snapshot_save_file"); /* before the file is touched */
    if (busy)
        return busy;
    tes_world_t *mw = (tes_world_t *)w; /* details are recorded, const world or not */
    errno = 0;
    FILE *f = fopen(path, "wb");
    if (!f)
        return tes__fail_detail(mw, TES_ERR_IO, "open '%.120s': %s", path,
                                strerror(errno ? errno : EIO));
    file_sink_t sink = {f, 0};
    tes_writer_t writer = {file_write, &sink};
    int rc = tes_snapshot_save(w, &writer);
    errno = 0;
    /* fclose flushes: a full disk may only show here. */
    int closed = fclose(f);
    int close_err = errno ? errno : EIO;
    if (sink.err)
        rc = tes__fail_detail(mw, TES_ERR_IO, "write '%.120s': %s", path, strerror(sink.err));
    else if (closed != 0 && !rc)
        rc = tes__fail_detail(mw, TES_ERR_IO, "close '%.120s': %s", path, strerror(close_err));
    return rc;
}
