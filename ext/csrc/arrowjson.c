/* arrowjson.c -- Arrow arrays as JSON text (arrowjson.h says how).  Every helper is
 * static here, in cj_write's own translation unit, so the compiler inlines them into it
 * as it did when they all lived in the header. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrowjson.h"

/* ---- integers ---------------------------------------------------------- */

/* The decimal digits of v, unpadded, into o (room for 20 bytes); returns the end. */
static inline char *cj_digits(char *o, uint64_t v) {
    char tmp[20];
    int k = 20;
    do { tmp[--k] = (char)('0' + v % 10); v /= 10; } while (v);
    memcpy(o, tmp + k, (size_t)(20 - k));
    return o + (20 - k);
}

static inline int cj_put_u64(cyk_buf *b, uint64_t v) {
    CYK_RESERVE(b, 20);
    b->len = (size_t)(cj_digits(b->p + b->len, v) - b->p);
    return 0;
}

static inline int cj_put_i64(cyk_buf *b, int64_t v) {
    if (v < 0) {
        if (cyk_buf_putc(b, '-')) return -1;
        return cj_put_u64(b, (uint64_t)0 - (uint64_t)v);
    }
    return cj_put_u64(b, (uint64_t)v);
}

static inline int64_t cj_floordiv(int64_t a, int64_t d) {
    int64_t q = a / d;
    if ((a % d != 0) && ((a < 0) != (d < 0))) q -= 1;
    return q;
}

static inline int64_t cj_int_at(const cj_node *n, int64_t i) {
    int64_t k = i + n->offset;
    switch (n->kind) {
    case CJ_I8: return ((const int8_t *)n->b1)[k];
    case CJ_I16: return ((const int16_t *)n->b1)[k];
    case CJ_I32: return ((const int32_t *)n->b1)[k];
    case CJ_U8: return ((const uint8_t *)n->b1)[k];
    case CJ_U16: return ((const uint16_t *)n->b1)[k];
    case CJ_U32: return ((const uint32_t *)n->b1)[k];
    case CJ_U64: return (int64_t)((const uint64_t *)n->b1)[k];
    default: return ((const int64_t *)n->b1)[k];
    }
}

/* ---- doubles ----------------------------------------------------------- */

/* Doubles come pre-formatted by Arrow's own cast to string (double-conversion's
 * shortest form that reads back, run once per column with the GIL released),
 * so that they are byte for byte what the vectorized path wrote: an exact
 * shortest-digits algorithm in C is a project of its own, and printf-and-check
 * ran 20x slower than Arrow's.  Here the text gets ".0" when it is a whole number
 * (Arrow writes 1.0 as "1", which a JSON reader takes for an int), and NaN and
 * the infinities ("nan", "inf", "-inf") what the nonfinite policy says. */
static int cj_put_float_text(cyk_buf *b, const uint8_t *s, size_t n, cj_ctx *c) {
    size_t i;
    int whole = 1;
    if (n && (s[0] == 'n' || s[0] == 'i' || (n > 1 && s[0] == '-' && s[1] == 'i'))) {
        c->bad = s[0] == 'n' ? 0 : (s[0] == 'i' ? 1 : 2);
        if (c->nonfinite == CJ_REFUSE) return 1;
        if (c->nonfinite == CJ_AS_NULL) return cyk_buf_put(b, "null", 4);
        if (c->bare) {
            static const char *const bare[] = {"NaN", "Infinity", "-Infinity"};
            return cyk_buf_put(b, bare[c->bad], strlen(bare[c->bad]));
        } else {
            static const char *const quoted[] = {"\"NaN\"", "\"Infinity\"", "\"-Infinity\""};
            return cyk_buf_put(b, quoted[c->bad], strlen(quoted[c->bad]));
        }
    }
    for (i = (n && s[0] == '-') ? 1 : 0; i < n && whole; i++)
        whole = s[i] >= '0' && s[i] <= '9';
    CYK_RESERVE(b, n + 2);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    if (whole) {
        b->p[b->len++] = '.';
        b->p[b->len++] = '0';
    }
    return 0;
}

/* ---- decimals ---------------------------------------------------------- */

/* A little-endian two's complement integer of nlimb 64-bit limbs, as
 * Java's BigDecimal.toString writes unscaled * 10^-scale. */
