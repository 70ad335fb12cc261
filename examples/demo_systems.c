/*
 * demo_systems.c — the per-frame systems of the space-battle demo, which
 * tes_progress runs once per frame, in four phases:
 * - move:   a spatial grid of the active ships is built, ships steer and
 *           fly (damaged ones fly home and dock), mounted parts follow
 *           their ship, missiles home in (and die);
 * - combat: the Firing tags of the last frame go, turrets aim (while
 *           beacons follow their carriers and shields recharge, at the
 *           same time), turrets fire, launchers spawn missiles;
 * - spawn:  dead ships' instances are destroyed, the hangar repairs and
 *           launches parked ships, reinforcements replace the losses,
 *           fleet command reads the carrier beacons;
 * - render: the frame is captured for the picture (demo_svg.c).
 *
 * The per-entity work (steer, fly, mounts, missile flight, aim, shields) is
 * in `parallel` systems whose terms declare what they read (TES_IN) and
 * write, so the scheduler splits them over the threads and lets
 * non-conflicting ones overlap. Such a system reads other entities only
 * through components it declares, and no system running beside it writes
 * those (a TES_IN term guarantees that), so its reads never race. What a
 * parallel system cannot do — structural changes, damage to another ship,
 * shared counters — it leaves as a mark on its own rows (Turret.fire,
 * Missile.fate) for a `structural` system that runs alone and acts on the
 * marks in iteration order; the few shared counters of parallel systems are
 * per-thread. The result is the same for every thread count, bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* ------------------------------------------------------------------ grid */

int grid_init(grid_t *g, float world_w, float world_h, float cell)
{
    memset(g, 0, sizeof *g);
    g->cell = cell;
    g->cols = (int32_t)(world_w / cell) + 1;
    g->rows = (int32_t)(world_h / cell) + 1;
    for (int f = 0; f < FACTIONS; f++)
        if (!(g->start[f] = calloc((size_t)(g->cols * g->rows + 1), sizeof(int32_t))))
            return -1;
    return 0;
}

void grid_free(grid_t *g)
{
    for (int f = 0; f < FACTIONS; f++) {
        free(g->start[f]);
        free(g->items[f]);
    }
    free(g->raw);
    free(g->cell_of);
}

static int32_t grid_cell(const grid_t *g, float x, float y)
{
    int32_t cx = (int32_t)(x / g->cell), cy = (int32_t)(y / g->cell);
    cx = cx < 0 ? 0 : cx >= g->cols ? g->cols - 1 : cx;
    cy = cy < 0 ? 0 : cy >= g->rows ? g->rows - 1 : cy;
    return cy * g->cols + cx;
}

/* Bins every active ship by faction and cell (a counting sort). */
static void grid_build(sim_t *s)
{
    grid_t *g = &s->grid;
    int32_t total = tes_query_count(s->q_ships);
    if (total > g->cap) {
        int32_t cap = total + total / 4;
        g->raw = realloc(g->raw, (size_t)cap * sizeof *g->raw);
        g->cell_of = realloc(g->cell_of, (size_t)cap * sizeof *g->cell_of);
        for (int f = 0; f < FACTIONS; f++)
            g->items[f] = realloc(g->items[f], (size_t)cap * sizeof *g->items[f]);
        if (!g->raw || !g->cell_of || !g->items[0] || !g->items[1])
            die(s, "grid allocation");
        g->cap = cap;
    }
    int32_t ncells = g->cols * g->rows, n = 0;
    for (int f = 0; f < FACTIONS; f++)
        memset(g->start[f], 0, (size_t)(ncells + 1) * sizeof(int32_t));
    /* Faction in the top bit of cell_of: one pass over the ships. */
    tes_iter_t it = tes_query_iter(s->q_ships);
    while (tes_iter_next(&it)) {
        const Transform *t = tes_field(&it, 0);
        const Hull *h = tes_field(&it, 2);
        for (int32_t i = 0; i < it.count && n < g->cap; i++, n++) {
            int32_t cell = grid_cell(g, t[i].x, t[i].y);
            g->raw[n] = (grid_item_t){t[i].x, t[i].y, it.entities[i]};
            g->cell_of[n] = cell | (h[i].faction ? INT32_MIN : 0);
            g->start[h[i].faction][cell + 1]++;
        }
    }
    for (int f = 0; f < FACTIONS; f++) {
        for (int32_t c = 0; c < ncells; c++)
            g->start[f][c + 1] += g->start[f][c];
        g->count[f] = g->start[f][ncells];
    }
    int32_t *fill[FACTIONS] = {g->start[0], g->start[1]};
    for (int32_t i = 0; i < n; i++) {
        int f = g->cell_of[i] < 0;
        int32_t cell = g->cell_of[i] & INT32_MAX;
        /* start[f][cell] is used as the write cursor, then restored. */
        g->items[f][fill[f][cell]++] = g->raw[i];
    }
    for (int f = 0; f < FACTIONS; f++) {
        for (int32_t c = ncells; c > 0; c--)
            g->start[f][c] = g->start[f][c - 1];
        g->start[f][0] = 0;
    }
}

