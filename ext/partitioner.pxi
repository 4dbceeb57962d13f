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
