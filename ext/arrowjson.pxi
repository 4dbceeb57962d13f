# arrowjson.pxi -- Arrow columns to JSON text in one C loop (arrowjson.h).
#
# A _JsonNodes binds each Arrow array of a batch (and its children, at any depth)
# to a C node, with the GIL, once per batch; then the rows are written without
# the GIL, each one's JSON text into one growing buffer, which becomes an Arrow
# large_string array over that buffer (no per-row Python object).  A row holding
# a NaN or an infinity under nonfinite="refuse" is left null and reported with
# its row, column and value.
#
# Binding is zero-copy except where the C loop needs another form (floats as
# Arrow's own text, decimal32/64 as decimal128) or a check (dictionary indices
# in range).  Those work on the elements the batch can reach only: a slice of a
# list column still has the whole table's child array behind it, and casting all
# of it for every slice made a 1 M-row list<struct<double>> column take 0.18 M
# rows/s in slices of 16,384 (30 M rows/s in one piece).  Each node is bound
# with the range [lo, hi) of its array's logical indices that its parent will
# ask for; a node made from a slice [lo, hi) has its offset lowered by lo, so
# the C loop's index i still finds element i - lo of it.

from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset
from libc.stdint cimport uint8_t, int64_t

from cbuf cimport *
from arrowjson cimport *


cdef const uint8_t *_addr(object buf):
    return <const uint8_t *><size_t>buf.address if buf is not None else NULL


def _pc():
    import pyarrow.compute as pc
    return pc


_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


cdef struct _Refusal:
    int64_t row
    int col
    int bad


