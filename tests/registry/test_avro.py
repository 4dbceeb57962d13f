"""cykafka.schema_registry.AvroSerializer against confluent-kafka's AvroSerializer (the
reference), with a mock registry: the same bytes for generated schemas and records, and
the same registry behaviour (through the broker: test_avro_broker.py)."""

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
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvro
from hypothesis import HealthCheck, given, settings

from cykafka.schema_registry import AvroSerializer
from support.avro_cases import table_cases, union_record_cases
from support.registry import AVRO_ORDER_SCHEMA, ctx, encode, mock_registry, order_rows, order_table


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


def test_a_row_that_does_not_fit_is_rejected_alone_with_row_and_field() -> None:
    rows = order_rows(6)
    table = order_table(rows)
    bad = table.to_pylist()
    bad[1]["kind"] = "Z"  # not a symbol
    bad[2]["small"] = 2**40  # int out of range
    bad[4]["price"] = decimal.Decimal("12345.67")  # 7 digits, precision 6
    table = pa.Table.from_pylist(bad, table.schema)
    values, rejected = encode(AvroSerializer(mock_registry(), json.dumps(AVRO_ORDER_SCHEMA)), table)
    assert [r for r, _ in rejected] == [1, 2, 4]
    assert "kind" in rejected[0][1] and "not a symbol" in rejected[0][1]
    assert "small" in rejected[1][1] and "out of range" in rejected[1][1]
    assert "price" in rejected[2][1] and "precision" in rejected[2][1]
    assert [v is None for v in values] == [False, True, True, False, True, False]


def test_incompatible_arrow_column_is_refused_up_front_naming_it() -> None:
    table = order_table(order_rows(2)).set_column(3, "tags", pa.array([1.5, 2.5], pa.float64()))
    with pytest.raises(TypeError, match=r"column 'tags': Arrow type double cannot be written"):
        AvroSerializer(mock_registry(), json.dumps(AVRO_ORDER_SCHEMA)).serialize_batch(table, "t")


def test_missing_column_without_default_is_refused() -> None:
    table = order_table(order_rows(2)).drop_columns(["id"])
    with pytest.raises(TypeError, match=r"column 'id' is missing"):
        AvroSerializer(mock_registry(), json.dumps(AVRO_ORDER_SCHEMA)).serialize_batch(table, "t")


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
    ConfluentAvro(registry, json.dumps(AVRO_ORDER_SCHEMA))(rows[0], ctx("latest"))  # registers it
    ser = AvroSerializer(
        registry, None, conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    ours, _ = encode(ser, order_table(rows), "latest")
    ref = ConfluentAvro(registry, json.dumps(AVRO_ORDER_SCHEMA))
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
    ser = AvroSerializer(
        registry, json.dumps(AVRO_ORDER_SCHEMA), conf={"subject.name.strategy": strategy}
    )
    ours, _ = encode(ser, order_table(order_rows(2)), "strat")
    assert registry.get_latest_version(subject).schema_id == int.from_bytes(ours[0][1:5], "big")
    ref = ConfluentAvro(
        registry, json.dumps(AVRO_ORDER_SCHEMA), conf={"subject.name.strategy": strategy}
    )
    assert ours[1] == ref(order_rows(2)[1], ctx("strat"))


def test_unknown_conf_key_is_refused_like_confluent() -> None:
    with pytest.raises(ValueError, match="Unrecognized properties: bogus"):
        AvroSerializer(mock_registry(), json.dumps(AVRO_ORDER_SCHEMA), conf={"bogus": 1})


def test_large_batches_are_encoded_in_slices_with_the_same_bytes(monkeypatch: Any) -> None:
    import cykafka.schema_registry.avro as avro_module

    registry = mock_registry()
    rows = order_rows(50)
    table = order_table(rows)
    whole, _ = encode(AvroSerializer(registry, json.dumps(AVRO_ORDER_SCHEMA)), table)
    monkeypatch.setattr(avro_module, "ENCODE_ROWS", 7)
    chunks = list(
        AvroSerializer(registry, json.dumps(AVRO_ORDER_SCHEMA)).serialize_batch(table, "t")
    )
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
    ser = AvroSerializer(registry, json.dumps(AVRO_ORDER_SCHEMA))
    tables = [order_table(order_rows(n)) for n in (300, 500, 700, 900)]
    alone = [encode(ser, t)[0] for t in tables]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            assert list(pool.map(lambda t: encode(ser, t)[0], tables)) == alone


def _confluent_bytes(schema: Any, data: Any, rows: list[Any]) -> list[Any]:
    """Our bytes for ``data``, checked equal to confluent's serializer on ``rows`` (the
    same records as Python values) with one registry, no row rejected."""
    registry = mock_registry()
    text = schema if isinstance(schema, str) else json.dumps(schema)
    ours, rejected = encode(AvroSerializer(registry, text), data)
    assert rejected == []
    ref = ConfluentAvro(registry, text)
    assert ours == [None if row is None else ref(row, ctx("t")) for row in rows]
    return ours


# -- every schema confluent's serializer takes -------------------------------------------

UNION_SCHEMA = {
    "type": "record",
    "name": "U",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "any", "type": ["null", "long", "string"], "default": None},
        {"name": "num", "type": ["long", "double"]},
        {
            "name": "who",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Person",
                    "fields": [{"name": "name", "type": "string"}],
                },
                {
                    "type": "record",
                    "name": "Shop",
                    "fields": [
                        {"name": "url", "type": "string"},
                        {"name": "rank", "type": "int"},
                    ],
                },
            ],
            "default": None,
        },
    ],
}

