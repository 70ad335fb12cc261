/*
 * The loader's second part (see snapshot.h): streams the payload, the raw
 * table columns, straight into the column blocks their tables will own.
 *
 * This is where a large load spends its time, so each byte is touched as
 * few times as the guarantees allow: the reader copies a piece of at most
 * TES__SNAP_READ_PIECE bytes into its final place in a column block, and
 * the piece is hashed right away, while it is still in cache. There is no
 * second copy. The blocks are laid out exactly as the target tables lay out
 * theirs (tes__table_layout) but belong to the plan, not to the world: a
 * payload that is truncated, fails its checksum or runs out of memory
 * leaves nothing behind in the world, and load.c hands each block to its
 * table only once everything has been verified.
 *
 * Allocation stays bounded by what arrives. A block is allocated before
 * its bytes are read only while all blocks together stay within four times
 * the bytes the reader has delivered (plus a little): the meta part backs
 * every row with at least 12 bytes (its slot and its row index), so tables
 * of small components, the common case, always fit. A table of large
 * components that does not fit is read into a bounce buffer that grows as
 * its bytes arrive, and copied into its block once they all have: a header
 * or meta part that claims rows the input never delivers costs at most a
 * few times the bytes that did arrive. Tables without raw columns (tags,
 * hooked values) get their block here too, sized for exactly the rows the
 * meta part lists: a growing table would start at 16 rows, which for a
 * large hooked component is many times the input.
 */
#include "snapshot/snapshot.h"

/* First size of a bounce buffer; it grows fourfold as bytes arrive. */
#define BOUNCE_CHUNK 4096u
/* Blocks may total four times the bytes delivered plus this. */
#define BLOCK_SLACK 4096u

/* Reads n bytes into dst in cache-sized pieces, hashing each piece. */
static int read_hashed(tes__snap_plan_t *p, const tes_reader_t *in, tes__snap_stream_t *sum,
                       uint8_t *dst, size_t n)
{
    while (n) {
        size_t piece = n < TES__SNAP_READ_PIECE ? n : TES__SNAP_READ_PIECE;
        int rc = tes__snap_read(p, in, dst, piece, "the payload");
        if (rc)
            return rc;
        tes__snap_stream_add(sum, dst, piece);
        dst += piece;
        n -= piece;
    }
    return TES_OK;
}

/* Reads n bytes into a buffer that grows only as they arrive (*out, of
 * *cap bytes, owned by the caller also on failure). */
static int read_bounced(tes__snap_plan_t *p, const tes_reader_t *in, tes__snap_stream_t *sum,
                        size_t n, uint8_t **out, size_t *cap)
{
    size_t got = 0;
    while (got < n) {
        if (got == *cap) {
            size_t grow = *cap ? 3 * *cap : BOUNCE_CHUNK;
            if (grow > n - got)
                grow = n - got;
            uint8_t *bigger = tes__realloc(p->a, *out, *cap, *cap + grow);
            if (!bigger)
                return TES_ERR_NOMEM;
            *out = bigger;
            *cap += grow;
        }
        int rc = read_hashed(p, in, sum, *out + got, *cap - got);
        if (rc)
            return rc;
        got = *cap;
    }
    return TES_OK;
}

/* Where each column of the table's block lies: `cols` and `offsets` get
 * the data columns in the target table's order (ascending world id);
 * returns their number. */
static uint32_t table_columns(const tes__snap_plan_t *p, const tes__snap_table_t *st,
                              const tes__component_t **cols)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < st->type_count; k++) {
        const tes__component_t *owner = p->comps[tes__get_u32(st->type + 4 * k)].info;
        if (!owner->size)
            continue;
        /* A tracked component's stamp columns are laid out too (the load
         * stamps them as added). */
        for (uint32_t j = 0; j < (owner->track_changes ? 3u : 1u); j++) {
            const tes__component_t *info =
                j ? owner->stamp_info[j - 1] : owner;
            uint32_t at = n++;
            while (at && cols[at - 1]->id > info->id) {
                cols[at] = cols[at - 1];
                at--;
            }
            cols[at] = info;
        }
    }
    return n;
}

/* The offset of info's column in a block laid out for cols. */
static size_t column_offset(const tes__component_t *const *cols, const size_t *offsets,
                            const tes__component_t *info)
{
    uint32_t i = 0;
    while (cols[i] != info)
        i++;
    return offsets[i];
}