cdef class _JsonNodes:
    """C nodes for Arrow arrays; owns the nodes' memory and keeps the arrays (and so
    the buffers the nodes point into) alive."""
    cdef void **mem
    cdef Py_ssize_t nmem, capmem
    cdef list keep

    def __cinit__(self):
        self.mem = NULL
        self.nmem = 0
        self.capmem = 0
        self.keep = []

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.nmem):
            free(self.mem[i])
        free(self.mem)

    cdef void *_alloc(self, size_t size) except NULL:
        cdef void *p
        cdef void **grown
        if self.nmem == self.capmem:
            grown = <void **>realloc(self.mem, (self.capmem * 2 + 16) * sizeof(void *))
            if grown == NULL:
                raise MemoryError()
            self.mem = grown
            self.capmem = self.capmem * 2 + 16
        p = calloc(1, max(size, 1))
        if p == NULL:
            raise MemoryError()
        self.mem[self.nmem] = p
        self.nmem += 1
        return p

    cdef cj_node *_kids(self, cj_node *n, list arrays, int64_t lo, int64_t hi,
                        str what) except NULL:
        """Bind ``arrays`` as the kids of ``n``, each for logical indices lo..hi."""
        cdef cj_node **kids = <cj_node **>self._alloc(len(arrays) * sizeof(cj_node *))
        cdef Py_ssize_t j
        for j, a in enumerate(arrays):
            kids[j] = self.bind(a, what, lo, hi)
        n.kids = kids
        n.nkids = len(arrays)
        return n

    cdef cj_node *bind(self, object arr, str what, int64_t lo, int64_t hi) except NULL:
        """The node for ``arr``, whose parent asks for its elements lo..hi (logical
        indices, hi exclusive) only."""
        import pyarrow as pa
        cdef cj_node *n = <cj_node *>self._alloc(sizeof(cj_node))
        cdef const uint8_t **vb
        cdef const char **names
        cdef size_t *lens
        cdef cj_node **kids
        cdef Py_ssize_t j
        cdef int64_t a, e
        t = arr.type
        self.keep.append(arr)
        if isinstance(t, pa.BaseExtensionType):
            if t.extension_name == "arrow.uuid":
                n.kind = CJ_UUID
                n.offset = arr.offset
                bufs = arr.storage.buffers()
                n.valid = _addr(bufs[0]) if arr.null_count else NULL
                n.b1 = _addr(bufs[1])
                return n
            return self.bind(arr.storage, what, lo, hi)
        if pa.types.is_decimal32(t) or pa.types.is_decimal64(t):
            n = self.bind(arr.slice(lo, hi - lo).cast(pa.decimal128(t.precision, t.scale)),
                          what, 0, hi - lo)
            n.offset -= lo   # a scalar node: element i of arr is element i - lo here
            return n
        bufs = arr.buffers()
        n.offset = arr.offset
        n.valid = _addr(bufs[0]) if (arr.null_count and len(bufs)) else NULL
        if pa.types.is_dictionary(t):
            # The C loop trusts the indices: one vectorized check that those the batch
            # reaches are in range.  The indices are aligned with arr (same offset).
            reached = arr.indices.slice(lo, hi - lo)
            if len(reached) and reached.null_count < len(reached):
                lo_hi = _pc().min_max(reached)
                if lo_hi["min"].as_py() < 0 or lo_hi["max"].as_py() >= len(arr.dictionary):
                    raise ValueError(f"{what}: a dictionary index is out of range "
                                     f"(dictionary of {len(arr.dictionary)} values)")
            n.kind = CJ_DICT
            kids = <cj_node **>self._alloc(2 * sizeof(cj_node *))
            kids[0] = self.bind(arr.indices, what, lo, hi)
            kids[1] = self.bind(arr.dictionary, what, 0, len(arr.dictionary))
            n.kids = kids
            n.nkids = 2
            return n
        if pa.types.is_null(t):
            n.kind = CJ_NULL
            n.valid = NULL
            return n
        if pa.types.is_floating(t):
            # Arrow's own shortest-form text (arrowjson.h, cj_put_float_text says why),
            # of the reached elements only.
            text = _pc().cast(arr.slice(lo, hi - lo), pa.string())
            self.keep.append(text)
            bufs = text.buffers()
            n.kind = CJ_FTEXT
            n.offset = text.offset - lo
            n.valid = _addr(bufs[0]) if text.null_count else NULL
            n.b1 = _addr(bufs[1])
            n.b2 = _addr(bufs[2]) if bufs[2] is not None else <const uint8_t *>b""
            return n
        if pa.types.is_struct(t):
            n.kind = CJ_STRUCT
            names = <const char **>self._alloc(t.num_fields * sizeof(char *))
            lens = <size_t *>self._alloc(t.num_fields * sizeof(size_t))
            for j in range(t.num_fields):
                lit = (_json.dumps(t.field(j).name, ensure_ascii=False) + ":").encode()
                self.keep.append(lit)
                names[j] = <const char *>lit
                lens[j] = len(lit)
            n.names = names
            n.name_lens = lens
            # field(j) is aligned with arr (it has arr's offset applied): same indices
            return self._kids(n, [arr.field(j) for j in range(t.num_fields)], lo, hi, what)
        if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
            n.kind = CJ_MAP if pa.types.is_map(t) else \
                CJ_LIST if pa.types.is_list(t) else CJ_LLIST
            n.b1 = _addr(bufs[1])
            _reached(n, lo, hi, &a, &e)
            if n.kind == CJ_MAP:
                entries = arr.values
                return self._kids(n, [entries.field(0), entries.field(1)], a, e, what)
            return self._kids(n, [arr.values], a, e, what)
        if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
            n.kind = CJ_LVIEW if pa.types.is_list_view(t) else CJ_LLVIEW
            n.b1 = _addr(bufs[1])
            n.b2 = _addr(bufs[2])
            _reached(n, lo, hi, &a, &e)
            return self._kids(n, [arr.values], a, e, what)
        if pa.types.is_fixed_size_list(t):
            n.kind = CJ_FLIST
            n.width = t.list_size
            # element i's values start at (i + offset) * width (arrowjson.h)
            return self._kids(n, [arr.values], (lo + n.offset) * n.width,
                              (hi + n.offset) * n.width, what)
        kind = _scalar_kind(t)
        if kind < 0:
            raise TypeError(f"{what}: Arrow type {t} has no JSON form here (no Parquet "
                            f"file holds it); cast the column first")
        n.kind = kind
        n.b1 = _addr(bufs[1]) if len(bufs) > 1 else NULL
        if kind in (CJ_STR, CJ_LSTR, CJ_BIN, CJ_LBIN):
            n.b2 = _addr(bufs[2])
        elif kind in (CJ_VSTR, CJ_VBIN):
            vb = <const uint8_t **>self._alloc(max(len(bufs) - 2, 1) * sizeof(uint8_t *))
            for j in range(2, len(bufs)):
                vb[j - 2] = _addr(bufs[j])
            n.vbufs = vb
        elif kind == CJ_FBIN:
            n.width = t.byte_width
        elif kind == CJ_DEC:
            n.width = t.byte_width
            n.digits = t.scale
        elif kind in (CJ_TIME32, CJ_TIME64, CJ_TS, CJ_DUR):
            n.digits = _UNIT_DIGITS[t.unit]
        return n


