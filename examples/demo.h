/*
 * demo.h — state shared by the files of the space-battle demo: the
 * components, the simulation record and the functions each file provides.
 * demo.c has the overview and runs the battle on 1 and on N threads;
 * demo_systems.c registers the per-frame systems tes_progress runs;
 * demo_svg.c the render capture and the SVG writer.
 */
#ifndef TES_DEMO_H
#define TES_DEMO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tessera.h"

enum { FACTIONS = 2, KINDS = 3, MAX_MEMBERS = 10 };
enum { KIND_FIGHTER, KIND_FRIGATE, KIND_CARRIER };

/* ----------------------------------------------------------- components */

/* Every ship part has one: position and heading (cosine, sine). */
typedef struct { float x, y, c, s; } Transform;
TES_MEMBERS(Transform, TES_MEMBER(Transform, x, TES_TYPE_F32), TES_MEMBER(Transform, y, TES_TYPE_F32),
            TES_MEMBER(Transform, c, TES_TYPE_F32), TES_MEMBER(Transform, s, TES_TYPE_F32));
typedef struct { float x, y; } Velocity;
TES_MEMBERS(Velocity, TES_MEMBER(Velocity, x, TES_TYPE_F32), TES_MEMBER(Velocity, y, TES_TYPE_F32));
/* A ship (the root of an instance); chase is an enemy ship it flies at.
 * Entity members (TES_TYPE_ENTITY) are what instantiation remaps: here
 * chase, ShieldLink.generator, Mount.ship, Turret.target, Missile.target. */
typedef struct {
    tes_entity_t chase;
    float hp, max_hp, speed, lane;
    uint8_t faction, kind, retreating, engaged;
} Hull;
TES_MEMBERS(Hull, TES_MEMBER(Hull, chase, TES_TYPE_ENTITY), TES_MEMBER(Hull, hp, TES_TYPE_F32),
            TES_MEMBER(Hull, max_hp, TES_TYPE_F32), TES_MEMBER(Hull, speed, TES_TYPE_F32),
            TES_MEMBER(Hull, lane, TES_TYPE_F32), TES_MEMBER(Hull, faction, TES_TYPE_U8),
            TES_MEMBER(Hull, kind, TES_TYPE_U8), TES_MEMBER(Hull, retreating, TES_TYPE_U8),
            TES_MEMBER(Hull, engaged, TES_TYPE_U8));
/* Root -> its shield generator (a member of the same instance). */
typedef struct { tes_entity_t generator; } ShieldLink;
TES_MEMBERS(ShieldLink, TES_MEMBER(ShieldLink, generator, TES_TYPE_ENTITY));
/* Member -> its ship (the root of the same instance), at an offset. */
typedef struct { tes_entity_t ship; float dx, dy; } Mount;
TES_MEMBERS(Mount, TES_MEMBER(Mount, ship, TES_TYPE_ENTITY), TES_MEMBER(Mount, dx, TES_TYPE_F32),
            TES_MEMBER(Mount, dy, TES_TYPE_F32));
/* A gun: the target is an enemy ship, not a prefab member. `fire` is set
 * by the parallel aim system and consumed by the structural fire system. */
typedef struct {
    tes_entity_t target;
    float range, damage, reload, cooldown;
    uint32_t faction, fire;
} Turret;
TES_MEMBERS(Turret, TES_MEMBER(Turret, target, TES_TYPE_ENTITY), TES_MEMBER(Turret, range, TES_TYPE_F32),
            TES_MEMBER(Turret, damage, TES_TYPE_F32), TES_MEMBER(Turret, reload, TES_TYPE_F32),
            TES_MEMBER(Turret, cooldown, TES_TYPE_F32), TES_MEMBER(Turret, faction, TES_TYPE_U32),
            TES_MEMBER(Turret, fire, TES_TYPE_U32));
typedef struct { float strength, max, regen, pad; } Shield;
TES_MEMBERS(Shield, TES_MEMBER(Shield, strength, TES_TYPE_F32), TES_MEMBER(Shield, max, TES_TYPE_F32),
            TES_MEMBER(Shield, regen, TES_TYPE_F32));
typedef struct { float reload, cooldown, range; uint32_t faction; } Launcher;
TES_MEMBERS(Launcher, TES_MEMBER(Launcher, reload, TES_TYPE_F32),
            TES_MEMBER(Launcher, cooldown, TES_TYPE_F32), TES_MEMBER(Launcher, range, TES_TYPE_F32),
            TES_MEMBER(Launcher, faction, TES_TYPE_U32));
/* A missile is a plain entity (no instance), so it may be destroyed alone.
 * `fate` is decided by the parallel flight system, acted on by a structural
 * one (see demo_systems.c). */
enum { MISSILE_FLYING, MISSILE_HIT, MISSILE_LOST };
typedef struct { tes_entity_t target; float ttl, damage; uint32_t faction, fate; } Missile;
TES_MEMBERS(Missile, TES_MEMBER(Missile, target, TES_TYPE_ENTITY), TES_MEMBER(Missile, ttl, TES_TYPE_F32),
            TES_MEMBER(Missile, damage, TES_TYPE_F32), TES_MEMBER(Missile, faction, TES_TYPE_U32),
            TES_MEMBER(Missile, fate, TES_TYPE_U32));
/* Carrier beacon: stable storage; fleet command keeps its address. */
typedef struct { float x, y; int32_t faction, missiles; } Beacon;
TES_MEMBERS(Beacon, TES_MEMBER(Beacon, x, TES_TYPE_F32), TES_MEMBER(Beacon, y, TES_TYPE_F32),
            TES_MEMBER(Beacon, faction, TES_TYPE_I32), TES_MEMBER(Beacon, missiles, TES_TYPE_I32));

