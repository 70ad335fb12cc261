/*
 * tes_json_entity and tes_json_world: a world as JSON, streamed through a
 * fixed buffer (json_out.c), so memory use does not depend on the world's
 * size and nothing is allocated. Values are read in place: an entity's
 * table components in its table's type order, then its sparse ones by id,
 * each through the member list its registration copied (members.c).
 *
 * The writer runs inside the world's hook level, as snapshot writers do:
 * a writer that changed the world's structure would move the rows this
 * walk is reading, so structural calls from it are refused. While systems
 * run (which may write values on other threads) both calls are refused.
 */
#include <string.h>

#include "json/json_out.h"
#include "world/last_error.h"
#include "world/world.h"
#include "world/quiet.h"

/* Ancestors a long path is written in blocks of, root first. */
#define PATH_BLOCK 256

/* Writes e's path when it is longer than the stack buffer, from the root
 * down, PATH_BLOCK levels at a time: each block is found by one walk up
 * from e and written from a fixed array, so a path of depth D costs about
 * D * D / PATH_BLOCK steps and no memory that grows with the depth (one
 * walk per level made tes_json_world cubic in the depth of a named chain:
 * 27 s for a chain of 2000). */
static void json_write_long_path(tes__json_out_t *o, const tes_world_t *w, tes_entity_t e,
                                 int32_t depth)
{
    tes_entity_t block[PATH_BLOCK];
    tes__json_char(o, '"');
    for (int32_t top = 0; top <= depth; top += PATH_BLOCK) {
        int32_t bottom = depth - top < PATH_BLOCK ? depth : top + PATH_BLOCK - 1;
        tes_entity_t at = e;
        for (int32_t up = depth - bottom; up > 0; up--)
            at = tes_parent(w, at);
        for (int32_t level = bottom; level >= top; level--) {
            block[level - top] = at;
            at = tes_parent(w, at);
        }
        for (int32_t level = top; level <= bottom; level++) {
            const char *name = tes_name(w, block[level - top]);
            if (level)
                tes__json_char(o, '/');
            if (name)
                tes__json_string_body(o, name, strlen(name));
        }
    }
    tes__json_char(o, '"');
}

/* The hierarchy fields of an entity: "name", "path" and "parent" (null
 * when it has no name, no path, or no parent; a path exists when e and
 * every ancestor are named). This is the one place that reads the
 * hierarchy. */
static void json_write_hierarchy(tes__json_out_t *o, const tes_world_t *w, tes_entity_t e)
{
    const char *name = tes_name(w, e);
    tes__json_lit(o, "\"name\":");
    if (name)
        tes__json_string(o, name, strlen(name));
    else
        tes__json_lit(o, "null");
    tes__json_lit(o, ",\"path\":");
    char path[1024];
    int32_t len = name ? tes_path(w, e, path, (int32_t)sizeof path) : 0;
    if (len <= 0)
        tes__json_lit(o, "null");
    else if ((size_t)len < sizeof path)
        tes__json_string(o, path, (size_t)len);
    else
        json_write_long_path(o, w, e, tes_depth(w, e));
    tes__json_lit(o, ",\"parent\":");
    tes__json_handle(o, tes_parent(w, e));
}

/* `count` values of a member's type starting at p. */
static void json_write_scalars(tes__json_out_t *o, const tes_member_t *m, const uint8_t *p)
{
    uint32_t n = m->count;
    if (m->type == TES_TYPE_CHAR) {
        size_t len = 0;
        while (len < n && p[len])
            len++;
        tes__json_string(o, (const char *)p, len);
        return;
    }
    uint32_t size = tes__type_size(m->type);
    if (n != 1)
        tes__json_char(o, '[');
    for (uint32_t i = 0; i < n; i++, p += size) {
        if (i)
            tes__json_char(o, ',');
        switch (m->type) {
        case TES_TYPE_BOOL:
            tes__json_lit(o, *p ? "true" : "false");
            break;
        case TES_TYPE_I8: tes__json_i64(o, (int8_t)*p); break;
        case TES_TYPE_U8: tes__json_u64(o, *p); break;
        case TES_TYPE_I16: { int16_t v; memcpy(&v, p, 2); tes__json_i64(o, v); break; }
        case TES_TYPE_U16: { uint16_t v; memcpy(&v, p, 2); tes__json_u64(o, v); break; }
        case TES_TYPE_I32: { int32_t v; memcpy(&v, p, 4); tes__json_i64(o, v); break; }
        case TES_TYPE_U32: { uint32_t v; memcpy(&v, p, 4); tes__json_u64(o, v); break; }
        case TES_TYPE_I64: { int64_t v; memcpy(&v, p, 8); tes__json_i64(o, v); break; }
        case TES_TYPE_U64: { uint64_t v; memcpy(&v, p, 8); tes__json_u64(o, v); break; }
        case TES_TYPE_F32: { float v; memcpy(&v, p, 4); tes__json_f32(o, v); break; }
        case TES_TYPE_F64: { double v; memcpy(&v, p, 8); tes__json_f64(o, v); break; }
        case TES_TYPE_ENTITY: { tes_entity_t v; memcpy(&v, p, 8); tes__json_handle(o, v); break; }
        case TES_TYPE_CHAR: break; /* handled above */
        }
    }
    if (n != 1)
        tes__json_char(o, ']');
}

