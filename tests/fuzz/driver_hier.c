/*
 * The hierarchy in the differential fuzzer (see driver_internal.h and
 * model.h, model_hier.c). The ops:
 * - tes_set_parent: mostly a live child under a live parent or TES_NULL,
 *   prefab members under members of their prefab (so instantiation has
 *   trees to copy), and the refused kinds: self, a descendant (a cycle),
 *   stale handles, a prefab entity with a plain one or members of two
 *   prefabs, a named child under a parent with a child of that name; the
 *   model gives the exact status, and the full check finds any change a
 *   refused call made. Deferred: checked at the call, queued, checked
 *   again at the flush (model_defer.c).
 * - tes_set_parent_n (one set_parent op in five): a few pairs, mostly
 *   plain links, some refused kinds, some reversing an earlier pair; the
 *   model applies them in order, all or nothing (fz_model_link_n), and
 *   the detail of a refusal must name the refused pair. Deferred: the
 *   link-independent checks at the call, the whole batch at the flush.
 * - tes_set_name from a small pool of names (so siblings collide often),
 *   NULL, and the refused kinds: empty, '/' inside, 256 bytes; 255 bytes
 *   is fine. Applied at once, even while deferred.
 * - The reads: tes_parent, tes_children (random cap, NULL out), tes_depth,
 *   tes_name, tes_path (random cap: truncation), tes_lookup_path (paths of
 *   live entities, and malformed ones).
 * Query chunks by depth and fields of terms about the parent are checked
 * here too (driver_query.c calls in). The full check (fzd_check_hier)
 * compares the whole forest: every live
 * entity's parent, children in order, depth, name, path, and the lookup of
 * its path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/driver_internal.h"

static bool deferred(const fz_driver_t *d) { return d->defer_depth > 0; }

static void oom(fz_driver_t *d) { fzd_fail(d, "model out of memory"); }

/* Names siblings often share: a small pool. */
static const char *const pool[] = {"a", "b", "c", "hull", "turret", "t0", "x y", "\xc3\xa9"};
#define NPOOL ((uint32_t)(sizeof pool / sizeof pool[0]))

/* A random live descendant of live index i (i itself when it has none). */
static uint32_t descendant(fz_driver_t *d, uint32_t i)
{
    while (d->m.slots[i].nkids && fzd_draw(d, 4))
        i = d->m.slots[i].kids[fzd_draw(d, d->m.slots[i].nkids)];
    return i;
}

/* A live member of a live prefab, or TES_NULL. */
static tes_entity_t prefab_member(fz_driver_t *d, const fz_mprefab_t **rec)
{
    const fz_model_t *m = &d->m;
    *rec = NULL;
    if (!m->nprefabs)
        return TES_NULL;
    const fz_mprefab_t *p = &m->prefabs[fzd_draw(d, m->nprefabs)];
    if (!p->n || !fz_model_alive(m, p->members[0]))
        return TES_NULL;
    *rec = p;
    tes_entity_t e = p->members[fzd_draw(d, p->n)];
    return fz_model_alive(m, e) ? e : p->members[0];
}

/* A (child, parent) pair for a link, with the refused kinds mixed in. */
static void pick_link(fz_driver_t *d, tes_entity_t *child_out, tes_entity_t *parent_out)
{
    fz_model_t *m = &d->m;
    tes_entity_t child = fzd_pick_entity(d), parent;
    uint32_t r = fzd_draw(d, 100);
    const fz_mprefab_t *rec = NULL;
    if (r < 15) {
        parent = TES_NULL;
    } else if (r < 35 && m->nprefabs && (child = prefab_member(d, &rec)) != TES_NULL) {
        /* Within a prefab; now and then another prefab's member. */
        const fz_mprefab_t *other = rec;
        parent = fzd_draw(d, 10) ? rec->members[fzd_draw(d, rec->n)] : prefab_member(d, &other);
    } else if (r < 42 && fz_model_alive(m, child)) {
        parent = fz_model_handle(m, descendant(d, tes_entity_index(child))); /* self or a cycle */
    } else if (r < 50 && fz_model_alive(m, child) && m->slots[tes_entity_index(child)].parent) {
        /* The same parent again, or a sibling (whose name may collide). */
        const fz_mslot_t *p = &m->slots[m->slots[tes_entity_index(child)].parent - 1];
        parent = fzd_draw(d, 2) ? fz_model_handle(m, (uint32_t)(p - m->slots))
                                : fz_model_handle(m, p->kids[fzd_draw(d, p->nkids)]);
    } else {
        parent = fzd_pick_entity(d);
    }
    *child_out = child;
    *parent_out = parent;
}

