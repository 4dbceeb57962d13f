# batch.pxi -- whole columns into librdkafka in one C loop.
#
# A batch is validated first (wrong types raise before anything is queued),
# then handed over in sub-chunks: with the GIL, a sub-chunk's keys and values
# are turned into C (pointer, length) arrays; without it, one C loop calls
# rd_kafka_produce per message.  Each message's opaque points into the
# sub-chunk's slot array, tagged with the low bit so the event thread can tell
# it from a DeliveryFuture pointer (objects and slots are both 8-aligned).
# A sub-chunk may be handed over grouped by partition (grouping.pxi); message
# indexes, slots and outcomes stay those of the batch order.

from libc.stdlib cimport malloc, calloc, free


class BatchReport:
    """The outcome of a batch: how many messages were delivered and failed, the
    errors by index, and per partition the first and last offset written."""

    __slots__ = ("topic", "total", "delivered", "failed", "errors", "first_offsets",
                 "last_offsets")

    def __init__(self, topic, total, delivered, failed, errors, first_offsets, last_offsets):
        self.topic = topic
        self.total = total
        self.delivered = delivered
        self.failed = failed
        self.errors = errors
        self.first_offsets = first_offsets
        self.last_offsets = last_offsets

    @property
    def ok(self):
        """True if every message was delivered."""
        return self.failed == 0 and self.delivered == self.total

    def raise_if_failed(self):
        """Raise the first delivery error (with the counts) if any message failed."""
        if self.failed:
            index, exc = self.errors[0]
            raise error_from_code(
                exc.code, f"{self.failed} of {self.total} messages to {self.topic!r} failed; "
                f"first: message {index}: {exc.message}", delivery=True)
        return self

    def to_dict(self):
        return {"topic": self.topic, "total": self.total, "delivered": self.delivered,
                "failed": self.failed,
                "errors": [(i, e.name, e.message) for i, e in self.errors],
                "first_offsets": dict(self.first_offsets),
                "last_offsets": dict(self.last_offsets)}

    def __repr__(self):
        return (f"BatchReport(topic={self.topic!r}, total={self.total}, "
                f"delivered={self.delivered}, failed={self.failed}, "
                f"partitions={sorted(self.last_offsets)})")


cdef class BatchFuture(_FutureBase):
    """The outcome of produce_batch/produce_many: a BatchReport once every
    message has been delivered or has failed."""

    def __init__(self):
        raise TypeError("BatchFuture is created by Producer.produce_batch()")

    @property
    def total(self):
        return self._total

    @property
    def delivered(self):
        return self._delivered

    @property
    def failed(self):
        return self._failed

    cdef object _report(self):
        if self._failures is None or self._state == _PENDING:
            self._failures = self._fails.view()
        return BatchReport(self._topic, self._total, self._delivered, self._failed,
                           self._failures, dict(self._first), dict(self._last))

    cdef _fire(self, dict wake):
        cbs = self._callbacks
        self._callbacks = None
        _run_callbacks(self, cbs, wake)

    cdef _record_failure(self, Py_ssize_t index, object exc, int32_t partition):
        self._failed += 1
        self._fails.add(index, exc)
        if self._on_delivery is not None:
            self._call_on_delivery(index, exc, partition, -1, -1)

    cdef _call_on_delivery(self, Py_ssize_t index, object exc, int32_t partition,
                           int64_t offset, int64_t ts):
        try:
            self._on_delivery(index, exc, _record_metadata(self._topic, partition, offset, ts))
        except BaseException:
            _logger.exception("cykafka: an on_delivery callback raised; delivery continues")

    cdef _offsets(self, int32_t partition, int64_t lo, int64_t hi):
        first = self._first.get(partition)
        if first is None or lo < first:
            self._first[partition] = lo
        last = self._last.get(partition)
        if last is None or hi > last:
            self._last[partition] = hi

    cdef _maybe_complete(self, dict wake):
        if self._state == _PENDING and self._sealed and \
                self._delivered + self._failed >= self._total:
            self._state = _RESOLVED
            self._fire(wake)
            _notify_waiters()

    def __repr__(self):
        state = "pending" if self._state == _PENDING else "done"
        return (f"<BatchFuture {state} topic={self._topic!r} total={self._total} "
                f"delivered={self._delivered} failed={self._failed}>")


