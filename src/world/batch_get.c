/*
 * tes_get_n: the addresses of one component for many entities, with their
 * memory loads overlapped. Random reads of a large world are bound by how
 * many cache misses the processor keeps in flight, not by instructions, so
 * the call runs the handles through a short software pipeline (described
 * below) instead of resolving them one after another; the caller's out[]
 * array is its only buffer, so the call allocates nothing and cannot fail
 * on memory.
 *
 * Tuned for batches of hundreds to thousands of handles in random order
 * over worlds larger than the cache (a damage pass over hit targets, a
 * network sync of dirty entities). A sparse entry carries its entity's
 * generation, so a sparse read never touches the entity's slot. With its
 * prefetches aimed at the second-level cache (below), a batch of random
 * table reads runs at about the speed of a plain loop over a generation
 * array and a value array indexed by entity (0.8-0.95 times its time in
 * the project's benchmark), sparse reads at about half their baseline's.
 */
#include "world/last_error.h"
#include "world/world.h"

/* The pipeline's prefetches ask for the second-level cache (locality 2:
 * prefetcht1 on x86), not the first. A first-level fill holds one of the
 * few miss buffers of the first-level cache until its line arrives, and
 * with two misses per entity in flight those buffers were what capped the
 * overlap: asking for the second level alone let table reads run about
 * 1.7 times faster and sparse reads about 1.9 times in the project's
 * benchmark (same instructions; the step that later reads the line takes
 * a second-level hit, a few cycles, instead). */
#if defined(__GNUC__) || defined(__clang__)
#define prefetch(p) __builtin_prefetch((p), 0, 2)
#else
#define prefetch(p) ((void)(p))
#endif

/* tes_get_n runs a two-step software pipeline over the handles. Step one,
 * AHEAD entities in front of step two, finds where the entity's first
 * lookup lives (its slot, or its sparse entry), starts that line's load
 * with a prefetch and parks the address in out[] (the caller's array is
 * the pipeline's only buffer). Step two takes that address back from
 * out[], which is in L1 by then, checks the handle, computes the cell,
 * starts the cell's load for the caller and writes the result over the
 * parked address. Each entity's own work then waits on no miss: up to
 * AHEAD first lookups and the cells of the entities already resolved are
 * in flight at once, and step two repeats none of step one's index
 * arithmetic. Random reads are bound by how many loads the processor
 * keeps in flight, so both steps are kept to few instructions and loads:
 * everything invariant sits in locals. AHEAD covers a memory latency with
 * the work of the entities between, and is small enough that the parked
 * lines are still in the second-level cache when step two reaches them
 * (16 to 48 measured alike, 8 slower). Step two's way from the slot to
 * the column (the table pointer, then its data_of entry) costs two loads
 * that hit the first-level cache; a per-call array of column starts
 * indexed by table id measured no faster, so there is none. */
#define AHEAD 24

/* Step one for a table component: the slot of es[j] (NULL for an index
 * never issued), prefetched. A 12-byte slot may straddle two lines: the
 * prefetch of its last byte fetches the second. */
static inline const tes__slot_t *slot_ahead(const tes__slot_t *slots, uint32_t count,
                                            tes_entity_t e)
{
    uint32_t index = tes_entity_index(e);
    if (index >= count)
        return NULL;
    const tes__slot_t *s = &slots[index];
    prefetch(s);
    prefetch((const char *)s + sizeof *s - 1);
    return s;
}

/* The column start of c in t: the table's data_of entry for a small id
 * (NULL when absent), else the column found by id. */
static inline const uint8_t *column_start(const tes__table_t *t, tes_comp_t c, bool small)
{
    if (small)
        return t->data_of[c];
    int32_t col = tes__table_column_index(t, c);
    return col >= 0 ? t->columns[col].data : NULL;
}

/* Step two for a table component: e's cell from its slot s (NULL: none),
 * prefetched for the caller; NULL when e is stale or its table has no
 * column for c. A free or retired slot fails the table check before its
 * table id is used. */
static inline const void *cell_of(tes__table_t *const *tables, const tes__slot_t *s,
                                  tes_entity_t e, tes_comp_t c, uint32_t size, bool small)
{
    if (!s || s->generation != tes_entity_generation(e) || s->table == TES__SLOT_FREE)
        return NULL;
    const uint8_t *column = column_start(tables[s->table & TES__SLOT_TABLE_MASK], c, small);
    if (!column)
        return NULL;
    const void *ptr = column + (size_t)s->row * size;
    prefetch(ptr);
    return ptr;
}

/* The pipeline for a table component. Inline, and called with a constant
 * `small`, so the loop of a small id has no branch on it. */
