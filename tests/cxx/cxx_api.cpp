/*
 * Tessera from C++: the header, TES_COMPONENT and every typed macro compile
 * as C++11 to C++20 (tests/cxx/check_cxx.sh builds this file with g++ and
 * clang++ at each standard, -Wall -Wextra -pedantic -Werror, under
 * AddressSanitizer) and behave as in C. A std::string component with
 * ctor/dtor/copy/move hooks goes through adds that move rows, a clone, a
 * query and destruction; every string constructed is destroyed exactly
 * once, and ASan sees no leak and no bad access.
 */
#include <tessera.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <utility>

struct Position {
    float x, y;
};

struct Velocity {
    float dx, dy;
};

struct Name {
    std::string text;
};

struct Marker {
    char unused;
};

/* Members declared beside the struct, registered by
 * TES_REGISTER_REFLECTED (C++11 on) and written by tes_json_entity. */
struct Link {
    tes_entity_t to;
    double weight;
    char label[6];
};
TES_MEMBERS(Link, TES_MEMBER(Link, to, TES_TYPE_ENTITY), TES_MEMBER(Link, weight, TES_TYPE_F64),
            TES_MEMBER(Link, label, TES_TYPE_CHAR));

static int names_alive = 0; /* values constructed and not yet destroyed */

static Name *as_names(void *p) { return static_cast<Name *>(p); }

static void name_ctor(void *p, int32_t n, void *)
{
    for (int32_t i = 0; i < n; i++)
        new (as_names(p) + i) Name();
    names_alive += n;
}

static void name_dtor(void *p, int32_t n, void *)
{
    for (int32_t i = 0; i < n; i++)
        as_names(p)[i].~Name();
    names_alive -= n;
}

static void name_copy(void *dst, const void *src, int32_t n, void *)
{
    for (int32_t i = 0; i < n; i++)
        as_names(dst)[i] = static_cast<const Name *>(src)[i];
}

static void name_move(void *dst, void *src, int32_t n, void *)
{
    for (int32_t i = 0; i < n; i++) {
        new (as_names(dst) + i) Name(std::move(as_names(src)[i]));
        as_names(src)[i].~Name();
    }
}

TES_DECLARE(Position);
TES_DECLARE(Velocity);
TES_DECLARE(Name);
TES_DECLARE(Marker);

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static std::string long_name(int i)
{
    /* Longer than any small-string buffer, so every copy allocates. */
    return "entity number " + std::to_string(i) + " with a name too long to fit inline";
}

