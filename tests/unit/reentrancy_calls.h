/*
 * The calls of the re-entrancy matrix (test_reentrancy.c): one wrapper per
 * public call of tessera.h, made with valid arguments the fixture prepared.
 * A wrapper returns NULL when the outcome is the documented one, else why
 * not; for calls refused inside hooks the harness also checks the recorded
 * status and that nothing changed. Included by test_reentrancy.c only (the
 * unit test build makes one program per test_*.c file).
 */
#ifndef TES_TEST_REENTRANCY_CALLS_H
#define TES_TEST_REENTRANCY_CALLS_H

#include <stdio.h>
#include <string.h>

#include "tessera.h"

#define NBY 4   /* bystanders: entities with B only, never touched by a context */
#define NSUBJ 4 /* subjects: entities with H that the contexts change */

/* Everything a call needs, prepared before the context runs. */
typedef struct fixture {
    tes_world_t *w;
    int storage;
    tes_comp_t h, b, x, t, g, s1, s2, o1, o2;
    tes_entity_t by[NBY], subj[NSUBJ], fresh, tgt, dis, prefab, child, member;
    tes_entity_t bulk[2], copy, gone; /* made by change_everything */
    /* A tree of subjects with H (root, root's child, its child), which the
     * cascade context destroys from its root. by[1] is by[0]'s child; both
     * are named ("by0", "by1"). */
    tes_entity_t root, kid[2];
    tes_instance_t inst;
    tes_query_t *q_b;        /* plain query over B: the bystanders */
    tes_query_t *q_victim;   /* plain query, freed by a call */
    tes_query_t *q_group;    /* non-owning group, freed by a call */
    tes_query_t *q_own;      /* owning group, freed by a call */
    tes_query_t *q_kept;     /* non-owning group created by a call, checked afterwards */
    bool own_freed;
    uint32_t names;          /* components registered by calls */
} fixture_t;

enum { WORKS, BUSY };

typedef struct call {
    const char *name;
    int expect; /* WORKS or BUSY */
    bool once;  /* consumes a fixture object: run on the first firing only */
    /* Makes the call; returns NULL if the outcome is right, else why not.
     * For BUSY calls "right" means the call reported a failure (its
     * return value); the harness checks the recorded status and that
     * nothing changed. */
    const char *(*fn)(fixture_t *F);
} call_t;

/* ------------------------------------------------------------------ calls */

static const char *c_strerror(fixture_t *f)
{
    (void)f;
    const char *s = tes_strerror(TES_ERR_BUSY);
    return s && s[0] ? NULL : "tes_strerror gave nothing";
}

static const char *c_world_new_free_other(fixture_t *f)
{
    (void)f;
    tes_world_t *other = tes_world_new(NULL);
    if (!other)
        return "tes_world_new failed";
    tes_entity_t e = tes_spawn(other);
    bool ok = tes_alive(other, e);
    tes_world_free(other);
    return ok ? NULL : "the other world does not work";
}

static const char *c_world_free_self(fixture_t *f)
{
    tes_world_free(f->w);
    return NULL; /* void: the harness checks the status and the world */
}

static const char *c_world_stats(fixture_t *f)
{
    tes_world_stats_t s;
    if (tes_world_stats(f->w, &s) != TES_OK)
        return "tes_world_stats failed";
    return (int32_t)s.entities_alive == tes_entity_count(f->w) ? NULL : "stats disagree";
}

static const char *c_last_error(fixture_t *f)
{
    /* The harness provoked TES_ERR_INVALID just before the call. */
    return tes_last_error(f->w) == TES_ERR_INVALID ? NULL : "tes_last_error lost the status";
}

static const char *c_component(fixture_t *f)
{
    char name[32];
    snprintf(name, sizeof name, "Late%u", f->names++);
    tes_component_desc_t d = {.name = name, .size = 4};
    tes_comp_t c = tes_component(f->w, &d);
    if (!c)
        return "tes_component failed";
    if (tes_component_lookup(f->w, name) != c)
        return "the new component is not found";
    return tes_component(f->w, &d) == c ? NULL : "registering again gave another id";
}

static const char *c_component_lookup(fixture_t *f)
{
    return tes_component_lookup(f->w, "B") == f->b ? NULL : "lookup of B failed";
}

static const char *c_spawn(fixture_t *f) { return tes_spawn(f->w) == TES_NULL ? NULL : "spawned"; }

