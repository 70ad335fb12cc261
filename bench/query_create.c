/*
 * query_create.c — query costs that grow with the number of tables.
 *
 * The world: 14 tags T0..T13 plus table components Position, Velocity and
 * Health. One entity per tag subset mask 1..QC_TABLES (10,000 distinct
 * subsets), so 10,000 distinct tables; the QC_HITS entities whose mask is a
 * multiple of QC_TABLES / QC_HITS also carry Position and Velocity, so
 * exactly QC_HITS tables hold both (the count of distinct tables does not
 * change: each mask is still used once). Nobody has Health.
 *
 * Two workloads share that world (built once per workload, untimed):
 * - query: new+free — tes_query_new {Position, Velocity} (it scans every
 *   table once and matches QC_HITS of them), tes_query_count (a few table
 *   counts, to check the match), tes_query_free; QC_CREATES per run; ns per
 *   creation (divide by 1000 for us). Baseline: the same scan over a plain
 *   array of per-table component bitmasks into a malloc'd match list, sum
 *   of the matched tables' entity counts, free.
 * - query: iter no match — a query {Health} (created once) that matches no
 *   table, iterated QC_ITERS times: tes_query_iter + the tes_iter_next loop;
 *   ns per full iteration. Baseline: a loop over an empty plain match list
 *   whose length is re-read (volatile) on every iteration.
 * Checksums: matched entities summed over all creations / iterations, plus
 * the number of creations / iterations.
 */
#include "bench.h"

#define QC_TAGS 14
#define QC_TABLES 10000u
#define QC_HITS 4u
#define QC_CREATES 200
#define QC_ITERS 1000000

/* Bits 0..13 tags, then: */
#define QC_POS (1u << 14)
#define QC_VEL (1u << 15)
#define QC_HEALTH (1u << 16)

/* The component mask of entity k (0-based): its tag subset, plus Position
 * and Velocity for the QC_HITS chosen ones. */
static uint32_t entity_mask(uint32_t k)
{
    uint32_t mask = k + 1u;
    if (mask % (QC_TABLES / QC_HITS) == 0)
        mask |= QC_POS | QC_VEL;
    return mask;
}

typedef struct {
    tes_world_t *w;
    tes_comp_t pos, vel, health;
    tes_query_t *empty; /* {Health} */
} tes_state_t;

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_query_free(s->empty);
    tes_world_free(s->w);
    free(s);
}

static tes_query_t *make_query(tes_world_t *w, const tes_comp_t *comps, int n)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < n; i++)
        d.terms[i].comp = comps[i];
    return tes_query_new(w, &d);
}

static void *tes_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (!(s->w = bench_world_new()))
        return s;
    tes_comp_t tags[QC_TAGS];
    for (int t = 0; t < QC_TAGS; t++) {
        char name[8];
        snprintf(name, sizeof name, "T%d", t);
        tags[t] = bench_register(s->w, name, 0, TES_STORAGE_TABLE);
    }
    s->pos = bench_register(s->w, "Position", sizeof(Position), TES_STORAGE_TABLE);
    s->vel = bench_register(s->w, "Velocity", sizeof(Velocity), TES_STORAGE_TABLE);
    s->health = bench_register(s->w, "Health", sizeof(Health), TES_STORAGE_TABLE);
    for (uint32_t k = 0; k < QC_TABLES && !bench_failed(); k++) {
        uint32_t mask = entity_mask(k);
        tes_comp_t comps[QC_TAGS + 2];
        int32_t n = 0;
        for (int t = 0; t < QC_TAGS; t++)
            if (mask & (1u << t))
                comps[n++] = tags[t];
        if (mask & QC_POS)
            comps[n++] = s->pos;
        if (mask & QC_VEL)
            comps[n++] = s->vel;
        tes_entity_t e;
        int rc = tes_spawn_n(s->w, 1, comps, n, &e);
        if (rc != TES_OK)
            bench_fail("tes_spawn_n: %s", tes_strerror(rc));
    }
    if (bench_failed())
        return s;
    tes_world_stats_t st;
    tes_world_stats(s->w, &st);
    if (st.tables < QC_TABLES)
        bench_fail("only %u tables", st.tables);
    s->empty = make_query(s->w, &s->health, 1);
    if (!s->empty)
        bench_fail("tes_query_new: %s", tes_strerror(tes_last_error(s->w)));
    return s;
}

static uint64_t tes_create_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    const tes_comp_t terms[2] = {s->pos, s->vel};
    uint64_t sum = 0;
    for (int i = 0; i < QC_CREATES; i++) {
        tes_query_t *q = make_query(s->w, terms, 2);
        if (!q) {
            bench_fail("tes_query_new: %s", tes_strerror(tes_last_error(s->w)));
            break;
        }
        sum += (uint64_t)tes_query_count(q) + 1u;
        tes_query_free(q);
    }
    return sum;
}

static uint64_t tes_iter_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    uint64_t sum = 0;
    for (int i = 0; i < QC_ITERS; i++) {
        tes_iter_t it = tes_query_iter(s->empty);
        while (tes_iter_next(&it))
            sum += (uint64_t)it.count;
        sum++;
    }
    return sum;
}

/* Baseline: the table list as plain arrays. */
typedef struct {
    uint32_t mask[QC_TABLES];
    uint32_t count[QC_TABLES]; /* entities per table */
    uint32_t empty_len;        /* the {Health} match list: always empty */
    uint32_t empty_list[1];
} base_state_t;

static void base_fini(void *p) { free(p); }

static void *base_init(const bench_cfg_t *cfg)
{
    (void)cfg;
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    for (uint32_t k = 0; k < QC_TABLES; k++) {
        s->mask[k] = entity_mask(k);
        s->count[k] = 1;
        if (s->mask[k] & QC_HEALTH)
            s->empty_list[s->empty_len++] = k;
    }
    return s;
}

static uint64_t base_create_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const uint32_t want = QC_POS | QC_VEL;
    uint64_t sum = 0;
    for (int i = 0; i < QC_CREATES; i++) {
        uint32_t *match = (uint32_t *)bench_alloc(QC_TABLES * sizeof *match);
        if (!match)
            break;
        uint32_t n = 0;
        for (uint32_t t = 0; t < QC_TABLES; t++)
            if ((s->mask[t] & want) == want)
                match[n++] = t;
        for (uint32_t j = 0; j < n; j++)
            sum += s->count[match[j]];
        sum++;
        free(match);
    }
    return sum;
}

static uint64_t base_iter_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    const volatile uint32_t *len = &s->empty_len;
    uint64_t sum = 0;
    for (int i = 0; i < QC_ITERS; i++) {
        uint32_t n = *len;
        for (uint32_t j = 0; j < n; j++)
            sum += s->count[s->empty_list[j]];
        sum++;
    }
    return sum;
}

static int64_t create_ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return QC_CREATES;
}

static int64_t iter_ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return QC_ITERS;
}

const bench_workload_t bench_query_create = {
    "query: new+free, 10k tables",
    "query",
    create_ops,
    true,
    {tes_init, NULL, tes_create_run, NULL, tes_fini},
    {base_init, NULL, base_create_run, NULL, base_fini},
};

const bench_workload_t bench_query_iter_empty = {
    "query: iter no match, 10k tables",
    "iter",
    iter_ops,
    true,
    {tes_init, NULL, tes_iter_run, NULL, tes_fini},
    {base_init, NULL, base_iter_run, NULL, base_fini},
};
