/*
 * What the inspector knows of the world's components: names, ids, sizes
 * and members, for filters, entity summaries and PUT. It is read from the
 * public JSON writer (tes_json_world's "components" array, which comes
 * before the entities: the writer is stopped as soon as the entities
 * begin, so the cost does not grow with the world) and parsed with cJSON.
 * Components are never unregistered, so the schema is rebuilt only when
 * their number changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "inspect.h"

#define ENTITIES_MARK "],\"entities\":["

typedef struct capture {
    tes__buf_t text;
    size_t end; /* length of the components part once the mark is seen */
} capture_t;

static int capture_write(const void *data, size_t size, void *user)
{
    capture_t *c = user;
    size_t before = c->text.len;
    tes__buf_put(&c->text, data, size);
    if (c->text.failed)
        return TES_ERR_NOMEM;
    size_t from = before > sizeof ENTITIES_MARK ? before - sizeof ENTITIES_MARK : 0;
    const char *hit = strstr(c->text.data + from, ENTITIES_MARK);
    if (hit) {
        c->end = (size_t)(hit - c->text.data) + 1; /* keep the ']' */
        return TES_ERR_IO; /* enough: the entities are not needed */
    }
    return TES_OK;
}

static int type_of(const char *s)
{
    static const struct { const char *name; int type; } types[] = {
        {"bool", TES_TYPE_BOOL}, {"i8", TES_TYPE_I8},     {"i16", TES_TYPE_I16},
        {"i32", TES_TYPE_I32},   {"i64", TES_TYPE_I64},   {"u8", TES_TYPE_U8},
        {"u16", TES_TYPE_U16},   {"u32", TES_TYPE_U32},   {"u64", TES_TYPE_U64},
        {"f32", TES_TYPE_F32},   {"f64", TES_TYPE_F64},   {"entity", TES_TYPE_ENTITY},
        {"char", TES_TYPE_CHAR},
    };
    for (size_t i = 0; s && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(s, types[i].name) == 0)
            return types[i].type;
    return 0;
}

static void free_comps(tes__schema_t *s)
{
    for (int32_t i = 0; i < s->count; i++)
        free(s->comps[i].members);
    free(s->comps);
    s->comps = NULL;
    s->count = 0;
}

static int parse(tes__schema_t *s, const char *json)
{
    cJSON *arr = cJSON_Parse(json);
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return TES_ERR_FORMAT;
    }
    int n = cJSON_GetArraySize(arr);
    s->comps = n > 0 ? calloc((size_t)n, sizeof *s->comps) : NULL;
    if (n > 0 && !s->comps) {
        cJSON_Delete(arr);
        return TES_ERR_NOMEM;
    }
    int rc = TES_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, arr)
    {
        tes__comp_info_t *ci = &s->comps[s->count];
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(c, "size");
        const cJSON *members = cJSON_GetObjectItemCaseSensitive(c, "members");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(id) || strlen(name->valuestring) >= sizeof ci->name)
            continue;
        snprintf(ci->name, sizeof ci->name, "%s", name->valuestring);
        ci->id = (tes_comp_t)id->valuedouble;
        ci->size = cJSON_IsNumber(size) ? (uint32_t)size->valuedouble : 0;
        int m = cJSON_IsArray(members) ? cJSON_GetArraySize(members) : 0;
        ci->members = m > 0 ? calloc((size_t)m, sizeof *ci->members) : NULL;
        if (m > 0 && !ci->members) {
            rc = TES_ERR_NOMEM;
            break;
        }
        const cJSON *mem;
        cJSON_ArrayForEach(mem, members)
        {
            tes__member_info_t *mi = &ci->members[ci->member_count];
            const cJSON *mn = cJSON_GetObjectItemCaseSensitive(mem, "name");
            const cJSON *mt = cJSON_GetObjectItemCaseSensitive(mem, "type");
            const cJSON *mo = cJSON_GetObjectItemCaseSensitive(mem, "offset");
            const cJSON *mc = cJSON_GetObjectItemCaseSensitive(mem, "count");
            if (!cJSON_IsString(mn) || !cJSON_IsString(mt) || !cJSON_IsNumber(mo) ||
                strlen(mn->valuestring) >= sizeof mi->name || !type_of(mt->valuestring))
                continue;
            snprintf(mi->name, sizeof mi->name, "%s", mn->valuestring);
            mi->type = type_of(mt->valuestring);
            mi->offset = (uint32_t)mo->valuedouble;
            mi->count = cJSON_IsNumber(mc) && mc->valuedouble >= 1 ? (uint32_t)mc->valuedouble : 1;
            ci->member_count++;
        }
        s->count++;
    }
    cJSON_Delete(arr);
    return rc;
}

int tes__schema_refresh(tes__schema_t *s, const tes_world_t *w)
{
    tes_world_stats_t st;
    if (tes_world_stats(w, &st))
        return TES_ERR_INVALID;
    if (s->json.data && st.components == s->known)
        return TES_OK;
    capture_t cap = {{0}, 0};
    tes_writer_t out = {capture_write, &cap};
    int rc = tes_json_world(w, &out);
    if (cap.text.failed) {
        free(cap.text.data);
        return TES_ERR_NOMEM;
    }
    if (rc == TES_OK) /* no entities at all: the document ended */
        cap.end = cap.text.len;
    const char *start = cap.text.data ? strstr(cap.text.data, "[") : NULL;
    if (!start || cap.end <= (size_t)(start - cap.text.data)) {
        free(cap.text.data);
        return TES_ERR_FORMAT;
    }
    size_t from = (size_t)(start - cap.text.data);
    if (rc == TES_OK) {
        /* {"components":[...],"entities":[]}: cut at the components' end. */
        const char *mark = strstr(cap.text.data, "],\"entities\":");
        if (!mark) {
            free(cap.text.data);
            return TES_ERR_FORMAT;
        }
        cap.end = (size_t)(mark - cap.text.data) + 1;
    }
    tes__buf_t json = {0};
    tes__buf_put(&json, cap.text.data + from, cap.end - from);
    free(cap.text.data);
    if (json.failed) {
        free(json.data);
        return TES_ERR_NOMEM;
    }
    free_comps(s);
    free(s->json.data);
    s->json = json;
    s->known = st.components;
    rc = parse(s, s->json.data);
    if (rc) {
        free_comps(s);
        free(s->json.data);
        s->json = (tes__buf_t){0};
    }
    return rc;
}

void tes__schema_fini(tes__schema_t *s)
{
    free_comps(s);
    free(s->json.data);
    s->json = (tes__buf_t){0};
}

const tes__comp_info_t *tes__schema_find(const tes__schema_t *s, const char *name)
{
    for (int32_t i = 0; i < s->count; i++)
        if (strcmp(s->comps[i].name, name) == 0)
            return &s->comps[i];
    return NULL;
}

const tes__comp_info_t *tes__schema_by_id(const tes__schema_t *s, tes_comp_t id)
{
    for (int32_t i = 0; i < s->count; i++)
        if (s->comps[i].id == id)
            return &s->comps[i];
    return NULL;
}
