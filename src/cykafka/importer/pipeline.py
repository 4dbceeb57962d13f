"""What the plain and the exactly-once import share, below both: the reader running
ahead in a thread, the pacing of --rate, and the producer configuration of ``cykafka
import`` (the input check is :func:`cykafka.inputs.plan_files`, which verify runs too)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Optional

from ..cluster.admin import RECONNECT_BACKOFF_MS
from ..inputs import Chunk, Problem, ReadOptions, Report
from .signals import StopSignals

if TYPE_CHECKING:
    from ..config import Properties, ResolvedConfig
    from ..presets import PresetSpec

__all__ = [
    "bound_queue",
    "IMPORT_DEFAULTS",
    "pace",
    "prefetch",
    "resolve_import",
    "rows_after",
    "skipping",
    "with_max_record",
]

#: Config the import uses unless the user sets it.  ``linger.ms``: a bulk load trades
#: latency for throughput (librdkafka's 5 ms linger makes small requests; with 5 in
#: flight under the ordered preset that halved the rate on a busy 2-core machine).
#: ``reconnect.backoff.ms``: the producer asks for the topic's partition count as the
#: first rows arrive, which can wait for librdkafka's next connection
#: (:data:`cykafka.cluster.admin.RECONNECT_BACKOFF_MS` says why and how long).
#: ``compression.type``: a broker's work, and the network's, grow with the bytes it is
#: sent; lz4 costs the client about 1 ns a byte (``bench/design.py`` times an import
#: with and without it; every Kafka client reads it; ``-X compression.type=none`` opts out).
IMPORT_DEFAULTS: Mapping[str, str] = {
    "linger.ms": "20",
    "compression.type": "lz4",
    "reconnect.backoff.ms": str(RECONNECT_BACKOFF_MS),
}


def prefetch(
    chunks: Iterator[Chunk], depth: int = 2, ctrl_c: Optional[StopSignals] = None
) -> Iterator[Chunk]:
    """Read the next chunks in a thread while the current one is being queued: the
    readers (pyarrow) and produce_batch's C loop both run mostly without the GIL, so
    reading and producing overlap.  A reader's exception is re-raised here."""
    q: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
            put(end)
        except BaseException as exc:  # handed to the consumer, raised there
            put((end, exc))

    reader = threading.Thread(target=work, name="cykafka-import-reader", daemon=True)
    reader.start()
    try:
        while True:
            if ctrl_c is not None:
                ctrl_c.check()
            try:
                item = q.get(timeout=0.1)  # short waits: Ctrl-C is seen at once
            except queue.Empty:
                continue
            if item is end:
                # A stop signal that came while the last wait was on (Ctrl-C at a
                # terminal also ends the program writing a piped input: its end follows
                # at once) is a stop, not the end of the input.
                if ctrl_c is not None:
                    ctrl_c.check()
                return
            if isinstance(item, tuple) and item and item[0] is end:
                raise item[1]
            assert isinstance(item, Chunk)
            yield item
    finally:
        stop.set()
        reader.join(1.0)


def rows_after(chunk: Chunk, skip: int) -> Optional[Chunk]:
    """The rows of ``chunk`` numbered after ``skip`` (rows of its file, 1-based):
    where ``--skip-rows``, or a resume that must read an input from its start, begins.
    None when the chunk is wholly before it."""
    import numpy as np

    n = len(chunk)
    if n == 0 or chunk.row_of(0) > skip:
        return chunk
    if chunk.row_of(n - 1) <= skip:
        return None
    if chunk.rows is None:
        lo = skip - chunk.first_row + 1
    else:
        lo = int(np.searchsorted(chunk.rows, skip, side="right"))
    return chunk.slice(lo, n)


def skipping(report: Report, skip: int) -> Report:
    """``report`` without the problems of rows numbered ``skip`` or less: they were
    reported by the run that read them (notes still come through)."""

    def to(p: Problem) -> None:
        if p.stage == "note" or p.row is None or p.row > skip:
            report(p)

    return to


def pace(rows: int, rate: float, t0: float) -> None:
    """Sleep until ``rows`` rows are due at ``rate`` rows per second."""
    ahead = rows / rate - (time.monotonic() - t0)
    if ahead > 0:
        time.sleep(ahead)


def with_max_record(options: ReadOptions, config: Mapping[str, str]) -> ReadOptions:
    """Records longer than message.max.bytes cannot be sent: readers skip them."""
    import dataclasses

    from ..config import canonical

    for k, v in config.items():
        if canonical(k) == "message.max.bytes":
            return dataclasses.replace(options, max_record_bytes=int(v))
    return options


#: Batches of ``batch.size`` an idempotent import keeps queued per partition (below).
QUEUED_BATCHES = 3


def resolve_import(
    config: Properties,
    preset: PresetSpec,
    partitions: Optional[int] = None,
    transactional_id: Optional[str] = None,
) -> ResolvedConfig:
    """``config`` and ``preset`` through the one resolver, with :data:`IMPORT_DEFAULTS`
    laid under the presets (recorded as defaults of ``cykafka import``).

    With ``partitions`` known and the producer idempotent, the queue is also bounded to
    :data:`QUEUED_BATCHES` batches per partition unless the user bounds it.  The
    idempotent producer keeps at most 5 requests in flight per partition, and while a
    full batch waits behind them librdkafka 2.16's broker thread wakes without sleeping
    (its producer loop asks to be woken "now" for a ready batch, then finds no request
    slot): measured on 10 M lines into one partition, 3.3 s of system CPU and 8.3 s
    instead of 0.7 s and 6.4 s.  Three batches keep the queue below that point.

    ``transactional_id``: an ``--exactly-once`` import's producers, the user's presets
    made transactional (``exactly_once`` includes ordered; one that contradicts it,
    such as at_most_once, is refused by the resolver, naming both)."""
    from ..config import resolve

    if transactional_id is not None:
        config = {**config, "transactional.id": transactional_id}
        # (the resolver parses the spec: a name, "a+b", or a list of either)
        preset = [*([preset] if isinstance(preset, str) else preset or []), "exactly_once"]
    resolved = resolve(config, preset, defaults=IMPORT_DEFAULTS, defaults_origin="cykafka import")
    return bound_queue(resolved, partitions)


def bound_queue(resolved: ResolvedConfig, partitions: Optional[int]) -> ResolvedConfig:
    """``resolved`` with an idempotent producer's queue bounded to
    :data:`QUEUED_BATCHES` batches per partition of ``partitions``, unless the user or
    a preset bounds it (:func:`resolve_import` says why)."""
    if not partitions or not resolved.idempotent:
        return resolved
    if resolved.explicit("queue.buffering.max.kbytes") or resolved.explicit(
        "queue.buffering.max.messages"
    ):
        return resolved
    batch = int(resolved.effective("batch.size").value)
    largest = int(resolved.effective("message.max.bytes").value)
    kbytes = -(-max(partitions * QUEUED_BATCHES * batch, 2 * largest) // 1024)
    if kbytes >= int(resolved.effective("queue.buffering.max.kbytes").value):
        return resolved
    return resolved.with_default("queue.buffering.max.kbytes", str(kbytes), "cykafka import")
