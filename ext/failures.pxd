# failures.pxd -- a batch's failed messages, in runs of one cause;
# implemented in failures.pxi.

cdef struct _FailRun:
    int64_t start
    int64_t end      # exclusive
    int64_t cause    # index into _FailLog.causes


@cython.final
cdef class _FailLog:
    cdef _FailRun *runs
    cdef Py_ssize_t nruns, cap
    cdef list causes          # distinct exceptions
    cdef dict cause_ids       # id(exception) -> index in causes (they stay alive there)
    cdef dict by_text         # (code, text) -> interned KafkaDeliveryError
    cdef object last_exc
    cdef int64_t last_cause
    cdef object exc_for(self, int code, str text)
    cdef int add(self, int64_t index, object exc) except -1
    cdef Failures view(self)


@cython.final
cdef class Failures:
    cdef _FailRun *runs
    cdef int64_t *ends        # ends[i]: failures in runs[0..i]
    cdef Py_ssize_t nruns
    cdef int64_t n
    cdef list causes
    cdef tuple _at(self, int64_t k)
