# text.pxi -- splitting a block of text into lines, for `cykafka import --format
# lines` (cykafka._arrow.lines_array turns the result into an Arrow binary array).
#
# One pass with memchr + memcpy, without the GIL: it runs in the importer's reader
# thread while the producer's C loop wants the same cores.  The output buffers are
# bytearrays that pa.py_buffer wraps without a copy; the extension itself knows
# nothing of Arrow.

from cpython cimport buffer as _pybuf
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
