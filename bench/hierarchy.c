/*
 * hierarchy.c — parent/child links and names.
 *
 * H1 reparent: n random reparents of n leaf entities among 1000 parents
 *   (tes_set_parent) vs a plain-C doubly linked sibling list with first and
 *   last child per parent (unlink + append), the same sequence.
 * H1n the same reparents by one tes_set_parent_n of the same pairs (the
 *   pairs' handles gathered into two arrays in set-up, as a caller of the
 *   batch holds them), vs the same plain C.
 * H2 cascade destroy: 10 trees of n/10 entities (random parents among the
 *   tree's earlier entities), destroyed by tes_destroy of the 10 roots, vs
 *   tes_destroy_n of the same entities in the same post-order without links
 *   (both Tessera: the ratio is the cost of the cascade).
 * H3 path lookup: 3-level paths among ~100k named entities (47 x 47 x 47)
 *   by tes_lookup_path vs a plain-C open-addressing hash of (parent, name).
 * H4 propagation: n entities in 1000 random trees of depth <= 8, World =
 *   parent's World + Local for every entity by one TES_QUERY_CASCADE query
 *   with a TES_SRC_PARENT term, vs plain C walking arrays sorted by depth
 *   with a parent-index array (the floor for a by-depth pass). The world
 *   is put in depth order by tes_sort_by_depth once, in set-up (untimed).
 * H4u the same propagation without the sort: the forest's rows in spawn
 *   order (the general by-depth walk), vs the same plain C.
 * H4s the sort's own cost: tes_sort_by_depth of the H4 world built fresh
 *   (rows in spawn order) before every run, vs plain C sorting the same
 *   arrays by depth (a counting sort of the values and the parent
 *   indices, remapped). Cold (first) and warm runs are reported apart.
 * W4 linked: the W4 table query (Position += Velocity) over a world whose
 *   entities are all linked in trees, vs the plain arrays: links must not
 *   slow iteration down.
 * A memory probe reports the hierarchy's bytes per linked entity.
 */
#include "bench.h"
#include "query_move.h"

#define H_PARENTS 1000u

/* ------------------------------------------------------------------ H1 */

typedef struct reparent {
    tes_world_t *w;
    tes_entity_t *parents, *kids;
    uint32_t n, *pick_kid, *pick_parent;
    tes_entity_t *batch_kids, *batch_parents; /* H1n: the pairs' handles */
    /* baseline */
    uint32_t *parent, *prev, *next, *first, *last;
} reparent_t;

static int64_t reparent_ops(const bench_cfg_t *cfg) { return cfg->n; }

static reparent_t *reparent_common(const bench_cfg_t *cfg)
{
    reparent_t *s = (reparent_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n);
    s->pick_kid = (uint32_t *)bench_alloc((size_t)s->n * 4);
    s->pick_parent = (uint32_t *)bench_alloc((size_t)s->n * 4);
    if (bench_failed())
        return s;
    uint64_t rng = cfg->seed;
    for (uint32_t i = 0; i < s->n; i++) {
        s->pick_kid[i] = (uint32_t)(bench_rng_next(&rng) % s->n);
        s->pick_parent[i] = (uint32_t)(bench_rng_next(&rng) % H_PARENTS);
    }
    return s;
}

static void *reparent_tes_init(const bench_cfg_t *cfg)
{
    reparent_t *s = reparent_common(cfg);
    if (!s || bench_failed())
        return s;
    s->w = bench_world_new();
    s->parents = (tes_entity_t *)bench_alloc(H_PARENTS * sizeof *s->parents);
    s->kids = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->kids);
    if (bench_failed())
        return s;
    tes_spawn_n(s->w, (int32_t)H_PARENTS, NULL, 0, s->parents);
    tes_spawn_n(s->w, (int32_t)s->n, NULL, 0, s->kids);
    for (uint32_t i = 0; i < s->n; i++)
        if (tes_set_parent(s->w, s->kids[i], s->parents[i % H_PARENTS]) != TES_OK)
            bench_fail("tes_set_parent: %s", tes_strerror(tes_last_error(s->w)));
    return s;
}