LIST_SCHEMA = {
    "type": "record",
    "name": "Node",
    "fields": [
        {"name": "value", "type": "long"},
        {"name": "next", "type": ["null", "Node"], "default": None},
    ],
}

UUID_SCHEMA = {
    "type": "record",
    "name": "Tagged",
    "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "n", "type": "int"},
    ],
}


def _node(values: list[int]) -> Any:
    out = None
    for v in reversed(values):
        out = {"value": v, "next": out}
    return out


@pytest.mark.parametrize(
    "schema, rows",
    [
        (
            UNION_SCHEMA,
            [
                {"id": 1, "any": 5, "num": 2, "who": {"name": "ann"}},
                {"id": 2, "any": "five", "num": 2.5, "who": {"url": "x.org", "rank": 3}},
                {"id": 3, "any": None, "num": -(2**40), "who": None},
                {"id": 4, "num": 1e300},
            ],
        ),
        (LIST_SCHEMA, [_node([1]), _node([1, 2, 3]), _node(list(range(100)))]),
        (UUID_SCHEMA, [{"id": uuid.UUID(int=i * 7919), "n": i} for i in range(3)]),
        (UUID_SCHEMA, [{"id": str(uuid.UUID(int=5)), "n": 0}, {"id": uuid.UUID(int=6), "n": 1}]),
    ],
    ids=["unions", "recursive", "uuid-objects", "uuid-mixed"],
)
def test_schemas_beyond_the_column_encoder_give_confluents_bytes(
    schema: Any, rows: list[Any]
) -> None:
    ours = _confluent_bytes(schema, rows, rows)
    # one record at a time, as confluent's serializer is called
    one = AvroSerializer(mock_registry(), json.dumps(schema))
    assert [one(row, ctx("t")) for row in rows] == ours


def test_union_columns_from_arrow_take_the_branch_confluent_takes() -> None:
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "any": pa.array(["a", None, "c"]),
            "num": pa.array([1.0, 2.5, -3.0]),
        }
    )
    _confluent_bytes(UNION_SCHEMA, table, table.to_pylist())


