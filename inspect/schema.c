/*
 * What the inspector knows of the world's components: names, ids, sizes
 * and members, for filters, entity summaries and PUT, read through the
 * public schema calls (tes_components, tes_component_info), and the
 * components' JSON that GET /api/world answers (tes_json_components).
 * Components are never unregistered and their records never change, so
 * the schema is rebuilt only when their number changes.
 */
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

static void schema_clear(tes__schema_t *s)
{
    free(s->comps);
    free(s->json.data);
    *s = (tes__schema_t){0};
}

int tes__schema_refresh(tes__schema_t *s, const tes_world_t *w)
{
    tes_world_stats_t st;
    if (tes_world_stats(w, &st))
        return TES_ERR_INVALID;
    if (s->json.data && st.components == s->known)
        return TES_OK;
    int32_t n = tes_components(w, NULL, 0);
    if (n < 0)
        return n;
    tes_comp_t *ids = malloc((size_t)n * sizeof *ids + 1);
    tes__comp_info_t *comps = malloc((size_t)n * sizeof *comps + 1);
    tes__buf_t json = {0};
    tes_writer_t out = {tes__buf_writer, &json};
    int rc = ids && comps ? tes_json_components(w, &out) : TES_ERR_NOMEM;
    if (json.failed)
        rc = TES_ERR_NOMEM;
    int32_t count = 0;
    if (!rc) {
        n = tes_components(w, ids, n);
        for (int32_t i = 0; i < n && !rc; i++)
            if (ids[i] != TES_DISABLED && ids[i] != TES_PREFAB)
                rc = tes_component_info(w, ids[i], &comps[count++]);
    }
    free(ids);
    if (rc) {
        free(comps);
        free(json.data);
        return rc;
    }
    schema_clear(s);
    s->comps = comps;
    s->count = count;
    s->json = json;
    s->known = st.components;
    return TES_OK;
}

void tes__schema_fini(tes__schema_t *s) { schema_clear(s); }

const tes__comp_info_t *tes__schema_find(const tes__schema_t *s, const char *name)
{
    for (int32_t i = 0; i < s->count; i++)
        if (strcmp(s->comps[i].name, name) == 0)
            return &s->comps[i];
    return NULL;
}

const tes__comp_info_t *tes__schema_by_id(const tes__schema_t *s, tes_comp_t id)
{
    for (int32_t i = 0; i < s->count; i++)
        if (s->comps[i].id == id)
            return &s->comps[i];
    return NULL;
}
