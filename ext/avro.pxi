# avro.pxi -- Arrow columns to Confluent-framed Avro binary in one C loop.
#
# An AvroEncoder is an Avro schema matched once against an Arrow type: a tree of
# C nodes, each saying which Avro encoding to write and where its Arrow buffers
# are.  Encoding a batch binds the nodes to the batch's buffers (with the GIL,
# once per node), then walks the rows without the GIL, writing each row's
# framing prefix and Avro binary into one growing buffer.  The result is an
# Arrow large_binary array over that buffer, which produce_batch reads without
# a per-row Python object.  A row that does not fit the schema (a null for a
# non-null field, an int out of range, an unknown enum symbol, a decimal beyond
# its precision) is left null and reported with its row number and field path.
#
# Byte-for-byte the output is what fastavro (confluent-kafka's AvroSerializer)
# writes for the same values, including its quirks: decimals as
# (bit_length + 8) // 8 big-endian bytes, array and map items in one block
# with a positive count, and times truncated toward the earlier instant.

from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, \
    uint64_t

from cbuf cimport *
from avrobin cimport *

# What a node writes (its Avro type).
cdef enum _AOp:
    _AO_NULL = 0
    _AO_BOOL
    _AO_INT
    _AO_LONG
    _AO_FLOAT
    _AO_DOUBLE
    _AO_BYTES       # string and bytes: length-prefixed
    _AO_FIXED
    _AO_ENUM
    _AO_DECIMAL     # bytes (size 0) or fixed (size > 0)
    _AO_UUID16      # a 16-byte Arrow value written as a uuid string
    _AO_ARRAY
    _AO_MAP
    _AO_RECORD
    _AO_CONST       # a missing field: its default, encoded once

# Where a node reads from (its Arrow layout).
cdef enum _ASrc:
    _AS_NONE = 0    # nothing: _AO_CONST / null arrays
    _AS_BOOL
    _AS_INT         # width 1/2/4/8, signed or not
    _AS_F32
    _AS_F64
    _AS_BIN32
    _AS_BIN64
    _AS_FIXED       # fixed_size_binary (width)
    _AS_DEC128
    _AS_LIST32
    _AS_LIST64
    _AS_FSL         # fixed_size_list (width = list size)
    _AS_STRUCT
    _AS_ENUM        # int32 symbol indexes from pc.index_in, validity in aux

# Row errors (code -> message in _AVRO_ERRORS).
DEF _AE_NULL = 1
DEF _AE_RANGE = 2
DEF _AE_ENUM = 3
DEF _AE_PRECISION = 4
DEF _AE_SIZE = 5
DEF _AE_FIT = 6
DEF _AE_OVERFLOW = 7

cdef dict _AVRO_ERRORS = {
    _AE_NULL: "is null but the schema does not allow null",
    _AE_RANGE: "is out of range for the Avro type",
    _AE_ENUM: "is not a symbol of the enum",
    _AE_PRECISION: "has more digits than the decimal's precision",
    _AE_SIZE: "does not have the fixed type's size",
    _AE_FIT: "does not fit the decimal's fixed size",
    _AE_OVERFLOW: "overflows when converted to the schema's time unit",
}


cdef struct _AN:
    int op
    int src
    int nullable            # a union with null
    int null_index          # its branch numbers
    int value_index
    int width               # _AS_INT byte width; _AS_FIXED size; _AS_FSL list size
    int sgn
    int size                # fixed size (_AO_FIXED, _AO_DECIMAL fixed)
    int precision
    int scale_up
    int64_t mul, div        # time unit conversion
    int64_t lo, hi          # range of the Avro int type
    # bound per batch
    const uint8_t *valid
    Py_ssize_t off
    const uint8_t *data
    const uint8_t *offs
    const uint8_t *aux_valid   # _AS_ENUM: index_in's validity (NULL: all found)
    Py_ssize_t aux_off
    const char *konst
    size_t konst_len
    _AN **kids
    int nkids
    int id


cdef inline bint _a_isnull(const uint8_t *valid, Py_ssize_t k) noexcept nogil:
    return valid != NULL and not ((valid[k >> 3] >> (k & 7)) & 1)