@pytest.mark.parametrize("schema", [AVRO_ORDER_SCHEMA, UNION_SCHEMA, LIST_SCHEMA])
def test_row_errors_name_row_and_field_for_dict_rows(schema: Any) -> None:
    registry = mock_registry()
    good = {
        "shop.Order": order_rows(1)[0],
        "shop.U": {"id": 1, "any": 5, "num": 2},
        "Node": _node([1, 2]),
    }[f"{schema.get('namespace', '')}.{schema['name']}".lstrip(".")]
    bad = dict(good)
    if schema is LIST_SCHEMA:
        bad["next"] = {"value": "two", "next": None}  # no branch of the union fits
        field = "next"
    elif schema is UNION_SCHEMA:
        bad["any"] = 2.5  # neither null, long nor string
        field = "any"
    else:
        bad["id"] = "not a number"
        field = "id"
    ours, rejected = encode(AvroSerializer(registry, json.dumps(schema)), [good, bad, good])
    assert [r for r, _ in rejected] == [1]
    assert f"field {field!r}" in rejected[0][1], rejected
    assert ours[0] is not None and ours[1] is None and ours[2] == ours[0]


def test_values_out_of_range_are_refused_on_the_record_path_too() -> None:
    # confluent's serializer writes 2**40 into an Avro int (no reader takes it back)
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "n", "type": "int"},
            {"name": "any", "type": ["null", "int", "string"]},
        ],
    }
    schema["fields"].append(
        {
            "name": "sub",
            "type": {
                "type": "record",
                "name": "S",
                "fields": [{"name": "xs", "type": {"type": "array", "items": "int"}}],
            },
        }
    )
    sub = {"xs": [1, 2]}
    rows = [
        {"n": 1, "any": 2**40, "sub": sub},
        {"n": 2**40, "any": None, "sub": sub},
        {"n": 3, "any": "x", "sub": sub},
        {"n": 4, "any": 1, "sub": {"xs": [1, -(2**31) - 1]}},
    ]
    ours, rejected = encode(AvroSerializer(mock_registry(), json.dumps(schema)), rows)
    assert [r for r, _ in rejected] == [0, 1, 3]
    assert "field 'any'" in rejected[0][1] and "field 'n'" in rejected[1][1], rejected
    assert "field 'sub.xs[]'" in rejected[2][1], rejected
    assert ours[2] is not None


def test_arrow_maps_reach_the_record_path_as_dicts() -> None:
    schema = {
        "type": "record",
        "name": "M",
        "fields": [
            {"name": "k", "type": ["long", "string"]},
            {"name": "m", "type": {"type": "map", "values": "long"}},
        ],
    }
    table = pa.table(
        {
            "k": pa.array([1, 2]),
            "m": pa.array([[("a", 1), ("b", 2)], []], pa.map_(pa.string(), pa.int64())),
        }
    )
    _confluent_bytes(schema, table, [{"k": 1, "m": {"a": 1, "b": 2}}, {"k": 2, "m": {}}])


@pytest.mark.parametrize(
    "schema, values",
    [
        ('"bytes"', [b"abc", b"", None, "text"]),
        ('{"type": "bytes"}', [b"\x00\x01"]),
        ('"string"', ["abc", ""]),
        ('"long"', [1, -(2**63)]),
        ('["null", "long", "string"]', [1, "a", None]),
    ],
)
def test_primitive_schemas_are_registered_and_written_as_confluent(
    schema: str, values: list[Any]
) -> None:
    # confluent registers '"string"' as '{"type":"string"}' and writes a bytes schema's
    # value as is, without Avro's length prefix
    ours = _confluent_bytes(schema, values, values)
    assert {v[1:5] for v in ours if v is not None} == {b"\x00\x00\x00\x01"}  # one schema


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(union_record_cases())
def test_bytes_equal_confluent_for_generated_multi_type_unions(case: Any) -> None:
    schema, rows = case
    _confluent_bytes(schema, rows, rows)


def test_a_fixed_of_another_size_is_refused_on_the_record_path() -> None:
    schema = {
        "type": "record",
        "name": "F",
        "fields": [
            {"name": "h", "type": {"type": "fixed", "name": "H", "size": 4}},
            {"name": "v", "type": ["long", "string"]},
        ],
    }
    rows = [{"h": b"abcd", "v": 1}, {"h": b"abcdef", "v": "x"}]
    ours, rejected = encode(AvroSerializer(mock_registry(), json.dumps(schema)), rows)
    assert [r for r, _ in rejected] == [1] and "field 'h'" in rejected[0][1], rejected
