# core.pxi -- the librdkafka handle (_Core): configuration, topics, waiting for
# room, flush and close.  _Core owns rd_kafka_t, its main queue and the topic
# handles.  NativeProducer (producer.pxi, the base of cykafka.Producer) owns
# the _Core; the event thread references only the _Core, so that dropping the
# Producer is noticed.

from cpython.exc cimport PyErr_CheckSignals
from system cimport usleep


# librdkafka's threads do not survive fork(); a producer made before a fork
# must refuse to work in the child instead of hanging.  The child handler is
# plain C, so it also fires for forks that do not go through os.fork().
cdef long _fork_generation = 0


cdef void _after_fork_in_child() noexcept nogil:
    global _fork_generation
    _fork_generation += 1


pthread_atfork(NULL, NULL, _after_fork_in_child)


cdef inline int64_t _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


# The room signal.  librdkafka's queue has room again when the event thread
# destroys a delivery report event: destroying frees its messages, and with
# them their share of queue.buffering.max.messages/kbytes.  A producer that
# found the queue full waits on room_cv for that instead of sleeping blind; it
# reads room_gen *before* the produce attempt that failed, so room freed between
# the attempt and the wait is not missed (the bump is under room_mu, the wait
# re-checks room_gen under room_mu).

cdef inline unsigned long _room_gen(_Core core) noexcept nogil:
    """Read before a produce attempt; what wait_room waits to see change."""
    return atomic_load_ulong(&core.room_gen, __ATOMIC_ACQUIRE)


cdef int _room_bump(_Core core) noexcept nogil:
    """Room may have appeared: wake every thread in wait_room.  Returns how many
    aproduce calls wait for room on an asyncio loop (aio.pxi): the caller wakes them
    with _room_wake_async once it holds the GIL.  Read under room_mu, where they
    register after reading room_gen, so a registration is either seen here or sees
    this bump."""
    cdef int n
    if not core.room_ready:
        return 0
    pthread_mutex_lock(&core.room_mu)
    atomic_store_ulong(&core.room_gen, core.room_gen + 1, __ATOMIC_RELEASE)
    pthread_cond_broadcast(&core.room_cv)
    n = core.room_async
    pthread_mutex_unlock(&core.room_mu)
    return n


cdef void _room_wait(_Core core, unsigned long gen, int64_t until_ns) noexcept nogil:
    """Wait until room_gen differs from ``gen`` or CLOCK_MONOTONIC reaches
    ``until_ns``."""
    cdef timespec ts
    ts.tv_sec = until_ns // 1000000000
    ts.tv_nsec = until_ns % 1000000000
    pthread_mutex_lock(&core.room_mu)
    while core.room_gen == gen:
        if pthread_cond_timedwait(&core.room_cv, &core.room_mu, &ts) != 0:
            break   # ETIMEDOUT (EINVAL cannot happen: ts is normalised)
    pthread_mutex_unlock(&core.room_mu)


cdef object _queue_full_error(_Core core):
    """The QueueFullError of a produce that waited max.block.ms for room."""
    return error_from_code(
        RD_KAFKA_RESP_ERR__QUEUE_FULL,
        f"librdkafka's queue stayed full for max.block.ms "
        f"({core.max_block_ns // 1000000} ms); raise queue.buffering.max.messages/"
        f"kbytes, max.block.ms, or flush() more often")


cdef int64_t _timeout_ns(object timeout, str what="timeout") except -1:
    """``timeout`` seconds as nanoseconds (_FOREVER for None and huge values);
    checked before anything changes, so a bad value leaves the caller's state."""
    cdef double t
    if timeout is None:
        return _FOREVER
    if isinstance(timeout, (bool, str, bytes)) or not hasattr(type(timeout), "__float__"):
        raise TypeError(f"{what} must be a number of seconds or None, "
                        f"not {type(timeout).__name__} ({timeout!r:.40})")
    t = float(timeout)
    if not t >= 0:   # also NaN
        raise ValueError(f"{what} must be >= 0 or None, not {timeout!r}")
    if t >= _FOREVER_S:
        return _FOREVER
    return <int64_t>(t * 1e9)


cdef inline int64_t _deadline_after(int64_t ns) noexcept:
    return _FOREVER if ns == _FOREVER else _now_ns() + ns


# Kafka's rule for topic names (kafka.common.internals.Topic).
_TOPIC_RE = _re.compile(r"[a-zA-Z0-9._-]{1,249}")


