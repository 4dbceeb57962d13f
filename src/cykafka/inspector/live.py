"""Rendering snapshots (rich table, log line) and the live view (``inspect_live``,
``cykafka top``)."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable, Optional, TextIO

from .snapshot import AccumulatorSnapshot
from .source import Inspectable
from .states import PARTITION_STATES
from .stats import DEFAULT_INTERVAL_MS

__all__ = [
    "default_interval_ms",
    "live_view",
    "log_line",
    "producer_created",
    "render",
    "watch_new_producers",
]

_logger = logging.getLogger("cykafka.inspector")

# --------------------------------------------------------------------------- rendering

_STATE_STYLE = {
    "idle": "dim",
    "accumulating": "cyan",
    "ready": "green",
    "in_flight": "blue",
    "muted": "yellow",
    "backing_off": "magenta",
    "no_leader": "bold red",
}


def _fill_style(ratio: Optional[float]) -> str:
    if ratio is None:
        return "dim"
    return "green" if ratio < 0.5 else "yellow" if ratio < 0.9 else "bold red"


def _fmt_age(s: Optional[float]) -> str:
    if s is None:
        return "-"
    return f"{s * 1000:.0f}ms" if s < 1 else f"{s:.1f}s"


def _fmt_ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.1f}"


def _bar(ratio: Optional[float], width: int = 24) -> tuple[str, str]:
    filled = 0 if ratio is None else round(min(max(ratio, 0.0), 1.0) * width)
    return "█" * filled + "░" * (width - filled), _fill_style(ratio)


def _columns(
    text: Any, header: list[str], rows: list[list[tuple[str, str]]], right: set[int]
) -> None:
    """Append an aligned table to ``text`` (a rich Text).  Hand-made rather than a rich
    Table: a Table costs ~1 ms per row to lay out, which at 4 Hz would break the
    inspector's 5 % budget; styled spans on one Text cost a small fraction of that."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, (value, _) in enumerate(row):
            widths[i] = max(widths[i], len(value))

    def cell(i: int, value: str) -> str:
        return value.rjust(widths[i]) if i in right else value.ljust(widths[i])

    text.append("  ".join(cell(i, h) for i, h in enumerate(header)) + "\n", style="bold")
    for row in rows:
        for i, (value, style) in enumerate(row):
            text.append(cell(i, value), style=style or None)
            text.append("  " if i < len(row) - 1 else "\n")


def render(snap: AccumulatorSnapshot, max_rows: Optional[int] = None) -> Any:
    from rich.text import Text

    t = Text(no_wrap=True, overflow="crop")
    rate = "-" if snap.delivery_rate is None else f"{snap.delivery_rate:,.0f}/s"
    t.append(f"{snap.name}", style="bold")
    t.append(f"  produced {snap.produced:,}  delivered {snap.delivered:,}  ")
    t.append(f"failed {snap.failed:,}", style="red" if snap.failed else None)
    t.append(
        f"  rate {rate}  blocked {snap.blocked_s:.2f}s  stats age {_fmt_age(snap.stats_age_s)}\n"
    )
    mf, bf = snap.msgs_fill, snap.bytes_fill
    bar, style = _bar(mf)
    t.append("messages ")
    t.append(bar, style=style)
    t.append(f" {snap.pending:,}/{snap.max_msgs:,} ({mf:.1%})\n")
    bar, style = _bar(bf)
    t.append("bytes    ")
    t.append(bar, style=style)
    queued = "?" if snap.queued_bytes is None else f"{snap.queued_bytes:,}"
    t.append(f" {queued}/{snap.max_bytes:,}" + (f" ({bf:.1%})" if bf is not None else "") + "\n")

    parts = list(snap.partitions.values())
    hidden = 0
    if max_rows is not None and len(parts) > max_rows:
        # The busiest partitions first, so the rows that matter survive the cut.
        parts = sorted(
            parts,
            key=lambda p: (
                PARTITION_STATES.index(p.state) if p.state in PARTITION_STATES else 99,
                -p.unfinished_msgs,
            ),
        )
        hidden = len(parts) - max_rows
        parts = sorted(parts[:max_rows], key=lambda p: (p.topic, p.partition))
    rows = []
    for ps in parts:
        seq = "-" if ps.next_ack_seq is None else f"{ps.next_ack_seq}/{ps.next_err_seq}"
        oldest = ("" if ps.oldest_age_bracketed or ps.oldest_age_s is None else ">=") + _fmt_age(
            ps.oldest_age_s
        )
        rows.append(
            [
                (f"{ps.topic}[{ps.partition}]", ""),
                (ps.state, _STATE_STYLE.get(ps.state, "")),
                (str(ps.leader) if ps.leader >= 0 else "-", ""),
                (f"{ps.queued_msgs:,}", ""),
                (f"{ps.queued_bytes:,}", ""),
                (f"{ps.xmit_msgs:,}", ""),
                (f"{ps.in_flight_msgs:,}", ""),
                (oldest, ""),
                (f"{ps.delivered:,}", ""),
                (f"{ps.failed:,}", "red" if ps.failed else ""),
                (str(ps.last_acked_offset), ""),
                (seq, ""),
            ]
        )
    t.append("partitions\n", style="bold underline")
    _columns(
        t,
        [
            "topic[p]",
            "state",
            "leader",
            "queued",
            "bytes",
            "xmit",
            "in flight",
            "oldest",
            "delivered",
            "failed",
            "acked off",
            "seq ack/err",
        ],
        rows,
        right=set(range(2, 12)),
    )
    if hidden:
        t.append(f"... {hidden} more partitions (the quietest)\n", style="dim")

    rows = []
    for b in list(snap.brokers.values()) or snap.bootstrap_brokers:
        lim = "inf" if b.max_in_flight >= 1000000 else str(b.max_in_flight)
        rows.append(
            [
                (f"{b.id}" if b.id >= 0 else b.name, ""),
                (b.state, "green" if b.state == "UP" else "bold red"),
                (
                    f"{b.in_flight_requests}/{lim}",
                    "yellow" if b.max_in_flight and b.in_flight_fill >= 1 else "",
                ),
                (f"{b.in_flight_msgs:,}", ""),
                (f"{b.waiting_requests}", ""),
                (f"{b.waiting_msgs:,}", ""),
                (_fmt_ms(b.rtt_avg_ms), ""),
                (_fmt_ms(b.int_latency_avg_ms), ""),
                (str(len(b.partitions)), ""),
            ]
        )
    t.append("brokers\n", style="bold underline")
    _columns(
        t,
        [
            "broker",
            "state",
            "in flight req",
            "msgs",
            "waiting req",
            "msgs",
            "rtt ms",
            "queue ms",
            "partitions",
        ],
        rows,
        right=set(range(2, 9)),
    )
    if snap.eos is not None:
        e = snap.eos
        t.append(
            f"idempotence: pid {e.producer_id} epoch {e.producer_epoch} "
            f"state {e.idempotence_state}; transaction state {e.transaction_state}\n"
        )
    if snap.stats_age_s is None:
        t.append("no statistics yet (inspect_interval_ms=0, or none emitted yet)\n", style="dim")
    t.rstrip()
    return t


