# events.pxi -- the event thread: delivery reports, logs, errors and statistics.
#
# librdkafka is configured (rd_kafka_conf_set_events) to put delivery reports,
# log lines, errors and statistics on its main queue as events, instead of
# calling callbacks from its own threads.  One Python thread per producer
# waits on that queue without the GIL (rd_kafka_queue_poll) and, per event,
# takes the GIL once to resolve the whole batch of deliveries the event holds.
# CONFIGURATION.md, log.queue: "Disable spontaneous log_cb from internal
# librdkafka threads, instead enqueue log messages on queue set with
# rd_kafka_set_log_queue() and serve log callbacks or events through the
# standard poll APIs."

from libc.stdlib cimport realloc, free
from system cimport Dl_info, dladdr, dlopen, dlsym, RTLD_LAZY, RTLD_NOLOAD


# syslog levels (librdkafka's) -> logging levels
_LOG_LEVELS = (_logging.CRITICAL, _logging.CRITICAL, _logging.CRITICAL, _logging.ERROR,
               _logging.WARNING, _logging.INFO, _logging.INFO, _logging.DEBUG)


cdef _produce_errstr_fn _find_produce_errstr() noexcept:
    # rd_kafka_message_produce_errstr() came after the 2.0.2 headers we compile
    # against; the 2.16 library exports it, a system 2.0.x library does not.
    # Look it up in the librdkafka actually loaded (found via one of its symbols).
    cdef Dl_info info
    cdef void *handle
    if dladdr(<const void *>rd_kafka_version, &info) == 0 or info.dli_fname == NULL:
        return NULL
    handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)
    if handle == NULL:
        return NULL
    return <_produce_errstr_fn>dlsym(handle, "rd_kafka_message_produce_errstr")


cdef _produce_errstr_fn _produce_errstr = _find_produce_errstr()


#: What a purged message's error says when librdkafka had sent it before
#: (cykafka.importer.fates reads it: such a row is unknown, not "not sent").
_SENT_BEFORE = "it was sent before and never acknowledged: it may be in the topic"


cdef str _dr_errstr(_Core core, const rd_kafka_message_t *m):
    """The text of a failed delivery report: librdkafka's per-message reason, else
    the description of its code.  Never rd_kafka_message_errstr(), which "MUST NOT
    be used with the producer": for a delivery report it returns the payload.  A
    timeout carries the cause cykafka found meanwhile (``delivery_hint``, set by the
    epoch watch), since librdkafka reports only the timeout."""
    cdef const char *s = _produce_errstr(m) if _produce_errstr != NULL else NULL
    if s == NULL or s[0] == 0:
        s = rd_kafka_err2str(m.err)
    text = s.decode(errors="replace")
    topic = rd_kafka_topic_name(m.rkt).decode(errors="replace") if m.rkt != NULL else None
    refusal = _record_refusal(m.err, text, topic)
    if refusal is not None:
        text = f"{rd_kafka_err2str(m.err).decode()}: {refusal}"
    if m.err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT and core.delivery_hint is not None:
        text = f"{text}; {core.delivery_hint}"
    elif core.purge_reason is not None and m.err in (RD_KAFKA_RESP_ERR__PURGE_QUEUE,
                                                     RD_KAFKA_RESP_ERR__PURGE_INFLIGHT):
        text = f"{text}: {core.purge_reason}"
    if (m.err == RD_KAFKA_RESP_ERR__PURGE_QUEUE
            and rd_kafka_message_status(m) != RD_KAFKA_MSG_STATUS_NOT_PERSISTED):
        # Purged from the queue, but after a request that carried it got no answer
        # (socket.timeout.ms) and it waited there for its retry: rdkafka.h, "Message
        # was transmitted to broker, but no acknowledgement was received ...
        # RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED".  The broker may append that request
        # yet: unlike the rest of _PURGE_QUEUE, this one is not safe to send again.
        text = f"{text}; {_SENT_BEFORE}"
    note = (_authz_note(core, m.err, topic)
            or _size_note(core, m.err, topic, m.len + m.key_len))
    return f"{text}: {note}" if note else text


