/*
 * cliffs.c — costs that must not jump when something unrelated exists.
 * Each workload runs Tessera twice in the same process: the "tes" column
 * with the condition, the "base" column without it (not a plain array),
 * so the ratio is the cliff itself (1.00 = no cliff).
 *
 * - group tax: add+remove pairs of a 4-byte component (table, then sparse)
 *   on N/100 entities, with 16 owning groups on components these entities
 *   never touch (base: no group). Changes are routed to the subscribers of
 *   the changed component, so the groups should cost nothing.
 * - default filters: the W4 sparse view (Position and Velocity sparse, on
 *   all N entities) with one prefab, or one disabled entity, that holds
 *   both (base: an extra entity with Position only, so both match N).
 * - non-owning group: the same sparse query with TES_QUERY_NONOWNING_GROUP
 *   (base: without), on the W4 shape (all have Velocity) and the W8 shape
 *   (every 10th has it).
 * - W8 sparse view against the W8 table query on the same data shape.
 * - empty spawns: N tes_spawn calls in a world holding one sparse query
 *   (base: a world without it). The query's filter index does not care
 *   about an entity with no components, so it should cost nothing.
 */
#include "query_move.h"

#define CLIFF_AR_REPS 20
#define CLIFF_GROUPS 16
#define CLIFF_QUERY_REPS 10
#define CLIFF_W8_REPS 100

/* ------------------------------------------------------------------------ */
/* Group tax                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t n;
    bool groups, sparse;
    tes_world_t *w;
    tes_comp_t health;
    tes_entity_t *h;
    tes_query_t *q[CLIFF_GROUPS];
} tax_t;

static void tax_release(tax_t *s)
{
    for (int g = 0; g < CLIFF_GROUPS; g++)
        tes_query_free(s->q[g]);
    memset(s->q, 0, sizeof s->q);
    tes_world_free(s->w);
    s->w = NULL;
}

static void *tax_init(const bench_cfg_t *cfg, bool sparse, bool groups)
{
    tax_t *s = (tax_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->small_n);
    s->sparse = sparse;
    s->groups = groups;
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    return s;
}

static void *tax_table_with(const bench_cfg_t *c) { return tax_init(c, false, true); }
static void *tax_table_without(const bench_cfg_t *c) { return tax_init(c, false, false); }
static void *tax_sparse_with(const bench_cfg_t *c) { return tax_init(c, true, true); }
static void *tax_sparse_without(const bench_cfg_t *c) { return tax_init(c, true, false); }

static void tax_before(void *p)
{
    tax_t *s = (tax_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    tes_comp_t pos = bench_register(s->w, "Position", sizeof(Position), TES_STORAGE_TABLE);
    s->health = bench_register(s->w, "Health", sizeof(Health),
                               s->sparse ? TES_STORAGE_SPARSE : TES_STORAGE_TABLE);
    if (bench_failed() || tes_spawn_n(s->w, (int32_t)s->n, &pos, 1, s->h) != TES_OK) {
        bench_fail("tax: setup failed");
        return;
    }
    for (int g = 0; s->groups && g < CLIFF_GROUPS; g++) {
        char name[2][32];
        tes_comp_t comps[2];
        for (int k = 0; k < 2; k++) {
            snprintf(name[k], sizeof name[k], "Unrelated%d", 2 * g + k);
            comps[k] = bench_register(s->w, name[k], sizeof(Position), TES_STORAGE_SPARSE);
        }
        /* A few members, so every group is live. */
        for (int k = 0; k < 8; k++) {
            tes_entity_t e = tes_spawn(s->w);
            if (tes_add(s->w, e, comps[0]) || tes_add(s->w, e, comps[1]))
                bench_fail("tax: populating group %d failed", g);
        }
        tes_query_desc_t d;
        memset(&d, 0, sizeof d);
        d.terms[0].comp = comps[0];
        d.terms[1].comp = comps[1];
        d.flags = TES_QUERY_OWNING_GROUP;
        if (!(s->q[g] = tes_query_new(s->w, &d)))
            bench_fail("tax: group %d: %s", g, tes_strerror(tes_last_error(s->w)));
    }
}

