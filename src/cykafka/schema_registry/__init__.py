"""Confluent Schema Registry serializers: Avro (encoded from Arrow columns in C), JSON
Schema and Protobuf, with confluent-kafka's constructors, conf keys and bytes.

    from cykafka.schema_registry import AvroSerializer
    ser = AvroSerializer("http://registry:8081", schema_str)
    producer.produce_batch("orders", table, value_serializer=ser).result()
"""

from __future__ import annotations

try:
    # confluent-kafka's registry client and reference serializers need packages of
    # their own (certifi, httpx, authlib, fastavro, ...), kept out of the base install.
    import confluent_kafka.schema_registry  # noqa: F401
except ImportError as e:
    raise ImportError(
        f"cykafka.schema_registry needs the registry extra: pip install 'cykafka[registry]' "
        f"(missing: {e.name or e})"
    ) from e

from ._common import SchemaRegistryFailure, registry_client  # noqa: E402
from .avro import AvroSerializer
from .formats import (
    FORMATS,
    ColumnEncoders,
    serialize_column,
    serializer_for,
    serializers_for,
)
from .json_schema import JSONSerializer
from .protobuf import ProtobufSerializer

__all__ = [
    "FORMATS",
    "AvroSerializer",
    "ColumnEncoders",
    "JSONSerializer",
    "ProtobufSerializer",
    "SchemaRegistryFailure",
    "registry_client",
    "serialize_column",
    "serializer_for",
    "serializers_for",
]
