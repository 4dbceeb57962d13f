"""Topics on a cluster: whether one exists, and making sure it does.

Every part of cykafka that needs a topic to exist (the embedded broker's
``create_topic``, the importer's ``--partitions``, the exactly-once progress topics of
the importer and of Spark writes) goes through :func:`ensure_topic`, and every question
"does this topic exist, with which partitions" through :func:`find_topic`.

Neither asks the cluster for one topic by name: a Metadata request naming a topic
auto-creates it on a broker with ``auto.create.topics.enable`` (Kafka's default, and
Tansu's behaviour), with the broker's default partitions and config, and librdkafka's
admin client sends such requests with ``allow.auto.create.topics`` set (it is a
producer-type handle).  Listing every topic never creates one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from .errors import error_code, translated

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient, ClusterMetadata, TopicMetadata

_T = TypeVar("_T")

__all__ = [
    "RECONNECT_BACKOFF_MS",
    "TopicMismatchError",
    "await_controller",
    "connection_config",
    "ensure_progress_topic",
    "ensure_topic",
    "find_topic",
    "max_message_bytes",
    "plaintext",
    "short_lived",
    "topic_limits",
    "topic_metadata",
]

#: ``reconnect.backoff.ms`` of the clients cykafka opens for a few requests, and of the
#: import's producer.  librdkafka 2.16 drops its bootstrap connection once the first
#: metadata answer names the brokers; a request of ours still on it is retried on the
#: named broker, to which librdkafka connects no sooner than reconnect.backoff.ms / 2
#: after its last connection (measured: 50 ms at librdkafka's default of 100 ms in about
#: half of all starts, 11 ms at 20).  A lost connection is still retried with
#: librdkafka's exponential backoff, from this up to ``reconnect.backoff.max.ms``.
RECONNECT_BACKOFF_MS = 20


#: What a client cykafka opens beside a producer (an admin client, a reader of a topic)
#: takes from the producer's config: how to reach and authenticate to the brokers.  The
#: rest is the producer's own (acks, idempotence, batching, transactional.id): a consumer
#: given it warns about each key, and drops it anyway.
_CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.", "client.", "socket.", "broker.")
_CONNECTION_KEYS = frozenset(
    {
        "bootstrap.servers",
        "enable.ssl.certificate.verification",
        "enable.sasl.oauthbearer.unsecure.jwt",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
    }
)


def connection_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The connection settings of a producer ``config`` (Java names translated, as the
    producer gets them) for a client cykafka opens beside that producer: the one
    derivation every such client uses."""
    from ..config import translate

    scalars = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool))}
    translated, _notes = translate(scalars)
    return {
        k: v
        for k, v in translated.items()
        if k in _CONNECTION_KEYS or k.startswith(_CONNECTION_PREFIXES)
    }


