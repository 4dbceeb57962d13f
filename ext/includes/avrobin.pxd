# Declarations of avrobin.h: Avro's binary encoding of single values, without the GIL.

from libc.stdint cimport uint8_t, int64_t
from cbuf cimport cyk_buf

cdef extern from "avrobin.h" nogil:
    int cyk_put_long(cyk_buf *b, int64_t v)
    int cyk_scale(int64_t v, int64_t mul, int64_t div, int64_t *out)
    int cyk_put_decimal(cyk_buf *b, const uint8_t *le, int precision, int scale_up, int size)
    int cyk_put_uuid(cyk_buf *b, const uint8_t *u)
