"""Rendering a snapshot: the rich table (``snapshot.table()``) and the one-line form
(``snapshot.log_line()``, the live view's when stdout is not a terminal).

Reads a snapshot's figures (``figures.py``) and the state order, nothing else, so
``AccumulatorSnapshot`` (``snapshot.py``) renders through it without an import circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .figures import AccumulatorFigures, BrokerSnapshot, PartitionSnapshot
from .states import PARTITION_STATES

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["log_line", "render"]

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
    text: Text, header: list[str], rows: list[list[tuple[str, str]]], right: set[int]
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


def render(snap: AccumulatorFigures, max_rows: Optional[int] = None) -> Text:
    from rich.text import Text

    t = Text(no_wrap=True, overflow="crop")
    _totals(t, snap)
    _gauges(t, snap)
    _partition_table(t, snap, max_rows)
    _broker_table(t, snap)
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


def _totals(t: Text, snap: AccumulatorFigures) -> None:
    """The first line: the producer's exact counters, its rate and the statistics' age."""
    rate = "-" if snap.delivery_rate is None else f"{snap.delivery_rate:,.0f}/s"
    t.append(f"{snap.name}", style="bold")
    t.append(f"  produced {snap.produced:,}  delivered {snap.delivered:,}  ")
    t.append(f"failed {snap.failed:,}", style="red" if snap.failed else None)
    t.append(
        f"  rate {rate}  blocked {snap.blocked_s:.2f}s  stats age {_fmt_age(snap.stats_age_s)}\n"
    )


def _gauges(t: Text, snap: AccumulatorFigures) -> None:
    """The queue's fill, in messages and in bytes, against its two limits."""
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


def _shown_partitions(
    snap: AccumulatorFigures, max_rows: Optional[int]
) -> tuple[list[PartitionSnapshot], int]:
    """The partitions with a row, in topic order, and how many were left out."""
    parts = list(snap.partitions.values())
    if max_rows is None or len(parts) <= max_rows:
        return parts, 0
    # The busiest partitions first, so the rows that matter survive the cut.
    parts = sorted(
        parts,
        key=lambda p: (
            PARTITION_STATES.index(p.state) if p.state in PARTITION_STATES else 99,
            -p.unfinished_msgs,
        ),
    )
    hidden = len(parts) - max_rows
    return sorted(parts[:max_rows], key=lambda p: (p.topic, p.partition)), hidden


_PARTITION_HEADER = [
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
]


def _partition_row(ps: PartitionSnapshot) -> list[tuple[str, str]]:
    seq = "-" if ps.next_ack_seq is None else f"{ps.next_ack_seq}/{ps.next_err_seq}"
    oldest = ("" if ps.oldest_age_bracketed or ps.oldest_age_s is None else ">=") + _fmt_age(
        ps.oldest_age_s
    )
    return [
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


def _partition_table(t: Text, snap: AccumulatorFigures, max_rows: Optional[int]) -> None:
    parts, hidden = _shown_partitions(snap, max_rows)
    t.append("partitions\n", style="bold underline")
    rows = [_partition_row(ps) for ps in parts]
    _columns(t, _PARTITION_HEADER, rows, right=set(range(2, len(_PARTITION_HEADER))))
    if hidden:
        t.append(f"... {hidden} more partitions (the quietest)\n", style="dim")


_BROKER_HEADER = [
    "broker",
    "state",
    "in flight req",
    "msgs",
    "waiting req",
    "msgs",
    "rtt ms",
    "queue ms",
    "throttle ms",
    "partitions",
]


def _broker_row(b: BrokerSnapshot) -> list[tuple[str, str]]:
    lim = "inf" if b.max_in_flight >= 1000000 else str(b.max_in_flight)
    return [
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
        (_fmt_ms(b.throttle_avg_ms), "yellow" if b.throttle_avg_ms else ""),
        (str(len(b.partitions)), ""),
    ]


def _broker_table(t: Text, snap: AccumulatorFigures) -> None:
    """One row per broker connection; the bootstrap connections until metadata names
    the brokers."""
    rows = [_broker_row(b) for b in list(snap.brokers.values()) or snap.bootstrap_brokers]
    t.append("brokers\n", style="bold underline")
    _columns(t, _BROKER_HEADER, rows, right=set(range(2, len(_BROKER_HEADER))))


def log_line(snap: AccumulatorFigures) -> str:
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
        f"b{b.id}={b.state}:{b.in_flight_requests}req"
        + (f":throttled{b.throttle_avg_ms:.0f}ms" if b.throttle_avg_ms else "")
        for b in snap.brokers.values()
    )
    return (
        f"{snap.name}: pending {snap.pending} ({snap.msgs_fill:.1%} msgs, {bf} bytes) "
        f"delivered {snap.delivered} failed {snap.failed} rate {rate} "
        f"blocked {snap.blocked_s:.2f}s stats-age {_fmt_age(snap.stats_age_s)}"
        + (f" | {parts}" if parts else "")
        + (f" | {brokers}" if brokers else "")
    )
