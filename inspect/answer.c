/*
 * The inspector's answers as text: a growing buffer that remembers a
 * failed allocation instead of reporting each one (the route checks once,
 * at the end), JSON string quoting, a tes_writer_t into the buffer, and
 * the one form of an error answer. Every route and the PUT parser write
 * through these, so none of them needs another's code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

void tes__buf_put(tes__buf_t *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (n > SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tes__buf_str(tes__buf_t *b, const char *s) { tes__buf_put(b, s, strlen(s)); }

void tes__buf_printf(tes__buf_t *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        tes__buf_put(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    tes__buf_put(b, big, (size_t)n);
    free(big);
}

void tes__buf_json_str(tes__buf_t *b, const char *s)
{
    if (!s) {
        tes__buf_str(b, "null");
        return;
    }
    tes__buf_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            tes__buf_put(b, esc, 2);
        } else if (*p < 0x20) {
            tes__buf_printf(b, "\\u%04x", *p);
        } else {
            tes__buf_put(b, (const char *)p, 1);
        }
    }
    tes__buf_put(b, "\"", 1);
}

int tes__buf_writer(const void *data, size_t size, void *user)
{
    tes__buf_t *b = user;
    tes__buf_put(b, data, size);
    return b->failed ? TES_ERR_NOMEM : TES_OK;
}

void tes__api_error(tes__request_t *r, int status, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->status = status;
    r->out.len = 0;
    r->out.failed = false;
    tes__buf_str(&r->out, "{\"error\":");
    tes__buf_json_str(&r->out, msg);
    tes__buf_str(&r->out, "}");
}
