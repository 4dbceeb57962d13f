# grouping.pxi -- hand a batch to librdkafka grouped by partition.
#
# Why: keyed messages spread over partitions in their natural order cost
# librdkafka twice the CPU of the same messages grouped by partition (measured
# here, 1 M keyed 100-byte values to 4 partitions: 2.7 CPU-s and 0.58 M msg/s
# interleaved, 1.1-1.2 CPU-s and ~1 M msg/s grouped; the profile shows
# malloc/free and the per-partition queue walks, as messages are freed in an
# order that no longer matches their allocation).  Kafka orders messages only
# within a partition, so a *stable* grouping by partition keeps every
# guarantee: messages to one partition are still handed over in batch order.
#
# The grouping is only an order.  librdkafka still picks each message's
# partition (RD_KAFKA_PARTITION_UA), so a key goes exactly where produce()
# would send it.  We predict the partition with librdkafka's own public
# partitioner functions and the topic's partition count; a sub-chunk is
# grouped only when every message's partition is predictable (an explicit
# partition, or a key the configured partitioner hashes); anything random
# (CONFIGURATION.md: `random`; `consistent_random` - "Empty and NULL keys are
# randomly partitioned"; `murmur2_random`/`fnv1a_random` - "NULL keys are
# randomly partitioned"), an unknown partition count, or an explicit partition
# beyond it leaves the sub-chunk in its original order.  The count is cached
# for a second; if partitions are added meanwhile, same key -> same prediction
# still keeps each key's order.

from libc.stdlib cimport malloc, free
from libc.string cimport memset


cdef int32_t _partition_count(_Core core, _Topic t):
    """The topic's partition count from a metadata request, cached for a second;
    0 when unknown (no broker answered, topic error)."""
    cdef int64_t now = _now_ns()
    cdef const rd_kafka_metadata_t *md = NULL
    cdef rd_kafka_resp_err_t err
    cdef int32_t cnt = 0
    if t.cnt_at_ns != 0 and now - t.cnt_at_ns < _COUNT_TTL_NS:
        return t.partition_cnt
    with nogil:
        err = rd_kafka_metadata(core.rk, 0, t.rkt, &md, _COUNT_TIMEOUT_MS)
        if err == RD_KAFKA_RESP_ERR_NO_ERROR:
            if md.topic_cnt == 1 and md.topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR:
                cnt = md.topics[0].partition_cnt
            rd_kafka_metadata_destroy(md)  # partner: rd_kafka_metadata above
    t.partition_cnt = cnt
    t.cnt_at_ns = _now_ns()
    return cnt


cdef bint _group_order(const rd_kafka_topic_t *rkt, _partitioner_fn fn, int kind,
                       int32_t cnt,
                       Py_ssize_t n, const char **kp, const size_t *kl, const int64_t *pd,
                       Py_ssize_t *perm) noexcept nogil:
    """Fill ``perm`` with messages 0..n-1 stably grouped by predicted partition
    (a counting sort).  False, with ``perm`` unspecified, when some message's
    partition cannot be predicted or memory is short."""
    cdef int32_t *part = <int32_t *>malloc(n * sizeof(int32_t))
    cdef Py_ssize_t *start = <Py_ssize_t *>malloc((cnt + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t i
    cdef int32_t g
    cdef bint ok = part != NULL and start != NULL
    if ok:
        memset(start, 0, (cnt + 1) * sizeof(Py_ssize_t))
        for i in range(n):
            if pd != NULL and pd[i] != RD_KAFKA_PARTITION_UA:
                if pd[i] >= cnt:   # librdkafka will refuse it; keep the batch as given
                    ok = False
                    break
                g = <int32_t>pd[i]
            elif not _predictable(kind, kp[i], kl[i]):
                ok = False
                break
            else:
                g = fn(rkt, kp[i], kl[i], cnt, NULL, NULL)
            part[i] = g
            start[g + 1] += 1
    if ok:
        for g in range(cnt):
            start[g + 1] += start[g]
        for i in range(n):
            perm[start[part[i]]] = i
            start[part[i]] += 1
    free(part)
    free(start)
    return ok


cdef bint _plan_order(_Core core, _Topic t, Py_ssize_t n, bint has_keys, const char **kp,
                      const size_t *kl, const int64_t *pd, Py_ssize_t *perm):
    """Whether to hand this sub-chunk over in ``perm`` order (filled here)."""
    cdef int32_t cnt
    cdef bint ok
    if n < _GROUP_MIN or (not has_keys and pd == NULL):
        return False
    if pd == NULL and core.part_kind == _PK_NONE:
        return False
    cnt = _partition_count(core, t)
    if cnt < 2:
        return False
    with nogil:
        ok = _group_order(t.rkt, core.part_fn, core.part_kind, cnt, n, kp, kl, pd, perm)
    return ok
