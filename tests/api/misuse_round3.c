/*
 * API misuse of the hierarchy and name calls (tes_set_parent,
 * tes_set_parent_n, tes_parent, tes_children, tes_depth, tes_set_name,
 * tes_name, tes_path, tes_lookup_path), depth order (tes_sort_by_depth),
 * change detection (tes_mark_changed, tes_world_tick), reflection
 * (tes_component_info, tes_components, tes_entities) and tes_field_checked
 * (see misuse.c for the harness, misuse_r3.h for the fingerprint).
 *
 * Bad inputs: NULL world and out-pointers, every bad handle of the
 * fixture (TES_NULL, destroyed, recycled, never issued, retired, future
 * generations), unknown, hidden and tag component ids, negative and
 * INT32_MIN caps, zero-size buffers, cycles (self, ancestor, one only an
 * earlier pair of a batch makes), prefab links, sibling-name clashes,
 * empty, over-long, '/'-holding and non-UTF-8 names, malformed paths
 * ("", "/", "//", leading, trailing and doubled '/', over-long segments),
 * batches that fail after 40 applied pairs, and every call while deferred
 * and while an iterator is open. Each case checks the status, the record
 * (tes_last_error and a detail naming the call), and that the world's
 * fingerprint is unchanged.
 */
#include "api/misuse_r3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world/check.h"

r3_forest_t R;
int g_r3_nofp;

/* ------------------------------------------------------------------ harness */

typedef struct fp_state {
    uint64_t h;
} fp_state_t;

static void mix(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        *h ^= p[i];
        *h *= 1099511628211ull;
    }
}

static void mix_u64(uint64_t *h, uint64_t v) { mix(h, &v, sizeof v); }

static int fp_write(const void *data, size_t size, void *user)
{
    fp_state_t *s = user;
    mix(&s->h, data, size);
    return TES_OK;
}

uint64_t r3_fp(tes_world_t *w)
{
    fp_state_t s = {14695981039346656037ull};
    tes_writer_t wr = {fp_write, &s};
    mix_u64(&s.h, (uint64_t)(int64_t)tes_json_world(w, &wr));
    tes_entity_t page[64];
    int32_t n;
    for (int64_t off = 0; (n = tes_entities(w, off, page, 64)) > 0; off += n) {
        for (int32_t i = 0; i < n; i++) {
            tes_entity_t ch[16];
            int32_t k = tes_children(w, page[i], ch, 16);
            mix_u64(&s.h, page[i]);
            mix_u64(&s.h, (uint64_t)(int64_t)k);
            for (int32_t j = 0; j < k && j < 16; j++)
                mix_u64(&s.h, ch[j]);
            mix_u64(&s.h, (uint64_t)(int64_t)tes_depth(w, page[i]));
        }
    }
    mix_u64(&s.h, tes_world_tick(w));
    tes_system_t *sys[16];
    int32_t ns = tes_systems(w, sys, 16);
    mix_u64(&s.h, (uint64_t)(int64_t)ns);
    for (int32_t i = 0; i < ns && i < 16; i++)
        mix_u64(&s.h, (uint64_t)(uintptr_t)sys[i]);
    return s.h;
}

void r3_detail(const char *expr, const char *file, int line, const char *fn)
{
    if (!fn)
        return;
    const char *d = tes_last_error_detail(g_w);
    if (!strstr(d, fn)) {
        mis_plain(expr, file, line, false);
        fprintf(stderr, "    detail \"%s\" does not name \"%s\"\n", d, fn);
    }
}

void r3_same(const char *expr, const char *file, int line, uint64_t h0)
{
    if (g_r3_nofp)
        return;
    if (r3_fp(g_w) != h0) {
        mis_plain(expr, file, line, false);
        fprintf(stderr, "    world changed (names, links, values, tick or systems)\n");
    }
}

static void require(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "misuse round 3: setup failed: %s\n", what);
        exit(2);
    }
}

/* The forest, in F.w:
 *   root "root"  -> a "a" -> leaf "leaf"
 *                -> b "b" -> anon (no name) -> deep "deep"
 *   other "other" -> dup "root", loner "b"
 * plus a second prefab (pf2) for the cross-prefab rule. */