/* Both ends of a link are as the model says now. */
static void check_ends(fz_driver_t *d, tes_entity_t child, tes_entity_t parent, int rc)
{
    const fz_model_t *m = &d->m;
    tes_entity_t ends[2] = {child, parent};
    for (int i = 0; i < 2 && !fzd_failed(d); i++) {
        const fz_mslot_t *s = fz_model_get(m, ends[i]);
        if (!s)
            continue;
        tes_entity_t p = tes_parent(d->w, ends[i]);
        tes_entity_t pw = s->parent ? fz_model_handle(m, s->parent - 1) : TES_NULL;
        int32_t n = tes_children(d->w, ends[i], NULL, 0);
        if (p != pw || n != (int32_t)s->nkids)
            fzd_fail(d, "after %s(%#llx, %#llx) = %d: %#llx has parent %#llx and %d "
                        "children, model %#llx and %u",
                     d->op, ull(child), ull(parent), rc, ull(ends[i]), ull(p), (int)n, ull(pw),
                     s->nkids);
    }
}

/* tes_set_parent_n of a few pairs: mostly plain links (a live child under
 * a live entity or the roots), now and then a refused kind, and pairs that
 * undo or reverse an earlier pair (so a cycle or a name clash can appear
 * only through an earlier pair). The model applies the pairs in order,
 * all or nothing; while deferred, only the checks that hold whatever the
 * links are run at the call and the batch is queued whole. */
static void set_parent_n(fz_driver_t *d)
{
    d->op = "tes_set_parent_n";
    fz_model_t *m = &d->m;
    tes_entity_t kids[FZ_BATCH_MAX], parents[FZ_BATCH_MAX];
    uint32_t n = 1 + fzd_draw(d, FZ_BATCH_MAX);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = fzd_draw(d, 100);
        if (i > 0 && r < 15) { /* the previous pair reversed: a cycle through it */
            kids[i] = parents[i - 1] != TES_NULL ? parents[i - 1] : kids[i - 1];
            parents[i] = kids[i - 1];
        } else if (i > 0 && r < 25) { /* a sibling of the previous child's new place */
            kids[i] = fzd_pick_entity(d);
            parents[i] = parents[i - 1];
        } else if (r < 40) {
            pick_link(d, &kids[i], &parents[i]);
        } else {
            kids[i] = fzd_pick_entity(d);
            parents[i] = fzd_draw(d, 6) ? fzd_pick_entity(d) : TES_NULL;
        }
    }
    uint32_t at = 0;
    int want = deferred(d) ? fz_model_link_n_static(m, kids, parents, n, &at)
                           : fz_model_link_n(m, kids, parents, n, false, &at);
    if (want == FZ_OOM) {
        oom(d);
        return;
    }
    int rc = tes_set_parent_n(d->w, kids, parents, n);
    fzd_check_status(d, rc, want, want);
    if (fzd_failed(d))
        return;
    if (rc != TES_OK) {
        char word[32];
        snprintf(word, sizeof word, "pair %u", at);
        const char *detail = tes_last_error_detail(d->w);
        if (!detail || !strstr(detail, word))
            fzd_fail(d, "tes_set_parent_n = %d: detail \"%s\" does not name %s", rc,
                     detail ? detail : "(none)", word);
    } else {
        d->res->links += n;
        if (deferred(d) && !fz_model_queue_batch(m, kids, parents, n))
            oom(d);
    }
    for (uint32_t i = 0; i < n && !fzd_failed(d); i++)
        check_ends(d, kids[i], parents[i], rc);
}

