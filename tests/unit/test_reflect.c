/*
 * Reflection and JSON (tes_member_t, tes_json_entity, tes_json_world).
 *
 * - Every refused member list (outside the size, misaligned, overlapping,
 *   unknown type, NULL or empty or duplicate name, an entity field that is
 *   not an entity member, a different list on re-registration) fails with
 *   TES_ERR_INVALID, a detail naming the member, and registers nothing.
 * - The same list registered again returns the same id; members are copied
 *   (the caller's array and names may go away).
 * - TES_TYPE_ENTITY members are remapped on instantiate, arrays included,
 *   and the older entity_fields still are.
 * - The float formatter is exact (strtof / strtod read back the same bits)
 *   and shortest on known values; NaN and infinities become strings.
 * - Output: exact text for a small world; names, paths (a long one too)
 *   and parents from the hierarchy; a writer failing at the k-th
 *   piece makes the call return its status for every k; pieces are at most
 *   4 KiB and the calls allocate nothing, whatever the world's size.
 * - The schema calls (tes_components, tes_component_info,
 *   tes_json_components) report what registration kept.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json/json_out.h"
#include "support/counting_alloc.h"
#include "tessera.h"

typedef struct Link {
    tes_entity_t target;
    float weight;
    int32_t pad;
    tes_entity_t more[2];
} Link;
TES_MEMBERS(Link, TES_MEMBER(Link, target, TES_TYPE_ENTITY), TES_MEMBER(Link, weight, TES_TYPE_F32),
            TES_MEMBER(Link, more, TES_TYPE_ENTITY));

typedef struct Position {
    float x, y;
} Position;
TES_MEMBERS(Position, TES_MEMBER(Position, x, TES_TYPE_F32), TES_MEMBER(Position, y, TES_TYPE_F32));

/* A writer into a growing string (the test's own memory, not the world's). */
typedef struct sink {
    char *text;
    size_t len, cap;
    size_t pieces, largest;
    size_t fail_at; /* fail the fail_at-th piece (1-based), 0 = never */
    int fail_with;
} sink_t;

static int sink_write(const void *data, size_t size, void *user)
{
    sink_t *s = user;
    s->pieces++;
    if (size > s->largest)
        s->largest = size;
    if (s->fail_at && s->pieces == s->fail_at)
        return s->fail_with;
    if (s->len + size + 1 > s->cap) {
        s->cap = (s->len + size + 1) * 2;
        s->text = realloc(s->text, s->cap);
        assert_non_null(s->text);
    }
    memcpy(s->text + s->len, data, size);
    s->len += size;
    s->text[s->len] = '\0';
    return TES_OK;
}

static void sink_reset(sink_t *s)
{
    free(s->text);
    memset(s, 0, sizeof *s);
}

static void expect_refused(tes_world_t *w, const tes_component_desc_t *d, const char *needle)
{
    tes_world_stats_t before, after;
    tes_world_stats(w, &before);
    assert_int_equal(tes_component(w, d), 0);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    const char *detail = tes_last_error_detail(w);
    if (!strstr(detail, needle))
        fail_msg("detail '%s' does not mention '%s'", detail, needle);
    tes_world_stats(w, &after);
    assert_int_equal(before.components, after.components);
    assert_int_equal(before.bytes_allocated, after.bytes_allocated);
}

