# delivery.pxi -- futures for deliveries, resolved in bulk by the event thread.
#
# A DeliveryFuture is deliberately small, 48 bytes (no lock, no condition of
# its own, no vtable, the metadata kept as C fields and built into a
# RecordMetadata only when asked, callbacks and failures behind one _Extra
# that most futures never need): a producer may hold millions of them, and
# measured, 64 more bytes per future made produce() ~10 % slower (the event
# thread writes them and result() reads them again).  All futures share one condition;
# the event thread notifies it once per batch of resolutions, and only when
# somebody is actually waiting.
#
# Futures are not objects of the cyclic GC (no_gc).  Untracked GC objects
# still count as allocations towards its thresholds: a million futures set off
# about 1,400 collections, 15-20 % of produce()'s time.  Without the GC, no
# reference a future holds may close a cycle for good:
# - done-callbacks and on_delivery (which may reference the future) are
#   dropped when it resolves, and every future resolves (delivered, failed,
#   or purged by close());
# - its failure is kept as a template that is never handed out: result(),
#   exception() and the callbacks get a copy, so a raised error's traceback
#   (whose frames may hold the future) is never referenced by the future.

cimport cython

from python cimport (PyObject_GC_UnTrack, PyType_GenericAlloc, PyTuple_SET_ITEM,
                     PyTuple_GET_ITEM, Py_REFCNT)

RecordMetadata = _namedtuple("RecordMetadata", ["topic", "partition", "offset", "timestamp"])
RecordMetadata.__module__ = "cykafka"
RecordMetadata.__doc__ = ("Where a message was written: topic, partition, offset, and "
                          "timestamp (ms since the epoch; -1 if not available).")

cdef int64_t _last_ts = -1
cdef object _last_ts_obj = -1
cdef object _last_md = None   # the RecordMetadata made last


cdef inline void _refill(object md, Py_ssize_t i, object value) noexcept:
    cdef PyObject *old = PyTuple_GET_ITEM(md, i)
    Py_INCREF(value)
    PyTuple_SET_ITEM(md, i, value)
    Py_DECREF(<object>old)   # a str or an int: frees nothing that runs Python code


cdef object _record_metadata(object topic, int32_t partition, int64_t offset, int64_t ts):
    # namedtuple's own __new__ is Python code and tuple.__new__(cls, args) builds
    # a temporary tuple first; a million results are read, so the RecordMetadata
    # is allocated as what it is, a 4-item tuple subtype, and filled in place.
    global _last_ts, _last_ts_obj, _last_md
    cdef object p = partition, o = offset, t
    cdef object md
    # Messages produced within one millisecond share their timestamp: reuse the
    # last int object instead of allocating one per result.
    if ts != _last_ts:
        _last_ts_obj = ts
        _last_ts = ts
    t = _last_ts_obj
    if _last_md is not None and Py_REFCNT(<PyObject *>_last_md) == 1:
        # Nobody but _last_md holds the last result (read and dropped, the usual
        # way): refill it rather than free one tuple and allocate the next, as
        # CPython's zip() and dict iterators reuse their result tuple.
        md = _last_md
        _refill(md, 0, topic)
        _refill(md, 1, p)
        _refill(md, 2, o)
        _refill(md, 3, t)
        return md
    md = PyType_GenericAlloc(RecordMetadata, 4)
    Py_INCREF(topic)
    PyTuple_SET_ITEM(md, 0, topic)
    Py_INCREF(p)
    PyTuple_SET_ITEM(md, 1, p)
    Py_INCREF(o)
    PyTuple_SET_ITEM(md, 2, o)
    Py_INCREF(t)
    PyTuple_SET_ITEM(md, 3, t)
    # A str and three ints cannot form a cycle: no work for the cyclic GC.
    PyObject_GC_UnTrack(md)
    _last_md = md
    return md


# The condition all futures' waiters share (a module attribute, not a C global,
# so that tests can hold it).  Use it through _waiters_cond().
_cond = _threading.Condition(_threading.Lock())
cdef Py_ssize_t _nwaiters = 0
cdef long _cond_fork_gen = 0


