# stage.pxi -- produce() hands its messages to librdkafka in groups.
#
# Why: librdkafka's per-message calls (rd_kafka_produce, producev) read the
# clock four times per message - the enqueue time and the CreateTime in
# rd_kafka_msg_new, the sticky partitioner's interval and the partition
# queue's enqueue time - and take the topic lock per message;
# rd_kafka_produce_batch takes the enqueue time, the CreateTime and the topic
# lock once per call (the partitioner still reads the clock twice per
# message).  On this project's benchmark machine the four reads were 16 % of
# a produce() loop's CPU (perf).
#
# So a plain produce() (bytes value lent to librdkafka, bytes or no key, no
# partition, timestamp or headers) appends its message to the core's stage, and
# the stage goes to rd_kafka_produce_batch(RD_KAFKA_PARTITION_UA) as one call:
# librdkafka still runs its own partitioner on every message, so keys and
# sticky partitions behave exactly as with produce().  Except where that
# partitioner's answer is already decided (the topic has one partition, or
# every staged key is one it hashes and they come in long runs of one
# partition): then the stage goes over run by run, in its order, each run
# naming its partition, found with librdkafka's own partitioner function as
# grouping.pxi does for batches, and librdkafka skips its partitioner (on one
# partition: 15 % less CPU per produce() loop here).  What changes:
#
# * A message waits in the stage until _STAGE_MAX messages are staged, another
#   call needs librdkafka to have everything (a produce that goes direct,
#   produce_batch/produce_many, flush, close, result()/exception()/await on a
#   pending future), or at most _STAGE_AGE_NS: the producing thread checks the
#   age every 8th message, the event thread wakes for it when nobody produces.
# * librdkafka stamps the message's CreateTime and starts message.timeout.ms
#   when the stage is handed over, that little later than produce().
# * Backpressure stays librdkafka's: a message is staged only while its queue
#   has room for it by count (pending < queue.buffering.max.messages), so a
#   full queue still blocks produce() for max.block.ms; the staged values'
#   bytes (lent, never copied: librdkafka's memory does not grow) stay under
#   1/64 of queue.buffering.max.kbytes.
# * A message librdkafka refuses (too large for message.max.bytes, unknown
#   topic, a fatal error) fails its future at the hand-over instead of in
#   produce().
#
# Order is kept: the stage is FIFO, every hand-over takes a prefix of it, and
# any other way into librdkafka empties it first.  All changes to the stage
# happen with the GIL held; without it the event thread only reads stage_n,
# stage_since and stage_stuck(_gen), and writes ev_idle.  Transactional
# producers and linger.ms=0 do not stage: there every produce() must reach
# librdkafka at once.

from libc.string cimport memmove, memset
from cpython.ref cimport Py_XDECREF

# Cores whose stage holds messages: a thread about to wait for a future hands
# them over first (it cannot know which producer the future came from).
cdef set _staged = set()


cdef inline bint _stage_due(_Core core) noexcept nogil:
    """Whether the stage holds messages old enough to hand over, and handing them
    over may succeed (not stuck on a full queue since the last try)."""
    if atomic_load_int(&core.stage_n, __ATOMIC_SEQ_CST) == 0:
        return False
    if core.stage_stuck and _room_gen(core) == core.stage_stuck_gen:
        return False
    return _now_ns() - atomic_load_i64(&core.stage_since, __ATOMIC_SEQ_CST) >= _STAGE_AGE_NS


