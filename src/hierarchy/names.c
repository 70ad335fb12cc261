/*
 * Names and paths (see hierarchy.h): tes_set_name, tes_name,
 * tes_lookup_path and tes_path, over the two maps of name_map.c, so
 * tes_name is one map lookup and each segment of tes_lookup_path is one
 * expected O(1) probe. Naming the first entity makes the hierarchy's state
 * (tes__hier, links.c), which registers the world's callbacks that drop a
 * dying entity's name: this file sits above links.c, which itself only
 * needs the maps.
 */
#include "hierarchy/hierarchy.h"

#include <string.h>

#include "world/last_error.h"
#include "world/quiet.h"

#define NAME_MAX_BYTES 255u

/* Checks a name for tes_set_name; records why it is refused. */
static int check_name_text(tes_world_t *w, const char *name, size_t *len)
{
    size_t n = 0;
    while (n <= NAME_MAX_BYTES && name[n])
        n++;
    if (n == 0)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_set_name: the name is empty (pass NULL to remove a name)");
    if (n > NAME_MAX_BYTES)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_set_name: the name is longer than %u bytes", NAME_MAX_BYTES);
    if (memchr(name, '/', n))
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_set_name: \"%s\" contains '/', which separates path segments", name);
    *len = n;
    return TES_OK;
}

static int set_name_impl(tes_world_t *w, tes_entity_t e, const char *name)
{
    /* A name applies at once: from a parallel system split over threads,
     * other threads would write the maps meanwhile. It is refused in every
     * parallel system (the bit that refuses their entity-creating calls),
     * not only once its rows are split: refusing it only then made the
     * result depend on the thread count. */
    if (tes__refuse(w) & TES__REFUSE_CREATE)
        return tes__fail_busy(w, "tes_set_name (from a parallel system)");
    if (!tes_alive(w, e))
        return tes__fail_stale(w, e);
    uint32_t i = tes_entity_index(e);
    char *old = (char *)(uintptr_t)tes__name_of(w->hier, i);
    if (!name) {
        if (old)
            tes__name_remove(&w->alloc, w->hier, i, old);
        return TES_OK;
    }
    size_t len = 0;
    int rc = check_name_text(w, name, &len);
    if (rc)
        return rc;
    if (old && strcmp(old, name) == 0)
        return TES_OK;
    uint32_t parent1 = tes__link_parent(w->hier, i);
    uint32_t other = tes__sibling_find(w->hier, parent1, name, len);
    if (other && other != i + 1)
        return tes__fail_detail(w, TES_ERR_INVALID, "tes_set_name: a sibling of entity %u:%u (entity %u) is already named \"%s\"", i, tes_entity_generation(e), other - 1, name);
    tes__alloc_t *a = &w->alloc;
    tes__hier_t *h = tes__hier(w);
    char *copy = NULL;
    if (!h || tes__map_reserve(&h->names, a, 1) || tes__map_reserve(&h->siblings, a, 1) ||
        !(copy = tes__malloc(a, len + 1)))
        return tes__fail(w, TES_ERR_NOMEM);
    memcpy(copy, name, len);
    copy[len] = '\0';
    if (old)
        tes__name_remove(a, h, i, old);
    tes__map_insert(&h->names, (uint64_t)i + 1, (uint64_t)(uintptr_t)copy);
    tes__map_insert(&h->siblings, tes__sibling_key(parent1, copy, len), i);
    return TES_OK;
}

int tes_set_name(tes_world_t *w, tes_entity_t e, const char *name)
{
    TES__STRUCTURAL("tes_set_name", int, w, tes__status, set_name_impl(w, e, name));
}

const char *tes_name(const tes_world_t *w, tes_entity_t e)
{
    if (!w || !tes_alive(w, e))
        return NULL;
    return tes__name_of(w->hier, tes_entity_index(e));
}

/* Records why tes_lookup_path found nothing, for the calling thread (a
 * const read), as tes_component_lookup does: TES_ERR_INVALID for a path
 * no entity can have (NULL, an empty segment, a segment longer than any
 * name), TES_OK for a well-formed path that names no entity; either way
 * a sentence saying where the path stops. Returns TES_NULL. */
