"""exactly_once under the faults Spark clusters produce, injected for real: a Python
worker killed right after its Kafka commit (Spark retries the task), a micro-batch
that failed half-way re-run from its checkpoint with more or fewer cores, and a slow
task copied by speculation on a two-host standalone cluster.

Each scenario runs a Spark driver in its own process (tests/spark/eo_job.py), so that
it can pick its master (``local[N,M]``: M attempts per task) and settings; faults reach
its Python workers through tests/spark/faults/sitecustomize.py.  What counts is the
committed view of the topic (what ``read_committed`` readers see on Kafka; Tansu does
not hide aborted records itself, so it is computed from the raw log) and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import pytest

from cykafka.testing import committed_view, read_raw_log
from support.consume import committed_records

# Each runs a Spark driver of its own (tests/spark/eo_job.py): it needs Spark.
pytestmark = pytest.mark.spark

# What PySpark leaves in os.environ once this process was a Spark Connect client (the
# connect deployment's fixture restores it; a subprocess must not inherit it either).
CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")

HERE = Path(__file__).resolve().parent


def run_job(args: dict[str, Any], fault: Optional[dict[str, Any]] = None) -> tuple[int, Any, str]:
    """(exit status, the reports, stderr) of one eo_job.py run."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    for k in CONNECT_ENV:  # the job's driver picks its own master, never a Connect server
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE / "faults"), *filter(None, [env.get("PYTHONPATH")])]
    )
    env.pop("CYKAFKA_FAULT", None)
    if fault is not None:
        env["CYKAFKA_FAULT"] = json.dumps(fault)
    p = subprocess.run(
        [sys.executable, str(HERE / "eo_job.py"), json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("REPORTS ")]
    reports = json.loads(lines[-1][len("REPORTS ") :]) if lines else None
    return p.returncode, reports, p.stderr


def committed(bs: str, topic: str, partitions: int) -> list[Any]:
    return committed_records(bs, topic, partitions)


def counts(view: list[Any], want: list[str]) -> dict[str, int]:
    """Committed records, duplicates (records beyond the first of a value) and losses
    (wanted values not committed), for the closing note of each scenario."""
    seen = Counter(r.value.decode() for r in view)
    return {
        "rows": len(want),
        "committed": len(view),
        "duplicates": sum(c - 1 for c in seen.values()),
        "lost": sum(1 for v in want if v not in seen),
    }


def check_offsets(report: dict[str, Any], topic: str, view: list[Any]) -> None:
    """The report's offset ranges are those of the committed records, per partition."""
    span: dict[int, tuple[int, int]] = {}
    for r in view:
        lo, hi = span.get(r.partition, (r.offset, r.offset))
        span[r.partition] = (min(lo, r.offset), max(hi, r.offset))
    got = {p: (lo, hi) for t, p, lo, hi in report["offsets"] if t == topic}
    assert got == span


def write_once(
    bs: str, name: str, n: int, job: dict[str, Any], fault: dict[str, Any], label: str
) -> tuple[dict[str, Any], list[Any]]:
    """Run a batch write_kafka of ``n`` keyed rows with ``fault``; check that each row is
    committed once; return its report and the committed view."""
    rc, reports, err = run_job(
        {**job, "mode": "batch", "bootstrap": bs, "topic": name, "rows": n, "keys": 97}, fault
    )
    assert rc == 0, err
    view = committed(bs, name, 2)
    c = counts(view, [str(i) for i in range(n)])
    print(f"{label}:", c)
    assert c == {"rows": n, "committed": n, "duplicates": 0, "lost": 0}
    (report,) = reports
    assert report["ok"] and report["rows"] == report["delivered"] == n and report["failed"] == 0
    check_offsets(report, name, view)
    return report, view


CLUSTER_CONF = {"spark.executor.memory": "512m", "spark.cores.max": "2"}


@pytest.mark.parametrize("where", ["local", "standalone"])
def test_worker_killed_right_after_its_commit(broker, topic, request, where) -> None:
    """Both tasks' Python workers die (os._exit(137)) right after their Kafka commit in
    attempt 0; Spark retries them (``local[2,3]``: 3 attempts; a standalone cluster of
    two workers: spark.task.maxFailures=4); each row is committed once and the report
    counts each once."""
    bs = broker.bootstrap_servers
    name, n = topic(partitions=2), 10_000
    job: dict[str, Any] = {"master": "local[2,3]"}
    if where == "standalone":
        job = {"master": request.getfixturevalue("two_host_cluster"), "conf": CLUSTER_CONF,
               "executors": 2}  # fmt: skip
    fault = {"tasks": [0, 1], "when": "after_commit", "exit": True}
    report, _ = write_once(bs, name, n, job, fault, f"worker killed after commit ({where})")
    assert sorted(t["task"] for t in report["tasks"]) == [0, 1]  # one result per unit
    assert all(t["attempt"] >= 1 for t in report["tasks"])  # the retries reported


@pytest.mark.parametrize(
    ("keyed", "where", "cores"),
    [
        (False, "local", 3),
        (False, "local", 1),
        (True, "local", 3),
        (True, "local", 1),
        (False, "standalone", 1),
        (True, "standalone", 1),
    ],
    ids=[
        "keyless-more-cores",
        "keyless-fewer-cores",
        "keyed-more-cores",
        "keyed-fewer-cores",
        "standalone-keyless-fewer-cores",
        "standalone-keyed-fewer-cores",
    ],
)
def test_failed_micro_batch_rerun_at_another_parallelism(
    broker, topic, tmp_path, request, keyed, where, cores
) -> None:
    """foreachBatch on 2 cores with no task retries (local[2]; the two-worker
    standalone cluster with spark.task.maxFailures=1): in micro-batch 0 the worker of
    Spark partition 1 dies before its commit, after the others committed, so the query
    fails; it is restarted from its checkpoint on ``cores`` cores (local[cores]; the
    cluster with spark.cores.max=cores).  The file source splits a batch by the cores
    (small open cost: splits follow defaultParallelism), so the re-run holds other rows
    in each Spark partition than the first run did."""
    bs = broker.bootstrap_servers
    name, n = topic(partitions=4), 12_000
    src, chk = tmp_path / "in", tmp_path / "chk"
    src.mkdir()
    values = [f"v{i}" for i in range(n)]
    (src / "part-0.csv").write_text(
        "".join((f"k{i % 53},{v}\n" if keyed else f"{v}\n") for i, v in enumerate(values))
    )
    job = {
        "mode": "stream", "bootstrap": bs, "topic": name, "source": str(src),
        "checkpoint": str(chk), "query": f"q-{name}", "keyed": keyed,
        "conf": {"spark.sql.files.openCostInBytes": "1024"},
    }  # fmt: skip
    if not keyed:
        job["options"] = {"key": None}
    first_run, re_run = {**job, "master": "local[2]"}, {**job, "master": f"local[{cores}]"}
    if where == "standalone":
        url = request.getfixturevalue("two_host_cluster")
        conf = {**job["conf"], **CLUSTER_CONF}
        first_run = {**job, "master": url, "executors": 2,
                     "conf": {**conf, "spark.task.maxFailures": "1"}}  # fmt: skip
        re_run = {**job, "master": url, "executors": cores,
                  "conf": {**conf, "spark.cores.max": str(cores)}}  # fmt: skip
    marks = tmp_path / "marks"
    marks.mkdir()
    # Task 1 dies before its commit, once another task has committed (then 3 s more).
    fault = {"tasks": [1], "when": "before_commit", "sleep": 3, "exit": True}
    rc, first, err = run_job(first_run, fault={**fault, "after_commits": str(marks)})
    assert rc == 3, err  # the micro-batch failed
    # The dead worker left its transaction open: until the re-run fences it (or
    # transaction.timeout.ms passes) it holds the last stable offset of every partition
    # it wrote, so a read_committed consumer sees only what lies before its first record
    # (on a loaded machine, nothing).  What the first run committed is read from the log
    # with the markers applied; the re-run's outcome is read by a read_committed consumer.
    before = counts(committed_view(read_raw_log(bs, name, 4)), values)
    assert 0 < before["committed"] < n, before  # some of it was committed
    rc, again, err = run_job(re_run)
    assert rc == 0, err
    view = committed(bs, name, 4)
    c = counts(view, values)
    print(f"re-run keyed={keyed} {where} 2 -> {cores} cores: first run {before}, after {c}")
    assert c == {"rows": n, "committed": n, "duplicates": 0, "lost": 0}
    (report,) = again
    assert report["batch_id"] == 0 and report["ok"]
    assert report["rows"] == report["delivered"] == n
    assert 0 < report["skipped"] < n  # what the first run committed is not written again
    check_offsets(report, name, view)


@pytest.mark.parametrize("when", ["after_commit", "before_commit"])
def test_speculative_copy_of_a_slow_task(broker, topic, two_host_cluster, when) -> None:
    """A standalone cluster of two workers on two hosts, spark.speculation=true: the
    task writing Kafka partition 0 stays busy after its commit (or before it, its rows
    sent); Spark starts a copy of it on the other host, which finishes first (finding
    the unit committed, or fencing the original and committing itself) and Spark
    kills the original."""
    bs = broker.bootstrap_servers
    name, n = topic(partitions=2), 10_000
    conf = {
        **CLUSTER_CONF,
        "spark.speculation": "true",
        "spark.speculation.interval": "200ms",
        "spark.speculation.multiplier": "1.5",
        "spark.speculation.quantile": "0.5",
        "spark.speculation.minTaskRuntime": "500ms",
    }
    job = {"master": two_host_cluster, "conf": conf, "executors": 2}
    fault = {"tasks": [0], "when": when, "sleep": 40}
    report, _ = write_once(bs, name, n, job, fault, f"speculative copy ({when})")
    tasks = {t["task"]: t for t in report["tasks"]}
    # The result is a later attempt's (the copy's, or a retry of it on a loaded
    # machine), never the original's.
    assert sorted(tasks) == [0, 1] and tasks[0]["attempt"] >= 1


@pytest.mark.parametrize("keys", [None, 5])
def test_empty_dataframe_is_ok_with_no_rows(broker, topic, keys) -> None:
    bs = broker.bootstrap_servers
    name = topic(partitions=2)
    job = {"mode": "batch", "master": "local[2]", "bootstrap": bs, "topic": name, "rows": 10}
    rc, reports, err = run_job({**job, "keys": keys, "empty": True})
    assert rc == 0, err
    (report,) = reports
    assert report["ok"], report["text"]
    assert report["rows"] == report["delivered"] == report["failed"] == 0
    assert committed(bs, name, 2) == []


def test_new_checkpoint_under_the_same_query_name(broker, topic, tmp_path) -> None:
    """A streaming query restarted with a new checkpoint but the same ``query=`` name:
    its batch ids start again at 0, with other rows.  Those rows are written, or the
    query fails saying why; never reported delivered while skipped."""
    bs = broker.bootstrap_servers
    name = topic(partitions=2)
    query = f"q-{name}"
    rows = [f"v{i}" for i in range(120)]

    def run(part: int, chk: str) -> tuple[int, Any, str]:
        src = tmp_path / f"in-{part}"
        src.mkdir()
        for f in range(2):  # 30 rows a file, both in one micro-batch
            lo = part * 60 + f * 30
            (src / f"part-{f}.csv").write_text(
                "".join(f"k{i % 6},{rows[i]}\n" for i in range(lo, lo + 30))
            )
        job = {"mode": "stream", "master": "local[2]", "bootstrap": bs, "topic": name}
        job.update(source=str(src), checkpoint=str(tmp_path / chk), query=query, keyed=True)
        return run_job(job)

    rc, reports, err = run(0, "chk-1")
    assert rc == 0, err
    rc, reports, err = run(1, "chk-2")  # batch 0 again, under the same name
    values = Counter(r.value.decode() for r in committed(bs, name, 2))
    c = counts(committed(bs, name, 2), rows)
    print("new checkpoint, same query name:", c, "exit", rc)
    assert c["duplicates"] == 0
    claimed = sum(r["delivered"] for r in reports or [] if r["ok"])
    written = sum(1 for v in rows[60:] if values[v])
    assert claimed <= written, (reports, err[-2000:])  # nothing claimed that is not there
    if rc != 0:  # refused: the error says why and what to do
        assert "query" in err and "checkpoint" in err, err[-2000:]
    else:
        assert written == 60