cdef rd_kafka_event_t *_next_event(_Core core) noexcept nogil:
    """The event thread's wait for its next event (NULL: none within 200 ms or until a
    producer-id metadata request is due, or the stage is due).  While the stage
    holds messages it waits in 1 ms slices; with the stage empty it says so in
    ev_idle, and _stage_push wakes it
    (rd_kafka_queue_yield: "Cancels the current rd_kafka_queue_poll() on rkqu")
    when a first message arrives.  ev_idle and stage_n are written and then the
    other is read, both sequentially consistent: one side sees the other."""
    cdef rd_kafka_event_t *ev
    while True:
        if _stage_due(core):
            return NULL
        if atomic_load_int(&core.stage_n, __ATOMIC_SEQ_CST) and not core.stage_stuck:
            ev = rd_kafka_queue_poll(core.mainq, 1)
            if ev != NULL or core.stopping:
                return ev
            continue
        atomic_store_int(&core.ev_idle, 1, __ATOMIC_SEQ_CST)
        if atomic_load_int(&core.stage_n, __ATOMIC_SEQ_CST) and not core.stage_stuck:
            atomic_store_int(&core.ev_idle, 0, __ATOMIC_SEQ_CST)
            continue
        ev = rd_kafka_queue_poll(core.mainq, _idle_wait_ms(core))
        atomic_store_int(&core.ev_idle, 0, __ATOMIC_SEQ_CST)
        return ev


cdef inline int _idle_wait_ms(_Core core) noexcept nogil:
    """200 ms, or less when the next producer-id metadata request (events.pxi) is due
    sooner."""
    cdef int64_t ms
    if core.pid_kicks <= 0:
        return 200
    ms = (core.pid_kick_ns - _now_ns()) // 1_000_000 + 1
    return <int>max(1, min(ms, 200))


cdef inline bint _stage_full_for(_Core core, _Topic t, int64_t vlen) noexcept:
    """Whether staging a ``vlen``-byte value for ``t`` must hand the stage over
    first (another topic, the stage full or old)."""
    cdef int n = core.stage_n
    return n != 0 and (t.rkt != core.stage_rkt or n == _STAGE_MAX or
                       core.stage_bytes + vlen > core.stage_bytes_max or (
                           (n & 7) == 0 and _now_ns() - core.stage_since >= _STAGE_AGE_NS))


cdef int _stage_push(_Core core, _Topic t, DeliveryFuture fut, object value, object key,
                     const _Mem *v, const _Mem *k) except -1:
    """Stage one message (the caller has entered and checked that it may be staged).
    Raises, with nothing staged, if the stage is full and cannot be handed over
    (QueueFullError after max.block.ms, Ctrl-C, close())."""
    cdef int n = core.stage_n
    cdef rd_kafka_message_t *m
    # Another thread may stage while a hand-over waits for room: re-check after it.
    while _stage_full_for(core, t, v.len):
        _stage_drain(core, True)
        n = core.stage_n
    m = &core.stage[n]
    m.err = RD_KAFKA_RESP_ERR_NO_ERROR
    m.payload = <void *>v.ptr
    m.len = v.len
    m.key = <void *>k.ptr
    m.key_len = k.len
    m._private = <void *>fut
    core.stage_keys[n] = NULL
    if k.ptr != NULL:
        Py_INCREF(key)   # partner: Py_XDECREF in _stage_drain, once librdkafka copied it
        core.stage_keys[n] = <PyObject *>key
    Py_INCREF(fut)  # partner: Py_DECREF in _handle_dr (events.pxi), or _stage_drain if refused
    _hold_value(fut, value)
    core.pending += 1
    core.produced += 1
    core.stage_bytes += v.len
    if n == 0:
        core.stage_rkt = t.rkt
        core.stage_topic = t
        core.stage_stuck = False
        atomic_store_i64(&core.stage_since, _now_ns(), __ATOMIC_SEQ_CST)
        _staged.add(core)
    atomic_store_int(&core.stage_n, n + 1, __ATOMIC_SEQ_CST)
    if n == 0 and atomic_load_int(&core.ev_idle, __ATOMIC_SEQ_CST):
        rd_kafka_queue_yield(core.mainq)
    return 0


