"""Fault injection for your own tests: librdkafka's mock Kafka cluster, and a
harness that proves (or disproves) what a producer config does to ordering.

``MockCluster`` wraps librdkafka's in-process mock cluster (``rdkafka_mock.h``):
real TCP listeners on localhost speaking the Kafka protocol, with error
injection, brokers going down, slow brokers and leader moves.  Point any
client at ``.bootstrap_servers``.

``verify_ordering`` produces sequence-numbered messages through a real
``cykafka.Producer``, reads the partition logs back with a consumer (so
duplicates written by retries are seen, not only the offsets reported), and
counts inversions, duplicates, losses and failures per partition::

    with MockCluster() as mock:
        mock.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"] * 3)
        report = verify_ordering({}, mock, preset="ordered")
        assert report.ok, report

``read_raw_log`` reads a partition log as stored, transaction markers included, and
``committed_view`` applies Kafka's ``read_committed`` rule to it: the check for
transactions on brokers (the mock, Tansu) whose consumers cannot hide aborted records.

librdkafka documents the mock API as experimental ("THIS IS AN EXPERIMENTAL
API, SUBJECT TO CHANGE OR REMOVAL"); this module is for tests only.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from ._load import load_native
from ._logreader import RawRecord, committed_view, read_partition

_native = load_native()

__all__ = [
    "API_KEYS",
    "FaultAction",
    "Faults",
    "LogRecord",
    "MockCluster",
    "OrderingReport",
    "PartitionReport",
    "RawRecord",
    "committed_view",
    "error_code",
    "read_log",
    "read_raw_log",
    "verify_ordering",
]

#: Kafka protocol request names -> ApiKey (the numbers the mock's error stacks use).
API_KEYS: Mapping[str, int] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "SaslHandshake": 17,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "WriteTxnMarkers": 27,
    "TxnOffsetCommit": 28,
    "DescribeConfigs": 32,
    "AlterConfigs": 33,
    "SaslAuthenticate": 36,
    "CreatePartitions": 37,
    "DeleteGroups": 42,
    "OffsetDelete": 47,
    "DescribeCluster": 60,
    "DescribeProducers": 61,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
    "GetTelemetrySubscriptions": 71,
    "PushTelemetry": 72,
}
_API_BY_LOWER = {k.lower(): v for k, v in API_KEYS.items()}

ErrorSpec = Union[str, int]


def _api_key(api: Union[str, int]) -> int:
    if isinstance(api, bool):
        raise TypeError("api must be a request name or an ApiKey number, not bool")
    if isinstance(api, int):
        if not 0 <= api <= 0x7FFF:
            raise ValueError(f"ApiKey must be between 0 and 32767, not {api}")
        return api
    if isinstance(api, str):
        key = _API_BY_LOWER.get(api.strip().lower().replace("request", ""))
        if key is None:
            raise ValueError(
                f"unknown Kafka request name {api!r}; known: {', '.join(API_KEYS)} "
                "(or pass the ApiKey number)"
            )
        return key
    raise TypeError(f"api must be a request name or an ApiKey number, not {type(api).__name__}")


def _lookup_error(e: ErrorSpec) -> Optional[int]:
    codes = _native.ErrorCode
    if isinstance(e, bool):
        return None
    if isinstance(e, int):
        return int(e)
    if not isinstance(e, str):
        return None
    name = e.strip().upper()
    if name.startswith("RD_KAFKA_RESP_ERR_"):
        name = name[len("RD_KAFKA_RESP_ERR_") :]
    if name.startswith("_"):
        name = "LOCAL" + name  # ErrorCode spells librdkafka's _TRANSPORT as LOCAL_TRANSPORT
    if name in ("", "NONE", "OK"):
        name = "NO_ERROR"
    # Kafka renamed it (KIP-392); librdkafka's table keeps the old name for code 6.
    if name == "NOT_LEADER_OR_FOLLOWER":
        name = "NOT_LEADER_FOR_PARTITION"
    member = codes.__members__.get(name)
    return None if member is None else int(member)


def error_code(e: ErrorSpec) -> int:
    """The librdkafka error code for a name ("NOT_ENOUGH_REPLICAS", "_TRANSPORT",
    "NO_ERROR"), an :class:`cykafka.ErrorCode` or an int."""
    code = _lookup_error(e)
    if code is None:
        raise ValueError(f"unknown librdkafka error {e!r}")
    return code


def _error_codes(errors: Iterable[ErrorSpec]) -> list[int]:
    if isinstance(errors, (str, int)):
        errors = [errors]
    errors = list(errors)
    codes = [_lookup_error(e) for e in errors]
    bad = sorted({repr(e) for e, c in zip(errors, codes, strict=True) if c is None})
    if bad:
        raise ValueError(
            f"unknown librdkafka error name(s): {', '.join(bad)} (use names like "
            "'NOT_ENOUGH_REPLICAS', '_TRANSPORT' or 'NO_ERROR', or codes)"
        )
    return [c for c in codes if c is not None]


class MockCluster:
    """librdkafka's mock Kafka cluster with ``num_brokers`` brokers (ids 1..n).

    Every method is safe to call while producers and consumers are connected;
    faults apply to requests received afterwards.
    """

    def __init__(self, num_brokers: int = 3) -> None:
        self._impl = _native._MockCluster(num_brokers)

    # -- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Shut the brokers down and free them.  Idempotent."""
        self._impl.close()

    @property
    def closed(self) -> bool:
        return bool(self._impl.closed)

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.bootstrap_servers
        return f"<cykafka.testing.MockCluster {self.num_brokers} brokers {state}>"

    # -- topology ---------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of the brokers, for ``bootstrap.servers``."""
        return str(self._impl.bootstrap_servers)

    @property
    def num_brokers(self) -> int:
        return int(self._impl.num_brokers)

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.num_brokers + 1))

    def _broker(self, broker_id: int, allow_all: bool = False) -> int:
        if isinstance(broker_id, bool) or not isinstance(broker_id, int):
            raise TypeError(f"broker_id must be an int, not {type(broker_id).__name__}")
        if allow_all and broker_id == -1:
            return -1
        if not 1 <= broker_id <= self.num_brokers:
            raise ValueError(
                f"no broker {broker_id}: the mock's broker ids are 1..{self.num_brokers}"
                + (" (or -1 for all)" if allow_all else "")
            )
        return broker_id

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> str:
        """Create ``name`` and return it, like ``LocalBroker.create_topic``.  (Topics
        are also auto-created on first use, with the mock's default of 4 partitions.)"""
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, not {partitions}")
        if not 1 <= replication_factor <= self.num_brokers:
            raise ValueError(
                f"replication_factor must be between 1 and {self.num_brokers} (the number "
                f"of brokers), not {replication_factor}"
            )
        self._impl.create_topic(name, partitions, replication_factor)
        return name

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Make ``broker_id`` the leader of ``topic[partition]`` (-1: leaderless).
        Clients learn it from their next metadata refresh (e.g. after a
        NOT_LEADER_OR_FOLLOWER reply)."""
        self._impl.set_partition_leader(topic, partition, self._broker(broker_id, True))

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the ``"transaction"`` or ``"group"`` coordinator for ``key``."""
        if key_type not in ("transaction", "group"):
            raise ValueError(f"key_type must be 'transaction' or 'group', not {key_type!r}")
        self._impl.set_coordinator(key_type, key, self._broker(broker_id))

    # -- faults -----------------------------------------------------------------

    def push_request_errors(self, api: Union[str, int], errors: Iterable[ErrorSpec]) -> None:
        """The next ``len(errors)`` requests of type ``api`` (on any broker) fail
        with these errors, in order; ``"NO_ERROR"``/0 lets one through.  librdkafka:
        "Passing RD_KAFKA_RESP_ERR__TRANSPORT will make the mock broker disconnect
        the client"."""
        key = _api_key(api)
        self._impl.push_request_errors(key, _error_codes(errors))

    def clear_request_errors(self, api: Union[str, int]) -> None:
        """Drop the errors still queued for ``api``."""
        self._impl.clear_request_errors(_api_key(api))

    def set_broker_down(self, broker_id: int) -> None:
        """Disconnect clients from the broker and refuse new connections
        (librdkafka: "This does NOT trigger leader change")."""
        self._impl.set_broker_down(self._broker(broker_id, True))

    def set_broker_up(self, broker_id: int) -> None:
        self._impl.set_broker_up(self._broker(broker_id, True))

    def set_rtt(self, broker_id: int, ms: int) -> None:
        """Delay the broker's responses by ``ms`` (0: no delay)."""
        if ms < 0:
            raise ValueError(f"ms must be >= 0, not {ms}")
        self._impl.set_rtt(self._broker(broker_id, True), int(ms))

    def heal(self) -> None:
        """Undo faults: every broker up, no added RTT, no queued Produce errors."""
        for b in self.broker_ids:
            self._impl.set_broker_up(b)
            self._impl.set_rtt(b, 0)
        self._impl.clear_request_errors(API_KEYS["Produce"])


