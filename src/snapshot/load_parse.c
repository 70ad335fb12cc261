/*
 * The loader's first part (see snapshot.h): reads the header and the meta
 * part of the input and proves them well-formed before anything in the
 * world is touched.
 *
 * Every byte is hostile. The meta part is read in chunks into a buffer that
 * grows only as bytes actually arrive, so a header that claims a huge meta
 * part costs nothing until the reader delivers it. Its checksum is verified
 * before any field is trusted; then every count is checked against the
 * bytes left before scratch is sized from it, every index against its
 * range, every list walk is bounded by its claimed length and guarded
 * against cycles, and every entity must be placed exactly once. The raw
 * table columns are not in the meta part: the parse only works out how
 * many payload bytes each table owns and checks that they add up to the
 * payload size the header states. What this file accepts, load_payload.c
 * and load.c can restore without further checks.
 */
#include "snapshot/snapshot.h"

/* The first read; the buffer then grows fourfold as bytes arrive, so what
 * is allocated stays below four times what the reader delivered plus this. */
#define READ_CHUNK 4096u

/* Reads the header, the meta part and its checksum into p->buf. */
static int read_input(tes__snap_plan_t *p, const tes_reader_t *in)
{
    uint8_t header[TES__SNAP_HEADER_SIZE];
    int rc = in->read(header, sizeof header, in->user);
    if (rc)
        return rc < 0 ? rc : TES_ERR_IO;
    p->delivered = sizeof header;
    if (memcmp(header, TES__SNAP_MAGIC, 8) != 0 || tes__get_u32(header + 8) != TES__SNAP_VERSION ||
        tes__get_u32(header + 12) != 0)
        return TES_ERR_FORMAT;
    uint64_t meta = tes__get_u64(header + 16);
    p->payload_size = tes__get_u64(header + 24);
    if (meta > SIZE_MAX / 4 || p->payload_size > SIZE_MAX / 4)
        return TES_ERR_FORMAT;
    size_t total = TES__SNAP_HEADER_SIZE + (size_t)meta + TES__SNAP_SUM_SIZE;
    size_t cap = total < READ_CHUNK ? total : READ_CHUNK;
    p->buf = tes__malloc(p->a, cap);
    if (!p->buf)
        return TES_ERR_NOMEM;
    p->buf_cap = cap;
    memcpy(p->buf, header, sizeof header);
    size_t got = sizeof header;
    /* The checksum covers header and meta; each piece is hashed right after
     * it is read, while it is still in cache. */
    size_t hashed = 0, body_end = TES__SNAP_HEADER_SIZE + (size_t)meta;
    tes__snap_hash_t hash;
    tes__snap_hash_init(&hash, 0);
    while (got < total) {
        if (got == p->buf_cap) {
            /* x4: the copies growth costs stay a third of the input, and
             * the buffer stays below four times what has arrived. */
            size_t grow = 3 * p->buf_cap <= (total - got) ? 3 * p->buf_cap : total - got;
            uint8_t *bigger = tes__realloc(p->a, p->buf, p->buf_cap, p->buf_cap + grow);
            if (!bigger)
                return TES_ERR_NOMEM;
            p->buf = bigger;
            p->buf_cap += grow;
        }
        size_t chunk = p->buf_cap - got < TES__SNAP_READ_PIECE ? p->buf_cap - got : TES__SNAP_READ_PIECE;
        rc = in->read(p->buf + got, chunk, in->user);
        if (rc)
            return rc < 0 ? rc : TES_ERR_IO;
        got += chunk;
        p->delivered += chunk;
        size_t upto = got < body_end ? got : body_end;
        upto -= upto % TES__SNAP_HASH_BLOCK;
        if (upto > hashed) {
            tes__snap_hash_blocks(&hash, p->buf + hashed, upto - hashed);
            hashed = upto;
        }
    }
    p->body_end = body_end;
    p->meta_sum = tes__snap_hash_finish(&hash, p->buf + hashed, body_end - hashed, body_end);
    if (p->meta_sum != tes__get_u64(p->buf + body_end))
        return TES_ERR_FORMAT;
    return TES_OK;
}

