"""cykafka.spark.write_kafka with a real local Spark session against the real test broker."""

from __future__ import annotations

import json
import zlib

import pytest
from pyspark.sql import functions as F

from cykafka.partitioning import partition_for
from cykafka.spark import KafkaWriteError, WriteReport, write_kafka

# Classic local session only: these tests look at what only it exposes (sparkContext,
# RDD placement, worker reuse); tests/spark/test_deployments.py runs on every deployment.
pytestmark = pytest.mark.parametrize("spark", ["local"], indirect=True)


def _all(recs: dict[int, list]) -> list:
    return [r for rs in recs.values() for r in rs]


def _check_offsets(report: WriteReport, topic: str, recs: dict[int, list]) -> None:
    for p, rs in recs.items():
        if rs:
            assert report.offsets[(topic, p)] == (rs[0].offset, rs[-1].offset)


def test_nulls_and_bytes_round_trip(spark, broker, topic, read_back) -> None:
    name = topic(partitions=3)
    rows = [
        ("k1", b"v1"),
        (None, b"null key"),
        ("k2", None),  # null value (a tombstone)
        ("k3", b""),
        ("ünï", bytes(range(256))),
    ] + [(f"k{i % 7}", f"value-{i}".encode()) for i in range(500)]
    df = spark.createDataFrame(rows, "key string, value binary").repartition(3)
    report = write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, preset=None)
    assert report.ok and report.rows == report.delivered == len(rows) and report.failed == 0
    recs = read_back(broker.bootstrap_servers, name, expected=len(rows))
    got = sorted(((r.key, r.value) for r in _all(recs)), key=repr)
    want = sorted(((k.encode() if k is not None else None, v) for k, v in rows), key=repr)
    assert got == want
    _check_offsets(report, name, recs)
    tdf = report.to_df(spark)
    assert tdf.agg(F.sum("delivered")).first()[0] == len(rows)


def test_headers_and_explicit_partitions(spark, broker, topic, read_back) -> None:
    name = topic(partitions=3)
    rows = [
        (f"k{i}", f"v{i}", i % 3, [("source", b"spark"), ("i", str(i).encode())] if i % 2 else None)
        for i in range(300)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    report = write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers)
    assert report.ok and report.delivered == 300
    recs = read_back(broker.bootstrap_servers, name, expected=300)
    for p, rs in recs.items():
        for r in rs:
            i = int(r.value[1:])
            assert p == i % 3 and r.key == f"k{i}".encode()
            if i % 2:
                assert r.headers == [("source", b"spark"), ("i", str(i).encode())]
            else:
                assert r.headers == []
    # The ordered preset with a partition column: one task owns each Kafka partition.
    owners = [(tp, t.task) for t in report.tasks for tp in t.offsets]
    assert len({tp for tp, _ in owners}) == len(owners) == 3


def test_ordered_preset_keeps_each_keys_order(spark, broker, topic, read_back) -> None:
    name = topic(partitions=3)
    n = 6000
    # Scrambled over 4 partitions, then put in order by seq: that order must reach Kafka.
    df = (
        spark.range(n)
        .select(
            F.col("id").alias("seq"),
            F.concat(F.lit("user-"), (F.col("id") % 23).cast("string")).alias("key"),
        )
        .repartition(4)
        .orderBy("seq")
        .select("key", F.col("seq").cast("string").alias("value"))
    )
    report = write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, preset="ordered")
    assert report.ok and report.ordered and report.delivered == n
    recs = read_back(broker.bootstrap_servers, name, expected=n)
    for p, rs in recs.items():
        seqs = [int(r.value) for r in rs]
        # One writer per partition and the DataFrame's order: the whole partition is sorted.
        assert seqs == sorted(seqs)
        for r in rs:
            assert zlib.crc32(r.key) % 3 == p == partition_for("consistent_random", r.key, 3)
    # repartition=False trusts the DataFrame's own partitioning: no shuffle.
    other = topic(partitions=3)
    keyed = df.repartition(2, "key").sortWithinPartitions(F.col("value").cast("long"))
    plain = write_kafka(keyed, other, bootstrap_servers=broker.bootstrap_servers, repartition=False)
    assert plain.ok and not plain.ordered and len(plain.tasks) == 2
    for rs in read_back(broker.bootstrap_servers, other, expected=n).values():
        by_key: dict[bytes, list[int]] = {}
        for r in rs:
            by_key.setdefault(r.key, []).append(int(r.value))
        assert all(v == sorted(v) for v in by_key.values())
    writers: dict[tuple[str, int], list[int]] = {}
    for t in report.tasks:
        for tp in t.offsets:
            writers.setdefault(tp, []).append(t.task)
    assert all(len(ts) == 1 for ts in writers.values()) and len(writers) == 3
    _check_offsets(report, name, recs)


