/*
 * The Tessera demo: a space battle between two fleets, the blue one on the
 * left and the red one on the right, at 100,000 live entities by default.
 *
 * What it shows:
 * - Prefabs of 3, 6 and 10 entities (fighter, frigate, carrier) whose
 *   members refer to each other through entity members: turrets, shield
 *   generators and missile launchers hold their ship (Mount.ship), the ship
 *   holds its shield generator (ShieldLink). tes_instantiate_n remaps both.
 * - A strict_lifecycle world: ships are spawned with tes_instantiate_n and
 *   die with tes_instance_destroy; tes_destroy of a member is refused.
 * - Table components for the hot data; sparse ones for the Firing tag
 *   (added when a turret fires, removed the next frame) and for the stable
 *   Beacon of each carrier, whose address fleet command holds.
 * - Disabled entities: damaged ships fly home and dock (every member
 *   disabled), repair while parked, and launch again; reinforcement
 *   fighters arrive parked. Queries skip them by default; the hangar query
 *   names TES_DISABLED, and a query with TES_QUERY_INCLUDE_DISABLED counts
 *   every ship.
 * - Systems on all cores: each frame is one tes_progress call over the
 *   systems of demo_systems.c. Per-entity work runs in `parallel` systems
 *   on --threads N threads; deaths, docking, launching, the Firing toggles
 *   and missile spawns/destroys are made in `structural` systems and
 *   applied when each ends.
 * - Determinism: the battle runs on N threads, then again from the same
 *   seed on 1 thread; the two must end in the same state hash (exit 1
 *   otherwise). The median frame times of both and the speed-up are
 *   printed.
 *
 * Every run with the same flags prints the same state (its own PRNG, a fixed
 * seed, a result independent of the thread count); timings are printed
 * apart and --no-timing omits them. The first lines say what the numbers
 * of the per-60-frames lines are, and the first and last lines name the
 * SVG file the final frame is drawn to (--svg).
 */
#define _POSIX_C_SOURCE 200112L /* clock_gettime, sysconf under -std=c11 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"

/* ----------------------------------------------------------------- PRNG */

uint32_t rnd_u32(uint64_t *s)
{
    /* xorshift64*, upper bits. */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return (uint32_t)((x * UINT64_C(2685821657736338717)) >> 32);
}

float rnd_float(uint64_t *s) { return (float)(rnd_u32(s) >> 8) * (1.0f / 16777216.0f); }

static uint64_t seed_state(uint64_t seed)
{
    /* splitmix64, so that neighbouring seeds diverge at once. */
    uint64_t z = seed + UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return z ? z : 1;
}

void die(const sim_t *s, const char *what)
{
    int err = s && s->w ? tes_last_error(s->w) : TES_OK;
    fprintf(stderr, "demo: %s failed (%s)\n", what, tes_strerror(err));
    exit(1);
}

/* ----------------------------------------------------------- fleet command */

static void beacon_on_add(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    command_t *cmd = ctx;
    if (tes_has(w, e, TES_PREFAB)) /* the prefab's own beacon is no carrier */
        return;
    if (cmd->count == cmd->cap) {
        int32_t cap = cmd->cap ? cmd->cap * 2 : 256;
        held_beacon_t *h = realloc(cmd->held, (size_t)cap * sizeof *h);
        if (!h) {
            fprintf(stderr, "demo: out of memory\n");
            exit(1);
        }
        cmd->held = h;
        cmd->cap = cap;
    }
    cmd->held[cmd->count++] = (held_beacon_t){e, ptr};
}

static void beacon_on_remove(tes_world_t *w, tes_entity_t e, void *ptr, void *ctx)
{
    (void)w, (void)ptr;
    command_t *cmd = ctx;
    for (int32_t i = 0; i < cmd->count; i++) {
        if (cmd->held[i].e == e) {
            cmd->held[i] = cmd->held[--cmd->count];
            return;
        }
    }
}

