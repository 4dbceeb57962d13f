"""Checks on the cluster before any input is read: it answers, and the topic exists
(or is created when asked).  An unreachable cluster fails in seconds with one message
naming the servers (:class:`cykafka.cluster.reach.ClusterUnreachable`), not after
librdkafka's retries and pages of its log."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..cluster.admin import plaintext
from ..cluster.errors import confluent_errors, error_code, translated
from ..cluster.reach import CONNECT_TIMEOUT_S, probe_config, probe_topic
from ..inputs.model import ImportInputError

if TYPE_CHECKING:
    from ..config import Properties

__all__ = [
    "TopicCheckError",
    "TopicCheck",
    "check_partition",
    "check_topic_name",
    "prepare_topic",
    "records_in",
    "topic_limit",
]

_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class TopicCheckError(Exception):
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


def check_partition(topic: str, partition: Optional[int], count: int) -> None:
    """``-p N`` names a partition ``topic`` has (else every row would fail with
    _UNKNOWN_PARTITION, after the whole input was read)."""
    if partition is not None and not 0 <= partition < count:
        raise TopicCheckError(
            f"-p {partition}: topic {topic!r} has {count} partition{'s' if count != 1 else ''} "
            f"(0..{count - 1}); nothing was sent",
            usage=True,
        )


@dataclass
class TopicCheck:
    """What :func:`prepare_topic` found: whether it created the topic, its partition
    count, and (when asked) the records an existing topic already holds (None: not
    asked, or not said)."""

    created: bool
    partitions: int
    records: Optional[int] = None
    #: The topic's max.message.bytes (None: the cluster did not say): the largest record
    #: batch its brokers accept, which caps the producer's batches.
    max_message_bytes: Optional[int] = None


def prepare_topic(
    bootstrap: str,
    config: Properties,
    topic: str,
    partitions: Optional[int] = None,
    timeout: float = CONNECT_TIMEOUT_S,
    partition: Optional[int] = None,
    count_records: bool = False,
) -> TopicCheck:
    """Check that the cluster answers and ``topic`` exists; create it with
    ``partitions`` when it is missing and that is given; check that ``partition`` (-p)
    is one of its partitions.  ``count_records``: also say how many records an existing
    topic holds (see :func:`records_in`).  The look is
    :func:`cykafka.cluster.reach.probe_topic`: no confluent-kafka client unless the topic
    has to be created; :class:`~cykafka.cluster.reach.ClusterUnreachable` when no broker
    answers within ``timeout`` seconds."""
    from .._native import KafkaConfigError, KafkaError
    from ..config import redact

    try:
        count, held = probe_topic(bootstrap, config, topic, timeout, count_records)
    except KafkaConfigError as e:
        raise TopicCheckError(
            redact(f"cannot connect to {bootstrap}: {e.message}", config)
        ) from None
    if count is not None:
        check_partition(topic, partition, count)
        if not plaintext(config):
            check_write_access(bootstrap, config, topic, timeout)
        limit = topic_limit(bootstrap, config, topic, timeout)
        return TopicCheck(created=False, partitions=count, records=held, max_message_bytes=limit)
    # A topic the principal may not describe is left out of the cluster's topic list:
    # say that, rather than "does not exist".
    check_write_access(bootstrap, config, topic, timeout)
    if partitions is None:
        raise TopicCheckError(
            f"topic {topic!r} does not exist on {bootstrap}; create it, or pass "
            "--partitions N to create it with N partitions",
            usage=True,
        )
    check_partition(topic, partition, partitions)
    from confluent_kafka.admin import AdminClient

    from ..cluster.admin import TopicMismatchError, ensure_topic, find_topic

    t = None
    try:
        with confluent_errors():
            admin = AdminClient(probe_config(bootstrap, config))
        # --partitions N creates a missing topic; one that exists (made meanwhile by
        # another client) is used with its own partition count, as documented.
        created = ensure_topic(admin, topic, partitions, same_partitions=False)
        if not created:  # made meanwhile by another client: its own partition count
            t = find_topic(admin, topic, timeout)
    except (KafkaError, TimeoutError, TopicMismatchError) as e:
        raise TopicCheckError(f"cannot create topic {topic!r} on {bootstrap}: {e}") from None
    return TopicCheck(
        created=created,
        partitions=len(t.partitions) if t else partitions,
        max_message_bytes=topic_limit(bootstrap, config, topic, timeout),
    )


def topic_limit(
    bootstrap: str, config: Properties, topic: str, timeout: float = CONNECT_TIMEOUT_S
) -> Optional[int]:
    """``topic``'s max.message.bytes (the topic's, else the brokers' message.max.bytes),
    None when the cluster does not say (no DescribeConfigs right, a broker without it)."""
    from .._native import KafkaError
    from ..cluster.admin import topic_limits

    try:
        conf = {**config, "bootstrap.servers": bootstrap}
        return topic_limits(conf, [topic], timeout).get(topic)
    except (KafkaError, TimeoutError):
        return None


@translated
def check_write_access(
    bootstrap: str, config: Properties, topic: str, timeout: float = CONNECT_TIMEOUT_S
) -> None:
    """Raise :class:`TopicCheckError` when the brokers' ACLs would refuse this principal
    writing ``topic`` (the topic's authorized operations, KIP-430), before any input is
    read; every row would fail otherwise.  Says nothing when the topic is missing or the
    broker does not tell its authorized operations."""
    from confluent_kafka import KafkaError as ConfluentError
    from confluent_kafka import KafkaException, TopicCollection
    from confluent_kafka.admin import AclOperation, AdminClient

    from .._native import principal

    admin_conf = probe_config(bootstrap, config)
    who = principal(admin_conf)
    admin = AdminClient(admin_conf)
    try:
        fut = admin.describe_topics(
            TopicCollection([topic]),
            request_timeout=timeout,
            include_authorized_operations=True,
        )[topic]
        desc = fut.result(timeout=timeout)
    except KafkaException as e:
        if error_code(e) == ConfluentError.TOPIC_AUTHORIZATION_FAILED:
            raise TopicCheckError(
                f"{who} may not write to topic {topic!r} on {bootstrap}: the brokers refuse "
                "it even DESCRIBE; an ACL must allow it WRITE on the topic. Nothing was read "
                "or sent"
            ) from None
        return  # missing, or not said: the caller's checks go on
    ops = desc.authorized_operations
    if ops is None:
        return
    if AclOperation.WRITE not in ops and AclOperation.ALL not in ops:
        allowed = ", ".join(sorted(op.name for op in ops)) or "nothing"
        raise TopicCheckError(
            f"{who} may not write to topic {topic!r} on {bootstrap} (its ACLs allow "
            f"{allowed}): an ACL must allow it WRITE on the topic. Nothing was read or sent"
        )


def records_in(
    bootstrap: str, config: Properties, topic: str, timeout: float = CONNECT_TIMEOUT_S
) -> Optional[int]:
    """The sum of ``topic``'s high watermarks (0: it holds no records; Tansu's can be
    lower than the record count, see docs/tansu.md), None when the cluster does not say
    or there is no such topic.  A plain import into a topic that holds records may be
    the rerun of one that delivered some of them: it sends them again."""
    from .._native import KafkaError

    try:
        return probe_topic(bootstrap, config, topic, timeout, True)[1]
    except (KafkaError, ConnectionError, ValueError, TypeError):
        return None
