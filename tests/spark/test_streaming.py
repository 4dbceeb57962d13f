"""kafka_batch_writer in Structured Streaming's foreachBatch (file source), on every
deployment: a micro-batch that Spark runs again after it was committed is not written
twice under exactly_once, and is under an at-least-once preset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cykafka.spark import WriteReport, kafka_batch_writer
from support.consume import committed_records
from support.streaming import run_available_now


def _run_once(spark: Any, src: Path, chk: Path, writer: Any) -> None:
    run_available_now(
        spark.readStream.schema("key string, value string").csv(str(src)), writer, chk
    )


def _forget_commit(chk: Path, batch_id: int) -> None:
    """What a crash after the sink wrote batch_id but before Spark's commit log
    recorded it leaves behind: Spark runs that batch again on restart."""
    (chk / "commits" / str(batch_id)).unlink()
    for crc in (chk / "commits").glob(f".{batch_id}.crc"):
        crc.unlink()


@pytest.mark.parametrize("preset", ["exactly_once", "ordered"])
def test_a_rerun_committed_batch(spark, deployment, broker, topic, tmp_path, preset) -> None:
    bs = broker.bootstrap_servers
    name = topic(partitions=2)
    src, chk = tmp_path / "in", tmp_path / "chk"
    src.mkdir()
    rows = [(f"k{i % 6}", f"v{i}") for i in range(120)]

    def add_files(first: int) -> None:  # 30 rows a file; one micro-batch per run
        for part in range(first, first + 2):
            (src / f"part-{part}.csv").write_text(
                "".join(f"{k},{v}\n" for k, v in rows[part * 30 : (part + 1) * 30])
            )

    reports: list[WriteReport] = []
    query = f"q-{name}"
    writer = kafka_batch_writer(
        name,
        bootstrap_servers=bs,
        preset=preset,
        query=query,
        on_batch=None if deployment == "connect" else reports.append,
    )
    add_files(0)
    _run_once(spark, src, chk, writer)  # batch 0: rows 0..59
    add_files(2)
    _run_once(spark, src, chk, writer)  # batch 1: rows 60..119
    _forget_commit(chk, 1)
    _run_once(spark, src, chk, writer)  # Spark runs batch 1 again

    view = committed_records(bs, name, 2)
    values = sorted(r.value.decode() for r in view)
    if preset == "exactly_once":
        assert values == sorted(v for _, v in rows)  # each row once
        progress = committed_records(bs, f"{name}.cykafka-progress", 1)
        assert sorted(r.key for r in progress) == sorted(
            f"{query}/{t}".encode() for t in (0, 1) for _batch in (0, 1)
        )
    else:  # at-least-once per micro-batch: the re-run batch is written again
        assert values == sorted([v for _, v in rows] + [v for _, v in rows[60:]])
    if reports:  # classic sessions run foreachBatch in this process
        assert [r.batch_id for r in reports] == [0, 1, 1]
        assert all(r.ok and r.rows == 60 for r in reports)
        assert [r.skipped for r in reports] == [0, 0, 60 if preset == "exactly_once" else 0]


def test_exactly_once_needs_a_query_name() -> None:
    with pytest.raises(ValueError, match=r"query='<stable name>'"):
        kafka_batch_writer("t", bootstrap_servers="x:9092", preset="exactly_once")


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"on_error": "skip"}, "on_error must be 'raise' or 'report'"),
        ({"preset": "no_such_preset"}, "no_such_preset"),
        ({"value_format": "xml", "schema_registry": "mock://x"}, "is not a registry format"),
        ({"value_format": "avro"}, "need schema_registry"),
    ],
)
def test_bad_arguments_fail_when_the_writer_is_made(bad, match) -> None:
    """Checked once, before the query starts: not at its first micro-batch."""
    with pytest.raises(ValueError, match=match):
        kafka_batch_writer("t", bootstrap_servers="x:9092", **bad)
