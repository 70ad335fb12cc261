/*
 * Typed convenience macros and error details.
 *
 * - TES_DECLARE/TES_REGISTER/TES_ID, TES_SET/TES_GET/TES_GET_MUT/TES_ADD/
 *   TES_REMOVE/TES_HAS and TES_FIELD behave exactly like the calls they
 *   wrap, at file and at block scope, with optional desc fields.
 * - TES_FIELD (tes_field_checked) refuses a type of the wrong size and an
 *   out-of-range term with NULL and TES_ERR_INVALID; plain tes_field with a
 *   bad index is NULL and TES_ERR_INVALID too, never a crash.
 * - tes_last_error_detail: never NULL, "" before any failure and for a NULL
 *   world; each TES_ERR_INVALID names the argument and its value: the three
 *   cases users met (a name re-registered with another size, a query naming
 *   a component twice, an owning group over table components) and the
 *   others; a later failure of another kind clears it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tessera.h"

typedef struct {
    float x, y, z;
} Position;

typedef struct {
    float dx, dy;
} Velocity;

typedef struct {
    int32_t points;
} Health;

typedef struct {
    char unused;
} Frozen; /* registered as a tag below, by hand */

/* File scope declarations, as most programs will write them. */
TES_DECLARE(Position);
TES_DECLARE(Velocity);

static tes_world_t *world_with_types(void)
{
    tes_world_t *w = tes_world_new(NULL);
    assert_non_null(w);
    assert_int_not_equal(TES_REGISTER(w, Position), 0);
    assert_int_not_equal(TES_REGISTER(w, Velocity, .storage = TES_STORAGE_SPARSE), 0);
    return w;
}

/* Asserts the last error is TES_ERR_INVALID with a detail holding every
 * one of the given fragments. */
static void expect_detail(const tes_world_t *w, const char *a, const char *b)
{
    const char *d = tes_last_error_detail(w);
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_non_null(d);
    if (!strstr(d, a) || (b && !strstr(d, b)))
        fail_msg("detail \"%s\" lacks \"%s\"%s%s", d, a, b ? " or " : "", b ? b : "");
}

static void typed_register_and_access(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    assert_int_equal(TES_ID(Position), tes_component_lookup(w, "Position"));
    assert_int_equal(TES_ID(Velocity), tes_component_lookup(w, "Velocity"));
    /* The optional field went through: Velocity is sparse, so adding it
     * keeps the entity's table (the row stays where it is). */
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(TES_SET(w, e, Position, {1, 2, 3}), TES_OK);
    const Position *p = TES_GET(w, e, Position);
    assert_non_null(p);
    assert_true(p->x == 1 && p->y == 2 && p->z == 3);
    assert_ptr_equal(p, tes_get(w, e, TES_ID(Position)));
    assert_false(TES_HAS(w, e, Velocity));
    assert_int_equal(TES_ADD(w, e, Velocity), TES_OK);
    assert_true(TES_HAS(w, e, Velocity));
    assert_ptr_equal(TES_GET(w, e, Position), p); /* sparse add: row did not move */
    Velocity *v = TES_GET_MUT(w, e, Velocity);
    assert_non_null(v);
    assert_true(v->dx == 0 && v->dy == 0); /* zero-filled by the add */
    v->dx = 5;
    assert_true(((const Velocity *)tes_get(w, e, TES_ID(Velocity)))->dx == 5);
    assert_int_equal(TES_REMOVE(w, e, Velocity), TES_OK);
    assert_false(TES_HAS(w, e, Velocity));
    assert_null(TES_GET(w, e, Velocity));
    assert_int_equal(TES_REMOVE(w, e, Velocity), TES_OK); /* idempotent, like tes_remove */
    /* Registering again with the same layout gives the same id. */
    tes_comp_t before = TES_ID(Position);
    assert_int_equal(TES_REGISTER(w, Position), before);
    tes_world_free(w);
}

static void typed_block_scope(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    TES_DECLARE(Health);
    assert_int_equal(TES_ID(Health), 0);
    tes_comp_t id = TES_REGISTER(w, Health, .stable = true);
    assert_int_not_equal(id, 0);
    assert_int_equal(id, TES_ID(Health));
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(TES_SET(w, e, Health, {.points = 7}), TES_OK);
    assert_int_equal(TES_GET(w, e, Health)->points, 7);
    /* TES_SET on a stale entity fails like tes_set. */
    tes_destroy(w, e);
    assert_int_equal(TES_SET(w, e, Health, {1}), TES_ERR_STALE);
    assert_int_equal(TES_ADD(w, e, Health), TES_ERR_STALE);
    assert_false(TES_HAS(w, e, Health));
    tes_world_free(w);
}

