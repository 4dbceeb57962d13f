# events.pxd -- delivery reports read off the event queue; implemented in events.pxi.

ctypedef const char *(*_produce_errstr_fn)(const rd_kafka_message_t *) noexcept nogil


cdef struct _DrBuf:   # a delivery report event's messages, read without the GIL
    const rd_kafka_message_t **msgs
    int64_t *tss      # their timestamps (-1 for a batch's message)
    size_t n          # read into the arrays
    size_t cap


@cython.final
cdef class _DrState:
    cdef _PartCount pc
    cdef const rd_kafka_topic_t *rkt
    cdef int32_t part
