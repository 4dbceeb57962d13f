"""Reading a topic back as a consumer sees it, on either test broker.

A plain module, not a conftest: ``tests/spark/conftest.py`` also has that module name,
so ``from conftest import ...`` can find the wrong one.

On Apache Kafka a ``read_committed`` read is a plain consumer (:func:`read_back`):
the reference.  Tansu returns aborted records to such a consumer, so there the log's
transaction markers are applied by ``cykafka.testing.committed_view`` (docs/tansu.md).
The session's Apache Kafka fixtures register their bootstrap servers here, so helpers
that are given only a bootstrap string read each broker the right way.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from confluent_kafka import Message


@dataclass(frozen=True)
class Record:
    """One record as read back from the broker (plain data, safe to compare)."""

    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list[tuple[str, Optional[bytes]]] = field(default_factory=list)
    timestamp: int = -1  # milliseconds since the epoch
    timestamp_type: int = 0  # confluent_kafka.TIMESTAMP_* constant

    @classmethod
    def from_message(cls, msg: Message) -> Record:
        ts_type, ts = msg.timestamp()
        return cls(
            topic=msg.topic() or "",
            partition=msg.partition() or 0,
            offset=msg.offset() or 0,
            key=msg.key(),
            value=msg.value(),
            headers=list(msg.headers() or []),
            timestamp=ts,
            timestamp_type=ts_type,
        )


def read_back(
    bootstrap_servers: str,
    topic: str,
    partitions: Optional[Iterable[int]] = None,
    timeout: float = 30.0,
    expected: Optional[int] = None,
    isolation_level: str = "read_committed",
) -> dict[int, list[Record]]:
    """Read every record of ``topic`` from offset 0 up to (at least) the high watermark.

    Uses ``assign()`` on explicit partitions (no consumer-group join, which is slow on
    Tansu). ``partitions=None`` means all partitions of the topic. Reads at least up to the
    high watermark of every partition, then until the topic is quiet for one poll. With
    ``expected`` (total record count) keeps reading until that many arrived and fails if a
    different number is read. Returns ``{partition: [Record, ...]}`` in offset order, with
    an entry for every requested partition.

    ``timeout`` bounds a wait without progress, not the whole read: each batch of records
    moves the deadline on, so reading millions of records on a busy machine is not a
    failure while a record that never comes still is.
    """
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    from cykafka.cluster.wire import until_settled

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"cykafka-read-back-{uuid.uuid4().hex}",  # required, never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 50,
            "isolation.level": isolation_level,
            "log_level": 3,
        }
    )
    deadline = time.monotonic() + timeout
    try:
        if partitions is None:
            md = consumer.list_topics(topic, timeout=timeout)
            tmd = md.topics.get(topic)
            if tmd is None or tmd.error is not None:
                raise AssertionError(f"read_back: topic {topic!r} not found ({tmd and tmd.error})")
            parts = sorted(tmd.partitions)
        else:
            parts = sorted(partitions)

        def watermark(p: int) -> tuple[int, int]:
            # While leadership moves (a node killed or just restarted) the query fails
            # for a while (OFFSET_NOT_AVAILABLE, _DESTROY_BROKER, ...): ask again.
            left = max(deadline - time.monotonic(), 0.5)
            return until_settled(
                lambda: consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=min(left, 10.0), cached=False
                ),
                left,
            )

        def watermarks() -> dict[int, tuple[int, int]]:
            return {p: watermark(p) for p in parts}

        marks = watermarks()
        out: dict[int, list[Record]] = {p: [] for p in parts}
        # From offset 0, not the low watermark: Tansu 0.6.0 sometimes reports a low
        # watermark of 1 for a partition whose offset 0 exists, and a fetch from inside a
        # batch skips to the next batch, so starting there loses records (docs/tansu.md).
        # Test topics are fresh and never truncated, so 0 is always their first offset.
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        todo = {p for p in parts if marks[p][1] > 0}

        def total() -> int:
            return sum(len(v) for v in out.values())

        # Phase 1: reach the high watermark of every partition (and ``expected`` records).
        # Phase 2: keep draining until a quiet poll, because Tansu 0.6.0 reports the high
        # watermark as (base offset of the last batch + 1): records later in that batch
        # lie beyond it (see docs/tansu.md), so the watermark is only a lower bound.
        quiet = False
        while todo or (expected is not None and total() < expected) or not quiet:
            if time.monotonic() > deadline:
                got = {p: len(v) for p, v in out.items()}
                raise AssertionError(
                    f"read_back: nothing new for {timeout}s reading {topic!r}; got {got}"
                    + (f" (expected {expected} in total)" if expected is not None else "")
                    + f", watermarks (low, high) { ({p: marks[p] for p in parts}) }"
                )
            msgs = consumer.consume(num_messages=1000, timeout=0.25)
            quiet = not todo and not msgs
            if msgs:
                deadline = max(deadline, time.monotonic() + timeout)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(err)
                p = msg.partition()
                assert p is not None
                out[p].append(Record.from_message(msg))
            if todo:
                # position() also moves past control records, so it, not the last data
                # offset, tells when the high watermark is reached.
                for tp in consumer.position([TopicPartition(topic, p) for p in sorted(todo)]):
                    if tp.offset >= marks[tp.partition][1]:
                        todo.discard(tp.partition)
    finally:
        consumer.close()

    n = sum(len(v) for v in out.values())
    if expected is not None and n != expected:
        raise AssertionError(f"read_back: read {n} records from {topic!r}, expected {expected}")
    return out


#: bootstrap.servers strings of the Apache Kafka clusters of this session
KAFKA_SERVERS: set[str] = set()


def committed_records(
    bootstrap_servers: str,
    topic: str,
    partitions: int | Iterable[int] | None = None,
    timeout: float = 60.0,
) -> list[Any]:
    """The committed records of ``topic``, in partition then offset order (records with
    ``partition``, ``offset``, ``key``, ``value``)."""
    if bootstrap_servers in KAFKA_SERVERS:
        parts = range(partitions) if isinstance(partitions, int) else partitions
        got = read_back(bootstrap_servers, topic, parts, timeout=timeout)
        return [r for p in sorted(got) for r in got[p]]
    from cykafka.testing import committed_view, read_raw_log

    raw = read_raw_log(bootstrap_servers, topic, 1 if partitions is None else partitions)
    return committed_view(raw)


def committed_so_far(
    bootstrap_servers: str, topic: str, partitions: int | Iterable[int] = 1
) -> int:
    """How many records of ``topic`` are committed, read fast from the log's batches
    (one Fetch per partition, the markers applied): for waiting until a writer got far
    enough.  On Apache Kafka a commit whose markers are not written yet counts later,
    never wrongly; verifying what a topic holds is :func:`committed_records`'s job."""
    from cykafka.testing import committed_view, read_raw_log

    return len(committed_view(read_raw_log(bootstrap_servers, topic, partitions)))
