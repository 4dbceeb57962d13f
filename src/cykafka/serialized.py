"""Serialized batches for ``Producer.produce_batch(value_serializer=...)``: value and key
chunks lined up, with the rows a serializer rejected, in the shape the native batch path
takes.  Any serializer fits: one with ``serialize_batch`` (the Schema Registry formats of
``cykafka.schema_registry``), or a confluent-style callable ``ser(obj, ctx)``.

This sits beside the producer, below the front doors: ``cykafka.schema_registry`` builds
on it, the producer never imports a front door.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

import pyarrow as pa
from confluent_kafka.serialization import MessageField, SerializationContext

__all__ = [
    "LIST_CHUNK",
    "Chunk",
    "Rejected",
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


def context(topic: str, is_key: bool, headers: Any = None) -> SerializationContext:
    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE, headers)


def is_arrow(data: Any) -> bool:
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


def _serialize(ser: Any, data: Any, topic: str, is_key: bool) -> Iterator[Chunk]:
    """Chunks from a cykafka serializer (serialize_batch), or from any confluent-style
    callable ``ser(obj, ctx)`` one record at a time (a record it raises on is rejected)."""
    batch = getattr(ser, "serialize_batch", None)
    if batch is not None:
        return batch(data, topic, is_key=is_key)
    if not callable(ser):
        raise TypeError(f"a serializer must be callable, not {type(ser).__name__}")
    return _per_record(ser, data, context(topic, is_key))


def _per_record(ser: Any, data: Any, ctx: SerializationContext) -> Iterator[Chunk]:
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


def _length(data: Any) -> int:
    return data.num_rows if isinstance(data, (pa.Table, pa.RecordBatch)) else len(data)


def serialized_chunks(
    topic: str,
    values: Any,
    keys: Any,
    value_serializer: Any,
    key_serializer: Any,
    partitions: Any = None,
    timestamps: Any = None,
    headers: Any = None,
) -> Iterator[tuple[Any, Any, Any, Any, Any, Rejected]]:
    """Serializes keys (all at once) and the first value chunk before returning, so a
    registry failure is raised before anything is produced; the rest is lazy."""
    n = _length(values)
    key_col: Any = keys
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
    keys: Any,
    key_rejects: Rejected,
    partitions: Any,
    timestamps: Any,
    headers: Any,
) -> Iterator[tuple[Any, Any, Any, Any, Any, Rejected]]:
    base = 0
    pending = [] if first is None else [first]
    while True:
        chunk = pending.pop() if pending else next(chunks, None)
        if chunk is None:
            return
        arr, rejected = chunk
        n = len(arr)
        end = base + n

        def cut(col: Any, lo: int = base, hi: int = end) -> Any:
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
