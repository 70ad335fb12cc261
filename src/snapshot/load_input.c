/*
 * What every part of the snapshot loader (see snapshot.h) shares about its
 * input: reading bytes from the caller's reader, counting what arrived,
 * and reporting malformed input as TES_ERR_FORMAT with the byte offset it
 * was found at. The sections (the meta part's parse, the payload, the
 * links and names) all report through here, so none of them calls
 * another.
 */
#include <stdarg.h>
#include <stdio.h>

#include "snapshot/snapshot.h"
#include "world/last_error.h"

int tes__snap_bad(tes__snap_plan_t *p, uint64_t at, const char *fmt, ...)
{
    char what[160];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    return tes__fail_detail(p->w, TES_ERR_FORMAT, "snapshot: %s at byte %llu", what,
                            (unsigned long long)at);
}

int tes__snap_read(tes__snap_plan_t *p, const tes_reader_t *in, void *dst, size_t n,
                   const char *what)
{
    int rc = in->read(dst, n, in->user);
    if (!rc) {
        p->delivered += n;
        return TES_OK;
    }
    rc = rc < 0 ? rc : TES_ERR_IO;
    if (rc == TES_ERR_IO)
        return tes__fail_detail(p->w, rc, "snapshot: the input ends (or the reader failed) at "
                                "byte %llu, reading %zu bytes of %s",
                                (unsigned long long)p->delivered, n, what);
    return tes__fail_detail(p->w, rc, "snapshot: the reader returned %d at byte %llu, reading "
                            "%zu bytes of %s", rc, (unsigned long long)p->delivered, n, what);
}
