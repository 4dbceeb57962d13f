# columns.pxd -- a batch column as C arrays (Python sequences, Arrow arrays, NumPy S);
# implemented in columns.pxi.

cdef enum _Kind:
    _K_SEQ = 0
    _K_ARROW = 1
    _K_NUMPY_S = 2


cdef enum _ArrowLayout:
    _A_OFF32 = 0
    _A_OFF64 = 1
    _A_FIXED = 2


cdef struct _ArrowChunk:
    Py_ssize_t start            # batch index of this chunk's element 0
    Py_ssize_t length
    const uint8_t *validity     # NULL: no nulls
    const void *offsets
    const char *data
    Py_ssize_t offset           # the array's own offset into its buffers
    Py_ssize_t width            # fixed_size_binary width
    int layout


@cython.final
cdef class _Column:
    cdef Py_ssize_t n
    cdef int kind
    cdef tuple items            # _K_SEQ
    cdef object keep            # Arrow/NumPy objects whose memory we point into
    cdef _ArrowChunk *chunks
    cdef Py_ssize_t nchunks
    cdef const char *np_data
    cdef Py_ssize_t np_width
    cdef int fill(self, Py_ssize_t start, Py_ssize_t count, const char **ptrs,
                  size_t *lens) except -1


@cython.final
cdef class _IntColumn:
    cdef int64_t *data
    cdef Py_ssize_t n
