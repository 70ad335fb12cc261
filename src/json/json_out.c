/*
 * The JSON output stream and its value formatters (see json_out.h).
 *
 * Floats: the C library prints a value's first 17 (f64) or 9 (f32)
 * significant digits correctly rounded, which always read back exactly.
 * The shortest exact form has some p <= that many digits, and it is the
 * p-digit truncation of those digits or that plus one unit in the last
 * place (any p-digit decimal that reads back lies between the value's
 * neighbours' midpoints, and so does the nearer of the two decimals that
 * bracket the value). Whether some p-digit decimal reads back only grows
 * with p (p-digit decimals are (p+1)-digit ones), so a binary search over p
 * with strtod / strtof as the judge finds the shortest in about four
 * steps. Integral values below 2^53 (2^24 for f32) skip all that: their
 * digits are the integer's.
 */
#include "json/json_out.h"

#include "core/assert.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tes__json_init(tes__json_out_t *o, const tes_writer_t *writer)
{
    o->writer = writer;
    o->status = TES_OK;
    o->used = 0;
}

int tes__json_flush(tes__json_out_t *o)
{
    if (o->used && !o->status) {
        int rc = o->writer->write(o->buf, o->used, o->writer->user);
        o->status = rc > 0 ? TES_ERR_IO : rc;
    }
    o->used = 0;
    return o->status;
}

void tes__json_raw(tes__json_out_t *o, const char *s, size_t n)
{
    while (n) {
        if (o->used == TES__JSON_BUF && tes__json_flush(o))
            return;
        size_t room = TES__JSON_BUF - o->used;
        size_t k = n < room ? n : room;
        memcpy(o->buf + o->used, s, k);
        o->used += k;
        s += k;
        n -= k;
    }
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0 if
 * the bytes there do not start one (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

void tes__json_string(tes__json_out_t *o, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    tes__json_char(o, '"');
    size_t run = 0; /* bytes at s[i - run] .. s[i] to copy as they are */
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7F) {
            i++;
            run++;
            continue;
        }
        size_t len = c >= 0x80 ? utf8_length(s + i, n - i) : 1;
        /* C1 controls (U+0080..U+009F) are escaped like C0 ones. */
        if (len >= 2 && !(len == 2 && c == 0xC2 && s[i + 1] < 0xA0)) {
            i += len;
            run += len;
            continue;
        }
        tes__json_raw(o, (const char *)s + i - run, run);
        run = 0;
        if (len == 0) {
            tes__json_raw(o, "\xEF\xBF\xBD", 3); /* U+FFFD for one bad byte */
            i++;
            continue;
        }
        unsigned code = len == 2 ? ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu) : c;
        char esc[6] = {'\\', 'u', '0', '0', hex[(code >> 4) & 15], hex[code & 15]};
        switch (code) {
        case '"': tes__json_raw(o, "\\\"", 2); break;
        case '\\': tes__json_raw(o, "\\\\", 2); break;
        case '\n': tes__json_raw(o, "\\n", 2); break;
        case '\r': tes__json_raw(o, "\\r", 2); break;
        case '\t': tes__json_raw(o, "\\t", 2); break;
        case '\b': tes__json_raw(o, "\\b", 2); break;
        case '\f': tes__json_raw(o, "\\f", 2); break;
        default: tes__json_raw(o, esc, 6); break;
        }
        i += len;
    }
    tes__json_raw(o, (const char *)s + n - run, run);
    tes__json_char(o, '"');
}

/* Writes the decimal digits of v backwards ending at end; returns the
 * first. */
