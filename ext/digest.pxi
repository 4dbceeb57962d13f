# digest.pxi -- content digests of records, for `cykafka verify`: of the records a
# v2 record batch holds (decoded here, in C), and of the rows an import sends (Arrow
# columns or lists of bytes).  Both sides feed the same fields, each length-prefixed
# (a null as its own mark), into the same 128-bit hash, so equal records have equal
# digests however they were read.  Not a cryptographic hash: it tells apart the
# records of a file and of a topic, which nobody crafts to collide.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

cdef uint64_t _K1 = 0x9E3779B97F4A7C15ULL
cdef uint64_t _K2 = 0xC2B2AE3D27D4EB4FULL
cdef uint64_t _K3 = 0x165667B19E3779F9ULL
cdef uint64_t _K4 = 0x27D4EB2F165667C5ULL


cdef inline uint64_t _rotl(uint64_t x, int r) noexcept nogil:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t _fmix(uint64_t k) noexcept nogil:
    k ^= k >> 33
    k *= 0xFF51AFD7ED558CCDULL
    k ^= k >> 33
    k *= 0xC4CEB9FE1A85EC53ULL
    k ^= k >> 33
    return k


cdef struct _H:
    uint64_t a, b


cdef inline void _h_init(_H *h) noexcept nogil:
    h.a = _K1
    h.b = _K2


cdef inline void _h_word(_H *h, uint64_t w) noexcept nogil:
    h.a = _rotl(h.a ^ (w * _K1), 31) * _K2
    h.b = _rotl(h.b ^ (w * _K3), 27) * _K4 + h.a