static int parse_comps(tes__snap_plan_t *p, tes__cursor_t *c)
{
    p->ncomps = tes__cursor_count(c, 16);
    if (c->bad)
        return TES_ERR_FORMAT;
    if (p->ncomps && !(p->comps = tes__calloc(p->a, (size_t)p->ncomps * sizeof *p->comps)))
        return TES_ERR_NOMEM;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    int mismatch = TES_OK; /* reported once the whole section is well-formed */
    for (uint32_t i = 0; i < p->ncomps; i++) {
        uint32_t len = tes__cursor_u32(c);
        if (len == 0 || len > TES__SNAP_MAX_NAME)
            return TES_ERR_FORMAT;
        const uint8_t *name = tes__cursor_take(c, len);
        uint32_t size = tes__cursor_u32(c), align = tes__cursor_u32(c);
        const uint8_t *flags = tes__cursor_take(c, 4);
        if (c->bad || memchr(name, 0, len))
            return TES_ERR_FORMAT;
        /* Names strictly ascending (byte order, a prefix first). */
        if (prev) {
            int order = memcmp(prev, name, prev_len < len ? prev_len : len);
            if (order > 0 || (order == 0 && prev_len >= len))
                return TES_ERR_FORMAT;
        }
        prev = name, prev_len = len;
        if (flags[0] > 1 || flags[1] > 1 || flags[2] > 1 || flags[3] != 0 ||
            (flags[2] && size == 0))
            return TES_ERR_FORMAT;
        char cname[TES__SNAP_MAX_NAME + 1];
        memcpy(cname, name, len);
        cname[len] = 0;
        tes__component_t *info =
            tes__registry_get(&p->w->components, tes__registry_lookup(&p->w->components, cname));
        bool framed = flags[2] != 0;
        if (!info || info->size != size || info->align != align ||
            (uint32_t)info->storage != flags[0] || info->stable != (flags[1] != 0) ||
            (framed && !info->hooks.load) ||
            (!framed && size && (info->hooks.copy || info->hooks.move || info->hooks.dtor)))
            mismatch = tes__fail_detail(p->w, TES_ERR_INVALID, "snapshot component '%.64s' (size %u align %u) %s", cname, (unsigned)size, (unsigned)align, !info ? "is not registered in this world" : "is registered here with another layout or other hooks");
        p->comps[i] = (tes__snap_comp_t){info, framed, false};
    }
    return mismatch;
}

/* An entity index: slot states into `state`, free list validated. */
static int parse_index(tes__snap_plan_t *p, tes__cursor_t *c, tes__snap_index_t *ix,
                       uint8_t **state, uint32_t limit)
{
    ix->count = tes__cursor_u32(c);
    ix->free_head = tes__cursor_u32(c);
    ix->free_count = tes__cursor_u32(c);
    if (c->bad || (uint64_t)ix->count * 8 > tes__cursor_left(c) || ix->count > limit ||
        ix->free_count > ix->count)
        return TES_ERR_FORMAT;
    ix->slots = tes__cursor_take(c, (uint64_t)ix->count * 8);
    if (ix->count && !(*state = tes__malloc(p->a, ix->count)))
        return TES_ERR_NOMEM;
    /* One branch-free pass (locals only: stores through the byte array
     * could alias anything the loop reads through pointers). A generation
     * is valid when it is the tombstone or in 1 .. limit (gen - 1 wraps
     * for 0). */
    uint32_t gen_limit = p->w->entities.generation_limit;
    uint32_t linked_slots = 0, retired = 0, invalid = 0;
    uint8_t *st = *state;
    const uint8_t *slots = ix->slots;
    for (uint32_t i = 0, n = ix->count; i < n; i++) {
        uint32_t gen = tes__get_u32(slots + 8 * (size_t)i);
        uint32_t linked = tes__get_u32(slots + 8 * (size_t)i + 4) != 0;
        uint32_t is_retired = gen == TES_TOMBSTONE;
        invalid |= !is_retired & (gen - 1 >= gen_limit);
        linked_slots += linked;
        retired += is_retired;
        st[i] = (uint8_t)((is_retired ? TES__SNAP_RETIRED : TES__SNAP_LIVE) |
                          (linked ? TES__SNAP_LINKED : 0));
    }
    ix->retired = retired;
    if (invalid)
        return TES_ERR_FORMAT;
    /* The free list: free_count distinct non-retired slots, ending in the
     * null index; every other slot has link 0: the walk must meet every
     * slot with a link (no walked slot is counted twice: a revisit finds
     * it FREE, not LIVE, and is refused). */
    uint32_t at = ix->free_head, linked_walked = 0;
    for (uint32_t k = 0; k < ix->free_count; k++) {
        if (at >= ix->count || !((*state)[at] & TES__SNAP_LIVE))
            return TES_ERR_FORMAT;
        linked_walked += ((*state)[at] & TES__SNAP_LINKED) != 0;
        (*state)[at] = TES__SNAP_FREE;
        at = tes__get_u32(ix->slots + 8 * (size_t)at + 4);
    }
    if (at != TES_NULL_INDEX || linked_walked != linked_slots)
        return TES_ERR_FORMAT;
    return TES_OK;
}

