# columns.pxi -- keys and values of a batch, as C (pointer, length) arrays.
#
# Sources: a list/tuple of bytes|str|None, a pyarrow Array/ChunkedArray of
# binary, large_binary, string, large_string or fixed_size_binary (read
# straight from the Arrow buffers, no per-row Python objects), cykafka._codecs'
# Lines (the same layout, without pyarrow), or a NumPy array of fixed-width
# bytes (dtype "S<n>", each item its whole width: an item ending in NUL is
# refused, see _check_numpy_s) or of Python objects.

from cpython.bytearray cimport PyByteArray_AS_STRING


cdef class _Column:

    def __cinit__(self):
        self.chunks = NULL
        self.np_data = NULL

    def __dealloc__(self):
        free(self.chunks)

    cdef int fill(self, Py_ssize_t start, Py_ssize_t count, const char **ptrs,
                  size_t *lens) except -1:
        """Point ptrs/lens[0:count] at elements start..start+count (NULL = null)."""
        cdef Py_ssize_t i, j, c = 0
        cdef Py_ssize_t ln
        cdef object o
        cdef _ArrowChunk *ch
        cdef Py_ssize_t k
        cdef int64_t a, b
        if self.kind == _K_SEQ:
            for j in range(count):
                o = self.items[start + j]
                if o is None:
                    ptrs[j] = NULL
                    lens[j] = 0
                elif PyBytes_CheckExact(o):
                    ptrs[j] = PyBytes_AS_STRING(o)
                    lens[j] = PyBytes_GET_SIZE(o)
                else:   # str, validated (and its UTF-8 cached) by _column()
                    ptrs[j] = PyUnicode_AsUTF8AndSize(o, &ln)
                    lens[j] = ln
        elif self.kind == _K_NUMPY_S:
            for j in range(count):   # no item ends in NUL (_check_numpy_s)
                ptrs[j] = self.np_data + (start + j) * self.np_width
                lens[j] = self.np_width
        else:
            while c < self.nchunks and start >= self.chunks[c].start + self.chunks[c].length:
                c += 1
            for j in range(count):
                i = start + j
                while i >= self.chunks[c].start + self.chunks[c].length:
                    c += 1
                ch = &self.chunks[c]
                k = i - ch.start + ch.offset
                if ch.validity != NULL and not (ch.validity[k >> 3] >> (k & 7)) & 1:
                    ptrs[j] = NULL
                    lens[j] = 0
                    continue
                if ch.layout == _A_OFF32:
                    a = (<const int32_t *>ch.offsets)[k]
                    b = (<const int32_t *>ch.offsets)[k + 1]
                elif ch.layout == _A_OFF64:
                    a = (<const int64_t *>ch.offsets)[k]
                    b = (<const int64_t *>ch.offsets)[k + 1]
                else:
                    a = k * ch.width
                    b = a + ch.width
                # An empty non-null value must not be NULL (NULL means null).
                ptrs[j] = (ch.data + a) if ch.data != NULL else <const char *>b""
                lens[j] = <size_t>(b - a)
        return 0


cdef bint _is_arrow(object o):
    return type(o).__module__.startswith("pyarrow")


cdef bint _is_numpy(object o):
    return type(o).__module__ == "numpy" and hasattr(o, "dtype")


cdef int _check_column_shape(object values, str what) except -1:
    """A column is one ordered sequence: batch order is the order messages are
    written in, so a set or a mapping (no order, or not the one meant) and a whole
    Arrow table (many columns) are refused, naming the argument."""
    if isinstance(values, (_abc.Set, _abc.Mapping, _abc.MappingView)):
        raise TypeError(f"{what} must be an ordered sequence (list, tuple, pyarrow or NumPy "
                        f"array), not {type(values).__name__}: batch order is the order "
                        f"messages are written in" +
                        ("; pass list(d.values()) or list(d.items()) as meant"
                         if isinstance(values, _abc.Mapping) else ""))
    if _is_arrow(values) and type(values).__name__ in ("Table", "RecordBatch"):
        names = getattr(values, "column_names", None) or ["value"]
        raise TypeError(f"{what} is a pyarrow {type(values).__name__}; pass one of its columns, "
                        f"e.g. table.column({names[0]!r})")
    return 0


