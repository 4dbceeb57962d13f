"""write_kafka to a topic whose ``max.message.bytes`` (4096) is far below librdkafka's
``batch.size``: the driver reads the limit once and the tasks' batches are sized for it,
so every row that fits is delivered once and in order per key, and the row too large
alone fails naming the limit (read back with a plain ``read_committed`` consumer)."""

from __future__ import annotations

import json
import random
import uuid
from collections import defaultdict

import pytest

from cykafka.spark import write_kafka

# Sizing is the driver's decision, the same on every deployment.
pytestmark = pytest.mark.parametrize("spark", ["local"], indirect=True)

LIMIT = 4096
N = 2000
BIG_AT = N // 2


def test_write_kafka_delivers_every_row_that_fits(spark, kafka, read_back) -> None:
    t = kafka.create_topic(
        f"limit-spark-{uuid.uuid4().hex[:8]}", partitions=3, config={"max.message.bytes": "4096"}
    )
    rnd = random.Random(44)
    rows = []
    for i in range(N):
        pad = rnd.randbytes(rnd.randrange(4, 90)).hex()
        big = rnd.randbytes(4500).hex() if i == BIG_AT else ""
        rows.append((i, f"k{i % 13}", json.dumps({"i": i, "pad": pad + big})))
    df = spark.createDataFrame(rows, "i long, key string, value string")
    report = write_kafka(
        df, t, bootstrap_servers=kafka.bootstrap_servers, order_by=["i"], on_error="report"
    )
    print(report)
    assert f"Batch.size lowered to {LIMIT} for topic {t}" in report.guarantees
    assert (report.rows, report.delivered, report.failed) == (N, N - 1, 1), report
    assert f"at most {LIMIT} bytes (its max.message.bytes)" in report.errors[0]
    got = read_back(kafka.bootstrap_servers, t, expected=N - 1)
    seen: list[int] = []
    for p, records in got.items():
        per_key: dict[bytes, list[int]] = defaultdict(list)
        for r in records:
            i = json.loads(r.value)["i"]
            seen.append(i)
            per_key[r.key].append(i)
        assert all(v == sorted(v) for v in per_key.values()), p
    assert sorted(seen) == [i for i in range(N) if i != BIG_AT]
