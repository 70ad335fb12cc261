/*
 * sample_systems — systems on worker threads: three systems over 100,000
 * entities, run by tes_progress on 4 threads. `move` and `age` touch
 * different components, so they run at the same time; `reap` is structural
 * (it destroys old entities), so it runs alone, after both, and its changes
 * land when it ends. The result is the same for any thread count: the
 * program checks it against a world run on one thread. An argument sets
 * the entity count (default 100,000).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tessera.h"

typedef struct { float x, y; } Position;
typedef struct { float x, y; } Velocity;
typedef struct { int32_t ticks; } Age;

static void move(tes_iter_t *it) /* parallel: writes only its own rows */
{
    Position *p = tes_field(it, 0);
    const Velocity *v = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        p[i].x += v[i].x * it->delta_time;
        p[i].y += v[i].y * it->delta_time;
    }
}

static void age(tes_iter_t *it)
{
    Age *a = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        a[i].ticks++;
}

static void reap(tes_iter_t *it) /* structural: destroys are queued */
{
    const Age *a = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        if (a[i].ticks > 5 + (int32_t)(it->entities[i] % 7))
            tes_destroy(it->world, it->entities[i]);
}

static double run(int32_t threads, int32_t n)
{
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = threads});
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    tes_comp_t ag = TES_COMPONENT(w, Age);
    Position *ps = malloc((size_t)n * sizeof *ps);
    Velocity *vs = malloc((size_t)n * sizeof *vs);
    Age *as = malloc((size_t)n * sizeof *as);
    for (int i = 0; ps && vs && as && i < n; i++) {
        ps[i] = (Position){(float)i, 0};
        vs[i] = (Velocity){1, (float)(i % 3)};
        as[i] = (Age){i % 4};
    }
    /* All of them at once, straight into their table, values column by column. */
    tes_comp_t comps[] = {pos, vel, ag};
    const void *data[] = {ps, vs, as};
    int rc = ps && vs && as ? tes_spawn_bulk(w, &(tes_bulk_desc_t){n, comps, 3, data, NULL}) : -1;
    free(ps), free(vs), free(as);
    if (rc != TES_OK)
        return -1;
    tes_system_new(w, &(tes_system_desc_t){
                          .name = "move", .run = move, .parallel = true,
                          .query = {.terms = {{pos, TES_AND, TES_INOUT}, {vel, TES_AND, TES_IN}}}});
    tes_system_new(w, &(tes_system_desc_t){.name = "age", .run = age, .parallel = true,
                                           .query = {.terms = {{ag}}}});
    tes_system_new(w, &(tes_system_desc_t){.name = "reap", .run = reap, .structural = true,
                                           .query = {.terms = {{ag, TES_AND, TES_IN}}}});
    for (int frame = 0; frame < 10; frame++)
        if (tes_progress(w, 0.5f) != TES_OK)
            return -1;
    /* A checksum of what is left. */
    double sum = tes_entity_count(w);
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{pos, TES_AND, TES_IN}}});
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const Position *p = tes_field(&it, 0);
        for (int32_t i = 0; i < it.count; i++)
            sum += p[i].x + p[i].y;
    }
    tes_world_free(w); /* joins the workers, frees the systems */
    return sum;
}

int main(int argc, char **argv)
{
    int32_t n = argc > 1 && atoi(argv[1]) > 0 ? (int32_t)atoi(argv[1]) : 100000;
    double one = run(1, n), four = run(4, n);
    printf("sample_systems: checksum %.1f on 1 thread, %.1f on 4 threads\n", one, four);
    if (one < 0 || one != four) {
        fprintf(stderr, "sample_systems: results differ\n");
        return 1;
    }
    return 0;
}