static void typed_field(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    for (int i = 0; i < 10; i++) {
        tes_entity_t e = tes_spawn(w);
        TES_SET(w, e, Position, {(float)i, 0, 0});
        if (i % 2)
            TES_SET(w, e, Velocity, {1, 1});
    }
    tes_query_t *q = tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = TES_ID(Position)}, {.comp = TES_ID(Velocity)}}});
    assert_non_null(q);
    int32_t n = 0;
    for (tes_iter_t it = tes_query_iter(q); tes_iter_next(&it);) {
        Position *p = TES_FIELD(&it, Position, 0);
        Velocity *v = TES_FIELD(&it, Velocity, 1);
        assert_ptr_equal(p, tes_field(&it, 0));
        assert_ptr_equal(v, tes_field(&it, 1));
        for (int32_t i = 0; i < it.count; i++)
            p[i].x += v[i].dx;
        n += it.count;
    }
    assert_int_equal(n, 5);
    assert_int_equal(tes_last_error(w), TES_OK);

    /* Wrong type (Velocity is 8 bytes, term 0 is Position, 12). */
    tes_iter_t it = tes_query_iter(q);
    assert_true(tes_iter_next(&it));
    assert_null(TES_FIELD(&it, Velocity, 0));
    expect_detail(w, "'Position'", "size 12");
    assert_non_null(strstr(tes_last_error_detail(w), "size 8"));
    /* Out of range, both forms: NULL and TES_ERR_INVALID, no crash. */
    tes_iter_t again = it;
    assert_null(TES_FIELD(&again, Position, 2));
    expect_detail(w, "field index 2", "2 terms");
    assert_null(tes_field(&it, -1));
    expect_detail(w, "field index -1", NULL);
    assert_null(tes_field(&it, 1000));
    expect_detail(w, "field index 1000", NULL);
    /* The right type still works after the refusals. */
    assert_non_null(TES_FIELD(&it, Position, 0));
    tes_iter_fini(&it);
    /* A zeroed or NULL iterator: NULL, nothing to record on. */
    tes_iter_t zero = {0};
    assert_null(TES_FIELD(&zero, Position, 0));
    assert_null(tes_field_checked(NULL, 0, 4));
    tes_query_free(q);
    tes_world_free(w);
}

static void detail_none(void **state)
{
    (void)state;
    assert_non_null(tes_last_error_detail(NULL));
    assert_string_equal(tes_last_error_detail(NULL), "");
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.entity_limit = 1});
    assert_string_equal(tes_last_error_detail(w), "");
    assert_int_equal(tes_spawn_n(w, 1, NULL, 0, NULL), TES_OK);
    /* A failure of another kind leaves no detail, even after one that
     * left a detail. */
    assert_null(tes_query_new(w, NULL));
    assert_string_not_equal(tes_last_error_detail(w), "");
    assert_int_equal(tes_spawn(w), TES_NULL);
    assert_int_equal(tes_last_error(w), TES_ERR_FULL);
    assert_string_equal(tes_last_error_detail(w), "");
    tes_world_free(w);
}

/* The three cases from the issue. */
static void detail_reregistered_size(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "Position", .size = 4}), 0);
    expect_detail(w, "component 'Position' is registered with size 12", "this desc has size 4");
    tes_world_free(w);
}

static void detail_query_repeats_component(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    assert_null(tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = TES_ID(Position)}, {.comp = TES_ID(Velocity)},
                  {.comp = TES_ID(Position), .oper = TES_NOT}}}));
    expect_detail(w, "terms[0] and terms[2] both name component 'Position'", NULL);
    tes_world_free(w);
}

static void detail_owning_group_over_table(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    assert_null(tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = TES_ID(Velocity)}, {.comp = TES_ID(Position)}},
        .flags = TES_QUERY_OWNING_GROUP}));
    expect_detail(w, "terms[1] component 'Position'", "table component");
    tes_world_free(w);
}

/* More TES_ERR_INVALID paths, each with its argument and value. */
static void detail_registration(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    assert_int_equal(tes_component(w, NULL), 0);
    expect_detail(w, "desc is NULL", NULL);
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.size = 4}), 0);
    expect_detail(w, "name is NULL", NULL);
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "", .size = 4}), 0);
    expect_detail(w, "name is empty", NULL);
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "A", .size = 12, .align = 8}), 0);
    expect_detail(w, "'A'", "align 8");
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "B", .size = 4, .storage = (tes_storage_t)7}), 0);
    expect_detail(w, "'B'", "storage 7");
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "C", .size = 8, .entity_field_count = 1, .entity_fields = {4}}), 0);
    expect_detail(w, "entity_fields[0] = 4", "size 8");
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "D", .entity_field_count = 1}), 0);
    expect_detail(w, "'D'", "tag");
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "E", .size = 8, .entity_field_count = 9}), 0);
    expect_detail(w, "entity_field_count 9", NULL);
    /* Same size, other storage: the detail names both. */
    assert_int_not_equal(tes_component(w, &(tes_component_desc_t){.name = "F", .size = 8}), 0);
    assert_int_equal(tes_component(w, &(tes_component_desc_t){.name = "F", .size = 8, .storage = TES_STORAGE_SPARSE}), 0);
    expect_detail(w, "'F' is registered with size 8 align 8 table", "this desc has size 8 align 8 sparse");
    tes_world_free(w);
}