/* Looks at the ships of faction f in one cell (if it exists); keeps the
 * nearest within *best_d2. */
static void scan_cell(const grid_t *g, int f, int32_t cx, int32_t cy, float x, float y,
                      const grid_item_t **best, float *best_d2, int32_t *checked)
{
    if (cx < 0 || cy < 0 || cx >= g->cols || cy >= g->rows)
        return;
    int32_t cell = cy * g->cols + cx;
    for (int32_t k = g->start[f][cell]; k < g->start[f][cell + 1]; k++) {
        const grid_item_t *it = &g->items[f][k];
        float dx = it->x - x, dy = it->y - y, d2 = dx * dx + dy * dy;
        if (d2 <= *best_d2) {
            *best_d2 = d2;
            *best = it;
        }
    }
    *checked += g->start[f][cell + 1] - g->start[f][cell];
}

/* The nearest ship of faction f within range of (x, y), NULL if none.
 * Rings of cells outward from (x, y)'s cell, stopping once no farther ring
 * can hold anything nearer, or after about max_check candidates. */
static const grid_item_t *grid_nearest(const grid_t *g, int f, float x, float y, float range,
                                       int32_t max_check)
{
    int32_t c = grid_cell(g, x, y), cx = c % g->cols, cy = c / g->cols;
    int32_t rings = (int32_t)(range / g->cell) + 1, checked = 0;
    const grid_item_t *best = NULL;
    float best_d2 = range * range;
    for (int32_t r = 0; r <= rings && checked < max_check; r++) {
        float near = (float)(r - 1) * g->cell; /* ring r is at least this far */
        if (r > 1 && near * near > best_d2)
            break;
        if (r == 0) {
            scan_cell(g, f, cx, cy, x, y, &best, &best_d2, &checked);
            continue;
        }
        for (int32_t i = -r; i <= r; i++) {
            scan_cell(g, f, cx + i, cy - r, x, y, &best, &best_d2, &checked);
            scan_cell(g, f, cx + i, cy + r, x, y, &best, &best_d2, &checked);
        }
        for (int32_t i = -r + 1; i < r; i++) {
            scan_cell(g, f, cx - r, cy + i, x, y, &best, &best_d2, &checked);
            scan_cell(g, f, cx + r, cy + i, x, y, &best, &best_d2, &checked);
        }
    }
    return best;
}

/* ------------------------------------------------------------------ helpers */

/* Damage to a ship: its shield generator (a member, reached through the
 * ShieldLink the prefab remapped) absorbs what it can. Only from structural
 * systems: it writes Hull and Shield of other entities. */
static void damage(sim_t *s, tes_entity_t ship, float amount)
{
    tes_world_t *w = s->w;
    Hull *h = tes_get_mut(w, ship, s->c.hull);
    if (!h)
        return;
    const ShieldLink *link = tes_get(w, ship, s->c.link);
    Shield *sh = link ? tes_get_mut(w, link->generator, s->c.shield) : NULL;
    if (sh && sh->strength > 0) {
        float absorbed = sh->strength < amount ? sh->strength : amount;
        sh->strength -= absorbed;
        amount -= absorbed;
    }
    h->hp -= amount;
}

/* Disables or enables every member of root's instance (queued: only from
 * structural systems). */
