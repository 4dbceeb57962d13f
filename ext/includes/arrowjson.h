/* arrowjson.h -- Arrow arrays as JSON text, in C, without the GIL.
 *
 * A cj_node is one Arrow array bound to its buffers (by arrowjson.pxi, with the
 * GIL, once per batch): its kind, its offset, its validity bitmap, its data and
 * its children.  cj_write() appends the JSON text of element i (a logical
 * index of the bound array) to a growing buffer; nested types recurse.  One
 * rule per type, at any depth: what a column of that type is written as, its
 * elements inside lists, structs and maps are written as too.
 *
 * Numbers are written as Arrow's own cast to string writes them (doubles in the
 * shortest form that reads back, with ".0" on whole numbers so that they stay
 * doubles; decimals as Java's BigDecimal.toString), so the output is the one
 * the vectorized Arrow path gave, byte for byte.  Doubles are that cast's text
 * (see cj_put_float_text), everything else is formatted here.
 */
#ifndef CYK_ARROWJSON_H
#define CYK_ARROWJSON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbuf.h"

enum {
    CJ_NULL, CJ_BOOL, CJ_I8, CJ_I16, CJ_I32, CJ_I64, CJ_U8, CJ_U16, CJ_U32, CJ_U64,
    CJ_FTEXT, CJ_DEC,
    CJ_STR, CJ_LSTR, CJ_VSTR, CJ_BIN, CJ_LBIN, CJ_VBIN, CJ_FBIN, CJ_UUID,
    CJ_DATE32, CJ_DATE64, CJ_TIME32, CJ_TIME64, CJ_TS, CJ_DUR,
    CJ_IVL_M, CJ_IVL_DT, CJ_IVL_MDN,
    CJ_DICT, CJ_LIST, CJ_LLIST, CJ_FLIST, CJ_LVIEW, CJ_LLVIEW, CJ_STRUCT, CJ_MAP
};

/* What a non-finite double becomes (nonfinite=). */
enum { CJ_REFUSE = 0, CJ_AS_NULL = 1, CJ_AS_STRING = 2 };

typedef struct cj_node {
    int kind;
    int digits;          /* time, timestamp, duration: fraction digits; decimal: scale */
    int width;           /* fixed binary / decimal byte width, fixed list size */
    int64_t offset;      /* the array's own offset into its buffers */
    const uint8_t *valid;   /* NULL: no nulls */
    const uint8_t *b1;      /* values, offsets, views or (dictionary) nothing */
    const uint8_t *b2;      /* variable-width data, list-view sizes */
    const uint8_t *const *vbufs;  /* view types: the data buffers */
    int nkids;
    struct cj_node *const *kids;  /* dictionary: indices, values; map: keys, items */
    const char *const *names;     /* struct: '"name":' per field */
    const size_t *name_lens;
} cj_node;

typedef struct {
    int nonfinite;  /* CJ_REFUSE ... */
    int bare;       /* top level of a message column: times and "NaN" without quotes */
    int bad;        /* set on refusal: 0 NaN, 1 Infinity, 2 -Infinity */
} cj_ctx;

/* Whether element i is not null: asked per value by arrowjson.pxi's row loop too, so
 * it stays inline here (two loads and a shift). */
static inline int cj_valid(const cj_node *n, int64_t i) {
    int64_t k = i + n->offset;
    return n->valid == NULL || ((n->valid[k >> 3] >> (k & 7)) & 1);
}

/* Appends the JSON text of element i of n to b: 0, -1 (out of memory), or 1 (a
 * non-finite double refused; c->bad says which).  In csrc/arrowjson.c. */
int cj_write(cyk_buf *b, const cj_node *n, int64_t i, cj_ctx *c);

#endif