cdef BatchFuture _new_batch_future(object topic, object on_delivery):
    cdef BatchFuture bf = BatchFuture.__new__(BatchFuture)
    bf._fork_gen = <unsigned short>_fork_generation
    bf._topic = topic
    bf._fails = _FailLog()
    bf._failures = None
    bf._first = {}
    bf._last = {}
    bf._on_delivery = on_delivery
    return bf


cdef _seal_batch(BatchFuture bf, object exc=None):
    """Nothing more joins the batch: it completes once every message has an outcome,
    at once if each has one already (every report came meanwhile, or no message was
    handed over, so no report will come).  ``exc``: what stopped the batch; it then
    carries the future (``exc.batch``), so the part already queued stays observable
    (KeyboardInterrupt mid-batch, max.block.ms, a bad record)."""
    bf._sealed = True
    bf._maybe_complete(None)
    if exc is not None:
        try:
            exc.batch = bf
        except Exception:
            pass


cdef class _BatchRun:
    """Accumulates consecutive delivered messages of one batch and partition
    within a delivery-report event, so offsets are recorded once per run."""

    cdef flush(self):
        if self.bf is not None:
            self.bf._offsets(self.partition, self.lo, self.hi)
            self.bf = None

    cdef add(self, const rd_kafka_message_t *m, void *op, _Core core, dict wake):
        cdef void **slot = <void **>((<char *>op) - 1)
        cdef _Chunk *chunk = <_Chunk *>slot[0]
        cdef Py_ssize_t index = chunk.base + (slot - chunk.slots)
        cdef BatchFuture bf = <BatchFuture>chunk.future
        cdef rd_kafka_timestamp_type_t tstype
        cdef int64_t ts = -1
        cdef bint counted = False
        try:
            if m.err:
                exc = bf._fails.exc_for(m.err, _dr_errstr(core, m))
                self.flush()
                counted = True   # _record_failure counts before anything that can raise
                bf._record_failure(index, exc, m.partition)
            else:
                bf._delivered += 1
                counted = True
                if bf is self.bf and m.partition == self.partition:
                    if m.offset > self.hi:
                        self.hi = m.offset
                    if m.offset < self.lo:
                        self.lo = m.offset
                else:
                    self.flush()
                    self.bf = bf
                    self.partition = m.partition
                    self.lo = self.hi = m.offset
                if bf._on_delivery is not None:
                    ts = rd_kafka_message_timestamp(m, &tstype)
                    bf._call_on_delivery(index, None, m.partition, m.offset, ts)
        finally:
            if not counted:   # something raised first: the message still has an outcome
                bf._failed += 1
            chunk.outstanding -= 1
            if chunk.outstanding == 0:
                _chunk_free(chunk)   # bf stays referenced by this frame
            if bf._delivered + bf._failed >= bf._total and bf._sealed:
                self.flush()
                bf._maybe_complete(wake)


cdef _Chunk *_chunk_new(BatchFuture bf, Py_ssize_t base, Py_ssize_t n) except NULL:
    cdef _Chunk *chunk = <_Chunk *>malloc(sizeof(_Chunk) + n * sizeof(void *))
    cdef Py_ssize_t i
    if chunk == NULL:
        raise MemoryError()
    chunk.slots = <void **>(chunk + 1)
    for i in range(n):
        chunk.slots[i] = chunk
    chunk.base = base
    chunk.outstanding = n + 1   # +1: held by the enqueuing code until it is done
    chunk.future = <PyObject *>bf
    Py_INCREF(bf)  # partner: Py_DECREF in _chunk_free
    return chunk


cdef void _chunk_free(_Chunk *chunk):
    Py_DECREF(<object>chunk.future)  # partner: Py_INCREF in _chunk_new
    free(chunk)