cdef void _reached(const cj_node *n, int64_t lo, int64_t hi, int64_t *a,
                   int64_t *e) noexcept:
    """The child indices a..e (e exclusive) that elements lo..hi of the list, large
    list, map or list view ``n`` reach, as cj_write reads them; 0..0 when none."""
    cdef int64_t i, k, s, z
    a[0] = e[0] = 0
    if hi <= lo:
        return
    if n.kind == CJ_LIST or n.kind == CJ_MAP:
        a[0] = (<const int32_t *>n.b1)[lo + n.offset]
        e[0] = (<const int32_t *>n.b1)[hi + n.offset]
    elif n.kind == CJ_LLIST:
        a[0] = (<const int64_t *>n.b1)[lo + n.offset]
        e[0] = (<const int64_t *>n.b1)[hi + n.offset]
    else:   # a view's entries may point anywhere; nulls are never read
        a[0] = 0x7fffffffffffffff
        for i in range(lo, hi):
            if not cj_valid(n, i):
                continue
            k = i + n.offset
            if n.kind == CJ_LVIEW:
                s = (<const int32_t *>n.b1)[k]
                z = (<const int32_t *>n.b2)[k]
            else:
                s = (<const int64_t *>n.b1)[k]
                z = (<const int64_t *>n.b2)[k]
            if z > 0:
                a[0] = min(a[0], s)
                e[0] = max(e[0], s + z)
        if e[0] == 0:
            a[0] = 0


cdef int _scalar_kind(object t):
    import pyarrow as pa
    ty = pa.types
    if ty.is_boolean(t):
        return CJ_BOOL
    if ty.is_integer(t):
        return {8: CJ_I8, 16: CJ_I16, 32: CJ_I32, 64: CJ_I64}[t.bit_width] \
            if ty.is_signed_integer(t) else \
            {8: CJ_U8, 16: CJ_U16, 32: CJ_U32, 64: CJ_U64}[t.bit_width]
    if ty.is_decimal128(t) or ty.is_decimal256(t):
        return CJ_DEC
    if ty.is_string(t):
        return CJ_STR
    if ty.is_large_string(t):
        return CJ_LSTR
    if ty.is_string_view(t):
        return CJ_VSTR
    if ty.is_binary(t):
        return CJ_BIN
    if ty.is_large_binary(t):
        return CJ_LBIN
    if ty.is_binary_view(t):
        return CJ_VBIN
    if ty.is_fixed_size_binary(t):
        return CJ_FBIN
    if ty.is_date32(t):
        return CJ_DATE32
    if ty.is_date64(t):
        return CJ_DATE64
    if ty.is_time32(t):
        return CJ_TIME32
    if ty.is_time64(t):
        return CJ_TIME64
    if ty.is_timestamp(t):
        return CJ_TS
    if ty.is_duration(t):
        return CJ_DUR
    return {"month_interval": CJ_IVL_M, "day_time_interval": CJ_IVL_DT,
            "month_day_nano_interval": CJ_IVL_MDN}.get(str(t), -1)


_NONFINITE = {"refuse": CJ_REFUSE, "null": CJ_AS_NULL, "string": CJ_AS_STRING}
_BAD = ("NaN", "Infinity", "-Infinity")


