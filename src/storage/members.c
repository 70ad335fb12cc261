/*
 * Member lists: validation (inside the value, aligned, no overlap, known
 * types, named uniquely), the owned copy, and the derived list of entity
 * fields. See members.h for the design.
 */
#include "storage/members.h"

#include <stdlib.h>
#include <string.h>

/* Records why a desc was refused; returns TES_ERR_INVALID. */
#define REFUSE(detail, ...) (tes__detail_set((detail), __VA_ARGS__), TES_ERR_INVALID)

uint32_t tes__type_size(tes_type_t t)
{
    switch (t) {
    case TES_TYPE_BOOL: case TES_TYPE_I8: case TES_TYPE_U8: case TES_TYPE_CHAR: return 1;
    case TES_TYPE_I16: case TES_TYPE_U16: return 2;
    case TES_TYPE_I32: case TES_TYPE_U32: case TES_TYPE_F32: return 4;
    case TES_TYPE_I64: case TES_TYPE_U64: case TES_TYPE_F64: case TES_TYPE_ENTITY: return 8;
    }
    return 0;
}

/* The alignment the C type of t needs (a double may need less than 8 on
 * some 32-bit ABIs: the C type decides, as it does for the user's
 * struct). */
static uint32_t member_type_align(tes_type_t t)
{
    switch (t) {
    case TES_TYPE_BOOL: return (uint32_t)_Alignof(bool);
    case TES_TYPE_I16: case TES_TYPE_U16: return (uint32_t)_Alignof(int16_t);
    case TES_TYPE_I32: case TES_TYPE_U32: return (uint32_t)_Alignof(int32_t);
    case TES_TYPE_F32: return (uint32_t)_Alignof(float);
    case TES_TYPE_I64: case TES_TYPE_U64: return (uint32_t)_Alignof(int64_t);
    case TES_TYPE_F64: return (uint32_t)_Alignof(double);
    case TES_TYPE_ENTITY: return (uint32_t)_Alignof(tes_entity_t);
    default: return 1;
    }
}

