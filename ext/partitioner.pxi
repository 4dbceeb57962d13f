# partitioner.pxi -- librdkafka's own partitioners, by name: which key goes to
# which partition.  One table serves the batch grouping (grouping.pxi) and
# partition_for(), which Python code (cykafka.partitioning) uses to predict a
# key's partition, so a prediction is always librdkafka's answer, never a
# re-implementation of its hash.


# The signature of librdkafka's partitioner functions (rdkafka.h has no typedef).


cdef int _partitioner(str name, _partitioner_fn *fn) except -1:
    """librdkafka's partitioner function for ``name`` and its _PartKind (CONFIGURATION.md,
    `partitioner`); _PK_NONE with ``fn`` NULL for random and unknown names."""
    fn[0] = NULL
    if name == "consistent":
        fn[0] = rd_kafka_msg_partitioner_consistent
        return _PK_HASH_ALL
    if name == "consistent_random":
        fn[0] = rd_kafka_msg_partitioner_consistent_random
        return _PK_EMPTY_RANDOM
    if name == "murmur2":
        fn[0] = rd_kafka_msg_partitioner_murmur2
        return _PK_HASH_ALL
    if name == "murmur2_random":
        fn[0] = rd_kafka_msg_partitioner_murmur2_random
        return _PK_NULL_RANDOM
    if name == "fnv1a":
        fn[0] = rd_kafka_msg_partitioner_fnv1a
        return _PK_HASH_ALL
    if name == "fnv1a_random":
        fn[0] = rd_kafka_msg_partitioner_fnv1a_random
        return _PK_NULL_RANDOM
    return _PK_NONE


cdef inline bint _predictable(int kind, const char *key, size_t keylen) noexcept nogil:
    """Whether a partitioner of ``kind`` hashes this key (rather than picking at random)."""
    return kind != _PK_NONE and (key != NULL or kind == _PK_HASH_ALL) and \
        (keylen != 0 or kind != _PK_EMPTY_RANDOM)


cdef _configure_partitioner(_Core core):
    """Record in ``core`` the partitioner librdkafka uses for its topics (the
    `partitioner` property; default consistent_random)."""
    core.part_kind = _partitioner(_conf_get(core.rk, "partitioner") or "consistent_random",
                                  &core.part_fn)


PARTITIONERS = ("random", "consistent", "consistent_random", "murmur2", "murmur2_random",
                "fnv1a", "fnv1a_random")


def partition_for(str partitioner, key, partition_count):
    """The partition librdkafka's ``partitioner`` gives ``key`` (bytes, str or None)
    among ``partition_count`` partitions, computed by librdkafka's own partitioner
    function; None where it picks at random (``random``; NULL keys for the
    ``*_random`` ones; empty keys too for ``consistent_random``)."""
    cdef _partitioner_fn fn
    cdef int kind
    cdef _Mem k
    cdef int32_t cnt, p
    if partitioner not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {partitioner!r}; librdkafka's are "
                         f"{', '.join(PARTITIONERS)}")
    n = _integer_arg(partition_count, "partition_count", "an int")
    if not 1 <= n <= 0x7fffffff:
        raise ValueError(f"partition_count must be between 1 and 2147483647, not {n}")
    cnt = <int32_t>n
    kind = _partitioner(partitioner, &fn)
    _mem_get(key, &k, "key")
    try:
        if not _predictable(kind, k.ptr, k.len):
            return None
        # Only the random branches of these functions use the topic handle, and
        # _predictable() keeps those from being reached.
        p = fn(NULL, k.ptr, k.len, cnt, NULL, NULL)
    finally:
        _mem_release(&k)
    return p


# keys.partition.count=first.  librdkafka re-reads a topic's metadata every
# topic.metadata.refresh.interval.ms (default 300000) and from then on hashes
# keys over the new partition count: partitions added mid-run move most keys
# (measured: 261 of 500 keys split over two partitions), and per-key order no
# longer holds across the change.  Kept, librdkafka's own partitioner hashes
# every key over the count seen first, so a key stays on its partition for the
# producer's life; new partitions get only keyless messages (sticky/random).
# librdkafka: a topic conf's partitioner_cb "may be called in any thread at
# any time" - hence nogil, no Python, atomics.

cdef inline int32_t _kept_count(_Kept *kept, int32_t cnt) noexcept nogil:
    """The count a keyed message is placed over: the first one seen (recorded now if
    this is it), or ``cnt`` while it is smaller (Kafka never removes partitions)."""
    cdef int32_t first = 0
    atomic_cas_i32(&kept.first, &first, cnt, False, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
    first = atomic_load_i32(&kept.first, __ATOMIC_SEQ_CST)
    atomic_store_i32(&kept.last, cnt, __ATOMIC_SEQ_CST)
    return first if first < cnt else cnt


cdef int32_t _kept_partitioner(const rd_kafka_topic_t *rkt, const void *key, size_t keylen,
                               int32_t partition_cnt, void *rkt_opaque,
                               void *msg_opaque) noexcept nogil:
    cdef _Kept *kept = <_Kept *>rkt_opaque
    return kept.fn(rkt, key, keylen, _kept_count(kept, partition_cnt), NULL, msg_opaque)


cdef rd_kafka_topic_conf_t *_kept_conf(_Core core, _Topic t):
    """The topic conf that keeps ``t``'s keyed placement (NULL: librdkafka's default,
    when the count is not kept or the partitioner is random).  A partitioner_cb set
    on the topic conf replaces the `partitioner` property's function; keyless
    messages still go sticky (rdkafka_msg.c), as before."""
    cdef rd_kafka_topic_conf_t *tconf
    t.kept.fn = core.part_fn
    t.kept.first = core.kept_first if core.keep_count else 0
    t.kept.last = 0
    if not core.keep_count or core.part_kind == _PK_NONE:
        return NULL
    tconf = rd_kafka_default_topic_conf_dup(core.rk)  # partner: rd_kafka_topic_new frees it
    if tconf == NULL:
        raise MemoryError("rd_kafka_default_topic_conf_dup failed")
    rd_kafka_topic_conf_set_partitioner_cb(tconf, _kept_partitioner)
    # t lives in core.topics until _free destroys the handle: the pointer stays valid.
    rd_kafka_topic_conf_set_opaque(tconf, &t.kept)
    return tconf
