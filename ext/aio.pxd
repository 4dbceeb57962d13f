# aio.pxd -- aproduce_batch's hand-over, cut where produce_batch would wait for
# room; implemented in aio.pxi.

@cython.final
cdef class _ABatch:
    cdef _Core core
    cdef _Topic t
    cdef BatchFuture bf
    cdef _Column vcol, kcol
    cdef _IntColumn pcol, tcol
    cdef list headers
    cdef Py_ssize_t n            # messages in the batch
    cdef Py_ssize_t s            # batch index of the current sub-chunk
    cdef Py_ssize_t j            # position reached in it (perm order)
    cdef bint filled             # sub's arrays hold the current sub-chunk
    cdef _Sub sub                # sub.chunk != NULL: handed over up to j, the rest due
    cdef unsigned long gen       # room_gen read before the attempt that found the queue full
    cdef int step(self, int64_t until_ns) except -1
    cdef fail(self, object why)