cdef object _waiters_cond():
    """The shared condition.  In a forked child, a new one: a thread of the parent
    that was inside it at fork() left its lock held for ever, and none of the
    parent's waiters exists here."""
    global _cond, _nwaiters, _cond_fork_gen
    if _cond_fork_gen != _fork_generation:
        _cond = _threading.Condition(_threading.Lock())
        _nwaiters = 0
        _cond_fork_gen = _fork_generation
    return _cond


cdef inline void _notify_waiters():
    # Called with the GIL after resolutions; see _wait_outcomes for why
    # reading _nwaiters without the lock cannot lose a wake-up.
    if _nwaiters:
        cond = _waiters_cond()
        with cond:
            cond.notify_all()


cdef _wait_outcomes(_FutureBase fut, _Core core, Py_ssize_t before, deadline):
    """Wait until ``fut`` is resolved, or (``fut`` None) until ``core`` has more
    outcomes than ``before``; False once ``deadline`` (monotonic s; None: never)
    passes first.  The event thread changes state under the GIL and only then
    reads _nwaiters, which a waiter raised (under the GIL too) before checking
    the state: either the waiter sees the change or it gets notified."""
    global _nwaiters
    cond = _waiters_cond()
    with cond:
        _nwaiters += 1
        try:
            while (fut._state == _PENDING if fut is not None
                   else core.delivered + core.failed == before):
                remaining = None if deadline is None else deadline - _monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                cond.wait(remaining)
        finally:
            _nwaiters -= 1
    return True


def _on_loop(loop, list items):
    """Runs on an asyncio loop, once per loop per batch of resolutions: wake the
    awaiters of resolved futures (asyncio futures) and run the callbacks added from
    that loop ((fn, future, context) tuples), each in its context, as the loop runs
    a future's callbacks, an exception going to the loop's exception handler."""
    for item in items:
        if type(item) is tuple:
            fn, fut, ctx = item
            try:
                ctx.run(fn, fut)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                loop.call_exception_handler({
                    "message": f"Exception in callback {fn!r} of {fut!r}",
                    "exception": exc,
                    "future": fut,
                })
        elif type(item) is _Countdown:
            afut = (<_Countdown>item).afut
            if not afut.done():
                afut.set_result(None)
        elif not item.done():
            item.set_result(None)


cdef _schedule_wakeups(dict wake):
    # One call_soon_threadsafe per loop per batch, not per future.
    for loop, items in wake.items():
        try:
            loop.call_soon_threadsafe(_on_loop, loop, items)
        except RuntimeError:
            pass  # the loop is closed: nobody is awaiting any more


# What a DeliveryFuture and a BatchFuture share, as functions rather than cdef
# methods: a cdef method would give every future a vtable pointer (_native.pxd).

cdef inline bint _forked(_FutureBase f) noexcept:
    """Pending in a process forked after it was made: the event thread that
    would resolve it exists only in the parent, so it never will here."""
    return f._state == _PENDING and f._fork_gen != <unsigned short>_fork_generation


cdef object _outcome(_FutureBase f):
    """A resolved future's result, or raise its delivery error."""
    if type(f) is DeliveryFuture:
        if f._state == _FAILED:
            raise _failure(<DeliveryFuture>f)
        return _metadata(<DeliveryFuture>f)
    return (<BatchFuture>f)._report()


cdef object _error(_FutureBase f):
    """A resolved future's delivery error (a new copy each time), or None."""
    return _failure(<DeliveryFuture>f) if f._state == _FAILED else None


cdef _wait(_FutureBase f, timeout):
    if _forked(f):
        raise _forked_future_error()
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 or None, not {timeout!r}")
    if timeout != 0 and _event_core() is not None:
        # Outcomes are set by event threads; waiting on one blocks its producer's
        # reports, and this future's own report if it comes from that producer.
        raise RuntimeError(
            "waiting for a pending future's outcome (result()/exception()) on "
            "cykafka's event thread, i.e. inside an on_delivery or done-callback, "
            "would block the thread that delivers it; use add_done_callback, or wait "
            "from another thread")
    if _staged:
        _stage_drain_all()   # the future's message may still be staged (stage.pxi)
    deadline = None if timeout is None else _monotonic() + timeout
    if not _wait_outcomes(f, None, 0, deadline):
        raise TimeoutError(f"delivery outcome not known within {timeout} s")


