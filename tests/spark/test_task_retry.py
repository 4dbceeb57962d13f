"""What ``write_kafka``'s report says when Spark retries a task, under each preset: the
Python worker of each task is killed for real (``os._exit(137)``, through
tests/spark/faults/sitecustomize.py) once half its rows are in the topic, and Spark
runs the task again (``local[2,3]``: 3 attempts per task).  The topic is read back and
compared with the report: the records it holds, the rows written more than once, and
the offsets."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

import pytest
from test_exactly_once import check_offsets, run_job

from cykafka.testing import committed_view, read_raw_log

# Each runs a Spark driver of its own (tests/spark/eo_job.py): it needs Spark.
pytestmark = pytest.mark.spark

ROWS = 20_000


@pytest.mark.parametrize("preset", [None, "ordered", "exactly_once"])
def test_worker_killed_mid_task_report_counts_every_attempt(
    broker, topic, preset: Optional[str]
) -> None:
    bs = broker.bootstrap_servers
    name = topic(partitions=2)
    job: dict[str, Any] = {
        "mode": "batch", "master": "local[2,3]", "bootstrap": bs, "topic": name,
        "rows": ROWS, "keys": 97, "preset": preset,
        # batches of 1,000 rows, so that a task dies with part of its rows written
        "conf": {"spark.sql.execution.arrow.maxRecordsPerBatch": "1000"},
    }  # fmt: skip
    # Each of the two tasks holds about 10,000 rows; its first attempt dies after 5,000.
    fault = {"tasks": [0, 1], "when": "after_rows", "rows": ROWS // 4, "exit": True}
    rc, reports, err = run_job(job, fault)
    assert rc == 0, err
    (report,) = reports
    raw = read_raw_log(bs, name, 2)
    data = [r for r in raw if r.control is None]
    view = committed_view(raw) if preset == "exactly_once" else data
    seen = Counter(r.value for r in view)
    again = sum(c - 1 for c in seen.values())  # records beyond the first of a row
    print(
        f"preset={preset}: {len(data):,} records written, {len(view):,} in the topic "
        f"for readers, {again:,} of them again; report: delivered {report['delivered']:,}, "
        f"duplicates {report['duplicates']}, ok {report['ok']}; {report['text']}"
    )
    assert len(seen) == ROWS  # nothing lost
    assert all(t["attempt"] >= 1 for t in report["tasks"])  # both tasks were retried
    assert report["rows"] == report["delivered"] == ROWS and report["failed"] == 0
    assert report["retried"] == 2
    # The report owns what the attempts wrote: the topic holds what it says ...
    assert report["delivered"] + report["duplicates"] == len(view)
    assert report["duplicates"] == again
    # ... and its offset ranges are those of every record a reader sees.
    check_offsets(report, name, view)
    if preset == "exactly_once":
        assert again == 0 and report["ok"]
    else:
        assert again > 0 and not report["ok"]
        assert again <= report["duplicates_max"]
        assert f"{again:,} records" in report["text"] and "exactly_once" in report["text"]
    if preset == "ordered":
        # What docs/spark.md says ordered keeps under a retry: each partition holds the
        # failed attempt's prefix, then the retry's rows, all of them, in order (the
        # DataFrame's: ids rise); so the order goes back exactly once per partition.
        for p in (0, 1):
            ids = [int(r.value) for r in view if r.partition == p]
            drops = [i for i in range(1, len(ids)) if ids[i] < ids[i - 1]]
            assert len(drops) == 1, drops
            last_run = ids[drops[0] :]
            assert last_run == sorted(set(ids))
