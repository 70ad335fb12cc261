/*
 * demo_svg.c — the render phase of the space-battle demo and the SVG writer.
 * Every frame, render captures a density map of each fleet plus a sample of
 * ships, beams (turrets carrying the Firing tag) and missiles into a frame
 * buffer; at the end the last capture is written as a self-contained SVG.
 * Dots are zero-length path segments with round caps, so a few thousand of
 * them stay small.
 */
#include <math.h>
#include <string.h>

#include "demo.h"

static void heat_add(frame_capture_t *c, const sim_t *s, int f, float x, float y)
{
    int32_t hx = (int32_t)(x / s->world_w * HEAT_W), hy = (int32_t)(y / s->world_h * HEAT_H);
    hx = hx < 0 ? 0 : hx >= HEAT_W ? HEAT_W - 1 : hx;
    hy = hy < 0 ? 0 : hy >= HEAT_H ? HEAT_H - 1 : hy;
    if (c->heat[f][hy][hx] < UINT16_MAX)
        c->heat[f][hy][hx]++;
}

/* Samples every stride-th ship of a query into the sprite list. */
static void capture_ships(sim_t *s, tes_query_t *q, int32_t stride, bool parked, int32_t *seen)
{
    frame_capture_t *c = s->cap;
    tes_iter_t it = tes_query_iter(q);
    while (tes_iter_next(&it)) {
        const Transform *t = tes_field(&it, 0);
        const Hull *h = tes_field(&it, parked ? 1 : 2);
        for (int32_t i = 0; i < it.count; i++, (*seen)++) {
            if (!parked)
                heat_add(c, s, h[i].faction, t[i].x, t[i].y);
            if (*seen % stride || c->sprite_count == MAX_SPRITES)
                continue;
            c->sprites[c->sprite_count++] =
                (sprite_t){t[i].x, t[i].y, t[i].c, t[i].s, h[i].faction, h[i].kind, parked, 0};
        }
    }
}

void phase_render(sim_t *s)
{
    frame_capture_t *c = s->cap;
    memset(c->heat, 0, sizeof c->heat);
    c->sprite_count = c->beam_count = c->dot_count = 0;
    c->ships = tes_query_count(s->q_ships);
    c->parked = tes_query_count(s->q_parked);
    c->missiles = (int32_t)s->n.missiles_alive;
    c->firing = tes_query_count(s->q_firing);
    int32_t seen = 0, stride = (c->ships + c->parked) / MAX_SPRITES + 1;
    capture_ships(s, s->q_ships, stride, false, &seen);
    capture_ships(s, s->q_parked, stride, true, &seen);

    /* Beams: turrets that fired this frame, to their target. */
    int32_t bstride = c->firing / MAX_BEAMS + 1, k = 0;
    tes_iter_t it = tes_query_iter(s->q_beams);
    while (tes_iter_next(&it)) {
        const Transform *t = tes_field(&it, 0);
        const Turret *tu = tes_field(&it, 1);
        for (int32_t i = 0; i < it.count; i++, k++) {
            const Transform *tt = tes_get(s->w, tu[i].target, s->c.xform);
            if (k % bstride || !tt || c->beam_count == MAX_BEAMS)
                continue;
            c->beams[c->beam_count++] = (beam_t){t[i].x, t[i].y, tt->x, tt->y, (uint8_t)tu[i].faction};
        }
    }
    int32_t mstride = c->missiles / MAX_DOTS + 1;
    k = 0;
    it = tes_query_iter(s->q_missiles);
    while (tes_iter_next(&it)) {
        const Transform *t = tes_field(&it, 0);
        const Missile *m = tes_field(&it, 2);
        for (int32_t i = 0; i < it.count; i++, k++)
            if (k % mstride == 0 && c->dot_count < MAX_DOTS)
                c->dots[c->dot_count++] =
                    (sprite_t){t[i].x, t[i].y, t[i].c, t[i].s, (uint8_t)m[i].faction, 0, 0, 0};
    }
}

/* ------------------------------------------------------------------ SVG */

/* 0..8 on a log scale, so that thin streams show next to the front. */
static int shade(uint16_t count, uint32_t peak)
{
    return count ? 1 + (int)(7.0 * log1p(count) / log1p(peak) + 0.5) : 0;
}

static const char *const fleet_color[FACTIONS] = {"#4da3ff", "#ff5a4d"};
static const char *const beam_color[FACTIONS] = {"#9fd0ff", "#ffb0a0"};
static const char *const fleet_name[FACTIONS] = {"blue", "red"};

