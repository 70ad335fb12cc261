/*
 * Component registration: validation, layout normalisation (natural
 * alignment, stable implies sparse), the member list (members.c), and the
 * all-or-nothing insertion into the id array, the name map and the list
 * of sparse ids.
 */
#include "storage/component.h"

#include <string.h>

void tes__registry_init(tes__registry_t *r) { memset(r, 0, sizeof *r); }

/* Records why a desc was refused; returns TES_ERR_INVALID. */
#define REFUSE(r, ...) (tes__detail_set((r)->detail, __VA_ARGS__), TES_ERR_INVALID)

void tes__registry_fini(tes__registry_t *r, tes__alloc_t *a)
{
    for (uint32_t i = 1; i < r->count; i++) {
        tes__component_t *c = r->items[i];
        if (!c)
            continue; /* a stamp companion: freed with its owner */
        for (uint32_t k = 0; k < 2; k++) {
            if (c->stamp_info[k]) {
                tes__sparse_store_fini(&c->stamp_info[k]->store, a);
                tes__free(a, c->stamp_info[k], sizeof *c->stamp_info[k]);
            }
        }
        tes__sparse_store_fini(&c->store, a);
        tes__members_free(a, &c->members);
        tes__free(a, c->name, c->name_size);
        tes__free(a, c, sizeof *c);
    }
    tes__free(a, r->items, (size_t)r->cap * sizeof *r->items);
    tes__free(a, r->sparse, (size_t)r->sparse_cap * sizeof *r->sparse);
    tes__map_fini(&r->by_name, a);
    tes__registry_init(r);
}

tes_comp_t tes__registry_lookup(const tes__registry_t *r, const char *name)
{
    uint64_t key = tes__hash_bytes(name, strlen(name));
    uint32_t cursor = 0;
    uint64_t id;
    while (tes__map_next(&r->by_name, key, &cursor, &id))
        if (strcmp(r->items[id]->name, name) == 0)
            return (tes_comp_t)id;
    return 0;
}

static bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

/* Fills *out with the normalised layout of d, or returns TES_ERR_INVALID. */
static int normalise(const tes__registry_t *r, const tes_component_desc_t *d,
                     tes__component_t *out)
{
    if (!d->name || !d->name[0])
        return REFUSE(r, "component desc: name is %s (a name is required)", d->name ? "empty" : "NULL");
    if (d->size > UINT32_MAX / 2)
        return REFUSE(r, "component '%.64s': size %zu is too large", d->name, d->size);
    if (d->storage != TES_STORAGE_TABLE && d->storage != TES_STORAGE_SPARSE)
        return REFUSE(r, "component '%.64s': storage %d is not a tes_storage_t", d->name, (int)d->storage);
    size_t align = d->align;
    if (d->size == 0) {
        align = 0; /* tags have no layout */
        if (d->entity_field_count)
            return REFUSE(r, "component '%.64s': a tag (size 0) has no entity_fields, entity_field_count is %d", d->name, (int)d->entity_field_count);
    } else if (align == 0) {
        align = 1;
        while (align < 16 && d->size % (align * 2) == 0)
            align *= 2;
    } else if (!is_pow2(align) || align > 16 || d->size % align) {
        return REFUSE(r, "component '%.64s': align %zu is not a power of two <= 16 dividing size %zu", d->name, align, d->size);
    }
    if (d->entity_field_count < 0 || d->entity_field_count > TES_MAX_ENTITY_FIELDS)
        return REFUSE(r, "component '%.64s': entity_field_count %d is outside 0..%d", d->name, (int)d->entity_field_count, TES_MAX_ENTITY_FIELDS);
    for (int32_t i = 0; i < d->entity_field_count; i++)
        if (d->entity_fields[i] > d->size || d->size - d->entity_fields[i] < sizeof(tes_entity_t))
            return REFUSE(r, "component '%.64s': entity_fields[%d] = %zu does not fit a tes_entity_t in size %zu", d->name, (int)i, d->entity_fields[i], d->size);
    if (d->track_changes && d->size == 0)
        return REFUSE(r, "component '%.64s': track_changes needs a size > 0 (a tag has no value to stamp)", d->name);
    memset(out, 0, sizeof *out);
    out->track_changes = d->track_changes;
    out->size = (uint32_t)d->size;
    out->align = (uint32_t)align;
    out->stable = d->stable;
    out->storage = d->stable ? TES_STORAGE_SPARSE : d->storage;
    out->hooks = d->hooks;
    return TES_OK;
}