typedef struct comps {
    tes_comp_t xform, vel, hull, link, mount, turret, shield, launcher, missile;
    tes_comp_t beacon; /* sparse, stable */
    tes_comp_t firing; /* sparse tag, toggled every time a turret fires */
} comps_t;

/* ----------------------------------------------------------- simulation */

/* Spatial hash of the active ships of each faction, rebuilt every frame. */
typedef struct grid_item { float x, y; tes_entity_t e; } grid_item_t;
typedef struct grid {
    float cell;
    int32_t cols, rows;
    int32_t *start[FACTIONS]; /* cols*rows + 1 offsets into items */
    grid_item_t *items[FACTIONS];
    int32_t count[FACTIONS], cap;
    grid_item_t *raw;         /* unsorted items of the current build */
    int32_t *cell_of;
} grid_t;

/* Fleet command holds the address of every carrier's Beacon (registered
 * by the on_add hook, dropped by on_remove) and reads it every frame. */
typedef struct held_beacon { tes_entity_t e; Beacon *ptr; } held_beacon_t;
typedef struct command {
    held_beacon_t *held;
    int32_t count, cap;
    float rally_y[FACTIONS];
    int64_t checks, moved;
} command_t;

/* Deterministic counters: the same for every run with the same flags. */
typedef struct counters {
    int64_t kills[FACTIONS];     /* ships destroyed BY faction f */
    int64_t lost[FACTIONS][KINDS];
    int64_t spawned_instances, destroyed_instances, spawned_entities;
    int64_t shots, firing_toggles, stale_targets, retargets;
    int64_t missiles_fired, missiles_hit, missiles_lost;
    int64_t docked, launched, reinforcements;
    int64_t fac_ents[FACTIONS];  /* live ship entities (members) per faction */
    int64_t pending[FACTIONS][KINDS]; /* losses not yet replaced */
    int64_t missiles_alive;
    int64_t min_entities, max_entities;
} counters_t;

/* What the render phase captured; the last frame goes to the SVG. */
typedef struct sprite { float x, y, c, s; uint8_t faction, kind, parked, pad; } sprite_t;
typedef struct beam { float x0, y0, x1, y1; uint8_t faction; } beam_t;
enum { HEAT_W = 96, HEAT_H = 54, MAX_SPRITES = 2400, MAX_BEAMS = 1200, MAX_DOTS = 800 };
typedef struct frame_capture {
    uint16_t heat[FACTIONS][HEAT_H][HEAT_W];
    sprite_t sprites[MAX_SPRITES];
    beam_t beams[MAX_BEAMS];
    sprite_t dots[MAX_DOTS]; /* missiles */
    int32_t sprite_count, beam_count, dot_count;
    int32_t ships, parked, missiles, firing;
} frame_capture_t;

/* The phases of a frame, timed by a structural marker system at the start
 * of each (a barrier, so the marks split the frame exactly). */
enum { PH_MOVE, PH_COMBAT, PH_SPAWN, PH_RENDER, PHASES };
struct sim;
typedef struct phase_mark { struct sim *s; int32_t phase; } phase_mark_t;

/* Counters bumped by parallel systems: one padded row per thread, summed
 * after the frame (integer sums: the total is the same in any order). */
enum { PT_STALE, PT_RETARGETS, PT_COUNTERS = 8 };

typedef struct sim {
    tes_world_t *w;
    int32_t threads;
    comps_t c;
    tes_query_t *q_ships;    /* Transform, Velocity, Hull (active) */
    tes_query_t *q_missiles; /* Transform, Velocity, Missile */
    tes_query_t *q_firing;   /* Firing (sparse tag) */
    tes_query_t *q_carriers; /* Transform, Hull, Beacon (table + stable sparse) */
    tes_query_t *q_parked;   /* Transform, Hull, TES_DISABLED: parked only */
    tes_query_t *q_all_ships;/* Hull, INCLUDE_DISABLED: active and parked */
    tes_query_t *q_beams;    /* Transform, Turret, Firing */
    tes_entity_t prefab[FACTIONS][KINDS];
    int32_t prefab_size[KINDS];
    uint64_t rng;
    int32_t frame, target;
    float world_w, world_h, base_x[FACTIONS];
    int32_t launch_budget[FACTIONS];
    grid_t grid;
    command_t cmd;
    counters_t n;
    tes_instance_t *inst_buf;
    int32_t inst_cap;
    frame_capture_t *cap;
    phase_mark_t marks[PHASES];
    double mark_ms[PHASES];
    int64_t per_thread[TES_MAX_THREADS][PT_COUNTERS];
} sim_t;

/* demo.c */
uint32_t rnd_u32(uint64_t *s);
float rnd_float(uint64_t *s); /* [0, 1) */
void die(const sim_t *s, const char *what);
int spawn_group(sim_t *s, int faction, int kind, int32_t n, bool parked);

double now_ms(void);

/* demo_systems.c: registers every system of a frame, in run order. */
void add_systems(sim_t *s);
/* Adds the per-thread counters into s->n and zeroes them. */
void sum_thread_counters(sim_t *s);
int grid_init(grid_t *g, float world_w, float world_h, float cell);
void grid_free(grid_t *g);

/* demo_svg.c */
void phase_render(sim_t *s);
int write_svg(const sim_t *s, const char *path);

#endif /* TES_DEMO_H */
