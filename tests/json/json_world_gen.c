/*
 * Builds a random world from a seed and writes it twice: as JSON through
 * tes_json_world (the file under test), and as a plain line list of what
 * every value is (the expectation), which check_json_world.py compares
 * after parsing the JSON with an independent parser.
 *
 * The world has components with random names (quotes, backslashes, control
 * characters, valid UTF-8 and invalid byte sequences), member lists over
 * every tes_type_t (scalars and arrays, char arrays holding random bytes),
 * tags, data without members, table and sparse storage; entities carry
 * random values (floats from random bit patterns, so NaN, infinities,
 * subnormals and extremes, and the extreme integers), some disabled, some
 * prefabs, some named (names of the same troublesome bytes) and linked
 * under parents.
 *
 * Usage: json_world_gen SEED OUT.json OUT.expect
 * Expectation lines (strings and bytes in hex, floats as their bits):
 *   D <name> <id> <size> <storage> <nmembers>, then m <name> <type> <offset> <count>
 *   E <id> <disabled> <prefab> <name|!> <path|!> <parent or 0>, then C <name> tag | C <name> bytes <hex> |
 *   C <name> members, then V <member> <type> <token>... (one per element;
 *   a char member has one token: its bytes up to the NUL)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }

static void hex(FILE *f, const void *p, size_t n)
{
    const uint8_t *b = p;
    if (!n)
        fputc('-', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b[i]);
}

/* Random bytes from an alphabet of trouble: ASCII, quotes, backslashes,
 * control characters, valid multi-byte UTF-8 and broken sequences. */
static size_t random_text(char *buf, size_t cap)
{
    static const char *const pieces[] = {
        "a", "Z", "_", " ", "\"", "\\", "/", "\n", "\t", "\x01", "\x1f", "\x7f", "\xc3\xa9",
        "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc2\x80", "\xc2\x9f", "\xef\xbf\xbf", "\xff",
        "\xc0\xaf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc3", "\xe2\x82",
        "\x80", "\xf0\x9f\x98", "\xfe",
    };
    size_t n = 0;
    uint32_t k = 1 + below(10);
    for (uint32_t i = 0; i < k; i++) {
        const char *p = pieces[below(sizeof pieces / sizeof pieces[0])];
        size_t len = strlen(p);
        if (n + len >= cap)
            break;
        memcpy(buf + n, p, len);
        n += len;
    }
    buf[n] = '\0';
    return n;
}

#define MAX_COMPS 10
#define MAX_MEMBERS 8

typedef struct comp {
    tes_comp_t id;
    char name[64];
    size_t size;
    tes_member_t members[MAX_MEMBERS];
    char member_names[MAX_MEMBERS][40];
    int32_t member_count;
} comp_t;

static void random_value(const comp_t *c, uint8_t *v)
{
    for (size_t i = 0; i < c->size; i++)
        v[i] = (uint8_t)next();
    for (int32_t m = 0; m < c->member_count; m++) {
        const tes_member_t *mm = &c->members[m];
        uint8_t *p = v + mm->offset;
        for (uint32_t k = 0; k < mm->count; k++) {
            switch (mm->type) {
            case TES_TYPE_BOOL: p[k] = (uint8_t)below(2); break;
            case TES_TYPE_CHAR:
                if (k == 0) {
                    char text[64];
                    size_t n = random_text(text, sizeof text);
                    if (n >= mm->count)
                        n = mm->count - 1 + below(2); /* sometimes no NUL at all */
                    memset(p, 0, mm->count);
                    memcpy(p, text, n > mm->count ? mm->count : n);
                }
                break;
            case TES_TYPE_I64: case TES_TYPE_U64: case TES_TYPE_ENTITY: {
                static const uint64_t edge[] = {0, 1, UINT64_MAX, (uint64_t)INT64_MAX, (uint64_t)INT64_MIN, 0x100000000u};
                uint64_t x = below(3) ? next() : edge[below(6)];
                memcpy(p + 8 * k, &x, 8);
                break;
            }
            case TES_TYPE_F64: {
                static const uint64_t edge[] = {0, 0x8000000000000000u, 0x7ff0000000000000u, 0xfff0000000000000u,
                                                0x7ff8000000000001u, 1, 0x7fefffffffffffffu, 0x0010000000000000u,
                                                0x3fb999999999999au};
                uint64_t x = below(3) ? next() : edge[below(9)];
                memcpy(p + 8 * k, &x, 8);
                break;
            }
            case TES_TYPE_F32: {
                static const uint32_t edge[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u,
                                                1, 0x7f7fffffu, 0x00800000u, 0x3dcccccdu};
                uint32_t x = below(3) ? (uint32_t)next() : edge[below(9)];
                if (below(4) == 0) { /* a "human" value: a small decimal */
                    float f = (float)((int32_t)below(20001) - 10000) / 100.0f;
                    memcpy(&x, &f, 4);
                }
                memcpy(p + 4 * k, &x, 4);
                break;
            }
            default: break; /* the random bytes cover every integer */
            }
        }
    }
}

