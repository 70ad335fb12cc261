/*
 * The program every consumer test builds (installed package through
 * find_package and pkg-config, add_subdirectory, FetchContent): the typed
 * macros, a query and an error detail, checked, so a broken package fails
 * to build or to run. Prints "consumer ok" on success.
 */
#include <stdio.h>
#include <string.h>

#include <tessera.h>

typedef struct {
    float x, y;
} Position;

typedef struct {
    float dx, dy;
} Velocity;

int main(void)
{
    TES_DECLARE(Position);
    TES_DECLARE(Velocity);
    tes_world_t *w = tes_world_new(NULL);
    if (!w || !TES_REGISTER(w, Position) || !TES_REGISTER(w, Velocity))
        return 1;
    tes_entity_t e = tes_spawn(w);
    TES_SET(w, e, Position, {1, 2});
    TES_SET(w, e, Velocity, {3, 4});
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = TES_ID(Position)}, {.comp = TES_ID(Velocity), .access = TES_IN}}});
    for (tes_iter_t it = tes_query_iter(q); tes_iter_next(&it);) {
        Position *p = TES_FIELD(&it, Position, 0);
        const Velocity *v = TES_FIELD(&it, Velocity, 1);
        for (int32_t i = 0; i < it.count; i++)
            p[i].x += v[i].dx, p[i].y += v[i].dy;
    }
    const Position *p = TES_GET(w, e, Position);
    int ok = p && p->x == 4 && p->y == 6 && tes_query_count(q) == 1;
    ok = ok && tes_component(w, &(tes_component_desc_t){.name = "Position", .size = 4}) == 0 &&
         strstr(tes_last_error_detail(w), "registered with size 8") != NULL;
    tes_query_free(q);
    tes_world_free(w);
    puts(ok ? "consumer ok" : "consumer FAILED");
    return ok ? 0 : 1;
}
