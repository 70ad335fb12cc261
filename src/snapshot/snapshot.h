/*
 * What the snapshot loader's parts share. load_parse.c reads the meta part
 * of the input (everything but the raw table columns) into one buffer,
 * verifies its checksum and validates every field against the target
 * world, recording where each section starts (pointers into the verified
 * buffer) in a tes__snap_plan_t; it allocates only per-slot scratch sized
 * by counts the input has already backed with bytes. load_payload.c then
 * streams the payload (the raw table columns) straight into column blocks
 * laid out for the target tables but owned by the plan, verifying the
 * payload checksum as the bytes arrive. load.c stages everything else the
 * world will hold in fresh allocations, hands the blocks to their tables,
 * fills hooked values (load hooks may fail here: staged values are
 * destroyed again), and commits with code that cannot fail.
 * links_section.c does the same three steps for the links and names;
 * load_input.c is how every part reads the input and reports it
 * malformed.
 */
#ifndef TES_SNAPSHOT_SNAPSHOT_H
#define TES_SNAPSHOT_SNAPSHOT_H

#include "lifecycle/instance.h"
#include "snapshot/format.h"
#include "world/last_error.h"

/* Per-slot parse state bits. */
#define TES__SNAP_LIVE 1u
#define TES__SNAP_FREE 2u
#define TES__SNAP_RETIRED 4u
#define TES__SNAP_PLACED 8u   /* in a snapshot table */
#define TES__SNAP_SPARSE 16u  /* in some sparse store */
#define TES__SNAP_PREFAB 32u  /* in some prefab record */
#define TES__SNAP_LINKED 64u  /* parse scratch: the slot's link is not 0 */

typedef struct tes__snap_comp {
    tes__component_t *info; /* the target world's record */
    bool framed;             /* values go through load hooks */
    bool used;               /* named by a table type or a store */
} tes__snap_comp_t;

typedef struct tes__snap_table {
    const uint8_t *type;     /* type_count u32 snapshot component indices */
    uint32_t type_count;
    uint32_t rows;
    const uint8_t *entities; /* rows u32 entity indices */
    const uint8_t *data;     /* the framed columns, in type order */
    uint64_t payload;        /* bytes of its raw columns in the payload */
    uint8_t *block;          /* the column block the payload was read into */
    size_t block_size;       /* (owned here until its table adopts it) */
    tes__table_t *target;    /* staged: the world's table */
} tes__snap_table_t;

typedef struct tes__snap_store {
    uint32_t comp;           /* snapshot component index */
    uint32_t count;          /* packed positions, tombstones included */
    uint32_t free_head;
    uint32_t live;
    const uint8_t *refs;     /* count u32: entity index or next hole */
    const uint8_t *data;     /* values of live positions */
    tes__sparse_store_t staged;
} tes__snap_store_t;

/* An entity index as saved (entities or instance ids). */
typedef struct tes__snap_index {
    uint32_t count, free_head, free_count, retired;
    const uint8_t *slots;    /* count (generation, link) pairs */
} tes__snap_index_t;

typedef struct tes__snap_plan {
    tes_world_t *w;
    tes__alloc_t *a;
    uint8_t *buf;            /* the header and the meta part */
    size_t buf_cap;
    size_t body_end;         /* where the meta part ends in buf */
    uint64_t meta_sum;       /* the verified meta checksum (seeds the payload's) */
    uint64_t payload_size;   /* as the header states it */
    uint64_t delivered;      /* bytes the reader has delivered so far */
    uint64_t staged;         /* bytes of column blocks allocated for the payload */
    tes__snap_comp_t *comps;
    uint32_t ncomps;
    tes__snap_index_t entities;
    uint8_t *state;          /* per entity slot: TES__SNAP_* */
    uint32_t *stamp;         /* per entity slot: last store that held it + 1 */
    uint32_t *member_of;     /* per entity slot: instance index + 1, 0 none */
    tes__snap_table_t *tables;
    uint32_t ntables;
    tes__snap_store_t *stores;
    uint32_t nstores;
    tes__snap_index_t instances;
    const uint8_t *members;  /* member lists of the live instances */
    uint8_t *inst_state;     /* per instance slot: TES__SNAP_* */
    uint32_t nprefabs;
    const uint8_t *prefabs;  /* member lists of the prefab records */
    bool lifecycle;          /* the snapshot holds instance ids or prefabs */
    uint32_t version;        /* the file's format version (2 or 3) */
    const uint8_t *hier_pairs; /* hierarchy section (version 3): (child, parent) pairs */
    uint32_t hier_npairs;
    const uint8_t *hier_names; /* (entity, length, bytes) records */
    uint32_t hier_nnames;
    uint32_t *parent_of;     /* parse scratch: per entity slot, parent index + 1 */
} tes__snap_plan_t;