cdef int _sub_alloc(_Sub *s, Py_ssize_t m, bint headers) except -1:
    """The arrays of sub-chunks of up to ``m`` messages (``s`` is freed by _sub_free
    whatever happens here)."""
    m = max(m, 1)
    s.cnt = 0
    s.pd = s.td = NULL
    s.perm = NULL
    s.dest = NULL
    s.chunk = NULL
    s.vp = <const char **>calloc(m, sizeof(char *))
    s.kp = <const char **>calloc(m, sizeof(char *))
    s.vl = <size_t *>calloc(m, sizeof(size_t))
    s.kl = <size_t *>calloc(m, sizeof(size_t))
    s.errs = <int *>calloc(m, sizeof(int))
    s.perm_buf = <Py_ssize_t *>malloc(m * sizeof(Py_ssize_t))
    s.dest_buf = <int32_t *>malloc(m * sizeof(int32_t))
    s.hp = <rd_kafka_headers_t **>calloc(m, sizeof(void *)) if headers else NULL
    if s.vp == NULL or s.kp == NULL or s.vl == NULL or s.kl == NULL or s.errs == NULL or \
            s.perm_buf == NULL or s.dest_buf == NULL or (headers and s.hp == NULL):
        raise MemoryError()
    return 0


cdef void _sub_free(_Sub *s) noexcept nogil:
    """partner: _sub_alloc (headers still in s.hp are the caller's to destroy first)."""
    free(s.vp)
    free(s.kp)
    free(s.vl)
    free(s.kl)
    free(s.errs)
    free(s.perm_buf)
    free(s.dest_buf)
    free(s.hp)


cdef Py_ssize_t _enqueue_run(rd_kafka_t *rk, rd_kafka_topic_t *rkt, const _Sub *s,
                             Py_ssize_t q, int64_t *size_max) noexcept nogil:
    """The C loop: hand positions q..s.cnt of a sub-chunk to librdkafka, message
    ``s.perm[q]`` at position q (``q`` itself when perm is NULL; see grouping.pxi).
    Stops at the first _QUEUE_FULL and returns its position (s.cnt when all were
    handed).  Raises ``*size_max`` to the largest key + value accepted."""
    if s.dest == NULL and (s.td != NULL or s.hp != NULL or s.pd != NULL):
        return _enqueue_each(rk, rkt, s, q, size_max)
    # rd_kafka_produce_batch reads the clocks once per call for CreateTime and the
    # enqueue time, which rd_kafka_produce reads for each message (on a 2-core
    # machine the clock reads were a tenth of an import's CPU); the messages of one
    # call share its CreateTime.  With s.dest, each run of one partition is one call
    # with that partition, which also skips the partitioner (grouping.pxi); without
    # it librdkafka partitions each message (RD_KAFKA_PARTITION_UA).  Never
    # RD_KAFKA_MSG_F_PARTITION: with it a message to a partition the topic lacks is
    # failed but never freed (rdkafka_msg.c: that lookup's error path skips
    # rd_kafka_msg_destroy), so flush() would wait for it forever; given one
    # partition, the call looks it up once and refuses the whole run when it is
    # missing ("Propagate error for all messages").
    cdef rd_kafka_message_t msgs[_SLICE]
    cdef Py_ssize_t cnt = s.cnt, k, i, j
    cdef const Py_ssize_t *perm = s.perm
    cdef const int32_t *dest = s.dest
    cdef void **slots = s.chunk.slots
    cdef int32_t part = RD_KAFKA_PARTITION_UA
    cdef int err
    while q < cnt:
        if dest != NULL:
            part = dest[perm[q] if perm != NULL else q]
        k = 0
        while k < _SLICE and q + k < cnt:
            j = perm[q + k] if perm != NULL else q + k
            if dest != NULL and dest[j] != part:
                break
            msgs[k].payload = <void *>s.vp[j]
            msgs[k].len = s.vl[j]
            msgs[k].key = <void *>s.kp[j]
            msgs[k].key_len = s.kl[j]
            msgs[k]._private = <void *>((<char *>&slots[j]) + 1)
            msgs[k].err = RD_KAFKA_RESP_ERR_NO_ERROR
            k += 1
        # rd_kafka_produce_batch sets each message's err ("see rd_kafka_produce()
        # for possible error codes"); from the first _QUEUE_FULL on it marks every
        # message _QUEUE_FULL without trying it (rdkafka_msg.c: "Propagate error for
        # all messages"), so those before it were queued or refused, in order.
        rd_kafka_produce_batch(rkt, part, RD_KAFKA_MSG_F_COPY, msgs, <int>k)
        for i in range(k):
            err = msgs[i].err
            if err == RD_KAFKA_RESP_ERR__QUEUE_FULL:
                return q + i
            j = perm[q + i] if perm != NULL else q + i
            s.errs[j] = err
            if err == 0 and <int64_t>(s.vl[j] + s.kl[j]) > size_max[0]:
                size_max[0] = <int64_t>(s.vl[j] + s.kl[j])
        q += k
    return cnt