static uint64_t reparent_tes_run(void *p)
{
    reparent_t *s = (reparent_t *)p;
    uint64_t ok = 0;
    for (uint32_t i = 0; i < s->n; i++)
        ok += tes_set_parent(s->w, s->kids[s->pick_kid[i]], s->parents[s->pick_parent[i]]) == TES_OK;
    return ok;
}

static void *reparent_n_init(const bench_cfg_t *cfg)
{
    reparent_t *s = (reparent_t *)reparent_tes_init(cfg);
    if (!s || bench_failed())
        return s;
    s->batch_kids = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->batch_kids);
    s->batch_parents = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->batch_parents);
    if (bench_failed())
        return s;
    for (uint32_t i = 0; i < s->n; i++) {
        s->batch_kids[i] = s->kids[s->pick_kid[i]];
        s->batch_parents[i] = s->parents[s->pick_parent[i]];
    }
    return s;
}

static uint64_t reparent_n_run(void *p)
{
    reparent_t *s = (reparent_t *)p;
    if (tes_set_parent_n(s->w, s->batch_kids, s->batch_parents, s->n) != TES_OK) {
        bench_fail("tes_set_parent_n: %s", tes_strerror(tes_last_error(s->w)));
        return 0;
    }
    return s->n;
}

static void reparent_fini(void *p)
{
    reparent_t *s = (reparent_t *)p;
    if (s->w)
        tes_world_free(s->w);
    free(s->parents), free(s->kids), free(s->pick_kid), free(s->pick_parent);
    free(s->batch_kids), free(s->batch_parents);
    free(s->parent), free(s->prev), free(s->next), free(s->first), free(s->last);
    free(s);
}

#define NONE UINT32_MAX

static void base_append(reparent_t *s, uint32_t c, uint32_t p)
{
    s->parent[c] = p;
    s->next[c] = NONE;
    s->prev[c] = s->last[p];
    if (s->last[p] != NONE)
        s->next[s->last[p]] = c;
    else
        s->first[p] = c;
    s->last[p] = c;
}

static void base_unlink(reparent_t *s, uint32_t c)
{
    uint32_t p = s->parent[c];
    if (s->prev[c] != NONE)
        s->next[s->prev[c]] = s->next[c];
    else
        s->first[p] = s->next[c];
    if (s->next[c] != NONE)
        s->prev[s->next[c]] = s->prev[c];
    else
        s->last[p] = s->prev[c];
}

static void *reparent_base_init(const bench_cfg_t *cfg)
{
    reparent_t *s = reparent_common(cfg);
    if (!s || bench_failed())
        return s;
    size_t n = s->n;
    s->parent = (uint32_t *)bench_alloc(n * 4);
    s->prev = (uint32_t *)bench_alloc(n * 4);
    s->next = (uint32_t *)bench_alloc(n * 4);
    s->first = (uint32_t *)bench_alloc(H_PARENTS * 4);
    s->last = (uint32_t *)bench_alloc(H_PARENTS * 4);
    if (bench_failed())
        return s;
    memset(s->first, 0xFF, H_PARENTS * 4);
    memset(s->last, 0xFF, H_PARENTS * 4);
    for (uint32_t i = 0; i < s->n; i++)
        base_append(s, i, i % H_PARENTS);
    return s;
}

static uint64_t reparent_base_run(void *p)
{
    reparent_t *s = (reparent_t *)p;
    uint64_t ok = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t c = s->pick_kid[i], np = s->pick_parent[i];
        if (s->parent[c] != np) {
            base_unlink(s, c);
            base_append(s, c, np);
        }
        ok++;
    }
    return ok;
}

const bench_workload_t bench_h1_reparent = {
    "H1 reparent (random, 1000 parents)",
    "reparent",
    reparent_ops,
    true,
    {reparent_tes_init, NULL, reparent_tes_run, NULL, reparent_fini},
    {reparent_base_init, NULL, reparent_base_run, NULL, reparent_fini},
};

