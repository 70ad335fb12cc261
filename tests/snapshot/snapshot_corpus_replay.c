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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/corpus_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WHO "snapshot_corpus_replay"

static int replay(const char *file, const char *name, void *ctx)
{
    (void)name;
    int *count = ctx;
    size_t size = 0;
    uint8_t *data = corpus_read_file(WHO, file, &size);
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
    uint8_t *x = corpus_read_file(WHO, file, &a), *y = corpus_read_file(WHO, other, &b);
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
        int bad = corpus_each_file(WHO, argv[2], same, argv[3]);
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
        bad += corpus_each_file(WHO, TES_SNAPSHOT_CORPUS, replay, &count);
    for (int i = 1; i < argc; i++)
        bad += corpus_each_file(WHO, argv[i], replay, &count);
    printf("snapshot_corpus_replay: %d inputs passed every oracle, %d unreadable\n", count, bad);
    return bad || count == 0 ? 1 : 0;
}
