"""write_kafka on every deployment (classic local, standalone cluster, Spark Connect)
against the real broker: every mode written and read back, and what a user sees when
the executors cannot import cykafka (classic sessions: their Python is set per job)."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import cykafka
from cykafka.partitioning import partition_for
from cykafka.spark import KafkaWriteError, write_kafka
from cykafka.testing import read_raw_log


def test_nulls_bytes_and_the_report_dataframe(spark, broker, topic, read_back) -> None:
    name = topic(partitions=3)
    rows = [
        ("k1", b"v1"),
        (None, b"null key"),
        ("k2", None),
        ("k3", b""),
        ("ünï", bytes(range(256))),
    ]
    rows += [(f"k{i % 7}", f"value-{i}".encode()) for i in range(200)]
    df = spark.createDataFrame(rows, "key string, value binary").repartition(3)
    report = write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, preset=None)
    assert report.ok and report.rows == report.delivered == len(rows) and not report.ordered
    recs = read_back(broker.bootstrap_servers, name, expected=len(rows))
    got = sorted(((r.key, r.value) for rs in recs.values() for r in rs), key=repr)
    want = sorted(((k.encode() if k is not None else None, v) for k, v in rows), key=repr)
    assert got == want
    for p, rs in recs.items():
        if rs:
            assert report.offsets[(name, p)] == (rs[0].offset, rs[-1].offset)
    tdf = report.to_df(spark)
    assert tdf.agg(F.sum("delivered")).first()[0] == len(rows)
    assert sorted(r["task"] for r in tdf.collect()) == sorted(t.task for t in report.tasks)


def test_headers_explicit_partitions_and_ordered_keys(spark, broker, topic, read_back) -> None:
    bs = broker.bootstrap_servers
    name = topic(partitions=3)
    rows = [
        (
            f"k{i % 5}",
            f"v{i}",
            i % 3 if i % 4 else None,
            [("i", str(i).encode())] if i % 2 else None,
        )
        for i in range(120)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value string, partition int, headers array<struct<key:string,value:binary>>",
    ).orderBy(F.expr("cast(substr(value, 2) as int)"))
    report = write_kafka(df, name, bootstrap_servers=bs)  # preset "ordered"
    assert report.ok and report.ordered and report.delivered == 120
    recs = read_back(bs, name, expected=120)
    for p, rs in recs.items():
        seqs = [int(r.value[1:]) for r in rs]
        assert seqs == sorted(seqs)  # one writer per partition, in the DataFrame's order
        for r in rs:
            i = int(r.value[1:])
            assert r.key == f"k{i % 5}".encode()
            assert r.headers == ([("i", str(i).encode())] if i % 2 else [])
            if i % 4:
                assert p == i % 3
            else:  # no explicit partition: wherever the key goes
                assert p == partition_for("consistent_random", r.key, 3)


def test_exactly_once_each_row_committed_once(spark, broker, topic, committed) -> None:
    bs = broker.bootstrap_servers
    name = topic(partitions=2)
    rows = [(f"k{i % 9}", f"v{i}") for i in range(150)]
    df = spark.createDataFrame(rows, "key string, value string").repartition(3)
    report = write_kafka(df, name, bootstrap_servers=bs, preset="exactly_once")
    assert report.ok and report.delivered == 150
    ids = [t.transactional_id for t in report.tasks]
    assert all(ids) and len(set(ids)) == len(ids) == 2
    view = committed(bs, name, 2)
    raw = read_raw_log(bs, name, 2)  # the markers, written by then (view waited for them)
    assert sorted(r.value for r in view) == sorted(v.encode() for _, v in rows)
    assert {r.control for r in raw if r.control} == {"COMMIT"}
    for r in view:
        assert r.partition == zlib.crc32(r.key) % 2


def test_spark_kafka_option_names_go_through_the_config_layer(spark, broker, topic) -> None:
    """Options moved over from df.write.format("kafka") as they are: kafka.-prefixed
    names, Java ones translated (max.request.size -> message.max.bytes)."""
    bs = broker.bootstrap_servers
    name = topic(partitions=1)
    rows = [(f"k{i}", "x" * (5000 if i == 3 else 10)) for i in range(20)]
    df = spark.createDataFrame(rows, "key string, value string").coalesce(1)
    options = {
        "kafka.bootstrap.servers": bs,
        "kafka.acks": "all",
        "kafka.linger.ms": "5",
        "kafka.max.request.size": "2000",
    }
    with pytest.raises(KafkaWriteError, match=r"1 of 20 rows not delivered.*MSG_SIZE_TOO_LARGE"):
        write_kafka(df, name, preset=None, **options)
    ok = write_kafka(df.where("length(value) < 100"), name, preset=None, **options)
    assert ok.ok and ok.delivered == 19
    with pytest.raises(ValueError, match=r"kafka.key.serializer: not supported"):
        write_kafka(df, name, **options, **{"kafka.key.serializer": "x"})


def test_the_deployment_is_what_it_says(spark, deployment) -> None:
    is_connect = type(spark).__module__.startswith("pyspark.sql.connect")
    assert is_connect == (deployment == "connect")
    if deployment == "standalone":
        assert spark.sparkContext.master.startswith("spark://127.0.0.1:")


@pytest.fixture
def python_without_cykafka(tmp_path: Path) -> str:
    """An interpreter like the executors' but without cykafka: this venv's Python with
    its site-packages minus cykafka (what a cluster node without the package has)."""
    site = Path(cykafka.__file__).resolve().parent.parent
    lib = tmp_path / "site"
    lib.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith("cykafka"):
            (lib / entry.name).symlink_to(entry)
    exe = tmp_path / "python"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH={lib} exec {sys.executable} -S "$@"\n')
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.parametrize("spark", ["local", "standalone"], indirect=True)
def test_executors_without_cykafka_fail_with_one_clear_message(
    spark, broker, topic, python_without_cykafka
) -> None:
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    sc = spark.sparkContext
    kept = sc.pythonExec
    sc.pythonExec = python_without_cykafka  # what spark.pyspark.python sets for executors
    try:
        with pytest.raises(KafkaWriteError) as info:
            write_kafka(df, topic(), bootstrap_servers=broker.bootstrap_servers)
    finally:
        sc.pythonExec = kept
    msg = str(info.value)
    assert "\n" not in msg and "No module named 'cykafka'" in msg
    assert msg.startswith("cannot import cykafka in the executors' Python (")
    assert "--archives" in msg and "spark.pyspark.python" in msg
    assert info.value.__suppress_context__
