# text.pxi -- splitting a block of text into lines, for `cykafka import --format
# lines`.
#
# One pass with memchr + memcpy, without the GIL: it runs in the importer's reader
# thread while the producer's C loop wants the same cores.  The output is Arrow's
# binary layout in two bytearrays: Lines holds them as a sequence of bytes that
# produce_batch reads directly (columns.pxi), so a plain lines import never loads
# pyarrow and NumPy (a tenth of a second of start-up); Lines.to_arrow() and
# cykafka._arrow.lines_array wrap the same buffers without a copy.

cimport cython
from cpython cimport buffer as _pybuf
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.bytearray cimport (PyByteArray_AS_STRING, PyByteArray_FromStringAndSize,
                                PyByteArray_Resize)
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memchr, memcpy


cdef struct _Split:
    const char *src
    Py_ssize_t end          # split src[:end]
    Py_ssize_t pos          # where the next line starts
    char *dst               # line bodies, back to back
    Py_ssize_t written
    void *offsets           # int32_t or int64_t [cap]; [0] is 0, [i] ends line i
    Py_ssize_t n            # lines done
    Py_ssize_t cap
    bint large


# Below this many bytes the split takes microseconds: holding on to the GIL is
# cheaper than handing it over (getting it back can wait for another thread's
# switch interval).
cdef Py_ssize_t _SPLIT_NOGIL_BYTES = 1 << 18


cdef void _split_some(_Split *s) noexcept nogil:
    """Split lines until src[:end] is done or the offsets are full (n + 1 == cap).
    Locals, not s.*, in the loop: dst writes could alias *s as far as the compiler
    knows, which would reload every field after each memcpy."""
    cdef const char *src = s.src
    cdef const char *nl
    cdef char *dst = s.dst
    cdef int32_t *off32 = <int32_t *>s.offsets
    cdef int64_t *off64 = <int64_t *>s.offsets
    cdef Py_ssize_t pos = s.pos, end = s.end, written = s.written, n = s.n
    cdef Py_ssize_t last = s.cap - 1, ln
    cdef bint large = s.large
    while n < last:
        nl = <const char *>memchr(src + pos, b'\n', <size_t>(end - pos))
        if nl == NULL:
            pos = end       # bytes after the last newline are not a line
            break
        ln = nl - (src + pos)
        if ln > 0 and src[pos + ln - 1] == b'\r':   # CRLF: the \r is not part of the line
            ln -= 1
        memcpy(dst + written, src + pos, <size_t>ln)
        written += ln
        n += 1
        if large:
            off64[n] = written
        else:
            off32[n] = <int32_t>written
        pos = nl - src + 1
    s.pos = pos
    s.written = written
    s.n = n


def split_lines(buf, Py_ssize_t end=-1):
    """Split ``buf[:end]`` (any contiguous bytes-like object; ``end < 0``: all of it)
    into the lines that end in b"\\n", each without its b"\\n" and without a b"\\r"
    right before it; bytes after the last b"\\n" are ignored.

    Returns ``(data, offsets, n, large)``: the ``n`` line bodies back to back in the
    bytearray ``data``, and ``n + 1`` native-endian offsets into it in the bytearray
    ``offsets`` (line i is ``data[offsets[i]:offsets[i + 1]]``), int64 when ``large``
    (``end >= 2**31``), else int32: Arrow's binary/large_binary layout."""
    cdef Py_buffer view
    cdef _Split s
    cdef Py_ssize_t cap, width
    _pybuf.PyObject_GetBuffer(buf, &view, _pybuf.PyBUF_SIMPLE)
    try:
        if end < 0:
            end = view.len
        elif end > view.len:
            raise ValueError(f"end={end} is past the end of the buffer ({view.len} bytes)")
        s.large = end >= (<int64_t>1 << 31)
        width = 8 if s.large else 4
        # The bodies are at most end bytes; trimmed below.  The offsets: room for
        # 64-byte lines on average, grown when the lines are shorter.
        data = PyByteArray_FromStringAndSize(NULL, end)
        cap = end // 64 + 2
        offsets = PyByteArray_FromStringAndSize(NULL, cap * width)
        s.src = <const char *>view.buf
        s.end = end
        s.pos = 0
        s.dst = PyByteArray_AS_STRING(data)
        s.written = 0
        s.offsets = PyByteArray_AS_STRING(offsets)
        s.n = 0
        s.cap = cap
        if s.large:
            (<int64_t *>s.offsets)[0] = 0
        else:
            (<int32_t *>s.offsets)[0] = 0
        while True:
            if end >= _SPLIT_NOGIL_BYTES:
                with nogil:
                    _split_some(&s)
            else:
                _split_some(&s)
            if s.pos >= end:
                break
            s.cap *= 2      # offsets full: grow (the GIL is needed to resize)
            PyByteArray_Resize(offsets, s.cap * width)
            s.offsets = PyByteArray_AS_STRING(offsets)
        PyByteArray_Resize(data, s.written)
        PyByteArray_Resize(offsets, (s.n + 1) * width)
        return data, offsets, s.n, s.large
    finally:
        _pybuf.PyBuffer_Release(&view)


