# _native.pxd -- the compiled module's shared C-level declarations: its
# structs, enums (the C constants), function-pointer types and every cdef
# class with its fields and cdef methods.  Declared here once, each .pxi may
# use any of them regardless of include order.

cimport cython
from libc.stdint cimport int32_t, int64_t, intptr_t, uint8_t
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from rdkafka cimport *
from rdkafka_mock cimport *
from sync cimport *


# The C constants.
cdef enum:
    _SUB = 65536   # messages per sub-chunk: bounds the temporary C arrays  (batch.pxi)
    # messages per rd_kafka_produce_batch call: it holds the topic's read lock
    # throughout, so metadata updates wait only briefly  (batch.pxi)
    _SLICE = 512
    _DR_CHUNK = 1024   # events.pxi
    _GROUP_MIN = 256   # smaller sub-chunks are not worth a metadata lookup  (grouping.pxi)
    # re-read a topic's partition count at most once a second  (grouping.pxi)
    _COUNT_TTL_NS = 1000000000
    _COUNT_TIMEOUT_MS = 500   # bound the lookup when brokers are down  (grouping.pxi)
    # wait_room's longest wait: how late Ctrl-C, close() or max.block.ms is noticed
    # if no room appears  (core.pxi)
    _ROOM_SLICE_NS = 10000000
    _STAGE_MAX = 256   # messages produce() hands to librdkafka in one call  (stage.pxi)
    # the longest a staged message waits for the rest of its group  (stage.pxi)
    _STAGE_AGE_NS = 1000000
    _STAGE_BYTES = 65536   # the most value bytes staged at once  (stage.pxi)
    # a hand-over names the partitions when they come in runs this long on average
    _STAGE_RUN_MIN = 16   # (stage.pxi)

# delivery.pxi
cdef enum:
    _PENDING = 0
    _RESOLVED = 1   # delivered (a BatchFuture: complete)
    _FAILED = 2     # a DeliveryFuture whose message failed
    # bits of _FutureBase._held
    _HELD = 1       # a DeliveryFuture's _timestamp holds its value (_hold_value)
    _BLOCKING = 2   # asyncio's _asyncio_future_blocking

# events.pxi
ctypedef const char *(*_produce_errstr_fn)(const rd_kafka_message_t *) noexcept nogil

cdef struct _DrBuf:   # events.pxi: a delivery report event's messages, read without the GIL
    const rd_kafka_message_t **msgs
    int64_t *tss      # their timestamps (-1 for a batch's message)
    size_t n          # read into the arrays
    size_t cap

# args.pxi
cdef struct _Mem:
    const char *ptr
    Py_ssize_t len
    bint has_view
    Py_buffer view

# partitioner.pxi
ctypedef int32_t (*_partitioner_fn)(const rd_kafka_topic_t *rkt, const void *keydata,
                                    size_t keylen, int32_t partition_cnt, void *rkt_opaque,
                                    void *msg_opaque) noexcept nogil

# partitioner.pxi
cdef enum _PartKind:
    _PK_NONE = 0            # unpredictable (random, or a partitioner_cb)
    _PK_HASH_ALL = 1        # consistent, murmur2, fnv1a: every key, null included
    _PK_NULL_RANDOM = 2     # murmur2_random, fnv1a_random: null key -> random
    _PK_EMPTY_RANDOM = 3    # consistent_random: null or empty key -> random

# columns.pxi
cdef enum _Kind:
    _K_SEQ = 0
    _K_ARROW = 1
    _K_NUMPY_S = 2

# columns.pxi
cdef enum _ArrowLayout:
    _A_OFF32 = 0
    _A_OFF64 = 1
    _A_FIXED = 2

# columns.pxi
cdef struct _ArrowChunk:
    Py_ssize_t start            # batch index of this chunk's element 0
    Py_ssize_t length
    const uint8_t *validity     # NULL: no nulls
    const void *offsets
    const char *data
    Py_ssize_t offset           # the array's own offset into its buffers
    Py_ssize_t width            # fixed_size_binary width
    int layout

# failures.pxi
cdef struct _FailRun:
    int64_t start
    int64_t end      # exclusive
    int64_t cause    # index into _FailLog.causes

# batch.pxi
cdef struct _Chunk:
    PyObject *future        # the BatchFuture; the chunk holds one reference
    Py_ssize_t base         # batch index of slots[0]
    Py_ssize_t outstanding  # messages of this chunk whose report is still due
    void **slots            # slots[i] == this chunk

# batch.pxi: one sub-chunk as C arrays, message j of the sub-chunk at index j of each
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

# producer.pxi
ctypedef rd_kafka_error_t *(*_txn_fn)(rd_kafka_t *rk, int timeout_ms) noexcept nogil


cdef class _FutureBase:   # delivery.pxi
    # No cdef methods here or in DeliveryFuture: without a vtable pointer, and
    # with its rarer state behind one reference (_Extra), a pending
    # DeliveryFuture is 48 bytes.  A million pending futures are common, and
    # their memory is written by the event thread and read again by result():
    # every byte shows in produce()'s speed.  These three share one 8-byte word:
    cdef unsigned char _state
    cdef unsigned char _held        # bits: _HELD (a DeliveryFuture's), _BLOCKING
    cdef unsigned short _fork_gen   # _fork_generation at creation (a fork chain's depth)
    cdef int32_t _partition         # DeliveryFuture's; unused by BatchFuture


