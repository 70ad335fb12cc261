/*
 * The allocation-failure sweep's hierarchy scenarios: every allocation of
 * link pages (entities in two pages), the name maps and name copies, the
 * destroy plan of a cascade (tes_destroy, tes_destroy_n,
 * tes_destroy_matching), a clone that joins its source's parent, an
 * instantiation that copies its prefab's links and names, and deferred
 * links (the queued call's argument, the flush), by-depth iterations
 * (the pointer walk's match lists, depth memo, value addresses and the
 * order it keeps between iterations, the general walk's match lists and
 * sort, the sorted walk's table list) and tes_sort_by_depth (its depths, each table's new block and record,
 * the record list). The sweep's snapshot
 * holds each entity's parent, children in order and name, so a failed
 * call must leave all of them as they were.
 */
#include <stdio.h>
#include <string.h>

#include "fault/fault.h"

static void link(fs_run_t *r, tes_entity_t c, tes_entity_t p)
{
    FS_STEP(r, tes_set_parent(r->w, c, p));
}

static void name(fs_run_t *r, tes_entity_t e, const char *n)
{
    FS_STEP(r, tes_set_name(r->w, e, n));
}

void fs_sc_hierarchy(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    /* Roots in the first link page, children past index 1024 (a second). */
    tes_entity_t root[3], kid[12];
    for (int i = 0; i < 3 && !r->dead; i++) {
        root[i] = fs_spawn(r);
        fs_set(r, root[i], FS_C_T24, (uint32_t)i);
    }
    static const int plain[] = {FS_C_T4};
    fs_spawn_n(r, 1100, plain, 1);
    for (int i = 0; i < 12 && !r->dead; i++) {
        kid[i] = fs_spawn(r);
        fs_set(r, kid[i], i % 2 ? FS_C_S8 : FS_C_T24, 100 + (uint32_t)i);
    }
    if (r->dead)
        return;
    for (int i = 0; i < 12; i++)
        link(r, kid[i], i < 4 ? root[i % 3] : kid[i - 4]);
    char buf[16];
    for (int i = 0; i < 12; i++) {
        snprintf(buf, sizeof buf, "k%d", i);
        name(r, kid[i], buf);
    }
    name(r, root[0], "r0");
    name(r, root[1], "r1");
    name(r, kid[0], "renamed");
    name(r, kid[1], NULL);
    /* Reparenting moves the sibling key; the clone joins its parent. */
    link(r, kid[5], root[2]);
    link(r, kid[6], TES_NULL);
    fs_clone(r, kid[4]);
    /* A prefab tree and its instances. */
    tes_entity_t pf = fs_prefab_new(r);
    tes_entity_t m1 = fs_prefab_child(r, pf), m2 = fs_prefab_child(r, pf);
    link(r, m1, pf);
    link(r, m2, m1);
    name(r, m1, "m1");
    name(r, m2, "m2");
    fs_instantiate(r, pf, 3);
    fs_instantiate_n(r, pf, 3);
    /* Cascades: one subtree, a list, the matches of a query. */
    fs_destroy(r, kid[4]);
    tes_entity_t two[2] = {kid[5], root[1]};
    FS_STEP(r, tes_destroy_n(r->w, two, 2));
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = r->ids[FS_C_T24];
    int q = fs_query_new(r, &d, -1);
    if (q >= 0 && !r->dead)
        FS_STEP(r, tes_destroy_matching(r->queries[q]) < 0 ? tes_last_error(r->w) : TES_OK);
}

void fs_sc_hierarchy_defer(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    tes_entity_t e[8];
    for (int i = 0; i < 8 && !r->dead; i++) {
        e[i] = fs_spawn(r);
        fs_set(r, e[i], FS_C_T24, (uint32_t)i);
    }
    if (r->dead)
        return;
    fs_defer_begin(r);
    for (int i = 1; i < 8; i++)
        link(r, e[i], e[(i - 1) / 2]);
    fs_defer_end(r);
    fs_defer_begin(r);
    link(r, e[7], e[1]);
    fs_destroy(r, e[2]);
    fs_defer_end(r);
    fs_destroy(r, e[0]);
}

/* tes_set_parent_n: a short batch whose entities lie in a link page not
 * made yet (the page, the page table), a long one (its undo log is
 * allocated) that moves named children (sibling-key room) and reverses
 * some of its own pairs, and a deferred one (the queued command, then
 * the flush's pages and log). */
