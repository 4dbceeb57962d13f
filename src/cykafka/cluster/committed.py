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
import functools
import time
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, cast

from .admin import connection_config, plaintext, short_lived
from .errors import translated
from .wire import consume_to, fetch_batches, leaders, until_settled

if TYPE_CHECKING:
    from confluent_kafka import Consumer
    from confluent_kafka import Message as ConsumerMessage

__all__ = [
    "CommittedIndex",
    "CommittedReader",
    "Message",
    "committed_messages",
    "partitions_of",
    "transactional_writes",
]


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

    def open_transactions(self) -> bool:
        """Whether a transactional batch has no marker of its producer after it yet: a
        transaction still open, or one whose end Kafka has not written yet (Kafka
        answers EndTxn once the coordinator has logged it, and writes the markers into
        the partitions afterwards, so a read just after a commit can come before them)."""
        last: dict[int, int] = {}
        for last_off, pid in zip(self.lasts, self.pids):
            last[pid] = max(last_off, last.get(pid, -1))
        for pid, off in last.items():
            found = self.markers.get(pid)
            if found is None or found[0][-1] < off:
                return True
        return False

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


def partitions_of(client: Mapping[str, Any], topic: str, timeout: float = 30.0) -> list[int]:
    """The partition numbers of ``topic``; LookupError if it does not exist."""
    return sorted(leaders(client, topic, timeout))


def _index(host: str, port: int, topic: str, partition: int, timeout: float) -> CommittedIndex:
    """Pass 1: the batch headers of one partition, from offset 0 to the high watermark."""
    idx = CommittedIndex()
    marks: dict[int, tuple[array, list[bool]]] = {}
    for high, batch in fetch_batches(host, port, topic, partition, timeout=timeout):
        # The log ends where its last batch ends, which may be past Tansu's high watermark.
        idx.high = max(idx.high, high, batch.last + 1)
        if batch.control:
            for rec in batch.records():
                offs, commits = marks.setdefault(rec.producer_id, (array("q"), []))
                offs.append(rec.offset)
                commits.append(rec.control == "COMMIT")
        elif batch.transactional:
            idx.bases.append(batch.base)
            idx.lasts.append(batch.last)
            idx.pids.append(batch.producer_id)
    idx.markers = marks
    return idx


def transactional_writes(
    client: Mapping[str, Any], topic: str, timeout: float = 30.0
) -> Optional[dict[int, int]]:
    """Committed records of ``topic`` written in transactions, counted per producer id
    (from the batch headers: no record is decoded); None on a secured cluster, whose
    batch headers this module does not read (see :meth:`CommittedReader.messages`)."""
    reader = CommittedReader(client, topic, timeout)
    if not plaintext(reader.client):
        return None
    out: dict[int, int] = {}
    reader._where = leaders(reader.client, topic, timeout)
    for p in sorted(reader._where):
        idx = reader._index(p)  # looked up again if its leader moved, as a read does
        for base, last, pid in zip(idx.bases, idx.lasts, idx.pids):
            if idx._committed(pid, last):
                out[pid] = out.get(pid, 0) + last - base + 1
    return out


def _message(partition: int, offset: int, msg: ConsumerMessage) -> Message:
    # A consumer's record has bytes (or None) key, value and header values; the wider
    # types in confluent-kafka's stubs are what a producer accepts.
    headers = cast("list[tuple[str, Optional[bytes]]]", msg.headers() or [])
    key, value = cast("Optional[bytes]", msg.key()), cast("Optional[bytes]", msg.value())
    return Message(partition, offset, key, value, tuple(headers))


