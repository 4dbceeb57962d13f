"""write_kafka to a topic whose ``max.message.bytes`` (4096) is far below librdkafka's
``batch.size``: the driver reads the limit of the write's topic (or of ``topics=``), a
task reads that of a topic its ``topic`` column names when it meets it, and batches are
sized for it, so every row that fits is delivered once and in order per key, and the
row too large alone fails naming the limit (read back with a plain ``read_committed``
consumer)."""

from __future__ import annotations

import json
import random
import uuid
from collections import defaultdict
from typing import Optional

import pytest

from cykafka.spark import write_kafka

# Sizing is the driver's decision, the same on every deployment.
pytestmark = pytest.mark.parametrize("spark", ["local"], indirect=True)

LIMIT = 4096
N = 2000
BIG_AT = N // 2
#: The rows of _topic_rows.
SCHEMA = "i long, key string, topic string, value string"


def _topic(kafka, prefix: str, limit: Optional[int] = LIMIT, partitions: int = 3) -> str:
    """A new topic, with ``max.message.bytes`` set to ``limit`` (None: the broker's)."""
    config = {} if limit is None else {"max.message.bytes": str(limit)}
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    return kafka.create_topic(name, partitions=partitions, config=config)


def _topic_rows(small: str, other: str, big_at: Optional[int]) -> list[tuple[int, str, str, str]]:
    """(i, key, topic, value): even rows to ``small``, odd ones to ``other``."""
    rnd = random.Random(47)
    rows = []
    for i in range(N):
        pad = rnd.randbytes(rnd.randrange(4, 90)).hex()
        big = rnd.randbytes(4500).hex() if i == big_at else ""
        topic = small if i % 2 == 0 else other
        rows.append((i, f"k{i % 13}", topic, json.dumps({"i": i, "pad": pad + big})))
    return rows


def _read_each_once(read_back, kafka, topic: str, want: list[int]) -> None:
    got = read_back(kafka.bootstrap_servers, topic, expected=len(want))
    seen: list[int] = []
    for p, records in got.items():
        per_key: dict[bytes, list[int]] = defaultdict(list)
        for r in records:
            i = json.loads(r.value)["i"]
            seen.append(i)
            per_key[r.key].append(i)
        assert all(v == sorted(v) for v in per_key.values()), p
    assert sorted(seen) == want, topic


def test_write_kafka_delivers_every_row_that_fits(spark, kafka, read_back) -> None:
    t = _topic(kafka, "limit-spark")
    df = spark.createDataFrame(_topic_rows(t, t, BIG_AT), SCHEMA).drop("topic")
    report = write_kafka(
        df, t, bootstrap_servers=kafka.bootstrap_servers, order_by=["i"], on_error="report"
    )
    print(report)
    assert f"Batch.size lowered to {LIMIT} for topic {t}" in report.guarantees
    assert (report.rows, report.delivered, report.failed) == (N, N - 1, 1), report
    assert f"at most {LIMIT} bytes (its max.message.bytes)" in report.errors[0]
    _read_each_once(read_back, kafka, t, [i for i in range(N) if i != BIG_AT])


def test_a_topic_column_write_sizes_each_topic_when_a_task_meets_it(
    spark, kafka, read_back
) -> None:
    """Rows of a ``topic`` column go to a limited topic and to an unlimited one: the
    task meets the limited topic, reads its limit and sizes its batches for it before
    handing a row over, so every row that fits is delivered."""
    small, other = _topic(kafka, "limit-col"), _topic(kafka, "nolimit-col", None)
    df = spark.createDataFrame(_topic_rows(small, other, BIG_AT), SCHEMA)
    report = write_kafka(
        df, bootstrap_servers=kafka.bootstrap_servers, order_by=["i"], on_error="report"
    )
    print(report)
    assert (report.rows, report.delivered, report.failed) == (N, N - 1, 1), report
    assert f"at most {LIMIT} bytes (its max.message.bytes)" in report.errors[0]
    _read_each_once(read_back, kafka, small, [i for i in range(0, N, 2) if i != BIG_AT])
    _read_each_once(read_back, kafka, other, list(range(1, N, 2)))


