"""cykafka against the Java producer, on Apache Kafka and on Tansu, in one run.

``run(brokers, classpath, rows=1_000_000, size=100, repeat=3) -> dict``;
``python bench/java_anchor.py [TANSU_BOOTSTRAP] [--rows N] [--size B] [--repeat R]``
prints it as JSON.  ``brokers`` maps a name to a bootstrap address; the command line
starts one Apache Kafka node (:class:`cykafka.launchers.kafka.KafkaCluster`, jars from
Maven Central, cached) and uses the given Tansu (or starts a ``LocalBroker``).

The Java side is ``org.apache.kafka.tools.ProducerPerformance`` (``kafka-tools``, what
``kafka-producer-perf-test.sh`` runs) started as its script starts it (``-Xmx512M``,
G1), with ``--record-size SIZE --throughput -1``, at its steady state: from 10 M rows
on one warm-up record, below that the first 2 M records are warm-up
(``--warmup-records``, :func:`java_warmup`, ``--java-warmup``); its *own* figure is the
steady-state records/s it prints (the N records after the warm-up, send to the last
acknowledgement and ``close()``), which is what JVM teams quote; its whole-run rate is
kept beside it.  The cykafka sides, each in a fresh process:

* ``cy_batch``: ``produce_batch`` of N distinct ``bytes`` (``bench/lines.py
  cy_batch_list``: one warm-up message, then send to last delivery report);
* ``cy_futures``: ``produce()`` per message, every ``DeliveryFuture`` kept and
  ``result()`` on each (``bench/lines.py cy_futures``);
* ``import``: ``cykafka import FILE --format lines`` of N ``SIZE``-byte lines, timed as
  a whole process (start to exit), against ProducerPerformance timed the same way
  (JVM start to exit).

Two setting groups, both sides in each: *same* -- every setting that shapes batching
given explicitly to both (``SAME``: acks, idempotence, ``linger.ms``, batch size,
compression), the import with ``--preset none`` plus those -- and *defaults*: each
client at its own (Java 4.x: idempotent, ``linger.ms=5``, ``batch.size=16384``;
librdkafka: not idempotent, ``linger.ms=5``, batches up to 1 MB / 10,000 messages; the
import: the ``ordered`` preset and lz4).  One partition; a fresh topic per run, deleted
after it.  Rounds interleave every side on every broker.

Targets, on Apache Kafka with the same settings, medians of the per-round ratios with
their spread (lowest and highest round): ``produce_batch`` >= 1.5 x
ProducerPerformance's records/s, futures >= 1.3 x, and the import as a process (as
many lines as the JVM sent records, warm-up included) >= 1.0 x ProducerPerformance as a
process.  CPU per million records, from the processes' own accounting: each client
process start to exit (``getrusage`` of the child: user + system, all threads; the
JVM's warm-up and start included, as Python's start and payload building are) and the
broker's during each run (``/proc/PID/stat`` of the process listening on its port),
with the broker's share of the two.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any, Optional

from _common import listener_pid, process_cpu_seconds
from import_bench import _topic
from import_compare import _timed

__all__ = ["SAME", "TARGETS", "java_warmup", "run"]

HERE = os.path.dirname(os.path.abspath(__file__))

#: every setting that shapes a batch, given to both clients in the "same" group
#: (librdkafka and the Java client share these names)
SAME = {
    "acks": "all",
    "enable.idempotence": "true",
    "linger.ms": "5",
    "batch.size": "1000000",
    "compression.type": "none",
}
#: (side, reference) -> minimum ratio, on Apache Kafka with the same settings
TARGETS = {
    ("cy_batch", "java"): 1.5,
    ("cy_futures", "java"): 1.3,
    ("import_process", "java_process"): 1.0,
}
#: from this many records on, the Java side's own warm-up is a small part of its run
STEADY_ROWS = 10_000_000
#: below STEADY_ROWS, records the Java side sends before its clock starts
WARMUP_ROWS = 2_000_000
#: how bin/kafka-producer-perf-test.sh starts the JVM (KAFKA_HEAP_OPTS and
#: kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS)
JVM_OPTS = [
    "-Xmx512M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
PERF = "org.apache.kafka.tools.ProducerPerformance"
_STEADY = re.compile(r"^(\d+) steady state records sent, ([\d.]+) records/sec", re.M)
_WHOLE = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec", re.M)


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def _java(
    classpath: str,
    bootstrap: str,
    topic: str,
    n: int,
    size: int,
    conf: dict[str, str],
    warmup: int = 1,
) -> dict[str, float]:
    """ProducerPerformance sending ``warmup + n`` records; its steady-state rate is over
    the last ``n``, its whole-run rate (kept for comparison) over all of them."""
    props = [f"{k}={v}" for k, v in conf.items()]
    cmd = [
        "java",
        *JVM_OPTS,
        "-cp",
        classpath,
        PERF,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--num-records",
        str(n + warmup),
        "--warmup-records",
        str(warmup),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        *(["--command-property", *props] if props else []),
    ]
    wall, out, cpu = _timed(cmd)
    m = _STEADY.search(out)
    if not m or int(m.group(1)) != n or "Exception" in out:
        raise RuntimeError(f"ProducerPerformance did not send {n} records:\n{out[-2000:]}")
    whole = _WHOLE.findall(out)
    return {
        "rows_per_s": float(m.group(2)),
        "whole_run_rows_per_s": float(whole[-1][1]) if whole else 0.0,
        "process_seconds": wall,
        "cpu_seconds": cpu,
        "records": n + warmup,
    }


def _line(name: str, bootstrap: str, topic: str, n: int, size: int, conf: dict[str, str]) -> dict:
    cmd = [
        sys.executable,
        os.path.join(HERE, "lines.py"),
        name,
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--count",
        str(n),
        "--size",
        str(size),
        "--config",
        *[f"{k}={v}" for k, v in conf.items()],
    ]
    _, out, cpu = _timed(cmd)
    res = json.loads(out.strip().splitlines()[-1])
    if res["delivered"] != n or res["failed"]:
        raise RuntimeError(f"{name} lost messages: {res}")
    # cpu_seconds: the whole process, start to exit, as the Java side's; the clock's
    # own (first produce to last delivery) beside it
    return {
        "rows_per_s": n / res["seconds"],
        "cpu_seconds": cpu,
        "clocked_cpu_seconds": res["cpu_seconds"],
        "records": n,
    }


def _import(
    bootstrap: str, topic: str, path: str, n: int, preset: str, conf: dict[str, str]
) -> dict:
    cy = os.path.join(os.path.dirname(sys.executable), "cykafka")
    cmd = [cy, "import", path, "--format", "lines", "-b", bootstrap, "-t", topic]
    cmd += ["--preset", preset, "--no-progress", *[f"-X{k}={v}" for k, v in conf.items()]]
    wall, out, cpu = _timed(cmd)  # exit status 0 only if every row was delivered
    return {"process_seconds": wall, "cpu_seconds": cpu, "rows_per_s": n / wall, "records": n}


def _write_lines(path: str, n: int, size: int) -> None:
    """``n`` lines of ``size`` bytes each (plus the newline): messages of ``size`` bytes,
    as ProducerPerformance's ``--record-size``."""
    filler = b"x" * max(size - 13, 0)
    with open(path, "wb") as f:
        for start in range(0, n, 100_000):
            f.write(
                b"".join(
                    (b"line-%07d-" % i + filler)[:size] + b"\n"
                    for i in range(start, min(n, start + 100_000))
                )
            )


