# Declarations of cbuf.h: the growing byte buffer of the C encoders.

cdef extern from "cbuf.h" nogil:
    ctypedef struct cyk_buf:
        char *p
        size_t len
        size_t cap

    int cyk_buf_reserve(cyk_buf *b, size_t extra)
    int cyk_buf_put(cyk_buf *b, const void *s, size_t n)
