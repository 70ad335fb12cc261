/*
 * test_get_reads.c — the random-read paths: tes_get's short paths (a small
 * id's read descriptor, the table's data_of entry; the registry's store
 * pointer and the sparse entry alone for a small sparse id) and
 * tes_get_n's two-step pipeline, which parks each entity's slot or sparse
 * entry in out[] a fixed distance ahead and resolves it later.
 *
 * Every batch length around the pipeline's distance is tried (the lead-in,
 * the steady loop and the tail each run alone and together), and every
 * kind of handle that must give NULL is mixed into the batches: stale
 * handles whose index was recycled, a forged handle carrying a free slot's
 * next generation, indices never issued (past the slot array and past the
 * sparse pages), the null handle, entities whose component was removed,
 * and ids past the direct maps (the general path). Each answer is compared
 * with what the entity was given, not only with tes_get.
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

typedef struct {
    float x, y, z;
} vec3_t;

static tes_comp_t reg(tes_world_t *w, const char *name, tes_storage_t storage, bool stable)
{
    tes_component_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.size = sizeof(vec3_t);
    d.align = _Alignof(vec3_t);
    d.storage = storage;
    d.stable = stable;
    tes_comp_t c = tes_component(w, &d);
    assert_true(c != 0);
    return c;
}

static float value_of(int i, int k) { return (float)(i * 100 + k); }

static void assert_value(const void *p, int i, int k)
{
    assert_non_null(p);
    vec3_t v;
    memcpy(&v, p, sizeof v);
    assert_true(v.x == value_of(i, k) && v.z == value_of(i, k) + 2.0f);
}

enum { N = 300, KINDS = 4, BAD = 7 };

/* A world whose entities hold components of four kinds (table and sparse,
 * each with a small id and an id past 64), some removed again, some of the
 * entities destroyed and their indices recycled. */
typedef struct fixture {
    tes_world_t *w;
    tes_comp_t c[KINDS];
    tes_entity_t es[N];
    bool has[N][KINDS];
    tes_entity_t bad[BAD];
} fixture_t;

static void build(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    f->w = tes_world_new(NULL);
    assert_non_null(f->w);
    char name[16];
    /* Fillers push the second pair of ids past the direct maps. */
    f->c[0] = reg(f->w, "TablePos", TES_STORAGE_TABLE, false);
    f->c[1] = reg(f->w, "SparsePos", TES_STORAGE_SPARSE, false);
    for (int k = 0; k < 64; k++) {
        snprintf(name, sizeof name, "Filler%d", k);
        reg(f->w, name, TES_STORAGE_TABLE, false);
    }
    f->c[2] = reg(f->w, "TableFar", TES_STORAGE_TABLE, false);
    f->c[3] = reg(f->w, "SparseFar", TES_STORAGE_SPARSE, true);
    assert_true(f->c[0] < 64 && f->c[1] < 64 && f->c[2] >= 64 && f->c[3] >= 64);
    for (int i = 0; i < N; i++) {
        f->es[i] = tes_spawn(f->w);
        for (int k = 0; k < KINDS; k++) {
            if ((i + k) % 3 == 0)
                continue;
            vec3_t v = {value_of(i, k), value_of(i, k) + 1.0f, value_of(i, k) + 2.0f};
            assert_int_equal(tes_set(f->w, f->es[i], f->c[k], &v), TES_OK);
            f->has[i][k] = true;
        }
    }
    /* Removed components: the entity lives on, its table or sparse entry
     * no longer has the value. */
    for (int i = 1; i < N; i += 5)
        for (int k = 0; k < KINDS; k++)
            if (f->has[i][k]) {
                assert_int_equal(tes_remove(f->w, f->es[i], f->c[k]), TES_OK);
                f->has[i][k] = false;
            }
    /* Destroyed entities; the last one's index is recycled at once. */
    tes_entity_t last = TES_NULL;
    for (int i = 2; i < N; i += 11) {
        assert_int_equal(tes_destroy(f->w, f->es[i]), TES_OK);
        last = f->es[i];
    }
    tes_entity_t fresh = tes_spawn(f->w);
    assert_int_equal(tes_entity_index(fresh), tes_entity_index(last));
    /* The recycled index holds a value for every kind: a stale handle must
     * still miss it. */
    for (int k = 0; k < KINDS; k++) {
        vec3_t v = {-1.0f, -1.0f, -1.0f};
        assert_int_equal(tes_set(f->w, fresh, f->c[k], &v), TES_OK);
    }
    uint32_t free_index = tes_entity_index(f->es[2]); /* destroyed, still free */
    f->bad[0] = last;                                  /* stale, index recycled */
    f->bad[1] = tes_entity_make(free_index, tes_entity_generation(f->es[2]) + 1); /* forged */
    f->bad[2] = tes_entity_make(N + 50, 1);            /* index never issued */
    f->bad[3] = tes_entity_make(UINT32_C(1) << 20, 1); /* past every sparse page */
    f->bad[4] = TES_NULL;
    f->bad[5] = tes_entity_make(tes_entity_index(fresh), tes_entity_generation(fresh) + 1);
    f->bad[6] = tes_entity_make(tes_entity_index(f->es[0]), 0); /* generation 0: never live */
}

