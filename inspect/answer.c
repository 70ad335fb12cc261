/*
 * The inspector's answers as text: a growing buffer that remembers a
 * failed allocation instead of reporting each one (the route checks once,
 * at the end), JSON string quoting, a tes_writer_t into the buffer, and
 * the one form of an error answer. Every route and the PUT parser write
 * through these, so none of them needs another's code.
 */
#include <stdarg.h>
#include <stdint.h>
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

/* The length of the valid UTF-8 sequence at p (n bytes left), 0 if the
 * bytes there are not one: strict, as RFC 3629 (no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : (c & 0xf0) == 0xe0 ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return len;
}

bool tes__utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq(p + i, n - i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

/* Every string an answer holds goes through here, so every answer is
 * valid JSON in valid UTF-8 whatever a client sent (a name echoed in an
 * error message may be any bytes): control characters are escaped, and a
 * byte that does not start a valid UTF-8 sequence is written as U+FFFD,
 * as the core's JSON writer does. */
void tes__buf_json_str(tes__buf_t *b, const char *s)
{
    if (!s) {
        tes__buf_str(b, "null");
        return;
    }
    tes__buf_put(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t len = utf8_seq(p + i, n - i);
        if (len == 0) {
            tes__buf_put(b, "\xef\xbf\xbd", 3);
            i++;
        } else if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            tes__buf_put(b, esc, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            tes__buf_printf(b, "\\u%04x", c);
            i++;
        } else {
            tes__buf_put(b, (const char *)p + i, len);
            i += len;
        }
    }
    tes__buf_put(b, "\"", 1);
}

/* The one integer parser for every number a client sends (ids, query
 * parameters, integers written as strings): optional '-' (when neg_ok),
 * then 1 to 20 decimal digits and nothing else: no '+', no spaces, no
 * hex, no exponent. Negative values down to INT64_MIN, positive ones up
 * to UINT64_MAX; *sv gets the value as int64 (clamped to INT64_MAX above
 * it) and *uv the value as uint64 (0 for a negative one). */
bool tes__parse_int(const char *s, size_t n, bool neg_ok, int64_t *sv, uint64_t *uv)
{
    bool neg = n > 0 && s[0] == '-';
    if (neg && !neg_ok)
        return false;
    size_t i = neg ? 1 : 0;
    if (n - i == 0 || n - i > 20)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return false;
        *sv = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
        *uv = 0;
    } else {
        *sv = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
        *uv = v;
    }
    return true;
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
