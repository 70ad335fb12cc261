/*
 * The inspector's internals, shared by its parts: server.c (the HTTP
 * side: civetweb threads, the peer, token and size checks, and the bounded
 * queue), api.c (the routes, answered on the application's thread by
 * tes_inspector_poll) and put.c (checking a PUT's JSON against a
 * component's members and writing it). schema.c keeps what the inspector
 * knows about the world's components; answer.c is the text buffer and the
 * error answer that api.c and put.c both write through.
 */
#ifndef TES_INSPECT_INSPECT_H
#define TES_INSPECT_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "tessera_inspect.h"

/* Limits on what a client may send. */
#define TES__INSPECT_MAX_BODY (64u * 1024u)
#define TES__INSPECT_MAX_PATH 512u
#define TES__INSPECT_MAX_QUERY 1024u
#define TES__INSPECT_QUEUE 64u
#define TES__INSPECT_PAGE_MAX 1000

/* A growable output buffer. On a failed allocation it stops growing and
 * remembers the failure; the request then gets a 500. */
typedef struct tes__buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
} tes__buf_t;

void tes__buf_put(tes__buf_t *b, const char *s, size_t n);
void tes__buf_str(tes__buf_t *b, const char *s);
void tes__buf_printf(tes__buf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* s as a JSON string, quoted and escaped (NULL as null). */
void tes__buf_json_str(tes__buf_t *b, const char *s);
/* Whether s[0..n) is valid UTF-8 (strict: RFC 3629). */
bool tes__utf8_valid(const char *s, size_t n);
/* The one parser for every integer a client sends: optional '-' when
 * neg_ok, then 1 to 20 decimal digits, nothing else; in range of int64
 * (negative) or uint64. See answer.c. */
bool tes__parse_int(const char *s, size_t n, bool neg_ok, int64_t *sv, uint64_t *uv);
/* A tes_writer_t that appends to a tes__buf_t. */
int tes__buf_writer(const void *data, size_t size, void *user);

/* A request, as the server copied it for the application's thread. */
typedef struct tes__request {
    char method[8];
    char path[TES__INSPECT_MAX_PATH];
    char query[TES__INSPECT_MAX_QUERY];
    char *body;
    size_t body_len;
    /* The answer, written by tes_inspector_poll. */
    int status;
    tes__buf_t out;
} tes__request_t;

/* What the inspector knows of the world's components (tes_components and
 * tes_component_info, built-ins left out as tes_json_world leaves them
 * out), rebuilt when their number changes. The records' names and members
 * point into the world. `json` is tes_json_components' text. */
typedef tes_component_info_t tes__comp_info_t;
typedef tes_member_t tes__member_info_t;
typedef struct tes__schema {
    uint32_t known;       /* tes_world_stats().components when built */
    tes__comp_info_t *comps;
    int32_t count;
    tes__buf_t json;
} tes__schema_t;

int tes__schema_refresh(tes__schema_t *s, const tes_world_t *w);
void tes__schema_fini(tes__schema_t *s);
const tes__comp_info_t *tes__schema_find(const tes__schema_t *s, const char *name);
const tes__comp_info_t *tes__schema_by_id(const tes__schema_t *s, tes_comp_t id);

/* The application-side state the routes need. */
typedef struct tes__api {
    tes_world_t *w;
    tes__schema_t schema;
    /* One query per recent component filter, reused while the filter is
     * the same (creating a query per page would cost more than paging). */
    tes_query_t *filter_query;
    char filter[TES__INSPECT_MAX_QUERY];
} tes__api_t;

/* Answers r (sets r->status and r->out). */
void tes__api_answer(tes__api_t *api, tes__request_t *r);
void tes__api_fini(tes__api_t *api);

/* Writes a JSON error {"error": msg} with the given 4xx/5xx status. */
void tes__api_error(tes__request_t *r, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Writes entity e as JSON (tes_json_entity, hierarchy fields filled in). */
int tes__api_entity_json(tes__api_t *api, tes__buf_t *b, tes_entity_t e);

/* Applies a PUT body (a JSON object of member values) to component c of
 * entity e with one tes_set. Returns true when the value was set (r's
 * answer is then the caller's to write); false with r's error answer
 * written, the entity unchanged. */
bool tes__api_put(tes__api_t *api, tes__request_t *r, tes_entity_t e, const tes__comp_info_t *c);

/* The page GET / serves (generated from page.html at build time). */
extern const unsigned char tes__inspect_page[];
extern const size_t tes__inspect_page_size;

#endif
