/*
 * fuzz_inspect_api: the inspector's request answering under hostile
 * requests, below the HTTP server. Each input is one request in the form
 *
 *     METHOD SP TARGET LF BODY
 *
 * (TARGET is the path, then '?' and the query string; everything after
 * the first LF is the body, byte for byte), copied into a tes__request_t
 * exactly as the server copies a request (method, path and query cut to
 * their buffers) and answered by tes__api_answer, the call
 * tes_inspector_poll makes. The server's own checks (path characters,
 * sizes, methods) are not applied: the routes must hold on their own.
 *
 * The oracles: no crash, leak or undefined behaviour (the sanitizers);
 * a status the API documents; an answer that is valid UTF-8 and one whole
 * JSON value (cJSON, nothing after it); an error answer is
 * {"error": "<sentence>"}; and the world, written by tes_json_world, is
 * byte for byte what it was unless a PUT answered 200. A violation aborts
 * with the request and the reason.
 *
 * The world is built once (as a real inspector serves one world): a
 * component with a member of every reflected type and arrays, the same
 * layout in sparse and stable storage, a tag, a component without
 * members, components whose names need percent-escapes, a named
 * hierarchy, disabled entities, a prefab and its instance, and destroyed
 * entities whose stale handles requests may name. Successful PUTs change
 * its values, never its shape, so the handles below stay valid.
 *
 * Built two ways: with libFuzzer (make fuzz), and with TES_INSPECT_REPLAY,
 * a main that replays files (the committed corpus, in ctest) or writes the
 * seed corpus (one valid request per route, and the regressions):
 *
 *     inspect_corpus_replay DIR|FILE ...
 *     inspect_corpus_replay --seeds DIR
 *     inspect_corpus_replay --expect FILE
 *
 * The third form answers the requests of FILE (tests/inspect/expect.txt)
 * and compares each status, and the words of each error, with what the
 * file expects: the regressions of the defects this target found, and the
 * rules for hostile input the documentation states.
 */
#include <dirent.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "inspect.h"
#include "support/corpus_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------- the world */

typedef struct Kinds {
    bool b;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    tes_entity_t target;
    char label[16];
    float vec[3];
    int16_t pair[2];
    tes_entity_t links[2];
} Kinds;

TES_MEMBERS(Kinds, TES_MEMBER(Kinds, b, TES_TYPE_BOOL), TES_MEMBER(Kinds, i8, TES_TYPE_I8),
            TES_MEMBER(Kinds, i16, TES_TYPE_I16), TES_MEMBER(Kinds, i32, TES_TYPE_I32),
            TES_MEMBER(Kinds, i64, TES_TYPE_I64), TES_MEMBER(Kinds, u8, TES_TYPE_U8),
            TES_MEMBER(Kinds, u16, TES_TYPE_U16), TES_MEMBER(Kinds, u32, TES_TYPE_U32),
            TES_MEMBER(Kinds, u64, TES_TYPE_U64), TES_MEMBER(Kinds, f32, TES_TYPE_F32),
            TES_MEMBER(Kinds, f64, TES_TYPE_F64), TES_MEMBER(Kinds, target, TES_TYPE_ENTITY),
            TES_MEMBER(Kinds, label, TES_TYPE_CHAR), TES_MEMBER(Kinds, vec, TES_TYPE_F32),
            TES_MEMBER(Kinds, pair, TES_TYPE_I16), TES_MEMBER(Kinds, links, TES_TYPE_ENTITY));

typedef struct Small {
    uint8_t level;
    char tag[4];
} Small;

TES_MEMBERS(Small, TES_MEMBER(Small, level, TES_TYPE_U8), TES_MEMBER(Small, tag, TES_TYPE_CHAR));

typedef struct Pos {
    float x, y;
} Pos;

TES_MEMBERS(Pos, TES_MEMBER(Pos, x, TES_TYPE_F32), TES_MEMBER(Pos, y, TES_TYPE_F32));