# ---------------------------------------------------------------------------
# Reading a log back
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LogRecord:
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]


def read_log(
    mock: Union[MockCluster, str],
    topic: str,
    partitions: Union[int, Sequence[int]] = 1,
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 30.0,
) -> list[LogRecord]:
    """Every record in ``topic``'s partitions, read from the beginning with
    ``confluent_kafka.Consumer`` and ``assign()`` (no group).  ``partitions`` is
    a count or a list of partition numbers.  ``isolation_level="read_committed"``
    hides aborted transactions and records of open ones."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    servers = mock.bootstrap_servers if isinstance(mock, MockCluster) else mock
    parts = list(range(partitions)) if isinstance(partitions, int) else list(partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"cykafka-readback-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            # EOF tells us we have read up to the high watermark (or, with
            # read_committed, the last stable offset).
            "enable.partition.eof": True,
            "isolation.level": isolation_level,
            # offset 0 below, or the earliest offset if the log was truncated
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    out: list[LogRecord] = []
    try:
        # Not OFFSET_BEGINNING: librdkafka resolves it to the reported low watermark,
        # which Tansu 0.6.0 sometimes reports as 1 while offset 0 exists, and a fetch
        # from inside a batch there skips the batch (notes/tansu.md).
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        pending = set(parts)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"read_log: partitions {sorted(pending)} of {topic!r} not read to the end "
                    f"within {timeout} s"
                )
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                    continue
                if err.retriable() or not err.fatal():
                    continue
                raise RuntimeError(f"read_log: {err}")
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None and offset is not None  # set on every record
            out.append(LogRecord(partition, offset, msg.key(), msg.value()))
            # A record after EOF (a straggling fetch) re-opens the partition.
            pending.add(partition)
    finally:
        consumer.close()
    return out


def read_raw_log(
    mock: Union[MockCluster, str],
    topic: str,
    partitions: Union[int, Sequence[int]] = 1,
    *,
    timeout: float = 30.0,
) -> list[RawRecord]:
    """Every entry of ``topic``'s partitions as stored, transaction markers included
    (``RawRecord.control`` is ``"COMMIT"``/``"ABORT"``), read from each partition's
    leader with the Kafka Fetch API.  ``committed_view(read_raw_log(...))`` is what a
    ``read_committed`` consumer sees on a real Kafka broker; use it where the broker
    writes markers but does not tell consumers which transactions aborted (librdkafka's
    mock cluster and Tansu), so that ``read_log(isolation_level="read_committed")``
    still shows aborted records.  Uncompressed and gzip batches only."""
    from confluent_kafka.admin import AdminClient

    servers = mock.bootstrap_servers if isinstance(mock, MockCluster) else mock
    parts = list(range(partitions)) if isinstance(partitions, int) else list(partitions)
    md = AdminClient({"bootstrap.servers": servers, "log_level": 3}).list_topics(
        topic, timeout=timeout
    )
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        raise ValueError(f"read_raw_log: topic {topic!r}: {t.error if t else 'not found'}")
    out: list[RawRecord] = []
    for p in parts:
        if p not in t.partitions:
            raise ValueError(f"read_raw_log: {topic!r} has no partition {p}")
        leader = md.brokers.get(t.partitions[p].leader)
        if leader is None or leader.host is None:
            raise ValueError(f"read_raw_log: {topic!r} [{p}] has no leader now")
        out.extend(read_partition(leader.host, leader.port, topic, p, timeout=timeout))
    return out


# ---------------------------------------------------------------------------
# The ordering harness
# ---------------------------------------------------------------------------

#: A fault action: called with the MockCluster (e.g. ``lambda m: m.set_broker_down(1)``).
FaultAction = Callable[[MockCluster], Any]
#: ``[(after_n_messages, action), ...]`` or ``fn(mock, n_produced)`` called every
#: ``fault_every`` messages.
Faults = Union[Sequence[tuple[int, FaultAction]], Callable[[MockCluster, int], Any], None]


@dataclass
class PartitionReport:
    """What one partition's log shows."""

    partition: int
    #: Messages produced whose key landed here (by the delivery report).
    produced: int = 0
    #: Records in the log from this run.
    written: int = 0
    #: Places where a key's sequence goes backwards in offset order: each is one
    #: "an earlier batch was written after a later one" event.
    inversions: int = 0
    #: Messages written after a higher-sequence message of the same key.
    reordered_messages: int = 0
    #: Extra copies: a sequence number written more than once.
    duplicates: int = 0
    #: Neither written nor reported failed (includes "delivered" but missing).
    losses: int = 0
    #: Reported failed by their delivery report.
    failed: int = 0
    #: Reported failed, yet written (librdkafka's POSSIBLY_PERSISTED case).
    failed_but_written: int = 0
    #: Reported delivered at an offset that holds a different record.
    misreported_offsets: int = 0
    #: First few (key, offset, sequence, previous-highest-sequence) inversions.
    inversion_examples: list[tuple[Any, int, int, int]] = field(default_factory=list)
    #: First few (key, sequence, offsets) duplicates.
    duplicate_examples: list[tuple[Any, int, list[int]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.inversions or self.duplicates or self.losses or self.misreported_offsets)


@dataclass
class OrderingReport:
    """The outcome of :func:`verify_ordering`: per partition and in total."""

    topic: str
    messages: int
    keys: int
    partitions: dict[int, PartitionReport]
    config: dict[str, Any]
    elapsed: float = 0.0
    #: Delivery reports still missing after the flush timeout (counted as failed).
    undelivered: int = 0
    #: Delivery errors by librdkafka error name.
    errors: dict[str, int] = field(default_factory=dict)

    def _sum(self, attr: str) -> int:
        return sum(getattr(p, attr) for p in self.partitions.values())

    @property
    def inversions(self) -> int:
        return self._sum("inversions")

    @property
    def reordered_messages(self) -> int:
        return self._sum("reordered_messages")

    @property
    def duplicates(self) -> int:
        return self._sum("duplicates")

    @property
    def losses(self) -> int:
        return self._sum("losses")

    @property
    def failed(self) -> int:
        return self._sum("failed")

    @property
    def written(self) -> int:
        return self._sum("written")

    @property
    def misreported_offsets(self) -> int:
        return self._sum("misreported_offsets")

    @property
    def ok(self) -> bool:
        """No inversions, duplicates, losses or misreported offsets.  (Reported
        failures are not "not ok": the application was told.)"""
        return all(p.ok for p in self.partitions.values())

    def __str__(self) -> str:
        verdict = "OK" if self.ok else "NOT OK"
        lines = [
            f"OrderingReport {verdict}: {self.messages} messages, {self.keys} key(s) -> "
            f"{self.topic!r}, {len(self.partitions)} partition(s), {self.elapsed:.2f} s",
            f"  written {self.written}, inversions {self.inversions} "
            f"({self.reordered_messages} messages out of order), duplicates "
            f"{self.duplicates}, losses {self.losses}, failed {self.failed}"
            + (
                f", misreported offsets {self.misreported_offsets}"
                if self.misreported_offsets
                else ""
            ),
        ]
        if self.errors:
            lines.append(
                "  delivery errors: "
                + ", ".join(f"{k} x{v}" for k, v in sorted(self.errors.items()))
            )
        for p in sorted(self.partitions.values(), key=lambda p: p.partition):
            lines.append(
                f"  [{p.partition}] produced {p.produced} written {p.written} inversions "
                f"{p.inversions} duplicates {p.duplicates} losses {p.losses} failed {p.failed}"
                + (f" failed-but-written {p.failed_but_written}" if p.failed_but_written else "")
            )
            for key, off, seq, prev in p.inversion_examples:
                lines.append(
                    f"      inversion: key {key!r} seq {seq} at offset {off}, after seq {prev}"
                )
            for key, seq, offs in p.duplicate_examples:
                lines.append(f"      duplicate: key {key!r} seq {seq} at offsets {offs}")
        return "\n".join(lines)


def _keys_arg(keys: Union[int, Sequence[Any], None]) -> list[Optional[bytes]]:
    if keys is None:
        return [None]
    if isinstance(keys, bool):
        raise TypeError("keys must be a count, a sequence of keys, or None")
    if isinstance(keys, int):
        if keys < 1:
            raise ValueError(f"keys must be >= 1, not {keys}")
        return [f"key-{i}".encode() for i in range(keys)]
    out = [k.encode() if isinstance(k, str) else (None if k is None else bytes(k)) for k in keys]
    if not out or len(set(out)) != len(out):
        raise ValueError("keys must be non-empty and distinct")
    return out


def _schedule(
    faults: Faults, messages: int, fault_every: int
) -> Callable[[MockCluster, int], None]:
    """A function called with the count of messages produced so far."""
    if faults is None:
        return lambda mock, n: None
    if callable(faults):
        fn = faults

        def every(mock: MockCluster, n: int) -> None:
            if n and n % fault_every == 0:
                fn(mock, n)

        return every
    plan = sorted(((int(n), a) for n, a in faults), key=lambda x: x[0])
    for n, a in plan:
        if not callable(a):
            raise TypeError(f"fault action at {n} is not callable: {a!r}")
    idx = [0]

    def at(mock: MockCluster, n: int) -> None:
        while idx[0] < len(plan) and plan[idx[0]][0] <= n:
            plan[idx[0]][1](mock)
            idx[0] += 1

    return at


def verify_ordering(
    producer_config: Mapping[str, Any],
    mock: MockCluster,
    messages: int = 2000,
    keys: Union[int, Sequence[Any], None] = 1,
    topic: Optional[str] = None,
    partitions: int = 1,
    faults: Faults = None,
    preset: Any = None,
    *,
    fault_every: int = 100,
    flush_timeout: float = 60.0,
    heal: bool = True,
    warmup: bool = True,
) -> OrderingReport:
    """Produce ``messages`` sequence-numbered messages through a ``cykafka.Producer``
    built from ``producer_config`` (+ ``preset``) against ``mock``, read the
    partitions back, and report inversions, duplicates, losses and failures.

    Message ``i`` has key ``keys[i % len(keys)]`` (``keys``: a count, a list, or
    None for unkeyed messages) and carries its per-key sequence number in its
    value.  ``faults`` runs fault actions during production (see :data:`Faults`);
    with ``heal`` (default) the cluster is healed after the last message so the
    flush can finish.  ``topic`` defaults to a fresh one with ``partitions``
    partitions.  With ``warmup`` (default) one unnumbered record per partition
    is delivered first, so the producer is connected when the run starts.
    """
    from .producer import Producer

    if messages < 1:
        raise ValueError(f"messages must be >= 1, not {messages}")
    key_list = _keys_arg(keys)
    nkeys = len(key_list)
    run = uuid.uuid4().hex[:8]
    if topic is None:
        topic = f"cykafka-verify-{run}"
        mock.create_topic(topic, partitions, 1)
    else:
        try:
            mock.create_topic(topic, partitions, 1)
        except _native.KafkaError as exc:
            if exc.name != "TOPIC_ALREADY_EXISTS":
                raise
    tick = _schedule(faults, messages, fault_every)
    config = {**producer_config, "bootstrap.servers": mock.bootstrap_servers}
    config.setdefault("log_level", 3)

    # index -> (error name or None, partition, offset); filled on the event thread.
    outcome: list[Optional[tuple[Optional[str], int, int]]] = [None] * messages

    def recorder(i: int) -> Callable[[Any, Any], None]:
        def cb(exc: Any, md: Any) -> None:
            outcome[i] = (None if exc is None else exc.name, md.partition, md.offset)

        return cb

    start = time.monotonic()
    producer = Producer(config, preset=preset)
    try:
        if warmup:
            # Connected, with the leaders known, before the first fault fires:
            # otherwise every message is queued before the first connection
            # and faults scheduled "during" the run hit an idle producer.
            for p in range(partitions):
                producer.produce(topic, b"warmup", partition=p).result(flush_timeout)
        for i in range(messages):
            tick(mock, i)
            k = i % nkeys
            producer.produce(
                topic,
                f"{run}:{k}:{i // nkeys}".encode(),
                key=key_list[k],
                on_delivery=recorder(i),
            )
        tick(mock, messages)
        if heal:
            mock.heal()
        producer.flush(flush_timeout)
        applied = producer.config
    finally:
        # Whatever is still undelivered is purged: its reports say so (failed).
        producer.close(0)
    elapsed = time.monotonic() - start

    nparts = max(partitions, 1 + max((o[1] for o in outcome if o is not None), default=0))
    log = read_log(mock, topic, nparts)
    return _analyse(topic, run, messages, key_list, outcome, log, applied, elapsed)


def _analyse(
    topic: str,
    run: str,
    messages: int,
    key_list: list[Optional[bytes]],
    outcome: list[Optional[tuple[Optional[str], int, int]]],
    log: list[LogRecord],
    config: dict[str, Any],
    elapsed: float,
) -> OrderingReport:
    nkeys = len(key_list)
    reports: dict[int, PartitionReport] = {}

    def part(p: int) -> PartitionReport:
        if p not in reports:
            reports[p] = PartitionReport(p)
        return reports[p]

    # Where each (key index, seq) was written: list of (partition, offset).
    written: dict[tuple[int, int], list[tuple[int, int]]] = {}
    by_partition: dict[int, list[tuple[int, int, int]]] = {}  # p -> [(offset, k, seq)]
    at_offset: dict[tuple[int, int], tuple[int, int]] = {}
    prefix = run.encode() + b":"
    for rec in log:
        if rec.value is None or not rec.value.startswith(prefix):
            continue  # another run's record on a shared topic
        _, k_text, seq_text = rec.value.decode().split(":")
        ks = (int(k_text), int(seq_text))
        written.setdefault(ks, []).append((rec.partition, rec.offset))
        by_partition.setdefault(rec.partition, []).append((rec.offset, ks[0], ks[1]))
        at_offset[(rec.partition, rec.offset)] = ks
        part(rec.partition).written += 1

    # Where each key's messages went (for attributing failures without a partition).
    key_partition: dict[int, int] = {}
    for i, o in enumerate(outcome):
        if o is not None and o[1] >= 0 and o[0] is None:
            key_partition.setdefault(i % nkeys, o[1])

    errors: dict[str, int] = {}
    undelivered = 0
    for i, o in enumerate(outcome):
        k, seq = i % nkeys, i // nkeys
        if o is None:
            undelivered += 1
            o = ("(no delivery report)", -1, -1)
        err, p, off = o
        if p < 0:
            p = key_partition.get(k, written.get((k, seq), [(-1, -1)])[0][0])
        pr = part(p)
        pr.produced += 1
        copies = written.get((k, seq), [])
        if err is not None:
            errors[err] = errors.get(err, 0) + 1
            pr.failed += 1
            if copies:
                pr.failed_but_written += 1
        elif not copies:
            pr.losses += 1
        if err is None and off >= 0 and at_offset.get((p, off)) != (k, seq):
            pr.misreported_offsets += 1
        if len(copies) > 1:
            pr.duplicates += len(copies) - 1
            if len(pr.duplicate_examples) < 5:
                pr.duplicate_examples.append((key_list[k], seq, sorted(o for _, o in copies)))

    for p, recs in by_partition.items():
        pr = part(p)
        recs.sort()
        highest: dict[int, int] = {}
        seen: set[tuple[int, int]] = set()
        last: dict[int, int] = {}
        for off, k, seq in recs:
            if (k, seq) in seen:
                continue  # a duplicate copy: counted as a duplicate, not an inversion
            seen.add((k, seq))
            top = highest.get(k, -1)
            if seq < top:
                pr.reordered_messages += 1
            if seq < last.get(k, -1):
                pr.inversions += 1
                if len(pr.inversion_examples) < 5:
                    pr.inversion_examples.append((key_list[k], off, seq, last[k]))
            last[k] = seq
            highest[k] = max(top, seq)

    return OrderingReport(
        topic=topic,
        messages=messages,
        keys=nkeys,
        partitions=reports,
        config=dict(config),
        elapsed=elapsed,
        undelivered=undelivered,
        errors=errors,
    )
