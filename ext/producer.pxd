# producer.pxd -- the producer object and its transaction calls;
# implemented in producer.pxi.

ctypedef rd_kafka_error_t *(*_txn_fn)(rd_kafka_t *rk, int timeout_ms) noexcept nogil


cdef class NativeProducer:
    cdef _Core _core
    cdef int64_t _exit_timeout_ns   # the flush at exit of an unclosed producer
    cdef object __weakref__
    cdef _Core _usable(self)
