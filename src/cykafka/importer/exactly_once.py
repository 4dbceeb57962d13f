"""``cykafka import --exactly-once``: a load that resumes where it stopped.

The rows go out in transactions of a transactional producer.  Each transaction also
writes the position of the first row after it to the progress topic
(:mod:`~cykafka.importer.progress_records`), so rows and position commit or abort
together, as Kafka Connect does for exactly-once sources (KIP-618).

A rerun with the same arguments uses the same ``transactional.id`` (derived from the
topic and the inputs as given): ``init_transactions`` fences the producer of the run that
died and aborts its open transaction; the run then reads the last committed position
(through :mod:`~cykafka.cluster.committed`, which is right on brokers that do not hide
aborted transactions) and reads each file again from there.  A ``read_committed``
consumer sees every row exactly once, in file order.  What a rerun may change and
what it refuses (the identity of an import) is :func:`~.resume_state.check_saved`'s,
with :func:`check_no_orphans` when no progress is recorded: ``docs/import.md``.

The same path recovers within a run: when a transaction fails (a broker stalled past
``transaction.timeout.ms``, a producer fenced after a coordinator change) the run
aborts it or starts a new producer, rereads the committed position and goes on.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from ..cluster.admin import connection_config, ensure_progress_topic
from ..cluster.committed import CommittedReader, partitions_of, transactional_writes
from ..inputs.model import ImportInputError
from .exactly_once_options import cannot_resume
from .identity import content_digest
from .pipeline import pace, prefetch, rows_after, skipping
from .progress_records import committed_progress, last_progress
from .resume_state import (
    Input,
    Outcome,
    ResumeRefused,
    check_saved,
    fresh_state,
    note_start,
    start_position,
    sync_dead_letter,
    unseekable,
)
from .summary import plural
from .txn_sink import TransactionalSink, progress_lost

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ..config.types import JSONValue
    from ..inputs.model import Chunk, Problem, Report, SourcePosition
    from ..inputs.sources import Source
    from ..producer import Producer
    from ..schema_registry.formats import ColumnEncoders
    from .bar import PlainBar, RichBar
    from .deadletter import DeadLetter
    from .exactly_once_options import ExactlyOnce
    from .job import ImportJob
    from .progress_records import Progress
    from .summary import ImportResult

__all__ = ["check_no_orphans", "import_plan", "run_exactly_once"]

# Failed transactions in a row (no commit in between) before the import gives up.
_MAX_RETRIES = 5


def _run_inputs(
    tx: TransactionalSink, inputs: Sequence[Input], on_file: Callable[[int], None]
) -> None:
    """Send every row after the committed state, committing as transactions fill."""
    for index, inp in enumerate(inputs):
        fp = tx.state.files[index]
        if fp.done:
            continue
        on_file(index)
        end = None
        start = start_position(fp) if fp.started else None
        held = functools.partial(tx.read_problem, index)
        for chunk in inp.rows(start, held):
            a, n = 0, len(chunk)
            while a < n:
                b = min(n, a + tx.room())
                tx.send(chunk if (a, b) == (0, n) else chunk.slice(a, b))
                # the place after these rows, not how far the reader got ahead of them
                after = chunk.position(b) if b < n else chunk.end
                inp.on_rows(b - a, chunk.bytes_done if after is None else after.offset or 0)
                a = b
                if tx.due():
                    tx.commit(index, chunk.position(a) if a < n else chunk.end, False)
            end = chunk.end
        tx.commit(index, end, True)  # the file is done, with the rest of its rows


class ContentDigests:
    """The SHA-256 of each input's whole content (:func:`~.identity.content_digest`),
    computed in a thread beside the import, one file after the other in import order,
    and recorded in the progress as it becomes known.  A file's last commit waits
    for its digest, so a finished import records every file's."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(1, thread_name_prefix="cykafka-digest")
        self._futures: dict[str, Future[str]] = {}

    def fill(self, inputs: Sequence[Input], new: Progress, index: int, done: bool) -> None:
        import dataclasses

        for i, (inp, fp) in enumerate(zip(inputs, new.files)):
            if inp.path is None or fp.identity.content is not None:
                continue
            fut = self._futures.get(inp.path)
            if fut is None:
                fut = self._futures[inp.path] = self._pool.submit(content_digest, inp.path)
            if fut.done() or (i == index and done):
                fp.identity = dataclasses.replace(fp.identity, content=fut.result())

    def close(self) -> None:
        for fut in self._futures.values():
            fut.cancel()
        self._pool.shutdown(wait=True)


