"""A partition log read from its leader over Kafka's wire protocol: where each partition
is read (:func:`leaders`), its end (ListOffsets), its record batches up to that end
(:func:`fetch_batches`, Fetch v4, decoded by :mod:`.records`), the whole log in memory
(:func:`read_partition`, for :mod:`cykafka.testing`), a consumer's records of a
partition up to a given offset (:func:`consume_to`), and the log ends of a topic
(:func:`log_ends`).  :mod:`.committed` streams a topic's committed records with them.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar, Union

from .admin import plaintext, short_lived, topic_metadata
from .errors import error_code, from_code, from_confluent, translated
from .records import Batch, RawRecord, Reader, batches

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message
    from confluent_kafka.admin import AdminClient

T = TypeVar("T")

_FETCH, _FETCH_V = 1, 4
_LIST_OFFSETS, _LIST_OFFSETS_V = 2, 2


class _Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def _recv(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            c = self.sock.recv(min(left, 1 << 20))
            if not c:
                raise ConnectionError("broker closed the connection")
            chunks.append(c)
            left -= len(c)
        return b"".join(chunks)

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int
    ) -> tuple[int, int, bytes]:
        """(error code, high watermark, record set) of one Fetch v4."""
        self.correlation += 1
        t = topic.encode()
        client = b"cykafka-logreader"
        body = struct.pack(">hhih", _FETCH, _FETCH_V, self.correlation, len(client)) + client
        # replica -1, max wait 100 ms, min 1 byte, max bytes, read_uncommitted
        body += struct.pack(">iiiib", -1, 100, 1, max_bytes, 0)
        body += struct.pack(">ih", 1, len(t)) + t
        body += struct.pack(">iiqi", 1, partition, offset, max_bytes)
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", self._recv(4))
        r = Reader(self._recv(size))
        (corr,) = r.unpack(">i")
        if corr != self.correlation:
            raise ConnectionError(f"Fetch: correlation id {corr}, expected {self.correlation}")
        r.unpack(">i")  # throttle time
        for _ in range(r.unpack(">i")[0]):
            name = r.string()
            for _ in range(r.unpack(">i")[0]):
                part, err, high, _lso = r.unpack(">ihqq")
                (n_aborted,) = r.unpack(">i")
                r.take(16 * max(n_aborted, 0))
                (n,) = r.unpack(">i")
                records = r.take(n) if n > 0 else b""
                if name == topic and part == partition:
                    return err, high, records
        raise ConnectionError(f"Fetch: no answer for {topic} [{partition}]")

    def list_offset(self, topic: str, partition: int) -> tuple[int, int]:
        """(error code, log end) of one ListOffsets v2 for the latest offset: the high
        watermark, which a consumer can read up to."""
        self.correlation += 1
        t = topic.encode()
        client = b"cykafka-logreader"
        body = struct.pack(">hhih", _LIST_OFFSETS, _LIST_OFFSETS_V, self.correlation, len(client))
        body += client + struct.pack(">ib", -1, 0)  # replica -1, read_uncommitted
        body += struct.pack(">ih", 1, len(t)) + t
        body += struct.pack(">iiq", 1, partition, -1)  # -1: the latest offset
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", self._recv(4))
        r = Reader(self._recv(size))
        (corr,) = r.unpack(">i")
        if corr != self.correlation:
            raise ConnectionError(
                f"ListOffsets: correlation id {corr}, expected {self.correlation}"
            )
        r.unpack(">i")  # throttle time
        for _ in range(r.unpack(">i")[0]):
            name = r.string()
            for _ in range(r.unpack(">i")[0]):
                part, err, _ts, offset = r.unpack(">ihqq")
                if name == topic and part == partition:
                    return err, offset
        raise ConnectionError(f"ListOffsets: no answer for {topic} [{partition}]")


@translated
def leaders(
    client: Union[Mapping[str, Union[str, int, float]], str], topic: str, timeout: float
) -> dict[int, tuple[str, int]]:
    """``topic``'s partitions and the (host, port) of each one's leader; LookupError
    naming the topic when it does not exist or a partition has no leader.  ``client``:
    a confluent-kafka client config, or the bootstrap servers."""
    from confluent_kafka.admin import AdminClient

    conf = {"bootstrap.servers": client} if isinstance(client, str) else client
    md, t = topic_metadata(AdminClient(short_lived(conf)), topic, timeout)
    if t is None:
        raise LookupError(f"topic {topic!r}: no such topic")
    out: dict[int, tuple[str, int]] = {}
    for p, meta in t.partitions.items():
        b = md.brokers.get(meta.leader)
        if b is None or b.host is None:
            raise LookupError(f"topic {topic!r} partition {p} has no leader now")
        out[p] = (b.host, b.port)
    return out


#: Fetch errors a partition gives while its leadership settles: UNKNOWN_TOPIC_OR_PARTITION,
#: LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER; retried for up to _TRANSIENT_S seconds.
_TRANSIENT = frozenset({3, 5, 6})
_TRANSIENT_S = 5.0
#: OFFSET_NOT_AVAILABLE: a leader's high watermark lags the start of its leader epoch.
_OFFSET_NOT_AVAILABLE = 78


def _log_end(
    conn: _Connection, topic: str, partition: int, transient_until: float, deadline: float
) -> int:
    """The partition's high watermark by ListOffsets, which Kafka answers only once it
    can be trusted.  A leader just elected, after a restart in particular, starts from
    the high watermark it last checkpointed (every 5 s by default) and learns the real
    one from its followers' fetches; until then its Fetch responses report the old one
    (measured here: 0 for a partition of 2,000 acknowledged records, for ~0.4 s after
    all three nodes restarted), and ListOffsets answers OFFSET_NOT_AVAILABLE "as this
    partition's high watermark is lagging behind the start offset from the beginning
    of this epoch" (KIP-207).  Reading to the Fetch's figure would take the log to be
    shorter than it is."""
    while True:
        err, end = conn.list_offset(topic, partition)
        now = time.monotonic()
        if err == _OFFSET_NOT_AVAILABLE and now < deadline:
            time.sleep(0.05)
        elif err in _TRANSIENT and now < transient_until:
            time.sleep(0.05)
        elif err:
            raise from_code(err, f"ListOffsets {topic} [{partition}]")
        else:
            return end


def fetch_batches(
    host: str,
    port: int,
    topic: str,
    partition: int,
    *,
    timeout: float = 30.0,
    max_bytes: int = 1 << 20,
) -> Iterator[tuple[int, Batch]]:
    """Every batch of one partition from offset 0 to its high watermark (as ListOffsets
    gives it, see :func:`_log_end`), read from its leader at ``host:port``, each with
    the high watermark its Fetch reported.

    A batch cut off at the end of a response is fetched again from its start (with a
    doubled ``max_bytes`` when it alone does not fit).  TimeoutError after ``timeout``
    seconds without progress.  Tansu reports the high watermark as the last batch's base
    offset + 1, short of the records after the first in that batch: the log ends at
    ``last + 1`` of the last batch, which may be past that high watermark.
    """
    conn = _Connection(host, port, timeout)
    offset = 0
    deadline = time.monotonic() + timeout
    transient_until = time.monotonic() + min(timeout, _TRANSIENT_S)
    try:
        # Read at least to this end: a Fetch can report a high watermark short of it.
        end = _log_end(conn, topic, partition, transient_until, deadline)
        if end <= 0:
            # Empty: a Fetch would wait its whole max wait (100 ms) for a first byte.
            # (A fresh exactly-once import reads its new topic so, at its start.)
            return
        while True:
            err, high, body = conn.fetch(topic, partition, offset, max_bytes)
            if err in _TRANSIENT and time.monotonic() < transient_until:
                # A partition just created, or whose leadership is settling, answers
                # these until its leader has loaded it (Apache Kafka, seen right after
                # CreateTopics): ask again before calling the leader wrong.
                time.sleep(0.05)
                continue
            if err:
                raise from_code(err, f"Fetch {topic} [{partition}] at {offset}")
            moved = False
            for batch in batches(partition, body):
                if batch.last >= offset:
                    yield high, batch
                    offset, moved = batch.last + 1, True
            if offset >= max(high, end):
                return
            if moved:
                deadline = time.monotonic() + timeout
            elif body:  # one batch larger than asked for
                if max_bytes >= 1 << 30:
                    raise ValueError(f"{topic} [{partition}]: batch at {offset} over 1 GiB")
                max_bytes *= 2
            # else nothing yet below the high watermark: ask again until the deadline
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{topic} [{partition}]: no progress for {timeout:g} s at offset "
                    f"{offset} (high watermark {high})"
                )
    finally:
        conn.close()


def read_partition(
    host: str,
    port: int,
    topic: str,
    partition: int,
    *,
    timeout: float = 30.0,
    max_bytes: int = 8 << 20,
) -> list[RawRecord]:
    """Every entry of one partition, from offset 0 to the high watermark, read from
    its leader at ``host:port``."""
    out: list[RawRecord] = []
    offset = 0
    for _high, batch in fetch_batches(
        host, port, topic, partition, timeout=timeout, max_bytes=max_bytes
    ):
        out.extend(rec for rec in batch.records() if rec.offset >= offset)
        offset = batch.last + 1
    return out


@translated
def consume_to(
    consumer: Consumer, topic: str, partition: int, end: int, timeout: float
) -> Iterator[Message]:
    """The records ``consumer`` returns for one partition, from offset 0 until it has
    read to ``end`` (a high watermark read before), in offset order.

    It must be made with ``enable.partition.eof``.  Done at an end-of-partition at or
    past ``end``, or when the consumer's position (which moves past transaction
    markers, never returned) reaches ``end``; the records that came in the same
    ``consume()`` as the last are returned too, so a batch that straddles ``end`` comes
    whole (Tansu's high watermark falls inside the last batch, docs/tansu.md).  A
    caller that wants the log below ``end`` only filters by offset.  TimeoutError
    after ``timeout`` seconds without a record.
    """
    from confluent_kafka import KafkaError, TopicPartition

    # Offset 0, not OFFSET_BEGINNING: librdkafka resolves that to the reported low
    # watermark, which Tansu may report as 1 while offset 0 exists (docs/tansu.md).
    consumer.assign([TopicPartition(topic, partition, 0)])
    tp = TopicPartition(topic, partition)
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{topic} [{partition}]: no record for {timeout:g} s before offset {end}"
            )
        done = False
        # consume() waits its whole timeout unless 10000 records come: short waits, so
        # that the end (often a marker, never returned) is seen soon (a small log, as an
        # exactly-once import's progress after each commit: 20 ms a read at 0.02).
        for msg in consumer.consume(10000, 0.005):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    off = msg.offset()
                    done = done or (off is not None and off >= end)
                elif err.fatal():
                    raise from_confluent(err)
                continue
            deadline = time.monotonic() + timeout
            yield msg
        if done or consumer.position([tp])[0].offset >= end:
            return


def _settling() -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset(
        {
            KafkaError._DESTROY_BROKER,  # asked of a node that has left the metadata
            KafkaError._TRANSPORT,
            KafkaError._TIMED_OUT,
            KafkaError.OFFSET_NOT_AVAILABLE,  # a new leader's high watermark (_log_end)
            KafkaError.NOT_LEADER_FOR_PARTITION,
            KafkaError.LEADER_NOT_AVAILABLE,
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            # librdkafka's own, for a partition its metadata names no leader for: the
            # moment the only replica's broker is fenced (on Kafka 4.4, as a node
            # resumes from a pause longer than broker.session.timeout.ms).
            KafkaError._UNKNOWN_PARTITION,
        }
    )


def _list_latest(admin: AdminClient, topic: str, parts: Iterable[int], timeout: float) -> dict:
    """ListOffsets(latest) of ``parts``, every answer waited for (raises the first error)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    asked = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in parts}, request_timeout=timeout
    )
    for f in asked.values():
        f.result()
    return asked


