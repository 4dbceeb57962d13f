"""asyncio: aproduce and aproduce_batch wait for room on the loop while a ticker keeps running."""

import asyncio

import cykafka
from cykafka.broker import LocalBroker


async def main(bootstrap: str) -> None:
    # A small queue, so that it fills: aproduce then waits for room without blocking.
    config = {"bootstrap.servers": bootstrap, "queue.buffering.max.messages": 1000}
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    tick = asyncio.create_task(ticker())
    async with cykafka.Producer(config) as p:
        futures = [await p.aproduce("events", b"event %d" % i) for i in range(20_000)]
        # A whole column, five times the queue: it too waits for room on the loop.
        batch = await p.aproduce_batch("events", [b"row %d" % i for i in range(5_000)])
        assert await p.aflush() == 0  # waits on the loop too
        last = await futures[-1]
        print(f"delivered {len(futures)}, the last at offset {last.offset}")
        report = await batch
        print(f"batch: {report.delivered} of {report.total} delivered")
    tick.cancel()
    print("the ticker ran meanwhile:", ticks > 0)


with LocalBroker() as broker:
    broker.create_topic("events", partitions=1)
    asyncio.run(main(broker.bootstrap_servers))