static const char *c_spawn_n(fixture_t *f)
{
    tes_entity_t out[3];
    return tes_spawn_n(f->w, 3, &f->b, 1, out) != TES_OK ? NULL : "spawned";
}

static const char *c_destroy(fixture_t *f) { return tes_destroy(f->w, f->tgt) ? NULL : "destroyed"; }

static const char *c_spawn_with(fixture_t *f)
{
    int64_t v = 7;
    tes_value_t vals[] = {{f->b, &v}, {f->x, NULL}};
    return tes_spawn_with(f->w, vals, 2) == TES_NULL ? NULL : "spawned";
}

static const char *c_spawn_bulk(fixture_t *f)
{
    int64_t v[3] = {1, 2, 3};
    const void *data[] = {v};
    tes_bulk_desc_t d = {3, &f->b, 1, data, NULL};
    return tes_spawn_bulk(f->w, &d) != TES_OK ? NULL : "spawned";
}

static const char *c_destroy_n(fixture_t *f)
{
    return tes_destroy_n(f->w, &f->tgt, 1) ? NULL : "destroyed";
}

static const char *c_destroy_matching(fixture_t *f)
{
    return tes_destroy_matching(f->q_b) < 0 ? NULL : "destroyed";
}

static const char *c_get_n(fixture_t *f)
{
    const void *out[NBY];
    if (tes_get_n(f->w, f->b, f->by, NBY, out) != NBY)
        return "tes_get_n wrong";
    for (int i = 0; i < NBY; i++)
        if (out[i] != tes_get(f->w, f->by[i], f->b) || *(const int64_t *)out[i] != 100 + i)
            return "tes_get_n wrong";
    return NULL;
}

static const char *c_alive(fixture_t *f)
{
    return tes_alive(f->w, f->by[0]) && !tes_alive(f->w, TES_NULL) ? NULL : "tes_alive wrong";
}

static const char *c_entity_count(fixture_t *f)
{
    tes_world_stats_t s;
    tes_world_stats(f->w, &s);
    return tes_entity_count(f->w) == (int32_t)s.entities_alive ? NULL : "count wrong";
}

static const char *c_add(fixture_t *f) { return tes_add(f->w, f->tgt, f->t) ? NULL : "added"; }

static const char *c_set(fixture_t *f)
{
    int64_t v = 99;
    return tes_set(f->w, f->tgt, f->b, &v) ? NULL : "set";
}

static const char *c_ensure(fixture_t *f)
{
    return tes_ensure(f->w, f->by[0], f->s1) == NULL ? NULL : "ensured";
}

static const char *c_remove(fixture_t *f) { return tes_remove(f->w, f->by[0], f->b) ? NULL : "removed"; }

static const char *c_has(fixture_t *f)
{
    return tes_has(f->w, f->by[1], f->b) && !tes_has(f->w, f->by[1], f->t) ? NULL : "tes_has wrong";
}

static const char *c_get(fixture_t *f)
{
    for (int i = 0; i < NBY; i++) {
        const int64_t *v = tes_get(f->w, f->by[i], f->b);
        if (!v || *v != 100 + i)
            return "tes_get wrong";
    }
    return NULL;
}

static const char *c_get_mut(fixture_t *f)
{
    int64_t *v = tes_get_mut(f->w, f->by[2], f->b);
    if (!v || v != tes_get(f->w, f->by[2], f->b))
        return "tes_get_mut wrong";
    *v = 102; /* writing through it is allowed; same value keeps the snapshot */
    return NULL;
}

static const char *c_clear(fixture_t *f) { return tes_clear(f->w, f->tgt) ? NULL : "cleared"; }

static const char *c_clone(fixture_t *f) { return tes_clone(f->w, f->by[0]) == TES_NULL ? NULL : "cloned"; }

static const char *c_components_of(fixture_t *f)
{
    tes_comp_t out[4];
    int32_t n = tes_components_of(f->w, f->by[3], out, 4);
    return n == 1 && out[0] == f->b ? NULL : "tes_components_of wrong";
}

static const char *c_disable(fixture_t *f) { return tes_disable(f->w, f->tgt) ? NULL : "disabled"; }
static const char *c_enable(fixture_t *f) { return tes_enable(f->w, f->dis) ? NULL : "enabled"; }

static const char *c_enabled(fixture_t *f)
{
    return tes_enabled(f->w, f->by[0]) && !tes_enabled(f->w, f->dis) ? NULL : "tes_enabled wrong";
}

