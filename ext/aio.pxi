# aio.pxi -- asyncio's way in: aproduce waits for room on its event loop instead
# of blocking it.  produce() waits for room with its thread (wait_room), and in an
# asyncio service that thread is the loop: every other task would stop with it.
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