/* The handles the seeds name (filled by build_world). */
enum { ROOT, CHILD, GRANDCHILD, PLAIN, SPARSE, DISABLED, PREFAB, INSTANCE, STALE, NAMED, N_IDS };
#ifdef TES_INSPECT_REPLAY
static const char *const id_names[N_IDS] = {"root",     "child",  "grandchild", "plain",
                                            "sparse",   "disabled", "prefab",   "instance",
                                            "stale",    "named"};
#endif
static tes_entity_t ids[N_IDS];

static tes_world_t *world;
static tes__api_t api;

static void die(const char *what)
{
    fprintf(stderr, "fuzz_inspect_api: cannot build the world: %s: %s\n", what,
            world ? tes_last_error_detail(world) : "");
    abort();
}

static tes_comp_t component(const char *name, size_t size, tes_storage_t storage, bool stable,
                            const tes_member_t *members, int32_t count)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    d.stable = stable;
    d.members = members;
    d.member_count = count;
    d.track_changes = size > 0 && storage == TES_STORAGE_TABLE;
    tes_comp_t c = tes_component(world, &d);
    if (!c)
        die(name);
    return c;
}

static tes_entity_t spawn(const char *name, tes_entity_t parent)
{
    tes_entity_t e = tes_spawn(world);
    if (!e || (name && tes_set_name(world, e, name)) ||
        (parent && tes_set_parent(world, e, parent)))
        die("spawn");
    return e;
}

static void set(tes_entity_t e, tes_comp_t c, const void *v)
{
    if (tes_set(world, e, c, v))
        die("tes_set");
}

static void build_world(void)
{
    world = tes_world_new(NULL);
    if (!world)
        die("tes_world_new");
    tes_comp_t kinds = component("Kinds", sizeof(Kinds), TES_STORAGE_TABLE, false,
                                 TES_MEMBERS_OF(Kinds), TES_MEMBER_COUNT(Kinds));
    tes_comp_t sparse = component("SparseKinds", sizeof(Kinds), TES_STORAGE_SPARSE, false,
                                  TES_MEMBERS_OF(Kinds), TES_MEMBER_COUNT(Kinds));
    tes_comp_t stable = component("Stable", sizeof(Pos), TES_STORAGE_SPARSE, true,
                                  TES_MEMBERS_OF(Pos), TES_MEMBER_COUNT(Pos));
    tes_comp_t pos = component("Pos", sizeof(Pos), TES_STORAGE_TABLE, false, TES_MEMBERS_OF(Pos),
                               TES_MEMBER_COUNT(Pos));
    tes_comp_t tag = component("Tag", 0, TES_STORAGE_TABLE, false, NULL, 0);
    tes_comp_t blob = component("Blob", 8, TES_STORAGE_TABLE, false, NULL, 0);
    /* Names a URL must escape: a space, a slash, a comma, UTF-8. */
    tes_comp_t spaced = component("Has Space", sizeof(Small), TES_STORAGE_TABLE, false,
                                  TES_MEMBERS_OF(Small), TES_MEMBER_COUNT(Small));
    tes_comp_t slashed = component("ns/Slash,Comma", sizeof(Small), TES_STORAGE_SPARSE, false,
                                   TES_MEMBERS_OF(Small), TES_MEMBER_COUNT(Small));
    tes_comp_t utf8 = component("\xc3\xa9t\xc3\xa9", sizeof(Pos), TES_STORAGE_TABLE, false,
                                TES_MEMBERS_OF(Pos), TES_MEMBER_COUNT(Pos));

    ids[ROOT] = spawn("root", TES_NULL);
    ids[CHILD] = spawn("child", ids[ROOT]);
    ids[GRANDCHILD] = spawn("grand \"child\"", ids[CHILD]);
    ids[PLAIN] = spawn(NULL, TES_NULL);
    ids[SPARSE] = spawn("sparse", ids[ROOT]);
    ids[DISABLED] = spawn("disabled", ids[ROOT]);
    ids[NAMED] = spawn("\xc3\xa9l\xc3\xa8ve", TES_NULL);

    Kinds k;
    memset(&k, 0, sizeof k);
    k.b = true;
    k.i8 = -8;
    k.i16 = -16;
    k.i32 = -32;
    k.i64 = INT64_MIN;
    k.u8 = 8;
    k.u16 = 16;
    k.u32 = 32;
    k.u64 = UINT64_MAX;
    k.f32 = 1.5f;
    k.f64 = -2.25;
    k.target = ids[CHILD];
    memcpy(k.label, "hello", 6);
    k.vec[0] = 1;
    k.pair[1] = 7;
    k.links[0] = ids[ROOT];
    Small s = {3, "ab"};
    Pos p = {1, 2};
    uint64_t bytes = 0x0123456789abcdefu;
    for (int i = 0; i < 4; i++) {
        tes_entity_t e = i == 0 ? ids[ROOT] : i == 1 ? ids[CHILD] : i == 2 ? ids[PLAIN] : ids[GRANDCHILD];
        set(e, kinds, &k);
        set(e, pos, &p);
    }
    set(ids[ROOT], tag, NULL);
    set(ids[ROOT], blob, &bytes);
    set(ids[ROOT], spaced, &s);
    set(ids[ROOT], slashed, &s);
    set(ids[ROOT], utf8, &p);
    set(ids[SPARSE], sparse, &k);
    set(ids[SPARSE], stable, &p);
    set(ids[SPARSE], slashed, &s);
    set(ids[DISABLED], kinds, &k);
    set(ids[NAMED], spaced, &s);
    if (tes_disable(world, ids[DISABLED]))
        die("tes_disable");

    ids[PREFAB] = tes_prefab_new(world);
    if (!ids[PREFAB])
        die("tes_prefab_new");
    set(ids[PREFAB], kinds, &k);
    set(ids[PREFAB], pos, &p);
    tes_entity_t out[1];
    if (!tes_instantiate(world, ids[PREFAB], out, 1))
        die("tes_instantiate");
    ids[INSTANCE] = out[0];

    /* A handle that was issued and destroyed: stale from now on. */
    ids[STALE] = spawn("gone", TES_NULL);
    set(ids[STALE], kinds, &k);
    if (tes_destroy(world, ids[STALE]))
        die("tes_destroy");
    api.w = world;
}