static inline int32_t get_n_table_loop(const tes_world_t *w, tes_comp_t c, uint32_t size,
                                       bool small, const tes_entity_t *es, int32_t n,
                                       const void **out)
{
    const tes__slot_t *slots = w->entities.slots;
    uint32_t count = w->entities.count;
    tes__table_t *const *tables = w->tables.tables;
    int32_t found = 0, lead = n < AHEAD ? n : AHEAD, i = 0;
    for (int32_t j = 0; j < lead; j++)
        out[j] = slot_ahead(slots, count, es[j]);
    for (; i + AHEAD < n; i++) {
        out[i + AHEAD] = slot_ahead(slots, count, es[i + AHEAD]);
        const void *ptr = cell_of(tables, (const tes__slot_t *)out[i], es[i], c, size, small);
        found += ptr != NULL;
        out[i] = ptr;
    }
    for (; i < n; i++) {
        const void *ptr = cell_of(tables, (const tes__slot_t *)out[i], es[i], c, size, small);
        found += ptr != NULL;
        out[i] = ptr;
    }
    return found;
}

static int32_t get_n_table(const tes_world_t *w, tes_comp_t c, uint32_t size,
                           const tes_entity_t *es, int32_t n, const void **out)
{
    return c < TES__TABLE_DIRECT_IDS ? get_n_table_loop(w, c, size, true, es, n, out)
                                     : get_n_table_loop(w, c, size, false, es, n, out);
}

/* The parts of a sparse store the pipeline reads, copied into locals once
 * per call (stores into out[] could otherwise make the compiler load them
 * again for every entity). */
typedef struct sparse_view {
    uint64_t *const *entry_pages;
    uint32_t entry_page_count;
    uint8_t *const *data_pages;
    uint32_t size, shift, mask;
} sparse_view_t;

/* Step one for a sparse component: the sparse entry of es[j] (NULL when
 * its page is absent), prefetched. */
static inline const uint64_t *entry_ahead(const sparse_view_t *v, tes_entity_t e)
{
    uint32_t index = tes_entity_index(e), page = index >> TES__SPARSE_PAGE_BITS;
    if (page >= v->entry_page_count || !v->entry_pages[page])
        return NULL;
    const uint64_t *entry = &v->entry_pages[page][index & TES__SPARSE_PAGE_MASK];
    prefetch(entry);
    return entry;
}

/* Step two for a sparse component: e's value from its entry (NULL: none),
 * prefetched for the caller; NULL when the entry is empty or holds
 * another generation (seed 001's compare, as in tes_get). */
static inline const void *value_of(const sparse_view_t *v, const uint64_t *entry, tes_entity_t e)
{
    if (!entry)
        return NULL;
    uint64_t bits = *entry;
    if (((e & ~(uint64_t)TES_NULL_INDEX) ^ bits) >= TES_NULL_INDEX)
        return NULL;
    uint32_t pos = (uint32_t)bits;
    const void *ptr = v->data_pages[pos >> v->shift] + (size_t)(pos & v->mask) * v->size;
    prefetch(ptr);
    return ptr;
}

static int32_t get_n_sparse(const tes__sparse_store_t *st, const tes_entity_t *es, int32_t n,
                            const void **out)
{
    const sparse_view_t v = {(uint64_t *const *)st->set.pages, st->set.page_count,
                             (uint8_t *const *)st->pages, st->size, st->page_shift,
                             st->page_mask};
    int32_t found = 0, lead = n < AHEAD ? n : AHEAD, i = 0;
    for (int32_t j = 0; j < lead; j++)
        out[j] = entry_ahead(&v, es[j]);
    for (; i + AHEAD < n; i++) {
        out[i + AHEAD] = entry_ahead(&v, es[i + AHEAD]);
        const void *ptr = value_of(&v, (const uint64_t *)out[i], es[i]);
        found += ptr != NULL;
        out[i] = ptr;
    }
    for (; i < n; i++) {
        const void *ptr = value_of(&v, (const uint64_t *)out[i], es[i]);
        found += ptr != NULL;
        out[i] = ptr;
    }
    return found;
}

int32_t tes_get_n(const tes_world_t *w, tes_comp_t c, const tes_entity_t *es, int32_t n,
                  const void **out)
{
    if (!w)
        return -1;
    if (n < 0 || (n > 0 && (!es || !out)))
        return tes__fail_const(w, TES_ERR_INVALID, "tes_get_n: n = %d with es %s and out %s", (int)n, es ? "set" : "NULL", out ? "set" : "NULL"), -1;
    const tes__component_t *info = tes__registry_get(&w->components, c);
    if (!info || !info->size) {
        for (int32_t i = 0; i < n; i++)
            out[i] = NULL;
        tes__fail_const(w, TES_ERR_INVALID, info ? "tes_get_n: component %u ('%.64s') is a tag: it has no values" : "tes_get_n: component id %u%.0s is not registered in this world", (unsigned)c, info ? info->name : "");
        return 0;
    }
    /* A sparse entry carries the generation and is erased before its
     * entity dies, so it answers for liveness by itself (as in tes_get). */
    if (info->storage == TES_STORAGE_SPARSE)
        return get_n_sparse(&info->store, es, n, out);
    return get_n_table(w, c, info->size, es, n, out);
}
