/*
 * Reference model implementation: see model.h. Every operation is a direct
 * transcription of the header's contract (include/tessera.h) with no
 * optimisation, so it can be checked by reading. Arrays grow with realloc;
 * the model never shrinks anything.
 */
#include "fuzz/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fz_comp_info_t fz_comps[FZ_NALL] = {
    [FZ_C_DISABLED] = {"TES_DISABLED", 0, 0, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_T4] = {"fz_t4", 4, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_T12] = {"fz_t12", 12, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_T24] = {"fz_t24", 24, 8, TES_STORAGE_TABLE, false, true, false, 0, {0, 0}},
    [FZ_C_T16A] = {"fz_t16a", 16, 16, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_TTAG] = {"fz_ttag", 0, 0, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_TTAG2] = {"fz_ttag2", 0, 0, TES_STORAGE_TABLE, false, false, true, 0, {0, 0}},
    [FZ_C_S4] = {"fz_s4", 4, 4, TES_STORAGE_SPARSE, false, false, false, 0, {0, 0}},
    [FZ_C_S16] = {"fz_s16", 16, 8, TES_STORAGE_SPARSE, false, true, false, 0, {0, 0}},
    [FZ_C_SST] = {"fz_sst", 24, 8, TES_STORAGE_SPARSE, true, true, false, 0, {0, 0}},
    [FZ_C_STAG] = {"fz_stag", 0, 0, TES_STORAGE_SPARSE, false, false, true, 0, {0, 0}},
    [FZ_C_SST8] = {"fz_sst8", 8, 8, TES_STORAGE_SPARSE, true, false, false, 0, {0, 0}},
    [FZ_C_TREF] = {"fz_tref", 24, 8, TES_STORAGE_TABLE, false, true, false, 2, {8, 16}, false, true},
    [FZ_C_SREF] = {"fz_sref", 16, 8, TES_STORAGE_SPARSE, false, false, false, 1, {8, 0}},
    [FZ_C_S8] = {"fz_s8", 8, 8, TES_STORAGE_SPARSE, false, false, false, 0, {0, 0}},
    [FZ_C_S12] = {"fz_s12", 12, 4, TES_STORAGE_SPARSE, false, false, false, 0, {0, 0}},
    [FZ_C_SPTAG] = {"fz_sptag", 0, 0, TES_STORAGE_SPARSE, false, false, false, 0, {0, 0}},
    [FZ_C_PREFAB] = {"TES_PREFAB", 0, 0, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_HUGE] = {"fz_huge", FZ_HUGE_SIZE, 16, TES_STORAGE_TABLE, false, false, false, 0, {0, 0},
                   true},
    [FZ_C_SHUGE] = {"fz_shuge", FZ_HUGE_SIZE, 8, TES_STORAGE_SPARSE, false, false, false, 0,
                    {0, 0}, true},
    [FZ_C_C8] = {"fz_c8", 8, 8, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C8B] = {"fz_c8b", 8, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C12] = {"fz_c12", 12, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C12B] = {"fz_c12b", 12, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C16] = {"fz_c16", 16, 8, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C16B] = {"fz_c16b", 16, 16, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C4] = {"fz_c4", 4, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C4B] = {"fz_c4b", 4, 4, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_C6] = {"fz_c6", 6, 2, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
    [FZ_C_CTAG] = {"fz_ctag", 0, 0, TES_STORAGE_TABLE, false, false, false, 0, {0, 0}},
};

static char wide_names[FZ_NWIDE][8];

/* The wide components' entries (the same every time). */
static void comps_init(void)
{
    for (int i = 0; i < FZ_NWIDE; i++) {
        snprintf(wide_names[i], sizeof wide_names[i], "fz_w%02d", i);
        fz_comp_info_t *c = &fz_comps[FZ_C_W0 + i];
        memset(c, 0, sizeof *c);
        c->name = wide_names[i];
        c->size = 4;
        c->align = 4;
        c->storage = TES_STORAGE_TABLE;
    }
}