cdef int _a_enc(_AN *n, Py_ssize_t i, cyk_buf *b, int *err_node) noexcept nogil:
    """Write logical element ``i`` of node ``n``; 0, -1 (memory), or a row error
    code with ``err_node`` set."""
    cdef Py_ssize_t k = i + n.off
    cdef int64_t v = 0, a, e, j
    cdef double d
    cdef float f
    cdef int r
    cdef const uint8_t *p
    if n.op == _AO_CONST:
        return cyk_buf_put(b, n.konst, n.konst_len)
    if n.src == _AS_NONE or _a_isnull(n.valid, k):
        if n.nullable:
            return cyk_put_long(b, n.null_index)
        if n.op == _AO_NULL:
            return 0
        err_node[0] = n.id
        return _AE_NULL
    if n.nullable and cyk_put_long(b, n.value_index):
        return -1
    if n.op == _AO_RECORD:
        for j in range(n.nkids):
            # struct children come adjusted for the struct's offset: same index
            r = _a_enc(n.kids[j], i, b, err_node)
            if r:
                return r
        return 0
    if n.op == _AO_BOOL:
        v = (n.data[k >> 3] >> (k & 7)) & 1
        return cyk_buf_put(b, &v, 1)   # little-endian: the low byte
    if n.src == _AS_INT:
        if n.width == 8:
            v = (<const int64_t *>n.data)[k]
            if not n.sgn and v < 0:
                err_node[0] = n.id
                return _AE_RANGE
        elif n.sgn:   # (no ternaries here: int32/uint32 would meet as unsigned)
            if n.width == 4:
                v = (<const int32_t *>n.data)[k]
            elif n.width == 2:
                v = (<const int16_t *>n.data)[k]
            else:
                v = (<const int8_t *>n.data)[k]
        elif n.width == 4:
            v = (<const uint32_t *>n.data)[k]
        elif n.width == 2:
            v = (<const uint16_t *>n.data)[k]
        else:
            v = n.data[k]
        if n.op == _AO_FLOAT:
            f = <float>v
            return cyk_buf_put(b, &f, 4)
        if n.op == _AO_DOUBLE:
            d = <double>v
            return cyk_buf_put(b, &d, 8)
        if cyk_scale(v, n.mul, n.div, &v):
            err_node[0] = n.id
            return _AE_OVERFLOW
        if v < n.lo or v > n.hi:
            err_node[0] = n.id
            return _AE_RANGE
        return cyk_put_long(b, v)
    if n.src == _AS_F32 or n.src == _AS_F64:
        if n.src == _AS_F32:
            d = (<const float *>n.data)[k]
        else:
            d = (<const double *>n.data)[k]
        if n.op == _AO_FLOAT:
            f = <float>d
            return cyk_buf_put(b, &f, 4)
        return cyk_buf_put(b, &d, 8)
    if n.src == _AS_BIN32 or n.src == _AS_BIN64:
        if n.src == _AS_BIN32:
            a = (<const int32_t *>n.offs)[k]
            e = (<const int32_t *>n.offs)[k + 1]
        else:
            a = (<const int64_t *>n.offs)[k]
            e = (<const int64_t *>n.offs)[k + 1]
        if n.op == _AO_FIXED:
            if e - a != n.size:
                err_node[0] = n.id
                return _AE_SIZE
        elif cyk_put_long(b, e - a):
            return -1
        return cyk_buf_put(b, n.data + a, <size_t>(e - a))
    if n.src == _AS_FIXED:
        p = n.data + k * n.width
        if n.op == _AO_UUID16:
            return cyk_put_uuid(b, p)
        if n.op == _AO_FIXED:
            if n.width != n.size:
                err_node[0] = n.id
                return _AE_SIZE
        elif cyk_put_long(b, n.width):
            return -1
        return cyk_buf_put(b, p, n.width)
    if n.src == _AS_DEC128:
        r = cyk_put_decimal(b, n.data + 16 * k, n.precision, n.scale_up, n.size)
        if r > 0:
            err_node[0] = n.id
        return r
    if n.src == _AS_ENUM:
        if _a_isnull(n.aux_valid, i + n.aux_off):
            err_node[0] = n.id
            return _AE_ENUM
        return cyk_put_long(b, (<const int32_t *>n.data)[i + n.aux_off])
    if n.src == _AS_LIST32 or n.src == _AS_LIST64 or n.src == _AS_FSL:
        if n.src == _AS_LIST32:
            a = (<const int32_t *>n.offs)[k]
            e = (<const int32_t *>n.offs)[k + 1]
        elif n.src == _AS_LIST64:
            a = (<const int64_t *>n.offs)[k]
            e = (<const int64_t *>n.offs)[k + 1]
        else:
            a = k * n.width
            e = a + n.width
        if e > a:
            if cyk_put_long(b, e - a):
                return -1
            for j in range(a, e):
                if n.op == _AO_MAP:
                    r = _a_enc(n.kids[0], j, b, err_node)
                    if r:
                        return r
                    r = _a_enc(n.kids[1], j, b, err_node)
                else:
                    r = _a_enc(n.kids[0], j, b, err_node)
                if r:
                    return r
        return cyk_put_long(b, 0)
    err_node[0] = n.id
    return _AE_RANGE


