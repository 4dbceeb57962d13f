"""The accumulator inspector: where a producer's messages wait, and why.

The Java producer buffers records per partition in a RecordAccumulator; librdkafka
has the same stages under other names.  :meth:`Producer.accumulator` returns an
:class:`AccumulatorSnapshot` of them:

========================  ==============================================================
Java                      librdkafka (statistics field, STATISTICS.md)
========================  ==============================================================
BufferPool usage          ``msg_cnt``/``msg_size`` vs ``msg_max``/``msg_size_max``
                          (``queue.buffering.max.messages``/``.kbytes``)
per-partition deque       ``msgq_cnt``: "messages waiting to be produced in first-level
                          queue", then the broker thread's transmit queue (``xmit_msgq``)
in-flight batches         ``msgs_inflight``: "current number of messages in-flight to/from
                          broker" (in a request being sent or awaiting its response)
in-flight requests        broker ``waitresp_cnt``: "requests in-flight to broker awaiting
                          response", vs ``max.in.flight.requests.per.connection``
sender's ready requests   broker ``outbuf_cnt``: "requests awaiting transmission to broker"
========================  ==============================================================

Two kinds of figures, kept apart:

* **exact** -- counters the extension keeps itself (produced, delivered, failed, pending,
  time blocked in ``produce()``; per partition delivered, failed and the last acked
  offset).  Current when the snapshot is taken.
* **from statistics** -- everything else, parsed from librdkafka's latest statistics JSON;
  ``age_s`` says how old it is.  The interval is the producer's
  ``inspect_interval_ms`` (default :data:`DEFAULT_INTERVAL_MS`).  librdkafka 2.16 honours
  intervals well below the 1000 ms "granularity" CONFIGURATION.md mentions (measured: 10
  emits/s at 100 ms, ~100 at 10 ms).

Partition ``state`` (first rule that matches; "waiting" = ``queued_msgs + xmit_msgs``):

``no_leader``
    the partition has no leader (``leader`` -1), is ``unknown`` in the metadata, has no
    broker handle serving it (``broker`` -1, e.g. its leader left the metadata), or it is
    the unassigned partition -1 holding messages until the topic's metadata arrives.
``backing_off``
    its leader's connection is not ``UP`` (librdkafka reconnects after
    ``reconnect.backoff.ms``), or that broker retried requests (``txretries`` grew since the
    previous snapshot) while this partition has messages waiting or in flight.
``muted``
    messages wait while the leader connection's in-flight window is full (``waitresp_cnt``
    >= ``max.in.flight``): the in-flight limit (with ``max.in.flight=1``, ordering) holds
    the partition back, as Java mutes a partition while its batch is in flight.
``ready``
    messages wait and a batch is complete: ``batch.num.messages`` or ``batch.size``
    reached, or the oldest waiting message is older than ``linger.ms``.
``accumulating``
    messages wait for a batch to fill (younger than ``linger.ms``, batch not full).
``in_flight``
    nothing waits, messages are in flight.
``idle``
    nothing waits or is in flight.

``xmit_msgs`` is an estimate: librdkafka reports ``xmit_msgq_cnt`` as 0 always ("FIXME:
xmit_msgq is local to the broker thread", rdkafka.c), so it is derived as ``msgs`` (total
enqueued on the partition) minus the exact outcomes minus ``msgq_cnt`` minus
``msgs_inflight``.  ``oldest_age_s`` is a lower bound: librdkafka keeps no per-partition
timestamps in its statistics, so the inspector remembers, per statistics sample, how many
messages had been enqueued on the partition; the oldest undelivered message (messages of
one partition complete in order) was enqueued before the first sample whose count
exceeds the partition's outcomes; with an earlier sample whose count did not, the age is
known to within one interval (``oldest_age_bracketed``).  Snapshots at least once per
statistics interval (the live view takes them) keep it tight.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO

from .config import canonical

if TYPE_CHECKING:
    from .producer import Producer

__all__ = [
    "DEFAULT_INTERVAL_MS",
    "PARTITION_STATES",
    "AccumulatorSnapshot",
    "BrokerSnapshot",
    "EosSnapshot",
    "PartitionSnapshot",
    "live_view",
]

_logger = logging.getLogger("cykafka.inspector")

#: statistics.interval.ms the inspector asks for when the producer does not say
#: (``Producer(inspect_interval_ms=...)``; 0 turns the statistics off).
DEFAULT_INTERVAL_MS = 1000

#: Every value PartitionSnapshot.state takes, most urgent first.
PARTITION_STATES = (
    "no_leader",
    "backing_off",
    "muted",
    "ready",
    "accumulating",
    "in_flight",
    "idle",
)

# librdkafka defaults (CONFIGURATION.md) for properties the state rules read.
_DEFAULTS = {
    "max.in.flight.requests.per.connection": 1000000,
    "batch.num.messages": 10000,
    "batch.size": 1000000,
    "queue.buffering.max.ms": 5.0,
    "queue.buffering.max.messages": 100000,
    "queue.buffering.max.kbytes": 1048576,
}

_RATE_WINDOW_S = 1.0  # delivery rate: over at least this much of the past
_MAX_SAMPLES = 512  # per-partition enqueue samples kept for oldest_age_s


# --------------------------------------------------------------------------- snapshot types


@dataclass
class PartitionSnapshot:
    """One partition's stage of the accumulator (see the module doc for ``state``)."""

    topic: str
    partition: int
    state: str
    leader: int  # leader broker id, -1: none
    queued_msgs: int  # msgq_cnt: waiting for the broker thread to batch them
    queued_bytes: int  # msgq_bytes
    xmit_msgs: int  # estimate: in the broker thread's transmit queue
    in_flight_msgs: int  # msgs_inflight: in requests being sent or awaiting response
    oldest_age_s: Optional[float]  # lower bound on the oldest undelivered message's age
    oldest_age_bracketed: bool  # True: within one statistics interval of the true age
    enqueued: int  # msgs: total messages enqueued on this partition
    delivered: int  # exact
    failed: int  # exact
    last_acked_offset: int  # exact, -1: none yet
    next_ack_seq: Optional[int] = None  # idempotence: next expected acked sequence
    next_err_seq: Optional[int] = None  # idempotence: next expected errored sequence
    acked_msgid: Optional[int] = None  # idempotence: last acked internal message id
    age_s: float = 0.0  # age of the statistics the non-exact figures come from

    @property
    def waiting_msgs(self) -> int:
        """Messages not yet in a request (queued + transmit queue)."""
        return self.queued_msgs + self.xmit_msgs

    @property
    def unfinished_msgs(self) -> int:
        """Messages without an outcome: waiting or in flight."""
        return self.waiting_msgs + self.in_flight_msgs


