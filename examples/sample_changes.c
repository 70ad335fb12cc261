/*
 * sample_changes — change detection. Position is registered with
 * track_changes, so every write of it is stamped. A render list (one
 * sprite per entity, here a plain array indexed by the entity's index) is
 * rebuilt only for the entities that moved since the previous frame: the
 * query {Position CHANGED, Sprite} yields exactly them, and skips the rest
 * without looking at them one by one. A movement system writes a few
 * entities per frame; the sample checks every frame that the render list
 * equals the world.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tessera.h"

typedef struct { float x, y; } Position;
typedef struct { int32_t id; } Sprite;
typedef struct { float x, y; } Drawn; /* the render list's entry */

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "sample_changes: check failed: %s (line %d)\n", \
                    #cond, __LINE__);                                        \
            return 1;                                                        \
        }                                                                    \
    } while (0)

enum { N = 10000, MOVERS = 50, FRAMES = 20 };

int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    CHECK(w != NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position, .track_changes = true);
    tes_comp_t sprite = TES_COMPONENT(w, Sprite);
    CHECK(pos && sprite);
    static tes_entity_t es[N];
    static Drawn render[N];
    for (int32_t i = 0; i < N; i++) {
        es[i] = tes_spawn(w);
        CHECK(tes_set(w, es[i], pos, &(Position){(float)i, 0}) == TES_OK);
        CHECK(tes_set(w, es[i], sprite, &(Sprite){i}) == TES_OK);
    }
    /* TES_IN: reading the positions does not count as writing them. */
    tes_query_t *moved = tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = pos, .access = TES_IN, .change = TES_CHANGE_CHANGED},
                  {.comp = sprite, .access = TES_IN}}});
    CHECK(moved != NULL);

    srand(1);
    int64_t rebuilt = 0;
    for (int frame = 0; frame < FRAMES; frame++) {
        /* Gameplay: a few entities move (tes_get_mut stamps the write). */
        if (frame > 0) {
            for (int k = 0; k < MOVERS; k++) {
                Position *p = tes_get_mut(w, es[rand() % N], pos);
                CHECK(p != NULL);
                p->y += 1.0f;
            }
        }
        /* Rendering: only what moved since the last frame (all of it the
         * first time). */
        int32_t updated = 0;
        tes_iter_t it = tes_query_iter(moved);
        while (tes_iter_next(&it)) {
            const Position *p = tes_field(&it, 0);
            for (int32_t i = 0; i < it.count; i++) {
                uint32_t slot = tes_entity_index(it.entities[i]);
                CHECK(slot < N);
                render[slot] = (Drawn){p[i].x, p[i].y};
                updated++;
            }
        }
        CHECK(frame == 0 ? updated == N : updated <= MOVERS);
        rebuilt += updated;
        for (int32_t i = 0; i < N; i++) {
            const Position *p = tes_get(w, es[i], pos);
            CHECK(render[tes_entity_index(es[i])].x == p->x &&
                  render[tes_entity_index(es[i])].y == p->y);
        }
    }
    printf("%d frames over %d entities: %lld render entries rebuilt instead of %lld\n", FRAMES,
           N, (long long)rebuilt, (long long)N * FRAMES);
    printf("world tick %u\n", tes_world_tick(w));
    tes_world_free(w);
    return 0;
}
