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
#include "world/last_error.h"

/* The offset in the input of a cursor's position (the buffer holds the
 * input from its first byte). */
static uint64_t at(const tes__snap_plan_t *p, const tes__cursor_t *c)
{
    return (uint64_t)(c->p - p->buf);
}

/* The first read; the buffer then grows fourfold as bytes arrive, so what
 * is allocated stays below four times what the reader delivered plus this. */
#define READ_CHUNK 4096u

/* Reads the header, the meta part and its checksum into p->buf. */
static int read_input(tes__snap_plan_t *p, const tes_reader_t *in)
{
    uint8_t header[TES__SNAP_HEADER_SIZE];
    int rc = tes__snap_read(p, in, header, sizeof header, "the header");
    if (rc)
        return rc;
    if (memcmp(header, TES__SNAP_MAGIC, 8) != 0)
        return tes__snap_bad(p, 0, "bad magic (not a Tessera snapshot)");
    p->version = tes__get_u32(header + 8);
    if (p->version < TES__SNAP_VERSION_MIN || p->version > TES__SNAP_VERSION)
        return tes__snap_bad(p, 8, "version %u (this library reads versions %u to %u)",
                             (unsigned)p->version, TES__SNAP_VERSION_MIN, TES__SNAP_VERSION);
    if (tes__get_u32(header + 12) != 0)
        return tes__snap_bad(p, 12, "flags 0x%x (must be 0)", (unsigned)tes__get_u32(header + 12));
    uint64_t meta = tes__get_u64(header + 16);
    p->payload_size = tes__get_u64(header + 24);
    if (meta > SIZE_MAX / 4)
        return tes__snap_bad(p, 16, "meta part size %llu too large", (unsigned long long)meta);
    if (p->payload_size > SIZE_MAX / 4)
        return tes__snap_bad(p, 24, "payload size %llu too large",
                             (unsigned long long)p->payload_size);
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
        rc = tes__snap_read(p, in, p->buf + got, chunk,
                            got < body_end ? "the meta part" : "the meta checksum");
        if (rc)
            return rc;
        got += chunk;
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
        return tes__snap_bad(p, body_end, "meta checksum mismatch (the header or meta part of "
                             "%llu bytes is corrupted)", (unsigned long long)body_end);
    return TES_OK;
}

/* A count of items of at least min_bytes each: refused (with the detail)
 * when the rest of the meta part cannot hold them. */
static int read_count(tes__snap_plan_t *p, tes__cursor_t *c, uint32_t min_bytes, uint32_t *n,
                      const char *what)
{
    uint64_t count_at = at(p, c);
    size_t left = tes__cursor_left(c);
    *n = tes__cursor_count(c, min_bytes);
    if (!c->bad)
        return TES_OK;
    if (left < 4)
        return tes__snap_bad(p, count_at, "%s: the meta part ends before the count", what);
    return tes__snap_bad(p, count_at, "%s: count %u needs at least %llu bytes, %zu remain", what,
                         (unsigned)tes__get_u32(p->buf + count_at),
                         (unsigned long long)tes__get_u32(p->buf + count_at) * min_bytes,
                         left - 4);
}