static void detail_entity_calls(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    tes_comp_t frozen = tes_component(w, &(tes_component_desc_t){.name = "Frozen"});
    tes_entity_t e = tes_spawn(w);
    assert_int_equal(tes_add(w, e, 999), TES_ERR_INVALID);
    expect_detail(w, "component id 999", "not registered");
    assert_int_equal(tes_set(w, e, TES_ID(Position), NULL), TES_ERR_INVALID);
    expect_detail(w, "value is NULL", "'Position'");
    assert_null(tes_ensure(w, e, frozen));
    expect_detail(w, "'Frozen'", "tag");
    tes_entity_t out[2];
    tes_comp_t twice[2] = {TES_ID(Position), TES_ID(Position)};
    assert_int_equal(tes_spawn_n(w, 2, twice, 2, out), TES_ERR_INVALID);
    expect_detail(w, "listed twice", NULL);
    assert_int_equal(tes_spawn_n(w, -1, NULL, 0, out), TES_ERR_INVALID);
    expect_detail(w, "= -1", NULL);
    tes_comp_t many[64] = {0};
    assert_int_equal(tes_spawn_n(w, 1, many, 64, out), TES_ERR_INVALID);
    expect_detail(w, "component id 0", "not registered");
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    expect_detail(w, "tes_defer_end", "no tes_defer_begin");
    tes_world_free(w);
}

static void detail_query_calls(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    assert_null(tes_query_new(w, NULL));
    expect_detail(w, "desc is NULL", NULL);
    assert_null(tes_query_new(w, &(tes_query_desc_t){0}));
    expect_detail(w, "no terms", NULL);
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = 77}}}));
    expect_detail(w, "terms[0]", "77");
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = TES_ID(Position), .oper = (tes_oper_t)9}}}));
    expect_detail(w, "oper", "9");
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = TES_ID(Position)}}, .flags = 1u << 20}));
    expect_detail(w, "unknown bits 0x100000", NULL);
    assert_null(tes_query_new(w, &(tes_query_desc_t){.terms = {{.comp = TES_ID(Position)}},
        .flags = TES_QUERY_OWNING_GROUP | TES_QUERY_NONOWNING_GROUP}));
    expect_detail(w, "both an owning and a non-owning group", NULL);
    assert_null(tes_query_new(w, &(tes_query_desc_t){
        .terms = {{.comp = TES_ID(Velocity), .oper = TES_NOT}}, .flags = TES_QUERY_NONOWNING_GROUP}));
    expect_detail(w, "TES_AND", NULL);
    tes_world_free(w);
}

static void detail_lifecycle_calls(void **state)
{
    (void)state;
    tes_world_t *w = world_with_types();
    tes_entity_t plain = tes_spawn(w);
    assert_int_equal(tes_instantiate(w, plain, NULL, 0), 0);
    expect_detail(w, "is not a prefab root", NULL);
    char expect[64];
    snprintf(expect, sizeof expect, "entity %u:%u", tes_entity_index(plain), tes_entity_generation(plain));
    assert_non_null(strstr(tes_last_error_detail(w), expect));
    tes_entity_t prefab = tes_prefab_new(w);
    assert_int_equal(tes_instantiate(w, prefab, NULL, -1), 0);
    expect_detail(w, "cap = -1", NULL);
    assert_int_equal(tes_instantiate_n(w, prefab, -2, NULL), TES_ERR_INVALID);
    expect_detail(w, "n = -2", NULL);
    assert_int_equal(tes_instance_detach(w, plain), TES_ERR_INVALID);
    expect_detail(w, "belongs to no instance", NULL);
    tes_instance_t inst = tes_instantiate(w, prefab, NULL, 0);
    assert_int_not_equal(inst, 0);
    tes_entity_t member;
    assert_int_equal(tes_instance_members(w, inst, &member, 1), 1);
    assert_int_equal(tes_instance_adopt(w, inst, member), TES_ERR_INVALID);
    expect_detail(w, "already belongs to an instance", NULL);
    tes_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(typed_register_and_access),
        cmocka_unit_test(typed_block_scope),
        cmocka_unit_test(typed_field),
        cmocka_unit_test(detail_none),
        cmocka_unit_test(detail_reregistered_size),
        cmocka_unit_test(detail_query_repeats_component),
        cmocka_unit_test(detail_owning_group_over_table),
        cmocka_unit_test(detail_registration),
        cmocka_unit_test(detail_entity_calls),
        cmocka_unit_test(detail_query_calls),
        cmocka_unit_test(detail_lifecycle_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
