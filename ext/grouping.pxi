# grouping.pxi -- which partition each message of a batch goes to, and the
# order it is handed over in.
#
# Order: keyed messages spread over partitions in their natural order cost
# librdkafka twice the CPU of the same messages grouped by partition (measured
# here, 1 M keyed 100-byte values to 4 partitions: 2.7 CPU-s and 0.58 M msg/s
# interleaved, 1.1-1.2 CPU-s and ~1 M msg/s grouped; the profile shows
# malloc/free and the per-partition queue walks, as messages are freed in an
# order that no longer matches their allocation).  Kafka orders messages only
# within a partition, so a *stable* grouping by partition keeps every
# guarantee: messages to one partition are still handed over in batch order.
#
# Partition: where librdkafka's answer is already decided, batch.pxi hands a
# run of messages to their partition in one rd_kafka_produce_batch call, which
# then skips librdkafka's partitioner: per message, two clock reads (the
# sticky interval, the partition queue's enqueue time), the partition lookup
# and its availability check - a third of the hand-over's CPU on one
# partition (perf).  Decided means: the topic has one partition (every
# partitioner can only pick 0), or every message has an explicit partition or
# a key the configured partitioner hashes.  We predict with librdkafka's own
# public partitioner functions and the topic's partition count, read with a
# metadata request that also refreshes librdkafka's own view of the topic, so
# a key goes where produce() sends it.  Anything random (CONFIGURATION.md:
# `random`; `consistent_random` - "Empty and NULL keys are randomly
# partitioned"; `murmur2_random`/`fnv1a_random` - "NULL keys are randomly
# partitioned"; keyless messages are sticky, rdkafka_msg.c), an unknown
# partition count, or an explicit partition beyond it leaves the sub-chunk to
# librdkafka's partitioner in its original order.  The count is cached for a
# second; if partitions are added meanwhile, same key -> same prediction still
# keeps each key's order.
#
# librdkafka's "msgs" statistic counts only messages its partitioner placed,
# so batch.pxi counts the others itself (_PartCount.direct) and the inspector
# adds them (stats.pxi).

from libc.stdlib cimport malloc, free
from libc.string cimport memset


cdef int32_t _partition_count(_Core core, _Topic t):
    """The topic's partition count from a metadata request, cached for a second;
    0 when unknown (no broker answered, topic error)."""
    cdef int64_t now = _now_ns()
    cdef int32_t cnt, first
    if t.cnt_at_ns != 0 and now - t.cnt_at_ns < _COUNT_TTL_NS:
        cnt = t.partition_cnt
    else:
        cnt = _read_partition_count(core, t)
    if cnt > 0:
        # Recorded either way, so a change is reported (Producer.partition_count_changes);
        # kept, predict as _kept_partitioner places: over the count seen first.
        first = _kept_count(&t.kept, cnt)
        if core.keep_count:
            return first
    return cnt


cdef int32_t _read_partition_count(_Core core, _Topic t):
    """The topic's partition count from a metadata request, cached in ``t``."""
    cdef const rd_kafka_metadata_t *md = NULL
    cdef rd_kafka_resp_err_t err
    cdef int32_t cnt = 0
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
                       int32_t *part, Py_ssize_t *perm) noexcept nogil:
    """Fill ``part`` with each message's partition and ``perm`` with messages 0..n-1
    stably grouped by it (a counting sort).  False, with both unspecified, when
    some message's partition cannot be predicted or memory is short."""
    cdef Py_ssize_t *start = <Py_ssize_t *>malloc((cnt + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t i
    cdef int32_t g
    cdef bint ok = start != NULL
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
    free(start)
    return ok


cdef bint _only_zero(Py_ssize_t n, const int64_t *pd) noexcept nogil:
    """Whether every message may go to partition 0 (none names another)."""
    cdef Py_ssize_t i
    if pd != NULL:
        for i in range(n):
            if pd[i] != RD_KAFKA_PARTITION_UA and pd[i] != 0:
                return False
    return True


cdef _order_and_route(_Core core, _Topic t, _Sub *s, bint has_keys):
    """Set ``s.perm`` (the hand-over order) and ``s.dest`` (each message's
    partition, when batch.pxi hands it over to that partition itself) for this
    sub-chunk; both NULL: as given, librdkafka partitions."""
    cdef int32_t cnt
    cdef bint ok
    cdef Py_ssize_t n = s.cnt
    # Timestamps or headers: one rd_kafka_produce per message (batch.pxi), which
    # partitions and counts itself; only the order is ours then.
    cdef bint direct = s.td == NULL and s.hp == NULL
    s.perm = NULL
    s.dest = NULL
    if n < _GROUP_MIN:
        return
    if not has_keys and s.pd == NULL and not direct:
        return   # keyless and one call per message: nothing to gain
    cnt = _partition_count(core, t)
    if cnt == 1:
        with nogil:
            ok = direct and _only_zero(n, s.pd)
            if ok:
                memset(s.dest_buf, 0, n * sizeof(int32_t))
        if ok:
            s.dest = s.dest_buf
        return
    if cnt < 2 or (not has_keys and s.pd == NULL) or \
            (s.pd == NULL and core.part_kind == _PK_NONE):
        return
    with nogil:
        ok = _group_order(t.rkt, core.part_fn, core.part_kind, cnt, n, s.kp, s.kl, s.pd,
                          s.dest_buf, s.perm_buf)
    if ok:
        s.perm = s.perm_buf
        core.grouped += n
        if direct:
            s.dest = s.dest_buf