def check_no_orphans(
    client: Mapping[str, object],
    topic: str,
    progress: str,
    key: str,
    created: bool,
    eo: ExactlyOnce,
) -> None:
    """No progress record for this import: refuse if ``topic`` holds records written
    in transactions by producers that recorded no progress in the progress topic
    (an earlier run of this import whose record is gone would have)."""
    writes = transactional_writes(client, topic, eo.timeout)
    if not writes:
        return
    recorded = transactional_writes(client, progress, eo.timeout) or {}
    orphans = sum(n for pid, n in writes.items() if pid not in recorded)
    if not orphans:
        return
    raise ResumeRefused(
        f"the progress topic {progress!r} holds no record of this import (transactional.id "
        f"{key})" + (", and did not exist: created now" if created else "") + f", but topic "
        f"{topic!r} holds {orphans:,} committed records written in transactions by producers "
        "that left no progress there.  If an earlier --exactly-once run of this import "
        "wrote them, its progress is gone (the progress topic deleted, cleaned up or on "
        "another cluster) and starting over would send them again.  Pass --restart to "
        "import from the first row anyway, or import into another topic"
    )


@dataclass
class _Resume:
    """What the attempts of one exactly-once run share: the cluster's clients, the
    records' description, and what the earlier attempts saw committed."""

    job: ImportJob
    inputs: Sequence[Input]
    fmt: str
    fields: dict[str, JSONValue]
    client: dict[str, object]
    created: bool  # the progress topic did not exist: this run created it
    reader: CommittedReader
    digests: ContentDigests
    commit_seconds: float
    slice_rows: Optional[int]
    #: Rows refused for good, by (input, row): a rewound transaction does not retry them.
    skip: dict[tuple[str, int], tuple[int, Optional[Problem]]] = field(default_factory=dict)
    first: bool = True
    #: The progress records seen committed.
    known: Optional[list[Optional[bytes]]] = None
    #: After this run's producer was fenced: the committed row counts its own commits
    #: can explain (the last one confirmed, or its open transaction's, had that commit
    #: landed).  Any other count means another run of the import committed meanwhile.
    ours: Optional[tuple[int, int]] = None