void fzd_op_set_parent(fz_driver_t *d)
{
    if (fzd_draw(d, 5) == 0) {
        set_parent_n(d);
        return;
    }
    d->op = "tes_set_parent";
    fz_model_t *m = &d->m;
    tes_entity_t child, parent;
    pick_link(d, &child, &parent);
    int want = fz_model_link_status(m, child, parent);
    int rc = tes_set_parent(d->w, child, parent);
    fzd_check_status(d, rc, want, 1);
    if (fzd_failed(d))
        return;
    if (rc == TES_OK) {
        d->res->links++;
        if (deferred(d)) {
            fzd_queue(d, FZ_Q_SET_PARENT, child, 0, parent);
        } else {
            uint32_t p1 = parent == TES_NULL ? 0 : tes_entity_index(parent) + 1;
            if (!fz_model_link(m, tes_entity_index(child), p1))
                oom(d);
        }
    }
    /* Refused or not, both ends are as the model says now. */
    check_ends(d, child, parent, rc);
}

/* A name argument: from the pool mostly, a sibling's, NULL, or refused. */
static const char *pick_name(fz_driver_t *d, tes_entity_t e, char *buf)
{
    const fz_model_t *m = &d->m;
    uint32_t r = fzd_draw(d, 100);
    if (r < 60)
        return pool[fzd_draw(d, NPOOL)];
    if (r < 70) {
        /* A sibling's name (refused unless it is e's own). */
        const fz_mslot_t *s = fz_model_get(m, e);
        if (s && s->parent) {
            const fz_mslot_t *p = &m->slots[s->parent - 1];
            const char *n = m->slots[p->kids[fzd_draw(d, p->nkids)]].name;
            if (n)
                return n;
        }
        return pool[0];
    }
    if (r < 80)
        return NULL;
    if (r < 84)
        return "";
    if (r < 88)
        return fzd_draw(d, 2) ? "a/b" : "/";
    size_t len = r < 94 ? 255 : 256;
    memset(buf, 'a' + (int)fzd_draw(d, 3), len);
    buf[len] = '\0';
    return buf;
}

void fzd_op_set_name(fz_driver_t *d)
{
    d->op = "tes_set_name";
    tes_entity_t e = fzd_pick_entity(d);
    /* Prefab members often: instantiation copies their names. */
    const fz_mprefab_t *rec;
    if (d->m.nprefabs && fzd_draw(d, 4) == 0) {
        tes_entity_t member = prefab_member(d, &rec);
        if (member != TES_NULL)
            e = member;
    }
    char buf[260];
    const char *name = pick_name(d, e, buf);
    /* (A sibling's name points into the model: copy it first.) */
    char copy[260];
    if (name && name != buf && strlen(name) < sizeof copy) {
        memcpy(copy, name, strlen(name) + 1);
        name = copy;
    }
    int want = fz_model_name_status(&d->m, e, name);
    int rc = tes_set_name(d->w, e, name);
    fzd_check_status(d, rc, want, 1);
    if (fzd_failed(d) || rc != TES_OK)
        return;
    d->res->names++;
    if (!fz_model_set_name(&d->m, tes_entity_index(e), name))
        oom(d);
    const char *got = tes_name(d->w, e);
    if (name ? !got || strcmp(got, name) : got != NULL)
        fzd_fail(d, "tes_name(%#llx) after tes_set_name is \"%s\", model \"%s\"", ull(e),
                 got ? got : "(null)", name ? name : "(null)");
}

/* ------------------------------------------------------------------ reads */

static void check_children(fz_driver_t *d, tes_entity_t e, int32_t cap, bool null_out)
{
    const fz_mslot_t *s = fz_model_get(&d->m, e);
    uint32_t n = s ? s->nkids : 0;
    int32_t want = !s ? TES_ERR_STALE : cap < 0 || (cap > 0 && null_out) ? TES_ERR_INVALID
                                                                          : (int32_t)n;
    tes_entity_t *got = malloc(((size_t)n + 8) * sizeof *got);
    if (!got) {
        oom(d);
        return;
    }
    const tes_entity_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
    for (uint32_t i = 0; i < n + 8; i++)
        got[i] = sentinel;
    int32_t c = tes_children(d->w, e, null_out ? NULL : got, cap);
    if (c != want) {
        fzd_fail(d, "tes_children(%#llx, cap %d%s) = %d, model %d", ull(e), (int)cap,
                 null_out ? ", out NULL" : "", (int)c, (int)want);
    } else if (c < 0) {
        d->last_error = tes_last_error(d->w);
        if (d->last_error != c)
            fzd_fail(d, "tes_children returned %d but tes_last_error is %d", (int)c, d->last_error);
    } else {
        int32_t written = cap < c ? cap : c;
        for (int32_t i = 0; i < (int32_t)n + 8; i++)
            if (got[i] != (i < written ? fz_model_handle(&d->m, s->kids[i]) : sentinel)) {
                fzd_fail(d, "tes_children(%#llx, cap %d)[%d] = %#llx, model %#llx", ull(e),
                         (int)cap, (int)i, ull(got[i]),
                         ull(i < written ? fz_model_handle(&d->m, s->kids[i]) : sentinel));
                break;
            }
    }
    free(got);
}