static uint64_t tax_run(void *p)
{
    tax_t *s = (tax_t *)p;
    tes_world_t *w = s->w;
    uint64_t ok = 0;
    for (int r = 0; r < CLIFF_AR_REPS; r++) {
        for (uint32_t i = 0; i < s->n; i++)
            ok += tes_add(w, s->h[i], s->health) == TES_OK;
        for (uint32_t i = 0; i < s->n; i++)
            ok += tes_remove(w, s->h[i], s->health) == TES_OK;
    }
    return ok;
}

static void tax_after(void *p) { tax_release((tax_t *)p); }

static void tax_fini(void *p)
{
    tax_t *s = (tax_t *)p;
    tax_release(s);
    free(s->h);
    free(s);
}

static int64_t tax_ops(const bench_cfg_t *cfg) { return (int64_t)CLIFF_AR_REPS * cfg->small_n; }

const bench_workload_t bench_cliff_tax_table = {
    "cliff: table add+remove, 16 groups",
    "pair",
    tax_ops,
    true,
    {tax_table_with, tax_before, tax_run, tax_after, tax_fini},
    {tax_table_without, tax_before, tax_run, tax_after, tax_fini},
};

const bench_workload_t bench_cliff_tax_sparse = {
    "cliff: sparse add+remove, 16 groups",
    "pair",
    tax_ops,
    true,
    {tax_sparse_with, tax_before, tax_run, tax_after, tax_fini},
    {tax_sparse_without, tax_before, tax_run, tax_after, tax_fini},
};

/* ------------------------------------------------------------------------ */
/* Sparse queries: default filters and non-owning groups                     */
/* ------------------------------------------------------------------------ */

enum { EXTRA_PLAIN, EXTRA_PREFAB, EXTRA_DISABLED };

/* The W4/W8 sparse view of query_move.h plus one extra entity: a plain one
 * with Position only, a prefab with both, or a disabled entity with both
 * (so every variant matches the same entities). `flags` rebuilds the query
 * with those flags. */
static void *view_init(const bench_cfg_t *cfg, uint32_t stride, int extra, uint32_t flags, int reps)
{
    move_tes_t *s = (move_tes_t *)move_tes_init(cfg, stride, MOVE_VIEW, reps);
    if (!s || bench_failed())
        return s;
    tes_world_t *w = s->w;
    tes_comp_t vel = tes_component_lookup(w, "Velocity");
    tes_entity_t e = extra == EXTRA_PREFAB ? tes_prefab_new(w) : tes_spawn(w);
    int rc = e ? tes_add(w, e, s->pos) : TES_ERR_NOMEM;
    if (!rc && extra != EXTRA_PLAIN)
        rc = tes_add(w, e, vel);
    if (!rc && extra == EXTRA_DISABLED)
        rc = tes_disable(w, e);
    if (rc)
        bench_fail("view: extra entity: %s", tes_strerror(rc));
    if (flags) {
        tes_query_free(s->q);
        tes_query_desc_t d;
        memset(&d, 0, sizeof d);
        d.terms[0].comp = s->pos;
        d.terms[1].comp = vel;
        d.terms[1].access = TES_IN;
        d.flags = flags;
        if (!(s->q = tes_query_new(w, &d)))
            bench_fail("view: query: %s", tes_strerror(tes_last_error(w)));
    }
    if (s->q && tes_query_count(s->q) != (int32_t)s->nmatch)
        bench_fail("view: query matches %d, expected %u", tes_query_count(s->q), s->nmatch);
    return s;
}

static void *w4_prefab(const bench_cfg_t *c) { return view_init(c, 1, EXTRA_PREFAB, 0, CLIFF_QUERY_REPS); }
static void *w4_disabled(const bench_cfg_t *c) { return view_init(c, 1, EXTRA_DISABLED, 0, CLIFF_QUERY_REPS); }
static void *w4_plain(const bench_cfg_t *c) { return view_init(c, 1, EXTRA_PLAIN, 0, CLIFF_QUERY_REPS); }
static void *w4_nonowning(const bench_cfg_t *c)
{
    return view_init(c, 1, EXTRA_PLAIN, TES_QUERY_NONOWNING_GROUP, CLIFF_QUERY_REPS);
}
static void *w8_plain(const bench_cfg_t *c) { return view_init(c, 10, EXTRA_PLAIN, 0, CLIFF_W8_REPS); }
static void *w8_nonowning(const bench_cfg_t *c)
{
    return view_init(c, 10, EXTRA_PLAIN, TES_QUERY_NONOWNING_GROUP, CLIFF_W8_REPS);
}
static void *w8_table(const bench_cfg_t *c) { return move_tes_init(c, 10, MOVE_TABLE, CLIFF_W8_REPS); }

