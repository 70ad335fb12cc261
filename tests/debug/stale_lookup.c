/*
 * Proof that the TES_DEBUG build catches a lookup view used after a
 * structural change: the view of Position is built, then b joins a's
 * table, and the view reads a's Position through the column it
 * snapshotted. In a TES_DEBUG + AddressSanitizer build the table has moved
 * to fresh memory, so the read is a reported use-after-free and the
 * program dies; ctest expects exactly that (WILL_FAIL). Without the debug
 * aid the stale read would go unnoticed, because the table had room.
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
    tes_lookup_t view;
    if (tes_lookup_init(&view, w, pos) != TES_OK)
        return 0; /* not the failure this test expects */
    tes_set(w, b, pos, &(Position){3, 4}); /* b joins a's table: the view ends */
    const Position *stale = tes_lookup_get(&view, a); /* not allowed: caught here */
    volatile float x = stale ? stale->x : 0.0f;
    printf("stale view not caught: %f\n", (double)x);
    tes_lookup_fini(&view);
    tes_world_free(w);
    return 0;
}
