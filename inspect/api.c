/*
 * The inspector's routes, run by tes_inspector_poll on the application's
 * thread (the only code of the inspector that touches the world). Each
 * answer is built in memory and handed back to the server thread that
 * waits for it. Every input is checked before use, each kind by one
 * function: the method once (GET or PUT), path segments by path_segment
 * (percent-decoded, no %00), every number by tes__parse_int (digits only,
 * in range), query parameters by param (each at most once); ids must be
 * live entities, component names registered. Anything else is a 4xx JSON
 * error, and every string an answer echoes goes through the one JSON
 * string writer, which keeps the answer valid UTF-8.
 *
 * Pages are bounded (at most 1000 entities), so no request costs more than
 * one pass over the entity slots, whatever the world's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <civetweb.h>

#include "inspect.h"

/* ---------------------------------------------------------------- inputs */

/* Query parameter `name`, URL-decoded into v (cap bytes). Returns 1 when
 * it is there, 0 when it is not, -1 with r's error set when it is given
 * twice (which of two values was meant is a guess the inspector does not
 * make), does not fit in v, or decodes to a NUL byte. */
static int param(tes__request_t *r, const char *name, char *v, size_t cap)
{
    size_t qlen = strlen(r->query);
    int n = mg_get_var2(r->query, qlen, name, v, cap, 0);
    if (n == -1)
        return 0;
    char again[8];
    int n2 = mg_get_var2(r->query, qlen, name, again, sizeof again, 1);
    if (n2 != -1) {
        tes__api_error(r, 400, "parameter '%s' is given more than once", name);
        return -1;
    }
    if (n < 0) {
        tes__api_error(r, 400, "parameter '%s' is longer than %zu bytes", name, cap - 1);
        return -1;
    }
    if (strlen(v) != (size_t)n) {
        tes__api_error(r, 400, "parameter '%s' holds a NUL byte (%%00)", name);
        return -1;
    }
    return 1;
}

/* Query parameter `name` as a whole number from 0 to max (tes__parse_int:
 * digits only). Missing: def. Returns false (with r's error set) if it is
 * malformed. */
static bool param_int(tes__request_t *r, const char *name, int64_t def, int64_t max, int64_t *out)
{
    char v[32];
    int got = param(r, name, v, sizeof v);
    if (got < 0)
        return false;
    if (got == 0) {
        *out = def;
        return true;
    }
    int64_t sv;
    uint64_t u;
    if (!tes__parse_int(v, strlen(v), false, &sv, &u) || u > (uint64_t)max) {
        tes__api_error(r, 400, "parameter '%s' must be a whole number from 0 to %" PRId64
                       " (digits only)", name, max);
        return false;
    }
    *out = (int64_t)u;
    return true;
}

/* Decodes the path segment s[0..n) (its %XX escapes: a component's name
 * may hold any character, as the page's encodeURIComponent sends it) into
 * out (cap bytes). Returns false with r's error set for a malformed escape,
 * an escaped NUL (%00) or a segment that does not fit. */
static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool path_segment(tes__request_t *r, const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
            int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
            if (lo < 0) {
                tes__api_error(r, 400, "the path has a '%%' that is not followed by two hex "
                                       "digits");
                return false;
            }
            ch = hi * 16 + lo;
            i += 2;
            if (ch == 0) {
                tes__api_error(r, 400, "the path holds an escaped NUL byte (%%00)");
                return false;
            }
        }
        if (k + 1 >= cap) {
            tes__api_error(r, 400, "a path segment is longer than %zu bytes", cap - 1);
            return false;
        }
        out[k++] = (char)ch;
    }
    out[k] = '\0';
    return true;
}

/* ----------------------------------------------------------------- world */

