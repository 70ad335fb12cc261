/*
 * Proof that the TES_DEBUG build catches a pointer held across a structural
 * change of its own entity even when no table has to grow: p points at e's
 * Position in table {Position}; adding Velocity moves e to table
 * {Position, Velocity}, and the old table had room, so without the debug aid
 * p would still point at readable (stale) memory. With TES_DEBUG the table
 * e left moves to fresh memory, so the write is a use-after-free that
 * AddressSanitizer reports; ctest expects the program to die (WILL_FAIL).
 */
#include <stdio.h>

#include "tessera.h"

typedef struct {
    float x, y;
} Position;

typedef struct {
    float dx, dy;
} Velocity;

int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_comp_t vel = TES_COMPONENT(w, Velocity);
    tes_entity_t other = tes_spawn(w), e = tes_spawn(w);
    tes_add(w, other, pos); /* the old table keeps a row and its block */
    Position *p = tes_ensure(w, e, pos);
    tes_add(w, e, vel);
    p->x = 42; /* not allowed: e moved; caught here */
    printf("stale write not caught\n");
    tes_world_free(w);
    return 0;
}