def log_line(snap: AccumulatorSnapshot) -> str:
    rate = "-" if snap.delivery_rate is None else f"{snap.delivery_rate:.0f}/s"
    bf = "?" if snap.bytes_fill is None else f"{snap.bytes_fill:.1%}"
    busy = sorted(
        (p for p in snap.partitions.values() if p.state != "idle"), key=lambda p: -p.unfinished_msgs
    )
    parts = " ".join(
        f"{p.topic}[{p.partition}]={p.state}:q{p.waiting_msgs}/f{p.in_flight_msgs}"
        for p in busy[:8]
    ) + (f" +{len(busy) - 8} more" if len(busy) > 8 else "")
    brokers = " ".join(
        f"b{b.id}={b.state}:{b.in_flight_requests}req" for b in snap.brokers.values()
    )
    return (
        f"{snap.name}: pending {snap.pending} ({snap.msgs_fill:.1%} msgs, {bf} bytes) "
        f"delivered {snap.delivered} failed {snap.failed} rate {rate} "
        f"blocked {snap.blocked_s:.2f}s stats-age {_fmt_age(snap.stats_age_s)}"
        + (f" | {parts}" if parts else "")
        + (f" | {brokers}" if brokers else "")
    )


# --------------------------------------------------------------------------- live view


class _LiveView:
    """A thread that re-renders a set of producers' snapshots every ``interval`` s: a rich
    Live when the output is a terminal (or a console is given), else plain lines."""

    def __init__(
        self,
        producers: Callable[[], list[Inspectable]],
        interval: float,
        console: Any,
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
        self._live: Any = None
        out = file if file is not None else sys.stdout
        self.rich = console is not None or (hasattr(out, "isatty") and out.isatty())

    def _renderable(self) -> Any:
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
    console: Any = None,
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


# --------------------------------------------------------------------------- cykafka top

_created_hooks: list[Callable[[Inspectable], None]] = []
_default_interval_ms: Optional[int] = None


def default_interval_ms() -> int:
    """The statistics interval new producers get when they do not choose one."""
    return DEFAULT_INTERVAL_MS if _default_interval_ms is None else _default_interval_ms


def producer_created(producer: Inspectable) -> None:
    """Called by Inspectable.__init__: lets ``cykafka top`` see every new producer."""
    for hook in list(_created_hooks):
        try:
            hook(producer)
        except Exception:
            _logger.exception("cykafka: a producer-created hook failed")


@contextlib.contextmanager
def watch_new_producers(
    interval: float = 0.25,
    stats_interval_ms: int = 250,
    console: Any = None,
    file: Optional[TextIO] = None,
    log_interval: float = 5.0,
) -> Iterator[_LiveView]:
    """Attach one live view to every Inspectable created while the block runs
    (``cykafka top``); they get ``stats_interval_ms`` unless they choose their own."""
    global _default_interval_ms
    # Strong references: a script's producer is usually closed and dropped before
    # the view's last frame, which must still show its final figures.
    order: list[Inspectable] = []

    def hook(p: Inspectable) -> None:
        if not any(q is p for q in order):
            order.append(p)

    def producers() -> list[Inspectable]:
        return list(order)

    saved = _default_interval_ms
    _default_interval_ms = stats_interval_ms
    _created_hooks.append(hook)
    try:
        with live_view(producers, interval, console, file, log_interval) as view:
            yield view
    finally:
        _created_hooks.remove(hook)
        _default_interval_ms = saved
