"""The figures of a snapshot, as plain data: where a producer's messages are at one
moment.  Nothing here renders, so the state rules and the renderers stand on these
types without an import circle; :class:`~cykafka.inspector.AccumulatorSnapshot` adds
the renderings on top (``snapshot.py``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["AccumulatorFigures", "BrokerSnapshot", "EosSnapshot", "PartitionSnapshot"]


@dataclass
class PartitionSnapshot:
    """One partition's stage of the accumulator (``state``: the first rule of
    :mod:`cykafka.inspector.states` that matches)."""

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
    #: The broker's throttle time per throttled response in the last statistics
    #: interval (librdkafka's ``throttle`` window: it samples only responses with a
    #: throttle time > 0); None: none throttled.  A client quota
    #: (``producer_byte_rate``) shows here: the broker delays its answers, and the
    #: producer keeps going at the quota's rate.
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
class AccumulatorFigures:
    """Where the producer's messages are, at ``taken_at`` (wall clock, seconds): the
    data of an :class:`~cykafka.inspector.AccumulatorSnapshot`."""

    name: str
    taken_at: float
    # exact, current
    produced: int
    delivered: int
    failed: int
    pending: int  # produced, outcome not yet known
    blocked_s: float  # total time produce calls waited for room
    buffer_exhausted: int  # produce calls refused after max.block.ms (QueueFullError)
    waiting_threads: int  # threads waiting for room in the queue now
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
    def throttle_ms(self) -> Optional[float]:
        """The largest broker throttle per throttled response in the last statistics
        interval (a client quota at work); None: no broker throttled this producer."""
        found = [b.throttle_avg_ms for b in self.brokers.values() if b.throttle_avg_ms]
        return max(found) if found else None

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


def _broker_dict(b: BrokerSnapshot) -> dict[str, Any]:
    d = dataclasses.asdict(b)
    d["partitions"] = [f"{t}[{p}]" for t, p in b.partitions]
    return d