/* --------------------------------------------------------------- oracles */

static void fail(const tes__request_t *r, const char *why)
{
    fprintf(stderr, "fuzz_inspect_api: %s\n  request: %s %s?%s (body %zu bytes)\n  answer %d: %.*s\n",
            why, r->method, r->path, r->query, r->body_len, r->status,
            r->out.data ? (int)(r->out.len > 2000 ? 2000 : r->out.len) : 0,
            r->out.data ? r->out.data : "");
    abort();
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                                 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (len == 0 || i + len > n || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4))
            return false;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
            (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
            return false;
        i += len;
    }
    return true;
}

/* The world as tes_json_world writes it (the caller frees). */
static char *dump(size_t *len)
{
    tes__buf_t b = {0};
    tes_writer_t wr = {tes__buf_writer, &b};
    if (tes_json_world(world, &wr) || b.failed)
        die("tes_json_world");
    *len = b.len;
    return b.data;
}

static void check_answer(tes__request_t *r)
{
    switch (r->status) {
    case 200: case 400: case 404: case 405: case 409: case 413: case 422:
        break;
    default:
        fail(r, "a status the API does not answer");
    }
    if (r->out.failed || !r->out.data || r->out.len == 0)
        fail(r, "no answer (or a failed allocation without a 500)");
    if (strlen(r->out.data) != r->out.len)
        fail(r, "the answer holds a NUL byte");
    if (!utf8_ok((const unsigned char *)r->out.data, r->out.len))
        fail(r, "the answer is not valid UTF-8");
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(r->out.data, r->out.len, &end, false);
    if (!j)
        fail(r, "the answer is not JSON");
    while (end && end < r->out.data + r->out.len && strchr(" \t\r\n", *end))
        end++;
    if (end != r->out.data + r->out.len)
        fail(r, "the answer has text after its JSON value");
    if (!cJSON_IsObject(j))
        fail(r, "the answer is not a JSON object");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (r->status != 200 && (!cJSON_IsString(err) || strlen(err->valuestring) < 8))
        fail(r, "an error answer without an {\"error\": sentence}");
    if (r->status == 200 && err)
        fail(r, "a 200 answer that is an error");
    cJSON_Delete(j);
}