static void test_member_validation(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_member_t m[3];
#define DESC(n, sz, al) (&(tes_component_desc_t){.name = "M", .size = (sz), .align = (al), .members = m, .member_count = (n)})
    m[0] = (tes_member_t){"x", TES_TYPE_F32, 8, 0};
    expect_refused(w, DESC(1, 8, 4), "past the size 8");
    m[0] = (tes_member_t){"x", TES_TYPE_F32, 2, 0};
    expect_refused(w, DESC(1, 8, 4), "not aligned to 4");
    m[0] = (tes_member_t){"x", TES_TYPE_F64, 0, 0};
    expect_refused(w, DESC(1, 8, 4), "needs alignment 8, the component's align is 4");
    m[0] = (tes_member_t){"x", TES_TYPE_F32, 0, 2};
    m[1] = (tes_member_t){"y", TES_TYPE_F32, 4, 0};
    expect_refused(w, DESC(2, 8, 4), "member 'y' (bytes 4..7) overlaps member 'x' (bytes 0..7)");
    m[0] = (tes_member_t){"x", (tes_type_t)99, 0, 0};
    expect_refused(w, DESC(1, 8, 4), "type 99");
    m[0] = (tes_member_t){"x", (tes_type_t)0, 0, 0};
    expect_refused(w, DESC(1, 8, 4), "type 0");
    m[0] = (tes_member_t){NULL, TES_TYPE_F32, 0, 0};
    expect_refused(w, DESC(1, 8, 4), "members[0] has a NULL name");
    m[0] = (tes_member_t){"", TES_TYPE_F32, 0, 0};
    expect_refused(w, DESC(1, 8, 4), "members[0] has an empty name");
    m[0] = (tes_member_t){"x", TES_TYPE_F32, 0, 0};
    m[1] = (tes_member_t){"x", TES_TYPE_F32, 4, 0};
    expect_refused(w, DESC(2, 8, 4), "members[0] and members[1] are both named 'x'");
    expect_refused(w, DESC(-1, 8, 4), "member_count -1");
    expect_refused(w, &(tes_component_desc_t){.name = "M", .size = 8, .member_count = 1}, "members is NULL");
    m[0] = (tes_member_t){"x", TES_TYPE_U8, 0, 0};
    expect_refused(w, &(tes_component_desc_t){.name = "M", .members = m, .member_count = 1}, "a tag (size 0) has no members");
    m[0] = (tes_member_t){"x", TES_TYPE_F32, 0, UINT32_MAX};
    expect_refused(w, DESC(1, 8, 4), "count 4294967295");
    m[0] = (tes_member_t){"x", TES_TYPE_U32, 0, UINT32_MAX / 2};
    expect_refused(w, DESC(1, 8, 4), "past the size 8");
    /* With members, entity_fields may only repeat entity members. */
    m[0] = (tes_member_t){"e", TES_TYPE_ENTITY, 0, 0};
    m[1] = (tes_member_t){"f", TES_TYPE_F64, 8, 0};
    expect_refused(w, &(tes_component_desc_t){.name = "M", .size = 16, .members = m, .member_count = 2,
                                              .entity_fields = {8}, .entity_field_count = 1},
                   "entity_fields[0] = 8 is not the offset of a TES_TYPE_ENTITY member");
    assert_int_not_equal(tes_component(w, &(tes_component_desc_t){.name = "M", .size = 16, .members = m, .member_count = 2,
                                                                    .entity_fields = {0}, .entity_field_count = 1}), 0);
    /* TES_MEMBER on a field of another size gives a count that is refused. */
    typedef struct { float f; } F;
    tes_member_t wrong[] = {TES_MEMBER(F, f, TES_TYPE_F64)};
    assert_int_equal(wrong[0].count, UINT32_MAX);
    expect_refused(w, &(tes_component_desc_t){.name = "F", .size = 4, .members = wrong, .member_count = 1}, "check the type");
    tes_world_free(w);
#undef DESC
}

