"""A topic as a ``read_committed`` consumer on real Kafka sees it, on any broker.

Kafka hides aborted transactions from ``read_committed`` consumers only when the broker's
Fetch response lists them; Tansu writes the COMMIT/ABORT markers but sends no such list,
so there a ``read_committed`` consumer also returns aborted records.  Resuming an import
and verifying one must not count those, so this module applies Kafka's rule (KIP-98)
itself, streaming, in two passes per partition:

1. the batch headers (never compressed) up to the high watermark, read with the Fetch
   API: the offset ranges written inside transactions, by which producer, and every
   transaction marker;
2. the records up to that high watermark, read by a confluent-kafka consumer (any
   compression, headers included; ``read_uncommitted``, so that another producer's
   open transaction cannot hold it back): a record is kept if it is not transactional, or if the next
   marker of its producer after it is a COMMIT.  No marker yet: an open transaction,
   beyond the last stable offset, not visible.

Memory is a few numbers per batch and per marker, never per record.  The same rule, for
whole logs held in memory, is :func:`cykafka.testing.committed_view`.
"""

from __future__ import annotations

import bisect
import struct
import time
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["CommittedIndex", "Message", "committed_messages", "partitions_of"]

_CONSUMER_KEYS_DROPPED = ("transactional.id", "enable.idempotence", "acks", "linger.ms")


@dataclass(frozen=True)
class Message:
    """One committed record."""

    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple[tuple[str, Optional[bytes]], ...] = ()


@dataclass
class CommittedIndex:
    """Which offsets of one partition are committed, below ``high`` (the high watermark
    when it was read)."""

    high: int = 0
    # transactional batches: first and last offset, producer id
    bases: array = field(default_factory=lambda: array("q"))
    lasts: array = field(default_factory=lambda: array("q"))
    pids: array = field(default_factory=lambda: array("q"))
    # markers per producer id: offsets (ascending) and whether each is a COMMIT
    markers: dict[int, tuple[array, list[bool]]] = field(default_factory=dict)

    def visible(self, offset: int) -> bool:
        if offset >= self.high:
            return False
        i = bisect.bisect_right(self.bases, offset) - 1
        if i < 0 or offset > self.lasts[i]:
            return True  # not written inside a transaction
        return self._committed(self.pids[i], offset)

    def _committed(self, pid: int, offset: int) -> bool:
        found = self.markers.get(pid)
        if found is None:
            return False
        offs, commits = found
        j = bisect.bisect_right(offs, offset)
        return j < len(offs) and commits[j]


def _leaders(client: Mapping[str, Any], topic: str, timeout: float) -> dict[int, tuple[str, int]]:
    from confluent_kafka.admin import AdminClient

    from .._admin import topic_metadata

    md, t = topic_metadata(AdminClient({**client, "log_level": 3}), topic, timeout)
    if t is None:
        raise LookupError(f"topic {topic!r}: no such topic")
    out: dict[int, tuple[str, int]] = {}
    for p, meta in t.partitions.items():
        b = md.brokers.get(meta.leader)
        if b is None or b.host is None:
            raise LookupError(f"topic {topic!r} partition {p} has no leader now")
        out[p] = (b.host, b.port)
    return out


def partitions_of(client: Mapping[str, Any], topic: str, timeout: float = 30.0) -> list[int]:
    """The partition numbers of ``topic``; LookupError if it does not exist."""
    return sorted(_leaders(client, topic, timeout))


def _index(host: str, port: int, topic: str, partition: int, timeout: float) -> CommittedIndex:
    """Pass 1: the batch headers of one partition, from offset 0 to the high watermark."""
    from .._logreader import _BATCH_HEADER, _Connection, _records

    idx = CommittedIndex()
    marks: dict[int, tuple[array, list[bool]]] = {}
    conn = _Connection(host, port, timeout)
    offset, max_bytes = 0, 1 << 20
    deadline = time.monotonic() + timeout
    try:
        while True:
            err, high, body = conn.fetch(topic, partition, offset, max_bytes)
            if err:
                raise ConnectionError(
                    f"Fetch {topic} [{partition}] at {offset}: Kafka error code {err}"
                )
            idx.high = high
            pos, moved = 0, False
            while pos + 12 <= len(body):
                (length,) = struct.unpack_from(">i", body, pos + 8)
                end = pos + 12 + length
                if end > len(body):
                    break  # cut off: fetched again from its start
                head = _BATCH_HEADER.unpack_from(body, pos)
                base, attrs, last_delta, pid = head[0], head[5], head[6], head[9]
                last = base + last_delta
                if last >= offset:
                    transactional, control = bool(attrs & 0x10), bool(attrs & 0x20)
                    if control:
                        for rec in _records(partition, body[pos:end]):
                            offs, commits = marks.setdefault(rec.producer_id, (array("q"), []))
                            offs.append(rec.offset)
                            commits.append(rec.control == "COMMIT")
                    elif transactional:
                        idx.bases.append(base)
                        idx.lasts.append(last)
                        idx.pids.append(pid)
                    offset, moved = last + 1, True
                pos = end
            if moved:
                deadline = time.monotonic() + timeout  # without progress
            if offset >= high:
                break
            if not moved:
                if body:  # one batch larger than asked for
                    if max_bytes >= 1 << 30:
                        raise ValueError(f"{topic} [{partition}]: batch at {offset} over 1 GiB")
                    max_bytes *= 2
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{topic} [{partition}]: no progress for {timeout:g} s at offset "
                    f"{offset} (high watermark {high})"
                )
    finally:
        conn.close()
    idx.markers = marks
    # Tansu reports the high watermark as the last batch's base offset + 1, short of the
    # records after the first in that batch: the end is where the last batch ends.
    idx.high = max(idx.high, offset)
    return idx