/* A live entity index from the input, or false. */
static bool live_entity(const tes__snap_plan_t *p, uint32_t index)
{
    return index < p->entities.count && (p->state[index] & TES__SNAP_LIVE);
}

/* Skips a column of n values in the meta part, checking each framed
 * value's length. */
static bool skip_values(tes__cursor_t *c, const tes__snap_comp_t *comp, uint32_t n)
{
    uint32_t size = comp->info->size;
    if (!size)
        return true;
    if (!comp->framed)
        return tes__cursor_take(c, (uint64_t)n * size) != NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len;
        if (!tes__snap_value(c, true, size, &len))
            return false;
    }
    return true;
}

static int parse_tables(tes__snap_plan_t *p, tes__cursor_t *c, uint64_t *payload_sum)
{
    p->ntables = tes__cursor_count(c, 12);
    if (c->bad)
        return TES_ERR_FORMAT;
    if (p->ntables && !(p->tables = tes__calloc(p->a, (size_t)p->ntables * sizeof *p->tables)))
        return TES_ERR_NOMEM;
    for (uint32_t t = 0; t < p->ntables; t++) {
        tes__snap_table_t *st = &p->tables[t];
        st->type_count = tes__cursor_count(c, 4);
        st->type = tes__cursor_take(c, (uint64_t)st->type_count * 4);
        if (c->bad || st->type_count == 0 || st->type_count > p->ncomps)
            return TES_ERR_FORMAT;
        for (uint32_t k = 0; k < st->type_count; k++) {
            uint32_t comp = tes__get_u32(st->type + 4 * k);
            if (comp >= p->ncomps || (k && comp <= tes__get_u32(st->type + 4 * (k - 1))) ||
                p->comps[comp].info->storage != TES_STORAGE_TABLE)
                return TES_ERR_FORMAT;
            p->comps[comp].used = true;
        }
        /* Tables strictly ascending by type. */
        if (t) {
            const tes__snap_table_t *pt = &p->tables[t - 1];
            uint32_t k = 0;
            while (k < pt->type_count && k < st->type_count &&
                   tes__get_u32(pt->type + 4 * k) == tes__get_u32(st->type + 4 * k))
                k++;
            bool less = k < pt->type_count && k < st->type_count
                            ? tes__get_u32(pt->type + 4 * k) < tes__get_u32(st->type + 4 * k)
                            : pt->type_count < st->type_count;
            if (!less)
                return TES_ERR_FORMAT;
        }
        st->rows = tes__cursor_count(c, 4);
        st->entities = tes__cursor_take(c, (uint64_t)st->rows * 4);
        if (c->bad || st->rows == 0)
            return TES_ERR_FORMAT;
        /* Each row a live entity placed nowhere else (locals: stores into
         * the byte array would otherwise reload everything each row). */
        uint8_t *state = p->state;
        const uint8_t *rows = st->entities;
        for (uint32_t r = 0, n = st->rows, slots = p->entities.count; r < n; r++) {
            uint32_t index = tes__get_u32(rows + 4 * (size_t)r);
            if (index >= slots || (state[index] & (TES__SNAP_LIVE | TES__SNAP_PLACED)) != TES__SNAP_LIVE)
                return TES_ERR_FORMAT;
            state[index] |= TES__SNAP_PLACED;
        }
        /* Raw columns are in the payload, framed ones follow here in the
         * meta part. The tables' payloads must add up to the payload size
         * the header states: checked column by column (rows * size fits in
         * 64 bits), so the sum never passes it and cannot wrap. */
        st->data = c->p;
        for (uint32_t k = 0; k < st->type_count; k++) {
            const tes__snap_comp_t *comp = &p->comps[tes__get_u32(st->type + 4 * k)];
            if (tes__snap_in_payload(comp)) {
                uint64_t bytes = (uint64_t)st->rows * comp->info->size;
                if (bytes > p->payload_size - *payload_sum)
                    return TES_ERR_FORMAT;
                st->payload += bytes;
                *payload_sum += bytes;
            } else if (!skip_values(c, comp, st->rows)) {
                return TES_ERR_FORMAT;
            }
        }
    }
    return *payload_sum == p->payload_size ? TES_OK : TES_ERR_FORMAT;
}

