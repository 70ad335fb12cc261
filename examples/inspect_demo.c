/*
 * The inspector demo (make inspect): a small star system and fleets of
 * ships, 100k entities by default, moving at 60 frames per second, with
 * the inspector on 127.0.0.1. Open the URL it prints: the page shows the
 * frame time, the systems, the entities (filter them by component), the
 * hierarchy (Sol/Earth/Moon, Fleets/fleet-3/ship-3-7, ...) and lets you
 * edit a ship's values while it flies.
 *
 *   inspect_demo [--entities N] [--port P] [--frames N] [--fps F]
 *                [--bench SECONDS] [--static] [--token T] [--bind ADDR]
 *
 * --frames 0 (the default) runs until interrupted. --static registers the
 * systems but never runs tes_progress (the world only changes through the
 * inspector: the tests use it). --bench runs SECONDS without a client and
 * SECONDS with a client polling the API every 100 ms, and prints the mean
 * frame time (tes_progress + tes_inspector_poll) of each. --token and
 * --bind pass tes_inspector_desc_t's token and bind.
 */
#if defined(__linux__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tessera.h"
#include "tessera_inspect.h"

typedef struct Position { float x, y; } Position;
typedef struct Velocity { float x, y; } Velocity;
typedef struct Health { float hp, max; bool shielded; } Health;
typedef struct Ship { char callsign[24]; uint8_t team; uint32_t cargo; double fuel; } Ship;
typedef struct Orbit { float radius, speed, angle; } Orbit;

TES_MEMBERS(Position, TES_MEMBER(Position, x, TES_TYPE_F32), TES_MEMBER(Position, y, TES_TYPE_F32));
TES_MEMBERS(Velocity, TES_MEMBER(Velocity, x, TES_TYPE_F32), TES_MEMBER(Velocity, y, TES_TYPE_F32));
TES_MEMBERS(Health, TES_MEMBER(Health, hp, TES_TYPE_F32), TES_MEMBER(Health, max, TES_TYPE_F32),
            TES_MEMBER(Health, shielded, TES_TYPE_BOOL));
TES_MEMBERS(Ship, TES_MEMBER(Ship, callsign, TES_TYPE_CHAR), TES_MEMBER(Ship, team, TES_TYPE_U8),
            TES_MEMBER(Ship, cargo, TES_TYPE_U32), TES_MEMBER(Ship, fuel, TES_TYPE_F64));
TES_MEMBERS(Orbit, TES_MEMBER(Orbit, radius, TES_TYPE_F32), TES_MEMBER(Orbit, speed, TES_TYPE_F32),
            TES_MEMBER(Orbit, angle, TES_TYPE_F32));

static tes_comp_t c_pos, c_vel, c_health, c_ship, c_orbit;
static volatile sig_atomic_t stop_now;

static void on_signal(int sig)
{
    (void)sig;
    stop_now = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(tes_world_t *w, const char *what)
{
    fprintf(stderr, "inspect_demo: %s failed: %s\n", what, w ? tes_last_error_detail(w) : "");
    exit(1);
}

/* ---------------------------------------------------------------- systems */

static void move(tes_iter_t *it)
{
    Position *p = tes_field(it, 0);
    const Velocity *v = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        p[i].x += v[i].x * it->delta_time;
        p[i].y += v[i].y * it->delta_time;
        if (p[i].x > 1000 || p[i].x < -1000)
            p[i].x = -p[i].x * 0.99f;
        if (p[i].y > 1000 || p[i].y < -1000)
            p[i].y = -p[i].y * 0.99f;
    }
}

static void regen(tes_iter_t *it)
{
    Health *h = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        if (h[i].hp < h[i].max)
            h[i].hp += 0.5f * it->delta_time;
}

static void orbit(tes_iter_t *it)
{
    Orbit *o = tes_field(it, 0);
    Position *p = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        o[i].angle += o[i].speed * it->delta_time;
        p[i].x = o[i].radius * cosf(o[i].angle);
        p[i].y = o[i].radius * sinf(o[i].angle);
    }
}

/* ------------------------------------------------------------------ world */

static tes_entity_t named(tes_world_t *w, const char *name, tes_entity_t parent)
{
    tes_entity_t e = tes_spawn(w);
    if (!e || tes_set_name(w, e, name) || (parent && tes_set_parent(w, e, parent)))
        die(w, "naming an entity");
    return e;
}

static void body(tes_world_t *w, const char *name, tes_entity_t parent, float radius, float speed)
{
    tes_entity_t e = named(w, name, parent);
    if (tes_set(w, e, c_orbit, &(Orbit){radius, speed, radius}) ||
        tes_set(w, e, c_pos, &(Position){radius, 0}))
        die(w, "tes_set");
}