void r3_setup(void)
{
    tes_world_t *w = F.w;
    tes_entity_t *e[] = {&R.root, &R.a, &R.b, &R.leaf, &R.anon, &R.other, &R.dup, &R.loner, &R.deep};
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
        *e[i] = tes_spawn(w);
        require(*e[i] != TES_NULL, "spawn");
    }
    require(tes_set_name(w, R.root, "root") == TES_OK && tes_set_name(w, R.a, "a") == TES_OK &&
                tes_set_name(w, R.b, "b") == TES_OK && tes_set_name(w, R.leaf, "leaf") == TES_OK &&
                tes_set_name(w, R.other, "other") == TES_OK && tes_set_name(w, R.deep, "deep") == TES_OK,
            "names");
    require(tes_set_parent(w, R.a, R.root) == TES_OK && tes_set_parent(w, R.b, R.root) == TES_OK &&
                tes_set_parent(w, R.leaf, R.a) == TES_OK && tes_set_parent(w, R.anon, R.b) == TES_OK &&
                tes_set_parent(w, R.deep, R.anon) == TES_OK &&
                tes_set_parent(w, R.dup, R.other) == TES_OK &&
                tes_set_parent(w, R.loner, R.other) == TES_OK,
            "links");
    require(tes_set_name(w, R.dup, "root") == TES_OK && tes_set_name(w, R.loner, "b") == TES_OK,
            "names under other");
    R.tracked = tes_component(w, &(tes_component_desc_t){
                                     .name = "R3Tracked", .size = 4, .track_changes = true});
    require(R.tracked != 0, "tracked component");
    const int32_t v = 5;
    require(tes_set(w, R.a, R.tracked, &v) == TES_OK, "tracked value");
    require(tes_set(w, R.leaf, F.pos, &(mis_pos_t){30, 31}) == TES_OK, "leaf pos");
    R.pf2 = tes_prefab_new(w);
    require(R.pf2 != TES_NULL, "second prefab");
    const tes_entity_t t[] = {F.a, F.b, F.y, F.dis, F.p, F.pc, F.hand, F.m[0], F.m[1],
                              R.root, R.a, R.b, R.leaf, R.anon};
    mis_watch(F.w, t, (int32_t)(sizeof t / sizeof t[0]), F.inst);
    require(tes__world_check(w) == TES_OK, "check");
}

/* ------------------------------------------------------------------ cases */

static void null_world(void)
{
    const int inv = TES_ERR_INVALID;
    char buf[8];
    tes_entity_t out[2];
    R3_NOREC(tes_set_parent(NULL, R.a, R.root) == inv);
    R3_NOREC(tes_set_parent_n(NULL, &R.a, &R.root, 1) == inv);
    R3_NOREC(tes_set_parent_n(NULL, NULL, NULL, 0) == inv);
    R3_NOREC(tes_parent(NULL, R.a) == TES_NULL);
    R3_NOREC(tes_children(NULL, R.root, out, 2) == inv);
    R3_NOREC(tes_depth(NULL, R.a) == inv);
    R3_NOREC(tes_set_name(NULL, R.a, "x") == inv);
    R3_NOREC(tes_name(NULL, R.a) == NULL);
    R3_NOREC(tes_lookup_path(NULL, "root") == TES_NULL);
    R3_NOREC(tes_path(NULL, R.a, buf, 8) == inv);
    R3_NOREC(tes_sort_by_depth(NULL) == inv);
    R3_NOREC(tes_world_tick(NULL) == 0);
    R3_NOREC(tes_mark_changed(NULL, R.a, R.tracked) == inv);
    tes_component_info_t info;
    tes_comp_t ids[2];
    R3_NOREC(tes_component_info(NULL, F.pos, &info) == inv);
    R3_NOREC(tes_components(NULL, ids, 2) == inv);
    R3_NOREC(tes_entities(NULL, 0, out, 2) == 0);
}

