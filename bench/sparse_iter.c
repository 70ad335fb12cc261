/*
 * sparse_iter.c — two-component iteration over sparse storage only, driven
 * by the smaller pool.
 *
 * N entities have SparseA (12 bytes); a random 10% (fixed seed, added in
 * random order) also have SparseB (12 bytes). A pass walks B's packed array
 * page run by page run (B's data is contiguous within a data page, which is
 * what a query chunk over a sparse driver sees), looks each entity up in A
 * (branch-free contains + page index: tes__sparse_store_get) and sums the
 * bits of A.x and B.x. ITER_REPS passes per run; one op = one B entity.
 *
 * This measures the storage layer alone (the public query path is measured
 * by the W4/W8 "sparse view" workloads), so it reads the stores through the
 * internal headers: storage/sparse_store.h for the store itself and
 * world/world.h + the registry only to find a component's store
 * (store_of() below is the single place that depends on the world layout).
 * Baseline: plain arrays: B as packed entity-index + data arrays in the same
 * order, A as an entity-index -> packed-position array (BENCH_NONE = absent,
 * the has-flag) plus a packed data array.
 */
#include "bench.h"

#include "storage/sparse_store.h"
#include "world/world.h"

#define ITER_REPS 10

static const tes__sparse_store_t *store_of(const tes_world_t *w, tes_comp_t c)
{
    const tes__component_t *info = tes__registry_get(&w->components, c);
    return info && info->storage == TES_STORAGE_SPARSE ? &info->store : NULL;
}

/* The entity indices that get B, in insertion order (random). */
static uint32_t *pick_b(const bench_cfg_t *cfg, uint32_t *nb)
{
    uint32_t n = bench_u32(cfg->n);
    uint64_t rng = cfg->seed ^ UINT64_C(0x17E8);
    uint32_t *perm = bench_permutation(n, &rng);
    *nb = n / 10 ? n / 10 : 1;
    return perm; /* the first *nb entries are used */
}

typedef struct {
    tes_world_t *w;
    const tes__sparse_store_t *a, *b;
    uint32_t nb;
} tes_state_t;

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    free(s);
}

static void *tes_init(const bench_cfg_t *cfg)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    uint32_t n = bench_u32(cfg->n);
    tes_entity_t *h = (tes_entity_t *)bench_alloc((size_t)n * sizeof *h);
    uint32_t *pick = pick_b(cfg, &s->nb);
    s->w = bench_world_new();
    if (!h || !pick || !s->w)
        goto done;
    tes_comp_t ca = bench_register(s->w, "SparseA", sizeof(Position), TES_STORAGE_SPARSE);
    tes_comp_t cb = bench_register(s->w, "SparseB", sizeof(Position), TES_STORAGE_SPARSE);
    if (bench_failed())
        goto done;
    int rc = tes_spawn_n(s->w, (int32_t)n, &ca, 1, h);
    if (rc != TES_OK) {
        bench_fail("tes_spawn_n (sparse): %s", tes_strerror(rc));
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        Position *pa = (Position *)tes_get_mut(s->w, h[i], ca);
        if (!pa) {
            bench_fail("tes_get_mut(SparseA) returned NULL");
            goto done;
        }
        *pa = bench_position(tes_entity_index(h[i]));
    }
    for (uint32_t i = 0; i < s->nb; i++) {
        tes_entity_t e = h[pick[i]];
        Position pb = bench_position(tes_entity_index(e) * 7u);
        if (tes_set(s->w, e, cb, &pb) != TES_OK) {
            bench_fail("tes_set(SparseB): %s", tes_strerror(tes_last_error(s->w)));
            goto done;
        }
    }
    s->a = store_of(s->w, ca);
    s->b = store_of(s->w, cb);
    if (!s->a || !s->b || s->b->set.live != s->nb || s->b->set.count != s->nb ||
        s->a->set.live != n)
        bench_fail("sparse stores not as expected (B: %u live, %u slots)",
                   s->b ? s->b->set.live : 0, s->b ? s->b->set.count : 0);
done:
    free(h);
    free(pick);
    return s;
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    const tes__sparse_store_t *a = s->a, *b = s->b;
    const uint32_t per_page = UINT32_C(1) << b->page_shift;
    uint64_t sum = 0, missing = 0;
    for (int r = 0; r < ITER_REPS; r++) {
        for (uint32_t start = 0; start < b->set.count; start += per_page) {
            uint32_t end = b->set.count - start < per_page ? b->set.count : start + per_page;
            const tes_entity_t *ents = b->set.packed + start;
            const Position *bd = (const Position *)tes__sparse_store_at(b, start);
            for (uint32_t k = 0; k < end - start; k++) {
                tes_entity_t e = ents[k];
                const Position *ad = (const Position *)tes__sparse_store_get(a, e);
                if (ad)
                    sum += bench_bits_of(ad->x) + bench_bits_of(bd[k].x);
                else
                    missing++;
            }
        }
    }
    if (missing)
        bench_fail("%llu B members missing from A", (unsigned long long)missing);
    return sum;
}

typedef struct {
    uint32_t n, nb;
    uint32_t *a_where;   /* entity index -> A position, BENCH_NONE = absent */
    Position *a_data;
    uint32_t *b_entity;  /* B's packed entity indices */
    Position *b_data;
} base_state_t;

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    free(s->a_where);
    free(s->a_data);
    free(s->b_entity);
    free(s->b_data);
    free(s);
}

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    uint32_t *pick = pick_b(cfg, &s->nb);
    s->a_where = (uint32_t *)bench_alloc((size_t)s->n * sizeof *s->a_where);
    s->a_data = (Position *)bench_alloc((size_t)s->n * sizeof *s->a_data);
    s->b_entity = (uint32_t *)bench_alloc((size_t)s->nb * sizeof *s->b_entity);
    s->b_data = (Position *)bench_alloc((size_t)s->nb * sizeof *s->b_data);
    if (!bench_failed()) {
        for (uint32_t i = 0; i < s->n; i++) {
            s->a_where[i] = i;
            s->a_data[i] = bench_position(i);
        }
        for (uint32_t i = 0; i < s->nb; i++) {
            s->b_entity[i] = pick[i];
            s->b_data[i] = bench_position(pick[i] * 7u);
        }
    }
    free(pick);
    return s;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const uint32_t *a_where = s->a_where, *b_entity = s->b_entity;
    const Position *a_data = s->a_data, *b_data = s->b_data;
    uint32_t n = s->n, nb = s->nb;
    uint64_t sum = 0, missing = 0;
    for (int r = 0; r < ITER_REPS; r++) {
        for (uint32_t k = 0; k < nb; k++) {
            uint32_t index = b_entity[k], pos;
            if (index < n && (pos = a_where[index]) != BENCH_NONE)
                sum += bench_bits_of(a_data[pos].x) + bench_bits_of(b_data[k].x);
            else
                missing++;
        }
    }
    if (missing)
        bench_fail("baseline: B members missing from A");
    return sum;
}

static int64_t ops(const bench_cfg_t *cfg)
{
    int64_t nb = cfg->n / 10 ? cfg->n / 10 : 1;
    return (int64_t)ITER_REPS * nb;
}

const bench_workload_t bench_sparse_iter = {
    "sparse: iter B(10%) x contains A",
    "B ent",
    ops,
    true,
    {tes_init, NULL, tes_run, NULL, tes_fini},
    {base_init, NULL, base_run, NULL, base_fini},
};
