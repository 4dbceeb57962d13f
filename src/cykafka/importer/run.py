"""``import_files``: inputs -> readers -> sink, with dead letters, progress and summary."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import TYPE_CHECKING, Optional, TextIO

from ..inputs.model import ImportInputError, Problem, SourcePosition
from ..inputs.readers import READERS
from .deadletter import DeadLetter
from .signals import StopSignals
from .pipeline import pace, prefetch, rows_after, skipping
from .bar import PlainBar, RichBar, isatty
from .sink import Sink
from .summary import SHOW_PROBLEMS, ImportResult

if TYPE_CHECKING:
    from rich.console import Console

    from ..producer import Producer
    from .job import ImportJob

__all__ = ["import_files"]

#: After a stop signal, how long to wait in all for the delivery reports of queued
#: batches (and then for the producer to close): the import stops within 5 s.
INTERRUPT_WAIT_S = 2.0


def _rows_to(end: Optional[SourcePosition]) -> int:
    """The rows of an input before ``end`` (a chunk's end: the next row's number)."""
    return end.row - 1 if end is not None else 0


class _Stop(Exception):
    """The import cannot go on (the dead-letter file cannot be written)."""


def import_files(
    job: ImportJob,
    *,
    producer: Optional[Producer] = None,
    sink: Optional[Sink] = None,
    progress: Optional[bool] = None,
    inspect: bool = False,
    log: Optional[TextIO] = None,
    console: Optional[Console] = None,
    replace_stuck: bool = False,
) -> ImportResult:
    """Run ``job`` (an :class:`~cykafka.importer.ImportJob`: what to import, where, and
    how, decided once); return the :class:`ImportResult`.

    ``producer``: an open :class:`cykafka.Producer` to use (and leave open, except after
    Ctrl-C: then it is closed, which purges what it still holds so that every row gets
    its fate) instead of a new one made from the job's configuration.  ``sink``: a
    :class:`Sink` (subclass) to send through, e.g. one that records progress as batches
    are delivered.  An exactly-once job makes its own transactional producers (no
    ``producer``).  ``progress``: a bar (True), log lines (False) or a bar only when
    ``log`` is a terminal (None); ``inspect``: also show the producer's accumulator view.

    A producer whose rows time out (a broker stall longer than ``message.timeout.ms``)
    is closed (what it still holds is reported not sent, or unknown when in flight)
    and replaced by a new one made from the job's configuration: the import's own
    producer always, a ``producer`` passed in when ``replace_stuck`` (the import then
    closes the replacement).
    """
    from ..producer import Producer

    log = log if log is not None else sys.stderr
    plan, exactly_once = job.plan, job.exactly_once
    result = ImportResult(
        topic=job.topic,
        files=[s.name for s, _ in plan],
        fmt=job.fmt,
        bootstrap_servers=job.bootstrap_servers or "?",
        dead_letter=job.dead_letter,
        guarantees=job.guarantees,
    )
    resuming = exactly_once is not None and not exactly_once.restart
    dl = (
        DeadLetter(job.dead_letter, [s for s, _ in plan], append=resuming)
        if job.dead_letter
        else None
    )
    report_lock = threading.Lock()  # the reader thread reports too

    def report(p: Problem) -> None:
        with report_lock:
            if p.stage == "note":
                result.notes.append(p)
                return
            result.problem_count += 1
            if p.stage == "parse":
                result.malformed += 1
            elif p.stage == "refused":
                result.refused += 1
            if len(result.problems) < SHOW_PROBLEMS:
                result.problems.append(p)
            if dl is not None and not dl.write(p):
                result.dead_letter_error = dl.error
                result.lost, result.lost_count = dl.lost, dl.lost_count

    if exactly_once is not None and (producer is not None or sink is not None):
        raise ValueError(
            "an exactly-once job makes its own transactional producers, each with its own "
            "sink: pass no producer or sink"
        )
    own = producer is None and exactly_once is None
    if own:
        producer = Producer(job.resolved)
    live_view = getattr(producer, "inspect_live", None) if inspect else None
    total_bytes = sum(s.size for s, _ in plan)
    bar: PlainBar | RichBar
    if progress if progress is not None else isatty(log):
        # The bar and (with --inspect) the accumulator view in one live display.
        bar = RichBar(log, total_bytes, console, producer if live_view else None)
        live_view = None
    else:
        bar = PlainBar(log, total_bytes)
    # The plain import's sink (an exactly-once import sends through one per transaction).
    plain: Optional[Sink] = None
    if producer is not None:
        plain = sink if sink is not None else Sink(producer, job.topic, result, report)
        plain.producer, plain.topic, plain.result, plain.report = (
            producer,
            job.topic,
            result,
            report,
        )
        plain.static_headers = list(job.static_headers)
    made: list[Producer] = []  # producers made to replace a stuck one

    def replace_producer() -> None:
        nonlocal producer
        assert plain is not None  # (set on the plain import's sink only)
        old, producer = producer, Producer(job.resolved)
        plain.producer = producer
        made.append(producer)
        if old is not None:
            old.close(0)  # purged: each row it still holds comes back with its fate
        report(
            Problem(
                "producer",
                "note",
                "rows timed out (message.timeout.ms) after the broker stalled: the producer "
                "was replaced by a new one, and the rows it still held are reported",
            )
        )

    if plain is not None and (own or replace_stuck):
        plain.on_timed_out = replace_producer
    if exactly_once is not None:
        from .resume import ResumeRefused, import_plan

        result.exactly_once_run = True
    t0 = time.monotonic()
    done_bytes = 0

    # A stop signal (Ctrl-C, SIGTERM, SIGHUP) stops a plain import between batches, an
    # exactly-once one at its next commit, which then covers the rows handed over.
    def purge() -> None:
        if producer is not None and exactly_once is None:
            producer.close(0)

    if exactly_once is None:
        ctrl_c = StopSignals(log, purge, INTERRUPT_WAIT_S)
    else:
        ctrl_c = StopSignals(log, what="the rows handed over are committed")
    if plain is not None:
        plain.stop = ctrl_c.requested
    input_done = False  # every row read and handed over (a later signal stops nothing)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(ctrl_c)
            if live_view is not None:
                stack.enter_context(live_view(0.25, file=log))
            try:
                if exactly_once is not None:
                    import_plan(
                        job,
                        result=result,
                        report=report,
                        dead_letter=dl,
                        bar=bar,
                        t0=t0,
                        log=lambda line: print(f"cykafka import: {line}", file=log),
                        stop=ctrl_c.requested,
                    )
                loop_t = time.monotonic()
                hand_over = 0.0
                rows_before = 0  # rows of the inputs before this one
                for source, f in plan if plain is not None else ():
                    assert plain is not None  # (mypy: the loop runs for a plain import)
                    bar.file(source.name, f, source.size)
                    skip = max(0, job.skip_rows - rows_before)  # of this input's rows
                    reader = READERS[f].read(
                        source, job.fields, job.options, skipping(report, skip) if skip else report
                    )
                    end = None
                    for chunk in prefetch(reader, ctrl_c=ctrl_c):
                        if result.dead_letter_error:
                            raise _Stop(result.dead_letter_error)
                        end = chunk.end
                        kept = rows_after(chunk, skip) if skip else chunk
                        if kept is None or len(kept) == 0:
                            continue
                        chunk = kept
                        # Paced (--rate): in slices of a tenth of a second each.
                        step = max(1, int(job.rate / 10)) if job.rate else len(chunk)
                        for lo in range(0, len(chunk), step):
                            part = (
                                chunk
                                if step == len(chunk)
                                else chunk.slice(lo, min(lo + step, len(chunk)))
                            )
                            if job.rate:
                                pace(result.rows_read + len(part), job.rate, t0)
                                ctrl_c.check()
                            result.rows_read += len(part)
                            result.read_to = part.end  # these rows get a fate now
                            result.settled_rows = rows_before + _rows_to(part.end)
                            sent_t = time.monotonic()
                            plain.send(part, job.partition)
                            hand_over += time.monotonic() - sent_t
                        result.bytes_read = done_bytes + chunk.bytes_done
                        ctrl_c.check()
                        bar.update(result.rows_read, result.bytes_read, result.delivered)
                    done_bytes += source.size or result.bytes_read - done_bytes
                    result.bytes_read = done_bytes
                    rows_before += _rows_to(end)
                input_done = True
                if exactly_once is None:
                    result.phases["input_wait"] = time.monotonic() - loop_t - hand_over
                    result.phases["hand_over"] = hand_over
            except KeyboardInterrupt:
                result.interrupted = True
            except _Stop:
                pass
            except ImportInputError as e:
                if exactly_once is not None and isinstance(e, ResumeRefused):
                    raise
                result.fatal = str(e)
            except Exception as e:  # a fatal producer error: report what happened so far
                if ctrl_c.requested.is_set():
                    result.interrupted = True  # the producer was closed after the signal
                else:
                    result.fatal = f"{type(e).__name__}: {e}"
            # Every row handed over gets its fate: delivered, not sent, or unknown.  After
            # Ctrl-C the producer (the caller's too) is purged once INTERRUPT_WAIT_S is
            # up: what it still holds comes back _PURGE_QUEUE (not sent) or
            # _PURGE_INFLIGHT (unknown) instead of all being unknown.
            if ctrl_c.requested.is_set() and not input_done:
                result.interrupted = True
            flush_t = time.monotonic()
            if plain is not None:
                plain.finish(
                    INTERRUPT_WAIT_S if result.interrupted else None,
                    purge=purge,
                    stop=None if result.interrupted else ctrl_c.requested,
                    stop_wait_s=INTERRUPT_WAIT_S,
                )
            result.signal = ctrl_c.signum
            result.read_all = input_done
            if input_done and result.delivered == result.rows_read and not result.fatal:
                result.interrupted = False  # the signal came once every row was delivered
            if exactly_once is not None and (result.interrupted or result.fatal):
                # Rows of a transaction whose commit a second signal or an error cut
                # short: the broker commits or aborts it, the rerun knows which.
                result.unknown += max(0, result.rows_read - result.settled)
            result.phases["final_flush"] = time.monotonic() - flush_t
        result.elapsed = time.monotonic() - t0
        bar.update(result.rows_read, result.bytes_read, result.delivered, force=True)
    finally:
        bar.close()
        # After Ctrl-C the queued batches were already given INTERRUPT_WAIT_S: what is
        # left is reported unconfirmed, so do not wait for it again.
        if producer is None:  # (exactly-once: its producers are closed as it goes)
            pass
        elif own or made:  # the import's own, or the one replacing the caller's
            producer.close(0.5 if result.interrupted else None)
        elif not result.interrupted:  # the caller's, drained
            producer.flush(None)
        if dl is not None:
            dl.close()
            if dl.error and not result.dead_letter_error:
                result.dead_letter_error = dl.error
    return result