static int parse_comps(tes__snap_plan_t *p, tes__cursor_t *c)
{
    int rc = read_count(p, c, 16, &p->ncomps, "components");
    if (rc)
        return rc;
    if (p->ncomps && !(p->comps = tes__calloc(p->a, (size_t)p->ncomps * sizeof *p->comps)))
        return TES_ERR_NOMEM;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    int mismatch = TES_OK; /* reported once the whole section is well-formed */
    for (uint32_t i = 0; i < p->ncomps; i++) {
        uint64_t comp_at = at(p, c);
        uint32_t len = tes__cursor_u32(c);
        if (len == 0 || len > TES__SNAP_MAX_NAME)
            return tes__snap_bad(p, comp_at, "component %u: name length %u (1 to %u)",
                                 (unsigned)i, (unsigned)len, TES__SNAP_MAX_NAME);
        const uint8_t *name = tes__cursor_take(c, len);
        uint32_t size = tes__cursor_u32(c), align = tes__cursor_u32(c);
        const uint8_t *flags = tes__cursor_take(c, 4);
        if (c->bad)
            return tes__snap_bad(p, comp_at, "component %u: record runs past the meta part",
                                 (unsigned)i);
        if (memchr(name, 0, len))
            return tes__snap_bad(p, comp_at + 4, "component %u: name holds a zero byte",
                                 (unsigned)i);
        /* Names strictly ascending (byte order, a prefix first). */
        if (prev) {
            int order = memcmp(prev, name, prev_len < len ? prev_len : len);
            if (order > 0 || (order == 0 && prev_len >= len))
                return tes__snap_bad(p, comp_at + 4, "component %u: names out of order",
                                     (unsigned)i);
        }
        prev = name, prev_len = len;
        if (flags[0] > 1 || flags[1] > 1 || flags[2] > 1 || flags[3] != 0 ||
            (flags[2] && size == 0))
            return tes__snap_bad(p, (uint64_t)(flags - p->buf), "component %u: bad flags",
                                 (unsigned)i);
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
                       uint8_t **state, uint32_t limit, const char *what)
{
    uint64_t index_at = at(p, c);
    ix->count = tes__cursor_u32(c);
    ix->free_head = tes__cursor_u32(c);
    ix->free_count = tes__cursor_u32(c);
    if (c->bad)
        return tes__snap_bad(p, index_at, "%s: the meta part ends in the index header", what);
    if ((uint64_t)ix->count * 8 > tes__cursor_left(c) || ix->count > limit)
        return tes__snap_bad(p, index_at, "%s: slot count %u (needs %llu bytes, %zu remain; "
                             "limit %u)", what, (unsigned)ix->count,
                             (unsigned long long)ix->count * 8, tes__cursor_left(c),
                             (unsigned)limit);
    if (ix->free_count > ix->count)
        return tes__snap_bad(p, index_at + 8, "%s: %u free slots of %u", what,
                             (unsigned)ix->free_count, (unsigned)ix->count);
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
        for (uint32_t i = 0; i < ix->count; i++) {
            uint32_t gen = tes__get_u32(slots + 8 * (size_t)i);
            if (gen != TES_TOMBSTONE && gen - 1 >= gen_limit)
                return tes__snap_bad(p, (uint64_t)(slots + 8 * (size_t)i - p->buf),
                                     "%s: slot %u has generation %u (1 to %u)", what,
                                     (unsigned)i, (unsigned)gen, (unsigned)gen_limit);
        }
    /* The free list: free_count distinct non-retired slots, ending in the
     * null index; every other slot has link 0: the walk must meet every
     * slot with a link (no walked slot is counted twice: a revisit finds
     * it FREE, not LIVE, and is refused). */
    uint32_t slot = ix->free_head, linked_walked = 0;
    for (uint32_t k = 0; k < ix->free_count; k++) {
        if (slot >= ix->count || !((*state)[slot] & TES__SNAP_LIVE))
            return tes__snap_bad(p, index_at + 4, "%s: free list entry %u names slot %u "
                                 "(out of range, retired or already on the list)", what,
                                 (unsigned)k, (unsigned)slot);
        linked_walked += ((*state)[slot] & TES__SNAP_LINKED) != 0;
        (*state)[slot] = TES__SNAP_FREE;
        slot = tes__get_u32(ix->slots + 8 * (size_t)slot + 4);
    }
    if (slot != TES_NULL_INDEX || linked_walked != linked_slots)
        return tes__snap_bad(p, index_at + 4, "%s: the free list is not %u slots long or a slot "
                             "off the list has a link", what, (unsigned)ix->free_count);
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
    int rc = read_count(p, c, 16, &p->ntables, "tables");
    if (rc)
        return rc;
    if (p->ntables && !(p->tables = tes__calloc(p->a, (size_t)p->ntables * sizeof *p->tables)))
        return TES_ERR_NOMEM;
    for (uint32_t t = 0; t < p->ntables; t++) {
        tes__snap_table_t *st = &p->tables[t];
        uint64_t table_at = at(p, c);
        rc = read_count(p, c, 4, &st->type_count, "table type");
        if (rc)
            return rc;
        st->type = tes__cursor_take(c, (uint64_t)st->type_count * 4);
        if (st->type_count == 0 || st->type_count > p->ncomps)
            return tes__snap_bad(p, table_at, "table %u: %u components in its type (1 to %u)",
                                 (unsigned)t, (unsigned)st->type_count, (unsigned)p->ncomps);
        for (uint32_t k = 0; k < st->type_count; k++) {
            uint32_t comp = tes__get_u32(st->type + 4 * k);
            if (comp >= p->ncomps || (k && comp <= tes__get_u32(st->type + 4 * (k - 1))) ||
                p->comps[comp].info->storage != TES_STORAGE_TABLE)
                return tes__snap_bad(p, table_at + 4 + 4 * (uint64_t)k, "table %u: type names "
                                     "component %u (out of range, out of order or not a table "
                                     "component)", (unsigned)t, (unsigned)comp);
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
                return tes__snap_bad(p, table_at, "table %u: tables out of order", (unsigned)t);
        }
        rc = read_count(p, c, 4, &st->rows, "table rows");
        if (rc)
            return rc;
        st->entities = tes__cursor_take(c, (uint64_t)st->rows * 4);
        if (st->rows == 0)
            return tes__snap_bad(p, (uint64_t)(st->entities - p->buf) - 4, "table %u: no rows",
                                 (unsigned)t);
        /* Each row a live entity placed nowhere else (locals: stores into
         * the byte array would otherwise reload everything each row). */
        uint8_t *state = p->state;
        const uint8_t *rows = st->entities;
        for (uint32_t r = 0, n = st->rows, slots = p->entities.count; r < n; r++) {
            uint32_t index = tes__get_u32(rows + 4 * (size_t)r);
            if (index >= slots || (state[index] & (TES__SNAP_LIVE | TES__SNAP_PLACED)) != TES__SNAP_LIVE)
                return tes__snap_bad(p, (uint64_t)(rows + 4 * (size_t)r - p->buf),
                                     "table %u row %u: entity %u is not live or already placed",
                                     (unsigned)t, (unsigned)r, (unsigned)index);
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
                    return tes__snap_bad(p, 24, "payload size %llu: table %u needs more",
                                         (unsigned long long)p->payload_size, (unsigned)t);
                st->payload += bytes;
                *payload_sum += bytes;
            } else if (!skip_values(c, comp, st->rows)) {
                return tes__snap_bad(p, at(p, c), "table %u: values of '%.64s' run past the "
                                     "meta part", (unsigned)t, comp->info->name);
            }
        }
    }
    if (*payload_sum != p->payload_size)
        return tes__snap_bad(p, 24, "payload size %llu, the tables hold %llu",
                             (unsigned long long)p->payload_size,
                             (unsigned long long)*payload_sum);
    return TES_OK;
}

