/* avrobin.c -- the Avro encoding of the values that take more than a few
 * instructions (avrobin.h); cyk_put_long and cyk_scale stay inline in the header. */
#include <stdint.h>
#include <string.h>

#include "avrobin.h"

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

int cyk_put_decimal(cyk_buf *b, const uint8_t *le, int precision,
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

int cyk_put_uuid(cyk_buf *b, const uint8_t *u) {
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
