# A partition leader dies while futures are in flight: three Apache Kafka nodes,
# replication factor 3, min.insync.replicas=2, the "ordered" preset (idempotent, acks=all).
import confluent_kafka

import cykafka
from cykafka.testing import KafkaCluster

with KafkaCluster(nodes=3) as cluster:
    topic = cluster.create_topic("orders", partitions=1)
    leader = cluster.leader(topic, 0)
    with cykafka.Producer(cluster.client_config(), preset="ordered") as producer:
        futures = [producer.produce(topic, f"order-{i}".encode()) for i in range(5000)]
        cluster.node(leader).kill()  # SIGKILL: no controlled shutdown
        futures += [producer.produce(topic, f"order-{i}".encode()) for i in range(5000, 10000)]
        producer.flush(60)
    offsets = [f.result().offset for f in futures]
    print(f"leader was node {leader}, now node {cluster.leader(topic, 0)}")
    print(
        f"delivered {len(offsets)}, offsets {offsets[0]}..{offsets[-1]}, in order: "
        f"{offsets == sorted(offsets)}"
    )

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "check",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    values = []
    while len(values) < 10000:
        values += [m.value() for m in consumer.consume(1000, timeout=5) if not m.error()]
    consumer.close()
    print(
        f"read back {len(values)} records, each once and in order: "
        f"{values == [f'order-{i}'.encode() for i in range(10000)]}"
    )
