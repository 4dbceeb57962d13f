"""Kafka's record batches (magic 2), decoded: each batch's header, its records, and the
transaction markers among them; and Kafka's ``read_committed`` rule applied to a log
held in memory (:func:`committed_view`).

Kafka consumers never show control records (the COMMIT/ABORT markers a transaction
coordinator writes), and a ``read_committed`` consumer hides aborted records only when
the broker's Fetch response lists the aborted transactions.  librdkafka's mock cluster
and Tansu write the markers but send no such list, so to check "all or nothing" there
cykafka reads the raw log (:mod:`.wire`) and applies the rule itself (KIP-98): a
transactional record is visible when the next marker of its producer in that partition
is a COMMIT.  This module decodes bytes and knows nothing of sockets.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

__all__ = ["Batch", "RawRecord", "Reader", "batch_records", "batches", "committed_view"]

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


@dataclass(frozen=True)
class Batch:
    """One record batch of a partition's log, as the broker sent it."""

    partition: int
    base: int  # its first offset
    last: int  # its last offset (base + last offset delta)
    producer_id: int
    transactional: bool
    control: bool  # its records are transaction markers
    compression: str  # "none", "gzip", "snappy", "lz4" or "zstd"
    data: bytes  # the whole batch, header included (the header is never compressed)

    def records(self) -> Iterator[RawRecord]:
        return _records(self)


class Reader:
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


def _lz4_frame(payload: bytes) -> bytes:
    """An LZ4 frame (lz4 records of a v2 batch; cykafka's import compresses with lz4),
    through pyarrow's frame codec.  That codec wants the decompressed size, which
    librdkafka's frames do not carry; the block headers bound it (a compressed block
    holds at most the frame's block size), and the batch's record count ends the
    parse before the bytes past the data."""
    import pyarrow as pa

    if len(payload) < 7 or payload[:4] != b"\x04\x22\x4d\x18":
        raise ValueError("lz4 batch without an LZ4 frame")
    flg, bd = payload[4], payload[5]
    block_max = 1 << (8 + 2 * ((bd >> 4) & 7))  # 4: 64 KiB ... 7: 4 MiB
    pos = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    bound = 0
    while True:
        if pos + 4 > len(payload):
            raise ValueError("lz4 frame cut short")
        (size,) = struct.unpack_from("<I", payload, pos)
        if size == 0:  # end mark
            break
        raw, size = bool(size & 0x80000000), size & 0x7FFFFFFF
        bound += size if raw else block_max
        pos += 4 + size + (4 if flg & 0x10 else 0)
    try:
        return pa.Codec("lz4").decompress(payload, decompressed_size=bound, asbytes=True)
    except OSError as e:
        raise ValueError(f"corrupt lz4 frame ({e})") from None


def _records(batch: Batch) -> Iterator[RawRecord]:
    """The records of one batch, decoded."""
    count, payload = batch_records(batch)
    head = _BATCH_HEADER.unpack_from(batch.data, 0)
    base, pid, epoch, base_seq = head[0], head[9], head[10], head[11]
    r = Reader(payload)
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
        if batch.control:
            # ControlRecordKey: version int16, type int16 (0 = ABORT, 1 = COMMIT)
            kind = struct.unpack_from(">h", key or b"\0\0\xff\xff", 2)[0]
            marker = {0: "ABORT", 1: "COMMIT"}.get(kind, f"CONTROL_{kind}")
        seq = -1 if base_seq < 0 else (base_seq + delta) & 0x7FFFFFFF  # wraps (KIP-98)
        yield RawRecord(
            batch.partition, offset, key, value, pid, epoch, batch.transactional, marker,
            base_seq, seq,
        )  # fmt: skip


def _payload(partition: int, base: int, attrs: int, payload: bytes) -> bytes:
    """A batch's records, decompressed; ValueError for a codec not read here."""
    codec = attrs & 0x07
    if codec == 1:
        return zlib.decompress(payload, 16 + zlib.MAX_WBITS)
    if codec == 3:
        try:
            return _lz4_frame(payload)
        except ValueError as e:
            raise ValueError(f"partition {partition}: batch at offset {base}: {e}") from None
    if codec:
        raise ValueError(
            f"partition {partition}: {_COMPRESSION.get(codec, codec)}-"
            f"compressed batch at offset {base}: read_raw_log reads "
            f"uncompressed, gzip and lz4 batches only"
        )
    return payload


def batch_records(batch: Batch) -> tuple[int, bytes]:
    """The number of records of ``batch`` and their bytes, decompressed (ValueError
    for a codec other than gzip and lz4)."""
    head = _BATCH_HEADER.unpack_from(batch.data, 0)
    if head[3] != 2:
        raise ValueError(
            f"partition {batch.partition}: message format v{head[3]} at offset "
            f"{batch.base} (only v2 record batches are read)"
        )
    payload = batch.data[_BATCH_HEADER.size :]
    return head[12], _payload(batch.partition, batch.base, head[5], payload)


def batches(partition: int, body: bytes) -> Iterator[Batch]:
    """The complete batches of a Fetch response's record set (a batch cut off at the
    end is left out); their records are decoded only when asked for."""
    pos = 0
    while pos + 12 <= len(body):
        (length,) = struct.unpack_from(">i", body, pos + 8)
        end = pos + 12 + length
        if end > len(body):
            return
        head = _BATCH_HEADER.unpack_from(body, pos)
        base, attrs, last_delta, pid = head[0], head[5], head[6], head[9]
        yield Batch(
            partition,
            base,
            base + last_delta,
            pid,
            bool(attrs & 0x10),
            bool(attrs & 0x20),
            _COMPRESSION.get(attrs & 0x07, str(attrs & 0x07)),
            body[pos:end],
        )
        pos = end


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
