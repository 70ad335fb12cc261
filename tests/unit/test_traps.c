/*
 * The silent traps a new user falls into, each now a clear failure with a
 * detail that says what to do:
 * - a component registered after a query desc was built leaves a 0 in the
 *   middle of its terms, which used to end the list early (the query then
 *   matched more entities): refused, for queries and systems;
 * - a loop left without tes_iter_fini keeps the world deferred: the calls
 *   refused for it name the query whose iterator is still open;
 * - a stale handle's detail says which case it is (null, never issued,
 *   destroyed with the generations, retired);
 * - a failed call on a const world (tes_get, ...) never leaves an older,
 *   unrelated sentence in tes_last_error_detail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tessera.h"

typedef struct { float x, y; } Position;
typedef struct { float x, y; } Velocity;
typedef struct { int32_t hp; } Health;

static tes_query_desc_t three_terms(tes_comp_t a, tes_comp_t b, tes_comp_t c, tes_oper_t ob,
                                    tes_oper_t oc)
{
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0] = (tes_term_t){.comp = a, .oper = TES_AND, .access = TES_INOUT};
    d.terms[1] = (tes_term_t){.comp = b, .oper = ob, .access = TES_INOUT};
    d.terms[2] = (tes_term_t){.comp = c, .oper = oc, .access = TES_INOUT};
    return d;
}

static void noop(tes_iter_t *it) { (void)it; }

/* ------------------------------------------------------- trap 1: terms */

static void forgotten_registration_refused(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    tes_comp_t health = 0; /* registration forgotten */
    tes_entity_t e = tes_spawn(w);
    tes_add(w, e, pos);

    tes_query_desc_t d = three_terms(pos, health, vel, TES_AND, TES_AND);
    assert_null(tes_query_new(w, &d));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_string_equal(tes_last_error_detail(w),
                        "terms[1] has component 0 but terms[2] is set: was a component registered?");

    /* {pos, NOT Health, NOT vel}: the same. */
    d = three_terms(pos, health, vel, TES_NOT, TES_NOT);
    assert_null(tes_query_new(w, &d));
    assert_string_equal(tes_last_error_detail(w),
                        "terms[1] has component 0 but terms[2] is set: was a component registered?");

    /* {pos, NOT Health} as the last term: its oper shows it was meant. */
    d = three_terms(pos, health, 0, TES_NOT, TES_AND);
    assert_null(tes_query_new(w, &d));
    assert_string_equal(tes_last_error_detail(w),
                        "terms[1] has component 0 but oper 1 (TES_AND is 0): was a component registered?");
    d.terms[1].oper = TES_AND;
    d.terms[1].access = TES_IN;
    assert_null(tes_query_new(w, &d));
    assert_string_equal(tes_last_error_detail(w),
                        "terms[1] has component 0 but access 1 (TES_INOUT is 0): was a component registered?");

    /* A system: its query desc is checked the same way (it used to run
     * once per frame as a system without terms when terms[0] was 0). */
    tes_system_desc_t sd;
    memset(&sd, 0, sizeof sd);
    sd.name = "move";
    sd.run = noop;
    sd.query = three_terms(health, pos, 0, TES_AND, TES_AND);
    assert_null(tes_system_new(w, &sd));
    assert_int_equal(tes_last_error(w), TES_ERR_INVALID);
    assert_string_equal(tes_last_error_detail(w),
                        "terms[0] has component 0 but terms[1] is set: was a component registered?");
    sd.query = three_terms(pos, health, vel, TES_AND, TES_AND);
    assert_null(tes_system_new(w, &sd));
    assert_string_equal(tes_last_error_detail(w),
                        "terms[1] has component 0 but terms[2] is set: was a component registered?");

    /* Once registered, the same desc works and matches only e's like. */
    health = TES_COMPONENT(w, Health);
    d = three_terms(pos, health, vel, TES_AND, TES_AND);
    tes_query_t *q = tes_query_new(w, &d);
    assert_non_null(q);
    assert_int_equal(tes_query_count(q), 0);
    tes_query_free(q);
    tes_world_free(w);
}

/* ------------------------------------------- trap 2: an iterator left open */

