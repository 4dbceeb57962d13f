"""aproduce_batch hands a whole column over without blocking its event loop.  Against
Apache Kafka with its node frozen (SIGSTOP) while librdkafka's queue is full: a ticker
task on the same loop keeps ticking while the batch waits for room; cancelled, or
stopped by max.block.ms, the part not yet handed over is never queued and is reported
failed, the part handed over arrives once, in order (read back with a read_committed
consumer), and the report's counts say exactly that.  produce_batch() shows the loop
blocked."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest
from test_aproduce import _BLOCKS_LOOP, FREEZE_S, MAX_GAP_S, QUEUE, _conf, _frozen, _Ticker, _warm

import cykafka
from cykafka.launchers.kafka import KafkaCluster
from support.consume import read_back

N = 3 * QUEUE


def _payloads(tag: str) -> list[bytes]:
    return [b"%s-%d" % (tag.encode(), i) for i in range(N)]


def _values(kafka: KafkaCluster, name: str, expected: int | None = None) -> list[bytes]:
    got = read_back(kafka.bootstrap_servers, name, expected=expected)
    return [r.value for r in got[0] if r.value is not None]


async def _waiting(p: cykafka.Producer, task: asyncio.Task[Any]) -> None:
    """Until ``task`` waits for room (the frozen node answers nothing, so it stays)."""
    while not task.done() and not p._counters()["waiting_tasks"]:
        await asyncio.sleep(0.001)
    assert not task.done(), "the batch never waited for room: the queue never filled"


Batcher = Callable[[cykafka.Producer, str, list[bytes], list[bytes]], Any]


async def _by_aproduce_batch(
    p: cykafka.Producer, name: str, values: list[bytes], keys: list[bytes]
) -> cykafka.BatchFuture:
    return await p.aproduce_batch(name, values, keys)


async def _by_produce_batch(
    p: cykafka.Producer, name: str, values: list[bytes], keys: list[bytes]
) -> cykafka.BatchFuture:
    return p.produce_batch(name, values, keys)


@pytest.mark.parametrize(
    "send",
    [_by_aproduce_batch, pytest.param(_by_produce_batch, marks=_BLOCKS_LOOP)],
    ids=["aproduce_batch", "produce_batch"],
)
def test_ticker_keeps_ticking_while_a_frozen_broker_holds_the_queue_full(
    kafka: KafkaCluster, send: Batcher
) -> None:
    name = kafka.create_topic(f"abatch-freeze-{send.__name__}", partitions=1)
    values = _payloads("v")
    keys = [b"k%d" % (i % 7) for i in range(N)]  # keyed: the grouped hand-over

    async def main() -> tuple[_Ticker, Any]:
        async with cykafka.Producer(_conf(kafka)) as p:
            await _warm(p, name)
            async with _Ticker(p) as ticker:
                with _frozen(kafka, FREEZE_S):
                    bf = await send(p, name, values, keys)
                report = await bf
            return ticker, report

    ticker, report = asyncio.run(main())
    print(f"worst lateness {ticker.worst * 1000:.1f} ms over {ticker.ticks} ticks")
    assert ticker.peak_pending >= QUEUE, "the queue never filled: the freeze proved nothing"
    assert ticker.worst < MAX_GAP_S, f"the loop stalled {ticker.worst * 1000:.0f} ms"
    assert (report.total, report.delivered, report.failed) == (N, N, 0)
    assert report.last_offsets[0] - report.first_offsets[0] == N - 1
    assert _values(kafka, name, N + 1) == [b"warm"] + values


def test_cancelled_while_waiting_queues_none_of_the_rest(kafka: KafkaCluster) -> None:
    name = kafka.create_topic("abatch-cancel", partitions=1)
    values = _payloads("c")
    outcomes: dict[int, object] = {}

    def on_delivery(index: int, err: object, md: object) -> None:
        assert index not in outcomes, f"message {index} reported twice"
        outcomes[index] = err

    async def main() -> tuple[Any, BaseException]:
        async with cykafka.Producer(_conf(kafka)) as p:
            await _warm(p, name)
            stopped: list[BaseException] = []

            async def send() -> None:
                try:
                    await p.aproduce_batch(name, values, on_delivery=on_delivery)
                except asyncio.CancelledError as exc:
                    stopped.append(exc)
                    raise

            with _frozen(kafka, None):
                task = asyncio.create_task(send())
                await _waiting(p, task)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            # Room appears once the node answers: the cancelled part must not use it.
            await (await p.aproduce(name, b"after"))
            (exc,) = stopped
            report = await exc.batch  # type: ignore[attr-defined]
            return report, exc

    report, exc = asyncio.run(main())
    assert report.total == N and report.delivered + report.failed == N
    assert QUEUE <= report.delivered < N, report
    assert len(outcomes) == N  # every message had its outcome, once
    # What was not handed over failed as such, in one block after what was.
    assert [i for i, _ in report.errors] == list(range(report.delivered, N))
    assert all("not queued" in e.message and "cancelled" in e.message for _, e in report.errors)
    want = [b"warm"] + values[: report.delivered] + [b"after"]
    assert _values(kafka, name, len(want)) == want


@pytest.mark.parametrize("with_headers", [False, True], ids=["plain", "headers"])
def test_max_block_ms_bounds_the_batch_without_blocking_the_loop(
    kafka: KafkaCluster, with_headers: bool
) -> None:
    name = kafka.create_topic(f"abatch-max-block-{with_headers}", partitions=1)
    values = _payloads("m")
    # Headers take the one-call-per-message hand-over; those never queued are freed.
    headers = [[("n", b"%d" % i)] for i in range(N)] if with_headers else None

    async def main() -> tuple[_Ticker, Any, str]:
        async with cykafka.Producer(_conf(kafka, **{"max.block.ms": 300})) as p:
            await _warm(p, name)
            async with _Ticker(p) as ticker:
                with _frozen(kafka, None):
                    with pytest.raises(cykafka.QueueFullError) as raised:
                        await p.aproduce_batch(name, values, headers=headers)
            report = await raised.value.batch  # type: ignore[attr-defined]
            return ticker, report, str(raised.value)

    ticker, report, message = asyncio.run(main())
    assert "max.block.ms (300 ms)" in message
    assert ticker.worst < MAX_GAP_S, f"the loop stalled {ticker.worst * 1000:.0f} ms"
    assert QUEUE <= report.delivered < N and report.delivered + report.failed == N
    assert all(e.name == "_QUEUE_FULL" for _, e in report.errors)
    got = read_back(kafka.bootstrap_servers, name, expected=report.delivered + 1)[0]
    assert [r.value for r in got] == [b"warm"] + values[: report.delivered]
    if with_headers:
        assert [r.headers for r in got[1:]] == [[("n", b"%d" % i)] for i in range(len(got) - 1)]


def test_aclose_fails_what_a_waiting_batch_had_queued(kafka: KafkaCluster) -> None:
    name = kafka.create_topic("abatch-aclose", partitions=1)
    values = _payloads("a")

    async def main() -> tuple[Any, BaseException | None]:
        p = cykafka.Producer(_conf(kafka))
        await _warm(p, name)
        with _frozen(kafka, None):
            task = asyncio.create_task(p.aproduce_batch(name, values))
            await _waiting(p, task)
            await p.aclose(timeout=0.2)
            waited = task.exception()
        report = await waited.batch  # type: ignore[union-attr]
        return report, waited

    report, waited = asyncio.run(main())
    assert isinstance(waited, cykafka.ProducerClosedError), waited
    assert report.total == N and report.delivered + report.failed == N and report.failed
    names = {e.name for _, e in report.errors}
    assert names <= {"_PURGE_QUEUE", "_PURGE_INFLIGHT", "_STATE"}, names
    # A purged message in flight may still be written once the node wakes: what
    # arrives is a prefix in order, at least what was reported delivered, never twice.
    got = _values(kafka, name)
    assert got == [b"warm"] + values[: len(got) - 1]
    assert report.delivered <= len(got) - 1


def test_a_long_batch_with_room_lets_the_loop_run(kafka: KafkaCluster) -> None:
    """No wait for room at all: the hand-over of 300,000 messages still comes in steps."""
    name = kafka.create_topic("abatch-room", partitions=1)
    n = 300_000
    values = [b"%d" % i for i in range(n)]
    conf = {"bootstrap.servers": kafka.bootstrap_servers, "queue.buffering.max.messages": n * 2}

    async def main() -> tuple[_Ticker, Any]:
        async with cykafka.Producer(conf) as p:
            await _warm(p, name)
            async with _Ticker(p) as ticker:
                bf = await p.aproduce_batch(name, values)
                ticks_during = ticker.ticks
            report = await bf
            return ticker, (report, ticks_during)

    ticker, (report, ticks) = asyncio.run(main())
    assert report.ok and report.delivered == n
    assert ticks > 0, "the ticker never ran while the batch was handed over"
