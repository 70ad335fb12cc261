/*
 * Change filters and the stamping of written chunks (changes_iter.h).
 *
 * A change-filtered walk visits the query's cached tables in order, as
 * the plain table walk does, and yields the runs of rows that pass every
 * change term. Each term's stamp column is read block by block: while the
 * table's summary for that term is exact (no stamp moved since a walk
 * rebuilt it), a block whose newest tick is not after the query's
 * previous iteration is stepped over without reading its 64 stamps. When
 * the summary is not exact, the walk reads the whole column once and
 * rebuilds it (what it costs is the read it needs anyway). So a frame in
 * which nothing changed costs one word per 64 rows, and one in which a
 * few rows changed costs their blocks.
 */
#include "query/changes_iter.h"

#include "world/changes.h"
#include "world/last_error.h"

int tes__query_changes_setup(tes_query_t *q, const tes_query_desc_t *d)
{
    for (int32_t i = 0; i < q->term_count; i++) {
        const tes_term_t *t = &d->terms[i];
        tes__term_info_t *ti = &q->terms[i];
        if (ti->info->hidden)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: component id %u is not registered", (int)i, (unsigned)t->comp);
        if ((unsigned)t->change > TES_CHANGE_CHANGED)
            return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: change %u is not a tes_change_t", (int)i, (unsigned)t->change);
        ti->change = t->change;
        if (t->change != TES_CHANGE_NONE) {
            if (!ti->info->track_changes)
                return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: a change filter on '%.64s', which does not track changes (register it with track_changes)", (int)i, ti->info->name);
            if (t->oper != TES_AND)
                return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: a change filter on a %s term ('%.64s'); change filters go on TES_AND terms", (int)i, t->oper == TES_NOT ? "TES_NOT" : "TES_OPTIONAL", ti->info->name);
            q->change_window = true;
            if (!ti->sparse) {
                q->change_terms[q->change_count++] = (uint8_t)i;
            } else {
                /* The owning group's and the by-depth walks do not ask the
                 * matcher about each entity: a sparse change filter has no
                 * place in them. */
                if (q->flags & (TES_QUERY_OWNING_GROUP | TES_QUERY_CASCADE) || q->cascade_walk)
                    return tes__fail_detail(q->w, TES_ERR_INVALID, "query terms[%d]: a change filter on sparse '%.64s' in a query with %s; use a plain or non-owning group query for it", (int)i, ti->info->name, (q->flags & TES_QUERY_OWNING_GROUP) ? "an owning group" : "the by-depth order");
                q->sparse_change_terms[q->sparse_change_count++] = (uint8_t)i;
            }
        }
        if (ti->info->track_changes && ti->data &&
            (t->access == TES_INOUT || t->access == TES_OUT))
            q->stamp_terms[q->stamp_count++] = (uint8_t)i;
    }
    if (q->stamp_count || q->sparse_change_count) {
        /* Stamps are written where the values live: a gathered copy would
         * hide the rows (gather.h). A gathered chunk is not cut by the
         * matcher's change test either. */
        q->gather_k = 0;
        for (int32_t i = 0; i < TES_MAX_TERMS; i++)
            q->gather_cap[i] = 0;
    }
    q->whole_tables = !q->has_sparse && !q->change_count && !q->stamp_count && !q->cascade_walk;
    atomic_store_explicit(&q->change_last, 0, memory_order_relaxed);
    return TES_OK;
}

uint32_t tes__changes_iter_begin(tes_query_t *q, uint32_t *tick)
{
    uint32_t live = 0;
    if (q->change_window) {
        *tick = tes__tick_advance(q->w);
        live |= TES__CHANGE_WINDOW;
    }
    if (q->stamp_count)
        live |= TES__CHANGE_STAMP;
    return live;
}

void tes__query_changes_end(tes_query_t *q)
{
    atomic_store_explicit(&q->change_last, tes__tick_now(q->w), memory_order_relaxed);
    atomic_store_explicit(&q->change_ended, true, memory_order_relaxed);
    tes__tick_advance(q->w);
}

void tes__changes_iter_end(tes_iter_t *it)
{
    uint32_t live = it->priv_change_live;
    it->priv_change_live = live & TES__CHANGE_ALL;
    if ((live & TES__CHANGE_WINDOW) && !(live & TES__CHANGE_HOLD))
        tes__query_changes_end(it->priv_query);
}

