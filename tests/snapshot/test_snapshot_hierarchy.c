/*
 * Snapshots of the hierarchy: links (child order included) and names
 * survive a save and load, a loaded world saves to the same bytes, a file
 * of the previous format version (no hierarchy section; the fixture was
 * written by the library before the section existed) still loads, and a
 * forged hierarchy section (a cycle, a self link, a second parent, a bad or
 * repeated name, links or names out of the order a save writes them) is
 * refused with TES_ERR_FORMAT and the world left empty; links between
 * prefab and other entities, which tag changes after linking make, load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snapshot/format.h"
#include "snapshot/mem_stream.h"
#include "tessera.h"
#include "world/check.h"

typedef struct Pos {
    float x, y;
} Pos;
typedef struct Hp {
    int32_t hp;
} Hp;

static tes_world_t *new_world(tes_comp_t *pos, tes_comp_t *hp)
{
    tes_world_t *w = tes_world_new(NULL);
    *pos = TES_COMPONENT(w, Pos);
    *hp = TES_COMPONENT(w, Hp, .storage = TES_STORAGE_SPARSE);
    return w;
}

static void test_previous_version_loads(void **state)
{
    (void)state;
    tes_comp_t pos, hp;
    tes_world_t *w = new_world(&pos, &hp);
    assert_int_equal(tes_snapshot_load_file(w, TES_FIXTURE_DIR "/v2_world.snap"), TES_OK);
    /* Written as: 4 entities with Pos {i, 10 i}, Hp 77 on the second, the
     * third destroyed. */
    assert_int_equal(tes_entity_count(w), 3);
    tes_entity_t e1 = tes_entity_make(1, 1), e3 = tes_entity_make(3, 1);
    assert_true(tes_alive(w, e1) && tes_alive(w, e3));
    const Pos *p = tes_get(w, e3, pos);
    assert_non_null(p);
    assert_true(p->x == 3.0f && p->y == 30.0f);
    assert_int_equal(((const Hp *)tes_get(w, e1, hp))->hp, 77);
    assert_true(tes_parent(w, e1) == TES_NULL);
    assert_null(tes_name(w, e1));
    /* It saves in the current version, and links work on it. */
    assert_int_equal(tes_set_parent(w, e3, e1), TES_OK);
    sw_buf_t b = {0};
    assert_int_equal(sw_save(w, &b), TES_OK);
    assert_int_equal(tes__get_u32(b.data + 8), TES__SNAP_VERSION);
    sw_buf_free(&b);
    assert_int_equal(tes__world_check(w), 0);
    tes_world_free(w);
}

/* r -> {c, a -> {x, y}}, s (a root); names on most; the children of r
 * linked out of index order. */
