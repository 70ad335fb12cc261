/*
 * snapshot_corpus_replay: the snapshot loader's libFuzzer target
 * (fuzz_snapshot_load.c) without libFuzzer, over files. Every file of
 * every directory named (or every file named) goes through the target's
 * oracles once; a violation aborts, naming the oracle, after this program
 * has printed the file it was running.
 *
 *   snapshot_corpus_replay [DIR|FILE ...]
 *   snapshot_corpus_replay --same FRESH CORPUS
 *
 * With no argument it replays the corpus of the source tree it was built
 * from (TES_SNAPSHOT_CORPUS), as `make valgrind` runs it.
 *
 * The second form checks that the corpus is current: every file in FRESH
 * (what make_seeds writes now) must exist in CORPUS with the same bytes.
 * A format change that leaves the committed seeds behind then fails here,
 * in `make test`, rather than stopping the next `make fuzz` on its first
 * seed (which once happened: the seeds stayed at version 2 after the
 * format moved to version 3, and the target rejected its own corpus).
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads a whole file; NULL on failure (reported). */
static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "snapshot_corpus_replay: cannot open %s\n", path);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *bigger = realloc(buf, cap * 2);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        fprintf(stderr, "snapshot_corpus_replay: cannot read %s\n", path);
        return NULL;
    }
    *size = n;
    return buf;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Calls fn(dir/name, ctx) for every regular file of dir, or fn(path) for
 * a file. Returns the number of failures fn reported. */
static int each_file(const char *path, int (*fn)(const char *file, const char *name, void *ctx),
                     void *ctx)
{
    if (!is_dir(path))
        return fn(path, path, ctx);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "snapshot_corpus_replay: cannot list %s\n", path);
        return 1;
    }
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (!is_dir(file))
            bad += fn(file, e->d_name, ctx);
    }
    closedir(d);
    return bad;
}

static int replay(const char *file, const char *name, void *ctx)
{
    (void)name;
    int *count = ctx;
    size_t size = 0;
    uint8_t *data = read_all(file, &size);
    if (!data)
        return 1;
    printf("replay %s (%zu bytes)\n", file, size);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, size); /* aborts on a violation */
    free(data);
    (*count)++;
    return 0;
}

static int same(const char *file, const char *name, void *ctx)
{
    const char *corpus = ctx;
    char other[4096];
    snprintf(other, sizeof other, "%s/%s", corpus, name);
    size_t a = 0, b = 0;
    uint8_t *x = read_all(file, &a), *y = read_all(other, &b);
    int bad = !x || !y || a != b || memcmp(x, y, a) != 0;
    if (bad)
        fprintf(stderr,
                "snapshot_corpus_replay: %s is not what make_seeds writes now (%s): the format "
                "or the test world changed; regenerate the corpus with "
                "`snapshot_make_seeds tests/fuzz/snapshot_corpus` (keeping the v2-* files)\n",
                other, file);
    free(x);
    free(y);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--same") == 0) {
        int bad = each_file(argv[2], same, argv[3]);
        printf("snapshot_corpus_replay: %s\n", bad ? "the corpus is stale" : "the corpus is current");
        return bad ? 1 : 0;
    }
    if (argc > 1 && argv[1][0] == '-') {
        fprintf(stderr, "usage: snapshot_corpus_replay [DIR|FILE ...]\n"
                        "       snapshot_corpus_replay --same FRESH CORPUS\n");
        return 2;
    }
    int bad = 0, count = 0;
    if (argc < 2)
        bad += each_file(TES_SNAPSHOT_CORPUS, replay, &count);
    for (int i = 1; i < argc; i++)
        bad += each_file(argv[i], replay, &count);
    printf("snapshot_corpus_replay: %d inputs passed every oracle, %d unreadable\n", count, bad);
    return bad || count == 0 ? 1 : 0;
}
