# aio.pxi -- asyncio's way in: aproduce and aproduce_batch wait for room on their
# event loop instead of blocking it.  produce() waits for room with its thread
# (wait_room), and in an asyncio service that thread is the loop: every other task
# would stop with it.
#
# The wait uses core.pxi's room signal.  The event thread bumps room_gen each time
# destroying a delivery report frees librdkafka's queue.  An aproduce that found
# the queue full leaves an asyncio future (with its loop) in core.room_afuts,
# under room_mu, unless room_gen moved since its attempt (then it retries at once);
# the event thread, after a bump that saw waiters, hands them to their loops (one
# call_soon_threadsafe per loop) and they retry.  Nothing polls: a waiting task is
# woken only when room may have appeared, when close() begins, or when
# max.block.ms runs out (a timer on its loop).  Cancelled while waiting, it has
# queued nothing.
#
# The common call finds room: aproduce queues the message when it is called and
# returns a _Queued, whose await hands back the DeliveryFuture in C (am_send) - no
# coroutine, no asyncio future, nothing on the loop.  A coroutine per call cost
# more than produce() itself (bench/aproduce.py).  Only a call that finds the
# queue full returns a coroutine, which queues nothing before it is awaited.

from python cimport PySendResult, PYGEN_RETURN, PyTypeObject_async


@cython.final
@cython.freelist(64)
cdef class _Queued:
    """aproduce's answer when its message was queued at once: awaiting it (or running
    it as a Task, it passes for a coroutine) gives the DeliveryFuture."""
    cdef object fut

    def __await__(self):
        return self

    def __iter__(self):
        return self

    # What the am_send slot does, for callers that do not use it (a tracer, ``send``).
    def __next__(self):
        raise StopIteration(self.fut)

    def send(self, value):
        raise StopIteration(self.fut)

    def throw(self, typ, val=None, tb=None):
        raise typ if val is None else val   # as a coroutine not yet started would

    def close(self):
        pass


cdef PySendResult _queued_send(PyObject *it, PyObject *arg, PyObject **result) noexcept:
    # A slot: CPython calls it with the GIL held, and it cannot fail.
    fut = (<_Queued>it).fut
    Py_INCREF(fut)   # partner: the awaiting frame owns *result
    result[0] = <PyObject *>fut
    return PYGEN_RETURN


if (<PyTypeObject_async *><PyObject *>_Queued).tp_as_async != NULL:   # set: it has __await__
    (<PyTypeObject_async *><PyObject *>_Queued).tp_as_async.am_send = _queued_send


cdef object _aproduce(NativeProducer p, object topic, object value, object key,
                      object partition, object timestamp, object headers,
                      object on_delivery):
    """aproduce()'s body: a _Queued, or the coroutine that waits for room."""
    cdef unsigned long gen = 0
    cdef _Queued q
    cdef _Core core = p._usable()
    fut = _produce_one(core, topic, value, key, partition, timestamp, headers,
                       on_delivery, False, &gen)
    if fut is not None:
        if core.stage_n == 1:   # it began a group: once per hand-over at most
            _count_soon(core)
        q = _Queued.__new__(_Queued)
        q.fut = fut
        return q
    return _aproduce_wait(p, topic, value, key, partition, timestamp, headers,
                          on_delivery, gen)


# Topics whose partition count a worker thread is reading for aproduce.
cdef set _counting = set()


cdef _count_soon(_Core core):
    """A stage handed over without waiting, as aproduce's is, names the partitions only
    while the topic's partition count is fresh (stage.pxi's _stage_count); stale, every
    message goes through librdkafka's partitioner, which costs more per message (on
    one partition, py-spy counted a third fewer samples in an aproduce loop once the
    count was kept fresh; produce() refreshes it with its own thread).  The metadata
    request may wait for a broker, so a worker thread makes it, one per topic at a
    time."""
    cdef _Topic t = core.last_topic
    if t is None or (t.cnt_at_ns != 0 and _now_ns() - t.cnt_at_ns < _COUNT_TTL_NS) \
            or t in _counting:
        return
    _counting.add(t)
    _asyncio().get_running_loop().run_in_executor(None, _count_in_thread, core, t)