/* ----------------------------------------------------------------- setup */

static void register_components(sim_t *s)
{
    tes_world_t *w = s->w;
    comps_t *c = &s->c;
    /* Every component describes its members (demo.h, TES_MEMBERS), so
     * --json can dump the world; the entity members are what
     * tes_instantiate_n remaps. */
    c->xform = TES_COMPONENT_REFLECTED(w, Transform);
    c->vel = TES_COMPONENT_REFLECTED(w, Velocity);
    c->hull = TES_COMPONENT_REFLECTED(w, Hull);
    c->link = TES_COMPONENT_REFLECTED(w, ShieldLink);
    c->mount = TES_COMPONENT_REFLECTED(w, Mount);
    c->turret = TES_COMPONENT_REFLECTED(w, Turret);
    c->shield = TES_COMPONENT_REFLECTED(w, Shield);
    c->launcher = TES_COMPONENT_REFLECTED(w, Launcher);
    c->missile = TES_COMPONENT_REFLECTED(w, Missile);
    c->beacon = TES_COMPONENT_REFLECTED(w, Beacon, .stable = true,
                                        .hooks = {.on_add = beacon_on_add,
                                                  .on_remove = beacon_on_remove, .ctx = &s->cmd});
    c->firing = tes_component(w, &(tes_component_desc_t){.name = "Firing",
                                                          .storage = TES_STORAGE_SPARSE});
    if (!c->xform || !c->vel || !c->hull || !c->link || !c->mount || !c->turret || !c->shield ||
        !c->launcher || !c->missile || !c->beacon || !c->firing)
        die(s, "component registration");
}

static void set_or_die(sim_t *s, tes_entity_t e, tes_comp_t c, const void *value)
{
    if (tes_set(s->w, e, c, value) != TES_OK)
        die(s, "tes_set");
}

/* A prefab member mounted on `root` at (dx, dy). */
static tes_entity_t add_part(sim_t *s, tes_entity_t root, float dx, float dy)
{
    tes_entity_t e = tes_prefab_child(s->w, root);
    if (!e)
        die(s, "tes_prefab_child");
    set_or_die(s, e, s->c.xform, &(Transform){0, 0, 1, 0});
    set_or_die(s, e, s->c.mount, &(Mount){root, dx, dy});
    return e;
}

static void build_prefab(sim_t *s, int f, int kind)
{
    static const struct {
        float hp, speed, shield, regen;
        int turrets;
        float range, damage, reload;
        int launchers;
    } spec[KINDS] = {
        {40, 4.0f, 0, 0, 2, 55, 1.5f, 14, 0},       /* fighter: 3 entities */
        {140, 2.6f, 80, 0.2f, 4, 70, 2.5f, 18, 0},  /* frigate: 6 entities */
        {420, 1.5f, 220, 0.5f, 6, 85, 3.5f, 16, 2}, /* carrier: 10 entities */
    };
    tes_world_t *w = s->w;
    tes_entity_t root = tes_prefab_new(w);
    if (!root)
        die(s, "tes_prefab_new");
    float dir = f == 0 ? 1.0f : -1.0f;
    set_or_die(s, root, s->c.xform, &(Transform){0, 0, dir, 0});
    set_or_die(s, root, s->c.vel, &(Velocity){0, 0});
    Hull hull = {TES_NULL, spec[kind].hp, spec[kind].hp, spec[kind].speed, 0, (uint8_t)f,
                 (uint8_t)kind, 0, 0};
    set_or_die(s, root, s->c.hull, &hull);
    if (spec[kind].shield > 0) {
        tes_entity_t gen = add_part(s, root, -4, 0);
        set_or_die(s, gen, s->c.shield,
                   &(Shield){spec[kind].shield, spec[kind].shield, spec[kind].regen, 0});
        set_or_die(s, root, s->c.link, &(ShieldLink){gen});
    }
    int nt = spec[kind].turrets;
    float size = 3.0f + 2.5f * (float)kind;
    for (int i = 0; i < nt; i++) {
        float along = size * (1.0f - 2.0f * (float)(i / 2) / (float)(nt > 2 ? nt / 2 - 1 : 1));
        tes_entity_t t = add_part(s, root, nt > 2 ? along : size, (i & 1) ? size : -size);
        Turret tu = {TES_NULL, spec[kind].range, spec[kind].damage, spec[kind].reload,
                     (float)((i * 5) % (int)spec[kind].reload), (uint32_t)f, 0};
        set_or_die(s, t, s->c.turret, &tu);
    }
    for (int i = 0; i < spec[kind].launchers; i++) {
        tes_entity_t l = add_part(s, root, -size, i ? size : -size);
        set_or_die(s, l, s->c.launcher, &(Launcher){90, (float)(i * 45), 320, (uint32_t)f});
    }
    if (kind == KIND_CARRIER)
        set_or_die(s, root, s->c.beacon, &(Beacon){0, 0, f, 0});
    s->prefab[f][kind] = root;
    s->prefab_size[kind] = tes_prefab_members(w, root, NULL, 0);
}