static char *digits_u64(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void tes__json_u64(tes__json_out_t *o, uint64_t v)
{
    char buf[24];
    char *p = digits_u64(buf + sizeof buf, v);
    tes__json_raw(o, p, (size_t)(buf + sizeof buf - p));
}

void tes__json_i64(tes__json_out_t *o, int64_t v)
{
    char buf[24];
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *p = digits_u64(buf + sizeof buf, mag);
    if (v < 0)
        *--p = '-';
    tes__json_raw(o, p, (size_t)(buf + sizeof buf - p));
}

void tes__json_handle(tes__json_out_t *o, tes_entity_t e)
{
    if (e == TES_NULL) {
        tes__json_raw(o, "null", 4);
        return;
    }
    char buf[24];
    char *end = buf + sizeof buf;
    *--end = '"';
    char *p = digits_u64(end, e);
    *--p = '"';
    tes__json_raw(o, p, (size_t)(buf + sizeof buf - p));
}

/* ---- floats ---- */

/* Writes v in decimal at s; returns the end. */
static char *put_int(char *s, int v)
{
    char tmp[12];
    char *p = digits_u64(tmp + sizeof tmp, (uint64_t)(v < 0 ? -(int64_t)v : v));
    if (v < 0)
        *s++ = '-';
    size_t n = (size_t)(tmp + sizeof tmp - p);
    memcpy(s, p, n);
    return s + n;
}

/* Writes digits d[0..p) with decimal exponent e (the value is d0.d1d2...
 * times 10^e) in JSON syntax after an optional '-'; returns the length. */
static int float_layout(char *buf, bool neg, const char *d, int p, int e)
{
    char *s = buf;
    if (neg)
        *s++ = '-';
    if (e >= 0 && e < 21) {
        /* Fixed notation: integer part, then any fraction. */
        for (int i = 0; i <= e; i++)
            *s++ = i < p ? d[i] : '0';
        if (p > e + 1) {
            *s++ = '.';
            for (int i = e + 1; i < p; i++)
                *s++ = d[i];
        }
    } else if (e < 0 && e >= -6) {
        *s++ = '0';
        *s++ = '.';
        for (int i = -1; i > e; i--)
            *s++ = '0';
        for (int i = 0; i < p; i++)
            *s++ = d[i];
    } else {
        *s++ = d[0];
        if (p > 1) {
            *s++ = '.';
            for (int i = 1; i < p; i++)
                *s++ = d[i];
        }
        *s++ = 'e';
        s = put_int(s, e);
    }
    *s = '\0';
    return (int)(s - buf);
}

/* Whether the decimal d[0..p) x 10^(e - p + 1) reads back as v. */
static bool float_reads_back(const char *d, int p, int e, double v, bool single)
{
    char buf[48];
    memcpy(buf, d, (size_t)p);
    char *end = buf + p;
    *end++ = 'e';
    end = put_int(end, e - p + 1);
    *end = '\0';
    if (single) {
        float f = strtof(buf, NULL);
        return memcmp(&f, &(float){(float)v}, sizeof f) == 0;
    }
    double x = strtod(buf, NULL);
    return memcmp(&x, &v, sizeof x) == 0;
}

/* Candidate `which` (0: the truncation of the first p digits of full,
 * 1: that plus one in the last place) into d; returns the exponent (one
 * more when the increment carried out of the first digit). */
static int float_candidate(char *d, const char *full, int p, int e, int which)
{
    memcpy(d, full, (size_t)p);
    if (!which)
        return e;
    int i = p - 1;
    while (i >= 0 && d[i] == '9')
        d[i--] = '0';
    if (i >= 0) {
        d[i]++;
        return e;
    }
    d[0] = '1'; /* 99..9 + 1: one digit more, shifted: 10..0 */
    return e + 1;
}

/* The powers of ten a double holds exactly. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The search for the shortest form of one value. */
typedef struct shortest {
    double mag;  /* |v|, finite and nonzero */
    bool single; /* judge by strtof (the value is a float) */
    int k;       /* an estimate of the decimal exponent: 10^k <= mag < 10^(k+1) */
    bool have_full;
    char full[20]; /* the first maxp digits, correctly rounded (on demand) */
    int full_e;
    int maxp;
} shortest_t;

/* The first maxp digits from the C library (the slow, general way). */
static void need_full(shortest_t *s)
{
    if (s->have_full)
        return;
    char sci[40];
    snprintf(sci, sizeof sci, "%.*e", s->maxp - 1, s->mag);
    /* sci is "d.ddd...e[+-]xx". */
    s->full[0] = sci[0];
    memcpy(s->full + 1, sci + 2, (size_t)s->maxp - 1);
    s->full_e = atoi(sci + s->maxp + 2);
    s->have_full = true;
}

/* Whether cand x 10^j reads back as the value, decided without parsing:
 * 1 yes, 0 no, -1 when the parser must judge. cand < 2^53 and 10^|j|
 * (|j| <= 22) are exact doubles, so the one rounding of their product or
 * quotient is exactly the correctly rounded decimal strtod returns. A
 * float needs a second rounding, from that double to float, which agrees
 * with strtof's single rounding unless the double sits exactly halfway
 * between two floats (or in the subnormal or overflow range, where the
 * float's precision differs): then strtof decides. */
static int reads_back_exactly(const shortest_t *s, uint64_t cand, int j)
{
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
    (void)s, (void)cand, (void)j;
    return -1; /* wider intermediates would round twice */
#else
    if (cand >= (UINT64_C(1) << 53))
        return -1;
    double y = j >= 0 ? (double)cand * pow10_exact[j] : (double)cand / pow10_exact[-j];
    if (!s->single)
        return y == s->mag;
    if (!(y >= 0x1p-125 && y <= 0x1.fffffep127))
        return -1;
    uint64_t bits;
    memcpy(&bits, &y, sizeof bits);
    if ((bits & ((UINT64_C(1) << 29) - 1)) == (UINT64_C(1) << 28))
        return -1; /* exactly halfway between two floats */
    return (float)y == (float)s->mag;
#endif
}

/* Whether some decimal of p significant digits reads back as the value;
 * if so, the one found (the nearer of the two that bracket the value,
 * when both do) goes to d (p digits) with its decimal exponent in *de.
 *
 * Fast way, for p <= 16 when 10^(k-p+1) is exact in a double: the value
 * scaled by it, computed with one rounding (relative error 2^-53, below
 * one unit of a 16-digit integer), lies within a unit of the exact scaled
 * value, so the integers c - 2 .. c + 2 around
 * it include the exact value's floor and ceiling: the two decimals that
 * bracket the value. Else the correctly rounded digits of the C library,
 * truncated to p, and that plus one unit. */
static bool probe(shortest_t *s, int p, char *d, int *de)
{
    int j = s->k - p + 1;
    if (p <= 16 && j >= -22 && j <= 22) {
        double scaled = j >= 0 ? s->mag / pow10_exact[j] : s->mag * pow10_exact[-j];
        /* An estimate k one off shows as a scaled value with p + 1 or
         * p - 1 digits: move k and scale again. */
        if (scaled >= pow10_exact[p] || scaled < pow10_exact[p - 1]) {
            s->k += scaled >= pow10_exact[p] ? 1 : -1;
            j = s->k - p + 1;
            if (j < -22 || j > 22)
                goto slow;
            scaled = j >= 0 ? s->mag / pow10_exact[j] : s->mag * pow10_exact[-j];
        }
        uint64_t c = (uint64_t)scaled;
        double frac = scaled - (double)c;
        bool up = frac >= 0.5;
        /* For p <= 15 the scaled value is within 0.11 of the exact one:
         * c and c + 1 bracket the exact value unless frac is that close
         * to an integer. */
        int tries = p <= 15 && frac > 0.125 && frac < 0.875 ? 2 : 5;
        /* Nearest first, so that the one kept is the nearer when both
         * bracketing decimals read back. */
        uint64_t order[5] = {up ? c + 1 : c, up ? c : c + 1, up ? c + 2 : c - 1,
                             up ? c - 1 : c + 2, c - 2};
        for (int i = 0; i < tries; i++) {
            uint64_t cand = order[i];
            if (cand == 0 || cand > c + 2)
                continue; /* c - 1 or c - 2 wrapped below zero */
            int quick = reads_back_exactly(s, cand, j);
            if (quick == 0)
                continue;
            char tmp[24];
            char *first = digits_u64(tmp + sizeof tmp, cand);
            int n = (int)(tmp + sizeof tmp - first);
            /* cand has p digits, or p + 1 when it is 10^p, or p - 1 when
             * it is 10^(p-1) - 1: the same value as p digits is its
             * digits cut or padded with zeros, the exponent that of its
             * first digit. */
            if (quick > 0 || float_reads_back(first, n, j + n - 1, s->mag, s->single)) {
                for (int q = 0; q < p; q++)
                    d[q] = q < n ? first[q] : '0';
                *de = j + n - 1;
                return true;
            }
        }
        return false;
    }
slow:
    need_full(s);
    /* The nearer candidate first, so that the one kept is the nearer when
     * both read back. */
    int first = p < s->maxp && s->full[p] >= '5' ? 1 : 0;
    for (int i = 0; i < 2; i++) {
        int which = i ? !first : first;
        if (p == s->maxp && which)
            continue; /* all maxp digits always read back */
        int e = float_candidate(d, s->full, p, s->full_e, which);
        if (float_reads_back(d, p, e, s->mag, s->single)) {
            *de = e;
            return true;
        }
    }
    return false;
}

/* The shortest form of finite, nonzero v (as a double, or as the float it
 * holds when `single`). Whether some p-digit decimal reads back only grows
 * with p, so a binary search over p finds the fewest digits. */
static int format_shortest(char *out, double v, bool single)
{
    bool neg = signbit(v) != 0;
    shortest_t s = {.mag = neg ? -v : v, .single = single, .maxp = single ? 9 : 17};
    /* k from the binary exponent (2^e2 <= mag < 2^(e2+1)); probe corrects
     * it when it is one off. */
    uint64_t bits;
    memcpy(&bits, &s.mag, sizeof bits);
    int e2 = (int)((bits >> 52) & 0x7FF) - 1023;
    double t = (double)e2 * 0.30102999566398120;
    s.k = (int)t - (t < (double)(int)t ? 1 : 0);
    int lo = 1, hi = s.maxp; /* the answer lies in [lo, hi] */
    char best[24], d[24];
    int best_p = 0, best_e = 0, de = 0;
    while (lo < hi) {
        int p = (lo + hi) / 2;
        if (probe(&s, p, d, &de)) {
            memcpy(best, d, (size_t)p);
            best_p = p;
            best_e = de;
            hi = p;
        } else {
            lo = p + 1;
        }
    }
    if (best_p != lo) {
        bool ok = probe(&s, lo, d, &de);
        tes__assert(ok); /* maxp digits always read back */
        (void)ok;
        memcpy(best, d, (size_t)lo);
        best_p = lo;
        best_e = de;
    }
    /* Trailing zeros say nothing. */
    while (best_p > 1 && best[best_p - 1] == '0')
        best_p--;
    return float_layout(out, neg, best, best_p, best_e);
}

static int format_value(char *buf, double v, bool single, double integral_limit)
{
    if (v == 0)
        return (int)(signbit(v) ? (memcpy(buf, "-0.0", 5), 4) : (memcpy(buf, "0", 2), 1));
    if ((v < 0 ? -v : v) < integral_limit && v == (double)(int64_t)v) {
        char tmp[24];
        int64_t i = (int64_t)v;
        uint64_t mag = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
        char *p = digits_u64(tmp + sizeof tmp, mag);
        if (i < 0)
            *--p = '-';
        size_t n = (size_t)(tmp + sizeof tmp - p);
        memcpy(buf, p, n);
        buf[n] = '\0';
        return (int)n;
    }
    return format_shortest(buf, v, single);
}

int tes__json_format_f32(char *buf, float v) { return format_value(buf, v, true, 16777216.0); }
int tes__json_format_f64(char *buf, double v) { return format_value(buf, v, false, 9007199254740992.0); }

/* NaN and the infinities are strings; everything else a number. */
static bool non_finite(tes__json_out_t *o, double v)
{
    if (isnan(v))
        tes__json_raw(o, "\"nan\"", 5);
    else if (isinf(v))
        tes__json_raw(o, v < 0 ? "\"-inf\"" : "\"inf\"", v < 0 ? 6 : 5);
    else
        return false;
    return true;
}

void tes__json_f32(tes__json_out_t *o, float v)
{
    if (non_finite(o, v))
        return;
    char buf[32];
    int n = tes__json_format_f32(buf, v);
    tes__json_raw(o, buf, (size_t)n);
}

void tes__json_f64(tes__json_out_t *o, double v)
{
    if (non_finite(o, v))
        return;
    char buf[32];
    int n = tes__json_format_f64(buf, v);
    tes__json_raw(o, buf, (size_t)n);
}

void tes__json_base64(tes__json_out_t *o, const uint8_t *p, size_t n)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    tes__json_char(o, '"');
    for (size_t i = 0; i < n; i += 3) {
        uint32_t b = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            b |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            b |= p[i + 2];
        char q[4] = {al[(b >> 18) & 63], al[(b >> 12) & 63], i + 1 < n ? al[(b >> 6) & 63] : '=',
                     i + 2 < n ? al[b & 63] : '='};
        tes__json_raw(o, q, 4);
    }
    tes__json_char(o, '"');
}