static int64_t w4_ops(const bench_cfg_t *cfg) { return cfg->n * CLIFF_QUERY_REPS; }
static int64_t w8_ops(const bench_cfg_t *cfg)
{
    return (int64_t)move_matches(bench_u32(cfg->n), 10) * CLIFF_W8_REPS;
}

#define VIEW_IMPL(init) {init, move_tes_before, move_tes_run, NULL, move_tes_fini}

const bench_workload_t bench_cliff_prefab = {
    "cliff: W4 sparse view, 1 prefab", "entity", w4_ops, true,
    VIEW_IMPL(w4_prefab), VIEW_IMPL(w4_plain),
};

const bench_workload_t bench_cliff_disabled = {
    "cliff: W4 sparse view, 1 disabled", "entity", w4_ops, true,
    VIEW_IMPL(w4_disabled), VIEW_IMPL(w4_plain),
};

const bench_workload_t bench_cliff_nonowning_w4 = {
    "cliff: W4 non-owning group vs view", "entity", w4_ops, true,
    VIEW_IMPL(w4_nonowning), VIEW_IMPL(w4_plain),
};

const bench_workload_t bench_cliff_nonowning_w8 = {
    "cliff: W8 non-owning group vs view", "match", w8_ops, true,
    VIEW_IMPL(w8_nonowning), VIEW_IMPL(w8_plain),
};

const bench_workload_t bench_cliff_w8_view = {
    "cliff: W8 sparse view vs table query", "match", w8_ops, true,
    VIEW_IMPL(w8_plain), VIEW_IMPL(w8_table),
};

/* ------------------------------------------------------------------------ */
/* Empty spawns beside a sparse query                                       */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t n;
    bool watched;
    tes_world_t *w;
    tes_query_t *q;
} spawns_t;

static void *spawns_init(const bench_cfg_t *cfg, bool watched)
{
    spawns_t *s = (spawns_t *)calloc(1, sizeof *s);
    if (s) {
        s->n = bench_u32(cfg->n);
        s->watched = watched;
    }
    return s;
}
static void *spawns_with(const bench_cfg_t *c) { return spawns_init(c, true); }
static void *spawns_without(const bench_cfg_t *c) { return spawns_init(c, false); }

static void spawns_before(void *p)
{
    spawns_t *s = (spawns_t *)p;
    s->w = bench_world_new();
    if (!s->w || !s->watched)
        return;
    tes_comp_t pos = bench_register(s->w, "Position", sizeof(Position), TES_STORAGE_SPARSE);
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = pos;
    if (bench_failed() || !(s->q = tes_query_new(s->w, &d)))
        bench_fail("spawns: setup failed");
}

static uint64_t spawns_run(void *p)
{
    spawns_t *s = (spawns_t *)p;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++)
        sum += tes_entity_index(tes_spawn(s->w));
    return sum;
}

static void spawns_after(void *p)
{
    spawns_t *s = (spawns_t *)p;
    tes_query_free(s->q);
    s->q = NULL;
    tes_world_free(s->w);
    s->w = NULL;
}

static void spawns_fini(void *p)
{
    spawns_after(p);
    free(p);
}

static int64_t spawns_ops(const bench_cfg_t *cfg) { return cfg->n; }

const bench_workload_t bench_cliff_spawns = {
    "cliff: spawn 1-by-1, 1 sparse query", "entity", spawns_ops, true,
    {spawns_with, spawns_before, spawns_run, spawns_after, spawns_fini},
    {spawns_without, spawns_before, spawns_run, spawns_after, spawns_fini},
};