cdef _handle_event(_Core core, rd_kafka_event_t *ev, const _DrBuf *buf):
    cdef int etype = rd_kafka_event_type(ev)
    if etype == RD_KAFKA_EVENT_DR:
        _handle_dr(core, ev, buf)
    elif etype == RD_KAFKA_EVENT_LOG:
        _handle_log(core, ev)
    elif etype == RD_KAFKA_EVENT_ERROR:
        _handle_error(core, ev)
    elif etype == RD_KAFKA_EVENT_STATS:
        _handle_stats(core, ev)


cdef size_t _dr_fill(rd_kafka_event_t *ev, const rd_kafka_message_t **msgs, int64_t *tss,
                     size_t size) noexcept nogil:
    """Up to ``size`` of the event's next messages into ``msgs``, and into ``tss``
    the timestamps of futures' messages (-1 for a batch's: _BatchRun reads it if
    it needs it); how many."""
    cdef rd_kafka_timestamp_type_t tstype
    cdef size_t n = rd_kafka_event_message_array(ev, msgs, size), i
    for i in range(n):
        tss[i] = -1
        if not (<size_t>msgs[i]._private) & 1:   # a future's
            tss[i] = rd_kafka_message_timestamp(msgs[i], &tstype)
    return n


cdef void _dr_read(rd_kafka_event_t *ev, _DrBuf *buf) noexcept nogil:
    """Read a delivery report event's messages and their timestamps into ``buf``
    before the GIL is taken: the producing thread waits for every GIL hand-over,
    so the event thread takes it once per event.  Leaves ``buf.n`` 0 when the
    arrays cannot grow; _handle_dr then reads the messages itself."""
    cdef size_t count
    cdef void *p
    buf.n = 0
    if rd_kafka_event_type(ev) != RD_KAFKA_EVENT_DR:
        return
    count = rd_kafka_event_message_count(ev)
    if count > buf.cap:
        p = realloc(buf.msgs, count * sizeof(buf.msgs[0]))   # partner: _serve's free
        if p == NULL:
            return
        buf.msgs = <const rd_kafka_message_t **>p
        p = realloc(buf.tss, count * sizeof(buf.tss[0]))   # partner: _serve's free
        if p == NULL:
            return
        buf.tss = <int64_t *>p
        buf.cap = count
    buf.n = _dr_fill(ev, buf.msgs, buf.tss, count)


cdef _handle_dr(_Core core, rd_kafka_event_t *ev, const _DrBuf *buf):
    """Resolve the futures of a delivery report event: the messages _dr_read put
    in ``buf`` (NULL: none), then any the event still holds."""
    cdef const rd_kafka_message_t *chunk[_DR_CHUNK]
    cdef int64_t chunk_ts[_DR_CHUNK]
    cdef const rd_kafka_message_t **msgs
    cdef int64_t *tss
    cdef size_t n, i
    cdef dict wake = {}
    cdef _BatchRun run = _BatchRun()
    cdef _DrState st = _DrState()
    # The inspector waits for the statistics emit after this (Inspector.metrics).
    # CLOCK_MONOTONIC, as time.monotonic() on Linux, without a Python call per event.
    core.last_outcome_time = _now_ns() / 1e9
    try:
        if buf != NULL and buf.n:
            msgs, tss, n = buf.msgs, buf.tss, buf.n
        else:
            msgs, tss, n = chunk, chunk_ts, 0
        while True:
            if msgs == chunk:
                n = _dr_fill(ev, chunk, chunk_ts, _DR_CHUNK)
            if n == 0:
                break
            for i in range(n):
                # One message's exception must not abandon the rest of the event:
                # their futures would never resolve and their references leak.
                try:
                    _handle_dr_msg(core, msgs[i], tss[i], run, st, wake)
                except BaseException:
                    _log_internal("cykafka: internal error while handling a delivery report")
            if core.latency_cb is not None:   # an exporter asked (inspector/exporters)
                _latencies(core, msgs, n)
            msgs, tss = chunk, chunk_ts   # what the event holds beyond buf
        run.flush()
    finally:
        _notify_waiters()
        if wake:
            _schedule_wakeups(wake)