def run_exactly_once(
    job: ImportJob,
    inputs: Sequence[Input],
    *,
    fmt: str,
    spec: dict[str, JSONValue],
    result: ImportResult,
    report: Callable[[Problem], None],
    new_producer: Callable[[], Producer],
    on_file: Callable[[int], None] = lambda index: None,
    on_rewind: Callable[[int], None] = lambda rows: None,
    dead_letter: Optional[DeadLetter] = None,
    log: Callable[[str], None] = lambda line: None,
    stop: Optional[threading.Event] = None,
    outcome: Optional[Outcome] = None,
) -> Outcome:
    """Import ``inputs`` (the readers of ``job``'s plan) in transactions, resuming from
    the committed progress; rows count into ``result`` as their transaction commits,
    problems go to ``report`` then.  ``fmt`` and ``spec``: what the records are made
    of (a resume must not change it).  ``new_producer()``: the job's transactional
    producer, one an attempt (made by the runner, :mod:`.run`).  ``on_rewind(n)``: an
    aborted transaction's ``n`` rows will be read again (the job's rate paces rows by
    ``Input.on_rows``).  ``dead_letter``: the import's
    :class:`~cykafka.importer.deadletter.DeadLetter` (opened to append), kept in step with
    the commits.  Raises :class:`ResumeRefused` before
    anything is produced when the saved progress cannot be resumed, and the last
    :class:`~cykafka.KafkaError` when transactions keep failing.  ``stop``: set by a
    stop signal; the open transaction is then committed and
    :class:`~cykafka.importer.signals.StopRequested` raised.  ``outcome``: filled in
    as the run goes (what a stopped run did, too)."""
    from .._native import KafkaError

    eo, key = job.exactly_once, job.transactional_id
    assert eo is not None and key is not None, "an exactly-once job (ImportJob.build)"
    if not eo.restart:
        for inp in inputs:
            if not inp.seekable:
                raise ResumeRefused(cannot_resume(inp.name, unseekable(inp)))
    outcome = outcome if outcome is not None else Outcome()
    outcome.transactional_id = key
    run = _start(job, inputs, fmt, spec)
    failures, last_commits = 0, 0
    try:
        while True:
            producer = new_producer()
            tx: list[TransactionalSink] = []  # the attempt's sink, once it has one
            try:
                _attempt(run, producer, tx, result, report, on_file, dead_letter, stop, outcome)
                return outcome
            except KafkaError as e:
                failures = 1 if outcome.transactions > last_commits else failures + 1
                last_commits = outcome.transactions
                if tx and e.name == "_FENCED":
                    run.ours = (tx[0].state.rows, tx[0].state.rows + tx[0].open_rows)
                if tx and tx[0].open_rows:
                    on_rewind(tx[0].open_rows)
                if tx:
                    tx[0].abort()
                # A refusal by the brokers' ACLs comes back on every retry: say it now.
                if failures > _MAX_RETRIES or e.name.endswith("_AUTHORIZATION_FAILED"):
                    raise
                outcome.retries += 1
                log(f"transaction failed ({e.name}: {e.message}); resuming from the last commit")
                time.sleep(min(0.2 * failures, 2.0))
            finally:
                # After a second stop signal the import abandons what is open at once
                # (the broker aborts the transaction; the rerun resolves it).
                abandon = isinstance(sys.exc_info()[1], KeyboardInterrupt)
                producer.close(0.5 if abandon else eo.timeout)
    finally:
        run.reader.close()
        run.digests.close()


def _start(
    job: ImportJob, inputs: Sequence[Input], fmt: str, spec: dict[str, JSONValue]
) -> _Resume:
    """The progress topic (made when missing), and what a resume must keep."""
    eo = job.exactly_once
    assert eo is not None
    client = connection_config(job.config)
    created = ensure_progress_topic(client, eo.progress_topic, eo.timeout)
    resolved = job.resolved
    topic_partitions = job.topic_partitions
    if topic_partitions is None:
        topic_partitions = len(partitions_of(client, job.topic, eo.timeout))
    # What decides each row's partition besides its key: a resume must keep it.
    fields: dict[str, JSONValue] = {
        **spec,
        "placement": {
            "presets": list(job.presets),
            "partitioner": str(resolved.effective("partitioner").value),
            "partitions": topic_partitions,
        },
    }
    txn_timeout = float(resolved.effective("transaction.timeout.ms").value) / 1000
    commit_seconds = min(eo.commit_seconds, txn_timeout / 2)
    return _Resume(
        job=job,
        inputs=inputs,
        fmt=fmt,
        fields=fields,
        client=client,
        created=created,
        # One consumer reads the progress topic when each attempt starts and after each
        # of its commits (a fresh admin client and consumer cost 30-40 ms a read).
        reader=CommittedReader(client, eo.progress_topic, eo.timeout),
        digests=ContentDigests(),
        commit_seconds=commit_seconds,
        # Paced rows (``rate``) are sent in slices, so that a commit falls due on time.
        slice_rows=max(1, int(job.rate * commit_seconds / 4)) if job.rate else None,
    )