static void test_reregistration(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    char name_x[] = "x", name_y[] = "y";
    tes_member_t m[2] = {{name_x, TES_TYPE_F32, 0, 0}, {name_y, TES_TYPE_F32, 4, 1}};
    tes_component_desc_t d = {.name = "P", .size = 8, .members = m, .member_count = 2};
    tes_comp_t id = tes_component(w, &d);
    assert_int_not_equal(id, 0);
    /* Copied: the caller's names and array may change afterwards. */
    name_x[0] = 'q';
    m[0].name = name_x;
    tes_world_stats_t before, after;
    tes_world_stats(w, &before);
    assert_int_equal(tes_component(w, &d), 0);
    assert_non_null(strstr(tes_last_error_detail(w), "members[0] is registered as 'x' f32 x 1 at offset 0, this desc has 'q'"));
    name_x[0] = 'x';
    assert_int_equal(tes_component(w, &d), id); /* count 0 and 1 are the same */
    d.member_count = 1;
    assert_int_equal(tes_component(w, &d), 0);
    assert_non_null(strstr(tes_last_error_detail(w), "registered with 2 members, this desc describes 1"));
    d.members = NULL;
    d.member_count = 0;
    assert_int_equal(tes_component(w, &d), 0);
    m[1].type = TES_TYPE_I32;
    d.members = m;
    d.member_count = 2;
    assert_int_equal(tes_component(w, &d), 0);
    assert_non_null(strstr(tes_last_error_detail(w), "'y' f32 x 1 at offset 4, this desc has 'y' i32"));
    tes_world_stats(w, &after);
    assert_int_equal(before.components, after.components);
    assert_int_equal(before.bytes_allocated, after.bytes_allocated);
    /* A component registered without members stays so. */
    tes_comp_t plain = tes_component(w, &(tes_component_desc_t){.name = "Q", .size = 8});
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "Q", .size = 8}), plain);
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "Q", .size = 8, .members = m, .member_count = 1}), 0);
    tes_world_free(w);
}

static void test_entity_members_remapped(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    TES_DECLARE(Link);
    assert_int_not_equal(TES_REGISTER_REFLECTED(w, Link), 0);
    tes_entity_t outside = tes_spawn(w);
    tes_entity_t prefab = tes_prefab_new(w);
    tes_entity_t child = tes_prefab_child(w, prefab);
    assert_int_equal(TES_SET(w, prefab, Link, {child, 1.0f, 7, {prefab, outside}}), TES_OK);
    assert_int_equal(TES_SET(w, child, Link, {outside, 2.0f, 8, {child, TES_NULL}}), TES_OK);
    tes_entity_t out[2];
    assert_int_not_equal(tes_instantiate(w, prefab, out, 2), 0);
    const Link *root = TES_GET(w, out[0], Link);
    assert_true(root->target == out[1] && root->more[0] == out[0] && root->more[1] == outside);
    assert_int_equal(root->pad, 7); /* untouched: not an entity member */
    const Link *kid = TES_GET(w, out[1], Link);
    assert_true(kid->target == outside && kid->more[0] == out[1] && kid->more[1] == TES_NULL);
    tes_world_free(w);
}

static void check_f32(float v)
{
    char buf[32];
    tes__json_format_f32(buf, v);
    float back = strtof(buf, NULL);
    if (memcmp(&back, &v, sizeof v))
        fail_msg("f32 %a printed as %s reads back as %a", (double)v, buf, (double)back);
}

static void check_f64(double v)
{
    char buf[32];
    tes__json_format_f64(buf, v);
    double back = strtod(buf, NULL);
    if (memcmp(&back, &v, sizeof v))
        fail_msg("f64 %a printed as %s reads back as %a", v, buf, back);
}

/* Whether some decimal of p significant digits reads back as f (a
 * float when single, else a double): the one nearest f or its neighbours
 * one unit away in the last place (any such decimal that reads back lies
 * next to f, so one of these three does). */
static bool some_decimal_reads_back(double f, int p, bool single)
{
    char near[48];
    snprintf(near, sizeof near, "%.*e", p - 1, f);
    char *e = strchr(near, 'e');
    long long mant = 0;
    for (char *q = near; q < e; q++)
        if (*q >= '0' && *q <= '9')
            mant = mant * 10 + (*q - '0');
    int exp10 = atoi(e + 1) - (p - 1);
    for (int delta = -1; delta <= 1; delta++) {
        char alt[64];
        snprintf(alt, sizeof alt, "%s%llde%d", f < 0 ? "-" : "", mant + delta, exp10);
        if (single ? strtof(alt, NULL) == (float)f : strtod(alt, NULL) == f)
            return true;
    }
    return false;
}