static void build(tes_world_t *w, tes_comp_t pos, tes_entity_t e[6])
{
    for (int i = 0; i < 6; i++) {
        e[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, e[i], pos, &(Pos){(float)i, 0}), TES_OK);
    }
    assert_int_equal(tes_set_parent(w, e[2], e[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[1], e[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[4], e[1]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[3], e[1]), TES_OK);
    const char *names[6] = {"r", "a", "c", "x", NULL, "s"};
    for (int i = 0; i < 6; i++)
        if (names[i])
            assert_int_equal(tes_set_name(w, e[i], names[i]), TES_OK);
}

static void test_round_trip(void **state)
{
    (void)state;
    tes_comp_t pos, hp;
    tes_world_t *w = new_world(&pos, &hp);
    tes_entity_t e[6];
    build(w, pos, e);
    sw_buf_t b = {0};
    assert_int_equal(sw_save(w, &b), TES_OK);
    tes_world_t *v = new_world(&pos, &hp);
    assert_int_equal(sw_load(v, b.data, b.size), TES_OK);
    tes_entity_t kids[4];
    assert_int_equal(tes_children(v, e[0], kids, 4), 2);
    assert_true(kids[0] == e[2] && kids[1] == e[1]);
    assert_int_equal(tes_children(v, e[1], kids, 4), 2);
    assert_true(kids[0] == e[4] && kids[1] == e[3]);
    assert_int_equal(tes_depth(v, e[3]), 2);
    assert_true(tes_lookup_path(v, "r/a/x") == e[3]);
    assert_true(tes_lookup_path(v, "s") == e[5]);
    assert_null(tes_name(v, e[4]));
    char path[32];
    assert_int_equal(tes_path(v, e[3], path, sizeof path), 5);
    assert_string_equal(path, "r/a/x");
    /* Same bytes again. */
    sw_buf_t b2 = {0};
    assert_int_equal(sw_save(v, &b2), TES_OK);
    assert_int_equal(b.size, b2.size);
    assert_memory_equal(b.data, b2.data, b.size);
    /* The loaded forest cascades like any other. */
    assert_int_equal(tes_destroy(v, e[0]), TES_OK);
    assert_int_equal(tes_entity_count(v), 1);
    assert_int_equal(tes__world_check(v), 0);
    sw_buf_free(&b);
    sw_buf_free(&b2);
    tes_world_free(v);
    tes_world_free(w);
}

/* Recomputes both checksums after a change to the meta part. */
static void reseal(uint8_t *data)
{
    uint64_t meta = tes__get_u64(data + 16), payload = tes__get_u64(data + 24);
    size_t end = 32 + (size_t)meta;
    uint64_t sum = tes__snap_hash(data, end, 0);
    tes__put_u64(data + end, sum);
    tes__put_u64(data + end + 8 + payload, tes__snap_hash(data + end + 8, (size_t)payload, sum));
}

static void test_forged_sections(void **state)
{
    (void)state;
    tes_comp_t pos, hp;
    tes_world_t *w = new_world(&pos, &hp);
    /* Two children of entity 0 and one name: the meta ends with
     * npairs=2, (1,0), (2,0), nnames=1, (2, 1, "n"). */
    tes_entity_t e[3];
    for (int i = 0; i < 3; i++) {
        e[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, e[i], pos, &(Pos){0, 0}), TES_OK);
    }
    assert_int_equal(tes_set_parent(w, e[1], e[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[2], e[0]), TES_OK);
    assert_int_equal(tes_set_name(w, e[2], "n"), TES_OK);
    sw_buf_t b = {0};
    assert_int_equal(sw_save(w, &b), TES_OK);
    size_t end = 32 + (size_t)tes__get_u64(b.data + 16);
    size_t names = end - 13, pairs = names - 16;
    assert_int_equal(tes__get_u32(b.data + pairs - 4), 2);
    assert_int_equal(tes__get_u32(b.data + names), 1);
    struct {
        size_t at;
        uint32_t value;
        const char *what;
    } cases[] = {
        {pairs + 8, 0, "cycle"},        /* (0, 0): its own parent */
        {pairs + 12, 1, "cycle"},       /* (0, 1): 0 -> 1 -> 0 */
        {pairs + 8, 1, "second"},       /* (1, 0) twice */
        {pairs + 4, 9, "not live"},     /* parent 9 */
        {names + 4, 1, "sibling"},      /* name on 1, then... see below */
        {names + 8, 0, "name"},         /* length 0 */
        {names + 8, 300, "name"},       /* too long */
        {names + 4, 7, "name"},         /* entity 7 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint8_t *copy = malloc(b.size);
        memcpy(copy, b.data, b.size);
        if (k == 0) {
            tes__put_u32(copy + pairs + 4, 1);
            tes__put_u32(copy + pairs + 8, 1);
        } else if (k == 1) {
            tes__put_u32(copy + pairs + 8, 0);
            tes__put_u32(copy + pairs + 12, 1);
        } else if (k == 4) {
            /* The name "n" moved to entity 1, a sibling of 2; then a second
             * record naming 2 "n" cannot be added without resizing, so the
             * case is a '/' instead. */
            copy[names + 12] = '/';
        } else {
            tes__put_u32(copy + cases[k].at, cases[k].value);
        }
        reseal(copy);
        tes_world_t *v = new_world(&pos, &hp);
        int rc = sw_load(v, copy, b.size);
        if (rc != TES_ERR_FORMAT)
            print_error("case %zu: %d (%s)\n", k, rc, tes_last_error_detail(v));
        assert_int_equal(rc, TES_ERR_FORMAT);
        assert_int_equal(tes_entity_count(v), 0);
        assert_int_equal(tes__world_check(v), 0);
        tes_world_free(v);
        free(copy);
    }
    sw_buf_free(&b);
    tes_world_free(w);
}

/* Loads `copy` (resealed) into a fresh world: it must be refused with
 * TES_ERR_FORMAT, a detail holding `word`, and the world left empty. */
static void refused(const uint8_t *data, size_t size, const char *word)
{
    uint8_t *copy = malloc(size);
    assert_non_null(copy);
    memcpy(copy, data, size);
    reseal(copy);
    tes_comp_t pos, hp;
    tes_world_t *v = new_world(&pos, &hp);
    int rc = sw_load(v, copy, size);
    const char *detail = tes_last_error_detail(v);
    if (rc != TES_ERR_FORMAT || !detail || !strstr(detail, word))
        fail_msg("expected TES_ERR_FORMAT naming \"%s\", got %d (%s)", word, rc,
                 detail ? detail : "no detail");
    assert_int_equal(tes_entity_count(v), 0);
    assert_int_equal(tes__world_check(v), 0);
    tes_world_free(v);
    free(copy);
}

/* One world has one byte sequence: links listed by parent in slot order
 * and names in slot order, as a save writes them. A file with the same
 * links or names in another order describes the same world, so loading it
 * would break "a loaded world saves to the bytes it was loaded from"; it
 * is refused. */
