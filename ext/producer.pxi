# producer.pxi -- NativeProducer, the compiled base class of cykafka.Producer:
# produce() with a future per message, the batch paths, flush and close.


cdef object _live = _weakref.WeakSet()   # for flushing unclosed producers at exit


cdef inline size_t _fill_vus(rd_kafka_vu_t *vus, rd_kafka_topic_t *rkt, int32_t partition,
                             const char *vptr, size_t vlen, const char *kptr, size_t klen,
                             void *opaque, int64_t ts,
                             rd_kafka_headers_t *hdrs, int msgflags) noexcept nogil:
    cdef size_t n = 6
    vus[0].vtype = RD_KAFKA_VTYPE_RKT
    vus[0].u.rkt = rkt
    vus[1].vtype = RD_KAFKA_VTYPE_PARTITION
    vus[1].u.i32 = partition
    vus[2].vtype = RD_KAFKA_VTYPE_VALUE
    vus[2].u.mem.ptr = <void *>vptr
    vus[2].u.mem.size = vlen
    vus[3].vtype = RD_KAFKA_VTYPE_KEY
    vus[3].u.mem.ptr = <void *>kptr
    vus[3].u.mem.size = klen
    vus[4].vtype = RD_KAFKA_VTYPE_OPAQUE
    vus[4].u.ptr = opaque
    vus[5].vtype = RD_KAFKA_VTYPE_MSGFLAGS
    vus[5].u.i = msgflags
    if ts:
        vus[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP
        vus[n].u.i64 = ts
        n += 1
    if hdrs != NULL:
        vus[n].vtype = RD_KAFKA_VTYPE_HEADERS
        vus[n].u.headers = hdrs
        n += 1
    return n


cdef inline int _produce_c(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                           const char *vptr, size_t vlen, const char *kptr, size_t klen,
                           void *opaque, int64_t ts, rd_kafka_headers_t *hdrs,
                           int msgflags=RD_KAFKA_MSG_F_COPY) noexcept nogil:
    """Hand one message to librdkafka (it always copies the key; the value too
    with RD_KAFKA_MSG_F_COPY, else the caller keeps it alive until the delivery
    report); 0 or an error code.  On success librdkafka owns ``hdrs``; on failure
    the caller still does."""
    cdef rd_kafka_vu_t vus[8]
    cdef rd_kafka_error_t *error
    cdef int err
    if ts == 0 and hdrs == NULL:
        # The plain API skips the topic lookup and vararg parsing of produceva.
        if rd_kafka_produce(rkt, partition, msgflags, <void *>vptr, vlen,
                            kptr, klen, opaque) == 0:
            return 0
        return rd_kafka_last_error()
    error = rd_kafka_produceva(rk, vus, _fill_vus(vus, rkt, partition, vptr, vlen, kptr,
                                                  klen, opaque, ts, hdrs, msgflags))
    if error == NULL:
        return 0
    err = rd_kafka_error_code(error)
    rd_kafka_error_destroy(error)  # partner: rd_kafka_produceva
    return err


cdef object _produce_one(_Core core, object topic, object value, object key,
                         object partition, object timestamp, object headers,
                         object on_delivery, bint wait, unsigned long *gen):
    """produce()'s body.  With ``wait`` false, a full queue (or a stage that cannot be
    handed over first) queues nothing and returns None, ``*gen`` set to the room_gen
    read before the attempt: what _room_waiter (aio.pxi) waits to see change."""
    cdef _Topic t
    # The common call is (topic, value): its None arguments skip the converters.
    cdef int32_t part = RD_KAFKA_PARTITION_UA if partition is None \
        else _partition_arg(partition)
    cdef int64_t ts = 0 if timestamp is None else _timestamp_arg(timestamp)
    cdef int64_t deadline = 0
    cdef _Mem v, k
    cdef rd_kafka_headers_t *hdrs = NULL
    cdef DeliveryFuture fut = None
    cdef int err = 0
    cdef bint full = False
    cdef int flags = RD_KAFKA_MSG_F_COPY
    cdef unsigned long g
    if on_delivery is not None and not callable(on_delivery):
        raise TypeError(f"on_delivery must be callable, not {type(on_delivery).__name__}")
    if PyBytes_CheckExact(value):
        v.ptr = PyBytes_AS_STRING(value)
        v.len = PyBytes_GET_SIZE(value)
        v.has_view = False
        if v.len <= core.copy_max:
            # Immutable: lent to librdkafka rather than copied (the future keeps
            # it alive, _hold_value).  Only values that librdkafka copies into
            # its ProduceRequest anyway (message.copy.max.bytes), so that no
            # request buffer ever points into it.
            flags = 0
    else:
        _mem_get(value, &v, "value")
    k.has_view = False
    k.ptr = NULL
    k.len = 0
    try:
        if key is not None:
            _mem_get(key, &k, "key")
        if headers is not None:
            hdrs = _make_headers(headers)
        # Arguments are converted (user code such as __index__ may run) before
        # entering: inside, only librdkafka calls and the wait for room.
        core.enter()
        try:
            t = core.topic(topic)
            fut = _new_delivery_future(t.name, on_delivery)
            if flags == 0 and core.stage_ok and part == RD_KAFKA_PARTITION_UA and ts == 0 \
                    and hdrs == NULL and (k.ptr == NULL or PyBytes_CheckExact(key)) \
                    and core.pending < core.max_msgs and v.len <= core.stage_bytes_max \
                    and core.fatal_error is None:
                if not wait and _stage_full_for(core, t, v.len):
                    full = _stage_drain_nowait(core, gen)
                if not full:
                    # The common call: handed over in a group (stage.pxi).
                    _stage_push(core, t, fut, value, key, &v, &k)
                    if v.len + k.len > core.size_max:
                        core.size_max = v.len + k.len
                    return fut
            elif core.stage_n:
                # What was staged goes first.
                if wait:
                    _stage_drain(core, True)
                else:
                    full = _stage_drain_nowait(core, gen)
            while not full:
                g = _room_gen(core)
                err = _produce_c(core.rk, t.rkt, part, v.ptr, v.len, k.ptr, k.len,
                                 <void *>fut, ts, hdrs, flags)
                if err != RD_KAFKA_RESP_ERR__QUEUE_FULL:
                    break
                if not wait:
                    gen[0] = g
                    full = True
                else:
                    core.wait_room(&deadline, g)
            if err == 0 and not full:
                # Counted before the GIL can pass to the event thread.
                Py_INCREF(fut)  # partner: Py_DECREF in _handle_dr (events.pxi)
                if flags == 0:
                    _hold_value(fut, value)
                core.pending += 1
                core.produced += 1
                if v.len + k.len > core.size_max:
                    core.size_max = v.len + k.len
        finally:
            core.leave()
    except BaseException:
        if hdrs != NULL:
            rd_kafka_headers_destroy(hdrs)  # partner: _make_headers; never accepted
        raise
    finally:
        _mem_release(&v)
        _mem_release(&k)
    if full:
        if hdrs != NULL:
            rd_kafka_headers_destroy(hdrs)  # partner: _make_headers; nothing was queued
        return None
    if err == 0:
        return fut
    if hdrs != NULL:
        rd_kafka_headers_destroy(hdrs)  # partner: _make_headers; librdkafka refused it
    if err not in _PER_MESSAGE_ERRORS:
        core.raise_produce_error(err, topic)
    core.produced += 1
    core.failed += 1
    _fail(fut, part, -1, _refused_error(core, err, topic, v.len, k.len))
    _fire(fut, None)
    return fut


cdef bint _stage_drain_nowait(_Core core, unsigned long *gen) except -1:
    """Hand the stage to librdkafka without waiting; True if some of it is left (the
    queue is full, and nothing may go before it), ``*gen`` set to the room_gen read
    before the attempt."""
    gen[0] = _room_gen(core)
    _stage_drain(core, False)
    return core.stage_n != 0


cdef class NativeProducer:
    """Compiled core of :class:`cykafka.Producer`; use that class."""

    def __cinit__(self, *args, **kwargs):
        self._core = None
        self._exit_timeout_ns = _timeout_ns(DEFAULT_EXIT_TIMEOUT)

    def _native_start(self, dict config, max_block_s=60.0, error_cb=None,
                      stats_cb=None, tuple secrets=(), exit_timeout=DEFAULT_EXIT_TIMEOUT):
        if self._core is not None:
            raise RuntimeError("the producer is already started")
        self._exit_timeout_ns = _timeout_ns(exit_timeout, "exit_timeout")
        core = _Core()
        core.start(config, max_block_s, error_cb, stats_cb, secrets)
        self._core = core
        _live.add(self)

    cdef _Core _usable(self):
        cdef _Core core = self._core
        if core is None:
            raise ProducerClosedError(RD_KAFKA_RESP_ERR__STATE,
                                      "the Producer was not initialised")
        core.check_usable()
        return core

    def produce(self, topic, value=None, key=None, partition=None, timestamp=None,
                headers=None, on_delivery=None, *, value_serializer=None,
                key_serializer=None):
        """Queue one message; return its DeliveryFuture.  When librdkafka's queue is
        full it waits for room up to max.block.ms (then QueueFullError), except on
        cykafka's event thread (in an on_delivery or done-callback), the thread that
        makes room: there a full queue raises QueueFullError at once.  With
        value_serializer / key_serializer (confluent-style ``ser(obj, ctx)``) value /
        key are objects, serialized first (serialized.pxi)."""
        if value_serializer is not None or key_serializer is not None:
            value, key = _serialize_one(topic, value, key, headers, value_serializer,
                                        key_serializer)
        return _produce_one(self._usable(), topic, value, key, partition, timestamp,
                            headers, on_delivery, True, NULL)

    def aproduce(self, topic, value=None, key=None, partition=None, timestamp=None,
                 headers=None, on_delivery=None, *, value_serializer=None,
                 key_serializer=None):
        """produce() for asyncio: an awaitable giving the DeliveryFuture once the message
        is queued, waiting for room on the running loop, never blocking it (aio.pxi)."""
        if value_serializer is not None or key_serializer is not None:
            value, key = _serialize_one(topic, value, key, headers, value_serializer,
                                        key_serializer)
        return _aproduce(self, topic, value, key, partition, timestamp, headers,
                         on_delivery)

    def produce_batch(self, topic, values, keys=None, *, partitions=None, timestamps=None,
                      headers=None, on_delivery=None):
        """Queue a whole column of messages in one C loop; return a BatchFuture."""
        cdef _Core core = self._usable()
        cdef _Topic t = _entered_topic(core, topic)
        cdef _Column vcol = _column(values, "values")
        cdef Py_ssize_t n = vcol.n
        cdef _Column kcol = None
        cdef _IntColumn pcol = None, tcol = None
        if keys is not None:
            kcol = _column(keys, "keys")
            if kcol.n != n:
                raise ValueError(f"keys has {kcol.n} elements but values has {n}")
        if partitions is not None:
            pcol = _int_column(partitions, n, "partitions", True)
        if timestamps is not None:
            tcol = _int_column(timestamps, n, "timestamps", False)
        if headers is not None:
            headers = _headers_column(headers, n)
        if on_delivery is not None and not callable(on_delivery):
            raise TypeError(f"on_delivery must be callable, not {type(on_delivery).__name__}")
        bf = _new_batch_future(t.name, on_delivery)
        bf._total = n
        bf._sealed = True   # its size is known: reports may complete it while it is enqueued
        try:
            _enqueue(core, t, bf, 0, vcol, kcol, pcol, tcol, headers)
        except BaseException as exc:
            _seal_batch(bf, exc)   # its unqueued messages are failed already
            raise
        _seal_batch(bf)
        return bf

    def produce_many(self, records, topic, *, chunk_size=10000, on_delivery=None):
        """Stream an iterable of records (value, or (key, value[, headers]) tuples,
        or dicts with value/key/headers/partition/timestamp) through the batch path
        in chunks of ``chunk_size``; return one BatchFuture for all of them."""
        cdef _Core core = self._usable()
        cdef _Topic t = _entered_topic(core, topic)
        if type(chunk_size) is bool or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
        if on_delivery is not None and not callable(on_delivery):
            raise TypeError(f"on_delivery must be callable, not {type(on_delivery).__name__}")
        if isinstance(records, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"records must be an iterable of records, not a single "
                            f"{type(records).__name__} (it would be sent one element per "
                            f"message); wrap it in a list")
        _check_column_shape(records, "records")
        try:
            it = iter(records)
        except TypeError:
            raise TypeError(f"records must be an iterable of records, not "
                            f"{type(records).__name__}") from None
        bf = _new_batch_future(t.name, on_delivery)
        base = 0
        try:
            while True:
                cols = _records_chunk(it, chunk_size, base)
                if cols is None:
                    break
                values, keys, parts, tss, hdrs, n, bad = cols
                # Records read from the iterator are counted at once: whatever stops
                # the chunk below, each ends delivered or reported failed.
                bf._total += n
                try:
                    if bad is not None:
                        raise bad
                    vcol = _column(values, "values", base)
                    kcol = _column(keys, "keys", base) if keys is not None else None
                    pcol = _int_column(parts, n, "partitions", True, base) \
                        if parts is not None else None
                    tcol = _int_column(tss, n, "timestamps", False, base) \
                        if tss is not None else None
                except BaseException as exc:
                    _fail_range(core, bf, base, base + n, exc)
                    raise
                _enqueue(core, t, bf, base, vcol, kcol, pcol, tcol, hdrs)
                base += n
        except BaseException as exc:
            _seal_batch(bf, exc)
            raise
        _seal_batch(bf)
        return bf

    def flush(self, timeout=None):
        """Wait until every queued message has an outcome or ``timeout`` seconds
        pass (None or inf: no limit); return how many are still pending.  Ctrl-C
        interrupts it."""
        cdef _Core core = self._usable()
        cdef int64_t timeout_ns = _timeout_ns(timeout)
        _refuse_on_event_thread(core, "flush()")
        core.enter()
        try:
            return core.flush(timeout_ns)
        finally:
            core.leave()

    def aflush(self, timeout=None):
        """flush() for asyncio: a coroutine that waits on the running loop (aio.pxi)."""
        return _aflush(self, timeout)

    def poll(self, timeout=0):
        """For compatibility: deliveries are served by cykafka's own thread.
        Waits up to ``timeout`` seconds for the next outcome; returns how many
        outcomes became known meanwhile."""
        cdef _Core core = self._usable()
        before = core.delivered + core.failed
        if timeout and core.pending > 0:
            _wait_outcomes(None, core, before, _monotonic() + timeout)
        return core.delivered + core.failed - before

    def close(self, timeout=None, commit=False):
        """Flush (up to ``timeout`` s; None or inf: no limit), fail what is left,
        stop the event thread and free librdkafka.  Idempotent.  An open transaction
        is aborted first (its pending messages fail, a warning says so), or
        committed with ``commit=True``."""
        cdef _Core core = self._core
        cdef int64_t timeout_ns = _timeout_ns(timeout)   # before anything changes
        if core is not None and not core.closed:
            core.txn_commit_at_close = bool(commit)
            core.close(timeout_ns)
            _live.discard(self)

    def _close_interrupted(self):
        """close() for a with-block left by KeyboardInterrupt: flush for at most
        exit_timeout (not close()'s unbounded wait: the user asked to stop), then
        fail what is left; Ctrl-C again abandons it at once and raises
        KeyboardInterrupt."""
        cdef _Core core = self._core
        if core is None or core.closed:
            return
        _refuse_on_event_thread(core, "close()")
        abandoned = _bounded_close(self, "Producer", "while closing after Ctrl-C")
        _live.discard(self)
        if abandoned:
            raise KeyboardInterrupt

    @property
    def closed(self):
        return self._core is None or self._core.closed

    @property
    def name(self):
        return None if self._core is None else self._core.name

    def __len__(self):
        """Messages whose outcome is not yet known."""
        return 0 if self._core is None else max(self._core.pending, 0)

    def _counters(self):
        """Exact counters kept by the extension (used by the inspector)."""
        cdef _Core c = self._core
        if c is None:
            return {}
        return {"pending": max(c.pending, 0), "produced": c.produced,
                "delivered": c.delivered, "failed": c.failed,
                "blocked_seconds": c.blocked_ns / 1e9, "grouped": c.grouped,
                "buffer_exhausted": c.exhausted, "waiting_threads": c.waiting,
                "waiting_tasks": c.room_async,
                "outq_len": rd_kafka_outq_len(c.rk) if c.rk != NULL else 0}

    def _take_record_size_max(self):
        """The largest key + value (bytes) accepted since the previous call, or -1;
        the inspector samples it into Java's record-size-max windows."""
        cdef _Core c = self._core
        cdef int64_t peak
        if c is None:
            return -1
        peak = c.size_max
        c.size_max = -1
        return peak

    def _set_latency_cb(self, cb):
        """``cb(delivered, failed)`` is called on the event thread after each delivery
        report with its messages' latencies in seconds (failed: (seconds, error name));
        None stops it.  For exporters (cykafka.inspector.exporters.otel)."""
        cdef _Core c = self._core
        if cb is not None and not callable(cb):
            raise TypeError(f"the latency callback must be callable, not {type(cb).__name__}")
        if c is not None:
            c.latency_cb = cb

    def _set_delivery_hint(self, hint):
        """Text added to _MSG_TIMED_OUT delivery errors from now on (None: none); the
        epoch watch (cykafka.inspector.watchdog) sets it while the broker refuses
        this producer's id."""
        cdef _Core c = self._core
        if c is not None:
            c.delivery_hint = None if hint is None else str(hint)

    def _set_topic_limits(self, limits):
        """Each topic's max.message.bytes as looked up (topic -> bytes): a message
        the broker refuses as too large then says its topic's limit."""
        cdef _Core c = self._core
        if c is not None:
            c.size_limits = {str(t): int(n) for t, n in limits.items()}

    def _take_stats(self):
        """[(monotonic time received, json text, direct counts)] of every statistics
        emit since the previous call (stats.pxi keeps the last minute of them), oldest
        first.  The direct counts are {(topic, partition): messages handed over with
        their partition given}, which the emit's "msgs" leaves out, or None."""
        cdef _Core c = self._core
        if c is None or not c.stats_unread:
            return []
        out = list(c.stats_unread)
        c.stats_unread.clear()
        c.stats_unread_bytes = 0
        return out

    def _on_event_thread(self):
        """Whether the caller runs on this producer's event thread (in a callback),
        which serves the statistics: waiting there for the next emit would wait for
        itself."""
        return self._core is not None and _event_core() is self._core

    def _last_outcome_time(self):
        """Monotonic time the latest delivery report was served (0.0: none yet)."""
        return 0.0 if self._core is None else self._core.last_outcome_time

    def _last_stats(self):
        """(json text, monotonic time received, count, direct counts) of librdkafka's
        latest statistics (direct counts: see _take_stats)."""
        cdef _Core c = self._core
        if c is None:
            return (None, None, 0, None)
        return (c.last_stats, c.last_stats_time, c.stats_count, c.last_direct)

    def _effective_config(self, str key):
        """librdkafka's value for ``key`` as the running client has it (None if unset
        or closed); unlike the config dict, this includes librdkafka's adjustments."""
        cdef _Core c = self._core
        if c is None or c.closed:
            return None
        return _conf_get(c.rk, key)

    def _partition_count_changes(self):
        """{topic: (first, latest)} for each topic whose partition count changed while
        this producer wrote to it (seen by librdkafka's partitioner when the count is
        kept, by the batch grouping's metadata reads either way)."""
        cdef _Core core = self._core
        cdef _Topic t
        cdef int32_t first, last
        out = {}
        if core is None:
            return out
        for t in list(core.topics.values()):
            first = atomic_load_i32(&t.kept.first, __ATOMIC_SEQ_CST)
            last = atomic_load_i32(&t.kept.last, __ATOMIC_SEQ_CST)
            if first and last and last != first:
                out[t.name] = (first, last)
        return out

    def _partition_counters(self):
        """Exact per-partition outcomes from delivery reports (used by the inspector):
        {(topic, partition): (delivered, failed, last acked offset or -1)}."""
        return _part_counts_dict(self._core)

    # -- transactions (librdkafka's transactional producer API) -------------

    def init_transactions(self, timeout=30.0):
        _txn_call(self._usable(), rd_kafka_init_transactions, timeout, "init_transactions()")

    def begin_transaction(self):
        cdef _Core core = self._usable()
        cdef rd_kafka_error_t *error
        core.enter()
        error = rd_kafka_begin_transaction(core.rk)   # does not block
        core.leave()
        if error != NULL:
            raise _error_from_error_t(error)
        core.txn_open = True
        core.txn_produced = core.produced
        core.txn_delivered = core.delivered

    def commit_transaction(self, timeout=60.0):
        cdef _Core core = self._usable()
        _txn_call(core, rd_kafka_commit_transaction, timeout, "commit_transaction()")
        core.txn_open = False

    def abort_transaction(self, timeout=60.0):
        cdef _Core core = self._usable()
        _txn_call(core, rd_kafka_abort_transaction, timeout, "abort_transaction()")
        core.txn_open = False

    def __del__(self):
        cdef _Core core = self._core
        if core is None or core.closed or core.fork_gen != _fork_generation:
            return
        try:
            _warnings.warn(f"unclosed cykafka Producer {core.name} ({max(core.pending, 0)} "
                           f"messages pending); use close() or a with-block",
                           ResourceWarning, source=self)
        finally:   # even when warnings are errors
            if core.orphaned:
                pass
            elif _event_core() is core:
                # Dropped inside a callback on its own event thread, which cannot wait
                # for itself: purge so the futures fail, and let that thread serve
                # the reports and then close (_serve), within 10 s like below.
                core.closing = True
                core.orphaned = True
                core.orphan_deadline = _now_ns() + 10_000_000_000
                if core.txn_open:
                    # abort_transaction() waits for reports this thread serves: the
                    # purge fails what is pending, the broker aborts the rest.
                    core.txn_open = False
                    core.purge_reason = ("the Producer was dropped in its own callback "
                                         "with its transaction open: not committed")
                    _logger.warning(
                        "cykafka: Producer %s dropped in its own callback with an open "
                        "transaction of %d messages: not committed; its pending messages "
                        "are purged and the broker aborts it after transaction.timeout.ms",
                        core.name, core.produced - core.txn_produced)
                core.purge()
            else:
                # Flushed as at exit, for exit_timeout, but never over 10 s: a
                # collection runs wherever the last reference goes.
                try:
                    core.close(min(self._exit_timeout_ns, 10_000_000_000))
                except BaseException:
                    _logger.exception("cykafka: closing an unclosed Producer failed")


@_atexit.register
def _close_live_producers():
    # Nothing is lost silently: an unclosed producer is flushed at exit (and
    # logs that it was), like a with-block would have done, but only for its
    # exit_timeout: message.timeout.ms (300 s by default) must not hold the exit.
    # Ctrl-C during that flush abandons it, and the flushes of the producers left.
    cdef NativeProducer p
    cdef bint abandoning = False
    for obj in list(_live):
        p = <NativeProducer>obj
        if p._core is None or p._core.closed or p._core.fork_gen != _fork_generation:
            continue
        try:
            if abandoning:
                p._core.abandon("at exit")
            else:
                abandoning = _bounded_close(p, "unclosed Producer", "at exit")
        except BaseException:
            _logger.exception("cykafka: closing Producer %s at exit failed", p._core.name)
            continue
        _live.discard(p)


cdef bint _bounded_close(NativeProducer p, str what, str when) except -1:
    """close() for at most exit_timeout, failing what is left (the flush at exit, a
    with-block left by Ctrl-C); Ctrl-C during it abandons what is left at once
    (Python's convention: a second Ctrl-C gives up the clean-up).  True if it did;
    the KeyboardInterrupt is not re-raised."""
    cdef _Core core = p._core
    limit = "no limit" if p._exit_timeout_ns == _FOREVER else \
        f"up to {p._exit_timeout_ns / 1e9:g} s"
    if core.pending > 0 or what == "unclosed Producer":   # an unclosed one is news
        _logger.warning("cykafka: flushing %s %s (%d pending) %s, %s (exit_timeout); "
                        "Ctrl-C again abandons it", what, core.name, max(core.pending, 0),
                        when, limit)
    core.purge_reason = f"not delivered within exit_timeout {when}"
    try:
        left = core.close(p._exit_timeout_ns)
    except KeyboardInterrupt:
        core.abandon(when)
        return True
    if left:
        _logger.error("cykafka: Producer %s: %d messages were not delivered within "
                      "exit_timeout %s; they failed (purged) and their futures say so",
                      core.name, left, when)
    return False


cdef _txn_call(_Core core, _txn_fn fn, object timeout, str what):
    """A blocking transactional call (init/commit/abort) without the GIL, in slices
    of at most 200 ms so that Ctrl-C and close() are noticed in between, as in
    flush().  rdkafka.h, for each of the three: "This call is resumable when a
    retriable timeout error is returned.  Calling the function again will resume
    the operation that is progressing in the background"."""
    cdef int64_t deadline = 0
    cdef int slice_ms
    cdef rd_kafka_error_t *error
    cdef int64_t timeout_ns = _timeout_ns(timeout)
    # commit/abort flush, and "If the application has enabled RD_KAFKA_EVENT_DR
    # it must serve the event queue in a separate thread" (rdkafka.h).
    _refuse_on_event_thread(core, what)
    deadline = _deadline_after(timeout_ns)
    core.enter()
    try:
        while True:
            slice_ms = <int>max(1, min(200, (deadline - _now_ns()) // 1000000))
            with nogil:
                error = fn(core.rk, slice_ms)
            if error == NULL:
                return
            if not rd_kafka_error_is_retriable(error) or _now_ns() >= deadline:
                exc = _error_from_error_t(error)   # takes ownership of error
                note = _authz_note(core, exc.code)
                if note:
                    exc.message = f"{exc.message}: {note}"
                    exc.args = (exc.message,)
                raise exc
            # Retriable: a slice that timed out, or the broker's answer (Kafka moves
            # the transaction coordinator with its partition's leader: NOT_COORDINATOR,
            # COORDINATOR_LOAD_IN_PROGRESS).  rdkafka.h: "If the error is retriable
            # the application may call [it] again".
            if rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR__TIMED_OUT:
                with nogil:
                    usleep(20000)
            rd_kafka_error_destroy(error)  # partner: fn above; the call is resumed
            PyErr_CheckSignals()
            core.check_closing(f"{what} waited")
    finally:
        core.leave()   # partner: core.enter() above


cdef object _txn_end(_Core core, bint commit, int64_t deadline):
    """Commit or abort the open transaction from close() (whose ``closing`` already
    refuses _txn_call), in 200 ms slices like _txn_call; the error, or None."""
    cdef rd_kafka_error_t *error
    cdef int slice_ms
    while True:
        slice_ms = <int>max(1, min(200, (deadline - _now_ns()) // 1000000))
        with nogil:
            if commit:
                error = rd_kafka_commit_transaction(core.rk, slice_ms)
            else:
                error = rd_kafka_abort_transaction(core.rk, slice_ms)
        if error == NULL:
            return None
        if rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR__TIMED_OUT or \
                not rd_kafka_error_is_retriable(error) or _now_ns() >= deadline:
            return _error_from_error_t(error)   # takes ownership of error
        rd_kafka_error_destroy(error)  # partner: the call above; resumed next slice
        PyErr_CheckSignals()


cdef _end_open_transaction(_Core core, int64_t timeout_ns):
    """close() (a with-block's end, the flush at exit, a dropped producer) found a
    transaction open: nobody can commit it after this, and left open it would only
    hide its messages until transaction.timeout.ms, while their futures said
    delivered.  So abort it before the flush (committed with close(commit=True)):
    the abort purges what is still pending, whose futures fail saying why; those
    already delivered stay so (an outcome never changes), and the warning counts
    them.  If the abort fails too, what is pending is purged all the same."""
    cdef int64_t n = core.produced - core.txn_produced
    cdef int64_t written = core.delivered - core.txn_delivered
    cdef bint commit = core.txn_commit_at_close
    # Bounded even for close(None): abort_transaction()'s own default.
    cdef int64_t deadline = _deadline_after(min(timeout_ns, 60_000_000_000))
    # Kept after this call: the purged messages' reports may be served later.
    reason = "close() aborted the open transaction it belonged to: it is not committed"
    core.txn_open = False
    if not commit:
        core.purge_reason = reason
    err = _txn_end(core, commit, deadline)
    if err is not None and commit:
        _logger.error("cykafka: Producer %s: committing its open transaction at close "
                      "failed (%s); aborting it", core.name, err)
        commit = False
        core.purge_reason = reason
        err = _txn_end(core, False, deadline)
    if err is not None:
        core.purge()   # not left to the flush: it would say delivered
    if commit:
        _logger.info("cykafka: Producer %s closed with an open transaction of %d messages: "
                     "committed (close(commit=True))", core.name, n)
        return
    _logger.warning(
        "cykafka: Producer %s closed with an open transaction of %d messages: %s; %d of "
        "them had been written (their futures said delivered: written, never committed), "
        "the other %d fail with this reason; commit_transaction() before closing, or "
        "close(commit=True), commits instead",
        core.name, n, "aborted" if err is None else
        f"aborting it failed ({err}), its pending messages purged", written, n - written)


cdef _Topic _entered_topic(_Core core, object name):
    """The topic handle (created on first use, which needs rk)."""
    core.enter()
    try:
        return core.topic(name)
    finally:
        core.leave()


cdef list _headers_column(object headers, Py_ssize_t n):
    cdef rd_kafka_headers_t *h
    _check_column_shape(headers, "headers")
    if isinstance(headers, (str, bytes, dict)) or not hasattr(headers, "__len__"):
        raise TypeError(f"headers must be a sequence (one header list per message), "
                        f"not {type(headers).__name__}")
    headers = list(headers)
    if len(headers) != n:
        raise ValueError(f"headers has {len(headers)} elements but values has {n}")
    for i, hs in enumerate(headers):
        if hs is not None:
            h = _make_headers(hs, f"headers[{i}]")   # validation: built, then dropped
            if h != NULL:
                rd_kafka_headers_destroy(h)
    return headers
