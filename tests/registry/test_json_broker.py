"""cykafka.schema_registry.JSONSerializer through the broker: an Arrow table round
trip."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from confluent_kafka.schema_registry.json_schema import JSONDeserializer

from cykafka import Producer
from cykafka.schema_registry import JSONSerializer
from support.registry import JSON_ORDER_SCHEMA, ctx, registry_client


def test_arrow_table_round_trip_through_the_broker(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    registry = registry_client(schema_registry)
    name = topic()
    table = pa.table(
        {"id": list(range(100)), "name": [None if i % 4 else f"n{i}" for i in range(100)]}
    )
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name, table, value_serializer=JSONSerializer(json.dumps(JSON_ORDER_SCHEMA), registry)
        ).result(30)
    assert report.delivered == 100
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=100).values() for r in part
    ]
    deser = JSONDeserializer(json.dumps(JSON_ORDER_SCHEMA), schema_registry_client=registry)
    assert [deser(r.value, ctx(name)) for r in got] == table.to_pylist()