static void bad_handles(tes_world_t *w)
{
    const int stale = TES_ERR_STALE;
    for (int i = 0; i < MIS_NBAD; i++) {
        tes_entity_t e = F.bad[i];
        g_note = F.bad_name[i];
        R3_ST(tes_set_parent(w, e, R.root), stale, NULL);
        R3_ST(tes_set_parent(w, e, TES_NULL), stale, NULL);
        R3_ST(tes_set_parent(w, e, e), stale, NULL);
        if (e != TES_NULL) {
            R3_ST(tes_set_parent(w, R.anon, e), stale, NULL);
            R3_ST(tes_set_parent(w, R.root, e), stale, NULL);
        }
        /* Batches: the pair's index is named; the good pair before it is
         * not applied. */
        tes_entity_t ch[] = {R.leaf, e}, pa[] = {R.b, R.root};
        R3_ST(tes_set_parent_n(w, ch, pa, 2), stale, "pair 1");
        if (e != TES_NULL) {
            tes_entity_t ch2[] = {R.leaf, R.anon}, pa2[] = {R.b, e};
            R3_ST(tes_set_parent_n(w, ch2, pa2, 2), stale, "pair 1");
        }
        R3_NOREC(tes_parent(w, e) == TES_NULL);
        tes_entity_t out[4] = {1, 2, 3, 4};
        R3_REC(tes_children(w, e, out, 4) == stale && out[0] == 1 && out[3] == 4, stale, NULL);
        R3_REC(tes_children(w, e, NULL, 0) == stale, stale, NULL);
        R3_REC(tes_depth(w, e) == stale, stale, NULL);
        R3_ST(tes_set_name(w, e, "n"), stale, NULL);
        R3_ST(tes_set_name(w, e, NULL), stale, NULL);
        R3_NOREC(tes_name(w, e) == NULL);
        char buf[8] = "ZZZZZZZ";
        R3_REC(tes_path(w, e, buf, 8) == stale && buf[0] == 'Z', stale, NULL);
        R3_REC(tes_path(w, e, NULL, 0) == stale, stale, NULL);
        R3_ST(tes_mark_changed(w, e, R.tracked), stale, NULL);
    }
    g_note = NULL;
}

static void links(tes_world_t *w)
{
    const int inv = TES_ERR_INVALID;
    const char *sp = "tes_set_parent";
    R3_ST(tes_set_parent(w, R.root, R.root), inv, sp);
    R3_ST(tes_set_parent(w, R.leaf, R.leaf), inv, sp);
    R3_ST(tes_set_parent(w, R.root, R.leaf), inv, sp); /* an ancestor under its descendant */
    R3_ST(tes_set_parent(w, R.root, R.a), inv, sp);
    R3_ST(tes_set_parent(w, R.a, R.leaf), inv, sp);
    R3_ST(tes_set_parent(w, R.b, R.deep), inv, sp);
    /* Prefab rules. */
    R3_ST(tes_set_parent(w, F.pc, R.root), inv, sp);
    R3_ST(tes_set_parent(w, R.leaf, F.p), inv, sp);
    R3_ST(tes_set_parent(w, R.leaf, F.pc), inv, sp);
    R3_ST(tes_set_parent(w, F.pc, R.pf2), inv, sp);
    R3_ST(tes_set_parent(w, R.pf2, F.p), inv, sp);
    /* Sibling names: "b" under root, "root" among the roots. */
    R3_ST(tes_set_parent(w, R.loner, R.root), inv, sp);
    R3_ST(tes_set_parent(w, R.dup, TES_NULL), inv, sp);
    /* The parent it has: nothing changes, the order stays. */
    R3_NOREC(tes_set_parent(w, R.a, R.root) == TES_OK);
    R3_NOREC(tes_set_parent(w, R.root, TES_NULL) == TES_OK);
    R3_NOREC(tes_set_parent(w, R.anon, R.b) == TES_OK);

    const char *sn = "tes_set_parent_n";
    tes_entity_t c1[] = {R.a};
    R3_NOREC(tes_set_parent_n(w, NULL, NULL, 0) == TES_OK);
    R3_NOREC(tes_set_parent_n(w, c1, NULL, 0) == TES_OK);
    R3_ST(tes_set_parent_n(w, NULL, NULL, 1), inv, sn);
    R3_ST(tes_set_parent_n(w, NULL, c1, 1), inv, sn);
    R3_ST(tes_set_parent_n(w, c1, NULL, 1), inv, sn);
    R3_ST(tes_set_parent_n(w, NULL, NULL, SIZE_MAX), inv, sn);
    R3_ST(tes_set_parent_n(w, c1, NULL, SIZE_MAX), inv, sn);
    R3_ST(tes_set_parent_n(w, NULL, c1, (size_t)1 << 62), inv, sn);
    {   /* One array for both: every pair is its own parent. */
        tes_entity_t same[] = {R.anon, R.leaf};
        R3_ST(tes_set_parent_n(w, same, same, 2), inv, "pair 0");
    }
    {   /* A cycle only the earlier pair makes. */
        tes_entity_t ch[] = {R.b, R.leaf}, pa[] = {R.leaf, R.b};
        R3_ST(tes_set_parent_n(w, ch, pa, 2), inv, "pair 1");
    }
    {   /* A name clash only the earlier pair makes. */
        tes_entity_t ch[] = {R.b, R.loner}, pa[] = {TES_NULL, TES_NULL};
        R3_ST(tes_set_parent_n(w, ch, pa, 2), inv, "pair 1");
    }
    {   /* Self, prefab, clash as pair 2 after two good pairs. */
        tes_entity_t ch[] = {R.anon, R.leaf, R.a}, pa[] = {R.root, R.b, R.a};
        R3_ST(tes_set_parent_n(w, ch, pa, 3), inv, "pair 2");
        pa[2] = F.p;
        R3_ST(tes_set_parent_n(w, ch, pa, 3), inv, "pair 2");
        ch[2] = R.loner, pa[2] = R.root;
        R3_ST(tes_set_parent_n(w, ch, pa, 3), inv, "pair 2");
    }
    {   /* 40 applied pairs (more than the undo log on the stack holds),
         * moving children among parents and roots, then a refused one:
         * every pair is undone, child order included. */
        enum { N = 41 };
        tes_entity_t ch[N], pa[N];
        const tes_entity_t movers[] = {R.anon, R.leaf, R.b, R.a};
        const tes_entity_t hosts[] = {R.root, TES_NULL, R.other, R.b, R.a};
        for (int i = 0; i < N - 1; i++) {
            ch[i] = movers[i % 4];
            pa[i] = hosts[(i / 4) % 5];
            if (pa[i] == ch[i] || (ch[i] == R.a && pa[i] == R.b) || (ch[i] == R.b && pa[i] == R.a))
                pa[i] = R.root;
            if (ch[i] == R.b && (pa[i] == R.other))
                pa[i] = TES_NULL; /* "b" is taken under other */
        }
        ch[N - 1] = R.root, pa[N - 1] = R.root;
        R3_ST(tes_set_parent_n(w, ch, pa, N), inv, "pair 40");
        ch[N - 1] = F.bad[1], pa[N - 1] = R.root;
        R3_ST(tes_set_parent_n(w, ch, pa, N), TES_ERR_STALE, "pair 40");
        ch[N - 1] = R.root, pa[N - 1] = R.deep;
        R3_ST(tes_set_parent_n(w, ch, pa, N), inv, "pair 40");
    }
}

