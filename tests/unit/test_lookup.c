/*
 * test_lookup.c — lookup views (tes_lookup_init / tes_lookup_get /
 * tes_lookup_fini): the inline read must give exactly tes_get_mut's
 * answer, for table and sparse components, small ids and ids past the
 * world's direct maps, and every handle that must miss (stale with its
 * index recycled, forged generations, indices never issued or past every
 * sparse page, the null handle, retired slots, removed components). Each
 * answer is also checked against the value the entity was given. Around
 * that: entities spread over many tables, an empty world, the statuses of
 * bad arguments, rebuilding after structural changes, deferral, disabled
 * and prefab entities, the bytes a view holds, and the refusal while
 * systems run on several threads. Sparse views are also read through the
 * documented encoding by hand (biased bases against page pointers), and
 * on a store whose first entry pages were never allocated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"
#include "world/check.h"
#include "unit/vec3.h"

static tes_comp_t reg(tes_world_t *w, const char *name, size_t size, tes_storage_t storage,
                      bool stable)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = size;
    d.storage = storage;
    d.stable = stable;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

/* The value entity i holds in component k: vec() of a number naming both. */
static vec3_t value_of(int i, int k) { return vec((float)(i * 100 + k)); }

static void assert_value(const void *p, int i, int k) { assert_vec(p, (float)(i * 100 + k)); }

static uint64_t bytes_of(const tes_world_t *w)
{
    tes_world_stats_t st;
    assert_int_equal(tes_world_stats(w, &st), TES_OK);
    return st.bytes_allocated;
}

/* The typed form of l's kind answers as tes_lookup_get; the other form
 * answers NULL (a view's other arrays have length 0). */
static void assert_typed_forms(const tes_lookup_t *l, tes_entity_t e)
{
    void *p = tes_lookup_get(l, e);
    assert_ptr_equal(l->sparse ? tes_lookup_get_sparse(l, e) : tes_lookup_get_table(l, e), p);
    assert_null(l->sparse ? tes_lookup_get_table(l, e) : tes_lookup_get_sparse(l, e));
}

/* Builds a view of c and compares it (all three read forms) with
 * tes_get_mut for each handle. */
static void assert_view_matches(tes_world_t *w, tes_comp_t c, const tes_entity_t *es, int n)
{
    tes_lookup_t l;
    assert_int_equal(tes_lookup_init(&l, w, c), TES_OK);
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(tes_lookup_get(&l, es[i]), tes_get_mut(w, es[i], c));
        assert_typed_forms(&l, es[i]);
    }
    tes_lookup_fini(&l);
}

/* The documented encoding read by hand: entry_bases and data_bases name
 * the same cells as entry_pages and data_pages. */
static void assert_bases_match_pages(const tes_lookup_t *l)
{
    for (uint32_t p = 0; p < l->entry_page_count; p++) {
        for (uint32_t j = 0; j < TES_LOOKUP_ENTRY_PAGE; j += 97) {
            uint32_t i = p * TES_LOOKUP_ENTRY_PAGE + j;
            uint64_t via_base =
                *(const uint64_t *)(l->entry_bases[p] + (uintptr_t)i * sizeof(uint64_t));
            uint64_t via_page = l->entry_pages[p] ? l->entry_pages[p][j] : UINT64_MAX;
            assert_true(via_base == via_page);
            if (via_page == UINT64_MAX)
                continue;
            uint32_t pos = (uint32_t)via_page;
            uint8_t *want = l->data_pages[pos >> l->page_shift] +
                            (size_t)(pos & ((UINT32_C(1) << l->page_shift) - 1u)) * l->size;
            assert_true(l->data_bases[pos >> l->page_shift] + (uintptr_t)pos * l->size ==
                        (uintptr_t)want);
        }
    }
}

enum { N = 300, KINDS = 4, BAD = 8 };

