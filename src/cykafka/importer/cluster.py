"""Checks on the cluster before any input is read: it answers, and the topic exists
(or is created when asked).  An unreachable cluster fails in seconds with one message
naming the servers, not after librdkafka's retries and pages of its log."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

from .model import ImportInputError

__all__ = ["ClusterError", "check_topic_name", "prepare_topic"]

#: Seconds to wait for the cluster's first answer.
CONNECT_TIMEOUT_S = 6.0
_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class ClusterError(Exception):
    """The cluster cannot be used (unreachable, or the topic is missing)."""

    def __init__(self, message: str, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage  # a missing topic is the user's to fix: exit status 2


def check_topic_name(topic: str) -> None:
    """Kafka's own rule for topic names, checked before anything starts."""
    if topic in (".", "..") or not _LEGAL_TOPIC.match(topic):
        raise ImportInputError(
            f"invalid topic name {topic!r}: use 1-249 characters from a-z A-Z 0-9 . _ - "
            "(not '.' or '..')"
        )


def _admin_config(bootstrap: str, config: Mapping[str, Any]) -> dict[str, Any]:
    from ..config import translate

    translated, _notes = translate(config)  # Java names, as the producer gets them
    passthrough = {
        k: v
        for k, v in translated.items()
        if k.startswith(("security.", "sasl.", "ssl.", "client.")) and isinstance(v, (str, int))
    }
    # log_level 0: a cluster that does not answer is said once, below, not logged per retry.
    return {**passthrough, "bootstrap.servers": bootstrap, "log_level": 0}


def prepare_topic(
    bootstrap: str,
    config: Mapping[str, Any],
    topic: str,
    partitions: Optional[int] = None,
    timeout: float = CONNECT_TIMEOUT_S,
) -> bool:
    """Check that the cluster answers and ``topic`` exists; create it with
    ``partitions`` when it is missing and that is given.  True if it was created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    from ..config import redact

    try:
        admin = AdminClient(_admin_config(bootstrap, config))
    except KafkaException as e:
        raise ClusterError(
            redact(f"cannot connect to {bootstrap}: {e.args[0].str()}", config)
        ) from None
    try:
        md = admin.list_topics(timeout=timeout)
    except KafkaException as e:
        raise ClusterError(
            f"cannot reach the Kafka cluster at {bootstrap} within {timeout:g} s "
            f"({e.args[0].str() if e.args else e}); check --bootstrap-servers"
        ) from None
    t = md.topics.get(topic)
    if t is not None and t.error is None:
        return False
    if partitions is None:
        raise ClusterError(
            f"topic {topic!r} does not exist on {bootstrap}; create it, or pass "
            "--partitions N to create it with N partitions",
            usage=True,
        )
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic]
    try:
        fut.result(30)
    except KafkaException as e:
        raise ClusterError(f"cannot create topic {topic!r} on {bootstrap}: {e}") from None
    return True