static void reads(tes_world_t *w)
{
    const int inv = TES_ERR_INVALID;
    tes_entity_t out[4] = {1, 2, 3, 4};
    R3_REC(tes_children(w, R.root, NULL, 1) == inv, inv, "tes_children");
    R3_REC(tes_children(w, R.root, out, -1) == inv && out[0] == 1, inv, "tes_children");
    R3_REC(tes_children(w, R.root, NULL, INT32_MIN) == inv, inv, "tes_children");
    R3_NOREC(tes_children(w, R.root, NULL, 0) == 2);
    R3_NOREC(tes_children(w, R.root, out, 0) == 2 && out[0] == 1);
    R3_NOREC(tes_children(w, R.root, out, 1) == 2 && out[0] == R.a && out[1] == 2);
    R3_NOREC(tes_children(w, R.leaf, out, 4) == 0);
    R3_NOREC(tes_depth(w, R.root) == 0 && tes_depth(w, R.deep) == 3);
    R3_NOREC(tes_parent(w, R.root) == TES_NULL && tes_parent(w, R.deep) == R.anon);

    char buf[16];
    memset(buf, 'Z', sizeof buf);
    R3_REC(tes_path(w, R.leaf, NULL, 1) == inv, inv, "tes_path");
    R3_REC(tes_path(w, R.leaf, buf, -1) == inv && buf[0] == 'Z', inv, "tes_path");
    R3_REC(tes_path(w, R.leaf, NULL, INT32_MIN) == inv, inv, "tes_path");
    R3_NOREC(tes_path(w, R.leaf, NULL, 0) == 11);
    R3_NOREC(tes_path(w, R.leaf, buf, 0) == 11 && buf[0] == 'Z');
    R3_NOREC(tes_path(w, R.leaf, buf, 1) == 11 && buf[0] == 0 && buf[1] == 'Z');
    R3_NOREC(tes_path(w, R.leaf, buf, 5) == 11 && strcmp(buf, "root") == 0 && buf[5] == 'Z');
    R3_NOREC(tes_path(w, R.leaf, buf, 6) == 11 && strcmp(buf, "root/") == 0 && buf[6] == 'Z');
    R3_NOREC(tes_path(w, R.leaf, buf, 11) == 11 && strcmp(buf, "root/a/lea") == 0 && buf[11] == 'Z');
    R3_NOREC(tes_path(w, R.leaf, buf, 12) == 11 && strcmp(buf, "root/a/leaf") == 0 && buf[12] == 'Z');
    /* No name on the entity, or on an ancestor: no path. */
    memset(buf, 'Z', sizeof buf);
    R3_NOREC(tes_path(w, R.anon, buf, 16) == 0 && buf[0] == 0 && buf[1] == 'Z');
    R3_NOREC(tes_path(w, R.deep, buf, 16) == 0 && buf[0] == 0);
    R3_NOREC(tes_path(w, R.deep, NULL, 0) == 0);
    R3_NOREC(tes_name(w, R.anon) == NULL && strcmp(tes_name(w, R.a), "a") == 0);
}