cdef Py_ssize_t _enqueue_each(rd_kafka_t *rk, rd_kafka_topic_t *rkt, const _Sub *s,
                              Py_ssize_t q, int64_t *size_max) noexcept nogil:
    """_enqueue_run for sub-chunks with timestamps, headers or partitions given (see
    there): one call per message."""
    # Locals, not s.*, in the loop: the compiler cannot know that librdkafka leaves
    # *s alone, and would reload every field after each call.
    cdef Py_ssize_t cnt = s.cnt
    cdef const Py_ssize_t *perm = s.perm
    cdef const char **vp = s.vp
    cdef const size_t *vl = s.vl
    cdef const char **kp = s.kp
    cdef const size_t *kl = s.kl
    cdef const int64_t *pd = s.pd
    cdef const int64_t *td = s.td
    cdef rd_kafka_headers_t **hp = s.hp
    cdef int *errs = s.errs
    cdef void **slots = s.chunk.slots
    cdef int err
    cdef int32_t part
    cdef Py_ssize_t j
    while q < cnt:
        j = perm[q] if perm != NULL else q
        part = <int32_t>pd[j] if pd != NULL else RD_KAFKA_PARTITION_UA
        err = _produce_c(rk, rkt, part, vp[j], vl[j], kp[j], kl[j],
                         <void *>((<char *>&slots[j]) + 1),
                         td[j] if td != NULL else 0, hp[j] if hp != NULL else NULL)
        if err == RD_KAFKA_RESP_ERR__QUEUE_FULL:
            return q
        errs[j] = err
        if err == 0:
            if <int64_t>(vl[j] + kl[j]) > size_max[0]:
                size_max[0] = <int64_t>(vl[j] + kl[j])
            if hp != NULL:
                hp[j] = NULL   # librdkafka owns the headers of an accepted message
        q += 1
    return cnt


cdef _count_direct(_Core core, _Topic t, const _Sub *s, Py_ssize_t queued):
    """Add the messages at positions 0..queued that librdkafka accepted with their
    partition given to that partition's ``direct`` count (grouping.pxi: its "msgs"
    statistic leaves them out).  A run of one partition is one dict lookup."""
    cdef const Py_ssize_t *perm = s.perm
    cdef Py_ssize_t q = 0, j, n
    cdef int32_t part
    cdef _PartCount pc
    while q < queued:
        j = perm[q] if perm != NULL else q
        part = s.dest[j]
        n = 0
        while q < queued:
            j = perm[q] if perm != NULL else q
            if s.dest[j] != part:
                break
            if s.errs[j] == 0:
                n += 1
            q += 1
        if n:
            pc = _part_count(core, t.rkt, part)
            pc.direct += n