const bench_workload_t bench_h1n_reparent = {
    "H1n reparent, tes_set_parent_n of the same pairs",
    "reparent",
    reparent_ops,
    true,
    {reparent_n_init, NULL, reparent_n_run, NULL, reparent_fini},
    {reparent_base_init, NULL, reparent_base_run, NULL, reparent_fini},
};

/* ------------------------------------------------------------------ H2 */

#define H_TREES 10u

typedef struct cascade {
    tes_world_t *w;
    bool linked;
    uint32_t n;
    uint32_t *parent_of; /* per entity of the population: its parent's position, NONE for a root */
    tes_entity_t *h, *order;
} cascade_t;

static int64_t cascade_ops(const bench_cfg_t *cfg) { return cfg->n; }

static void *cascade_init_kind(const bench_cfg_t *cfg, bool linked)
{
    cascade_t *s = (cascade_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->linked = linked;
    s->n = bench_u32(cfg->n) / H_TREES * H_TREES;
    s->parent_of = (uint32_t *)bench_alloc((size_t)s->n * 4);
    s->h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->h);
    s->order = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *s->order);
    if (bench_failed())
        return s;
    uint64_t rng = cfg->seed;
    uint32_t per = s->n / H_TREES;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t at = i % per, base = i - at;
        /* Parents among the last 64 earlier entities: trees a few levels
         * deep, as scene trees are. */
        uint32_t span = at < 64 ? at : 64;
        s->parent_of[i] = at ? base + at - 1 - (uint32_t)(bench_rng_next(&rng) % span) : NONE;
    }
    return s;
}

static void *cascade_tes_init(const bench_cfg_t *cfg) { return cascade_init_kind(cfg, true); }
static void *cascade_base_init(const bench_cfg_t *cfg) { return cascade_init_kind(cfg, false); }

static void cascade_before(void *p)
{
    cascade_t *s = (cascade_t *)p;
    if (s->w)
        tes_world_free(s->w);
    s->w = bench_world_new();
    bench_comps_t c = bench_register3(s->w, TES_STORAGE_TABLE);
    tes_comp_t ids[3] = {c.pos, c.vel, c.rot};
    if (bench_failed() || tes_spawn_n(s->w, (int32_t)s->n, ids, 3, s->h) != TES_OK) {
        bench_fail("cascade set-up failed");
        return;
    }
    for (uint32_t i = 0; i < s->n; i++)
        if (s->parent_of[i] != NONE &&
            tes_set_parent(s->w, s->h[i], s->h[s->parent_of[i]]) != TES_OK)
            bench_fail("tes_set_parent: %s", tes_strerror(tes_last_error(s->w)));
    if (s->linked)
        return;
    /* The same entities in the order the cascade destroys them, then the
     * links dropped (each entity made a root), so destroy_n has none. */
    uint32_t at = 0;
    for (uint32_t t = 0; t < H_TREES; t++) {
        tes_entity_t root = s->h[t * (s->n / H_TREES)];
        /* Post-order by an explicit walk over the links. */
        tes_entity_t e = root;
        for (;;) {
            tes_entity_t kid;
            while (tes_children(s->w, e, &kid, 1) > 0)
                e = kid;
            s->order[at++] = e;
            if (e == root)
                break;
            tes_entity_t parent = tes_parent(s->w, e);
            tes_set_parent(s->w, e, TES_NULL);
            e = parent;
        }
    }
    if (at != s->n)
        bench_fail("post-order listed %u of %u entities", at, s->n);
}

static uint64_t cascade_run(void *p)
{
    cascade_t *s = (cascade_t *)p;
    if (s->linked) {
        for (uint32_t t = 0; t < H_TREES; t++)
            if (tes_destroy(s->w, s->h[t * (s->n / H_TREES)]) != TES_OK)
                bench_fail("tes_destroy: %s", tes_strerror(tes_last_error(s->w)));
    } else if (tes_destroy_n(s->w, s->order, (int32_t)s->n) != TES_OK) {
        bench_fail("tes_destroy_n: %s", tes_strerror(tes_last_error(s->w)));
    }
    return (uint64_t)tes_entity_count(s->w);
}