@translated
def _consumer(client: Mapping[str, Any], isolation: str = "read_uncommitted") -> Consumer:
    import uuid

    from confluent_kafka import Consumer

    conf = connection_config(client)
    # librdkafka prefetches up to 64 MB per partition by default; a reader that goes
    # partition by partition needs far less to keep busy.
    conf.setdefault("queued.max.messages.kbytes", 8192)
    # Those kbytes count the bytes fetched, and one Fetch may bring them all at once
    # (librdkafka caps fetch.max.bytes at queued.max.messages.kbytes): compressed, that
    # is several times as much in memory.  `cykafka verify` of 3 M lz4 lines peaked at
    # 460 MB RSS with 8 MB fetches, 169 MB with 1 MB ones (152 MB uncompressed).
    conf.setdefault("fetch.max.bytes", 1 << 20)
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
        }
    )
    return Consumer(short_lived(conf))


class CommittedReader:
    """Reads ``topic``'s committed records (:func:`committed_messages`) as often as asked,
    with one leader lookup and one consumer for every read.  An exactly-once import
    reads its progress topic when it starts and after every commit: a fresh admin
    client and consumer for each read cost it 30-40 ms a read.  Close it when done
    (or use it in ``with``)."""

    def __init__(self, client: Mapping[str, Any], topic: str, timeout: float = 60.0) -> None:
        self.client = connection_config(client)
        self.topic, self.timeout = topic, timeout
        self._where: Optional[dict[int, tuple[str, int]]] = None
        self._consumer: Optional[Consumer] = None
        #: After a read: whether it found a transaction without its marker yet.
        self.saw_open = False

    def __enter__(self) -> CommittedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    @translated
    def messages(self, partitions: Optional[Sequence[int]] = None) -> Iterator[Message]:
        """Every committed record of the topic (or of ``partitions``), partition by
        partition, each in offset order: a snapshot, up to the high watermark of each
        partition when its headers were read."""

        if self._where is None:
            self._where = leaders(self.client, self.topic, self.timeout)
        where = self._where
        parts = sorted(where) if partitions is None else list(partitions)
        self.saw_open = False
        if not plaintext(self.client):
            # The batch headers are read over a plain socket; a secured cluster is real
            # Kafka, which hides aborted transactions itself.
            yield from _broker_filtered(self.client, self.topic, parts, self.timeout)
            return
        for p in parts:
            if p not in where:
                raise LookupError(f"topic {self.topic!r} has no partition {p}")
            idx = self._index(p)
            self.saw_open = self.saw_open or idx.open_transactions()
            if idx.high == 0:
                continue
            if self._consumer is None:
                self._consumer = _consumer(self.client)
            try:
                for msg in consume_to(self._consumer, self.topic, p, idx.high, self.timeout):
                    off = msg.offset()
                    if off is not None and idx.visible(off):
                        yield _message(p, off, msg)
            finally:
                self._consumer.unassign()  # stops the fetch: the next read starts afresh

    def _index(self, partition: int) -> CommittedIndex:
        """The partition's batch headers from its leader; the leaders are looked up
        again while the one known is not (any more) where the partition is."""

        from .._native import KafkaError

        assert self._where is not None
        # A leader that died is replaced within seconds (Kafka's broker session
        # timeout), and until then the metadata still names it: ask again until then.
        deadline = time.monotonic() + self.timeout
        while True:
            host, port = self._where[partition]
            try:
                return _index(host, port, self.topic, partition, self.timeout)
            except (KafkaError, ConnectionError, OSError, LookupError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
                self._where = leaders(self.client, self.topic, self.timeout)


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
    high watermark of each partition when its headers were read.  To read a topic
    again and again, use one :class:`CommittedReader`."""
    with CommittedReader(client, topic, timeout) as reader:
        yield from reader.messages(partitions)


@translated
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
            ask = functools.partial(
                consumer.get_watermark_offsets, TopicPartition(topic, p), timeout, False
            )
            high = until_settled(ask, timeout)[1]
            if high <= 0:
                continue
            for msg in consume_to(consumer, topic, p, high, timeout):
                off = msg.offset()
                assert off is not None  # set on every record
                yield _message(p, off, msg)
    finally:
        consumer.close()