def test_workers_keep_producers_between_tasks_only_after_success(
    spark, broker, topic, read_back
) -> None:
    df = spark.range(4000, numPartitions=4).select(
        F.concat(F.lit("k"), (F.col("id") % 7).cast("string")).alias("key"),
        F.col("id").cast("string").alias("value"),
    )
    # `ordered` (the default) runs one task per Kafka partition: 4 tasks on local[2]'s
    # two reused Python workers, so producers are reused, not made one per task.
    first = write_kafka(df, topic(partitions=4), bootstrap_servers=broker.bootstrap_servers)
    again = topic(partitions=4)
    second = write_kafka(df, again, bootstrap_servers=broker.bootstrap_servers)
    assert first.ok and second.ok and second.delivered == 4000 and len(first.tasks) == 4
    used = {t.producer for t in first.tasks}
    assert len(used) < len(first.tasks) and {t.producer for t in second.tasks} & used
    assert sum(len(v) for v in read_back(broker.bootstrap_servers, again, expected=4000).values())
    # Another config (here linger.ms) never gets a kept producer.
    third = write_kafka(
        df, topic(partitions=4), bootstrap_servers=broker.bootstrap_servers, linger_ms=7
    )
    assert third.ok and not {t.producer for t in third.tasks} & used


def test_java_compatible_partitioner_and_row_json(spark, broker, topic, read_back) -> None:
    name = topic(partitions=4)
    rows = [(f"id-{i}", i, None if i % 5 == 0 else f'note "{i}"', i * 0.5) for i in range(400)]
    df = spark.createDataFrame(rows, "user string, n int, note string, x double").orderBy("n")
    report = write_kafka(
        df,
        name,
        bootstrap_servers=broker.bootstrap_servers,
        preset="ordered+java_compatible",
        key="user",
        value=None,
        linger_ms=1,
    )
    assert report.ok and report.delivered == 400
    recs = read_back(broker.bootstrap_servers, name, expected=400)
    for p, rs in recs.items():
        ns = []
        for r in rs:
            row = json.loads(r.value)
            assert set(row) == {"user", "n", "note", "x"}
            i = row["n"]
            assert row == {"user": f"id-{i}", "n": i, "note": rows[i][2], "x": i * 0.5}
            assert partition_for("murmur2_random", r.key, 4) == p
            ns.append(i)
        assert ns == sorted(ns)


def test_topic_column_routes_rows(spark, broker, topic, read_back) -> None:
    a, b = topic(partitions=2), topic(partitions=1)
    rows = [(a if i % 3 else b, f"k{i % 4}", f"v{i}") for i in range(90)]
    df = spark.createDataFrame(rows, "topic string, key string, value string")
    report = write_kafka(df, bootstrap_servers=broker.bootstrap_servers)
    assert report.ok and report.delivered == 90 and report.ordered
    got_a = read_back(broker.bootstrap_servers, a, expected=60)
    got_b = read_back(broker.bootstrap_servers, b, expected=30)
    assert sorted(int(r.value[1:]) for r in _all(got_b)) == [i for i in range(90) if i % 3 == 0]
    for recs in (got_a, got_b):  # per-key order survives the (topic, key) grouping
        by_key: dict[bytes, list[int]] = {}
        for r in _all(recs):
            by_key.setdefault(r.key, []).append(int(r.value[1:]))
        assert all(v == sorted(v) for v in by_key.values())
    assert {t for t, _ in report.offsets} == {a, b}


def test_rows_with_a_null_topic_are_reported_not_dropped(spark, broker, topic, read_back) -> None:
    a = topic(partitions=1)
    rows = [(a if i % 5 else None, f"k{i}", f"v{i}") for i in range(20)]
    df = spark.createDataFrame(rows, "topic string, key string, value string")
    report = write_kafka(df, bootstrap_servers=broker.bootstrap_servers, on_error="report")
    assert (report.delivered, report.failed) == (16, 4)
    assert any("4 rows have a null topic" in e for e in report.errors)
    assert len(_all(read_back(broker.bootstrap_servers, a, expected=16))) == 16


