"""One rule for "make sure the topic exists" (cykafka.cluster.admin.ensure_topic) and for "does
it exist" (find_topic), against the real broker: Tansu auto-creates a topic that a
Metadata request names, so every question about a topic must not name it."""

from __future__ import annotations

import uuid
from typing import Callable

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from cykafka.broker import LocalBroker
from cykafka.cluster.admin import TopicMismatchError, ensure_topic, find_topic


def _admin(broker: LocalBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 3})


def _name(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex[:8]}"


def _policy(broker: LocalBroker, name: str) -> str:
    admin = _admin(broker)  # kept alive until the answer: its end cancels the request
    fut = admin.describe_configs([ConfigResource("topic", name)])
    return next(iter(fut.values())).result(10)["cleanup.policy"].value


def test_a_missing_topic_is_created_with_its_partitions_and_config(broker: LocalBroker) -> None:
    name = _name("made")
    assert ensure_topic(_admin(broker), name, 3, config={"cleanup.policy": "compact"}) is True
    t = find_topic(_admin(broker), name, 10)
    assert t is not None and sorted(t.partitions) == [0, 1, 2]
    assert all(p.leader >= 0 for p in t.partitions.values())
    assert _policy(broker, name) == "compact"


def test_an_existing_topic_is_kept(broker: LocalBroker, topic: Callable[..., str]) -> None:
    name = topic(2, config={"cleanup.policy": "compact"})
    admin = _admin(broker)
    assert ensure_topic(admin, name, 2, config={"cleanup.policy": "compact"}) is False
    # Not checked when asked not to: kept as it is, whatever was asked.
    assert ensure_topic(admin, name, 5, same_partitions=False) is False
    assert ensure_topic(admin, name, 5, check_existing=False) is False
    t = find_topic(admin, name, 10)
    assert t is not None and len(t.partitions) == 2
    assert _policy(broker, name) == "compact"


def test_a_partition_count_mismatch_names_the_topic(
    broker: LocalBroker, topic: Callable[..., str]
) -> None:
    name = topic(2)
    with pytest.raises(
        TopicMismatchError, match=rf"topic '{name}' exists with 2 partitions, not 4"
    ):
        ensure_topic(_admin(broker), name, 4)


def test_a_cleanup_policy_mismatch_names_the_topic(
    broker: LocalBroker, topic: Callable[..., str]
) -> None:
    name = topic(1)  # the broker's default: delete
    with pytest.raises(TopicMismatchError, match=rf"topic '{name}' .*cleanup.policy=delete"):
        ensure_topic(_admin(broker), name, 1, config={"cleanup.policy": "compact"})


def test_a_progress_topic_that_is_not_compacted_is_refused_by_name(
    broker: LocalBroker, topic: Callable[..., str]
) -> None:
    """Under cleanup.policy=delete, retention would drop a finished import's record and a
    rerun would send everything again: refused before anything is sent."""
    from cykafka.cluster.admin import ensure_progress_topic

    name = topic(1)
    with pytest.raises(RuntimeError, match=rf"progress topic '{name}'.*cleanup.policy"):
        ensure_progress_topic({"bootstrap.servers": broker.bootstrap_servers}, name)
    made = _name("progress")
    ensure_progress_topic({"bootstrap.servers": broker.bootstrap_servers}, made)
    ensure_progress_topic({"bootstrap.servers": broker.bootstrap_servers}, made)  # kept
    assert _policy(broker, made) == "compact"


def _records_in(servers: str, name: str) -> object:
    from cykafka.importer.topic_checks import records_in

    return records_in(servers, {}, name)


def _prepare_topic(servers: str, name: str) -> object:
    from cykafka.importer.topic_checks import TopicCheckError, prepare_topic

    with pytest.raises(TopicCheckError, match="does not exist"):
        prepare_topic(servers, {}, name)
    return None


def _partitions_of(servers: str, name: str) -> object:
    from cykafka.cluster.committed import partitions_of

    with pytest.raises(LookupError, match=name):
        partitions_of({"bootstrap.servers": servers}, name, 10)
    return None


def _read_raw_log(servers: str, name: str) -> object:
    from cykafka.testing import read_raw_log

    with pytest.raises(ValueError, match=name):
        read_raw_log(servers, name, 1, timeout=10)
    return None


def _partition_count(servers: str, name: str) -> object:
    from cykafka.spark.plan import partition_count

    with pytest.raises(ValueError, match=name):
        partition_count({"bootstrap.servers": servers}, name)
    return None


def _find_topic(servers: str, name: str) -> object:
    return find_topic(AdminClient({"bootstrap.servers": servers, "log_level": 3}), name, 10)


@pytest.mark.parametrize(
    "ask",
    [_find_topic, _records_in, _prepare_topic, _partitions_of, _read_raw_log, _partition_count],
    ids=lambda f: f.__name__.lstrip("_"),
)
def test_asking_about_a_topic_does_not_create_it(
    broker: LocalBroker, ask: Callable[[str, str], object]
) -> None:
    name = _name("ghost")
    assert ask(broker.bootstrap_servers, name) is None
    assert name not in broker.list_topics()


def test_the_import_cluster_check_says_the_partition_count(broker: LocalBroker, topic) -> None:
    """What the import sizes its producer's queue by: the count of a topic it found,
    or of the one it created."""
    from cykafka.importer.topic_checks import prepare_topic

    servers = broker.bootstrap_servers
    assert prepare_topic(servers, {}, topic(partitions=4)).partitions == 4
    made = prepare_topic(servers, {}, _name("created"), partitions=2)
    assert made.created and made.partitions == 2


@pytest.mark.kafka_only("Tansu accepts any replication factor")
def test_a_topic_the_broker_refuses_raises_cykafkas_error_with_its_code(broker) -> None:
    """The admin path raises cykafka's KafkaError with the broker's code, never
    confluent-kafka's KafkaException: one node cannot hold three replicas."""
    import confluent_kafka

    import cykafka

    with pytest.raises(cykafka.KafkaError) as caught:
        ensure_topic(_admin(broker), _name("refused"), 1, replication_factor=3, timeout=10)
    err = caught.value
    assert not isinstance(err, confluent_kafka.KafkaException)
    assert err.name == "INVALID_REPLICATION_FACTOR", err
    assert err.code == cykafka.ErrorCode.INVALID_REPLICATION_FACTOR
    assert "INVALID_REPLICATION_FACTOR" in str(err)