cdef _settle(_Core core, _Topic t, BatchFuture bf, _Sub *s, Py_ssize_t queued,
             object why=None):
    """After a sub-chunk's C loop: account for the messages at positions
    0..queued that librdkafka took or refused, fail those at queued..s.cnt (never
    handed over; ``why`` says what stopped the batch), and drop the hold on the
    chunk."""
    cdef _Chunk *chunk = s.chunk
    cdef Py_ssize_t cnt = s.cnt
    cdef const Py_ssize_t *perm = s.perm
    cdef int *errs = s.errs
    cdef rd_kafka_headers_t **hp = s.hp
    cdef const int64_t *pd = s.pd
    cdef const int32_t *dest = s.dest
    cdef Py_ssize_t q, j, accepted = 0, refused = 0, first_unqueued = -1
    # First the counts (no user code runs here), then the failures, whose
    # on_delivery callbacks are user code.
    if dest != NULL:
        _count_direct(core, t, s, queued)
    for q in range(cnt):
        j = perm[q] if perm != NULL else q
        if hp != NULL and hp[j] != NULL:
            rd_kafka_headers_destroy(hp[j])  # partner: _make_headers; not accepted
            hp[j] = NULL
        if q >= queued:
            chunk.outstanding -= 1
            if first_unqueued < 0 or j < first_unqueued:
                first_unqueued = j
        elif errs[j]:
            chunk.outstanding -= 1
            refused += 1
        else:
            accepted += 1
    core.produced += queued
    core.pending += accepted
    core.failed += refused
    if refused:
        texts = {}  # one text per code: a whole batch can be refused alike
        for q in range(queued):
            j = perm[q] if perm != NULL else q
            if errs[j]:
                text = texts.get(errs[j])
                if text is None:
                    text = texts[errs[j]] = _refused_text(core, errs[j], bf._topic)
                exc = bf._fails.exc_for(errs[j], text)
                bf._record_failure(chunk.base + j, exc,
                                   <int32_t>pd[j] if pd != NULL else -1)
    if queued < cnt:
        exc = _not_queued(chunk.base + first_unqueued, why)
        for q in range(queued, cnt):
            j = perm[q] if perm != NULL else q
            bf._record_failure(chunk.base + j, exc, -1)
        core.produced += cnt - queued
        core.failed += cnt - queued
    chunk.outstanding -= 1   # the enqueuing code's hold (see _chunk_new)
    if chunk.outstanding == 0:
        _chunk_free(chunk)


cdef object _not_queued(Py_ssize_t start, object why):
    code = why.code if isinstance(why, KafkaError) else RD_KAFKA_RESP_ERR__STATE
    return error_from_code(code, f"not queued: the batch stopped at message {start} "
                                 f"because of {type(why).__name__}: {why}", delivery=True)


cdef _fail_range(_Core core, BatchFuture bf, Py_ssize_t start, Py_ssize_t end, object why):
    """Messages start..end of a batch were never handed to librdkafka."""
    if end <= start:
        return
    exc = _not_queued(start, why)
    for i in range(start, end):
        bf._record_failure(i, exc, -1)
    core.produced += end - start
    core.failed += end - start


cdef _enqueue(_Core core, _Topic t, BatchFuture bf, Py_ssize_t base, _Column vcol,
              _Column kcol, _IntColumn pcol, _IntColumn tcol, list headers):
    """Hand a validated batch (or one produce_many chunk) to librdkafka."""
    cdef Py_ssize_t n = vcol.n, s = 0, j = 0
    cdef int64_t deadline = 0
    cdef unsigned long gen
    cdef int64_t peak = -1   # merged into core.size_max with the GIL held, after each run
    cdef _Sub sub
    cdef bint entered = False
    try:
        _sub_alloc(&sub, min(n, _SUB), headers is not None)
        while s < n:
            sub.cnt = min(_SUB, n - s)
            j = 0
            vcol.fill(s, sub.cnt, sub.vp, sub.vl)
            if kcol is not None:
                kcol.fill(s, sub.cnt, sub.kp, sub.kl)
            if headers is not None:
                for j in range(sub.cnt):
                    h = headers[s + j]
                    sub.hp[j] = _make_headers(h, f"headers[{base + s + j}]") \
                        if h is not None else NULL
                j = 0
            sub.pd = pcol.data + s if pcol is not None else NULL
            sub.td = tcol.data + s if tcol is not None else NULL
            # From here to _settle the sub-chunk uses rk and t.rkt: close() waits.
            # wait_room raises once close() has begun; the except below then fails
            # the rest of the batch.
            core.enter()
            entered = True
            if core.stage_n:
                _stage_drain(core, True)   # produce()'s staged messages go first
            _order_and_route(core, t, &sub, kcol is not None)
            sub.chunk = _chunk_new(bf, base + s, sub.cnt)
            while j < sub.cnt:   # j: the position reached in perm order
                gen = _room_gen(core)
                with nogil:
                    j = _enqueue_run(core.rk, t.rkt, &sub, j, &peak)
                if peak > core.size_max:
                    core.size_max = peak
                peak = -1
                if j < sub.cnt:
                    core.wait_room(&deadline, gen)
            entered = False
            core.leave()   # partner: core.enter() above; _settle runs user callbacks
            _settle(core, t, bf, &sub, sub.cnt)
            sub.chunk = NULL
            s += sub.cnt
    except BaseException as exc:
        if entered:
            entered = False
            core.leave()   # partner: core.enter() above
        if sub.chunk != NULL:
            # Fails this sub-chunk's messages that were not handed over.
            _settle(core, t, bf, &sub, j, exc)
            s += sub.cnt
        elif sub.hp != NULL:
            for j in range(sub.cnt):
                if sub.hp[j] != NULL:
                    rd_kafka_headers_destroy(sub.hp[j])  # partner: _make_headers
        _fail_range(core, bf, base + s, base + n, exc)
        raise
    finally:
        _sub_free(&sub)