def test_undeliverable_row_fails_the_job_or_is_reported(spark, broker, topic, read_back) -> None:
    name = topic(partitions=1)
    rows = [(f"k{i}", "x" * (5000 if i == 7 else 10)) for i in range(50)]
    df = spark.createDataFrame(rows, "key string, value string").coalesce(1)
    with pytest.raises(KafkaWriteError, match=r"1 of 50 rows not delivered.*MSG_SIZE_TOO_LARGE"):
        write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, message_max_bytes=2000)
    report = write_kafka(
        df,
        name,
        bootstrap_servers=broker.bootstrap_servers,
        on_error="report",
        **{"message.max.bytes": 2000},
    )
    assert not report.ok and report.failed == 1 and report.delivered == 49
    assert "MSG_SIZE_TOO_LARGE" in report.errors[0] and "row 7" in report.errors[0]
    tdf = report.to_df(spark).first()
    assert tdf["failed"] == 1 and tdf["delivered"] == 49
    # The raising run already wrote its 49 good rows: failing the job does not unwrite them.
    read_back(broker.bootstrap_servers, name, expected=98)
    # A producer that saw a failure is closed, never kept for the worker's next task.
    fine = df.where("value != '" + "x" * 5000 + "'")
    after = write_kafka(
        fine, name, bootstrap_servers=broker.bootstrap_servers, **{"message.max.bytes": 2000}
    )
    assert after.ok and after.tasks[0].producer != report.tasks[0].producer


def test_exactly_once_one_transaction_per_task(spark, broker, topic, read_back) -> None:
    name = topic(partitions=2)
    df = spark.createDataFrame(
        [(f"k{i % 5}", f"v{i}") for i in range(200)], "key string, value string"
    )
    report = write_kafka(
        df, name, bootstrap_servers=broker.bootstrap_servers, preset="exactly_once"
    )
    assert report.ok and report.delivered == 200
    ids = [t.transactional_id for t in report.tasks]
    assert all(ids) and len(set(ids)) == len(ids)
    assert all(spark.sparkContext.applicationId in i for i in ids)
    read_back(broker.bootstrap_servers, name, expected=200, isolation_level="read_committed")


def test_the_driver_resolves_the_config_once(spark, broker, topic, monkeypatch) -> None:
    """The driver decides a write once: one resolution (presets, Java names, defaults)
    of its producer config, from which it explains the guarantees and picks the
    partitioner (an exactly_once write resolved twice). The spy runs the real resolver."""
    import cykafka.config

    real, calls = cykafka.config.resolve, []

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(cykafka.config, "resolve", counted)
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    for preset in ("ordered", "exactly_once"):
        calls.clear()
        report = write_kafka(df, topic(), bootstrap_servers=broker.bootstrap_servers, preset=preset)
        assert report.ok and len(calls) == 1, (preset, calls)


def test_a_task_builds_its_producer_from_the_drivers_resolution(
    spark, broker, topic, monkeypatch, read_back
) -> None:
    """What an executor's task runs (write_task, here in this process) builds its
    producer from the resolution the plan carries: it never resolves the config again,
    so the producer is the one the driver explained.  Java names and a preset included."""
    import pyarrow as pa

    import cykafka.producer
    from cykafka.config import ConfigWarning
    from cykafka.spark import WriteOptions
    from cykafka.spark.executor import write_task
    from cykafka.spark.plan import make_plan

    name = topic()
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    options = WriteOptions(
        name,
        broker.bootstrap_servers,
        "ordered",
        repartition=False,
        producer_config={"linger_ms": 5, "batch.size": 65536},
    )
    plan = make_plan(df, options)

    def refuse(*args, **kwargs):
        raise AssertionError(f"resolved again: {args}")

    monkeypatch.setattr(cykafka.producer, "resolve", refuse)
    batch = pa.RecordBatch.from_pydict({"key": ["a", "b"], "value": ["1", "2"]})
    # The driver's notes on the config travel with it: the task's producer warns them.
    with pytest.warns(ConfigWarning, match="batch.size=65536 kept"):
        rows = [r for b in write_task(plan.to_json(), iter([batch])) for r in b.to_pylist()]
    (row,) = rows
    report = json.loads(next(iter(row.values())))
    assert report["delivered"] == 2 and report["failed"] == 0, report
    got = read_back(broker.bootstrap_servers, name, expected=2)
    assert sorted(r.value for r in got[0]) == [b"1", b"2"]