static void loop_left_open_is_named(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    tes_comp_t health = TES_COMPONENT(w, Health);
    for (int i = 0; i < 3; i++) {
        tes_entity_t e = tes_spawn(w);
        tes_set(w, e, pos, &(Position){1, 2});
        tes_set(w, e, vel, &(Velocity){3, 4});
    }
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = pos;
    d.terms[1].comp = vel;
    d.terms[2] = (tes_term_t){.comp = health, .oper = TES_NOT, .access = TES_INOUT};
    tes_query_t *q = tes_query_new(w, &d);
    tes_query_desc_t d2;
    memset(&d2, 0, sizeof d2);
    d2.terms[0].comp = vel;
    tes_query_t *q2 = tes_query_new(w, &d2);

    /* A finished loop, then one left early without tes_iter_fini. */
    tes_iter_t it = tes_query_iter(q2);
    while (tes_iter_next(&it)) {
    }
    tes_entity_t found = TES_NULL;
    it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        found = it.entities[0];
        break;
    }
    assert_true(tes_is_deferred(w));
    /* The world stays deferred: this set is queued, not applied. */
    assert_int_equal(tes_set(w, found, health, &(Health){5}), TES_OK);
    assert_null(tes_get(w, found, health));

    tes_system_desc_t sd;
    memset(&sd, 0, sizeof sd);
    sd.name = "noop";
    sd.run = noop;
    assert_non_null(tes_system_new(w, &sd));
    assert_int_equal(tes_progress(w, 0.f), TES_ERR_BUSY);
    assert_string_equal(tes_last_error_detail(w),
                        "tes_progress refused: the world is deferred by 1 unfinished iterator of "
                        "query {Position, Velocity, NOT Health} (a loop left early must call "
                        "tes_iter_fini)");
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_string_equal(tes_last_error_detail(w),
                        "tes_defer_end: no tes_defer_begin level is open; the world is deferred by "
                        "1 unfinished iterator of query {Position, Velocity, NOT Health} (a loop "
                        "left early must call tes_iter_fini)");
    tes_query_desc_t own;
    memset(&own, 0, sizeof own);
    own.terms[0].comp = health;
    own.flags = TES_QUERY_OWNING_GROUP;
    assert_int_equal(tes_defer_begin(w), TES_OK);
    tes_iter_t it2 = tes_query_iter(q2);
    assert_null(tes_query_new(w, &own));
    assert_int_equal(tes_last_error(w), TES_ERR_BUSY);
    assert_string_equal(tes_last_error_detail(w),
                        "tes_query_new (an owning group) refused: the world is deferred by 2 "
                        "unfinished iterators of queries {Position, Velocity, NOT Health}, "
                        "{Velocity} (a loop left early must call tes_iter_fini) and 1 "
                        "tes_defer_begin level without tes_defer_end");
    tes_iter_fini(&it2);
    assert_int_equal(tes_defer_end(w), TES_OK);
    assert_int_equal(tes_snapshot_save_file(w, "/nonexistent-dir/x.snap"), TES_ERR_BUSY);
    assert_non_null(strstr(tes_last_error_detail(w),
                           "tes_snapshot_save_file refused: the world is deferred by 1 unfinished "
                           "iterator of query {Position, Velocity, NOT Health}"));

    /* Finishing the loop applies the queued set; tes_progress runs. */
    tes_iter_fini(&it);
    assert_false(tes_is_deferred(w));
    const Health *h = tes_get(w, found, health);
    assert_non_null(h);
    assert_int_equal(h->hp, 5);
    assert_int_equal(tes_progress(w, 0.f), TES_OK);
    tes_query_free(q);
    tes_query_free(q2);
    tes_world_free(w);
}

/* Nested loops of one query are counted; a query freed with its loop
 * still open is not named, not even after another query takes its
 * memory; levels past the recorded ones still count. */