/* The formatter's digits are the fewest that read back. */
static void check_shortest(double f, bool single)
{
    char buf[32];
    if (single)
        tes__json_format_f32(buf, (float)f);
    else
        tes__json_format_f64(buf, f);
    int digits = 0;
    const char *p = buf;
    while (*p == '-' || *p == '0' || *p == '.')
        p++; /* leading zeros are not significant */
    for (; *p && *p != 'e'; p++)
        digits += *p >= '0' && *p <= '9';
    /* Trailing zeros of an integer printed in full are not either. */
    const char *end = strchr(buf, 'e') ? strchr(buf, 'e') : buf + strlen(buf);
    if (!strchr(buf, '.'))
        while (end > buf && end[-1] == '0' && digits > 1)
            end--, digits--;
    if (digits > 1 && some_decimal_reads_back(f, digits - 1, single))
        fail_msg("%s %a printed as %s, but %d digits would do", single ? "f32" : "f64", f, buf,
                 digits - 1);
}

static void test_float_format(void **state)
{
    (void)state;
    static const struct { double v; const char *text; } f64[] = {
        {0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"}, {-2.5, "-2.5"}, {1e300, "1e300"},
        {DBL_MAX, "1.7976931348623157e308"}, {5e-324, "5e-324"}, {DBL_MIN, "2.2250738585072014e-308"},
        {123456.789, "123456.789"}, {1e21, "1e21"}, {1e20, "100000000000000000000"},
        {0.000001, "0.000001"}, {1e-7, "1e-7"}, {9007199254740993.0, "9007199254740992"},
        {-0.0, "-0.0"}, {0.0, "0"}, {42, "42"}, {-9007199254740991.0, "-9007199254740991"},
    };
    for (size_t i = 0; i < sizeof f64 / sizeof f64[0]; i++) {
        char buf[32];
        tes__json_format_f64(buf, f64[i].v);
        assert_string_equal(buf, f64[i].text);
    }
    static const struct { float v; const char *text; } f32[] = {
        {0.1f, "0.1"}, {FLT_MAX, "3.4028235e38"}, {1e-45f, "1e-45"}, {FLT_MIN, "1.1754944e-38"},
        {16777216.0f, "16777216"}, {1.17549435e-38f, "1.1754944e-38"}, {3.14159274f, "3.1415927"},
        {-0.0f, "-0.0"}, {1e10f, "10000000000"},
    };
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
        char buf[32];
        tes__json_format_f32(buf, f32[i].v);
        assert_string_equal(buf, f32[i].text);
    }
    /* Random bit patterns: every finite one reads back exactly, and no
     * shorter digit string would (checked for f32 by trying one digit
     * fewer). */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t b32 = (uint32_t)x;
        float f;
        memcpy(&f, &b32, 4);
        if (isfinite(f))
            check_f32(f);
        double d;
        memcpy(&d, &x, 8);
        if (isfinite(d))
            check_f64(d);
        if (isfinite(f) && f != 0 && i < 20000)
            check_shortest(f, true);
        if (isfinite(d) && d != 0 && i < 20000)
            check_shortest(d, false);
        /* Values with few digits, as people write them, scaled. */
        if (i < 20000) {
            double human = (double)(int64_t)(x % 2000001) / 1000.0 - 1000.0;
            if (human != 0) {
                check_f64(human);
                check_shortest(human, false);
                check_f32((float)human);
                check_shortest((float)human, true);
            }
        }
    }
}