/* One component's entry in an entity's "components": "Name":value. */
static void json_write_component(tes__json_out_t *o, const tes__component_t *c, const void *value,
                            bool first)
{
    if (!first)
        tes__json_char(o, ',');
    tes__json_string(o, c->name, c->name_size - 1);
    tes__json_char(o, ':');
    if (!c->size || !value) {
        tes__json_lit(o, "true");
        return;
    }
    if (!c->members.count) {
        tes__json_lit(o, "{\"bytes\":");
        tes__json_base64(o, value, c->size);
        tes__json_char(o, '}');
        return;
    }
    tes__json_char(o, '{');
    for (uint32_t i = 0; i < c->members.count; i++) {
        const tes_member_t *m = &c->members.items[i];
        if (i)
            tes__json_char(o, ',');
        tes__json_string(o, m->name, strlen(m->name));
        tes__json_char(o, ':');
        json_write_scalars(o, m, (const uint8_t *)value + m->offset);
    }
    tes__json_char(o, '}');
}

/* Entity e (live, slot s) as one object. */
static void json_write_entity(tes__json_out_t *o, const tes_world_t *w, tes_entity_t e,
                         const tes__slot_t *s)
{
    const tes__table_t *table = tes__slot_table(w, s);
    const tes__registry_t *reg = &w->components;
    bool disabled = false, prefab = false;
    for (uint32_t i = 0; i < table->type_count; i++) {
        disabled |= table->type[i] == TES_DISABLED;
        prefab |= table->type[i] == TES_PREFAB;
    }
    tes__json_lit(o, "{\"id\":");
    tes__json_handle(o, e);
    tes__json_char(o, ',');
    json_write_hierarchy(o, w, e);
    tes__json_lit(o, disabled ? ",\"disabled\":true" : ",\"disabled\":false");
    tes__json_lit(o, prefab ? ",\"prefab\":true,\"components\":{" : ",\"prefab\":false,\"components\":{");
    bool first = true;
    for (uint32_t i = 0; i < table->type_count; i++) {
        const tes__component_t *c = tes__registry_get(reg, table->type[i]);
        /* A tracked component's stamp columns follow its own, so columns
         * are found by id, not counted. */
        int32_t col = tes__table_column_index(table, c->id);
        const void *value = col >= 0 ? tes__table_cell(table, (uint32_t)col, s->row) : NULL;
        if (c->id == TES_DISABLED || c->id == TES_PREFAB)
            continue;
        json_write_component(o, c, value, first);
        first = false;
    }
    if (s->table & TES__SLOT_SPARSE) {
        for (uint32_t j = 0; j < reg->sparse_count; j++) {
            const tes__component_t *c = reg->items[reg->sparse[j]];
            if (!tes__sparse_set_contains(&c->store.set, e))
                continue;
            json_write_component(o, c, tes__sparse_store_get(&c->store, e), first);
            first = false;
        }
    }
    tes__json_lit(o, "}}");
}

static const char *json_storage_name(const tes__component_t *c)
{
    return c->storage == TES_STORAGE_SPARSE ? "sparse" : "table";
}

