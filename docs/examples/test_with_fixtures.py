"""Your own tests on real brokers: pytest -p cykafka.testing.pytest_plugin test_with_fixtures.py"""

from collections import defaultdict

import pytest
from confluent_kafka import Consumer, TopicPartition

import cykafka


def read_committed(config: dict, topic: str, partitions: int, want: int) -> list:
    """What a read_committed consumer sees: (key, value) in partition order."""
    consumer = Consumer(
        {**config, "group.id": "check", "isolation.level": "read_committed"},
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    try:
        while len(got) < want:
            msg = consumer.poll(30)
            assert msg is not None, f"{len(got)} of {want} records after 30 s"
            assert msg.error() is None, msg.error()
            got.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


@pytest.mark.kafka_topic(partitions=3)
def test_each_users_orders_arrive_once_and_in_order(kafka_cluster, kafka_topic):
    orders = [(f"user-{i % 10}".encode(), f"order {i}".encode()) for i in range(1000)]
    with cykafka.Producer(kafka_cluster.client_config(), preset="ordered") as producer:
        report = producer.produce_batch(
            kafka_topic, [v for _, v in orders], keys=[k for k, _ in orders]
        ).result()
    assert report.delivered == 1000

    by_user = defaultdict(list)
    for key, value in read_committed(kafka_cluster.client_config(), kafka_topic, 3, 1000):
        by_user[key].append(value)
    for key, values in by_user.items():
        assert values == [v for k, v in orders if k == key]


def test_the_embedded_broker_for_quick_checks(local_broker):
    topic = local_broker.create_topic("clicks")
    with cykafka.Producer(local_broker.client_config()) as producer:
        assert producer.produce(topic, b"click").result(timeout=10).offset == 0
