"""write_kafka(df, ..., value_format=..., schema_registry=...): rows serialized for a
Confluent registry on the executors (the session's real registry, Apicurio: every
executor registers and looks up in the same one, so every record carries the same id)."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from cykafka.spark import write_kafka
from support.registry import registered_id
from support.streaming import run_available_now

SCHEMA = {
    "type": "record",
    "name": "Visit",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "city", "type": ["null", "string"], "default": None},
        {"name": "n", "type": "int"},
    ],
}


def test_rows_as_registry_avro_bad_row_fails_alone(
    spark: Any, broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    name = topic(partitions=2)
    rows = [
        (i, None if i % 5 == 0 else f"c{i}", f"u{i % 3}", 2**40 if i == 7 else i) for i in range(60)
    ]
    df = spark.createDataFrame(rows, "id long, city string, key string, n long").repartition(2)
    report = write_kafka(
        df,
        name,
        bootstrap_servers=broker.bootstrap_servers,
        preset=None,
        value=None,
        value_format="avro",
        key_format="avro",
        schema_registry=schema_registry.url,
        value_schema=json.dumps(SCHEMA),
        key_schema='"string"',
        on_error="report",
    )
    assert (report.rows, report.delivered, report.failed) == (60, 59, 1)
    assert any("'n'" in e and "out of range" in e for e in report.errors)
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=59).values() for r in part
    ]
    parsed = fastavro.parse_schema(SCHEMA)
    value_id = registered_id(schema_registry, f"{name}-value").to_bytes(4, "big")
    key_id = registered_id(schema_registry, f"{name}-key").to_bytes(4, "big")
    decoded = {}
    for r in got:
        # framed: magic byte, then the id the one registry gave each schema
        assert (r.value[:5], r.key[:5]) == (b"\x00" + value_id, b"\x00" + key_id)
        v = fastavro.schemaless_reader(io.BytesIO(r.value[5:]), parsed)
        decoded[v["id"]] = (v, fastavro.schemaless_reader(io.BytesIO(r.key[5:]), "string"))
    assert sorted(decoded) == [i for i in range(60) if i != 7]
    assert decoded[5] == ({"id": 5, "city": None, "n": 5}, "u2")


def test_bad_registry_arguments_fail_on_the_driver(spark: Any, broker: Any) -> None:
    df = spark.createDataFrame([(1,)], "id long")
    kw: dict[str, Any] = {"bootstrap_servers": broker.bootstrap_servers, "value": None}
    with pytest.raises(ValueError, match="need schema_registry"):
        write_kafka(df, "t", value_format="avro", **kw)
    with pytest.raises(FileNotFoundError, match="schema file '/no.avsc' does not exist"):
        write_kafka(
            df, "t", value_format="avro", schema_registry="mock://x", value_schema="/no.avsc", **kw
        )
    with pytest.raises(ValueError, match="is not a registry format"):
        write_kafka(df, "t", value_format="xml", schema_registry="mock://x", **kw)


def test_a_struct_value_column_as_registry_avro(
    spark: Any, broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    name = topic()
    df = spark.createDataFrame(
        [(i, f"c{i}", i * 10) for i in range(20)], "id long, city string, n long"
    ).selectExpr("id", "named_struct('id', id, 'city', city, 'n', cast(n as int)) as payload")
    report = write_kafka(
        df,
        name,
        bootstrap_servers=broker.bootstrap_servers,
        preset=None,
        key=None,
        value="payload",
        value_format="avro",
        schema_registry=schema_registry.url,
        value_schema=json.dumps(SCHEMA),
    )
    assert report.ok and report.delivered == 20
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=20).values() for r in part
    ]
    parsed = fastavro.parse_schema(SCHEMA)
    decoded = sorted(
        (fastavro.schemaless_reader(io.BytesIO(r.value[5:]), parsed) for r in got),
        key=lambda v: v["id"],
    )
    assert decoded[3] == {"id": 3, "city": "c3", "n": 30}


def test_a_stream_as_registry_avro(
    spark: Any, broker: Any, topic: Any, read_back: Any, tmp_path: Any, schema_registry: Any
) -> None:
    """kafka_batch_writer serializes each micro-batch for the registry, as write_kafka."""
    from cykafka.spark import kafka_batch_writer

    name = topic(partitions=2)
    src = tmp_path / "in"
    src.mkdir()
    (src / "part-0.csv").write_text("".join(f"{i},c{i},{i * 10}\n" for i in range(30)))
    writer = kafka_batch_writer(
        name,
        bootstrap_servers=broker.bootstrap_servers,
        preset=None,
        key=None,
        value=None,
        value_format="avro",
        schema_registry=schema_registry.url,
        value_schema=json.dumps(SCHEMA),
    )
    stream = spark.readStream.schema("id long, city string, n int").csv(str(src))
    run_available_now(stream, writer, tmp_path / "chk")
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=30).values() for r in part
    ]
    parsed = fastavro.parse_schema(SCHEMA)
    decoded = sorted(
        (fastavro.schemaless_reader(io.BytesIO(r.value[5:]), parsed) for r in got),
        key=lambda v: v["id"],
    )
    assert decoded == [{"id": i, "city": f"c{i}", "n": i * 10} for i in range(30)]