static void build(tes_world_t *w, int32_t entities)
{
    c_pos = TES_COMPONENT_REFLECTED(w, Position);
    c_vel = TES_COMPONENT_REFLECTED(w, Velocity);
    c_health = TES_COMPONENT_REFLECTED(w, Health);
    c_ship = TES_COMPONENT_REFLECTED(w, Ship);
    c_orbit = TES_COMPONENT_REFLECTED(w, Orbit);
    if (!c_pos || !c_vel || !c_health || !c_ship || !c_orbit)
        die(w, "tes_component");
    tes_entity_t sol = named(w, "Sol", TES_NULL);
    body(w, "Mercury", sol, 58, 4.1f);
    body(w, "Venus", sol, 108, 1.6f);
    body(w, "Earth", sol, 150, 1.0f);
    body(w, "Mars", sol, 228, 0.53f);
    body(w, "Jupiter", sol, 778, 0.08f);
    body(w, "Moon", tes_lookup_path(w, "Sol/Earth"), 4, 13.4f);
    body(w, "Phobos", tes_lookup_path(w, "Sol/Mars"), 2, 30.0f);
    body(w, "Europa", tes_lookup_path(w, "Sol/Jupiter"), 6, 8.0f);
    tes_entity_t fleets = named(w, "Fleets", TES_NULL);
    int32_t per_fleet = 1000;
    int32_t ships = entities > 10 ? entities - 10 : 0;
    int32_t nfleets = (ships + per_fleet) / (per_fleet + 1);
    uint32_t rng = 12345;
    int32_t made = 0;
    for (int32_t f = 0; f < nfleets && made < ships; f++) {
        char name[32];
        snprintf(name, sizeof name, "fleet-%d", (int)f);
        tes_entity_t fleet = named(w, name, fleets);
        made++;
        for (int32_t i = 0; i < per_fleet && made < ships; i++, made++) {
            rng = rng * 1664525u + 1013904223u;
            float a = (float)(rng >> 8) / 16777216.0f;
            rng = rng * 1664525u + 1013904223u;
            float b = (float)(rng >> 8) / 16777216.0f;
            tes_entity_t e = tes_spawn(w);
            Ship s = {{0}, (uint8_t)(f % 4), (uint32_t)(rng % 500), 100.0 * a};
            snprintf(s.callsign, sizeof s.callsign, "ship-%d-%d", (int)f, (int)i);
            if (!e || tes_set(w, e, c_pos, &(Position){a * 2000 - 1000, b * 2000 - 1000}) ||
                tes_set(w, e, c_vel, &(Velocity){b * 20 - 10, a * 20 - 10}) ||
                tes_set(w, e, c_ship, &s) || tes_set_parent(w, e, fleet))
                die(w, "spawning a ship");
            if (i % 3 == 0 && tes_set(w, e, c_health, &(Health){50 + 50 * a, 100, i % 2 == 0}))
                die(w, "tes_set");
            if (i < 8 && tes_set_name(w, e, s.callsign))
                die(w, "tes_set_name");
        }
    }
    tes_system_desc_t sd = {.name = "move", .run = move, .parallel = true};
    sd.query.terms[0] = (tes_term_t){.comp = c_pos, .access = TES_INOUT};
    sd.query.terms[1] = (tes_term_t){.comp = c_vel, .access = TES_IN};
    tes_system_desc_t rd = {.name = "regen", .run = regen};
    rd.query.terms[0] = (tes_term_t){.comp = c_health, .access = TES_INOUT};
    tes_system_desc_t od = {.name = "orbit", .run = orbit};
    od.query.terms[0] = (tes_term_t){.comp = c_orbit, .access = TES_INOUT};
    od.query.terms[1] = (tes_term_t){.comp = c_pos, .access = TES_INOUT};
    if (!tes_system_new(w, &sd) || !tes_system_new(w, &rd) || !tes_system_new(w, &od))
        die(w, "tes_system_new");
}

/* ----------------------------------------------------- the bench's client */

typedef struct client {
    uint16_t port;
    atomic_bool stop;
    atomic_bool active; /* poll only while set */
    atomic_long requests;
} client_t;

/* One GET over a fresh connection; the answer is read and dropped. */
static void get(uint16_t port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        char req[256];
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
        if (write(fd, req, (size_t)n) == n) {
            char buf[65536];
            while (read(fd, buf, sizeof buf) > 0) {
            }
        }
    }
    close(fd);
}

/* What the page's live view asks for: the world's stats and systems,
 * here every 100 ms (the page itself asks every 500 ms). */