def _eo_rows(bad_partition: int) -> tuple[list[tuple[str, str]], str]:
    """200 keyed rows over 10 keys and one 5000-byte value on a key of ``bad_partition``
    (of 2, librdkafka's CRC32 partitioner): the task writing that partition fails."""
    keys = [f"k{i}" for i in range(10)]
    bad_key = next(k for k in keys if zlib.crc32(k.encode()) % 2 == bad_partition)
    rows = [(keys[i % 10], f"v{i}") for i in range(200)]
    at = next(i for i, (k, _) in enumerate(rows) if k == bad_key and i > 50)
    rows[at] = (bad_key, "x" * 5000)
    return rows, bad_key


def test_exactly_once_failed_task_aborts_all_its_rows(spark, broker, topic, committed) -> None:
    """A task with one undeliverable row aborts its whole transaction: with
    on_error="report" all its rows are reported failed (none committed) while the other
    task's rows are committed exactly once; with on_error="raise" the job fails."""
    bs = broker.bootstrap_servers
    rows, bad_key = _eo_rows(bad_partition=1)
    in_p1 = [r for r in rows if zlib.crc32(r[0].encode()) % 2 == 1]
    in_p0 = [r for r in rows if zlib.crc32(r[0].encode()) % 2 == 0]
    df = spark.createDataFrame(rows, "key string, value string").repartition(3)
    name = topic(partitions=2)
    report = write_kafka(
        df,
        name,
        bootstrap_servers=bs,
        preset="exactly_once",
        on_error="report",
        message_max_bytes=2000,
    )
    # exactly_once is an ordering preset: Spark task k writes Kafka partition k.
    tasks = {t.task: t for t in report.tasks}
    assert sorted(tasks) == [0, 1]
    assert (tasks[0].rows, tasks[0].delivered, tasks[0].failed) == (len(in_p0), len(in_p0), 0)
    assert (tasks[1].rows, tasks[1].delivered, tasks[1].failed) == (len(in_p1), 0, len(in_p1))
    assert tasks[1].errors[0].startswith("transaction aborted: none of the task's")
    assert any("MSG_SIZE_TOO_LARGE" in e for e in tasks[1].errors)
    assert tasks[1].offsets == {} and set(report.offsets) == {(name, 0)}
    assert not report.ok and report.rows == 200
    assert (report.delivered, report.failed) == (len(in_p0), len(in_p1))
    shown = {r["task"]: (r["delivered"], r["failed"]) for r in report.to_df(spark).collect()}
    assert shown == {0: (len(in_p0), 0), 1: (0, len(in_p1))}
    from cykafka.testing import read_raw_log

    view = committed(bs, name, 2)
    raw = read_raw_log(bs, name, 2)  # the markers, written by then (view waited for them)
    assert sorted(r.value for r in view) == sorted(v.encode() for _, v in in_p0)  # once each
    assert {r.partition for r in view} == {0}
    assert "ABORT" in [r.control for r in raw if r.partition == 1]

    other = topic(partitions=2)
    with pytest.raises(
        KafkaWriteError,
        match=r"task 1 .*rows not delivered \(0 delivered, "
        r"transaction aborted\).*MSG_SIZE_TOO_LARGE",
    ):
        write_kafka(df, other, bootstrap_servers=bs, preset="exactly_once", message_max_bytes=2000)
    view = committed(bs, other, 2)
    assert not [r for r in view if r.partition == 1]
    assert len({r.value for r in view}) == len(view)  # task 0, if it committed: once


def test_bad_arguments_name_the_culprit(spark, broker, topic) -> None:
    name = topic()
    bs = broker.bootstrap_servers
    df = spark.createDataFrame([(1, "a")], "key int, value string")
    with pytest.raises(TypeError, match=r"key='key': column is int"):
        write_kafka(df, name, bootstrap_servers=bs)
    with pytest.raises(ValueError, match=r"value='nope': no such column"):
        write_kafka(df, name, bootstrap_servers=bs, key=None, value="nope")
    with pytest.raises(ValueError, match=r"topic is required"):
        write_kafka(df, bootstrap_servers=bs, key=None)
    with pytest.raises(ValueError, match=r"preset"):
        write_kafka(df, name, bootstrap_servers=bs, key=None, preset="nope")
    with pytest.raises(ValueError, match=r"repartition must be"):
        write_kafka(df, name, bootstrap_servers=bs, key=None, repartition="yes")
    with pytest.raises(ValueError, match=r"on_error"):
        write_kafka(df, name, bootstrap_servers=bs, key=None, on_error="ignore")


