# partitioner.pxd -- librdkafka's partitioner functions, and what kind of answer each gives;
# implemented in partitioner.pxi.

ctypedef int32_t (*_partitioner_fn)(const rd_kafka_topic_t *rkt, const void *keydata,
                                    size_t keylen, int32_t partition_cnt, void *rkt_opaque,
                                    void *msg_opaque) noexcept nogil


cdef enum _PartKind:
    _PK_NONE = 0            # unpredictable (random, or a partitioner_cb)
    _PK_HASH_ALL = 1        # consistent, murmur2, fnv1a: every key, null included
    _PK_NULL_RANDOM = 2     # murmur2_random, fnv1a_random: null key -> random
    _PK_EMPTY_RANDOM = 3    # consistent_random: null or empty key -> random
