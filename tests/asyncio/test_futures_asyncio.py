"""DeliveryFuture as asyncio's own tools expect a future: gather, wait, as_completed and
wait_for use it directly (no Task per message), its callbacks added from a loop run on
that loop, and cancellation behaves as documented (a produced message cannot be taken
back).  Against the real broker."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any

import pytest

import cykafka

# A message produced with this linger stays pending long enough to act on it while it is
# (checked with done() before acting, never assumed).
_LONG_LINGER = {"linger.ms": 3000}


def _conf(broker: Any, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_servers, **extra}


def _run_counting_tasks(main: Coroutine[Any, Any, Any]) -> tuple[Any, int]:
    """Run ``main``; return its result and how many Tasks were made besides its own."""
    made = 0

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        nonlocal made
        made += 1
        return asyncio.Task(coro, loop=loop, **kw)

    async def wrapper() -> Any:
        loop = asyncio.get_running_loop()
        loop.set_task_factory(factory)
        try:
            return await main
        finally:
            loop.set_task_factory(None)  # asyncio.run's own shutdown makes tasks

    return asyncio.run(wrapper()), made


def test_isfuture_and_get_loop(broker, topic) -> None:
    name = topic()
    with cykafka.Producer(_conf(broker)) as p:
        fut = p.produce(name, b"v")
        bf = p.produce_batch(name, [b"a", b"b"])
        assert asyncio.isfuture(fut) and asyncio.isfuture(bf)

        async def main() -> None:
            assert fut.get_loop() is asyncio.get_running_loop()

        asyncio.run(main())
        with pytest.raises(RuntimeError, match="running asyncio loop"):
            fut.get_loop()
        p.flush(30)


def test_gather_over_futures_makes_no_task(broker, topic) -> None:
    name = topic()
    n = 2000

    async def main() -> list[Any]:
        with cykafka.Producer(_conf(broker)) as p:
            futs = [p.produce(name, f"{i}".encode()) for i in range(n)]
            bf = p.produce_batch(name, [b"x"] * 10)
            return await asyncio.gather(*futs, bf)

    out, tasks = _run_counting_tasks(main())
    assert tasks == 0
    mds, report = out[:-1], out[-1]
    assert [md.offset for md in mds] == sorted(md.offset for md in mds)
    assert len({md.offset for md in mds}) == n and report.delivered == 10


def test_gather_of_delivered_futures_and_a_failure(broker, topic) -> None:
    name = topic()
    conf = _conf(broker, **{"message.max.bytes": 10_000})

    async def main() -> tuple[list[Any], BaseException]:
        with cykafka.Producer(conf) as p:
            futs = [p.produce(name, b"ok") for _ in range(10)]
            big = p.produce(name, b"x" * 20_000)
            p.flush(30)
            got = await asyncio.gather(*futs, big, return_exceptions=True)
            with pytest.raises(cykafka.KafkaDeliveryError) as raised:
                await asyncio.gather(*futs, big)
            return got, raised.value

    (got, err), tasks = _run_counting_tasks(main())
    assert tasks == 0
    assert all(isinstance(md, cykafka.RecordMetadata) for md in got[:10])
    assert isinstance(got[10], cykafka.KafkaDeliveryError) and got[10].name == "MSG_SIZE_TOO_LARGE"
    assert err.name == "MSG_SIZE_TOO_LARGE"  # type: ignore[attr-defined]


def test_wait_and_as_completed_make_no_task(broker, topic) -> None:
    name = topic()

    async def main() -> tuple[int, int, int]:
        with cykafka.Producer(_conf(broker)) as p:
            futs = [p.produce(name, b"w") for _ in range(500)]
            done, pending = await asyncio.wait(futs)
            more = [p.produce(name, b"c") for _ in range(500)]
            seen = [await f for f in asyncio.as_completed(more)]
            first, rest = await asyncio.wait(
                [p.produce(name, b"f") for _ in range(50)], return_when=asyncio.FIRST_COMPLETED
            )
            if rest:
                await asyncio.wait(rest)
            return len(done) + len(pending) * 1000, len(seen), len(first)

    (done, seen, first), tasks = _run_counting_tasks(main())
    # as_completed makes one coroutine per result it hands out, but no Task.
    assert tasks == 0 and done == 500 and seen == 500 and first >= 1


def test_wait_with_timeout_leaves_pending_futures_pending(broker, topic) -> None:
    name = topic()

    async def main() -> None:
        with cykafka.Producer(_conf(broker, **_LONG_LINGER)) as p:
            fut = p.produce(name, b"slow")
            assert not fut.done()
            done, pending = await asyncio.wait([fut], timeout=0.01)
            if fut.done():  # the machine stalled for the whole linger: nothing to test
                return
            assert pending == {fut} and not done
            # wait() removed its callback: nothing of it is left to run
            assert fut.remove_done_callback(lambda f: None) == 0
            assert (await asyncio.wait_for(fut, 60)).offset >= 0

    _, tasks = _run_counting_tasks(main())
    assert tasks == 0


def test_callbacks_added_on_a_loop_run_on_it(broker, topic) -> None:
    name = topic()
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def main() -> tuple[set[int], list[str], int, list[object]]:
        loop_thread = threading.get_ident()
        threads: set[int] = set()
        values: list[str] = []
        removed: list[object] = []
        done = asyncio.Event()
        with cykafka.Producer(_conf(broker)) as p:
            futs = [p.produce(name, b"cb") for _ in range(200)]
            left = len(futs)

            def cb(f: object) -> None:
                nonlocal left
                threads.add(threading.get_ident())
                values.append(var.get())
                left -= 1
                if not left:
                    done.set()  # an asyncio.Event: only safe on its loop's thread

            var.set("mine")
            for f in futs:
                f.add_done_callback(cb)
                f.add_done_callback(removed.append)
            ctx = contextvars.copy_context()
            ctx.run(var.set, "given")
            futs[0].add_done_callback(lambda f: values.append(var.get()), context=ctx)
            n_removed = sum(f.remove_done_callback(removed.append) for f in futs)
            await done.wait()
            await asyncio.wait(futs)
            late: list[object] = []
            futs[0].add_done_callback(late.append)  # resolved: scheduled on the loop
            assert late == []
            await asyncio.sleep(0)
            assert late == [futs[0]]
        return threads - {loop_thread}, values, n_removed, removed

    others, values, n_removed, removed = asyncio.run(main())
    assert others == set()
    assert sorted(set(values)) == ["given", "mine"] and len(values) == 201
    # Removed before they ran, unless the future resolved first (its callback then ran).
    assert n_removed + len(removed) == 200


def test_cancelling_an_await_stops_the_wait_not_the_message(broker, topic) -> None:
    name = topic()

    async def main() -> None:
        with cykafka.Producer(_conf(broker, **_LONG_LINGER)) as p:
            fut = p.produce(name, b"kept")
            assert fut.cancel() is False and not fut.cancelled()
            task = asyncio.ensure_future(_await(fut))
            await asyncio.sleep(0)
            if fut.done():
                return  # delivered before the cancel: nothing to test
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not fut.cancelled()
            # The message is still delivered.
            assert (await cykafka.all_delivered([fut]))[0].offset >= 0

    asyncio.run(main())


async def _await(fut: cykafka.DeliveryFuture) -> cykafka.RecordMetadata:
    return await fut


def test_wait_for_waits_for_the_outcome_all_delivered_times_out(broker, topic) -> None:
    """wait_for over a DeliveryFuture: it cannot be cancelled, so asyncio (3.11) waits
    for its outcome past the timeout and returns it; all_delivered() is cancellable:
    wait_for over it times out, and the message is delivered anyway."""
    name = topic()

    async def main() -> None:
        with cykafka.Producer(_conf(broker, **_LONG_LINGER)) as p:
            fut = p.produce(name, b"a")
            assert not fut.done()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(cykafka.all_delivered([fut]), 0.01)
            if fut.done():
                return  # the machine stalled for the whole linger: nothing more to test
            md = await asyncio.wait_for(fut, 0.01)
            assert md.offset >= 0 and fut.done() and not fut.cancelled()
            assert (await asyncio.wait_for(p.produce(name, b"b"), 60)).offset == md.offset + 1

    _, tasks = _run_counting_tasks(main())
    assert tasks == 1  # wait_for wraps all_delivered(), an awaitable, in one


def test_cancelling_gather_takes_effect_once_outcomes_are_known(broker, topic) -> None:
    name = topic()

    async def main() -> None:
        with cykafka.Producer(_conf(broker, **_LONG_LINGER)) as p:
            futs = [p.produce(name, b"g") for _ in range(20)]
            outer = asyncio.gather(*futs)
            assert outer.cancel() is False  # none of its futures can be cancelled
            waiter = asyncio.ensure_future(_await_any(outer))
            await asyncio.sleep(0)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            assert all(f.done() and not f.cancelled() for f in futs)
            assert [md.offset for md in outer.result()] == list(range(20))

    asyncio.run(main())


async def _await_any(aw: Any) -> Any:
    return await aw


def test_all_delivered(broker, topic) -> None:
    name = topic()
    conf = _conf(broker, **{"message.max.bytes": 10_000})

    async def main() -> None:
        with cykafka.Producer(conf) as p:
            futs = [p.produce(name, f"{i}".encode()) for i in range(3000)]
            bf = p.produce_batch(name, [b"x"] * 5)
            got = await cykafka.all_delivered([*futs, bf])
            assert got[:-1] == [f.result() for f in futs] and got[-1].delivered == 5
            assert await cykafka.all_delivered([]) == []
            again = [p.produce(name, b"ok"), p.produce(name, b"x" * 20_000), p.produce(name, b"ok")]
            with pytest.raises(cykafka.KafkaDeliveryError) as raised:
                await cykafka.all_delivered(again)
            assert raised.value.name == "MSG_SIZE_TOO_LARGE"
            # every outcome was known before it raised
            assert all(f.done() for f in again)
            mixed = await cykafka.all_delivered(again, return_exceptions=True)
            assert isinstance(mixed[1], cykafka.KafkaDeliveryError)
            assert mixed[0].offset + 1 == mixed[2].offset
            with pytest.raises(TypeError, match="item 1 is a int"):
                cykafka.all_delivered([futs[0], 3])  # type: ignore[list-item]

    asyncio.run(main())
