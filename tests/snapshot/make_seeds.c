/*
 * Writes the seed corpus of fuzz_snapshot_load into a directory: genuine
 * snapshots of the shared test world at a few sizes, of an empty world, of
 * a world with only prefabs, of the small world with a forest (links in
 * a chosen child order, names, prefab members linked and instantiated),
 * and one of each with the checksum left stale (mode bit 0 off) and fixed
 * up (on). Run once; the output is committed under
 * tests/fuzz/snapshot_corpus (the ctest snapshot_corpus_current checks
 * that it is what this program writes now).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snap_world.h"

static int write_seed(const char *dir, const char *name, uint8_t mode, const sw_buf_t *b)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    fputc(mode, f);
    fwrite(b->data, 1, b->size, f);
    return fclose(f) != 0;
}

/* Adds a forest to w: r -> {c, a -> {x, y}} (r's children linked out of
 * index order), a root s, names on most, and a prefab whose second member
 * is linked under its first, instantiated once (the instance copies the
 * link), so the seed's hierarchy section holds every kind of record. */
static bool add_forest(tes_world_t *w)
{
    tes_entity_t e[6];
    for (int i = 0; i < 6; i++)
        if (!(e[i] = tes_spawn(w)))
            return false;
    static const int links[][2] = {{2, 0}, {1, 0}, {4, 1}, {3, 1}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        if (tes_set_parent(w, e[links[i][0]], e[links[i][1]]) != TES_OK)
            return false;
    static const char *const names[6] = {"r", "a", "c", "x", NULL, "s"};
    for (int i = 0; i < 6; i++)
        if (names[i] && tes_set_name(w, e[i], names[i]) != TES_OK)
            return false;
    tes_entity_t prefab = tes_prefab_new(w);
    tes_entity_t m1 = tes_prefab_child(w, prefab), m2 = tes_prefab_child(w, prefab);
    return prefab && m1 && m2 && tes_set_parent(w, m2, m1) == TES_OK &&
           tes_set_name(w, m2, "m2") == TES_OK && tes_instantiate(w, prefab, NULL, 0) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    int bad = 0;
    for (int scale = 0; scale <= 2; scale++) {
        tes_world_desc_t d = sw_desc();
        tes_world_t *w = tes_world_new(&d);
        sw_ids_t ids;
        if (!w || !sw_register(w, &ids, false, false) || (scale && !sw_populate(w, &ids, scale)))
            return 1;
        if (scale == 0) { /* prefabs only, plus nothing */
            sw_buf_t empty;
            bad |= sw_save(w, &empty) || write_seed(argv[1], "empty", 0, &empty);
            sw_buf_free(&empty);
            tes_entity_t p = tes_prefab_new(w);
            tes_prefab_child(w, p);
            tes_instantiate(w, p, NULL, 0);
        }
        sw_buf_t b;
        bad |= sw_save(w, &b) != TES_OK;
        char name[64];
        snprintf(name, sizeof name, "world%d", scale);
        bad |= write_seed(argv[1], name, 0, &b);
        snprintf(name, sizeof name, "world%d-fixup", scale);
        bad |= write_seed(argv[1], name, 7, &b);
        sw_buf_free(&b);
        if (scale == 1) {
            bad |= !add_forest(w) || sw_save(w, &b) != TES_OK;
            bad |= write_seed(argv[1], "forest", 0, &b) || write_seed(argv[1], "forest-fixup", 7, &b);
            sw_buf_free(&b);
        }
        tes_world_free(w);
    }
    return bad;
}
