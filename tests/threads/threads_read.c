/*
 * Reads from many threads (the contract's "Threads" section): while no
 * thread makes a structural change, several threads may iterate queries
 * whose terms are TES_IN or TES_NOACCESS, call the read functions, and
 * write through fields of distinct entities. Built with -fsanitize=thread
 * (make tsan) this program is the race detector's workload; in every other
 * build it still checks that each thread sees exactly the world it should.
 *
 * The world mixes every walk a query can take: a table query, a table query
 * with a sparse term, a sparse-driven query (with a prefab and a disabled
 * entity present, so the default filters are active), an owning and a
 * non-owning group, a query with no AND term, and a non-owning group asked
 * for inside a hook (never iterated before the threads start: building it
 * is the world's business, never an iteration's, or the two threads' first
 * walks would both write the query). Each thread runs every
 * query many times and compares counts and sums with the values computed
 * single-threaded beforehand; each thread then writes its own Health
 * values (entities of its parity) through a TES_OUT field.
 *
 * Exit status 0 when every check passed; 1 otherwise (TSan adds its own
 * non-zero status when it reports a race).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#define ENTITIES 3000
#define THREADS 2
#define ROUNDS 60

typedef struct { float x, y; } Vec2;
typedef struct { int32_t hp; } Health;

typedef struct {
    tes_world_t *w;
    tes_comp_t pos, vel, spark, glow, health;
    tes_entity_t es[ENTITIES];
    tes_query_t *queries[7];
    int32_t expect_count[7];
    double expect_sum[7];
    tes_query_t *writer;
    tes_instance_t inst;
} fixture_t;

typedef struct {
    fixture_t *f;
    int32_t id;
    int failures;
} worker_t;

/* Sum of the first data field's x over a query (its first term must be a
 * Vec2 when it has data), and the number of entities it yields. */
static double walk(tes_query_t *q, int32_t *count)
{
    double sum = 0;
    *count = 0;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const Vec2 *v = tes_field(&it, 0);
        for (int32_t i = 0; v && i < it.count; i++)
            sum += v[i].x;
        *count += it.count;
    }
    return sum;
}

static void *reader(void *arg)
{
    worker_t *wk = arg;
    fixture_t *f = wk->f;
    const tes_world_t *w = f->w;
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < 7; k++) {
            int32_t count;
            double sum = walk(f->queries[k], &count);
            if (count != f->expect_count[k] || sum != f->expect_sum[k] ||
                tes_query_count(f->queries[k]) != f->expect_count[k])
                wk->failures++;
        }
        for (int32_t i = 0; i < ENTITIES; i += 7) {
            tes_entity_t e = f->es[i];
            const Vec2 *p = tes_get(w, e, f->pos);
            if (!tes_alive(w, e) || !p || p->x != (float)i || tes_has(w, e, f->spark) != (i % 3 == 0) ||
                tes_enabled(w, e) != (i != 5))
                wk->failures++;
            tes_comp_t comps[8];
            if (tes_components_of(w, e, comps, 8) < 1 || tes_instance_of(w, e) != 0)
                wk->failures++;
        }
    }
    /* Writes through fields of distinct entities: this thread's parity. */
    tes_iter_t it = tes_query_iter(f->writer);
    while (tes_iter_next(&it)) {
        Health *h = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++)
            if ((int32_t)(tes_entity_index(it.entities[i]) % THREADS) == wk->id)
                h[i].hp = 100 + wk->id;
    }
    return NULL;
}

static tes_comp_t reg(tes_world_t *w, const char *name, size_t size, tes_storage_t storage)
{
    tes_component_desc_t d = {.name = name, .size = size, .storage = storage};
    return tes_component(w, &d);
}

/* The hook that asks for the seventh query. */
static tes_query_desc_t hook_desc;
static tes_query_t *hook_query;

static void make_query(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)e, (void)ptr, (void)ctx;
    if (!hook_query)
        hook_query = tes_query_new(w, &hook_desc);
}