@cython.final
cdef class _Mirror:   # delivery.pxi
    cdef object cf


@cython.final
cdef class _OnLoop:   # delivery.pxi
    cdef object loop, fn, ctx


@cython.final
cdef class _InContext:   # delivery.pxi
    cdef object fn, ctx


@cython.final
cdef class _Countdown:   # delivery.pxi
    cdef object loop, afut
    cdef Py_ssize_t left


@cython.final
cdef class _AllDelivered:   # delivery.pxi
    cdef list futs
    cdef bint return_exceptions


@cython.final
cdef class _Extra:   # delivery.pxi: what few futures need, kept out of the many
    cdef object topic
    cdef object on_delivery     # dropped once called
    cdef object callbacks       # None, or a list: callables, (loop, afut), _OnLoop, _Countdown
    cdef object exc             # the failure template (never handed out), or None


@cython.final
cdef class DeliveryFuture(_FutureBase):   # delivery.pxi
    cdef object _ctx            # the topic (a str), or an _Extra once the future needs one
    cdef int64_t _offset
    cdef int64_t _timestamp


@cython.final
cdef class _DrState:   # events.pxi
    cdef _PartCount pc
    cdef const rd_kafka_topic_t *rkt
    cdef int32_t part


@cython.final
cdef class _PartCount:   # stats.pxi
    cdef public int64_t delivered, failed
    cdef public int64_t last_offset   # offset of the last acknowledged message, -1: none yet
    cdef public int64_t direct        # handed over to this partition by batch.pxi (not in "msgs")


@cython.final
cdef class _Topic:   # core.pxi
    cdef rd_kafka_topic_t *rkt
    cdef object name
    cdef int32_t partition_cnt   # grouping.pxi's cached count (0: unknown)
    cdef int64_t cnt_at_ns       # when it was read (0: never)


@cython.final
cdef class _Core:   # core.pxi
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
    cdef _partitioner_fn part_fn   # grouping.pxi: librdkafka's partitioner
    cdef int part_kind
    cdef tuple secrets
    cdef object delivery_hint    # str appended to _MSG_TIMED_OUT reports, or None
    cdef object purge_reason     # str appended to _PURGE_* reports (why), or None
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


@cython.final
cdef class _Column:   # columns.pxi
    cdef Py_ssize_t n
    cdef int kind
    cdef tuple items            # _K_SEQ
    cdef object keep            # Arrow/NumPy objects whose memory we point into
    cdef _ArrowChunk *chunks
    cdef Py_ssize_t nchunks
    cdef const char *np_data
    cdef Py_ssize_t np_width
    cdef int fill(self, Py_ssize_t start, Py_ssize_t count, const char **ptrs,
                  size_t *lens) except -1


@cython.final
cdef class _IntColumn:   # columns.pxi
    cdef int64_t *data
    cdef Py_ssize_t n


@cython.final
cdef class _FailLog:   # failures.pxi
    cdef _FailRun *runs
    cdef Py_ssize_t nruns, cap
    cdef list causes          # distinct exceptions
    cdef dict cause_ids       # id(exception) -> index in causes (they stay alive there)
    cdef dict by_text         # (code, text) -> interned KafkaDeliveryError
    cdef object last_exc
    cdef int64_t last_cause
    cdef object exc_for(self, int code, str text)
    cdef int add(self, int64_t index, object exc) except -1
    cdef Failures view(self)


@cython.final
cdef class Failures:   # failures.pxi
    cdef _FailRun *runs
    cdef int64_t *ends        # ends[i]: failures in runs[0..i]
    cdef Py_ssize_t nruns
    cdef int64_t n
    cdef list causes
    cdef tuple _at(self, int64_t k)


@cython.final
cdef class BatchFuture(_FutureBase):   # batch.pxi
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
cdef class _BatchRun:   # batch.pxi
    cdef BatchFuture bf
    cdef int32_t partition
    cdef int64_t lo, hi
    cdef flush(self)
    cdef add(self, const rd_kafka_message_t *m, void *op, _Core core, dict wake)


cdef class NativeProducer:   # producer.pxi
    cdef _Core _core
    cdef int64_t _exit_timeout_ns   # the flush at exit of an unclosed producer
    cdef object __weakref__
    cdef _Core _usable(self)


@cython.final
cdef class _MockCluster:   # mock.pxi
    cdef rd_kafka_t *rk                        # hosts the cluster; never produces
    cdef rd_kafka_mock_cluster_t *mcluster
    cdef readonly int num_brokers
    cdef readonly str bootstrap_servers
    cdef rd_kafka_mock_cluster_t *_mc(self) except NULL
    cdef bint _free(self) noexcept nogil

    @staticmethod
    cdef _check(rd_kafka_resp_err_t err, str what)
