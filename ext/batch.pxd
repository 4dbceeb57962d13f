# batch.pxd -- a batch as chunks and sub-chunks of C arrays, and its future;
# implemented in batch.pxi.

cdef struct _Chunk:
    PyObject *future        # the BatchFuture; the chunk holds one reference
    Py_ssize_t base         # batch index of slots[0]
    Py_ssize_t outstanding  # messages of this chunk whose report is still due
    void **slots            # slots[i] == this chunk


# one sub-chunk as C arrays, message j of the sub-chunk at index j of each
cdef struct _Sub:
    Py_ssize_t cnt              # messages in the sub-chunk
    const char **vp             # values
    size_t *vl
    const char **kp             # keys (NULL pointers when the batch has none)
    size_t *kl
    const int64_t *pd           # partitions; NULL: none given (RD_KAFKA_PARTITION_UA)
    const int64_t *td           # timestamps; NULL: none given (librdkafka's now)
    rd_kafka_headers_t **hp     # NULL: no headers
    int *errs                   # librdkafka's answer for each message handed over
    Py_ssize_t *perm_buf        # room for grouping.pxi's order ...
    const Py_ssize_t *perm      # ... the hand-over order when grouped, NULL: 0..cnt-1
    int32_t *dest_buf           # room for grouping.pxi's partition of each message ...
    const int32_t *dest         # ... when cykafka hands them to it, NULL: librdkafka picks
    _Chunk *chunk               # NULL between sub-chunks


@cython.final
cdef class BatchFuture(_FutureBase):
    cdef object _callbacks      # None, or a list, as _Extra.callbacks
    cdef object _topic
    cdef Py_ssize_t _total, _delivered, _failed
    cdef bint _sealed
    cdef _FailLog _fails
    cdef Failures _failures   # the report's view, made once the batch is complete
    cdef dict _first, _last
    cdef object _on_delivery
    cdef object _report(self)
    cdef _fire(self, dict wake)
    cdef _record_failure(self, Py_ssize_t index, object exc, int32_t partition)
    cdef _call_on_delivery(self, Py_ssize_t index, object exc, int32_t partition, int64_t offset,
                           int64_t ts)
    cdef _offsets(self, int32_t partition, int64_t lo, int64_t hi)
    cdef _maybe_complete(self, dict wake)


@cython.final
cdef class _BatchRun:
    cdef BatchFuture bf
    cdef int32_t partition
    cdef int64_t lo, hi
    cdef flush(self)
    cdef add(self, const rd_kafka_message_t *m, void *op, _Core core, dict wake)