/* n instances of a prefab, placed near the faction's base; parked ones are
 * disabled (every member) and wait in the hangar. */
int spawn_group(sim_t *s, int f, int kind, int32_t n, bool parked)
{
    if (n <= 0)
        return 0;
    tes_world_t *w = s->w;
    if (n > s->inst_cap) {
        tes_instance_t *b = realloc(s->inst_buf, (size_t)n * sizeof *b);
        if (!b)
            die(s, "realloc");
        s->inst_buf = b;
        s->inst_cap = n;
    }
    if (tes_instantiate_n(w, s->prefab[f][kind], n, s->inst_buf) != TES_OK)
        die(s, "tes_instantiate_n");
    float dir = f == 0 ? 1.0f : -1.0f;
    /* Before the first frame the fleets deploy over 40% of the field. */
    float depth = s->frame == 0 && !parked ? 0.4f * s->world_w : 120.0f;
    for (int32_t k = 0; k < n; k++) {
        tes_entity_t mem[MAX_MEMBERS];
        int32_t m = tes_instance_members(w, s->inst_buf[k], mem, MAX_MEMBERS);
        if (m != s->prefab_size[kind])
            die(s, "tes_instance_members");
        float x = s->base_x[f] + dir * rnd_float(&s->rng) * depth;
        float y = 40.0f + rnd_float(&s->rng) * (s->world_h - 80.0f);
        /* Values by tes_set, not through tes_get_mut: inside the reinforce
         * system the instances are queued and get their components when
         * the system ends (the sets are applied after them, in order). */
        Transform t = *(const Transform *)tes_get(w, s->prefab[f][kind], s->c.xform);
        Hull h = *(const Hull *)tes_get(w, s->prefab[f][kind], s->c.hull);
        t.x = x;
        t.y = y;
        h.lane = y;
        set_or_die(s, mem[0], s->c.xform, &t);
        set_or_die(s, mem[0], s->c.hull, &h);
        if (kind == KIND_CARRIER)
            set_or_die(s, mem[0], s->c.beacon, &(Beacon){x, y, f, 0});
        for (int32_t j = 0; parked && j < m; j++)
            if (tes_disable(w, mem[j]) != TES_OK)
                die(s, "tes_disable");
        s->n.fac_ents[f] += m;
        s->n.spawned_entities += m;
    }
    s->n.spawned_instances += n;
    return n;
}

/* Terms by designated initializer: {{comp}} alone trips
 * -Wmissing-field-initializers under -Wextra. */
#define AND(c) {.comp = (c)}
#define IN(c) {.comp = (c), .access = TES_IN}