def _count_in_thread(_Core core, _Topic t):
    try:
        _refresh_partition_count(core, t)
    except Exception:
        pass   # closed meanwhile: nothing left to count for
    finally:
        _counting.discard(t)


cdef object _room_waiter(_Core core, unsigned long gen, object loop):
    """A future on ``loop`` resolved when room may have appeared, or None if
    room_gen already moved past ``gen`` (retry now)."""
    cdef bint moved
    fut = loop.create_future()
    entry = (loop, fut)   # allocated before room_mu: a collection could run a finalizer
    pthread_mutex_lock(&core.room_mu)
    moved = core.room_gen != gen
    if not moved:
        core.room_afuts.append(entry)   # room for it was made by the list's growth only
        core.room_async += 1
    pthread_mutex_unlock(&core.room_mu)
    return None if moved else fut


cdef _room_wake_async(_Core core):
    """Resolve, on their loops, the futures of every aproduce waiting for room (GIL
    held; called after a _room_bump that counted them)."""
    fresh = []   # allocated before room_mu, like _room_waiter's entry
    pthread_mutex_lock(&core.room_mu)
    waiters = core.room_afuts
    core.room_afuts = fresh
    core.room_async = 0
    pthread_mutex_unlock(&core.room_mu)
    by_loop = {}
    for loop, fut in waiters:
        by_loop.setdefault(loop, []).append(fut)
    for loop, futs in by_loop.items():
        try:
            loop.call_soon_threadsafe(_room_wake, futs)
        except RuntimeError:
            pass   # the loop is closed: its tasks are gone with it


def _room_wake(list futs):
    for fut in futs:
        if not fut.done():   # a cancelled aproduce left its future behind
            fut.set_result(None)


def _room_timeout(fut):
    if not fut.done():
        fut.set_result(None)


async def _aproduce_wait(NativeProducer p, object topic, object value, object key,
                         object partition, object timestamp, object headers,
                         object on_delivery, unsigned long gen):
    """aproduce's wait for room, from the room_gen ``gen`` its failed attempt read."""
    cdef _Core core = p._usable()
    cdef int64_t start, deadline
    loop = _asyncio().get_running_loop()
    start = _now_ns()
    deadline = _FOREVER if core.max_block_ns == _FOREVER else start + core.max_block_ns
    try:
        while True:
            waiter = _room_waiter(core, gen, loop)
            if waiter is not None:
                timer = None
                if deadline != _FOREVER:
                    timer = loop.call_later(max(deadline - _now_ns(), 0) / 1e9,
                                            _room_timeout, waiter)
                try:
                    await waiter
                finally:
                    if timer is not None:
                        timer.cancel()
                core.check_closing("aproduce() waited for room in librdkafka's queue")
                core = p._usable()
            fut = _produce_one(core, topic, value, key, partition, timestamp, headers,
                               on_delivery, False, &gen)
            if fut is not None:
                return fut
            if _now_ns() >= deadline:
                core.exhausted += 1
                raise _queue_full_error(core)
    finally:
        core.blocked_ns += _now_ns() - start