static void open_levels_named_by_holder(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    tes_entity_t e = tes_spawn(w);
    tes_set(w, e, pos, &(Position){1, 2});
    tes_query_desc_t d;
    memset(&d, 0, sizeof d);
    d.terms[0].comp = pos;
    tes_query_t *q = tes_query_new(w, &d);
    tes_iter_t outer = tes_query_iter(q);
    tes_iter_t inner = tes_query_iter(q);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w),
                           "2 unfinished iterators of query {Position} (2 iterators)"));
    tes_iter_fini(&inner);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "1 unfinished iterator of query {Position} (a loop"));

    /* Ten more levels than are recorded: all counted, the first named. */
    tes_iter_t more[10];
    for (int i = 0; i < 10; i++)
        more[i] = tes_query_iter(q);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "11 unfinished iterators of query {Position}"));
    for (int i = 9; i >= 0; i--)
        tes_iter_fini(&more[i]);

    tes_query_free(q);
    memset(&d, 0, sizeof d);
    d.terms[0].comp = vel;
    tes_query_t *q2 = tes_query_new(w, &d);
    assert_non_null(q2);
    assert_int_equal(tes_defer_end(w), TES_ERR_INVALID);
    assert_non_null(strstr(tes_last_error_detail(w), "1 unfinished iterator of an unnamed query (freed, or past the named levels)"));
    assert_null(strstr(tes_last_error_detail(w), "Velocity"));
    tes_iter_fini(&outer);
    assert_false(tes_is_deferred(w));
    tes_query_free(q2);
    tes_world_free(w);
}

/* ------------------------------------------------ trap 3: stale handles */