tes_comp_t tes__registry_add(tes__registry_t *r, tes__alloc_t *a, const tes_component_desc_t *d,
                             int *status)
{
    tes__component_t layout;
    *status = d ? normalise(r, d, &layout) : REFUSE(r, "component desc is NULL");
    if (*status)
        return 0;
    *status = tes__members_check(r->detail, a, d, layout.size, layout.align);
    if (*status)
        return 0;
    tes_comp_t existing = tes__registry_lookup(r, d->name);
    if (existing) {
        const tes__component_t *c = r->items[existing];
        if (c->size == layout.size && c->align == layout.align &&
            c->storage == layout.storage && c->stable == layout.stable &&
            c->track_changes == layout.track_changes) {
            if (tes__members_same(&c->members, d, r->detail))
                return existing;
            *status = TES_ERR_INVALID;
            return 0;
        }
        *status = REFUSE(r, "component '%.64s' is registered with size %u align %u %s, this desc has size %u align %u %s", d->name, c->size, c->align, c->stable ? "stable" : c->storage == TES_STORAGE_SPARSE ? "sparse" : "table", layout.size, layout.align, layout.stable ? "stable" : layout.storage == TES_STORAGE_SPARSE ? "sparse" : "table");
        return 0;
    }
    /* Reserve everything, then commit: nothing changes on failure. A
     * tracked component takes two more ids, its stamp companions. */
    uint32_t id = r->count ? r->count : 1;
    uint32_t ids = layout.track_changes && layout.storage == TES_STORAGE_TABLE ? 3u : 1u;
    tes__component_t *companion[2] = {NULL, NULL};
    *status = TES_ERR_NOMEM;
    if (tes__grow(a, (void **)&r->items, &r->cap, (uint64_t)id + ids, sizeof *r->items, 64))
        return 0;
    for (uint32_t k = 0; k + 1 < ids; k++) {
        if (!(companion[k] = tes__calloc(a, sizeof *companion[k]))) {
            tes__free(a, companion[0], sizeof *companion[0]);
            return 0;
        }
    }
    if (layout.storage == TES_STORAGE_SPARSE &&
        tes__grow(a, (void **)&r->sparse, &r->sparse_cap, (uint64_t)r->sparse_count + 1,
                  sizeof *r->sparse, 16))
        return 0;
    if (tes__map_reserve(&r->by_name, a, 1))
        return 0;
    tes__component_t *c = tes__malloc(a, sizeof *c);
    if (!c || !(c->name = tes__strdup(a, d->name, &c->name_size))) {
        tes__free(a, c, sizeof *c);
        tes__free(a, companion[0], sizeof *companion[0]);
        tes__free(a, companion[1], sizeof *companion[1]);
        return 0;
    }
    char *name = c->name;
    size_t name_size = c->name_size;
    *c = layout;
    c->name = name;
    c->name_size = name_size;
    if (tes__members_build(a, d, &c->members)) {
        tes__free(a, c->name, c->name_size);
        tes__free(a, c, sizeof *c);
        tes__free(a, companion[0], sizeof *companion[0]);
        tes__free(a, companion[1], sizeof *companion[1]);
        return 0;
    }
    *status = TES_OK;
    c->id = id;
    tes__sparse_store_init(&c->store, c->size, c->stable);
    /* A tracked sparse component keeps its stamps in its store; a tracked
     * table component in the companions' columns (below). */
    if (c->track_changes && c->storage == TES_STORAGE_SPARSE)
        tes__sparse_store_track(&c->store, r->tick);
    c->plain_dispatch = tes__plain_dispatch(c);
    tes__registry_set_dispatch(r, c, c->plain_dispatch);
    if (r->count == 0)
        r->items[0] = NULL;
    r->items[id] = c;
    r->count = id + 1;
    for (uint32_t k = 0; k + 1 < ids; k++) {
        tes__component_t *s = companion[k];
        s->id = id + 1 + k;
        s->size = s->align = 4;
        s->storage = TES_STORAGE_TABLE;
        s->hooks = r->stamp_hooks;
        s->hidden = true;
        s->name = c->name; /* shared: freed with the owner */
        tes__sparse_store_init(&s->store, 4, false);
        s->plain_dispatch = TES__DISPATCH_GENERIC;
        tes__registry_set_dispatch(r, s, TES__DISPATCH_GENERIC);
        r->items[s->id] = NULL; /* no record by id: see tes__component_t.hidden */
        c->stamp_info[k] = s;
        r->hidden_count++;
        r->count = s->id + 1;
    }
    if (c->track_changes && c->storage == TES_STORAGE_TABLE)
        c->stamps = id + 1;
    /* A tracked component is read through the general path (get_of 0),
     * where tes_get_mut stamps. */
    if (id < TES__REGISTRY_SMALL_IDS && c->size && c->size < TES__GET_SPARSE && !c->track_changes) {
        r->get_of[id] = c->size | (c->storage == TES_STORAGE_SPARSE ? TES__GET_SPARSE : 0);
        if (c->storage == TES_STORAGE_SPARSE)
            r->sparse_of[id] = &c->store;
    }
    tes__map_insert(&r->by_name, tes__hash_bytes(d->name, strlen(d->name)), id);
    if (c->storage == TES_STORAGE_SPARSE)
        r->sparse[r->sparse_count++] = id;
    return id;
}

void tes__component_construct(const tes__component_t *c, void *ptr, uint32_t n)
{
    if (c->hooks.ctor)
        c->hooks.ctor(ptr, (int32_t)n, c->hooks.ctx);
    else
        memset(ptr, 0, (size_t)n * c->size);
}

void tes__component_move(const tes__component_t *c, void *dst, void *src, uint32_t n)
{
    if (c->hooks.move)
        c->hooks.move(dst, src, (int32_t)n, c->hooks.ctx);
    else
        memcpy(dst, src, (size_t)n * c->size);
}

#undef REFUSE
