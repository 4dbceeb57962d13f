"""cykafka.schema_registry.ProtobufSerializer through the broker: an Arrow table round
trip read with confluent's deserializer."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobuf

from cykafka import Producer
from cykafka.schema_registry import ProtobufSerializer
from support.proto_types import Address, Order
from support.registry import PROTOBUF_CONF, ctx, registry_client


def test_arrow_table_round_trip_through_the_broker(
    broker: Any, topic: Any, read_back: Any, schema_registry: Any
) -> None:
    registry = registry_client(schema_registry)
    name = topic()
    table = pa.table(
        {
            "id": pa.array(range(200), pa.int64()),
            "name": [f"n{i}" for i in range(200)],
            "tags": [[f"t{j}" for j in range(i % 3)] for i in range(200)],
            "address": [{"city": "Lyon", "zip": i} for i in range(200)],
        }
    )
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name, table, value_serializer=ProtobufSerializer(Order, registry, PROTOBUF_CONF)
        ).result(30)
    assert report.delivered == 200
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=200).values() for r in part
    ]
    deser = ProtobufDeserializer(Order, PROTOBUF_CONF)
    decoded = [deser(r.value, ctx(name)) for r in got]
    assert decoded[5] == Order(
        id=5, name="n5", tags=["t0", "t1"], address=Address(city="Lyon", zip=5)
    )
    ref = ConfluentProtobuf(Order, registry, PROTOBUF_CONF)
    assert [r.value for r in got] == [ref(m, ctx(name)) for m in decoded]
