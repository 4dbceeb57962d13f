/* avrobin.h -- the Avro binary encoding of single values, in C, without the GIL
 * (the row loop that calls these is avro.pxi's _a_enc).
 *
 * Each writer appends to a cyk_buf (cbuf.h) and returns 0, or -1 when memory ran
 * out; cyk_put_decimal returns a row error code of avro.pxi (_AE_PRECISION,
 * _AE_FIT) for a value the schema cannot hold.
 */
#ifndef CYK_AVROBIN_H
#define CYK_AVROBIN_H

#include <stdint.h>
#include <string.h>

#include "cbuf.h"

/* A long (or int) as Avro writes it: zigzag, then base-128 varint. */
static inline int cyk_put_long(cyk_buf *b, int64_t v) {
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    char *o;
    CYK_RESERVE(b, 10);
    o = b->p + b->len;
    while (z > 0x7f) { *o++ = (char)((z & 0x7f) | 0x80); z >>= 7; }
    *o++ = (char)z;
    b->len = (size_t)(o - b->p);
    return 0;
}

/* floor(v * mul / div), 0 on success, 1 on overflow */
static inline int cyk_scale(int64_t v, int64_t mul, int64_t div, int64_t *out) {
    int64_t r, q;
    if (mul != 1 && __builtin_mul_overflow(v, mul, &r)) return 1;
    if (mul == 1) r = v;
    if (div == 1) { *out = r; return 0; }
    q = r / div;
    if ((r % div != 0) && (r < 0)) q -= 1;
    *out = q;
    return 0;
}

typedef __int128 cyk_i128;
typedef unsigned __int128 cyk_u128;

static int cyk_digits(cyk_u128 m) {
    int d = 1;
    while (m >= 10) { m /= 10; d++; }
    return d;
}

static int cyk_bitlen(cyk_u128 m) {
    int n = 0;
    while (m) { m >>= 1; n++; }
    return n;
}

/* A decimal128 (16 bytes, little-endian two's complement) as Avro decimal:
   size == 0: bytes (fastavro's length); size > 0: fixed of that size.
   Returns 0, or 4 (precision), 6 (does not fit). */
static int cyk_put_decimal(cyk_buf *b, const uint8_t *le, int precision,
                           int scale_up, int size) {
    cyk_i128 v = 0;
    cyk_u128 m;
    int i, n, bits;
    unsigned char out[32];
    memcpy(&v, le, 16);
    m = v < 0 ? (cyk_u128)(-(v + 1)) + 1 : (cyk_u128)v;
    if (cyk_digits(m) > precision) return 4;
    for (i = 0; i < scale_up; i++) {
        if (m > ((cyk_u128)1 << 125) / 5) return 6;
        m *= 10;
        v *= 10;
    }
    bits = cyk_bitlen(m);
    if (size == 0) {
        n = (bits + 8) / 8;
        if (cyk_put_long(b, n)) return -1;
    } else {
        /* two's complement needs bits + 1, except -2^(k-1) itself */
        if (bits + 1 > size * 8 &&
            !(v < 0 && bits == size * 8 && m == ((cyk_u128)1 << (bits - 1))))
            return 6;
        n = size;
    }
    if (n > 32) return 6;
    for (i = 0; i < n; i++) {
        int shift = 8 * (n - 1 - i);
        out[i] = shift >= 128 ? (v < 0 ? 0xff : 0) : (unsigned char)((v >> shift) & 0xff);
    }
    return cyk_buf_put(b, out, (size_t)n);
}

static int cyk_put_uuid(cyk_buf *b, const uint8_t *u) {
    static const char hex[] = "0123456789abcdef";
    char s[37];
    int i, o = 0;
    s[o++] = 36 << 1;   /* the zigzag length of a 36-character string */
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s[o++] = '-';
        s[o++] = hex[u[i] >> 4];
        s[o++] = hex[u[i] & 15];
    }
    return cyk_buf_put(b, s, 37);
}

#endif
