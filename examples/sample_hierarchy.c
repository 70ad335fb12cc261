/*
 * sample_hierarchy — a small solar system as a scene tree: the sun, its
 * planets, their moons. Each body has a Local offset from its parent; the
 * World position is the parent's World plus Local. The tree lives in
 * links (tes_set_parent), not in components, so the bodies all share one
 * table and iteration over them is as dense as without a tree.
 *
 * Shows: linking and child order, depth, names and paths, propagation by
 * depth (the parents of one depth are final before their children are
 * computed), reparenting a moon, and a cascading destroy of a planet.
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

/* World = parent's World + Local, one depth after the other: a
 * breadth-first walk from the root, so every parent is done before its
 * children. */
static void propagate(tes_world_t *w, tes_comp_t local, tes_comp_t world, tes_entity_t root)
{
    tes_entity_t queue[64];
    int head = 0, tail = 0;
    queue[tail++] = root;
    *(World *)tes_get_mut(w, root, world) = *(const World *)(const void *)tes_get(w, root, local);
    while (head < tail) {
        tes_entity_t p = queue[head++];
        const World *pw = tes_get(w, p, world);
        tes_entity_t kids[16];
        int32_t n = tes_children(w, p, kids, 16);
        for (int32_t i = 0; i < n && i < 16 && tail < 64; i++) {
            const Local *l = tes_get(w, kids[i], local);
            World *cw = tes_get_mut(w, kids[i], world);
            cw->x = pw->x + l->x;
            cw->y = pw->y + l->y;
            queue[tail++] = kids[i];
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
        propagate(w, local, world, sun);
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

    /* Destroying mars destroys its moons first. */
    CHECK(tes_destroy(w, mars) == TES_OK);
    CHECK(!tes_alive(w, phobos) && !tes_alive(w, deimos) && !tes_alive(w, moon));
    printf("after mars: %d bodies left\n", tes_entity_count(w));
    CHECK(tes_entity_count(w) == 2);

    tes_world_free(w);
    return 0;
}
