"""Transactions on a freshly started Apache Kafka: the transaction coordinator's topic
is created on first use and its partitions' leadership settles for a while, so the
first InitProducerId is answered NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.
librdkafka returns those as retriable errors from init_transactions; the producer
retries them within its timeout instead of failing the caller (an exactly-once Spark
task, an --exactly-once import)."""

from __future__ import annotations

import uuid

import pytest

import cykafka
from cykafka.launchers.kafka import KafkaCluster

# A freshly started Apache Kafka of its own (KafkaCluster).
pytestmark = pytest.mark.broker


def test_the_first_transaction_on_a_fresh_cluster_is_not_refused(read_back) -> None:
    with KafkaCluster(nodes=1) as cluster:
        topic = cluster.create_topic("fresh", partitions=1)
        conf = cluster.client_config(**{"transactional.id": f"fresh-{uuid.uuid4().hex}"})
        with cykafka.Producer(conf) as p:
            p.init_transactions(60)
            p.begin_transaction()
            futs = [p.produce(topic, value=b"%d" % i) for i in range(10)]
            p.commit_transaction(60)
        assert [f.result().offset for f in futs] == list(range(10))
        assert len(read_back(cluster.bootstrap_servers, topic, expected=10)[0]) == 10
