"""``cykafka.spark.write_kafka`` against Spark's own Kafka sink, in one Spark session.

``run(brokers, rows=1_000_000, partitions=4, repeat=3) -> dict``;
``python bench/spark_anchor.py [TANSU_BOOTSTRAP] [--rows N] [--repeat R]`` prints it as
JSON.  ``brokers`` maps a name to a bootstrap address; the command line starts one
Apache Kafka node (``cykafka.launchers.kafka``) and uses the given Tansu (or starts a
``LocalBroker``).

Spark's sink is ``df.write.format("kafka")`` from ``spark-sql-kafka-0-10_2.13`` at
PySpark's own version, which Spark fetches from Maven Central itself
(``spark.jars.packages``, cached in Ivy's directory).  It is at-least-once: the Java
producer with its defaults (idempotent, acks=all), one producer per executor, rows
written in the DataFrame's order within a task, no shuffle.

The DataFrame is bench/spark_sink.py's: ``rows`` rows of a string key (1000 distinct)
and a 100-byte string value in 2 partitions, cached before timing; Spark runs as
``local[2]``.  Sides, interleaved in each of ``repeat`` rounds over every broker, a
fresh topic of ``partitions`` partitions each:

* ``spark_kafka``: Spark's built-in sink;
* ``write_kafka_none``: ``write_kafka(preset=None)`` (librdkafka's defaults: at-least-
  once, as Spark's sink);
* ``write_kafka_ordered``: ``write_kafka(preset="ordered")``;
* ``write_kafka_exactly_once``: ``write_kafka(preset="exactly_once")``.

``--standalone``: the same on Spark's standalone cluster (a Master and one 2-core Worker
started as tests/spark/conftest.py starts them, executors in the worker), Apache Kafka
only; for information.

Targets, on Apache Kafka in ``local[2]`` (ratios of the median times, the range of the
per-round ratios beside): ``write_kafka(preset=None)`` >= 1.8 x Spark's sink,
``exactly_once`` >= 1.0 x Spark's sink.  Each side also reports CPU-seconds per
million rows: Spark's JVM (where Spark's sink does all its work), its Python workers
(where write_kafka's producers run) and the whole machine (broker included).
"""

from __future__ import annotations

import contextlib
import functools
import json
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any, Callable, Optional

from _common import fresh_topic
from spark_sink import _descendants, _machine_cpu, _process_cpu, _session, bench_frame

__all__ = ["TARGETS", "connector_package", "run"]

#: side -> minimum ratio of Spark's sink's median time to the side's
TARGETS = {"write_kafka_none": 1.8, "write_kafka_exactly_once": 1.0}
MAVEN = "https://repo1.maven.org/maven2"


def connector_package() -> str:
    """The Maven coordinates of Spark's Kafka connector for the installed PySpark;
    a clear error when Maven Central has none for this version."""
    import urllib.request

    import pyspark

    version = pyspark.__version__
    coords = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
    pom = f"{MAVEN}/org/apache/spark/spark-sql-kafka-0-10_2.13/{version}/"
    pom += f"spark-sql-kafka-0-10_2.13-{version}.pom"
    try:
        urllib.request.urlopen(urllib.request.Request(pom, method="HEAD"), timeout=30).close()
    except OSError as exc:
        raise SystemExit(
            f"bench: Maven Central has no {coords} ({exc}); install a PySpark whose "
            "connector is published (pyproject.toml's test extra pins one)"
        ) from None
    return coords


def _cpu(roots: list[int]) -> tuple[float, float]:
    """(JVMs, Python processes) CPU-seconds so far of ``roots`` and their descendants:
    the driver's JVM and, on a standalone cluster, the worker with its executors."""
    jvm = py = 0.0
    for pid in {p for r in roots for p in (r, *_descendants(r))}:
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except FileNotFoundError:
            continue
        if comm.startswith("python"):
            py += _process_cpu(pid)
        else:
            jvm += _process_cpu(pid)
    return jvm, py