static int read_table(tes__snap_plan_t *p, const tes_reader_t *in, tes__snap_stream_t *sum,
                      tes__snap_table_t *st, const tes__component_t **cols, size_t *offsets)
{
    uint32_t ncols = table_columns(p, st, cols);
    size_t size;
    if (!tes__table_layout(cols, ncols, st->rows, offsets, &size))
        return TES_ERR_NOMEM; /* no block can be that large */
    uint64_t budget = 4 * p->delivered + BLOCK_SLACK;
    bool direct = p->staged <= budget && size <= budget - p->staged;
    uint8_t *bounce = NULL;
    size_t bounce_cap = 0;
    int rc = TES_OK;
    if (!direct)
        rc = read_bounced(p, in, sum, (size_t)st->payload, &bounce, &bounce_cap);
    if (!rc && !(st->block = tes__malloc(p->a, size)))
        rc = TES_ERR_NOMEM;
    if (!rc) {
        st->block_size = size;
        p->staged += size;
    }
    /* The raw columns, in the snapshot's type order. */
    const uint8_t *from = bounce;
    for (uint32_t k = 0; !rc && k < st->type_count; k++) {
        const tes__snap_comp_t *comp = &p->comps[tes__get_u32(st->type + 4 * k)];
        if (!tes__snap_in_payload(comp))
            continue;
        uint8_t *dst = st->block + column_offset(cols, offsets, comp->info);
        size_t bytes = (size_t)st->rows * comp->info->size;
        if (direct) {
            rc = read_hashed(p, in, sum, dst, bytes);
        } else {
            memcpy(dst, from, bytes);
            from += bytes;
        }
    }
    tes__free(p->a, bounce, bounce_cap);
    return rc;
}

/* The block of a table with no raw column (tags, hooked values only): laid
 * out for exactly its rows, as the payload tables' blocks are, so a load
 * never reserves rows the input did not list. Its values are filled in by
 * load.c (hooked values are in the meta part, already delivered). */
static int make_block(tes__snap_plan_t *p, tes__snap_table_t *st, const tes__component_t **cols,
                      size_t *offsets)
{
    uint32_t ncols = table_columns(p, st, cols);
    size_t size;
    if (!tes__table_layout(cols, ncols, st->rows, offsets, &size))
        return TES_ERR_NOMEM; /* no block can be that large */
    if (!(st->block = tes__malloc(p->a, size)))
        return TES_ERR_NOMEM;
    st->block_size = size;
    return TES_OK;
}

int tes__snap_read_payload(tes__snap_plan_t *p, const tes_reader_t *in)
{
    tes__snap_stream_t sum;
    tes__snap_stream_init(&sum, p->meta_sum);
    const tes__component_t **cols = NULL;
    size_t *offsets = NULL;
    int rc = TES_OK;
    if (p->ntables && p->ncomps) {
        /* Up to three columns a component (a tracked one's stamps). */
        cols = tes__malloc(p->a, (size_t)p->ncomps * 3 * sizeof *cols);
        offsets = tes__malloc(p->a, (size_t)p->ncomps * 3 * sizeof *offsets);
        if (!cols || !offsets)
            rc = TES_ERR_NOMEM;
    }
    for (uint32_t t = 0; !rc && t < p->ntables; t++)
        rc = p->tables[t].payload ? read_table(p, in, &sum, &p->tables[t], cols, offsets)
                                  : make_block(p, &p->tables[t], cols, offsets);
    tes__free(p->a, cols, cols ? (size_t)p->ncomps * 3 * sizeof *cols : 0);
    tes__free(p->a, offsets, offsets ? (size_t)p->ncomps * 3 * sizeof *offsets : 0);
    if (rc)
        return rc;
    uint8_t stated[TES__SNAP_SUM_SIZE];
    rc = tes__snap_read(p, in, stated, sizeof stated, "the payload checksum");
    if (rc)
        return rc;
    if (tes__snap_stream_finish(&sum) != tes__get_u64(stated))
        return tes__snap_bad(p, p->delivered - sizeof stated, "payload checksum mismatch (the "
                             "%llu bytes of raw columns are corrupted)",
                             (unsigned long long)p->payload_size);
    return TES_OK;
}
