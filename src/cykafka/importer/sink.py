"""The bulk path: chunks into ``produce_batch``, each row's outcome into the result.

A bounded number of batches wait for their delivery reports (the memory kept for
dead-letter rows stays bounded; librdkafka's own queue limit bounds the rest).  Every
row handed in ends delivered, failed with its error, or -- when its report cannot be
had (Ctrl-C, a fatal error) -- reported unconfirmed: nothing is lost silently.
"""

from __future__ import annotations

import collections
import time
from typing import Any, Callable, Optional

from .model import Chunk, Problem
from .summary import ImportResult

__all__ = ["Sink"]

#: Batches queued whose outcome is still unknown (2 MB text blocks: 64 MB of input) ...
MAX_PENDING = 32
#: ... and rows (eight Parquet batches of 65,536 rows).  Either bound settles the oldest;
#: both stay well above librdkafka's queue (100,000 messages), which they must not starve.
MAX_PENDING_ROWS = 1 << 19


def _error_text(exc: Any) -> str:
    return f"{getattr(exc, 'name', type(exc).__name__)}: {getattr(exc, 'message', str(exc))}"


class Sink:
    def __init__(
        self,
        producer: Any,
        topic: str,
        result: ImportResult,
        report: Callable[[Problem], None],
        on_delivered: Optional[Callable[[Chunk, Any], None]] = None,
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.result = result
        self.report = report
        #: Called with each chunk and its batch report, in input order, once settled
        #: (where an exactly-once import records its progress).
        self.on_delivered = on_delivered
        self.pending: collections.deque[tuple[Any, Chunk]] = collections.deque()
        self.pending_rows = 0  # rows of the chunks in pending (send's bound; finish ignores it)
        self.unsent: Optional[Chunk] = None  # read, but not queued when produce_batch raised
        #: Headers added to every message (``-H``).
        self.static_headers: list[tuple[str, bytes]] = []

    def send(self, chunk: Chunk, partition: Optional[int] = None) -> None:
        parts = chunk.partitions
        if partition is not None and parts is None:
            parts = [partition] * len(chunk)
        headers = chunk.headers
        if self.static_headers:
            extra = self.static_headers
            headers = (
                [extra] * len(chunk) if headers is None else [list(h) + extra for h in headers]
            )
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
            else:
                self.unsent = chunk
            raise
        self.pending.append((fut, chunk))
        self.pending_rows += len(chunk)
        while self.pending and (
            len(self.pending) > MAX_PENDING
            or self.pending_rows > MAX_PENDING_ROWS
            or self.pending[0][0].done()
        ):
            self._settle(*self.pending[0])  # popped only once settled: Ctrl-C may come
            self.pending_rows -= len(self.pending.popleft()[1])

    def _settle(self, fut: Any, chunk: Chunk, timeout: Optional[float] = None) -> None:
        rep = fut.result(timeout)
        r = self.result
        r.delivered += rep.delivered
        r.failed += rep.failed
        for p, lo in rep.first_offsets.items():
            if p not in r.first_offsets or lo < r.first_offsets[p]:
                r.first_offsets[p] = lo
        for p, hi in rep.last_offsets.items():
            if p not in r.last_offsets or hi > r.last_offsets[p]:
                r.last_offsets[p] = hi
        for index, exc in rep.errors:
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
                )
            )
        if self.on_delivered is not None:
            self.on_delivered(chunk, rep)

    def _unconfirmed(self, chunk: Chunk, reason: str) -> None:
        """Rows read whose outcome is unknown: each goes to the problems (and the
        dead-letter file).  Some may still have been delivered: their delivery report
        never arrived."""
        keys, values = chunk.items(chunk.keys), chunk.items(chunk.values)
        for i in range(len(chunk)):
            self.report(
                Problem(
                    chunk.file,
                    "delivery",
                    f"unconfirmed: {reason}",
                    line=chunk.line_of(i),
                    row=chunk.row_of(i),
                    offset=chunk.offset_of(i),
                    key=keys[i],
                    value=values[i],
                )
            )

    def finish(self, wait_s: Optional[float]) -> None:
        """Settle every queued batch (waiting at most ``wait_s`` in all, None: for
        ever); the rest is reported unconfirmed."""
        r = self.result
        deadline = None if wait_s is None else time.monotonic() + wait_s
        waited_out = False
        while self.pending:
            fut, chunk = self.pending[0]
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                self._settle(fut, chunk, left)
            except TimeoutError:
                waited_out = True
                break
            except KeyboardInterrupt:
                r.interrupted = True
                break
            except Exception as e:  # the delivery reports cannot be had
                if r.fatal is None:
                    r.fatal = f"{type(e).__name__}: {e}"
                break
            self.pending.popleft()
        if r.interrupted:
            why = "interrupted (Ctrl-C)"
            if waited_out:
                why += f"; no delivery report within {wait_s:g} s"
        else:
            why = r.fatal or "no delivery report"
        while self.pending:
            self._unconfirmed(self.pending.popleft()[1], why)
        if self.unsent is not None:  # after the queued ones: it was read last
            self._unconfirmed(self.unsent, why + "; never sent")
            self.unsent = None