def run(
    brokers: dict[str, str],
    rows: int = 1_000_000,
    partitions: int = 4,
    repeat: int = 3,
    master: Optional[str] = None,
    cluster_pids: tuple[int, ...] = (),
) -> dict[str, Any]:
    """``master``: a standalone cluster's URL (default ``local[2]``), whose processes
    are ``cluster_pids`` (their CPU is counted with the driver's)."""

    from cykafka.spark import write_kafka

    package = connector_package()
    conf = {"spark.jars.packages": package, "spark.ui.showConsoleProgress": "false"}
    if master:
        conf.update(
            {
                "spark.master": master,
                "spark.cores.max": "2",
                "spark.executor.memory": "512m",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
            }
        )
    spark = _session(**conf)
    if master:  # wait until the executor has joined (driver + 1)
        deadline = time.monotonic() + 120
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no executor joined {master}")
            time.sleep(0.5)
    df = bench_frame(spark, rows)

    def spark_kafka(bootstrap: str, frame: Any, topic: str) -> None:
        (
            frame.write.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .save()
        )

    def cykafka(preset: Optional[str], bootstrap: str, frame: Any, topic: str) -> None:
        report = write_kafka(frame, topic, bootstrap_servers=bootstrap, preset=preset)
        assert report.ok and report.delivered == frame.count(), report

    sides: dict[str, Callable[[str, Any, str], None]] = {
        "spark_kafka": spark_kafka,
        "write_kafka_none": functools.partial(cykafka, None),
        "write_kafka_ordered": functools.partial(cykafka, "ordered"),
        "write_kafka_exactly_once": functools.partial(cykafka, "exactly_once"),
    }
    # Warm every side on every broker: the connector's classes, the Python workers and
    # their imports, the brokers' transaction coordinators.
    # A fresh Apache Kafka creates its transaction log on the first transactional
    # producer, and until it has leaders librdkafka's init_transactions() fails with
    # NOT_COORDINATOR (retriable), which write_kafka passes on: the warm-up retries,
    # and every failure it saw is in the result.
    small = df.limit(1000)
    warm_up_errors: list[str] = []
    for bs in brokers.values():
        for name, fn in sides.items():
            for attempt in range(3):
                try:
                    fn(bs, small, fresh_topic(bs, "bench-spark-anchor-warm", partitions))
                    break
                except Exception as exc:
                    if attempt == 2:
                        raise
                    warm_up_errors.append(f"{name} on {bs}: {str(exc).splitlines()[-1]}")
    times = {b: {name: [] for name in sides} for b in brokers}
    cpu: dict[str, dict[str, dict[str, list[float]]]] = {
        b: {name: {"machine": [], "jvm": [], "python": []} for name in sides} for b in brokers
    }
    roots = [spark.sparkContext._gateway.proc.pid, *cluster_pids]
    for _ in range(repeat):
        for broker, bs in brokers.items():
            for name, fn in sides.items():
                topic = fresh_topic(bs, f"bench-spark-anchor-{name}", partitions)
                c, (j, py) = _machine_cpu(), _cpu(roots)
                t = time.perf_counter()
                fn(bs, df, topic)
                times[broker][name].append(time.perf_counter() - t)
                j2, py2 = _cpu(roots)
                cpu[broker][name]["machine"].append(_machine_cpu() - c)
                cpu[broker][name]["jvm"].append(j2 - j)
                cpu[broker][name]["python"].append(py2 - py)
                print(
                    f"[spark_anchor] {broker:12} {name:26} "
                    f"{rows / times[broker][name][-1]:>12,.0f} rows/s",
                    file=sys.stderr,
                    flush=True,
                )
    df.unpersist()
    spark.stop()
    out: dict[str, Any] = {
        "rows": rows,
        "spark": master and "standalone" or "local[2]",
        "pyspark": spark.version,
        "connector": package,
        "kafka_partitions": partitions,
        "repeat": repeat,
        "targets": {f"{k}_vs_spark_kafka": v for k, v in TARGETS.items()},
        "target_broker": "apache_kafka",
        "warm_up_errors": warm_up_errors,
    }
    for broker in brokers:
        out[broker] = _summary(rows, times[broker], cpu[broker])
    return out


def _summary(
    rows: int, times: dict[str, list[float]], cpu: dict[str, dict[str, list[float]]]
) -> dict[str, Any]:
    med = {name: statistics.median(ts) for name, ts in times.items()}
    per_m = 1e6 / rows
    out: dict[str, Any] = {}
    for name, ts in times.items():
        out[name] = {
            "rows_per_s_median": round(rows / med[name]),
            "runs_rows_per_s": [round(rows / t) for t in ts],
            **{
                f"{where}_cpu_s_per_million_rows": round(statistics.median(xs) * per_m, 2)
                for where, xs in cpu[name].items()
            },
        }
        if name != "spark_kafka":
            out[f"{name}_vs_spark_kafka"] = round(med["spark_kafka"] / med[name], 2)
            # the same ratio round by round (the sides ran interleaved): its range
            rounds = [k / t for k, t in zip(times["spark_kafka"], ts)]
            out[f"{name}_vs_spark_kafka_spread"] = [round(min(rounds), 2), round(max(rounds), 2)]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    from java_anchor import apache_kafka, both_brokers

    ap = argparse.ArgumentParser(description="write_kafka vs Spark's own Kafka sink")
    ap.add_argument("bootstrap", nargs="?", help="Tansu (default: a LocalBroker for the run)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--standalone", action="store_true", help="a standalone cluster, Kafka only")
    a = ap.parse_args(argv)
    if a.standalone:
        with apache_kafka() as (kafka, _), _standalone() as (url, pids):
            res = run({"apache_kafka": kafka}, a.rows, a.partitions, a.repeat, url, pids)
        print(json.dumps(res))
        return 0
    with both_brokers(a.bootstrap) as (brokers, _):
        print(json.dumps(run(brokers, a.rows, a.partitions, a.repeat)))
    return 0


@contextlib.contextmanager
def _standalone() -> Iterator[tuple[str, tuple[int, ...]]]:
    """A Spark Master and one 2-core Worker, as the PySpark tests start them."""
    import importlib.util
    import tempfile
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tests" / "spark" / "conftest.py"
    spec = importlib.util.spec_from_file_location("spark_deployments", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-standalone-") as tmp:
        url, procs = mod.start_cluster(Path(tmp), ["127.0.0.1"], cores=2)
        try:
            yield url, tuple(p.proc.pid for p in procs)
        finally:
            mod.stop_cluster(procs)


if __name__ == "__main__":
    sys.exit(main())
