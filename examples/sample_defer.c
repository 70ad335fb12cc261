/*
 * sample_defer — structural changes while iterating. A live iterator defers
 * spawn, destroy, add, remove and set: the loop keeps walking the world as
 * it was, reads see the old state, and the changes are applied in call
 * order when the iteration ends. tes_defer_begin/end does the same by hand.
 */
#include <stdio.h>

#include "tessera.h"

typedef struct { int32_t hp; } Health;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "sample_defer: check failed: %s (line %d)\n", \
                    #cond, __LINE__);                                      \
            return 1;                                                      \
        }                                                                  \
    } while (0)

int main(void)
{
    enum { N = 100 };
    tes_world_t *w = tes_world_new(NULL);
    CHECK(w != NULL);
    tes_comp_t health = TES_COMPONENT(w, Health);
    tes_comp_t hero = tes_component(w, &(tes_component_desc_t){.name = "Hero"}); /* table tag */
    CHECK(health && hero);
    for (int32_t i = 0; i < N; i++)
        CHECK(tes_set(w, tes_spawn(w), health, &(Health){i}) == TES_OK);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{health}}});
    CHECK(q && tes_query_count(q) == N);

    /* One pass: the weak die, the strong become heroes (a table move), and
     * every tenth spawns a recruit. None of it disturbs the loop. */
    int32_t visited = 0, died = 0, recruits = 0;
    tes_entity_t recruit = TES_NULL;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        CHECK(tes_is_deferred(w));
        const Health *h = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++, visited++) {
            tes_entity_t e = it.entities[i];
            if (h[i].hp < 30) {
                CHECK(tes_destroy(w, e) == TES_OK);
                CHECK(tes_alive(w, e)); /* still here until the loop ends */
                died++;
            } else if (h[i].hp >= 90) {
                CHECK(tes_add(w, e, hero) == TES_OK);
                CHECK(!tes_has(w, e, hero)); /* reads see the old state */
            }
            if (h[i].hp % 10 == 0) {
                recruit = tes_spawn(w); /* a live handle at once... */
                CHECK(tes_alive(w, recruit));
                CHECK(tes_set(w, recruit, health, &(Health){1000}) == TES_OK);
                CHECK(!tes_has(w, recruit, health)); /* ...its components at the end */
                recruits++;
            }
        }
    }
    /* The loop saw exactly the entities that existed when it started. */
    CHECK(visited == N && !tes_is_deferred(w));
    CHECK(tes_query_count(q) == N - died + recruits);
    CHECK(((const Health *)tes_get(w, recruit, health))->hp == 1000);
    tes_query_t *heroes = tes_query_new(w, &(tes_query_desc_t){.terms = {{health}, {hero}}});
    CHECK(heroes && tes_query_count(heroes) == 10);
    printf("one pass over %d: %d died, %d recruits spawned, %d heroes; now %d\n", visited, died,
           recruits, tes_query_count(heroes), tes_query_count(q));

    /* Deferring by hand: a batch applied at once, in call order. */
    CHECK(tes_defer_begin(w) == TES_OK);
    tes_entity_t e = tes_spawn(w);
    CHECK(tes_set(w, e, health, &(Health){5}) == TES_OK);
    CHECK(tes_set(w, e, health, &(Health){7}) == TES_OK); /* the later write wins */
    CHECK(tes_add(w, e, hero) == TES_OK);
    CHECK(tes_remove(w, e, hero) == TES_OK);
    CHECK(tes_query_count(q) == N - died + recruits); /* nothing applied yet */
    CHECK(tes_defer_end(w) == TES_OK);
    CHECK(((const Health *)tes_get(w, e, health))->hp == 7 && !tes_has(w, e, hero));
    CHECK(tes_defer_end(w) == TES_ERR_INVALID); /* no level open */

    /* Destroying everything from inside a loop is fine too. */
    it = tes_query_iter(q);
    while (tes_iter_next(&it))
        for (int32_t i = 0; i < it.count; i++)
            CHECK(tes_destroy(w, it.entities[i]) == TES_OK);
    CHECK(tes_query_count(q) == 0 && tes_entity_count(w) == 0);

    tes_world_free(w);
    printf("sample_defer: ok\n");
    return 0;
}
