"""pytest fixtures for your own tests: real brokers, started once per session.

Opt-in: nothing here loads unless asked, with ``pytest -p cykafka.testing.pytest_plugin``
or, in your top-level ``conftest.py``::

    pytest_plugins = ["cykafka.testing.pytest_plugin"]

==================  =========  ============================================================
fixture             scope      what
==================  =========  ============================================================
``kafka_cluster``   session    :class:`~cykafka.testing.KafkaCluster`: one Apache Kafka node
                               (KRaft) from Maven Central's jars; needs Java 17 and, once,
                               Maven
``kafka_topic``     function   the name of a new topic on ``kafka_cluster``, unique to the
                               test; ``@pytest.mark.kafka_topic(partitions=3, config={...})``
                               shapes it
``local_broker``    session    :class:`~cykafka.broker.LocalBroker`: the embedded Tansu
                               broker, in memory (starts in well under a second)
``schema_registry`` session    :class:`~cykafka.testing.SchemaRegistry`: a Confluent-
                               compatible registry on loopback, ``.url``
==================  =========  ============================================================

The session-scoped fixtures are shared by every test of the run, so a test must leave them
as it found them: one that kills, pauses or reconfigures a broker starts its own
``KafkaCluster``/``LocalBroker`` (both are context managers).  Each process started here
is stopped at the end of the session, and dies with the pytest process if that is killed.
A missing Java, Maven or Tansu binary is an error, never a skip: a test that silently did
not run proves nothing.
"""

from __future__ import annotations

import importlib
import re
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..launchers.kafka import KafkaCluster
    from ..launchers.tansu import LocalBroker

#: The marker that shapes :func:`kafka_topic`.
TOPIC_MARKER = "kafka_topic"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{TOPIC_MARKER}(partitions=1, config=None, replication_factor=None): the topic the "
        "kafka_topic fixture creates for this test (cykafka.testing.pytest_plugin)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A wrong ``kafka_topic`` marker fails the run before any broker starts."""
    for item in items:
        marker = item.get_closest_marker(TOPIC_MARKER)
        if marker is None:
            continue
        if marker.args:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{TOPIC_MARKER} takes keywords only "
                f"(partitions=, config=, replication_factor=), not {marker.args!r}"
            )
        unknown = set(marker.kwargs) - {"partitions", "config", "replication_factor"}
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{TOPIC_MARKER} has no {sorted(unknown)}; it "
                "takes partitions=, config= and replication_factor="
            )


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaCluster]:
    """One Apache Kafka node (KRaft) for the whole session: ``.bootstrap_servers``,
    ``.client_config()``, ``.create_topic()``, ``.admin`` (an AdminClient)."""
    from ..launchers.kafka import KafkaCluster

    with KafkaCluster(nodes=1) as cluster:
        yield cluster


@pytest.fixture
def kafka_topic(kafka_cluster: KafkaCluster, request: pytest.FixtureRequest) -> str:
    """A topic of its own for this test on :func:`kafka_cluster`, created with every
    partition led before the test starts: its name (the test's name and a random suffix).
    It is left in place; the cluster ends with the session."""
    marker = request.node.get_closest_marker(TOPIC_MARKER)
    shape = dict(marker.kwargs) if marker is not None else {}
    # Kafka's topic names: at most 249 of [a-zA-Z0-9._-].
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:200]
    return kafka_cluster.create_topic(f"{base}-{uuid.uuid4().hex[:8]}", **shape)


@pytest.fixture(scope="session")
def local_broker() -> Iterator[LocalBroker]:
    """The embedded Tansu broker (memory storage) for the whole session: the same
    ``bootstrap_servers``, ``client_config()`` and ``create_topic()`` as
    :func:`kafka_cluster`.  What it can and cannot do is measured in docs/tansu.md."""
    from ..launchers.tansu import LocalBroker

    with LocalBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[object]:
    """A Confluent-compatible Schema Registry for the whole session
    (:class:`cykafka.testing.SchemaRegistry`): ``.url`` for ``SchemaRegistryClient``."""
    # Looked up when first used: the registry's launcher (and its Java) are needed only
    # by the sessions that ask for it.
    registry_class = getattr(importlib.import_module("cykafka.testing"), "SchemaRegistry", None)
    if registry_class is None:
        raise pytest.UsageError(
            "the schema_registry fixture needs cykafka.testing.SchemaRegistry, which this "
            f"cykafka ({importlib.import_module('cykafka').__file__}) does not have; "
            "upgrade cykafka"
        )
    with registry_class() as registry:
        yield registry