cdef object _sigint_default():
    """SIGINT's default action (end the process) in place of Python's handler; the
    handler it replaced, or None when this thread may not change it."""
    try:
        return _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    except (ValueError, OSError):   # not the main thread
        return None


cdef _sigint_restore(object old):
    if old is not None:
        try:
            _signal.signal(_signal.SIGINT, old)
        except (ValueError, OSError):
            pass


cdef class _Topic:

    def __cinit__(self):
        self.rkt = NULL


cdef class _Core:
    """The librdkafka handle and the state the event thread shares with producers."""

    def __cinit__(self):
        self.rk = NULL
        self.mainq = NULL
        self.topics = {}
        self.part_counts = {}
        self.secrets = ()
        self.delivery_hint = None
        self.size_limits = {}
        self.purge_reason = None
        self.principal = "User:ANONYMOUS"
        self.stats_unread = _deque()
        self.close_lock = _threading.RLock()
        self.size_max = -1
        self.room_afuts = []
        self.fork_gen = _fork_generation
        cdef pthread_condattr_t attr
        cdef int err
        if pthread_mutex_init(&self.room_mu, NULL) != 0:
            raise MemoryError("pthread_mutex_init failed")
        pthread_condattr_init(&attr)
        # Slices are measured on CLOCK_MONOTONIC (_now_ns), not the wall clock.
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        err = pthread_cond_init(&self.room_cv, &attr)
        pthread_condattr_destroy(&attr)   # partner: pthread_condattr_init above
        if err != 0:
            pthread_mutex_destroy(&self.room_mu)   # partner: pthread_mutex_init above
            raise MemoryError("pthread_cond_init failed")
        self.room_ready = True

    cdef str redact(self, str text):
        for s in self.secrets:
            text = text.replace(s, "***")
        return text

    cdef start(self, dict config, object max_block_s, object error_cb, object stats_cb,
               tuple secrets):
        cdef char errstr[512]
        cdef rd_kafka_conf_t *conf
        _timeout_ns(max_block_s, "max.block.ms")   # refused before anything is made
        config = dict(config)
        # cykafka.config.KEYS_PARTITION_COUNT: the Producer always passes it.
        keep = str(config.pop("keys.partition.count", "current"))
        self.kept_first = int(keep) if keep.isdigit() and 0 < len(keep) < 10 else 0
        if keep not in ("first", "current") and not 0 < self.kept_first <= 0x7fffffff:
            raise ValueError(
                f"keys.partition.count={keep!r}: use 'first' (a key stays on the partition "
                f"it started on when partitions are added), a partition count to place "
                f"keys over (the count a run started with), or 'current' (librdkafka's "
                f"placement over the topic's current partition count)")
        self.keep_count = keep != "current"
        self.secrets = tuple(s for s in secrets if s)
        conf = _new_conf(config, self.secrets)
        try:
            _conf_set(conf, "log.queue", "true")
            if _conf_lookup(conf, "delivery.report.only.error") == "true":
                # CONFIGURATION.md: "Only provide delivery reports for failed messages."
                raise error_from_code(
                    RD_KAFKA_RESP_ERR__INVALID_ARG,
                    "config property 'delivery.report.only.error': cykafka needs a delivery "
                    "report for every message - it resolves each future from it and "
                    "flush()/close() wait for it - so with only failures reported, delivered "
                    "messages' futures would never resolve and flush()/close() would hang; "
                    "remove it (failures still show as failed futures and on_delivery errors)")
        except BaseException:
            rd_kafka_conf_destroy(conf)
            raise
        rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_LOG |
                                 RD_KAFKA_EVENT_ERROR | RD_KAFKA_EVENT_STATS)
        # rd_kafka_new takes ownership of conf on success only.  partner: _free
        self.rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr))
        if self.rk == NULL:
            rd_kafka_conf_destroy(conf)  # partner: _new_conf
            raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG,
                                  self.redact(errstr.decode(errors="replace")))
        self.name = rd_kafka_name(self.rk).decode()
        self.principal = principal(config)
        _configure_partitioner(self)
        rd_kafka_set_log_queue(self.rk, NULL)  # NULL: the main queue
        self.mainq = rd_kafka_queue_get_main(self.rk)  # partner: rd_kafka_queue_destroy in _free
        self.max_block_ns = _timeout_ns(max_block_s, "max.block.ms")
        self.copy_max = int(_conf_get(self.rk, "message.copy.max.bytes") or 0)
        # stage.pxi: a transactional producer's state checks and linger.ms=0's
        # "send at once" need every produce() in librdkafka at once.
        self.stage_ok = not _conf_get(self.rk, "transactional.id") and \
            float(_conf_get(self.rk, "linger.ms") or 0) > 0
        if _conf_get(self.rk, "enable.idempotence") == "true" and \
                not _conf_get(self.rk, "transactional.id"):
            _pid_kicks_start(self)   # events.pxi
        # CONFIGURATION.md, queue.buffering.max.messages: "A value of 0 disables this limit."
        self.max_msgs = int(_conf_get(self.rk, "queue.buffering.max.messages") or 0) or \
            0x7fffffffffffffff
        self.stage_bytes_max = min(
            _STAGE_BYTES, int(_conf_get(self.rk, "queue.buffering.max.kbytes") or 0) * 16)
        self.error_cb = error_cb
        self.stats_cb = stats_cb
        self.fork_gen = _fork_generation
        self.pid = _os.getpid()
        self.thread = _threading.Thread(target=self.serve, name=f"cykafka-events-{self.name}",
                                        daemon=True)
        self.thread.start()

    def serve(self):
        _serve(self)

    cdef int check_usable(self) except -1:
        if self.fork_gen != _fork_generation:
            raise ProducerForkedError(
                RD_KAFKA_RESP_ERR__STATE,
                f"this Producer was created in process {self.pid} and cannot be used after "
                f"fork() (librdkafka's threads do not survive it); create a new Producer in "
                f"the child process")
        if self.closed or self.closing or self.rk == NULL:
            raise ProducerClosedError(RD_KAFKA_RESP_ERR__STATE, "the Producer is closed")
        return 0

    # enter()/leave() bracket every use of rk (and of the topic handles) by a
    # caller's thread, so close() can wait until nobody uses what it destroys.
    # Both are plain C under the GIL, once per call (not per message).  A caller
    # that waits without the GIL (wait_room, flush, transactions) re-checks
    # ``closing`` after each slice and gives up, so close() waits at most one
    # slice (or one bounded metadata request, grouping.pxi) for it.

    cdef int enter(self) except -1:
        if self.closing or self.closed or self.rk == NULL or \
                self.fork_gen != _fork_generation:
            self.check_usable()   # raises the right error
        self.active += 1   # partner: leave()
        return 0

    cdef void leave(self) noexcept:
        self.active -= 1   # partner: enter()

    cdef int check_closing(self, str what) except -1:
        if self.closing:
            raise ProducerClosedError(RD_KAFKA_RESP_ERR__STATE,
                                      f"the Producer was closed while {what}")
        return 0

    cdef _Topic topic(self, object name):
        cdef _Topic t
        if name is self.last_name and self.last_topic is not None:
            return self.last_topic   # the usual case: one topic, one str object
        t = self.topics.get(name)
        if t is not None:
            self.last_name = name
            self.last_topic = t
            return t
        if not isinstance(name, str):
            raise TypeError(f"topic must be str, not {type(name).__name__}")
        if _TOPIC_RE.fullmatch(name) is None or name in (".", ".."):
            raise ValueError(f"invalid topic name {name!r}: Kafka topic names are 1 to 249 "
                             f"characters of ASCII letters, digits, '.', '_' and '-'")
        t = _Topic.__new__(_Topic)
        t.name = name
        # rd_kafka_topic_new frees the topic conf, on success and on error (rdkafka.h).
        t.rkt = rd_kafka_topic_new(self.rk, name.encode(), _kept_conf(self, t))  # partner: _free
        if t.rkt == NULL:
            raise error_from_code(rd_kafka_last_error(), f"cannot create topic handle {name!r}")
        self.topics[name] = t
        self.last_name = name
        self.last_topic = t
        return t

    cdef int wait_room(self, int64_t *deadline, unsigned long gen) except -1:
        """librdkafka's queue is full: wait with the GIL released until the event
        thread frees some of it (``gen``: _room_gen read before the attempt that
        failed), at most one slice, then let the caller retry.  ``*deadline`` (ns,
        0 = not yet set) is when max.block.ms runs out: QueueFullError then.  A
        pending signal (Ctrl-C) raises here, so a blocked produce is
        interruptible within a slice."""
        cdef int64_t start = _now_ns(), now = start
        if _event_core() is not None:
            # In a callback on an event thread: that thread frees the queue (its
            # own, or another producer's whose callbacks may produce back here),
            # so waiting for room could wait for itself.  Fail at once instead.
            raise error_from_code(
                RD_KAFKA_RESP_ERR__QUEUE_FULL,
                "librdkafka's queue is full and this produce runs on cykafka's event "
                "thread (in an on_delivery or done-callback), which cannot wait for room: "
                "it is the thread that makes room.  Catch QueueFullError there, or "
                "produce from another thread")
        if deadline[0] == 0:
            deadline[0] = start + self.max_block_ns if self.max_block_ns != _FOREVER \
                else _FOREVER
        self.waiting += 1
        with nogil:
            _room_wait(self, gen, min(start + _ROOM_SLICE_NS, deadline[0]))
            now = _now_ns()
        self.waiting -= 1
        self.blocked_ns += now - start
        PyErr_CheckSignals()   # declared except -1: a pending Ctrl-C raises here
        self.check_closing("this call waited for room in librdkafka's queue")
        if now >= deadline[0]:
            self.exhausted += 1
            raise _queue_full_error(self)
        return 0

    cdef raise_produce_error(self, int err, str topic):
        if err == RD_KAFKA_RESP_ERR__FATAL and self.fatal_error is not None:
            raise self.fatal_error
        _check(<rd_kafka_resp_err_t>err, f"produce to {topic!r} failed")

    cdef Py_ssize_t flush(self, int64_t timeout_ns, bint by_close=False) except -1:
        """Wait for outcomes up to ``timeout_ns`` (see _timeout_ns); the caller has
        entered (or is close() itself)."""
        cdef int64_t deadline = _deadline_after(timeout_ns)
        cdef int slice_ms
        while self.pending > 0 or rd_kafka_outq_len(self.rk) > 0:
            if self.stage_n:
                _stage_drain(self, False)   # the rest as room appears, slice by slice
            slice_ms = 100
            if deadline != _FOREVER:
                slice_ms = <int>min(100, (deadline - _now_ns()) // 1000000)
                if slice_ms <= 0:
                    break
            with nogil:
                rd_kafka_flush(self.rk, slice_ms)
            PyErr_CheckSignals()
            if not by_close:
                self.check_closing("flush() waited; close() fails what it cannot deliver")
        return max(self.pending, 0)

    cdef Py_ssize_t close(self, int64_t timeout_ns) except -1:
        """Flush (up to ``timeout_ns``), fail what is left, stop the event thread and
        free librdkafka; return how many messages were left to fail.  One close runs
        at a time: a concurrent second close waits for the first and returns 0."""
        if self.closed:
            return 0
        _refuse_on_event_thread(self, "close()")
        # acquire() releases the GIL while it waits.  Reentrant because release()
        # serves the last reports on the closing thread: a callback there calling
        # close() again must return, not deadlock (in_close).
        with self.close_lock:
            if self.closed or self.in_close:
                return 0
            self.in_close = True
            try:
                return self._close(timeout_ns)
            finally:
                self.in_close = False

    cdef Py_ssize_t _close(self, int64_t timeout_ns) except -1:
        if self.fork_gen != _fork_generation:
            # In a forked child: librdkafka's threads are gone, destroying would hang.
            self.closed = True
            self.rk = NULL
            self.mainq = NULL
            return 0
        # No call may start using rk from now on (enter() refuses); wait for those
        # that already did.  Each notices ``closing`` within one wait slice.
        self.closing = True
        with nogil:
            waiters = _room_bump(self)   # a produce waiting for room sees ``closing`` now
        if waiters:
            _room_wake_async(self)
        while self.active > 0:
            with nogil:
                usleep(1000)
            PyErr_CheckSignals()   # Ctrl-C raises; closing stays set, close() again resumes
        if self.txn_open:
            _end_open_transaction(self, timeout_ns)   # before the flush: see there
        remaining = self.flush(timeout_ns, True)
        if remaining:
            # Nothing may vanish: purge what is left so that every future fails
            # with _PURGE_QUEUE/_PURGE_INFLIGHT, and wait for those reports.  A
            # caller that set purge_reason (the exit, abandon()) says so itself.
            if self.purge_reason is None:
                self.purge_reason = "the Producer was closed before it was delivered"
                _logger.warning("%s: closing with %d undelivered messages; they are purged "
                                "and their futures fail", self.name, remaining)
            self.purge()
            self.flush(10_000_000_000, True)
        self.stopping = True
        # Wake the event thread out of rd_kafka_queue_poll() now instead of at the
        # end of its 200 ms wait (rdkafka.h: rd_kafka_queue_yield "Cancels the
        # current rd_kafka_queue_poll() on rkqu").
        rd_kafka_queue_yield(self.mainq)
        thread = self.thread
        if thread is not None and thread is not _threading.current_thread():
            thread.join()
        self.release()
        return remaining

    cdef purge(self):
        """Fail every message librdkafka still holds (reports follow on mainq), and
        the staged ones it never took.  Without RD_KAFKA_PURGE_F_NON_BLOCKING
        rd_kafka_purge "may block for a short time while background thread queues
        are purged": never with the GIL."""
        if self.stage_n:
            _stage_abandon(self, RD_KAFKA_RESP_ERR__PURGE_QUEUE,
                           f"purged while cykafka still held it: "
                           f"{self.purge_reason or 'the Producer was closed'}")
        with nogil:
            rd_kafka_purge(self.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)

    cdef Py_ssize_t abandon(self, str when) except -1:
        """Give up at once on what is left (Ctrl-C pressed again during a clean-up):
        purge it, so every future fails saying why, serve those reports, stop and
        free; say on stderr how many messages were abandoned, and return that.
        Waits for nothing on the network: a purge is local.  While it runs, SIGINT
        has its default action, so a third Ctrl-C ends the process outright instead
        of interrupting the abandon (the caller's handler is restored after)."""
        if self.closed:
            return 0
        n = max(self.pending, 0)
        self.purge_reason = f"abandoned {when}: Ctrl-C was pressed again during the clean-up"
        old = _sigint_default()
        try:
            self.close(0)
        finally:
            _sigint_restore(old)
        text = (f"cykafka: Ctrl-C again: abandoned {n} undelivered messages of Producer "
                f"{self.name} {when} (purged; their futures failed)")
        try:
            _sys.stderr.write(text + "\n")
            _sys.stderr.flush()
        except Exception:   # no usable stderr: the log below is all there is
            pass
        if _logger.hasHandlers():   # without handlers, logging would print it twice
            _logger.error(text)
        return n

    cdef bint _free(self) noexcept:
        """Free the topic handles, the main queue and the handle, whichever are set;
        True if there was a handle.  The one teardown of release() and __dealloc__;
        neither calls it in a forked child, where librdkafka's threads are gone and
        destroying would hang."""
        cdef rd_kafka_t *rk = self.rk
        cdef rd_kafka_queue_t *q = self.mainq
        cdef _Topic t
        self.rk = NULL
        self.mainq = NULL
        if isinstance(self.topics, dict):   # in __dealloc__ the cyclic GC may have cleared it
            for t in self.topics.values():
                if t.rkt != NULL:
                    rd_kafka_topic_destroy(t.rkt)  # partner: rd_kafka_topic_new in topic()
                    t.rkt = NULL
            self.topics.clear()
        with nogil:   # rd_kafka_destroy blocks while librdkafka's threads stop
            if q != NULL:
                rd_kafka_queue_destroy(q)  # partner: rd_kafka_queue_get_main in start()
            if rk != NULL:
                rd_kafka_destroy(rk)  # partner: rd_kafka_new in start()
        return rk != NULL

    cdef release(self):
        """The event thread has stopped: free topics, queue and handle."""
        self.closing = True
        self.stopping = True
        # librdkafka may still hold messages (flush timed out, the event thread
        # was stuck in a callback): fail them, and serve every report left on
        # the main queue here, so no future stays pending and no reference leaks.
        if self.pending > 0 or rd_kafka_outq_len(self.rk) > 0:
            self.purge()
        _drain(self)
        self.closed = True
        self._free()
        self.last_name = self.last_topic = None
        if self.pending > 0:
            _logger.error("%s: %d messages had no delivery report after close()",
                          self.name, self.pending)

    def __dealloc__(self):
        # Only finds rk set if close() never completed (interpreter teardown, a
        # close() interrupted by Ctrl-C and the Producer then lost): free what is
        # left and say so.
        if self.room_ready and self.fork_gen == _fork_generation:
            # Not in a forked child: a parent's thread may have been waiting on
            # room_cv at fork(), and pthread_cond_destroy waits for its waiters
            # (glibc's destroy frees no memory: skipping it leaks nothing).
            self.room_ready = False
            pthread_cond_destroy(&self.room_cv)   # partner: pthread_cond_init in __cinit__
            pthread_mutex_destroy(&self.room_mu)  # partner: pthread_mutex_init in __cinit__
        _stage_drop(self)
        if self.fork_gen != _fork_generation or not self._free():
            return
        _warnings.warn(f"cykafka Producer {self.name} was never closed; librdkafka was freed "
                       f"when it was garbage-collected ({max(self.pending, 0)} messages "
                       f"without an outcome)", ResourceWarning)
