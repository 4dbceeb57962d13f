"""asyncio's own habits over cykafka's futures, against asyncio's own floor.

``python bench/asyncio_futures.py [BOOTSTRAP] [--futures N] [--repeat R]``

Produces N messages (default 100,000), waits for every delivery, then times, round by
round (interleaved, so load from other processes hits all alike), on one event loop:

* ``gather_delivered``: ``await asyncio.gather(*futures)`` over the N delivered
  DeliveryFutures;
* ``gather_asyncio``: the same over N resolved ``asyncio.Future`` objects, asyncio's
  own floor for gather;
* ``all_delivered``: ``await cykafka.all_delivered(futures)``;
* ``one_by_one``: ``[await f for f in futures]``.

Prints one JSON line: the median seconds of each, and the two ratios as targets
(speed = 1 / time, so ratio = reference time / measured time).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import Any, Callable

import _common  # noqa: F401 - puts src/ on the path for a checkout without an install
from _common import bootstrap_or_local, fresh_topic

TARGETS = (
    # (label, measured, reference, minimum ratio of speeds)
    (
        "gather over delivered DeliveryFutures >= 0.8 x gather over resolved asyncio Futures",
        "gather_delivered",
        "gather_asyncio",
        0.8,
    ),
    ("all_delivered() >= 0.8 x awaiting one by one", "all_delivered", "one_by_one", 0.8),
)


async def _one_by_one(futs: Sequence[Any]) -> list[Any]:
    return [await f for f in futs]


async def _gather(futs: Sequence[Any]) -> list[Any]:
    return await asyncio.gather(*futs)


async def _all_delivered(futs: Sequence[Any]) -> list[Any]:
    import cykafka

    return await cykafka.all_delivered(futs)


def _timed(make: Callable[[], Awaitable[Any]], loop: asyncio.AbstractEventLoop) -> float:
    gc.collect()  # each variant starts from the same heap
    t0 = time.perf_counter()
    out = loop.run_until_complete(make())
    dt = time.perf_counter() - t0
    del out
    return dt


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--futures", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, help="ignored (bench/run.py passes it to every step)")
    a = ap.parse_args(argv)
    import cykafka

    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        topic = fresh_topic(bs, "bench-asyncio", 1)
        with cykafka.Producer({"bootstrap.servers": bs, "linger.ms": 5}) as p:
            futs = [p.produce(topic, b"x" * 100) for _ in range(a.futures)]
            p.flush(120)
        if not all(f.done() and f.exception() is None for f in futs):
            raise SystemExit("bench: not every message was delivered")
        loop = asyncio.new_event_loop()
        try:
            resolved = []
            for f in futs:
                af = loop.create_future()
                af.set_result(f.result())
                resolved.append(af)
            variants: dict[str, Callable[[], Awaitable[Any]]] = {
                "gather_delivered": lambda: _gather(futs),
                "gather_asyncio": lambda: _gather(resolved),
                "all_delivered": lambda: _all_delivered(futs),
                "one_by_one": lambda: _one_by_one(futs),
            }
            times: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(a.repeat):
                for name, make in variants.items():
                    times[name].append(_timed(make, loop))
        finally:
            loop.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    out: dict[str, Any] = {
        "futures": a.futures,
        "repeat": a.repeat,
        "median_seconds": {k: round(v, 4) for k, v in med.items()},
        "targets": [],
    }
    for label, measured, reference, need in TARGETS:
        # per-round ratios, median: the rounds share their load
        ratios = [r / m for m, r in zip(times[measured], times[reference])]
        value = statistics.median(ratios)
        out["targets"].append(
            {
                "target": label,
                "ratio": round(value, 3),
                "paired_median": round(value, 3),
                "need": need,
                "pass": value >= need,
            }
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
