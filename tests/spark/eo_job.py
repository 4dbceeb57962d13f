"""A Spark driver in its own process, for the exactly-once fault tests
(tests/spark/test_exactly_once.py): each run picks its own master (``local[N,M]``, a
standalone cluster) and its own Spark settings, and the tests inject faults into its
Python workers through ``tests/spark/faults/sitecustomize.py``.

``python eo_job.py '<json>'``; the JSON names ``mode`` ("batch" or "stream"),
``master``, ``conf``, ``bootstrap``, ``topic``, optionally the driver's ``log_level``
(default ERROR) and the mode's arguments (batch:
``preset``, default ``exactly_once``).  Prints one
line ``REPORTS <json>``: the reports of the write (batch) or of each micro-batch
(stream); exits 3 when the streaming query failed (its error on stderr)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _report(r: Any) -> dict[str, Any]:
    return {
        "batch_id": r.batch_id,
        "rows": r.rows,
        "delivered": r.delivered,
        "failed": r.failed,
        "skipped": r.skipped,
        "ok": r.ok,
        "retried": r.retried,
        "duplicates": r.duplicates,
        "duplicates_max": r.duplicates_max,
        "offsets": [[t, p, lo, hi] for (t, p), (lo, hi) in sorted(r.offsets.items())],
        "tasks": [
            {"task": t.task, "attempt": t.attempt, "rows": t.rows, "skipped": t.skipped}
            for t in r.tasks
        ],
        "text": str(r),
    }


def main(args: dict[str, Any]) -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from cykafka.spark import kafka_batch_writer, write_kafka

    os.environ["PYSPARK_PYTHON"] = sys.executable
    b = SparkSession.builder.master(args["master"]).appName("cykafka-eo-job")
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.pyspark.python": sys.executable,
        **args.get("conf", {}),
    }
    # Executors a cluster's workers start do not inherit this process's environment.
    for name in ("PYTHONPATH", "CYKAFKA_FAULT"):
        if os.environ.get(name):
            conf[f"spark.executorEnv.{name}"] = os.environ[name]
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(args.get("log_level", "ERROR"))
    # A cluster: wait until its executors joined (the driver counts as one).
    deadline = time.monotonic() + 120
    while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 1 + args.get(
        "executors", 0
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("executors did not join")
        time.sleep(0.5)
    opts = dict(args.get("options", {}))
    reports: list[Any] = []
    try:
        if args["mode"] == "batch":
            n, keys = args["rows"], args.get("keys")
            df = spark.range(n, numPartitions=args.get("parts", 2))
            key = F.concat(F.lit("k"), (F.col("id") % keys).cast("string")) if keys else None
            cols = [F.col("id").cast("string").alias("value")]
            if key is not None:
                cols.insert(0, key.alias("key"))
            df = df.select(*cols)
            if args.get("empty"):  # filtered to nothing: Spark plans an empty shuffle
                df = df.where(F.lit(False))
            reports.append(
                write_kafka(
                    df,
                    args["topic"],
                    bootstrap_servers=args["bootstrap"],
                    preset=args.get("preset", "exactly_once"),
                    **opts,
                )
            )
        else:
            schema = "key string, value string" if args.get("keyed") else "value string"
            stream = spark.readStream.schema(schema).csv(args["source"])
            writer = kafka_batch_writer(
                args["topic"],
                bootstrap_servers=args["bootstrap"],
                preset="exactly_once",
                query=args["query"],
                on_batch=reports.append,
                **opts,
            )
            q = (
                stream.writeStream.foreachBatch(writer)
                .option("checkpointLocation", args["checkpoint"])
                .trigger(availableNow=True)
                .start()
            )
            try:
                q.awaitTermination(300)
                failure = q.exception()
            except Exception as e:  # StreamingQueryException: the query failed
                failure = e
            if failure is not None:
                print(f"QUERY FAILED: {str(failure)[:2000]}", file=sys.stderr)
                print("REPORTS " + json.dumps([_report(r) for r in reports]), flush=True)
                return 3
        print("REPORTS " + json.dumps([_report(r) for r in reports]), flush=True)
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