static void toggle_instance(sim_t *s, tes_entity_t root, bool enable)
{
    tes_entity_t mem[MAX_MEMBERS];
    int32_t m = tes_instance_members(s->w, tes_instance_of(s->w, root), mem, MAX_MEMBERS);
    for (int32_t j = 0; j < m && j < MAX_MEMBERS; j++)
        if ((enable ? tes_enable(s->w, mem[j]) : tes_disable(s->w, mem[j])) != TES_OK)
            die(s, enable ? "tes_enable" : "tes_disable");
}

static bool target_ok(const sim_t *s, tes_entity_t target, const Transform *tt)
{
    return tt && !tes_has(s->w, target, TES_DISABLED);
}

void sum_thread_counters(sim_t *s)
{
    for (int32_t t = 0; t < TES_MAX_THREADS; t++) {
        s->n.stale_targets += s->per_thread[t][PT_STALE];
        s->n.retargets += s->per_thread[t][PT_RETARGETS];
        memset(s->per_thread[t], 0, sizeof s->per_thread[t]);
    }
}

/* Structural, no terms: notes when a phase starts. */
static void mark_phase(tes_iter_t *it)
{
    phase_mark_t *m = it->ctx;
    m->s->mark_ms[m->phase] = now_ms();
}

/* ------------------------------------------------------------------ move */

/* Structural, no terms: the grid is built once, before anything moves. */
static void build_grid(tes_iter_t *it) { grid_build(it->ctx); }

/* Parallel; Transform IN, Velocity and Hull INOUT. Every ship steers by the
 * positions at the start of the frame: the chased ship's Transform is read
 * through tes_get, safe because nothing writes Transform while this runs. */
static void steer(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    const Transform *t = tes_field(it, 0);
    Velocity *v = tes_field(it, 1);
    Hull *h = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++) {
        int f = h[i].faction;
        float gx = s->base_x[1 - f], gy = 0.75f * h[i].lane + 0.25f * s->cmd.rally_y[f];
        float speed = h[i].speed, hold = 0;
        if (h[i].retreating) {
            gx = s->base_x[f];
            gy = h[i].lane;
            speed *= 2.0f;
        } else {
            /* Now and then, look for an enemy nearby. */
            if (((tes_entity_index(it->entities[i]) + (uint32_t)s->frame) & 7) == 0) {
                const grid_item_t *g = grid_nearest(&s->grid, 1 - f, t[i].x, t[i].y, 240, 48);
                h[i].chase = g ? g->e : TES_NULL;
            }
            const Transform *ct = h[i].chase ? tes_get(s->w, h[i].chase, s->c.xform) : NULL;
            if (target_ok(s, h[i].chase, ct)) {
                gx = ct->x;
                gy = ct->y;
                hold = h[i].kind == KIND_CARRIER ? 200.0f : 30.0f + 20.0f * h[i].kind;
            } else {
                h[i].chase = TES_NULL;
            }
            if (h[i].engaged) {
                speed *= 0.25f;
                h[i].engaged--;
            }
        }
        float dx = gx - t[i].x, dy = gy - t[i].y, d = sqrtf(dx * dx + dy * dy) + 1e-3f;
        float ux = dx / d, uy = dy / d;
        if (d < hold) {
            /* In range: circle the target, one way or the other. */
            float side = (tes_entity_index(it->entities[i]) & 1) ? 1.0f : -1.0f;
            float in = d < 0.6f * hold ? -0.5f : 0.2f;
            float px = -uy * side, py = ux * side;
            ux = px + ux * in;
            uy = py + uy * in;
        }
        v[i].x += (ux * speed - v[i].x) * 0.08f;
        v[i].y += (uy * speed - v[i].y) * 0.08f;
    }
}

/* Parallel; Transform INOUT, Velocity IN, Hull NOACCESS (ships only). */
static void fly(tes_iter_t *it)
{
    const sim_t *s = it->ctx;
    Transform *t = tes_field(it, 0);
    const Velocity *v = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        t[i].x = fminf(fmaxf(t[i].x + v[i].x, 0.0f), s->world_w);
        t[i].y = fminf(fmaxf(t[i].y + v[i].y, 0.0f), s->world_h);
        float sp2 = v[i].x * v[i].x + v[i].y * v[i].y;
        if (sp2 > 1e-4f) {
            float inv = 1.0f / sqrtf(sp2);
            t[i].c = v[i].x * inv;
            t[i].s = v[i].y * inv;
        }
    }
}

