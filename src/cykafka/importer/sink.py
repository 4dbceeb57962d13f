"""The bulk path: chunks into ``produce_batch``, each row's outcome into the result.

A bounded number of batches wait for their delivery reports (the memory kept for
dead-letter rows stays bounded; librdkafka's own queue limit bounds the rest).  Every
row handed in ends with one of the three fates of :mod:`~cykafka.importer.fates`:
delivered, not sent, or unknown.  After Ctrl-C the producer is purged
(:meth:`Sink.finish`'s ``purge``) so that the rows still queued come back as "not sent"
with proof, instead of all being guessed at: nothing is lost silently, and nothing is
called "not sent" that may be in the topic.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

from ..inputs.model import Chunk, Headers, Problem
from .fates import NOT_SENT, UNKNOWN, fate_of, is_batch_mate
from .summary import ImportResult

if TYPE_CHECKING:
    from .._native import BatchFuture, BatchReport
    from ..producer import Producer

__all__ = ["Sink"]

#: Batches queued whose outcome is still unknown (2 MB text blocks: 64 MB of input) ...
MAX_PENDING = 32
#: ... and rows (eight Parquet batches of 65,536 rows).  Either bound settles the oldest;
#: both stay well above librdkafka's queue (100,000 messages), which they must not starve.
MAX_PENDING_ROWS = 1 << 19


#: Refusals that say this principal lost a right it needs for every row that follows
#: (an ACL deleted mid-run): the import stops at the first instead of sending the rest
#: to the same refusal, row by row, into the dead letters.
RIGHTS_REFUSED = frozenset(
    {
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    }
)


T = TypeVar("T")

#: How many times a row failed only for a batch-mate's sake is sent again: a resend can
#: share a librdkafka batch with another refused record of a later chunk.
MAX_RESENDS = 3


@dataclass
class _Resent:
    """A chunk of re-sent batch-mates: its attempt, and per partition the lowest offset
    written since they were refused by a row later in the input."""

    attempt: int
    later_min: dict[int, int] = field(default_factory=dict)


def take(chunk: Chunk, idx: list[int]) -> Chunk:
    """Rows ``idx`` (ascending) of ``chunk`` as a chunk of their own, same positions."""
    import numpy as np

    def pick(col: Optional[Sequence[T]]) -> Optional[list[T]]:
        return None if col is None else [col[i] for i in idx]

    offsets, lines = chunk.offset_array(), chunk.line_array()
    rows = np.array([chunk.row_of(i) for i in idx], dtype=np.int64)
    return Chunk(
        [chunk.item(chunk.values, i) for i in idx],
        keys=None if chunk.keys is None else [chunk.item(chunk.keys, i) for i in idx],
        partitions=pick(chunk.partitions),
        headers=pick(chunk.headers),
        timestamps=pick(chunk.timestamps),
        file=chunk.file,
        first_row=int(rows[0]),
        rows=rows,
        lines=None if lines is None else [int(lines[i]) for i in idx],
        offsets=None if offsets is None else [int(offsets[i]) for i in idx],
        row_group=chunk.row_group,
        group_first=chunk.group_first + int(rows[0]) - chunk.first_row,
        end=chunk.end,
        bytes_done=chunk.bytes_done,
    )


def _last_delivered(n: int, failed: list[int]) -> int:
    """The highest index of ``n`` rows not among ``failed`` (ascending); -1: none."""
    j = n - 1
    for k in reversed(failed):
        if k != j:
            break
        j -= 1
    return j


def _error_text(exc: BaseException) -> str:
    return f"{getattr(exc, 'name', type(exc).__name__)}: {getattr(exc, 'message', str(exc))}"


class Sink:
    def __init__(
        self,
        producer: Producer,
        topic: str,
        result: ImportResult,
        report: Callable[[Problem], None],
        on_delivered: Optional[Callable[[Chunk, BatchReport], None]] = None,
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.result = result
        self.report = report
        #: Called with each chunk and its batch report, in input order, once settled
        #: (where an exactly-once import records its progress).
        self.on_delivered = on_delivered
        self.pending: collections.deque[tuple[BatchFuture, Chunk]] = collections.deque()
        self.pending_rows = 0  # rows of the chunks in pending (send's bound; finish ignores it)
        #: Read and handed to produce_batch, which raised without saying which rows it
        #: queued: their fate is unknown.
        self.unsent: Optional[Chunk] = None
        #: Set by a stop signal (:class:`~cykafka.importer.signals.StopSignals`): stop waiting.
        self.stop: Optional[threading.Event] = None
        #: Headers added to every message (``-H``).
        self.static_headers: list[tuple[str, bytes]] = []
        #: Called when a row sent through the current producer timed out
        #: (_MSG_TIMED_OUT): the import replaces a producer that a broker stall longer
        #: than message.timeout.ms left stuck (an idempotent producer whose epoch bump
        #: the broker refuses never sends again).
        self.on_timed_out: Optional[Callable[[], None]] = None
        #: Called once with the first refusal of a right (:data:`RIGHTS_REFUSED`).
        self.on_right_refused: Optional[Callable[[BaseException], None]] = None
        #: The rows of the inputs before the chunk being sent (set by the loop): with a
        #: row's number in its file, its place in the whole input.
        self.rows_before = 0
        #: id(chunk) -> (rows_before, the partition it was sent to) when it was sent.
        self._bases: dict[int, tuple[int, Optional[int]]] = {}
        #: id(chunk) -> what a chunk of re-sent batch-mates needs to be judged by.
        self._resent: dict[int, _Resent] = {}
        #: Over every settled row, in the whole input's numbering: the last delivered and
        #: the first not delivered (rows before it: a --skip-rows that re-reads it), and
        #: whether any was unknown.  When every failure comes after every delivery, the
        #: import can be finished by re-reading from the first failure on.
        self.last_delivered_row = 0
        self.first_failed_before: Optional[int] = None
        self.any_unknown = False
        self._sent = 0  # batches handed to produce_batch ...
        self._settled = 0  # ... and settled, in the same order
        self._current_from = 0  # the first batch sent through the current producer

    def send(self, chunk: Chunk, partition: Optional[int] = None) -> None:
        parts = chunk.partitions
        if partition is not None and parts is None:
            parts = [partition] * len(chunk)
        self._bases[id(chunk)] = (self.rows_before, partition)
        headers = self._headers(chunk.headers, len(chunk))
        try:
            fut = self.producer.produce_batch(
                self.topic,
                chunk.values,
                chunk.keys,
                partitions=parts,
                timestamps=chunk.timestamps,
                headers=headers,
            )
        except BaseException as e:
            # The part already queued (and the rest, failed) rides on it.
            queued = getattr(e, "batch", None)
            if queued is not None:
                self.pending.append((queued, chunk))
                self.pending_rows += len(chunk)
                self._sent += 1
            else:
                self.unsent = chunk
            raise
        self.pending.append((fut, chunk))
        self.pending_rows += len(chunk)
        self._sent += 1
        while self.pending and (
            len(self.pending) > MAX_PENDING
            or self.pending_rows > MAX_PENDING_ROWS
            or self.pending[0][0].done()
        ):
            fut = self.pending[0][0]
            while self.stop is not None and not fut.done():
                if self.stop.is_set():
                    return  # stopping: finish() settles the rest
                try:  # short waits: Ctrl-C is seen at once
                    fut.result(0.1)
                except TimeoutError:
                    pass
            self._settle(*self.pending[0])  # popped only once settled: Ctrl-C may come
            self.pending_rows -= len(self.pending.popleft()[1])

    def _flush(self, fut: BatchFuture, timeout: float) -> None:
        """Wait up to ``timeout`` (short: Ctrl-C is seen at once) for ``fut``, with the
        producer's ``flush()``: the input is over, and librdkafka's flush "overrides
        the linger.ms setting for the duration of the flush() call, effectively
        triggering immediate transmission" (its CHANGELOG, 1.5.0), where waiting on
        the future would hold the last partial batch for linger.ms."""
        try:
            self.producer.flush(timeout)
        except Exception:  # closed meanwhile (Ctrl-C purges it): wait on the future
            try:
                fut.result(timeout)
            except TimeoutError:
                pass

    def _settle(self, fut: BatchFuture, chunk: Chunk, timeout: Optional[float] = None) -> None:
        rep = fut.result(timeout)
        seq, self._settled = self._settled, self._settled + 1
        r = self.result
        r.delivered += rep.delivered
        for p, lo in rep.first_offsets.items():
            if p not in r.first_offsets or lo < r.first_offsets[p]:
                r.first_offsets[p] = lo
        for p, hi in rep.last_offsets.items():
            if p not in r.last_offsets or hi > r.last_offsets[p]:
                r.last_offsets[p] = hi
        base, partition = self._bases.pop(id(chunk), (0, None))
        again = self._resent.pop(id(chunk), None)
        self._order(rep, again)
        failed: list[int] = []
        mates: list[tuple[int, BaseException]] = []
        refused_right: Optional[BaseException] = None
        may_resend = self.on_delivered is None and (again is None or again.attempt < MAX_RESENDS)
        for index, exc in rep.errors:
            if may_resend and is_batch_mate(exc):
                mates.append((index, exc))
                continue
            failed.append(index)
            if refused_right is None and getattr(exc, "name", "") in RIGHTS_REFUSED:
                refused_right = exc
            self._failed(chunk, index, exc)
        if mates and not self._resend(chunk, mates, base, partition, rep, again):
            for index, mate in mates:
                failed.append(index)
                self._failed(chunk, index, mate)
            failed.sort()
        self._note_rows(chunk, base, failed)
        if refused_right is not None and self.on_right_refused is not None:
            self.on_right_refused(refused_right)
        if self.on_delivered is not None:
            self.on_delivered(chunk, rep)
        if (
            self.on_timed_out is not None
            and seq >= self._current_from
            and any(getattr(exc, "name", "") == "_MSG_TIMED_OUT" for _, exc in rep.errors)
        ):
            self._current_from = self._sent  # what is queued now went to the old one
            self.on_timed_out()

    def _failed(self, chunk: Chunk, index: int, exc: BaseException) -> None:
        """Row ``index`` of ``chunk`` not delivered: counted by its fate and reported."""
        r = self.result
        fate = fate_of(exc)
        if fate == NOT_SENT:
            r.not_sent += 1
        else:
            r.unknown += 1
            self.any_unknown = True
        pos = chunk.position(index)
        self.report(
            Problem(
                chunk.file,
                "delivery",
                _error_text(exc),
                line=pos.line,
                row=pos.row,
                offset=pos.offset,
                key=chunk.item(chunk.keys, index),
                value=chunk.item(chunk.values, index),
                fate=fate,
            )
        )

    def _resend(
        self,
        chunk: Chunk,
        mates: list[tuple[int, BaseException]],
        base: int,
        partition: Optional[int],
        rep: BatchReport,
        again: Optional[_Resent],
    ) -> bool:
        """Send again the rows librdkafka failed for a batch-mate's sake: the broker
        appended none of their batch (KIP-467's record_errors name the refused records;
        librdkafka 2.16 fails every record of the batch with their code).  Appended to
        the pending batches, settled in turn; False when the producer takes nothing
        (stopping, closed): the rows are then reported as they failed."""
        idx = [i for i, _ in mates]
        part = take(chunk, idx)
        parts = part.partitions
        if partition is not None and parts is None:
            parts = [partition] * len(part)
        headers = self._headers(part.headers, len(part))
        if self.stop is not None and self.stop.is_set():
            return False
        try:
            fut = self.producer.produce_batch(
                self.topic,
                part.values,
                part.keys,
                partitions=parts,
                timestamps=part.timestamps,
                headers=headers,
            )
        except Exception:
            return False
        # Rows of this partition after the refused batch's (later librdkafka batches of
        # this chunk, later chunks) may be written before these: said, per resend.
        errs = [i for i, _ in rep.errors]
        later = dict(rep.first_offsets) if _last_delivered(len(chunk), errs) > idx[0] else {}
        if again is not None:
            for p, lo in again.later_min.items():
                later[p] = min(lo, later.get(p, lo))
        self._resent[id(part)] = _Resent(
            attempt=1 if again is None else again.attempt + 1, later_min=later
        )
        self._bases[id(part)] = (base, None)
        self.pending.append((fut, part))
        self.pending_rows += len(part)
        self._sent += 1
        self.result.resent += len(part)
        return True

    def _order(self, rep: BatchReport, again: Optional[_Resent]) -> None:
        """Per-partition order of re-sent rows: a resend settled whose rows were
        written after a later row of their partition (an offset below theirs, from a
        chunk sent after the one they were refused with) is counted out of order."""
        if again is not None:
            if any(again.later_min.get(p, lo) < lo for p, lo in rep.first_offsets.items()):
                self.result.resent_out_of_order += rep.delivered
            return
        for other in self._resent.values():
            for p, lo in rep.first_offsets.items():
                other.later_min[p] = min(lo, other.later_min.get(p, lo))

    def _note_rows(self, chunk: Chunk, base: int, failed: list[int]) -> None:
        """Where this chunk's delivered and failed rows sit in the whole input."""
        last = _last_delivered(len(chunk), failed)
        if last >= 0:
            self.last_delivered_row = max(self.last_delivered_row, base + chunk.row_of(last))
        if failed:
            before = base + chunk.row_of(failed[0]) - 1
            if self.first_failed_before is None or before < self.first_failed_before:
                self.first_failed_before = before

    def clean_cut(self) -> Optional[int]:
        """The rows of the input before the first row not delivered, when every row
        after them is not sent (none unknown) or not read: a rerun that skips exactly
        these sends every other row once.  None when a delivered row comes after a
        failed one, or a failed row may be in the topic."""
        at = self.first_failed_before
        if at is None or self.any_unknown or self.unsent is not None:
            return None
        return at if self.last_delivered_row <= at else None

    def _unconfirmed(self, chunk: Chunk, reason: str) -> None:
        """Rows handed over whose report cannot be had: each goes to the problems (and
        the dead-letter file) as "unknown".  Some may be in the topic."""
        keys, values = chunk.items(chunk.keys), chunk.items(chunk.values)
        self.result.unknown += len(chunk)
        self.any_unknown = True
        for i in range(len(chunk)):
            self.report(
                chunk.problem(
                    i,
                    "delivery",
                    f"no delivery report: {reason}",
                    key=keys[i],
                    value=values[i],
                    fate=UNKNOWN,
                )
            )

    def _settle_all(
        self, deadline: Optional[float], stop: Optional[threading.Event] = None
    ) -> Optional[str]:
        """Settle queued batches in order until ``deadline`` (or ``stop`` is set); None
        when all are, else why the rest are not: "timeout", "stop" or an error."""
        r = self.result
        while self.pending:
            fut, chunk = self.pending[0]
            try:
                while True:
                    left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                    if stop is None:
                        break
                    if stop.is_set():
                        return "stop"
                    if fut.done() or left == 0.0:
                        break
                    self._flush(fut, 0.1 if left is None else min(left, 0.1))
                self._settle(fut, chunk, left)
            except TimeoutError:
                return "timeout"
            except KeyboardInterrupt:
                r.interrupted = True
                return "a second stop signal while waiting"
            except Exception as e:  # the delivery reports cannot be had
                if r.fatal is None:
                    r.fatal = f"{type(e).__name__}: {e}"
                return r.fatal
            self.pending.popleft()
        return None

    def _headers(self, headers: Optional[Headers], n: int) -> Optional[Headers]:
        """A part's headers with ``--header`` ones (the same on every row) after them."""
        if not self.static_headers:
            return headers
        extra = self.static_headers
        return [extra] * n if headers is None else [[*h, *extra] for h in headers]

    def finish(
        self,
        wait_s: Optional[float],
        purge: Optional[Callable[[], object]] = None,
        stop: Optional[threading.Event] = None,
        stop_wait_s: float = 2.0,
    ) -> None:
        """Settle every queued batch, waiting at most ``wait_s`` in all (None: for ever,
        or until ``stop`` is set: then ``stop_wait_s`` more).  Then, with ``purge`` (a
        call that purges the producer: every message it still holds gets its report,
        _PURGE_QUEUE for those never sent), settle the rest from those reports; what
        still has none is reported unknown."""
        r = self.result
        deadline = None if wait_s is None else time.monotonic() + wait_s
        why = self._settle_all(deadline, stop)
        if why == "stop":  # a stop signal while waiting for the last reports
            r.interrupted = True
            wait_s = stop_wait_s
            why = self._settle_all(time.monotonic() + wait_s)
        if why == "timeout" and purge is not None:
            try:
                purge()
                why = self._settle_all(time.monotonic() + 10.0)
            except KeyboardInterrupt:
                r.interrupted = True
                why = "a second stop signal while purging"
            except Exception as e:
                why = f"the producer could not be purged ({type(e).__name__}: {e})"
        if why == "timeout":
            why = f"none within {wait_s:g} s" if wait_s is not None else "none"
        while self.pending:
            self._unconfirmed(self.pending.popleft()[1], why or "none")
        if self.unsent is not None:  # after the queued ones: it was read last
            self._unconfirmed(self.unsent, "the batch stopped without saying which rows it queued")
            self.unsent = None
