"""Spark ``write_kafka`` on three Apache Kafka nodes (replication factor 3,
``min.insync.replicas=2``) with the faults a real cluster has: the leader of a
partition SIGKILLed at a random point of an ``exactly_once`` write, and acks=1 with the
leader killed (what is lost, and that the report said it could be).  The driver runs
in its own process (tests/spark/eo_job.py), as in test_exactly_once.py; the topic is
read back by a plain ``read_committed`` consumer."""

from __future__ import annotations

from support.cluster_faults import new_topic, seeded, write_killing_leader


def test_leader_killed_during_an_exactly_once_write(kafka3, read_back) -> None:
    """Each task sends its rows, then waits 3 s before its commit (a fault hook): the
    leader of partition 0 is SIGKILLed once a random share of the rows is in the
    topic, with the transactions open.  The job succeeds, its report counts every row
    delivered once, and a read_committed reader finds each row once."""
    n = 20_000
    t = new_topic(kafka3, "spark-leader-killed", partitions=2)
    at = seeded("leader kill").randrange(n // 10, n * 9 // 10)
    fault = {"tasks": [0, 1], "when": "before_commit", "sleep": 3}
    rc, reports, err, killed = write_killing_leader(kafka3, t, n, at, "exactly_once", fault)
    assert killed is not None, f"the job ended before {at} records were written: {err[-3000:]}"
    assert rc == 0, err[-5000:]
    (report,) = reports
    assert report["ok"] and report["rows"] == report["delivered"] == n and report["failed"] == 0
    got = read_back(kafka3.bootstrap_servers, t, expected=n)
    values = sorted(int(r.value) for rs in got.values() for r in rs)
    print(f"spark exactly_once, leader of p0 killed at {at}: read_committed got {len(values)} "
          f"records, {len(set(values))} distinct of {n}; report: {report['text']}")  # fmt: skip
    assert values == list(range(n))


def test_acks_1_with_the_leader_killed_the_report_said_loss_was_possible(kafka3, read_back) -> None:
    """preset throughput (acks=1, no idempotence), the leader of partition 0 SIGKILLed
    mid-write: what a read_committed reader finds is measured against the report, and
    the report said that messages can be lost silently."""
    n = 20_000
    t = new_topic(kafka3, "spark-acks1", partitions=2)
    at = seeded("leader kill").randrange(n // 10, n // 2)
    rc, reports, err, killed = write_killing_leader(kafka3, t, n, at, "throughput")
    (report,) = reports or [None]
    assert report is not None, err[-5000:]
    assert "messages can be lost silently" in report["text"], report["text"]
    got = read_back(kafka3.bootstrap_servers, t)
    values = [int(r.value) for rs in got.values() for r in rs]
    print(
        f"spark acks=1, leader killed at {at} (killed: {killed}, exit {rc}): report rows "
        f"{report['rows']}, delivered {report['delivered']}, failed {report['failed']}; "
        f"read_committed got {len(values)} records, {len(set(values))} distinct, "
        f"{n - len(set(values))} rows absent, {len(values) - len(set(values))} copies"
    )
    assert set(values) <= set(range(n))