/* Structural; retreating ships that reached their base dock: the whole
 * instance is disabled when the system ends, the values written now travel
 * with it. */
static void dock(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    const Transform *t = tes_field(it, 0);
    Velocity *v = tes_field(it, 1);
    Hull *h = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++) {
        if (!h[i].retreating || fabsf(t[i].x - s->base_x[h[i].faction]) >= 100.0f)
            continue;
        toggle_instance(s, it->entities[i], false);
        h[i].retreating = 0;
        h[i].engaged = 0;
        h[i].chase = TES_NULL;
        v[i].x = v[i].y = 0;
        s->n.docked++;
    }
}

/* Parallel; Transform INOUT, Mount IN. Every part is a child of its ship
 * (the prefab links them; each instance is a tree like its prefab), so the
 * ship is the part's parent. The ship's Transform is read through tes_get:
 * ships have no Mount, so those rows are never this system's own, and no
 * other system writes Transform meanwhile. */
static void follow_ship(tes_iter_t *it)
{
    const sim_t *s = it->ctx;
    Transform *t = tes_field(it, 0);
    const Mount *m = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        tes_entity_t ship = tes_parent(s->w, it->entities[i]);
        const Transform *st = tes_get(s->w, ship, s->c.xform);
        if (!st || ship != m[i].ship)
            die(s, "the parent of a ship part");
        t[i].x = st->x + st->c * m[i].dx - st->s * m[i].dy;
        t[i].y = st->y + st->s * m[i].dx + st->c * m[i].dy;
        t[i].c = st->c;
        t[i].s = st->s;
    }
}

/* Parallel; Transform, Velocity, Missile INOUT. Decides each missile's fate;
 * the hits and losses are acted on by resolve_missiles. */
static void fly_missiles(tes_iter_t *it)
{
    const sim_t *s = it->ctx;
    tes_world_t *w = s->w;
    Transform *t = tes_field(it, 0);
    Velocity *v = tes_field(it, 1);
    Missile *mi = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++) {
        const Transform *tt = tes_get(w, mi[i].target, s->c.xform);
        mi[i].ttl -= 1;
        if (!target_ok(s, mi[i].target, tt) && mi[i].ttl > 0) {
            /* The target died or docked: try another one close by. */
            const grid_item_t *g =
                grid_nearest(&s->grid, 1 - (int)mi[i].faction, t[i].x, t[i].y, 200, 32);
            mi[i].target = g ? g->e : TES_NULL;
            tt = tes_get(w, mi[i].target, s->c.xform);
        }
        if (!target_ok(s, mi[i].target, tt) || mi[i].ttl <= 0) {
            mi[i].fate = MISSILE_LOST;
            continue;
        }
        float dx = tt->x - t[i].x, dy = tt->y - t[i].y, d = sqrtf(dx * dx + dy * dy) + 1e-3f;
        /* Within reach this frame (fast missiles would fly past). */
        if (d * d < 100.0f + v[i].x * v[i].x + v[i].y * v[i].y) {
            mi[i].fate = MISSILE_HIT;
            continue;
        }
        v[i].x += (dx / d * 9.0f - v[i].x) * 0.35f;
        v[i].y += (dy / d * 9.0f - v[i].y) * 0.35f;
        t[i].x += v[i].x;
        t[i].y += v[i].y;
    }
}

/* Structural; Missile IN. Hits do their damage (in iteration order, so
 * the same for every thread count); spent missiles are destroyed. */
static void resolve_missiles(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    const Missile *mi = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        if (mi[i].fate == MISSILE_FLYING)
            continue;
        if (mi[i].fate == MISSILE_HIT) {
            damage(s, mi[i].target, mi[i].damage);
            s->n.missiles_hit++;
        } else {
            s->n.missiles_lost++;
        }
        if (tes_destroy(s->w, it->entities[i]) != TES_OK) /* queued */
            die(s, "missile destroy");
        s->n.missiles_alive--;
    }
}