static bool alive_at(int i) { return !(i >= 2 && (i - 2) % 11 == 0); }

/* What tes_get must give for entity i and kind k: its value or NULL. */
static void check_one(const fixture_t *f, const void *p, int i, int k)
{
    if (alive_at(i) && f->has[i][k])
        assert_value(p, i, k);
    else
        assert_null(p);
}

static void test_get_every_kind(void **state)
{
    (void)state;
    static fixture_t f;
    build(&f);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < KINDS; k++) {
            check_one(&f, tes_get(f.w, f.es[i], f.c[k]), i, k);
            assert_ptr_equal(tes_get_mut(f.w, f.es[i], f.c[k]), tes_get(f.w, f.es[i], f.c[k]));
        }
    for (int b = 0; b < BAD; b++)
        for (int k = 0; k < KINDS; k++) {
            assert_null(tes_get(f.w, f.bad[b], f.c[k]));
            assert_null(tes_get_mut(f.w, f.bad[b], f.c[k]));
        }
    assert_int_equal(tes__world_check(f.w), TES_OK);
    tes_world_free(f.w);
}

/* Every batch length from 0 to 80 (the pipeline's distance is well inside
 * that range), at several offsets, with the bad handles spliced in at the
 * front, the middle and the end of the batch. */
static void test_get_n_every_length(void **state)
{
    (void)state;
    static fixture_t f;
    build(&f);
    enum { MAXLEN = 80 };
    tes_entity_t batch[MAXLEN];
    int who[MAXLEN]; /* entity number, or -1 - bad index */
    const void *out[MAXLEN];
    for (int len = 0; len <= MAXLEN; len++) {
        for (int start = 0; start < 3; start++) {
            for (int j = 0; j < len; j++) {
                int i = (start * 97 + j * 53) % N;
                batch[j] = f.es[i];
                who[j] = i;
            }
            /* Bad handles at the front, middle and end (and all over for
             * long batches). */
            for (int j = 0; j < len; j++)
                if (j == 0 || j == len / 2 || j == len - 1 || j % 9 == 4) {
                    int b = (j + start + len) % BAD;
                    batch[j] = f.bad[b];
                    who[j] = -1 - b;
                }
            for (int k = 0; k < KINDS; k++) {
                for (int j = 0; j < MAXLEN; j++)
                    out[j] = &f; /* garbage the call must overwrite */
                int32_t found = tes_get_n(f.w, f.c[k], batch, len, out);
                int32_t want = 0;
                for (int j = 0; j < len; j++) {
                    if (who[j] < 0)
                        assert_null(out[j]);
                    else
                        check_one(&f, out[j], who[j], k);
                    assert_ptr_equal(out[j], tes_get(f.w, batch[j], f.c[k]));
                    want += out[j] != NULL;
                }
                assert_int_equal(found, want);
                /* Past n nothing is written. */
                for (int j = len; j < MAXLEN; j++)
                    assert_ptr_equal(out[j], &f);
            }
        }
    }
    tes_world_free(f.w);
}

/* One long batch over every entity, then the same after more churn: the
 * sparse store compacts nothing, the tables move rows, and the answers
 * follow. */
static void test_get_n_after_churn(void **state)
{
    (void)state;
    static fixture_t f;
    build(&f);
    static const void *out[N];
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < KINDS; k++) {
            int32_t found = tes_get_n(f.w, f.c[k], f.es, N, out);
            int32_t want = 0;
            for (int i = 0; i < N; i++) {
                check_one(&f, out[i], i, k);
                want += out[i] != NULL;
            }
            assert_int_equal(found, want);
        }
        /* Churn: remove the first kind from every fourth live entity and
         * give it back to some that lacked it (rows move both ways). */
        for (int i = 0; i < N; i += 4) {
            if (!alive_at(i))
                continue;
            for (int k = 0; k < KINDS; k++) {
                if (f.has[i][k]) {
                    assert_int_equal(tes_remove(f.w, f.es[i], f.c[k]), TES_OK);
                    f.has[i][k] = false;
                } else {
                    vec3_t v = {value_of(i, k), value_of(i, k) + 1.0f, value_of(i, k) + 2.0f};
                    assert_int_equal(tes_set(f.w, f.es[i], f.c[k], &v), TES_OK);
                    f.has[i][k] = true;
                }
            }
        }
    }
    assert_int_equal(tes__world_check(f.w), TES_OK);
    tes_world_free(f.w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_every_kind),
        cmocka_unit_test(test_get_n_every_length),
        cmocka_unit_test(test_get_n_after_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