static void test_json_text(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    TES_DECLARE(Position);
    TES_REGISTER_REFLECTED(w, Position);
    tes_comp_t tag = tes_component(w, &(tes_component_desc_t){.name = "T\"\n\x7f\xc3\xa9\xff"});
    tes_comp_t raw = tes_component(w, &(tes_component_desc_t){.name = "Raw", .size = 4, .storage = TES_STORAGE_SPARSE});
    tes_entity_t e = tes_spawn(w);
    TES_SET(w, e, Position, {NAN, -INFINITY});
    tes_add(w, e, tag);
    tes_set(w, e, raw, "\x01\x02\x03\xff");
    tes_disable(w, e);
    sink_t s = {0};
    tes_writer_t out = {sink_write, &s};
    assert_int_equal(tes_json_entity(w, e, &out), TES_OK);
    assert_string_equal(s.text, "{\"id\":\"4294967296\",\"name\":null,\"path\":null,\"parent\":null,"
                                "\"disabled\":true,\"prefab\":false,\"components\":{\"Position\":"
                                "{\"x\":\"nan\",\"y\":\"-inf\"},\"T\\\"\\n\\u007f\xc3\xa9\xef\xbf\xbd\":true,"
                                "\"Raw\":{\"bytes\":\"AQID/w==\"}}}");
    sink_reset(&s);
    out.user = &s;
    assert_int_equal(tes_json_world(w, &out), TES_OK);
    assert_non_null(strstr(s.text, "{\"components\":[{\"name\":\"Position\",\"id\":3,\"size\":8,\"align\":4,"
                                   "\"storage\":\"table\",\"stable\":false,\"members\":[{\"name\":\"x\","
                                   "\"type\":\"f32\",\"offset\":0,\"count\":1},"));
    assert_non_null(strstr(s.text, "\"Raw\",\"id\":5,\"size\":4,\"align\":4,\"storage\":\"sparse\""));
    sink_reset(&s);
    /* Bad arguments. */
    assert_int_equal(tes_json_entity(w, e, NULL), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "tes_json_entity: writer is NULL"));
    assert_int_equal(tes_json_world(w, &(tes_writer_t){NULL, NULL}), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "has no write function"));
    out.user = &s;
    assert_int_equal(tes_json_entity(w, TES_NULL, &out), TES_ERR_STALE);
    assert_int_equal(tes_json_entity(NULL, e, &out), TES_ERR_INVALID);
    tes_destroy(w, e);
    assert_int_equal(tes_json_entity(w, e, &out), TES_ERR_STALE);
    assert_int_equal(s.pieces, 0u);
    sink_reset(&s);
    tes_world_free(w);
}

/* name, path and parent from the hierarchy; a path past the 1 KiB stack
 * buffer (ten names of 200 bytes) written level by level. */
static void test_json_hierarchy(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_entity_t chain[10];
    char expect[4096] = "";
    for (int i = 0; i < 10; i++) {
        chain[i] = tes_spawn(w);
        char name[256];
        memset(name, 'a' + i, 199);
        snprintf(name + 199, sizeof name - 199, "%d", i);
        assert_int_equal(tes_set_name(w, chain[i], name), TES_OK);
        if (i)
            assert_int_equal(tes_set_parent(w, chain[i], chain[i - 1]), TES_OK);
        strcat(expect, i ? "/" : "");
        strcat(expect, name);
    }
    sink_t s = {0};
    tes_writer_t out = {sink_write, &s};
    assert_int_equal(tes_json_entity(w, chain[9], &out), TES_OK);
    char *path = strstr(s.text, "\"path\":\"");
    assert_non_null(path);
    assert_int_equal(strncmp(path + 8, expect, strlen(expect)), 0);
    assert_int_equal(path[8 + strlen(expect)], '"');
    char parent[64];
    snprintf(parent, sizeof parent, "\"parent\":\"%llu\"", (unsigned long long)chain[8]);
    assert_non_null(strstr(s.text, parent));
    sink_reset(&s);
    /* A short path, a name with a quote; no path under an unnamed parent. */
    tes_entity_t root = tes_spawn(w), kid = tes_spawn(w);
    tes_set_name(w, root, "ro\"ot");
    tes_set_name(w, kid, "kid");
    tes_set_parent(w, kid, root);
    out.user = &s;
    assert_int_equal(tes_json_entity(w, kid, &out), TES_OK);
    assert_non_null(strstr(s.text, "\"name\":\"kid\",\"path\":\"ro\\\"ot/kid\",\"parent\":\""));
    sink_reset(&s);
    tes_set_name(w, root, NULL);
    out.user = &s;
    assert_int_equal(tes_json_entity(w, kid, &out), TES_OK);
    assert_non_null(strstr(s.text, "\"name\":\"kid\",\"path\":null,\"parent\":\""));
    sink_reset(&s);
    out.user = &s;
    assert_int_equal(tes_json_entity(w, root, &out), TES_OK);
    assert_non_null(strstr(s.text, "\"name\":null,\"path\":null,\"parent\":null"));
    sink_reset(&s);
    tes_world_free(w);
}

