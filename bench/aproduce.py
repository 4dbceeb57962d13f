"""``await producer.aproduce()`` against ``producer.produce()``, on one event loop.

``python bench/aproduce.py [BOOTSTRAP] [--count N] [--repeat R]``

Each round (interleaved, so load from other processes hits both alike) produces N
messages of 100 bytes from a coroutine, with ``queue.buffering.max.messages=10000`` so
that the queue fills and both wait for room (produce() with the loop's thread, aproduce
on the loop, woken by the delivery reports), then flushes.

The freeze: on a broker of its own (the embedded one) SIGSTOPped for 2 s, 3,000
messages through a 1,000-message queue while a ticker task on the same loop sleeps
5 ms at a time; its worst lateness, for aproduce and for produce().

Prints one JSON line: the median seconds and messages/s of each with the fastest and
slowest round, the freeze's worst lateness (the median over the rounds), each round's
ratio of seconds and of the process's CPU-seconds, and the targets (speed = 1 / time:
ratio = produce()'s time / aproduce's, the median of the rounds' ratios, with their
spread: on a shared machine one round can be far off).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import statistics
import sys
import threading
import time
from typing import Any

import _common  # noqa: F401 - puts src/ on the path for a checkout without an install
from _common import bootstrap_or_local, fresh_topic

TARGET = ("aproduce >= 0.8 x produce() on one event loop", 0.8)
FREEZE_TARGET_MS = 50.0
FREEZE_S = 2.0
CONF = {"linger.ms": 5, "queue.buffering.max.messages": 10_000}


async def _produce(p: Any, topic: str, n: int, value: bytes) -> Any:
    send = p.produce
    for _ in range(n):
        fut = send(topic, value)
    return fut


async def _aproduce(p: Any, topic: str, n: int, value: bytes) -> Any:
    send = p.aproduce
    for _ in range(n):
        fut = await send(topic, value)
    return fut


VARIANTS = {"produce": _produce, "aproduce": _aproduce}


def _round(bs: str, topic: str, variant: str, n: int) -> tuple[float, float]:
    """Seconds and this process's CPU-seconds (every thread's) for the round."""
    import cykafka

    with cykafka.Producer({"bootstrap.servers": bs, **CONF}) as p:
        p.produce(topic, b"warm").result(60)
        gc.collect()
        loop = asyncio.new_event_loop()
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            loop.run_until_complete(VARIANTS[variant](p, topic, n, b"x" * 100))
            if p.flush(300):
                raise SystemExit(f"bench: {variant} left messages undelivered")
            return time.perf_counter() - t0, time.process_time() - c0
        finally:
            loop.close()


async def _ticker(worst: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start = loop.time()
        await asyncio.sleep(0.005)
        worst[0] = max(worst[0], loop.time() - start - 0.005)


def _freeze(variant: str) -> float:
    """The ticker's worst lateness (ms) through a 2 s SIGSTOP of a broker of its own."""
    import cykafka
    from cykafka.broker import LocalBroker

    with LocalBroker() as broker:
        broker.create_topic("freeze", partitions=1)
        pid = broker.pid
        assert pid is not None
        conf = {"bootstrap.servers": broker.bootstrap_servers, "queue.buffering.max.messages": 1000}

        async def run() -> float:
            worst = [0.0]
            stop = asyncio.Event()
            async with cykafka.Producer(conf) as p:
                await (await p.aproduce("freeze", b"warm"))
                tick = asyncio.create_task(_ticker(worst, stop))
                await asyncio.sleep(0)
                os.kill(pid, signal.SIGSTOP)
                timer = threading.Timer(FREEZE_S, os.kill, (pid, signal.SIGCONT))
                timer.start()
                try:
                    futs = [await VARIANTS[variant](p, "freeze", 1, b"%d" % i) for i in range(3000)]
                finally:
                    timer.join()
                    os.kill(pid, signal.SIGCONT)
                del futs
                assert await p.aflush(60) == 0
                stop.set()
                await tick
            return worst[0] * 1000

        return asyncio.run(run())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, help="ignored (bench/run.py passes it to every step)")
    a = ap.parse_args(argv)
    times: dict[str, list[float]] = {k: [] for k in VARIANTS}
    cpus: dict[str, list[float]] = {k: [] for k in VARIANTS}
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        topic = fresh_topic(bs, "bench-aproduce", 1)
        for _ in range(a.repeat):
            for variant in VARIANTS:
                seconds, cpu = _round(bs, topic, variant, a.count)
                times[variant].append(seconds)
                cpus[variant].append(cpu)
    freeze: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for _ in range(a.repeat):
        for variant in VARIANTS:
            freeze[variant].append(_freeze(variant))
    worst = {k: round(statistics.median(v), 1) for k, v in freeze.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    # Each round's ratio pairs two runs made one after the other, under the same load.
    ratios = sorted(p / ap_ for p, ap_ in zip(times["produce"], times["aproduce"]))
    ratio = statistics.median(ratios)
    # The CPU the process spent, which the broker's pace and the other builds' load move
    # less than the seconds: produce()'s CPU / aproduce's, per round.
    cpu_ratios = sorted(p / ap_ for p, ap_ in zip(cpus["produce"], cpus["aproduce"]))
    label, need = TARGET
    print(
        json.dumps(
            {
                "count": a.count,
                "repeat": a.repeat,
                "median_seconds": {k: round(v, 4) for k, v in med.items()},
                "msgs_per_s": {k: round(a.count / v) for k, v in med.items()},
                "seconds_spread": {
                    k: [round(min(v), 4), round(max(v), 4)] for k, v in times.items()
                },
                "round_ratios": [round(r, 3) for r in ratios],
                "cpu_ratio": round(statistics.median(cpu_ratios), 3),
                "cpu_round_ratios": [round(r, 3) for r in cpu_ratios],
                "freeze_worst_lateness_ms": worst,
                "targets": [
                    {
                        "target": f"a ticker on the loop is never more than "
                        f"{FREEZE_TARGET_MS:g} ms late through a {FREEZE_S:g} s broker "
                        f"freeze with a full queue (aproduce)",
                        "value_ms": worst["aproduce"],
                        "shown": f"{worst['aproduce']:.1f} ms",
                        "need": FREEZE_TARGET_MS,
                        "pass": worst["aproduce"] < FREEZE_TARGET_MS,
                    },
                    {
                        "target": label,
                        "ratio": round(ratio, 3),
                        "paired_median": round(ratio, 3),
                        "spread": [round(ratios[0], 3), round(ratios[-1], 3)],
                        "need": need,
                        "pass": ratio >= need,
                    },
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