static void make_queries(sim_t *s)
{
    const comps_t *c = &s->c;
    struct { tes_query_t **q; tes_query_desc_t d; } list[] = {
        {&s->q_ships, {{AND(c->xform), AND(c->vel), AND(c->hull)}, 0}},
        {&s->q_missiles, {{AND(c->xform), AND(c->vel), AND(c->missile)}, 0}},
        {&s->q_firing, {{AND(c->firing)}, 0}},
        {&s->q_carriers, {{IN(c->xform), IN(c->hull), AND(c->beacon)}, 0}},
        /* Naming TES_DISABLED matches parked ships only. */
        {&s->q_parked, {{AND(c->xform), AND(c->hull), AND(TES_DISABLED)}, 0}},
        {&s->q_all_ships, {{AND(c->xform), AND(c->hull)}, TES_QUERY_INCLUDE_DISABLED}},
        {&s->q_beams, {{IN(c->xform), IN(c->turret), AND(c->firing)}, 0}},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (!(*list[i].q = tes_query_new(s->w, &list[i].d)))
            die(s, "tes_query_new");
}

/* ----------------------------------------------------------------- checks */

/* Cross-checks the demo's own bookkeeping against the world; exits nonzero
 * on a mismatch, so the smoke test catches a broken library or demo. */
static void check_world(sim_t *s, int32_t prefab_entities)
{
    tes_world_stats_t st;
    tes_world_stats(s->w, &st);
    int64_t ours = s->n.fac_ents[0] + s->n.fac_ents[1] + s->n.missiles_alive;
    int32_t all = tes_query_count(s->q_all_ships), active = tes_query_count(s->q_ships);
    int32_t parked = tes_query_count(s->q_parked);
    if ((int64_t)st.entities_alive != ours + prefab_entities || all != active + parked ||
        tes_query_count(s->q_missiles) != s->n.missiles_alive ||
        tes_query_count(s->q_carriers) != s->cmd.count) {
        fprintf(stderr, "demo: bookkeeping mismatch at frame %d\n", s->frame);
        exit(1);
    }
    /* The held Beacon addresses must still be the components' addresses. */
    for (int32_t i = 0; i < s->cmd.count; i++) {
        s->cmd.checks++;
        if (tes_get(s->w, s->cmd.held[i].e, s->c.beacon) != s->cmd.held[i].ptr)
            s->cmd.moved++;
    }
    if (s->cmd.moved) {
        fprintf(stderr, "demo: a stable Beacon moved\n");
        exit(1);
    }
}

/* FNV-1a over every ship's handle, position and hull: equal runs, equal hash. */
static uint64_t state_hash(sim_t *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    tes_iter_t it = tes_query_iter(s->q_all_ships);
    while (tes_iter_next(&it)) {
        const Transform *t = tes_field(&it, 0);
        const Hull *hu = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++) {
            int64_t v[4] = {(int64_t)it.entities[i], (int64_t)(t[i].x * 64), (int64_t)(t[i].y * 64),
                            (int64_t)(hu[i].hp * 64)};
            const unsigned char *p = (const unsigned char *)v;
            for (size_t k = 0; k < sizeof v; k++)
                h = (h ^ p[k]) * UINT64_C(1099511628211);
        }
    }
    return h;
}

/* ----------------------------------------------------------------- timing */

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of n values (sorts a copy in scratch). */
static double quantile(const double *v, int32_t n, double *scratch, double q)
{
    if (n <= 0)
        return 0;
    memcpy(scratch, v, (size_t)n * sizeof *v);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
    return scratch[(int32_t)(q * (n - 1) + 0.5)];
}

static const char *const phase_name[PHASES] = {"move", "combat", "spawn", "render"};

/* ------------------------------------------------------------------ main */