int write_svg(const sim_t *s, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    const frame_capture_t *c = s->cap;
    const double W = 1200.0, H = W * (double)s->world_h / (double)s->world_w;
    const double k = W / (double)s->world_w;
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#05070d\"/>\n",
            W, H + 24, W, H + 24);
    /* Density: runs of equal shade merged into one rect per row. */
    double cw = W / HEAT_W, ch = H / HEAT_H;
    uint32_t peak = 1;
    for (int f = 0; f < FACTIONS; f++)
        for (int y = 0; y < HEAT_H; y++)
            for (int x = 0; x < HEAT_W; x++)
                peak = c->heat[f][y][x] > peak ? c->heat[f][y][x] : peak;
    for (int y = 0; y < HEAT_H; y++) {
        for (int x = 0; x < HEAT_W;) {
            int b = (shade(c->heat[0][y][x], peak));
            int r = (shade(c->heat[1][y][x], peak));
            int run = 1;
            while (x + run < HEAT_W &&
                   (shade(c->heat[0][y][x + run], peak)) == b &&
                   (shade(c->heat[1][y][x + run], peak)) == r)
                run++;
            if (b || r)
                fprintf(out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"rgb(%d,%d,%d)\"/>\n",
                        x * cw, y * ch, run * cw + 0.3, ch + 0.3, r * 11, (r + b) * 3, b * 14);
            x += run;
        }
    }
    /* Hangars. */
    for (int f = 0; f < FACTIONS; f++)
        fprintf(out,
                "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                "opacity=\"0.12\"/>\n",
                (s->base_x[f] - 60.0) * k, 120.0 * k, H, fleet_color[f]);
    /* Beams. */
    for (int f = 0; f < FACTIONS; f++) {
        fprintf(out, "<path stroke=\"%s\" stroke-width=\"0.6\" opacity=\"0.7\" d=\"", beam_color[f]);
        for (int32_t i = 0; i < c->beam_count; i++)
            if (c->beams[i].faction == f)
                fprintf(out, "M%.1f %.1fL%.1f %.1f", c->beams[i].x0 * k, c->beams[i].y0 * k,
                        c->beams[i].x1 * k, c->beams[i].y1 * k);
        fprintf(out, "\"/>\n");
    }
    /* Ships: one path per faction and class; dots for fighters and
     * frigates, a short bar along the heading for carriers. */
    static const double width[KINDS] = {2.2, 3.4, 4.5};
    for (int f = 0; f <= FACTIONS; f++) {
        for (int kind = 0; kind < KINDS; kind++) {
            fprintf(out, "<path stroke=\"%s\" stroke-width=\"%.1f\" stroke-linecap=\"round\" d=\"",
                    f < FACTIONS ? fleet_color[f] : "#8a8f99", width[kind]);
            for (int32_t i = 0; i < c->sprite_count; i++) {
                const sprite_t *p = &c->sprites[i];
                if (p->kind != kind || (f < FACTIONS ? p->parked || p->faction != f : !p->parked))
                    continue;
                double len = kind == KIND_CARRIER ? 4.0 : 0.0;
                fprintf(out, "M%.1f %.1fl%.1f %.1f", p->x * k - p->c * len / 2,
                        p->y * k - p->s * len / 2, p->c * len, p->s * len);
            }
            fprintf(out, "\"/>\n");
        }
    }
    fprintf(out, "<path stroke=\"#ffd84d\" stroke-width=\"1.6\" stroke-linecap=\"round\" d=\"");
    for (int32_t i = 0; i < c->dot_count; i++)
        fprintf(out, "M%.1f %.1fh0", c->dots[i].x * k, c->dots[i].y * k);
    fprintf(out, "\"/>\n");
    fprintf(out,
            "<text x=\"8\" y=\"%.0f\" fill=\"#c8ccd4\" font-size=\"13\">frame %d: %d ships in "
            "flight, %d parked (grey), %d missiles (yellow), %d turrets firing; kills %s %lld, "
            "%s %lld</text>\n</svg>\n",
            H + 17, s->frame, c->ships, c->parked, c->missiles, c->firing, fleet_name[0],
            (long long)s->n.kills[0], fleet_name[1], (long long)s->n.kills[1]);
    return fclose(out) == 0 ? 0 : -1;
}
