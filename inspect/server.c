/*
 * The inspector's HTTP side. civetweb's threads accept connections, check
 * them (loopback peer unless allow_remote, Host header, bearer token,
 * method, path and body sizes) and serve the page, which needs no world.
 * An API request is copied into a record on the handler thread's stack and
 * put in a bounded queue; the handler then sleeps until the application's
 * thread answers it in tes_inspector_poll, or 5 seconds pass. The world is
 * only ever read and written by tes_inspector_poll, so the inspector needs
 * no lock around the world and adds nothing to a frame but the poll.
 *
 * Tuned for one person with a browser: a handful of threads, a queue of 64,
 * every buffer bounded, so a flood of connections costs waiting, not
 * memory.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* SCHED_BATCH */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <civetweb.h>

#include "inspect.h"

enum { QUEUED, TAKEN, DONE, DROPPED };

/* A request waiting for the application's thread. Lives on the stack of
 * the handler thread that waits for it. `state` moves QUEUED -> TAKEN
 * under the queue's mutex, then TAKEN -> DONE on the polling thread, which
 * posts `answered` once and never touches the record again; or QUEUED ->
 * DROPPED (timeout, stop), under the mutex. */
typedef struct pending {
    tes__request_t req;
    _Atomic int state;
    sem_t answered;
} pending_t;

struct tes_inspector {
    tes_world_t *w;
    struct mg_context *ctx;
    uint16_t port;
    bool allow_remote;
    char token[256];
    size_t token_len;
    pthread_mutex_t mu; /* guards queue, queued, stopping and QUEUED states */
    pending_t *queue[TES__INSPECT_QUEUE];
    uint32_t queued;
    bool stopping;
    tes__api_t api;
};

/* ------------------------------------------------------------- responses */

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 422: return "Unprocessable Entity";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

static void respond(struct mg_connection *c, int status, const char *type, const char *body,
                 size_t len)
{
    mg_printf(c,
              "HTTP/1.1 %d %s\r\n"
              "Content-Type: %s\r\n"
              "Content-Length: %zu\r\n"
              "Cache-Control: no-store\r\n"
              "X-Content-Type-Options: nosniff\r\n"
              "X-Frame-Options: DENY\r\n"
              "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
              "style-src 'unsafe-inline'; connect-src 'self'; img-src data:\r\n"
              "Connection: close\r\n\r\n",
              status, reason(status), type, len);
    if (len)
        mg_write(c, body, len);
}

/* A JSON error from the server side (no world involved). */
static int refuse(struct mg_connection *c, int status, const char *msg)
{
    char body[256];
    int n = snprintf(body, sizeof body, "{\"error\":\"%s\"}", msg);
    respond(c, status, "application/json", body, n > 0 ? (size_t)n : 0);
    return status;
}

/* ---------------------------------------------------------------- checks */

static bool loopback(const char *addr)
{
    return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 ||
           strncmp(addr, "::ffff:127.", 11) == 0;
}

/* Without allow_remote, the Host header must name this machine, so a web
 * page elsewhere cannot reach the inspector through a DNS name it points
 * at 127.0.0.1 (DNS rebinding). */
static bool host_ok(const char *host)
{
    if (!host)
        return false;
    const char *names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(host, names[i], n) == 0 && (host[n] == '\0' || host[n] == ':'))
            return true;
    }
    return false;
}

/* Compares in time independent of where the strings differ. */
static bool same_secret(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char d = alen != blen;
    for (size_t i = 0; i < blen; i++)
        d |= (unsigned char)(a[i < alen ? i : 0] ^ b[i]);
    return d == 0;
}

static bool token_ok(const tes_inspector_t *in, struct mg_connection *c,
                     const struct mg_request_info *ri)
{
    if (!in->token_len)
        return true;
    const char *auth = mg_get_header(c, "Authorization");
    if (auth && strncmp(auth, "Bearer ", 7) == 0)
        return same_secret(auth + 7, strlen(auth + 7), in->token, in->token_len);
    char given[256];
    if (ri->query_string &&
        mg_get_var(ri->query_string, strlen(ri->query_string), "token", given, sizeof given) >= 0)
        return same_secret(given, strlen(given), in->token, in->token_len);
    return false;
}

/* A path we route (as sent, percent-escapes undecoded): printable ASCII,
 * no "..", no "//", no backslash. */
static bool path_ok(const char *p)
{
    if (p[0] != '/')
        return false;
    for (const char *s = p; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= 0x20 || ch >= 0x7f || ch == '\\')
            return false;
        if (s[0] == '.' && s[1] == '.')
            return false;
        if (s[0] == '/' && s[1] == '/')
            return false;
    }
    return true;
}

/* Reads the body (at most TES__INSPECT_MAX_BODY bytes) into a new buffer.
 * Returns 0, or the status to refuse with. */
