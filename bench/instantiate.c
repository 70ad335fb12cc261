/*
 * instantiate.c — prefab instantiation, ns per created entity.
 *
 * The prefab has 5 members: a root with Position, Velocity and Health, and
 * four children with Position and Link, whose entity field `parent` names
 * the root (remapped to each instance's own root). N / 50 instances are
 * created per run (20,000 instances = 100,000 entities by default):
 *   - "instantiate_n ...": one tes_instantiate_n call (the bulk path: every
 *     id, row and slot reserved once, member by member, column by column);
 *   - "instantiate x1 ...": the same number of single tes_instantiate calls.
 * Both are compared with the same plain-array baseline doing the equivalent
 * work: per entity a generation slot, a handle and its instance; per
 * instance a membership record; the member values copied from a template
 * into SoA arrays (root arrays, child arrays); and the reference fix-up
 * (Link.parent rewritten to the instance's own root). Arrays are malloc'ed
 * inside the timed run, as Tessera grows its tables inside the call.
 *
 * Checksum (same both ways): the number of entities created plus the sum of
 * the copied Health and child Link.slot values over a fixed sample of
 * instances read back after creation (cheap: 64 instances). The untimed
 * `after` hook also checks, on a sample of instances, that every child's
 * parent is its own root and the values match the prefab.
 */
#include "bench.h"

extern const bench_workload_t bench_instantiate_n;
extern const bench_workload_t bench_instantiate_single;

#define MEMBERS 5
#define CHILDREN (MEMBERS - 1)
#define SAMPLE 64

typedef struct Link {
    tes_entity_t parent; /* entity field: the root of the same instance */
    int32_t slot;
    int32_t pad;
} Link;

/* The prefab's values (also the baseline's template). */
static Position tmpl_pos(uint32_t member)
{
    Position p = {(float)member, (float)(member * 2), (float)(member * 3)};
    return p;
}

static const Velocity tmpl_vel = {0.5f, -0.5f, 1.0f};
static const Health tmpl_hp = {100};

static uint32_t instances_of(const bench_cfg_t *cfg)
{
    int64_t n = cfg->n / 50;
    return n > 0 ? bench_u32(n) : 1;
}

/* ------------------------------------------------------------------------ */
/* Tessera                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t instances;
    bool bulk;
    tes_world_t *w;
    tes_entity_t prefab;
    tes_entity_t members[MEMBERS];
    tes_comp_t pos, vel, hp, link;
    tes_instance_t *insts;
} tes_state_t;

static void *tes_init_common(const bench_cfg_t *cfg, bool bulk)
{
    tes_state_t *s = (tes_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->instances = instances_of(cfg);
    s->bulk = bulk;
    s->insts = (tes_instance_t *)bench_alloc((size_t)s->instances * sizeof *s->insts);
    return s;
}

static void *tes_init_bulk(const bench_cfg_t *cfg) { return tes_init_common(cfg, true); }
static void *tes_init_single(const bench_cfg_t *cfg) { return tes_init_common(cfg, false); }

static void tes_before(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    s->w = bench_world_new();
    if (!s->w)
        return;
    tes_world_t *w = s->w;
    s->pos = bench_register(w, "Position", sizeof(Position), TES_STORAGE_TABLE);
    s->vel = bench_register(w, "Velocity", sizeof(Velocity), TES_STORAGE_TABLE);
    s->hp = bench_register(w, "Health", sizeof(Health), TES_STORAGE_TABLE);
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = "Link";
    d.size = sizeof(Link);
    d.entity_fields[0] = offsetof(Link, parent);
    d.entity_field_count = 1;
    s->link = tes_component(w, &d);
    if (!s->link) {
        bench_fail("tes_component(Link): %s", tes_strerror(tes_last_error(w)));
        return;
    }
    s->prefab = tes_prefab_new(w);
    s->members[0] = s->prefab;
    for (uint32_t j = 1; j < MEMBERS; j++)
        s->members[j] = tes_prefab_child(w, s->prefab);
    for (uint32_t j = 0; j < MEMBERS; j++) {
        if (!s->members[j]) {
            bench_fail("prefab: %s", tes_strerror(tes_last_error(w)));
            return;
        }
    }
    Position rp = tmpl_pos(0);
    int rc = tes_set(w, s->prefab, s->pos, &rp);
    rc |= tes_set(w, s->prefab, s->vel, &tmpl_vel);
    rc |= tes_set(w, s->prefab, s->hp, &tmpl_hp);
    for (uint32_t j = 1; j < MEMBERS; j++) {
        Position cp = tmpl_pos(j);
        Link l = {s->prefab, (int32_t)j, 0};
        rc |= tes_set(w, s->members[j], s->pos, &cp);
        rc |= tes_set(w, s->members[j], s->link, &l);
    }
    if (rc)
        bench_fail("building the prefab failed");
}

/* Reads back a fixed sample of instances: Health of the root and
 * Link.slot of the children. */