def _java_probe(classpath: str, bootstrap: str) -> Optional[str]:
    """None if ProducerPerformance gets 1,000 records acknowledged by this broker within
    its timeouts, else what happened: the Java client 4.x gets no answer from Tansu to
    its produce requests (every record sent, none acknowledged, close() waits)."""
    conf = {"delivery.timeout.ms": "20000", "request.timeout.ms": "15000"}
    try:
        with _topic(bootstrap, "bench-java-probe", 1) as topic:
            _java(classpath, bootstrap, topic, 1000, 100, conf)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {str(exc)[-600:]}"
    return None


def run(
    brokers: dict[str, str],
    classpath: str,
    rows: int = 1_000_000,
    size: int = 100,
    repeat: int = 3,
    warmup: Optional[int] = None,
) -> dict[str, Any]:
    """``warmup``: records ProducerPerformance sends before its steady-state clock
    starts (None: :func:`java_warmup`)."""
    warm = java_warmup(rows) if warmup is None else max(warmup, 1)
    groups = {"same": (SAME, "none"), "defaults": ({}, "ordered")}
    runs: dict[str, dict[str, dict[str, list[dict]]]] = {
        b: {g: {} for g in groups} for b in brokers
    }
    broker_pids = {b: listener_pid(bs) for b, bs in brokers.items()}
    no_java = {b: why for b, bs in brokers.items() if (why := _java_probe(classpath, bs))}
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-java-") as tmp:
        path = os.path.join(tmp, "lines.txt")
        # as many lines as the Java process sends records (warm-up included): the two
        # whole processes do the same work
        _write_lines(path, rows + warm, size)
        for _ in range(max(repeat, 1)):
            for broker, bs in brokers.items():
                for group, (conf, preset) in groups.items():
                    sides = {
                        "java": lambda t, c=conf, b=bs: _java(classpath, b, t, rows, size, c, warm),
                        "cy_batch": lambda t, c=conf, b=bs: _line(
                            "cy_batch_list", b, t, rows, size, c
                        ),
                        "cy_futures": lambda t, c=conf, b=bs: _line(
                            "cy_futures", b, t, rows, size, c
                        ),
                        "import": lambda t, c=conf, b=bs, p=preset: _import(
                            b, t, path, rows + warm, p, c
                        ),
                    }
                    if broker in no_java:
                        del sides["java"]
                    for side, fn in sides.items():
                        with _topic(bs, f"bench-java-{side.replace('_', '-')}", 1) as topic:
                            pid = broker_pids[broker]
                            before = process_cpu_seconds(pid) if pid else 0.0
                            res = fn(topic)
                            if pid:
                                res["broker_cpu_seconds"] = process_cpu_seconds(pid) - before
                        runs[broker][group].setdefault(side, []).append(res)
                        print(
                            f"[java_anchor] {broker:12} {group:8} {side:10} "
                            f"{res['rows_per_s']:>12,.0f} rows/s "
                            f"{1e6 * res['cpu_seconds'] / res['records']:6.2f} cpu s/M",
                            file=sys.stderr,
                            flush=True,
                        )
    out: dict[str, Any] = {
        "rows": rows,
        "size": size,
        "repeat": repeat,
        "partitions": 1,
        "java_warmup_records": warm,
        "java_steady_state": (
            f"ProducerPerformance's steady-state figure: the {rows:,} records after its "
            f"first {warm:,} (--warmup-records), {rows + warm:,} sent per JVM"
        ),
        "same_settings": SAME,
        "java": PERF,
        "java_version": _java_version(),
        "java_not_measured": no_java,
        "broker_pids_found": {b: pid is not None for b, pid in broker_pids.items()},
        "targets": {f"{a}_vs_{b}": need for (a, b), need in TARGETS.items()},
        "target_broker": "apache_kafka",
    }
    for broker, by_group in runs.items():
        for group, sides in by_group.items():
            out[f"{broker}_{group}"] = _summary(sides)
    return out