/* ------------------------------------------------------------ the target */

/* Copies at most cap - 1 bytes of s[0..n) (up to a NUL) into dst, as the
 * server's snprintf copies cut them. */
static void copy_cut(char *dst, size_t cap, const uint8_t *s, size_t n)
{
    size_t k = 0;
    while (k < n && k + 1 < cap && s[k])
        k++;
    memcpy(dst, s, k);
    dst[k] = '\0';
}

/* Answers the request in data[0..size) and checks the oracles (aborting
 * on a violation). Returns the answer's status; when err is not NULL, the
 * error sentence (or "") is copied there (errcap bytes). */
static int answer_one(const uint8_t *data, size_t size, char *err, size_t errcap)
{
    if (!world)
        build_world();
    tes__request_t r;
    memset(&r, 0, sizeof r);
    const uint8_t *lf = memchr(data, '\n', size);
    size_t line = lf ? (size_t)(lf - data) : size;
    const uint8_t *sp = memchr(data, ' ', line);
    size_t mlen = sp ? (size_t)(sp - data) : 0;
    copy_cut(r.method, sizeof r.method, data, mlen);
    const uint8_t *target = sp ? sp + 1 : data;
    size_t tlen = line - (size_t)(target - data);
    const uint8_t *q = memchr(target, '?', tlen);
    size_t plen = q ? (size_t)(q - target) : tlen;
    copy_cut(r.path, sizeof r.path, target, plen);
    if (q)
        copy_cut(r.query, sizeof r.query, q + 1, tlen - plen - 1);
    size_t blen = lf ? size - line - 1 : 0;
    /* The body is NUL-terminated as the server's reader leaves it, in a
     * block of exactly its size (+1) so that an overread is caught. */
    r.body = malloc(blen + 1);
    if (!r.body)
        abort();
    if (blen)
        memcpy(r.body, lf + 1, blen);
    r.body[blen] = '\0';
    r.body_len = blen;

    size_t before_len = 0, after_len = 0;
    char *before = dump(&before_len);
    tes__api_answer(&api, &r);
    check_answer(&r);
    char *after = dump(&after_len);
    bool wrote = strcmp(r.method, "PUT") == 0 && r.status == 200;
    if (!wrote && (before_len != after_len || memcmp(before, after, before_len) != 0))
        fail(&r, "the world changed, but the request was not a PUT answered 200");
    if (err) {
        err[0] = '\0';
        cJSON *j = cJSON_ParseWithLength(r.out.data, r.out.len);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (cJSON_IsString(e))
            snprintf(err, errcap, "%s", e->valuestring);
        cJSON_Delete(j);
    }
    free(before);
    free(after);
    free(r.body);
    free(r.out.data);
    return r.status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    answer_one(data, size, NULL, 0);
    return 0;
}

#ifdef TES_INSPECT_REPLAY
/* ----------------------------------------------------- replay and seeds */

/* Replays one corpus file through the oracles (which abort on a
 * violation); counts it in *(int *)ctx. 1 when it cannot be read. */
