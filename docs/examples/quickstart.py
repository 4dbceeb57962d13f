"""Produce with futures, a whole column, and asyncio, against the embedded broker."""

import asyncio

import cykafka
from cykafka.broker import LocalBroker  # the embedded Tansu broker

with LocalBroker() as broker:
    broker.create_topic("orders", partitions=3)
    servers = broker.bootstrap_servers

    with cykafka.Producer({"bootstrap.servers": servers}, preset="ordered") as p:
        fut = p.produce("orders", value=b'{"id": 1}', key=b"user-7", headers=[("src", b"etl")])
        print(fut.result(timeout=10))

        report = p.produce_batch(
            "orders",
            [f"row {i}" for i in range(100_000)],
            keys=[f"user-{i % 50}" for i in range(100_000)],
        ).result()
        print(report)

        async def main() -> None:
            md = await p.produce("orders", b"from asyncio", key=b"user-7")
            print(md)

        asyncio.run(main())

        bad = p.produce("orders", b"x" * 2_000_000)  # over message.max.bytes
        print(repr(bad.exception()))