/* The stamps a change term reads in t: its "changed" or "added" column. */
static const uint32_t *term_stamps(const tes__term_info_t *ti, const tes__table_t *t)
{
    int32_t col = tes__table_column_index(t, ti->info->stamps);
    tes__assert(col >= 0);
    if (ti->change == TES_CHANGE_ADDED)
        col++;
    return (const uint32_t *)(const void *)t->columns[col].data;
}

/* Makes t's summary of tracked component c exact for its rows (each
 * block's newest "changed" tick), reading its stamps once. */
static void rebuild(tes_world_t *w, tes__table_t *t, const tes__component_t *c, uint64_t epoch)
{
    tes__stamp_sum_t *s = tes__table_sum(t, c->id);
    int32_t col = tes__table_column_index(t, c->stamps);
    const uint32_t *stamps = (const uint32_t *)(const void *)t->columns[col].data;
    uint32_t now = tes__tick_now(w);
    for (uint32_t b = 0; b < s->blocks; b++) {
        uint32_t lo = b << TES__STAMP_BLOCK_BITS, hi = lo + TES__STAMP_BLOCK, newest = 0;
        bool any = false;
        if (hi > t->count)
            hi = t->count;
        /* "Newest" modulo 2^32: the stamp the fewest ticks before now. */
        for (uint32_t r = lo; r < hi; r++) {
            if (!any || now - stamps[r] < now - newest)
                newest = stamps[r];
            any = true;
        }
        atomic_store_explicit(&s->max[b], any ? newest : now - 1u - INT32_MAX, memory_order_relaxed);
    }
    atomic_store_explicit(&s->epoch, epoch, memory_order_relaxed);
}

/* The first row at or after `row` of t whose stamps pass every change
 * term (t->count if none). The first term is scanned block by block: a
 * block its exact summary shows to hold nothing new is stepped over whole,
 * the others are read with a plain loop over the stamps; a row the first
 * term passes is then tested against the other terms. */
static uint32_t first_passing(const tes_query_t *q, const tes__table_t *t, uint32_t row,
                              uint32_t since, const uint32_t *const *stamps,
                              tes__stamp_sum_t *const *sums, const bool *exact)
{
    const uint32_t n = t->count;
    const uint32_t *s0 = stamps[0];
    const tes__stamp_sum_t *sum0 = sums[0];
    const uint32_t covered = exact[0] ? sum0->blocks : 0;
    while (row < n) {
        uint32_t b = row >> TES__STAMP_BLOCK_BITS;
        if (b < covered &&
            !tes__tick_after(atomic_load_explicit(&sum0->max[b], memory_order_relaxed), since)) {
            row = (b + 1) << TES__STAMP_BLOCK_BITS; /* nothing new in this block */
            continue;
        }
        uint32_t stop = b < covered ? (b + 1) << TES__STAMP_BLOCK_BITS : n;
        if (stop > n)
            stop = n;
        for (; row < stop; row++) {
            if (!tes__tick_after(s0[row], since))
                continue;
            bool pass = true;
            for (int32_t k = 1; k < q->change_count && pass; k++)
                pass = tes__tick_after(stamps[k][row], since);
            if (pass)
                return row;
        }
    }
    return n;
}

