/*
 * In-memory snapshot streams shared by every test that saves and loads
 * without files: the snapshot tests, the libFuzzer target, the seed
 * generator, the differential fuzzer and the allocation-failure sweep.
 * The writer grows a heap buffer with plain realloc (test memory, outside
 * the world's allocator, so fault injection never reaches it); the reader
 * serves a byte range and answers TES_ERR_IO past its end, which is how a
 * truncated file looks to the loader.
 */
#ifndef TES_TESTS_MEM_STREAM_H
#define TES_TESTS_MEM_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

/* A growable memory writer (zero-initialise before the first write). */
typedef struct sw_buf {
    uint8_t *data;
    size_t size, cap;
} sw_buf_t;
/* tes_writer_t.write over an sw_buf_t: TES_ERR_NOMEM when realloc fails. */
int sw_buf_write(const void *data, size_t size, void *user);
void sw_buf_free(sw_buf_t *b);

/* A reader over data[0..size), consumed from pos. */
typedef struct sw_src {
    const uint8_t *data;
    size_t size, pos;
} sw_src_t;
/* tes_reader_t.read over an sw_src_t: TES_ERR_IO past the end. */
int sw_src_read(void *data, size_t size, void *user);

/* Saves w into *out (reset first). Returns the save status. */
int sw_save(const tes_world_t *w, sw_buf_t *out);
/* Loads data[0..size) into w. Returns the load status. */
int sw_load(tes_world_t *w, const uint8_t *data, size_t size);

#endif