static int run(tes_world_t *w)
{
    TES_REGISTER(w, Position);
    TES_REGISTER(w, Velocity);
    tes_hooks_t hooks = {};
    hooks.ctor = name_ctor;
    hooks.dtor = name_dtor;
    hooks.copy = name_copy;
    hooks.move = name_move;
#if __cplusplus >= 202002L
    TES_REGISTER(w, Name, .hooks = hooks);
    TES_REGISTER(w, Marker, .storage = TES_STORAGE_SPARSE);
#else
    tes_component_desc_t desc = {};
    desc.name = "Name";
    desc.size = sizeof(Name);
    desc.align = alignof(Name);
    desc.hooks = hooks;
    TES_ID(Name) = tes_component(w, &desc);
    TES_REGISTER(w, Marker);
#endif
    CHECK(TES_ID(Position) && TES_ID(Velocity) && TES_ID(Name) && TES_ID(Marker));
    CHECK(TES_COMPONENT(w, Position) == TES_ID(Position)); /* same layout, same id */

    enum { N = 64 };
    tes_entity_t es[N];
    for (int i = 0; i < N; i++) {
        es[i] = tes_spawn(w);
        CHECK(TES_SET(w, es[i], Position, {float(i), 2.0f * float(i)}) == TES_OK);
        CHECK(TES_SET(w, es[i], Name, {long_name(i)}) == TES_OK);
        if (i % 2)
            CHECK(TES_ADD(w, es[i], Velocity) == TES_OK); /* moves the row: move hook */
    }
    CHECK(names_alive == N);
    CHECK(TES_HAS(w, es[1], Velocity) && !TES_HAS(w, es[0], Velocity));
    const Name *n5 = TES_GET(w, es[5], Name);
    CHECK(n5 && n5->text == long_name(5));
    Velocity *v = TES_GET_MUT(w, es[3], Velocity);
    CHECK(v != nullptr);
    v->dx = 1.5f;
    CHECK(TES_GET(w, es[3], Velocity)->dx == 1.5f);

    tes_entity_t copy = tes_clone(w, es[7]); /* copy hook */
    CHECK(copy && names_alive == N + 1);
    CHECK(TES_GET(w, copy, Name)->text == long_name(7));

    CHECK(TES_REMOVE(w, es[1], Velocity) == TES_OK);
    CHECK(!TES_HAS(w, es[1], Velocity));
    CHECK(TES_GET(w, es[1], Name)->text == long_name(1)); /* survived the move */
    {
        /* The inline lookup view compiles as C++ and reads what tes_get reads. */
        tes_lookup_t l;
        CHECK(tes_lookup_init(&l, w, TES_ID(Name)) == TES_OK);
        for (int i = 0; i < N; i++)
            CHECK(tes_lookup_get(&l, es[i]) == TES_GET_MUT(w, es[i], Name));
        CHECK(static_cast<const Name *>(tes_lookup_get(&l, es[5]))->text == long_name(5));
        CHECK(tes_lookup_get(&l, TES_NULL) == nullptr);
        tes_lookup_fini(&l);
    }

    /* A query: Position and Name, Velocity optional. */
    tes_query_desc_t qd = {};
    qd.terms[0].comp = TES_ID(Position);
    qd.terms[1].comp = TES_ID(Name);
    qd.terms[2].comp = TES_ID(Velocity);
    qd.terms[2].oper = TES_OPTIONAL;
    tes_query_t *q = tes_query_new(w, &qd);
    CHECK(q != nullptr);
    int seen = 0, moving = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        Position *p = TES_FIELD(&it, Position, 0);
        Name *names = TES_FIELD(&it, Name, 1);
        Velocity *vel = TES_FIELD(&it, Velocity, 2);
        CHECK(p && names);
        for (int32_t i = 0; i < it.count; i++) {
            CHECK(names[i].text == long_name(int(p[i].x)));
            names[i].text += "!"; /* write through the field */
            seen++;
        }
        moving += vel ? it.count : 0;
    }
    CHECK(seen == N + 1);
    CHECK(moving == N / 2 - 1 + 1); /* odd ones, minus es[1], plus the clone of es[7] */
    CHECK(TES_GET(w, es[0], Name)->text == long_name(0) + "!");

    /* The wrong type for a field: NULL and an explained TES_ERR_INVALID. */
    it = tes_query_iter(q);
    CHECK(tes_iter_next(&it));
    CHECK(TES_FIELD(&it, Velocity, 1) == nullptr);
    CHECK(tes_last_error(w) == TES_ERR_INVALID);
    CHECK(std::strstr(tes_last_error_detail(w), "'Name'") != nullptr);
    CHECK(tes_field(&it, 9) == nullptr); /* out of range: safe */
    tes_iter_fini(&it);
    tes_query_free(q);

    for (int i = 0; i < N; i += 3)
        CHECK(tes_destroy(w, es[i]) == TES_OK);
    CHECK(TES_ADD(w, es[1], Marker) == TES_OK);
    return 0;
}

static int append(const void *data, size_t size, void *user)
{
    static_cast<std::string *>(user)->append(static_cast<const char *>(data), size);
    return TES_OK;
}

static int reflected(tes_world_t *w)
{
    TES_DECLARE(Link);
    CHECK(TES_REGISTER_REFLECTED(w, Link) != 0);
    CHECK(TES_MEMBER_COUNT(Link) == 3 && TES_MEMBERS_OF(Link)[2].count == 6);
#if __cplusplus >= 202002L
    CHECK(TES_COMPONENT_REFLECTED(w, Link, .storage = TES_STORAGE_TABLE) == TES_ID(Link));
#endif
    tes_entity_t e = tes_spawn(w);
    CHECK(TES_SET(w, e, Link, {e, 0.25, "ab\"c"}) == TES_OK);
    std::string json;
    tes_writer_t out = {append, &json};
    CHECK(tes_json_entity(w, e, &out) == TES_OK);
    CHECK(json.find("\"Link\":{\"to\":\"" + std::to_string(e) + "\",\"weight\":0.25,"
                    "\"label\":\"ab\\\"c\"}") != std::string::npos);
    return tes_destroy(w, e) == TES_OK ? 0 : 1;
}

int main()
{
    tes_world_t *w = tes_world_new(nullptr);
    if (!w)
        return 1;
    int rc = run(w);
    if (rc == 0)
        rc = reflected(w);
    tes_world_free(w);
    if (rc == 0 && names_alive != 0) {
        std::fprintf(stderr, "unbalanced hooks: %d names alive\n", names_alive);
        rc = 1;
    }
    if (rc == 0)
        std::puts("c++ ok");
    return rc;
}