def test_routing_matches_sparks_hash_partitioning(spark) -> None:
    from cykafka.spark.routing import spark_hash_long, surrogates

    ids = [0, 1, 2, 41, 2**31, 2**40 + 7, -1, -(2**63)]
    got = spark.createDataFrame([(i,) for i in ids], "id long").select(F.hash("id")).collect()
    assert [r[0] for r in got] == [spark_hash_long(i) for i in ids]
    for n in (1, 3, 7):
        route = surrogates(n)
        df = spark.createDataFrame([(r,) for r in route], "r long").repartition(n, "r")
        placed = df.rdd.mapPartitionsWithIndex(lambda i, it: [(i, row.r) for row in it]).collect()
        assert sorted(placed) == sorted(enumerate(route))


@pytest.mark.parametrize("writers", [1, 2])
def test_ordered_with_fewer_writers_keeps_each_partition_to_one_task(
    spark, broker, topic, read_back, writers
) -> None:
    name = topic(partitions=4)
    n = 3000
    df = (
        spark.range(n, numPartitions=3)
        .select(
            F.concat(F.lit("u"), (F.col("id") % 17).cast("string")).alias("key"),
            F.col("id").cast("string").alias("value"),
        )
        .orderBy(F.col("value").cast("long"))
    )
    report = write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, writers=writers)
    assert report.ok and report.ordered and report.delivered == n
    assert len([t for t in report.tasks if t.rows]) == writers
    owners: dict[int, set[int]] = {}
    for t in report.tasks:
        for _, p in t.offsets:
            owners.setdefault(p, set()).add(t.task)
    assert sorted(owners) == [0, 1, 2, 3] and all(len(o) == 1 for o in owners.values())
    for p, rs in read_back(broker.bootstrap_servers, name, expected=n).items():
        seqs = [int(r.value) for r in rs]
        assert seqs == sorted(seqs)  # one writer per partition, the DataFrame's order
        assert all(partition_for("consistent_random", r.key, 4) == p for r in rs)
    with pytest.raises(ValueError, match=r"writers must be a positive int"):
        write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, writers=0)
    with pytest.raises(ValueError, match=r"writers= applies to ordered writes"):
        write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, preset=None, writers=2)


@pytest.mark.parametrize("preset", ["ordered", "exactly_once"])
def test_one_writing_task_needs_no_shuffle(spark, broker, topic, preset, committed) -> None:
    """A one-partition topic is written by one task: the DataFrame's partitions read one
    after another (coalesce), no shuffle and no sort back into order, and every row in
    the DataFrame's order."""
    from cykafka.spark.routing import ordered

    bs = broker.bootstrap_servers
    name, n = topic(partitions=1), 3000
    df = spark.range(n, numPartitions=3).select(
        F.concat(F.lit("user-"), (F.col("id") % 29).cast("string")).alias("key"),
        F.col("id").cast("string").alias("value"),
    )
    units = 1 if preset == "exactly_once" else None
    routed = ordered(df, "key", None, None, 1, "consistent_random", None, units)
    physical = routed._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in physical and "Sort" not in physical, physical
    report = write_kafka(df, name, bootstrap_servers=bs, preset=preset)
    assert report.ok and report.ordered and report.delivered == n
    assert len([t for t in report.tasks if t.rows]) == 1
    assert [int(r.value) for r in committed(bs, name, 1)] == list(range(n))


@pytest.mark.parametrize("preset", ["ordered", "exactly_once"])
def test_order_by_defines_each_partitions_order(spark, broker, topic, preset, committed) -> None:
    """order_by: each Kafka partition gets its rows in the order of a column, from a
    DataFrame in no order at all (rows scrambled by a shuffle on a random column)."""
    bs = broker.bootstrap_servers
    name, n = topic(partitions=3), 6000
    df = (
        spark.range(n, numPartitions=4)
        .select(
            F.col("id").alias("seq"),
            F.concat(F.lit("user-"), (F.col("id") % 29).cast("string")).alias("key"),
            F.col("id").cast("string").alias("value"),
        )
        .orderBy(F.rand(7))
    )
    report = write_kafka(df, name, bootstrap_servers=bs, preset=preset, order_by="seq")
    assert report.ok and report.delivered == n
    view = committed(bs, name, 3)
    assert sorted(int(r.value) for r in view) == list(range(n))
    for p in range(3):
        seqs = [int(r.value) for r in view if r.partition == p]
        assert seqs and seqs == sorted(seqs)
    with pytest.raises(ValueError, match=r"order_by: 'nope' is not a column"):
        write_kafka(df, name, bootstrap_servers=bs, preset=preset, order_by="nope")
    with pytest.raises(ValueError, match=r"order_by= applies to ordered writes"):
        write_kafka(df, name, bootstrap_servers=bs, preset=None, order_by="seq")