typedef struct options {
    int32_t entities, frames;
    uint64_t seed;
    int32_t threads;
    const char *svg;
    const char *json; /* NULL: no JSON dump */
    bool timing;
} options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: demo [--entities N] [--frames N] [--seed N] [--threads N] [--svg PATH]\n"
            "            [--json PATH] [--no-timing]\n"
            "  A space battle on Tessera: two fleets of prefab ships (fighter 3, frigate 6,\n"
            "  carrier 10 entities) fight, dock, repair and get reinforced.\n"
            "  --entities N   live ship entities to keep (default 100000, at least 1000)\n"
            "  --frames N     frames to simulate (default 600)\n"
            "  --seed N       PRNG seed (default 1); equal flags give equal output\n"
            "  --threads N    worker threads (default: the online CPUs); the battle runs\n"
            "                 on N threads, then again on 1, and both must end alike\n"
            "  --svg PATH     picture of the final frame (default tessera_demo.svg)\n"
            "  --json PATH    write the final world as JSON (every entity, its components\n"
            "                 and their members; tes_json_world)\n"
            "  --no-timing    omit the ms figures (output then identical run to run)\n"
            "  --help         this text\n");
}

static bool parse_num(const char *arg, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg ? arg : "", &end, 10);
    if (!arg || errno || *end || end == arg || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, options_t *o)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = cpus < 1 ? 1 : cpus > TES_MAX_THREADS ? TES_MAX_THREADS : cpus;
    *o = (options_t){100000, 600, 1, (int32_t)cpus, "tessera_demo.svg", NULL, true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--no-timing")) {
            o->timing = false;
            continue;
        } else if (!strcmp(a, "--svg") && v) {
            o->svg = v;
        } else if (!strcmp(a, "--json") && v) {
            o->json = v;
        } else if (!strcmp(a, "--entities") && parse_num(v, 1000, 20000000, &n)) {
            o->entities = (int32_t)n;
        } else if (!strcmp(a, "--frames") && parse_num(v, 1, 1000000, &n)) {
            o->frames = (int32_t)n;
        } else if (!strcmp(a, "--threads") && parse_num(v, 1, TES_MAX_THREADS, &n)) {
            o->threads = (int32_t)n;
        } else if (!strcmp(a, "--seed") && parse_num(v, 0, INT64_MAX, &n)) {
            o->seed = (uint64_t)n;
        } else {
            fprintf(stderr, "demo: bad argument '%s'%s\n", a, v ? "" : " (missing value?)");
            usage(stderr);
            return 2;
        }
        i++;
    }
    return 0;
}

/* One line per report: the state now, and the mean phase times over the
 * frames since the previous line. */
static void print_line(sim_t *s, const options_t *o, const double *ms)
{
    tes_world_stats_t st;
    tes_world_stats(s->w, &st);
    printf("frame %5d | ents %7u inst %6u tables %2u | ships %6d parked %5d missiles %5lld | "
           "kills %6lld/%-6lld",
           s->frame, st.entities_alive, st.instances_alive, st.tables,
           tes_query_count(s->q_ships), tes_query_count(s->q_parked),
           (long long)s->n.missiles_alive, (long long)s->n.kills[0], (long long)s->n.kills[1]);
    if (o->timing)
        printf(" | %6.2f ms (move %.2f combat %.2f spawn %.2f render %.2f)",
               ms[PH_MOVE] + ms[PH_COMBAT] + ms[PH_SPAWN] + ms[PH_RENDER], ms[PH_MOVE],
               ms[PH_COMBAT], ms[PH_SPAWN], ms[PH_RENDER]);
    printf("\n");
}

/* Timings of one run: per frame, each phase and the whole frame. */
typedef struct run_times {
    double *ms[PHASES + 1];
} run_times_t;

