"""What OpenTelemetry costs produce(): nothing for a producer not instrumented, and how
much for one that is (cykafka.inspector.exporters.otel).

``python bench/otel_overhead.py [BOOTSTRAP] [--count N] [--repeat R]``

Each round (interleaved) produces N messages of 100 bytes with produce() and flushes,
three ways: ``plain`` (OpenTelemetry never imported: a child process), ``beside`` (in
this process, OpenTelemetry's SDK set up and another producer instrumented, this one
not) and ``instrumented`` (this producer instrumented: its metrics observed by an SDK
reader, every delivery's latency recorded, produce() checking for an active span).
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


def _plain(bs: str, topic: str, n: int) -> float:
    """A round in a child that never imports OpenTelemetry."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import otel_overhead as o; "
        "print(o._timed(sys.argv[2], sys.argv[3], int(sys.argv[4]))); "
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')]"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, "-c", code, here, bs, topic, str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.split()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, help="ignored (bench/run.py passes it to every step)")
    a = ap.parse_args(argv)
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import cykafka
    from cykafka.inspector.exporters import otel

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    times: dict[str, list[float]] = {"plain": [], "beside": [], "instrumented": []}
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        topic = fresh_topic(bs, "bench-otel", 1)
        other = cykafka.Producer({"bootstrap.servers": bs})
        otel.instrument(other, provider)
        try:
            for _ in range(a.repeat):
                times["plain"].append(_plain(bs, topic, a.count))
                times["beside"].append(_timed(bs, topic, a.count))
                times["instrumented"].append(
                    _timed(bs, topic, a.count, lambda p: otel.instrument(p, provider))
                )
                reader.get_metrics_data()  # what a periodic reader would do meanwhile
        finally:
            other.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = statistics.median(p / b for p, b in zip(times["plain"], times["beside"]))
    inst = statistics.median(p / i for p, i in zip(times["plain"], times["instrumented"]))
    label, need = TARGET
    print(
        json.dumps(
            {
                "count": a.count,
                "repeat": a.repeat,
                "median_seconds": {k: round(v, 4) for k, v in med.items()},
                "msgs_per_s": {k: round(a.count / v) for k, v in med.items()},
                "instrumented_vs_plain": round(inst, 3),
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
