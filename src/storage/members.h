/*
 * Component members (reflection): the checked, owned copy of a
 * component's member list, and the one list of entity fields derived from
 * it. A component's entity fields are its TES_TYPE_ENTITY members, every
 * element of each; a component registered without members but with the
 * older entity_fields gets that list instead. Everything that remaps
 * handles inside values (prefab instantiation) reads only the derived
 * list, so there is one concept of "entity field" whichever way it was
 * declared.
 *
 * Registration is rare and member lists are short, so validation favours
 * clear details over speed: one sort of a scratch copy finds overlaps and
 * duplicate names in O(n log n). The copy lives in one block (members,
 * entity offsets, then the names), allocated once, freed with the record.
 */
#ifndef TES_STORAGE_MEMBERS_H
#define TES_STORAGE_MEMBERS_H

#include "core/alloc.h"
#include "core/detail.h"

/* The most members one component may describe. */
#define TES__MAX_MEMBERS 65536

/* What a record owns of its members (zeroed: none). */
typedef struct tes__members {
    tes_member_t *items;      /* member_count entries, names point into the block */
    uint32_t count;
    uint32_t *entity_offsets; /* byte offset of every tes_entity_t value */
    uint32_t entity_count;
    void *block;              /* the one allocation holding all of the above */
    size_t block_size;
} tes__members_t;

/* The size of one value of a tes_type_t, 0 if t is not one. */
uint32_t tes__type_size(tes_type_t t);
/* The lower-case name JSON uses for t ("f32"), "?" if t is not one. */
const char *tes__type_name(tes_type_t t);

/* Checks the members and entity_fields of d for a component of `size`
 * bytes aligned to `align`: TES_OK, TES_ERR_INVALID with a detail in
 * `detail`, or TES_ERR_NOMEM (a scratch copy for the checks). Changes
 * nothing. */
int tes__members_check(tes__detail_t *detail, tes__alloc_t *a, const tes_component_desc_t *d,
                       uint32_t size, uint32_t align);

/* Builds *out from a desc that passed tes__members_check: TES_OK or
 * TES_ERR_NOMEM (then *out is zeroed). */
int tes__members_build(tes__alloc_t *a, const tes_component_desc_t *d, tes__members_t *out);

void tes__members_free(tes__alloc_t *a, tes__members_t *m);

/* Whether d's members describe the same list as m (checked desc): the
 * same names, types, offsets and counts, in the same order. When they do
 * not, writes a sentence about the first difference to detail, prefixed
 * with the component's name. */
bool tes__members_same(const tes__members_t *m, const tes_component_desc_t *d,
                       tes__detail_t *detail);

#endif