cdef int _check_numpy_s(_Column col, str what, Py_ssize_t base) except -1:
    """Refuse a NumPy "S" column with an item whose last byte is NUL.  NumPy pads
    shorter items with NUL bytes and drops trailing NULs when it reads an item
    (np.array([b"a\\x00"])[0] == b"a"), so such an item's value cannot be told:
    sending it either way could change it silently."""
    cdef Py_ssize_t i, w = col.np_width
    cdef const char *last = col.np_data + w - 1
    if w == 0:
        return 0
    for i in range(col.n):
        if last[i * w] == 0:
            item = bytes((<const char *>(col.np_data + i * w))[:w])
            raise ValueError(
                f"{what}[{base + i}]: NumPy 'S{w}' item {item!r} ends in a NUL byte, "
                f"and NumPy pads 'S' items with NUL bytes (it reads this one as "
                f"{item.rstrip(bytes(1))!r}), so its value cannot be told; pass "
                f"{what}.astype(object) (NumPy's reading, padding dropped), a list of "
                f"bytes, or pa.array(..., pa.binary()) (each value with its length)")
    return 0


cdef _Column _column(object values, str what, Py_ssize_t base=0):
    """Validate a key/value column; TypeError names the culprit's index (``base`` +
    its position: produce_many's chunks are named by record number)."""
    cdef _Column col = _Column.__new__(_Column)
    cdef Py_ssize_t ln
    if values is None or isinstance(values, (bytes, str, bytearray, memoryview)):
        raise TypeError(f"{what} must be a sequence of messages (list, tuple, pyarrow or "
                        f"NumPy array), not a single {type(values).__name__}")
    _check_column_shape(values, what)
    if _is_lines(values):
        _lines_column(col, values)
        return col
    if _is_arrow(values):
        _arrow_column(col, values, what)
        return col
    if _is_numpy(values):
        if values.ndim != 1:
            raise TypeError(f"{what} must be a 1-dimensional array, not {values.ndim}-d")
        if values.dtype.kind == "S":
            arr = values if values.flags.c_contiguous else values.copy()
            col.kind = _K_NUMPY_S
            col.keep = arr
            col.n = len(arr)
            col.np_width = arr.dtype.itemsize
            col.np_data = <const char *><size_t>arr.ctypes.data
            _check_numpy_s(col, what, base)
            return col
        if values.dtype.kind != "O":
            raise TypeError(f"{what}: a NumPy array of dtype {values.dtype} is not supported; "
                            f"use fixed-width bytes (dtype 'S') or object arrays of bytes/str")
        values = values.tolist()
    cdef tuple items
    cdef Py_ssize_t i
    cdef object o
    try:
        items = values if type(values) is tuple else tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of bytes, str or None, "
                        f"not {type(values).__name__}") from None
    copied = None
    # A C index over the tuple: this pass runs before the GIL-free loop starts, so
    # its per-element cost is paid in full (measured: a Python enumerate here held a
    # 1 M-message list batch to 0.90x the C floor; 0.97x with this loop).
    for i in range(len(items)):
        o = items[i]
        if o is None or PyBytes_CheckExact(o):
            continue
        if PyUnicode_Check(o):
            try:
                PyUnicode_AsUTF8AndSize(o, &ln)   # caches the UTF-8 for fill()
            except UnicodeEncodeError as exc:
                raise ValueError(f"{what}[{base + i}] is a str that cannot be encoded as "
                                 f"UTF-8: {exc}") from None
        elif isinstance(o, (bytes, bytearray, memoryview)):
            # Mutable or view buffers could change under the GIL-free loop: copy.
            if copied is None:
                copied = list(items)
            copied[i] = bytes(o)
        else:
            raise TypeError(f"{what}[{base + i}] must be bytes, bytearray, memoryview, str or "
                            f"None, not {type(o).__name__}")
    col.kind = _K_SEQ
    col.items = tuple(copied) if copied is not None else items
    col.n = len(col.items)
    return col