async def _aflush(NativeProducer p, object timeout):
    """Wait on the running loop until every queued message has an outcome, or
    ``timeout`` s pass; return how many are still pending.  Woken by the room
    signal: every outcome comes with a delivery report whose destruction bumps it."""
    cdef _Core core = p._usable()
    cdef int64_t timeout_ns = _timeout_ns(timeout)
    cdef int64_t deadline = _deadline_after(timeout_ns)
    cdef unsigned long gen
    loop = _asyncio().get_running_loop()
    while True:
        gen = _room_gen(core)
        if core.pending <= 0:
            return 0
        if deadline != _FOREVER and _now_ns() >= deadline:
            return max(core.pending, 0)
        if core.stage_n:
            _stage_drain(core, False)   # the rest when room appears (the event thread)
        waiter = _room_waiter(core, gen, loop)
        if waiter is None:
            continue
        timer = None
        if deadline != _FOREVER:
            timer = loop.call_later(max(deadline - _now_ns(), 0) / 1e9,
                                    _room_timeout, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
        core.check_closing("aflush() waited; close() fails what it cannot deliver")


# aproduce_batch: produce_batch's hand-over (batch.pxi's _enqueue) run in steps on the
# loop.  A step hands over what librdkafka takes now and returns where _enqueue would
# wait for room; the task then awaits room as aproduce does.  Between steps nothing is
# entered (close() may go on meanwhile), and the sub-chunk handed over in part keeps
# its chunk (and the hold on it) until it is settled.  Cancelled, or stopped by
# max.block.ms or close(), the part not yet handed over is failed "not queued" in the
# BatchFuture and nothing of it is queued later; the part handed over already ends
# delivered or failed by its delivery reports.

# A step's longest run on the loop before it lets other tasks in (a batch with room
# would otherwise hold the loop for its whole hand-over).
DEF _AIO_STEP_NS = 2000000
# Positions handed over between two looks at the clock.
DEF _AIO_BURST = 4096


cdef class _ABatch:
    """One aproduce_batch between its waits for room."""

    def __dealloc__(self):
        # fail() settled any sub-chunk in progress (the coroutine's except), so only
        # the arrays are left.
        _sub_free(&self.sub)   # partner: _sub_alloc in _aproduce_batch

    cdef int step(self, int64_t until_ns) except -1:
        """Hand over what librdkafka takes now: 1 when the whole batch is handed over,
        0 when the queue is full (``gen`` set), 2 when ``until_ns`` passed (let the
        loop run, then call again)."""
        cdef _Core core = self.core
        cdef _Topic t = self.t
        cdef _Sub *sub = &self.sub
        cdef _Sub part
        cdef Py_ssize_t j, cnt, h
        cdef int64_t peak = -1
        cdef rd_kafka_t *rk
        cdef rd_kafka_topic_t *rkt
        while self.s < self.n:
            if not self.filled:
                # As _enqueue: converted before entering (user code may run here).
                sub.cnt = min(_SUB, self.n - self.s)
                self.vcol.fill(self.s, sub.cnt, sub.vp, sub.vl)
                if self.kcol is not None:
                    self.kcol.fill(self.s, sub.cnt, sub.kp, sub.kl)
                self.filled = True   # from here fail() frees the headers made below
                if self.headers is not None:
                    for h in range(sub.cnt):
                        hv = self.headers[self.s + h]
                        sub.hp[h] = _make_headers(hv, f"headers[{self.s + h}]") \
                            if hv is not None else NULL
                sub.pd = self.pcol.data + self.s if self.pcol is not None else NULL
                sub.td = self.tcol.data + self.s if self.tcol is not None else NULL
            cnt = sub.cnt
            core.enter()
            try:
                if sub.chunk == NULL:
                    # produce()'s staged messages go first, as in _enqueue.
                    if core.stage_n and _stage_drain_nowait(core, &self.gen):
                        return 0
                    _order_and_route(core, t, sub, self.kcol is not None)
                    sub.chunk = _chunk_new(self.bf, self.s, cnt)
                    self.j = 0
                rk = core.rk
                rkt = t.rkt
                while self.j < cnt:
                    part = sub[0]
                    part.cnt = min(cnt, self.j + _AIO_BURST)   # the run stops there
                    j = self.j
                    self.gen = _room_gen(core)
                    with nogil:
                        j = _enqueue_run(rk, rkt, &part, j, &peak)
                    self.j = j
                    if peak > core.size_max:
                        core.size_max = peak
                    if j < part.cnt:
                        return 0   # _QUEUE_FULL at position j
                    if j < cnt and _now_ns() >= until_ns:
                        return 2
            finally:
                core.leave()   # partner: core.enter() above; never held across an await
            _settle(core, t, self.bf, sub, cnt)
            sub.chunk = NULL
            self.filled = False
            self.s += cnt
            if self.s < self.n and _now_ns() >= until_ns:
                return 2
        return 1

    cdef fail(self, object why):
        """The batch stops (``why``): settle the sub-chunk handed over in part (the rest
        of it is failed) and fail every message not handed over."""
        cdef Py_ssize_t h
        if self.sub.chunk != NULL:
            _settle(self.core, self.t, self.bf, &self.sub, self.j, why)
            self.sub.chunk = NULL
            self.s += self.sub.cnt
        elif self.filled and self.sub.hp != NULL:
            for h in range(self.sub.cnt):
                if self.sub.hp[h] != NULL:
                    rd_kafka_headers_destroy(self.sub.hp[h])  # partner: _make_headers
                    self.sub.hp[h] = NULL
        self.filled = False
        _fail_range(self.core, self.bf, self.s, self.n, why)
        self.s = self.n


def _refresh_partition_count(_Core core, _Topic t):
    """grouping.pxi's partition-count lookup, on a worker thread: a metadata request
    waits up to _COUNT_TIMEOUT_MS for a broker, which must not be the loop's wait."""
    core.enter()
    try:
        _read_partition_count(core, t)
    finally:
        core.leave()   # partner: core.enter() above


async def aproduce_batch(NativeProducer producer, topic, values, keys=None, partitions=None,
                         timestamps=None, headers=None, on_delivery=None):
    """produce_batch() for asyncio (Producer.aproduce_batch): the BatchFuture once every
    message is handed to librdkafka, waiting for room on the running loop."""
    cdef _Core core = producer._usable()
    cdef _Topic t = _entered_topic(core, topic)
    cdef _ABatch run = _ABatch.__new__(_ABatch)
    cdef int64_t start, deadline = 0, now
    cdef int r
    cdef Py_ssize_t n
    # The checks of NativeProducer.produce_batch, in its order: a bad argument raises
    # before anything is queued.
    run.vcol = _column(values, "values")
    n = run.vcol.n
    if keys is not None:
        run.kcol = _column(keys, "keys")
        if run.kcol.n != n:
            raise ValueError(f"keys has {run.kcol.n} elements but values has {n}")
    if partitions is not None:
        run.pcol = _int_column(partitions, n, "partitions", True)
    if timestamps is not None:
        run.tcol = _int_column(timestamps, n, "timestamps", False)
    if headers is not None:
        run.headers = _headers_column(headers, n)
    if on_delivery is not None and not callable(on_delivery):
        raise TypeError(f"on_delivery must be callable, not {type(on_delivery).__name__}")
    loop = _asyncio().get_running_loop()
    _sub_alloc(&run.sub, min(n, _SUB), headers is not None)  # partner: _ABatch.__dealloc__
    run.core = core
    run.t = t
    run.n = n
    bf = _new_batch_future(t.name, on_delivery)
    bf._total = n
    bf._sealed = True   # its size is known: reports may complete it while it is enqueued
    run.bf = bf
    try:
        while True:
            if not run.filled and run.n - run.s >= _GROUP_MIN and \
                    (t.cnt_at_ns == 0 or _now_ns() - t.cnt_at_ns >= _COUNT_TTL_NS):
                await loop.run_in_executor(None, _refresh_partition_count, core, t)
            r = run.step(_now_ns() + _AIO_STEP_NS)
            if r == 1:
                break
            if r == 2:
                await _asyncio().sleep(0)
                continue
            now = _now_ns()
            if deadline == 0:
                deadline = _FOREVER if core.max_block_ns == _FOREVER \
                    else now + core.max_block_ns
            if now >= deadline:
                core.exhausted += 1
                raise _queue_full_error(core)
            waiter = _room_waiter(core, run.gen, loop)
            if waiter is None:
                continue   # room appeared since the attempt
            timer = None
            if deadline != _FOREVER:
                timer = loop.call_later((deadline - now) / 1e9, _room_timeout, waiter)
            start = _now_ns()
            try:
                await waiter
            finally:
                core.blocked_ns += _now_ns() - start
                if timer is not None:
                    timer.cancel()
            core.check_closing("aproduce_batch() waited for room in librdkafka's queue")
    except BaseException as exc:
        why = exc
        if isinstance(exc, _asyncio().CancelledError):
            why = _asyncio().CancelledError("aproduce_batch() was cancelled first")
        run.fail(why)
        _seal_batch(bf, exc)   # exc.batch: the part queued already stays observable
        raise
    _seal_batch(bf)
    return bf