static const char *storage_of(int s) { return s ? "sparse" : "table"; }

static void expect_value(FILE *f, const comp_t *c, const uint8_t *v)
{
    if (!c->size) {
        fprintf(f, "C ");
        hex(f, c->name, strlen(c->name));
        fprintf(f, " tag\n");
        return;
    }
    fprintf(f, "C ");
    hex(f, c->name, strlen(c->name));
    if (!c->member_count) {
        fprintf(f, " bytes ");
        hex(f, v, c->size);
        fprintf(f, "\n");
        return;
    }
    fprintf(f, " members\n");
    for (int32_t m = 0; m < c->member_count; m++) {
        const tes_member_t *mm = &c->members[m];
        fprintf(f, "V ");
        hex(f, mm->name, strlen(mm->name));
        fprintf(f, " %d", (int)mm->type);
        const uint8_t *p = v + mm->offset;
        if (mm->type == TES_TYPE_CHAR) {
            size_t n = 0;
            while (n < mm->count && p[n])
                n++;
            fputc(' ', f);
            hex(f, p, n);
        }
        for (uint32_t k = 0; mm->type != TES_TYPE_CHAR && k < mm->count; k++) {
            switch (mm->type) {
            case TES_TYPE_BOOL: fprintf(f, " %d", p[k] ? 1 : 0); break;
            case TES_TYPE_I8: fprintf(f, " %d", (int)(int8_t)p[k]); break;
            case TES_TYPE_U8: fprintf(f, " %u", (unsigned)p[k]); break;
            case TES_TYPE_I16: { int16_t x; memcpy(&x, p + 2 * k, 2); fprintf(f, " %d", (int)x); break; }
            case TES_TYPE_U16: { uint16_t x; memcpy(&x, p + 2 * k, 2); fprintf(f, " %u", (unsigned)x); break; }
            case TES_TYPE_I32: { int32_t x; memcpy(&x, p + 4 * k, 4); fprintf(f, " %" PRId32, x); break; }
            case TES_TYPE_U32: case TES_TYPE_F32: { uint32_t x; memcpy(&x, p + 4 * k, 4); fprintf(f, " %" PRIu32, x); break; }
            case TES_TYPE_I64: { int64_t x; memcpy(&x, p + 8 * k, 8); fprintf(f, " %" PRId64, x); break; }
            default: { uint64_t x; memcpy(&x, p + 8 * k, 8); fprintf(f, " %" PRIu64, x); break; }
            }
        }
        fprintf(f, "\n");
    }
}

