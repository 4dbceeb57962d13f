"""The Apache Kafka launcher's pieces that need no JVM."""

from __future__ import annotations

import base64

from cykafka.launchers.kafka.cluster import KafkaCluster, _cluster_id


def test_cluster_ids_never_start_with_a_dash() -> None:
    # One base64url id in 64 starts with "-", which kafka-storage reads as an option
    # ("argument --cluster-id/-t: expected one argument"): a node then fails to start.
    ids = [_cluster_id() for _ in range(5000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)


def test_a_test_cluster_replicates_as_production_does_once_it_has_three_nodes() -> None:
    one, three = KafkaCluster(nodes=1), KafkaCluster(nodes=3)
    try:
        assert one.default_config()["min.insync.replicas"] == "1"
        cfg = three.default_config()
        assert cfg["default.replication.factor"] == "3" and cfg["min.insync.replicas"] == "2"
        assert cfg["transaction.state.log.replication.factor"] == "3"
    finally:
        one.stop()
        three.stop()