static void world(tes__api_t *api, tes__request_t *r)
{
    tes_world_stats_t st;
    tes_world_stats(api->w, &st);
    tes__buf_t *b = &r->out;
    tes__buf_printf(b,
                    "{\"stats\":{\"entities_alive\":%" PRIu32 ",\"entity_slots\":%" PRIu32
                    ",\"entities_free\":%" PRIu32 ",\"entities_retired\":%" PRIu32
                    ",\"components\":%" PRIu32 ",\"tables\":%" PRIu32
                    ",\"instances_alive\":%" PRIu32 ",\"bytes_allocated\":%" PRIu64
                    ",\"allocations\":%" PRIu64 ",\"last_frame_ns\":%" PRIu64 "},",
                    st.entities_alive, st.entity_slots, st.entities_free, st.entities_retired,
                    st.components, st.tables, st.instances_alive, st.bytes_allocated,
                    st.allocations, st.last_frame_ns);
    /* The tick is what change-detection stamps are compared against: a
     * value stamped after a query's last tick is new to that query. */
    tes__buf_printf(b, "\"tick\":%" PRIu32 ",", tes_world_tick(api->w));
    tes__buf_str(b, "\"components\":");
    tes__buf_put(b, api->schema.json.data ? api->schema.json.data : "[]",
                 api->schema.json.data ? api->schema.json.len : 2);
    tes__buf_str(b, ",\"systems\":[");
    int32_t n = tes_systems(api->w, NULL, 0);
    tes_system_t **list = n > 0 ? malloc((size_t)n * sizeof *list) : NULL;
    if (n > 0 && !list) {
        b->failed = true;
        return;
    }
    n = list ? tes_systems(api->w, list, n) : 0;
    for (int32_t i = 0; i < n; i++) {
        tes_system_stats_t ss;
        if (tes_system_stats(list[i], &ss))
            continue;
        tes__buf_str(b, i ? ",{\"name\":" : "{\"name\":");
        tes__buf_json_str(b, ss.name);
        tes__buf_printf(b,
                        ",\"matched\":%" PRId64 ",\"runs\":%" PRIu64 ",\"last_ns\":%" PRIu64
                        ",\"mean_ns\":%" PRIu64 "}",
                        ss.matched, ss.runs, ss.last_ns, ss.mean_ns);
    }
    free(list);
    tes__buf_str(b, "]}");
}

/* ------------------------------------------------------------- entities */

/* {"id":"..","name":..,"components":[names]} */
static void entity_brief(tes__api_t *api, tes__buf_t *b, tes_entity_t e)
{
    tes__buf_printf(b, "{\"id\":\"%" PRIu64 "\",\"name\":", (uint64_t)e);
    tes__buf_json_str(b, tes_name(api->w, e));
    tes__buf_str(b, ",\"components\":[");
    tes_comp_t ids[64];
    int32_t n = tes_components_of(api->w, e, ids, 64);
    for (int32_t i = 0; i < n && i < 64; i++) {
        const tes__comp_info_t *c = tes__schema_by_id(&api->schema, ids[i]);
        if (i)
            tes__buf_str(b, ",");
        tes__buf_json_str(b, c ? c->name : "?");
    }
    tes__buf_str(b, "]}");
}

/* The query for filter `with` (comma-separated component names), made
 * once and kept while the filter stays the same. NULL with r's error set
 * if a name is unknown or there are too many. */
static tes_query_t *filter_query(tes__api_t *api, tes__request_t *r, const char *with)
{
    if (api->filter_query && strcmp(api->filter, with) == 0)
        return api->filter_query;
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    int32_t terms = 0;
    const char *s = with;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        char name[TES__INSPECT_MAX_QUERY];
        if (n == 0 || n >= sizeof name) {
            tes__api_error(r, 400, "parameter 'with' has an empty component name");
            return NULL;
        }
        memcpy(name, s, n);
        name[n] = '\0';
        const tes__comp_info_t *c = tes__schema_find(&api->schema, name);
        if (!c) {
            tes__api_error(r, 400, "no component named '%s'", name);
            return NULL;
        }
        if (terms == TES_MAX_TERMS) {
            tes__api_error(r, 400, "'with' names more than %d components", TES_MAX_TERMS);
            return NULL;
        }
        d.terms[terms].comp = c->id;
        d.terms[terms].access = TES_NOACCESS;
        terms++;
        s = end ? end + 1 : s + n;
    }
    tes_query_t *q = tes_query_new(api->w, &d);
    if (!q) {
        tes__api_error(r, 400, "cannot filter by '%s': %s", with,
                       tes_last_error_detail(api->w));
        return NULL;
    }
    if (api->filter_query)
        tes_query_free(api->filter_query);
    api->filter_query = q;
    snprintf(api->filter, sizeof api->filter, "%s", with);
    return q;
}

static void entities(tes__api_t *api, tes__request_t *r)
{
    int64_t offset, limit;
    if (!param_int(r, "offset", 0, INT32_MAX, &offset) ||
        !param_int(r, "limit", 50, TES__INSPECT_PAGE_MAX, &limit))
        return;
    char with[TES__INSPECT_MAX_QUERY];
    int has_with = param(r, "with", with, sizeof with);
    if (has_with < 0)
        return;
    size_t wn = has_with ? strlen(with) : 0;
    if (wn > 0 && with[wn - 1] == ',') {
        tes__api_error(r, 400, "parameter 'with' has an empty component name");
        return;
    }
    tes_entity_t page[TES__INSPECT_PAGE_MAX];
    int32_t got = 0;
    int64_t total;
    if (wn == 0) {
        total = tes_entity_count(api->w);
        got = tes_entities(api->w, offset, page, (int32_t)limit);
        if (got < 0)
            got = 0;
    } else {
        tes_query_t *q = filter_query(api, r, with);
        if (!q)
            return;
        total = tes_query_count(q);
        tes_iter_t it = tes_query_iter(q);
        int64_t skip = offset;
        while (got < limit && tes_iter_next(&it)) {
            if (skip >= it.count) {
                skip -= it.count;
                continue;
            }
            for (int32_t i = (int32_t)skip; i < it.count && got < limit; i++)
                page[got++] = it.entities[i];
            skip = 0;
        }
        tes_iter_fini(&it);
    }
    tes__buf_t *b = &r->out;
    tes__buf_printf(b, "{\"total\":%" PRId64 ",\"offset\":%" PRId64 ",\"limit\":%" PRId64
                       ",\"entities\":[", total, offset, limit);
    for (int32_t i = 0; i < got; i++) {
        if (i)
            tes__buf_str(b, ",");
        entity_brief(api, b, page[i]);
    }
    tes__buf_str(b, "]}");
}

