"""What only a real registry does, end to end through cykafka's serializers, a broker and
a ``read_committed`` consumer: it refuses an incompatible schema (BACKWARD, Confluent's
default), keeps versions as a schema evolves, resolves references, files schemas under
the subject each naming strategy names, and gives equivalent schemas one id.

confluent's ``mock://`` registry does none of the checking: it registers whatever it is
given, so a refusal could never be seen before."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvro

from cykafka import Producer
from cykafka.schema_registry import AvroSerializer, SchemaRegistryFailure
from support.registry import ctx, registered_id, registry_client


def visit(namespace: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "Visit",
        "namespace": namespace,
        "fields": [{"name": "id", "type": "long"}, *extra],
    }


def namespace() -> str:
    # Record-named subjects are the record's full name: unique per test.
    return f"ns{uuid.uuid4().hex[:10]}"


def produce(broker: Any, name: str, rows: list[Any], ser: Any) -> None:
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(name, rows, value_serializer=ser).result(60)
    assert (report.delivered, report.failed) == (len(rows), 0), report.errors


def test_an_incompatible_schema_is_refused_and_nothing_is_produced(
    broker: Any, topic: Any, committed: Any, schema_registry: Any
) -> None:
    client = registry_client(schema_registry)
    name = topic()
    v1 = visit(namespace())
    produce(broker, name, [{"id": 1}, {"id": 2}], AvroSerializer(client, json.dumps(v1)))
    # A new field without a default: a reader of v2 cannot read v1's records, which
    # BACKWARD refuses (HTTP 409).
    v2 = dict(v1, fields=[*v1["fields"], {"name": "city", "type": "string"}])
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        with pytest.raises(SchemaRegistryFailure, match=rf"subject '{name}-value'.*409"):
            p.produce_batch(
                name,
                [{"id": 3, "city": "Lyon"}],
                value_serializer=AvroSerializer(client, json.dumps(v2)),
            )
        assert len(p) == 0
        p.flush(30)
    assert client.get_versions(f"{name}-value") == [1]
    got = committed(broker.bootstrap_servers, name)
    deser = AvroDeserializer(client)
    assert [deser(r.value, ctx(name)) for r in got] == [{"id": 1}, {"id": 2}]


def test_a_schema_evolves_old_and_new_records_read_with_either(
    broker: Any, topic: Any, committed: Any, schema_registry: Any
) -> None:
    client = registry_client(schema_registry)
    name = topic()
    v1 = visit(namespace())
    v2 = dict(
        v1, fields=[*v1["fields"], {"name": "city", "type": ["null", "string"], "default": None}]
    )
    produce(broker, name, [{"id": 1}, {"id": 2}], AvroSerializer(client, json.dumps(v1)))
    id1 = registered_id(schema_registry, f"{name}-value")
    produce(broker, name, [{"id": 3, "city": "Lyon"}], AvroSerializer(client, json.dumps(v2)))
    id2 = registered_id(schema_registry, f"{name}-value")
    assert client.get_versions(f"{name}-value") == [1, 2] and id1 != id2
    got = committed(broker.bootstrap_servers, name)
    assert [r.value[1:5] for r in got] == [id.to_bytes(4, "big") for id in (id1, id1, id2)]
    # Each record decoded with the schema it was written with...
    writer = AvroDeserializer(client)
    assert [writer(r.value, ctx(name)) for r in got] == [
        {"id": 1},
        {"id": 2},
        {"id": 3, "city": "Lyon"},
    ]
    # ...and all of them with the new one: v1's records get the default.
    reader = AvroDeserializer(client, json.dumps(v2))
    assert [reader(r.value, ctx(name)) for r in got] == [
        {"id": 1, "city": None},
        {"id": 2, "city": None},
        {"id": 3, "city": "Lyon"},
    ]


@pytest.mark.parametrize("how", ["registered", "given"])
def test_a_schema_with_a_reference_to_another_subject(
    broker: Any, topic: Any, committed: Any, schema_registry: Any, how: str
) -> None:
    """Confluent's schema references: ``Order`` names ``Address``, registered under a
    subject of its own.  The serializer writes with the subject's registered schema
    (``use.latest.version``), or registers the ``Schema`` it is given, references and
    all; either way the records are confluent's bytes."""
    client = registry_client(schema_registry)
    name = topic()
    ns = namespace()
    address = {
        "type": "record",
        "name": "Address",
        "namespace": ns,
        "fields": [{"name": "city", "type": "string"}],
    }
    client.register_schema(f"{name}-address", Schema(json.dumps(address), "AVRO"))
    order = {
        "type": "record",
        "name": "Order",
        "namespace": ns,
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "ship", "type": f"{ns}.Address"},
            {"name": "bill", "type": ["null", "Address"], "default": None},
        ],
    }
    refs = [SchemaReference(f"{ns}.Address", f"{name}-address", 1)]
    schema = Schema(json.dumps(order), "AVRO", refs)
    conf: dict[str, Any] = {}
    if how == "registered":
        client.register_schema(f"{name}-value", schema)
        conf = {"use.latest.version": True, "auto.register.schemas": False}
    ser = AvroSerializer(client, None if how == "registered" else schema, conf=conf)
    rows = [
        {"id": i, "ship": {"city": f"c{i}"}, "bill": {"city": "b"} if i % 2 else None}
        for i in range(5)
    ]
    produce(broker, name, rows, ser)
    got = committed(broker.bootstrap_servers, name)
    ref = ConfluentAvro(client, None if how == "registered" else schema, conf=conf)
    assert [r.value for r in got] == [ref(r, ctx(name)) for r in rows]
    registered = client.get_latest_version(f"{name}-value")
    assert registered.version == 1 and registered.schema.references == refs
    deser = AvroDeserializer(client)
    assert [deser(r.value, ctx(name)) for r in got] == rows