def java_warmup(rows: int) -> int:
    """Records the Java side sends before its clock starts.  At ``STEADY_ROWS`` or more
    the JVM's own warm-up (class loading, JIT compilation) is a small part of the run
    and one record is enough; below that the first ``WARMUP_ROWS`` are excluded, so a
    reduced run compares cykafka with a warm JVM too.  Each run keeps the JVM's
    whole-run rate beside its steady-state one: their gap is the warm-up's cost."""
    return 1 if rows >= STEADY_ROWS else WARMUP_ROWS


def _spread(xs: list[float]) -> list[float]:
    return [round(min(xs), 2), round(max(xs), 2)] if xs else []


def _summary(sides: dict[str, list[dict]]) -> dict[str, Any]:
    g: dict[str, Any] = {}
    for side, rs in sides.items():
        g[f"{side}_rows_per_s_median"] = round(_med([r["rows_per_s"] for r in rs]))
        g[f"{side}_rows_per_s_spread"] = _spread([r["rows_per_s"] for r in rs])
        g[f"{side}_cpu_s_median"] = round(_med([r["cpu_seconds"] for r in rs]), 2)
        # CPU-seconds per million records, from the processes' own accounting: the
        # client process (all it did, start to exit) and the broker during the run
        per_m = [1e6 * r["cpu_seconds"] / r["records"] for r in rs]
        g[f"{side}_cpu_s_per_m_median"] = round(_med(per_m), 2)
        g[f"{side}_cpu_s_per_m_spread"] = _spread(per_m)
        if all("broker_cpu_seconds" in r for r in rs):
            broker = [1e6 * r["broker_cpu_seconds"] / r["records"] for r in rs]
            g[f"{side}_broker_cpu_s_per_m_median"] = round(_med(broker), 2)
            share = [b / (b + c) for b, c in zip(broker, per_m) if b + c > 0]
            g[f"{side}_broker_cpu_share_median"] = round(_med(share), 2)
        g[f"{side}_runs_rows_per_s"] = [round(r["rows_per_s"]) for r in rs]
        if "process_seconds" in rs[0]:
            g[f"{side}_process_s_median"] = round(_med([r["process_seconds"] for r in rs]), 2)
        if "whole_run_rows_per_s" in rs[0]:
            # the same JVM's rate over every record it sent, warm-up included
            g[f"{side}_whole_run_rows_per_s_median"] = round(
                _med([r["whole_run_rows_per_s"] for r in rs])
            )
    java = sides.get("java")
    if not java:
        return g
    for side in ("cy_batch", "cy_futures"):
        pairs = [a["rows_per_s"] / b["rows_per_s"] for a, b in zip(sides[side], java)]
        g[f"{side}_vs_java"] = round(_med(pairs), 2)
        g[f"{side}_vs_java_spread"] = _spread(pairs)
        g[f"{side}_vs_java_rounds"] = [round(x, 3) for x in pairs]
        cpu = [
            (b["cpu_seconds"] / b["records"]) / (a["cpu_seconds"] / a["records"])
            for a, b in zip(sides[side], java)
        ]
        # > 1: cykafka spends less CPU per record than the Java process
        g[f"java_cpu_per_record_vs_{side}"] = round(_med(cpu), 2)
    pairs = [b["process_seconds"] / a["process_seconds"] for a, b in zip(sides["import"], java)]
    g["import_process_vs_java_process"] = round(_med(pairs), 2)
    g["import_process_vs_java_process_spread"] = _spread(pairs)
    g["import_process_vs_java_process_rounds"] = [round(x, 3) for x in pairs]
    return g