@dataclass
class BrokerSnapshot:
    """One broker connection (figures from statistics; microseconds turned into ms)."""

    id: int  # nodeid, -1 for a bootstrap connection
    name: str
    state: str  # INIT, DOWN, CONNECT, AUTH, APIVERSION_QUERY, UP, ...
    state_age_s: float
    in_flight_requests: int  # waitresp_cnt
    in_flight_msgs: int  # waitresp_msg_cnt
    max_in_flight: int  # max.in.flight.requests.per.connection
    waiting_requests: int  # outbuf_cnt: built, awaiting transmission
    waiting_msgs: int  # outbuf_msg_cnt
    rtt_avg_ms: Optional[float]  # None: no sample in the last interval
    int_latency_avg_ms: Optional[float]  # produce() -> request built
    outbuf_latency_avg_ms: Optional[float]  # request built -> written to the socket
    throttle_avg_ms: Optional[float]
    tx_retries: int
    req_timeouts: int
    partitions: list[tuple[str, int]] = field(default_factory=list)
    age_s: float = 0.0

    @property
    def in_flight_fill(self) -> float:
        """In-flight requests as a fraction of the max-in-flight limit."""
        return self.in_flight_requests / self.max_in_flight if self.max_in_flight else 0.0


@dataclass
class EosSnapshot:
    """Idempotence / transactions (the statistics' ``eos`` object)."""

    producer_id: int
    producer_epoch: int
    idempotence_state: str  # e.g. Init, RequestPID, WaitPID, Assigned, DrainBump
    idempotence_state_age_s: float
    transaction_state: str  # e.g. Init, Ready, InTransaction, CommittingTransaction
    transaction_state_age_s: float
    txn_may_enqueue: bool
    epoch_count: int
    age_s: float = 0.0