static int cj_put_decimal(cyk_buf *b, const uint8_t *le, int nlimb, int scale) {
    uint64_t limb[4];
    char rev[96], d[96];
    int neg, nd = 0, i, top, adj;
    memcpy(limb, le, (size_t)nlimb * 8);
    neg = (limb[nlimb - 1] >> 63) & 1;
    if (neg) {  /* negate: invert and add one */
        unsigned carry = 1;
        for (i = 0; i < nlimb; i++) {
            limb[i] = ~limb[i] + carry;
            carry = carry && limb[i] == 0;
        }
    }
    top = nlimb;
    while (top > 0 && limb[top - 1] == 0) top--;
    while (top > 0) {  /* divide by 10^19, collecting 19 digits per round */
        unsigned __int128 rem = 0;
        uint64_t r;
        for (i = top - 1; i >= 0; i--) {
            unsigned __int128 cur = (rem << 64) | limb[i];
            limb[i] = (uint64_t)(cur / 10000000000000000000ULL);
            rem = cur % 10000000000000000000ULL;
        }
        r = (uint64_t)rem;
        while (top > 0 && limb[top - 1] == 0) top--;
        for (i = 0; i < 19 && (top > 0 || r); i++) { rev[nd++] = (char)('0' + r % 10); r /= 10; }
    }
    if (nd == 0) rev[nd++] = '0';
    for (i = 0; i < nd; i++) d[i] = rev[nd - 1 - i];
    adj = -scale + (nd - 1);
    CYK_RESERVE(b, (size_t)nd + (scale > 0 ? (size_t)scale : 0) + 16);
    if (neg) b->p[b->len++] = '-';
    if (scale >= 0 && adj >= -6) {
        if (scale == 0) {
            memcpy(b->p + b->len, d, (size_t)nd);
            b->len += (size_t)nd;
        } else if (nd > scale) {
            memcpy(b->p + b->len, d, (size_t)(nd - scale));
            b->len += (size_t)(nd - scale);
            b->p[b->len++] = '.';
            memcpy(b->p + b->len, d + nd - scale, (size_t)scale);
            b->len += (size_t)scale;
        } else {
            b->p[b->len++] = '0';
            b->p[b->len++] = '.';
            for (i = 0; i < scale - nd; i++) b->p[b->len++] = '0';
            memcpy(b->p + b->len, d, (size_t)nd);
            b->len += (size_t)nd;
        }
        return 0;
    }
    b->p[b->len++] = d[0];
    if (nd > 1) {
        b->p[b->len++] = '.';
        memcpy(b->p + b->len, d + 1, (size_t)(nd - 1));
        b->len += (size_t)(nd - 1);
    }
    b->p[b->len++] = 'E';
    b->p[b->len++] = adj < 0 ? '-' : '+';
    return cj_put_u64(b, (uint64_t)(adj < 0 ? -adj : adj));
}

/* ---- text and bytes ---------------------------------------------------- */

static const char cj_hex[] = "0123456789abcdef";

/* A JSON string as Python's json.dumps(ensure_ascii=False) writes it. */
static int cj_put_string(cyk_buf *b, const uint8_t *s, size_t n) {
    size_t i, run = 0;
    CYK_RESERVE(b, n + 2);
    b->p[b->len++] = '"';
    for (i = 0; i < n; i++) {
        uint8_t ch = s[i];
        const char *esc;
        char u[6];
        size_t elen;
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        if (cyk_buf_put(b, (const char *)s + run, i - run)) return -1;
        switch (ch) {
        case '"': esc = "\\\""; elen = 2; break;
        case '\\': esc = "\\\\"; elen = 2; break;
        case '\n': esc = "\\n"; elen = 2; break;
        case '\r': esc = "\\r"; elen = 2; break;
        case '\t': esc = "\\t"; elen = 2; break;
        case '\b': esc = "\\b"; elen = 2; break;
        case '\f': esc = "\\f"; elen = 2; break;
        default:
            u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
            u[4] = cj_hex[ch >> 4]; u[5] = cj_hex[ch & 15];
            esc = u; elen = 6;
        }
        if (cyk_buf_put(b, esc, elen)) return -1;
        run = i + 1;
    }
    if (cyk_buf_put(b, (const char *)s + run, n - run)) return -1;
    return cyk_buf_putc(b, '"');
}

static const char cj_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int cj_put_base64(cyk_buf *b, const uint8_t *s, size_t n) {
    size_t i;
    char *o;
    CYK_RESERVE(b, (n + 2) / 3 * 4 + 2);
    o = b->p + b->len;
    *o++ = '"';
    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *o++ = cj_b64[v >> 18];
        *o++ = cj_b64[(v >> 12) & 63];
        *o++ = cj_b64[(v >> 6) & 63];
        *o++ = cj_b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n) v |= (uint32_t)s[i + 1] << 8;
        *o++ = cj_b64[v >> 18];
        *o++ = cj_b64[(v >> 12) & 63];
        *o++ = i + 1 < n ? cj_b64[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
    return 0;
}