static void print_summary(sim_t *s, const options_t *o, uint64_t hash)
{
    const counters_t *n = &s->n;
    tes_world_stats_t st;
    tes_world_stats(s->w, &st);
    printf("summary: %d frames, %d ship entities kept (live entities without prefabs: min %lld, "
           "max %lld)\n",
           o->frames, o->entities, (long long)n->min_entities, (long long)n->max_entities);
    printf("  world: %u entities, %u instances alive, %u tables, %u slots, %.1f MiB\n",
           st.entities_alive, st.instances_alive, st.tables, st.entity_slots,
           (double)st.bytes_allocated / 1048576.0);
    printf("  instances: %lld spawned (%lld entities), %lld destroyed; reinforcement waves %lld\n",
           (long long)n->spawned_instances, (long long)n->spawned_entities,
           (long long)n->destroyed_instances, (long long)n->reinforcements);
    for (int f = 0; f < FACTIONS; f++)
        printf("  %s: %lld kills; lost %lld fighters, %lld frigates, %lld carriers\n",
               f ? "red " : "blue", (long long)n->kills[f], (long long)n->lost[f][0],
               (long long)n->lost[f][1], (long long)n->lost[f][2]);
    printf("  combat: %lld shots; the sparse Firing tag added or removed %lld times; %lld "
           "retargets, %lld of them because the target's handle had gone stale; missiles %lld "
           "fired, %lld hit, %lld lost\n",
           (long long)n->shots, (long long)n->firing_toggles, (long long)n->retargets,
           (long long)n->stale_targets, (long long)n->missiles_fired, (long long)n->missiles_hit,
           (long long)n->missiles_lost);
    printf("  hangar: %lld docked, %lld launched; now %d in flight + %d parked = %d ships "
           "(a query with TES_QUERY_INCLUDE_DISABLED counts both)\n",
           (long long)n->docked, (long long)n->launched, tes_query_count(s->q_ships),
           tes_query_count(s->q_parked), tes_query_count(s->q_all_ships));
    printf("  beacons: %d stable Beacon values held by address, checked %lld times, moved %lld "
           "times (stable storage never moves them)\n",
           s->cmd.count, (long long)s->cmd.checks, (long long)s->cmd.moved);
    printf("  state hash %016llx (a digest of every ship; equal runs give equal hashes)\n",
           (unsigned long long)hash);
}

/* One battle on `threads` threads: a fresh world from o->seed, o->frames
 * calls of tes_progress. With `report` it prints the start, a line every
 * 60 frames and the summary, and writes the SVG. Returns the state hash;
 * exits nonzero on any failure. */
/* A tes_writer_t onto a stdio file. */
static int file_write(const void *data, size_t size, void *user)
{
    return fwrite(data, 1, size, user) == size ? TES_OK : TES_ERR_IO;
}

/* Dumps the whole world as JSON (streamed: the memory used does not grow
 * with the world). */
static void write_json(sim_t *s, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "demo: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    tes_writer_t out = {file_write, f};
    int rc = tes_json_world(s->w, &out);
    long bytes = ftell(f);
    if (fclose(f) || rc) {
        fprintf(stderr, "demo: cannot write %s (%s)\n", path, rc ? tes_last_error_detail(s->w) : strerror(errno));
        exit(1);
    }
    printf("json: the final world (%u entities) is in %s (%ld bytes)\n",
           tes_entity_count(s->w) > 0 ? (unsigned)tes_entity_count(s->w) : 0u, path, bytes);
}

