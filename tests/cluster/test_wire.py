"""cykafka's own Kafka-protocol reader (``cykafka.cluster.wire``) against Apache Kafka:
what a broker answers with an error code is cykafka's error, by its name."""

from __future__ import annotations

import uuid

import pytest

import cykafka
from cykafka.cluster.wire import fetch_batches, leaders


def test_a_fetch_from_a_follower_is_cykafkas_error_by_name(kafka3) -> None:
    """A node that follows the partition answers NOT_LEADER_OR_FOLLOWER: asked again for
    a while (leadership may be settling), then raised as cykafka's retriable error, so
    that the callers' one ``except KafkaError`` sees it, as for librdkafka's errors."""
    topic = kafka3.create_topic(f"wire-{uuid.uuid4().hex[:8]}", partitions=1)
    (leader_host, leader_port) = leaders(kafka3.bootstrap_servers, topic, 30.0)[0]
    follower = next(p for n in kafka3.nodes if (p := n.ports["PLAINTEXT"]) != leader_port)
    with pytest.raises(cykafka.KafkaError) as caught:
        list(fetch_batches(leader_host, follower, topic, 0, timeout=1.0))
    assert caught.value.name == "NOT_LEADER_FOR_PARTITION"
    assert caught.value.retriable
    assert f"{topic} [0]" in str(caught.value)
