/*
 * The program the debug-variant consumer test builds against the installed
 * libtessera_debug (tests/consumer/check_debug_variant.sh), in three modes:
 * - "moves": the variant is the debug one: a table moves to fresh memory
 *   on every structural change (TES_DEBUG), so the address of an entity's
 *   value changes when another entity joins its table. Prints "debug
 *   variant ok".
 * - "stale": the mistake the variant exists to catch: a pointer kept
 *   across a structural call and written through. Built with
 *   -fsanitize=address, the write is reported as a use of freed memory.
 * - "open": a loop left without tes_iter_fini; the variant reports the
 *   world still deferred when it is freed (on stderr).
 */
#include <stdio.h>
#include <string.h>

#include <tessera.h>

typedef struct {
    float x, y;
} Position;

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "moves";
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_entity_t e = tes_spawn(w);
    tes_set(w, e, pos, &(Position){1, 2});
    int status = 0;
    if (strcmp(mode, "moves") == 0) {
        const Position *before = tes_get(w, e, pos);
        tes_entity_t other = tes_spawn(w);
        tes_set(w, other, pos, &(Position){3, 4});
        const Position *after = tes_get(w, e, pos);
        status = before != after && after->x == 1 ? 0 : 1;
        printf(status ? "not the debug variant: the table did not move\n" : "debug variant ok\n");
    } else if (strcmp(mode, "stale") == 0) {
        Position *p = tes_get_mut(w, e, pos);
        tes_entity_t other = tes_spawn(w);
        tes_set(w, other, pos, &(Position){3, 4}); /* e's table moves */
        p->x = 42;                                   /* a write into freed memory */
        printf("stale write not caught\n");
    } else {
        tes_query_desc_t d;
        memset(&d, 0, sizeof d);
        d.terms[0].comp = pos;
        tes_query_t *q = tes_query_new(w, &d);
        tes_iter_t it = tes_query_iter(q);
        while (tes_iter_next(&it))
            break; /* no tes_iter_fini: the world stays deferred */
    }
    tes_world_free(w);
    return status;
}
