# args.pxd -- what an argument lends as C memory; implemented in args.pxi.

cdef struct _Mem:
    const char *ptr
    Py_ssize_t len
    bint has_view
    Py_buffer view
