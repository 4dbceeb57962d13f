"""Parsing librdkafka's statistics into a snapshot (the Inspector), and the statistics
callback the producer registers."""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any, Optional

from ..config import canonical
from .metrics import JavaMetrics
from .snapshot import AccumulatorSnapshot, BrokerSnapshot, EosSnapshot, PartitionSnapshot
from .source import StatsSource
from .states import StateInputs, partition_state

__all__ = [
    "DEFAULT_INTERVAL_MS",
    "Inspector",
    "inspector_of",
]

#: statistics.interval.ms the inspector asks for when the producer does not say
#: (``StatsSource(inspect_interval_ms=...)``; 0 turns the statistics off).
DEFAULT_INTERVAL_MS = 1000

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


# --------------------------------------------------------------------------- the inspector


def _with_direct(
    st: dict[str, Any], direct: Optional[Mapping[tuple[str, int], int]]
) -> dict[str, Any]:
    """``st`` with each partition's ``msgs`` counting every message enqueued on it:
    librdkafka counts only those its partitioner placed, and the producer hands a
    batch's messages whose partition is already decided to that partition itself
    (``direct``: their counts when this emit was served)."""
    for (tname, part), n in (direct or {}).items():
        p = st.get("topics", {}).get(tname, {}).get("partitions", {}).get(str(part))
        if p is not None:
            p["msgs"] = int(p.get("msgs", 0)) + n
    return st


def _us_to_ms(window: Optional[Mapping[str, Any]]) -> Optional[float]:
    # Window stats are "reset to 0 on each stats emit"; avg is meaningless without samples.
    if not window or not window.get("cnt"):
        return None
    return float(window.get("avg", 0)) / 1000.0


def _num(producer: StatsSource, config: Mapping[str, str], key: str) -> float:
    return _num_or(producer, config, key, _DEFAULTS[key])


def _num_or(producer: StatsSource, config: Mapping[str, str], key: str, default: float) -> float:
    # librdkafka's own value first: it includes its adjustments, e.g. "max.in.flight=5"
    # when enable.idempotence (or transactional.id) is set and the user did not set it.
    for value in (producer._effective_config(key), config.get(key)):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    return float(default)


