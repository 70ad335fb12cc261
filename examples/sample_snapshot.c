/*
 * sample_snapshot — save a running world to a file, load it into a fresh
 * world, and prove the two are the same world: the state hash (every
 * entity's handle, components and values, instances) matches right after
 * the load, and keeps matching while both run the same simulation on,
 * spawning, destroying and instantiating. That only holds because a load
 * restores every handle, the free list and the retired slots exactly: the
 * loaded world issues the handles the saved one would have issued.
 *
 * Usage: sample_snapshot [FILE]   (default: a file in the temp directory)
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

typedef struct { float x, y; } Pos;
typedef struct { float x, y; } Vel;
typedef struct { tes_entity_t target; int32_t damage; int32_t pad; } Aim;
typedef struct { int32_t hp; } Hull;

typedef struct ids {
    tes_comp_t pos, vel, aim, hull;
} ids_t;

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "sample_snapshot: check failed: %s (line %d)\n", \
                    #cond, __LINE__);                                         \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Registration order differs between the two worlds on purpose: snapshots
 * match components by name. */
static tes_world_t *make_world(ids_t *c, bool reversed)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.generation_limit = 5});
    CHECK(w != NULL);
    if (reversed) {
        c->hull = TES_COMPONENT(w, Hull, .storage = TES_STORAGE_SPARSE);
        c->aim = TES_COMPONENT(w, Aim, .entity_fields = {offsetof(Aim, target)}, .entity_field_count = 1);
        c->vel = TES_COMPONENT(w, Vel);
        c->pos = TES_COMPONENT(w, Pos);
    } else {
        c->pos = TES_COMPONENT(w, Pos);
        c->vel = TES_COMPONENT(w, Vel);
        c->aim = TES_COMPONENT(w, Aim, .entity_fields = {offsetof(Aim, target)}, .entity_field_count = 1);
        c->hull = TES_COMPONENT(w, Hull, .storage = TES_STORAGE_SPARSE);
    }
    CHECK(c->pos && c->vel && c->aim && c->hull);
    return w;
}

static uint64_t mix(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001B3);
    return h;
}

/* Order-independent hash of every entity (disabled and prefab ones too):
 * handle, enabled state, each component's value, its instance. */
static uint64_t state_hash(tes_world_t *w, const ids_t *c)
{
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){
        .terms = {{c->pos, TES_OPTIONAL, TES_IN}},
        .flags = TES_QUERY_INCLUDE_DISABLED | TES_QUERY_INCLUDE_PREFAB});
    CHECK(q != NULL);
    uint64_t sum = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        for (int32_t i = 0; i < it.count; i++) {
            tes_entity_t e = it.entities[i];
            uint64_t h = mix(UINT64_C(0xCBF29CE484222325), &e, sizeof e);
            bool enabled = tes_enabled(w, e);
            h = mix(h, &enabled, sizeof enabled);
            const void *v;
            if ((v = tes_get(w, e, c->pos)) != NULL) h = mix(h, v, sizeof(Pos));
            if ((v = tes_get(w, e, c->vel)) != NULL) h = mix(h, v, sizeof(Vel));
            if ((v = tes_get(w, e, c->aim)) != NULL) h = mix(h, v, sizeof(Aim));
            if ((v = tes_get(w, e, c->hull)) != NULL) h = mix(h, v, sizeof(Hull));
            tes_instance_t inst = tes_instance_of(w, e);
            h = mix(h, &inst, sizeof inst);
            sum += h;
        }
    }
    tes_query_free(q);
    tes_world_stats_t st;
    tes_world_stats(w, &st);
    return mix(sum, &st.entity_slots, sizeof st.entity_slots) ^ st.entities_retired;
}

/* One frame: move, damage, destroy the dead, spawn and instantiate more. */
static void frame(tes_world_t *w, const ids_t *c, tes_entity_t prefab, uint32_t *rng)
{
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{c->pos}, {c->vel, TES_AND, TES_IN}}});
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        Pos *p = tes_field(&it, 0);
        const Vel *v = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            p[i].x += v[i].x;
            p[i].y += v[i].y;
            Hull *h = tes_get_mut(w, it.entities[i], c->hull);
            if (h && (h->hp -= 7) <= 0)
                tes_destroy(w, it.entities[i]); /* deferred until the loop ends */
        }
    }
    tes_query_free(q);
    for (int k = 0; k < 3; k++) {
        *rng = *rng * 1103515245u + 12345u;
        tes_entity_t e = tes_spawn(w);
        tes_set(w, e, c->pos, &(Pos){(float)(*rng % 100), 0});
        tes_set(w, e, c->vel, &(Vel){1, (float)(*rng % 7)});
        tes_set(w, e, c->hull, &(Hull){(int32_t)(*rng % 40)});
        if (*rng % 5 == 0)
            tes_disable(w, e);
    }
    if (*rng % 3 == 0)
        tes_instantiate(w, prefab, NULL, 0);
}

int main(int argc, char **argv)
{
    char path[512];
    if (argc > 1)
        snprintf(path, sizeof path, "%s", argv[1]);
    else
        snprintf(path, sizeof path, "%s/tessera_sample_snapshot.bin",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");

    ids_t a;
    tes_world_t *w = make_world(&a, false);
    /* A prefab: a ship and a turret aiming at it. */
    tes_entity_t prefab = tes_prefab_new(w);
    tes_entity_t turret = tes_prefab_child(w, prefab);
    tes_set(w, prefab, a.pos, &(Pos){0, 0});
    tes_set(w, prefab, a.vel, &(Vel){0.5f, 0});
    tes_set(w, prefab, a.hull, &(Hull){100});
    tes_set(w, turret, a.aim, &(Aim){prefab, 3, 0});
    uint32_t rng = 1;
    for (int f = 0; f < 50; f++)
        frame(w, &a, prefab, &rng);

    uint64_t before = state_hash(w, &a);
    CHECK(tes_snapshot_save_file(w, path) == TES_OK);

    ids_t b;
    tes_world_t *loaded = make_world(&b, true);
    CHECK(tes_snapshot_load_file(loaded, path) == TES_OK);
    uint64_t after = state_hash(loaded, &b);
    printf("saved %d entities to %s\n", tes_entity_count(w), path);
    printf("state hash before save %016llx, after load %016llx: %s\n", (unsigned long long)before,
           (unsigned long long)after, before == after ? "equal" : "DIFFERENT");
    CHECK(before == after);

    /* Both run on: same handles issued, same deaths, same instances. */
    uint32_t rng_a = rng, rng_b = rng;
    for (int f = 0; f < 50; f++) {
        frame(w, &a, prefab, &rng_a);
        frame(loaded, &b, prefab, &rng_b);
        CHECK(state_hash(w, &a) == state_hash(loaded, &b));
    }
    printf("50 more frames on both worlds: hashes still equal (%016llx)\n",
           (unsigned long long)state_hash(loaded, &b));
    remove(path);
    tes_world_free(w);
    tes_world_free(loaded);
    return 0;
}