/* A writer that tries to change the world it is writing. */
static int meddling_write(const void *data, size_t size, void *user)
{
    (void)data, (void)size;
    tes_world_t *w = user;
    return tes_spawn(w) == TES_NULL && tes_last_error(w) == TES_ERR_BUSY ? TES_OK : TES_ERR_INVALID;
}

static void test_writer_failures(void **state)
{
    (void)state;
    ca_state_t ca;
    ca_init(&ca, 0);
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.allocator = ca_allocator(&ca)});
    TES_DECLARE(Position);
    TES_REGISTER_REFLECTED(w, Position);
    for (int i = 0; i < 3000; i++)
        TES_SET(w, tes_spawn(w), Position, {(float)i * 0.37f, 1.0f / (float)(i + 1)});
    sink_t s = {0};
    tes_writer_t out = {sink_write, &s};
    uint64_t calls = ca.calls;
    int64_t bytes = ca.live_bytes;
    assert_int_equal(tes_json_world(w, &out), TES_OK);
    assert_int_equal(ca.calls, calls); /* nothing allocated */
    assert_int_equal(ca.live_bytes, bytes);
    size_t pieces = s.pieces, total = s.len;
    assert_true(pieces > 10 && s.largest <= 4096);
    sink_reset(&s);
    for (size_t k = 1; k <= pieces; k++) {
        s.fail_at = k;
        s.fail_with = k % 2 ? TES_ERR_IO : 5; /* a positive status reads as TES_ERR_IO */
        assert_int_equal(tes_json_world(w, &out), TES_ERR_IO);
        assert_int_equal(s.pieces, k); /* nothing written after the failure */
        assert_int_equal(tes_last_error(w), TES_ERR_IO);
        assert_non_null(strstr(tes_last_error_detail(w), "tes_json_world: the writer returned"));
        sink_reset(&s);
        out.user = &s;
    }
    s.fail_at = 1;
    s.fail_with = TES_ERR_NOMEM;
    assert_int_equal(tes_json_entity(w, tes_entity_make(5, 1), &out), TES_ERR_NOMEM);
    sink_reset(&s);
    /* The writer runs inside the hook level: it cannot change the world. */
    tes_writer_t meddler = {meddling_write, w};
    assert_int_equal(tes_json_world(w, &meddler), TES_OK);
    assert_int_equal(tes_entity_count(w), 3000);
    /* The same output again, and the world as it was. */
    out.user = &s;
    assert_int_equal(tes_json_world(w, &out), TES_OK);
    assert_int_equal(s.len, total);
    sink_reset(&s);
    tes_world_free(w);
    assert_int_equal(ca.live_bytes, 0);
}

/* The schema calls: every registered id (built-ins included, stamp
 * companions of a tracked component never), each one's layout and
 * members as the world keeps them (counts normalized to at least 1, names
 * copied), tes_json_components equal to the start of tes_json_world's
 * output, and every refused argument with a detail and *out unchanged. */
