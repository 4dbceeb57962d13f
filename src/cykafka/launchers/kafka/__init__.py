"""Apache Kafka (KRaft) on loopback for tests and benchmarks, from Maven Central's jars:
:class:`KafkaCluster` (:mod:`.cluster`) of :class:`KafkaNode` JVMs (:mod:`.node`), their
listeners and security (:mod:`.security`), and the jars and Java they run on
(:mod:`.jars`).  Users' tests take it from :mod:`cykafka.testing`.

Only the standard library is imported at import time; ``confluent_kafka`` where a Kafka
client is needed.
"""

from __future__ import annotations

from ..errors import KafkaClusterError, KafkaStartError
from .cluster import KafkaCluster
from .jars import KAFKA_VERSION, kafka_classpath
from .node import KafkaNode
from .security import Listener, Security

__all__ = [
    "KAFKA_VERSION",
    "KafkaCluster",
    "KafkaClusterError",
    "KafkaNode",
    "KafkaStartError",
    "Listener",
    "Security",
    "kafka_classpath",
]