static void stale_details_say_which_case(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.generation_limit = 2});
    tes_comp_t pos = TES_COMPONENT(w, Position);
    const Position v = {1, 2};

    assert_int_equal(tes_set(w, TES_NULL, pos, &v), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "the entity handle is 0 (TES_NULL): it was never set, or holds the "
                        "result of a call that failed");
    assert_int_equal(tes_destroy(w, tes_entity_make(3, 1)), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 3:1 was never issued: this world has issued no entity yet (a "
                        "handle from another world?)");

    tes_entity_t a = tes_spawn(w); /* 0:1 */
    tes_entity_t b = tes_spawn(w); /* 1:1 */
    assert_int_equal(tes_add(w, tes_entity_make(7, 1), pos), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 7:1 was never issued: this world has issued indices 0 to 1 only "
                        "(a handle from another world?)");
    assert_int_equal(tes_add(w, tes_entity_make(0, 5), pos), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 0:5 was never issued: generation 5 is past the slot's (current "
                        "generation 1)");

    tes_destroy(w, a);
    assert_int_equal(tes_set(w, a, pos, &v), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 0:1 is destroyed: handle generation 1, the slot is free (the next "
                        "entity there gets generation 2)");
    tes_entity_t a2 = tes_spawn(w); /* 0:2 */
    assert_int_equal(tes_entity_generation(a2), 2);
    assert_int_equal(tes_remove(w, a, pos), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 0:1 is destroyed: handle generation 1, the slot now holds entity "
                        "0:2 (generation 2)");
    /* Generation 2 is the limit: the slot retires. */
    tes_destroy(w, a2);
    assert_int_equal(tes_clear(w, a2), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 0:2 is destroyed: its slot used up its generations and is "
                        "retired, so no handle with index 0 is alive again");
    /* Bulk, deferred and instance calls use the same sentences. */
    tes_entity_t list[2] = {b, a};
    assert_int_equal(tes_destroy_n(w, list, 2), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "entity 0:1 is destroyed: its slot used up its generations and is "
                        "retired, so no handle with index 0 is alive again");
    tes_defer_begin(w);
    assert_int_equal(tes_set(w, a, pos, &v), TES_ERR_STALE);
    assert_non_null(strstr(tes_last_error_detail(w), "entity 0:1 is destroyed"));
    tes_defer_end(w);
    assert_int_equal(tes_instance_destroy(w, 0), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(w),
                        "the instance handle is 0 (no instance): it was never set, or holds the "
                        "result of a call that failed");
    tes_entity_t p = tes_prefab_new(w);
    tes_instance_t inst = tes_instantiate(w, p, NULL, 0);
    assert_int_equal(tes_instance_destroy(w, inst), TES_OK);
    assert_int_equal(tes_instance_adopt(w, inst, b), TES_ERR_STALE);
    char want[160];
    snprintf(want, sizeof want,
             "instance %u:%u is no longer alive (destroyed, or its last member left it): handle "
             "generation %u, the slot is free (the next instance there gets generation %u)",
             tes_entity_index(inst), tes_entity_generation(inst), tes_entity_generation(inst),
             tes_entity_generation(inst) + 1);
    assert_string_equal(tes_last_error_detail(w), want);
    tes_world_free(w);
}

/* ----------------------------------------- trap 5: failed const calls */

static void const_failure_is_not_shadowed(void **state)
{
    (void)state;
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t tag = tes_component(w, &(tes_component_desc_t){.name = "Frozen"});
    tes_entity_t e = tes_spawn(w);
    tes_set(w, e, pos, &(Position){1, 2});
    tes_entity_t dead = tes_spawn(w);
    tes_destroy(w, dead);

    /* An unrelated failure first, with its own sentence. */
    assert_null(tes_query_new(w, NULL));
    assert_string_equal(tes_last_error_detail(w), "tes_query_new: desc is NULL");

    /* The natural check after a read that found nothing. */
    const tes_world_t *cw = w;
    const Position *p = tes_get(cw, dead, pos);
    assert_null(p);
    assert_int_equal(tes_last_error(cw), TES_ERR_STALE);
    assert_string_equal(tes_last_error_detail(cw),
                        "entity 1:1 is destroyed: handle generation 1, the slot is free (the next "
                        "entity there gets generation 2)");
    /* A live entity without the component: not an error, but the sentence
     * says so rather than repeating the last failure. */
    assert_null(tes_get(cw, e, tag));
    assert_int_equal(tes_last_error(cw), TES_ERR_INVALID);
    assert_string_equal(tes_last_error_detail(cw), "component 'Frozen' is a tag: it has no value, so tes_get returns NULL (test it with tes_has)");
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    assert_null(tes_get_mut(w, e, vel));
    assert_int_equal(tes_last_error(cw), TES_OK);
    assert_string_equal(tes_last_error_detail(cw),
                        "entity 0:1 has no component 'Velocity' (tes_get returns NULL for it; not "
                        "an error)");
    assert_null(tes_get(cw, e, 77));
    assert_string_equal(tes_last_error_detail(cw),
                        "component id 77 is not registered in this world (ids run from 1 to 5): "
                        "was the component registered?");
    /* A successful read changes nothing. */
    assert_non_null(tes_get(cw, e, pos));
    assert_int_equal(tes_last_error(cw), TES_ERR_INVALID);

    /* Other const calls. */
    tes_comp_t out[4];
    assert_int_equal(tes_components_of(cw, dead, out, 4), -1);
    assert_int_equal(tes_last_error(cw), TES_ERR_STALE);
    assert_non_null(strstr(tes_last_error_detail(cw), "entity 1:1 is destroyed"));
    assert_int_equal(tes_components_of(cw, e, NULL, 3), -1);
    assert_string_equal(tes_last_error_detail(cw), "tes_components_of: cap = 3 with out NULL");
    assert_int_equal(tes_component_lookup(cw, "Health"), 0);
    assert_string_equal(tes_last_error_detail(cw),
                        "no component named 'Health' is registered in this world");
    assert_int_equal(tes_prefab_members(cw, e, NULL, 0), -1);
    assert_string_equal(tes_last_error_detail(cw),
                        "tes_prefab_members: entity 0:1 is not a prefab root");

    /* A failure of a non-const call afterwards is the newer one again. */
    assert_int_equal(tes_add(w, e, 99), TES_ERR_INVALID);
    assert_int_equal(tes_last_error(cw), TES_ERR_INVALID);
    assert_null(strstr(tes_last_error_detail(cw), "Health"));
    assert_string_not_equal(tes_last_error_detail(cw), "");

    /* A record of another world (freed, and a new one maybe at the same
     * address) is never shown. */
    assert_null(tes_get(cw, dead, pos));
    tes_world_free(w);
    tes_world_t *w2 = tes_world_new(NULL);
    assert_int_equal(tes_last_error(w2), TES_OK);
    assert_string_equal(tes_last_error_detail(w2), "");
    tes_world_free(w2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forgotten_registration_refused),
        cmocka_unit_test(loop_left_open_is_named),
        cmocka_unit_test(open_levels_named_by_holder),
        cmocka_unit_test(stale_details_say_which_case),
        cmocka_unit_test(const_failure_is_not_shadowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
