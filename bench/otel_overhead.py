"""What OpenTelemetry costs produce(): nothing for a producer not instrumented, and how
much for one that is (cykafka.inspector.exporters.otel).

``python bench/otel_overhead.py [BOOTSTRAP] [--count N] [--repeat R]``

Each round (interleaved; every way in a fresh process, so all start alike) produces N
messages of 100 bytes with produce() and flushes, four ways: ``plain`` (OpenTelemetry
never imported), ``beside`` (OpenTelemetry's SDK set up and another producer
instrumented, this one not), ``instrumented`` (this producer instrumented: its metrics observed by an SDK
reader, produce() checking for an active span) and ``instrumented_latency`` (besides,
every delivery's latency recorded in the SDK's histogram).
Prints one JSON line: medians, and the target that a producer not instrumented pays
nothing (ratio = plain's time / beside's, the median of the rounds' ratios).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import _common  # noqa: F401 - puts src/ on the path for a checkout without an install
from _common import bootstrap_or_local, fresh_topic

TARGET = ("produce() not instrumented, OpenTelemetry set up beside >= 0.95 x without", 0.95)
VALUE = b"x" * 100


def _timed(bs: str, topic: str, n: int, instrument: object = None) -> float:
    import cykafka

    with cykafka.Producer({"bootstrap.servers": bs, "linger.ms": 5}) as p:
        handle = instrument(p) if callable(instrument) else None
        p.produce(topic, b"warm").result(60)
        gc.collect()
        send = p.produce
        t0 = time.perf_counter()
        for _ in range(n):
            send(topic, VALUE)
        if p.flush(300):
            raise SystemExit("bench: messages left undelivered")
        dt = time.perf_counter() - t0
        if handle is not None:
            handle.close()
        return dt


def _child(mode: str, bs: str, topic: str, n: int) -> None:
    """One round of ``mode`` (run in a fresh process, as every mode is): print its time."""
    if mode == "plain":
        print(_timed(bs, topic, n))
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        return
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import cykafka
    from cykafka.inspector.exporters import otel

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    if mode == "beside":
        with cykafka.Producer({"bootstrap.servers": bs}) as other:
            otel.instrument(other, provider)
            print(_timed(bs, topic, n))
    else:
        latency = mode == "instrumented_latency"
        print(
            _timed(bs, topic, n, lambda p: otel.instrument(p, provider, delivery_latency=latency))
        )
    reader.get_metrics_data()  # what a periodic reader does


MODES = ("plain", "beside", "instrumented", "instrumented_latency")


def _round(mode: str, bs: str, topic: str, n: int) -> float:
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mode, bs, topic, str(n)],
        check=True,
        capture_output=True,
        text=True,
        cwd=here,
    )
    return float(out.stdout.split()[-1])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(argv[1], argv[2], argv[3], int(argv[4]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, help="ignored (bench/run.py passes it to every step)")
    a = ap.parse_args(argv)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        topic = fresh_topic(bs, "bench-otel", 1)
        for _ in range(a.repeat):
            for mode in MODES:
                times[mode].append(_round(mode, bs, topic, a.count))

    def paired(mode: str) -> float:
        return statistics.median(p / m for p, m in zip(times["plain"], times[mode]))

    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = paired("beside")
    label, need = TARGET
    print(
        json.dumps(
            {
                "count": a.count,
                "repeat": a.repeat,
                "median_seconds": {k: round(v, 4) for k, v in med.items()},
                "msgs_per_s": {k: round(a.count / v) for k, v in med.items()},
                "instrumented_vs_plain": round(paired("instrumented"), 3),
                "instrumented_latency_vs_plain": round(paired("instrumented_latency"), 3),
                "targets": [
                    {
                        "target": label,
                        "ratio": round(ratio, 3),
                        "paired_median": round(ratio, 3),
                        "need": need,
                        "pass": ratio >= need,
                    }
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