/* ------------------------------------------------------------- hierarchy */

static void child_item(tes__api_t *api, tes__buf_t *b, tes_entity_t e, bool comma)
{
    tes__buf_printf(b, "%s{\"id\":\"%" PRIu64 "\",\"name\":", comma ? "," : "", (uint64_t)e);
    tes__buf_json_str(b, tes_name(api->w, e));
    int32_t n = tes_children(api->w, e, NULL, 0);
    tes__buf_printf(b, ",\"children\":%d}", n > 0 ? (int)n : 0);
}

static void children(tes__api_t *api, tes__request_t *r, tes_entity_t parent)
{
    int64_t offset, limit;
    if (!param_int(r, "offset", 0, INT32_MAX, &offset) ||
        !param_int(r, "limit", 100, TES__INSPECT_PAGE_MAX, &limit))
        return;
    tes__buf_t *b = &r->out;
    tes__buf_printf(b, "{\"parent\":\"%" PRIu64 "\",\"offset\":%" PRId64 ",\"children\":[",
                    (uint64_t)parent, offset);
    int64_t got = 0;
    bool more = false;
    if (parent == TES_NULL) {
        /* Roots: a pass over the live entities, page by page. */
        tes_entity_t chunk[1024];
        int64_t at = 0, skip = offset;
        for (;;) {
            int32_t n = tes_entities(api->w, at, chunk, 1024);
            if (n <= 0)
                break;
            at += n;
            for (int32_t i = 0; i < n && !more; i++) {
                if (tes_parent(api->w, chunk[i]) != TES_NULL)
                    continue;
                if (skip > 0) {
                    skip--;
                } else if (got < limit) {
                    child_item(api, b, chunk[i], got++ > 0);
                } else {
                    more = true;
                }
            }
            if (more)
                break;
        }
    } else {
        int32_t n = tes_children(api->w, parent, NULL, 0);
        tes_entity_t *all = n > 0 ? malloc((size_t)n * sizeof *all) : NULL;
        if (n > 0 && !all) {
            b->failed = true;
            return;
        }
        if (all)
            n = tes_children(api->w, parent, all, n);
        for (int64_t i = offset; i < n && got < limit; i++)
            child_item(api, b, all[i], got++ > 0);
        more = offset + got < n;
        free(all);
    }
    tes__buf_printf(b, "],\"more\":%s}", more ? "true" : "false");
}

/* ---------------------------------------------------------------- routes */

/* Writes entity e as tes_json_entity does. Until the JSON writer fills in
 * the hierarchy fields itself (it writes them as null), they are filled in
 * here from tes_name, tes_path and tes_parent. Returns tes_json_entity's
 * status. */
int tes__api_entity_json(tes__api_t *api, tes__buf_t *b, tes_entity_t e)
{
    size_t start = b->len;
    tes_writer_t wr = {tes__buf_writer, b};
    int rc = tes_json_entity(api->w, e, &wr);
    static const char blank[] = "\"name\":null,\"path\":null,\"parent\":null";
    if (rc || b->failed)
        return rc;
    char *at = strstr(b->data + start, blank);
    if (!at || at - (b->data + start) > 40)
        return rc;
    tes__buf_t fix = {0};
    tes__buf_str(&fix, "\"name\":");
    tes__buf_json_str(&fix, tes_name(api->w, e));
    char path[1024];
    int32_t n = tes_path(api->w, e, path, (int32_t)sizeof path);
    tes__buf_str(&fix, ",\"path\":");
    tes__buf_json_str(&fix, n > 0 && n < (int32_t)sizeof path ? path : NULL);
    tes_entity_t parent = tes_parent(api->w, e);
    if (parent)
        tes__buf_printf(&fix, ",\"parent\":\"%" PRIu64 "\"", (uint64_t)parent);
    else
        tes__buf_str(&fix, ",\"parent\":null");
    size_t head = (size_t)(at - b->data), tail_at = head + sizeof blank - 1;
    tes__buf_t out = {0};
    tes__buf_put(&out, b->data, head);
    if (fix.data)
        tes__buf_put(&out, fix.data, fix.len);
    tes__buf_put(&out, b->data + tail_at, b->len - tail_at);
    free(fix.data);
    if (out.failed || fix.failed) {
        free(out.data);
        b->failed = true;
        return TES_ERR_NOMEM;
    }
    free(b->data);
    *b = out;
    return rc;
}

