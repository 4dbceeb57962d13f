# csvjson.pxi -- the common CSV block straight to JSON messages, for `cykafka import`
# (cykafka.inputs.readers.csv): one C pass over the bytes, without the GIL, instead
# of pyarrow's parser plus a dozen compute kernels per column.
#
# Only plain blocks take it: every record has exactly ncols fields, no quote byte,
# no blank record, no lone b"\r", valid UTF-8.  Anything else returns None and the
# reader parses the block with pyarrow (which then reports the bad rows), so both
# paths give the same bytes for the blocks this one accepts.
#
# Also the quote-aware record boundary scan of readers/blocks.py (whose rule for where
# a record ends it follows), which NumPy did with a cumulative sum (8 bytes of
# temporary per input byte).

from cpython cimport buffer as _pybuf
from cpython.bytearray cimport (PyByteArray_AS_STRING, PyByteArray_FromStringAndSize,
                                PyByteArray_Resize)
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memchr, memcpy


cdef struct _CsvOut:
    Py_ssize_t pos    # the next record to write
    char *val
    Py_ssize_t vlen
    Py_ssize_t vcap   # bytes of val
    Py_ssize_t per    # bytes a record adds besides its escaped fields
    char *vo          # value offsets (int32 or int64)
    char *key
    Py_ssize_t klen
    char *ko          # key offsets
    Py_ssize_t n      # records written


cdef inline bint _is_digit(unsigned char c) noexcept nogil:
    return c >= 48 and c <= 57


