"""cykafka.partitioning against librdkafka's own choice on the real broker."""

from __future__ import annotations

import pytest

import cykafka
from cykafka.partitioning import PARTITIONERS, partition_for

KEYS = [b"", b"a", b"21", b"user-7", "ünï".encode(), bytes(range(256))] + [
    b"key-%d" % i for i in range(60)
]


@pytest.mark.parametrize("partitioner", [p for p in PARTITIONERS if p != "random"])
def test_partition_for_is_librdkafkas_choice(broker, topic, partitioner) -> None:
    name = topic(partitions=7)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "partitioner": partitioner}
    with cykafka.Producer(conf) as p:
        futs = {k: p.produce(name, b"probe", key=k) for k in KEYS}
        null = [p.produce(name, b"probe", key=None) for _ in range(20)]
        got = {k: f.result(30).partition for k, f in futs.items()}
        null_parts = {f.result(30).partition for f in null}
    want = {k: partition_for(partitioner, k, 7) for k in KEYS}
    assert {k: v for k, v in got.items() if want[k] is not None} == {
        k: v for k, v in want.items() if v is not None
    }
    if partition_for(partitioner, None, 7) is not None:
        assert null_parts == {partition_for(partitioner, None, 7)}