void fz_huge_fill(uint64_t seed, uint8_t *out, size_t size)
{
    if (!seed) {
        memset(out, 0, size);
        return;
    }
    for (size_t i = 0; i < size; i += 8) {
        uint64_t x = seed + i * UINT64_C(0x9E3779B97F4A7C15);
        x = (x ^ (x >> 31)) * UINT64_C(0xBF58476D1CE4E5B9);
        x ^= x >> 29;
        memcpy(out + i, &x, size - i < 8 ? size - i : 8);
    }
}

void fz_default_value(int k, uint8_t out[FZ_MAXSIZE])
{
    memset(out, 0, FZ_MAXSIZE);
    if (fz_comps[k].tracked)
        for (uint32_t i = FZ_TRACK_HDR; i < fz_comps[k].size; i++)
            out[i] = (uint8_t)(0x40u + (uint32_t)k * 8u + i);
}

/* Grows *arr (of *cap elements) to hold at least need elements. */
bool fz_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}

bool fz_model_init(fz_model_t *m, uint32_t generation_limit, uint32_t entity_limit)
{
    memset(m, 0, sizeof *m);
    comps_init();
    /* The header: 0 means TES_MAX_GENERATION / 2^32 - 1 slots. */
    m->generation_limit = generation_limit ? generation_limit : TES_MAX_GENERATION;
    if (m->generation_limit > TES_MAX_GENERATION)
        m->generation_limit = TES_MAX_GENERATION;
    m->entity_limit = entity_limit ? entity_limit : TES_NULL_INDEX;
    return true;
}

void fz_model_fini(fz_model_t *m)
{
    for (uint32_t i = 0; i < m->nslots; i++) {
        free(m->slots[i].xval);
        free(m->slots[i].kids);
        free(m->slots[i].name);
    }
    free(m->slots);
    free(m->free_stack);
    free(m->live);
    free(m->queue);
    fz_model_plans_clear(m);
    free(m->plans);
    for (uint32_t i = 0; i < m->ninsts; i++)
        free(m->insts[i].members);
    free(m->insts);
    free(m->inst_free);
    free(m->ilive);
    for (uint32_t i = 0; i < m->nprefabs; i++)
        free(m->prefabs[i].members);
    free(m->prefabs);
    memset(m, 0, sizeof *m);
}

fz_mslot_t *fz_model_get(const fz_model_t *m, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    if (index >= m->nslots)
        return NULL;
    fz_mslot_t *s = &m->slots[index];
    if (!s->alive || s->gen != tes_entity_generation(e))
        return NULL;
    return s;
}

bool fz_model_can_spawn(const fz_model_t *m, uint32_t n)
{
    if (n <= m->nfree)
        return true;
    uint64_t fresh = (uint64_t)n - m->nfree;
    return (uint64_t)m->nslots + fresh <= m->entity_limit;
}

tes_entity_t fz_model_peek_spawn(const fz_model_t *m)
{
    if (m->nfree) {
        uint32_t index = m->free_stack[m->nfree - 1];
        return tes_entity_make(index, m->slots[index].gen);
    }
    return tes_entity_make(m->nslots, 1);
}

tes_entity_t fz_model_spawn(fz_model_t *m)
{
    if (!fz_grow((void **)&m->live, &m->live_cap, m->nlive + 1, sizeof *m->live))
        return TES_NULL;
    uint32_t index;
    if (m->nfree) {
        index = m->free_stack[--m->nfree];
    } else {
        if (!fz_grow((void **)&m->slots, &m->slots_cap, m->nslots + 1, sizeof *m->slots) ||
            !fz_grow((void **)&m->free_stack, &m->free_cap, m->nslots + 1, sizeof *m->free_stack))
            return TES_NULL;
        index = m->nslots++;
        memset(&m->slots[index], 0, sizeof m->slots[index]);
        m->slots[index].gen = 1; /* generations start at 1: TES_NULL is never alive */
    }
    fz_mslot_t *s = &m->slots[index];
    s->alive = true;
    s->pending = false;
    s->inst = 0;
    s->parent = 0;
    s->nkids = 0;
    s->name = NULL;
    memset(&s->mask, 0, sizeof s->mask);
    memset(s->stable_ptr, 0, sizeof s->stable_ptr);
    s->live_pos = m->nlive;
    m->live[m->nlive++] = index;
    return tes_entity_make(index, s->gen);
}

