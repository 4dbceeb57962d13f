"""Rows into transactions, each committing its rows and its progress record together.

Rows go out through the import's :class:`~cykafka.importer.sink.Sink` (partition
override, static headers, per-row outcomes), but into a result and a problem list of the
open transaction.  Problems (malformed rows, delivery failures) are held until the
transaction that covers their row commits: they are written to the dead-letter file just
before the commit, whose progress record carries the file's size then.  An aborted
transaction's rows are read and sent again, and a resumed run cuts the dead-letter file
back to the committed size, so no rejected row is lost or listed twice.

A row the broker refuses for good (too large, invalid) makes the whole commit fail; it
is reported with the commit that covers it, and skipped when the transaction is tried
again, so one bad row cannot stall the import.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Callable, Optional

from ..inputs.model import Chunk, ImportInputError, Problem, SourcePosition
from .fates import is_batch_mate
from .identity import block_digest
from .progress_records import Progress, committed_progress
from .signals import StopRequested
from .sink import Sink
from .summary import ImportResult

if TYPE_CHECKING:
    from ..cluster.committed import CommittedReader
    from ..producer import Producer
    from .deadletter import DeadLetter

__all__ = [
    "PERMANENT_ERRORS",
    "STOP_COMMIT_S",
    "BrokerDoesNotFence",
    "ProgressLost",
    "TransactionalSink",
]

#: After a stop signal, how long the commit of the open transaction may take: within
#: the grace schedulers give before SIGKILL (Kubernetes 30 s, systemd 90 s).
STOP_COMMIT_S = 10.0


class BrokerDoesNotFence(ImportInputError):
    """A commit the broker acknowledged is not what its committed log shows."""


class ProgressLost(ImportInputError):
    """Progress this run saw committed is gone from the broker (its log was lost)."""


def progress_lost(progress_topic: str, exists: bool) -> ProgressLost:
    """The error for a progress topic that no longer holds the last record this run
    committed to it (compaction never removes a key's last record), or is gone."""
    what = (
        "no longer holds the last progress record of this import (this run had read or "
        "committed it)"
        if exists
        else "no longer exists (this run had created or read it)"
    )
    return ProgressLost(
        f"the progress topic {progress_topic!r} {what}: the broker lost its log (restarted without "
        "durable storage, or the topics were deleted meanwhile), and the rows committed "
        "with those records are most likely gone from the topic too.  This is not "
        "fencing or a concurrent import.  Stopped; read the topic (cykafka verify) "
        "before you rerun, with --restart if its rows are gone"
    )


#: Delivery errors no retry can fix: the row is reported and skipped.
PERMANENT_ERRORS = frozenset(
    {
        "MSG_SIZE_TOO_LARGE",
        "_MSG_SIZE_TOO_LARGE",
        "INVALID_RECORD",
        "INVALID_MSG",
        "CORRUPT_MESSAGE",
        "INVALID_TIMESTAMP",
        "_UNKNOWN_PARTITION",
    }
)


class TransactionalSink:
    """One producer's transactions, from the committed ``state`` on."""

    def __init__(
        self,
        producer: Producer,
        topic: str,
        progress_topic: str,
        key: str,
        state: Progress,
        result: ImportResult,
        report: Callable[[Problem], None],
        skip: dict[tuple[str, int], tuple[int, Optional[Problem]]],
        *,
        commit_rows: int,
        commit_seconds: float,
        timeout: float,
        partition: Optional[int] = None,
        static_headers: Optional[list[tuple[str, bytes]]] = None,
        dead_letter: Optional[DeadLetter] = None,
        names: Optional[list[str]] = None,
        slice_rows: Optional[int] = None,
        client: Optional[Mapping[str, object]] = None,
        seen: Sequence[Optional[bytes]] = (),
        reader: Optional[CommittedReader] = None,
        stop: Optional[threading.Event] = None,
    ) -> None:
        self.producer, self.topic, self.progress_topic, self.key = (
            producer,
            topic,
            progress_topic,
            key,
        )
        self.state = state  # the last committed state
        self.result, self.report, self.skip = result, report, skip
        self.commit_rows, self.commit_seconds, self.timeout = commit_rows, commit_seconds, timeout
        self.partition = partition
        self.static_headers = list(static_headers or [])
        self.dead_letter = dead_letter
        self.names = list(names or [])  # input names, by index (as chunks name them)
        self.slice_rows = slice_rows  # rows sent before the clock is looked at again
        #: problems the readers found, (input index, problem), until their rows commit
        self._read: list[tuple[int, Problem]] = []
        self._lock = threading.Lock()  # the reader thread reports too
        self._released: list[tuple[str, int]] = []  # skipped rows reported by this commit
        self.transactions = 0
        self.open_rows = 0  # rows in the open transaction
        #: Where each commit is confirmed from the committed view (None: not confirmed),
        #: read with ``reader`` when given (one consumer for every confirmation).
        self.client = client
        self.reader = reader
        #: The committed progress records of this import as read when ``state`` was
        #: (after init_transactions fenced any earlier run): each commit must add one.
        self.seen = list(seen)
        #: Called with the progress about to be committed, the input index and whether
        #: that input is done: fills in what is known only later (content digests).
        self.before_commit: Callable[[Progress, int, bool], None] = lambda new, i, done: None
        self._began: Optional[float] = None
        #: Set by a stop signal: the open transaction is due at once, and once it is
        #: committed (or aborted) the import stops with :class:`StopRequested`.
        self.stop = stop
        self._fresh()

    def _fresh(self) -> None:
        r = self.result
        self._res = ImportResult(r.topic, r.files, r.fmt, r.bootstrap_servers)
        self._problems: list[Problem] = []
        self._sink = Sink(self.producer, self.topic, self._res, self._problems.append)
        self._sink.static_headers = self.static_headers

    def read_problem(self, index: int, p: Problem) -> None:
        with self._lock:
            self._read.append((index, p))

    def room(self) -> int:
        """Rows to send before asking :meth:`due` again: what the open transaction takes
        before it is due, in slices when rows are paced (``--rate``)."""
        room = max(1, self.commit_rows - self.open_rows)
        return room if self.slice_rows is None else min(room, self.slice_rows)

    def send(self, chunk: Chunk) -> None:
        if self._began is None:
            self.producer.begin_transaction()
            self._began = time.monotonic()
        for part in self._without_skipped(chunk):
            self._sink.send(part, self.partition)
        self.open_rows += len(chunk)

    def _without_skipped(self, chunk: Chunk) -> Iterator[Chunk]:
        if not self.skip or not any(
            (chunk.file, chunk.row_of(i)) in self.skip for i in range(len(chunk))
        ):
            yield chunk
            return
        a = 0
        for i in range(len(chunk) + 1):
            if i == len(chunk) or (chunk.file, chunk.row_of(i)) in self.skip:
                if i > a:
                    yield chunk.slice(a, i)
                a = i + 1

    def due(self) -> bool:
        return self._began is not None and (
            self.open_rows >= self.commit_rows
            or time.monotonic() - self._began >= self.commit_seconds
            or self._stopping()
        )

    def _stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def commit(self, index: int, pos: Optional[SourcePosition], done: bool) -> None:
        """Commit the open transaction (begun now if none is open) with input ``index``
        read up to ``pos`` (the first row not in it; None: unchanged) and ``done``."""
        from .._native import KafkaError

        new = copy.deepcopy(self.state)
        fp = new.files[index]
        if pos is not None:
            fp.row, fp.offset, fp.line = pos.row, pos.offset, pos.line
            fp.row_group, fp.group_row = pos.row_group, pos.group_row
            # Standard input has no file to read the block before the position from
            # (nor a fingerprint: it is read from its first row, never resumed).
            on_file = bool(fp.identity.fingerprint)
            fp.before = (
                block_digest(fp.identity.path, pos.offset) if pos.offset and on_file else None
            )
        fp.done = done
        new.rows += self.open_rows
        new.done = all(f.done for f in new.files)
        self.before_commit(new, index, done)
        if self._began is None:
            self.producer.begin_transaction()
        r = self.result
        counts = (r.problem_count, r.malformed, len(r.problems), r.not_sent, r.unknown, r.refused)
        stopping = self._stopping()
        timeout = min(self.timeout, STOP_COMMIT_S) if stopping else self.timeout
        try:
            # Every delivery report first: failed rows are reported with this commit.
            self.producer.flush(timeout)
            self._sink.finish(timeout)
            for p in self._release(index, fp.row, done):
                self.report(p)
            if self.dead_letter is not None:
                new.dead_letter_bytes = self.dead_letter.size()
            self.producer.produce(self.progress_topic, new.to_json(), key=self.key.encode())
            self.producer._commit_or_abort(timeout)
            if self.client is not None:
                self._confirm(new)
        except KafkaError as e:
            # Not committed: these problems come again with the rows.  (The dead-letter
            # file is cut back when the transaction is tried again.)
            r.problem_count, r.malformed, r.refused = counts[0], counts[1], counts[5]
            r.not_sent, r.unknown = counts[3], counts[4]
            del r.problems[counts[2] :]
            self._released.clear()
            if stopping:
                # The rows of the open transaction: aborted (not in the committed
                # view) or, when the commit's outcome is unknown, unknown.  The rerun
                # sends again whatever did not commit.
                if getattr(e, "txn_requires_abort", False):
                    r.not_sent += self.open_rows
                else:
                    r.unknown += self.open_rows
                raise StopRequested from e
            self._learn_permanent_failures()
            raise
        self._merge()
        for key in self._released:  # reported once, though the row stays skipped
            self.skip[key] = (self.skip[key][0], None)
        self._released.clear()
        self.state = new
        self.transactions += 1
        self.open_rows = 0
        self._began = None
        self._fresh()
        if stopping and not new.done:
            raise StopRequested

    def abort(self) -> None:
        """After a failure: abort the open transaction, so that closing the producer
        finds none (its warning about one is advice for a Python caller, not for an
        import that retries from its last commit).  A producer that cannot abort
        (fenced, fatal) leaves it to its close, and the broker."""
        from .._native import KafkaError

        if self._began is None:
            return
        try:
            self.producer.abort_transaction(self.timeout)
            self._began = None
        except KafkaError:
            pass

    def _committed(self) -> list[Optional[bytes]]:
        assert self.client is not None
        return committed_progress(
            self.client, self.progress_topic, self.key, self.timeout, reader=self.reader
        )

    def _confirm(self, new: Progress) -> None:
        """After a commit the broker acknowledged: the committed view of the progress
        topic must be what it was plus this commit's record, exactly.  On Kafka it is
        (KIP-98: a producer fenced by a newer one of the same transactional.id cannot
        write or commit).  A broker that accepts a fenced producer's writes, or
        acknowledges a commit its log shows aborted, fails here: the import stops
        instead of counting rows that may be missing or twice in the topic."""
        mine = new.to_json()
        try:
            seen = self._committed()
            # Kafka writes a transaction's markers after it acknowledges the commit:
            # while the log still shows a transaction without its marker, read again.
            deadline = time.monotonic() + self.timeout
            wait = 0.005
            while (
                seen != [*self.seen, mine]
                and self.reader is not None
                and self.reader.saw_open
                and time.monotonic() < deadline
            ):
                time.sleep(wait)
                wait = min(wait * 2, 0.1)
                seen = self._committed()
        except LookupError:  # the progress topic, created before this run began, is gone
            self.result.unknown += self.open_rows
            raise progress_lost(self.progress_topic, False) from None
        except Exception:
            # Acknowledged, not confirmed (the log could not be read): the rows' fate
            # is unknown.
            self.result.unknown += self.open_rows
            raise
        if self.seen and self.seen[-1] not in seen:
            self.result.unknown += self.open_rows
            raise progress_lost(self.progress_topic, True)
        if seen == [*self.seen, mine]:
            self.seen = seen
            return
        self.result.unknown += self.open_rows  # committed or not: the log cannot say
        if mine not in seen[len(self.seen) :]:
            what = "its progress record is not in the committed log (the log shows it aborted)"
        else:
            what = "another producer of this import committed progress in between"
        raise BrokerDoesNotFence(
            f"the broker acknowledged the commit of transaction {self.transactions + 1} of "
            f"transactional.id {self.key!r}, but {what}: this broker does not fence "
            "transactional producers as Kafka does (KIP-98), or another run of this "
            "import is going on.  Stopped; rows of this transaction may be missing or "
            "twice in the topic (cykafka verify checks).  Run one import at a time, on a "
            "broker that fences (docs/tansu.md)"
        )

    def _release(self, index: int, row: int, done: bool) -> list[Problem]:
        """The problems of rows this commit covers: found by the readers, refused for
        good earlier (skipped rows), and this transaction's delivery failures."""

        def covered(i: int, p: Problem) -> bool:
            return i < index or (i == index and (done or p.row is None or p.row < row))

        with self._lock:
            out = [p for i, p in self._read if covered(i, p)]
            self._read = [(i, p) for i, p in self._read if not covered(i, p)]
        for key, (i, refused) in self.skip.items():
            if refused is not None and covered(i, refused):
                out.append(refused)
                self.result.not_sent += 1  # refused for good: not written
                self._released.append(key)
        out.extend(self._problems)
        return sorted(out, key=lambda p: (p.file, p.row or 0))

    def _merge(self) -> None:
        r, t = self.result, self._res
        r.delivered += t.delivered
        r.not_sent += t.not_sent
        r.unknown += t.unknown
        for p, lo in t.first_offsets.items():
            r.first_offsets[p] = min(lo, r.first_offsets.get(p, lo))
        for p, hi in t.last_offsets.items():
            r.last_offsets[p] = max(hi, r.last_offsets.get(p, hi))

    def _learn_permanent_failures(self) -> None:
        """After a failed commit: rows refused for good are reported and skipped from
        now on; the others are sent again, a refused record's batch-mates too (they
        carry its code, but the broker refused the record, not them)."""
        self._sink.finish(min(self.timeout, 5.0))
        for p in self._problems:
            permanent = p.error.split(":", 1)[0] in PERMANENT_ERRORS
            if permanent and not is_batch_mate(p.error) and p.row is not None:
                self.skip[(p.file, p.row)] = (self.names.index(p.file), p)
