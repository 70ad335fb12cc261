/*
 * churn.c — destroy a random half of N entities and spawn as many back,
 * CHURN_ROUNDS times per run.
 *
 * Each round picks its half from a precomputed shuffle (fixed seed), destroys
 * those entities, then spawns the same number and stores the new handles in
 * the freed positions. This exercises free-list reuse under a scattered
 * access pattern. Tessera: tes_destroy / tes_spawn on a world populated
 * untimed with tes_spawn_n. Baseline: a generation + free-list-link array
 * with the same LIFO reuse. Reuse order is part of the contract (most
 * recently destroyed index first), so the sequence of reused indices, which
 * is what the checksum hashes, must match. One op = one destroy + one spawn.
 */
#include "bench.h"

#define CHURN_ROUNDS 4

typedef struct {
    uint32_t n, half;
    uint32_t *pick[CHURN_ROUNDS]; /* per round: positions in h[] to churn */
} churn_plan_t;

static bool plan_init(churn_plan_t *plan, const bench_cfg_t *cfg)
{
    plan->n = bench_u32(cfg->n);
    plan->half = plan->n / 2;
    uint64_t rng = cfg->seed ^ UINT64_C(0xC4A2);
    for (int r = 0; r < CHURN_ROUNDS; r++) {
        plan->pick[r] = bench_permutation(plan->n, &rng); /* first half is used */
        if (!plan->pick[r])
            return false;
    }
    return true;
}

static void plan_fini(churn_plan_t *plan)
{
    for (int r = 0; r < CHURN_ROUNDS; r++)
        free(plan->pick[r]);
}

static inline uint64_t mix(uint64_t sum, uint32_t index)
{
    return (sum ^ index) * UINT64_C(0x100000001B3);
}

typedef struct {
    churn_plan_t plan;
    tes_world_t *w;
    tes_entity_t *h;
} tes_state_t;

static void *tes_init(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (plan_init(&s->plan, cfg))
        s->h = (tes_entity_t *)bench_alloc((size_t)s->plan.n * sizeof *s->h);
    return s;
}

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    int rc = tes_spawn_n(s->w, (int32_t)s->plan.n, NULL, 0, s->h);
    if (rc != TES_OK)
        bench_fail("tes_spawn_n: %s", tes_strerror(rc));
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    tes_entity_t *h = s->h;
    uint64_t sum = 0;
    bool bad = false;
    for (int r = 0; r < CHURN_ROUNDS; r++) {
        const uint32_t *pick = s->plan.pick[r];
        for (uint32_t i = 0; i < s->plan.half; i++)
            bad |= tes_destroy(w, h[pick[i]]) != TES_OK;
        for (uint32_t i = 0; i < s->plan.half; i++) {
            tes_entity_t e = tes_spawn(w);
            bad |= e == TES_NULL;
            h[pick[i]] = e;
            sum = mix(sum, tes_entity_index(e));
        }
    }
    if (bad)
        bench_fail("churn: a destroy or spawn failed (%s)", tes_strerror(tes_last_error(w)));
    return sum;
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && tes_entity_count(s->w) != (int32_t)s->plan.n)
        bench_fail("tes_entity_count = %d after churn, expected %u", tes_entity_count(s->w),
                   s->plan.n);
    tes_world_free(s->w);
    s->w = NULL;
}

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    plan_fini(&s->plan);
    free(s->h);
    free(s);
}

typedef struct {
    uint32_t generation;
    uint32_t next;
} base_slot_t;

typedef struct {
    churn_plan_t plan;
    base_slot_t *slots;
    uint32_t count, head;
    tes_entity_t *h;
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (plan_init(&s->plan, cfg))
        s->h = (tes_entity_t *)bench_alloc((size_t)s->plan.n * sizeof *s->h);
    return s;
}

static void base_before(void *p)
{
    base_state_t *s = (base_state_t *)p;
    s->slots = (base_slot_t *)bench_alloc((size_t)s->plan.n * sizeof *s->slots);
    if (!s->slots)
        return;
    for (uint32_t i = 0; i < s->plan.n; i++) {
        s->slots[i].generation = 1;
        s->slots[i].next = BENCH_NONE;
        s->h[i] = tes_entity_make(i, 1);
    }
    s->count = s->plan.n;
    s->head = BENCH_NONE;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_slot_t *slots = s->slots;
    tes_entity_t *h = s->h;
    uint32_t head = s->head;
    uint64_t sum = 0;
    bool bad = false;
    for (int r = 0; r < CHURN_ROUNDS; r++) {
        const uint32_t *pick = s->plan.pick[r];
        for (uint32_t i = 0; i < s->plan.half; i++) {
            tes_entity_t e = h[pick[i]];
            uint32_t index = tes_entity_index(e);
            if (index < s->count && slots[index].generation == tes_entity_generation(e)) {
                slots[index].generation++;
                slots[index].next = head;
                head = index;
            } else {
                bad = true;
            }
        }
        /* The free list holds exactly `half` slots here, so no growth. */
        for (uint32_t i = 0; i < s->plan.half; i++) {
            uint32_t index = head;
            if (index == BENCH_NONE) {
                bad = true;
                break;
            }
            head = slots[index].next;
            h[pick[i]] = tes_entity_make(index, slots[index].generation);
            sum = mix(sum, index);
        }
    }
    s->head = head;
    if (bad)
        bench_fail("baseline churn: stale handle");
    return sum;
}

static void base_after(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->slots);
    s->slots = NULL;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->slots);
    plan_fini(&s->plan);
    free(s->h);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return (int64_t)CHURN_ROUNDS * (cfg->n / 2); }

const bench_workload_t bench_churn = {
    "entity: churn 50% x4",
    "d+s",
    ops,
    true,
    {tes_init, tes_before, tes_run, tes_after, tes_fini},
    {base_init, base_before, base_run, base_after, base_fini},
};
