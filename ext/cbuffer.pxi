# cbuffer.pxi -- memory a C loop wrote, handed to Arrow without a copy.
#
# The encoders build their output (data, offsets, validity) in malloc'd memory;
# _owned() wraps each block in an object that frees it and exposes it through the
# buffer protocol, so pa.py_buffer keeps it alive as long as the array lives.

from libc.stdlib cimport free
from cpython.buffer cimport PyBuffer_FillInfo


cdef class _CBuffer:
    """malloc'd memory exposed through the buffer protocol (pa.py_buffer keeps it)."""
    cdef char *p
    cdef Py_ssize_t n

    def __cinit__(self):
        self.p = NULL
        self.n = 0

    def __dealloc__(self):
        free(self.p)

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.p if self.p != NULL else <char *>"", self.n, 1,
                          flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


cdef _CBuffer _owned(void *p, Py_ssize_t n):
    cdef _CBuffer cb = _CBuffer.__new__(_CBuffer)
    cb.p = <char *>p   # cb now frees p
    cb.n = n
    return cb