@pytest.mark.parametrize(
    "strategy, subject",
    [
        ("topic_subject_name_strategy", "{topic}-value"),
        ("record_subject_name_strategy", "{ns}.Visit"),
        ("topic_record_subject_name_strategy", "{topic}-{ns}.Visit"),
    ],
)
def test_each_subject_name_strategy_names_the_subject_the_records_carry(
    broker: Any, topic: Any, committed: Any, schema_registry: Any, strategy: str, subject: str
) -> None:
    import confluent_kafka.schema_registry as sr

    client = registry_client(schema_registry)
    name, ns = topic(), namespace()
    subject = subject.format(topic=name, ns=ns)
    conf = {"subject.name.strategy": getattr(sr, strategy)}
    schema = json.dumps(visit(ns))
    produce(broker, name, [{"id": 7}], AvroSerializer(client, schema, conf=conf))
    assert [s for s in client.get_subjects() if name in s or ns in s] == [subject]
    (got,) = committed(broker.bootstrap_servers, name)
    assert got.value[:5] == b"\x00" + registered_id(schema_registry, subject).to_bytes(4, "big")
    assert got.value == ConfluentAvro(client, schema, conf=conf)({"id": 7}, ctx(name))


def test_normalized_schemas_written_differently_are_one_version_and_one_id(
    broker: Any, topic: Any, committed: Any, schema_registry: Any
) -> None:
    client = registry_client(schema_registry)
    name, ns = topic(), namespace()
    plain = json.dumps(visit(ns))
    # The same schema: full name instead of a namespace, a type as an object, keys reordered.
    other = json.dumps(
        {
            "fields": [{"type": {"type": "long"}, "name": "id"}],
            "name": f"{ns}.Visit",
            "type": "record",
        }
    )
    conf = {"normalize.schemas": True}
    produce(broker, name, [{"id": 1}], AvroSerializer(client, plain, conf=conf))
    produce(broker, name, [{"id": 2}], AvroSerializer(client, other, conf=conf))
    assert client.get_versions(f"{name}-value") == [1]
    got = committed(broker.bootstrap_servers, name)
    want = b"\x00" + registered_id(schema_registry, f"{name}-value").to_bytes(4, "big")
    assert [r.value[:5] for r in got] == [want, want]
    assert [
        fastavro.schemaless_reader(io.BytesIO(r.value[5:]), json.loads(plain)) for r in got
    ] == [
        {"id": 1},
        {"id": 2},
    ]