static void names(tes_world_t *w)
{
    const int inv = TES_ERR_INVALID;
    const char *sn = "tes_set_name";
    char big[4097];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    R3_ST(tes_set_name(w, R.a, ""), inv, sn);
    R3_ST(tes_set_name(w, R.a, big), inv, sn);
    R3_ST(tes_set_name(w, R.a, big + sizeof big - 1 - 256), inv, sn); /* 256 bytes */
    R3_ST(tes_set_name(w, R.anon, big + sizeof big - 1 - 256), inv, sn);
    const char *slashes[] = {"/", "//", "x/y", "a/", "/a", "leaf/"};
    for (size_t i = 0; i < sizeof slashes / sizeof slashes[0]; i++) {
        R3_ST(tes_set_name(w, R.a, slashes[i]), inv, sn);
        R3_ST(tes_set_name(w, R.anon, slashes[i]), inv, sn);
    }
    big[300] = '/';
    R3_ST(tes_set_name(w, R.a, big + 100), inv, sn); /* long, with a '/' past 255 bytes */
    big[300] = 'x';
    R3_ST(tes_set_name(w, R.a, "b"), inv, sn);          /* a sibling's */
    /* Names repeat across sibling sets. */
    CASE_PLAIN(tes_set_name(w, R.anon, "leaf") == TES_OK && tes_set_name(w, R.anon, NULL) == TES_OK);
    R3_ST(tes_set_name(w, R.root, "other"), inv, sn);   /* another root's */
    R3_ST(tes_set_name(w, R.dup, "b"), inv, sn);        /* loner's, under other */
    R3_NOREC(tes_set_name(w, R.a, "a") == TES_OK);      /* the name it has */
    R3_NOREC(tes_set_name(w, R.anon, NULL) == TES_OK);  /* no name to remove */

    /* 255 bytes is the longest name; a non-UTF-8 name is bytes like any
     * other (JSON replaces them, see misuse_round3_io.c). */
    const char *n255 = big + sizeof big - 1 - 255;
    CASE_PLAIN(tes_set_name(w, R.anon, n255) == TES_OK && tes_name(w, R.anon) != NULL &&
               strlen(tes_name(w, R.anon)) == 255);
    char path[300];
    snprintf(path, sizeof path, "root/b/%s", n255);
    CASE_PLAIN(tes_lookup_path(w, path) == R.anon && tes_path(w, R.anon, NULL, 0) == 262);
    const char *odd = "\xff\xfe\x80 \xc0\xaf";
    CASE_PLAIN(tes_set_name(w, R.anon, odd) == TES_OK && strcmp(tes_name(w, R.anon), odd) == 0);
    snprintf(path, sizeof path, "root/b/%s", odd);
    char back[32];
    CASE_PLAIN(tes_lookup_path(w, path) == R.anon &&
               tes_path(w, R.anon, back, sizeof back) == (int32_t)strlen(path) &&
               strcmp(back, path) == 0);
    CASE_PLAIN(tes_set_name(w, R.anon, NULL) == TES_OK && tes_name(w, R.anon) == NULL &&
               tes_lookup_path(w, path) == TES_NULL);
}

static void paths(tes_world_t *w)
{
    CASE_PLAIN(tes_lookup_path(w, "root/a/leaf") == R.leaf && tes_lookup_path(w, "other/root") == R.dup);
    /* Paths no entity can have: TES_ERR_INVALID, recorded for the thread. */
    const char *bad[] = {"", "/", "//", "///", "root/", "/root", "root//a", "root/a/", "root/a/leaf/",
                         "/root/a/leaf", "root/a//leaf", "nope//x", "nope/x/", "root/nope/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g_note = bad[i];
        R3_REC(tes_lookup_path(w, bad[i]) == TES_NULL, TES_ERR_INVALID, "tes_lookup_path");
    }
    /* Well-formed paths that name nothing: TES_OK with a sentence. */
    const char *none[] = {"root/nope", "nope", "root/a/leaf/x", "ROOT", "root ", " root",
                          "root/b/deep", "b", "leaf", "other/b/x", "\xff"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        g_note = none[i];
        R3_REC(tes_lookup_path(w, none[i]) == TES_NULL, TES_OK, "tes_lookup_path");
    }
    g_note = NULL;
    R3_REC(tes_lookup_path(w, NULL) == TES_NULL, TES_ERR_INVALID, "tes_lookup_path");
    /* A segment past 255 bytes, and a path of 100k bytes. */
    size_t len = 100000;
    char *p = malloc(len + 1);
    CASE_PLAIN(p != NULL);
    if (!p)
        return;
    memset(p, 'r', len);
    p[len] = 0;
    R3_REC(tes_lookup_path(w, p) == TES_NULL, TES_ERR_INVALID, "tes_lookup_path");
    memcpy(p, "root/", 5);
    R3_REC(tes_lookup_path(w, p) == TES_NULL, TES_ERR_INVALID, "tes_lookup_path");
    memcpy(p, "root/", 5);
    for (size_t i = 5; i + 2 <= len; i += 2)
        memcpy(p + i, "a/", 2);
    p[len - 1] = 'a';
    R3_REC(tes_lookup_path(w, p) == TES_NULL, TES_OK, "root/a\" has no child named \"a\"");
    free(p);
}