cdef _latencies(_Core core, const rd_kafka_message_t **msgs, size_t n):
    """Hand the latency_cb each message's delivery latency in seconds, delivered ones
    apart from failed ones (with their error's name)."""
    cdef list ok = []
    cdef list failed = []
    cdef size_t i
    cdef int64_t us
    for i in range(n):
        us = rd_kafka_message_latency(msgs[i])
        if us < 0:
            continue
        if msgs[i].err:
            failed.append((us / 1e6, rd_kafka_err2name(msgs[i].err).decode()))
        else:
            ok.append(us / 1e6)
    try:
        core.latency_cb(ok, failed)
    except BaseException:
        _log_internal("cykafka: the latency callback raised")


cdef class _DrState:
    """The per-partition counters (stats.pxi) of the current run of messages."""

    def __cinit__(self):
        self.pc = None
        self.rkt = NULL
        self.part = -2


cdef _handle_dr_msg(_Core core, const rd_kafka_message_t *m, int64_t ts, _BatchRun run,
                    _DrState st, dict wake):
    """Any report: a batch's message, a failure, a future with callbacks.  ``ts``:
    the message's timestamp, read for futures' messages only."""
    cdef void *op = m._private
    cdef DeliveryFuture fut
    # Counted first: nothing below can skip it.
    if m.err:
        core.failed += 1
    else:
        core.delivered += 1
    core.pending -= 1
    if (<size_t>op) & 1:
        run.add(m, op, core, wake)   # releases the chunk's count in a finally
        _count(core, m, st)
        return
    fut = <DeliveryFuture>op   # a new reference of our own: fut outlives the DECREF
    Py_DECREF(fut)  # partner: Py_INCREF in NativeProducer.produce
    if not m.err:
        _resolve(fut, m.partition, m.offset, ts)   # the common case: a few stores
    else:
        try:
            _fail(fut, m.partition, ts, error_from_code(m.err, _dr_errstr(core, m), delivery=True))
        finally:
            if fut._state == _PENDING:   # building the error raised (e.g. MemoryError)
                _fail(fut, m.partition, -1, None)   # failed even if the next line raises
                _extra(fut).exc = _unreported(m)
    if type(fut._ctx) is _Extra:   # on_delivery, done-callbacks or a failure
        _fire(fut, wake)
    _count(core, m, st)


cdef inline _count(_Core core, const rd_kafka_message_t *m, _DrState st):
    if st.pc is None or m.rkt != st.rkt or m.partition != st.part:
        st.pc = _part_count(core, m.rkt, m.partition)
        st.rkt = m.rkt
        st.part = m.partition
    _count_dr(st.pc, m)


cdef object _unreported(const rd_kafka_message_t *m):
    return error_from_code(RD_KAFKA_RESP_ERR__STATE,
                           f"cykafka failed while reporting this message's outcome "
                           f"(librdkafka said: {rd_kafka_err2name(m.err).decode()}); "
                           f"see the cykafka log", delivery=True)


cdef _log_internal(str what):
    # Even logging may raise (a raising logging.Filter): never out of the event thread.
    try:
        _logger.exception(what)
    except BaseException:
        pass


cdef _handle_log(_Core core, rd_kafka_event_t *ev):
    cdef const char *fac
    cdef const char *text
    cdef int level
    if rd_kafka_event_log(ev, &fac, &text, &level) != 0:
        return
    pylevel = _LOG_LEVELS[level] if 0 <= level < 8 else _logging.DEBUG
    if _logger.isEnabledFor(pylevel):
        _logger.log(pylevel, "%s [%s] %s", core.name, fac.decode(errors="replace"),
                    core.redact(text.decode(errors="replace")))