cdef int _stage_drain(_Core core, bint block) except -1:
    """Hand the stage to librdkafka.  What the queue has no room for stays staged,
    in order: with ``block`` wait for room (wait_room: max.block.ms, Ctrl-C and
    close() raise) until all is handed over; without, return (the event thread
    retries once room appears).  Refused messages fail their futures."""
    cdef int64_t deadline = 0
    cdef unsigned long gen
    cdef int n, i, rest
    cdef int32_t cnt
    cdef rd_kafka_message_t *m
    cdef DeliveryFuture fut
    cdef _Topic t
    cdef list refused = None
    try:
        while core.stage_n > 0:
            t = core.stage_topic
            cnt = _stage_count(core, t, block)   # may let another thread in
            if core.stage_topic is not t:
                continue   # that thread handed this topic's messages over
            gen = _room_gen(core)
            n = core.stage_n
            # Never blocks: without RD_KAFKA_MSG_F_BLOCK a full queue fails the
            # rest of the call with _QUEUE_FULL (rd_kafka_produce_batch sets
            # each message's err; those before the first _QUEUE_FULL are queued
            # or refused for their own reason).
            if _stage_predict(core, cnt, n):
                _stage_runs(core, n)
            else:
                rd_kafka_produce_batch(core.stage_rkt, RD_KAFKA_PARTITION_UA, 0, core.stage, n)
            i = 0
            while i < n and core.stage[i].err != RD_KAFKA_RESP_ERR__QUEUE_FULL:
                m = &core.stage[i]
                if m.err:
                    fut = <DeliveryFuture>m._private
                    core.pending -= 1
                    core.failed += 1
                    _fail(fut, RD_KAFKA_PARTITION_UA, -1,
                          _refused_error(core, m.err, t.name, m.len, m.key_len))
                    if refused is None:
                        refused = []
                    refused.append(fut)   # fired below, once the stage is consistent
                    Py_DECREF(fut)  # partner: _stage_push's Py_INCREF; librdkafka never took it
                Py_XDECREF(core.stage_keys[i])  # partner: _stage_push; librdkafka copied the key
                core.stage_bytes -= m.len
                i += 1
            rest = n - i
            if i and rest:
                memmove(&core.stage[0], &core.stage[i], rest * sizeof(rd_kafka_message_t))
                memmove(&core.stage_keys[0], &core.stage_keys[i], rest * sizeof(PyObject *))
            atomic_store_int(&core.stage_n, rest, __ATOMIC_SEQ_CST)
            if rest == 0:
                break
            core.stage_stuck = True
            core.stage_stuck_gen = gen
            if not block:
                return 0
            core.wait_room(&deadline, gen)
            core.stage_stuck = False
        _staged.discard(core)
    finally:
        if refused is not None:
            _fire_failed(refused)
    return 0


cdef int32_t _stage_count(_Core core, _Topic t, bint block):
    """The staged topic's partition count for _stage_predict (0: unknown).  Only a
    producing thread (``block``) asks the brokers when the cached count is stale: the
    event thread and waiters do not wait for a metadata answer, they leave the
    messages to librdkafka's partitioner."""
    if t is None:
        return 0
    if not block and (t.cnt_at_ns == 0 or _now_ns() - t.cnt_at_ns >= _COUNT_TTL_NS):
        return 0
    return _partition_count(core, t)


cdef bint _stage_predict(_Core core, int32_t cnt, int n) noexcept:
    """Fill stage_part[0..n) with the partition librdkafka's partitioner gives each
    staged message, as grouping.pxi predicts a batch's: True only when every one is
    decided (one partition; else a key the configured partitioner hashes) and the
    stage falls into long runs of one partition.  Then the hand-over names the
    partition and librdkafka skips its partitioner (per message two clock reads, the
    partition lookup and its availability check).  Keys spread over partitions make
    short runs, one call each: that costs more than it saves (measured: 13 % more
    CPU for keys cycling over 4 partitions), so they stay with librdkafka's
    partitioner."""
    cdef int i, runs = 1
    cdef const rd_kafka_message_t *m
    if cnt == 1:
        memset(core.stage_part, 0, n * sizeof(int32_t))
        return True
    if cnt < 2 or core.part_kind == _PK_NONE:
        return False
    for i in range(n):
        m = &core.stage[i]
        if not _predictable(core.part_kind, <const char *>m.key, m.key_len):
            return False
        core.stage_part[i] = core.part_fn(core.stage_rkt, m.key, m.key_len, cnt, NULL, NULL)
        if i and core.stage_part[i] != core.stage_part[i - 1]:
            runs += 1
            if runs * _STAGE_RUN_MIN > n:
                return False
    return True