static void cascade_fini(void *p)
{
    cascade_t *s = (cascade_t *)p;
    if (s->w)
        tes_world_free(s->w);
    free(s->parent_of), free(s->h), free(s->order);
    free(s);
}

const bench_workload_t bench_h2_cascade = {
    "H2 cascade destroy (10 trees) vs destroy_n",
    "ent",
    cascade_ops,
    true,
    {cascade_tes_init, cascade_before, cascade_run, NULL, cascade_fini},
    {cascade_base_init, cascade_before, cascade_run, NULL, cascade_fini},
};

/* ------------------------------------------------------------------ H3 */

#define H_FAN 47u
#define H_LOOKUPS 100000u

typedef struct paths {
    tes_world_t *w;
    uint32_t *pick; /* leaf numbers to look up */
    char (*path)[16];
    /* baseline: (parent + 1, name) -> node, open addressing */
    uint32_t cap, nodes;
    uint32_t *slot_node; /* node + 1, 0 empty */
    uint32_t *node_parent;
    char (*node_name)[4];
} paths_t;

static int64_t paths_ops(const bench_cfg_t *cfg)
{
    (void)cfg;
    return H_LOOKUPS;
}

static void leaf_names(uint32_t leaf, char a[4], char b[4], char c[4])
{
    snprintf(a, 4, "a%u", (unsigned)(leaf / (H_FAN * H_FAN)) % 100u);
    snprintf(b, 4, "b%u", (unsigned)(leaf / H_FAN % H_FAN) % 100u);
    snprintf(c, 4, "c%u", (unsigned)(leaf % H_FAN) % 100u);
}

