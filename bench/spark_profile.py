"""Where an ordered or exactly_once Spark write spends its time, piece by piece.

``python bench/spark_profile.py [BOOTSTRAP] [--rows N] [--repeat R]`` prints JSON.  On
bench/spark_sink.py's cached DataFrame (1,000 keys, 100-byte values, 2 partitions),
``local[2]``, a 4-partition topic, rounds interleaved, each side's median wall time and
CPU-seconds (Spark's JVM, its Python workers):

* ``floor``: ``mapInArrow`` that only counts rows (Arrow to Python and back);
* ``routed_floor``: the same after :func:`cykafka.spark.routing.ordered` (the shuffle
  that puts each Kafka partition in one task, and the sort back into the DataFrame's
  order): the routing's cost is ``routed_floor - floor``;
* ``shuffle_floor``: after the routing's shuffle alone (no sort): of the routing's
  cost, what the sort adds is ``routed_floor - shuffle_floor``;
* ``write_none``, ``write_ordered``, ``write_exactly_once``: ``write_kafka`` with
  ``preset=None``, ``"ordered"``, ``"exactly_once"``;
* ``one_task_floor``: the routing for a one-partition topic (one task reading the
  DataFrame's partitions in order, ``coalesce(1)``), against ``one_task_shuffled_floor``:
  the same rows shuffled into one task and sorted back, as that routing did before.

The differences are what the docs quote as where the time goes (docs/benchmark.md).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any, Callable, Optional

from _common import bootstrap_or_local, fresh_topic
from spark_sink import _count_only, _session, _spark_cpu, bench_frame

PARTITIONS = 4


def run(bootstrap: str, rows: int = 1_000_000, repeat: int = 3) -> dict[str, Any]:
    import os

    from pyspark.sql import functions as F

    from cykafka.spark import write_kafka
    from cykafka.spark.plan import SEQ
    from cykafka.spark.routing import _to_tasks, ordered

    spark = _session()
    df = bench_frame(spark, rows)
    jvm = spark.sparkContext._gateway.proc.pid
    schema = "n long"

    def count(frame: Any) -> None:
        got = frame.mapInArrow(_count_only, schema).agg(F.sum("n")).first()[0]
        assert got == rows, got

    def routed(sort: bool) -> Any:
        if sort:
            return ordered(df, "key", None, None, PARTITIONS, "consistent_random")
        group = F.pmod(F.crc32(F.col("key").cast("binary")), F.lit(PARTITIONS))
        return _to_tasks(df, group, PARTITIONS)

    def write(preset: Optional[str]) -> Callable[[], None]:
        def go() -> None:
            topic = fresh_topic(bootstrap, "bench-spark-profile", PARTITIONS)
            rep = write_kafka(df, topic, bootstrap_servers=bootstrap, preset=preset)
            assert rep.ok and rep.delivered == rows, rep

        return go

    def one_task_shuffled() -> Any:
        seq = df.withColumn(SEQ, F.monotonically_increasing_id())
        return _to_tasks(seq, F.lit(0), 1).sortWithinPartitions(SEQ).drop(SEQ)

    sides: dict[str, Callable[[], None]] = {
        "floor": lambda: count(df),
        "routed_floor": lambda: count(routed(True)),
        "shuffle_floor": lambda: count(routed(False)),
        "write_none": write(None),
        "write_ordered": write("ordered"),
        "write_exactly_once": write("exactly_once"),
        "one_task_floor": lambda: count(ordered(df, "key", None, None, 1, "consistent_random")),
        "one_task_shuffled_floor": lambda: count(one_task_shuffled()),
    }
    for fn in sides.values():  # warm-up: JIT, Python workers, producers
        fn()
    runs: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
    for _ in range(max(repeat, 1)):
        for side, fn in sides.items():
            j0, p0 = _spark_cpu(jvm)
            t0 = time.perf_counter()
            fn()
            took = time.perf_counter() - t0
            j1, p1 = _spark_cpu(jvm)
            runs[side].append({"seconds": took, "jvm_cpu": j1 - j0, "python_cpu": p1 - p0})
            print(f"[spark_profile] {side:20} {took:7.2f} s", file=sys.stderr, flush=True)
    spark.stop()
    out: dict[str, Any] = {"rows": rows, "partitions": PARTITIONS, "load": os.getloadavg()}
    for side, rs in runs.items():
        out[side] = {
            k: round(statistics.median(r[k] for r in rs), 2)
            for k in ("seconds", "jvm_cpu", "python_cpu")
        }
    med = {s: out[s]["seconds"] for s in sides}
    out["routing_s"] = round(med["routed_floor"] - med["floor"], 2)
    out["sort_s"] = round(med["routed_floor"] - med["shuffle_floor"], 2)
    out["ordered_vs_none"] = round(med["write_none"] / med["write_ordered"], 2)
    out["exactly_once_vs_ordered"] = round(med["write_ordered"] / med["write_exactly_once"], 2)
    out["one_task_vs_shuffled"] = round(med["one_task_shuffled_floor"] / med["one_task_floor"], 2)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        print(json.dumps(run(bs, a.rows, a.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