/* tes_path(e) with cap (buf NULL when null_buf) against the model. */
static void check_path(fz_driver_t *d, tes_entity_t e, int32_t cap, bool null_buf)
{
    const fz_mslot_t *s = fz_model_get(&d->m, e);
    size_t room = 64 * 260;
    char *want = malloc(room), *got = malloc(room + 8);
    if (!want || !got) {
        free(want);
        free(got);
        oom(d);
        return;
    }
    size_t len = s ? fz_model_path(&d->m, tes_entity_index(e), want, room) : 0;
    int32_t expect = !s ? TES_ERR_STALE : cap < 0 || (cap > 0 && null_buf) ? TES_ERR_INVALID
                                                                            : (int32_t)len;
    if (cap > (int32_t)room)
        cap = (int32_t)room;
    memset(got, 0x7f, room + 8);
    int32_t c = tes_path(d->w, e, null_buf ? NULL : got, cap);
    if (c != expect) {
        fzd_fail(d, "tes_path(%#llx, cap %d%s) = %d, model %d", ull(e), (int)cap,
                 null_buf ? ", buf NULL" : "", (int)c, (int)expect);
    } else if (c < 0) {
        d->last_error = tes_last_error(d->w);
        if (d->last_error != c)
            fzd_fail(d, "tes_path returned %d but tes_last_error is %d", (int)c, d->last_error);
    } else if (len + 1 > room) {
        /* too long for the model's buffer: the length is checked */
    } else if (cap > 0) {
        size_t put = len < (size_t)cap ? len : (size_t)cap - 1;
        if (memcmp(got, want, put) != 0 || got[put] != '\0')
            fzd_fail(d, "tes_path(%#llx, cap %d) wrote \"%.*s\", model \"%.*s\"", ull(e), (int)cap,
                     (int)put, got, (int)put, want);
        else if ((unsigned char)got[put + 1] != 0x7f)
            fzd_fail(d, "tes_path(%#llx, cap %d) wrote past the NUL", ull(e), (int)cap);
    } else if ((unsigned char)got[0] != 0x7f) {
        fzd_fail(d, "tes_path(%#llx, cap 0) wrote to buf", ull(e));
    }
    if (!fzd_failed(d) && expect > 0 && len + 1 <= room) {
        tes_entity_t at = tes_lookup_path(d->w, want);
        if (at != e)
            fzd_fail(d, "tes_lookup_path(\"%s\") = %#llx, the path of %#llx", want, ull(at), ull(e));
    }
    free(want);
    free(got);
}

/* What a tes_lookup_path that finds nothing records for the thread:
 * TES_ERR_INVALID for a path no entity can have (NULL, an empty segment,
 * a segment past 255 bytes), TES_OK for a well-formed one. */
static int lookup_miss_status(const char *path)
{
    if (!path)
        return TES_ERR_INVALID;
    for (const char *s = path;;) {
        const char *end = strchr(s, '/');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len == 0 || len > 255)
            return TES_ERR_INVALID;
        if (!end)
            return TES_OK;
        s = end + 1;
    }
}