static tes__noinline tes_entity_t lookup_miss(const tes_world_t *w, const char *path,
                                              const char *s, size_t len)
{
    if (!path) {
        tes__fail_const(w, TES_ERR_INVALID, "tes_lookup_path: path is NULL");
        return TES_NULL;
    }
    /* A miss followed by a malformed segment is malformed: the status
     * does not depend on which names exist. */
    for (const char *t = s; len && len <= NAME_MAX_BYTES;) {
        const char *end = strchr(t, '/');
        if (!end)
            break;
        t = end + 1;
        const char *next = strchr(t, '/');
        size_t n = next ? (size_t)(next - t) : strlen(t);
        if (n == 0 || n > NAME_MAX_BYTES)
            s = t, len = n;
    }
    size_t at = (size_t)(s - path);
    int shown = len > 64 ? 64 : (int)len;
    if (len == 0)
        tes__fail_const(w, TES_ERR_INVALID, "tes_lookup_path: \"%.64s\" has an empty segment at byte %zu (a leading, trailing or doubled '/', or an empty path)", path, at);
    else if (len > NAME_MAX_BYTES)
        tes__fail_const(w, TES_ERR_INVALID, "tes_lookup_path: the segment at byte %zu is %zu bytes long; names have at most %u", at, len, NAME_MAX_BYTES);
    else if (at == 0)
        tes__fail_const(w, TES_OK, "tes_lookup_path: no root is named \"%.*s\" (not an error)", shown, s);
    else
        tes__fail_const(w, TES_OK, "tes_lookup_path: \"%.*s\" has no child named \"%.*s\" (not an error)", at - 1 > 128 ? 128 : (int)(at - 1), path, shown, s);
    return TES_NULL;
}

tes_entity_t tes_lookup_path(const tes_world_t *w, const char *path)
{
    if (!w)
        return TES_NULL;
    if (!path)
        return lookup_miss(w, NULL, NULL, 0);
    uint32_t at = 0; /* index + 1; 0: the roots */
    const char *s = path;
    for (;;) {
        const char *end = strchr(s, '/');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len == 0 || len > NAME_MAX_BYTES)
            return lookup_miss(w, path, s, len);
        at = w->hier ? tes__sibling_find(w->hier, at, s, len) : 0;
        if (!at)
            return lookup_miss(w, path, s, len);
        if (!end)
            break;
        s = end + 1;
    }
    return tes_entity_make(at - 1, w->entities.slots[at - 1].generation);
}

int32_t tes_path(const tes_world_t *w, tes_entity_t e, char *buf, int32_t cap)
{
    if (!w)
        return TES_ERR_INVALID;
    if (!tes_alive(w, e))
        return tes__fail_const_stale(w, &w->entities, e, TES__STALE_ENTITY);
    if (cap < 0 || (cap > 0 && !buf))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_path: cap = %d with buf %s", (int)cap, buf ? "set" : "NULL");
    const tes__hier_t *h = w->hier;
    /* The length first (every segment named, else no path). */
    uint64_t total = 0;
    for (uint32_t i = tes_entity_index(e) + 1; i; i = tes__link_parent(h, i - 1)) {
        const char *s = tes__name_of(h, i - 1);
        if (!s) {
            total = 0;
            break;
        }
        total += strlen(s) + (total ? 1 : 0);
    }
    if (total > INT32_MAX - 1)
        return tes__fail_const(w, TES_ERR_INVALID, "tes_path: the path is longer than INT32_MAX bytes");
    if (cap > 0) {
        /* Written from the end backwards; bytes past cap - 1 are skipped. */
        uint64_t end = total;
        for (uint32_t i = tes_entity_index(e) + 1; total && i; i = tes__link_parent(h, i - 1)) {
            const char *s = tes__name_of(h, i - 1);
            uint64_t len = strlen(s);
            uint64_t start = end - len;
            for (uint64_t k = 0; k < len; k++)
                if (start + k < (uint64_t)cap - 1)
                    buf[start + k] = s[k];
            if (start > 0 && start - 1 < (uint64_t)cap - 1)
                buf[start - 1] = '/';
            end = start ? start - 1 : 0;
        }
        buf[total < (uint64_t)cap ? total : (uint64_t)cap - 1] = '\0';
    }
    return (int32_t)total;
}