static void json_write_component_desc(tes__json_out_t *o, const tes__component_t *c)
{
    tes__json_lit(o, "{\"name\":");
    tes__json_string(o, c->name, c->name_size - 1);
    tes__json_lit(o, ",\"id\":");
    tes__json_u64(o, c->id);
    tes__json_lit(o, ",\"size\":");
    tes__json_u64(o, c->size);
    tes__json_lit(o, ",\"align\":");
    tes__json_u64(o, c->align);
    tes__json_lit(o, ",\"storage\":\"");
    tes__json_lit(o, json_storage_name(c));
    tes__json_lit(o, c->stable ? "\",\"stable\":true,\"members\":[" : "\",\"stable\":false,\"members\":[");
    for (uint32_t i = 0; i < c->members.count; i++) {
        const tes_member_t *m = &c->members.items[i];
        tes__json_lit(o, i ? ",{\"name\":" : "{\"name\":");
        tes__json_string(o, m->name, strlen(m->name));
        tes__json_lit(o, ",\"type\":\"");
        tes__json_lit(o, tes__type_name(m->type));
        tes__json_lit(o, "\",\"offset\":");
        tes__json_u64(o, m->offset);
        tes__json_lit(o, ",\"count\":");
        tes__json_u64(o, m->count);
        tes__json_char(o, '}');
    }
    tes__json_lit(o, "]}");
}

/* The checks both calls make first; TES_OK or the recorded failure. */
static int json_refused(const tes_world_t *w, const tes_writer_t *out, const char *call)
{
    if (!out || !out->write)
        return tes__fail_detail((tes_world_t *)w, TES_ERR_INVALID, "%s: writer %s", call,
                                out ? "has no write function" : "is NULL");
    if (tes__refuse(w))
        return tes__fail_busy((tes_world_t *)w, call);
    return TES_OK;
}

/* Ends a call: flushes, leaves the hook level, records a writer failure. */
static int json_end(tes_world_t *w, tes__json_out_t *o, const char *call)
{
    int rc = tes__json_flush(o);
    tes__world_end(w);
    if (rc)
        tes__fail_detail(w, rc, "%s: the writer returned %d (%s); the output stops there", call,
                         rc, tes_strerror(rc));
    return rc;
}

int tes_json_entity(const tes_world_t *w, tes_entity_t e, const tes_writer_t *out)
{
    if (!w)
        return TES_ERR_INVALID;
    int rc = json_refused(w, out, "tes_json_entity");
    if (rc)
        return rc;
    if (!tes__entity_slot(&w->entities, e))
        return tes__fail_stale((tes_world_t *)w, e);
    tes__json_out_t o;
    tes__json_init(&o, out);
    tes__hook_enter((tes_world_t *)w);
    /* The writer may read the world (tes_get, ...): the slot is looked up
     * once, and nothing can move the entity while the hook level is up. */
    json_write_entity(&o, w, e, tes__entity_slot(&w->entities, e));
    return json_end((tes_world_t *)w, &o, "tes_json_entity");
}

/* The "components" array: every registered component but the built-in
 * flags (written as each entity's "disabled" and "prefab"), by id. */
static void json_write_components(tes__json_out_t *o, const tes_world_t *w)
{
    tes__json_char(o, '[');
    bool first = true;
    for (uint32_t id = 1; id < w->components.count; id++) {
        const tes__component_t *c = w->components.items[id];
        if (!c || c->hidden || id == TES_DISABLED || id == TES_PREFAB)
            continue;
        if (!first)
            tes__json_char(o, ',');
        first = false;
        json_write_component_desc(o, c);
    }
    tes__json_char(o, ']');
}

int tes_json_components(const tes_world_t *w, const tes_writer_t *out)
{
    if (!w)
        return TES_ERR_INVALID;
    int rc = json_refused(w, out, "tes_json_components");
    if (rc)
        return rc;
    tes__json_out_t o;
    tes__json_init(&o, out);
    tes__hook_enter((tes_world_t *)w);
    json_write_components(&o, w);
    return json_end((tes_world_t *)w, &o, "tes_json_components");
}

int tes_json_world(const tes_world_t *w, const tes_writer_t *out)
{
    if (!w)
        return TES_ERR_INVALID;
    int rc = json_refused(w, out, "tes_json_world");
    if (rc)
        return rc;
    tes__json_out_t o;
    tes__json_init(&o, out);
    tes__hook_enter((tes_world_t *)w);
    tes__json_lit(&o, "{\"components\":");
    json_write_components(&o, w);
    tes__json_lit(&o, ",\"entities\":[");
    bool first = true;
    for (uint32_t i = 0; i < w->entities.count && !o.status; i++) {
        const tes__slot_t *s = &w->entities.slots[i];
        if (!tes__slot_is_live(s))
            continue;
        if (!first)
            tes__json_char(&o, ',');
        first = false;
        json_write_entity(&o, w, tes_entity_make(i, s->generation), s);
    }
    tes__json_lit(&o, "]}");
    return json_end((tes_world_t *)w, &o, "tes_json_world");
}