/* tes_lookup_path of a malformed or made-up path. */
static void check_lookup(fz_driver_t *d)
{
    static const char *const odd[] = {"", "/", "a/", "/a", "a//b", "a/b/c", "hull/turret",
                                      "turret/t0/a", "nope", "a/b"};
    char buf[600];
    const char *path = odd[fzd_draw(d, (uint32_t)(sizeof odd / sizeof odd[0]))];
    if (fzd_draw(d, 4) == 0) {
        /* A live named entity's path with a segment changed. */
        const fz_model_t *m = &d->m;
        if (m->nlive) {
            uint32_t i = m->live[fzd_draw(d, m->nlive)];
            size_t len = fz_model_path(m, i, buf, 300);
            if (len && len < 300) {
                buf[fzd_draw(d, (uint32_t)len)] = fzd_draw(d, 2) ? '/' : 'q';
                path = buf;
            }
        }
    } else if (fzd_draw(d, 8) == 0) {
        memset(buf, 'a', 256);
        buf[256] = '\0'; /* a segment too long */
        path = buf;
    }
    if (fzd_draw(d, 50) == 0)
        path = NULL;
    tes_entity_t want = fz_model_lookup_path(&d->m, path);
    tes_entity_t got = tes_lookup_path(d->w, path);
    if (got != want)
        fzd_fail(d, "tes_lookup_path(\"%s\") = %#llx, model %#llx", path ? path : "(null)",
                 ull(got), ull(want));
    else if (got == TES_NULL)
        fzd_check_error(d, lookup_miss_status(path), lookup_miss_status(path));
}

void fzd_op_hier_read(fz_driver_t *d)
{
    tes_entity_t e = fzd_pick_entity(d);
    const fz_mslot_t *s = fz_model_get(&d->m, e);
    uint32_t r = fzd_draw(d, 6);
    switch (r) {
    case 0: {
        d->op = "tes_parent";
        tes_entity_t want = s && s->parent ? fz_model_handle(&d->m, s->parent - 1) : TES_NULL;
        tes_entity_t got = tes_parent(d->w, e);
        if (got != want)
            fzd_fail(d, "tes_parent(%#llx) = %#llx, model %#llx", ull(e), ull(got), ull(want));
        break;
    }
    case 1: {
        d->op = "tes_children";
        uint32_t n = s ? s->nkids : 0;
        uint32_t c = fzd_draw(d, 100);
        bool null_out = c >= 85 && c < 95;
        int32_t cap = c < 50 ? (int32_t)n : c < 85 ? (int32_t)fzd_draw(d, n + 3)
                    : c < 90 ? 0 : c < 95 ? 1 : -1 - (int32_t)fzd_draw(d, 2);
        check_children(d, e, cap, null_out);
        break;
    }
    case 2: {
        d->op = "tes_depth";
        int32_t want = s ? fz_model_depth(&d->m, tes_entity_index(e)) : TES_ERR_STALE;
        int32_t got = tes_depth(d->w, e);
        if (got != want)
            fzd_fail(d, "tes_depth(%#llx) = %d, model %d", ull(e), (int)got, (int)want);
        else if (got < 0)
            fzd_check_error(d, TES_ERR_STALE, 1);
        break;
    }
    case 3: {
        d->op = "tes_name";
        const char *want = s ? s->name : NULL;
        const char *got = tes_name(d->w, e);
        if (want ? !got || strcmp(got, want) : got != NULL)
            fzd_fail(d, "tes_name(%#llx) = \"%s\", model \"%s\"", ull(e), got ? got : "(null)",
                     want ? want : "(null)");
        break;
    }
    case 4: {
        d->op = "tes_path";
        uint32_t c = fzd_draw(d, 100);
        bool null_buf = c >= 90 && c < 96;
        int32_t cap = c < 60 ? 4096 : c < 85 ? (int32_t)fzd_draw(d, 12) : c < 90 ? 0
                    : c < 96 ? 1 + (int32_t)fzd_draw(d, 3) : -1;
        check_path(d, e, cap, null_buf);
        break;
    }
    default:
        d->op = "tes_lookup_path";
        check_lookup(d);
        break;
    }
}

/* ------------------------------------------------------------------ queries */

bool fzd_check_chunk_depth(fz_driver_t *d, const char *desc, const fz_mquery_t *q,
                           const tes_iter_t *it, int32_t *last)
{
    const fz_model_t *m = &d->m;
    if (!(q->flags & TES_QUERY_CASCADE)) {
        if (it->depth != 0)
            fzd_fail(d, "[%s] it.depth is %d without TES_QUERY_CASCADE", desc, (int)it->depth);
        return !fzd_failed(d);
    }
    if (it->depth < *last) {
        fzd_fail(d, "[%s] a chunk of depth %d after one of depth %d", desc, (int)it->depth,
                 (int)*last);
        return false;
    }
    *last = it->depth;
    for (int32_t i = 0; i < it->count; i++) {
        const fz_mslot_t *s = fz_model_get(m, it->entities[i]);
        int32_t depth = s ? fz_model_depth(m, tes_entity_index(it->entities[i])) : it->depth;
        if (depth != it->depth) {
            fzd_fail(d, "[%s] %#llx of depth %d in a chunk of depth %d", desc,
                     ull(it->entities[i]), (int)depth, (int)it->depth);
            return false;
        }
    }
    d->res->cascade_chunks++;
    return true;
}