def _committed_state(
    run: _Resume, restart: bool, outcome: Outcome
) -> tuple[Progress, Optional[Progress], list[Optional[bytes]]]:
    """Where this attempt resumes from, and the progress log its commits are confirmed
    against.  One read gives both: a commit of another run after it (a broker that
    does not fence lets one through) then shows up at this run's first commit.  Read
    twice, that commit would be taken for the baseline and its rows sent again."""
    job, eo, key = run.job, run.job.exactly_once, run.job.transactional_id
    assert eo is not None and key is not None
    try:
        seen = committed_progress(run.client, eo.progress_topic, key, eo.timeout, reader=run.reader)
    except LookupError:
        if run.known is None:
            raise
        raise progress_lost(eo.progress_topic, False) from None
    if run.known and run.known[-1] not in seen:
        raise progress_lost(eo.progress_topic, True)
    saved = None if restart else last_progress(seen)
    new: list[str] = []
    if saved is None:
        if run.first and not eo.restart:
            check_no_orphans(run.client, job.topic, eo.progress_topic, key, run.created, eo)
        state = fresh_state(job.topic, run.fmt, run.fields, run.inputs)
    else:
        state, new = check_saved(saved, job.topic, run.fmt, run.fields, run.inputs)
    committed = saved.rows if saved else 0
    if run.ours is not None and committed not in run.ours:
        raise ImportInputError(
            f"this run was fenced by another run of this import (transactional.id "
            f"{key!r}), which committed up to row {committed:,} since this run's last "
            f"commit (row {run.ours[0]:,}): this run stops, its open transaction aborted.  "
            "Run one import of an input at a time"
        )
    run.ours = None
    if run.first:
        run.first = False
        outcome.earlier = state.rows
        if new:
            outcome.notes.append(
                f"new since the earlier run, imported from their first row: {', '.join(new)}"
            )
        note_start(state, run.inputs, restart, outcome)
    return state, saved, seen


def _attempt(
    run: _Resume,
    producer: Producer,
    tx_out: list[TransactionalSink],
    result: ImportResult,
    report: Callable[[Problem], None],
    on_file: Callable[[int], None],
    dead_letter: Optional[DeadLetter],
    stop: Optional[threading.Event],
    outcome: Outcome,
) -> None:
    """One producer's go: fence the earlier one, resume from the committed state, send
    the rest (its sink goes into ``tx_out``, for the caller's retry to read)."""
    job, eo, key = run.job, run.job.exactly_once, run.job.transactional_id
    assert eo is not None and key is not None
    restart = eo.restart and outcome.transactions == 0  # only until the first commit
    producer.init_transactions(eo.timeout)  # fences an earlier run, aborts its txn
    state, saved, seen = _committed_state(run, restart, outcome)
    sync_dead_letter(dead_letter, state, saved is not None, outcome)
    if state.done:
        return
    tx = TransactionalSink(
        producer,
        job.topic,
        eo.progress_topic,
        key,
        state,
        result,
        report,
        run.skip,
        commit_rows=eo.commit_rows,
        commit_seconds=run.commit_seconds,
        timeout=eo.timeout,
        partition=job.partition,
        static_headers=list(job.static_headers),
        dead_letter=dead_letter,
        names=[i.name for i in run.inputs],
        slice_rows=run.slice_rows,
        client=run.client,
        seen=seen,
        reader=run.reader,
        stop=stop,
    )
    tx_out.append(tx)
    tx.before_commit = functools.partial(run.digests.fill, run.inputs)
    run.known = tx.seen
    try:
        _run_inputs(tx, run.inputs, on_file)
    finally:
        run.known = tx.seen
        outcome.transactions += tx.transactions
        outcome.committed = result.delivered