static int replay_file(const char *file, const char *name, void *ctx)
{
    (void)name;
    (*(int *)ctx)++;
    size_t n = 0;
    uint8_t *buf = corpus_read_file("inspect_corpus_replay", file, &n);
    if (!buf)
        return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static void seed(const char *dir, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void seed(const char *dir, const char *name, const char *fmt, ...)
{
    char file[4096];
    snprintf(file, sizeof file, "%s/%s", dir, name);
    FILE *f = fopen(file, "wb");
    if (!f) {
        fprintf(stderr, "inspect_corpus_replay: cannot write %s\n", file);
        exit(1);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* One valid request per route (and per kind of member), then the hostile
 * requests that found defects: each must keep answering as the oracles
 * require. */
static void write_seeds(const char *dir)
{
    build_world();
    uint64_t root = ids[ROOT], child = ids[CHILD], sparse = ids[SPARSE];
    seed(dir, "get-world", "GET /api/world\n");
    seed(dir, "get-entities", "GET /api/entities?offset=0&limit=50\n");
    seed(dir, "get-entities-with", "GET /api/entities?with=Kinds,Pos&offset=1&limit=2\n");
    seed(dir, "get-entities-with-escaped", "GET /api/entities?with=Has%%20Space,%%C3%%A9t%%C3%%A9\n");
    for (int i = 0; i < N_IDS; i++) {
        char name[64];
        snprintf(name, sizeof name, "get-entity-%s", id_names[i]);
        seed(dir, name, "GET /api/entity/%" PRIu64 "\n", (uint64_t)ids[i]);
        snprintf(name, sizeof name, "get-children-%s", id_names[i]);
        seed(dir, name, "GET /api/children/%" PRIu64 "?offset=0&limit=10\n", (uint64_t)ids[i]);
    }
    seed(dir, "get-children-roots", "GET /api/children/0?offset=1&limit=1000\n");
    seed(dir, "put-kinds-all",
         "PUT /api/entity/%" PRIu64 "/Kinds\n"
         "{\"b\":false,\"i8\":-128,\"i16\":32767,\"i32\":-2147483648,"
         "\"i64\":\"-9223372036854775808\",\"u8\":255,\"u16\":65535,\"u32\":4294967295,"
         "\"u64\":\"18446744073709551615\",\"f32\":3.5e38,\"f64\":\"-inf\",\"target\":\"%" PRIu64
         "\",\"label\":\"fifteen chars..\",\"vec\":[1,\"nan\",-0.0],\"pair\":[-1,1],"
         "\"links\":[null,\"%" PRIu64 "\"]}",
         (uint64_t)child, root, child);
    seed(dir, "put-sparse", "PUT /api/entity/%" PRIu64 "/SparseKinds\n{\"f64\":1e308,\"u64\":9007199254740991}",
         sparse);
    seed(dir, "put-stable", "PUT /api/entity/%" PRIu64 "/Stable\n{\"x\":1,\"y\":-1}", sparse);
    seed(dir, "put-escaped-name", "PUT /api/entity/%" PRIu64 "/Has%%20Space\n{\"level\":4,\"tag\":\"xyz\"}",
         root);
    seed(dir, "put-escaped-slash", "PUT /api/entity/%" PRIu64 "/ns%%2FSlash%%2CComma\n{\"level\":5}",
         sparse);
    seed(dir, "put-utf8-name", "PUT /api/entity/%" PRIu64 "/%%C3%%A9t%%C3%%A9\n{\"x\":0.5}", root);
    seed(dir, "put-disabled", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"i32\":5}", (uint64_t)ids[DISABLED]);
    seed(dir, "put-prefab", "PUT /api/entity/%" PRIu64 "/Pos\n{\"x\":5}", (uint64_t)ids[PREFAB]);
    seed(dir, "put-instance", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"u8\":9}", (uint64_t)ids[INSTANCE]);
    seed(dir, "put-empty-object", "PUT /api/entity/%" PRIu64 "/Pos\n{}", root);
    /* Refusals that must leave the world unchanged. */
    seed(dir, "bad-put-tag", "PUT /api/entity/%" PRIu64 "/Tag\n{}", root);
    seed(dir, "bad-put-blob", "PUT /api/entity/%" PRIu64 "/Blob\n{\"x\":1}", root);
    seed(dir, "bad-put-stale", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"u8\":1}", (uint64_t)ids[STALE]);
    seed(dir, "bad-put-late-error", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"u8\":1,\"i8\":128}", root);
    seed(dir, "bad-put-trailing", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"u8\":2} {\"u8\":3}", root);
    seed(dir, "bad-put-duplicate", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"u8\":2,\"u8\":3}", root);
    seed(dir, "bad-put-f64-overflow", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"f64\":1e999}", root);
    seed(dir, "bad-put-nul-string", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"label\":\"a\\u0000b\"}", root);
    seed(dir, "bad-put-bad-utf8", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"label\":\"\xff\xfe\"}", root);
    seed(dir, "bad-put-method", "DELETE /api/entity/%" PRIu64 "/Kinds\n{\"u8\":4}", root);
    seed(dir, "bad-with-utf8", "GET /api/entities?with=%%FF%%C3\n");
    seed(dir, "bad-member-utf8", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"\xc3\":1}", root);
    seed(dir, "bad-entity-huge", "GET /api/entity/18446744073709551615\n");
    seed(dir, "bad-offset-int64", "GET /api/entities?offset=9223372036854775807&limit=-1\n");
    seed(dir, "bad-escape", "PUT /api/entity/%" PRIu64 "/Kinds%%00\n{}", root);
    seed(dir, "bad-nesting", "PUT /api/entity/%" PRIu64 "/Kinds\n{\"vec\":[[[[[[[[[[[[1]]]]]]]]]]]]}",
         root);
}

/* The expectations file: one request a line, tab-separated:
 *     STATUS <TAB> METHOD TARGET [<TAB> BODY [<TAB> WORDS]]
 * where {root}, {child}, ... stand for the handles of build_world, \\xHH
 * for a byte and \\\\ for a backslash, and WORDS (when given) must appear in
 * the error sentence. Lines starting with '#' and empty lines are skipped.
 * Each request also goes through every oracle of the fuzz target. */
static size_t expand(const char *in, char *out, size_t cap)
{
    size_t k = 0;
    while (*in && k + 32 < cap) {
        if (*in == '{') {
            const char *close = strchr(in, '}');
            int i = 0;
            for (; close && i < N_IDS; i++)
                if (strlen(id_names[i]) == (size_t)(close - in - 1) &&
                    memcmp(in + 1, id_names[i], (size_t)(close - in - 1)) == 0)
                    break;
            if (close && i < N_IDS) {
                k += (size_t)snprintf(out + k, cap - k, "%" PRIu64, (uint64_t)ids[i]);
                in = close + 1;
                continue;
            }
        }
        if (in[0] == '\\' && in[1] == 'x' && in[2] && in[3]) {
            char hex[3] = {in[2], in[3], 0};
            out[k++] = (char)strtoul(hex, NULL, 16);
            in += 4;
            continue;
        }
        if (in[0] == '\\' && in[1] == '\\') {
            out[k++] = '\\';
            in += 2;
            continue;
        }
        out[k++] = *in++;
    }
    return k;
}

static int expect_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "inspect_corpus_replay: cannot open %s\n", path);
        return 1;
    }
    build_world();
    static char line[1 << 18], req[1 << 19];
    int bad = 0, count = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *fields[4] = {line, NULL, NULL, NULL};
        for (int i = 1; i < 4; i++) {
            char *tab = fields[i - 1] ? strchr(fields[i - 1], '\t') : NULL;
            if (tab) {
                *tab = '\0';
                fields[i] = tab + 1;
            }
        }
        if (!fields[1]) {
            fprintf(stderr, "%s:%d: no request\n", path, lineno);
            bad++;
            continue;
        }
        int want = atoi(fields[0]);
        size_t n = expand(fields[1], req, sizeof req - 2);
        req[n++] = '\n';
        if (fields[2])
            n += expand(fields[2], req + n, sizeof req - n);
        char err[512];
        int got = answer_one((const uint8_t *)req, n, err, sizeof err);
        count++;
        if (got != want || (fields[3] && !strstr(err, fields[3]))) {
            fprintf(stderr, "%s:%d: %s: expected %d%s%s, got %d (%s)\n", path, lineno, fields[1],
                    want, fields[3] ? " saying " : "", fields[3] ? fields[3] : "", got, err);
            bad++;
        }
    }
    fclose(f);
    printf("inspect_corpus_replay: %d expectations, %d failed\n", count, bad);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--expect") == 0) {
        int bad = expect_file(argv[2]);
        tes__api_fini(&api);
        tes_world_free(world);
        return bad ? 1 : 0;
    }
    if (argc == 3 && strcmp(argv[1], "--seeds") == 0) {
        write_seeds(argv[2]);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: inspect_corpus_replay DIR|FILE ... | --seeds DIR\n");
        return 2;
    }
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++)
        bad += corpus_each_file("inspect_corpus_replay", argv[i], replay_file, &count);
    tes__api_fini(&api);
    if (world)
        tes_world_free(world);
    printf("inspect_corpus_replay: %d requests, %d unreadable\n", count, bad);
    return bad ? 1 : 0;
}
#endif