/* A TES_SRC_PARENT term's field: NULL for NOT terms, tags and (OPTIONAL)
 * chunks whose parents lack the component, all of whose parents have it or
 * none; else an array aligned with it.entities of the parents' values
 * (copies: compared with the model when the chunk is made). */
void fzd_check_parent_field(fz_driver_t *d, const char *desc, const fz_mterm_t *term,
                            tes_iter_t *it, int32_t t, bool first)
{
    int k = term->k;
    const fz_comp_info_t *c = &fz_comps[k];
    const fz_model_t *m = &d->m;
    const uint8_t *f = tes_field(it, t);
    if (term->oper == TES_NOT || !c->size) {
        if (f)
            fzd_fail(d, "[%s] parent field %d (%s%s) is %p, want NULL", desc, (int)t,
                     term->oper == TES_NOT ? "NOT " : "tag ", c->name, (const void *)f);
        return;
    }
    bool has = false;
    for (int32_t i = 0; i < it->count; i++) {
        uint32_t p1 = m->slots[tes_entity_index(it->entities[i])].parent;
        bool h = p1 && fz_model_has(m, p1 - 1, k);
        if (i == 0)
            has = h;
        else if (h != has) {
            fzd_fail(d, "[%s] one chunk holds entities whose parents have and lack %s (%#llx, %#llx)",
                     desc, c->name, ull(it->entities[0]), ull(it->entities[i]));
            return;
        }
    }
    if (!has) {
        if (f)
            fzd_fail(d, "[%s] parent field %d (%s) is %p, but no parent in the chunk has it",
                     desc, (int)t, c->name, (const void *)f);
        return;
    }
    if (!f) {
        fzd_fail(d, "[%s] parent field %d (%s) is NULL in a chunk whose parents have it", desc,
                 (int)t, c->name);
        return;
    }
    for (int32_t i = 0; first && i < it->count; i++) {
        uint32_t p = m->slots[tes_entity_index(it->entities[i])].parent - 1;
        if (!fzd_lib_equal(d, k, f + (size_t)i * c->size, fz_val(m, p, k))) {
            fzd_fail(d, "[%s] parent field %d (%s) row %d: not the value of parent %#llx", desc,
                     (int)t, c->name, (int)i, ull(fz_model_handle(m, p)));
            return;
        }
    }
}

/* ------------------------------------------------------------------ full check */

void fzd_check_hier(fz_driver_t *d)
{
    d->op = "full check (hierarchy)";
    const fz_model_t *m = &d->m;
    uint64_t linked = 0;
    for (uint32_t j = 0; j < m->nlive && !fzd_failed(d); j++) {
        uint32_t i = m->live[j];
        const fz_mslot_t *s = &m->slots[i];
        tes_entity_t e = fz_model_handle(m, i);
        tes_entity_t want = s->parent ? fz_model_handle(m, s->parent - 1) : TES_NULL;
        if (tes_parent(d->w, e) != want) {
            fzd_fail(d, "tes_parent(%#llx) = %#llx, model %#llx", ull(e), ull(tes_parent(d->w, e)),
                     ull(want));
            return;
        }
        linked += s->parent != 0;
        int32_t depth = tes_depth(d->w, e);
        if (depth != fz_model_depth(m, i)) {
            fzd_fail(d, "tes_depth(%#llx) = %d, model %d", ull(e), (int)depth,
                     (int)fz_model_depth(m, i));
            return;
        }
        if (s->nkids || fzd_draw(d, 8) == 0)
            check_children(d, e, (int32_t)s->nkids, false);
        const char *name = tes_name(d->w, e);
        if (s->name ? !name || strcmp(name, s->name) : name != NULL) {
            fzd_fail(d, "tes_name(%#llx) = \"%s\", model \"%s\"", ull(e), name ? name : "(null)",
                     s->name ? s->name : "(null)");
            return;
        }
        if (s->name)
            check_path(d, e, 1 << 14, false);
    }
    (void)linked;
}
