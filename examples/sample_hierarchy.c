/*
 * sample_hierarchy — a small solar system as a scene tree: the sun, its
 * planets, their moons. Each body has a Local offset from its parent; the
 * World position is the parent's World plus Local. The tree lives in
 * links (tes_set_parent), not in components, so the bodies all share one
 * table and iteration over them is as dense as without a tree.
 *
 * Shows: linking and child order, depth, names and paths, propagation by
 * one cascade query with a parent term (chunks come by depth, so the
 * parents of one depth are final before their children are computed),
 * reparenting a moon, and a cascading destroy of a planet.
 */
#include <math.h>
#include <stdio.h>

#include "tessera.h"

typedef struct Local { float x, y; } Local;
typedef struct World { float x, y; } World;

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "sample_hierarchy: check failed: %s (line %d)\n",   \
                    #cond, __LINE__);                                           \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static tes_entity_t body(tes_world_t *w, tes_comp_t local, tes_comp_t world, tes_entity_t parent,
                         const char *name, float x, float y)
{
    tes_entity_t e = tes_spawn(w);
    tes_set(w, e, local, &(Local){x, y});
    tes_set(w, e, world, &(World){0, 0});
    tes_set_parent(w, e, parent);
    tes_set_name(w, e, name);
    return e;
}

/* World = parent's World + Local over the whole forest, in one pass of
 * one query: TES_QUERY_CASCADE hands out the chunks by depth, and the
 * parent term (TES_SRC_PARENT) gives each chunk its parents' World as
 * their own chunks left it. Roots have no parent: their chunks get NULL
 * for the optional parent term. */
static tes_query_t *propagation_query(tes_world_t *w, tes_comp_t local, tes_comp_t world)
{
    return tes_query_new(w, &(tes_query_desc_t){
                                .terms = {{world, .access = TES_OUT},
                                          {local, .access = TES_IN},
                                          {world, .oper = TES_OPTIONAL, .access = TES_IN,
                                           .src = TES_SRC_PARENT}},
                                .flags = TES_QUERY_CASCADE});
}

static void propagate(tes_query_t *q)
{
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        World *out = TES_FIELD(&it, World, 0);
        const Local *l = TES_FIELD(&it, Local, 1);
        const World *up = TES_FIELD(&it, World, 2); /* NULL: the chunk's entities are roots */
        for (int32_t i = 0; i < it.count; i++) {
            out[i].x = (up ? up[i].x : 0.0f) + l[i].x;
            out[i].y = (up ? up[i].y : 0.0f) + l[i].y;
        }
    }
}

int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    CHECK(w != NULL);
    tes_comp_t local = TES_COMPONENT(w, Local);
    tes_comp_t world = TES_COMPONENT(w, World);

    tes_entity_t sun = body(w, local, world, TES_NULL, "sun", 0, 0);
    tes_entity_t earth = body(w, local, world, sun, "earth", 100, 0);
    tes_entity_t moon = body(w, local, world, earth, "moon", 0, 5);
    tes_entity_t mars = body(w, local, world, sun, "mars", 0, 150);
    tes_entity_t phobos = body(w, local, world, mars, "phobos", 2, 0);
    tes_entity_t deimos = body(w, local, world, mars, "deimos", 0, -3);

    /* Links do not fragment: all six bodies share one table. */
    tes_world_stats_t stats;
    tes_world_stats(w, &stats);
    printf("%d bodies, %u tables (the root table included)\n", tes_entity_count(w), stats.tables);

    tes_entity_t planets[4];
    int32_t n = tes_children(w, sun, planets, 4);
    CHECK(n == 2 && planets[0] == earth && planets[1] == mars);
    CHECK(tes_depth(w, deimos) == 2 && tes_parent(w, moon) == earth);
    CHECK(tes_lookup_path(w, "sun/mars/phobos") == phobos);
    char path[64];
    tes_path(w, deimos, path, sizeof path);
    printf("deimos is at path %s, depth %d\n", path, (int)tes_depth(w, deimos));

    /* A sibling of the same name is refused, with a reason. */
    CHECK(tes_set_name(w, deimos, "phobos") == TES_ERR_INVALID);
    printf("refused: %s\n", tes_last_error_detail(w));
    /* So is a cycle. */
    CHECK(tes_set_parent(w, sun, moon) == TES_ERR_INVALID);

    tes_query_t *q = propagation_query(w, local, world);
    CHECK(q != NULL);
    /* The scene is built: its rows go into depth order (inside their
     * table), so each propagation walks them in place. A later link
     * change only sends the query back to its general walk. */
    CHECK(tes_sort_by_depth(w) == TES_OK);
    /* Orbits: every frame, turn each Local, then propagate. */
    for (int frame = 0; frame < 3; frame++) {
        float a = 0.1f * (float)frame;
        tes_entity_t bodies[] = {earth, moon, mars, phobos, deimos};
        for (int i = 0; i < 5; i++) {
            Local *l = tes_get_mut(w, bodies[i], local);
            float x = l->x, y = l->y;
            l->x = x * cosf(a) - y * sinf(a);
            l->y = x * sinf(a) + y * cosf(a);
        }
        propagate(q);
    }
    const World *mw = tes_get(w, moon, world);
    const World *ew = tes_get(w, earth, world);
    const Local *ml = tes_get(w, moon, local);
    CHECK(fabsf(mw->x - (ew->x + ml->x)) < 1e-4f && fabsf(mw->y - (ew->y + ml->y)) < 1e-4f);
    printf("moon at (%.2f, %.2f), earth at (%.2f, %.2f)\n", (double)mw->x, (double)mw->y,
           (double)ew->x, (double)ew->y);

    /* The moon is captured by mars: a reparent touches three links. */
    CHECK(tes_set_parent(w, moon, mars) == TES_OK);
    CHECK(tes_lookup_path(w, "sun/mars/moon") == moon);
    CHECK(tes_children(w, mars, NULL, 0) == 3);
    propagate(q); /* the same query follows the new tree */
    mw = tes_get(w, moon, world);
    const World *marsw = tes_get(w, mars, world);
    ml = tes_get(w, moon, local);
    CHECK(fabsf(mw->x - (marsw->x + ml->x)) < 1e-4f && fabsf(mw->y - (marsw->y + ml->y)) < 1e-4f);
    printf("moon now at (%.2f, %.2f), following mars\n", (double)mw->x, (double)mw->y);

    /* Destroying mars destroys its moons first. */
    CHECK(tes_destroy(w, mars) == TES_OK);
    CHECK(!tes_alive(w, phobos) && !tes_alive(w, deimos) && !tes_alive(w, moon));
    printf("after mars: %d bodies left\n", tes_entity_count(w));
    CHECK(tes_entity_count(w) == 2);

    tes_query_free(q);
    tes_world_free(w);
    return 0;
}