cdef _add_callback(_FutureBase f, cb):
    # A callback may reference its future: the cycle lasts until _fire drops it.
    cdef list one = [cb]
    cdef _Extra ex = None
    cdef BatchFuture bf
    if type(f) is DeliveryFuture and f._state == _PENDING:
        ex = _extra(<DeliveryFuture>f)
    # Checked after the allocations above, which may run other threads (the GC).
    if f._state == _PENDING and not _forked(f):
        if ex is not None:
            if ex.callbacks is None:
                ex.callbacks = one
            else:
                ex.callbacks.append(cb)
        else:
            bf = <BatchFuture>f
            if bf._callbacks is None:
                bf._callbacks = one
            else:
                bf._callbacks.append(cb)
    else:
        _run_callback(f, cb, None)


cdef _run_callback(_FutureBase f, cb, dict wake):
    cdef _Countdown cd
    cdef object item = None
    cdef object loop
    if type(cb) is tuple:   # (loop, afut): an await
        loop, item = cb
    elif type(cb) is _OnLoop:   # added from a running loop: runs on it
        loop = (<_OnLoop>cb).loop
        item = ((<_OnLoop>cb).fn, f, (<_OnLoop>cb).ctx)
    elif type(cb) is _Countdown:   # all_delivered(): wakes once, for the last
        cd = <_Countdown>cb
        cd.left -= 1
        if cd.left:
            return
        loop, item = cd.loop, cd
    if item is not None:
        if wake is not None:
            wake.setdefault(loop, []).append(item)
        else:
            try:
                loop.call_soon_threadsafe(_on_loop, loop, [item])
            except RuntimeError:
                pass   # the loop is closed: nobody is awaiting any more
        return
    try:
        cb(f)
    except BaseException:
        _logger.exception("cykafka: a done-callback raised; delivery continues")


cdef _run_callbacks(_FutureBase f, list cbs, dict wake):
    if cbs is not None:
        for cb in cbs:
            _run_callback(f, cb, wake)


cdef _fire(DeliveryFuture fut, dict wake):
    """Run on_delivery and the done-callbacks once resolved (event thread, GIL
    held), and drop them: they may reference the future."""
    ctx = fut._ctx
    if type(ctx) is not _Extra:
        return
    ex = <_Extra>ctx
    cb = ex.on_delivery
    cbs = ex.callbacks
    ex.on_delivery = None
    ex.callbacks = None
    if cb is not None:
        try:
            cb(_error(fut), _metadata(fut))
        except BaseException:
            _logger.exception("cykafka: an on_delivery callback raised; delivery continues")
    _run_callbacks(fut, cbs, wake)


