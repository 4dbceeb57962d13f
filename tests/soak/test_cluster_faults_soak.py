"""Soak: the leader of a partition SIGKILLed at 20 random points per front door
(per-message futures, produce_batch, `cykafka import` plain / --preset ordered /
--exactly-once, Spark write_kafka exactly_once), on three Apache Kafka nodes.  Each
point is a fresh topic, read back by a plain read_committed consumer: every row once,
per key in order.  ``CYKAFKA_FAULT_SEED`` replays the points; ``CYKAFKA_FAULT_POINTS``
sets how many (default 20)."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from support.cluster_faults import (
    IMPORTS,
    check_once_in_order,
    import_killing_leader,
    new_topic,
    produce_killing_leader,
    rows_file,
    seeded,
    summary_count,
    write_killing_leader,
)

POINTS = int(os.environ.get("CYKAFKA_FAULT_POINTS", "20"))
N = 3000


def _heal(cluster) -> None:
    for node in cluster.nodes:
        if not node.is_running():
            node.start()
    cluster.wait_ready(nodes=[n.node_id for n in cluster.nodes])


def _tally(label: str, kills: Counter) -> None:
    print(f"SOAK {label}: {POINTS} points, {dict(kills)}")


@pytest.mark.slow
@pytest.mark.parametrize("batch", [False, True], ids=["futures", "produce_batch"])
def test_soak_leader_killed_while_the_producer_writes(kafka3, read_back, batch) -> None:
    rng, kills = seeded("soak producer"), Counter()
    for i in range(POINTS):
        t = new_topic(kafka3, f"soak-producer-{i}")
        at = rng.randrange(N // 10, N * 9 // 10)
        futs = produce_killing_leader(kafka3, t, N, at, batch)
        if batch:
            assert all(f.result(0).ok for f in futs)
        else:
            assert all(f.exception(0) is None for f in futs)
        check_once_in_order(read_back(kafka3.bootstrap_servers, t, expected=N), N, f"#{i} at {at}")
        kills["killed"] += 1
        kills["rows_read_back_once"] += N
        _heal(kafka3)
    _tally("futures" if not batch else "produce_batch", kills)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["plain", "preset-ordered", "exactly-once"])
def test_soak_leader_killed_while_an_import_runs(kafka3, read_back, tmp_path, how) -> None:
    rng, kills = seeded(f"soak import {how}"), Counter()
    path = rows_file(tmp_path / "rows.txt", N)
    for i in range(POINTS):
        t = new_topic(kafka3, f"soak-import-{how}-{i}")
        at = rng.randrange(N // 10, N * 7 // 10)
        rc, out, killed = import_killing_leader(kafka3, path, t, N, at, *IMPORTS[how])
        assert rc == 0 and summary_count(out, "delivered") == N, out
        kills["killed" if killed is not None else "ended_before_kill"] += 1
        _heal(kafka3)
        check_once_in_order(read_back(kafka3.bootstrap_servers, t, expected=N), N, f"#{i} at {at}")
        kills["rows_read_back_once"] += N
    _tally(f"import {how}", kills)
    assert kills["killed"] >= POINTS * 3 // 4, kills


@pytest.mark.slow
def test_soak_leader_killed_during_a_spark_exactly_once_write(kafka3, read_back) -> None:
    rng, kills, n = seeded("soak spark"), Counter(), 20_000
    fault = {"tasks": [0, 1], "when": "before_commit", "sleep": 3}
    for i in range(POINTS):
        t = new_topic(kafka3, f"soak-spark-{i}", partitions=2)
        at = rng.randrange(n // 10, n * 9 // 10)
        rc, reports, err, killed = write_killing_leader(kafka3, t, n, at, "exactly_once", fault)
        assert rc == 0, err[-5000:]
        (report,) = reports
        assert report["ok"] and report["delivered"] == n, report
        kills["killed" if killed is not None else "ended_before_kill"] += 1
        _heal(kafka3)
        got = read_back(kafka3.bootstrap_servers, t, expected=n)
        assert sorted(int(r.value) for rs in got.values() for r in rs) == list(range(n))
        kills["rows_read_back_once"] += n
    _tally("spark exactly_once", kills)
    assert kills["killed"] >= POINTS * 3 // 4, kills