def _consumer(client: Mapping[str, Any], isolation: str = "read_uncommitted") -> Any:
    import uuid

    from confluent_kafka import Consumer

    conf = {k: v for k, v in client.items() if k not in _CONSUMER_KEYS_DROPPED}
    # librdkafka prefetches up to 64 MB per partition by default; a reader that goes
    # partition by partition needs far less to keep busy.
    conf.setdefault("queued.max.messages.kbytes", 8192)
    # It reads up to a known end: a fetch that finds nothing new must come back at once,
    # not after librdkafka's 500 ms long poll.  (An exactly-once import reads the progress
    # topic after every commit: measured 650 ms a read before this and the short consume
    # waits below, 30-60 ms after.)
    conf.setdefault("fetch.wait.max.ms", 10)
    conf.update(
        {
            "group.id": f"cykafka-committed-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    return Consumer(conf)


def committed_messages(
    client: Mapping[str, Any],
    topic: str,
    partitions: Optional[Sequence[int]] = None,
    *,
    timeout: float = 60.0,
) -> Iterator[Message]:
    """Every committed record of ``topic`` (or of ``partitions``), partition by
    partition, each in offset order.  ``client``: a confluent-kafka client config (at
    least ``bootstrap.servers``; producer-only keys are dropped).  Reads a snapshot: the
    high watermark of each partition when its headers were read."""
    from confluent_kafka import KafkaError, TopicPartition

    client = {k: v for k, v in client.items() if isinstance(v, (str, int, float, bool))}
    leaders = _leaders(client, topic, timeout)
    parts = sorted(leaders) if partitions is None else list(partitions)
    if str(client.get("security.protocol", "plaintext")).lower() != "plaintext":
        # The batch headers are read over a plain socket; a secured cluster is real
        # Kafka, which hides aborted transactions itself.
        yield from _broker_filtered(client, topic, parts, timeout)
        return
    for p in parts:
        if p not in leaders:
            raise LookupError(f"topic {topic!r} has no partition {p}")
        host, port = leaders[p]
        idx = _index(host, port, topic, p, timeout)
        if idx.high == 0:
            continue
        consumer = _consumer(client)
        try:
            # Offset 0, not OFFSET_BEGINNING: Tansu may report a low watermark of 1
            # while offset 0 exists.
            consumer.assign([TopicPartition(topic, p, 0)])
            deadline = time.monotonic() + timeout  # without progress
            done = False
            while not done:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{topic} [{p}]: no record for {timeout:g} s before offset {idx.high}"
                    )
                # consume() waits its whole timeout unless 10000 records come: short
                # waits, so that the end (often a marker, never returned) is seen soon.
                for msg in consumer.consume(10000, 0.02):
                    err = msg.error()
                    off = msg.offset()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            done = off is not None and off >= idx.high
                        elif err.fatal():
                            raise ConnectionError(f"reading {topic} [{p}]: {err}")
                        continue
                    deadline = time.monotonic() + timeout
                    if idx.visible(off):
                        yield Message(p, off, msg.key(), msg.value(), tuple(msg.headers() or ()))
                    if off >= idx.high - 1:
                        done = True
                        break
        finally:
            consumer.close()


def _broker_filtered(
    client: Mapping[str, Any], topic: str, parts: Sequence[int], timeout: float
) -> Iterator[Message]:
    """A ``read_committed`` consumer up to each partition's high watermark as it is
    now: it waits there until transactions still open below it end (at the latest when
    ``transaction.timeout.ms`` aborts them), so a record committed after another
    producer's open transaction is not missed."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(client, "read_committed")
    try:
        for p in parts:
            tp = TopicPartition(topic, p)
            high = consumer.get_watermark_offsets(tp, timeout=timeout, cached=False)[1]
            if high <= 0:
                continue
            consumer.assign([TopicPartition(topic, p, 0)])
            deadline = time.monotonic() + timeout
            while consumer.position([tp])[0].offset < high:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic} [{p}]: no progress for {timeout:g} s")
                for msg in consumer.consume(10000, 0.2):
                    if msg.error() is None:
                        deadline = time.monotonic() + timeout
                        yield Message(
                            p, msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ())
                        )
    finally:
        consumer.close()