@cython.final
cdef class Lines:
    """Lines of text as a read-only sequence of ``bytes``, kept in Arrow's binary
    layout (:func:`split_lines`'s buffers) with no Python object per line.
    ``produce_batch`` reads it directly; :meth:`to_arrow` is the same lines as a
    pyarrow array, without a copy.  Slicing (step 1) shares the buffers."""

    cdef readonly object data      # bytearray: the line bodies, back to back
    cdef readonly object offsets   # bytearray: native-endian int32 (int64 when large)
    cdef readonly bint large
    cdef readonly Py_ssize_t start  # this sequence's line 0 is line ``start`` of offsets
    cdef Py_ssize_t n

    def __init__(self):
        raise TypeError("Lines are made by cykafka._codecs.lines()")

    def __len__(self):
        return self.n

    cdef int64_t _at(self, Py_ssize_t i):
        cdef const char *p = PyByteArray_AS_STRING(self.offsets)
        if self.large:
            return (<const int64_t *>p)[i]
        return (<const int32_t *>p)[i]

    def __getitem__(self, index):
        cdef Py_ssize_t i, lo, hi, step
        cdef int64_t a, b
        if isinstance(index, slice):
            lo, hi, step = index.indices(self.n)
            if step != 1:
                raise ValueError("Lines slices take step 1")
            return _lines_view(self, self.start + lo, max(hi - lo, 0))
        i = index
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(f"line {index} of {self.n}")
        a = self._at(self.start + i)
        b = self._at(self.start + i + 1)
        return PyBytes_FromStringAndSize(PyByteArray_AS_STRING(self.data) + a, b - a)

    def __iter__(self):
        for i in range(self.n):
            yield self[i]

    def to_pylist(self):
        """Every line as ``bytes``."""
        return [self[i] for i in range(self.n)]

    def to_arrow(self):
        """The lines as a pyarrow binary (large_binary when ``large``) array."""
        import pyarrow as pa
        typ = pa.large_binary() if self.large else pa.binary()
        return pa.Array.from_buffers(typ, self.n, [None, pa.py_buffer(self.offsets),
                                                   pa.py_buffer(self.data)], offset=self.start)

    def __repr__(self):
        return f"<cykafka Lines: {self.n} lines>"


cdef Lines _lines_view(Lines of, Py_ssize_t start, Py_ssize_t n):
    cdef Lines out = Lines.__new__(Lines)
    out.data = of.data
    out.offsets = of.offsets
    out.large = of.large
    out.start = start
    out.n = n
    return out


def lines(buf, Py_ssize_t end=-1):
    """:func:`split_lines` of ``buf[:end]`` as :class:`Lines`."""
    data, offsets, n, large = split_lines(buf, end)
    cdef Lines out = Lines.__new__(Lines)
    out.data = data
    out.offsets = offsets
    out.large = large
    out.start = 0
    out.n = n
    return out