def test_exactly_once_job_id_rerun_skips_and_changed_input_is_refused(
    spark, broker, topic, committed
) -> None:
    """The same job_id again (a re-run after a driver crash): every unit is skipped and
    the report gives the committed offsets; the same job_id over changed rows: the
    units whose row count changed are refused, loudly, and nothing more is committed."""
    bs = broker.bootstrap_servers
    name, n = topic(partitions=2), 1000
    job = f"job-{name}"
    df = spark.range(n, numPartitions=3).select(
        F.concat(F.lit("k"), (F.col("id") % 11).cast("string")).alias("key"),
        F.col("id").cast("string").alias("value"),
    )
    first = write_kafka(df, name, bootstrap_servers=bs, preset="exactly_once", job_id=job)
    assert first.ok and first.delivered == n and first.skipped == 0 and first.units == 2
    again = write_kafka(df.repartition(5), name, bootstrap_servers=bs, preset="exactly_once",
                        job_id=job)  # fmt: skip
    assert again.ok and again.delivered == again.skipped == n
    assert again.offsets == first.offsets and all(t.skipped for t in again.tasks)
    changed = df.union(spark.createDataFrame([("k3", "extra")], "key string, value string"))
    with pytest.raises(KafkaWriteError, match=r"input changed.*by an earlier"):
        write_kafka(changed, name, bootstrap_servers=bs, preset="exactly_once", job_id=job)
    report = write_kafka(
        changed, name, bootstrap_servers=bs, preset="exactly_once", job_id=job, on_error="report"
    )
    assert not report.ok and report.failed > 0 and "the input changed" in report.errors[0]
    view = committed(bs, name, 2)
    assert sorted(int(r.value) for r in view) == list(range(n))
    with pytest.raises(ValueError, match=r"job_id= and progress_topic= apply to"):
        write_kafka(df, name, bootstrap_servers=bs, preset="ordered", job_id=job)


@pytest.mark.parametrize("keyed", [True, False])
def test_exactly_once_with_a_topic_column(spark, broker, topic, keyed, committed) -> None:
    """A topic column: the units are spark.sql.shuffle.partitions (or writers=) hash
    groups of (topic, key), or of the whole row without a key; each row is committed
    once in its topic, and the units are recorded in the default progress topic."""
    bs = broker.bootstrap_servers
    a, b = topic(partitions=2), topic(partitions=1)
    rows = [(a if i % 3 else b, f"k{i % 5}" if keyed else None, f"v{i}") for i in range(900)]
    df = spark.createDataFrame(rows, "topic string, key string, value string")
    report = write_kafka(df, bootstrap_servers=bs, preset="exactly_once")
    assert report.ok and report.delivered == 900 and report.units == 4  # shuffle partitions
    assert sorted(t.task for t in report.tasks) == [0, 1, 2, 3]
    for name, parts, want in ((a, 2, 600), (b, 1, 300)):
        view = committed(bs, name, parts)
        got = [r.value.decode() for r in view]
        assert len(got) == len(set(got)) == want
        assert sorted(got) == sorted(v for t, _k, v in rows if t == name)
    three = write_kafka(df, bootstrap_servers=bs, preset="exactly_once", writers=3)
    assert three.ok and three.units == 3 and len(three.tasks) == 3
    progress = committed(bs, "cykafka-spark-progress", 1)
    recs = [json.loads(r.value) for r in progress]
    for rep, n in ((report, 4), (three, 3)):
        # each unit's transactional id ends with "-<job>-<unit>"; its record names the job
        mine = [r for r in recs if rep.tasks[0].transactional_id.endswith(f"-{r['job']}-0")]
        assert sorted(r["unit"] for r in mine) == list(range(n))
        assert sum(r["rows"] for r in mine) == 900 and {r["units"] for r in mine} == {n}