static void sort_and_changes(tes_world_t *w)
{
    const int inv = TES_ERR_INVALID;
    const char *mc = "tes_mark_changed";
    uint32_t tick = tes_world_tick(w);
    const tes_comp_t bad[] = {0, 5000, UINT32_MAX, F.pos, F.tag, F.vel, TES_DISABLED,
                              TES_PREFAB, R.tracked + 1, R.tracked + 2};
    char note[32];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(note, sizeof note, "component id %u", (unsigned)bad[i]);
        g_note = note;
        R3_ST(tes_mark_changed(w, R.a, bad[i]), inv, mc);
    }
    g_note = NULL;
    R3_ST(tes_mark_changed(w, R.b, R.tracked), inv, mc); /* b lacks it */
    R3_NOREC(tes_mark_changed(w, R.a, R.tracked) == TES_OK);
    R3_NOREC(tes_world_tick(w) == tick);
    R3_NOREC(tes_sort_by_depth(w) == TES_OK);
    R3_NOREC(tes_sort_by_depth(w) == TES_OK);
}

/* Every call while deferred (tes_defer_begin) and while an iterator is
 * open: bad calls fail at once and queue nothing. */
static void deferred_battery(tes_world_t *w, const char *why)
{
    const int inv = TES_ERR_INVALID, stale = TES_ERR_STALE, busy = TES_ERR_BUSY;
    g_note = why;
    for (int i = 0; i < MIS_NBAD; i++) {
        R3_ST(tes_set_parent(w, F.bad[i], R.root), stale, NULL);
        tes_entity_t ch[] = {R.leaf, F.bad[i]}, pa[] = {R.b, R.root};
        R3_ST(tes_set_parent_n(w, ch, pa, 2), stale, "pair 1");
        R3_ST(tes_set_name(w, F.bad[i], "n"), stale, NULL);
        R3_ST(tes_mark_changed(w, F.bad[i], R.tracked), stale, NULL);
    }
    R3_ST(tes_set_parent(w, R.root, R.root), inv, "tes_set_parent");
    R3_ST(tes_set_parent(w, R.root, R.leaf), inv, "tes_set_parent");
    R3_ST(tes_set_parent(w, F.pc, R.root), inv, "tes_set_parent");
    tes_entity_t self_c[] = {R.leaf, R.a}, self_p[] = {R.b, R.a};
    R3_ST(tes_set_parent_n(w, self_c, self_p, 2), inv, "pair 1");
    R3_ST(tes_set_parent_n(w, NULL, self_p, 2), inv, "tes_set_parent_n");
    R3_ST(tes_set_name(w, R.a, "b"), inv, "tes_set_name");
    R3_ST(tes_set_name(w, R.a, "x/y"), inv, "tes_set_name");
    R3_ST(tes_mark_changed(w, R.a, F.pos), inv, "tes_mark_changed");
    R3_ST(tes_sort_by_depth(w), busy, "tes_sort_by_depth");
    R3_NOREC(tes_mark_changed(w, R.a, R.tracked) == TES_OK);
    R3_NOREC(tes_set_parent(w, R.a, R.root) == TES_OK); /* the parent it has: no command */
    /* Names apply at once. */
    CASE_PLAIN(tes_set_name(w, R.anon, "now") == TES_OK &&
               tes_lookup_path(w, "root/b/now") == R.anon);
    CASE_PLAIN(tes_set_name(w, R.anon, NULL) == TES_OK);
    g_note = NULL;
}