static void *client_main(void *arg)
{
    client_t *c = arg;
    while (!atomic_load(&c->stop)) {
        if (atomic_load(&c->active)) {
            get(c->port, "/api/world");
            atomic_fetch_add(&c->requests, 1);
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ------------------------------------------------------------------- main */

static long arg_num(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || n < lo || n > hi) {
        fprintf(stderr, "inspect_demo: %s needs a number from %ld to %ld\n", flag, lo, hi);
        exit(2);
    }
    return n;
}

/* Runs frames at `fps` for `seconds` (or `frames`, or until a signal) and
 * returns the mean work time per frame in ms. */
static double poll_time, poll_answered; /* seconds in polls that answered, requests */

static double run(tes_world_t *w, tes_inspector_t *in, double fps, long frames, double seconds,
                  bool frozen)
{
    double period = 1.0 / fps, start = now_s(), next = start, work = 0;
    long done = 0;
    poll_time = poll_answered = 0;
    while (!stop_now && (frames == 0 || done < frames) &&
           (seconds <= 0 || now_s() - start < seconds)) {
        double t0 = now_s();
        if (!frozen && tes_progress(w, (float)period))
            die(w, "tes_progress");
        double t1 = now_s();
        int answered = tes_inspector_poll(in);
        double t2 = now_s();
        work += t2 - t0;
        if (answered > 0) {
            poll_time += t2 - t1;
            poll_answered += answered;
        }
        done++;
        next += period;
        double wait = next - now_s();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        } else {
            next = now_s();
        }
    }
    return done ? work / (double)done * 1000.0 : 0;
}

int main(int argc, char **argv)
{
    long entities = 100000, port = 0, frames = 0, fps = 60, bench = 0;
    bool frozen = false;
    const char *token = NULL, *bind_addr = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--entities") == 0)
            entities = arg_num(argv[i], v, 0, 10000000), i++;
        else if (strcmp(argv[i], "--port") == 0)
            port = arg_num(argv[i], v, 0, 65535), i++;
        else if (strcmp(argv[i], "--frames") == 0)
            frames = arg_num(argv[i], v, 0, 1000000000), i++;
        else if (strcmp(argv[i], "--fps") == 0)
            fps = arg_num(argv[i], v, 1, 10000), i++;
        else if (strcmp(argv[i], "--bench") == 0)
            bench = arg_num(argv[i], v, 1, 3600), i++;
        else if (strcmp(argv[i], "--token") == 0 && v)
            token = v, i++;
        else if (strcmp(argv[i], "--bind") == 0 && v)
            bind_addr = v, i++;
        else if (strcmp(argv[i], "--static") == 0)
            frozen = true;
        else {
            fprintf(stderr, "usage: inspect_demo [--entities N] [--port P] [--frames N] "
                            "[--fps F] [--bench SECONDS] [--static] [--token T] [--bind ADDR]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    tes_world_t *w = tes_world_new(&(tes_world_desc_t){.threads = 1});
    if (!w)
        die(NULL, "tes_world_new");
    build(w, (int32_t)entities);
    tes_inspector_t *in = tes_inspector_start(
        w, &(tes_inspector_desc_t){.port = (uint16_t)port, .bind = bind_addr, .token = token});
    if (!in)
        return 1;
    printf("inspector: http://%s:%u/%s%s  (%d entities, %ld fps; Ctrl-C stops)\n",
           bind_addr ? bind_addr : "127.0.0.1", (unsigned)tes_inspector_port(in), token ? "?token=" : "",
           token ? token : "", (int)tes_entity_count(w), fps);
    fflush(stdout);
    int rc = 0;
    if (bench) {
        /* One-second blocks, alternately without and with the client, so
         * that a change in the machine's load hits both sides alike. */
        client_t c = {tes_inspector_port(in), false, false, 0};
        pthread_t t;
        pthread_create(&t, NULL, client_main, &c);
        double sum[2] = {0, 0}, polls = 0, answered = 0;
        for (long b = 0; b < 2 * bench && !stop_now; b++) {
            int on = (int)(b % 2);
            atomic_store(&c.active, on == 1);
            sum[on] += run(w, in, (double)fps, fps, 0, frozen);
            polls += poll_time;
            answered += poll_answered;
        }
        atomic_store(&c.active, false);
        atomic_store(&c.stop, true);
        run(w, in, (double)fps, fps / 2, 0, frozen); /* answers its last request */
        pthread_join(t, NULL);
        double quiet = sum[0] / (double)bench, polled = sum[1] / (double)bench;
        printf("bench: %d entities, %ld fps, %ld s each: mean frame %.4f ms without a client, "
               "%.4f ms with a client polling every 100 ms (%ld requests, %.1f us each in "
               "tes_inspector_poll): %+.2f%%\n",
               (int)tes_entity_count(w), fps, bench, quiet, polled, atomic_load(&c.requests),
               answered > 0 ? polls / answered * 1e6 : 0, (polled / quiet - 1.0) * 100.0);
    } else {
        run(w, in, (double)fps, frames, 0, frozen);
    }
    tes_inspector_stop(in);
    tes_world_free(w);
    return rc;
}
