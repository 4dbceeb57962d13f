# delivery.pxd -- the futures, and the helpers for asyncio and for waiting on many;
# implemented in delivery.pxi.

cdef enum:
    _PENDING = 0
    _RESOLVED = 1   # delivered (a BatchFuture: complete)
    _FAILED = 2     # a DeliveryFuture whose message failed
    # bits of _FutureBase._held
    _HELD = 1       # a DeliveryFuture's _timestamp holds its value (_hold_value)
    _BLOCKING = 2   # asyncio's _asyncio_future_blocking


cdef class _FutureBase:
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
cdef class _Mirror:
    cdef object cf


@cython.final
cdef class _OnLoop:
    cdef object loop, fn, ctx


@cython.final
cdef class _InContext:
    cdef object fn, ctx


@cython.final
cdef class _Countdown:
    cdef object loop, afut
    cdef Py_ssize_t left


@cython.final
cdef class _AllDelivered:
    cdef list futs
    cdef bint return_exceptions


@cython.final
cdef class _Extra:   # what few futures need, kept out of the many
    cdef object topic
    cdef object on_delivery     # dropped once called
    cdef object callbacks       # None, or a list: callables, (loop, afut), _OnLoop, _Countdown
    cdef object exc             # the failure template (never handed out), or None


@cython.final
cdef class DeliveryFuture(_FutureBase):
    cdef object _ctx            # the topic (a str), or an _Extra once the future needs one
    cdef int64_t _offset
    cdef int64_t _timestamp
