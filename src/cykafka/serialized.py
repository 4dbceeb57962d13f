"""Serialized batches for ``Producer.produce_batch(value_serializer=...)``: value and key
chunks lined up, with the rows a serializer rejected, in the shape the native batch path
takes.  Any serializer fits: one with ``serialize_batch`` (the Schema Registry formats of
``cykafka.schema_registry``), or a confluent-style callable ``ser(obj, ctx)``.

This sits beside the producer, below the front doors: ``cykafka.schema_registry`` builds
on it, the producer never imports a front door.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional, Protocol, TypeGuard, Union

import pyarrow as pa
from confluent_kafka.serialization import MessageField, SerializationContext

__all__ = [
    "LIST_CHUNK",
    "BatchSerializer",
    "Chunk",
    "Column",
    "Data",
    "Rejected",
    "Serializer",
    "Slice",
    "context",
    "is_arrow",
    "merge_rejects",
    "serialized_chunks",
]

#: rows of a chunk that did not fit the schema: (row within the chunk, why)
Rejected = list[tuple[int, str]]
#: one serialized chunk: a large_binary column (rejected rows null) and its rejects
Chunk = tuple[pa.Array, Rejected]

#: rows per chunk when the input is a list of records
LIST_CHUNK = 65536

#: what a serializer takes: pyarrow data (one message per row) or a list of records,
#: each any value the serializer accepts
ArrowData = Union[pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray]
Data = Union[ArrowData, Sequence[Any]]
#: a column lined up with the messages (keys, partitions, timestamps, headers)
Column = Union[pa.Array, Sequence[object]]


class BatchSerializer(Protocol):
    """A serializer that encodes a whole batch (``cykafka.schema_registry``'s)."""

    def serialize_batch(
        self, data: Data, topic: str, *, is_key: bool = False
    ) -> Iterator[Chunk]: ...


#: a cykafka serializer, or a confluent-style callable ``ser(obj, ctx)``
Serializer = Union[BatchSerializer, Callable[[Any, SerializationContext], Optional[bytes]]]
#: one lined-up slice: values, keys, partitions, timestamps, headers, rejected rows
Slice = tuple[
    Column, Optional[Column], Optional[Column], Optional[Column], Optional[Column], Rejected
]


def context(topic: str, is_key: bool) -> SerializationContext:
    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)


def is_arrow(data: object) -> TypeGuard[ArrowData]:
    return isinstance(data, (pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray))


def merge_rejects(a: Rejected, b: Rejected) -> Rejected:
    """Two rejection lists as one, sorted by row, one entry per row."""
    if not b:
        return a
    if not a:
        return b
    seen: dict[int, str] = {}
    for row, why in a + b:
        seen[row] = f"{seen[row]}; {why}" if row in seen else why
    return sorted(seen.items())


def _serialize(ser: Serializer, data: Data, topic: str, is_key: bool) -> Iterator[Chunk]:
    """Chunks from a cykafka serializer (serialize_batch), or from any confluent-style
    callable ``ser(obj, ctx)`` one record at a time (a record it raises on is rejected)."""
    batch = getattr(ser, "serialize_batch", None)
    if batch is not None:
        chunks: Iterator[Chunk] = batch(data, topic, is_key=is_key)
        return chunks
    if not callable(ser):
        raise TypeError(f"a serializer must be callable, not {type(ser).__name__}")
    return _per_record(ser, data, context(topic, is_key))


def _per_record(
    ser: Callable[[Any, SerializationContext], Optional[bytes]],
    data: Data,
    ctx: SerializationContext,
) -> Iterator[Chunk]:
    rows = data.to_pylist() if is_arrow(data) else list(data)
    for start in range(0, len(rows), LIST_CHUNK):
        out: list[Optional[bytes]] = []
        rejected: Rejected = []
        for i, row in enumerate(rows[start : start + LIST_CHUNK]):
            try:
                out.append(ser(row, ctx))
            except Exception as exc:
                rejected.append((i, f"{type(exc).__name__}: {exc}"))
                out.append(None)
        yield pa.array(out, pa.large_binary()), rejected


def _length(data: Union[Data, Column]) -> int:
    return data.num_rows if isinstance(data, (pa.Table, pa.RecordBatch)) else len(data)


def serialized_chunks(
    topic: str,
    values: Data,
    keys: Optional[Data],
    value_serializer: Optional[Serializer],
    key_serializer: Optional[Serializer],
    partitions: Optional[Column] = None,
    timestamps: Optional[Column] = None,
    headers: Optional[Column] = None,
) -> Iterator[Slice]:
    """Serializes keys (all at once) and the first value chunk before returning, so a
    registry failure is raised before anything is produced; the rest is lazy."""
    n = _length(values)
    key_col: Optional[Column] = keys
    key_rejects: Rejected = []
    if keys is not None:
        if _length(keys) != n:
            raise ValueError(f"keys has {_length(keys)} elements but values has {n}")
        if key_serializer is not None:
            parts, base = [], 0
            for arr, rej in _serialize(key_serializer, keys, topic, True):
                parts.append(arr)
                key_rejects += [(base + r, f"key: {why}") for r, why in rej]
                base += len(arr)
            key_col = pa.chunked_array(parts, pa.large_binary()).combine_chunks()
    elif key_serializer is not None:
        raise ValueError("key_serializer given without keys")
    for name, col in (("partitions", partitions), ("timestamps", timestamps), ("headers", headers)):
        if col is not None and len(col) != n:
            raise ValueError(f"{name} has {len(col)} elements but values has {n}")
    if value_serializer is not None:
        chunks = _serialize(value_serializer, values, topic, False)
        first = next(chunks, None)
    else:
        chunks, first = iter(()), (values, [])
    return _lined_up(first, chunks, key_col, key_rejects, partitions, timestamps, headers)


def _lined_up(
    first: Optional[Chunk],
    chunks: Iterator[Chunk],
    keys: Optional[Column],
    key_rejects: Rejected,
    partitions: Optional[Column],
    timestamps: Optional[Column],
    headers: Optional[Column],
) -> Iterator[Slice]:
    base = 0
    pending = [] if first is None else [first]
    while True:
        chunk = pending.pop() if pending else next(chunks, None)
        if chunk is None:
            return
        arr, rejected = chunk
        n = len(arr)
        end = base + n

        def cut(col: Optional[Column], lo: int = base, hi: int = end) -> Optional[Column]:
            return None if col is None else col[lo:hi]

        krej = [(r - base, why) for r, why in key_rejects if base <= r < end]
        yield (
            arr,
            cut(keys),
            cut(partitions),
            cut(timestamps),
            cut(headers),
            merge_rejects(list(rejected), krej),
        )
        base = end