static void deferred(tes_world_t *w)
{
    CASE_PLAIN(tes_defer_begin(w) == TES_OK);
    deferred_battery(w, "inside tes_defer_begin");
    CASE_PLAIN(tes_defer_end(w) == TES_OK);

    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = F.pos}}});
    CASE_PLAIN(q != NULL);
    tes_iter_t it = tes_query_iter(q);
    CASE_PLAIN(tes_iter_next(&it));
    deferred_battery(w, "while an iterator is open");
    tes_iter_fini(&it);
    CASE_PLAIN(!tes_is_deferred(w));

    /* A deferred add is not there yet for tes_mark_changed. */
    const int32_t v = 1;
    CASE_PLAIN(tes_defer_begin(w) == TES_OK && tes_set(w, R.b, R.tracked, &v) == TES_OK);
    R3_ST(tes_mark_changed(w, R.b, R.tracked), TES_ERR_INVALID, "tes_mark_changed");
    CASE_PLAIN(tes_defer_end(w) == TES_OK && tes_mark_changed(w, R.b, R.tracked) == TES_OK);
    CASE_PLAIN(tes_remove(w, R.b, R.tracked) == TES_OK);

    /* Links that fail only at the flush: a cycle the queue makes, and a
     * child that died before its link was applied. Both are dropped and
     * reported by tes_defer_end with a detail; the rest applies. */
    tes_entity_t x = tes_spawn(w);
    CASE_PLAIN(x != TES_NULL && tes_defer_begin(w) == TES_OK);
    CASE_PLAIN(tes_set_parent(w, R.leaf, R.b) == TES_OK && tes_set_parent(w, R.b, R.leaf) == TES_OK);
    CASE_PLAIN(tes_destroy(w, x) == TES_OK && tes_set_parent(w, x, R.root) == TES_OK);
    CASE_PLAIN(tes_defer_end(w) == TES_ERR_INVALID && tes_last_error(w) == TES_ERR_INVALID &&
               strstr(tes_last_error_detail(w), "tes_set_parent") != NULL);
    CASE_PLAIN(tes_parent(w, R.leaf) == R.b && tes_parent(w, R.b) == R.root && !tes_alive(w, x));
    CASE_PLAIN(tes_set_parent(w, R.leaf, R.a) == TES_OK);
    /* The same as one batch: dropped whole. */
    tes_entity_t ch[] = {R.leaf, R.b}, pa[] = {R.b, R.leaf};
    CASE_PLAIN(tes_defer_begin(w) == TES_OK && tes_set_parent_n(w, ch, pa, 2) == TES_OK);
    CASE_PLAIN(tes_defer_end(w) == TES_ERR_INVALID &&
               strstr(tes_last_error_detail(w), "pair 1") != NULL);
    CASE_PLAIN(tes_parent(w, R.leaf) == R.a && tes_parent(w, R.b) == R.root);
    tes_entity_t order[2];
    CASE_PLAIN(tes_children(w, R.root, order, 2) == 2 && order[0] == R.a && order[1] == R.b);
    tes_query_free(q);
}

