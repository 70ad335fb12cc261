/*
 * sample_hello — the smallest complete Tessera program: create a world,
 * register two components, spawn entities, add components, run a query
 * over them, and check the result. Exits nonzero if anything is off.
 */
#include <stdio.h>

#include "tessera.h"

typedef struct { float x, y; } Position;
typedef struct { float x, y; } Velocity;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "sample_hello: check failed: %s (line %d)\n", \
                    #cond, __LINE__);                                      \
            return 1;                                                      \
        }                                                                  \
    } while (0)

int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    CHECK(w != NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    CHECK(pos && vel);

    /* Ten entities with a position; the even ones also move. tes_spawn_with
     * places each one with all its values straight into its final table
     * (tes_spawn plus one tes_set per component would move it each time). */
    tes_entity_t e[10];
    for (int i = 0; i < 10; i++) {
        tes_value_t values[] = {{pos, &(Position){(float)i, 0}}, {vel, &(Velocity){1, 2}}};
        e[i] = tes_spawn_with(w, values, i % 2 == 0 ? 2 : 1);
        CHECK(e[i] != TES_NULL);
    }

    /* A query for everything that has both, run for three steps. */
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{pos}, {vel, TES_AND, TES_IN}}});
    CHECK(q != NULL);
    CHECK(tes_query_count(q) == 5);
    for (int step = 0; step < 3; step++) {
        tes_iter_t it = tes_query_iter(q);
        while (tes_iter_next(&it)) {
            Position *p = tes_field(&it, 0);
            const Velocity *v = tes_field(&it, 1);
            for (int32_t i = 0; i < it.count; i++) {
                p[i].x += v[i].x;
                p[i].y += v[i].y;
            }
        }
    }

    /* The movers advanced by 3 * (1, 2); the others did not move. */
    for (int i = 0; i < 10; i++) {
        const Position *p = tes_get(w, e[i], pos);
        CHECK(p != NULL);
        CHECK(p->x == (float)i + (i % 2 == 0 ? 3.0f : 0.0f));
        CHECK(p->y == (i % 2 == 0 ? 6.0f : 0.0f));
        printf("entity %u: (%g, %g)%s\n", tes_entity_index(e[i]), (double)p->x, (double)p->y,
               tes_has(w, e[i], vel) ? " moving" : "");
    }

    /* Destroyed entities stay dead: their handles never come back. */
    CHECK(tes_destroy(w, e[0]) == TES_OK);
    CHECK(!tes_alive(w, e[0]) && tes_get(w, e[0], pos) == NULL);
    CHECK(tes_query_count(q) == 4 && tes_entity_count(w) == 9);

    /* Everything a query matches goes at once (whole tables emptied). */
    CHECK(tes_destroy_matching(q) == 4);
    CHECK(tes_entity_count(w) == 5 && !tes_alive(w, e[2]) && tes_alive(w, e[1]));
    printf("destroyed the 4 movers left with one tes_destroy_matching\n");

    tes_query_free(q);
    tes_world_free(w);
    printf("sample_hello: ok\n");
    return 0;
}
