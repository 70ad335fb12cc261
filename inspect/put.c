/*
 * PUT /api/entity/<id>/<component>: one JSON object of member values and
 * nothing after it, parsed with cJSON and checked against the component's
 * members before anything is written. The text may not hold U+0000 (cJSON
 * would cut a key or string there). Every named member must exist, be
 * named once, and its value must have the member's type and fit its range
 * (integers whole and in range, as JSON numbers within 2^53 or decimal
 * strings read by tes__parse_int; floats finite JSON numbers within their
 * type's range, or one of "nan", "inf", "-inf"; strings valid UTF-8 and
 * shorter than their array; arrays of exactly `count` values; entities
 * alive or null); members not named keep their values. The new value is the current
 * one with the named members replaced, written with tes_set, so on_set
 * fires as for any other write. Nothing changes unless every check passes.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "inspect.h"

/* 2^53: integers a JSON number (a double in cJSON) holds exactly. */
#define EXACT_LIMIT 9007199254740992.0

/* Whether the JSON text holds U+0000, raw or as the escape \\u0000. cJSON
 * would hand it on inside a C string, where it ends the string early: a
 * key "u8\\u0000junk" would name member u8, a string would be cut. So a
 * body that holds one is refused before it is parsed. */
static bool holds_nul(const char *s, size_t n)
{
    if (memchr(s, '\0', n))
        return true;
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\')
            continue;
        if (s[i + 1] == 'u' && i + 5 < n && memcmp(s + i + 2, "0000", 4) == 0)
            return true;
        i++; /* the escaped character (a backslash escapes only the next) */
    }
    return false;
}

/* Writes one scalar value j of member m into dst. Returns NULL or a
 * sentence saying what is wrong. */
static const char *put_scalar(tes__api_t *api, const tes__member_info_t *m, const cJSON *j, void *dst)
{
    switch (m->type) {
    case TES_TYPE_BOOL: {
        if (!cJSON_IsBool(j))
            return "expects true or false";
        bool v = cJSON_IsTrue(j);
        memcpy(dst, &v, 1);
        return NULL;
    }
    case TES_TYPE_F32:
    case TES_TYPE_F64: {
        double v;
        if (cJSON_IsNumber(j)) {
            /* A number past the double range reads as an infinity: it is
             * refused (the infinities are written as strings). */
            v = j->valuedouble;
            if (!isfinite(v))
                return "is outside the range of a 64-bit float (write \"inf\" for infinity)";
            if (m->type == TES_TYPE_F32 && (v > FLT_MAX || v < -FLT_MAX))
                return "is outside the range of a 32-bit float";
        } else if (cJSON_IsString(j) && strcmp(j->valuestring, "nan") == 0) {
            v = NAN;
        } else if (cJSON_IsString(j) && strcmp(j->valuestring, "inf") == 0) {
            v = INFINITY;
        } else if (cJSON_IsString(j) && strcmp(j->valuestring, "-inf") == 0) {
            v = -INFINITY;
        } else {
            return "expects a number (or \"nan\", \"inf\", \"-inf\")";
        }
        if (m->type == TES_TYPE_F32) {
            float f = (float)v;
            memcpy(dst, &f, sizeof f);
        } else {
            memcpy(dst, &v, sizeof v);
        }
        return NULL;
    }
    case TES_TYPE_ENTITY: {
        uint64_t u = 0;
        int64_t s = 0;
        if (cJSON_IsNull(j)) {
            u = TES_NULL;
        } else if (!cJSON_IsString(j) ||
                   !tes__parse_int(j->valuestring, strlen(j->valuestring), false, &s, &u)) {
            return "expects an entity id as a decimal string, or null";
        } else if (!tes_alive(api->w, (tes_entity_t)u)) {
            return "names an entity that is not alive";
        }
        tes_entity_t e = (tes_entity_t)u;
        memcpy(dst, &e, sizeof e);
        return NULL;
    }
    default:
        break;
    }
    /* Integers: a whole JSON number within 2^53, or a decimal string. */
    bool is_signed = m->type == TES_TYPE_I8 || m->type == TES_TYPE_I16 ||
                     m->type == TES_TYPE_I32 || m->type == TES_TYPE_I64;
    int64_t sv = 0;
    uint64_t uv = 0;
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d != floor(d) || d >= EXACT_LIMIT || d <= -EXACT_LIMIT)
            return "expects a whole number (beyond 2^53 write it as a decimal string)";
        if (d < 0 && !is_signed)
            return "is unsigned: negative values are out of range";
        sv = (int64_t)d;
        uv = d < 0 ? 0 : (uint64_t)d;
    } else if (cJSON_IsString(j)) {
        if (!tes__parse_int(j->valuestring, strlen(j->valuestring), is_signed, &sv, &uv))
            return "expects a whole number";
    } else {
        return "expects a whole number";
    }
    bool neg = sv < 0;
    switch (m->type) {
    case TES_TYPE_I8: {
        if (sv < INT8_MIN || sv > INT8_MAX) return "is out of range for i8";
        int8_t v = (int8_t)sv; memcpy(dst, &v, sizeof v); return NULL;
    }
    case TES_TYPE_I16: {
        if (sv < INT16_MIN || sv > INT16_MAX) return "is out of range for i16";
        int16_t v = (int16_t)sv; memcpy(dst, &v, sizeof v); return NULL;
    }
    case TES_TYPE_I32: {
        if (sv < INT32_MIN || sv > INT32_MAX) return "is out of range for i32";
        int32_t v = (int32_t)sv; memcpy(dst, &v, sizeof v); return NULL;
    }
    case TES_TYPE_I64: {
        if (!neg && uv > (uint64_t)INT64_MAX) return "is out of range for i64";
        memcpy(dst, &sv, sizeof sv); return NULL;
    }
    case TES_TYPE_U8: {
        if (neg || uv > UINT8_MAX) return "is out of range for u8";
        uint8_t v = (uint8_t)uv; memcpy(dst, &v, sizeof v); return NULL;
    }
    case TES_TYPE_U16: {
        if (neg || uv > UINT16_MAX) return "is out of range for u16";
        uint16_t v = (uint16_t)uv; memcpy(dst, &v, sizeof v); return NULL;
    }
    case TES_TYPE_U32: {
        if (neg || uv > UINT32_MAX) return "is out of range for u32";
        uint32_t v = (uint32_t)uv; memcpy(dst, &v, sizeof v); return NULL;
    }
    case TES_TYPE_U64: {
        if (neg) return "is out of range for u64";
        memcpy(dst, &uv, sizeof uv); return NULL;
    }
    default:
        return "has a type the inspector cannot write";
    }
}