static int parse_stores(tes__snap_plan_t *p, tes__cursor_t *c)
{
    p->nstores = tes__cursor_count(c, 12);
    if (c->bad)
        return TES_ERR_FORMAT;
    if (p->nstores && !(p->stores = tes__calloc(p->a, (size_t)p->nstores * sizeof *p->stores)))
        return TES_ERR_NOMEM;
    /* Scratch only when some store needs it (a large load of table
     * components should not clear four bytes per slot for nothing). */
    if (p->nstores && p->entities.count &&
        !(p->stamp = tes__calloc(p->a, (size_t)p->entities.count * 4)))
        return TES_ERR_NOMEM;
    uint8_t *hole = NULL; /* per position: on the tombstone list */
    size_t hole_size = 0;
    int rc = TES_OK;
    for (uint32_t s = 0; s < p->nstores && !rc; s++) {
        tes__snap_store_t *st = &p->stores[s];
        st->comp = tes__cursor_u32(c);
        st->count = tes__cursor_u32(c);
        st->free_head = tes__cursor_u32(c);
        if (c->bad || st->comp >= p->ncomps || (s && st->comp <= p->stores[s - 1].comp) ||
            (uint64_t)st->count * 4 > tes__cursor_left(c) || st->count == 0) {
            rc = TES_ERR_FORMAT;
            break;
        }
        const tes__component_t *info = p->comps[st->comp].info;
        if (info->storage != TES_STORAGE_SPARSE ||
            (!info->stable && st->free_head != TES_NULL_INDEX)) {
            rc = TES_ERR_FORMAT;
            break;
        }
        p->comps[st->comp].used = true;
        st->refs = tes__cursor_take(c, (uint64_t)st->count * 4);
        if (st->count > hole_size) {
            tes__free(p->a, hole, hole_size);
            hole_size = st->count;
            if (!(hole = tes__malloc(p->a, hole_size))) {
                hole_size = 0;
                rc = TES_ERR_NOMEM;
                break;
            }
        }
        memset(hole, 0, st->count);
        uint32_t at = st->free_head, holes = 0;
        while (at != TES_NULL_INDEX && !rc) {
            if (at >= st->count || hole[at])
                rc = TES_ERR_FORMAT;
            else {
                hole[at] = 1;
                holes++;
                at = tes__get_u32(st->refs + 4 * (size_t)at);
            }
        }
        for (uint32_t pos = 0; pos < st->count && !rc; pos++) {
            if (hole[pos])
                continue;
            uint32_t index = tes__get_u32(st->refs + 4 * (size_t)pos);
            if (!live_entity(p, index) || p->stamp[index] == s + 1)
                rc = TES_ERR_FORMAT;
            else {
                p->stamp[index] = s + 1;
                p->state[index] |= TES__SNAP_SPARSE;
            }
        }
        st->live = st->count - holes;
        st->data = c->p;
        if (!rc && !skip_values(c, &p->comps[st->comp], st->live))
            rc = TES_ERR_FORMAT;
    }
    tes__free(p->a, hole, hole_size);
    return rc;
}

