"""cykafka.schema_registry.JSONSerializer against confluent-kafka's, with a mock
registry: the same bytes for generated records, validation failures per record."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka.schema_registry import JSONSerializer
from support.registry import JSON_ORDER_SCHEMA, ctx, encode, mock_registry

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
    ours, rejected = encode(JSONSerializer(json.dumps(JSON_ORDER_SCHEMA), registry), rows)
    assert rejected == []
    ref = ConfluentJSON(json.dumps(JSON_ORDER_SCHEMA), registry)
    assert ours == [ref(r, ctx("t")) for r in rows]


def test_invalid_record_fails_alone_naming_the_field() -> None:
    rows = [{"id": 1}, {"id": 2, "amount": -1}, {"name": "no id"}, {"id": 4}]
    out, rejected = encode(JSONSerializer(json.dumps(JSON_ORDER_SCHEMA), mock_registry()), rows)
    assert [r for r, _ in rejected] == [1, 2]
    assert "amount" in rejected[0][1] and "minimum" in rejected[0][1]
    assert "'id' is a required property" in rejected[1][1]
    assert [v is None for v in out] == [False, True, True, False]