def test_exactly_once_with_a_topic_column_sizes_the_topics_named(spark, kafka, read_back) -> None:
    """Under exactly_once a unit's producer cannot change inside its transaction:
    ``topics=`` names the topics the column holds, their limits are read on the driver
    and every unit's batches sized for them."""
    small, other = _topic(kafka, "limit-eo"), _topic(kafka, "nolimit-eo", None)
    df = spark.createDataFrame(_topic_rows(small, other, None), SCHEMA)
    report = write_kafka(
        df,
        bootstrap_servers=kafka.bootstrap_servers,
        preset="exactly_once",
        topics=[small, other],
        order_by=["i"],
    )
    print(report)
    assert f"Batch.size lowered to {LIMIT} for topic {small}" in report.guarantees
    assert (report.rows, report.delivered, report.failed) == (N, N, 0), report
    _read_each_once(read_back, kafka, small, list(range(0, N, 2)))
    _read_each_once(read_back, kafka, other, list(range(1, N, 2)))


def test_exactly_once_with_a_topic_column_names_the_option_that_sizes_it(spark, kafka) -> None:
    """Without ``topics=`` the limited topic's batches are refused whole: the report
    says which option sizes them (not the Producer's, which a Spark user never makes)."""
    small = _topic(kafka, "limit-eo", partitions=1)
    df = spark.createDataFrame(_topic_rows(small, small, None), SCHEMA)
    report = write_kafka(
        df, bootstrap_servers=kafka.bootstrap_servers, preset="exactly_once", on_error="report"
    )
    print(report)
    assert report.failed > 0 and report.delivered == 0, report
    hint = f"write_kafka(..., topics=[{small!r}])"
    assert any(hint in e for e in report.errors), report.errors
    assert not any("Producer(topics=" in e for e in report.errors), report.errors


def test_topics_applies_to_a_topic_column(spark) -> None:
    df = spark.createDataFrame([("a", "v")], "key string, value string")
    with pytest.raises(ValueError, match="topics= names the topics of a 'topic' column"):
        write_kafka(df, "t", bootstrap_servers="127.0.0.1:1", topics=["t"])


def test_a_topic_met_later_is_named_with_its_own_limit(spark, kafka, read_back) -> None:
    """The first Arrow batches hold only the 4096-byte topic (the task sizes for it);
    a later one meets a topic whose limit (8192) is above that size: nothing to resize,
    but a row too large for that topic alone is refused naming 8192, its own limit."""
    small, mid = _topic(kafka, "limit-a", partitions=1), _topic(kafka, "limit-b", 8192, 1)
    rows = [(i, "k", small if i < N // 2 else mid, v) for i, _k, _t, v in _topic_rows("", "", None)]
    big = N // 2 + N // 4  # in `mid`, ~9 KB: above 8192 and alone in its batch
    rows[big] = (
        big,
        "k",
        mid,
        json.dumps({"i": big, "pad": random.Random(1).randbytes(4500).hex()}),
    )
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "100")
    try:
        report = write_kafka(
            spark.createDataFrame(rows, SCHEMA),
            bootstrap_servers=kafka.bootstrap_servers,
            order_by=["i"],
            on_error="report",
        )
    finally:
        spark.conf.set(key, before)
    print(report)
    assert (report.rows, report.delivered, report.failed) == (N, N - 1, 1), report
    assert f"{mid} row" in report.errors[0], report.errors
    assert "at most 8192 bytes (its max.message.bytes)" in report.errors[0], report.errors
    _read_each_once(read_back, kafka, small, list(range(N // 2)))
    _read_each_once(read_back, kafka, mid, [i for i in range(N // 2, N) if i != big])