cdef struct _ARowErr:
    int64_t row
    int code
    int node


cdef class AvroEncoder:
    """An Avro schema matched against an Arrow type (``avro_match.pxi``); encodes
    arrays of that type into framed Avro binary without per-row Python objects."""

    cdef _AN *nodes
    cdef _AN **kidptrs
    cdef int nnodes
    cdef list specs
    cdef bytes prefix
    cdef readonly object arrow_type
    cdef object lock   # encode() binds the shared nodes to one array at a time

    def __cinit__(self):
        self.nodes = NULL
        self.kidptrs = NULL

    def __dealloc__(self):
        free(self.nodes)
        free(self.kidptrs)

    def __init__(self, schema, arrow_type, bytes prefix=b""):
        cdef int i, j, nk = 0
        cdef _AN *n
        cdef bytes konst
        import threading
        self.lock = threading.Lock()
        b = _ABuilder()
        b.build(schema, arrow_type, "", None)
        self.specs = b.specs
        self.prefix = prefix
        self.arrow_type = arrow_type
        self.nnodes = len(self.specs)
        for spec in self.specs:
            nk += len(spec["kids"])
        self.nodes = <_AN *>calloc(self.nnodes, sizeof(_AN))
        self.kidptrs = <_AN **>calloc(max(nk, 1), sizeof(_AN *))
        if self.nodes == NULL or self.kidptrs == NULL:
            raise MemoryError()
        nk = 0
        for i, spec in enumerate(self.specs):
            n = &self.nodes[i]
            n.id = i
            n.op = spec["op"]
            n.src = spec["src"]
            n.nullable = spec["nullable"]
            n.null_index = spec["null_index"]
            n.value_index = spec["value_index"]
            n.width = spec["width"]
            n.sgn = spec["sgn"]
            n.size = spec["size"]
            n.precision = spec["precision"]
            n.scale_up = spec["scale_up"]
            n.mul = spec["mul"]
            n.div = spec["div"]
            n.lo = spec["lo"]
            n.hi = spec["hi"]
            konst = spec["konst"]
            if konst is not None:
                n.konst = <const char *>konst   # kept alive by self.specs
                n.konst_len = len(konst)
            n.kids = &self.kidptrs[nk]
            n.nkids = len(spec["kids"])
            for j, kid in enumerate(spec["kids"]):
                self.kidptrs[nk + j] = &self.nodes[<int>kid]
            nk += n.nkids

    cdef _bind(self, int nid, object arr, list keep):
        """Point node ``nid`` (and its children) at the buffers of ``arr``."""
        import pyarrow.compute as pc
        import pyarrow as pa
        cdef _AN *n = &self.nodes[nid]
        spec = self.specs[nid]
        if n.op == _AO_CONST or n.src == _AS_NONE:
            n.valid = NULL
            return
        if spec["storage"]:
            arr = arr.storage
        if spec["decode"]:
            arr = arr.dictionary_decode()
        keep.append(arr)
        bufs = arr.buffers()
        n.off = arr.offset
        n.valid = <const uint8_t *><size_t>bufs[0].address \
            if (bufs[0] is not None and arr.null_count) else NULL
        n.data = n.offs = NULL
        if n.src == _AS_STRUCT:
            for kid, fi in zip(spec["kids"], spec["fields"]):
                if fi >= 0:
                    self._bind(kid, arr.field(fi), keep)
            return
        if n.src == _AS_ENUM:
            idx = pc.index_in(arr, value_set=pa.array(spec["symbols"], arr.type))
            keep.append(idx)
            ib = idx.buffers()
            n.data = <const uint8_t *><size_t>ib[1].address
            n.aux_off = idx.offset
            n.aux_valid = <const uint8_t *><size_t>ib[0].address \
                if (ib[0] is not None and idx.null_count) else NULL
            return
        if n.src in (_AS_BIN32, _AS_BIN64, _AS_LIST32, _AS_LIST64):
            n.offs = <const uint8_t *><size_t>bufs[1].address if bufs[1] is not None else NULL
            if n.offs == NULL and len(arr):
                raise ValueError(f"column {spec['path']!r}: Arrow array has no offsets buffer")
            if n.src in (_AS_BIN32, _AS_BIN64):
                n.data = <const uint8_t *><size_t>bufs[2].address \
                    if bufs[2] is not None else NULL
                return
            vals = arr.values
            if n.op == _AO_MAP:
                self._bind(spec["kids"][0], vals.field(0), keep)
                self._bind(spec["kids"][1], vals.field(1), keep)
            else:
                self._bind(spec["kids"][0], vals, keep)
            return
        if n.src == _AS_FSL:
            self._bind(spec["kids"][0], arr.values, keep)
            return
        n.data = <const uint8_t *><size_t>bufs[1].address if bufs[1] is not None else NULL

    def encode(self, arr):
        """``arr`` (an Arrow array of the encoder's type) as framed Avro: (large_binary
        array, [(row, field path, message), ...]).  A row listed there is null in the
        array; so is a null top-level row (a tombstone, as confluent's serializers).
        Thread-safe: calls on one encoder take turns."""
        with self.lock:
            return self._encode(arr)

    def _encode(self, arr):
        import pyarrow as pa
        cdef Py_ssize_t n = len(arr), i, start, nerr = 0, cap_err = 0
        cdef list keep = []
        cdef cyk_buf buf
        cdef int64_t *offs = NULL
        cdef uint8_t *valid = NULL
        cdef _ARowErr *errs = NULL
        cdef _ARowErr *grown
        cdef int r = 0, err_node = 0
        cdef const char *pre = self.prefix
        cdef size_t plen = len(self.prefix)
        cdef _AN *root = &self.nodes[0]
        cdef Py_ssize_t nulls = 0
        if arr.type != self.arrow_type:
            raise TypeError(f"the data's Arrow type {arr.type} is not the encoder's "
                            f"{self.arrow_type}")
        self._bind(0, arr, keep)
        buf.p = NULL
        buf.len = buf.cap = 0
        offs = <int64_t *>malloc((n + 1) * sizeof(int64_t))
        valid = <uint8_t *>malloc((n + 7) // 8 + 1)
        try:
            if offs == NULL or valid == NULL or cyk_buf_reserve(&buf, n * 16 + 64):
                raise MemoryError()
            memset(valid, 0xff, (n + 7) // 8 + 1)
            offs[0] = 0
            with nogil:
                for i in range(n):
                    start = buf.len
                    if _a_isnull(root.valid, i + root.off):
                        r = 0   # a null record is a null message, as in confluent's
                    elif cyk_buf_put(&buf, pre, plen):
                        r = -1
                    else:
                        r = _a_enc(root, i, &buf, &err_node)
                        if r == 0:
                            offs[i + 1] = buf.len
                            continue
                    if r < 0:
                        break
                    buf.len = start
                    offs[i + 1] = buf.len
                    valid[i >> 3] &= ~(1 << (i & 7))
                    nulls += 1
                    if r > 0:
                        if nerr == cap_err:
                            cap_err = cap_err * 2 + 16
                            grown = <_ARowErr *>realloc(errs, cap_err * sizeof(_ARowErr))
                            if grown == NULL:
                                r = -1
                                break
                            errs = grown
                        errs[nerr].row = i
                        errs[nerr].code = r
                        errs[nerr].node = err_node
                        nerr += 1
            if r < 0:
                raise MemoryError()
            rejected = [(errs[i].row, self.specs[errs[i].node]["path"],
                         _AVRO_ERRORS[errs[i].code]) for i in range(nerr)]
            data = _owned(buf.p, buf.len)
            buf.p = NULL
            offsets = _owned(offs, (n + 1) * sizeof(int64_t))
            offs = NULL
            validity = _owned(valid, (n + 7) // 8)
            valid = NULL
            out = pa.Array.from_buffers(
                pa.large_binary(), n,
                [pa.py_buffer(validity) if nulls else None, pa.py_buffer(offsets),
                 pa.py_buffer(data)], null_count=nulls)
            return out, rejected
        finally:
            free(buf.p)
            free(offs)
            free(valid)
            free(errs)