class Inspector:
    """Per-producer state of the inspector: the cached parse of the latest statistics
    (by statistics count), rate samples and per-partition enqueue samples."""

    def __init__(self, producer: StatsSource) -> None:
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
        # statistics.interval.ms librdkafka runs with (0: none): how long metrics()
        # may wait for the emit that carries the latest outcomes' samples.
        self.stats_interval_s = _num_or(producer, cfg, "statistics.interval.ms", 0) / 1000.0
        self._rates: deque[tuple[float, int, int]] = deque(maxlen=256)
        # Seeded with the producer's start, so the first snapshot already has a rate
        # (over the producer's life so far) instead of none.
        started = getattr(producer, "_started_at", None)
        if started is not None:
            self._rates.append((started, 0, 0))
        self._enq: dict[tuple[str, int], deque[tuple[float, int]]] = {}
        self._retries: dict[str, int] = {}  # broker name -> txretries at last parse
        self._retried: set[str] = set()  # brokers whose txretries grew at last parse
        # Per partition, a lower bound on transmissions that were retries (see
        # _retry_waiting).
        self._retx_low: dict[tuple[str, int], int] = {}
        self.java = JavaMetrics()

    def _stats(
        self, producer: StatsSource
    ) -> tuple[Optional[dict[str, Any]], Optional[float], int]:
        # Every emit since the last read feeds the Java metrics' windows: librdkafka
        # resets its window statistics at each emit, so one not read is a lost sample.
        # Parsed here, in the caller's thread, once per emit: the event thread only
        # stored the strings.
        latest_at: Optional[float] = None
        latest: Optional[dict[str, Any]] = None
        for latest_at, js, direct in producer._take_stats():
            latest = _with_direct(json.loads(js), direct)
            self.java.observe_stats(latest, latest_at)
        text, received, count, direct = producer._last_stats()
        if text is None or received is None:
            return None, None, 0
        if count != self._parsed_count:
            parsed = latest if latest is not None and latest_at == received else None
            if parsed is None:
                parsed = _with_direct(json.loads(text), direct)
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

    def _retry_waiting(
        self, key: tuple[str, int], raw: Mapping[str, Any], ps: PartitionSnapshot
    ) -> int:
        """Waiting messages that were already sent once: a retry waiting out
        retry.backoff.ms.  librdkafka puts a batch that failed with a retriable error back
        in the partition's transmit queue and counts every transmission in ``txmsgs``
        (measured: 10 messages failing 3 times, then delivered, add 40).  Transmissions
        beyond first ones are at least ``txmsgs - msgs`` (no more distinct messages can
        have been sent than were enqueued), and exactly that once the partition is idle;
        the rest of ``txmsgs`` minus outcomes minus in flight is sent-but-waiting.  The
        bound can lag while never-sent messages keep arriving after retries."""
        if ps.partition < 0:
            return 0
        tx = int(raw.get("txmsgs", 0))
        low = max(self._retx_low.get(key, 0), tx - ps.enqueued)
        self._retx_low[key] = low
        if not ps.waiting_msgs:
            return 0
        sent_waiting = tx - low - ps.delivered - ps.failed - ps.in_flight_msgs
        return min(max(0, sent_waiting), ps.waiting_msgs)

    def snapshot(self) -> AccumulatorSnapshot:
        producer = self._producer()
        if producer is None:
            raise RuntimeError("the StatsSource is gone")
        with self._lock:
            return self._snapshot(producer)

    def _snapshot(self, producer: StatsSource) -> AccumulatorSnapshot:
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
            buffer_exhausted=int(c.get("buffer_exhausted", 0)),
            waiting_threads=int(c.get("waiting_threads", 0)),
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
            # Exact: nothing is unfinished, whatever older statistics said: no message is
            # queued (bytes) or in a request still awaiting its response.
            snap.partitions = {k: v for k, v in snap.partitions.items() if k[1] >= 0}
            if snap.queued_bytes is not None:
                snap.queued_bytes = 0
            for b in [*snap.brokers.values(), *snap.bootstrap_brokers]:
                b.in_flight_msgs = b.waiting_msgs = 0
                b.in_flight_requests = b.waiting_requests = 0
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
        per_part: Mapping[tuple[str, int], tuple[int, int, int]],
        age: float,
        now: float,
    ) -> None:
        broker_names = self._brokers_from_stats(snap, st, age)
        idempotent = "eos" in st
        for tname, t in st.get("topics", {}).items():
            for p in t.get("partitions", {}).values():
                key = (tname, int(p["partition"]))
                ps = self._partition_from_stats(key, p, per_part, idempotent, age, now)
                if ps is None:
                    continue
                ps.state = self._state(
                    ps, p, snap.brokers, broker_names, self._retry_waiting(key, p, ps)
                )
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

    def _brokers_from_stats(
        self, snap: AccumulatorSnapshot, st: dict[str, Any], age: float
    ) -> dict[int, str]:
        """Fill ``snap.brokers`` and ``snap.bootstrap_brokers``; returns each broker id's
        name in the statistics."""
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
        return broker_names

    def _partition_from_stats(
        self,
        key: tuple[str, int],
        p: Mapping[str, Any],
        per_part: Mapping[tuple[str, int], tuple[int, int, int]],
        idempotent: bool,
        age: float,
        now: float,
    ) -> Optional[PartitionSnapshot]:
        """One partition's figures, its state not yet decided (None: the unassigned
        partition, holding nothing)."""
        tname, part = key
        delivered, failed, last = per_part.get(key, (0, 0, -1))
        msgq = int(p.get("msgq_cnt", 0))
        inflight = int(p.get("msgs_inflight", 0))
        enq = int(p.get("msgs", 0))
        if part < 0:
            # The unassigned partition only holds messages until partitioning;
            # its "msgs" counts every message that passed through it.
            if msgq == 0:
                return None
            xmit = 0
            oldest, bracketed = None, False
        else:
            # Statistics lag the exact outcomes: of the messages the statistics
            # saw enqueued, only those without an exact outcome can still be
            # queued or in flight (so after flush() nothing is).
            remaining = max(0, enq - delivered - failed)
            inflight = min(inflight, remaining)
            msgq = min(msgq, remaining - inflight)
            xmit = remaining - msgq - inflight
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
        return ps

    def _state(
        self,
        ps: PartitionSnapshot,
        raw: Mapping[str, Any],
        brokers: Mapping[int, BrokerSnapshot],
        names: Mapping[int, str],
        retry_waiting: int,
    ) -> str:
        return partition_state(
            StateInputs(
                partition=ps.partition,
                leader=ps.leader,
                unknown=bool(raw.get("unknown")),
                served_by=int(raw.get("broker", -1)),
                waiting=ps.waiting_msgs,
                in_flight=ps.in_flight_msgs,
                retry_waiting=retry_waiting,
                queued_bytes=ps.queued_bytes,
                oldest_age_s=ps.oldest_age_s,
                broker=brokers.get(ps.leader),
                broker_retried=names.get(ps.leader) in self._retried,
                max_in_flight=self.max_in_flight,
                batch_msgs=self.batch_msgs,
                batch_bytes=self.batch_bytes,
                linger_s=self.linger_s,
            )
        )

    # -- metrics ----------------------------------------------------------------

    def metrics(self, *, wait: bool = True) -> dict[str, float]:
        """The Java producer's metrics (see :mod:`cykafka.inspector.metrics`).
        ``wait=False``: from the emits received so far, never waiting for the next one
        (a caller about to close the producer, which a wait would hold up to one
        statistics interval)."""
        producer = self._producer()
        if producer is not None and wait:
            self._await_samples(producer)
        snap = self.snapshot()
        calls = getattr(producer, "_call_ns", None) or {}
        peak = producer._take_record_size_max() if producer is not None else -1
        with self._lock:
            st = self._parsed or {}
            retries = sum(self._retx_low.values())
            return self.java.values(snap, st, retries, calls, time.monotonic(), peak)

    def _await_samples(self, producer: StatsSource) -> None:
        """Records whose outcome came after the latest statistics emit have window
        samples (their request's ``int_latency``, ``rtt``, ``batchsize``) that only
        the next emit carries.  When the windows hold no sample without them, wait for
        that emit: at most one statistics interval (plus slack for a loaded machine),
        in short sleeps that Ctrl-C interrupts.  Never while traffic keeps the windows
        filled, never for a closed producer (it emits no more), never in a callback
        (its thread is the one that would serve the emit)."""
        outcome = producer._last_outcome_time()
        if (
            not self.stats_interval_s
            or not outcome
            or getattr(producer, "closed", False)
            or producer._on_event_thread()
        ):
            return
        _, received, count, _ = producer._last_stats()
        if received is not None and received >= outcome:
            return
        with self._lock:
            self._stats(producer)
            if self.java.has_window_samples(time.monotonic()):
                return
        deadline = outcome + self.stats_interval_s + max(0.25, self.stats_interval_s / 2)
        while producer._last_stats()[2] == count and time.monotonic() < deadline:
            if getattr(producer, "closed", False):
                return
            time.sleep(min(0.01, self.stats_interval_s / 4))


def inspector_of(producer: StatsSource) -> Inspector:
    """The producer's Inspector, made on first use."""
    ins = producer.__dict__.get("_inspector")
    if ins is None:
        ins = producer.__dict__.setdefault("_inspector", Inspector(producer))
    return ins
