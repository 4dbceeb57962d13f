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

/* A long (or int) as Avro writes it: zigzag, then base-128 varint.  This and
 * cyk_scale run per value of the row loop in another translation unit (avro.pxi's):
 * inline here, a few instructions each, rather than a call in csrc/avrobin.c. */
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

/* A decimal128 (16 bytes, little-endian two's complement) as Avro decimal:
   size == 0: bytes (fastavro's length); size > 0: fixed of that size.
   Returns 0, -1 (out of memory), or 4 (precision), 6 (does not fit). */
int cyk_put_decimal(cyk_buf *b, const uint8_t *le, int precision, int scale_up, int size);

/* A UUID's 16 bytes as Avro's uuid string (36 characters, length first). */
int cyk_put_uuid(cyk_buf *b, const uint8_t *u);

#endif