static int read_body(struct mg_connection *c, const struct mg_request_info *ri, char **out,
                     size_t *len)
{
    *out = NULL;
    *len = 0;
    if (ri->content_length > (long long)TES__INSPECT_MAX_BODY)
        return 413;
    size_t cap = ri->content_length >= 0 ? (size_t)ri->content_length : TES__INSPECT_MAX_BODY + 1;
    char *buf = malloc(cap + 1);
    if (!buf)
        return 503;
    size_t n = 0;
    while (n < cap) {
        int got = mg_read(c, buf + n, cap - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    if (n > TES__INSPECT_MAX_BODY) {
        free(buf);
        return 413;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* -------------------------------------------------------------- the queue */

/* Queues p and waits for its answer. Returns false if it was not answered
 * (queue full, stopping, or no poll within the timeout); p->req.status then
 * holds the status to refuse with. */
static bool enqueue_and_wait(tes_inspector_t *in, pending_t *p)
{
    pthread_mutex_lock(&in->mu);
    if (in->stopping || in->queued == TES__INSPECT_QUEUE) {
        pthread_mutex_unlock(&in->mu);
        p->req.status = 503;
        return false;
    }
    p->state = QUEUED;
    in->queue[in->queued++] = p;
    pthread_mutex_unlock(&in->mu);
    struct timespec until;
    timespec_get(&until, TIME_UTC);
    until.tv_sec += 5;
    while (sem_timedwait(&p->answered, &until) != 0) {
        if (errno == EINTR)
            continue;
        /* Not polled in time: take it back out of the queue, unless the
         * polling thread has it (then its answer is coming). */
        pthread_mutex_lock(&in->mu);
        bool taken = p->state != QUEUED;
        if (!taken) {
            for (uint32_t i = 0; i < in->queued; i++) {
                if (in->queue[i] == p) {
                    memmove(&in->queue[i], &in->queue[i + 1],
                            (in->queued - i - 1) * sizeof in->queue[0]);
                    in->queued--;
                    break;
                }
            }
            p->state = DROPPED;
        }
        pthread_mutex_unlock(&in->mu);
        if (taken)
            while (sem_wait(&p->answered) != 0) {
            }
        break;
    }
    bool answered = p->state == DONE;
    if (!answered)
        p->req.status = 503;
    return answered;
}

static int handle(struct mg_connection *c, void *cbdata)
{
    tes_inspector_t *in = cbdata;
    const struct mg_request_info *ri = mg_get_request_info(c);
    if (!ri || !ri->request_method || !ri->local_uri_raw)
        return refuse(c, 400, "malformed request");
    if (!in->allow_remote && (!loopback(ri->remote_addr) || !host_ok(mg_get_header(c, "Host"))))
        return refuse(c, 403, "only this machine may connect (see allow_remote)");
    if (!token_ok(in, c, ri))
        return refuse(c, 401, "a valid bearer token is required");
    const char *uri = ri->local_uri_raw;
    if (strlen(uri) >= TES__INSPECT_MAX_PATH)
        return refuse(c, 414, "path too long");
    if (ri->query_string && strlen(ri->query_string) >= TES__INSPECT_MAX_QUERY)
        return refuse(c, 414, "query string too long");
    if (!path_ok(uri))
        return refuse(c, 400, "bad path");
    bool get = strcmp(ri->request_method, "GET") == 0;
    bool put = strcmp(ri->request_method, "PUT") == 0;
    if (!get && !put)
        return refuse(c, 405, "only GET and PUT are served");
    if (strcmp(uri, "/") == 0 || strcmp(uri, "/index.html") == 0) {
        if (!get)
            return refuse(c, 405, "the page is read only");
        respond(c, 200, "text/html; charset=utf-8", (const char *)tes__inspect_page, tes__inspect_page_size);
        return 200;
    }
    if (strncmp(uri, "/api/", 5) != 0)
        return refuse(c, 404, "no such page (the API is under /api/)");
    pending_t p;
    memset(&p, 0, sizeof p);
    sem_init(&p.answered, 0, 0);
    snprintf(p.req.method, sizeof p.req.method, "%s", ri->request_method);
    snprintf(p.req.path, sizeof p.req.path, "%s", uri);
    snprintf(p.req.query, sizeof p.req.query, "%s", ri->query_string ? ri->query_string : "");
    if (put) {
        int st = read_body(c, ri, &p.req.body, &p.req.body_len);
        if (st)
            return refuse(c, st, st == 413 ? "request body over 64 KiB" : "out of memory");
    }
    bool answered = enqueue_and_wait(in, &p);
    sem_destroy(&p.answered);
    free(p.req.body);
    if (!answered) {
        free(p.req.out.data);
        return refuse(c, 503, "the program did not answer (is it calling tes_inspector_poll?)");
    }
    if (p.req.out.failed)
        refuse(c, 500, "out of memory");
    else
        respond(c, p.req.status, "application/json", p.req.out.data, p.req.out.len);
    free(p.req.out.data);
    return p.req.status;
}

/* Server threads are marked as batch work where the system knows the
 * idea (Linux): woken by an answer, they do not preempt the application's
 * thread in the middle of its frame, they run when a core is free or at
 * its next switch. Their share of the CPU stays the same. */
static void *server_thread(const struct mg_context *ctx, int thread_type)
{
    (void)ctx;
    (void)thread_type;
#if defined(__linux__) && defined(SCHED_BATCH)
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
#endif
    return NULL;
}

static int quiet_log(const struct mg_connection *c, const char *msg)
{
    (void)c;
    (void)msg;
    return 1; /* civetweb's own messages are not the program's business */
}

/* ---------------------------------------------------------------- public */

tes_inspector_t *tes_inspector_start(tes_world_t *w, const tes_inspector_desc_t *d)
{
    tes_inspector_desc_t def = {0};
    if (!d)
        d = &def;
    if (!w) {
        fprintf(stderr, "tes_inspector_start: the world is NULL\n");
        return NULL;
    }
    const char *bind = d->bind && d->bind[0] ? d->bind : "127.0.0.1";
    if (strlen(bind) > 64 || strpbrk(bind, ",[]/ ")) {
        fprintf(stderr, "tes_inspector_start: bad bind address '%.64s'\n", bind);
        return NULL;
    }
    if (d->token && strlen(d->token) >= sizeof ((tes_inspector_t *)0)->token) {
        fprintf(stderr, "tes_inspector_start: the token is longer than 255 bytes\n");
        return NULL;
    }
    tes_inspector_t *in = calloc(1, sizeof *in);
    if (!in) {
        fprintf(stderr, "tes_inspector_start: out of memory\n");
        return NULL;
    }
    in->w = w;
    in->api.w = w;
    in->allow_remote = d->allow_remote;
    if (d->token) {
        snprintf(in->token, sizeof in->token, "%s", d->token);
        in->token_len = strlen(in->token);
    }
    pthread_mutex_init(&in->mu, NULL);
    char ports[96];
    snprintf(ports, sizeof ports, strchr(bind, ':') ? "[%s]:%u" : "%s:%u", bind, (unsigned)d->port);
    const char *options[] = {"listening_ports", ports,
                             "num_threads", "8",
                             "request_timeout_ms", "5000",
                             "enable_keep_alive", "no",
                             "max_request_size", "16384",
                             /* The path reaches the routes as sent:
                              * they decode each segment once (an id, a
                              * component name, which may hold an
                              * escaped '/'). Decoded here as well, a
                              * name was decoded twice ("Heal%2574h"
                              * named Health) and "%00" cut the path. */
                             "decode_url", "no",
                             /* Accepted connections wait for a server
                              * thread here (bounded) instead of being
                              * closed unanswered when a burst outruns
                              * the eight threads: a slow machine then
                              * answers late, never by a reset. */
                             "connection_queue", "256",
                             "listen_backlog", "256",
                             NULL};
    struct mg_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.log_message = quiet_log;
    cb.init_thread = server_thread;
    mg_init_library(0);
    in->ctx = mg_start(&cb, in, options);
    if (!in->ctx) {
        fprintf(stderr, "tes_inspector_start: cannot listen on %s (in use, or not an address "
                        "of this machine)\n", ports);
        mg_exit_library();
        pthread_mutex_destroy(&in->mu);
        free(in);
        return NULL;
    }
    mg_set_request_handler(in->ctx, "**", handle, in);
    struct mg_server_port sp[2];
    memset(sp, 0, sizeof sp);
    if (mg_get_server_ports(in->ctx, 2, sp) > 0 && sp[0].port > 0 && sp[0].port < 65536)
        in->port = (uint16_t)sp[0].port;
    return in;
}

uint16_t tes_inspector_port(const tes_inspector_t *in) { return in ? in->port : 0; }

int tes_inspector_poll(tes_inspector_t *in)
{
    if (!in)
        return TES_ERR_INVALID;
    /* A handler holding the mutex (queuing, or giving up on a request) is
     * not waited for: its requests are answered at the next poll, and the
     * frame never blocks on a server thread. */
    if (pthread_mutex_trylock(&in->mu) != 0)
        return 0;
    pending_t *batch[TES__INSPECT_QUEUE];
    uint32_t n = in->queued;
    for (uint32_t i = 0; i < n; i++) {
        batch[i] = in->queue[i];
        batch[i]->state = TAKEN;
    }
    in->queued = 0;
    pthread_mutex_unlock(&in->mu);
    for (uint32_t i = 0; i < n; i++) {
        tes__api_answer(&in->api, &batch[i]->req);
        batch[i]->state = DONE;
        sem_post(&batch[i]->answered); /* the record may be gone after this */
    }
    return (int)n;
}

void tes_inspector_stop(tes_inspector_t *in)
{
    if (!in)
        return;
    pthread_mutex_lock(&in->mu);
    in->stopping = true;
    for (uint32_t i = 0; i < in->queued; i++) {
        in->queue[i]->state = DROPPED;
        sem_post(&in->queue[i]->answered);
    }
    in->queued = 0;
    pthread_mutex_unlock(&in->mu);
    mg_stop(in->ctx);
    mg_exit_library();
    tes__api_fini(&in->api);
    pthread_mutex_destroy(&in->mu);
    free(in);
}
