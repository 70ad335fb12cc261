/*
 * sample_prefab — the life of a prefab instance in a strict_lifecycle
 * world: build a prefab whose members refer to each other (entity_fields),
 * instantiate it (references remapped to the new entities), see a member
 * destroy refused, detach one, destroy the instance, then do it in bulk.
 */
#include <stddef.h>
#include <stdio.h>

#include "tessera.h"

typedef struct { tes_entity_t left, right; } Ship; /* root -> its turrets */
typedef struct { tes_entity_t ship, target; } Gun; /* turret -> root, and an outside target */

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "sample_prefab: check failed: %s (line %d)\n", \
                    #cond, __LINE__);                                       \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(void)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.strict_lifecycle = true});
    CHECK(w != NULL);
    tes_comp_t ship = TES_COMPONENT(w, Ship, .entity_fields = {offsetof(Ship, left), offsetof(Ship, right)},
                                    .entity_field_count = 2);
    tes_comp_t gun = TES_COMPONENT(w, Gun, .entity_fields = {offsetof(Gun, ship), offsetof(Gun, target)},
                                   .entity_field_count = 2);
    CHECK(ship && gun);

    /* The prefab: a root and two turrets that point at each other. */
    tes_entity_t rock = tes_spawn(w); /* not a member: references to it are kept */
    tes_entity_t root = tes_prefab_new(w);
    tes_entity_t l = tes_prefab_child(w, root), r = tes_prefab_child(w, root);
    CHECK(root && l && r);
    CHECK(tes_set(w, root, ship, &(Ship){l, r}) == TES_OK);
    CHECK(tes_set(w, l, gun, &(Gun){root, rock}) == TES_OK);
    CHECK(tes_set(w, r, gun, &(Gun){root, rock}) == TES_OK);
    CHECK(tes_prefab_members(w, root, NULL, 0) == 3);

    /* One instance: out[0] copies the root, then the members in order. */
    tes_entity_t out[3];
    tes_instance_t inst = tes_instantiate(w, root, out, 3);
    CHECK(inst != 0 && tes_instance_of(w, out[1]) == inst);
    const Ship *s = tes_get(w, out[0], ship);
    const Gun *g = tes_get(w, out[1], gun);
    CHECK(s && s->left == out[1] && s->right == out[2]);
    CHECK(g && g->ship == out[0] && g->target == rock);
    CHECK(!tes_has(w, out[0], TES_PREFAB)); /* copies are ordinary entities */
    printf("instance: ship %u -> turrets %u, %u; turret %u -> ship %u, target %u (kept)\n",
           tes_entity_index(out[0]), tes_entity_index(s->left), tes_entity_index(s->right),
           tes_entity_index(out[1]), tes_entity_index(g->ship), tes_entity_index(g->target));

    /* Strict lifecycle: a member cannot be destroyed on its own... */
    CHECK(tes_destroy(w, out[1]) == TES_ERR_OWNED);
    printf("tes_destroy(member): %s\n", tes_strerror(TES_ERR_OWNED));
    /* ...unless it leaves the instance first. */
    CHECK(tes_instance_detach(w, out[2]) == TES_OK);
    CHECK(tes_destroy(w, out[2]) == TES_OK);
    CHECK(tes_instance_members(w, inst, NULL, 0) == 2);

    /* Destroying the instance takes every remaining member with it. */
    CHECK(tes_instance_destroy(w, inst) == TES_OK);
    CHECK(!tes_alive(w, out[0]) && !tes_alive(w, out[1]) && !tes_instance_alive(w, inst));
    CHECK(tes_instance_destroy(w, inst) == TES_ERR_STALE);

    /* In bulk: 1000 instances in one call; queries skip the prefab itself. */
    enum { N = 1000 };
    static tes_instance_t many[N];
    int32_t before = tes_entity_count(w);
    CHECK(tes_instantiate_n(w, root, N, many) == TES_OK);
    CHECK(tes_entity_count(w) == before + 3 * N);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{gun}}});
    CHECK(q && tes_query_count(q) == 2 * N);
    tes_entity_t m[3];
    CHECK(tes_instance_members(w, many[N - 1], m, 3) == 3);
    CHECK(((const Gun *)tes_get(w, m[2], gun))->ship == m[0]);
    for (int i = 0; i < N; i += 2)
        CHECK(tes_instance_destroy(w, many[i]) == TES_OK);
    CHECK(tes_query_count(q) == N && tes_entity_count(w) == before + 3 * N / 2);
    tes_world_stats_t st;
    tes_world_stats(w, &st);
    CHECK(st.instances_alive == N / 2);
    printf("bulk: %d instances made, %d destroyed, %u alive, %d turrets\n", N, N / 2,
           st.instances_alive, tes_query_count(q));

    tes_world_free(w);
    printf("sample_prefab: ok\n");
    return 0;
}
