"""The plain import's loop: every input's rows read ahead, paced (``--rate``), after
``--skip-rows``, and handed to the sink.  The runner (:mod:`.run`) made the producer
and the sink, and settles the rows once this returns."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional, Union

from ..inputs.model import SourcePosition
from ..inputs.readers import READERS
from .pipeline import pace, prefetch, rows_after, skipping

if TYPE_CHECKING:
    from ..inputs.model import Chunk, Report
    from .bar import PlainBar, RichBar
    from .job import ImportJob
    from .signals import StopSignals
    from .sink import Sink
    from .summary import ImportResult

__all__ = ["send_all"]


def _offset(at: Optional[SourcePosition], chunk: Chunk) -> int:
    """The byte of the input a position is at: its offset (text formats), else how far
    the reader got (Parquet)."""
    return at.offset if at is not None and at.offset is not None else chunk.bytes_done


def _at_end(chunk: Chunk, size: int) -> bool:
    """Whether ``chunk`` holds the last rows of an input of ``size`` bytes."""
    end = chunk.end
    return bool(size) and end is not None and end.offset is not None and end.offset >= size


def _rows_to(end: Optional[SourcePosition]) -> int:
    """The rows of an input before ``end`` (a chunk's end: the next row's number)."""
    return end.row - 1 if end is not None else 0


def send_all(
    job: ImportJob,
    sink: Sink,
    result: ImportResult,
    report: Report,
    bar: Union[PlainBar, RichBar],
    signals: StopSignals,
    t0: float,
) -> bool:
    """Hand every row of ``job``'s plan to ``sink``; False when the import stopped
    because the dead-letter file cannot be written (the rows read so far still get
    their fate).  A stop signal raises at the next safe point; the phases
    ``input_wait`` and ``hand_over`` go into ``result``."""
    loop_t = time.monotonic()
    hand_over = 0.0
    done_bytes = 0  # bytes of the inputs before this one
    rows_before = 0  # rows of the inputs before this one
    #: Where in the inputs this run began reading (after --skip-rows): the summary's
    #: size is of the rows read from there, the bar's place counts from the start.
    began: Optional[int] = None if job.skip_rows else 0
    plan = job.plan
    for index, (source, fmt) in enumerate(plan):
        bar.file(source.name, fmt, source.size)
        skip = max(0, job.skip_rows - rows_before)  # of this input's rows
        reader = READERS[fmt].read(
            source, job.fields, job.options, skipping(report, skip) if skip else report
        )
        end = None
        for chunk in prefetch(reader, ctrl_c=signals):
            if result.dead_letter_error:
                return False
            end = chunk.end
            kept = rows_after(chunk, skip) if skip else chunk
            if kept is None or (not len(kept) and skip and _rows_to(chunk.end) <= skip):
                continue  # rows --skip-rows passes over: not read by this run
            if began is None:
                first = kept.offset_of(0) if len(kept) else _offset(chunk.end, chunk)
                began = done_bytes + (first or 0)
            if len(kept):
                hand_over += _send_chunk(job, sink, result, kept, rows_before, signals, t0)
            result.input_at = done_bytes + _offset(chunk.end, chunk)
            result.bytes_read = result.input_at - began
            if index + 1 < len(plan) and _at_end(chunk, source.size):
                # Every row of this input has a fate: a stop names the next input's first.
                result.read_to = SourcePosition(plan[index + 1][0].name, 1, offset=0)
            signals.check()
            # rows seen (malformed and refused too): the count the summary gives
            bar.update(result.rows_seen, result.bytes_read, result.delivered, at=result.input_at)
        if began is None and skip == 0:
            began = done_bytes  # (an input of no rows)
        done_bytes += source.size or result.input_at - done_bytes
        result.input_at = done_bytes
        result.bytes_read = done_bytes - (began if began is not None else done_bytes)
        rows_before += _rows_to(end)
    result.phases["input_wait"] = time.monotonic() - loop_t - hand_over
    result.phases["hand_over"] = hand_over
    return True


def _send_chunk(
    job: ImportJob,
    sink: Sink,
    result: ImportResult,
    chunk: Chunk,
    rows_before: int,
    signals: StopSignals,
    t0: float,
) -> float:
    """Hand ``chunk`` over (paced by ``--rate`` in slices of a tenth of a second);
    returns the seconds spent handing over."""
    took = 0.0
    step = max(1, int(job.rate / 10)) if job.rate else len(chunk)
    for lo in range(0, len(chunk), step):
        part = chunk if step == len(chunk) else chunk.slice(lo, min(lo + step, len(chunk)))
        if job.rate:
            pace(result.rows_read + len(part), job.rate, t0)
            signals.check()
        result.rows_read += len(part)
        result.read_to = part.end  # these rows get a fate now
        result.settled_rows = rows_before + _rows_to(part.end)
        sent_t = time.monotonic()
        sink.rows_before = rows_before
        sink.send(part, job.partition)
        took += time.monotonic() - sent_t
    return took