static uint64_t tes_sample(tes_state_t *s, uint64_t created)
{
    uint64_t sum = created;
    uint32_t step = s->instances / SAMPLE ? s->instances / SAMPLE : 1;
    for (uint32_t k = 0; k < s->instances; k += step) {
        tes_entity_t m[MEMBERS];
        if (tes_instance_members(s->w, s->insts[k], m, MEMBERS) != MEMBERS) {
            bench_fail("instance %u has the wrong member count", k);
            return 0;
        }
        const Health *h = (const Health *)tes_get(s->w, m[0], s->hp);
        sum += h ? (uint64_t)h->hp : 0;
        for (uint32_t j = 1; j < MEMBERS; j++) {
            const Link *l = (const Link *)tes_get(s->w, m[j], s->link);
            sum += l ? (uint64_t)l->slot : 0;
        }
    }
    return sum;
}

static uint64_t tes_run(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_t *w = s->w;
    int32_t before = tes_entity_count(w);
    if (s->bulk) {
        int rc = tes_instantiate_n(w, s->prefab, (int32_t)s->instances, s->insts);
        if (rc != TES_OK) {
            bench_fail("tes_instantiate_n: %s", tes_strerror(rc));
            return 0;
        }
    } else {
        tes_entity_t out[MEMBERS];
        for (uint32_t k = 0; k < s->instances; k++) {
            s->insts[k] = tes_instantiate(w, s->prefab, out, MEMBERS);
            if (!s->insts[k]) {
                bench_fail("tes_instantiate: %s", tes_strerror(tes_last_error(w)));
                return 0;
            }
        }
    }
    return tes_sample(s, (uint64_t)(tes_entity_count(w) - before));
}

static void tes_after(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    if (s->w && !bench_failed()) {
        for (uint32_t k = 0; k < s->instances; k += 997) {
            tes_entity_t m[MEMBERS];
            if (tes_instance_members(s->w, s->insts[k], m, MEMBERS) != MEMBERS) {
                bench_fail("instance %u: wrong member count", k);
                break;
            }
            const Velocity *v = (const Velocity *)tes_get(s->w, m[0], s->vel);
            if (!v || v->x != tmpl_vel.x || tes_has(s->w, m[0], TES_PREFAB))
                bench_fail("instance %u: root not copied", k);
            for (uint32_t j = 1; j < MEMBERS; j++) {
                const Link *l = (const Link *)tes_get(s->w, m[j], s->link);
                const Position *pp = (const Position *)tes_get(s->w, m[j], s->pos);
                Position want = tmpl_pos(j);
                if (!l || l->parent != m[0] || l->slot != (int32_t)j || !pp || pp->y != want.y)
                    bench_fail("instance %u member %u: bad copy or remap", k, j);
            }
        }
    }
    tes_world_free(s->w);
    s->w = NULL;
}

static void tes_fini(void *p)
{
    tes_state_t *s = (tes_state_t *)p;
    tes_world_free(s->w);
    free(s->insts);
    free(s);
}

/* ------------------------------------------------------------------------ */
/* Plain arrays                                                              */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t instances;
    /* Per entity (instance k, member j at k * MEMBERS + j). */
    uint32_t *gen;
    uint32_t *inst_of;
    tes_entity_t *handles;
    /* Per instance: first member index (the membership record). */
    uint32_t *inst_first;
    /* Root columns (one row per instance). */
    Position *root_pos;
    Velocity *root_vel;
    Health *root_hp;
    /* Child columns (CHILDREN rows per instance). */
    Position *child_pos;
    Link *child_link;
    /* The template: values and, per child, the member its parent names. */
    Position t_pos[MEMBERS];
    Link t_link[MEMBERS];
    uint32_t t_ref[MEMBERS];
} base_state_t;

static void *base_init(const bench_cfg_t *cfg)
{
    base_state_t *s = (base_state_t *)calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->instances = instances_of(cfg);
    for (uint32_t j = 0; j < MEMBERS; j++) {
        s->t_pos[j] = tmpl_pos(j);
        s->t_link[j] = (Link){tes_entity_make(0, 1), (int32_t)j, 0};
        s->t_ref[j] = 0; /* every child's parent is member 0, the root */
    }
    return s;
}

