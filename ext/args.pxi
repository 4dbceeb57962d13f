# args.pxi -- turning produce() arguments into what librdkafka takes: keys,
# values and header values as (pointer, length), partitions, timestamps and
# header lists.  Errors name the argument (and the index, in batches).

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_Check
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release
from python cimport PyUnicode_AsUTF8AndSize, PyBUF_SIMPLE


cdef const char *_utf8(object s, Py_ssize_t *size, str what) except NULL:
    """The UTF-8 of str ``s`` (cached by CPython in the object).  A str that has
    none (a lone surrogate) is a ValueError naming the argument, not a bare
    UnicodeEncodeError about "position 0"."""
    try:
        return PyUnicode_AsUTF8AndSize(s, size)
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} is a str that cannot be encoded as UTF-8: {exc}") from None


cdef int _mem_get(object o, _Mem *m, str what) except -1:
    """Point ``m`` at the bytes of a key or value (None -> NULL)."""
    m.has_view = False
    if o is None:
        m.ptr = NULL
        m.len = 0
    elif PyBytes_CheckExact(o):
        m.ptr = PyBytes_AS_STRING(o)
        m.len = PyBytes_GET_SIZE(o)
    elif PyUnicode_Check(o):
        m.ptr = _utf8(o, &m.len, what)
    elif isinstance(o, (bytes, bytearray, memoryview)):
        try:
            PyObject_GetBuffer(o, &m.view, PyBUF_SIMPLE)  # partner: _mem_release
        except BufferError as exc:
            # e.g. a strided memoryview.  Not a BufferError to the caller: that is
            # QueueFullError's base, which callers catch to retry.
            raise TypeError(f"{what}: {exc}; pass bytes(...) of it") from None
        m.has_view = True
        m.ptr = <const char *>m.view.buf
        m.len = m.view.len
    else:
        raise TypeError(f"{what} must be bytes, bytearray, memoryview, str or None, "
                        f"not {type(o).__name__}")
    return 0


cdef inline void _mem_release(_Mem *m):
    if m.has_view:
        PyBuffer_Release(&m.view)  # partner: PyObject_GetBuffer in _mem_get
        m.has_view = False


cdef object _integer_arg(object o, str what, str expected):
    """``o`` as a Python int: ints and integer-likes (NumPy integers, via
    ``__index__``); bool and float are refused, a float being a likely unit or
    rounding mistake rather than an integer."""
    if type(o) is int:
        return o
    if isinstance(o, (bool, float)) or not hasattr(type(o), "__index__"):
        raise TypeError(f"{what} must be {expected}, not {type(o).__name__} ({o!r:.40})")
    return _operator.index(o)


cdef int32_t _partition_arg(object partition, str what="partition") except? -2:
    if partition is None:
        return RD_KAFKA_PARTITION_UA
    partition = _integer_arg(partition, what, "an int or None")
    if partition < 0 or partition > 0x7fffffff:
        raise ValueError(f"{what} must be between 0 and 2147483647, not {partition}")
    return <int32_t>partition


_EPOCH = _datetime.datetime(1970, 1, 1, tzinfo=_datetime.timezone.utc)
_ONE_MS = _datetime.timedelta(milliseconds=1)


cdef int64_t _timestamp_arg(object timestamp, str what="timestamp") except? -2:
    """Milliseconds since the epoch (UTC) from an int or an aware datetime.

    librdkafka stamps a message whose timestamp is 0 with the current time
    (rd_kafka_msg_new0: ``timestamp ? timestamp : now``), so None maps to 0 and a
    literal 0 (or anything that truncates to it) is refused rather than silently
    replaced.  A datetime is truncated to whole milliseconds, as Java's
    Instant.toEpochMilli does; a naive one is refused: its zone is a guess."""
    if timestamp is None:
        return 0
    if isinstance(timestamp, _datetime.datetime):
        if timestamp.utcoffset() is None:
            raise ValueError(f"{what} is a naive datetime ({timestamp}); give it a tzinfo "
                             f"(e.g. datetime.timezone.utc) so the instant is unambiguous")
        ms = (timestamp - _EPOCH) // _ONE_MS
    else:
        if isinstance(timestamp, float):
            raise TypeError(f"{what} must be an int of milliseconds since the epoch or an "
                            f"aware datetime, not {type(timestamp).__name__} ({timestamp!r}); "
                            f"for time.time() seconds pass int(t * 1000)")
        ms = _integer_arg(timestamp, what, "an int of milliseconds since the epoch, "
                          "an aware datetime, or None")
    if ms == 0:
        raise ValueError(f"{what} is 0 (1970-01-01T00:00:00Z), which librdkafka would replace "
                         f"with the current time; pass None for the current time")
    if ms < 0 or ms > 0x7fffffffffffffff:
        raise ValueError(f"{what} must be > 0 (milliseconds since the epoch), not {ms}")
    return <int64_t>ms


cdef rd_kafka_headers_t *_make_headers(object headers, str what="headers") except? NULL:
    """A new rd_kafka_headers_t from a list of (name, value) pairs or a dict.
    The caller owns it until librdkafka accepts the message."""
    cdef rd_kafka_headers_t *hdrs
    cdef _Mem v
    cdef const char *name
    cdef Py_ssize_t name_len
    if isinstance(headers, dict):
        items = list((<dict>headers).items())
    elif isinstance(headers, (list, tuple)):
        items = headers
    else:
        raise TypeError(f"{what} must be a list of (str, bytes) pairs or a dict, "
                        f"not {type(headers).__name__}")
    if not items:
        return NULL
    hdrs = rd_kafka_headers_new(len(items))
    try:
        for i, item in enumerate(items):
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError(f"{what}[{i}] must be a (name, value) pair, not {item!r:.60}")
            hname, hvalue = item
            if not isinstance(hname, str):
                raise TypeError(f"{what}[{i}] name must be str, not {type(hname).__name__}")
            if "\x00" in hname:
                # librdkafka hands header names to readers as C strings (no length):
                # the name would arrive cut at the NUL.
                raise ValueError(f"{what}[{i}] name {hname!r:.60} contains a NUL character")
            name = _utf8(hname, &name_len, f"{what}[{i}] name")
            _mem_get(hvalue, &v, f"{what}[{i}] value ({hname!r})")
            rd_kafka_header_add(hdrs, name, name_len, v.ptr, v.len if v.ptr != NULL else -1)
            _mem_release(&v)  # rd_kafka_header_add copied the value
    except BaseException:
        rd_kafka_headers_destroy(hdrs)  # partner: rd_kafka_headers_new above
        raise
    return hdrs
