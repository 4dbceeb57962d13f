"""The Java producer's metrics (``producer-metrics``) from the snapshot and statistics,
and their Prometheus text form."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

from .snapshot import AccumulatorSnapshot, PartitionSnapshot

__all__ = ["java_metrics", "prometheus_text"]


# --------------------------------------------------------------------------- Java metrics


def _weighted_avg(windows: list[Mapping[str, Any]]) -> Optional[float]:
    n = sum(int(w.get("cnt", 0)) for w in windows)
    if not n:
        return None
    return sum(float(w.get("avg", 0)) * int(w.get("cnt", 0)) for w in windows) / n


def java_metrics(snap: AccumulatorSnapshot, st: Mapping[str, Any]) -> dict[str, float]:
    brokers = [b for b in st.get("brokers", {}).values()]
    topics = list(st.get("topics", {}).values())
    out: dict[str, float] = {
        "buffer-total-bytes": float(snap.max_bytes),
        "buffer-available-bytes": float(snap.max_bytes - (snap.queued_bytes or 0)),
        "bufferpool-wait-time-ns-total": snap.blocked_s * 1e9,
        "record-send-total": float(snap.delivered),
        "record-error-total": float(snap.failed),
        "requests-in-flight": float(sum(int(b.get("waitresp_cnt", 0)) for b in brokers)),
        "record-retry-total": float(sum(int(b.get("txretries", 0)) for b in brokers)),
        "request-total": float(st.get("tx", 0)),
        "response-total": float(st.get("rx", 0)),
        "outgoing-byte-total": float(st.get("tx_bytes", 0)),
        "incoming-byte-total": float(st.get("rx_bytes", 0)),
        "connection-count": float(sum(1 for b in brokers if b.get("state") == "UP")),
    }
    out["record-send-rate"] = snap.delivery_rate or 0.0
    out["record-error-rate"] = snap.error_rate or 0.0
    # An average over a statistics window without samples is NaN, as in the Java
    # client's Avg stat: the names are always there, a missing figure is not a 0.
    for name, key, scale in (
        ("record-queue-time-avg", "int_latency", 1e-3),  # µs -> ms
        ("request-latency-avg", "rtt", 1e-3),
        ("produce-throttle-time-avg", "throttle", 1.0),  # already ms
    ):
        v = _weighted_avg([b.get(key, {}) for b in brokers])
        out[name] = math.nan if v is None else v * scale
    for name, key, scale in (
        ("record-queue-time-max", "int_latency", 1e-3),
        ("request-latency-max", "rtt", 1e-3),
    ):
        vals = [b.get(key, {}) for b in brokers]
        vals = [w for w in vals if w.get("cnt")]
        if vals:
            out[name] = max(float(w.get("max", 0)) for w in vals) * scale
    for name, key in (("batch-size-avg", "batchsize"), ("records-per-request-avg", "batchcnt")):
        v = _weighted_avg([t.get(key, {}) for t in topics])
        out[name] = math.nan if v is None else v
    vals = [t.get("batchsize", {}) for t in topics if t.get("batchsize", {}).get("cnt")]
    if vals:
        out["batch-size-max"] = max(float(w.get("max", 0)) for w in vals)
    ages = [int(t.get("metadata_age", 0)) for t in topics]
    if ages:
        out["metadata-age"] = max(ages) / 1000.0  # Java: seconds
    return out


def _prom_value(value: float) -> str:
    value = float(value)
    return "NaN" if math.isnan(value) else repr(value)  # the exposition format's spelling


def prometheus_text(metrics: Mapping[str, float], snap: AccumulatorSnapshot) -> str:
    """Prometheus text exposition (format 0.0.4) of the metrics and per-partition and
    per-broker gauges."""
    client = snap.name.replace("\\", "\\\\").replace('"', '\\"')
    lines: list[str] = []
    for name, value in sorted(metrics.items()):
        metric = "kafka_producer_" + name.replace("-", "_")
        kind = "counter" if name.endswith("-total") else "gauge"
        lines.append(f"# TYPE {metric} {kind}")
        lines.append(f'{metric}{{client_id="{client}"}} {_prom_value(value)}')

    def family(metric: str, help_: str, rows: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {metric} {help_}")
        lines.append(f"# TYPE {metric} gauge")
        for labels, value in rows:
            lines.append(f'{metric}{{client_id="{client}",{labels}}} {_prom_value(value)}')

    def tp(ps: PartitionSnapshot) -> str:
        return f'topic="{ps.topic}",partition="{ps.partition}"'

    parts = list(snap.partitions.values())
    family(
        "cykafka_partition_waiting_messages",
        "Messages not yet in a request.",
        [(tp(p), p.waiting_msgs) for p in parts],
    )
    family(
        "cykafka_partition_in_flight_messages",
        "Messages in requests in flight.",
        [(tp(p), p.in_flight_msgs) for p in parts],
    )
    family(
        "cykafka_partition_state",
        "1 for the partition's current state.",
        [(f'{tp(p)},state="{p.state}"', 1) for p in parts],
    )
    brokers = list(snap.brokers.values())
    family(
        "cykafka_broker_in_flight_requests",
        "Requests awaiting response.",
        [(f'broker="{b.id}"', b.in_flight_requests) for b in brokers],
    )
    family(
        "cykafka_broker_waiting_requests",
        "Requests awaiting transmission.",
        [(f'broker="{b.id}"', b.waiting_requests) for b in brokers],
    )
    family(
        "cykafka_producer_pending_messages",
        "Messages without an outcome (exact).",
        [("", snap.pending)],
    )
    return "\n".join(line.replace(",}", "}") for line in lines) + "\n"