static int build(fixture_t *f)
{
    tes_world_t *w = f->w = tes_world_new(NULL);
    if (!w)
        return 1;
    f->pos = reg(w, "Pos", sizeof(Vec2), TES_STORAGE_TABLE);
    f->vel = reg(w, "Vel", sizeof(Vec2), TES_STORAGE_SPARSE);
    f->spark = reg(w, "Spark", sizeof(Vec2), TES_STORAGE_SPARSE);
    f->glow = reg(w, "Glow", sizeof(Vec2), TES_STORAGE_SPARSE);
    f->health = reg(w, "Health", sizeof(Health), TES_STORAGE_TABLE);
    for (int32_t i = 0; i < ENTITIES; i++) {
        tes_entity_t e = f->es[i] = tes_spawn(w);
        Vec2 v = {(float)i, 1};
        int rc = tes_set(w, e, f->pos, &v) | tes_add(w, e, f->health);
        if (i % 2 == 0)
            rc |= tes_set(w, e, f->vel, &v);
        if (i % 3 == 0)
            rc |= tes_set(w, e, f->spark, &v);
        if (i % 5 == 0)
            rc |= tes_set(w, e, f->glow, &v);
        if (rc)
            return 1;
    }
    if (tes_disable(w, f->es[5]))
        return 1;
    tes_entity_t prefab = tes_prefab_new(w);
    if (!prefab || tes_set(w, prefab, f->vel, &(Vec2){9, 9}) || tes_set(w, prefab, f->spark, &(Vec2){9, 9}))
        return 1;
    tes_query_desc_t d[6] = {
        {.terms = {{f->pos, TES_AND, TES_IN}}},
        {.terms = {{f->pos, TES_AND, TES_IN}, {f->vel, TES_AND, TES_IN}}},
        {.terms = {{f->vel, TES_AND, TES_IN}, {f->spark, TES_AND, TES_IN}}},
        {.terms = {{f->spark, TES_AND, TES_IN}, {f->glow, TES_AND, TES_IN}},
         .flags = TES_QUERY_OWNING_GROUP},
        {.terms = {{f->vel, TES_AND, TES_IN}, {f->glow, TES_AND, TES_NOACCESS}},
         .flags = TES_QUERY_NONOWNING_GROUP},
        {.terms = {{f->glow, TES_NOT, TES_IN}}},
    };
    for (int k = 0; k < 6; k++) {
        if (!(f->queries[k] = tes_query_new(w, &d[k])))
            return 1;
        f->expect_sum[k] = walk(f->queries[k], &f->expect_count[k]);
    }
    /* The seventh: its figures come from the same query without a group. */
    hook_desc = (tes_query_desc_t){.terms = {{f->vel, TES_AND, TES_IN}, {f->spark, TES_AND, TES_IN}}};
    tes_query_t *plain = tes_query_new(w, &hook_desc);
    if (!plain)
        return 1;
    f->expect_sum[6] = walk(plain, &f->expect_count[6]);
    tes_query_free(plain);
    hook_desc.flags = TES_QUERY_NONOWNING_GROUP;
    tes_component_desc_t td = {.name = "Trigger", .hooks = {.on_add = make_query}};
    tes_comp_t trigger = tes_component(w, &td);
    if (!trigger || tes_add(w, f->es[1], trigger) || !(f->queries[6] = hook_query))
        return 1;
    tes_query_desc_t wd = {.terms = {{f->pos, TES_AND, TES_IN}, {f->health, TES_AND, TES_OUT}}};
    f->writer = tes_query_new(w, &wd);
    return f->writer ? 0 : 1;
}

int main(void)
{
    static fixture_t f;
    if (build(&f)) {
        fprintf(stderr, "threads_read: building the world failed\n");
        return 1;
    }
    /* The single-threaded figures the readers must reproduce. */
    if (f.expect_count[0] != ENTITIES - 1 || f.expect_count[2] != ENTITIES / 6) {
        fprintf(stderr, "threads_read: unexpected single-threaded counts %d %d\n",
                (int)f.expect_count[0], (int)f.expect_count[2]);
        return 1;
    }
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    for (int32_t t = 0; t < THREADS; t++) {
        workers[t] = (worker_t){&f, t, 0};
        if (pthread_create(&threads[t], NULL, reader, &workers[t]))
            return 1;
    }
    int failures = 0;
    for (int32_t t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        failures += workers[t].failures;
    }
    for (int32_t i = 0; i < ENTITIES; i++) {
        const Health *h = tes_get(f.w, f.es[i], f.health);
        if (i != 5 && (!h || h->hp != 100 + i % THREADS))
            failures++;
    }
    if (tes_is_deferred(f.w))
        failures++;
    /* Structural changes work again once the readers are done. */
    if (tes_destroy(f.w, f.es[0]) || tes_query_count(f.queries[0]) != ENTITIES - 2)
        failures++;
    tes_world_free(f.w);
    if (failures) {
        fprintf(stderr, "threads_read: %d check(s) failed\n", failures);
        return 1;
    }
    printf("threads_read: %d threads x %d rounds, all checks passed\n", THREADS, ROUNDS);
    return 0;
}
