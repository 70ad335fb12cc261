/*
 * A program built from dist/tessera.h and dist/tessera.c alone (see
 * check_amalgamation.sh): registers components with the typed macros, runs
 * a query and checks the results, so a broken amalgamation fails at build
 * or at run time.
 */
#include <stdio.h>
#include <string.h>

#include "tessera.h"

typedef struct {
    float x, y;
} Position;

typedef struct {
    float dx, dy;
} Velocity;

TES_DECLARE(Position);
TES_DECLARE(Velocity);

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    CHECK(w != NULL);
    CHECK(TES_REGISTER(w, Position) != 0);
    CHECK(TES_REGISTER(w, Velocity, .storage = TES_STORAGE_SPARSE) != 0);
    for (int i = 0; i < 1000; i++) {
        tes_entity_t e = tes_spawn(w);
        CHECK(TES_SET(w, e, Position, {(float)i, 0}) == TES_OK);
        if (i % 4 == 0)
            CHECK(TES_SET(w, e, Velocity, {1, 2}) == TES_OK);
    }
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = TES_ID(Position)}, {.comp = TES_ID(Velocity)}}});
    CHECK(q != NULL);
    int32_t moved = 0;
    for (tes_iter_t it = tes_query_iter(q); tes_iter_next(&it);) {
        Position *p = TES_FIELD(&it, Position, 0);
        const Velocity *v = TES_FIELD(&it, Velocity, 1);
        for (int32_t i = 0; i < it.count; i++) {
            p[i].x += v[i].dx;
            p[i].y += v[i].dy;
            moved++;
        }
    }
    CHECK(moved == 250);
    /* The inline lookup views, table and sparse, from the single file. */
    tes_lookup_t lp, lv;
    CHECK(tes_lookup_init(&lp, w, TES_ID(Position)) == TES_OK);
    CHECK(tes_lookup_init(&lv, w, TES_ID(Velocity)) == TES_OK);
    int32_t found = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        tes_entity_t e = tes_entity_make(i, 1);
        const Position *p = (const Position *)tes_lookup_get(&lp, e);
        CHECK(p == TES_GET(w, e, Position) && p && p->x >= (float)i);
        found += tes_lookup_get(&lv, e) != NULL;
    }
    CHECK(found == 250);
    tes_lookup_fini(&lp);
    tes_lookup_fini(&lv);
    CHECK(tes_query_count(q) == 250);
    /* An error detail comes through too. */
    CHECK(tes_component(w, &(tes_component_desc_t){.name = "Position", .size = 4}) == 0);
    CHECK(strstr(tes_last_error_detail(w), "'Position'") != NULL);
    tes_query_free(q);
    tes_world_free(w);
    printf("single-file build ok: %d entities moved\n", (int)moved);
    return 0;
}