static uint64_t base_run(void *p)
{
    base_state_t *s = (base_state_t *)p;
    size_t n = s->instances, e = n * MEMBERS, c = n * CHILDREN;
    s->gen = (uint32_t *)malloc(e * sizeof *s->gen);
    s->inst_of = (uint32_t *)malloc(e * sizeof *s->inst_of);
    s->handles = (tes_entity_t *)malloc(e * sizeof *s->handles);
    s->inst_first = (uint32_t *)malloc(n * sizeof *s->inst_first);
    s->root_pos = (Position *)malloc(n * sizeof *s->root_pos);
    s->root_vel = (Velocity *)malloc(n * sizeof *s->root_vel);
    s->root_hp = (Health *)malloc(n * sizeof *s->root_hp);
    s->child_pos = (Position *)malloc(c * sizeof *s->child_pos);
    s->child_link = (Link *)malloc(c * sizeof *s->child_link);
    if (!s->gen || !s->inst_of || !s->handles || !s->inst_first || !s->root_pos ||
        !s->root_vel || !s->root_hp || !s->child_pos || !s->child_link) {
        bench_fail("malloc failed");
        return 0;
    }
    for (uint32_t k = 0; k < s->instances; k++) {
        uint32_t first = k * MEMBERS;
        for (uint32_t j = 0; j < MEMBERS; j++) {
            s->gen[first + j] = 1;
            s->inst_of[first + j] = k;
            s->handles[first + j] = tes_entity_make(first + j, 1);
        }
        s->inst_first[k] = first;
        s->root_pos[k] = s->t_pos[0];
        s->root_vel[k] = tmpl_vel;
        s->root_hp[k] = tmpl_hp;
        for (uint32_t j = 1; j < MEMBERS; j++) {
            size_t row = (size_t)k * CHILDREN + (j - 1);
            s->child_pos[row] = s->t_pos[j];
            Link l = s->t_link[j];
            l.parent = s->handles[first + s->t_ref[j]]; /* the fix-up */
            s->child_link[row] = l;
        }
    }
    uint64_t sum = (uint64_t)e;
    uint32_t step = s->instances / SAMPLE ? s->instances / SAMPLE : 1;
    for (uint32_t k = 0; k < s->instances; k += step) {
        sum += (uint64_t)s->root_hp[k].hp;
        for (uint32_t j = 1; j < MEMBERS; j++)
            sum += (uint64_t)s->child_link[(size_t)k * CHILDREN + (j - 1)].slot;
    }
    return sum;
}

static void base_after(void *p)
{
    base_state_t *s = (base_state_t *)p;
    if (s->child_link && !bench_failed()) {
        for (uint32_t k = 0; k < s->instances; k += 997)
            for (uint32_t j = 1; j < MEMBERS; j++)
                if (s->child_link[(size_t)k * CHILDREN + (j - 1)].parent != s->handles[k * MEMBERS])
                    bench_fail("baseline: bad fix-up");
    }
    free(s->gen);
    free(s->inst_of);
    free(s->handles);
    free(s->inst_first);
    free(s->root_pos);
    free(s->root_vel);
    free(s->root_hp);
    free(s->child_pos);
    free(s->child_link);
    s->gen = s->inst_of = s->inst_first = NULL;
    s->handles = NULL;
    s->root_pos = s->child_pos = NULL;
    s->root_vel = NULL;
    s->root_hp = NULL;
    s->child_link = NULL;
}

static void base_fini(void *p)
{
    base_state_t *s = (base_state_t *)p;
    base_after(s);
    free(s);
}

static int64_t ops(const bench_cfg_t *cfg) { return (int64_t)instances_of(cfg) * MEMBERS; }

const bench_workload_t bench_instantiate_n = {
    "instantiate_n: 5-member prefab bulk",
    "entity",
    ops,
    true,
    {tes_init_bulk, tes_before, tes_run, tes_after, tes_fini},
    {base_init, NULL, base_run, base_after, base_fini},
};

const bench_workload_t bench_instantiate_single = {
    "instantiate: 5-member prefab x1",
    "entity",
    ops,
    true,
    {tes_init_single, tes_before, tes_run, tes_after, tes_fini},
    {base_init, NULL, base_run, base_after, base_fini},
};
