"""Reading a partition log back: as a consumer sees it, and as the broker stores it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

from ..cluster.errors import from_confluent, translated
from ..cluster.records import RawRecord, committed_view
from ..cluster.wire import leaders, read_partition
from .mock import MockCluster

__all__ = ["LogRecord", "RawRecord", "committed_view", "read_log", "read_raw_log"]

# ---------------------------------------------------------------------------
# Reading a log back
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LogRecord:
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]


@translated
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
        # from inside a batch there skips the batch (docs/tansu.md).
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
                raise from_confluent(err)
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
    still shows aborted records.  Uncompressed, gzip and lz4 batches."""
    servers = mock.bootstrap_servers if isinstance(mock, MockCluster) else mock
    parts = list(range(partitions)) if isinstance(partitions, int) else list(partitions)
    try:
        where = leaders(servers, topic, timeout)
    except LookupError as e:
        raise ValueError(f"read_raw_log: {e}") from None
    out: list[RawRecord] = []
    for p in parts:
        if p not in where:
            raise ValueError(f"read_raw_log: {topic!r} has no partition {p}")
        host, port = where[p]
        out.extend(read_partition(host, port, topic, p, timeout=timeout))
    return out