static void reflection(tes_world_t *w)
{
    const int inv = TES_ERR_INVALID;
    tes_component_info_t info, canary;
    memset(&canary, 0x5A, sizeof canary);
    const char *ci = "tes_component_info";
    info = canary;
    R3_REC(tes_component_info(w, F.pos, NULL) == inv, inv, ci);
    const tes_comp_t bad[] = {0, 5000, 5001, UINT32_MAX, R.tracked + 1, R.tracked + 2};
    char note[32];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(note, sizeof note, "component id %u", (unsigned)bad[i]);
        g_note = note;
        info = canary;
        R3_REC(tes_component_info(w, bad[i], &info) == inv && memcmp(&info, &canary, sizeof info) == 0,
               inv, ci);
    }
    g_note = NULL;
    R3_NOREC(tes_component_info(w, TES_DISABLED, &info) == TES_OK && info.size == 0 &&
             info.id == TES_DISABLED);
    R3_NOREC(tes_component_info(w, R.tracked, &info) == TES_OK && info.track_changes &&
             info.members == NULL && info.member_count == 0);

    const char *cs = "tes_components";
    tes_comp_t ids[4] = {7, 7, 7, 7};
    R3_REC(tes_components(w, NULL, 1) == inv, inv, cs);
    R3_REC(tes_components(w, ids, -1) == inv && ids[0] == 7, inv, cs);
    R3_REC(tes_components(w, NULL, INT32_MIN) == inv, inv, cs);
    int32_t count = tes_components(w, NULL, 0);
    R3_NOREC(count > 4 && tes_components(w, ids, 0) == count && ids[0] == 7);
    R3_NOREC(tes_components(w, ids, 2) == count && ids[0] == TES_DISABLED && ids[1] == TES_PREFAB &&
             ids[2] == 7);
    /* Every listed id is one tes_component_info knows; hidden ids are
     * not listed. */
    tes_comp_t *all = calloc((size_t)count, sizeof *all);
    CASE_PLAIN(all != NULL && tes_components(w, all, count) == count);
    bool known = all != NULL;
    for (int32_t i = 0; all && i < count; i++) {
        known = known && tes_component_info(w, all[i], &info) == TES_OK && info.id == all[i];
        known = known && all[i] != R.tracked + 1 && all[i] != R.tracked + 2;
    }
    CASE_PLAIN(known);
    free(all);

    const char *es = "tes_entities";
    tes_entity_t out[4] = {1, 1, 1, 1};
    R3_REC(tes_entities(w, -1, out, 4) == inv && out[0] == 1, inv, es);
    R3_REC(tes_entities(w, INT64_MIN, out, 4) == inv, inv, es);
    R3_REC(tes_entities(w, 0, out, -1) == inv, inv, es);
    R3_REC(tes_entities(w, 0, NULL, 1) == inv, inv, es);
    R3_REC(tes_entities(w, 0, NULL, INT32_MIN) == inv, inv, es);
    R3_NOREC(tes_entities(w, 0, NULL, 0) == 0);
    R3_NOREC(tes_entities(w, INT64_MAX, out, 4) == 0 && out[0] == 1);
    R3_NOREC(tes_entities(w, tes_entity_count(w), out, 4) == 0 && out[0] == 1);
    R3_NOREC(tes_entities(w, tes_entity_count(w) - 1, out, 4) == 1 && out[1] == 1);
}

static void fields(tes_world_t *w)
{
    const int inv = TES_ERR_INVALID;
    const char *fc = "tes_field_checked";
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){
                                           .terms = {{.comp = F.pos, .access = TES_IN},
                                                     {.comp = F.tag, .oper = TES_OPTIONAL},
                                                     {.comp = F.stab, .oper = TES_NOT}}});
    CASE_PLAIN(q != NULL);
    if (!q)
        return;
    tes_iter_t zero;
    memset(&zero, 0, sizeof zero);
    R3_NOREC(tes_field_checked(NULL, 0, sizeof(mis_pos_t)) == NULL);
    R3_NOREC(tes_field_checked(&zero, 0, sizeof(mis_pos_t)) == NULL);
    R3_NOREC(tes_field_checked(&zero, -1, 0) == NULL);
    tes_iter_t it = tes_query_iter(q);
    /* Before the first chunk: NULL, a size check still made. */
    R3_NOREC(tes_field_checked(&it, 0, sizeof(mis_pos_t)) == NULL);
    R3_REC(tes_field_checked(&it, 0, 4) == NULL, inv, fc);
    bool more = tes_iter_next(&it);
    CASE_PLAIN(more);
    const int32_t terms[] = {-1, 3, 16, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
        R3_REC(tes_field_checked(&it, terms[i], sizeof(mis_pos_t)) == NULL, inv, fc);
    const size_t sizes[] = {0, 4, 16, SIZE_MAX, (size_t)UINT32_MAX + 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        R3_REC(tes_field_checked(&it, 0, sizes[i]) == NULL, inv, fc);
    R3_REC(tes_field_checked(&it, 1, 1) == NULL, inv, fc); /* a tag: size 0 */
    R3_REC(tes_field_checked(&it, 2, 8) == NULL, inv, fc); /* NOT Stab: size 16 */
    R3_NOREC(tes_field_checked(&it, 1, 0) == NULL);
    R3_NOREC(tes_field_checked(&it, 2, sizeof(mis_stab_t)) == NULL);
    R3_NOREC(tes_field_checked(&it, 0, sizeof(mis_pos_t)) != NULL);
    tes_iter_fini(&it);
    R3_NOREC(tes_field_checked(&it, 0, sizeof(mis_pos_t)) == NULL);
    R3_REC(tes_field_checked(&it, 9, sizeof(mis_pos_t)) == NULL, inv, fc);
    tes_query_free(q);
}

void mis_cases_round3(void)
{
    r3_setup();
    tes_world_t *w = F.w;
    null_world();
    bad_handles(w);
    links(w);
    reads(w);
    names(w);
    paths(w);
    sort_and_changes(w);
    deferred(w);
    reflection(w);
    fields(w);
    CASE_PLAIN(tes__world_check(w) == TES_OK);
}