def plaintext(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` reaches the brokers without TLS or SASL (librdkafka's default
    ``security.protocol``): only then can cykafka's own wire reader (:mod:`.wire`) talk
    to them."""
    return str(config.get("security.protocol", "plaintext")).lower() == "plaintext"


def short_lived(conf: Mapping[str, Any], log_level: int = 3) -> dict[str, Any]:
    """``conf`` for a client cykafka opens for a few requests (a topic lookup, a read of
    a log): librdkafka's log kept to ``log_level``, and :data:`RECONNECT_BACKOFF_MS`
    unless ``conf`` sets ``reconnect.backoff.ms``."""
    return {"reconnect.backoff.ms": RECONNECT_BACKOFF_MS, **conf, "log_level": log_level}


class TopicMismatchError(ValueError):
    """A topic exists, but not as asked (partition count, cleanup.policy)."""


@translated
def topic_metadata(
    admin: AdminClient, name: str, timeout: float
) -> tuple[ClusterMetadata, Optional[TopicMetadata]]:
    """The cluster's metadata, and ``name``'s in it (None: no such topic), from a
    request for all topics: asking for ``name`` alone could create it."""
    md = admin.list_topics(timeout=timeout)
    t = md.topics.get(name)
    return md, (t if t is not None and t.error is None else None)


@translated
def find_topic(admin: AdminClient, name: str, timeout: float) -> Optional[TopicMetadata]:
    """``name``'s metadata, or None when the cluster has no such topic (never created
    by asking; see the module's doc)."""
    return topic_metadata(admin, name, timeout)[1]


@translated
def max_message_bytes(admin: AdminClient, topics: Iterable[str], timeout: float) -> dict[str, int]:
    """Each of ``topics``' ``max.message.bytes`` in force, from one DescribeConfigs
    request: the largest record batch its brokers accept (the topic's own value, else the
    broker's ``message.max.bytes``: Kafka answers a topic's DescribeConfigs with the
    value in force and its source).  A topic the cluster does not have, or will not
    describe to this principal, is left out: the producer's own errors name it."""
    from confluent_kafka.admin import ConfigResource

    names = sorted(set(topics))
    if not names:
        return {}
    futs = admin.describe_configs(
        [ConfigResource("topic", t) for t in names], request_timeout=timeout
    )
    limits = {}
    for res, fut in futs.items():
        try:
            entry = fut.result(timeout).get("max.message.bytes")
        except Exception:  # noqa: BLE001 - missing or not described: see the doc
            continue
        if entry is not None and entry.value is not None:
            limits[res.name] = int(entry.value)
    return limits


def topic_limits(
    config: Mapping[str, Any], topics: Iterable[str], timeout: float = 10.0
) -> dict[str, int]:
    """:func:`max_message_bytes` of ``topics`` on the cluster a producer ``config``
    reaches (its connection settings, :func:`connection_config`)."""
    from confluent_kafka.admin import AdminClient

    from .errors import confluent_errors

    with confluent_errors():
        admin = AdminClient(short_lived(connection_config(config)))
    return max_message_bytes(admin, topics, timeout)


def _policy(value: Optional[str]) -> frozenset[str]:
    return frozenset(p.strip() for p in (value or "delete").split(",") if p.strip())


def _check(
    admin: AdminClient,
    found: TopicMetadata,
    name: str,
    partitions: int,
    config: Mapping[str, str],
    same_partitions: bool,
    timeout: float,
) -> None:
    if same_partitions and len(found.partitions) != partitions:
        raise TopicMismatchError(
            f"topic {name!r} exists with {len(found.partitions)} partition"
            f"{'s' if len(found.partitions) != 1 else ''}, not {partitions}"
        )
    want = config.get("cleanup.policy")
    if want is None:
        return
    from confluent_kafka.admin import ConfigResource

    fut = admin.describe_configs([ConfigResource("topic", name)], request_timeout=timeout)
    entries = next(iter(fut.values())).result(timeout)
    entry = entries.get("cleanup.policy")
    have = entry.value if entry is not None else None
    if _policy(have) != _policy(want):
        raise TopicMismatchError(
            f"topic {name!r} exists with cleanup.policy={have or 'delete'}, not {want}"
        )


@translated
def ensure_topic(
    admin: AdminClient,
    name: str,
    partitions: int = 1,
    *,
    config: Optional[Mapping[str, str]] = None,
    replication_factor: int = -1,
    same_partitions: bool = True,
    check_existing: bool = True,
    timeout: float = 30.0,
) -> bool:
    """Make sure topic ``name`` exists; True when this call created it.

    A missing topic is created with ``partitions``, ``config`` and
    ``replication_factor`` (-1: the broker's default), and waited for until metadata
    shows every partition with a leader.  One that exists, or that another client
    creates meanwhile (TOPIC_ALREADY_EXISTS), is kept as it is; with
    ``check_existing`` it is checked first: its partition count must be
    ``partitions`` (unless ``same_partitions`` is false) and its ``cleanup.policy``
    the one in ``config`` (when ``config`` sets one), else :class:`TopicMismatchError`
    names the topic and the difference.  Other failures raise
    :class:`cykafka.KafkaError` (the broker's code) or ``TimeoutError``.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    conf = dict(config or {})
    md, found = topic_metadata(admin, name, timeout)
    created = False
    if found is None:
        if md.controller_id < 0:  # the answer just read says: see await_controller
            await_controller(admin, timeout)
        new = NewTopic(
            name, num_partitions=partitions, replication_factor=replication_factor, config=conf
        )
        fut = admin.create_topics([new], operation_timeout=timeout, request_timeout=timeout)[name]
        try:
            fut.result(timeout)
            created = True
        except KafkaException as e:
            if error_code(e) != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        found = _wait_led(admin, name, partitions if created else None, timeout)
    if not created and check_existing:
        _check(admin, found, name, partitions, conf, same_partitions, timeout)
    return created


def _asked_until(ask: Callable[[float], Union[_T, str]], timeout: float, failed: str) -> _T:
    """``ask(seconds)``'s answer once it is not a str, asked every 50 ms for ``timeout``
    seconds (each ask given what is left, 0.1 to 5 s); a str answer, or the error the ask
    raised, says why not yet.  TimeoutError ``failed`` with the last reason then."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = ask(max(0.1, min(5.0, deadline - time.monotonic())))
        except Exception as e:  # noqa: BLE001 - a KafkaError: the next round may answer
            got = str(e)
        if not isinstance(got, str):
            return got
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{failed} within {timeout:g} s ({got})")
        time.sleep(0.05)


def _wait_led(
    admin: AdminClient, name: str, partitions: Optional[int], timeout: float
) -> TopicMetadata:
    """``name``'s metadata once it shows the topic (with ``partitions`` partitions,
    when given) and a leader for every partition: a topic just created takes a moment
    to appear in every broker's metadata."""

    def led(seconds: float) -> Union[TopicMetadata, str]:
        t = find_topic(admin, name, seconds)
        if t is None:
            return "not in the cluster's metadata"
        ready = all(p.leader >= 0 and p.error is None for p in t.partitions.values())
        if ready and t.partitions and (partitions is None or len(t.partitions) == partitions):
            return t
        return f"{len(t.partitions)} partitions, not all with a leader"

    return _asked_until(
        led, timeout, f"topic {name!r} did not show {partitions or 'its'} partitions with a leader"
    )


def await_controller(admin: AdminClient, timeout: float) -> ClusterMetadata:
    """The cluster's metadata once it names a controller, for a request that goes to
    the controller (CreateTopics, DeleteTopics).

    librdkafka's admin client sends those to the controller its last metadata answer
    named.  After an answer that named none, its next CreateTopics waited out the whole
    timeout and failed "Failed while waiting for controller" (measured with librdkafka
    2.16: 30.0 s of 30).  Kafka 4.4 names none while no broker is unfenced: a
    one-node cluster for some milliseconds after a pause longer than
    ``broker.session.timeout.ms`` (a GC pause, a stalled VM).  Asking until an answer
    names one also tells the client.
    """

    def named(seconds: float) -> Union[ClusterMetadata, str]:
        md = admin.list_topics(timeout=seconds)
        return md if md.controller_id >= 0 else "no controller named"

    return _asked_until(named, timeout, "the cluster named no controller")


@translated
def ensure_progress_topic(client: Mapping[str, Any], name: str, timeout: float = 30.0) -> bool:
    """Create a compacted progress topic (the exactly-once import's, or Spark's) unless
    it exists (one partition: every record is small and written once per transaction).  One that exists must be
    compacted: under ``cleanup.policy=delete`` retention would drop the record of a
    finished import or write, and a rerun would send everything again.  True when it was created
    now."""
    from confluent_kafka.admin import AdminClient

    from ..cluster.admin import TopicMismatchError, ensure_topic, short_lived

    admin = AdminClient(short_lived(client))
    try:
        return ensure_topic(
            admin,
            name,
            1,
            config={"cleanup.policy": "compact"},
            same_partitions=False,  # the readers read every partition
            timeout=timeout,
        )
    except TopicMismatchError as e:
        raise RuntimeError(f"the progress topic {name!r} cannot be used: {e}") from None
    except Exception as e:  # noqa: BLE001 - KafkaError, TimeoutError
        # A timeout's text is empty: say what it was (a cluster without a controller
        # quorum, say, answers nothing).
        why = str(e) or f"{type(e).__name__}: no answer within {timeout:.0f} s"
        raise RuntimeError(f"cannot create the progress topic {name!r}: {why}") from None
