# core.pxd -- a producer's shared state: the librdkafka handle, its topics,
# the stage, the counters; implemented in core.pxi.

@cython.final
cdef class _Topic:
    cdef rd_kafka_topic_t *rkt
    cdef object name
    cdef int32_t partition_cnt   # grouping.pxi's cached count (0: unknown)
    cdef int64_t cnt_at_ns       # when it was read (0: never)
    cdef _Kept kept              # keys.partition.count=first (partitioner.pxi); rkt's opaque


@cython.final
cdef class _Core:
    cdef rd_kafka_t *rk
    cdef rd_kafka_queue_t *mainq
    cdef dict topics
    cdef object last_name        # topic(): the last name asked for and its handle
    cdef _Topic last_topic
    cdef Py_ssize_t pending      # handed to librdkafka, outcome not yet known
    cdef int64_t produced, delivered, failed
    cdef int64_t grouped         # batch messages handed over grouped by partition
    cdef int64_t blocked_ns      # time spent waiting for room in librdkafka's queue
    cdef int64_t exhausted       # produce calls refused: the queue stayed full (max.block.ms)
    cdef int64_t size_max        # largest key + value accepted since take_size_max(), -1: none
    cdef int waiting             # threads sleeping in wait_room now (changed with the GIL)
    # The room signal (core.pxi): the event thread bumps room_gen and wakes
    # wait_room each time it frees librdkafka's queue.
    cdef pthread_mutex_t room_mu
    cdef pthread_cond_t room_cv
    cdef unsigned long room_gen
    cdef bint room_ready         # room_mu and room_cv are initialised
    # asyncio's side of the room signal (aio.pxi): (loop, future) of each aproduce
    # waiting for room, and their count, which the event thread reads under room_mu.
    cdef list room_afuts
    cdef int room_async
    cdef int64_t max_block_ns
    cdef int64_t copy_max        # message.copy.max.bytes: larger values are copied (produce)
    # The stage (stage.pxi): produce()'s messages not yet handed to librdkafka.
    cdef rd_kafka_message_t stage[_STAGE_MAX]
    cdef PyObject *stage_keys[_STAGE_MAX]   # the key objects, until librdkafka copies them
    cdef int stage_n             # read by the event thread without the GIL (atomics)
    cdef int64_t stage_bytes     # the staged values' bytes ...
    cdef int64_t stage_bytes_max   # ... kept under 1/64 of queue.buffering.max.kbytes
    cdef int64_t max_msgs        # queue.buffering.max.messages
    cdef rd_kafka_topic_t *stage_rkt
    cdef _Topic stage_topic      # stage_rkt's _Topic (its cached partition count)
    cdef int32_t stage_part[_STAGE_MAX]   # each staged message's partition, when predicted
    cdef int64_t stage_since     # _now_ns() when the oldest staged message came
    cdef bint stage_stuck        # the last hand-over found the queue full ...
    cdef unsigned long stage_stuck_gen   # ... at this room_gen
    cdef bint stage_ok           # produce() may stage (not transactional, linger.ms > 0)
    cdef int pid_kicks           # metadata requests left to hurry the producer id (events.pxi)
    cdef int64_t pid_kick_ns     # _now_ns() when the event thread makes the next one
    cdef int ev_idle             # the event thread waits with an empty stage: wake it
    cdef bint stopping, closed
    cdef bint closing            # close() has begun: no new calls may use rk
    cdef Py_ssize_t active       # calls between enter() and leave(): they use rk
    cdef object close_lock       # one close() at a time (an RLock: see close())
    cdef bint in_close           # _close() is running (on the close_lock's owner)
    cdef bint orphaned           # dropped on its own event thread, which then closes it
    cdef int64_t orphan_deadline
    cdef long fork_gen
    cdef int pid
    cdef object thread
    cdef object name
    cdef object error_cb, stats_cb
    cdef object fatal_error
    cdef object last_stats, last_stats_time
    cdef object last_direct      # _direct_counts() when last_stats came (stats.pxi)
    cdef Py_ssize_t stats_count
    cdef object stats_unread     # deque of (time received, json) not yet taken (stats.pxi)
    cdef Py_ssize_t stats_unread_bytes
    cdef double last_outcome_time   # monotonic time of the latest delivery report served
    cdef dict part_counts        # (topic, partition) -> _PartCount (stats.pxi)
    cdef _partitioner_fn part_fn   # librdkafka's partitioner
    cdef int part_kind
    cdef bint keep_count         # keys.partition.count=first: keyed placement keeps its count
    cdef int32_t kept_first      # ... or the count given (0: the first one seen)
    cdef tuple secrets
    cdef object latency_cb       # (delivered [s], failed [(s, error name)]) per report, or None
    cdef object delivery_hint    # str appended to _MSG_TIMED_OUT reports, or None
    cdef object purge_reason     # str appended to _PURGE_* reports (why), or None
    cdef dict size_limits        # topic -> its max.message.bytes, for MSG_SIZE_TOO_LARGE
    cdef bint txn_open           # begin_transaction() succeeded, no commit/abort since
    cdef bint txn_commit_at_close   # close(commit=True): commit an open transaction
    cdef int64_t txn_produced, txn_delivered   # produced/delivered when it began
    cdef str principal           # who the brokers authorize, as ACLs name it (errors.pxi)
    cdef str redact(self, str text)
    cdef start(self, dict config, object max_block_s, object error_cb, object stats_cb,
               tuple secrets)
    cdef int check_usable(self) except -1
    cdef int enter(self) except -1
    cdef void leave(self) noexcept
    cdef int check_closing(self, str what) except -1
    cdef _Topic topic(self, object name)
    cdef int wait_room(self, int64_t *deadline, unsigned long gen) except -1
    cdef raise_produce_error(self, int err, str topic)
    cdef Py_ssize_t flush(self, int64_t timeout_ns, bint by_close=*) except -1
    cdef Py_ssize_t close(self, int64_t timeout_ns) except -1
    cdef Py_ssize_t _close(self, int64_t timeout_ns) except -1
    cdef purge(self)
    cdef Py_ssize_t abandon(self, str when) except -1
    cdef release(self)
    cdef bint _free(self) noexcept
