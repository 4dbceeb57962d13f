# Declarations of arrowjson.h: Arrow arrays as JSON text, without the GIL.

from libc.stdint cimport uint8_t, int64_t
from cbuf cimport cyk_buf

cdef extern from "arrowjson.h" nogil:
    ctypedef struct cj_node:
        int kind
        int digits
        int width
        int64_t offset
        const uint8_t *valid
        const uint8_t *b1
        const uint8_t *b2
        const uint8_t *const *vbufs
        int nkids
        cj_node *const *kids
        const char *const *names
        const size_t *name_lens

    ctypedef struct cj_ctx:
        int nonfinite
        int bare
        int bad

    enum:
        CJ_NULL, CJ_BOOL, CJ_I8, CJ_I16, CJ_I32, CJ_I64, CJ_U8, CJ_U16, CJ_U32, CJ_U64
        CJ_FTEXT, CJ_DEC
        CJ_STR, CJ_LSTR, CJ_VSTR, CJ_BIN, CJ_LBIN, CJ_VBIN, CJ_FBIN, CJ_UUID
        CJ_DATE32, CJ_DATE64, CJ_TIME32, CJ_TIME64, CJ_TS, CJ_DUR
        CJ_IVL_M, CJ_IVL_DT, CJ_IVL_MDN
        CJ_DICT, CJ_LIST, CJ_LLIST, CJ_FLIST, CJ_LVIEW, CJ_LLVIEW, CJ_STRUCT, CJ_MAP

    enum:
        CJ_REFUSE, CJ_AS_NULL, CJ_AS_STRING

    int cj_valid(const cj_node *n, int64_t i)
    int cj_write(cyk_buf *b, const cj_node *n, int64_t i, cj_ctx *c)