@dataclass
class AccumulatorSnapshot:
    """Where the producer's messages are, at ``taken_at`` (wall clock, seconds)."""

    name: str
    taken_at: float
    # exact, current
    produced: int
    delivered: int
    failed: int
    pending: int  # produced, outcome not yet known
    blocked_s: float  # total time produce calls waited for room
    # producer-wide fill vs queue.buffering.max.messages / .kbytes
    max_msgs: int
    max_bytes: int
    queued_bytes: Optional[int]  # from statistics (msg_size); None without statistics
    delivery_rate: Optional[float]  # messages/s over the last rate_window_s
    error_rate: Optional[float]
    rate_window_s: Optional[float]
    # from statistics
    stats_age_s: Optional[float]  # None: no statistics yet (or inspect_interval_ms=0)
    stats_count: int
    partitions: dict[tuple[str, int], PartitionSnapshot] = field(default_factory=dict)
    brokers: dict[int, BrokerSnapshot] = field(default_factory=dict)
    bootstrap_brokers: list[BrokerSnapshot] = field(default_factory=list)
    eos: Optional[EosSnapshot] = None

    @property
    def msgs_fill(self) -> float:
        """Messages without an outcome / queue.buffering.max.messages (exact numerator)."""
        return self.pending / self.max_msgs if self.max_msgs else 0.0

    @property
    def bytes_fill(self) -> Optional[float]:
        """Bytes queued / queue.buffering.max.kbytes (from statistics)."""
        if self.queued_bytes is None or not self.max_bytes:
            return None
        return self.queued_bytes / self.max_bytes

    @property
    def queued_msgs(self) -> int:
        """Messages waiting in partition queues (not yet in a request), from statistics."""
        return sum(p.waiting_msgs for p in self.partitions.values())

    @property
    def in_flight_msgs(self) -> int:
        return sum(p.in_flight_msgs for p in self.partitions.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (partition keys become ``"topic[partition]"``)."""
        d = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("partitions", "brokers", "bootstrap_brokers", "eos")
        }
        d["msgs_fill"] = self.msgs_fill
        d["bytes_fill"] = self.bytes_fill
        d["partitions"] = {
            f"{t}[{p}]": {**dataclasses.asdict(ps), "waiting_msgs": ps.waiting_msgs}
            for (t, p), ps in sorted(self.partitions.items())
        }
        d["brokers"] = {str(b): _broker_dict(bs) for b, bs in sorted(self.brokers.items())}
        d["bootstrap_brokers"] = [_broker_dict(bs) for bs in self.bootstrap_brokers]
        d["eos"] = dataclasses.asdict(self.eos) if self.eos is not None else None
        return d

    def table(self, max_rows: Optional[int] = None) -> Any:
        """A rich renderable: fill gauges, partition table (the ``max_rows`` busiest
        partitions if given), broker table, eos line; colour-coded."""
        return _render(self, max_rows)

    def log_line(self) -> str:
        """One plain line (the live view's form when stdout is not a terminal)."""
        return _log_line(self)


def _broker_dict(b: BrokerSnapshot) -> dict[str, Any]:
    d = dataclasses.asdict(b)
    d["partitions"] = [f"{t}[{p}]" for t, p in b.partitions]
    return d


# --------------------------------------------------------------------------- the inspector


def _us_to_ms(window: Optional[Mapping[str, Any]]) -> Optional[float]:
    # Window stats are "reset to 0 on each stats emit"; avg is meaningless without samples.
    if not window or not window.get("cnt"):
        return None
    return float(window.get("avg", 0)) / 1000.0


def _num(producer: Producer, config: Mapping[str, str], key: str) -> float:
    # librdkafka's own value first: it includes its adjustments, e.g. "max.in.flight=5"
    # when enable.idempotence (or transactional.id) is set and the user did not set it.
    for value in (producer._effective_config(key), config.get(key)):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    return float(_DEFAULTS[key])


class Inspector:
    """Per-producer state of the inspector: the cached parse of the latest statistics
    (by statistics count), rate samples and per-partition enqueue samples."""

    def __init__(self, producer: Producer) -> None:
        self._producer = weakref.ref(producer)
        cfg = {canonical(k): v for k, v in getattr(producer, "_config", {}).items()}
        self.max_in_flight = int(_num(producer, cfg, "max.in.flight.requests.per.connection"))
        self.batch_msgs = int(_num(producer, cfg, "batch.num.messages"))
        self.batch_bytes = int(_num(producer, cfg, "batch.size"))
        self.linger_s = _num(producer, cfg, "queue.buffering.max.ms") / 1000.0
        self.max_msgs = int(_num(producer, cfg, "queue.buffering.max.messages"))
        self.max_bytes = int(_num(producer, cfg, "queue.buffering.max.kbytes")) * 1024
        self._lock = threading.Lock()
        self._parsed: Optional[dict[str, Any]] = None
        self._parsed_count = -1
        self._rates: deque[tuple[float, int, int]] = deque(maxlen=256)
        # Seeded with the producer's start, so the first snapshot already has a rate
        # (over the producer's life so far) instead of none.
        started = getattr(producer, "_started_at", None)
        if started is not None:
            self._rates.append((started, 0, 0))
        self._enq: dict[tuple[str, int], deque[tuple[float, int]]] = {}
        self._retries: dict[str, int] = {}  # broker name -> txretries at last parse
        self._retried: set[str] = set()  # brokers whose txretries grew at last parse

    def _stats(self, producer: Producer) -> tuple[Optional[dict[str, Any]], Optional[float], int]:
        text, received, count = producer._last_stats()
        if text is None or received is None:
            return None, None, 0
        if count != self._parsed_count:
            # Parsed here, in the caller's thread, once per statistics emit: the event
            # thread only stored the string.
            parsed = json.loads(text)
            self._note_sample(parsed, received)
            self._parsed, self._parsed_count = parsed, count
        return self._parsed, received, count

    def _note_sample(self, st: dict[str, Any], received: float) -> None:
        retried = set()
        for name, b in st.get("brokers", {}).items():
            n = int(b.get("txretries", 0))
            if n > self._retries.get(name, n):
                retried.add(name)
            self._retries[name] = n
        self._retried = retried
        for tname, t in st.get("topics", {}).items():
            for p in t.get("partitions", {}).values():
                key = (tname, int(p["partition"]))
                samples = self._enq.setdefault(key, deque())
                n = int(p.get("msgs", 0))
                if not samples or samples[-1][1] != n:
                    if len(samples) >= _MAX_SAMPLES:
                        # Keep the oldest (it bounds the oldest message's age); thin the rest.
                        first = samples.popleft()
                        samples.popleft()
                        samples.appendleft(first)
                    samples.append((received, n))

    def _oldest_age(
        self, key: tuple[str, int], done: int, now: float
    ) -> tuple[Optional[float], bool]:
        """(age, known_within_one_sample): the first sample whose enqueued count exceeds
        the outcomes was taken after the oldest undelivered message was enqueued.  With
        an earlier sample whose count did not, the age is bracketed by the two samples;
        without one it is only a lower bound."""
        samples = self._enq.get(key)
        if not samples:
            return None, False
        # Samples before the last one whose count is <= the outcomes say nothing more.
        while len(samples) > 1 and samples[1][1] <= done:
            samples.popleft()
        bracketed = samples[0][1] <= done
        for t, n in samples:
            if n > done:
                return max(0.0, now - t), bracketed
        return None, False

    def snapshot(self) -> AccumulatorSnapshot:
        producer = self._producer()
        if producer is None:
            raise RuntimeError("the Producer is gone")
        with self._lock:
            return self._snapshot(producer)

    def _snapshot(self, producer: Producer) -> AccumulatorSnapshot:
        now = time.monotonic()
        c = producer._counters()
        per_part = producer._partition_counters()
        st, received, count = self._stats(producer)
        age = None if received is None else max(0.0, now - received)
        self._rates.append((now, int(c.get("delivered", 0)), int(c.get("failed", 0))))
        rate = err_rate = window = None
        if len(self._rates) > 1:
            base = self._rates[0]
            for sample in self._rates:
                if now - sample[0] >= _RATE_WINDOW_S:
                    base = sample
            while self._rates[0] is not base:
                self._rates.popleft()
            window = now - base[0]
            if window > 0:
                rate = (self._rates[-1][1] - base[1]) / window
                err_rate = (self._rates[-1][2] - base[2]) / window
        snap = AccumulatorSnapshot(
            name=producer.name or "",
            taken_at=time.time(),
            produced=int(c.get("produced", 0)),
            delivered=int(c.get("delivered", 0)),
            failed=int(c.get("failed", 0)),
            pending=int(c.get("pending", 0)),
            blocked_s=float(c.get("blocked_seconds", 0.0)),
            max_msgs=int(st["msg_max"]) if st else self.max_msgs,
            max_bytes=int(st["msg_size_max"]) if st else self.max_bytes,
            queued_bytes=int(st["msg_size"]) if st else None,
            delivery_rate=rate,
            error_rate=err_rate,
            rate_window_s=window,
            stats_age_s=age,
            stats_count=count,
        )
        if st:
            self._fill_from_stats(snap, st, per_part, age or 0.0, now)
        if snap.pending == 0:
            # Partitions the statistics do not show (none emitted yet: a short import can
            # be over before the first) still get a row from their exact outcomes; with
            # nothing pending, "idle" is exact too.  The leader is not known without them.
            for (tname, part), (delivered, failed, last) in per_part.items():
                if (tname, part) not in snap.partitions:
                    snap.partitions[(tname, part)] = PartitionSnapshot(
                        topic=tname,
                        partition=part,
                        state="idle",
                        leader=-1,
                        queued_msgs=0,
                        queued_bytes=0,
                        xmit_msgs=0,
                        in_flight_msgs=0,
                        oldest_age_s=None,
                        oldest_age_bracketed=False,
                        enqueued=delivered + failed,
                        delivered=delivered,
                        failed=failed,
                        last_acked_offset=last,
                        age_s=0.0,
                    )
            snap.partitions = dict(sorted(snap.partitions.items()))
        return snap

    def _fill_from_stats(
        self,
        snap: AccumulatorSnapshot,
        st: dict[str, Any],
        per_part: dict[tuple[str, int], tuple[int, int, int]],
        age: float,
        now: float,
    ) -> None:
        brokers_by_id: dict[int, BrokerSnapshot] = {}
        broker_names: dict[int, str] = {}
        for name, b in st.get("brokers", {}).items():
            bs = BrokerSnapshot(
                id=int(b.get("nodeid", -1)),
                name=name,
                state=str(b.get("state", "?")),
                state_age_s=int(b.get("stateage", 0)) / 1e6,
                in_flight_requests=int(b.get("waitresp_cnt", 0)),
                in_flight_msgs=int(b.get("waitresp_msg_cnt", 0)),
                max_in_flight=self.max_in_flight,
                waiting_requests=int(b.get("outbuf_cnt", 0)),
                waiting_msgs=int(b.get("outbuf_msg_cnt", 0)),
                rtt_avg_ms=_us_to_ms(b.get("rtt")),
                int_latency_avg_ms=_us_to_ms(b.get("int_latency")),
                outbuf_latency_avg_ms=_us_to_ms(b.get("outbuf_latency")),
                throttle_avg_ms=(
                    float(b["throttle"]["avg"]) if b.get("throttle", {}).get("cnt") else None
                ),
                tx_retries=int(b.get("txretries", 0)),
                req_timeouts=int(b.get("req_timeouts", 0)),
                partitions=sorted(
                    (tp["topic"], int(tp["partition"])) for tp in b.get("toppars", {}).values()
                ),
                age_s=age,
            )
            if bs.id >= 0:
                brokers_by_id[bs.id] = bs
                broker_names[bs.id] = name
            else:
                snap.bootstrap_brokers.append(bs)
        snap.brokers = dict(sorted(brokers_by_id.items()))
        idempotent = "eos" in st
        for tname, t in st.get("topics", {}).items():
            for p in t.get("partitions", {}).values():
                part = int(p["partition"])
                key = (tname, part)
                delivered, failed, last = per_part.get(key, (0, 0, -1))
                msgq = int(p.get("msgq_cnt", 0))
                inflight = int(p.get("msgs_inflight", 0))
                enq = int(p.get("msgs", 0))
                if part < 0:
                    # The unassigned partition only holds messages until partitioning;
                    # its "msgs" counts every message that passed through it.
                    if msgq == 0:
                        continue
                    xmit = 0
                    oldest, bracketed = None, False
                else:
                    xmit = max(0, enq - delivered - failed - msgq - inflight)
                    oldest, bracketed = (
                        self._oldest_age(key, delivered + failed, now)
                        if msgq + xmit + inflight
                        else (None, False)
                    )
                ps = PartitionSnapshot(
                    topic=tname,
                    partition=part,
                    state="idle",
                    leader=int(p.get("leader", -1)),
                    queued_msgs=msgq,
                    queued_bytes=int(p.get("msgq_bytes", 0)),
                    xmit_msgs=xmit,
                    in_flight_msgs=inflight,
                    oldest_age_s=oldest,
                    oldest_age_bracketed=bracketed,
                    enqueued=enq,
                    delivered=delivered,
                    failed=failed,
                    last_acked_offset=last,
                    age_s=age,
                )
                if idempotent:
                    ps.next_ack_seq = int(p.get("next_ack_seq", 0))
                    ps.next_err_seq = int(p.get("next_err_seq", 0))
                    ps.acked_msgid = int(p.get("acked_msgid", 0))
                ps.state = self._state(ps, p, snap.brokers, broker_names)
                snap.partitions[key] = ps
        snap.partitions = dict(sorted(snap.partitions.items()))
        eos = st.get("eos")
        if eos:
            snap.eos = EosSnapshot(
                producer_id=int(eos.get("producer_id", -1)),
                producer_epoch=int(eos.get("producer_epoch", -1)),
                idempotence_state=str(eos.get("idemp_state", "?")),
                idempotence_state_age_s=int(eos.get("idemp_stateage", 0)) / 1000.0,
                transaction_state=str(eos.get("txn_state", "?")),
                transaction_state_age_s=int(eos.get("txn_stateage", 0)) / 1000.0,
                txn_may_enqueue=bool(eos.get("txn_may_enq", False)),
                epoch_count=int(eos.get("epoch_cnt", 0)),
                age_s=age,
            )

    def _state(
        self,
        ps: PartitionSnapshot,
        raw: Mapping[str, Any],
        brokers: Mapping[int, BrokerSnapshot],
        names: Mapping[int, str],
    ) -> str:
        # The rules, in order, are documented in the module docstring.
        waiting = ps.waiting_msgs
        busy = waiting + ps.in_flight_msgs
        served_by = int(raw.get("broker", -1))
        if ps.partition < 0 or ps.leader < 0 or raw.get("unknown") or (busy and served_by < 0):
            return "no_leader"
        broker = brokers.get(ps.leader)
        if broker is None:
            return "no_leader" if busy else "idle"
        if busy and (broker.state != "UP" or names.get(ps.leader) in self._retried):
            return "backing_off"
        if waiting:
            if self.max_in_flight and broker.in_flight_requests >= self.max_in_flight:
                return "muted"
            full = waiting >= self.batch_msgs or ps.queued_bytes >= self.batch_bytes
            if full or (ps.oldest_age_s is not None and ps.oldest_age_s >= self.linger_s):
                return "ready"
            return "accumulating"
        return "in_flight" if ps.in_flight_msgs else "idle"

    # -- metrics ----------------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        snap = self.snapshot()
        with self._lock:
            st = self._parsed or {}
        return _java_metrics(snap, st)


def inspector_of(producer: Producer) -> Inspector:
    """The producer's Inspector, made on first use."""
    ins = producer.__dict__.get("_inspector")
    if ins is None:
        ins = producer.__dict__.setdefault("_inspector", Inspector(producer))
    return ins


# --------------------------------------------------------------------------- stats_cb


class ThrottledStatsCallback:
    """The user's ``stats_cb``, called at the user's ``statistics.interval.ms`` although
    librdkafka emits at the (faster) interval the inspector asked for."""

    def __init__(self, fn: Callable[[str], Any], user_ms: int, effective_ms: int) -> None:
        self.fn = fn
        # Half an emit interval of slack: emits come every effective_ms with jitter, so a
        # strict ">= user_ms" would skip to the next emit about half the time.
        self._min_gap = max(0.0, (user_ms - effective_ms / 2) / 1000.0)
        self._last = time.monotonic()  # first call ~user_ms after creation, as librdkafka

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        if now - self._last >= self._min_gap:
            self._last = now
            self.fn(text)


def stats_setup(
    user_ms: int, inspect_ms: int, stats_cb: Optional[Callable[[str], Any]]
) -> tuple[int, Optional[Callable[[str], Any]]]:
    """(statistics.interval.ms to give librdkafka, callback to give the extension).

    The faster of the two intervals wins; the user's callback keeps librdkafka's meaning
    (never called when the user's interval is 0) and the user's own pace."""
    intervals = [ms for ms in (user_ms, inspect_ms) if ms > 0]
    effective = min(intervals) if intervals else 0
    if stats_cb is None or user_ms <= 0:
        return effective, None
    if effective == user_ms:
        return effective, stats_cb
    return effective, ThrottledStatsCallback(stats_cb, user_ms, effective)


# --------------------------------------------------------------------------- Java metrics


def _weighted_avg(windows: list[Mapping[str, Any]]) -> Optional[float]:
    n = sum(int(w.get("cnt", 0)) for w in windows)
    if not n:
        return None
    return sum(float(w.get("avg", 0)) * int(w.get("cnt", 0)) for w in windows) / n


def _java_metrics(snap: AccumulatorSnapshot, st: Mapping[str, Any]) -> dict[str, float]:
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


def _render(snap: AccumulatorSnapshot, max_rows: Optional[int] = None) -> Any:
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


def _log_line(snap: AccumulatorSnapshot) -> str:
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
        producers: Callable[[], list[Producer]],
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
    producers: Callable[[], list[Producer]],
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

_created_hooks: list[Callable[[Producer], None]] = []
_default_interval_ms: Optional[int] = None


def default_interval_ms() -> int:
    """The statistics interval new producers get when they do not choose one."""
    return DEFAULT_INTERVAL_MS if _default_interval_ms is None else _default_interval_ms


def producer_created(producer: Producer) -> None:
    """Called by Producer.__init__: lets ``cykafka top`` see every new producer."""
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
    """Attach one live view to every Producer created while the block runs
    (``cykafka top``); they get ``stats_interval_ms`` unless they choose their own."""
    global _default_interval_ms
    # Strong references: a script's producer is usually closed and dropped before
    # the view's last frame, which must still show its final figures.
    order: list[Producer] = []

    def hook(p: Producer) -> None:
        if not any(q is p for q in order):
            order.append(p)

    def producers() -> list[Producer]:
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