static int file_write(const void *data, size_t size, void *user)
{
    return fwrite(data, 1, size, user) == size ? TES_OK : TES_ERR_IO;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: json_world_gen SEED OUT.json OUT.expect\n");
        return 2;
    }
    rng = strtoull(argv[1], NULL, 10) * 0x9E3779B97F4A7C15u + 1;
    tes_world_t *w = tes_world_new(NULL);
    FILE *fe = fopen(argv[3], "w");
    if (!w || !fe)
        return 1;
    static comp_t comps[MAX_COMPS];
    uint32_t ncomps = 3 + below(MAX_COMPS - 2);
    for (uint32_t i = 0; i < ncomps; i++) {
        comp_t *c = &comps[i];
        int storage = (int)below(2);
        /* Unique names: a random text and a number. */
        char text[40];
        random_text(text, sizeof text);
        snprintf(c->name, sizeof c->name, "%s%u", text, (unsigned)i);
        uint32_t kind = below(5);
        if (kind == 0) {
            c->size = 0;
        } else {
            /* Members laid out one after another, each aligned. */
            uint32_t at = 0, n = kind == 1 ? 0 : 1 + below(MAX_MEMBERS);
            for (uint32_t m = 0; m < n; m++) {
                tes_type_t t = (tes_type_t)(1 + below(13));
                uint32_t tsize = t == TES_TYPE_CHAR ? 1 : (t >= TES_TYPE_I64 && t <= TES_TYPE_I64) ? 8
                               : t == TES_TYPE_U64 || t == TES_TYPE_F64 || t == TES_TYPE_ENTITY ? 8
                               : t == TES_TYPE_I32 || t == TES_TYPE_U32 || t == TES_TYPE_F32 ? 4
                               : t == TES_TYPE_I16 || t == TES_TYPE_U16 ? 2 : 1;
                uint32_t count = t == TES_TYPE_CHAR ? 1 + below(12) : below(3) ? 0 : 1 + below(4);
                at = (at + tsize - 1) / tsize * tsize;
                random_text(c->member_names[m], sizeof c->member_names[m] - 4);
                size_t len = strlen(c->member_names[m]);
                snprintf(c->member_names[m] + len, 4, "%u", (unsigned)(m % 1000u)); /* m < MAX_MEMBERS: at most 3 digits */
                c->members[m] = (tes_member_t){c->member_names[m], t, at, count};
                at += tsize * (count ? count : 1);
                c->members[m].count = count ? count : 1;
            }
            c->member_count = (int32_t)n;
            size_t size = at ? at : 1 + below(20);
            c->size = (size + 7) / 8 * 8;
        }
        c->id = tes_component(w, &(tes_component_desc_t){.name = c->name, .size = c->size, .align = c->size ? 8 : 0,
                                                         .storage = (tes_storage_t)storage,
                                                         .members = c->members, .member_count = c->member_count});
        if (!c->id) {
            fprintf(stderr, "registration failed: %s\n", tes_last_error_detail(w));
            return 1;
        }
        fprintf(fe, "D ");
        hex(fe, c->name, strlen(c->name));
        fprintf(fe, " %u %zu %s %d\n", (unsigned)c->id, c->size, storage_of(storage), (int)c->member_count);
        for (int32_t m = 0; m < c->member_count; m++) {
            fprintf(fe, "m ");
            hex(fe, c->members[m].name, strlen(c->members[m].name));
            fprintf(fe, " %d %u %u\n", (int)c->members[m].type, c->members[m].offset, c->members[m].count);
        }
    }
    uint32_t n = 1 + below(300);
    for (uint32_t i = 0; i < n; i++) {
        tes_entity_t e = below(8) == 0 ? tes_prefab_new(w) : tes_spawn(w);
        for (uint32_t k = 0; k < ncomps; k++) {
            if (below(2))
                continue;
            uint8_t v[512];
            random_value(&comps[k], v);
            tes_set(w, e, comps[k].id, comps[k].size ? v : NULL);
        }
        /* Names (every kind of byte but '/' and NUL, unique among
         * siblings through the index) and parents among earlier entities
         * of the same kind (prefab or not); refused links are fine. */
        if (below(3)) {
            char text[48], name[64];
            random_text(text, sizeof text);
            for (char *c = text; *c; c++)
                if (*c == '/')
                    *c = '|';
            snprintf(name, sizeof name, "%s#%u", text, (unsigned)i);
            if (tes_set_name(w, e, name) != TES_OK)
                fprintf(stderr, "tes_set_name: %s\n", tes_last_error_detail(w));
        }
        if (i && below(2)) {
            tes_entity_t parent = tes_entity_make(below(i), 1);
            if (tes_alive(w, parent))
                tes_set_parent(w, e, parent);
        }
        if (below(6) == 0)
            tes_disable(w, e);
        if (below(10) == 0)
            tes_destroy(w, e);
    }
    /* The expectation, entity by entity in index order (the JSON's). */
    tes_world_stats_t st;
    tes_world_stats(w, &st);
    for (uint32_t i = 0; i < st.entity_slots; i++) {
        tes_entity_t e = 0;
        for (uint32_t g = 1; g < 1000 && !e; g++)
            if (tes_alive(w, tes_entity_make(i, g)))
                e = tes_entity_make(i, g);
        if (!e)
            continue;
        /* Name, path (the names from the root down, if all are named)
         * and parent, found by walking up. */
        const char *name = tes_name(w, e);
        char path[64 * 300] = "";
        bool named = name != NULL;
        for (tes_entity_t at = e; named && at; at = tes_parent(w, at)) {
            const char *n = tes_name(w, at);
            if (!n) {
                named = false;
                break;
            }
            char rest[sizeof path];
            snprintf(rest, sizeof rest, "%s%s%s", n, at == e ? "" : "/", path);
            memcpy(path, rest, sizeof path);
        }
        fprintf(fe, "E %" PRIu64 " %d %d ", e, tes_has(w, e, TES_DISABLED), tes_has(w, e, TES_PREFAB));
        if (name)
            hex(fe, name, strlen(name));
        else
            fputc('!', fe);
        fputc(' ', fe);
        if (named)
            hex(fe, path, strlen(path));
        else
            fputc('!', fe);
        fprintf(fe, " %" PRIu64 "\n", tes_parent(w, e));
        for (uint32_t k = 0; k < ncomps; k++)
            if (tes_has(w, e, comps[k].id))
                expect_value(fe, &comps[k], tes_get(w, e, comps[k].id));
    }
    FILE *fj = fopen(argv[2], "wb");
    if (!fj)
        return 1;
    tes_writer_t out = {file_write, fj};
    int rc = tes_json_world(w, &out);
    if (fclose(fj) || fclose(fe) || rc) {
        fprintf(stderr, "tes_json_world: %d %s\n", rc, tes_last_error_detail(w));
        return 1;
    }
    tes_world_free(w);
    return 0;
}