static int parse_lifecycle(tes__snap_plan_t *p, tes__cursor_t *c)
{
    int rc = parse_index(p, c, &p->instances, &p->inst_state, TES_NULL_INDEX);
    if (rc)
        return rc;
    if (p->instances.count && p->entities.count &&
        !(p->member_of = tes__calloc(p->a, (size_t)p->entities.count * 4)))
        return TES_ERR_NOMEM;
    p->members = c->p;
    for (uint32_t i = 0; i < p->instances.count; i++) {
        if (p->inst_state[i] != TES__SNAP_LIVE)
            continue;
        uint32_t n = tes__cursor_count(c, 4);
        if (c->bad || n == 0)
            return TES_ERR_FORMAT;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t index = tes__cursor_u32(c);
            if (!live_entity(p, index) || p->member_of[index])
                return TES_ERR_FORMAT;
            p->member_of[index] = i + 1;
        }
    }
    p->nprefabs = tes__cursor_count(c, 8);
    p->prefabs = c->p;
    if (c->bad)
        return TES_ERR_FORMAT;
    for (uint32_t r = 0; r < p->nprefabs; r++) {
        uint32_t n = tes__cursor_count(c, 4);
        if (c->bad || n == 0)
            return TES_ERR_FORMAT;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t index = tes__cursor_u32(c);
            if (!live_entity(p, index) || (p->state[index] & TES__SNAP_PREFAB))
                return TES_ERR_FORMAT;
            p->state[index] |= TES__SNAP_PREFAB;
        }
    }
    p->lifecycle = p->instances.count || p->nprefabs;
    return TES_OK;
}

int tes__snap_parse(tes__snap_plan_t *p, const tes_reader_t *in)
{
    int rc = read_input(p, in);
    if (rc)
        return rc;
    tes__cursor_t c = {p->buf + TES__SNAP_HEADER_SIZE, p->buf + p->body_end, false};
    const tes__entity_index_t *ei = &p->w->entities;
    uint32_t generation_limit = tes__cursor_u32(&c), entity_limit = tes__cursor_u32(&c);
    if (c.bad)
        return TES_ERR_FORMAT;
    /* A well-formed section with other limits or components is the
     * caller's mismatch (INVALID); a malformed one is FORMAT. */
    int mismatch = generation_limit != ei->generation_limit || entity_limit != ei->entity_limit
                       ? tes__fail_detail(p->w, TES_ERR_INVALID, "snapshot limits: generation_limit %u, entity_limit %u; this world has %u and %u", generation_limit, entity_limit, ei->generation_limit, ei->entity_limit)
                       : TES_OK;
    rc = parse_comps(p, &c);
    if (rc == TES_ERR_INVALID && !mismatch)
        mismatch = rc;
    else if (rc)
        return rc;
    if (mismatch)
        return mismatch;
    rc = parse_index(p, &c, &p->entities, &p->state, entity_limit);
    uint64_t payload_sum = 0;
    if (!rc)
        rc = parse_tables(p, &c, &payload_sum);
    if (!rc)
        rc = parse_stores(p, &c);
    if (!rc)
        rc = parse_lifecycle(p, &c);
    if (!rc && (c.bad || c.p != c.end))
        rc = TES_ERR_FORMAT;
    /* Saves list only the components something uses: one byte sequence per
     * world, so a loaded world saves to the bytes it was loaded from. */
    for (uint32_t i = 0; !rc && i < p->ncomps; i++)
        if (!p->comps[i].used)
            rc = TES_ERR_FORMAT;
    return rc;
}

void tes__snap_parse_free(tes__snap_plan_t *p)
{
    tes__alloc_t *a = p->a;
    size_t slots = p->entities.count;
    tes__free(a, p->buf, p->buf_cap);
    tes__free(a, p->comps, (size_t)p->ncomps * sizeof *p->comps);
    tes__free(a, p->state, slots);
    tes__free(a, p->stamp, slots * 4);
    tes__free(a, p->member_of, slots * 4);
    for (uint32_t t = 0; p->tables && t < p->ntables; t++)
        tes__free(a, p->tables[t].block, p->tables[t].block_size);
    tes__free(a, p->tables, (size_t)p->ntables * sizeof *p->tables);
    tes__free(a, p->stores, (size_t)p->nstores * sizeof *p->stores);
    tes__free(a, p->inst_state, p->instances.count);
    p->buf = NULL;
    p->comps = NULL;
    p->state = p->inst_state = NULL;
    p->stamp = p->member_of = NULL;
    p->tables = NULL;
    p->stores = NULL;
}