/* ------------------------------------------------------------------ combat */

/* Structural; Firing: last frame's tags go. */
static void clear_firing(tes_iter_t *it)
{
    const sim_t *s = it->ctx;
    for (int32_t i = 0; i < it->count; i++)
        if (tes_remove(s->w, it->entities[i], s->c.firing) != TES_OK) /* queued */
            die(s, "tes_remove(Firing)");
}

/* Parallel; Transform IN, Turret INOUT, Mount IN. Each turret keeps or
 * drops its target and decides whether it fires (Turret.fire). */
static void aim_turrets(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    tes_world_t *w = s->w;
    int64_t *count = s->per_thread[it->thread];
    const Transform *t = tes_field(it, 0);
    Turret *tu = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        Turret *u = &tu[i];
        if (u->cooldown > 0)
            u->cooldown -= 1;
        if (u->target) {
            /* A stale handle (the target died and its slot may even be
             * reused) fails the lookup: never a wrong ship. */
            const Transform *tt = tes_get(w, u->target, s->c.xform);
            float dx = tt ? tt->x - t[i].x : 0, dy = tt ? tt->y - t[i].y : 0;
            if (!tt)
                count[PT_STALE]++;
            if (!target_ok(s, u->target, tt) || dx * dx + dy * dy > u->range * u->range)
                u->target = TES_NULL;
        }
        if (!u->target && u->cooldown <= 0 &&
            ((tes_entity_index(it->entities[i]) + (uint32_t)s->frame) & 3) == 0) {
            const grid_item_t *g =
                grid_nearest(&s->grid, 1 - (int)u->faction, t[i].x, t[i].y, u->range, 48);
            count[PT_RETARGETS]++;
            u->target = g ? g->e : TES_NULL;
        }
        u->fire = u->target && u->cooldown <= 0;
        if (u->fire)
            u->cooldown = u->reload;
    }
}

/* Structural; Turret INOUT, Mount IN. The shots: damage to the target, the
 * Firing tag (queued), and the own ship slows down while engaged. */
static void fire_turrets(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    tes_world_t *w = s->w;
    Turret *tu = tes_field(it, 0);
    const Mount *m = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        if (!tu[i].fire)
            continue;
        tu[i].fire = 0;
        damage(s, tu[i].target, tu[i].damage);
        s->n.shots++;
        s->n.firing_toggles++;
        if (tes_add(w, it->entities[i], s->c.firing) != TES_OK) /* queued */
            die(s, "tes_add(Firing)");
        Hull *own = tes_get_mut(w, m[i].ship, s->c.hull);
        own->engaged = 30;
    }
}

/* Structural (it spawns missiles); Transform IN, Launcher INOUT, Mount IN. */
static void fire_launchers(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    tes_world_t *w = s->w;
    const Transform *t = tes_field(it, 0);
    Launcher *l = tes_field(it, 1);
    const Mount *m = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++) {
        if (l[i].cooldown > 0) {
            l[i].cooldown -= 1;
            continue;
        }
        const grid_item_t *g =
            grid_nearest(&s->grid, 1 - (int)l[i].faction, t[i].x, t[i].y, l[i].range, 64);
        if (!g) {
            l[i].cooldown = 10;
            continue;
        }
        /* A new entity now; its components arrive when the system ends
         * (the values are copied at the call). */
        Transform mt = {t[i].x, t[i].y, t[i].c, t[i].s};
        Velocity mv = {t[i].c * 2.0f, t[i].s * 2.0f};
        Missile mi = {g->e, 150, 30, l[i].faction, MISSILE_FLYING};
        tes_value_t missile[] = {{s->c.xform, &mt}, {s->c.vel, &mv}, {s->c.missile, &mi}};
        if (!tes_spawn_with(w, missile, 3))
            die(s, "missile spawn");
        l[i].cooldown = l[i].reload;
        s->n.missiles_fired++;
        s->n.missiles_alive++;
        Beacon *b = tes_get_mut(w, m[i].ship, s->c.beacon);
        if (b)
            b->missiles++;
    }
}

/* Transform IN, Hull IN, Beacon INOUT: runs beside aim_turrets and
 * recharge_shields (they share no written component). */
