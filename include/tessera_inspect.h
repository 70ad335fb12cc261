/*
 * tessera_inspect.h — the Tessera inspector: a small web server that shows
 * a running world in a browser (stats, a live frame-time chart, systems,
 * entities, the hierarchy) and edits component values, in three calls:
 *
 *     tes_inspector_t *in = tes_inspector_start(world, NULL);
 *     ... each frame:  tes_progress(world, dt);  tes_inspector_poll(in);
 *     tes_inspector_stop(in);   (before tes_world_free)
 *
 * Then open http://127.0.0.1:<tes_inspector_port(in)>/ in a browser.
 *
 * The server's threads never touch the world: each request waits in a
 * bounded queue until the application calls tes_inspector_poll, which
 * answers every waiting request on the calling thread, between frames.
 * A request not answered within 5 seconds gets 503 (the program is not
 * polling), and so does one that finds the queue full.
 *
 * This is an optional library (libtessera_inspect), built when civetweb
 * and cJSON are installed; the core library does not depend on it.
 *
 * Copyright (c) 2026 The Tessera authors. SPDX-License-Identifier: MIT
 */
#ifndef TESSERA_INSPECT_H
#define TESSERA_INSPECT_H

#include "tessera.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tes_inspector tes_inspector_t;

typedef struct tes_inspector_desc_t {
    /* TCP port; 0 = any free port (read it back with tes_inspector_port). */
    uint16_t port;
    /* Address to listen on; NULL = "127.0.0.1" (this machine only). An
     * IPv6 address is written without brackets ("::1"). */
    const char *bind;
    /* By default a peer that is not a loopback address is refused with 403
     * even when `bind` listens on a public address. Set this to serve other
     * machines; set a token too. */
    bool allow_remote;
    /* Optional. When set, every request must carry it as
     * "Authorization: Bearer <token>" (or, for the page itself,
     * "?token=<token>" in the URL, which the page then sends on). */
    const char *token;
} tes_inspector_desc_t;

/* Starts the server for world w (NULL desc = the defaults above). Returns
 * NULL if w is NULL, the address cannot be bound (port in use, bad
 * address) or memory runs out; a sentence saying why is printed to stderr.
 * The inspector must be stopped before the world is freed. */
TES_API tes_inspector_t *tes_inspector_start(tes_world_t *w, const tes_inspector_desc_t *d);

/* The port the server listens on (0 for NULL). */
TES_API uint16_t tes_inspector_port(const tes_inspector_t *in);

/* Answers every request waiting in the queue, on the calling thread (the
 * only place the inspector reads or writes the world). Call it between
 * frames, never from a system or a hook. Returns how many requests it
 * answered, or TES_ERR_INVALID for NULL. A PUT it answers sets a component
 * value exactly as tes_set does (on_set fires). */
TES_API int tes_inspector_poll(tes_inspector_t *in);

/* Stops the server: waiting requests get 503, its threads are joined and
 * its memory freed. NULL is a no-op. */
TES_API void tes_inspector_stop(tes_inspector_t *in);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_INSPECT_H */
