"""The Apache Kafka launcher itself: nodes that die, pause and come back with their data,
leaders that move, and `cykafka broker --kafka`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

import cykafka
from cykafka.launchers.kafka import KafkaCluster, KafkaStartError, kafka_classpath

# The tests start their own Apache Kafka nodes (KafkaCluster) or `cykafka broker --kafka`.
pytestmark = pytest.mark.broker


def _produce(conf: dict, topic: str, n: int, start: int = 0) -> list[cykafka.DeliveryFuture]:
    with cykafka.Producer(conf, preset="ordered") as p:
        futs = [p.produce(topic, value=str(i).encode(), key=b"k") for i in range(start, start + n)]
        p.flush(60)
    return futs


def test_a_restarted_node_keeps_its_data(read_back) -> None:
    with KafkaCluster(nodes=1) as cluster:
        t = cluster.create_topic("kept", partitions=2)
        futs = _produce(cluster.client_config(), t, 100)
        assert [f.result().offset for f in futs] == list(range(100))
        cluster.node(1).restart(kill=True)  # a crash, not a clean shutdown
        got = read_back(cluster.bootstrap_servers, t, expected=100)
        assert sorted(int(r.value) for rs in got.values() for r in rs) == list(range(100))


def test_the_leader_killed_moves_to_a_replica_and_comes_back_in_sync(kafka3, read_back) -> None:
    t = kafka3.create_topic(f"failover-{uuid.uuid4().hex[:6]}", partitions=1)
    assert all(len(p.replicas) == 3 and len(p.isrs) == 3 for p in kafka3.partitions(t).values())
    first = _produce(kafka3.client_config(), t, 50)
    old = kafka3.leader(t, 0)
    kafka3.node(old).kill()
    kafka3.wait_for(lambda: kafka3.partitions(t)[0].leader not in (old, -1), 60, "a new leader")
    second = _produce(kafka3.client_config(), t, 50, start=50)
    assert [f.result().offset for f in first + second] == list(range(100))
    kafka3.node(old).start()
    kafka3.wait_for(lambda: old in kafka3.partitions(t)[0].isrs, 60, f"node {old} back in the ISR")
    kafka3.elect_preferred_leaders(t, [0])
    preferred = kafka3.partitions(t)[0].replicas[0]
    kafka3.wait_for(lambda: kafka3.leader(t, 0) == preferred, 30, "the preferred leader")
    got = read_back(kafka3.bootstrap_servers, t, expected=100)
    assert [int(r.value) for r in got[0]] == list(range(100))


def test_a_paused_follower_leaves_the_isr_and_returns(kafka3) -> None:
    t = kafka3.create_topic(f"pause-{uuid.uuid4().hex[:6]}", partitions=1)
    leader = kafka3.leader(t, 0)
    follower = next(r for r in kafka3.partitions(t)[0].replicas if r != leader)
    with cykafka.Producer(kafka3.client_config(), preset="ordered") as p:
        # A producer already running when the follower stops: its producer id comes
        # first. (One asked for while the paused node is the active controller waits
        # for a new controller: another fault than this test's.)
        p.produce(t, value=b"x").result(timeout=30)
        kafka3.node(follower).pause()
        # The follower fetches nothing while stopped: the leader drops it from the ISR
        # once replica.lag.time.max.ms passes with messages arriving.
        deadline = time.monotonic() + 60
        while follower in kafka3.partitions(t)[0].isrs:
            assert time.monotonic() < deadline, "the paused follower never left the ISR"
            p.produce(t, value=b"x").result(timeout=30)
            time.sleep(0.2)
    kafka3.node(follower).resume()
    kafka3.wait_for(lambda: follower in kafka3.partitions(t)[0].isrs, 60, "the ISR to heal")


def test_a_partition_reassigned_mid_stream_keeps_every_record(kafka3, read_back) -> None:
    t = kafka3.create_topic(f"moved-{uuid.uuid4().hex[:6]}", partitions=1)
    replicas = list(kafka3.partitions(t)[0].replicas)
    first = _produce(kafka3.client_config(), t, 30)
    kafka3.reassign(t, {0: replicas[1:] + replicas[:1]})
    kafka3.elect_preferred_leaders(t, [0])
    kafka3.wait_for(lambda: kafka3.leader(t, 0) == replicas[1], 30, "the new preferred leader")
    second = _produce(kafka3.client_config(), t, 30, start=30)
    assert [f.result().offset for f in first + second] == list(range(60))
    assert [int(r.value) for r in read_back(kafka3.bootstrap_servers, t, expected=60)[0]] == list(
        range(60)
    )


def test_a_start_that_fails_says_why_with_the_log(tmp_path) -> None:
    # A client port another socket holds: the node cannot bind it and exits during
    # start-up; the error says so and carries the node's log.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cluster = KafkaCluster(nodes=1, startup_timeout=60)
        cluster.nodes[0].ports["PLAINTEXT"] = taken.getsockname()[1]
        with pytest.raises(KafkaStartError, match=r"Kafka node 1 exited(.|\n)*last log lines"):
            with cluster:
                pass


def test_the_jar_cache_is_filled_once() -> None:
    first = kafka_classpath()
    assert first.endswith("/lib/*") and os.path.isfile(
        os.path.join(first[: -len("/lib/*")], ".complete")
    )
    assert kafka_classpath() == first


def test_cykafka_broker_kafka_serves_until_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cykafka.cli", "broker", "--kafka", "--topic", "ready"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Press Ctrl-C"):
                break
        head = "".join(lines)
        assert "Apache Kafka 4.4.0 (1 node, KRaft) listening on 127.0.0.1:" in head, head
        servers = next(ln.split("=", 1)[1].strip() for ln in lines if "bootstrap.servers=" in ln)
        with cykafka.Producer({"bootstrap.servers": servers}) as p:
            assert p.produce("ready", value=b"x").result(timeout=30).offset == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
