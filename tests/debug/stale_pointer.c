/*
 * Proof that the TES_DEBUG build catches a stale table pointer: it reads a
 * component through a pointer taken before a structural change of the same
 * table. In a TES_DEBUG + AddressSanitizer build the table has moved to
 * fresh memory, so the read is a reported use-after-free and the program
 * dies; ctest expects exactly that (WILL_FAIL). Without the debug aid the
 * stale read would go unnoticed, because the table had room and stayed put.
 */
#include <stdio.h>

#include "tessera.h"

typedef struct {
    float x, y;
} Position;

int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_entity_t a = tes_spawn(w), b = tes_spawn(w);
    tes_set(w, a, pos, &(Position){1, 2});
    const Position *held = tes_get(w, a, pos); /* valid until the next change */
    tes_set(w, b, pos, &(Position){3, 4});     /* b joins a's table */
    volatile float stale = held->x;            /* not allowed: caught here */
    printf("stale read not caught: %f\n", (double)stale);
    tes_world_free(w);
    return 0;
}
