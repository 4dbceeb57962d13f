"""Helpers shared by the Schema Registry serializer tests."""

from __future__ import annotations

import datetime
import decimal
import json
import urllib.parse
import urllib.request
import uuid
from typing import Any

import pyarrow as pa
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext


def mock_registry() -> SchemaRegistryClient:
    """A fresh in-process registry (``new_client`` with a ``mock://`` URL; the plain
    constructor would try HTTP).  It speaks no TLS: without ``ssl.ca.location`` False
    the client loads certifi's CA bundle for it, 50 ms a client, the most of a
    property test's time."""
    return SchemaRegistryClient.new_client(
        {"url": f"mock://{uuid.uuid4().hex}", "ssl.ca.location": False}
    )


def ctx(topic: str, field: str = MessageField.VALUE) -> SerializationContext:
    return SerializationContext(topic, field)


def encode(ser: Any, data: Any, topic: str = "t") -> tuple[list[Any], list[Any]]:
    """All of ``ser.serialize_batch``'s values, and its rejected rows as (row, why)
    numbered over the whole input."""
    values: list[Any] = []
    rejected: list[Any] = []
    for arr, rej in ser.serialize_batch(data, topic):
        rejected += [(len(values) + r, why) for r, why in rej]
        values += arr.to_pylist()
    return values, rejected


AVRO_ORDER_SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
        },
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "small", "type": "int"},
    ],
}


def order_rows(n: int) -> list[dict[str, Any]]:
    at = datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC)
    return [
        {
            "id": i,
            "note": None if i % 3 == 0 else f"n{i}",
            "at": at + datetime.timedelta(milliseconds=i),
            "tags": [f"t{j}" for j in range(i % 4)],
            "price": decimal.Decimal(i).scaleb(-2),
            "kind": "AB"[i % 2],
            "small": i,
        }
        for i in range(n)
    ]


def order_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(
        rows,
        pa.schema(
            [
                ("id", pa.int64()),
                ("note", pa.string()),
                ("at", pa.timestamp("ms", "UTC")),
                ("tags", pa.list_(pa.string())),
                ("price", pa.decimal128(10, 2)),  # wider than the schema's precision 6
                ("kind", pa.dictionary(pa.int8(), pa.string())),
                ("small", pa.int64()),
            ]
        ),
    )


JSON_ORDER_SCHEMA = {
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": ["string", "null"]},
        "amount": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
        },
    },
    "required": ["id"],
}


PROTOBUF_CONF = {"use.deprecated.format": False}


def mock_url() -> str:
    return f"mock://{uuid.uuid4().hex}"


#: One client per registry URL: each test uses subjects of its own, so nothing one test
#: caches is another's, and no test leaves an open connection behind.
_CLIENTS: dict[str, SchemaRegistryClient] = {}


def registry_client(registry: Any) -> SchemaRegistryClient:
    """The client of the session's real registry (``schema_registry`` fixture)."""
    client = _CLIENTS.get(registry.url)
    if client is None:
        # A request the registry never answers fails (and is retried) instead of hanging.
        client = _CLIENTS[registry.url] = SchemaRegistryClient({"url": registry.url, "timeout": 30})
    return client


def registered_id(registry: Any, subject: str) -> int:
    """The id the registry gave the latest version of ``subject``, asked over HTTP now
    (a client caches the latest version it saw)."""
    url = f"{registry.url}/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return int(json.load(resp)["id"])