cdef _stage_runs(_Core core, int n):
    """Hand the predicted stage over as it stands, each run of consecutive messages
    to one partition in one call naming it: the stage's order is kept (never
    regrouped), and a run that meets a full queue ends the hand-over, so what
    _stage_drain leaves staged is still a suffix in order.  librdkafka's "msgs"
    statistic leaves such messages out: counted here in ``direct`` (stats.pxi)."""
    cdef int s = 0, e, j, ok
    cdef int32_t part
    cdef _PartCount pc
    while s < n:
        part = core.stage_part[s]
        e = s + 1
        while e < n and core.stage_part[e] == part:
            e += 1
        rd_kafka_produce_batch(core.stage_rkt, part, 0, &core.stage[s], e - s)
        ok = 0
        for j in range(s, e):
            if core.stage[j].err == RD_KAFKA_RESP_ERR_NO_ERROR:
                ok += 1
        if ok:
            pc = _part_count(core, core.stage_rkt, part)
            pc.direct += ok
        if core.stage[e - 1].err == RD_KAFKA_RESP_ERR__QUEUE_FULL:
            return   # the rest waits, staged, from the first _QUEUE_FULL on
        s = e


cdef _fire_failed(list futs):
    """Run the callbacks of futures failed here rather than by a delivery report, and
    wake their waiters (as _handle_dr does for reported ones)."""
    cdef dict wake = {}
    for fut in futs:
        _fire(<DeliveryFuture>fut, wake)
    _notify_waiters()
    if wake:
        _schedule_wakeups(wake)


cdef _stage_abandon(_Core core, int err, str why):
    """Fail every staged message with ``err`` (close() or a purge: they never
    reached librdkafka)."""
    cdef int i, n = core.stage_n
    cdef DeliveryFuture fut
    cdef list failed = []
    atomic_store_int(&core.stage_n, 0, __ATOMIC_SEQ_CST)
    core.stage_bytes = 0
    _staged.discard(core)
    for i in range(n):
        fut = <DeliveryFuture>core.stage[i]._private
        Py_XDECREF(core.stage_keys[i])  # partner: _stage_push
        core.pending -= 1
        core.failed += 1
        _fail(fut, RD_KAFKA_PARTITION_UA, -1, error_from_code(
            err, f"{rd_kafka_err2str(<rd_kafka_resp_err_t>err).decode()} ({why})",
            delivery=True))
        failed.append(fut)
        Py_DECREF(fut)  # partner: _stage_push's Py_INCREF; librdkafka never took it
    _fire_failed(failed)


cdef void _stage_drop(_Core core) noexcept:
    """_Core.__dealloc__: let go of what staged messages hold (close() never ran, so
    their futures stay pending like every other message's)."""
    cdef int i
    cdef DeliveryFuture fut
    for i in range(core.stage_n):
        Py_XDECREF(core.stage_keys[i])  # partner: _stage_push
        fut = <DeliveryFuture>core.stage[i]._private
        _release_value(fut)
        Py_DECREF(fut)  # partner: _stage_push's Py_INCREF
    core.stage_n = 0
    core.stage_bytes = 0


cdef void _stage_drain_all() noexcept:
    """Before a thread waits for a future: hand every producer's stage over, without
    waiting for room (the event thread hands over the rest as room appears)."""
    cdef _Core core
    for core in list(_staged):
        if core.fork_gen != _fork_generation or core.rk == NULL or core.closed:
            continue
        try:
            _stage_drain(core, False)
        except BaseException:
            _log_internal("cykafka: handing staged messages to librdkafka failed")
