"""The Java producer's metrics (``producer-metrics``), by Java name and definition.

Java keeps every sampled metric in ``metrics.num.samples`` (2) windows of
``metrics.sample.window.ms`` (30 s): an average is the mean over the samples still in
those windows (NaN only when there is none), a rate is their total over the time they
span, counted as at least one full window more than the current one (the Java client's
``Rate``).  :class:`SampledStat` does the same with what each statistics emit adds.

Where each figure's samples come from, and when it can be NaN: :data:`DOCS`, one entry
per metric (also the Prometheus ``# HELP`` text).  librdkafka's window statistics
(STATISTICS.md: ``int_latency``, ``rtt``, ``throttle``, ``batchsize``, ``batchcnt``) hold
the values since the previous emit and are "reset to 0 on each stats emit"; the extension
keeps every emit until it is read (the last minute of them, within 16 MiB), so each emit's
samples enter the windows, however seldom metrics() is called.  Figures from statistics
lag by up to one ``statistics.interval.ms``: when records had their outcome after the
latest emit and the windows hold no sample yet, metrics() waits for the next emit (at most
one interval and a little) instead of answering NaN.  Counters (``txmsgs``, bytes) are
cumulative, so nothing is missed between reads.  Without statistics
(``inspect_interval_ms=0`` and no ``statistics.interval.ms``), and for a producer closed
before the emit that follows its last traffic, the statistics' figures have no sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from .snapshot import AccumulatorSnapshot, PartitionSnapshot

__all__ = [
    "DOCS",
    "SAMPLES",
    "WINDOW_S",
    "JavaMetrics",
    "SampledStat",
    "opentelemetry_points",
    "prometheus_text",
]

#: The Java client's defaults: metrics.sample.window.ms=30000, metrics.num.samples=2.
WINDOW_S = 30.0
SAMPLES = 2


_WINDOW = (
    " (librdkafka window statistics, ms); NaN until one was sampled, and again after "
    "60 s (Java's two 30 s windows) without one"
)

#: Each metric: what it measures, where its samples come from, when it can be NaN.
DOCS: dict[str, str] = {
    "buffer-total-bytes": "queue.buffering.max.kbytes in bytes (statistics msg_size_max)",
    "buffer-available-bytes": "buffer-total-bytes minus the bytes librdkafka holds (msg_size)",
    "bufferpool-wait-time-ns-total": "exact: time produce() waited for room in the queue",
    "buffer-exhausted-total": "exact: produce calls refused with QueueFullError (max.block.ms)",
    "waiting-threads": "threads sleeping in produce() until the queue has room",
    "record-send-total": "transmissions, retries included (txmsgs; at least the deliveries)",
    "record-send-rate": "record-send-total's growth over the windows' span (Java's Rate)",
    "record-retry-total": "transmissions beyond each record's first (txmsgs - records sent)",
    "record-retry-rate": "record-retry-total's growth over the windows' span",
    "record-error-total": "exact: records whose delivery failed",
    "record-error-rate": "record-error-total's growth over the windows' span",
    "requests-in-flight": "requests awaiting a response (waitresp_cnt, latest statistics)",
    "request-total": "requests sent (tx)",
    "response-total": "responses received (rx)",
    "outgoing-byte-total": "bytes sent to brokers (tx_bytes)",
    "incoming-byte-total": "bytes received from brokers (rx_bytes)",
    "connection-count": "brokers in state UP",
    "record-queue-time-avg": "produce() to the record's produce request (int_latency)" + _WINDOW,
    "record-queue-time-max": "largest record-queue-time (int_latency)" + _WINDOW,
    "request-latency-avg": "response round trip of every request (rtt)" + _WINDOW,
    "request-latency-max": "largest request round trip (rtt)" + _WINDOW,
    "produce-throttle-time-avg": (
        "broker throttle per response (throttle); librdkafka samples throttled responses "
        "only, so every other response (each an rtt sample) counts 0 ms; NaN until a "
        "response, and after 60 s without one"
    ),
    "produce-throttle-time-max": "largest throttle (0: none throttled); NaN as the average",
    "batch-size-avg": "bytes of each MessageSet, compressed (batchsize)" + _WINDOW,
    "batch-size-max": "largest MessageSet (batchsize)" + _WINDOW,
    "records-per-request-avg": "records per MessageSet (batchcnt)" + _WINDOW,
    "record-size-avg": (
        "key + value bytes per record sent (growth of txmsg_bytes / txmsgs between "
        "statistics emits); NaN until an emit saw a record sent, and after 60 s without"
    ),
    "record-size-max": (
        "exact: largest key + value of a record produced, sampled when metrics() is "
        "called; NaN until a record was produced, and after 60 s without one"
    ),
    "compression-rate-avg": (
        "bytes sent (tx_bytes: batches with framing, and other requests) / record bytes "
        "sent (txmsg_bytes); NaN until an emit saw a record sent, and after 60 s without"
    ),
    "flush-time-ns-total": "exact: time spent in flush()",
    "txn-init-time-ns-total": "exact: time spent in init_transactions()",
    "txn-begin-time-ns-total": "exact: time spent in begin_transaction()",
    "txn-commit-time-ns-total": "exact: time spent in commit_transaction()",
    "txn-abort-time-ns-total": "exact: time spent in abort_transaction()",
    "metadata-age": "age of the oldest topic metadata, s (present once a topic is known)",
}


@dataclass
class _Sample:
    start: float
    count: float = 0.0
    total: float = 0.0
    max: float = -math.inf


class SampledStat:
    """Java's SampledStat: ``samples`` windows of ``window_s``; older data expires."""

    def __init__(self, window_s: float = WINDOW_S, samples: int = SAMPLES) -> None:
        self.window_s = window_s
        self.samples = samples
        self._samples: list[_Sample] = []

    def _purge(self, now: float) -> None:
        horizon = self.window_s * self.samples
        self._samples = [s for s in self._samples if now - s.start < horizon]

    def record(
        self, total: float, now: float, count: float = 1.0, peak: Optional[float] = None
    ) -> None:
        """Add ``count`` events summing to ``total`` (largest ``peak``) at ``now``."""
        self._purge(now)
        if not self._samples or now - self._samples[-1].start >= self.window_s:
            self._samples.append(_Sample(now))
            del self._samples[: -self.samples]
        s = self._samples[-1]
        s.count += count
        s.total += total
        if count:
            s.max = max(s.max, total / count if peak is None else peak)

    def count(self, now: float) -> float:
        """How many events the live samples hold."""
        self._purge(now)
        return sum(s.count for s in self._samples)

    def total(self, now: float) -> float:
        """The sum of the live samples' events."""
        self._purge(now)
        return sum(s.total for s in self._samples)

    def avg(self, now: float) -> float:
        self._purge(now)
        count = sum(s.count for s in self._samples)
        return sum(s.total for s in self._samples) / count if count else math.nan

    def max(self, now: float) -> float:
        self._purge(now)
        peaks = [s.max for s in self._samples if s.count]
        return max(peaks) if peaks else math.nan

    def rate(self, now: float) -> float:
        """Java's Rate: the live samples' total over the time since the oldest began,
        padded to at least ``samples - 1`` full windows."""
        self._purge(now)
        elapsed = now - self._samples[0].start if self._samples else 0.0
        full = int(elapsed // self.window_s)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_s
        total = sum(s.total for s in self._samples)
        return total / elapsed if elapsed > 0 else 0.0


class JavaMetrics:
    """The sampled stats of one producer, fed by each statistics emit it sees."""

    def __init__(self, window_s: float = WINDOW_S, samples: int = SAMPLES) -> None:
        def stat() -> SampledStat:
            return SampledStat(window_s, samples)

        self.request_latency = stat()
        self.queue_time = stat()
        self.throttle = stat()
        self.batch_size = stat()
        self.records_per_request = stat()
        self.record_size = stat()
        self.record_size_peak = stat()
        self.compression = stat()
        self.sends = stat()
        self.retries = stat()
        self.errors = stat()
        self._last: dict[str, float] = {}

    def _delta(self, name: str, value: float) -> float:
        d = value - self._last.get(name, 0.0)
        self._last[name] = value
        return max(d, 0.0)

    def observe_stats(self, st: Mapping[str, Any], now: float) -> None:
        """One statistics emit: its window stats and the growth of its counters."""
        # Kept in librdkafka's integer units (rtt and int_latency in µs, converted when
        # read): integer sums are exact, so an average never rounds above its maximum.
        for b in st.get("brokers", {}).values():
            for stat, key in (
                (self.request_latency, "rtt"),
                (self.queue_time, "int_latency"),
                (self.throttle, "throttle"),  # ms
            ):
                _window(stat, b.get(key), now)
        for t in st.get("topics", {}).values():
            _window(self.batch_size, t.get("batchsize"), now)
            _window(self.records_per_request, t.get("batchcnt"), now)
        # Cumulative counters, so a delta covers every interval since the last one seen.
        sent = self._delta("txmsgs", float(st.get("txmsgs", 0)))
        sent_bytes = self._delta("txmsg_bytes", float(st.get("txmsg_bytes", 0)))
        wire_bytes = self._delta("tx_bytes", float(st.get("tx_bytes", 0)))
        if sent:
            self.record_size.record(sent_bytes, now, count=sent)
        if sent_bytes and wire_bytes:
            self.compression.record(wire_bytes, now, count=sent_bytes)

    def has_window_samples(self, now: float) -> bool:
        """Whether the windows fed by librdkafka's window statistics hold a sample."""
        return any(s.count(now) for s in (self.queue_time, self.request_latency, self.batch_size))

    def throttle_avg(self, now: float) -> float:
        """Java averages the throttle time of every response, 0 ms included; librdkafka
        samples only throttled ones (``rd_kafka_op_throttle_time``: "if throttle_time >
        0"), so the other responses, each sampled in ``rtt``, count as 0 ms."""
        responses = max(self.request_latency.count(now), self.throttle.count(now))
        return self.throttle.total(now) / responses if responses else math.nan

    def throttle_max(self, now: float) -> float:
        if self.throttle.count(now):
            return self.throttle.max(now)
        return 0.0 if self.request_latency.count(now) else math.nan

    def observe_exact(self, failed: int, retries: int, now: float) -> None:
        for stat, name, value in (
            (self.errors, "failed", failed),
            (self.retries, "retries", retries),
        ):
            d = self._delta(name, float(value))
            if d:
                stat.record(d, now, count=d)

    def values(
        self,
        snap: AccumulatorSnapshot,
        st: Mapping[str, Any],
        retries: int,
        calls_ns: Mapping[str, int],
        now: float,
        record_size_peak: int = -1,
    ) -> dict[str, float]:
        """Every metric by Java name (NaN: no sample in the windows).
        ``record_size_peak``: the largest record produced since the previous call (-1:
        none)."""
        self.observe_exact(snap.failed, retries, now)
        if record_size_peak >= 0:
            self.record_size_peak.record(record_size_peak, now, peak=record_size_peak)
        brokers = list(st.get("brokers", {}).values())
        # A delivered record was sent at least once: the exact count bounds the
        # statistics' (older) one from below, so the rate is there from the first call.
        sent_total = max(float(st.get("txmsgs", 0)), float(snap.delivered))
        sent = self._delta("sent", sent_total)
        if sent:
            self.sends.record(sent, now, count=sent)
        out: dict[str, float] = {
            "buffer-total-bytes": float(snap.max_bytes),
            "buffer-available-bytes": float(snap.max_bytes - (snap.queued_bytes or 0)),
            "bufferpool-wait-time-ns-total": snap.blocked_s * 1e9,
            "buffer-exhausted-total": float(snap.buffer_exhausted),
            "waiting-threads": float(snap.waiting_threads),
            "record-send-total": sent_total,
            "record-send-rate": self.sends.rate(now),
            "record-retry-total": float(retries),
            "record-retry-rate": self.retries.rate(now),
            "record-error-total": float(snap.failed),
            "record-error-rate": self.errors.rate(now),
            "requests-in-flight": float(sum(int(b.get("waitresp_cnt", 0)) for b in brokers)),
            "request-total": float(st.get("tx", 0)),
            "response-total": float(st.get("rx", 0)),
            "outgoing-byte-total": float(st.get("tx_bytes", 0)),
            "incoming-byte-total": float(st.get("rx_bytes", 0)),
            "connection-count": float(sum(1 for b in brokers if b.get("state") == "UP")),
            "record-queue-time-avg": self.queue_time.avg(now) / 1000.0,  # µs -> ms
            "record-queue-time-max": self.queue_time.max(now) / 1000.0,
            "request-latency-avg": self.request_latency.avg(now) / 1000.0,
            "request-latency-max": self.request_latency.max(now) / 1000.0,
            "produce-throttle-time-avg": self.throttle_avg(now),
            "produce-throttle-time-max": self.throttle_max(now),
            "batch-size-avg": self.batch_size.avg(now),
            "batch-size-max": self.batch_size.max(now),
            "records-per-request-avg": self.records_per_request.avg(now),
            "record-size-avg": self.record_size.avg(now),
            "record-size-max": self.record_size_peak.max(now),
            "compression-rate-avg": self.compression.avg(now),
            "flush-time-ns-total": float(calls_ns.get("flush", 0)),
        }
        for call, name in (
            ("init_transactions", "txn-init-time-ns-total"),
            ("begin_transaction", "txn-begin-time-ns-total"),
            ("commit_transaction", "txn-commit-time-ns-total"),
            ("abort_transaction", "txn-abort-time-ns-total"),
        ):
            out[name] = float(calls_ns.get(call, 0))
        ages = [int(t.get("metadata_age", 0)) for t in st.get("topics", {}).values()]
        if ages:
            out["metadata-age"] = max(ages) / 1000.0  # Java: seconds
        return out


def _window(stat: SampledStat, w: Optional[Mapping[str, Any]], now: float) -> None:
    """One librdkafka window stat (values since the previous emit) into ``stat``."""
    if w and w.get("cnt"):
        stat.record(float(w.get("sum", 0)), now, count=float(w["cnt"]), peak=float(w.get("max", 0)))


#: OpenTelemetry instrument kind by metric name: totals are monotonic sums.
def _otel_kind(name: str) -> str:
    return "sum" if name.endswith("-total") else "gauge"


def opentelemetry_points(metrics: Mapping[str, float], client_id: str) -> list[dict[str, Any]]:
    """The metrics as OpenTelemetry data points, named as the Java client's OpenTelemetry
    bridge (KIP-714) names them: ``org.apache.kafka.producer.<name with dots>``, with a
    ``client_id`` attribute; totals are cumulative monotonic sums, the rest gauges.
    NaN values are left out (OpenTelemetry has no "no sample")."""
    points = []
    for name, value in sorted(metrics.items()):
        if math.isnan(value):
            continue
        points.append(
            {
                "name": "org.apache.kafka.producer." + name.replace("-", "."),
                "kind": _otel_kind(name),
                "monotonic": _otel_kind(name) == "sum",
                "value": value,
                "attributes": {"client_id": client_id},
            }
        )
    return points


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
        if name in DOCS:
            lines.append(f"# HELP {metric} {DOCS[name]}")
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
        "cykafka_broker_throttle_ms",
        "The broker's throttle time per throttled response in the last statistics "
        "interval (a client quota; 0: none throttled).",
        [(f'broker="{b.id}"', b.throttle_avg_ms or 0.0) for b in brokers],
    )
    family(
        "cykafka_producer_pending_messages",
        "Messages without an outcome (exact).",
        [("", snap.pending)],
    )
    return "\n".join(line.replace(",}", "}") for line in lines) + "\n"
