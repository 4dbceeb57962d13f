"""The bar a person watching an import sees: a rich bar on a terminal, log lines
elsewhere (the committed positions of an exactly-once import are
:mod:`.progress_records`)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional, TextIO

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from ..producer import Producer

__all__ = ["PlainBar", "RichBar", "isatty"]


def isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def throttled(producer: Optional[Producer]) -> str:
    """ ", throttled by the broker N ms per response" while a broker delays this
    producer's answers (a client quota: librdkafka's ``throttle`` statistics, the last
    interval); "" otherwise.  The import keeps going at the quota's rate."""
    if producer is None or not hasattr(producer, "accumulator"):
        return ""
    try:
        ms = producer.accumulator().throttle_ms
    except Exception:  # a closed producer (being replaced): the line goes without it
        return ""
    return "" if ms is None else f", throttled by the broker {ms:,.0f} ms per response"


class PlainBar:
    """Log lines on a non-terminal: one per file and one every ``every`` seconds."""

    def __init__(self, out: TextIO, total_bytes: int, every: float = 5.0) -> None:
        self.out = out
        self.total = total_bytes
        self.every = every
        self.t0 = time.monotonic()
        self.last = self.t0
        self.producer: Optional[Producer] = None

    def watch(self, producer: Optional[Producer]) -> None:
        """The producer whose broker throttle (a client quota) the lines show."""
        self.producer = producer

    def file(self, path: str, fmt: str, size: int = 0) -> None:
        shown = f", {size / 1e6:,.1f} MB" if size else ""
        print(f"cykafka import: reading {path} ({fmt}{shown})", file=self.out)

    def update(
        self, rows: int, nbytes: int, delivered: int, force: bool = False, at: int = -1
    ) -> None:
        """``rows`` and ``nbytes``: what this run read (the summary's rows read and
        size); ``at``: the bytes of the inputs before the next row (a resumed run
        starts past the rows it skips), for the percentage; -1: ``nbytes``."""
        now = time.monotonic()
        if not force and now - self.last < self.every:
            return
        self.last = now
        dt = max(now - self.t0, 1e-9)
        at = nbytes if at < 0 else at
        pct = f" {100 * min(at, self.total) / self.total:.0f}%," if self.total else ""
        print(
            f"cykafka import:{pct} {rows:,} rows read, {delivered:,} delivered, "
            f"{rows / dt:,.0f} rows/s, {nbytes / 1e6 / dt:,.1f} MB/s{throttled(self.producer)}",
            file=self.out,
            flush=True,
        )

    def close(self) -> None:
        pass


class RichBar:
    """A rich progress bar (rows, MB, rows/s, ETA from the file sizes); with
    ``producer`` (``--inspect``) the producer's accumulator view is drawn under it,
    in the same live display (two rich Lives cannot share a terminal)."""

    def __init__(
        self,
        out: TextIO,
        total_bytes: int,
        console: Optional[Console] = None,
        producer: Optional[Producer] = None,
    ) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        class _BarAndAccumulator(Progress):
            def get_renderables(self) -> Iterator[RenderableType]:
                yield self.make_tasks_table(self.tasks)
                if producer is not None:
                    try:
                        yield producer.accumulator().table(30)
                    except Exception as e:  # the view must never stop the import
                        yield f"(accumulator view failed: {e})"

        self.t0 = time.monotonic()
        self.progress = _BarAndAccumulator(
            TextColumn("[bold]{task.description:.20}"),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[mb]}"),
            TextColumn("{task.fields[rows]:>11,} rows {task.fields[rate]:>9,.0f} rows/s"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[throttle]}"),
            console=console if console is not None else Console(file=out),
            transient=False,
            refresh_per_second=4 if producer is not None else 10,
        )
        self.total = total_bytes
        self.task = self.progress.add_task(
            "import", total=total_bytes or None, rows=0, rate=0.0, mb=self._mb(0), throttle=""
        )
        self.watched: Optional[Producer] = producer
        self.progress.start()

    def watch(self, producer: Optional[Producer]) -> None:
        """The producer whose broker throttle (a client quota) the bar shows."""
        self.watched = producer

    def file(self, path: str, fmt: str, size: int = 0) -> None:
        self.progress.update(self.task, description=os.path.basename(path))

    def update(
        self, rows: int, nbytes: int, delivered: int, force: bool = False, at: int = -1
    ) -> None:
        """As :meth:`PlainBar.update`: the bar is at ``at``, the figures are this run's."""
        rate = rows / max(time.monotonic() - self.t0, 1e-9)
        at = nbytes if at < 0 else at
        self.progress.update(
            self.task,
            completed=at,
            rows=rows,
            rate=rate,
            mb=self._mb(at),
            throttle=throttled(self.watched).lstrip(", "),
        )

    def _mb(self, nbytes: int) -> str:
        return f"{nbytes / 1e6:,.1f}/{self.total / 1e6:,.1f} MB"

    def close(self) -> None:
        self.progress.stop()
