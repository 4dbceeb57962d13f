"""The live view of producers' accumulators (``inspect_live``, ``cykafka top``)."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Callable, Optional, TextIO

from .registry import collect_new_producers
from .source import Inspectable

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

__all__ = ["live_view", "watch_new_producers"]

_logger = logging.getLogger("cykafka.inspector")


class _LiveView:
    """A thread that re-renders a set of producers' snapshots every ``interval`` s: a rich
    Live when the output is a terminal (or a console is given), else plain lines."""

    def __init__(
        self,
        producers: Callable[[], list[Inspectable]],
        interval: float,
        console: Optional[Console],
        file: Optional[TextIO],
        log_interval: float,
        max_rows: Optional[int] = 30,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0, not {interval!r}")
        self._producers = producers
        self.interval = interval
        self._console = console
        self._file = file
        self._log_interval = max(log_interval, interval)
        self.max_rows = max_rows
        self.frames = 0  # renders done, and the time they took (GIL held):
        self.busy_s = 0.0  # what the view costs the producer, measured directly
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._live: Optional[Live] = None
        out = file if file is not None else sys.stdout
        self.rich = console is not None or (hasattr(out, "isatty") and out.isatty())

    def _renderable(self) -> RenderableType:
        from rich.console import Group
        from rich.text import Text

        # A closed producer still renders: its last figures are its final state.
        tables = [p.accumulator().table(self.max_rows) for p in self._producers()]
        return Group(*tables) if tables else Text("no cykafka producer yet", style="dim")

    def _lines(self) -> list[str]:
        return [p.accumulator().log_line() for p in self._producers()]

    def start(self) -> None:
        if self.rich:
            from rich.console import Console
            from rich.live import Live

            console = self._console or Console(file=self._file)
            self._live = Live(
                self._renderable(),
                console=console,
                auto_refresh=False,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start(refresh=True)
        self._thread = threading.Thread(target=self._run, name="cykafka-inspect-live", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        next_log = time.monotonic()
        while not self._stop.wait(self.interval):
            start = time.perf_counter()
            try:
                if self._live is not None:
                    self._live.update(self._renderable(), refresh=True)
                elif time.monotonic() >= next_log:
                    next_log = time.monotonic() + self._log_interval
                    self._emit_lines()
                else:
                    continue
            except Exception:  # a broken view must never break the producer
                _logger.exception("cykafka: the live view failed to render")
            self.frames += 1
            self.busy_s += time.perf_counter() - start

    def _emit_lines(self) -> None:
        out = self._file if self._file is not None else sys.stdout
        for line in self._lines():
            print(line, file=out, flush=True)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._live is not None:
            try:
                self._live.update(self._renderable(), refresh=True)  # the final state
            finally:
                self._live.stop()
        else:
            self._emit_lines()


@contextlib.contextmanager
def live_view(
    producers: Callable[[], list[Inspectable]],
    interval: float = 0.25,
    console: Optional[Console] = None,
    file: Optional[TextIO] = None,
    log_interval: float = 5.0,
    max_rows: Optional[int] = 30,
) -> Iterator[_LiveView]:
    """Render ``producers()`` every ``interval`` seconds while the block runs."""
    view = _LiveView(producers, interval, console, file, log_interval, max_rows)
    view.start()
    try:
        yield view
    finally:
        view.stop()


@contextlib.contextmanager
def watch_new_producers(
    interval: float = 0.25,
    stats_interval_ms: int = 250,
    console: Optional[Console] = None,
    file: Optional[TextIO] = None,
    log_interval: float = 5.0,
) -> Iterator[_LiveView]:
    """Attach one live view to every Inspectable created while the block runs
    (``cykafka top``); they get ``stats_interval_ms`` unless they choose their own."""
    with collect_new_producers(stats_interval_ms) as producers:
        with live_view(producers, interval, console, file, log_interval) as view:
            yield view