static uint64_t battle(const options_t *o, int32_t threads, bool report, run_times_t *times)
{
    sim_t *s = calloc(1, sizeof *s);
    if (!s)
        die(NULL, "calloc");
    s->rng = seed_state(o->seed);
    s->target = o->entities;
    s->threads = threads;
    /* A field sized so the density (and so the work per entity) does not
     * depend on the entity count. */
    float scale = fmaxf(sqrtf((float)o->entities / 100000.0f), 0.3f);
    s->world_w = 2400.0f * scale;
    s->world_h = 1350.0f * scale;
    s->base_x[0] = 60.0f;
    s->base_x[1] = s->world_w - 60.0f;
    s->cap = calloc(1, sizeof *s->cap);
    s->w = tes_world_new(&(tes_world_desc_t){.strict_lifecycle = true, .threads = threads});
    if (!s->w || !s->cap || grid_init(&s->grid, s->world_w, s->world_h, 64.0f))
        die(s, "setup");
    register_components(s);
    /* Work around a library bug (c20b645): when the first prefab call comes
     * before any entity was ever spawned, the per-slot instance array is
     * sized 64 while the slot array then grows to 1024, and creating entity
     * index 64 writes past it. One spawn first keeps the two in step. */
    if (tes_destroy(s->w, tes_spawn(s->w)) != TES_OK)
        die(s, "tes_spawn");
    for (int f = 0; f < FACTIONS; f++)
        for (int k = 0; k < KINDS; k++)
            build_prefab(s, f, k);
    int32_t prefab_entities = 0;
    for (int k = 0; k < KINDS; k++)
        prefab_entities += FACTIONS * s->prefab_size[k];
    make_queries(s);
    add_systems(s);

    /* Initial fleets: per faction, groups of 12 fighters (10% parked), 4
     * frigates and a carrier (70 entities), enough for half the target. */
    int32_t group = 12 * s->prefab_size[KIND_FIGHTER] + 4 * s->prefab_size[KIND_FRIGATE] +
                    s->prefab_size[KIND_CARRIER];
    int32_t g0 = (o->entities / 2 + group - 1) / group;
    for (int f = 0; f < FACTIONS; f++) {
        spawn_group(s, f, KIND_FIGHTER, 12 * g0 - 12 * g0 / 10, false);
        spawn_group(s, f, KIND_FIGHTER, 12 * g0 / 10, true);
        spawn_group(s, f, KIND_FRIGATE, 4 * g0, false);
        spawn_group(s, f, KIND_CARRIER, g0, false);
    }
    /* strict_lifecycle: a member cannot be destroyed on its own. */
    tes_entity_t member[MAX_MEMBERS];
    tes_instance_members(s->w, s->inst_buf[0], member, MAX_MEMBERS);
    int refused = tes_destroy(s->w, member[1]);
    if (refused != TES_ERR_OWNED)
        die(s, "strict lifecycle check");
    if (report) {
        tes_world_stats_t st;
        tes_world_stats(s->w, &st);
        printf("tessera demo: space battle, %d frames, seed %llu, field %.0fx%.0f; the final "
               "frame is drawn to %s\n",
               o->frames, (unsigned long long)o->seed, (double)s->world_w, (double)s->world_h,
               o->svg);
        printf("prefabs: a fighter is %d entities, a frigate %d, a carrier %d (%d prefab "
               "entities for %d factions); ships are prefab instances\n",
               s->prefab_size[0], s->prefab_size[1], s->prefab_size[2], prefab_entities,
               FACTIONS);
        printf("strict lifecycle: tes_destroy of one member of a ship is refused: \"%s\"\n",
               tes_strerror(refused));
        printf("start: %u entities in %u archetype tables; %u ships (instances); fleet command "
               "holds %d carrier Beacons by address (stable storage)\n",
               st.entities_alive, st.tables, st.instances_alive, s->cmd.count);
        printf("every 60 frames: live entities, ship instances, tables | ships flying, "
               "ships parked (disabled), missiles | kills blue/red%s\n",
               o->timing ? " | frame time and its phases" : "");
    }

    s->n.min_entities = INT64_MAX;
    double window[PHASES] = {0};
    int32_t window_frames = 0;
    for (s->frame = 1; s->frame <= o->frames; s->frame++) {
        double start = now_ms();
        int rc = tes_progress(s->w, 1.0f);
        double end = now_ms();
        if (rc != TES_OK) {
            fprintf(stderr, "demo: tes_progress failed (%s)\n", tes_strerror(rc));
            exit(1);
        }
        sum_thread_counters(s);
        int32_t fi = s->frame - 1;
        for (int p = 0; p < PHASES; p++) {
            double until = p + 1 < PHASES ? s->mark_ms[p + 1] : end;
            times->ms[p][fi] = until - s->mark_ms[p];
            window[p] += times->ms[p][fi];
        }
        times->ms[PHASES][fi] = end - start;
        window_frames++;
        int64_t live = s->n.fac_ents[0] + s->n.fac_ents[1] + s->n.missiles_alive;
        s->n.min_entities = live < s->n.min_entities ? live : s->n.min_entities;
        s->n.max_entities = live > s->n.max_entities ? live : s->n.max_entities;
        if (s->frame % 60 == 0 || s->frame == o->frames) {
            check_world(s, prefab_entities);
            for (int p = 0; p < PHASES; p++)
                window[p] /= window_frames;
            if (report)
                print_line(s, o, window);
            memset(window, 0, sizeof window);
            window_frames = 0;
        }
    }
    s->frame = o->frames;
    uint64_t hash = state_hash(s);
    if (report) {
        print_summary(s, o, hash);
        if (write_svg(s, o->svg)) {
            fprintf(stderr, "demo: cannot write %s\n", o->svg);
            exit(1);
        }
        if (o->json)
            write_json(s, o->json);
    }
    tes_world_free(s->w); /* joins the workers; frees the systems and queries */
    grid_free(&s->grid);
    free(s->cmd.held);
    free(s->inst_buf);
    free(s->cap);
    free(s);
    return hash;
}