@translated
def until_settled(ask: Callable[[], T], timeout: float, interval: float = 0.1) -> T:
    """``ask()``, asked again for up to ``timeout`` seconds while it raises a
    Kafka error that a partition's leadership settling gives (a node killed,
    restarted, or a leader just elected): offsets asked then are not yet known."""
    codes = _settling()
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ask()
        except Exception as exc:
            if time.monotonic() > deadline or error_code(exc) not in codes:
                raise
        time.sleep(interval)


@translated
def log_ends(
    client: Mapping[str, Union[str, int, float]], topic: str, timeout: float = 30.0
) -> dict[int, int]:
    """Each partition of ``topic`` -> its log end (the offset its next record gets).
    Kafka's ListOffsets(latest) says it; Tansu answers the last batch's base offset + 1
    there, short of the records after the first in that batch, so on a plaintext
    listener the batch at that offset is fetched too and its last offset + 1 counts.
    ``client``: a confluent-kafka client config (brokers and security settings)."""
    from confluent_kafka.admin import AdminClient

    where = leaders(client, topic, timeout)
    admin = AdminClient(short_lived(client))
    asked = until_settled(lambda: _list_latest(admin, topic, where, timeout), timeout)
    ends = {tp.partition: int(f.result().offset) for tp, f in asked.items()}
    if not plaintext(client):
        return ends  # the Fetch below speaks plaintext only; Kafka's answer is exact
    conns: dict[tuple[str, int], _Connection] = {}
    try:
        for p, high in ends.items():
            if high <= 0:
                continue
            if where[p] not in conns:
                conns[where[p]] = _Connection(*where[p], timeout)
            err, _high, body = conns[where[p]].fetch(topic, p, high - 1, 1 << 16)
            if not err:
                ends[p] = max([high, *(b.last + 1 for b in batches(p, body))])
    finally:
        for conn in conns.values():
            conn.close()
    return ends
