"""write_kafka from a classic local Spark session, then an exactly_once write run twice."""

import logging
import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python has cykafka
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cykafka.broker import LocalBroker
from cykafka.spark import write_kafka

logging.getLogger("py4j").setLevel(logging.ERROR)
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "3")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")

with LocalBroker() as broker:
    servers = broker.bootstrap_servers
    broker.create_topic("orders", partitions=3)
    df = spark.range(10_000).select(
        F.col("id"),
        F.concat(F.lit("user-"), (F.col("id") % 50).cast("string")).alias("user"),
        (F.col("id") * 0.25).alias("amount"),
    )
    # value=None: each row as JSON; each user's rows in the order of "id" in its partition
    report = write_kafka(
        df,
        "orders",
        bootstrap_servers=servers,
        preset="ordered",
        key="user",
        value=None,
        order_by="id",
    )
    print(report)
    report.to_df(spark).show(truncate=False)  # one row per Spark task

    # exactly_once with a job_id: running the same job again skips what it committed.
    broker.create_topic("payments", partitions=2)
    pay = spark.createDataFrame(
        [(f"acct-{i % 7}", f'{{"n": {i}}}') for i in range(5000)], "key string, value string"
    )
    for _ in range(2):  # the second run finds every unit committed
        report = write_kafka(
            pay, "payments", bootstrap_servers=servers, preset="exactly_once", job_id="pay-0501"
        )
        print(report)  # rows, delivered, failed, per-partition offsets; report.ok
    spark.stop()  # before the broker: the executors' producers close while it answers