@cython.no_gc   # see the top of this file; BatchFuture adds the GC back
cdef class _FutureBase:
    """What a DeliveryFuture and a BatchFuture share: concurrent.futures-style
    waiting, done-callbacks, and awaiting from asyncio."""

    def done(self):
        """True once the outcome (delivered or failed) is known."""
        return self._state != _PENDING or _forked(self)

    def running(self):
        return not self.done()

    def cancel(self, msg=None):
        """Always False: a message handed to librdkafka cannot be taken back.  (So
        asyncio cannot cancel it either: see the asyncio notes on the class.)"""
        return False

    def cancelled(self):
        return False

    def result(self, timeout=None):
        """Wait up to ``timeout`` seconds (None: forever) for the outcome; return it
        or raise the delivery error.  Raises TimeoutError if still pending."""
        if self._state == _PENDING:
            _wait(self, timeout)
        return _outcome(self)

    def exception(self, timeout=None):
        """The delivery error, or None if delivered (waits like ``result``)."""
        if _forked(self):
            return _forked_future_error()
        if self._state == _PENDING:
            _wait(self, timeout)
        return _error(self)

    def add_done_callback(self, fn, *, context=None):
        """Call ``fn(future)`` once the outcome is known.  Added from a thread that
        runs an asyncio loop, ``fn`` runs on that loop (in ``context``, default: a copy
        of the current one), as an asyncio future's callback does, scheduled at once
        if the outcome is known; exceptions go to the loop's exception handler.
        Added from any other thread, ``fn`` runs on cykafka's event thread (at once
        if the outcome is known); exceptions it raises are logged."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        loop = _running_loop()
        if loop is None:
            if context is not None:
                fn = _InContext(fn, context)
            _add_callback(self, fn)
            return
        if context is None:
            context = _copy_context()
        if self._state != _PENDING or _forked(self):
            loop.call_soon(fn, self, context=context)
            return
        _add_callback(self, _OnLoop(loop, fn, context))

    def remove_done_callback(self, fn):
        """Remove every pending call of ``fn`` added by ``add_done_callback``;
        return how many were removed."""
        cdef list cbs
        cdef _Extra ex
        if type(self) is DeliveryFuture:
            ctx = (<DeliveryFuture>self)._ctx
            if type(ctx) is not _Extra:
                return 0
            ex = <_Extra>ctx
            cbs = ex.callbacks
        else:
            cbs = (<BatchFuture>self)._callbacks
        if not cbs:
            return 0
        keep = [cb for cb in cbs if not _is_call_of(cb, fn)]
        # Only if the event thread did not take the list meanwhile (it drops it
        # when it runs the callbacks): a list put back would never run.
        if type(self) is DeliveryFuture:
            if ex.callbacks is not cbs:
                return 0
            ex.callbacks = keep
        else:
            if (<BatchFuture>self)._callbacks is not cbs:
                return 0
            (<BatchFuture>self)._callbacks = keep
        return len(cbs) - len(keep)

    def get_loop(self):
        """The running asyncio loop: a future of cykafka's is resolved by its event
        thread and belongs to no loop, so it serves the loop that asks (its callbacks
        added from a loop run there).  RuntimeError outside a running loop."""
        loop = _running_loop()
        if loop is None:
            raise RuntimeError("get_loop() answers inside a running asyncio loop only: "
                               "a cykafka future belongs to the loop that awaits it")
        return loop

    # asyncio's mark of a future (asyncio.isfuture): asyncio.gather, wait,
    # as_completed and wait_for then use the future itself, with its callbacks,
    # instead of wrapping it in a Task.  A Task that was handed the future by a
    # yield sets it to False.  Kept in a bit of _held: no byte more per future.
    @property
    def _asyncio_future_blocking(self):
        return bool(self._held & _BLOCKING)

    @_asyncio_future_blocking.setter
    def _asyncio_future_blocking(self, value):
        if value:
            self._held |= _BLOCKING
        else:
            self._held &= ~_BLOCKING

    def __await__(self):
        if _forked(self):
            raise _forked_future_error()
        if self._state == _PENDING:
            if _staged:
                _stage_drain_all()   # the message may still be staged (stage.pxi)
            loop = _asyncio().get_running_loop()
            afut = loop.create_future()
            # _add_callback re-checks the state: creating afut may have let the
            # event thread resolve us in between.
            _add_callback(self, (loop, afut))
            yield from afut.__await__()
        return _outcome(self)

    def as_concurrent(self):
        """A ``concurrent.futures.Future`` mirroring this one, for
        ``concurrent.futures.wait``/``as_completed`` and ``asyncio.wrap_future``."""
        cf = _cf.Future()
        cf.set_running_or_notify_cancel()
        _add_callback(self, _Mirror(cf))
        return cf


cdef inline bint _is_call_of(object cb, object fn):
    if type(cb) is _OnLoop:
        return (<_OnLoop>cb).fn == fn
    if type(cb) is _InContext:
        return (<_InContext>cb).fn == fn
    return type(cb) is not tuple and type(cb) is not _Countdown and cb == fn


cdef object _get_running_loop = None
cdef object _copy_context_fn = None


cdef object _running_loop():
    """The asyncio loop running in this thread, or None (without importing asyncio
    for programs that never use it)."""
    global _get_running_loop
    if _get_running_loop is None:
        if "asyncio" not in _sys.modules:
            return None
        _get_running_loop = _sys.modules["asyncio"]._get_running_loop
    return _get_running_loop()


cdef object _copy_context():
    global _copy_context_fn
    if _copy_context_fn is None:
        import contextvars
        _copy_context_fn = contextvars.copy_context
    return _copy_context_fn()


cdef class _OnLoop:
    """A done-callback added from a running asyncio loop: it runs on that loop."""

    def __init__(self, loop, fn, ctx):
        self.loop = loop
        self.fn = fn
        self.ctx = ctx


cdef class _InContext:
    """A done-callback for the event thread, given a context to run in."""

    def __init__(self, fn, ctx):
        self.fn = fn
        self.ctx = ctx

    def __call__(self, fut):
        return self.ctx.run(self.fn, fut)


cdef class _Countdown:
    """all_delivered()'s one callback on each pending future: the last of them
    wakes the awaiter, once."""

    def __init__(self, loop, afut):
        self.loop = loop
        self.afut = afut
        self.left = 1   # all_delivered() holds one until every future is counted


cdef class _AllDelivered:
    """What all_delivered() returns (see there)."""

    def __init__(self, list futs, bint return_exceptions):
        self.futs = futs
        self.return_exceptions = return_exceptions

    def __await__(self):
        cdef _FutureBase f
        cdef _Countdown cd = None
        cdef list futs = self.futs
        for f in futs:
            if _forked(f):
                raise _forked_future_error()
        if _staged:
            _stage_drain_all()   # their messages may still be staged (stage.pxi)
        for f in futs:
            if f._state == _PENDING:
                if cd is None:
                    loop = _asyncio().get_running_loop()
                    cd = _Countdown(loop, loop.create_future())
                cd.left += 1   # before the callback: it may run at once
                _add_callback(f, cd)
        if cd is not None:
            cd.left -= 1   # every future counted: the last outcome may now wake us
            if cd.left:
                yield from cd.afut.__await__()
        out = []
        first = None
        for f in futs:
            if f._state == _FAILED:
                err = _error(f)
                if first is None:
                    first = err
                out.append(err)
            else:
                out.append(_outcome(f))
        if first is not None and not self.return_exceptions:
            raise first
        return out


def all_delivered(futures, *, return_exceptions=False):
    """An awaitable for the outcomes of ``futures`` (DeliveryFutures and
    BatchFutures, of any producers): ``await all_delivered(futs)`` returns their
    results in order (RecordMetadata, BatchReport) once every one is known, or,
    if any failed, raises the first failed one's error (in order) then; with
    ``return_exceptions=True`` the errors take their places in the list.  It costs
    what awaiting them one by one costs: one asyncio future in all, however many
    are pending.  Cancelling the awaiting task stops the wait at once; the
    futures are not affected (a produced message cannot be taken back)."""
    cdef list futs = list(futures)
    for i, f in enumerate(futs):
        if not isinstance(f, _FutureBase):
            raise TypeError(f"all_delivered() takes cykafka futures; item {i} is a "
                            f"{type(f).__name__}")
    return _AllDelivered(futs, return_exceptions)


cdef class _Mirror:

    def __init__(self, cf):
        self.cf = cf

    def __call__(self, _FutureBase fut):
        if _forked(fut):
            self.cf.set_exception(_forked_future_error())
            return
        err = _error(fut)
        if err is None:
            self.cf.set_result(_outcome(fut))
        else:
            self.cf.set_exception(err)


cdef class _Extra:
    """A DeliveryFuture's state beyond the topic: its on_delivery, done-callbacks
    and failure.  Most futures never need one (delivered, nobody attached a
    callback): they keep only the topic."""


@cython.no_gc
cdef class DeliveryFuture(_FutureBase):
    """The outcome of one produced message: a RecordMetadata, or a KafkaDeliveryError.

    A failed future gives out a new exception object at each ``result()`` and
    ``exception()`` (equal in type, code and message): it keeps no reference to
    one that was raised."""

    def __init__(self):
        raise TypeError("DeliveryFuture is created by Producer.produce()")

    @property
    def topic(self):
        return _topic_of(self)

    def __repr__(self):
        if self._state == _PENDING:
            return f"<DeliveryFuture pending topic={_topic_of(self)!r}>"
        if self._state == _FAILED:
            return f"<DeliveryFuture failed {_failure(self)}>"
        return (f"<DeliveryFuture delivered {_topic_of(self)}[{self._partition}]"
                f"@{self._offset}>")


cdef inline object _topic_of(DeliveryFuture fut):
    ctx = fut._ctx
    return (<_Extra>ctx).topic if type(ctx) is _Extra else ctx


cdef inline object _metadata(DeliveryFuture fut):
    return _record_metadata(_topic_of(fut), fut._partition, fut._offset, fut._timestamp)


cdef _Extra _extra(DeliveryFuture fut):
    """The future's _Extra, made on first need."""
    cdef _Extra ex
    if type(fut._ctx) is not _Extra:
        ex = _Extra.__new__(_Extra)   # may run the GC, and with it other threads
        if type(fut._ctx) is not _Extra:   # nobody made one meanwhile
            ex.topic = fut._ctx
            fut._ctx = ex
    return <_Extra>fut._ctx


