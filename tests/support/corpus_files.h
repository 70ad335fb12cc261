/*
 * Reading a fuzz corpus from disk, shared by the programs that replay one
 * (the snapshot loader's and the inspector's): a whole file into memory,
 * and a walk over the regular files of a directory (or one named file).
 * Test tooling only; nothing here is part of the library.
 */
#ifndef TES_TEST_CORPUS_FILES_H
#define TES_TEST_CORPUS_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The whole of file `path`, malloc'ed, its length in *size (a NULL-free
 * buffer even for an empty file). NULL, after a line on stderr that starts
 * with `who`, when it cannot be opened, read or held in memory. */
uint8_t *corpus_read_file(const char *who, const char *path, size_t *size);

/* Calls fn(file, name, ctx) for each regular file of directory `path`
 * (names starting with '.' skipped; `file` is "path/name"), or
 * fn(path, path, ctx) once when `path` is not a directory. Returns the sum
 * of what fn returned, plus 1 when the directory cannot be listed (with a
 * line on stderr that starts with `who`). */
int corpus_each_file(const char *who, const char *path,
                     int (*fn)(const char *file, const char *name, void *ctx), void *ctx);

#endif