cdef tuple _records_chunk(object it, Py_ssize_t size, Py_ssize_t base):
    """Up to ``size`` records from ``it`` as columns, None when exhausted:
    (values, keys, partitions, timestamps, headers, records read, error).  A bad
    record (or the iterator raising) ends the chunk with ``error`` set, the count
    including the bad record, so the caller can report every record it read."""
    cdef list values = []
    try:
        cols = _read_records(it, size, base, values)
    except BaseException as exc:
        return (None, None, None, None, None, len(values), exc)
    if cols is None:
        return None
    return cols + (len(values), None)


cdef tuple _read_records(object it, Py_ssize_t size, Py_ssize_t base, list values):
    keys = []
    parts = tss = hdrs = None
    has_keys = False
    for rec in it:
        i = base + len(values)
        values.append(None)   # read: counted even if it turns out bad
        value, key, h, p, ts = _one_record(rec, i)
        values[len(values) - 1] = value
        keys.append(key)
        if key is not None:
            has_keys = True
        if h is not None:
            if hdrs is None:
                hdrs = [None] * (len(values) - 1)
        if hdrs is not None:
            hdrs.append(h)
        if p is not None and parts is None:
            parts = [None] * (len(values) - 1)
        if parts is not None:
            parts.append(p)
        if ts is not None and tss is None:
            tss = [None] * (len(values) - 1)
        if tss is not None:
            tss.append(ts)
        if len(values) >= size:
            break
    if not values:
        return None
    if hdrs is not None:
        for j, h in enumerate(hdrs):
            if h is not None:
                hh = _make_headers(h, f"record {base + j} headers")
                if hh != NULL:
                    rd_kafka_headers_destroy(hh)
    return (values, keys if has_keys else None, parts, tss, hdrs)


cdef tuple _one_record(object rec, Py_ssize_t i):
    """(value, key, headers, partition, timestamp) of record ``i``."""
    if rec is None or isinstance(rec, (bytes, str, bytearray, memoryview)):
        return rec, None, None, None, None
    if isinstance(rec, tuple):
        if len(rec) == 2:
            return rec[1], rec[0], None, None, None
        if len(rec) == 3:
            return rec[1], rec[0], rec[2], None, None
        raise TypeError(f"record {i}: a tuple record is (key, value) or "
                        f"(key, value, headers), not {len(rec)} items")
    if isinstance(rec, dict):
        extra = set(rec) - {"value", "key", "headers", "partition", "timestamp"}
        if extra:
            raise TypeError(f"record {i}: unknown fields {sorted(extra)}; a dict record "
                            f"has value, key, headers, partition, timestamp")
        return (rec.get("value"), rec.get("key"), rec.get("headers"), rec.get("partition"),
                rec.get("timestamp"))
    raise TypeError(f"record {i} must be bytes, str, None, a (key, value) tuple or a "
                    f"dict, not {type(rec).__name__}")