static paths_t *paths_common(const bench_cfg_t *cfg)
{
    paths_t *s = (paths_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->pick = (uint32_t *)bench_alloc(H_LOOKUPS * 4);
    s->path = (char (*)[16])bench_alloc(H_LOOKUPS * 16);
    if (bench_failed())
        return s;
    uint64_t rng = cfg->seed;
    for (uint32_t i = 0; i < H_LOOKUPS; i++) {
        s->pick[i] = (uint32_t)(bench_rng_next(&rng) % (H_FAN * H_FAN * H_FAN));
        char a[4], b[4], c[4];
        leaf_names(s->pick[i], a, b, c);
        snprintf(s->path[i], 16, "%s/%s/%s", a, b, c);
    }
    return s;
}

static void *paths_tes_init(const bench_cfg_t *cfg)
{
    paths_t *s = paths_common(cfg);
    if (!s || bench_failed())
        return s;
    s->w = bench_world_new();
    char name[8];
    for (uint32_t i = 0; i < H_FAN && !bench_failed(); i++) {
        tes_entity_t a = tes_spawn(s->w);
        snprintf(name, sizeof name, "a%u", (unsigned)i);
        tes_set_name(s->w, a, name);
        for (uint32_t j = 0; j < H_FAN; j++) {
            tes_entity_t b = tes_spawn(s->w);
            tes_set_parent(s->w, b, a);
            snprintf(name, sizeof name, "b%u", (unsigned)j);
            tes_set_name(s->w, b, name);
            for (uint32_t k = 0; k < H_FAN; k++) {
                tes_entity_t c = tes_spawn(s->w);
                tes_set_parent(s->w, c, b);
                snprintf(name, sizeof name, "c%u", (unsigned)k);
                if (tes_set_name(s->w, c, name) != TES_OK)
                    bench_fail("tes_set_name: %s", tes_last_error_detail(s->w));
            }
        }
    }
    return s;
}

static uint64_t paths_tes_run(void *p)
{
    paths_t *s = (paths_t *)p;
    uint64_t found = 0;
    for (uint32_t i = 0; i < H_LOOKUPS; i++)
        found += tes_lookup_path(s->w, s->path[i]) != TES_NULL;
    if (found != H_LOOKUPS)
        bench_fail("found %llu of %u paths", (unsigned long long)found, H_LOOKUPS);
    return found;
}

static uint64_t name_hash(uint32_t parent1, const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ parent1;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static uint32_t base_find(const paths_t *s, uint32_t parent1, const char *name, size_t len)
{
    uint32_t mask = s->cap - 1;
    for (uint32_t at = (uint32_t)name_hash(parent1, name, len) & mask;; at = (at + 1) & mask) {
        uint32_t node1 = s->slot_node[at];
        if (!node1)
            return 0;
        const char *nn = s->node_name[node1 - 1];
        if (s->node_parent[node1 - 1] == parent1 && strncmp(nn, name, len) == 0 && nn[len] == '\0')
            return node1;
    }
}

static void base_insert(paths_t *s, uint32_t parent1, const char *name)
{
    uint32_t node = s->nodes++;
    s->node_parent[node] = parent1;
    snprintf(s->node_name[node], 4, "%.3s", name);
    uint32_t mask = s->cap - 1;
    uint32_t at = (uint32_t)name_hash(parent1, name, strlen(name)) & mask;
    while (s->slot_node[at])
        at = (at + 1) & mask;
    s->slot_node[at] = node + 1;
}

static void *paths_base_init(const bench_cfg_t *cfg)
{
    paths_t *s = paths_common(cfg);
    if (!s || bench_failed())
        return s;
    uint32_t total = H_FAN + H_FAN * H_FAN + H_FAN * H_FAN * H_FAN;
    s->cap = 1;
    while (s->cap < total * 2)
        s->cap *= 2;
    s->slot_node = (uint32_t *)calloc(s->cap, 4);
    s->node_parent = (uint32_t *)bench_alloc((size_t)total * 4);
    s->node_name = (char (*)[4])bench_alloc((size_t)total * 4);
    if (!s->slot_node || bench_failed())
        return s;
    char name[8];
    for (uint32_t i = 0; i < H_FAN; i++) {
        snprintf(name, sizeof name, "a%u", (unsigned)i);
        base_insert(s, 0, name);
        uint32_t a1 = s->nodes;
        for (uint32_t j = 0; j < H_FAN; j++) {
            snprintf(name, sizeof name, "b%u", (unsigned)j);
            base_insert(s, a1, name);
            uint32_t b1 = s->nodes;
            for (uint32_t k = 0; k < H_FAN; k++) {
                snprintf(name, sizeof name, "c%u", (unsigned)k);
                base_insert(s, b1, name);
            }
        }
    }
    return s;
}

static uint64_t paths_base_run(void *p)
{
    paths_t *s = (paths_t *)p;
    uint64_t found = 0;
    for (uint32_t i = 0; i < H_LOOKUPS; i++) {
        const char *seg = s->path[i];
        uint32_t at = 0;
        for (;;) {
            const char *end = strchr(seg, '/');
            size_t len = end ? (size_t)(end - seg) : strlen(seg);
            at = base_find(s, at, seg, len);
            if (!at || !end)
                break;
            seg = end + 1;
        }
        found += at != 0;
    }
    return found;
}

static void paths_fini(void *p)
{
    paths_t *s = (paths_t *)p;
    if (s->w)
        tes_world_free(s->w);
    free(s->pick), free(s->path), free(s->slot_node), free(s->node_parent), free(s->node_name);
    free(s);
}

const bench_workload_t bench_h3_paths = {
    "H3 path lookup (3 levels, ~100k named)",
    "lookup",
    paths_ops,
    true,
    {paths_tes_init, NULL, paths_tes_run, NULL, paths_fini},
    {paths_base_init, NULL, paths_base_run, NULL, paths_fini},
};

/* ------------------------------------------------------------------ H4 */

#define H4_TREES 1000u
#define H4_DEPTH 8

typedef struct propagate {
    uint32_t n;
    uint32_t *parent_of; /* per entity: its parent's number, NONE for a root */
    uint8_t *depth;
    float *local;        /* per entity: its Local.x (y and z follow from it) */
    tes_world_t *w;
    tes_query_t *q;
    /* baseline: the entities sorted by depth */
    Position *b_local;
    Velocity *b_world;
    uint32_t *b_parent; /* position of the parent in the sorted arrays, NONE for roots */
    uint32_t *b_at;     /* entity -> its position in the sorted arrays */
} propagate_t;

static int64_t propagate_ops(const bench_cfg_t *cfg) { return cfg->n; }

/* The forest: each tree's entities in spawn order, each under a random
 * earlier entity of its tree (its parent when that one is at the depth
 * limit). Locals are small integers, so both sides' sums are exact. */
static propagate_t *propagate_common(const bench_cfg_t *cfg)
{
    propagate_t *s = (propagate_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = bench_u32(cfg->n) / H4_TREES * H4_TREES;
    s->parent_of = (uint32_t *)bench_alloc((size_t)s->n * 4);
    s->depth = (uint8_t *)bench_alloc((size_t)s->n);
    s->local = (float *)bench_alloc((size_t)s->n * sizeof(float));
    if (bench_failed())
        return s;
    uint64_t rng = cfg->seed;
    uint32_t per = s->n / H4_TREES;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t at = i % per, base = i - at;
        s->local[i] = (float)(bench_rng_next(&rng) % 16);
        if (!at) {
            s->parent_of[i] = NONE;
            s->depth[i] = 0;
            continue;
        }
        uint32_t p = base + (uint32_t)(bench_rng_next(&rng) % at);
        if (s->depth[p] == H4_DEPTH)
            p = s->parent_of[p];
        s->parent_of[i] = p;
        s->depth[i] = (uint8_t)(s->depth[p] + 1);
    }
    return s;
}

/* The H4 world (rows in spawn order) and its query, into s. */
static void propagate_build(propagate_t *s)
{
    s->w = bench_world_new();
    bench_comps_t c = bench_register3(s->w, TES_STORAGE_TABLE);
    tes_comp_t ids[2] = {c.pos, c.vel}; /* Position is Local, Velocity is World */
    tes_entity_t *h = (tes_entity_t *)bench_alloc((size_t)s->n * sizeof *h);
    if (bench_failed() || tes_spawn_n(s->w, (int32_t)s->n, ids, 2, h) != TES_OK) {
        bench_fail("propagation set-up failed");
        free(h);
        return;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        Position *l = (Position *)tes_get_mut(s->w, h[i], c.pos);
        *l = (Position){s->local[i], 1.0f, 2.0f};
        if (s->parent_of[i] != NONE && tes_set_parent(s->w, h[i], h[s->parent_of[i]]) != TES_OK)
            bench_fail("tes_set_parent: %s", tes_strerror(tes_last_error(s->w)));
    }
    free(h);
    if (bench_failed())
        return;
    s->q = tes_query_new(s->w, &(tes_query_desc_t){
                                   .terms = {{c.vel, .access = TES_OUT},
                                             {c.pos, .access = TES_IN},
                                             {c.vel, .oper = TES_OPTIONAL, .access = TES_IN,
                                              .src = TES_SRC_PARENT}},
                                   .flags = TES_QUERY_CASCADE});
    if (!s->q)
        bench_fail("tes_query_new: %s", tes_last_error_detail(s->w));
}

static void *propagate_init_kind(const bench_cfg_t *cfg, bool sorted)
{
    propagate_t *s = propagate_common(cfg);
    if (!s || bench_failed())
        return s;
    propagate_build(s);
    if (sorted && !bench_failed() && tes_sort_by_depth(s->w) != TES_OK)
        bench_fail("tes_sort_by_depth: %s", tes_last_error_detail(s->w));
    return s;
}

static void *propagate_tes_init(const bench_cfg_t *cfg) { return propagate_init_kind(cfg, true); }
static void *propagate_unsorted_init(const bench_cfg_t *cfg) { return propagate_init_kind(cfg, false); }

static uint64_t propagate_tes_run(void *p)
{
    propagate_t *s = (propagate_t *)p;
    uint64_t sum = 0;
    tes_iter_t it = tes_query_iter(s->q);
    while (tes_iter_next(&it)) {
        Velocity *out = (Velocity *)tes_field(&it, 0);
        const Position *l = (const Position *)tes_field(&it, 1);
        const Velocity *up = (const Velocity *)tes_field(&it, 2);
        if (up) {
            for (int32_t i = 0; i < it.count; i++) {
                out[i].x = up[i].x + l[i].x;
                out[i].y = up[i].y + l[i].y;
                out[i].z = up[i].z + l[i].z;
                sum += (uint64_t)out[i].x;
            }
        } else {
            for (int32_t i = 0; i < it.count; i++) {
                out[i].x = l[i].x;
                out[i].y = l[i].y;
                out[i].z = l[i].z;
                sum += (uint64_t)out[i].x;
            }
        }
    }
    return sum;
}

/* Fills the baseline's arrays sorted by depth (a stable counting sort)
 * from the entities in spawn order; returns a checksum. */
static uint64_t propagate_base_sort(propagate_t *s, uint32_t *at)
{
    uint32_t start[H4_DEPTH + 2] = {0};
    for (uint32_t i = 0; i < s->n; i++)
        start[s->depth[i] + 1]++;
    for (int d = 1; d < H4_DEPTH + 2; d++)
        start[d] += start[d - 1];
    for (uint32_t i = 0; i < s->n; i++)
        at[i] = start[s->depth[i]]++;
    for (uint32_t i = 0; i < s->n; i++) {
        s->b_local[at[i]] = (Position){s->local[i], 1.0f, 2.0f};
        s->b_world[at[i]] = (Velocity){0, 0, 0};
        s->b_parent[at[i]] = s->parent_of[i] == NONE ? NONE : at[s->parent_of[i]];
    }
    return s->b_parent[s->n - 1];
}

static void *propagate_base_init(const bench_cfg_t *cfg)
{
    propagate_t *s = propagate_common(cfg);
    if (!s || bench_failed())
        return s;
    s->b_local = (Position *)bench_alloc((size_t)s->n * sizeof *s->b_local);
    s->b_world = (Velocity *)bench_alloc((size_t)s->n * sizeof *s->b_world);
    s->b_parent = (uint32_t *)bench_alloc((size_t)s->n * 4);
    s->b_at = (uint32_t *)bench_alloc((size_t)s->n * 4); /* entity -> sorted position */
    if (!bench_failed())
        (void)propagate_base_sort(s, s->b_at);
    return s;
}

static uint64_t propagate_base_run(void *p)
{
    propagate_t *s = (propagate_t *)p;
    uint64_t sum = 0;
    const Position *l = s->b_local;
    Velocity *out = s->b_world;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t up = s->b_parent[i];
        if (up != NONE) {
            out[i].x = out[up].x + l[i].x;
            out[i].y = out[up].y + l[i].y;
            out[i].z = out[up].z + l[i].z;
        } else {
            out[i].x = l[i].x;
            out[i].y = l[i].y;
            out[i].z = l[i].z;
        }
        sum += (uint64_t)out[i].x;
    }
    return sum;
}

static void propagate_fini(void *p)
{
    propagate_t *s = (propagate_t *)p;
    if (s->q)
        tes_query_free(s->q);
    if (s->w)
        tes_world_free(s->w);
    free(s->parent_of), free(s->depth), free(s->local);
    free(s->b_local), free(s->b_world), free(s->b_parent), free(s->b_at);
    free(s);
}

const bench_workload_t bench_h4_propagate = {
    "H4 propagation (1000 trees, depth <= 8) by one cascade query",
    "ent",
    propagate_ops,
    true,
    {propagate_tes_init, NULL, propagate_tes_run, NULL, propagate_fini},
    {propagate_base_init, NULL, propagate_base_run, NULL, propagate_fini},
};

const bench_workload_t bench_h4_unsorted = {
    "H4u propagation as H4, rows not sorted by depth",
    "ent",
    propagate_ops,
    true,
    {propagate_unsorted_init, NULL, propagate_tes_run, NULL, propagate_fini},
    {propagate_base_init, NULL, propagate_base_run, NULL, propagate_fini},
};

/* H4s: every run sorts a freshly built world (built untimed, before it). */
static void *sort_tes_init(const bench_cfg_t *cfg) { return propagate_common(cfg); }

static void sort_tes_before(void *p)
{
    propagate_t *s = (propagate_t *)p;
    if (!bench_failed())
        propagate_build(s);
}

static uint64_t sort_tes_run(void *p)
{
    propagate_t *s = (propagate_t *)p;
    if (!s->w || tes_sort_by_depth(s->w) != TES_OK)
        bench_fail("tes_sort_by_depth failed");
    return 0;
}

static void sort_tes_after(void *p)
{
    propagate_t *s = (propagate_t *)p;
    if (s->q)
        tes_query_free(s->q);
    if (s->w)
        tes_world_free(s->w);
    s->q = NULL;
    s->w = NULL;
}

static uint64_t sort_base_run(void *p)
{
    propagate_t *s = (propagate_t *)p;
    (void)propagate_base_sort(s, s->b_at);
    return 0;
}

const bench_workload_t bench_h4_sort = {
    "H4s tes_sort_by_depth of the H4 world (rows in spawn order)",
    "ent",
    propagate_ops,
    false,
    {sort_tes_init, sort_tes_before, sort_tes_run, sort_tes_after, propagate_fini},
    {propagate_base_init, NULL, sort_base_run, NULL, propagate_fini},
};

/* ------------------------------------------------------------------ W4 linked */

static int64_t w4_ops(const bench_cfg_t *cfg) { return cfg->n * 10; }

static void *w4_linked_init(const bench_cfg_t *cfg)
{
    move_tes_t *s = (move_tes_t *)move_tes_init(cfg, 1, MOVE_TABLE, 10);
    for (uint32_t k = 1; s && !bench_failed() && k < s->nmatch; k++)
        if (tes_set_parent(s->w, s->match[k], s->match[(k - 1) / 8]) != TES_OK)
            bench_fail("tes_set_parent: %s", tes_strerror(tes_last_error(s->w)));
    return s;
}

static void *w4_base_init(const bench_cfg_t *cfg) { return move_base_init(cfg, 1, 10); }

const bench_workload_t bench_w4_linked = {
    "W4 move: table query, every entity linked",
    "ent",
    w4_ops,
    true,
    {w4_linked_init, move_tes_before, move_tes_run, NULL, move_tes_fini},
    {w4_base_init, move_base_before, move_base_run, NULL, move_base_fini},
};

/* ------------------------------------------------------------------ memory */

/* The hierarchy's bytes per linked entity: a world of n entities linked in
 * trees of fan-out 8, minus the same world unlinked. */
bool bench_memory_linked(const bench_cfg_t *cfg, uint64_t *bytes, uint64_t *entities)
{
    uint32_t n = bench_u32(cfg->n);
    tes_world_t *w = bench_world_new();
    tes_entity_t *h = (tes_entity_t *)bench_alloc((size_t)n * sizeof *h);
    if (!w || bench_failed() || tes_spawn_n(w, (int32_t)n, NULL, 0, h) != TES_OK) {
        bench_fail("memory probe set-up failed");
        free(h);
        if (w)
            tes_world_free(w);
        return false;
    }
    tes_world_stats_t before, after;
    tes_world_stats(w, &before);
    for (uint32_t k = 1; k < n; k++)
        tes_set_parent(w, h[k], h[(k - 1) / 8]);
    tes_world_stats(w, &after);
    *bytes = after.bytes_allocated - before.bytes_allocated;
    *entities = n;
    free(h);
    tes_world_free(w);
    return true;
}