/* Parses the path segment "<id>" at s[0..n) into a live entity (or
 * TES_NULL for "0" when zero_ok). Sets r's error and returns false
 * otherwise: 400 when it is not a decimal handle (tes__parse_int), 404
 * when no live entity has it (stale, never issued, beyond the world). */
static bool parse_entity(tes__api_t *api, tes__request_t *r, const char *s, size_t n,
                         bool zero_ok, tes_entity_t *out)
{
    char seg[32];
    int64_t sv;
    uint64_t v;
    if (!path_segment(r, s, n, seg, sizeof seg))
        return false;
    if (!tes__parse_int(seg, strlen(seg), false, &sv, &v)) {
        tes__api_error(r, 400, "an entity id is a decimal 64-bit handle (digits only)");
        return false;
    }
    if (v == 0 && zero_ok) {
        *out = TES_NULL;
        return true;
    }
    if (!tes_alive(api->w, (tes_entity_t)v)) {
        tes__api_error(r, 404, "entity %" PRIu64 " is not alive", v);
        return false;
    }
    *out = (tes_entity_t)v;
    return true;
}

/* PUT /api/entity/<id>/<component>: the name is the path's last segment,
 * percent-decoded. */
static void put_route(tes__api_t *api, tes__request_t *r, tes_entity_t e, const char *raw)
{
    char name[TES__INSPECT_MAX_PATH];
    if (!path_segment(r, raw, strlen(raw), name, sizeof name))
        return;
    const tes__comp_info_t *c = tes__schema_find(&api->schema, name);
    if (!c)
        tes__api_error(r, 404, "no component named '%.128s'", name);
    else if (tes__api_put(api, r, e, c) && tes__api_entity_json(api, &r->out, e))
        tes__api_error(r, 500, "the value was set, but the entity could not be written back");
}

/* Routes r. The method is checked first, once: a route below sees only GET
 * or PUT, so no method another layer let through can reach a write. */
void tes__api_answer(tes__api_t *api, tes__request_t *r)
{
    r->status = 200;
    bool get = strcmp(r->method, "GET") == 0;
    bool put = strcmp(r->method, "PUT") == 0;
    if (!get && !put) {
        tes__api_error(r, 405, "only GET and PUT are served");
        return;
    }
    if (tes__schema_refresh(&api->schema, api->w)) {
        tes__api_error(r, 500, "out of memory");
        return;
    }
    const char *p = r->path;
    tes_entity_t e;
    if (strcmp(p, "/api/world") == 0) {
        if (!get)
            tes__api_error(r, 405, "GET only");
        else
            world(api, r);
    } else if (strcmp(p, "/api/entities") == 0) {
        if (!get)
            tes__api_error(r, 405, "GET only");
        else
            entities(api, r);
    } else if (strncmp(p, "/api/children/", 14) == 0) {
        if (!get)
            tes__api_error(r, 405, "GET only");
        else if (parse_entity(api, r, p + 14, strlen(p + 14), true, &e))
            children(api, r, e);
    } else if (strncmp(p, "/api/entity/", 12) == 0) {
        const char *id = p + 12;
        const char *slash = strchr(id, '/');
        size_t idn = slash ? (size_t)(slash - id) : strlen(id);
        if (!parse_entity(api, r, id, idn, false, &e))
            return;
        if (get && !slash) {
            int rc = tes__api_entity_json(api, &r->out, e);
            if (rc)
                tes__api_error(r, rc == TES_ERR_NOMEM ? 500 : 409, "cannot write entity: %s",
                               tes_last_error_detail(api->w));
        } else if (put && slash && !strchr(slash + 1, '/')) {
            put_route(api, r, e, slash + 1);
        } else {
            tes__api_error(r, get ? 404 : 405,
                           get ? "GET /api/entity/<id>" : "PUT /api/entity/<id>/<component>");
        }
    } else {
        tes__api_error(r, 404, "no such route: see GET /api/world, /api/entities, "
                               "/api/entity/<id>, /api/children/<id>");
    }
}

void tes__api_fini(tes__api_t *api)
{
    if (api->filter_query)
        tes_query_free(api->filter_query);
    api->filter_query = NULL;
    tes__schema_fini(&api->schema);
}
