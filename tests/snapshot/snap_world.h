/*
 * A small world with every feature a snapshot must carry (table, sparse and
 * stable components, tags, disabled and prefab entities, prefabs with
 * children, instances with adopted and detached members, entity references,
 * a component that owns heap memory and saves through hooks, retired slots,
 * a free list and stable-store tombstones), plus the helpers the snapshot
 * tests, the libFuzzer target and the seed generator share: memory writers
 * and readers, and a deep comparison of two worlds through the public API.
 */
#ifndef TES_TESTS_SNAP_WORLD_H
#define TES_TESTS_SNAP_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"
#include "snapshot/mem_stream.h"

typedef struct sw_pos { float x, y, z; } sw_pos_t;
typedef struct sw_link { tes_entity_t target; uint32_t weight; uint32_t pad; } sw_link_t;
/* Owns a heap string: copy/dtor hooks, so it is saved through save/load. */
typedef struct sw_name { char *text; } sw_name_t;

typedef struct sw_ids {
    tes_comp_t pos, vel, health, tag, sparse, stable, stag, link, name;
} sw_ids_t;

/* Live sw_name strings (ctor/copy/load make them, dtor frees them). */
extern long sw_names_live;
/* When > 0, the n-th load hook call fails (counts down). */
extern int sw_fail_load_at;

/* Registers the components (in an order chosen by `shuffle`, plus an
 * extra unused one when `extra`). Returns false on failure. */
bool sw_register(tes_world_t *w, sw_ids_t *ids, bool shuffle, bool extra);
/* Fills w (registered with sw_register) with every feature; `scale`
 * multiplies the population (1 = a few hundred bytes of snapshot). */
bool sw_populate(tes_world_t *w, const sw_ids_t *ids, int scale);
/* The world desc the tests use (generation_limit 3 so slots retire). */
tes_world_desc_t sw_desc(void);

/* Compares two worlds through the public API: every slot index's handle
 * liveness, components and values, enabled state, instance, prefab members,
 * stats counters, and query counts. Writes the first difference to why
 * (which holds 256 bytes) and returns false. */
bool sw_equal(tes_world_t *a, const sw_ids_t *ia, tes_world_t *b, const sw_ids_t *ib, char *why);

#endif
