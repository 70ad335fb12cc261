/*
 * See corpus_files.h: the file reading and directory walk of the corpus
 * replay programs, written once.
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "corpus_files.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

uint8_t *corpus_read_file(const char *who, const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s\n", who, path);
        return NULL;
    }
    size_t cap = (size_t)1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        fprintf(stderr, "%s: cannot read %s\n", who, path);
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

int corpus_each_file(const char *who, const char *path,
                     int (*fn)(const char *file, const char *name, void *ctx), void *ctx)
{
    if (!is_dir(path))
        return fn(path, path, ctx);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "%s: cannot list %s\n", who, path);
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
