/*
 * sample_storage — table storage vs sparse storage. Adding a table
 * component moves the entity to another archetype table (and may create
 * that table); adding a sparse one leaves the entity where it is, so it
 * suits markers that come and go every frame. Queries mix both kinds.
 */
#include <stdio.h>

#include "tessera.h"

typedef struct { float x, y; } Position;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "sample_storage: check failed: %s (line %d)\n", \
                    #cond, __LINE__);                                        \
            return 1;                                                        \
        }                                                                    \
    } while (0)

static uint32_t tables(const tes_world_t *w)
{
    tes_world_stats_t s;
    tes_world_stats(w, &s);
    return s.tables;
}

int main(void)
{
    enum { N = 1000 };
    tes_world_t *w = tes_world_new(NULL);
    CHECK(w != NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    /* Two tags (size 0): one in tables, one sparse. */
    tes_comp_t frozen = tes_component(w, &(tes_component_desc_t){.name = "Frozen"});
    tes_comp_t burning = tes_component(
        w, &(tes_component_desc_t){.name = "Burning", .storage = TES_STORAGE_SPARSE});
    CHECK(pos && frozen && burning);

    /* All in one table, with their positions, in one call. */
    static tes_entity_t e[N];
    static Position start[N];
    for (int i = 0; i < N; i++)
        start[i] = (Position){(float)i, 0};
    CHECK(tes_spawn_bulk(w, &(tes_bulk_desc_t){.count = N, .comps = &pos, .ncomps = 1,
                                               .data = (const void *[]){start}, .out = e}) ==
          TES_OK);
    uint32_t before = tables(w);

    /* Sparse: no new table, and the entity's Position does not move. */
    const Position *p0 = tes_get(w, e[0], pos);
    for (int i = 0; i < N; i += 2)
        CHECK(tes_add(w, e[i], burning) == TES_OK);
    CHECK(tables(w) == before);
    CHECK(tes_get(w, e[0], pos) == p0);
    printf("sparse tag on %d entities: tables %u -> %u, no entity moved\n", N / 2, before,
           tables(w));

    /* Table: a new archetype {Position, Frozen}, and every tagged entity
     * moved there (so earlier pointers to its Position are invalid). */
    for (int i = 0; i < N; i += 4)
        CHECK(tes_add(w, e[i], frozen) == TES_OK);
    CHECK(tables(w) == before + 1);
    printf("table tag on %d entities: tables %u -> %u, each moved to the new table\n", N / 4,
           before, tables(w));

    /* Queries see both kinds the same way. */
    tes_query_t *q_burning = tes_query_new(w, &(tes_query_desc_t){.terms = {{pos}, {burning}}});
    tes_query_t *q_cool =
        tes_query_new(w, &(tes_query_desc_t){.terms = {{pos}, {burning, TES_NOT}}});
    tes_query_t *q_both =
        tes_query_new(w, &(tes_query_desc_t){.terms = {{pos}, {burning}, {frozen}}});
    CHECK(q_burning && q_cool && q_both);
    CHECK(tes_query_count(q_burning) == N / 2);
    CHECK(tes_query_count(q_cool) == N / 2);
    CHECK(tes_query_count(q_both) == N / 4);

    /* Toggling the sparse tag many times never creates or moves anything. */
    for (int round = 0; round < 100; round++)
        for (int i = 1; i < N; i += 2)
            CHECK((round % 2 ? tes_remove(w, e[i], burning) : tes_add(w, e[i], burning)) == TES_OK);
    CHECK(tables(w) == before + 1);
    CHECK(tes_query_count(q_burning) == N / 2);
    int32_t seen = 0;
    tes_iter_t it = tes_query_iter(q_burning);
    while (tes_iter_next(&it))
        for (int32_t i = 0; i < it.count; i++)
            seen += tes_has(w, it.entities[i], burning) && tes_has(w, it.entities[i], pos);
    CHECK(seen == N / 2);
    printf("queries: burning %d, not burning %d, burning and frozen %d\n",
           tes_query_count(q_burning), tes_query_count(q_cool), tes_query_count(q_both));

    tes_world_free(w); /* frees the queries as well */
    printf("sample_storage: ok\n");
    return 0;
}
