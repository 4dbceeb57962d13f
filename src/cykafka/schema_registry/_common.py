"""What the three serializers share: the registry client, the subject and schema id
(resolved with confluent-kafka's own rules), and batches of input as Arrow chunks."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import pyarrow as pa
from confluent_kafka.schema_registry import RegisteredSchema, SchemaRegistryClient

from ..serialized import LIST_CHUNK, Chunk, Rejected, context, is_arrow, merge_rejects

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import Schema

    from ..serialized import ArrowData, Data

__all__ = [
    "LIST_CHUNK",
    "Chunk",
    "Rejected",
    "SchemaRegistryFailure",
    "context",
    "is_arrow",
    "merge_rejects",
    "registry_client",
]

RegistryLike = Union[SchemaRegistryClient, str, Mapping[str, Any]]


class SchemaRegistryFailure(RuntimeError):
    """The registry could not be reached, or refused the schema (for example an
    incompatible evolution), or has no schema for the subject.  Raised before any
    message of the batch is produced."""


#: Seconds one request to a registry may take (confluent-kafka's client waits forever by
#: default: a registry that accepts a connection and never answers hung the caller).
REGISTRY_TIMEOUT_S = 30.0


def registry_client(registry: RegistryLike) -> SchemaRegistryClient:
    """confluent-kafka's client for a URL (``mock://name`` gives its in-process mock),
    a client config dict (``timeout`` defaults to :data:`REGISTRY_TIMEOUT_S`), or a
    client (returned as is)."""
    if isinstance(registry, str):
        registry = {"url": registry}
    if isinstance(registry, Mapping):
        return SchemaRegistryClient.new_client({"timeout": REGISTRY_TIMEOUT_S, **registry})
    if registry is None:
        raise TypeError("a schema registry client, URL or config dict is required")
    return registry


def _url(client: SchemaRegistryClient) -> str:
    try:
        return str(client.config().get("url", "?"))
    except Exception:
        return "?"


def resolve_schema_id(
    ref: Any, topic: str, is_key: bool, schema: Optional[Schema]
) -> tuple[int, Optional[RegisteredSchema]]:
    """The schema id confluent's serializer ``ref`` would frame with for this topic,
    and the registered schema it would write with when it uses a registered one
    (use.latest.version / use.schema.id).  Mirrors its ``__serialize_impl``; any
    registry error becomes one :class:`SchemaRegistryFailure` naming the subject."""
    ctx = context(topic, is_key)
    subject = None
    try:
        if ref._strategy_accepts_client:
            subject = ref._subject_name_func(
                ctx, ref._schema_name, ref._registry, ref._subject_name_conf
            )
        else:
            subject = ref._subject_name_func(ctx, ref._schema_name)
        if subject is None:
            raise SchemaRegistryFailure(
                f"the subject name strategy gave no subject for topic {topic!r}"
            )
        latest = ref._get_reader_schema(subject)
        if latest is not None:
            return latest.schema_id, latest
        if schema is None:
            raise SchemaRegistryFailure(
                f"no schema given for subject {subject!r} (pass schema_str or set "
                f"use.latest.version)"
            )
        if ref._auto_register:
            got = ref._registry.register_schema_full_response(
                subject, schema, normalize_schemas=ref._normalize_schemas
            )
        else:
            got = ref._registry.lookup_schema(
                subject, schema, normalize_schemas=ref._normalize_schemas
            )
        return got.schema_id, None
    except SchemaRegistryFailure:
        raise
    except Exception as exc:
        raise SchemaRegistryFailure(
            f"schema registry {_url(ref._registry)}: subject {subject!r} (topic {topic!r}): "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def frame(schema_id: int) -> bytes:
    """Confluent's wire-format prefix: magic byte 0 and the big-endian schema id."""
    return b"\x00" + int(schema_id).to_bytes(4, "big")


def arrow_chunks(data: ArrowData) -> Iterator[pa.Array]:
    """Arrow input as a sequence of arrays: a table's record batches become struct
    arrays (zero-copy), a chunked array its chunks."""
    if isinstance(data, pa.Table):
        for batch in data.to_batches():
            yield batch.to_struct_array()
    elif isinstance(data, pa.RecordBatch):
        yield data.to_struct_array()
    elif isinstance(data, pa.ChunkedArray):
        yield from data.chunks
    elif isinstance(data, pa.Array):
        yield data
    else:
        raise TypeError(f"not Arrow data: {type(data).__name__}")


def records_as_array(rows: Sequence[Any], atype: pa.DataType) -> tuple[pa.Array, Rejected]:
    """Python records as one Arrow array of ``atype``; a record Arrow cannot convert is
    rejected (and null) instead of failing the others."""
    try:
        return pa.array(rows, atype), []
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    good: list[Any] = []
    rejected: Rejected = []
    for i, row in enumerate(rows):
        try:
            pa.array([row], atype)
            good.append(row)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            rejected.append((i, f"does not fit the schema: {exc}"))
            good.append(None)
    return pa.array(good, atype), rejected


def python_rows(data: Data) -> Iterator[list[Any]]:
    """Input as lists of Python records, chunk by chunk (Arrow: one list per batch, maps
    as dicts, as the encoders take them; a map with a key twice is an error)."""
    if is_arrow(data):
        for arr in arrow_chunks(data):
            yield arr.to_pylist(maps_as_pydicts="strict")
        return
    if isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
        raise TypeError(
            f"data must be a pyarrow Table/RecordBatch/Array or a list of records, "
            f"not {type(data).__name__}"
        )
    rows = list(data)
    for start in range(0, len(rows), LIST_CHUNK):
        yield rows[start : start + LIST_CHUNK]


def encoded_chunks(
    data: Data,
    prefix: bytes,
    encode: Callable[[Any], bytes],
    errors: tuple[type[BaseException], ...],
) -> Iterator[Chunk]:
    """Per-record serialization for formats without a C encoder: ``encode(record)``
    gives the payload after ``prefix``; a record it raises ``errors`` on is rejected."""
    for rows in python_rows(data):
        out: list[Optional[bytes]] = []
        rejected: Rejected = []
        for i, row in enumerate(rows):
            if row is None:
                out.append(None)
                continue
            try:
                out.append(prefix + encode(row))
            except errors as exc:
                rejected.append((i, f"{type(exc).__name__}: {exc}"))
                out.append(None)
        yield pa.array(out, pa.large_binary()), rejected