def arrow_json(list columns, object names, str nonfinite="refuse"):
    """JSON text of Arrow arrays, as (large_string array, refused).

    ``names`` a list of column names: each row of ``columns`` as a JSON object, keys
    in that order.  ``names`` None: ``columns`` is one array, each value as its own
    text (times, durations and "NaN" without JSON quotes: a message column).
    ``nonfinite``: "refuse", "null" or "string" for NaN and infinities, at any depth.
    ``refused``: (row, column index, "NaN" | "Infinity" | "-Infinity") per row left
    null because of a NaN or infinity under "refuse"."""
    import pyarrow as pa
    if nonfinite not in _NONFINITE:
        raise ValueError(f"nonfinite must be one of {tuple(_NONFINITE)}, not {nonfinite!r}")
    cdef bint record = names is not None
    if record and len(names) != len(columns):
        raise ValueError("one name per column")
    if not record and len(columns) != 1:
        raise ValueError("a message column is one array")
    cdef _JsonNodes bound = _JsonNodes()
    cdef Py_ssize_t ncol = len(columns), c
    cdef int64_t n = len(columns[0]) if ncol else 0
    for a in columns:
        if len(a) != n:
            raise ValueError("columns of different lengths")
    cdef cj_node **roots = <cj_node **>bound._alloc(ncol * sizeof(cj_node *))
    cdef const char **lits = <const char **>bound._alloc((ncol + 1) * sizeof(char *))
    cdef size_t *litlens = <size_t *>bound._alloc((ncol + 1) * sizeof(size_t))
    for c in range(ncol):
        what = f"column {names[c]!r}" if record else "column"
        roots[c] = bound.bind(columns[c], what, 0, n)
        if record:
            lit = (("{" if c == 0 else ",") + _json.dumps(str(names[c]), ensure_ascii=False)
                   + ":").encode()
            bound.keep.append(lit)
            lits[c] = <const char *>lit
            litlens[c] = len(lit)
    lits[ncol] = "}" if ncol else "{}"
    litlens[ncol] = 1 if ncol else 2
    cdef cyk_buf buf
    buf.p = NULL
    buf.len = 0
    buf.cap = 0
    cdef cj_ctx ctx
    ctx.nonfinite = _NONFINITE[nonfinite]
    ctx.bare = 0 if record else 1
    ctx.bad = 0
    cdef int64_t *offs = <int64_t *>malloc((n + 1) * sizeof(int64_t))
    cdef uint8_t *valid = <uint8_t *>malloc((n + 7) // 8 + 1)
    cdef _Refusal *refs = NULL
    cdef _Refusal *grown
    cdef Py_ssize_t nref = 0, capref = 0
    cdef int64_t i, nulls = 0
    cdef size_t start
    cdef int r = 0
    try:
        if offs == NULL or valid == NULL:
            raise MemoryError()
        memset(valid, 0xff, (n + 7) // 8 + 1)
        offs[0] = 0
        with nogil:
            for i in range(n):
                start = buf.len
                c = 0
                if record:
                    for c in range(ncol):
                        r = cyk_buf_put(&buf, lits[c], litlens[c])
                        if r == 0:
                            r = cj_write(&buf, roots[c], i, &ctx)
                        if r:
                            break
                    if r == 0:
                        r = cyk_buf_put(&buf, lits[ncol], litlens[ncol])
                elif not cj_valid(roots[0], i):
                    r = 3   # a null value is a null message
                else:
                    r = cj_write(&buf, roots[0], i, &ctx)
                if r < 0:
                    break
                if r:
                    buf.len = start
                    valid[i >> 3] &= ~(1 << (i & 7))
                    nulls += 1
                    if r == 1:
                        if nref == capref:
                            capref = capref * 2 + 16
                            grown = <_Refusal *>realloc(refs, capref * sizeof(_Refusal))
                            if grown == NULL:
                                r = -1
                                break
                            refs = grown
                        refs[nref].row = i
                        refs[nref].col = <int>c
                        refs[nref].bad = ctx.bad
                        nref += 1
                    r = 0
                offs[i + 1] = buf.len
        if r < 0:
            raise MemoryError()
        refused = [(refs[j].row, refs[j].col, _BAD[refs[j].bad]) for j in range(nref)]
        data = _owned(buf.p, buf.len)
        buf.p = NULL
        offsets = _owned(offs, (n + 1) * sizeof(int64_t))
        offs = NULL
        validity = _owned(valid, (n + 7) // 8 + 1)
        valid = NULL
        out = pa.Array.from_buffers(
            pa.large_string(), n,
            [pa.py_buffer(validity) if nulls else None, pa.py_buffer(offsets),
             pa.py_buffer(data)], null_count=nulls)
        return out, refused
    finally:
        free(buf.p)
        free(offs)
        free(valid)
        free(refs)
