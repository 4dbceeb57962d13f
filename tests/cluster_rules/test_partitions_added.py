"""Partitions added to a topic while a producer or an import writes keyed rows, on
Apache Kafka (AdminClient ``create_partitions``).  librdkafka re-reads a topic's
metadata every ``topic.metadata.refresh.interval.ms`` (default 300000: these tests set
500 ms so that it sees the change at once) and from then on hashes keys over the new
count.  With ``keys.partition.count=first`` (the default of the ordered, strict_ordered
and exactly_once presets) each key stays on the partition it started on, read back
with a plain ``read_committed`` consumer; the import's summary names the change."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

import cykafka
from support.cli import child_env, import_command
from support.cluster_faults import Watermarks, finish, summary_count, wait_until
from support.cluster_rules import add_partitions, keyed_rows, keys_split, librdkafka_partitions

KEYS = 500
#: librdkafka re-reads metadata this often here (its default is 5 minutes).
REFRESH = {"topic.metadata.refresh.interval.ms": "500"}


@pytest.mark.parametrize("how", ["produce", "produce_batch"])
def test_keys_stay_on_their_partition_when_partitions_are_added(kafka, read_back, how) -> None:
    topic = kafka.create_topic(f"partitions-added-{how}", partitions=3)
    stats: list[str] = []
    seen = threading.Event()

    def on_stats(js: str) -> None:
        stats.append(js)
        if librdkafka_partitions(js, topic) == 6:
            seen.set()

    keys = [f"key-{i}".encode() for i in range(KEYS)]
    sent = 0
    with cykafka.Producer(
        {**kafka.client_config(), **REFRESH, "statistics.interval.ms": "200"},
        preset="ordered",
        stats_cb=on_stats,
    ) as p:

        def one_round() -> None:
            nonlocal sent
            if how == "produce":
                futs = [p.produce(topic, b"%d" % sent, key=k) for k in keys]
                p.flush()
                assert all(f.exception(0) is None for f in futs)
            else:
                values = [b"%d" % sent] * KEYS
                assert p.produce_batch(topic, values, keys=keys).result(60).ok
            sent += KEYS

        one_round()
        add_partitions(kafka, topic, 6)
        # Rounds until librdkafka itself knows the 6 partitions, then two more.
        while not seen.is_set():
            one_round()
            seen.wait(0.5)
        one_round()
        # (looked up by name: what the split below shows is the finding)
        said = getattr(p, "partition_count_changes", dict)
        # Until cykafka's own metadata reads see it too (cached for a second).
        deadline = time.monotonic() + 60
        while not said() and time.monotonic() < deadline:
            one_round()
        changes = said()
    split = keys_split(read_back(kafka.bootstrap_servers, topic, expected=sent))
    assert not split, f"{len(split)} of {KEYS} keys split over two partitions"
    assert changes == {topic: (3, 6)}


def test_an_ordered_import_keeps_keys_and_says_partitions_were_added(
    kafka, read_back, tmp_path
) -> None:
    topic = kafka.create_topic("partitions-added-import", partitions=3)
    n = 30_000
    rows = keyed_rows(tmp_path / "rows.jsonl", n, keys=KEYS)
    cmd = import_command(
        kafka.bootstrap_servers,
        str(rows),
        "-t",
        topic,
        "--format",
        "jsonl",
        "--key-field",
        "k",
        "--preset",
        "ordered",
        "--rate",
        "3000",
        "-X",
        "topic.metadata.refresh.interval.ms=500",
    )
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    marks = Watermarks(kafka.bootstrap_servers, topic)
    assert wait_until(lambda: marks.total() >= n // 5, 120, "a fifth of the rows", proc)
    add_partitions(kafka, topic, 6)
    rc, out = finish(proc)
    assert rc == 0, out
    assert summary_count(out, "delivered") == n, out
    split = keys_split(read_back(kafka.bootstrap_servers, topic, expected=n))
    assert not split, f"{len(split)} of {KEYS} keys split over two partitions\n{out}"
    assert f"topic {topic!r} went from 3 to 6 partitions during the import" in out, out
