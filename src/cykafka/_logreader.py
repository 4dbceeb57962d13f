"""A partition log as the broker stores it, transaction markers included.

Kafka consumers never show control records (the COMMIT/ABORT markers a
transaction coordinator writes), and a ``read_committed`` consumer hides aborted
records only when the broker's Fetch response lists the aborted transactions.
librdkafka's mock cluster and Tansu write the markers but send no such list, so
to check "all or nothing" there we read the raw log with Fetch v4 and apply
Kafka's read_committed rule to the markers ourselves (KIP-98): a transactional
record is visible when the next marker of its producer in that partition is a
COMMIT.  Used by :mod:`cykafka.testing`; not part of the producer.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

_FETCH, _FETCH_V = 1, 4
_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")  # magic-2 RecordBatch, 61 bytes
_COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass(frozen=True)
class RawRecord:
    """One entry of a partition's log: a data record or a transaction marker."""

    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    producer_id: int
    producer_epoch: int
    transactional: bool
    #: ``"COMMIT"`` or ``"ABORT"`` for a transaction marker, ``None`` for data.
    control: Optional[str] = None
    #: The batch header's base sequence (-1 when the producer is not idempotent).
    base_sequence: int = -1
    #: This record's own sequence number (base sequence + offset delta), or -1.
    #: A real broker refuses a batch whose (producer id, epoch, sequence) it has
    #: already appended (DUPLICATE_SEQUENCE_NUMBER); so two copies of a record with
    #: the same triple are a retry that a real broker would have dropped.
    sequence: int = -1


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf, self.pos = buf, pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(f"truncated: need {n} bytes at {self.pos} of {len(self.buf)}")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple:
        s = struct.Struct(fmt)
        return s.unpack(self.take(s.size))

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)  # zigzag
            shift += 7

    def vbytes(self) -> Optional[bytes]:
        n = self.varint()
        return None if n < 0 else self.take(n)

    def string(self) -> str:
        (n,) = self.unpack(">h")
        return self.take(n).decode() if n >= 0 else ""


def _records(partition: int, body: bytes) -> Iterator[RawRecord]:
    """The records of a Fetch response's record set; a batch cut off at the end
    of the response (brokers may send a partial last batch) is left out."""
    pos = 0
    while pos + 12 <= len(body):
        (length,) = struct.unpack_from(">i", body, pos + 8)
        end = pos + 12 + length
        if end > len(body):
            return
        (base, _, _, magic, crc, attrs, _, _, _, pid, epoch, base_seq, count) = (
            _BATCH_HEADER.unpack_from(body, pos)
        )
        if magic != 2:
            raise ValueError(
                f"partition {partition}: message format v{magic} at offset {base} "
                f"(only v2 record batches are read)"
            )
        payload = body[pos + _BATCH_HEADER.size : end]
        codec = attrs & 0x07
        if codec == 1:
            payload = zlib.decompress(payload, 16 + zlib.MAX_WBITS)
        elif codec:
            raise ValueError(
                f"partition {partition}: {_COMPRESSION.get(codec, codec)}-"
                f"compressed batch at offset {base}: read_raw_log reads "
                f"uncompressed and gzip batches only"
            )
        transactional, control = bool(attrs & 0x10), bool(attrs & 0x20)
        r = _Reader(payload)
        for _ in range(count):
            r.varint()  # record length
            r.take(1)  # attributes (unused)
            r.varint()  # timestamp delta
            delta = r.varint()
            offset = base + delta
            key, value = r.vbytes(), r.vbytes()
            for _ in range(r.varint()):  # headers
                r.vbytes()
                r.vbytes()
            marker = None
            if control:
                # ControlRecordKey: version int16, type int16 (0 = ABORT, 1 = COMMIT)
                kind = struct.unpack_from(">h", key or b"\0\0\xff\xff", 2)[0]
                marker = {0: "ABORT", 1: "COMMIT"}.get(kind, f"CONTROL_{kind}")
            seq = -1 if base_seq < 0 else (base_seq + delta) & 0x7FFFFFFF  # wraps (KIP-98)
            yield RawRecord(
                partition, offset, key, value, pid, epoch, transactional, marker, base_seq, seq
            )
        pos = end


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
        r = _Reader(self._recv(size))
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
    conn = _Connection(host, port, timeout)
    out: list[RawRecord] = []
    offset = 0
    deadline = time.monotonic() + timeout
    try:
        while True:
            err, high, records = conn.fetch(topic, partition, offset, max_bytes)
            if err:
                raise ConnectionError(
                    f"Fetch {topic} [{partition}] at {offset}: Kafka error code {err}"
                )
            got = [rec for rec in _records(partition, records) if rec.offset >= offset]
            out.extend(got)
            if got:
                offset = got[-1].offset + 1
            elif offset >= high:
                return out
            elif records:
                # Only a cut-off batch came back: it is larger than we asked for.
                if max_bytes >= 1 << 30:
                    raise ValueError(f"{topic} [{partition}]: batch at {offset} over 1 GiB")
                max_bytes *= 2
            # else nothing yet below the high watermark: ask again until the deadline
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"read_raw_log: {topic} [{partition}] not read to its "
                    f"high watermark {high} within {timeout} s (at {offset})"
                )
    finally:
        conn.close()


def committed_view(entries: Sequence[RawRecord]) -> list[RawRecord]:
    """What a ``read_committed`` consumer sees (KIP-98): non-transactional records,
    and transactional ones whose producer's next marker in the partition is a COMMIT.
    Records of a transaction with no marker yet (still open) are not visible, as
    they are beyond the last stable offset.  Markers themselves are never visible."""
    visible: list[RawRecord] = []
    by_part: dict[int, list[RawRecord]] = {}
    for e in entries:
        by_part.setdefault(e.partition, []).append(e)
    for part in sorted(by_part):
        next_marker: dict[int, str] = {}
        kept: list[RawRecord] = []
        for e in sorted(by_part[part], key=lambda x: x.offset, reverse=True):
            if e.control is not None:
                next_marker[e.producer_id] = e.control
            elif not e.transactional or next_marker.get(e.producer_id) == "COMMIT":
                kept.append(e)
        visible.extend(reversed(kept))
    return visible