static void update_beacons(tes_iter_t *it)
{
    const Transform *t = tes_field(it, 0);
    const Hull *h = tes_field(it, 1);
    Beacon *b = tes_field(it, 2);
    for (int32_t i = 0; i < it->count; i++)
        b[i] = (Beacon){t[i].x, t[i].y, h[i].faction, b[i].missiles};
}

/* Parallel; Shield INOUT. */
static void recharge_shields(tes_iter_t *it)
{
    Shield *sh = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++)
        sh[i].strength = fminf(sh[i].max, sh[i].strength + sh[i].regen);
}

/* ------------------------------------------------------------------ spawn */

/* Structural; Hull INOUT (active ships). Dead ships lose their whole
 * instance; badly damaged ones turn for home. */
static void resolve_hulls(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    tes_world_t *w = s->w;
    Hull *h = tes_field(it, 0);
    for (int32_t i = 0; i < it->count; i++) {
        int f = h[i].faction;
        if (h[i].hp <= 0) {
            tes_instance_t inst = tes_instance_of(w, it->entities[i]);
            int32_t m = tes_instance_members(w, inst, NULL, 0);
            if (m <= 0 || tes_instance_destroy(w, inst) != TES_OK) /* queued */
                die(s, "tes_instance_destroy");
            s->n.fac_ents[f] -= m;
            s->n.kills[1 - f]++;
            s->n.lost[f][h[i].kind]++;
            s->n.pending[f][h[i].kind]++;
            s->n.destroyed_instances++;
        } else if (!h[i].retreating && h[i].kind != KIND_CARRIER &&
                   h[i].hp < 0.5f * h[i].max_hp) {
            h[i].retreating = 1;
        }
    }
}

/* Structural; Transform and Hull INOUT, TES_DISABLED (parked ships only).
 * Parked ships repair; every 30 frames the repaired ones launch, up to a
 * squadron limit per side. */
static void run_hangar(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    Transform *t = tes_field(it, 0);
    Hull *h = tes_field(it, 1);
    for (int32_t i = 0; i < it->count; i++) {
        int f = h[i].faction;
        h[i].hp = fminf(h[i].max_hp, h[i].hp + 0.01f * h[i].max_hp);
        if (h[i].hp < h[i].max_hp || s->launch_budget[f] == 0)
            continue;
        s->launch_budget[f]--;
        toggle_instance(s, it->entities[i], true); /* queued */
        t[i].x = s->base_x[f] + (f ? -1.0f : 1.0f) * (20.0f + 60.0f * rnd_float(&s->rng));
        s->n.launched++;
    }
}

/* Structural, no terms. Every ship lost this frame is replaced at its
 * side's base (one tes_instantiate_n per kind, queued: the handles are live
 * at once), so the fleets keep their size; new fighters arrive parked and
 * wait for the next launch. */
static void reinforce(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    for (int f = 0; f < FACTIONS; f++) {
        for (int k = 0; k < KINDS; k++) {
            int32_t n = (int32_t)s->n.pending[f][k];
            if (n > 0) {
                spawn_group(s, f, k, n, k == KIND_FIGHTER);
                s->n.reinforcements++;
            }
            s->n.pending[f][k] = 0;
        }
    }
}

/* Structural, no terms. Fleet command reads every carrier's beacon through
 * the address it was given by the on_add hook: no lookup, the store never
 * moves a stable component. The fleets drift toward their carriers' mean
 * height. */
static void command_fleets(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    float sum[FACTIONS] = {0}, cnt[FACTIONS] = {0};
    for (int32_t i = 0; i < s->cmd.count; i++) {
        const Beacon *b = s->cmd.held[i].ptr;
        sum[b->faction] += b->y;
        cnt[b->faction] += 1;
    }
    for (int f = 0; f < FACTIONS; f++)
        s->cmd.rally_y[f] = cnt[f] > 0 ? sum[f] / cnt[f] : s->world_h / 2;
}

/* Structural, no terms: the render capture (nested queries; it runs alone). */
static void render(tes_iter_t *it) { phase_render(it->ctx); }

/* Structural, no terms: the hangar's launch budget for this frame (set
 * once, before run_hangar's chunks count it down). */
