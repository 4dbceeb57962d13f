# partitioner.pxd -- librdkafka's partitioner functions, and what kind of answer each gives;
# implemented in partitioner.pxi.

ctypedef int32_t (*_partitioner_fn)(const rd_kafka_topic_t *rkt, const void *keydata,
                                    size_t keylen, int32_t partition_cnt, void *rkt_opaque,
                                    void *msg_opaque) noexcept nogil


# A topic's keyed placement kept on the partition count seen first
# (keys.partition.count=first): librdkafka calls _kept_partitioner with the
# topic's current count, it hashes over ``first`` instead.  ``last`` is the latest
# count seen, so a change can be reported.  Both are written by whichever thread
# sees a count first (a producing thread, librdkafka's main thread): atomics.
ctypedef struct _Kept:
    _partitioner_fn fn
    int32_t first    # 0: no count seen yet
    int32_t last


cdef enum _PartKind:
    _PK_NONE = 0            # unpredictable (random, or a partitioner_cb)
    _PK_HASH_ALL = 1        # consistent, murmur2, fnv1a: every key, null included
    _PK_NULL_RANDOM = 2     # murmur2_random, fnv1a_random: null key -> random
    _PK_EMPTY_RANDOM = 3    # consistent_random: null or empty key -> random