static int cj_put_uuid(cyk_buf *b, const uint8_t *s, int q) {
    int i;
    char *o;
    CYK_RESERVE(b, 38);
    o = b->p + b->len;
    if (q) *o++ = '"';
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
        *o++ = cj_hex[s[i] >> 4];
        *o++ = cj_hex[s[i] & 15];
    }
    if (q) *o++ = '"';
    b->len = (size_t)(o - b->p);
    return 0;
}

/* (pointer, length) of element k of a string/binary array of any layout */
static inline const uint8_t *cj_bytes_at(const cj_node *n, int64_t k, size_t *len) {
    switch (n->kind) {
    case CJ_STR: case CJ_BIN: {
        const int32_t *o = (const int32_t *)n->b1;
        *len = (size_t)(o[k + 1] - o[k]);
        return n->b2 ? n->b2 + o[k] : (const uint8_t *)"";
    }
    case CJ_LSTR: case CJ_LBIN: {
        const int64_t *o = (const int64_t *)n->b1;
        *len = (size_t)(o[k + 1] - o[k]);
        return n->b2 ? n->b2 + o[k] : (const uint8_t *)"";
    }
    case CJ_VSTR: case CJ_VBIN: {
        const uint8_t *v = n->b1 + 16 * k;
        int32_t ln, buf, off;
        memcpy(&ln, v, 4);
        *len = (size_t)ln;
        if (ln <= 12) return v + 4;
        memcpy(&buf, v + 8, 4);
        memcpy(&off, v + 12, 4);
        return n->vbufs[buf] + off;
    }
    default:  /* fixed-size binary */
        *len = (size_t)n->width;
        return n->b1 + (size_t)n->width * (size_t)k;
    }
}

/* ---- times ------------------------------------------------------------- */

static const char cj_2dig[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *cj_2(char *o, int64_t v) {
    memcpy(o, cj_2dig + 2 * v, 2);
    return o + 2;
}

/* days since 1970-01-01 -> "YYYY-MM-DD" (proleptic Gregorian, H. Hinnant's
 * civil_from_days); o has room for 24 bytes */
static char *cj_date(char *o, int64_t z) {
    int64_t era, doe, yoe, y, doy, mp, d, m;
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2) y += 1;
    if (y < 0) {
        *o++ = '-';
        y = -y;
    }
    if (y < 10000) {
        o = cj_2(o, y / 100);
        o = cj_2(o, y % 100);
    } else {
        o = cj_digits(o, (uint64_t)y);
    }
    *o++ = '-';
    o = cj_2(o, m);
    *o++ = '-';
    return cj_2(o, d);
}

static int cj_put_date(cyk_buf *b, int64_t z) {
    CYK_RESERVE(b, 24);
    b->len = (size_t)(cj_date(b->p + b->len, z) - b->p);
    return 0;
}

static const int64_t cj_per_sec[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                     100000000, 1000000000};

/* "HH:MM:SS[.fff]" of v units (10^-digits s) into the day; o has room for 48 bytes.
 * A value outside the day (Arrow does not check time-of-day ranges) keeps its sign
 * and as many hour digits as it needs, rather than reading past the digit table. */
