"""cykafka.schema_registry.JSONSerializer against confluent-kafka's: the same bytes for
generated records, validation failures per record, a broker round trip."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka import Producer
from cykafka.schema_registry import JSONSerializer
from registry_helpers import ctx, encode, mock_registry

SCHEMA = {
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
records = st.fixed_dictionaries(
    {"id": st.integers(-(2**63), 2**63 - 1)},
    optional={
        "name": st.none() | st.text(max_size=10),
        "amount": st.floats(min_value=0, allow_nan=False, allow_infinity=False),
        "tags": st.lists(st.text(max_size=5), max_size=3),
        "address": st.fixed_dictionaries(
            {"city": st.text(max_size=5), "zip": st.integers(0, 99999)}
        ),
    },
)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(records, min_size=1, max_size=6))
def test_bytes_equal_confluent_for_generated_records(rows: list[Any]) -> None:
    registry = mock_registry()
    ours, rejected = encode(JSONSerializer(json.dumps(SCHEMA), registry), rows)
    assert rejected == []
    ref = ConfluentJSON(json.dumps(SCHEMA), registry)
    assert ours == [ref(r, ctx("t")) for r in rows]


def test_invalid_record_fails_alone_naming_the_field() -> None:
    rows = [{"id": 1}, {"id": 2, "amount": -1}, {"name": "no id"}, {"id": 4}]
    out, rejected = encode(JSONSerializer(json.dumps(SCHEMA), mock_registry()), rows)
    assert [r for r, _ in rejected] == [1, 2]
    assert "amount" in rejected[0][1] and "minimum" in rejected[0][1]
    assert "'id' is a required property" in rejected[1][1]
    assert [v is None for v in out] == [False, True, True, False]


def test_arrow_table_round_trip_through_the_broker(broker: Any, topic: Any, read_back: Any) -> None:
    registry = mock_registry()
    name = topic()
    table = pa.table(
        {"id": list(range(100)), "name": [None if i % 4 else f"n{i}" for i in range(100)]}
    )
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name, table, value_serializer=JSONSerializer(json.dumps(SCHEMA), registry)
        ).result(30)
    assert report.delivered == 100
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=100).values() for r in part
    ]
    deser = JSONDeserializer(json.dumps(SCHEMA), schema_registry_client=registry)
    assert [deser(r.value, ctx(name)) for r in got] == table.to_pylist()
