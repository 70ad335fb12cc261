/*
 * The JSON output stream: a fixed 4 KiB buffer handed to a tes_writer_t
 * whenever it fills, and the few value formatters JSON needs (escaped
 * strings that are always valid UTF-8, integers, floats in their shortest
 * exact form, base64). Nothing here allocates, so writing a world of any
 * size uses the same memory; the first failing write is kept and every
 * later call does nothing, so callers format freely and check the status
 * once at the end.
 *
 * Tuned for dumping whole worlds: the hot calls (a key, a number) append
 * into the buffer with one bounds check each.
 */
#ifndef TES_JSON_JSON_OUT_H
#define TES_JSON_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

#define TES__JSON_BUF 4096

typedef struct tes__json_out {
    const tes_writer_t *writer;
    int status;  /* TES_OK, or the first failure (later output is dropped) */
    size_t used; /* bytes in buf */
    char buf[TES__JSON_BUF];
} tes__json_out_t;

void tes__json_init(tes__json_out_t *o, const tes_writer_t *writer);
/* Hands what is buffered to the writer. Returns o->status. */
int tes__json_flush(tes__json_out_t *o);
void tes__json_raw(tes__json_out_t *o, const char *s, size_t n);
static inline void tes__json_lit(tes__json_out_t *o, const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    tes__json_raw(o, s, n);
}
static inline void tes__json_char(tes__json_out_t *o, char c)
{
    if (o->used == TES__JSON_BUF)
        tes__json_flush(o);
    if (o->used < TES__JSON_BUF)
        o->buf[o->used++] = c;
}
/* A JSON string of the n bytes at s: quotes, backslashes and every control
 * character escaped; each byte that is not part of a valid UTF-8 sequence
 * (overlong forms, surrogates and code points past U+10FFFF included)
 * written as U+FFFD. */
void tes__json_string(tes__json_out_t *o, const char *s, size_t n);
void tes__json_i64(tes__json_out_t *o, int64_t v);
void tes__json_u64(tes__json_out_t *o, uint64_t v);
/* A handle as a decimal string, or null for TES_NULL. */
void tes__json_handle(tes__json_out_t *o, tes_entity_t e);
void tes__json_f32(tes__json_out_t *o, float v);
void tes__json_f64(tes__json_out_t *o, double v);
void tes__json_base64(tes__json_out_t *o, const uint8_t *p, size_t n);

/* The shortest decimal that strtof / strtod read back as v (finite v
 * only), NUL-terminated in buf (32 bytes); returns its length. JSON
 * syntax: no leading '+', an exponent as "e-7". Exposed for the
 * benchmark's baseline writer and the tests. */
int tes__json_format_f32(char *buf, float v);
int tes__json_format_f64(char *buf, double v);

#endif