void fz_model_destroy(fz_model_t *m, uint32_t index)
{
    fz_mslot_t *s = &m->slots[index];
    fz_model_clear(m, index);
    fz_model_inst_unlink(m, index); /* it leaves its instance */
    /* Every destroy goes through a plan: its children died first. */
    if (s->nkids) {
        fprintf(stderr, "fuzz: model destroys entity %u before its %u children\n", index, s->nkids);
        abort();
    }
    if (s->parent)
        fz_model_link(m, index, 0);
    free(s->name);
    s->name = NULL;
    s->alive = false;
    s->pending = false;
    /* Swap-remove from the live list. */
    uint32_t last = m->live[--m->nlive];
    m->live[s->live_pos] = last;
    m->slots[last].live_pos = s->live_pos;
    if (s->gen >= m->generation_limit) {
        s->retired = true; /* retired for good: never on the free stack again */
        m->retired++;
        return;
    }
    s->gen++;
    m->free_stack[m->nfree++] = index; /* free_cap >= nslots, so it fits */
}

bool fz_model_has(const fz_model_t *m, uint32_t index, int k)
{
    return fz_bits_has(m->slots[index].mask, k);
}

bool fz_model_add(fz_model_t *m, uint32_t index, int k)
{
    fz_mslot_t *s = &m->slots[index];
    if (fz_model_has(m, index, k))
        return false;
    fz_bits_set(&s->mask, k);
    if (k >= FZ_NCOMP && !s->xval) {
        s->xval = calloc(FZ_NALL - FZ_NCOMP, sizeof *s->xval);
        if (!s->xval) {
            fprintf(stderr, "fuzz: model out of memory\n");
            abort();
        }
    }
    fz_default_value(k, fz_val(m, index, k));
    if (k < FZ_NCOMP)
        s->stable_ptr[k] = NULL;
    m->values[k]++;
    m->expect[k].on_add++;
    return true;
}

bool fz_model_remove(fz_model_t *m, uint32_t index, int k)
{
    fz_mslot_t *s = &m->slots[index];
    if (!fz_model_has(m, index, k))
        return false;
    fz_bits_clr(&s->mask, k);
    if (k < FZ_NCOMP)
        s->stable_ptr[k] = NULL;
    m->values[k]--;
    m->expect[k].on_remove++;
    return true;
}

void fz_model_clear(fz_model_t *m, uint32_t index)
{
    for (int k = 0; k < FZ_NALL; k++)
        fz_model_remove(m, index, k);
}

void fz_model_write(fz_model_t *m, uint32_t index, int k, const uint8_t *value)
{
    uint32_t off = fz_payload_offset(k);
    memcpy(fz_val(m, index, k) + off, value + off, fz_msize(k) - off);
}

int fz_model_clone_into(fz_model_t *m, uint32_t dst, uint32_t src)
{
    for (int k = 0; k < FZ_NALL; k++) {
        if (!fz_model_has(m, src, k))
            continue;
        fz_model_add(m, dst, k);
        if (fz_comps[k].size) {
            fz_model_write(m, dst, k, fz_val(m, src, k));
            if (fz_comps[k].tracked)
                m->expect[k].copy++;
        }
    }
    /* The copy gets src's parent (appended), not its children or name. */
    int rc = fz_model_clone_link(m, dst, src);
    if (rc == FZ_OOM) {
        fprintf(stderr, "fuzz: model out of memory\n");
        abort();
    }
    return rc;
}