cdef _arrow_column(_Column col, object values, str what):
    import pyarrow as pa
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    t = values.type
    if pa.types.is_dictionary(t):
        raise TypeError(f"{what}: a dictionary-encoded Arrow array is not supported; "
                        f"decode it first (array.dictionary_decode())")
    if pa.types.is_binary(t) or pa.types.is_string(t):
        layout = _A_OFF32
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        layout = _A_OFF64
    elif pa.types.is_fixed_size_binary(t):
        layout = _A_FIXED
    else:
        raise TypeError(f"{what}: Arrow type {t} is not supported; use binary, large_binary, "
                        f"string, large_string or fixed_size_binary")
    col.kind = _K_ARROW
    col.keep = list(chunks)
    col.nchunks = len(chunks)
    col.chunks = <_ArrowChunk *>calloc(max(col.nchunks, 1), sizeof(_ArrowChunk))
    if col.chunks == NULL:
        raise MemoryError()
    cdef _ArrowChunk *ch
    cdef Py_ssize_t start = 0
    for c, arr in enumerate(chunks):
        bufs = arr.buffers()
        ch = &col.chunks[c]
        ch.start = start
        ch.length = len(arr)
        ch.offset = arr.offset
        ch.layout = layout
        ch.validity = <const uint8_t *><size_t>bufs[0].address \
            if (bufs[0] is not None and arr.null_count) else NULL
        if layout == _A_FIXED:
            ch.width = t.byte_width
            ch.offsets = NULL
            ch.data = <const char *><size_t>bufs[1].address if bufs[1] is not None else NULL
        else:
            ch.offsets = <const void *><size_t>bufs[1].address if bufs[1] is not None else NULL
            ch.data = <const char *><size_t>bufs[2].address if bufs[2] is not None else NULL
            if ch.offsets == NULL and ch.length:
                raise TypeError(f"{what}: Arrow chunk {c} has no offsets buffer")
        start += ch.length
    col.n = start


cdef bint _is_lines(object o):
    t = type(o)
    return t.__name__ == "Lines" and t.__module__ == "cykafka._codecs"


cdef _lines_column(_Column col, object lines):
    """cykafka._codecs.Lines: one Arrow-layout chunk in two bytearrays that Lines
    never resizes (it keeps them private), read in place."""
    col.kind = _K_ARROW
    col.keep = lines
    col.n = len(lines)
    col.nchunks = 1
    col.chunks = <_ArrowChunk *>calloc(1, sizeof(_ArrowChunk))
    if col.chunks == NULL:
        raise MemoryError()
    cdef _ArrowChunk *ch = &col.chunks[0]
    ch.start = 0
    ch.length = col.n
    ch.offset = lines.start
    ch.layout = _A_OFF64 if lines.large else _A_OFF32
    ch.validity = NULL
    ch.offsets = <const void *>PyByteArray_AS_STRING(lines.offsets)
    ch.data = <const char *>PyByteArray_AS_STRING(lines.data)


cdef class _IntColumn:
    """partitions or timestamps of a batch as a C array (None -> ``none_value``)."""

    def __cinit__(self):
        self.data = NULL

    def __dealloc__(self):
        free(self.data)


cdef object _arrow_ints(object values, bint is_partition, str what):
    """An Arrow partition/timestamp column as a list of int/None.  A timestamp
    column with a zone (any unit) becomes whole milliseconds, truncated as Java's
    Instant.toEpochMilli does; a naive one is refused, like a naive datetime."""
    import pyarrow as pa
    if not is_partition and pa.types.is_timestamp(values.type):
        if values.type.tz is None:
            raise ValueError(
                f"{what}: a naive Arrow timestamp column ({values.type}, no time zone) names "
                f"no instant; give it its zone, e.g. .cast(pa.timestamp("
                f"{values.type.unit!r}, tz='UTC')) if it holds UTC")
        values = values.cast(pa.timestamp("ms", values.type.tz), safe=False).cast(pa.int64())
    return values.to_pylist()


cdef _IntColumn _int_column(object values, Py_ssize_t n, str what, bint is_partition,
                            Py_ssize_t base=0):
    cdef _IntColumn col = _IntColumn.__new__(_IntColumn)
    _check_column_shape(values, what)
    if _is_lines(values):
        _lines_column(col, values)
        return col
    if _is_arrow(values):
        values = _arrow_ints(values, is_partition, what)
    elif _is_numpy(values):
        if values.dtype.kind == "M" and not is_partition:
            # One rule for every timestamp form: it must name its instant.
            raise ValueError(
                f"{what}: NumPy datetime64 has no time zone, so it names no instant; if it "
                f"holds UTC pass arr.astype('datetime64[ms]').astype('int64') (milliseconds "
                f"since the epoch), or a zoned Arrow/pandas column")
        elif values.dtype.kind not in "iuO":
            raise TypeError(f"{what}: a NumPy array of dtype {values.dtype} is not supported; "
                            f"use integers" + ("" if is_partition else " or datetime64"))
        else:
            values = values.tolist()
    elif isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{what} must be a sequence of int or None, not {type(values).__name__}")
    if len(values) != n:
        raise ValueError(f"{what} has {len(values)} elements but values has {n}")
    col.n = n
    col.data = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
    if col.data == NULL:
        raise MemoryError()
    for i, v in enumerate(values):
        if is_partition:
            col.data[i] = _partition_arg(v, f"{what}[{base + i}]")
        else:
            col.data[i] = _timestamp_arg(v, f"{what}[{base + i}]")
    return col