static const char *c_query_new_plain(fixture_t *f)
{
    tes_query_desc_t d = {.terms = {{f->b, TES_AND, TES_IN}}};
    tes_query_t *q = tes_query_new(f->w, &d);
    if (!q)
        return "tes_query_new failed";
    int32_t n = tes_query_count(q);
    tes_query_free(q);
    return n == NBY ? NULL : "the new query counts wrong";
}

static const char *c_query_new_group(fixture_t *f)
{
    tes_query_desc_t d = {.terms = {{f->b}}, .flags = TES_QUERY_NONOWNING_GROUP};
    tes_query_t *q = tes_query_new(f->w, &d);
    if (!q)
        return "tes_query_new (non-owning group) failed";
    int32_t n = tes_query_count(q);
    tes_query_free(q);
    return n == NBY ? NULL : "the new group counts wrong";
}

static const char *c_query_new_group_kept(fixture_t *f)
{
    /* Subjects may be mid-change: checked after the context (check_kept). */
    tes_query_desc_t d = {.terms = {{f->h}, {f->x, TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP};
    f->q_kept = tes_query_new(f->w, &d);
    return f->q_kept ? NULL : "tes_query_new (kept group) failed";
}

static const char *c_query_new_owning(fixture_t *f)
{
    tes_query_desc_t d = {.terms = {{f->s1}, {f->s2}}, .flags = TES_QUERY_OWNING_GROUP};
    return tes_query_new(f->w, &d) == NULL ? NULL : "owning group built inside a hook";
}

static const char *c_query_free_plain(fixture_t *f)
{
    tes_query_free(f->q_victim);
    f->q_victim = NULL;
    return NULL;
}

static const char *c_query_free_group(fixture_t *f)
{
    tes_query_free(f->q_group);
    f->q_group = NULL;
    return NULL;
}

static const char *c_query_free_owning(fixture_t *f)
{
    tes_query_free(f->q_own);
    f->q_own = NULL;
    f->own_freed = true;
    return NULL;
}

static const char *c_query_count(fixture_t *f)
{
    return tes_query_count(f->q_b) == NBY ? NULL : "tes_query_count wrong";
}

static const char *c_query_iter(fixture_t *f)
{
    tes_iter_t it = tes_query_iter(f->q_b);
    int32_t n = 0;
    while (tes_iter_next(&it))
        n += it.count;
    tes_iter_fini(&it);
    return n == 0 ? NULL : "iterated inside a hook";
}

static const char *c_iter_calls(fixture_t *f)
{
    /* On the refused iterator and on a zeroed one: finished, no fields. */
    tes_iter_t it = tes_query_iter(f->q_b);
    bool refused = tes_last_error(f->w) == TES_ERR_BUSY;
    tes_iter_t zero;
    memset(&zero, 0, sizeof zero);
    bool ok = !tes_iter_next(&zero) && tes_field(&zero, 0) == NULL && tes_field(&it, 0) == NULL &&
              !tes_iter_next(&it) && tes_field(&it, 0) == NULL;
    tes_iter_fini(&it);
    tes_iter_fini(&zero);
    return ok && refused ? NULL : "iterator calls wrong";
}

static const char *c_defer_begin(fixture_t *f) { return tes_defer_begin(f->w) ? NULL : "level opened"; }
static const char *c_defer_end(fixture_t *f) { return tes_defer_end(f->w) ? NULL : "level closed"; }

static const char *c_is_deferred(fixture_t *f)
{
    bool a = tes_is_deferred(f->w), b = tes_is_deferred(f->w);
    return a == b ? NULL : "tes_is_deferred unstable";
}

static const char *c_prefab_new(fixture_t *f) { return tes_prefab_new(f->w) == TES_NULL ? NULL : "made"; }

static const char *c_prefab_child(fixture_t *f)
{
    return tes_prefab_child(f->w, f->prefab) == TES_NULL ? NULL : "made";
}

static const char *c_prefab_members(fixture_t *f)
{
    tes_entity_t out[4];
    int32_t n = tes_prefab_members(f->w, f->prefab, out, 4);
    return n == 2 && out[0] == f->prefab && out[1] == f->child ? NULL : "members wrong";
}

static const char *c_instantiate(fixture_t *f)
{
    tes_entity_t out[2];
    return tes_instantiate(f->w, f->prefab, out, 2) == 0 ? NULL : "instantiated";
}

static const char *c_instantiate_n(fixture_t *f)
{
    tes_instance_t out[2];
    return tes_instantiate_n(f->w, f->prefab, 2, out) ? NULL : "instantiated";
}

static const char *c_instance_destroy(fixture_t *f)
{
    return tes_instance_destroy(f->w, f->inst) ? NULL : "destroyed";
}

static const char *c_instance_reads(fixture_t *f)
{
    tes_entity_t out[4];
    if (tes_instance_of(f->w, f->member) != f->inst || !tes_instance_alive(f->w, f->inst))
        return "instance lookups wrong";
    return tes_instance_members(f->w, f->inst, out, 4) == 2 && out[0] == f->member
               ? NULL
               : "tes_instance_members wrong";
}

static const char *c_instance_detach(fixture_t *f)
{
    return tes_instance_detach(f->w, f->member) ? NULL : "detached";
}

static const char *c_instance_adopt(fixture_t *f)
{
    return tes_instance_adopt(f->w, f->inst, f->tgt) ? NULL : "adopted";
}

static const char *c_handles(fixture_t *f)
{
    tes_entity_t e = f->by[0];
    return tes_entity_make(tes_entity_index(e), tes_entity_generation(e)) == e ? NULL
                                                                               : "handles wrong";
}

/* Snapshots: refused before a byte is written or read. */
static int c_no_write(const void *data, size_t size, void *user)
{
    (void)data, (void)size, (void)user;
    return TES_ERR_IO; /* never reached when refused */
}

static int c_no_read(void *data, size_t size, void *user)
{
    (void)data, (void)size, (void)user;
    return TES_ERR_IO;
}

static const char *c_snapshot_save(fixture_t *f)
{
    tes_writer_t out = {c_no_write, NULL};
    return tes_snapshot_save(f->w, &out) == TES_ERR_BUSY ? NULL : "saved";
}

static const char *c_snapshot_load(fixture_t *f)
{
    tes_reader_t in = {c_no_read, NULL};
    return tes_snapshot_load(f->w, &in) == TES_ERR_BUSY ? NULL : "loaded";
}

/* The hierarchy: links and names are structural (refused), reads work. */
static const char *c_set_parent(fixture_t *f)
{
    return tes_set_parent(f->w, f->tgt, f->by[0]) ? NULL : "linked";
}

static const char *c_set_parent_root(fixture_t *f)
{
    return tes_set_parent(f->w, f->by[1], TES_NULL) ? NULL : "unlinked";
}

/* A batch of links is structural like one link. */
static const char *c_set_parent_n(fixture_t *f)
{
    tes_entity_t kids[2] = {f->tgt, f->by[1]}, parents[2] = {f->by[0], TES_NULL};
    return tes_set_parent_n(f->w, kids, parents, 2) ? NULL : "linked";
}

/* The depth sort moves rows: refused in every hook context. */
static const char *c_sort_by_depth(fixture_t *f)
{
    return tes_sort_by_depth(f->w) == TES_ERR_BUSY ? NULL : "sorted";
}

static const char *c_destroy_tree(fixture_t *f)
{
    return tes_destroy(f->w, f->by[0]) ? NULL : "destroyed a tree";
}

static const char *c_set_name(fixture_t *f)
{
    return tes_set_name(f->w, f->tgt, "named") ? NULL : "named";
}

static const char *c_unname(fixture_t *f)
{
    return tes_set_name(f->w, f->by[0], NULL) ? NULL : "unnamed";
}

static const char *c_hier_reads(fixture_t *f)
{
    tes_entity_t kids[2];
    if (tes_parent(f->w, f->by[1]) != f->by[0] || tes_parent(f->w, f->by[0]) != TES_NULL)
        return "tes_parent wrong";
    if (tes_children(f->w, f->by[0], kids, 2) != 1 || kids[0] != f->by[1])
        return "tes_children wrong";
    return tes_depth(f->w, f->by[1]) == 1 && tes_depth(f->w, f->by[0]) == 0 ? NULL
                                                                             : "tes_depth wrong";
}

static const char *c_name_reads(fixture_t *f)
{
    char buf[16];
    const char *n = tes_name(f->w, f->by[0]);
    if (!n || strcmp(n, "by0") != 0)
        return "tes_name wrong";
    if (tes_path(f->w, f->by[1], buf, (int32_t)sizeof buf) != 7 || strcmp(buf, "by0/by1") != 0)
        return "tes_path wrong";
    return tes_lookup_path(f->w, "by0/by1") == f->by[1] ? NULL : "tes_lookup_path wrong";
}

static const call_t CALLS[] = {
    {"tes_strerror", WORKS, false, c_strerror},
    {"tes_world_new/free (another world)", WORKS, false, c_world_new_free_other},
    {"tes_world_free (this world)", BUSY, false, c_world_free_self},
    {"tes_world_stats", WORKS, false, c_world_stats},
    {"tes_last_error", WORKS, false, c_last_error},
    {"tes_component", WORKS, false, c_component},
    {"tes_component_lookup", WORKS, false, c_component_lookup},
    {"tes_spawn", BUSY, false, c_spawn},
    {"tes_spawn_n", BUSY, false, c_spawn_n},
    {"tes_destroy", BUSY, false, c_destroy},
    {"tes_spawn_with", BUSY, false, c_spawn_with},
    {"tes_spawn_bulk", BUSY, false, c_spawn_bulk},
    {"tes_destroy_n", BUSY, false, c_destroy_n},
    {"tes_destroy_matching", BUSY, false, c_destroy_matching},
    {"tes_get_n", WORKS, false, c_get_n},
    {"tes_alive", WORKS, false, c_alive},
    {"tes_entity_count", WORKS, false, c_entity_count},
    {"tes_add", BUSY, false, c_add},
    {"tes_set", BUSY, false, c_set},
    {"tes_ensure", BUSY, false, c_ensure},
    {"tes_remove", BUSY, false, c_remove},
    {"tes_has", WORKS, false, c_has},
    {"tes_get", WORKS, false, c_get},
    {"tes_get_mut", WORKS, false, c_get_mut},
    {"tes_clear", BUSY, false, c_clear},
    {"tes_clone", BUSY, false, c_clone},
    {"tes_components_of", WORKS, false, c_components_of},
    {"tes_disable", BUSY, false, c_disable},
    {"tes_enable", BUSY, false, c_enable},
    {"tes_enabled", WORKS, false, c_enabled},
    {"tes_query_new (plain) + tes_query_free", WORKS, false, c_query_new_plain},
    {"tes_query_new (non-owning group) + free", WORKS, false, c_query_new_group},
    {"tes_query_new (non-owning group, kept)", WORKS, true, c_query_new_group_kept},
    {"tes_query_new (owning group)", BUSY, false, c_query_new_owning},
    {"tes_query_free (plain)", WORKS, true, c_query_free_plain},
    {"tes_query_free (non-owning group)", WORKS, true, c_query_free_group},
    {"tes_query_free (owning group)", WORKS, true, c_query_free_owning},
    {"tes_query_count", WORKS, false, c_query_count},
    {"tes_query_iter", BUSY, false, c_query_iter},
    {"tes_iter_next/tes_field/tes_iter_fini", WORKS, false, c_iter_calls},
    {"tes_defer_begin", BUSY, false, c_defer_begin},
    {"tes_defer_end", BUSY, false, c_defer_end},
    {"tes_is_deferred", WORKS, false, c_is_deferred},
    {"tes_prefab_new", BUSY, false, c_prefab_new},
    {"tes_prefab_child", BUSY, false, c_prefab_child},
    {"tes_prefab_members", WORKS, false, c_prefab_members},
    {"tes_instantiate", BUSY, false, c_instantiate},
    {"tes_instantiate_n", BUSY, false, c_instantiate_n},
    {"tes_instance_destroy", BUSY, false, c_instance_destroy},
    {"tes_instance_of/alive/members", WORKS, false, c_instance_reads},
    {"tes_instance_detach", BUSY, false, c_instance_detach},
    {"tes_instance_adopt", BUSY, false, c_instance_adopt},
    {"tes_entity_index/generation/make", WORKS, false, c_handles},
    {"tes_snapshot_save", BUSY, false, c_snapshot_save},
    {"tes_snapshot_load", BUSY, false, c_snapshot_load},
    {"tes_set_parent", BUSY, false, c_set_parent},
    {"tes_set_parent (to the roots)", BUSY, false, c_set_parent_root},
    {"tes_set_parent_n", BUSY, false, c_set_parent_n},
    {"tes_destroy (a parent: cascades)", BUSY, false, c_destroy_tree},
    {"tes_set_name", BUSY, false, c_set_name},
    {"tes_set_name (NULL: unnames)", BUSY, false, c_unname},
    {"tes_parent/tes_children/tes_depth", WORKS, false, c_hier_reads},
    {"tes_name/tes_path/tes_lookup_path", WORKS, false, c_name_reads},
    {"tes_sort_by_depth", BUSY, false, c_sort_by_depth},
};
#define NCALLS ((int)(sizeof CALLS / sizeof CALLS[0]))

#endif
