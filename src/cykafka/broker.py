"""The embedded local broker (Tansu) for tests, demos and benchmarks: the public face of
:mod:`cykafka.launchers.tansu`, where :class:`LocalBroker` lives.

Example::

    from cykafka.broker import LocalBroker

    with LocalBroker() as broker:
        broker.create_topic("events", partitions=3)
"""

from __future__ import annotations

from .launchers.process import free_port, poll_until, tcp_open
from .launchers.tansu import (
    TANSU_ENV,
    BrokerError,
    BrokerStartError,
    LocalBroker,
    TopicError,
    find_tansu,
)
from .launchers.topics import delete_topic, topic_names

__all__ = [
    "TANSU_ENV",
    "BrokerError",
    "BrokerStartError",
    "LocalBroker",
    "TopicError",
    "delete_topic",
    "find_tansu",
    "free_port",
    "poll_until",
    "tcp_open",
    "topic_names",
]
