"""The import's topic deleted while an import writes to it, on Apache Kafka: on
brokers with ``auto.create.topics.enable=false`` (the topic is gone) and with it
``true`` (Kafka's default: the producer's next metadata request makes the topic
again, empty).  librdkafka alone waits out ``message.timeout.ms`` (measured: 213 s,
then every row "not sent" as ``_UNKNOWN_PARTITION``, the deletion never named).  The
import stops within seconds naming the deletion, its counts add up, the rows the
deleted topic had acknowledged are never reported delivered, and the command it
prints imports everything again, read back with a plain ``read_committed`` consumer."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator

import pytest

from cykafka.launchers.kafka import KafkaCluster
from support.cli import child_env, import_command
from support.cluster_faults import Watermarks, summary_count, wait_until
from support.cluster_rules import keyed_rows

pytestmark = pytest.mark.broker

N = 200_000


@pytest.fixture(scope="module")
def no_auto_create() -> Iterator[KafkaCluster]:
    """One Apache Kafka node that never makes a topic because a client asked for it."""
    with KafkaCluster(nodes=1, broker_config={"auto.create.topics.enable": "false"}) as c:
        yield c


def _redo(out: str) -> list[str]:
    """The command the summary prints to import everything again, as a runnable argv."""
    line = next(x for x in out.splitlines() if x.strip().startswith("cykafka import"))
    return [sys.executable, "-m", "cykafka.cli", *shlex.split(line)[1:]]


@pytest.mark.parametrize("auto_create", [False, True], ids=["auto-create-off", "auto-create-on"])
def test_a_topic_deleted_mid_import_stops_it_at_once(
    request, kafka, read_back, tmp_path, auto_create
) -> None:
    cluster = kafka if auto_create else request.getfixturevalue("no_auto_create")
    topic = cluster.create_topic(f"deleted-mid-import-{auto_create}", partitions=3)
    rows = keyed_rows(tmp_path / "rows.jsonl", N, keys=100)
    cmd = import_command(
        cluster.bootstrap_servers, str(rows), "-t", topic, "--format", "jsonl",
        "--key-field", "k", "--rate", "20000",
    )  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    marks = Watermarks(cluster.bootstrap_servers, topic)
    assert wait_until(lambda: marks.total() >= N // 10, 120, "a tenth of the rows", proc)
    cluster.delete_topic(topic)
    # message.timeout.ms is 300 s: an import that waits it out is still running here.
    out, err = proc.communicate(timeout=120)
    out += err
    assert proc.returncode == 1, out
    assert f"topic {topic!r} was deleted during the import" in out, out
    # With auto-create on, the watch may see the topic gone or already made again.
    made_again = "made again" in out
    assert auto_create or not made_again, out
    read = summary_count(out, "rows read")
    assert summary_count(out, "delivered") == 0, out  # the topic took them with it
    assert summary_count(out, "not sent") + summary_count(out, "unknown") == read, out
    # Made again: some rows may be in the new topic (unknown); gone: not sent.
    assert summary_count(out, "unknown" if made_again else "not sent") >= N // 10, out
    assert "lost        " in out and "--skip-rows" not in out.split("to finish")[1], out
    redo = _redo(out)
    assert "--partitions" in redo, redo
    if topic in cluster.list_topics():  # as the summary says: one made again goes first
        cluster.delete_topic(topic)
    done = subprocess.run(redo, capture_output=True, text=True, env=child_env(), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    got = read_back(cluster.bootstrap_servers, topic, expected=N)
    assert sorted(json.loads(r.value)["i"] for rs in got.values() for r in rs) == list(range(N))
