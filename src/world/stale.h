/*
 * What a handle that is not alive is (null, never issued, destroyed,
 * retired), for the failure sentences of last_error.c and explain.c. A
 * stale handle's state is captured at the failure (a later spawn may issue
 * a handle that had never been issued then) and formatted when the
 * sentence is needed, so a loop of reads that miss pays a few stores.
 * This reads an id space and nothing else: it is the ground the failure
 * records stand on.
 */
#ifndef TES_WORLD_STALE_H
#define TES_WORLD_STALE_H

#include <stddef.h>

#include "entity/entity_index.h"

enum { TES__STALE_ENTITY = 0, TES__STALE_INSTANCE = 1 };

/* A handle that is not alive, as its id space held it at the failure. */
typedef struct tes__stale {
    uint64_t handle;
    uint32_t issued;   /* slots the id space had issued */
    uint32_t slot_gen; /* the slot's generation: live, or the next one a free slot issues */
    uint8_t state;     /* see stale.c */
    uint8_t noun;      /* TES__STALE_ENTITY or TES__STALE_INSTANCE */
} tes__stale_t;

/* Captures handle's state in id space ids (NULL: no id was ever issued
 * there, as for instances before the first one). */
tes__stale_t tes__stale_capture(const tes__entity_index_t *ids, uint64_t handle, int noun);

/* The sentence for a captured handle ("entity 5:1 is destroyed: ..."). */
void tes__stale_format(const tes__stale_t *st, char *buf, size_t cap);

#endif