void fs_sc_hierarchy_batch(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    tes_entity_t p[4], kid[48];
    for (int i = 0; i < 4 && !r->dead; i++) {
        p[i] = fs_spawn(r);
        fs_set(r, p[i], FS_C_T24, (uint32_t)i);
    }
    static const int plain[] = {FS_C_T4};
    fs_spawn_n(r, 2100, plain, 1); /* the kids in a third link page */
    for (int i = 0; i < 48 && !r->dead; i++)
        kid[i] = fs_spawn(r);
    if (r->dead)
        return;
    tes_entity_t ks[48], ps[48];
    for (int i = 0; i < 8; i++)
        ks[i] = kid[i], ps[i] = p[i % 4];
    FS_STEP(r, tes_set_parent_n(r->w, ks, ps, 8));
    char buf[16];
    for (int i = 0; i < 8; i++) {
        snprintf(buf, sizeof buf, "k%d", i);
        name(r, kid[i], buf);
    }
    for (int i = 0; i < 48; i++) {
        ks[i] = kid[(i * 7) % 48];
        ps[i] = i % 5 == 4 ? TES_NULL : p[(i * 3) % 4];
    }
    ks[47] = kid[8], ps[47] = kid[9]; /* a leaf becomes a parent */
    FS_STEP(r, tes_set_parent_n(r->w, ks, ps, 48));
    fs_defer_begin(r);
    for (int i = 0; i < 40; i++)
        ks[i] = kid[i], ps[i] = p[(i + 1) % 4];
    FS_STEP(r, tes_set_parent_n(r->w, ks, ps, 40));
    fs_defer_end(r);
}

/* Iterates query i to its end, a step per chunk: a by-depth iteration
 * allocates in its first step, which then fails with TES_ERR_NOMEM and
 * changes nothing. */
static void drain(fs_run_t *r, int i)
{
    if (r->dead || i < 0)
        return;
    tes_iter_t it = fs_iter(r, i);
    while (fs_iter_next(r, &it))
        ;
}

void fs_sc_hierarchy_cascade(fs_run_t *r)
{
    if (!fs_world_new(r, NULL))
        return;
    fs_register_base(r);
    /* A forest of plain table values in two tables (the pointer walk, its
     * order kept), one child of a parent without table components (not
     * kept, never walked sorted), entities whose parents lie in several
     * tables, and entities with a hooked value (the general walk). */
    enum { N = 40 };
    tes_entity_t e[N];
    static const int plain[] = {FS_C_T4, FS_C_T16};
    for (int i = 0; i < N && !r->dead; i++) {
        e[i] = fs_spawn(r);
        fs_set(r, e[i], FS_C_T4, (uint32_t)i);
        fs_set(r, e[i], FS_C_T16, (uint32_t)i);
        if (i % 5 == 0)
            fs_set(r, e[i], FS_C_T24, (uint32_t)i);
    }
    fs_spawn_n(r, 300, plain, 2);
    if (r->dead)
        return;
    for (int i = 1; i < N; i++)
        link(r, e[i], e[(i - 1) / 3]);
    tes_entity_t bare = fs_spawn(r);
    if (r->dead)
        return;
    link(r, e[N - 1], bare);
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.flags = TES_QUERY_CASCADE;
    d.terms[0] = (tes_term_t){.comp = r->ids[FS_C_T4]};
    d.terms[1] = (tes_term_t){.comp = r->ids[FS_C_T16], .access = TES_IN};
    d.terms[2] = (tes_term_t){.comp = r->ids[FS_C_T4], .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT};
    int fast = fs_query_new(r, &d, -1);
    d.terms[2].oper = TES_AND;
    d.terms[3] = (tes_term_t){.comp = r->ids[FS_C_T24], .oper = TES_NOT, .access = TES_IN, .src = TES_SRC_PARENT};
    int filtered = fs_query_new(r, &d, -1);
    memset(&d, 0, sizeof d);
    d.terms[0] = (tes_term_t){.comp = r->ids[FS_C_T24]};
    d.terms[1] = (tes_term_t){.comp = r->ids[FS_C_T4], .oper = TES_OPTIONAL, .access = TES_IN, .src = TES_SRC_PARENT};
    int general = fs_query_new(r, &d, -1);
    drain(r, fast);
    drain(r, filtered);
    drain(r, general);
    /* The parent without components gains one: the next iterations
     * collect again, then keep their order. */
    fs_set(r, bare, FS_C_T4, 7);
    drain(r, fast);
    drain(r, fast);
    drain(r, filtered);
    drain(r, filtered);
    /* The depth sort, then the sorted walks; links and rows change (the
     * pointer and general walks again, collected again), and a sort once
     * more. */
    FS_STEP(r, tes_sort_by_depth(r->w));
    drain(r, fast);
    drain(r, filtered);
    drain(r, general);
    link(r, e[7], e[30]);
    drain(r, fast);
    drain(r, general);
    fs_add(r, e[3], FS_C_TTAG);
    FS_STEP(r, tes_sort_by_depth(r->w));
    drain(r, fast);
    drain(r, general);
}
