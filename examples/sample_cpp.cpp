/*
 * Tessera from C++17: registration, a query and its loop, a system run by
 * tes_progress, and a snapshot saved and loaded, written without compound
 * literals and without missing-initializer warnings (g++ and clang++
 * -std=c++17 -Wall -Wextra -pedantic -Werror build it in the tests).
 *
 * The C forms that C++17 lacks, and what stands in for them here:
 * - `&(tes_query_desc_t){...}` (a compound literal): a desc value-
 *   initialised with `{}`, then its terms assigned, each a full
 *   tes_term_t (the small `term` helper below);
 * - `TES_REGISTER(w, T, .storage = ...)` (designated fields, C++20): a
 *   tes_component_desc_t filled field by field and tes_component;
 * - `(tes_world_desc_t){.threads = 2}`: the same, value-initialised first.
 * Prints what it does; exits 0 when every check passed.
 */
#include <tessera.h>

#include <cstdio>
#include <cstring>
#include <memory>

struct Position {
    float x, y;
};

struct Velocity {
    float dx, dy;
};

struct Health {
    int32_t hp;
};

TES_DECLARE(Position);
TES_DECLARE(Velocity);
TES_DECLARE(Health);

// A world that frees itself.
using world_ptr = std::unique_ptr<tes_world_t, decltype(&tes_world_free)>;

// One query term, every field given (no missing-initializer warning).
static tes_term_t term(tes_comp_t c, tes_oper_t oper = TES_AND, tes_access_t access = TES_INOUT)
{
    tes_term_t t{};
    t.comp = c;
    t.oper = oper;
    t.access = access;
    return t;
}

// Registers the three components; Health is sparse (C++20 could write
// TES_REGISTER(w, Health, .storage = TES_STORAGE_SPARSE)).
static bool register_all(tes_world_t *w)
{
    tes_component_desc_t health{};
    health.name = "Health";
    health.size = sizeof(Health);
    health.align = alignof(Health);
    health.storage = TES_STORAGE_SPARSE;
    TES_ID(Health) = tes_component(w, &health);
    return TES_REGISTER(w, Position) && TES_REGISTER(w, Velocity) && TES_ID(Health);
}

// The system: moves every entity with a Position and a Velocity.
static void move(tes_iter_t *it)
{
    Position *p = TES_FIELD(it, Position, 0);
    const Velocity *v = TES_FIELD(it, Velocity, 1);
    for (int32_t i = 0; i < it->count; i++) {
        p[i].x += v[i].dx * it->delta_time;
        p[i].y += v[i].dy * it->delta_time;
    }
}

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main()
{
    tes_world_desc_t wd{};
    wd.threads = 2;
    world_ptr world(tes_world_new(&wd), &tes_world_free);
    tes_world_t *w = world.get();
    CHECK(w && register_all(w));

    for (int i = 0; i < 100; i++) {
        tes_entity_t e = tes_spawn(w);
        TES_SET(w, e, Position, {float(i), 0.f});
        if (i % 2 == 0)
            TES_SET(w, e, Velocity, {1.f, 2.f});
        if (i % 10 == 0)
            TES_SET(w, e, Health, {100});
    }

    // A query and its loop: entities with Position and Velocity but no
    // Health. The loop runs to its end (tes_iter_next returned false);
    // leaving it early would need tes_iter_fini.
    tes_query_desc_t qd{};
    qd.terms[0] = term(TES_ID(Position), TES_AND, TES_IN);
    qd.terms[1] = term(TES_ID(Velocity), TES_AND, TES_IN);
    qd.terms[2] = term(TES_ID(Health), TES_NOT);
    tes_query_t *q = tes_query_new(w, &qd);
    CHECK(q);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const Position *p = TES_FIELD(&it, Position, 0);
        for (int32_t i = 0; i < it.count; i++)
            CHECK(p[i].y == 0.f);
        seen += it.count;
    }
    std::printf("query {Position, Velocity, NOT Health}: %d entities\n", seen);
    CHECK(seen == 40);

    // A system over Position and Velocity, run twice by tes_progress.
    tes_system_desc_t sd{};
    sd.name = "move";
    sd.query.terms[0] = term(TES_ID(Position), TES_AND, TES_INOUT);
    sd.query.terms[1] = term(TES_ID(Velocity), TES_AND, TES_IN);
    sd.run = move;
    sd.parallel = true;
    CHECK(tes_system_new(w, &sd));
    CHECK(tes_progress(w, 0.5f) == TES_OK && tes_progress(w, 0.5f) == TES_OK);
    tes_entity_t first = tes_entity_make(0, 1);
    const Position *p0 = TES_GET(w, first, Position);
    CHECK(p0 && p0->x == 1.f && p0->y == 2.f);
    std::printf("system 'move' ran twice: entity 0 is at (%.1f, %.1f)\n", double(p0->x),
                double(p0->y));

    // A snapshot, saved to a file and loaded into a fresh world that has
    // the same components registered.
    const char *path = "sample_cpp.snap";
    CHECK(tes_snapshot_save_file(w, path) == TES_OK);
    world_ptr copy(tes_world_new(nullptr), &tes_world_free);
    CHECK(copy && register_all(copy.get()));
    if (tes_snapshot_load_file(copy.get(), path) != TES_OK) {
        std::fprintf(stderr, "load failed: %s\n", tes_last_error_detail(copy.get()));
        return 1;
    }
    std::remove(path);
    const Position *c0 = TES_GET(copy.get(), first, Position);
    CHECK(c0 && c0->x == 1.f && c0->y == 2.f);
    CHECK(tes_entity_count(copy.get()) == 100);
    std::printf("snapshot: %d entities saved and loaded, entity 0 still at (%.1f, %.1f)\n",
                tes_entity_count(copy.get()), double(c0->x), double(c0->y));

    // A failed call explains itself.
    tes_entity_t gone = tes_spawn(w);
    tes_destroy(w, gone);
    if (!TES_GET(w, gone, Position))
        std::printf("tes_get on a destroyed entity: %s\n", tes_last_error_detail(w));
    tes_query_free(q);
    return 0;
}
