"""cykafka.schema_registry.AvroSerializer against confluent-kafka's AvroSerializer (the
reference): the same bytes for generated schemas and records, the same registry
behaviour, and a round trip through the broker and confluent's AvroDeserializer."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import (
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvro
from confluent_kafka.serialization import MessageField
from hypothesis import HealthCheck, given, settings

from avro_cases import table_cases
from cykafka import Producer
from cykafka.schema_registry import AvroSerializer, SchemaRegistryFailure
from registry_helpers import ctx, encode, mock_registry

VALUE = MessageField.VALUE


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(table_cases())
def test_bytes_equal_confluent_for_generated_schemas(case: Any) -> None:
    schema, rows, table = case
    registry = mock_registry()
    text = json.dumps(schema)
    ours, rejected = encode(AvroSerializer(registry, text), table)
    assert rejected == []
    ref = ConfluentAvro(registry, text)
    assert ours == [ref(row, ctx("t")) for row in rows]
    # the same records given as Python dicts take the same path
    listed, rejected = encode(AvroSerializer(registry, text), rows)
    assert rejected == []
    assert listed == ours
    # a slice (every Arrow buffer read at an offset) and a table of several chunks
    k = len(rows) // 2
    sliced, _ = encode(AvroSerializer(registry, text), table.slice(k))
    assert sliced == ours[k:]
    chunked = pa.concat_tables([table.slice(0, k), table.slice(k)])
    assert encode(AvroSerializer(registry, text), chunked)[0] == ours


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=table_cases(max_rows=30))
def test_generated_tables_round_trip_through_the_broker(
    case: Any, broker: Any, topic: Any, read_back: Any
) -> None:
    schema, rows, table = case
    registry = mock_registry()
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


def test_arrow_uuid_and_dictionary_enum_columns() -> None:
    registry = mock_registry()
    schema = {
        "type": "record",
        "name": "U",
        "fields": [
            {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "e", "type": ["null", {"type": "enum", "name": "C", "symbols": ["x", "y"]}]},
        ],
    }
    ids = [uuid.UUID(int=i * 7919) for i in range(4)]
    table = pa.table(
        {
            "u": pa.array(ids, pa.uuid()),
            "e": pa.array(["y", None, "x", "y"]).dictionary_encode(),
        }
    )
    ours, rejected = encode(AvroSerializer(registry, json.dumps(schema)), table)
    assert rejected == []
    ref = ConfluentAvro(registry, json.dumps(schema))
    rows = [{"u": u, "e": e} for u, e in zip(ids, ["y", None, "x", "y"])]
    assert ours == [ref(r, ctx("t")) for r in rows]


SCHEMA = {
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


def test_a_row_that_does_not_fit_is_rejected_alone_with_row_and_field() -> None:
    rows = order_rows(6)
    table = order_table(rows)
    bad = table.to_pylist()
    bad[1]["kind"] = "Z"  # not a symbol
    bad[2]["small"] = 2**40  # int out of range
    bad[4]["price"] = decimal.Decimal("12345.67")  # 7 digits, precision 6
    table = pa.Table.from_pylist(bad, table.schema)
    values, rejected = encode(AvroSerializer(mock_registry(), json.dumps(SCHEMA)), table)
    assert [r for r, _ in rejected] == [1, 2, 4]
    assert "kind" in rejected[0][1] and "not a symbol" in rejected[0][1]
    assert "small" in rejected[1][1] and "out of range" in rejected[1][1]
    assert "price" in rejected[2][1] and "precision" in rejected[2][1]
    assert [v is None for v in values] == [False, True, True, False, True, False]


def test_incompatible_arrow_column_is_refused_up_front_naming_it() -> None:
    table = order_table(order_rows(2)).set_column(3, "tags", pa.array([1.5, 2.5], pa.float64()))
    with pytest.raises(TypeError, match=r"column 'tags': Arrow type double cannot be written"):
        AvroSerializer(mock_registry(), json.dumps(SCHEMA)).serialize_batch(table, "t")


def test_missing_column_without_default_is_refused() -> None:
    table = order_table(order_rows(2)).drop_columns(["id"])
    with pytest.raises(TypeError, match=r"column 'id' is missing"):
        AvroSerializer(mock_registry(), json.dumps(SCHEMA)).serialize_batch(table, "t")


def test_schema_derived_from_arrow_is_registered_and_matches_confluent() -> None:
    registry = mock_registry()
    table = order_table(order_rows(5)).drop_columns(["kind", "price"])
    ours, _ = encode(AvroSerializer(registry), table, "derived")
    registered = registry.get_latest_version("derived-value")
    written = json.loads(registered.schema.schema_str)
    assert written["name"] == "Row"
    assert [f["name"] for f in written["fields"]] == ["id", "note", "at", "tags", "small"]
    ref = ConfluentAvro(registry, registered.schema.schema_str)
    assert ours == [ref(r, ctx("derived")) for r in table.to_pylist()]


def test_use_latest_version_writes_with_the_registered_schema() -> None:
    registry = mock_registry()
    rows = order_rows(3)
    ConfluentAvro(registry, json.dumps(SCHEMA))(rows[0], ctx("latest"))  # registers it
    ser = AvroSerializer(
        registry, None, conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    ours, _ = encode(ser, order_table(rows), "latest")
    ref = ConfluentAvro(registry, json.dumps(SCHEMA))
    assert ours == [ref(r, ctx("latest")) for r in rows]


@pytest.mark.parametrize(
    "strategy, subject",
    [
        (record_subject_name_strategy, "shop.Order"),
        (topic_record_subject_name_strategy, "strat-shop.Order"),
    ],
)
def test_subject_name_strategies_as_confluent(strategy: Any, subject: str) -> None:
    registry = mock_registry()
    ser = AvroSerializer(registry, json.dumps(SCHEMA), conf={"subject.name.strategy": strategy})
    ours, _ = encode(ser, order_table(order_rows(2)), "strat")
    assert registry.get_latest_version(subject).schema_id == int.from_bytes(ours[0][1:5], "big")
    ref = ConfluentAvro(registry, json.dumps(SCHEMA), conf={"subject.name.strategy": strategy})
    assert ours[1] == ref(order_rows(2)[1], ctx("strat"))


def test_unknown_conf_key_is_refused_like_confluent() -> None:
    with pytest.raises(ValueError, match="Unrecognized properties: bogus"):
        AvroSerializer(mock_registry(), json.dumps(SCHEMA), conf={"bogus": 1})


def test_schema_the_registry_does_not_have_is_one_error_before_anything_is_produced(
    broker: Any, topic: Any, read_back: Any
) -> None:
    # confluent's mock registry does not check compatibility; the refusal it can give
    # is "Schema Not Found" for a lookup (auto.register.schemas false).
    registry = mock_registry()
    name = topic()
    old = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    ConfluentAvro(registry, json.dumps(old))({"a": 1}, ctx(name))
    ser = AvroSerializer(registry, json.dumps(SCHEMA), conf={"auto.register.schemas": False})
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        with pytest.raises(
            SchemaRegistryFailure, match=f"subject '{name}-value'.*Schema Not Found"
        ):
            p.produce_batch(name, order_table(order_rows(3)), value_serializer=ser)
        assert len(p) == 0
        p.flush(10)
    got = read_back(broker.bootstrap_servers, name, timeout=5)
    assert sum(len(v) for v in got.values()) == 0


def test_unreachable_registry_is_one_clear_error(broker: Any, topic: Any) -> None:
    ser = AvroSerializer("http://127.0.0.1:9", json.dumps(SCHEMA))
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        with pytest.raises(SchemaRegistryFailure, match=r"http://127.0.0.1:9"):
            p.produce_batch(topic(), order_table(order_rows(3)), value_serializer=ser)
        assert len(p) == 0


def test_produce_batch_round_trip_through_the_broker(
    broker: Any, topic: Any, read_back: Any
) -> None:
    registry = mock_registry()
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
            value_serializer=AvroSerializer(registry, json.dumps(SCHEMA)),
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
    ref = ConfluentAvro(registry, json.dumps(SCHEMA))
    expected = [ref(r, ctx(name)) for i, r in enumerate(rows) if i != 7]
    assert [r.value for r in got] == expected
    decoded = [deser(r.value, ctx(name)) for r in got]
    assert decoded == [deser(v, ctx(name)) for v in expected]
    assert decoded[0]["price"] == decimal.Decimal("0.00") and decoded[1]["tags"] == ["t0"]
    assert [kdeser(r.key, ctx(name, MessageField.KEY)) for r in got] == [
        k for i, k in enumerate(keys) if i != 7
    ]


def test_produce_one_record_with_a_serializer(broker: Any, topic: Any, read_back: Any) -> None:
    registry = mock_registry()
    name = topic()
    row = order_rows(2)[1]
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        p.produce(
            name, value=row, value_serializer=AvroSerializer(registry, json.dumps(SCHEMA))
        ).result(30)
    (got,) = [
        r for part in read_back(broker.bootstrap_servers, name, expected=1).values() for r in part
    ]
    assert got.value == ConfluentAvro(registry, json.dumps(SCHEMA))(row, ctx(name))


def test_large_batches_are_encoded_in_slices_with_the_same_bytes(monkeypatch: Any) -> None:
    import cykafka.schema_registry.avro as avro_module

    registry = mock_registry()
    rows = order_rows(50)
    table = order_table(rows)
    whole, _ = encode(AvroSerializer(registry, json.dumps(SCHEMA)), table)
    monkeypatch.setattr(avro_module, "ENCODE_ROWS", 7)
    chunks = list(AvroSerializer(registry, json.dumps(SCHEMA)).serialize_batch(table, "t"))
    assert [len(arr) for arr, _ in chunks] == [7] * 7 + [1]
    assert [v for arr, _ in chunks for v in arr.to_pylist()] == whole


def test_text_columns_are_parsed_into_the_schemas_types() -> None:
    # CSV gives every field as text
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "ok", "type": ["null", "boolean"], "default": None},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {
                "name": "price",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
            },
            {"name": "name", "type": "string"},
        ],
    }
    table = pa.table(
        {
            "id": ["1", "2", "x", "4"],
            "ok": ["true", None, "false", "false"],
            "at": [
                "2024-05-01T10:00:00Z",
                "2024-05-01T10:00:00.250Z",
                "2024-05-01T00:00:00Z",
                "soon",
            ],
            "price": ["1.50", "2", "3.25", "4.00"],
            "name": ["a", "b", "c", "d"],
        }
    )
    registry = mock_registry()
    ours, rejected = encode(AvroSerializer(registry, json.dumps(schema)), table)
    assert [r for r, _ in rejected] == [2, 3]
    assert "field 'id': 'x' is not a int64" in rejected[0][1]
    assert "field 'at': 'soon'" in rejected[1][1]
    at = datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.UTC)
    ref = ConfluentAvro(registry, json.dumps(schema))
    assert ours[:2] == [
        ref(
            {"id": 1, "ok": True, "at": at, "price": decimal.Decimal("1.50"), "name": "a"}, ctx("t")
        ),
        ref(
            {
                "id": 2,
                "ok": None,
                "at": at + datetime.timedelta(milliseconds=250),
                "price": decimal.Decimal("2.00"),
                "name": "b",
            },
            ctx("t"),
        ),
    ]


def test_one_serializer_shared_by_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    registry = mock_registry()
    ser = AvroSerializer(registry, json.dumps(SCHEMA))
    tables = [order_table(order_rows(n)) for n in (300, 500, 700, 900)]
    alone = [encode(ser, t)[0] for t in tables]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            assert list(pool.map(lambda t: encode(ser, t)[0], tables)) == alone
