"""Fault injection for your own tests: librdkafka's mock Kafka cluster, and a
harness that proves (or disproves) what a producer config does to ordering.

``MockCluster`` wraps librdkafka's in-process mock cluster (``rdkafka_mock.h``):
real TCP listeners on localhost speaking the Kafka protocol, with error
injection, brokers going down, slow brokers and leader moves.  Point any
client at ``.bootstrap_servers``.

``verify_ordering`` produces sequence-numbered messages through a real
``cykafka.Producer``, reads the partition logs back with a consumer (so
duplicates written by retries are seen, not only the offsets reported), and
counts inversions, duplicates, losses and failures per partition::

    with MockCluster() as mock:
        mock.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"] * 3)
        report = verify_ordering({}, mock, preset="ordered")
        assert report.ok, report

``KafkaCluster`` starts real Apache Kafka (KRaft; one node, or three with replication)
from Maven Central's jars, with nodes to SIGKILL, pause and restart with their data:
the broker to prove a guarantee on.

``SchemaRegistry`` starts a real Confluent-compatible Schema Registry (Apicurio Registry
from Maven Central, in memory, on loopback): ``SchemaRegistryClient({"url":
registry.url})`` and cykafka's serializers talk to it as to Confluent's.

``read_raw_log`` reads a partition log as stored, transaction markers included, and
``committed_view`` applies Kafka's ``read_committed`` rule to it: the check for
transactions on brokers (the mock, Tansu) whose consumers cannot hide aborted records.

librdkafka documents the mock API as experimental ("THIS IS AN EXPERIMENTAL
API, SUBJECT TO CHANGE OR REMOVAL"); this module is for tests only.
"""

from __future__ import annotations

from ..launchers.kafka import KafkaCluster, KafkaNode
from ..launchers.registry import SchemaRegistry
from .harness import FaultAction, Faults, verify_ordering
from .log import LogRecord, RawRecord, committed_view, read_log, read_raw_log
from .mock import API_KEYS, MockCluster, error_code
from .report import OrderingReport, PartitionReport

__all__ = [
    "API_KEYS",
    "FaultAction",
    "KafkaCluster",
    "KafkaNode",
    "Faults",
    "LogRecord",
    "MockCluster",
    "OrderingReport",
    "PartitionReport",
    "RawRecord",
    "SchemaRegistry",
    "committed_view",
    "error_code",
    "read_log",
    "read_raw_log",
    "verify_ordering",
]