cdef _handle_error(_Core core, rd_kafka_event_t *ev):
    cdef char buf[512]
    cdef int code = rd_kafka_event_error(ev)
    cdef bint fatal = rd_kafka_event_error_is_fatal(ev)
    msg = core.redact((rd_kafka_event_error_string(ev) or b"").decode(errors="replace"))
    if fatal:
        # The event carries _FATAL; the original error is kept by librdkafka.
        code = rd_kafka_fatal_error(core.rk, buf, sizeof(buf))
        msg = core.redact(buf.decode(errors="replace"))
    note = _authz_note(core, code)
    if note:
        msg = f"{msg}: {note}"
    exc = error_from_code(code, msg, fatal=fatal)
    if fatal:
        core.fatal_error = exc
        if core.purge_reason is None:
            # librdkafka purges the queue on a fatal error: the messages say which.
            core.purge_reason = f"the producer stopped on a fatal error: {msg}"
    if core.delivery_hint is None and code in (RD_KAFKA_RESP_ERR__SSL,
                                               RD_KAFKA_RESP_ERR__AUTHENTICATION,
                                               RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED):
        # librdkafka fails the messages with _MSG_TIMED_OUT only: say why they never left.
        core.delivery_hint = f"the broker refused the connection: {msg}"
    _logger.log(_logging.ERROR if fatal else _logging.WARNING, "%s: %s", core.name, exc)
    if core.error_cb is not None:
        try:
            core.error_cb(exc)
        except BaseException:
            _logger.exception("cykafka: the error callback raised")


# The core whose event thread the current thread is (None elsewhere).
_event_tls = _threading.local()


# An idempotent producer sends nothing before it has a producer id.  librdkafka
# asks for one from a timer that fires every 500 ms until a broker is up
# (rdkafka_idempotence.c, rd_kafka_idemp_pid_timer_restart: "else use the default
# interval (500ms)"), and its first try comes as the first metadata answer
# replaces the bootstrap connection by the broker's own, before that one is up:
# every new idempotent producer waited 0.5 s for its first delivery (measured:
# 0.50 s on each start against the test broker, where a non-idempotent one takes
# 7 ms).  The state machine also runs when a metadata answer arrives, so the
# event thread asks for metadata (brokers and known topics only: it creates no
# topic) a few times early on; each try that finds a broker up gets the id at
# once, the others cost one round trip.  A transactional producer needs none:
# librdkafka watches its coordinator's state itself.
cdef int64_t[3] _PID_KICK_AFTER_NS = [20_000_000, 80_000_000, 250_000_000]
cdef int _PID_KICK_TIMEOUT_MS = 100   # bounds how long close() may wait for one


cdef void _pid_kicks_start(_Core core) noexcept:
    core.pid_kicks = 3
    core.pid_kick_ns = _now_ns() + _PID_KICK_AFTER_NS[0]


cdef void _pid_kick(_Core core) noexcept nogil:
    """One metadata request on the event thread (it runs before close() frees rk)."""
    cdef const rd_kafka_metadata_t *md = NULL
    cdef int i = 3 - core.pid_kicks   # this try's index in _PID_KICK_AFTER_NS
    if rd_kafka_metadata(core.rk, 0, NULL, &md, _PID_KICK_TIMEOUT_MS) == \
            RD_KAFKA_RESP_ERR_NO_ERROR:
        rd_kafka_metadata_destroy(md)  # partner: rd_kafka_metadata above
    core.pid_kicks -= 1
    if core.pid_kicks > 0:
        core.pid_kick_ns = core.pid_kick_ns - _PID_KICK_AFTER_NS[i] + \
            _PID_KICK_AFTER_NS[i + 1]