static size_t type_size(tes_type_t type) { return TES_TYPE_SIZE(type); }

/* Writes member m from j into value (the component's bytes). */
static const char *put_member(tes__api_t *api, const tes__member_info_t *m, const cJSON *j,
                              unsigned char *value)
{
    if (m->type == TES_TYPE_CHAR) {
        if (!cJSON_IsString(j))
            return "expects a string";
        size_t n = strlen(j->valuestring);
        if (!tes__utf8_valid(j->valuestring, n))
            return "expects text in UTF-8 (the string is not valid UTF-8)";
        if (n >= m->count)
            return "is too long for its array (the NUL needs a byte)";
        memset(value + m->offset, 0, m->count);
        memcpy(value + m->offset, j->valuestring, n);
        return NULL;
    }
    if (m->count == 1)
        return put_scalar(api, m, j, value + m->offset);
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != (int)m->count)
        return "expects an array of exactly its count of values";
    size_t at = m->offset;
    const cJSON *item;
    cJSON_ArrayForEach(item, j)
    {
        const char *err = put_scalar(api, m, item, value + at);
        if (err)
            return err;
        at += type_size(m->type);
    }
    return NULL;
}

bool tes__api_put(tes__api_t *api, tes__request_t *r, tes_entity_t e, const tes__comp_info_t *c)
{
    bool set = false;
    if (c->member_count == 0 || c->size == 0) {
        tes__api_error(r, 400, "component '%s' describes no members: it cannot be edited",
                       c->name);
        return false;
    }
    if (!tes_has(api->w, e, c->id)) {
        tes__api_error(r, 404, "entity %" PRIu64 " has no '%s'", (uint64_t)e, c->name);
        return false;
    }
    const void *cur = tes_get(api->w, e, c->id);
    if (!cur) {
        tes__api_error(r, 409, "cannot read '%s' of entity %" PRIu64, c->name, (uint64_t)e);
        return false;
    }
    /* The server refuses a longer body before it is queued; the bound is
     * checked here too, so the routes hold whatever hands them a request. */
    if (r->body_len > TES__INSPECT_MAX_BODY) {
        tes__api_error(r, 413, "the body is over %u bytes", TES__INSPECT_MAX_BODY);
        return false;
    }
    if (r->body && holds_nul(r->body, r->body_len)) {
        tes__api_error(r, 400, "the body holds U+0000 (a NUL byte or \\u0000), which no member "
                               "name or string may hold");
        return false;
    }
    /* One JSON object and nothing after it but white space: text after it
     * is a client's mistake (two objects, a cut concatenation), not
     * something to ignore. */
    const char *end = NULL;
    cJSON *body = r->body ? cJSON_ParseWithLengthOpts(r->body, r->body_len, &end, false) : NULL;
    while (body && end && end < r->body + r->body_len && strchr(" \t\r\n", *end))
        end++;
    if (!cJSON_IsObject(body) || end != r->body + r->body_len) {
        cJSON_Delete(body);
        tes__api_error(r, 400, "the body must be one JSON object of member values, "
                               "with nothing after it");
        return false;
    }
    unsigned char *value = malloc(c->size);
    if (!value) {
        cJSON_Delete(body);
        tes__api_error(r, 500, "out of memory");
        return false;
    }
    memcpy(value, cur, c->size);
    const cJSON *item;
    cJSON_ArrayForEach(item, body)
    {
        const tes__member_info_t *m = NULL;
        for (int32_t i = 0; i < c->member_count && item->string; i++)
            if (strcmp(c->members[i].name, item->string) == 0)
                m = &c->members[i];
        if (!m) {
            tes__api_error(r, 400, "'%s' has no member '%.64s'", c->name,
                           item->string ? item->string : "");
            goto done;
        }
        /* A member named twice: which value was meant is a guess. */
        for (const cJSON *prev = body->child; prev != item; prev = prev->next)
            if (strcmp(prev->string, item->string) == 0) {
                tes__api_error(r, 400, "the body names member '%s' more than once", m->name);
                goto done;
            }
        if ((uint64_t)m->offset + (uint64_t)m->count * type_size(m->type) > c->size) {
            tes__api_error(r, 500, "member '%s' lies outside '%s'", m->name, c->name);
            goto done;
        }
        const char *err = put_member(api, m, item, value);
        if (err) {
            tes__api_error(r, 422, "%s.%s %s", c->name, m->name, err);
            goto done;
        }
    }
    int rc = tes_set(api->w, e, c->id, value);
    if (rc) {
        tes__api_error(r, 409, "tes_set failed: %s", tes_last_error_detail(api->w));
        goto done;
    }
    set = true;
done:
    free(value);
    cJSON_Delete(body);
    return set;
}