cdef inline void _hold_value(DeliveryFuture fut, object value) noexcept:
    """Keep the bytes a message's value was lent from (produced without
    RD_KAFKA_MSG_F_COPY) until its delivery report.  INTRODUCTION.md: "If
    RD_KAFKA_MSG_F_COPY flag is not set no data copying will be performed and
    librdkafka will hold on the payload pointer until the message has been
    delivered or fails.  The delivery report callback will be called when
    librdkafka is done with the message to let the application regain ownership
    of the payload memory."  A pending future has no timestamp yet: the slot
    holds the reference.  (In a child forked meanwhile the future never
    resolves, and the value stays referenced as long as the future.)"""
    Py_INCREF(value)   # partner: _release_value, when the report resolves fut
    fut._timestamp = <int64_t><intptr_t><PyObject *>value
    fut._held |= _HELD


cdef inline void _release_value(DeliveryFuture fut) noexcept:
    if fut._held & _HELD:
        fut._held &= ~_HELD
        # partner: _hold_value; bytes run no Python code when freed
        Py_DECREF(<object><PyObject *><intptr_t>fut._timestamp)


cdef inline void _resolve(DeliveryFuture fut, int32_t partition, int64_t offset,
                          int64_t ts) noexcept:
    """Delivered: a few stores, the event thread's common case."""
    _release_value(fut)
    fut._partition = partition
    fut._offset = offset
    fut._timestamp = ts
    fut._state = _RESOLVED