cdef inline object _event_core():
    """The core whose event thread this is, None on any other thread.  The other
    .pxi files ask through this, not through _event_tls."""
    return getattr(_event_tls, "core", None)


cdef _serve(_Core core):
    """Body of the event thread: runs until the core is stopping."""
    cdef rd_kafka_event_t *ev = NULL
    cdef rd_kafka_event_t *done = NULL
    cdef _DrBuf buf
    buf.msgs = NULL
    buf.tss = NULL
    buf.n = buf.cap = 0
    _event_tls.core = core
    cdef int wake
    try:
        while not core.stopping:
            wake = 0
            ev = NULL
            with nogil:
                # The event served last is destroyed here, in the same release of
                # the GIL as the wait for the next one: destroying frees its
                # messages (malloc'd copies of every value) and needs no Python
                # object.
                if done != NULL:
                    rd_kafka_event_destroy(done)  # partner: rd_kafka_queue_poll
                    done = NULL
                    wake = _room_bump(core)   # its messages were freed: wake wait_room
                if wake == 0:
                    ev = _next_event(core)   # stage.pxi: also wakes for a due stage
                    if ev != NULL:
                        _dr_read(ev, &buf)
            if wake:
                # aproduce calls wait on their loops: woken now, not after the next
                # event (which a frozen broker may hold back for long).
                _room_wake_async(core)
            if ev != NULL:
                _serve_event(core, ev, &buf)
                done = ev
            if core.pid_kicks > 0 and _now_ns() >= core.pid_kick_ns and not core.stopping:
                with nogil:
                    _pid_kick(core)
            if _stage_due(core):
                # Staged messages nobody else handed over; never waits for room.
                try:
                    _stage_drain(core, False)
                except BaseException:
                    _log_internal("cykafka: handing staged messages to librdkafka failed")
            if core.orphaned and (core.pending <= 0 or _now_ns() >= core.orphan_deadline):
                break
    finally:
        with nogil:
            if done != NULL:
                rd_kafka_event_destroy(done)  # partner: rd_kafka_queue_poll
            free(buf.msgs)   # partner: _dr_read's realloc
            free(buf.tss)    # partner: _dr_read's realloc
    if core.orphaned:
        # The Producer was dropped inside one of its own callbacks and purged
        # (NativeProducer.__del__); its reports are served: nobody else will close.
        try:
            core.release()
        except BaseException:
            _log_internal("cykafka: closing a Producer dropped in its own callback failed")


cdef int _refuse_on_event_thread(_Core core, str what) except -1:
    """close(), flush() and the transaction calls wait for delivery reports, which
    only the event thread serves: called from a callback on it, they would wait
    for themselves forever."""
    if _event_core() is core:
        raise RuntimeError(
            f"{what} called from a callback on the Producer's own event thread, the "
            f"thread that serves the delivery reports it would wait for (a deadlock); "
            f"call it from another thread")
    return 0


cdef _drain(_Core core):
    """Serve what is left on the main queue, from the closing thread once the
    event thread has stopped: rd_kafka_queue_poll with timeout 0 does not wait."""
    cdef rd_kafka_event_t *ev
    cdef int wake
    while True:
        with nogil:
            ev = rd_kafka_queue_poll(core.mainq, 0)
        if ev == NULL:
            return
        try:
            _serve_event(core, ev, NULL)
        finally:
            with nogil:
                rd_kafka_event_destroy(ev)  # partner: rd_kafka_queue_poll
                wake = _room_bump(core)
            if wake:
                _room_wake_async(core)


cdef _serve_event(_Core core, rd_kafka_event_t *ev, const _DrBuf *buf):
    """Handle one event (its caller destroys it); ``buf``: its messages if it is a
    delivery report read by _dr_read, or NULL."""
    try:
        _handle_event(core, ev, buf)
    except BaseException:
        _log_internal("cykafka: internal error while handling an event")
