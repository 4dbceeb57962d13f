"""Latency at fixed rates: cykafka's futures against the Java producer, side by side.

``run(bootstrap, classpath, seconds=10, repeat=3) -> dict``; ``python bench/latency.py
[--seconds S] [--repeat R] [--rates 10000 50000 200000]`` starts one Apache Kafka node
(:class:`cykafka.launchers.kafka.KafkaCluster`) and prints the result as JSON.

At each fixed rate (10 k, 50 k, 200 k msg/s by default), one partition, 100-byte
values, ``acks=all`` and idempotence on both sides:

* **cykafka**: ``Producer.produce()`` paced to the rate as ProducerPerformance paces
  (sleep while ahead of ``i / rate``); the latency of a message is librdkafka's
  ``rd_kafka_message_latency`` (its ``produce()`` call to its delivery report), taken
  on cykafka's event thread once the report's futures are resolved: the measure the
  OpenTelemetry exporter's ``delivery_latency`` records.  (A done-callback per future
  stamping a Python clock measured the harness as well: side by side at 200 k msg/s,
  ``batch.size=1000000``, it gave p99 21.6 and 24.1 ms and 7.0 s of CPU where this
  gives 7.2 and 6.2 ms and 3.6 s; on a loaded machine its p50 reached 390 ms);
* **Java**: ``ProducerPerformance --throughput RATE`` (``--record-size 100``), whose
  own percentiles are from ``send()`` to its callback, in whole milliseconds.

Both sides exclude their first second of records (Java: ``--warmup-records``, its
steady-state percentiles), so a JVM still compiling and a producer still connecting
are not counted; each is a fresh process; rounds interleave every group, rate and side.

Setting groups:

* ``java_batch``: Java's defaults for batching on both sides (``linger.ms=5``,
  ``batch.size=16384``);
* ``large_batch``: librdkafka's ``batch.size=1000000`` on both (what the throughput
  comparisons in ``bench/java_anchor.py`` use), ``linger.ms=5``;
* ``defaults``: each at its own (cykafka: nothing set beyond idempotence, i.e.
  librdkafka's ``linger.ms=5``, ``batch.size=1000000``, ``batch.num.messages=10000``;
  Java 4.x: ``linger.ms=5``, ``batch.size=16384``).

``throughput`` asks whether a smaller default ``batch.size`` would cost anything:
``produce_batch`` of ``--rows`` messages, unthrottled, with ``batch.size`` 16384
against librdkafka's 1000000, fresh processes, rounds interleaved.

Target (``targets``): cykafka's p99 <= Java's at every rate with the same settings;
a ratio Java p99 / cykafka p99 >= 1.0, the median of the rounds, spread printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import sys
import time
from array import array
from collections.abc import Iterator
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import listener_pid, process_cpu_seconds  # noqa: E402
from import_bench import _topic  # noqa: E402
from import_compare import _timed  # noqa: E402
from java_anchor import JVM_OPTS, PERF, apache_kafka  # noqa: E402

__all__ = ["GROUPS", "RATES", "run"]

RATES = (10_000, 50_000, 200_000)
SIZE = 100
BASE = {"acks": "all", "enable.idempotence": "true"}
#: group -> (cykafka's settings, Java's settings)
GROUPS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "java_batch": (
        {**BASE, "linger.ms": "5", "batch.size": "16384"},
        {**BASE, "linger.ms": "5", "batch.size": "16384"},
    ),
    "large_batch": (
        {**BASE, "linger.ms": "5", "batch.size": "1000000"},
        {**BASE, "linger.ms": "5", "batch.size": "1000000"},
    ),
    "defaults": (dict(BASE), dict(BASE)),
}
#: the groups with the same settings on both sides: the target's
SAME_GROUPS = ("java_batch", "large_batch")
_PCT = (
    r"([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max "
    r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)
_STEADY = re.compile(r"^(\d+) steady state records sent, " + _PCT, re.M)


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def _percentiles(lat_us: list[int]) -> dict[str, float]:
    s = sorted(lat_us)

    def at(q: float) -> float:
        return round(s[min(len(s) - 1, int(q * len(s)))] / 1000, 2)

    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "p999_ms": at(0.999)}


def child(
    bootstrap: str, topic: str, rate: int, n: int, warm: int, conf: dict[str, str]
) -> dict[str, Any]:
    """In this (fresh) process: ``warm + n`` messages at ``rate``, the last ``n`` timed."""
    import resource

    from cykafka import Producer

    total = warm + n
    lat_us = array("q")
    failed: list[tuple[float, str]] = []
    clock = time.perf_counter_ns
    value = os.urandom(SIZE)

    def latencies(ok: list[float], bad: list[tuple[float, str]]) -> None:
        # once per delivery report, on cykafka's event thread, after the report's
        # futures are resolved: librdkafka's own per-message measure, so the harness
        # adds no Python call (and no GIL hand-over) per message
        lat_us.extend(int(s * 1e6) for s in ok)
        failed.extend(bad)

    with Producer({"bootstrap.servers": bootstrap, **conf}) as p:
        p.produce(topic, b"warm-up").result(60)  # connection, metadata, producer id
        p._set_latency_cb(latencies)
        futures = []
        start = clock()
        step = 1e9 / rate
        for i in range(total):
            due = start + i * step
            now = clock()
            if now < due:  # ahead of the rate: sleep it off, as ProducerPerformance does
                time.sleep((due - now) / 1e9)
            futures.append(p.produce(topic, value))
        sent = clock() - start
        for f in futures:
            f.result(120)
        took = (clock() - start) / 1e9
        p.flush()
        p._set_latency_cb(None)
    if failed or len(lat_us) != total:
        raise RuntimeError(f"{len(lat_us)} latencies for {total} messages, failed: {failed[:5]}")
    # one partition with idempotence: reports come in produce order, so the first
    # ``warm`` latencies are the warm-up's
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {
        **_percentiles(list(lat_us[warm:])),
        "rows_per_s": total / took,
        "offered_per_s": total / (sent / 1e9),
        "cpu_seconds": ru.ru_utime + ru.ru_stime,
        "records": total,
    }


def _cykafka(bootstrap: str, topic: str, rate: int, n: int, warm: int, conf: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", bootstrap, topic]
    cmd += [str(rate), str(n), str(warm), json.dumps(conf)]
    _, out, _ = _timed(cmd)
    return dict(json.loads(out.strip().splitlines()[-1]))


def _java(
    classpath: str, bootstrap: str, topic: str, rate: int, n: int, warm: int, conf: dict
) -> dict[str, Any]:
    cmd = ["java", *JVM_OPTS, "-cp", classpath, PERF, "--bootstrap-server", bootstrap]
    cmd += ["--topic", topic, "--num-records", str(n + warm), "--warmup-records", str(warm)]
    cmd += ["--record-size", str(SIZE), "--throughput", str(rate)]
    cmd += ["--command-property", *[f"{k}={v}" for k, v in conf.items()]]
    _, out, cpu = _timed(cmd)
    m = _STEADY.search(out)
    if not m or int(m.group(1)) != n:
        raise RuntimeError(f"ProducerPerformance did not send {n} records:\n{out[-2000:]}")
    return {
        "p50_ms": float(m.group(6)),
        "p99_ms": float(m.group(8)),
        "p999_ms": float(m.group(9)),
        "rows_per_s": float(m.group(2)),
        "cpu_seconds": cpu,
        "records": n + warm,
    }


def _max_rate(bootstrap: str, topic: str, rows: int, batch_size: str) -> dict[str, Any]:
    cmd = [sys.executable, os.path.join(HERE, "lines.py"), "cy_batch_list"]
    cmd += ["--bootstrap", bootstrap, "--topic", topic, "--count", str(rows)]
    cmd += ["--size", str(SIZE), "--config", *[f"{k}={v}" for k, v in BASE.items()]]
    cmd += [f"batch.size={batch_size}"]
    _, out, cpu = _timed(cmd)
    res = json.loads(out.strip().splitlines()[-1])
    if res["delivered"] != rows or res["failed"]:
        raise RuntimeError(f"produce_batch lost messages: {res}")
    return {"rows_per_s": rows / res["seconds"], "cpu_seconds": cpu, "records": rows}


def run(
    bootstrap: str,
    classpath: str,
    seconds: float = 10.0,
    repeat: int = 3,
    rates: tuple[int, ...] = RATES,
    rows: int = 1_000_000,
) -> dict[str, Any]:
    runs: dict[str, dict[str, dict[str, list[dict]]]] = {g: {} for g in GROUPS}
    peak: dict[str, list[dict]] = {"16384": [], "1000000": []}
    broker = listener_pid(bootstrap)
    for _ in range(max(repeat, 1)):
        for group, (cy_conf, java_conf) in GROUPS.items():
            for rate in rates:
                n, warm = int(rate * seconds), rate  # one second of warm-up
                sides = {
                    "cykafka": lambda t, r=rate, n=n, w=warm, c=cy_conf: _cykafka(
                        bootstrap, t, r, n, w, c
                    ),
                    "java": lambda t, r=rate, n=n, w=warm, c=java_conf: _java(
                        classpath, bootstrap, t, r, n, w, c
                    ),
                }
                for side, fn in sides.items():
                    with _topic(bootstrap, f"bench-latency-{side}", 1) as topic:
                        before = process_cpu_seconds(broker) if broker else 0.0
                        res = fn(topic)
                        if broker:
                            res["broker_cpu_seconds"] = process_cpu_seconds(broker) - before
                    runs[group].setdefault(f"{side}@{rate}", []).append(res)
                    print(
                        f"[latency] {group:11} {rate:>7,}/s {side:8} p50 {res['p50_ms']:6.2f} "
                        f"p99 {res['p99_ms']:7.2f} p99.9 {res['p999_ms']:7.2f} ms",
                        file=sys.stderr,
                        flush=True,
                    )
        for bs in peak:
            with _topic(bootstrap, "bench-latency-peak", 1) as topic:
                peak[bs].append(_max_rate(bootstrap, topic, rows, bs))
    out: dict[str, Any] = {
        "rates": list(rates),
        "seconds": seconds,
        "size": SIZE,
        "repeat": repeat,
        "warmup": "the first second of records at each rate, both sides",
        "groups": {g: {"cykafka": c, "java": j} for g, (c, j) in GROUPS.items()},
        "java": PERF,
        "broker_pid_found": broker is not None,
    }
    targets = []
    for group, sides in runs.items():
        g: dict[str, Any] = {}
        for key, rs in sides.items():
            for q in ("p50_ms", "p99_ms", "p999_ms"):
                g[f"{key}_{q}_median"] = _med([r[q] for r in rs])
                g[f"{key}_{q}_spread"] = [min(r[q] for r in rs), max(r[q] for r in rs)]
            g[f"{key}_cpu_s_per_m_median"] = round(
                _med([1e6 * r["cpu_seconds"] / r["records"] for r in rs]), 2
            )
            if all("broker_cpu_seconds" in r for r in rs):
                g[f"{key}_broker_cpu_s_per_m_median"] = round(
                    _med([1e6 * r["broker_cpu_seconds"] / r["records"] for r in rs]), 2
                )
        for rate in rates:
            cy, java = sides[f"cykafka@{rate}"], sides[f"java@{rate}"]
            # Java reports whole milliseconds: a p99 under 1 ms reads as 0; compare
            # against at least 1 ms so a rounding never decides
            pairs = [max(j["p99_ms"], 1.0) / max(c["p99_ms"], 1e-3) for c, j in zip(cy, java)]
            g[f"p99_java_vs_cykafka@{rate}"] = round(_med(pairs), 2)
            g[f"p99_java_vs_cykafka@{rate}_spread"] = [round(min(pairs), 2), round(max(pairs), 2)]
            if group in SAME_GROUPS:
                targets.append(
                    {
                        "target": f"futures p99 <= Java's at {rate:,}/s ({group}), Java/cykafka",
                        "ratio": g[f"p99_java_vs_cykafka@{rate}"],
                        "spread": g[f"p99_java_vs_cykafka@{rate}_spread"],
                        "need": 1.0,
                        "pass": g[f"p99_java_vs_cykafka@{rate}"] >= 1.0,
                    }
                )
        out[group] = g
    small, large = peak["16384"], peak["1000000"]
    pairs = [a["rows_per_s"] / b["rows_per_s"] for a, b in zip(small, large)]
    out["throughput"] = {
        "rows": rows,
        "batch_size_16384_rows_per_s_median": round(_med([r["rows_per_s"] for r in small])),
        "batch_size_1000000_rows_per_s_median": round(_med([r["rows_per_s"] for r in large])),
        "small_vs_large_median": round(_med(pairs), 2),
        "small_vs_large_spread": [round(min(pairs), 2), round(max(pairs), 2)],
        "small_cpu_s_per_m_median": round(
            _med([1e6 * r["cpu_seconds"] / r["records"] for r in small]), 2
        ),
        "large_cpu_s_per_m_median": round(
            _med([1e6 * r["cpu_seconds"] / r["records"] for r in large]), 2
        ),
    }
    out["targets"] = targets
    return out


@contextlib.contextmanager
def _kafka() -> Iterator[tuple[str, str]]:
    with apache_kafka() as (bootstrap, classpath):
        yield bootstrap, classpath


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        bs, topic, rate, n, warm, conf = argv[1:7]
        print(json.dumps(child(bs, topic, int(rate), int(n), int(warm), json.loads(conf))))
        return 0
    ap = argparse.ArgumentParser(description="latency at fixed rates: cykafka vs Java")
    ap.add_argument("bootstrap", nargs="?", help="ignored: the step runs on Apache Kafka")
    ap.add_argument("--rows", type=int, default=1_000_000, help="the throughput check's")
    ap.add_argument("--seconds", type=float, default=10.0, help="timed seconds per rate")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rates", type=int, nargs="+", default=list(RATES))
    a = ap.parse_args(argv)
    with _kafka() as (bootstrap, classpath):
        res = run(bootstrap, classpath, a.seconds, a.repeat, tuple(a.rates), a.rows)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
