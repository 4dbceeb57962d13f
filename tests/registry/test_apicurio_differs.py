"""Where Apicurio Registry, the registry the tests run, answers otherwise than
Confluent's: pinned here, so that a change on either side is seen, and told in
docs/schema-registry.md.  Everything else the serializers use (ids, versions,
compatibility, references, normalization) is proven alike in test_evolution.py."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.schema_registry_client import (
    Metadata,
    MetadataProperties,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
)
from google.protobuf.descriptor_pb2 import FileDescriptorProto

from support.registry import registry_client


def subject() -> str:
    return f"apicurio-{uuid.uuid4().hex}"


def test_protobuf_format_serialized_is_raw_descriptor_bytes_not_base64(
    schema_registry: Any,
) -> None:
    # Confluent answers ?format=serialized with the FileDescriptorProto in base64, which
    # confluent-kafka's Protobuf serializer and deserializer decode (use.latest.version,
    # use.schema.id).  Apicurio sends the descriptor's bytes as they are, as JSON text.
    client = registry_client(schema_registry)
    name = subject()
    proto = 'syntax = "proto3";\npackage shop;\nmessage Visit { int64 id = 1; string city = 2; }\n'
    client.register_schema(name, Schema(proto, "PROTOBUF"))
    text = client.get_latest_version(name, fmt="serialized").schema.schema_str
    with pytest.raises(binascii.Error):
        base64.b64decode(text, validate=True)
    descriptor = FileDescriptorProto.FromString(text.encode("latin-1"))
    assert (descriptor.package, [m.name for m in descriptor.message_type]) == ("shop", ["Visit"])


def test_data_contract_metadata_and_rules_are_dropped(schema_registry: Any) -> None:
    # Confluent keeps a schema's metadata and ruleSet (data contracts) and returns them;
    # Apicurio's Confluent API accepts the registration and forgets both.
    client = registry_client(schema_registry)
    name = subject()
    schema = {"type": "record", "name": "Visit", "fields": [{"name": "id", "type": "long"}]}
    metadata = Metadata(None, MetadataProperties({"owner": "etl"}), None)
    rules = RuleSet(
        None,
        [
            Rule(
                "positive-id",
                "",
                RuleKind.CONDITION,
                RuleMode.WRITE,
                "CEL",
                None,
                None,
                "message.id > 0",
                None,
                None,
                False,
            )
        ],
    )
    client.register_schema(name, Schema(json.dumps(schema), "AVRO", None, metadata, rules))
    got = client.get_latest_version(name).schema
    assert json.loads(got.schema_str) == schema
    assert (got.metadata, got.rule_set) == (None, None)


def test_a_protobuf_schema_registered_by_confluents_serializer_cannot_be_read_back(
    schema_registry: Any,
) -> None:
    # confluent-kafka's Protobuf serializer registers a message's file as a base64
    # FileDescriptorProto, which Confluent's registry parses and keeps as .proto text.
    # Apicurio keeps the base64 as the schema's text; its deserializer's look-up of the
    # writer schema (?format=serialized) then fails: HTTP 500, "Syntax error".  Without
    # the registry (the message class alone, as cykafka's tests read Protobuf back) the
    # same bytes decode.  (cykafka's ProtobufSerializer registers the same way.)
    from confluent_kafka.schema_registry.protobuf import (
        ProtobufDeserializer,
        ProtobufSerializer,
    )

    from support.proto_types import Address
    from support.registry import PROTOBUF_CONF, ctx

    client = registry_client(schema_registry)
    topic = subject()
    message = Address(city="Lyon", zip=69001)
    payload = ProtobufSerializer(Address, client, PROTOBUF_CONF)(message, ctx(topic))
    stored = client.get_latest_version(f"{topic}-value").schema.schema_str
    assert FileDescriptorProto.FromString(base64.b64decode(stored, validate=True)).message_type
    # A consumer has a client of its own (the producer's has the schema cached by id).
    with SchemaRegistryClient({"url": schema_registry.url}) as consumers:
        with pytest.raises(Exception, match=r"Syntax error.*HTTP status code 500"):
            ProtobufDeserializer(Address, PROTOBUF_CONF, consumers)(payload, ctx(topic))
    assert ProtobufDeserializer(Address, PROTOBUF_CONF)(payload, ctx(topic)) == message
