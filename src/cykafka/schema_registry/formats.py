"""The front doors' glue: a serializer from a format name and a schema argument, as
``cykafka import --value-format avro --schema-registry URL [--value-schema FILE]`` and
``write_kafka(df, ..., value_format="avro", schema_registry=URL)`` take them."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

import pyarrow as pa

from ._common import RegistryLike, registry_client
from .avro import AvroSerializer
from .json_schema import JSONSerializer
from .protobuf import ProtobufSerializer

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from ..serialized import Data

__all__ = [
    "FORMATS",
    "ColumnEncoders",
    "registry_fields",
    "serialize_column",
    "serializer_for",
    "serializers_for",
]

#: the registry formats a front door accepts
FORMATS = ("avro", "json-schema", "protobuf")

Serializer = Union[AvroSerializer, JSONSerializer, ProtobufSerializer]


def _schema_text(schema: Optional[str], what: str) -> Optional[str]:
    """A schema given inline (JSON text) or as a file path."""
    if schema is None:
        return None
    text = str(schema)
    if text.lstrip()[:1] in ("{", "[", '"'):
        return text
    if not os.path.isfile(text):
        raise FileNotFoundError(f"{what}: schema file {text!r} does not exist")
    with open(text, encoding="utf-8") as f:
        return f.read()


def _message_type(spec: Optional[str], what: str) -> type[Message]:
    """A protobuf message class named ``package.module:Message`` (a protoc-generated
    ``*_pb2`` module on the path)."""
    if not spec or ":" not in str(spec):
        raise ValueError(
            f"{what}: protobuf needs the message class as module:Message "
            f"(e.g. orders_pb2:Order, a protoc-generated module), not {spec!r}"
        )
    module, _, name = str(spec).partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what}: cannot load protobuf message {spec!r}: {exc}") from None
    if not hasattr(cls, "DESCRIPTOR"):
        raise ValueError(f"{what}: {spec!r} is not a protobuf message class")
    return cls


def serializer_for(
    fmt: str,
    registry: RegistryLike,
    schema: Optional[str] = None,
    *,
    conf: Optional[Mapping[str, Any]] = None,
    what: str = "value",
) -> Serializer:
    """The serializer for ``fmt`` (one of :data:`FORMATS`).  ``schema``: Avro/JSON
    Schema as a file path or inline JSON (Avro: optional, derived from the data when
    omitted); protobuf: ``module:Message``.  ``what`` names the argument in errors."""
    client = registry_client(registry)
    if fmt == "avro":
        return AvroSerializer(client, _schema_text(schema, what), conf=conf)
    if fmt == "json-schema":
        text = _schema_text(schema, what)
        if text is None:
            raise ValueError(f"{what}: json-schema needs a schema (a file or inline JSON)")
        return JSONSerializer(text, client, conf=conf)
    if fmt == "protobuf":
        return ProtobufSerializer(_message_type(schema, what), client, conf)
    raise ValueError(f"{what} format {fmt!r} is not a registry format; choose from {FORMATS}")


def serializers_for(
    value_format: Optional[str],
    registry: RegistryLike,
    value_schema: Optional[str] = None,
    key_format: Optional[str] = None,
    key_schema: Optional[str] = None,
    *,
    conf: Optional[Mapping[str, Any]] = None,
) -> tuple[Optional[Serializer], Optional[Serializer]]:
    """(value serializer, key serializer) sharing one registry client; None for a side
    whose format is None (its bytes are produced as they are)."""
    client = registry_client(registry)
    value = (
        serializer_for(value_format, client, value_schema, conf=conf, what="value")
        if value_format
        else None
    )
    key = (
        serializer_for(key_format, client, key_schema, conf=conf, what="key")
        if key_format
        else None
    )
    return value, key


def serialize_column(
    serializer: Serializer, data: Data, topic: str, *, is_key: bool = False
) -> tuple[pa.Array, dict[int, str]]:
    """``data`` (an Arrow batch, table, array or a list of records) serialized into one
    large_binary column, and the rows that did not fit ({row: why}, null in the
    column): what a front door that reports bad rows itself (the importer's dead
    letters) needs.  Registry failures raise here, before anything is produced."""
    parts, bad, base = [], {}, 0
    for arr, rejected in serializer.serialize_batch(data, topic, is_key=is_key):
        parts.append(arr)
        for row, why in rejected:
            bad[base + row] = why
        base += len(arr)
    if not parts:
        return pa.array([], pa.large_binary()), bad
    column = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    return column, bad


@dataclass(frozen=True)
class ColumnEncoders:
    """The importer's hook: serializers for one topic's values and keys, each turning
    a batch (or a column) into a message column and adding the rows that did not fit
    to ``bad`` ({row: why}), which the importer reports and dead-letters."""

    topic: str
    value: Optional[Serializer] = None
    key: Optional[Serializer] = None

    def _encode(
        self, ser: Optional[Serializer], data: Data, bad: dict[int, str], what: str, is_key: bool
    ) -> pa.Array:
        if ser is None:
            raise ValueError(f"no {what} serializer for topic {self.topic!r}")
        column, rejected = serialize_column(ser, data, self.topic, is_key=is_key)
        for row, why in rejected.items():
            bad[row] = f"{bad[row]}; {what}: {why}" if row in bad else f"{what}: {why}"
        return column

    def encode_value(self, data: Data, bad: dict[int, str]) -> pa.Array:
        return self._encode(self.value, data, bad, "value", False)

    def encode_key(self, data: Data, bad: dict[int, str]) -> pa.Array:
        return self._encode(self.key, data, bad, "key", True)


def registry_fields(
    value_format: Optional[str],
    key_format: Optional[str],
    registry: Optional[RegistryLike],
    value_schema: Optional[str],
    key_schema: Optional[str],
) -> dict[str, Any]:
    """Checked on the driver, for a front door whose serializers are built elsewhere
    (Spark executors): the same arguments with schema files read into text.  Every
    check that needs no network runs here (formats, schema files, the conf), so a bad
    argument fails before any task starts."""
    if not (value_format or key_format):
        raise ValueError("schema_registry needs value_format and/or key_format")
    if registry is None:
        raise ValueError("value_format/key_format need schema_registry (a URL or config dict)")
    if not isinstance(registry, (str, Mapping)):
        raise TypeError(
            "schema_registry must be a URL or a client config dict (each executor makes "
            f"its own client), not {type(registry).__name__}"
        )
    registry = registry if isinstance(registry, str) else dict(registry)

    def text(fmt: Optional[str], schema: Optional[str]) -> Optional[str]:
        return schema if fmt == "protobuf" else _schema_text(schema, "schema")

    value_text, key_text = text(value_format, value_schema), text(key_format, key_schema)
    serializers_for(value_format, registry, value_text, key_format, key_text)
    return {
        "value_format": value_format,
        "key_format": key_format,
        "schema_registry": registry,
        "value_schema": value_text,
        "key_schema": key_text,
    }
