# failures.pxi -- a batch's failed messages, kept compact.
#
# A batch of millions may fail wholesale (a topic refused, a broker gone until
# message.timeout.ms).  Kept as one (index, exception) tuple and one exception
# object per message, that cost about 1 KB of RSS per failure; here a failure is
# a run of consecutive indexes with the same cause (24 bytes per run), and a
# cause is one exception object per distinct (code, text).  The (index,
# exception) pairs are built only when the report is read.

from libc.stdlib cimport qsort, realloc
from libc.string cimport memcpy


cdef int _run_cmp(const void *a, const void *b) noexcept nogil:
    cdef int64_t x = (<const _FailRun *>a).start, y = (<const _FailRun *>b).start
    return (x > y) - (x < y)


cdef class _FailLog:
    """The failures of one batch, in the order they were recorded."""

    def __cinit__(self):
        self.runs = NULL
        self.causes = []
        self.cause_ids = {}
        self.by_text = {}
        self.last_cause = -1

    def __dealloc__(self):
        free(self.runs)

    cdef object exc_for(self, int code, str text):
        """One shared KafkaDeliveryError per distinct (code, text)."""
        key = (code, text)
        exc = self.by_text.get(key)
        if exc is None:
            exc = error_from_code(code, text, delivery=True)
            self.by_text[key] = exc
        return exc

    cdef int add(self, int64_t index, object exc) except -1:
        cdef int64_t c
        cdef _FailRun *r
        cdef Py_ssize_t cap
        if exc is self.last_exc:
            c = self.last_cause
        else:
            found = self.cause_ids.get(id(exc))
            if found is None:
                c = len(self.causes)
                self.causes.append(exc)
                self.cause_ids[id(exc)] = c
            else:
                c = found
            self.last_exc = exc
            self.last_cause = c
        if self.nruns:
            r = &self.runs[self.nruns - 1]
            if r.end == index and r.cause == c:
                r.end += 1
                return 0
        if self.nruns == self.cap:
            cap = max(16, self.cap + self.cap // 2)
            r = <_FailRun *>realloc(self.runs, cap * sizeof(_FailRun))
            if r == NULL:
                raise MemoryError()
            self.runs = r
            self.cap = cap
        r = &self.runs[self.nruns]
        r.start = index
        r.end = index + 1
        r.cause = c
        self.nruns += 1
        return 0

    cdef Failures view(self):
        """The failures in index order (a sorted copy of the runs)."""
        cdef Failures f = Failures.__new__(Failures)
        cdef Py_ssize_t i
        cdef int64_t total = 0
        f.causes = self.causes
        if self.nruns:
            f.runs = <_FailRun *>malloc(self.nruns * sizeof(_FailRun))
            f.ends = <int64_t *>malloc(self.nruns * sizeof(int64_t))
            if f.runs == NULL or f.ends == NULL:
                raise MemoryError()
            memcpy(f.runs, self.runs, self.nruns * sizeof(_FailRun))
            f.nruns = self.nruns
            qsort(f.runs, f.nruns, sizeof(_FailRun), _run_cmp)
            for i in range(f.nruns):
                total += f.runs[i].end - f.runs[i].start
                f.ends[i] = total
        f.n = total
        return f


cdef class Failures:
    """A batch's failed messages as a read-only sequence of ``(index, exception)``
    pairs in index order (``BatchReport.errors``).  Messages that failed for the
    same reason share one exception object; pairs are built as they are read."""

    def __cinit__(self):
        self.runs = NULL
        self.ends = NULL

    def __dealloc__(self):
        free(self.runs)
        free(self.ends)

    def __init__(self):
        raise TypeError("Failures is created by a BatchFuture's report")

    def __len__(self):
        return self.n

    def __bool__(self):
        return self.n > 0

    cdef tuple _at(self, int64_t k):
        # The run holding the k-th failure: binary search over the running totals.
        cdef Py_ssize_t lo = 0, hi = self.nruns - 1, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.ends[mid] > k:
                hi = mid
            else:
                lo = mid + 1
        cdef int64_t before = self.ends[lo] - (self.runs[lo].end - self.runs[lo].start)
        return (self.runs[lo].start + (k - before), self.causes[self.runs[lo].cause])

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._at(k) for k in range(*index.indices(self.n))]
        k = _operator.index(index)
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError("failure index out of range")
        return self._at(k)

    def __iter__(self):
        cdef Py_ssize_t i
        cdef int64_t j
        for i in range(self.nruns):
            exc = self.causes[self.runs[i].cause]
            for j in range(self.runs[i].start, self.runs[i].end):
                yield (j, exc)

    def __eq__(self, other):
        if isinstance(other, (Failures, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __reduce__(self):
        # Pickled (a report sent between processes) as the plain list it reads as.
        return (list, (list(self),))

    def __repr__(self):
        head = ", ".join(f"({i}, {e.name})" for i, e in self[:3])
        return f"<Failures {self.n} [{head}{', ...' if self.n > 3 else ''}]>"


_abc.Sequence.register(Failures)
