"""What the accumulator inspector costs a producer: N messages through ``produce_batch``
without it (``inspect_interval_ms=0``, no view) and with the live view at 4 Hz (statistics
every 250 ms, a rich view rendered to a terminal-like console that writes nowhere), in one
run, alternating to spread drift.  The budget is 5 %.

    python bench/inspector_overhead.py [--bootstrap HOST:PORT] [-n N] [--size BYTES]

Without ``--bootstrap`` a throwaway local broker (cykafka.broker.LocalBroker) is used.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
import uuid
from typing import Any

__all__ = ["run"]

_CHUNK = 100_000  # messages per produce_batch call


def _one(
    bootstrap_servers: str, topic: str, n: int, size: int, inspect: bool
) -> tuple[float, float, float]:
    """(wall seconds, process CPU seconds -- all threads, librdkafka's included --, and
    seconds the live view spent taking snapshots and rendering them)."""
    from rich.console import Console

    from cykafka import Producer
    from cykafka.inspector import live_view

    values = [b"x" * size] * min(n, _CHUNK)
    config = {"bootstrap.servers": bootstrap_servers, "linger.ms": 5}
    with Producer(config, inspect_interval_ms=250 if inspect else 0) as p:
        p.produce(topic, b"warm-up").result(60)  # connections and metadata first
        console = Console(file=io.StringIO(), force_terminal=True, width=160)
        start, cpu = time.perf_counter(), time.process_time()
        busy = 0.0
        if inspect:
            # What Producer.inspect_live(0.25, console=console) does, keeping the view.
            with live_view(lambda: [p], 0.25, console=console) as view:
                _produce(p, topic, values, n)
            busy = view.busy_s
        else:
            _produce(p, topic, values, n)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        if inspect:
            snap = p.accumulator()
            assert snap.delivered == n + 1 and snap.failed == 0, snap.to_dict()
    return elapsed, cpu, busy


def _produce(p: Any, topic: str, values: list[bytes], n: int) -> None:
    left = n
    futures = []
    while left > 0:
        chunk = values if left >= len(values) else values[:left]
        futures.append(p.produce_batch(topic, chunk))
        left -= len(chunk)
    p.flush()
    for f in futures:
        f.result(0)


def run(
    bootstrap_servers: str,
    n: int = 1_000_000,
    size: int = 100,
    rounds: int = 7,
    topic: str | None = None,
) -> dict[str, Any]:
    """Time ``n`` messages of ``size`` bytes without and with the inspector at 4 Hz,
    ``rounds`` times each (alternating).  Single runs vary by +-15 % on this shared
    2-core machine (the broker runs on it too), more than the budget, so the verdict
    is the median over rounds of the ratio within a round (a plain run and the
    inspected run right after it).  A 6-partition topic is created unless ``topic``
    names an existing one."""
    if topic is None:
        from confluent_kafka.admin import AdminClient

        from cykafka.cluster.admin import ensure_topic

        topic = f"bench-inspector-{uuid.uuid4().hex[:8]}"
        ensure_topic(AdminClient({"bootstrap.servers": bootstrap_servers}), topic, 6)
    _one(bootstrap_servers, topic, n, size, False)  # discarded: the broker warms up
    plain = []
    inspected = []
    for _ in range(rounds):
        plain.append(_one(bootstrap_servers, topic, n, size, False))
        inspected.append(_one(bootstrap_servers, topic, n, size, True))
    base = statistics.median(r[0] for r in plain)
    insp = statistics.median(r[0] for r in inspected)
    base_cpu = statistics.median(r[1] for r in plain)
    insp_cpu = statistics.median(r[1] for r in inspected)
    busy = sum(r[2] for r in inspected) / sum(r[0] for r in inspected)
    paired = statistics.median(i[0] / p[0] for p, i in zip(plain, inspected))
    paired_cpu = statistics.median(i[1] / p[1] for p, i in zip(plain, inspected))
    return {
        "n": n,
        "size": size,
        "rounds": rounds,
        "plain_s": [r[0] for r in plain],
        "inspected_s": [r[0] for r in inspected],
        "plain_cpu_s": [r[1] for r in plain],
        "inspected_cpu_s": [r[1] for r in inspected],
        "plain_msgs_per_s": n / base,
        "inspected_msgs_per_s": n / insp,
        "ratio": insp / base,  # > 1: the inspector slowed it down
        "overhead_pct": (insp / base - 1) * 100,
        # The verdict: the median of same-round ratios (robust to drift between rounds).
        "paired_overhead_pct": (paired - 1) * 100,
        # CPU of this process is less exposed to the broker's noise than wall time.
        "cpu_overhead_pct": (insp_cpu / base_cpu - 1) * 100,
        "paired_cpu_overhead_pct": (paired_cpu - 1) * 100,
        # The view's own snapshot+render time (GIL held) as a share of the run: the
        # least noisy of the three, and a bound on what it can take from the producer.
        "view_busy_pct": busy * 100,
        "within_budget": paired <= 1.05,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", help="bootstrap.servers (default: a LocalBroker)")
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if args.bootstrap:
        result = run(args.bootstrap, args.n, args.size, args.rounds)
    else:
        from cykafka.broker import LocalBroker

        with LocalBroker() as b:
            result = run(b.bootstrap_servers, args.n, args.size, args.rounds)
    print(json.dumps(result, indent=2))
    print(
        f"inspector at 4 Hz: {result['paired_overhead_pct']:+.1f}% wall time "
        f"(median of same-round ratios; of medians: {result['overhead_pct']:+.1f}%), "
        f"{result['cpu_overhead_pct']:+.1f}% CPU, view busy "
        f"{result['view_busy_pct']:.2f}% of the time "
        f"({result['plain_msgs_per_s']:,.0f} -> {result['inspected_msgs_per_s']:,.0f} msg/s)"
    )


if __name__ == "__main__":
    main()
