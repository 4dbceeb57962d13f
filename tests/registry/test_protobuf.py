"""cykafka.schema_registry.ProtobufSerializer against confluent-kafka's, with a mock
registry: the same framing (magic byte, schema id, message indexes) and bytes for
generated messages; records that do not fit fail alone."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobuf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka.schema_registry import ProtobufSerializer
from support.proto_types import Address, Order
from support.registry import PROTOBUF_CONF, ctx, encode, mock_registry

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


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(order_kwargs, min_size=1, max_size=6))
def test_bytes_equal_confluent_for_generated_messages(kwargs: list[Any]) -> None:
    registry = mock_registry()
    msgs = [Order(**kw) for kw in kwargs]
    ours, rejected = encode(ProtobufSerializer(Order, registry, PROTOBUF_CONF), msgs)
    assert rejected == []
    ref = ConfluentProtobuf(Order, registry, PROTOBUF_CONF)
    assert ours == [ref(m, ctx("t")) for m in msgs]
    # the same records as dicts (as an Arrow table's rows would be)
    assert encode(ProtobufSerializer(Order, registry, PROTOBUF_CONF), kwargs)[0] == ours


def test_second_message_of_a_file_is_framed_with_its_index() -> None:
    registry = mock_registry()
    ours, _ = encode(ProtobufSerializer(Order, registry, PROTOBUF_CONF), [Order(id=1)])
    # magic, id, then the message indexes: one index (zigzag 2) of value 1 (zigzag 2)
    assert ours[0][5:7] == b"\x02\x02"
    first, _ = encode(
        ProtobufSerializer(Address, registry, PROTOBUF_CONF), [Address(city="x")], "u"
    )
    assert first[0][5:6] == b"\x00"  # [0] is written as a single 0


def test_record_that_does_not_fit_fails_alone() -> None:
    rows = [{"id": 1}, {"id": 2, "nope": 3}, {"id": "not a number"}, {"id": 4}]
    out, rejected = encode(ProtobufSerializer(Order, mock_registry(), PROTOBUF_CONF), rows)
    assert [r for r, _ in rejected] == [1, 2]
    assert "nope" in rejected[0][1]
    assert [v is None for v in out] == [False, True, True, False]


def test_two_members_of_one_oneof_is_an_error_naming_them() -> None:
    registry = mock_registry()
    rows = [
        {"id": 1, "card": "4111"},
        {"id": 2, "card": "4111", "iban": "DE00"},
        {"id": 3, "address": {"city": "x"}, "iban": "DE00"},
    ]
    out, rejected = encode(ProtobufSerializer(Order, registry, PROTOBUF_CONF), rows)
    assert [r for r, _ in rejected] == [1]
    why = rejected[0][1]
    assert "payment" in why and "card" in why and "iban" in why, why
    ref = ConfluentProtobuf(Order, registry, PROTOBUF_CONF)
    assert [out[0], out[2]] == [ref(Order(**rows[0]), ctx("t")), ref(Order(**rows[2]), ctx("t"))]


@pytest.mark.parametrize(
    "row, field",
    [
        ({"id": "not a number"}, "id"),
        ({"amount": "x"}, "amount"),
        ({"tags": [1, 2]}, "tags"),
        ({"address": {"zip": "x"}}, "address.zip"),
        ({"color": "PURPLE"}, "color"),
        ({"counts": {"a": "b"}}, "counts"),
        ({"big": -1}, "big"),
    ],
)
def test_type_errors_name_the_field(row: dict, field: str) -> None:
    out, rejected = encode(ProtobufSerializer(Order, mock_registry(), PROTOBUF_CONF), [row])
    assert [r for r, _ in rejected] == [0]
    assert f"field {field!r}" in rejected[0][1], rejected
