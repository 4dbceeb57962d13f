"""The one error hierarchy of the launchers: :class:`LauncherError` at the base, and a
family per launcher beneath it, neither a child of another, so that ``except`` names
the launcher whose failure it means.

The classes are defined here, not beside their launchers, so that the hierarchy is
read in one place; each launcher's module exports its own.
"""

from __future__ import annotations

__all__ = [
    "BrokerError",
    "BrokerStartError",
    "KafkaClusterError",
    "KafkaStartError",
    "LauncherError",
    "RegistryError",
    "RegistryStartError",
    "TopicError",
]


class LauncherError(RuntimeError):
    """Base class for errors raised by a process cykafka starts (a broker, a cluster)."""


# -- the embedded broker (Tansu, cykafka.launchers.tansu)


class BrokerError(LauncherError):
    """Base class for errors raised by :class:`~cykafka.broker.LocalBroker`."""


class BrokerStartError(BrokerError):
    """The broker process exited or never became ready; the message has its last log lines."""


class TopicError(BrokerError):
    """Topic creation or deletion failed or did not become visible in metadata in time."""


# -- Apache Kafka (cykafka.launchers.kafka)


class KafkaClusterError(LauncherError):
    """Base class for errors raised by :class:`~cykafka.testing.KafkaCluster` (a topic
    it could not create or delete too)."""


class KafkaStartError(KafkaClusterError):
    """A node exited or never became ready; the message has its last log lines."""


# -- the Schema Registry (Apicurio, cykafka.launchers.registry)


class RegistryError(LauncherError):
    """Base class for errors raised by :class:`~cykafka.testing.SchemaRegistry`."""


class RegistryStartError(RegistryError):
    """Fetching or starting the registry failed, or it never answered; the message has
    its last log lines."""