typedef struct fixture {
    tes_world_t *w;
    tes_comp_t c[KINDS];
    tes_entity_t es[N];
    bool has[N][KINDS];
    bool alive[N];
    tes_entity_t bad[BAD];
} fixture_t;

/* Four kinds (table and sparse, a small id and an id past 64 each, the
 * last one stable), some components removed again, some entities
 * destroyed, one destroyed index recycled and given every kind, and a
 * slot retired (generation limit 3). */
static void build(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    tes_world_desc_t wd;
    memset(&wd, 0, sizeof wd);
    wd.generation_limit = 3;
    f->w = tes_world_new(&wd);
    assert_non_null(f->w);
    f->c[0] = reg(f->w, "TablePos", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    f->c[1] = reg(f->w, "SparsePos", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    char name[16];
    for (int k = 0; k < 64; k++) {
        snprintf(name, sizeof name, "Filler%d", k);
        reg(f->w, name, 4, TES_STORAGE_TABLE, false);
    }
    f->c[2] = reg(f->w, "TableFar", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    f->c[3] = reg(f->w, "SparseFar", sizeof(vec3_t), TES_STORAGE_SPARSE, true);
    assert_true(f->c[1] < 64 && f->c[3] >= 64);
    for (int i = 0; i < N; i++) {
        f->es[i] = tes_spawn(f->w);
        f->alive[i] = true;
        for (int k = 0; k < KINDS; k++) {
            if ((i + k) % 3 == 0)
                continue;
            vec3_t v = value_of(i, k);
            assert_int_equal(tes_set(f->w, f->es[i], f->c[k], &v), TES_OK);
            f->has[i][k] = true;
        }
    }
    for (int i = 1; i < N; i += 5)
        for (int k = 0; k < KINDS; k++)
            if (f->has[i][k]) {
                assert_int_equal(tes_remove(f->w, f->es[i], f->c[k]), TES_OK);
                f->has[i][k] = false;
            }
    tes_entity_t last = TES_NULL;
    for (int i = 2; i < N; i += 11) {
        assert_int_equal(tes_destroy(f->w, f->es[i]), TES_OK);
        f->alive[i] = false;
        last = f->es[i];
    }
    /* The last destroyed index is recycled and holds every kind: the
     * stale handle must still miss it. */
    tes_entity_t fresh = tes_spawn(f->w);
    assert_int_equal(tes_entity_index(fresh), tes_entity_index(last));
    for (int k = 0; k < KINDS; k++) {
        vec3_t v = {-1.0f, -1.0f, -1.0f};
        assert_int_equal(tes_set(f->w, fresh, f->c[k], &v), TES_OK);
    }
    /* A slot retired for good: spawned and destroyed until its generation
     * passes the limit. */
    tes_entity_t r = TES_NULL;
    for (int round = 0; round < 3; round++) {
        r = tes_spawn(f->w);
        assert_int_equal(tes_set(f->w, r, f->c[0], &(vec3_t){1, 2, 3}), TES_OK);
        assert_int_equal(tes_set(f->w, r, f->c[1], &(vec3_t){1, 2, 3}), TES_OK);
        assert_int_equal(tes_destroy(f->w, r), TES_OK);
    }
    tes_world_stats_t st;
    assert_int_equal(tes_world_stats(f->w, &st), TES_OK);
    assert_int_equal(st.entities_retired, 1);
    uint32_t free_index = tes_entity_index(f->es[13]); /* destroyed, still free */
    assert_false(f->alive[13]);
    f->bad[0] = last;
    f->bad[1] = tes_entity_make(free_index, tes_entity_generation(f->es[13]) + 1);
    f->bad[2] = tes_entity_make(N + 50, 1);
    f->bad[3] = tes_entity_make(UINT32_C(1) << 20, 1);
    f->bad[4] = TES_NULL;
    f->bad[5] = tes_entity_make(tes_entity_index(fresh), tes_entity_generation(fresh) + 1);
    f->bad[6] = tes_entity_make(tes_entity_index(r), TES_TOMBSTONE); /* the retired slot */
    f->bad[7] = tes_entity_make(TES_NULL_INDEX, TES_TOMBSTONE);
}

static void test_lookup_matches_get(void **state)
{
    (void)state;
    static fixture_t f;
    build(&f);
    for (int k = 0; k < KINDS; k++) {
        tes_lookup_t l;
        assert_int_equal(tes_lookup_init(&l, f.w, f.c[k]), TES_OK);
        assert_int_equal(l.sparse, k % 2 == 1);
        assert_int_equal(l.size, sizeof(vec3_t));
        if (l.sparse)
            assert_bases_match_pages(&l);
        for (int i = 0; i < N; i++) {
            void *p = tes_lookup_get(&l, f.es[i]);
            if (f.alive[i] && f.has[i][k])
                assert_value(p, i, k);
            else
                assert_null(p);
            assert_ptr_equal(p, tes_get_mut(f.w, f.es[i], f.c[k]));
        }
        for (int b = 0; b < BAD; b++) {
            assert_null(tes_lookup_get(&l, f.bad[b]));
            assert_typed_forms(&l, f.bad[b]);
            assert_null(tes_get(f.w, f.bad[b], f.c[k]));
        }
        /* Writes through the view's pointers keep it valid. */
        int i = k % 3 == 0 ? 4 : 3; /* (i + k) % 3 != 0: i has kind k */
        assert_true(f.alive[i] && f.has[i][k]);
        vec3_t *p = tes_lookup_get(&l, f.es[i]);
        assert_non_null(p);
        p->y = 42.0f;
        assert_true(((const vec3_t *)tes_get(f.w, f.es[i], f.c[k]))->y == 42.0f);
        tes_lookup_fini(&l);
        assert_null(l.columns);
        assert_null(l.entry_pages);
    }
    assert_int_equal(tes__world_check(f.w), TES_OK);
    tes_world_free(f.w);
}

/* Entities spread over many tables (every combination of five other
 * components and tags), c in half of them, rows at many positions. */
static void test_lookup_many_tables(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t c = reg(w, "Pos", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t other[5];
    other[0] = reg(w, "A", 8, TES_STORAGE_TABLE, false);
    other[1] = reg(w, "B", 0, TES_STORAGE_TABLE, false);
    other[2] = reg(w, "C", 24, TES_STORAGE_TABLE, false);
    other[3] = reg(w, "D", 0, TES_STORAGE_SPARSE, false); /* sparse: no table */
    other[4] = TES_DISABLED;
    enum { M = 640 };
    static tes_entity_t es[M];
    for (int i = 0; i < M; i++) {
        es[i] = tes_spawn(w);
        int mask = i % 32;
        for (int b = 0; b < 5; b++)
            if (mask & (1 << b))
                assert_int_equal(tes_add(w, es[i], other[b]), TES_OK);
        if ((i / 32) % 2 == 0) {
            vec3_t v = value_of(i, 0);
            assert_int_equal(tes_set(w, es[i], c, &v), TES_OK);
        }
    }
    tes_lookup_t l;
    assert_int_equal(tes_lookup_init(&l, w, c), TES_OK);
    assert_true(l.table_count > 16);
    for (int i = 0; i < M; i++) {
        void *p = tes_lookup_get(&l, es[i]);
        if ((i / 32) % 2 == 0)
            assert_value(p, i, 0); /* disabled ones too, as tes_get */
        else
            assert_null(p);
        assert_ptr_equal(p, tes_get_mut(w, es[i], c));
    }
    tes_lookup_fini(&l);
    tes_world_free(w);
}

/* A table view's column array: a power of two longer than the world's
 * table count (so the free marker, masked, lands past every table), NULL
 * past the last table, checked as the table count passes powers of two.
 * At each size a forged handle carrying the generation a free slot will
 * issue next, and one naming a retired slot, must miss through the masked
 * marker. */
static void test_lookup_column_array_shape(void **state)
{
    (void)state;
    tes_world_desc_t wd;
    memset(&wd, 0, sizeof wd);
    wd.generation_limit = 2;
    tes_world_t *w = tes_world_new(&wd);
    tes_comp_t c = reg(w, "Pos", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    enum { EXTRA = 10 };
    tes_comp_t extra[EXTRA];
    char name[16];
    for (int k = 0; k < EXTRA; k++) {
        snprintf(name, sizeof name, "Extra%d", k);
        extra[k] = reg(w, name, k % 2 ? 0 : 4, TES_STORAGE_TABLE, false);
    }
    tes_entity_t live[EXTRA + 1];
    for (int k = 0; k <= EXTRA; k++)
        live[k] = tes_spawn(w);
    /* A retired slot (its second entity passes the limit 2), then a freed
     * one (next generation 2); no spawn follows, so it stays free. */
    tes_entity_t gone = TES_NULL;
    for (int round = 0; round < 2; round++) {
        gone = tes_spawn(w);
        assert_int_equal(tes_set(w, gone, c, &(vec3_t){1, 2, 3}), TES_OK);
        assert_int_equal(tes_destroy(w, gone), TES_OK);
    }
    tes_entity_t forged_retired = tes_entity_make(tes_entity_index(gone), TES_TOMBSTONE);
    tes_entity_t freed = tes_spawn(w);
    assert_int_equal(tes_set(w, freed, c, &(vec3_t){1, 2, 3}), TES_OK);
    assert_int_equal(tes_destroy(w, freed), TES_OK);
    tes_entity_t forged_free = tes_entity_make(tes_entity_index(freed), 2);
    tes_world_stats_t st0;
    assert_int_equal(tes_world_stats(w, &st0), TES_OK);
    assert_int_equal(st0.entities_retired, 1);
    uint32_t seen_power = 0;
    for (int k = 0; k <= EXTRA; k++) {
        assert_int_equal(tes_set(w, live[k], c, &(vec3_t){(float)k, 0, 0}), TES_OK);
        if (k < EXTRA)
            assert_int_equal(tes_add(w, live[k], extra[k]), TES_OK);
        tes_world_stats_t st;
        assert_int_equal(tes_world_stats(w, &st), TES_OK);
        if ((st.tables & (st.tables - 1u)) == 0)
            seen_power++;
        tes_lookup_t l;
        assert_int_equal(tes_lookup_init(&l, w, c), TES_OK);
        assert_true(l.table_count > st.tables);
        assert_int_equal(l.table_count & (l.table_count - 1u), 0);
        assert_true(l.table_count / 2u <= st.tables); /* the smallest such */
        for (uint32_t t = st.tables; t < l.table_count; t++)
            assert_null(l.columns[t]);
        assert_null(l.columns[TES_LOOKUP_SLOT_FREE & (l.table_count - 1u)]);
        for (int j = 0; j <= EXTRA; j++) {
            assert_ptr_equal(tes_lookup_get(&l, live[j]), tes_get_mut(w, live[j], c));
            assert_typed_forms(&l, live[j]);
        }
        assert_null(tes_lookup_get(&l, forged_free));
        assert_null(tes_lookup_get(&l, forged_retired));
        assert_typed_forms(&l, forged_free);
        assert_typed_forms(&l, forged_retired);
        tes_lookup_fini(&l);
    }
    assert_true(seen_power >= 2); /* the walk crossed powers of two */
    tes_world_free(w);
}

static void test_lookup_empty_world(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t t = reg(w, "T", 4, TES_STORAGE_TABLE, false);
    tes_comp_t s = reg(w, "S", 4, TES_STORAGE_SPARSE, false);
    tes_entity_t probes[] = {TES_NULL, tes_entity_make(0, 1), tes_entity_make(5000, 1),
                             tes_entity_make(TES_NULL_INDEX, TES_TOMBSTONE)};
    tes_lookup_t lt, ls;
    assert_int_equal(tes_lookup_init(&lt, w, t), TES_OK);
    assert_int_equal(tes_lookup_init(&ls, w, s), TES_OK);
    assert_int_equal(lt.slot_count, 0);
    assert_int_equal(ls.entry_page_count, 0);
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        assert_null(tes_lookup_get(&lt, probes[i]));
        assert_null(tes_lookup_get(&ls, probes[i]));
        assert_typed_forms(&lt, probes[i]);
        assert_typed_forms(&ls, probes[i]);
    }
    tes_lookup_fini(&lt);
    tes_lookup_fini(&ls);
    /* Entities without either component: still NULL. */
    tes_entity_t e = tes_spawn(w);
    assert_view_matches(w, t, &e, 1);
    assert_view_matches(w, s, &e, 1);
    assert_null(tes_get(w, e, t));
    tes_world_free(w);
}

/* A sparse store whose first entry pages were never allocated (its only
 * members have indices past them): every index of an absent page, with
 * every generation (the tombstone one included), reads as absent through
 * the view and tes_get, and members and non-members past them answer as
 * tes_get_mut does. */
static void test_lookup_absent_pages(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    enum { PAGES = 3, COUNT = PAGES * TES_LOOKUP_ENTRY_PAGE + 40 };
    static tes_entity_t es[COUNT];
    assert_int_equal(tes_spawn_n(w, COUNT, NULL, 0, es), TES_OK);
    for (int i = PAGES * (int)TES_LOOKUP_ENTRY_PAGE; i < COUNT; i += 2) {
        vec3_t v = value_of(i, 0);
        assert_int_equal(tes_set(w, es[i], s, &v), TES_OK);
    }
    tes_lookup_t l;
    assert_int_equal(tes_lookup_init(&l, w, s), TES_OK);
    assert_true(l.entry_page_count > PAGES);
    for (uint32_t p = 0; p < PAGES; p++)
        assert_null(l.entry_pages[p]);
    assert_non_null(l.entry_pages[PAGES]);
    assert_bases_match_pages(&l);
    const uint32_t gens[] = {0, 1, 2, TES_TOMBSTONE - 1, TES_TOMBSTONE};
    for (int i = 0; i < PAGES * (int)TES_LOOKUP_ENTRY_PAGE; i++) {
        assert_null(tes_lookup_get_sparse(&l, es[i]));
        for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
            tes_entity_t e = tes_entity_make((uint32_t)i, gens[g]);
            assert_null(tes_lookup_get(&l, e));
            assert_null(tes_lookup_get_sparse(&l, e));
            assert_null(tes_get(w, e, s));
        }
    }
    for (int i = PAGES * (int)TES_LOOKUP_ENTRY_PAGE; i < COUNT; i++) {
        void *p = tes_lookup_get_sparse(&l, es[i]);
        assert_ptr_equal(p, tes_get_mut(w, es[i], s));
        if (i % 2 == 0)
            assert_value(p, i, 0);
        else
            assert_null(p);
        assert_null(tes_lookup_get_sparse(&l, tes_entity_make((uint32_t)i, TES_TOMBSTONE)));
        assert_typed_forms(&l, es[i]);
    }
    assert_null(tes_lookup_get_sparse(&l, UINT64_MAX));
    assert_null(tes_lookup_get_sparse(&l, tes_entity_make(l.entry_page_count * TES_LOOKUP_ENTRY_PAGE, 1)));
    tes_lookup_fini(&l);
    /* A view of a store every member left: pages stay, all empty. */
    for (int i = PAGES * (int)TES_LOOKUP_ENTRY_PAGE; i < COUNT; i += 2)
        assert_int_equal(tes_remove(w, es[i], s), TES_OK);
    assert_int_equal(tes_lookup_init(&l, w, s), TES_OK);
    assert_bases_match_pages(&l);
    for (int i = 0; i < COUNT; i++)
        assert_null(tes_lookup_get_sparse(&l, es[i]));
    tes_lookup_fini(&l);
    assert_int_equal(tes__world_check(w), TES_OK);
    tes_world_free(w);
}

static void test_lookup_bad_arguments(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t tag = reg(w, "Tag", 0, TES_STORAGE_TABLE, false);
    tes_comp_t stag = reg(w, "SparseTag", 0, TES_STORAGE_SPARSE, false);
    tes_comp_t c = reg(w, "Pos", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    uint64_t before = bytes_of(w);
    tes_lookup_t l;
    const tes_comp_t bad[] = {0, tag, stag, TES_DISABLED, TES_PREFAB, c + 1, 100000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&l, 0xA5, sizeof l);
        assert_int_equal(tes_lookup_init(&l, w, bad[i]), TES_ERR_INVALID);
        assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
        assert_true(tes_last_error_detail(w)[0] != '\0');
        /* Zeroed on failure: fini is a no-op and get misses. */
        assert_null(l.priv_block);
        assert_null(tes_lookup_get(&l, tes_entity_make(0, 1)));
        tes_lookup_fini(&l);
    }
    assert_int_equal(tes_lookup_init(NULL, w, c), TES_ERR_INVALID);
    assert_int_equal(tes_lookup_init(&l, NULL, c), TES_ERR_INVALID);
    assert_null(l.priv_block);
    tes_lookup_fini(NULL);
    /* fini on a zeroed view, and twice in a row. */
    tes_lookup_t z;
    memset(&z, 0, sizeof z);
    tes_lookup_fini(&z);
    assert_int_equal(tes_lookup_init(&l, w, c), TES_OK);
    assert_true(bytes_of(w) > before);
    tes_lookup_fini(&l);
    tes_lookup_fini(&l);
    assert_int_equal(bytes_of(w), before);
    tes_world_free(w);
}

/* A structural change ends a view; the view built after it answers for
 * the new world: destroyed entities miss, recycled indices hold the new
 * entity only. */
static void test_lookup_rebuilt_after_changes(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t t = reg(w, "T", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_entity_t es[40];
    for (int i = 0; i < 40; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = value_of(i, 0);
        assert_int_equal(tes_set(w, es[i], t, &v), TES_OK);
        assert_int_equal(tes_set(w, es[i], s, &v), TES_OK);
    }
    tes_entity_t old = es[7];
    assert_int_equal(tes_destroy(w, old), TES_OK);
    tes_lookup_t lt, ls;
    assert_int_equal(tes_lookup_init(&lt, w, t), TES_OK);
    assert_int_equal(tes_lookup_init(&ls, w, s), TES_OK);
    assert_null(tes_lookup_get(&lt, old));
    assert_null(tes_lookup_get(&ls, old));
    assert_value(tes_lookup_get(&lt, es[39]), 39, 0); /* moved into the hole */
    assert_value(tes_lookup_get(&ls, es[39]), 39, 0);
    tes_lookup_fini(&lt);
    tes_lookup_fini(&ls);
    es[7] = tes_spawn(w); /* recycles old's index */
    assert_int_equal(tes_entity_index(es[7]), tes_entity_index(old));
    vec3_t v = value_of(7, 1);
    assert_int_equal(tes_set(w, es[7], t, &v), TES_OK);
    assert_int_equal(tes_set(w, es[7], s, &v), TES_OK);
    assert_int_equal(tes_lookup_init(&lt, w, t), TES_OK);
    assert_int_equal(tes_lookup_init(&ls, w, s), TES_OK);
    assert_null(tes_lookup_get(&lt, old));
    assert_null(tes_lookup_get(&ls, old));
    assert_value(tes_lookup_get(&lt, es[7]), 7, 1);
    assert_value(tes_lookup_get(&ls, es[7]), 7, 1);
    tes_lookup_fini(&lt);
    tes_lookup_fini(&ls);
    /* Removing the component: the entity lives on, the view misses. */
    assert_int_equal(tes_remove(w, es[3], t), TES_OK);
    assert_int_equal(tes_remove(w, es[3], s), TES_OK);
    assert_view_matches(w, t, es, 40);
    assert_view_matches(w, s, es, 40);
    assert_int_equal(tes_lookup_init(&lt, w, t), TES_OK);
    assert_null(tes_lookup_get(&lt, es[3]));
    tes_lookup_fini(&lt);
    tes_world_free(w);
}

/* Whatever tes_get answers while commands are queued, for disabled
 * entities and for prefabs, the view answers too. */
static void test_lookup_deferred_disabled_prefab(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t t = reg(w, "T", sizeof(vec3_t), TES_STORAGE_TABLE, false);
    tes_comp_t s = reg(w, "S", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_entity_t es[6];
    for (int i = 0; i < 6; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = value_of(i, 0);
        if (i != 5) {
            assert_int_equal(tes_set(w, es[i], t, &v), TES_OK);
            assert_int_equal(tes_set(w, es[i], s, &v), TES_OK);
        }
    }
    assert_int_equal(tes_disable(w, es[1]), TES_OK);
    tes_entity_t prefab = tes_prefab_new(w);
    assert_int_equal(tes_set(w, prefab, t, &(vec3_t){9, 9, 9}), TES_OK);
    assert_int_equal(tes_set(w, prefab, s, &(vec3_t){9, 9, 9}), TES_OK);
    tes_entity_t all[8] = {es[0], es[1], es[2], es[3], es[4], es[5], prefab, TES_NULL};
    assert_int_equal(tes_defer_begin(w), TES_OK);
    assert_int_equal(tes_destroy(w, es[2]), TES_OK);            /* queued: still there */
    assert_int_equal(tes_remove(w, es[3], t), TES_OK);          /* queued */
    assert_int_equal(tes_remove(w, es[3], s), TES_OK);
    assert_int_equal(tes_set(w, es[5], t, &(vec3_t){5, 5, 5}), TES_OK); /* queued add */
    assert_int_equal(tes_set(w, es[5], s, &(vec3_t){5, 5, 5}), TES_OK);
    all[7] = tes_spawn(w); /* live handle at once, no components yet */
    assert_non_null(tes_get(w, es[2], t));
    assert_non_null(tes_get(w, es[3], s));
    assert_null(tes_get(w, es[5], t));
    assert_view_matches(w, t, all, 8);
    assert_view_matches(w, s, all, 8);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_null(tes_get(w, es[2], t));
    assert_non_null(tes_get(w, es[5], s));
    assert_view_matches(w, t, all, 8);
    assert_view_matches(w, s, all, 8);
    tes_lookup_t l;
    assert_int_equal(tes_lookup_init(&l, w, t), TES_OK);
    assert_non_null(tes_lookup_get(&l, es[1]));  /* disabled */
    assert_non_null(tes_lookup_get(&l, prefab)); /* prefab */
    assert_null(tes_lookup_get(&l, es[2]));
    tes_lookup_fini(&l);
    tes_world_free(w);
}

/* An owning group reorders a sparse store's values: a view built after
 * it follows the new positions. */
static void test_lookup_owning_group(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t a = reg(w, "A", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_comp_t b = reg(w, "B", sizeof(vec3_t), TES_STORAGE_SPARSE, false);
    tes_entity_t es[50];
    for (int i = 0; i < 50; i++) {
        es[i] = tes_spawn(w);
        vec3_t v = value_of(i, 0);
        assert_int_equal(tes_set(w, es[i], a, &v), TES_OK);
        if (i % 3 == 0)
            assert_int_equal(tes_set(w, es[i], b, &v), TES_OK);
    }
    tes_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.terms[0].comp = a;
    qd.terms[1].comp = b;
    qd.flags = TES_QUERY_OWNING_GROUP;
    tes_query_t *q = tes_query_new(w, &qd);
    assert_non_null(q);
    tes_lookup_t l;
    assert_int_equal(tes_lookup_init(&l, w, a), TES_OK);
    for (int i = 0; i < 50; i++)
        assert_value(tes_lookup_get(&l, es[i]), i, 0);
    tes_lookup_fini(&l);
    tes_query_free(q);
    tes_world_free(w);
}

typedef struct busy_ctx {
    tes_comp_t table, sparse;
    int table_status, sparse_status;
    int calls;
} busy_ctx_t;

static void busy_run(tes_iter_t *it)
{
    busy_ctx_t *ctx = it->ctx;
    tes_lookup_t l;
    int rc = tes_lookup_init(&l, it->world, ctx->table);
    if (rc == TES_ERR_BUSY || ctx->table_status == 1)
        ctx->table_status = rc;
    tes_lookup_fini(&l);
    ctx->sparse_status = tes_lookup_init(&l, it->world, ctx->sparse);
    tes_lookup_fini(&l);
    ctx->calls++;
}

static void other_run(tes_iter_t *it) { (void)it; }

/* A table view allocates: the scheduler serialises a level's allocations,
 * so both views work in a system on every thread count (regression: a
 * table view was refused only when the level ran on several threads). */
static void test_lookup_parallel_systems(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 4; threads++) {
        tes_world_desc_t wd;
        memset(&wd, 0, sizeof wd);
        wd.threads = threads;
        tes_world_t *w = tes_world_new(&wd);
        busy_ctx_t ctx = {0, 0, 1, 1, 0};
        ctx.table = reg(w, "T", 4, TES_STORAGE_TABLE, false);
        ctx.sparse = reg(w, "S", 4, TES_STORAGE_SPARSE, false);
        tes_comp_t other = reg(w, "O", 4, TES_STORAGE_TABLE, false);
        for (int i = 0; i < 2000; i++) {
            tes_entity_t e = tes_spawn(w);
            assert_int_equal(tes_add(w, e, ctx.table), TES_OK);
            assert_int_equal(tes_add(w, e, ctx.sparse), TES_OK);
            assert_int_equal(tes_add(w, e, other), TES_OK);
        }
        tes_system_desc_t sd;
        memset(&sd, 0, sizeof sd);
        sd.name = "reader";
        sd.query.terms[0].comp = ctx.table;
        sd.query.terms[0].access = TES_IN;
        sd.run = busy_run;
        sd.ctx = &ctx;
        tes_system_t *s1 = tes_system_new(w, &sd);
        assert_non_null(s1);
        memset(&sd, 0, sizeof sd);
        sd.name = "other";
        sd.query.terms[0].comp = other;
        sd.run = other_run;
        tes_system_t *s2 = tes_system_new(w, &sd);
        assert_non_null(s2);
        assert_int_equal(tes_progress(w, 0.0f), TES_OK);
        assert_true(ctx.calls > 0);
        assert_int_equal(ctx.sparse_status, TES_OK);
        assert_int_equal(ctx.table_status, TES_OK);
        tes_world_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_matches_get),
        cmocka_unit_test(test_lookup_many_tables),
        cmocka_unit_test(test_lookup_column_array_shape),
        cmocka_unit_test(test_lookup_empty_world),
        cmocka_unit_test(test_lookup_absent_pages),
        cmocka_unit_test(test_lookup_bad_arguments),
        cmocka_unit_test(test_lookup_rebuilt_after_changes),
        cmocka_unit_test(test_lookup_deferred_disabled_prefab),
        cmocka_unit_test(test_lookup_owning_group),
        cmocka_unit_test(test_lookup_parallel_systems),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
