"""Helpers shared by the Schema Registry serializer tests."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext


def mock_registry() -> SchemaRegistryClient:
    """A fresh in-process registry (``new_client`` with a ``mock://`` URL; the plain
    constructor would try HTTP)."""
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


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
