"""PySpark sink throughput: ``cykafka.spark.write_kafka`` vs the common hand-written sink.

``run(bootstrap_servers, rows=1_000_000) -> dict``; ``python bench/spark_sink.py
[BOOTSTRAP]`` prints the dict as JSON (a local broker is started when no bootstrap is
given).  Spark runs as ``local[2]``.

The DataFrame: ``rows`` rows of a string key (1000 distinct) and a 100-byte string
value, cached before timing.  The hand-written sink is the usual ``mapInArrow`` that
loops over the rows calling ``confluent_kafka.Producer.produce`` and flushes at the end.
``write_kafka`` runs with ``preset=None`` (the same librdkafka defaults as the naive
sink) and with its default ``preset="ordered"`` (which adds a shuffle so one task owns
each Kafka partition).  Target: write_kafka >= 3 x the naive sink's rows/s.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any, Optional

from _common import _SRC, bootstrap_or_local, fresh_topic

__all__ = ["run"]


def _naive_sink(bootstrap: str, topic: str, batches: Iterator[Any]) -> Iterator[Any]:
    import confluent_kafka
    import pyarrow as pa

    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    n = 0
    for batch in batches:
        for row in batch.to_pylist():
            while True:
                try:
                    p.produce(topic, key=row["key"], value=row["value"])
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
            n += 1
    left = p.flush(120)
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    yield pa.record_batch({"n": [n]})


def _session() -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if _SRC.is_dir():  # Spark's Python workers must import this checkout's cykafka
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(_SRC), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("cykafka-bench-spark-sink")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(
    bootstrap_servers: str, rows: int = 1_000_000, partitions: int = 4, spark: Optional[Any] = None
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from cykafka.spark import write_kafka

    spark = spark or _session()
    if __name__ != "__main__":
        # Imported (e.g. by bench/run.py): ship _naive_sink by value, since the Python
        # workers cannot import this script's module.
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    df = (
        spark.range(rows, numPartitions=2)
        .select(
            F.concat(F.lit("key-"), (F.col("id") % 1000).cast("string")).alias("key"),
            F.rpad(
                F.concat(F.lit("value-"), F.col("id").cast("string"), F.lit("-")), 100, "x"
            ).alias("value"),
        )
        .cache()
    )
    assert df.count() == rows
    # Warm the Python workers (and their imports) for both sinks.
    warm = fresh_topic(bootstrap_servers, "bench-spark-warm", partitions)
    write_kafka(df.limit(1000), warm, bootstrap_servers=bootstrap_servers, preset=None)
    df.limit(1000).mapInArrow(
        functools.partial(_naive_sink, bootstrap_servers, warm), "n long"
    ).collect()

    out: dict[str, Any] = {"rows": rows, "spark": "local[2]", "kafka_partitions": partitions}
    topic = fresh_topic(bootstrap_servers, "bench-spark-naive", partitions)
    t = time.perf_counter()
    got = df.mapInArrow(functools.partial(_naive_sink, bootstrap_servers, topic), "n long")
    n = sum(r["n"] for r in got.collect())
    naive_s = time.perf_counter() - t
    assert n == rows, n
    out["naive_rows_per_s"] = round(rows / naive_s)
    for preset in (None, "ordered"):
        tag = preset or "none"
        topic = fresh_topic(bootstrap_servers, f"bench-spark-{tag}", partitions)
        t = time.perf_counter()
        report = write_kafka(df, topic, bootstrap_servers=bootstrap_servers, preset=preset)
        dt = time.perf_counter() - t
        assert report.ok and report.delivered == rows, report
        out[f"write_kafka_{tag}_rows_per_s"] = round(rows / dt)
        out[f"speedup_{tag}"] = round(naive_s / dt, 2)
    out["target_speedup"] = 3.0
    df.unpersist()
    return out


if __name__ == "__main__":
    with bootstrap_or_local(sys.argv[1:]) as bs:
        print(json.dumps(run(bs), indent=2))