static void hangar_budget(tes_iter_t *it)
{
    sim_t *s = it->ctx;
    for (int f = 0; f < FACTIONS; f++)
        s->launch_budget[f] = s->frame % 30 ? 0 : s->target / 200 + 10;
}

/* ------------------------------------------------------------------ setup */

#define T_IN(c) {.comp = (c), .access = TES_IN}
#define T_RW(c) {.comp = (c), .access = TES_INOUT}
#define T_NONE(c) {.comp = (c), .access = TES_NOACCESS}

void add_systems(sim_t *s)
{
    const comps_t *c = &s->c;
    enum { PAR = 1, STRUCT = 2 };
    struct {
        const char *name;
        void (*run)(tes_iter_t *it);
        int flags;
        tes_query_desc_t q;
        void *ctx;
    } list[] = {
        {"mark_move", mark_phase, STRUCT, {{{0}}, 0}, &s->marks[PH_MOVE]},
        {"build_grid", build_grid, STRUCT, {{{0}}, 0}, s},
        {"steer", steer, PAR, {{T_IN(c->xform), T_RW(c->vel), T_RW(c->hull)}, 0}, s},
        {"fly", fly, PAR, {{T_RW(c->xform), T_IN(c->vel), T_NONE(c->hull)}, 0}, s},
        {"dock", dock, STRUCT, {{T_IN(c->xform), T_RW(c->vel), T_RW(c->hull)}, 0}, s},
        {"follow_ship", follow_ship, PAR, {{T_RW(c->xform), T_IN(c->mount)}, 0}, s},
        {"fly_missiles", fly_missiles, PAR,
         {{T_RW(c->xform), T_RW(c->vel), T_RW(c->missile)}, 0}, s},
        {"resolve_missiles", resolve_missiles, STRUCT, {{T_IN(c->missile)}, 0}, s},
        {"mark_combat", mark_phase, STRUCT, {{{0}}, 0}, &s->marks[PH_COMBAT]},
        {"clear_firing", clear_firing, STRUCT, {{T_NONE(c->firing)}, 0}, s},
        {"aim_turrets", aim_turrets, PAR,
         {{T_IN(c->xform), T_RW(c->turret), T_IN(c->mount)}, 0}, s},
        /* These two write nothing aim_turrets touches and read nothing it
         * writes: the three run at the same time. */
        {"update_beacons", update_beacons, 0,
         {{T_IN(c->xform), T_IN(c->hull), T_RW(c->beacon)}, 0}, s},
        {"recharge_shields", recharge_shields, PAR, {{T_RW(c->shield)}, 0}, s},
        {"fire_turrets", fire_turrets, STRUCT, {{T_RW(c->turret), T_IN(c->mount)}, 0}, s},
        {"fire_launchers", fire_launchers, STRUCT,
         {{T_IN(c->xform), T_RW(c->launcher), T_IN(c->mount)}, 0}, s},
        {"mark_spawn", mark_phase, STRUCT, {{{0}}, 0}, &s->marks[PH_SPAWN]},
        {"resolve_hulls", resolve_hulls, STRUCT, {{T_RW(c->hull)}, 0}, s},
        {"hangar_budget", hangar_budget, STRUCT, {{{0}}, 0}, s},
        {"run_hangar", run_hangar, STRUCT,
         {{T_RW(c->xform), T_RW(c->hull), T_NONE(TES_DISABLED)}, 0}, s},
        {"reinforce", reinforce, STRUCT, {{{0}}, 0}, s},
        {"command_fleets", command_fleets, STRUCT, {{{0}}, 0}, s},
        {"mark_render", mark_phase, STRUCT, {{{0}}, 0}, &s->marks[PH_RENDER]},
        {"render", render, STRUCT, {{{0}}, 0}, s},
    };
    for (int p = 0; p < PHASES; p++)
        s->marks[p] = (phase_mark_t){s, p};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
        tes_system_desc_t d = {.name = list[i].name, .query = list[i].q, .run = list[i].run,
                               .ctx = list[i].ctx, .parallel = (list[i].flags & PAR) != 0,
                               .structural = (list[i].flags & STRUCT) != 0};
        if (!tes_system_new(s->w, &d))
            die(s, list[i].name);
    }
}
