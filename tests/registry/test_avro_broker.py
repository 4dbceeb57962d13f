"""cykafka.schema_registry.AvroSerializer through the broker: generated tables and
batches read back with confluent's AvroDeserializer, and registry errors before anything
is produced."""

from __future__ import annotations

import decimal
import json
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvro
from confluent_kafka.serialization import MessageField
from hypothesis import HealthCheck, given, settings

from cykafka import Producer
from cykafka.schema_registry import AvroSerializer, SchemaRegistryFailure
from support.avro_cases import table_cases
from support.registry import AVRO_ORDER_SCHEMA, ctx, order_rows, order_table, registry_client


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=table_cases(max_rows=30))
def test_generated_tables_round_trip_through_the_broker(
    case: Any, broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    schema, rows, table = case
    registry = registry_client(schema_registry)
    name = topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        ser = AvroSerializer(registry, json.dumps(schema))
        report = p.produce_batch(name, table, value_serializer=ser).result(30)
    assert report.delivered == len(rows)
    got = [
        r
        for part in read_back(broker.bootstrap_servers, name, expected=len(rows)).values()
        for r in part
    ]
    ref = ConfluentAvro(registry, json.dumps(schema))
    expected = [ref(r, ctx(name)) for r in rows]
    assert [r.value for r in got] == expected
    deser = AvroDeserializer(registry)
    assert [deser(r.value, ctx(name)) for r in got] == [deser(v, ctx(name)) for v in expected]


def test_schema_the_registry_does_not_have_is_one_error_before_anything_is_produced(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    # A lookup (auto.register.schemas false) of a schema the subject does not have:
    # error code 40403 (schema not found), as Confluent's registry answers.
    registry = registry_client(schema_registry)
    name = topic()
    old = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    ConfluentAvro(registry, json.dumps(old))({"a": 1}, ctx(name))
    ser = AvroSerializer(
        registry, json.dumps(AVRO_ORDER_SCHEMA), conf={"auto.register.schemas": False}
    )
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        with pytest.raises(SchemaRegistryFailure, match=f"subject '{name}-value'.*40403"):
            p.produce_batch(name, order_table(order_rows(3)), value_serializer=ser)
        assert len(p) == 0
        p.flush(10)
    got = read_back(broker.bootstrap_servers, name, timeout=5)
    assert sum(len(v) for v in got.values()) == 0


def test_unreachable_registry_is_one_clear_error(broker: Any, topic: Any) -> None:
    ser = AvroSerializer("http://127.0.0.1:9", json.dumps(AVRO_ORDER_SCHEMA))
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        with pytest.raises(SchemaRegistryFailure, match=r"http://127.0.0.1:9"):
            p.produce_batch(topic(), order_table(order_rows(3)), value_serializer=ser)
        assert len(p) == 0


def test_produce_batch_round_trip_through_the_broker(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    registry = registry_client(schema_registry)
    name = topic()
    rows = order_rows(500)
    table = order_table(rows)
    bad = table.to_pylist()
    bad[7]["kind"] = "nope"
    table = pa.Table.from_pylist(bad, table.schema)
    keys = [f"k{i}" for i in range(len(rows))]
    key_ser = AvroSerializer(registry, '"string"')
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name,
            table,
            keys,
            value_serializer=AvroSerializer(registry, json.dumps(AVRO_ORDER_SCHEMA)),
            key_serializer=key_ser,
        ).result(30)
    assert report.total == 500 and report.delivered == 499 and report.failed == 1
    index, exc = report.errors[0]
    assert index == 7 and "row 7" in str(exc) and "kind" in str(exc)
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=499).values() for r in part
    ]
    deser = AvroDeserializer(registry)
    kdeser = AvroDeserializer(registry)
    ref = ConfluentAvro(registry, json.dumps(AVRO_ORDER_SCHEMA))
    expected = [ref(r, ctx(name)) for i, r in enumerate(rows) if i != 7]
    assert [r.value for r in got] == expected
    decoded = [deser(r.value, ctx(name)) for r in got]
    assert decoded == [deser(v, ctx(name)) for v in expected]
    assert decoded[0]["price"] == decimal.Decimal("0.00") and decoded[1]["tags"] == ["t0"]
    assert [kdeser(r.key, ctx(name, MessageField.KEY)) for r in got] == [
        k for i, k in enumerate(keys) if i != 7
    ]


def test_produce_one_record_with_a_serializer(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    registry = registry_client(schema_registry)
    name = topic()
    row = order_rows(2)[1]
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        p.produce(
            name,
            value=row,
            value_serializer=AvroSerializer(registry, json.dumps(AVRO_ORDER_SCHEMA)),
        ).result(30)
    (got,) = [
        r for part in read_back(broker.bootstrap_servers, name, expected=1).values() for r in part
    ]
    assert got.value == ConfluentAvro(registry, json.dumps(AVRO_ORDER_SCHEMA))(row, ctx(name))


def test_union_and_recursive_records_round_trip_with_row_and_field_errors(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    schema = {
        "type": "record",
        "name": "Node",
        "namespace": "shop",
        "fields": [
            {"name": "value", "type": ["long", "double", "string"]},
            {"name": "next", "type": ["null", "Node"], "default": None},
        ],
    }
    rows = [
        {"value": 1, "next": {"value": "two", "next": None}},
        {"value": [1]},  # fits no branch of the union
        {"value": 2.5, "next": {"value": 3, "next": {"value": "x", "next": None}}},
    ]
    registry = registry_client(schema_registry)
    name = topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name, rows, value_serializer=AvroSerializer(registry, json.dumps(schema))
        ).result(30)
    assert (report.delivered, report.failed) == (2, 1)
    assert report.errors[0][0] == 1 and "row 1: field 'value'" in str(report.errors[0][1])
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=2).values() for r in part
    ]
    ref = ConfluentAvro(registry, json.dumps(schema))
    assert [r.value for r in got] == [ref(rows[0], ctx(name)), ref(rows[2], ctx(name))]
    deser = AvroDeserializer(registry)
    assert [deser(r.value, ctx(name)) for r in got] == [rows[0], rows[2]]