static void print_timing(const char *label, const run_times_t *t, int32_t frames, double *scratch)
{
    printf("timing: %-10s median %.2f ms/frame (p90 %.2f, max %.2f); phase medians:", label,
           quantile(t->ms[PHASES], frames, scratch, 0.5),
           quantile(t->ms[PHASES], frames, scratch, 0.9),
           quantile(t->ms[PHASES], frames, scratch, 1.0));
    for (int p = 0; p < PHASES; p++)
        printf(" %s %.2f", phase_name[p], quantile(t->ms[p], frames, scratch, 0.5));
    printf("\n");
}

int main(int argc, char **argv)
{
    options_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    run_times_t many, one;
    double *scratch = calloc((size_t)o.frames, sizeof(double));
    for (int p = 0; p <= PHASES; p++) {
        many.ms[p] = calloc((size_t)o.frames, sizeof(double));
        one.ms[p] = calloc((size_t)o.frames, sizeof(double));
        if (!many.ms[p] || !one.ms[p])
            die(NULL, "calloc");
    }
    if (!scratch)
        die(NULL, "calloc");
    /* The battle on N threads, reported; then the same battle on 1 thread,
     * which must end in the same state. */
    uint64_t hash_many = battle(&o, o.threads, true, &many);
    uint64_t hash_one = battle(&o, 1, false, &one);
    bool same = hash_many == hash_one;
    printf("threads: %d threads and 1 thread end in %s state (hash %016llx vs %016llx)\n",
           o.threads, same ? "the same" : "A DIFFERENT", (unsigned long long)hash_many,
           (unsigned long long)hash_one);
    if (o.timing) {
        char label[32];
        snprintf(label, sizeof label, "%d threads:", o.threads);
        print_timing(label, &many, o.frames, scratch);
        print_timing("1 thread:", &one, o.frames, scratch);
        double m1 = quantile(one.ms[PHASES], o.frames, scratch, 0.5);
        double mn = quantile(many.ms[PHASES], o.frames, scratch, 0.5);
        printf("timing: speed-up of %d threads over 1: %.2fx (median frame times)\n", o.threads,
               mn > 0 ? m1 / mn : 0.0);
    }
    printf("svg: the final frame of the battle is drawn in %s (open it in a browser)\n", o.svg);
    for (int p = 0; p <= PHASES; p++) {
        free(many.ms[p]);
        free(one.ms[p]);
    }
    free(scratch);
    if (!same) {
        fprintf(stderr, "demo: the state depends on the thread count\n");
        return 1;
    }
    return 0;
}