static char *cj_clock(char *o, int64_t v, int digits) {
    uint64_t per = (uint64_t)cj_per_sec[digits], a, secs, frac, hours;
    int i;
    if (v < 0) *o++ = '-';
    a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    secs = a / per;
    frac = a % per;
    hours = secs / 3600;
    if (hours < 100) {
        o = cj_2(o, (int64_t)hours);
    } else {
        o = cj_digits(o, hours);
    }
    *o++ = ':';
    o = cj_2(o, (int64_t)(secs / 60 % 60));
    *o++ = ':';
    o = cj_2(o, (int64_t)(secs % 60));
    if (digits) {
        *o++ = '.';
        for (i = digits - 1; i >= 0; i--) {
            o[i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        o += digits;
    }
    return o;
}

static int cj_put_clock(cyk_buf *b, int64_t v, int digits) {
    CYK_RESERVE(b, 48);
    b->len = (size_t)(cj_clock(b->p + b->len, v, digits) - b->p);
    return 0;
}

/* RFC 3339 in UTC, the unit's digits of fraction; q: in JSON quotes */
static int cj_put_timestamp(cyk_buf *b, int64_t v, int digits, int q) {
    int64_t per_day = 86400 * cj_per_sec[digits], day = cj_floordiv(v, per_day);
    char *o;
    CYK_RESERVE(b, 56);
    o = b->p + b->len;
    if (q) *o++ = '"';
    o = cj_date(o, day);
    *o++ = 'T';
    o = cj_clock(o, v - day * per_day, digits);
    *o++ = 'Z';
    if (q) *o++ = '"';
    b->len = (size_t)(o - b->p);
    return 0;
}

/* v units of 10^-digits seconds as exact decimal seconds, trailing zeros dropped */
static int cj_put_seconds(cyk_buf *b, int64_t v, int digits) {
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t per = (uint64_t)cj_per_sec[digits], frac = a % per;
    if (v < 0 && cyk_buf_putc(b, '-')) return -1;
    if (cj_put_u64(b, a / per)) return -1;
    if (frac) {
        char tmp[12];
        int k = digits;
        while (frac % 10 == 0) { frac /= 10; k--; }
        if (cyk_buf_putc(b, '.')) return -1;
        snprintf(tmp, sizeof tmp, "%0*llu", k, (unsigned long long)frac);
        if (cyk_buf_put(b, tmp, (size_t)k)) return -1;
    }
    return 0;
}

/* ---- any value --------------------------------------------------------- */

static int cj_key(cyk_buf *b, const cj_node *n, int64_t i, cj_ctx *c) {
    /* A map key as an object key: a JSON string as it is, anything else (numbers,
     * true/false, null) as its JSON text in quotes. */
    size_t at = b->len;
    int bare = c->bare, r;
    c->bare = 0;
    r = cj_write(b, n, i, c);
    c->bare = bare;
    if (r) return r;
    if (b->p[at] == '"') return 0;
    CYK_RESERVE(b, 2);
    memmove(b->p + at + 1, b->p + at, b->len - at);
    b->p[at] = '"';
    b->len++;
    b->p[b->len++] = '"';
    return 0;
}

int cj_write(cyk_buf *b, const cj_node *n, int64_t i, cj_ctx *c) {
    int64_t k = i + n->offset, a, e, j;
    int q, r, bare = c->bare;
    size_t len;
    const uint8_t *s;
    if (!cj_valid(n, i)) return cyk_buf_put(b, "null", 4);
    q = !bare;
    switch (n->kind) {
    case CJ_NULL: return cyk_buf_put(b, "null", 4);
    case CJ_BOOL:
        return ((n->b1[k >> 3] >> (k & 7)) & 1) ? cyk_buf_put(b, "true", 4) : cyk_buf_put(b, "false", 5);
    case CJ_I8: case CJ_I16: case CJ_I32: case CJ_I64:
    case CJ_U8: case CJ_U16: case CJ_U32:
        return cj_put_i64(b, cj_int_at(n, i));
    case CJ_U64: return cj_put_u64(b, ((const uint64_t *)n->b1)[k]);
    case CJ_FTEXT: {
        const int32_t *o = (const int32_t *)n->b1;
        return cj_put_float_text(b, n->b2 + o[k], (size_t)(o[k + 1] - o[k]), c);
    }
    case CJ_DEC:
        return cj_put_decimal(b, n->b1 + (size_t)n->width * (size_t)k, n->width / 8, n->digits);
    case CJ_STR: case CJ_LSTR: case CJ_VSTR:
        s = cj_bytes_at(n, k, &len);
        return cj_put_string(b, s, len);
    case CJ_BIN: case CJ_LBIN: case CJ_VBIN: case CJ_FBIN:
        s = cj_bytes_at(n, k, &len);
        return cj_put_base64(b, s, len);
    case CJ_UUID: return cj_put_uuid(b, n->b1 + 16 * (size_t)k, q);
    case CJ_DATE32: case CJ_DATE64:
        a = n->kind == CJ_DATE32 ? ((const int32_t *)n->b1)[k]
                                 : cj_floordiv(((const int64_t *)n->b1)[k], 86400000);
        if (q && cyk_buf_putc(b, '"')) return -1;
        if (cj_put_date(b, a)) return -1;
        return q ? cyk_buf_putc(b, '"') : 0;
    case CJ_TIME32: case CJ_TIME64:
        a = n->kind == CJ_TIME32 ? ((const int32_t *)n->b1)[k] : ((const int64_t *)n->b1)[k];
        if (q && cyk_buf_putc(b, '"')) return -1;
        if (cj_put_clock(b, a, n->digits)) return -1;
        return q ? cyk_buf_putc(b, '"') : 0;
    case CJ_TS:
        return cj_put_timestamp(b, ((const int64_t *)n->b1)[k], n->digits, q);
    case CJ_DUR:
        if (cyk_buf_put(b, q ? "\"PT" : "PT", q ? 3 : 2)) return -1;
        if (cj_put_seconds(b, ((const int64_t *)n->b1)[k], n->digits)) return -1;
        return cyk_buf_put(b, q ? "S\"" : "S", q ? 2 : 1);
    case CJ_IVL_M:
        if (cyk_buf_put(b, q ? "\"P" : "P", q ? 2 : 1)) return -1;
        if (cj_put_i64(b, ((const int32_t *)n->b1)[k])) return -1;
        return cyk_buf_put(b, q ? "M\"" : "M", q ? 2 : 1);
    case CJ_IVL_DT: case CJ_IVL_MDN: {
        const uint8_t *v = n->b1 + (size_t)k * (n->kind == CJ_IVL_DT ? 8 : 16);
        int32_t months = 0, days;
        int64_t sub;
        if (n->kind == CJ_IVL_DT) {
            int32_t ms;
            memcpy(&days, v, 4);
            memcpy(&ms, v + 4, 4);
            sub = ms;
        } else {
            memcpy(&months, v, 4);
            memcpy(&days, v + 4, 4);
            memcpy(&sub, v + 8, 8);
        }
        if (cyk_buf_put(b, q ? "\"P" : "P", q ? 2 : 1)) return -1;
        if (n->kind == CJ_IVL_MDN && (cj_put_i64(b, months) || cyk_buf_putc(b, 'M'))) return -1;
        if (cj_put_i64(b, days) || cyk_buf_put(b, "DT", 2)) return -1;
        if (cj_put_seconds(b, sub, n->kind == CJ_IVL_DT ? 3 : 9)) return -1;
        return cyk_buf_put(b, q ? "S\"" : "S", q ? 2 : 1);
    }
    case CJ_DICT:
        c->bare = 0;  /* a dictionary is decoded before a bare column gets here */
        r = cj_write(b, n->kids[1], cj_int_at(n->kids[0], i), c);
        c->bare = bare;
        return r;
    default:
        break;
    }
    /* nested: elements are written as JSON, never bare */
    c->bare = 0;
    r = 0;
    if (n->kind == CJ_STRUCT) {
        if (cyk_buf_putc(b, '{')) return -1;
        for (j = 0; j < n->nkids && r == 0; j++) {
            if (j && cyk_buf_putc(b, ',')) return -1;
            if (cyk_buf_put(b, n->names[j], n->name_lens[j])) return -1;
            r = cj_write(b, n->kids[j], i, c);
        }
        c->bare = bare;
        return r ? r : cyk_buf_putc(b, '}');
    }
    switch (n->kind) {
    case CJ_LIST: case CJ_MAP:
        a = ((const int32_t *)n->b1)[k];
        e = ((const int32_t *)n->b1)[k + 1];
        break;
    case CJ_LLIST:
        a = ((const int64_t *)n->b1)[k];
        e = ((const int64_t *)n->b1)[k + 1];
        break;
    case CJ_LVIEW:
        a = ((const int32_t *)n->b1)[k];
        e = a + ((const int32_t *)n->b2)[k];
        break;
    case CJ_LLVIEW:
        a = ((const int64_t *)n->b1)[k];
        e = a + ((const int64_t *)n->b2)[k];
        break;
    default:  /* fixed-size list */
        a = k * n->width;
        e = a + n->width;
    }
    if (n->kind == CJ_MAP) {
        if (cyk_buf_putc(b, '{')) return -1;
        for (j = a; j < e && r == 0; j++) {
            if (j > a && cyk_buf_putc(b, ',')) return -1;
            r = cj_key(b, n->kids[0], j, c);
            if (r == 0 && cyk_buf_putc(b, ':')) return -1;
            if (r == 0) r = cj_write(b, n->kids[1], j, c);
        }
        c->bare = bare;
        return r ? r : cyk_buf_putc(b, '}');
    }
    if (cyk_buf_putc(b, '[')) return -1;
    for (j = a; j < e && r == 0; j++) {
        if (j > a && cyk_buf_putc(b, ',')) return -1;
        r = cj_write(b, n->kids[0], j, c);
    }
    c->bare = bare;
    return r ? r : cyk_buf_putc(b, ']');
}