static void test_forged_order(void **state)
{
    (void)state;
    tes_comp_t pos, hp;
    tes_world_t *w = new_world(&pos, &hp);
    /* 1 under 0, 3 under 2, names on 1 and 3: the meta ends with npairs=2,
     * (1,0), (3,2), nnames=2, (1, 1, "a"), (3, 1, "b"). */
    tes_entity_t e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = tes_spawn(w);
        assert_int_equal(tes_set(w, e[i], pos, &(Pos){0, 0}), TES_OK);
    }
    assert_int_equal(tes_set_parent(w, e[1], e[0]), TES_OK);
    assert_int_equal(tes_set_parent(w, e[3], e[2]), TES_OK);
    assert_int_equal(tes_set_name(w, e[1], "a"), TES_OK);
    assert_int_equal(tes_set_name(w, e[3], "b"), TES_OK);
    sw_buf_t b = {0};
    assert_int_equal(sw_save(w, &b), TES_OK);
    size_t end = 32 + (size_t)tes__get_u64(b.data + 16);
    size_t names = end - 4 - 2 * 9, pairs = names - 16;
    assert_int_equal(tes__get_u32(b.data + pairs - 4), 2);
    assert_int_equal(tes__get_u32(b.data + pairs + 12), 2);
    assert_int_equal(tes__get_u32(b.data + names), 2);
    assert_int_equal(tes__get_u32(b.data + names + 13), 3);
    uint8_t *copy = malloc(b.size), tmp[9];
    assert_non_null(copy);
    /* The two links swapped: parent 2's child before parent 0's. */
    memcpy(copy, b.data, b.size);
    memcpy(tmp, copy + pairs, 8);
    memmove(copy + pairs, copy + pairs + 8, 8);
    memcpy(copy + pairs + 8, tmp, 8);
    refused(copy, b.size, "slot order");
    /* The two names swapped. */
    memcpy(copy, b.data, b.size);
    memcpy(tmp, copy + names + 4, 9);
    memmove(copy + names + 4, copy + names + 13, 9);
    memcpy(copy + names + 13, tmp, 9);
    refused(copy, b.size, "slot order");
    /* Entity 1 named twice (the second record names 1 too). */
    memcpy(copy, b.data, b.size);
    tes__put_u32(copy + names + 13, 1);
    refused(copy, b.size, "one per entity");
    /* Untouched, it loads and saves back to the same bytes. */
    memcpy(copy, b.data, b.size);
    tes_world_t *v = new_world(&pos, &hp);
    assert_int_equal(sw_load(v, copy, b.size), TES_OK);
    sw_buf_t b2 = {0};
    assert_int_equal(sw_save(v, &b2), TES_OK);
    assert_int_equal(b2.size, b.size);
    assert_memory_equal(b2.data, b.data, b.size);
    sw_buf_free(&b2);
    tes_world_free(v);
    free(copy);
    sw_buf_free(&b);
    tes_world_free(w);
}

/* tes_set_parent's prefab rule (prefab members link only within their
 * prefab, other entities only to other entities) holds when a link is
 * made, but TES_PREFAB may be added or removed afterwards, so a world can
 * hold any link between tagged and plain entities. Such a world loads
 * from its own snapshot and saves back to the same bytes (the fuzzer
 * found the loader refusing it when a check of that rule was tried). */
static void test_links_across_prefab_tags(void **state)
{
    (void)state;
    tes_comp_t pos, hp;
    tes_world_t *w = new_world(&pos, &hp);
    tes_entity_t x = tes_spawn(w), y = tes_spawn(w);
    tes_entity_t P = tes_prefab_new(w), m = tes_prefab_child(w, P), a = tes_spawn(w);
    assert_int_equal(tes_set_parent(w, x, y), TES_OK);
    assert_int_equal(tes_add(w, x, TES_PREFAB), TES_OK); /* tagged under plain */
    assert_int_equal(tes_set_parent(w, m, P), TES_OK);
    assert_int_equal(tes_remove(w, P, TES_PREFAB), TES_OK); /* member under untagged root */
    assert_int_equal(tes_remove(w, m, TES_PREFAB), TES_OK);
    assert_int_equal(tes_set_parent(w, a, m), TES_OK); /* plain under an untagged member */
    sw_buf_t b = {0};
    assert_int_equal(sw_save(w, &b), TES_OK);
    tes_world_t *v = new_world(&pos, &hp);
    assert_int_equal(sw_load(v, b.data, b.size), TES_OK);
    assert_true(tes_parent(v, x) == y && tes_parent(v, m) == P && tes_parent(v, a) == m);
    sw_buf_t b2 = {0};
    assert_int_equal(sw_save(v, &b2), TES_OK);
    assert_int_equal(b2.size, b.size);
    assert_memory_equal(b2.data, b.data, b.size);
    assert_int_equal(tes__world_check(v), 0);
    tes_world_free(v);
    sw_buf_free(&b2);
    sw_buf_free(&b);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_previous_version_loads),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_forged_sections),
        cmocka_unit_test(test_forged_order),
        cmocka_unit_test(test_links_across_prefab_tags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
