"""The accumulator inspector after 300,000 keyed messages, and a few Java-named metrics."""

from rich.console import Console

import cykafka
from cykafka.broker import LocalBroker

with LocalBroker() as broker:
    broker.create_topic("orders", partitions=3)
    config = {"bootstrap.servers": broker.bootstrap_servers, "statistics.interval.ms": 100}
    with cykafka.Producer(config, preset="ordered") as p:
        n = 300_000
        p.produce_batch(
            "orders", [b"x" * 100] * n, keys=[f"user-{i % 50}".encode() for i in range(n)]
        ).result()
        assert p.flush(10) == 0
        Console(width=120).print(p.accumulator().table())
        m = p.metrics()
        for name in ("record-send-total", "record-size-avg", "record-error-total"):
            print(f"{name} = {m[name]:g}")
