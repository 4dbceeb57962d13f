"""Registry serializers through the broker: a Parquet file to registry Avro, confluent's
serializers in produce_batch, and what a serialized batch keeps per row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cykafka import Producer
from cykafka.schema_registry import (
    AvroSerializer,
    serializers_for,
)
from support.registry import registry_client


def test_parquet_file_to_registry_avro_with_a_schema_file(
    tmp_path: Path, broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    table = pa.table({"id": list(range(50)), "city": [f"c{i % 3}" for i in range(50)]})
    pq.write_table(table, tmp_path / "in.parquet")
    schema = {
        "type": "record",
        "name": "Visit",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "city", "type": "string"},
            {"name": "source", "type": "string", "default": "parquet"},
        ],
    }
    (tmp_path / "visit.avsc").write_text(json.dumps(schema))
    registry = registry_client(schema_registry)
    value_ser, key_ser = serializers_for(
        "avro", registry, str(tmp_path / "visit.avsc"), key_format="avro", key_schema='"long"'
    )
    assert isinstance(value_ser, AvroSerializer) and isinstance(key_ser, AvroSerializer)
    name = topic()
    data = pq.read_table(tmp_path / "in.parquet")
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name, data, data.column("id"), value_serializer=value_ser, key_serializer=key_ser
        ).result(30)
    assert report.delivered == 50
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=50).values() for r in part
    ]
    deser = AvroDeserializer(registry)
    value_ctx = SerializationContext(name, MessageField.VALUE)
    key_ctx = SerializationContext(name, MessageField.KEY)
    assert deser(got[7].value, value_ctx) == {"id": 7, "city": "c1", "source": "parquet"}
    assert deser(got[7].key, key_ctx) == 7


def test_produce_batch_takes_confluent_serializers_too(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvro

    registry = registry_client(schema_registry)
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}
    ref = ConfluentAvro(registry, json.dumps(schema))
    name = topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name, [{"n": 1}, {"n": "x"}, {"n": 3}], value_serializer=ref
        ).result(30)
    assert (report.delivered, report.failed) == (2, 1)
    assert report.errors[0][0] == 1 and "row 1" in str(report.errors[0][1])
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=2).values() for r in part
    ]
    ctx = SerializationContext(name, MessageField.VALUE)
    assert [r.value for r in got] == [ref({"n": 1}, ctx), ref({"n": 3}, ctx)]


def test_serialized_batch_keeps_partitions_timestamps_headers_per_row(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    registry = registry_client(schema_registry)
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    ser = AvroSerializer(registry, json.dumps(schema))
    name = topic(partitions=2)
    rows = [{"n": 1}, {"n": 2**40}, {"n": 3}, {"n": 4}]  # row 1 does not fit
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name,
            rows,
            partitions=[1, 0, 0, 1],
            timestamps=[1_000, 2_000, 3_000, 4_000],
            headers=[[("h", b"a")], None, [("h", b"c")], [("h", b"d")]],
            value_serializer=ser,
        ).result(30)
    assert (report.delivered, report.failed) == (3, 1) and report.errors[0][0] == 1
    got = read_back(broker.bootstrap_servers, name, expected=3)
    ctx = SerializationContext(name, MessageField.VALUE)
    seen = {ser(r, ctx): r for r in rows if r["n"] < 100}
    out = {
        (p, rec.timestamp, tuple(rec.headers), seen[rec.value]["n"])
        for p, recs in got.items()
        for rec in recs
    }
    assert out == {
        (1, 1_000, (("h", b"a"),), 1),
        (0, 3_000, (("h", b"c"),), 3),
        (1, 4_000, (("h", b"d"),), 4),
    }