const char *tes__type_name(tes_type_t t)
{
    static const char *const names[] = {"?",   "bool", "i8",  "i16", "i32", "i64",    "u8",
                                        "u16", "u32",  "u64", "f32", "f64", "entity", "char"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static uint32_t member_count_of(const tes_member_t *m) { return m->count ? m->count : 1; }

/* A scratch entry for the sorts: a member's byte range, or its name. */
typedef struct member_span {
    uint64_t begin, end;
    const char *name;
    uint32_t index;
} member_span_t;

static int member_by_begin(const void *x, const void *y)
{
    const member_span_t *a = x, *b = y;
    return a->begin < b->begin ? -1 : a->begin > b->begin ? 1 : (a->index > b->index) - (a->index < b->index);
}

static int member_by_name(const void *x, const void *y)
{
    const member_span_t *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* Whether byte offset `at` is the start of an element of an entity member. */
static bool is_entity_member_element(const tes_component_desc_t *d, size_t at)
{
    for (int32_t i = 0; i < d->member_count; i++) {
        const tes_member_t *m = &d->members[i];
        if (m->type == TES_TYPE_ENTITY && at >= m->offset &&
            at < (uint64_t)m->offset + 8u * member_count_of(m) && (at - m->offset) % 8 == 0)
            return true;
    }
    return false;
}

/* The checks that need no scratch memory, member by member. */
static int check_each_member(tes__detail_t *detail, const tes_component_desc_t *d, uint32_t size,
                      uint32_t align)
{
    const char *cn = d->name;
    for (int32_t i = 0; i < d->member_count; i++) {
        const tes_member_t *m = &d->members[i];
        if (!m->name || !m->name[0])
            return REFUSE(detail, "component '%.64s': members[%d] has %s name (every member needs one)", cn, (int)i, m->name ? "an empty" : "a NULL");
        uint32_t tsize = tes__type_size(m->type);
        if (!tsize)
            return REFUSE(detail, "component '%.64s': member '%.64s' has type %d, which is not a tes_type_t", cn, m->name, (int)m->type);
        if (m->count == UINT32_MAX)
            return REFUSE(detail, "component '%.64s': member '%.64s' has count 4294967295 (TES_MEMBER gives it to a field whose size is not a multiple of %s's %u bytes: check the type)", cn, m->name, tes__type_name(m->type), tsize);
        uint64_t end = (uint64_t)m->offset + (uint64_t)tsize * member_count_of(m);
        if (end > size)
            return REFUSE(detail, "component '%.64s': member '%.64s' (%s x %u at offset %u) ends at byte %llu, past the size %u", cn, m->name, tes__type_name(m->type), member_count_of(m), m->offset, (unsigned long long)end, size);
        uint32_t ta = member_type_align(m->type);
        if (m->offset % ta)
            return REFUSE(detail, "component '%.64s': member '%.64s' (%s) at offset %u is not aligned to %u bytes", cn, m->name, tes__type_name(m->type), m->offset, ta);
        if (ta > align)
            return REFUSE(detail, "component '%.64s': member '%.64s' (%s) needs alignment %u, the component's align is %u", cn, m->name, tes__type_name(m->type), ta, align);
    }
    if (d->member_count)
        for (int32_t i = 0; i < d->entity_field_count; i++)
            if (!is_entity_member_element(d, d->entity_fields[i]))
                return REFUSE(detail, "component '%.64s': entity_fields[%d] = %zu is not the offset of a TES_TYPE_ENTITY member (with members, describe entity fields as members and leave entity_fields empty)", cn, (int)i, d->entity_fields[i]);
    return TES_OK;
}

int tes__members_check(tes__detail_t *detail, tes__alloc_t *a, const tes_component_desc_t *d,
                       uint32_t size, uint32_t align)
{
    const char *cn = d->name;
    if (d->member_count < 0 || d->member_count > TES__MAX_MEMBERS)
        return REFUSE(detail, "component '%.64s': member_count %d is outside 0..%d", cn, (int)d->member_count, TES__MAX_MEMBERS);
    if (d->member_count > 0 && !d->members)
        return REFUSE(detail, "component '%.64s': members is NULL with member_count %d", cn, (int)d->member_count);
    if (d->member_count > 0 && size == 0)
        return REFUSE(detail, "component '%.64s': a tag (size 0) has no members, member_count is %d", cn, (int)d->member_count);
    int rc = check_each_member(detail, d, size, align);
    if (rc || d->member_count < 2)
        return rc;
    uint32_t n = (uint32_t)d->member_count;
    member_span_t *s = tes__malloc(a, (size_t)n * sizeof *s);
    if (!s)
        return TES_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const tes_member_t *m = &d->members[i];
        s[i] = (member_span_t){m->offset, (uint64_t)m->offset + (uint64_t)tes__type_size(m->type) * member_count_of(m), m->name, i};
    }
    qsort(s, n, sizeof *s, member_by_begin);
    for (uint32_t i = 1; i < n && !rc; i++)
        if (s[i].begin < s[i - 1].end)
            rc = REFUSE(detail, "component '%.64s': member '%.64s' (bytes %llu..%llu) overlaps member '%.64s' (bytes %llu..%llu)", cn, s[i].name, (unsigned long long)s[i].begin, (unsigned long long)s[i].end - 1, s[i - 1].name, (unsigned long long)s[i - 1].begin, (unsigned long long)s[i - 1].end - 1);
    if (!rc) {
        qsort(s, n, sizeof *s, member_by_name);
        for (uint32_t i = 1; i < n && !rc; i++)
            if (strcmp(s[i].name, s[i - 1].name) == 0)
                rc = REFUSE(detail, "component '%.64s': members[%u] and members[%u] are both named '%.64s' (member names must be unique)", cn, s[i - 1].index, s[i].index, s[i].name);
    }
    tes__free(a, s, (size_t)n * sizeof *s);
    return rc;
}

int tes__members_build(tes__alloc_t *a, const tes_component_desc_t *d, tes__members_t *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = (uint32_t)(d->member_count > 0 ? d->member_count : 0);
    uint64_t entities = 0, names = 0;
    for (uint32_t i = 0; i < n; i++) {
        names += strlen(d->members[i].name) + 1;
        if (d->members[i].type == TES_TYPE_ENTITY)
            entities += member_count_of(&d->members[i]);
    }
    if (!n)
        entities = (uint64_t)(d->entity_field_count > 0 ? d->entity_field_count : 0);
    if (!n && !entities)
        return TES_OK;
    /* Bounded by the checks: n <= 65536, entities <= size / 8 < 2^28,
     * names <= n * SIZE_MAX is not, so size it in 64 bits first. */
    uint64_t bytes = (uint64_t)n * sizeof(tes_member_t) + entities * sizeof(uint32_t) + names;
    if (bytes > SIZE_MAX / 2)
        return TES_ERR_NOMEM;
    char *block = tes__malloc(a, (size_t)bytes);
    if (!block)
        return TES_ERR_NOMEM;
    out->block = block;
    out->block_size = (size_t)bytes;
    out->items = n ? (tes_member_t *)(void *)block : NULL;
    out->count = n;
    out->entity_offsets = (uint32_t *)(void *)(block + (size_t)n * sizeof(tes_member_t));
    out->entity_count = (uint32_t)entities;
    char *name = (char *)(out->entity_offsets + entities);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tes_member_t *m = &d->members[i];
        size_t len = strlen(m->name) + 1;
        memcpy(name, m->name, len);
        out->items[i] = (tes_member_t){name, m->type, m->offset, member_count_of(m)};
        name += len;
        if (m->type == TES_TYPE_ENTITY)
            for (uint32_t j = 0; j < member_count_of(m); j++)
                out->entity_offsets[k++] = m->offset + 8u * j;
    }
    for (int32_t i = 0; !n && i < d->entity_field_count; i++)
        out->entity_offsets[k++] = (uint32_t)d->entity_fields[i];
    return TES_OK;
}

void tes__members_free(tes__alloc_t *a, tes__members_t *m)
{
    if (m->block)
        tes__free(a, m->block, m->block_size);
    memset(m, 0, sizeof *m);
}

bool tes__members_same(const tes__members_t *m, const tes_component_desc_t *d,
                       tes__detail_t *detail)
{
    const char *cn = d->name;
    uint32_t n = (uint32_t)(d->member_count > 0 ? d->member_count : 0);
    if (n != m->count) {
        tes__detail_set(detail, "component '%.64s' is registered with %u members, this desc describes %u (a re-registration must describe the same members)", cn, m->count, n);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const tes_member_t *x = &m->items[i], *y = &d->members[i];
        if (strcmp(x->name, y->name) || x->type != y->type || x->offset != y->offset ||
            x->count != member_count_of(y)) {
            tes__detail_set(detail, "component '%.64s': members[%u] is registered as '%.64s' %s x %u at offset %u, this desc has '%.64s' %s x %u at offset %u (a re-registration must describe the same members)", cn, i, x->name, tes__type_name(x->type), x->count, x->offset, y->name, tes__type_name(y->type), member_count_of(y), y->offset);
            return false;
        }
    }
    return true;
}

#undef REFUSE