static int parse_stores(tes__snap_plan_t *p, tes__cursor_t *c)
{
    int rc = read_count(p, c, 16, &p->nstores, "sparse stores");
    if (rc)
        return rc;
    if (p->nstores && !(p->stores = tes__calloc(p->a, (size_t)p->nstores * sizeof *p->stores)))
        return TES_ERR_NOMEM;
    /* Scratch only when some store needs it (a large load of table
     * components should not clear four bytes per slot for nothing). */
    if (p->nstores && p->entities.count &&
        !(p->stamp = tes__calloc(p->a, (size_t)p->entities.count * 4)))
        return TES_ERR_NOMEM;
    uint8_t *hole = NULL; /* per position: on the tombstone list */
    size_t hole_size = 0;
    for (uint32_t s = 0; s < p->nstores && !rc; s++) {
        tes__snap_store_t *st = &p->stores[s];
        uint64_t store_at = at(p, c);
        st->comp = tes__cursor_u32(c);
        st->count = tes__cursor_u32(c);
        st->free_head = tes__cursor_u32(c);
        if (c->bad) {
            rc = tes__snap_bad(p, store_at, "store %u: the meta part ends in its header",
                               (unsigned)s);
            break;
        }
        if (st->comp >= p->ncomps || (s && st->comp <= p->stores[s - 1].comp)) {
            rc = tes__snap_bad(p, store_at, "store %u: component %u (out of range or out of "
                               "order)", (unsigned)s, (unsigned)st->comp);
            break;
        }
        if ((uint64_t)st->count * 4 > tes__cursor_left(c) || st->count == 0) {
            rc = tes__snap_bad(p, store_at + 4, "store %u: position count %u (needs %llu bytes, "
                               "%zu remain)", (unsigned)s, (unsigned)st->count,
                               (unsigned long long)st->count * 4, tes__cursor_left(c));
            break;
        }
        const tes__component_t *info = p->comps[st->comp].info;
        if (info->storage != TES_STORAGE_SPARSE ||
            (!info->stable && st->free_head != TES_NULL_INDEX)) {
            rc = tes__snap_bad(p, store_at, "store %u: '%.64s' is not a sparse component, or "
                               "has holes but is not stable", (unsigned)s, info->name);
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
        uint32_t pos_at = st->free_head, holes = 0;
        while (pos_at != TES_NULL_INDEX && !rc) {
            if (pos_at >= st->count || hole[pos_at])
                rc = tes__snap_bad(p, store_at + 8, "store %u: the hole list reaches position "
                                   "%u (out of range or a cycle)", (unsigned)s, (unsigned)pos_at);
            else {
                hole[pos_at] = 1;
                holes++;
                pos_at = tes__get_u32(st->refs + 4 * (size_t)pos_at);
            }
        }
        for (uint32_t pos = 0; pos < st->count && !rc; pos++) {
            if (hole[pos])
                continue;
            uint32_t index = tes__get_u32(st->refs + 4 * (size_t)pos);
            if (!live_entity(p, index) || p->stamp[index] == s + 1)
                rc = tes__snap_bad(p, (uint64_t)(st->refs + 4 * (size_t)pos - p->buf),
                                   "store %u position %u: entity %u is not live or is listed "
                                   "twice", (unsigned)s, (unsigned)pos, (unsigned)index);
            else {
                p->stamp[index] = s + 1;
                p->state[index] |= TES__SNAP_SPARSE;
            }
        }
        st->live = st->count - holes;
        st->data = c->p;
        if (!rc && !skip_values(c, &p->comps[st->comp], st->live))
            rc = tes__snap_bad(p, (uint64_t)(st->data - p->buf), "store %u: %u values of "
                               "'%.64s' run past the meta part", (unsigned)s, (unsigned)st->live,
                               info->name);
    }
    tes__free(p->a, hole, hole_size);
    return rc;
}

static int parse_lifecycle(tes__snap_plan_t *p, tes__cursor_t *c)
{
    int rc = parse_index(p, c, &p->instances, &p->inst_state, TES_NULL_INDEX, "instance ids");
    if (rc)
        return rc;
    if (p->instances.count && p->entities.count &&
        !(p->member_of = tes__calloc(p->a, (size_t)p->entities.count * 4)))
        return TES_ERR_NOMEM;
    p->members = c->p;
    for (uint32_t i = 0; i < p->instances.count; i++) {
        if (p->inst_state[i] != TES__SNAP_LIVE)
            continue;
        uint32_t n;
        rc = read_count(p, c, 4, &n, "instance members");
        if (rc)
            return rc;
        if (n == 0)
            return tes__snap_bad(p, at(p, c) - 4, "instance %u: no members", (unsigned)i);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t index = tes__cursor_u32(c);
            if (!live_entity(p, index) || p->member_of[index])
                return tes__snap_bad(p, at(p, c) - 4, "instance %u member %u: entity %u is not "
                                     "live or in another instance", (unsigned)i, (unsigned)k,
                                     (unsigned)index);
            p->member_of[index] = i + 1;
        }
    }
    p->prefabs = c->p;
    rc = read_count(p, c, 8, &p->nprefabs, "prefab records");
    if (rc)
        return rc;
    for (uint32_t r = 0; r < p->nprefabs; r++) {
        uint32_t n;
        rc = read_count(p, c, 4, &n, "prefab members");
        if (rc)
            return rc;
        if (n == 0)
            return tes__snap_bad(p, at(p, c) - 4, "prefab record %u: no members", (unsigned)r);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t index = tes__cursor_u32(c);
            if (!live_entity(p, index) || (p->state[index] & TES__SNAP_PREFAB))
                return tes__snap_bad(p, at(p, c) - 4, "prefab record %u member %u: entity %u is "
                                     "not live or in another record", (unsigned)r, (unsigned)k,
                                     (unsigned)index);
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
        return tes__snap_bad(p, TES__SNAP_HEADER_SIZE, "the meta part ends before the limits");
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
    rc = parse_index(p, &c, &p->entities, &p->state, entity_limit, "entities");
    uint64_t payload_sum = 0;
    if (!rc)
        rc = parse_tables(p, &c, &payload_sum);
    if (!rc)
        rc = parse_stores(p, &c);
    if (!rc)
        rc = parse_lifecycle(p, &c);
    if (!rc && !c.bad && p->version >= 3)
        rc = tes__snap_parse_hierarchy(p, &c);
    if (!rc && c.bad)
        rc = tes__snap_bad(p, at(p, &c), "the meta part ends inside the lifecycle section");
    else if (!rc && c.p != c.end)
        rc = tes__snap_bad(p, at(p, &c), "%zu bytes after the last section of the meta part",
                           tes__cursor_left(&c));
    /* Saves list only the components something uses: one byte sequence per
     * world, so a loaded world saves to the bytes it was loaded from. */
    for (uint32_t i = 0; !rc && i < p->ncomps; i++)
        if (!p->comps[i].used)
            rc = tes__snap_bad(p, TES__SNAP_HEADER_SIZE + 12, "component '%.64s' is listed but "
                               "nothing uses it", p->comps[i].info->name);
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
    tes__free(a, p->parent_of, slots * 4);
    p->parent_of = NULL;
    p->buf = NULL;
    p->comps = NULL;
    p->state = p->inst_state = NULL;
    p->stamp = p->member_of = NULL;
    p->tables = NULL;
    p->stores = NULL;
}
