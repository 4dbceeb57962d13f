"""cykafka.schema_registry.ProtobufSerializer against confluent-kafka's: the same framing
(magic byte, schema id, message indexes) and bytes for generated messages; records that
do not fit fail alone; a round trip through the broker and confluent's deserializer."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobuf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka import Producer
from cykafka.schema_registry import ProtobufSerializer
from proto_types import Address, Order
from registry_helpers import ctx, encode, mock_registry

I32 = st.integers(-(2**31), 2**31 - 1)
# keyword arguments of an Order (also what a record given as a dict looks like)
order_kwargs = st.fixed_dictionaries(
    {},
    optional={
        "id": st.integers(-(2**63), 2**63 - 1),
        "name": st.text(max_size=10),
        "amount": st.floats(allow_nan=False),
        "ratio": st.floats(width=32, allow_nan=False),
        "flag": st.booleans(),
        "blob": st.binary(max_size=10),
        "tags": st.lists(st.text(max_size=5), max_size=3),
        "address": st.fixed_dictionaries({"city": st.text(max_size=5), "zip": I32}),
        "color": st.integers(0, 2),
        "counts": st.dictionaries(
            st.text(max_size=4), st.integers(-(2**63), 2**63 - 1), max_size=3
        ),
        "delta": I32,
        "big": st.integers(0, 2**64 - 1),
        "nums": st.lists(I32, max_size=4),
    },
)
CONF = {"use.deprecated.format": False}


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(order_kwargs, min_size=1, max_size=6))
def test_bytes_equal_confluent_for_generated_messages(kwargs: list[Any]) -> None:
    registry = mock_registry()
    msgs = [Order(**kw) for kw in kwargs]
    ours, rejected = encode(ProtobufSerializer(Order, registry, CONF), msgs)
    assert rejected == []
    ref = ConfluentProtobuf(Order, registry, CONF)
    assert ours == [ref(m, ctx("t")) for m in msgs]
    # the same records as dicts (as an Arrow table's rows would be)
    assert encode(ProtobufSerializer(Order, registry, CONF), kwargs)[0] == ours


def test_second_message_of_a_file_is_framed_with_its_index() -> None:
    registry = mock_registry()
    ours, _ = encode(ProtobufSerializer(Order, registry, CONF), [Order(id=1)])
    # magic, id, then the message indexes: one index (zigzag 2) of value 1 (zigzag 2)
    assert ours[0][5:7] == b"\x02\x02"
    first, _ = encode(ProtobufSerializer(Address, registry, CONF), [Address(city="x")], "u")
    assert first[0][5:6] == b"\x00"  # [0] is written as a single 0


def test_record_that_does_not_fit_fails_alone() -> None:
    rows = [{"id": 1}, {"id": 2, "nope": 3}, {"id": "not a number"}, {"id": 4}]
    out, rejected = encode(ProtobufSerializer(Order, mock_registry(), CONF), rows)
    assert [r for r, _ in rejected] == [1, 2]
    assert "nope" in rejected[0][1]
    assert [v is None for v in out] == [False, True, True, False]


def test_arrow_table_round_trip_through_the_broker(broker: Any, topic: Any, read_back: Any) -> None:
    registry = mock_registry()
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
            name, table, value_serializer=ProtobufSerializer(Order, registry, CONF)
        ).result(30)
    assert report.delivered == 200
    got = [
        r for part in read_back(broker.bootstrap_servers, name, expected=200).values() for r in part
    ]
    deser = ProtobufDeserializer(Order, CONF)
    decoded = [deser(r.value, ctx(name)) for r in got]
    assert decoded[5] == Order(
        id=5, name="n5", tags=["t0", "t1"], address=Address(city="Lyon", zip=5)
    )
    ref = ConfluentProtobuf(Order, registry, CONF)
    assert [r.value for r in got] == [ref(m, ctx(name)) for m in decoded]