def import_plan(
    job: ImportJob,
    *,
    result: ImportResult,
    report: Callable[[Problem], None],
    bar: PlainBar | RichBar,
    t0: float,
    new_producer: Callable[[], Producer],
    dead_letter: Optional[DeadLetter] = None,
    log: Callable[[str], None] = lambda line: None,
    stop: Optional[threading.Event] = None,
) -> None:
    """The exactly-once run of :func:`~cykafka.importer.run.import_files` over the
    ``job``'s checked plan: the readers, rate, progress bar and result of the import."""
    import dataclasses
    import json

    from ..inputs.readers import READERS
    from ..inputs.readers.encoding import is_utf8

    seen_notes: set[str] = set()

    def route(held: Report) -> Report:
        """Notes go to the summary (once: a rewind reads rows again); problems of rows
        wait for the commit that covers them."""

        def to(p: Problem) -> None:
            if p.stage != "note":
                held(p)
            elif p.describe() not in seen_notes:
                seen_notes.add(p.describe())
                report(p)

        return to

    plan, fields, options, rate = job.plan, job.fields, job.options, job.rate
    utf8 = is_utf8(options.encoding)
    starts = [sum(s.size for s, _ in plan[:i]) for i in range(len(plan))]
    began: list[Optional[int]] = [None]  # the bytes of the inputs this run starts after
    inputs = []
    for index, (source, fmt) in enumerate(plan):
        # A compressed input (or a transcoded CSV) has no byte position to seek to: it
        # resumes by reading again from its start and skipping the committed rows.
        direct = source.compression is None and (fmt != "csv" or utf8)

        def rows(
            start: Optional[SourcePosition],
            held: Report,
            source: Source = source,
            fmt: str = fmt,
            direct: bool = direct,
            base: int = starts[index],
        ) -> Iterator[Chunk]:
            if began[0] is None:  # where this run begins reading (resumed: past the start)
                began[0] = base + (start.offset or 0 if start is not None else 0)
            if start is None or direct:
                return prefetch(
                    READERS[fmt].read(source, fields, options, route(held), start=start)
                )
            skip = start.row - 1
            chunks = READERS[fmt].read(source, fields, options, skipping(route(held), skip))
            return (k for k in (rows_after(c, skip) for c in prefetch(chunks)) if k is not None)

        def on_rows(n: int, done: int, base: int = starts[index]) -> None:
            result.rows_read += n
            if rate:
                pace(result.rows_read, rate, t0)
            result.input_at = base + done
            result.bytes_read = result.input_at - (began[0] or 0)
            bar.update(result.rows_seen, result.bytes_read, result.delivered, at=result.input_at)

        inputs.append(Input(source.name, source.path, source.is_regular, rows, on_rows))

    # What the records are made of: a resume with other settings would mix two imports.
    spec = {
        "fields": dataclasses.asdict(fields),
        "read": {
            f.name: _encoders(options.encoders) if f.name == "encoders" else repr(v)
            for f in dataclasses.fields(options)
            if f.name not in ("block_bytes", "batch_rows")
            for v in [getattr(options, f.name)]
        },
        "partition": job.partition,
        "headers": [[k, repr(v)] for k, v in job.static_headers],
    }

    def rewind(n: int) -> None:
        result.rows_read -= n

    outcome = Outcome()
    try:
        run_exactly_once(
            job,
            inputs,
            fmt="+".join(sorted({f for _, f in plan})),  # a new file of these keeps it
            spec=json.loads(json.dumps(spec)),
            result=result,
            report=report,
            new_producer=new_producer,
            on_file=lambda i: bar.file(plan[i][0].name, plan[i][1], plan[i][0].size),
            on_rewind=rewind,
            dead_letter=dead_letter,
            log=log,
            stop=stop,
            outcome=outcome,
        )
    finally:  # a stopped run says what it committed too
        assert job.exactly_once is not None
        result.exactly_once = _outcome_lines(outcome, job.exactly_once)


def _outcome_lines(outcome: Outcome, eo: ExactlyOnce) -> list[str]:
    return [
        *outcome.notes,
        f"{outcome.transactions:,} {plural(outcome.transactions, 'transaction')} committed "
        f"(transactional.id {outcome.transactional_id}, progress in topic "
        f"{eo.progress_topic!r})"
        + (
            f"; {outcome.retries} failed and {'was' if outcome.retries == 1 else 'were'} redone"
            if outcome.retries
            else ""
        ),
    ]


def _encoders(encoders: Optional[ColumnEncoders]) -> Optional[dict[str, Optional[str]]]:
    """The Schema Registry serializers of an import, by what decides their bytes (the
    serializer's kind), not by the objects (a registry client holds an SSLContext,
    which cannot be copied or pickled)."""
    if encoders is None:
        return None

    def kind(ser: object) -> Optional[str]:
        return None if ser is None else type(ser).__name__

    return {"value": kind(encoders.value), "key": kind(encoders.key)}