def _java_version() -> str:
    proc = subprocess.run(["java", "-version"], capture_output=True, text=True)
    return (proc.stderr.splitlines() or ["?"])[0]


@contextlib.contextmanager
def apache_kafka() -> Iterator[tuple[str, str]]:
    """(bootstrap servers, the Kafka jars' classpath) of one fresh Apache Kafka node."""
    from cykafka.launchers.kafka import KafkaCluster

    with KafkaCluster() as cluster:  # its jars hold kafka-tools' ProducerPerformance
        yield cluster.bootstrap_servers, cluster.classpath()


@contextlib.contextmanager
def both_brokers(tansu: Optional[str]) -> Iterator[tuple[dict[str, str], str]]:
    """({"apache_kafka": ..., "tansu": ...}, the Kafka jars' classpath): a fresh Apache
    Kafka node, and ``tansu`` (else $CYKAFKA_BOOTSTRAP_SERVERS, else a LocalBroker)."""
    from _common import bootstrap_or_local

    with bootstrap_or_local([tansu] if tansu else []) as bs, apache_kafka() as (kafka, cp):
        yield {"apache_kafka": kafka, "tansu": bs}, cp


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="cykafka vs the Java producer")
    ap.add_argument("bootstrap", nargs="?", help="Tansu (default: a LocalBroker for the run)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--java-warmup",
        type=int,
        default=None,
        help=f"records the Java side sends before its clock starts (default: 1 from "
        f"{STEADY_ROWS:,} rows on, else {WARMUP_ROWS:,})",
    )
    a = ap.parse_args(argv)
    with both_brokers(a.bootstrap) as (brokers, classpath):
        print(json.dumps(run(brokers, classpath, a.rows, a.size, a.repeat, a.java_warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