cdef _fail(DeliveryFuture fut, int32_t partition, int64_t ts, object exc):
    """Failed with ``exc`` (a template, never handed out: _failure copies it).  The
    future is failed even if keeping ``exc`` runs out of memory, or if ``exc`` is
    None (_failure then says that the error was lost)."""
    _release_value(fut)
    fut._partition = partition
    fut._offset = -1
    fut._timestamp = ts
    fut._state = _FAILED
    if exc is not None:
        _extra(fut).exc = exc


cdef object _failure(DeliveryFuture fut):
    """A new copy of a failed future's error."""
    ctx = fut._ctx
    if type(ctx) is _Extra and (<_Extra>ctx).exc is not None:
        return _copy_error((<_Extra>ctx).exc)
    return error_from_code(RD_KAFKA_RESP_ERR__STATE,
                           "this message failed, and cykafka failed while keeping its "
                           "delivery error; see the cykafka log", delivery=True)


cdef object _forked_future_error():
    return ProducerForkedError(
        RD_KAFKA_RESP_ERR__STATE,
        "this future's message was handed to a Producer before fork(); its outcome is "
        "known only in the parent process (librdkafka's threads do not survive fork())")


cdef object _copy_error(object exc):
    """A new exception of ``exc``'s type with its args and attributes (KafkaError's
    code, name, message, ...), without calling __init__ again."""
    cdef object cls = type(exc)
    cdef object c = cls.__new__(cls)
    c.args = exc.args
    c.__dict__.update(exc.__dict__)
    return c


cdef DeliveryFuture _new_delivery_future(object topic, object on_delivery):
    cdef DeliveryFuture fut = DeliveryFuture.__new__(DeliveryFuture)
    fut._fork_gen = <unsigned short>_fork_generation
    fut._ctx = topic
    if on_delivery is not None:
        _extra(fut).on_delivery = on_delivery
    fut._partition = -1
    fut._offset = -1
    fut._timestamp = -1
    return fut


cdef object _asyncio_mod = None


cdef object _asyncio():
    global _asyncio_mod
    if _asyncio_mod is None:
        import asyncio
        _asyncio_mod = asyncio
    return _asyncio_mod
