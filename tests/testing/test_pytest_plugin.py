"""The pytest plugin users opt into (``-p cykafka.testing.pytest_plugin``): a user's test
file run through it by pytest's ``pytester`` in a child pytest, against the real brokers
the fixtures start there."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from cykafka.launchers.process import tcp_open

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "cykafka.testing.pytest_plugin", "-p", "no:cacheprovider")
#: Where Kafka's jars were fetched once (pytester gives the child session a HOME of its
#: own, whose empty cache would fetch them again).
JARS_CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")

#: A user's test module: it produces with cykafka and reads back with a plain
#: read_committed consumer, on the session's Kafka and Tansu brokers, and records what
#: it saw in seen.json for the outer test to check.
USER_TESTS = """
import json
import os

import pytest
from confluent_kafka import Consumer, TopicPartition

import cykafka

SEEN = os.environ["SEEN_FILE"]


def note(**kw):
    seen = json.load(open(SEEN)) if os.path.exists(SEEN) else {}
    for key, value in kw.items():
        seen.setdefault(key, []).append(value)
    json.dump(seen, open(SEEN, "w"))


def read_committed(servers, topic, partitions, want):
    c = Consumer({"bootstrap.servers": servers, "group.id": "g",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    try:
        while len(got) < want:
            msg = c.poll(30)
            assert msg is not None, f"only {len(got)} of {want} records after 30 s"
            assert msg.error() is None, msg.error()
            got.append((msg.partition(), msg.value()))
    finally:
        c.close()
    return got


def produce(servers, topic, n):
    with cykafka.Producer({"bootstrap.servers": servers}, preset="ordered") as p:
        for i in range(n):
            p.produce(topic, f"{i}".encode(), key=f"k{i % 5}".encode())
        p.flush(30)


@pytest.mark.kafka_topic(partitions=3, config={"retention.ms": "3600000"})
def test_kafka(kafka_cluster, kafka_topic):
    md = kafka_cluster.admin.list_topics(kafka_topic, timeout=10).topics[kafka_topic]
    assert len(md.partitions) == 3
    produce(kafka_cluster.bootstrap_servers, kafka_topic, 30)
    got = read_committed(kafka_cluster.bootstrap_servers, kafka_topic, 3, 30)
    assert sorted(int(v) for _, v in got) == list(range(30))
    note(kafka=kafka_cluster.bootstrap_servers, topic=kafka_topic)


def test_another_topic_same_cluster(kafka_cluster, kafka_topic):
    md = kafka_cluster.admin.list_topics(kafka_topic, timeout=10).topics[kafka_topic]
    assert len(md.partitions) == 1
    note(kafka=kafka_cluster.bootstrap_servers, topic=kafka_topic)


def test_local(local_broker):
    topic = local_broker.create_topic("local-events", partitions=2)
    produce(local_broker.bootstrap_servers, topic, 10)
    got = read_committed(local_broker.bootstrap_servers, topic, 2, 10)
    assert sorted(int(v) for _, v in got) == list(range(10))
    note(tansu=local_broker.bootstrap_servers)
"""


def _port_open(servers: str) -> bool:
    host, port = servers.rsplit(",", 1)[-1].rsplit(":", 1)
    return tcp_open(host, int(port))


@pytest.mark.broker
def test_users_tests_run_on_the_plugins_brokers(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixtures give a user's tests a Kafka node with a fresh topic each (shaped by
    the marker) and the embedded broker; both are shared by the session and stopped with
    it."""
    seen_file = tmp_path / "seen.json"
    monkeypatch.setenv("SEEN_FILE", str(seen_file))
    # This suite keeps the embedded broker from starting in unmarked tests through this
    # variable; the child session is a user's, with the real binary.
    monkeypatch.delenv("CYKAFKA_TANSU_BIN", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", JARS_CACHE)
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess(*PLUGIN, "-v", timeout=600)
    result.assert_outcomes(passed=3)
    seen = json.loads(seen_file.read_text())
    assert len(set(seen["kafka"])) == 1, f"one Kafka node for the session: {seen}"
    assert len(set(seen["topic"])) == 2, f"a topic of its own for each test: {seen}"
    assert all(t.startswith("test_") for t in seen["topic"]), seen
    assert not _port_open(seen["kafka"][0]), "the session's Kafka node outlived the session"
    assert not _port_open(seen["tansu"][0]), "the session's Tansu outlived the session"


def test_plugin_is_inert_until_asked(pytester: pytest.Pytester) -> None:
    """Without ``-p`` nothing of it loads: the fixtures are unknown."""
    pytester.makepyfile(test_user="def test_it(kafka_cluster):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'kafka_cluster' not found*"])
    assert "cykafka" not in "\n".join(result.stdout.lines[:5])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("kafka_topic(3)", "takes keywords only"),
        ("kafka_topic(partition=3)", "has no*partition*; it takes partitions="),
    ],
)
def test_a_wrong_topic_marker_fails_before_any_broker_starts(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    pytester.makepyfile(
        test_user=textwrap.dedent(
            f"""
            import pytest

            @pytest.mark.{marker}
            def test_it(kafka_topic):
                pass
            """
        )
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_user.py::test_it: @pytest.mark.kafka_topic*{message}*"])
    assert "Kafka" not in result.stdout.str()