static void test_component_schema(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    char name[] = "Link";
    tes_member_t members[3];
    memcpy(members, TES_MEMBERS_OF(Link), sizeof members);
    members[1].count = 0; /* means 1 */
    tes_comp_t link = tes_component(w, &(tes_component_desc_t){.name = name, .size = sizeof(Link),
                                                              .members = members, .member_count = 3});
    name[0] = 'X';
    tes_comp_t pos = tes_component(w, &(tes_component_desc_t){.name = "Position", .size = sizeof(Position),
                                                             .storage = TES_STORAGE_SPARSE, .stable = true,
                                                             .members = TES_MEMBERS_OF(Position),
                                                             .member_count = TES_MEMBER_COUNT(Position)});
    tes_comp_t tracked = tes_component(w, &(tes_component_desc_t){.name = "Tracked", .size = 4, .track_changes = true});
    tes_comp_t tag = tes_component(w, &(tes_component_desc_t){.name = "Tag"});
    assert_true(link && pos && tracked && tag);

    tes_comp_t ids[16];
    int32_t n = tes_components(w, NULL, 0);
    assert_int_equal(n, 6); /* Disabled, Prefab, and the four above */
    assert_int_equal(tes_components(w, ids, 3), 6); /* the count, whatever cap */
    assert_int_equal(tes_components(w, ids, 16), 6);
    tes_comp_t expect[] = {TES_DISABLED, TES_PREFAB, link, pos, tracked, tag};
    assert_memory_equal(ids, expect, sizeof expect);

    tes_component_info_t info;
    assert_int_equal(tes_component_info(w, link, &info), TES_OK);
    assert_string_equal(info.name, "Link");
    assert_int_equal(info.id, link);
    assert_int_equal(info.size, sizeof(Link));
    assert_int_equal(info.align, 16); /* natural for 32 bytes, at most 16 */
    assert_int_equal(info.storage, TES_STORAGE_TABLE);
    assert_false(info.stable);
    assert_false(info.track_changes);
    assert_int_equal(info.member_count, 3);
    assert_string_equal(info.members[0].name, "target");
    assert_int_equal(info.members[1].count, 1);
    assert_int_equal(info.members[2].count, 2);
    assert_int_equal(info.members[2].offset, offsetof(Link, more));
    assert_int_equal(tes_component_info(w, pos, &info), TES_OK);
    assert_int_equal(info.storage, TES_STORAGE_SPARSE);
    assert_true(info.stable);
    assert_int_equal(tes_component_info(w, tracked, &info), TES_OK);
    assert_true(info.track_changes);
    assert_int_equal(tes_component_info(w, tag, &info), TES_OK);
    assert_int_equal(info.size, 0);
    assert_null(info.members);
    assert_int_equal(info.member_count, 0);

    /* Refusals: *out unchanged. */
    tes_component_info_t before = info;
    assert_int_equal(tes_component_info(w, 0, &info), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "not registered"));
    assert_int_equal(tes_component_info(w, 999, &info), TES_ERR_INVALID);
    assert_int_equal(tes_component_info(w, tracked + 1, &info), TES_ERR_INVALID); /* a stamp id */
    /* Field by field: the struct's padding is not part of its value. */
    assert_int_equal(info.id, before.id);
    assert_ptr_equal(info.name, before.name);
    assert_int_equal(info.size, before.size);
    assert_int_equal(info.member_count, before.member_count);
    assert_int_equal(tes_component_info(w, link, NULL), TES_ERR_INVALID);
    assert_int_equal(tes_component_info(NULL, link, &info), TES_ERR_INVALID);
    assert_int_equal(tes_components(w, NULL, 1), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "out is NULL"));
    assert_int_equal(tes_components(w, ids, -1), TES_ERR_INVALID);
    assert_int_equal(tes_components(NULL, ids, 16), TES_ERR_INVALID);

    /* The components' JSON is the world's, up to its entities. */
    assert_int_equal(tes_set(w, tes_spawn(w), pos, &(Position){1, 2}), TES_OK);
    sink_t all = {0}, comps = {0};
    tes_writer_t out = {sink_write, &all};
    assert_int_equal(tes_json_world(w, &out), TES_OK);
    out.user = &comps;
    assert_int_equal(tes_json_components(w, &out), TES_OK);
    assert_true(comps.len > 2 && comps.text[0] == '[' && comps.text[comps.len - 1] == ']');
    assert_true(strncmp(all.text, "{\"components\":", 14) == 0);
    assert_memory_equal(all.text + 14, comps.text, comps.len);
    assert_true(strncmp(all.text + 14 + comps.len, ",\"entities\":[", 13) == 0);
    assert_null(strstr(comps.text, "Disabled"));
    assert_non_null(strstr(comps.text, "\"name\":\"Link\""));
    assert_int_equal(tes_json_components(w, NULL), TES_ERR_INVALID);
    sink_reset(&all);
    sink_reset(&comps);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_member_validation),
        cmocka_unit_test(test_reregistration),
        cmocka_unit_test(test_entity_members_remapped),
        cmocka_unit_test(test_float_format),
        cmocka_unit_test(test_json_text),
        cmocka_unit_test(test_json_hierarchy),
        cmocka_unit_test(test_writer_failures),
        cmocka_unit_test(test_component_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