/* Records TES_ERR_FORMAT with the detail "snapshot: <what> at byte <at>"
 * (printf format for what) and returns it: every malformed field is
 * reported with the offset in the input where it starts. */
int tes__snap_bad(tes__snap_plan_t *p, uint64_t at, const char *fmt, ...) TES__PRINTF(3, 4);
/* Reads n bytes of `what` from the reader into dst (p->delivered counts
 * them). TES_OK, or the reader's status (a positive one reads as
 * TES_ERR_IO), recorded with the offset and what was being read. */
int tes__snap_read(tes__snap_plan_t *p, const tes_reader_t *in, void *dst, size_t n,
                   const char *what);

/* Reads the header and the meta part, verifies them and validates them
 * against p->w. TES_OK, or TES_ERR_FORMAT / TES_ERR_IO / TES_ERR_INVALID /
 * TES_ERR_NOMEM. */
int tes__snap_parse(tes__snap_plan_t *p, const tes_reader_t *in);
/* Gives every table a column block laid out for exactly its rows
 * (tes__snap_table_t.block), reads the payload that a successful parse
 * described into them and verifies its checksum. TES_OK, or
 * TES_ERR_FORMAT / TES_ERR_IO / TES_ERR_NOMEM; blocks allocated so far stay
 * in the plan (tes__snap_parse_free frees them). */
int tes__snap_read_payload(tes__snap_plan_t *p, const tes_reader_t *in);
/* Frees what parse and read_payload allocated (also after a failure). */
void tes__snap_parse_free(tes__snap_plan_t *p);

/* Details of snapshot calls. The site that finds a failure explains it
 * (tes__fail_detail: what was wrong, with the path and the system error or
 * the byte offset). To tell an explained failure from one a user callback
 * reported with a bare status, a call starts with an empty detail
 * (tes__snap_begin keeps the old one in `before`) and ends with
 * tes__snap_end: a failure keeps the detail recorded during the call or
 * gets `fallback`; a success puts the old detail back unless something
 * recorded a new one meanwhile (a call a callback made and saw refused). */
static inline void tes__snap_begin(tes_world_t *w, tes__detail_t *before)
{
    *before = w->detail;
    w->detail.text[0] = '\0';
}

/* Returns rc, recorded (with its detail) when it is a failure. */
static inline int tes__snap_end(tes_world_t *w, int rc, const tes__detail_t *before,
                                const char *fallback)
{
    if (!rc) {
        if (!w->detail.text[0])
            w->detail = *before;
        return rc;
    }
    if (!w->detail.text[0])
        return tes__fail_detail(w, rc, "%s (%s)", fallback, tes_strerror(rc));
    tes__detail_t keep = w->detail;
    return tes__fail_detail(w, rc, "%s", keep.text);
}

/* The largest single read: small enough that a piece is still in cache
 * when it is hashed. */
#define TES__SNAP_READ_PIECE (256u * 1024u)

/* True when the component's values travel as raw bytes in the payload. */
static inline bool tes__snap_in_payload(const tes__snap_comp_t *comp)
{
    return comp->info->size && !comp->framed;
}

/* Walks one value of a column: the next `size` raw bytes, or one framed
 * value (u32 length + bytes); NULL when the input ends first. */
static inline const uint8_t *tes__snap_value(tes__cursor_t *c, bool framed, uint32_t size,
                                             uint32_t *len)
{
    if (!framed) {
        *len = size;
        return tes__cursor_take(c, size);
    }
    *len = tes__cursor_u32(c);
    return tes__cursor_take(c, *len);
}

/* The hierarchy section (hierarchy.c). Save writes it after the lifecycle
 * section; estimate bounds its size. Parse validates it (version 3 files)
 * and records where it is; stage reserves the world's link pages and map
 * room and copies the names into *names; commit links and names (cannot
 * fail; takes the names); free releases what stage left. */
void tes__snap_save_hierarchy(tes__outbuf_t *o, const tes_world_t *w);
size_t tes__snap_hierarchy_estimate(const tes_world_t *w);
int tes__snap_parse_hierarchy(tes__snap_plan_t *p, tes__cursor_t *c);
int tes__snap_stage_hierarchy(tes__snap_plan_t *p, char ***names);
void tes__snap_commit_hierarchy(tes__snap_plan_t *p, char **names);
void tes__snap_free_hierarchy(tes__snap_plan_t *p, char **names);

#endif