cdef bint _plain_json(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """Whether p[:n] is sent as a bare JSON value when types are inferred: the
    _PLAIN_JSON pattern of inputs/encode.py, ``-?(0|[1-9][0-9]{0,14})(\\.[0-9]+)?
    ([eE][+-]?[0-9]{1,3})?`` or ``true`` / ``false``."""
    cdef Py_ssize_t i = 0, k
    if n == 4 and p[0] == b't' and p[1] == b'r' and p[2] == b'u' and p[3] == b'e':
        return True
    if n == 5 and p[0] == b'f' and p[1] == b'a' and p[2] == b'l' and p[3] == b's' and \
            p[4] == b'e':
        return True
    if i < n and p[i] == b'-':
        i += 1
    if i >= n or not _is_digit(p[i]):
        return False
    if p[i] == b'0':
        i += 1
    else:
        k = i
        while i < n and _is_digit(p[i]):
            i += 1
        if i - k > 15:
            return False
    if i < n and p[i] == b'.':
        i += 1
        k = i
        while i < n and _is_digit(p[i]):
            i += 1
        if i == k:
            return False
    if i < n and (p[i] == b'e' or p[i] == b'E'):
        i += 1
        if i < n and (p[i] == b'+' or p[i] == b'-'):
            i += 1
        k = i
        while i < n and _is_digit(p[i]):
            i += 1
        if i == k or i - k > 3:
            return False
    return i == n


cdef Py_ssize_t _utf8_char(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """Length of the valid UTF-8 sequence at p (p[0] >= 0x80), 0 if invalid (strict:
    no overlong forms, no surrogates, nothing above U+10FFFF)."""
    cdef unsigned char c = p[0]
    if c >= 0xC2 and c <= 0xDF:
        return 2 if n >= 2 and (p[1] & 0xC0) == 0x80 else 0
    if c >= 0xE0 and c <= 0xEF:
        if n < 3 or (p[1] & 0xC0) != 0x80 or (p[2] & 0xC0) != 0x80:
            return 0
        if (c == 0xE0 and p[1] < 0xA0) or (c == 0xED and p[1] > 0x9F):
            return 0
        return 3
    if c >= 0xF0 and c <= 0xF4:
        if n < 4 or (p[1] & 0xC0) != 0x80 or (p[2] & 0xC0) != 0x80 or \
                (p[3] & 0xC0) != 0x80:
            return 0
        if (c == 0xF0 and p[1] < 0x90) or (c == 0xF4 and p[1] > 0x8F):
            return 0
        return 4
    return 0


cdef const char *_HEX = b"0123456789abcdef"


cdef Py_ssize_t _json_text(char *out, const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """Write p[:n] (UTF-8) escaped as json.dumps(..., ensure_ascii=False) does, without
    the quotes; -1 when it is not valid UTF-8.  Returns the bytes written."""
    cdef Py_ssize_t i = 0, w = 0, m, j
    cdef unsigned char c
    while i < n:
        j = i
        while j < n and 0x20 <= p[j] < 0x80 and p[j] != b'"' and p[j] != b'\\':
            j += 1
        if j > i:   # the usual case: a run that needs no escape, copied at once
            memcpy(out + w, p + i, <size_t>(j - i))
            w += j - i
            i = j
            continue
        c = p[i]
        if c >= 0x80:
            m = _utf8_char(p + i, n - i)
            if m == 0:
                return -1
            memcpy(out + w, p + i, <size_t>m)
            w += m
            i += m
            continue
        if c >= 0x20 and c != b'"' and c != b'\\':
            out[w] = <char>c
            w += 1
        else:
            out[w] = b'\\'
            if c == b'"' or c == b'\\':
                out[w + 1] = <char>c
            elif c == b'\n':
                out[w + 1] = b'n'
            elif c == b'\r':
                out[w + 1] = b'r'
            elif c == b'\t':
                out[w + 1] = b't'
            elif c == 8:
                out[w + 1] = b'b'
            elif c == 12:
                out[w + 1] = b'f'
            else:
                out[w + 1] = b'u'
                out[w + 2] = b'0'
                out[w + 3] = b'0'
                out[w + 4] = _HEX[c >> 4]
                out[w + 5] = _HEX[c & 15]
                w += 4
            w += 2
        i += 1
    return w


cdef Py_ssize_t _count_newlines(const char *p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t count = 0
    cdef const char *end = p + n
    cdef const char *nl
    while p < end:
        nl = <const char *>memchr(p, b'\n', <size_t>(end - p))
        if nl == NULL:
            break
        count += 1
        p = nl + 1
    return count


cdef inline void _put_off(char *offs, bint large, Py_ssize_t i, Py_ssize_t v) noexcept nogil:
    if large:
        (<int64_t *>offs)[i] = v
    else:
        (<int32_t *>offs)[i] = <int32_t>v


# What _csv_json_run stopped at.
cdef enum:
    _CSV_DONE = 0
    _CSV_NOT_PLAIN = 1
    _CSV_FULL = 2      # o.val has no room for the record at o.pos (for the worst case)


cdef int _csv_json_run(const unsigned char *src, Py_ssize_t end,
                       Py_ssize_t ncols, unsigned char delim, const char **pre,
                       const Py_ssize_t *prelen, Py_ssize_t key_col, bint infer,
                       bint large, _CsvOut *o) noexcept nogil:
    """The loop of csv_json, from record ``o.pos`` on (see the top for NOT_PLAIN)."""
    cdef const unsigned char *nl
    cdef const unsigned char *f
    cdef const unsigned char *d
    cdef Py_ssize_t rec_end, col, flen, w, pos = o.pos
    while pos < end:
        nl = <const unsigned char *>memchr(src + pos, b'\n', <size_t>(end - pos))
        if nl == NULL:
            return _CSV_NOT_PLAIN
        rec_end = nl - src
        if o.vlen + 6 * (rec_end - pos) + o.per > o.vcap:
            o.pos = pos
            return _CSV_FULL
        if rec_end > pos and src[rec_end - 1] == b'\r':
            rec_end -= 1
        if rec_end == pos:
            return _CSV_NOT_PLAIN    # blank: pyarrow skips it, the reader counts it differently
        f = src + pos
        for col in range(ncols):
            if col + 1 < ncols:
                d = <const unsigned char *>memchr(f, delim, <size_t>(src + rec_end - f))
                if d == NULL:
                    return _CSV_NOT_PLAIN    # too few fields
            else:
                d = src + rec_end
                if memchr(f, delim, <size_t>(d - f)) != NULL:
                    return _CSV_NOT_PLAIN    # too many fields
            flen = d - f
            if memchr(f, b'\r', <size_t>flen) != NULL:
                return _CSV_NOT_PLAIN    # a lone \r ends a record for pyarrow
            memcpy(o.val + o.vlen, pre[col], <size_t>prelen[col])
            o.vlen += prelen[col]
            if infer and _plain_json(f, flen):
                memcpy(o.val + o.vlen, f, <size_t>flen)
                o.vlen += flen
            else:
                o.val[o.vlen] = b'"'
                w = _json_text(o.val + o.vlen + 1, f, flen)
                if w < 0:
                    return _CSV_NOT_PLAIN
                o.val[o.vlen + 1 + w] = b'"'
                o.vlen += w + 2
            if col == key_col:
                memcpy(o.key + o.klen, f, <size_t>flen)
                o.klen += flen
            f = d + 1
        memcpy(o.val + o.vlen, pre[ncols], <size_t>prelen[ncols])
        o.vlen += prelen[ncols]
        o.n += 1
        _put_off(o.vo, large, o.n, o.vlen)
        if key_col >= 0:
            _put_off(o.ko, large, o.n, o.klen)
        pos = nl - src + 1
    o.pos = pos
    return _CSV_DONE


def csv_json(buf, Py_ssize_t start, Py_ssize_t end, list literals, int delimiter,
             Py_ssize_t key_col=-1, bint infer=True):
    """Each CSV record of ``buf[start:end]`` (whole records, each ending in b"\\n") as
    a JSON object, or None when the block is not plain (a quote byte is the caller's
    to rule out).  ``literals``: ncols + 1 bytes: what precedes each field (``{"id":``,
    ``,"user":`` ...) and what ends the object (``}``).  ``infer``: a field spelled
    as a JSON number or true/false goes bare, every other one as a JSON string.
    ``key_col`` >= 0: that field's text is returned as the keys too.

    Returns ``(values, value_offsets, keys, key_offsets, n, large)``: Arrow
    binary/large_binary buffers (bytearrays; the keys None without ``key_col``)."""
    cdef Py_buffer view
    cdef _CsvOut o
    cdef Py_ssize_t ncols = len(literals) - 1, i, nrec, per, width
    cdef int status
    cdef bint large
    cdef const char **pre = NULL
    cdef Py_ssize_t *prelen = NULL
    if ncols < 1 or not 0 <= delimiter < 256:
        raise ValueError("csv_json needs one literal per column plus the closing one")
    _pybuf.PyObject_GetBuffer(buf, &view, _pybuf.PyBUF_SIMPLE)
    try:
        if start < 0 or end > view.len or start > end:
            raise ValueError(f"bad range {start}:{end} of a {view.len}-byte buffer")
        pre = <const char **>malloc((ncols + 1) * sizeof(char *))
        prelen = <Py_ssize_t *>malloc((ncols + 1) * sizeof(Py_ssize_t))
        if pre == NULL or prelen == NULL:
            raise MemoryError()
        per = 0
        for i in range(ncols + 1):
            lit = literals[i]
            if not isinstance(lit, bytes):
                raise TypeError("literals must be bytes")
            pre[i] = <const char *>(<bytes>lit)
            prelen[i] = len(<bytes>lit)
            per += prelen[i] + 2
        nrec = _count_newlines(<const char *>view.buf + start, end - start)
        # Worst case every byte becomes \u00XX; room for that is made only when a
        # record needs it.  The usual size stays under glibc's mmap threshold, so
        # blocks reuse freed heap instead of faulting in fresh pages each time.
        large = 6 * (end - start) + nrec * per >= (<int64_t>1 << 31)
        width = 8 if large else 4
        o.vcap = (end - start) + (end - start) // 2 + nrec * per + 6 * 1024
        values = PyByteArray_FromStringAndSize(NULL, o.vcap)
        voffs = PyByteArray_FromStringAndSize(NULL, (nrec + 1) * width)
        keys = koffs = None
        o.val = PyByteArray_AS_STRING(values)
        o.vo = PyByteArray_AS_STRING(voffs)
        o.vlen = o.klen = o.n = 0
        o.pos = start
        o.per = per
        o.key = o.ko = NULL
        _put_off(o.vo, large, 0, 0)
        if key_col >= 0:
            keys = PyByteArray_FromStringAndSize(NULL, max(end - start, 1))
            koffs = PyByteArray_FromStringAndSize(NULL, (nrec + 1) * width)
            o.key = PyByteArray_AS_STRING(keys)
            o.ko = PyByteArray_AS_STRING(koffs)
            _put_off(o.ko, large, 0, 0)
        while True:
            with nogil:
                status = _csv_json_run(<const unsigned char *>view.buf, end, ncols,
                                       <unsigned char>delimiter, pre, prelen, key_col,
                                       infer, large, &o)
            if status != _CSV_FULL:
                break
            o.vcap *= 2   # again on the next FULL: a long record may need more
            PyByteArray_Resize(values, o.vcap)
            o.val = PyByteArray_AS_STRING(values)
        if status != _CSV_DONE or o.n != nrec:
            return None
        PyByteArray_Resize(values, o.vlen)
        if keys is not None:
            PyByteArray_Resize(keys, o.klen)
        return values, voffs, keys, koffs, o.n, large
    finally:
        free(pre)
        free(prelen)
        _pybuf.PyBuffer_Release(&view)


def quoted_last_boundary(buf, int quote, bint lone_cr=False, bint final=False):
    """1 + the index of the last record end of ``buf`` outside quotes (an odd number of
    ``quote`` bytes since the start means inside; a doubled quote cancels), 0 if none.
    ``buf[0]`` starts a record.  A record ends at b"\\n", and with ``lone_cr`` at a
    b"\\r" not followed by b"\\n" (the rule of readers/blocks.py); a b"\\r" last in
    ``buf`` is one only when ``final`` (no bytes follow)."""
    cdef Py_buffer view
    cdef Py_ssize_t i, n, last = 0
    cdef const unsigned char *p
    cdef unsigned char c, q = <unsigned char>quote
    cdef bint inside = False
    _pybuf.PyObject_GetBuffer(buf, &view, _pybuf.PyBUF_SIMPLE)
    try:
        p = <const unsigned char *>view.buf
        n = view.len
        with nogil:
            for i in range(n):
                c = p[i]
                if c == q:
                    inside = not inside
                elif c == b'\n':
                    if not inside:
                        last = i + 1
                elif c == b'\r' and lone_cr and not inside:
                    if (i + 1 < n and p[i + 1] != b'\n') or (i + 1 == n and final):
                        last = i + 1
        return last
    finally:
        _pybuf.PyBuffer_Release(&view)