bool tes__changes_next_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    tes_world_t *w = q->w;
    uint32_t since = it->priv_change_since;
    bool all = (it->priv_change_live & TES__CHANGE_ALL) != 0;
    uint64_t epoch = atomic_load_explicit(&w->changes.epoch, memory_order_relaxed);
    uint32_t c = it->priv_cursor;
    for (; c < q->match_count; c++, it->priv_row = 0) {
        const tes__query_match_t *m = &q->matches[c];
        tes__table_t *t = m->table;
        if (!t->count)
            continue;
        tes__changes_settle(w, t); /* the stamps are read below */
        const uint32_t *stamps[TES_MAX_TERMS];
        tes__stamp_sum_t *sums[TES_MAX_TERMS];
        bool exact[TES_MAX_TERMS];
        for (int32_t k = 0; k < q->change_count; k++) {
            const tes__term_info_t *ti = &q->terms[q->change_terms[k]];
            stamps[k] = term_stamps(ti, t);
            sums[k] = tes__table_sum(t, ti->comp);
            if (atomic_load_explicit(&sums[k]->epoch, memory_order_relaxed) != epoch &&
                it->priv_row == 0)
                rebuild(w, t, ti->info, epoch);
            exact[k] = atomic_load_explicit(&sums[k]->epoch, memory_order_relaxed) == epoch;
        }
        uint32_t row = it->priv_row;
        while (row < t->count) {
            if (!all)
                row = first_passing(q, t, row, since, stamps, sums, exact);
            if (row >= t->count)
                break;
            uint32_t end = all ? t->count : row + 1;
            while (end < t->count) {
                bool pass = true;
                for (int32_t k = 0; k < q->change_count && pass; k++)
                    pass = tes__tick_after(stamps[k][end], since);
                if (!pass)
                    break;
                end++;
            }
            uint32_t k = end - row;
            if (q->has_sparse) {
                tes__match_t mt = {.how = 0, .hide = 0, .driver = -1};
                tes__changes_match_setup(it, &mt);
                if (!(k = tes__query_match(q, &mt, t->entities + row, k))) {
                    row++;
                    continue;
                }
                tes__query_fields(q, mt.pos, NULL, it->priv_fields);
            }
            for (int32_t i = 0; i < q->term_count; i++)
                if (m->column[i] >= 0)
                    it->priv_fields[i] = tes__table_cell(t, (uint32_t)m->column[i], row);
                else if (!q->has_sparse)
                    it->priv_fields[i] = NULL;
            it->count = (int32_t)k;
            it->entities = t->entities + row;
            bool more = row + k < t->count;
            it->priv_row = more ? row + k : 0;
            it->priv_cursor = more ? c : c + 1;
            return true;
        }
    }
    it->priv_cursor = c;
    return false;
}

void tes__changes_stamp_chunk(tes_iter_t *it)
{
    const tes_query_t *q = it->priv_query;
    if (!it->count)
        return;
    const tes__slot_t *slot = tes__entity_slot(&q->w->entities, it->entities[0]);
    if (!slot)
        return;
    tes__table_t *t = tes__slot_table(q->w, slot);
    for (int32_t k = 0; k < q->stamp_count; k++) {
        const tes__term_info_t *ti = &q->terms[q->stamp_terms[k]];
        /* An absent optional term has no field. */
        if (!it->priv_fields[q->stamp_terms[k]])
            continue;
        if (ti->sparse) {
            /* A sparse field is consecutive positions from the first
             * entity's (the chunk contract). */
            const tes__sparse_store_t *st = &ti->info->store;
            uint32_t pos = tes__sparse_set_find(&st->set, it->entities[0]);
            for (uint32_t j = 0; pos != TES_NULL_INDEX && j < (uint32_t)it->count; j++)
                tes__sparse_store_stamp_now(st, pos + j, false);
        } else if (tes__table_column_index(t, ti->comp) >= 0) {
            tes__stamp_chunk_rows(q->w, t, slot->row, (uint32_t)it->count, ti->info);
        }
    }
}

uint32_t tes__changes_skip_slow(const tes_query_t *q, const tes__match_t *m, int32_t d, uint32_t p)
{
    const tes__sparse_store_t *st = &q->terms[d].info->store;
    const uint32_t count = st->set.count, per = tes__store_stamp_per(st);
    while (p < count) {
        /* The block's end (a page's, for pages of fewer positions). */
        uint32_t span = st->page_mask < TES__STORE_STAMP_BLOCK - 1 ? st->page_mask
                                                                   : TES__STORE_STAMP_BLOCK - 1;
        uint32_t end = (p | span) + 1;
        if (end > count)
            end = count;
        if (tes__tick_after(atomic_load_explicit(tes__sparse_store_sum(st, p), memory_order_relaxed),
                            m->since)) {
            /* Something in the block may be new: its first such stamp. */
            const uint32_t *stamps = tes__sparse_store_stamp(st, p) - (p & st->page_mask);
            if (q->terms[d].change == TES_CHANGE_ADDED)
                stamps += per;
            for (; p < end; p++)
                if (tes__tick_after(stamps[p & st->page_mask], m->since))
                    return p;
        }
        p = end;
    }
    return count;
}