cdef inline void _h_bytes(_H *h, const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """A field: its length (-1: null), then its bytes in 8-byte words."""
    cdef uint64_t w
    cdef Py_ssize_t i = 0, rest
    _h_word(h, <uint64_t>n ^ 0xA5A5A5A5A5A5A5A5ULL)
    if n <= 0:
        return
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        _h_word(h, w)
        i += 8
    rest = n - i
    if rest:
        w = 0
        memcpy(&w, p + i, rest)
        _h_word(h, w ^ (<uint64_t>rest << 56))


cdef inline void _h_out(_H *h, uint8_t *out) noexcept nogil:
    cdef uint64_t a = _fmix(h.a ^ _rotl(h.b, 17)), b = _fmix(h.b ^ a)
    memcpy(out, &a, 8)
    memcpy(out + 8, &b, 8)


cdef inline uint64_t _key_hash(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """A key's 64-bit hash, never 0 (0 stands for no key)."""
    cdef _H h
    cdef uint64_t k
    if n < 0:
        return 0
    _h_init(&h)
    _h_bytes(&h, p, n)
    k = _fmix(h.a ^ h.b)
    return k if k else 1


cdef inline int64_t _varint(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos) except? -1:
    """A zigzag varint (Kafka's record fields)."""
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uint8_t c
    while True:
        if pos[0] >= n or shift > 63:
            raise ValueError("record batch: a varint runs past the batch's end")
        c = p[pos[0]]
        pos[0] += 1
        v |= <uint64_t>(c & 0x7F) << shift
        if not (c & 0x80):
            break
        shift += 7
    return <int64_t>(v >> 1) ^ -(<int64_t>(v & 1))


cdef inline Py_ssize_t _field(const uint8_t *p, Py_ssize_t n, Py_ssize_t *pos) except -2:
    """A length-prefixed field: its length (-1: null); pos moves past it."""
    cdef int64_t ln = _varint(p, n, pos)
    if ln < -1 or pos[0] + ln > n:
        raise ValueError("record batch: a field runs past the batch's end")
    return <Py_ssize_t>ln


def digest_records(const uint8_t[::1] payload, Py_ssize_t count, int64_t base,
                   int64_t partition, bint with_partition, uint8_t[:, ::1] digests,
                   uint64_t[::1] keys, int64_t[::1] offsets, Py_ssize_t at):
    """Digest the ``count`` records of a v2 batch's (decompressed) ``payload`` whose
    first offset is ``base`` into ``digests``/``keys``/``offsets`` from row ``at``;
    the partition enters the digest when ``with_partition``.  Returns ``at`` plus
    the number of records."""
    cdef const uint8_t *p = &payload[0] if payload.shape[0] else NULL
    cdef Py_ssize_t n = payload.shape[0], pos = 0, i, kl, vl, hl, j, kpos, vpos
    cdef int64_t nh
    cdef _H h
    if at + count > digests.shape[0]:
        raise ValueError("digest_records: the output arrays are too short")
    for i in range(count):
        _varint(p, n, &pos)   # record length
        pos += 1              # attributes
        _varint(p, n, &pos)   # timestamp delta
        offsets[at + i] = base + _varint(p, n, &pos)
        _h_init(&h)
        kl = _field(p, n, &pos)
        kpos = pos
        if kl > 0:
            pos += kl
        vl = _field(p, n, &pos)
        vpos = pos
        if vl > 0:
            pos += vl
        _h_bytes(&h, p + kpos, kl)
        _h_bytes(&h, p + vpos, vl)
        keys[at + i] = _key_hash(p + kpos, kl)
        nh = _varint(p, n, &pos)
        for j in range(nh):
            hl = _field(p, n, &pos)
            _h_bytes(&h, p + pos, hl)
            if hl > 0:
                pos += hl
            hl = _field(p, n, &pos)
            _h_bytes(&h, p + pos, hl)
            if hl > 0:
                pos += hl
        if with_partition:
            _h_word(&h, <uint64_t>partition)
        _h_out(&h, &digests[at + i, 0])
    return at + count


cdef class _Column:
    """A column of bytes (or None): an Arrow binary/string array (read in place) or
    a Python sequence."""
    cdef object seq            # the Python sequence, or None
    cdef object keep           # the Arrow buffers' owners
    cdef const uint8_t *data
    cdef const int32_t *off32
    cdef const int64_t *off64
    cdef const uint8_t *valid  # validity bitmap, NULL: no nulls
    cdef Py_ssize_t start      # the array's offset into its buffers
    cdef bint null             # no column at all: every item is null

    cdef int item(self, Py_ssize_t i, const uint8_t **p, Py_ssize_t *n) except -1:
        cdef Py_ssize_t j = i + self.start
        cdef int64_t a, b
        cdef object v
        if self.null:
            n[0] = -1
            return 0
        if self.seq is not None:
            v = self.seq[i]
            if v is None:
                n[0] = -1
                return 0
            if isinstance(v, str):
                v = (<str>v).encode("utf-8")
                self.keep = v   # alive until the next item
            if not isinstance(v, bytes):
                v = bytes(v)
                self.keep = v
            p[0] = <const uint8_t *><char *>(<bytes>v)
            n[0] = len(<bytes>v)
            return 0
        if self.valid != NULL and not (self.valid[j >> 3] >> (j & 7)) & 1:
            n[0] = -1
            return 0
        if self.off32 != NULL:
            a, b = self.off32[j], self.off32[j + 1]
        else:
            a, b = self.off64[j], self.off64[j + 1]
        p[0] = self.data + a
        n[0] = b - a
        return 0


cdef _Column _column(object col):
    cdef _Column c = _Column.__new__(_Column)
    cdef Lines ln
    c.null = col is None
    if col is None:
        return c
    if type(col) is Lines:   # text.pxi's: the lines in place, never null
        ln = <Lines>col
        c.keep = ln
        c.start = ln.start
        c.data = <const uint8_t *>PyByteArray_AS_STRING(ln.data)
        if ln.large:
            c.off64 = <const int64_t *>PyByteArray_AS_STRING(ln.offsets)
        else:
            c.off32 = <const int32_t *>PyByteArray_AS_STRING(ln.offsets)
        return c
    t = getattr(col, "type", None)
    if t is not None and hasattr(col, "buffers") and hasattr(col, "offset"):
        import pyarrow as pa
        if pa.types.is_dictionary(t):
            col = col.cast(t.value_type)
            t = col.type
        large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
        if large or pa.types.is_binary(t) or pa.types.is_string(t):
            bufs = col.buffers()
            c.keep = (col, bufs)
            c.start = col.offset
            c.valid = _addr(bufs[0]) if col.null_count else NULL
            if large:
                c.off64 = <const int64_t *>_addr(bufs[1])
            else:
                c.off32 = <const int32_t *>_addr(bufs[1])
            c.data = _addr(bufs[2])   # arrowjson.pxi's
            if c.off32 == NULL and c.off64 == NULL:   # an empty array
                c.seq = []
            return c
    if t is not None and hasattr(col, "to_pylist"):
        col = col.to_pylist()
    c.seq = col if isinstance(col, (list, tuple)) else list(col)
    return c


def digest_rows(Py_ssize_t count, values, keys, headers, tuple static, partitions,
                int64_t partition, bint with_partition, uint8_t[:, ::1] digests,
                uint64_t[::1] key_hashes, Py_ssize_t at):
    """Digest ``count`` rows an import sends (``values``/``keys``: Arrow arrays or
    sequences of bytes/str/None; ``headers``: None or each row's (name, value)
    pairs; ``static``: the pairs every row gets after its own; ``partitions``: None
    (then ``partition``) or each row's) into ``digests``/``key_hashes`` from row
    ``at``, as digest_records digests the records they become.  Returns ``at`` plus
    ``count``."""
    cdef _Column vc = _column(values), kc = _column(keys)
    cdef const uint8_t *p
    cdef Py_ssize_t n, i
    cdef _H h
    cdef bytes name, hv
    if at + count > digests.shape[0]:
        raise ValueError("digest_rows: the output arrays are too short")
    for i in range(count):
        _h_init(&h)
        kc.item(i, &p, &n)
        _h_bytes(&h, p, n)
        key_hashes[at + i] = _key_hash(p, n)
        vc.item(i, &p, &n)
        _h_bytes(&h, p, n)
        if headers is not None or static:
            for pair in (list(headers[i] or ()) if headers is not None else []) + list(static):
                hname, hval = pair
                name = hname.encode("utf-8") if isinstance(hname, str) else bytes(hname)
                _h_bytes(&h, <const uint8_t *><char *>name, len(name))
                if hval is None:
                    _h_bytes(&h, NULL, -1)
                else:
                    hv = hval.encode("utf-8") if isinstance(hval, str) else bytes(hval)
                    _h_bytes(&h, <const uint8_t *><char *>hv, len(hv))
        if with_partition:
            _h_word(&h, <uint64_t>(partition if partitions is None else int(partitions[i])))
        _h_out(&h, &digests[at + i, 0])
    return at + count


def key_hash(key):
    """The 64-bit hash digest_records and digest_rows give a key (0: no key)."""
    if key is None:
        return 0
    cdef bytes k = bytes(key)
    return _key_hash(<const uint8_t *><char *>k, len(k))
