"""Whether a cluster answers: the one failure path for "cannot reach the cluster".

Every front door (the import, verify, Spark's driver) asks the cluster first through
:func:`probe_topic`, a client of a few seconds whose own log is off: librdkafka retries
an unreachable bootstrap server for as long as a request's timeout allows, logging
every attempt ("Connect to ipv4#... failed: Connection refused", a line per broker and
per retry), which is pages of text for what is one fact.  The error events it raises
meanwhile are collected instead, each once, and said in the one line of
:class:`ClusterUnreachable`, which the CLI prints without a traceback (exit status 2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

__all__ = [
    "CONNECT_TIMEOUT_S",
    "ClusterSeen",
    "ClusterUnreachable",
    "probe_config",
    "probe_topic",
    "require",
    "summarised",
]

#: Seconds to wait for the cluster's first answer (``--connect-timeout``).
CONNECT_TIMEOUT_S = 6.0


class ClusterUnreachable(ConnectionError):
    """No broker of ``bootstrap`` answered within ``timeout`` seconds; ``reason``: what
    librdkafka reported meanwhile, each error once (connection refused, name not
    resolved, authentication failed).  The fact is said the same way wherever it is met;
    the fix names the knobs of the caller: the CLI's flags, or with ``python=True``
    (:meth:`cykafka.Producer.require`) the config's properties and the timeout argument."""

    def __init__(self, bootstrap: str, timeout: float, reason: str, python: bool = False) -> None:
        self.bootstrap, self.timeout, self.reason = bootstrap, timeout, reason
        self.security = bool(_SECURITY.search(reason))
        if self.security:
            # The brokers answered, and refused this client's TLS or SASL: waiting longer
            # or another address would not help.
            text = (
                f"cannot connect to the Kafka cluster at {bootstrap}: its brokers refused "
                f"this client's security settings ({reason}); check the security.protocol, "
                "ssl.* and sasl.* properties" + ("" if python else " (-X, -F)")
            )
        else:
            fix = (
                "check bootstrap.servers, or wait longer with require(timeout=SECONDS)"
                if python
                else "check --bootstrap-servers, or wait longer with --connect-timeout SECONDS"
            )
            text = (
                f"cannot reach the Kafka cluster at {bootstrap}: no broker answered within "
                f"{timeout:g} s ({reason}); {fix}"
            )
        super().__init__(text)


#: librdkafka's words for a TLS handshake or SASL authentication that failed.
_SECURITY = re.compile(r"SSL handshake failed|certificate verify failed|[Aa]uthentication")


#: librdkafka's "(after 3ms in state CONNECT)" or "(after 0ms in state CONNECT, 1 identical
#: error(s) suppressed)" at the end of each connection attempt's error: the attempts
#: differ only there.
_AFTER = re.compile(r" \(after \d+ms in state \w+(?:, (\d+) identical error\(s\) suppressed)?\)")
#: "Local: Broker transport failure: " before the first attempt's "host:port/bootstrap: ".
_HEAD = re.compile(r"^(.*?): (?=[^\s;]+/\w+: )")


def summarised(message: str) -> str:
    """librdkafka's errors of one probe (each attempt's, joined by "; ") as what was
    tried: each kind once, with how many attempts met it; its "N/M brokers are down"
    (a count, not an attempt) left out when attempts are named."""
    head = _HEAD.match(message)
    prefix = head.group(1) + ": " if head else ""
    counts: dict[str, int] = {}
    for piece in message[len(prefix) :].split("; "):
        m = _AFTER.search(piece)
        n = 1 + (int(m.group(1)) if m and m.group(1) else 0)
        kind = _AFTER.sub("", piece)
        counts[kind] = counts.get(kind, 0) + n
    if len(counts) > 1:
        counts = {k: n for k, n in counts.items() if not k.endswith("brokers are down")}
    said = "; ".join(f"{k} ({n} attempts)" if n > 1 else k for k, n in counts.items())
    return prefix + said


def probe_config(bootstrap: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The config of the probe's client: ``config``'s connection settings (security
    included) for ``bootstrap``, librdkafka's log off (its errors are collected as
    events and said once, see the module's doc)."""
    from .admin import connection_config, short_lived

    return short_lived({**connection_config(config), "bootstrap.servers": bootstrap}, log_level=0)


def probe_topic(
    bootstrap: str,
    config: Mapping[str, Any],
    topic: str,
    timeout: float = CONNECT_TIMEOUT_S,
    count_records: bool = False,
    python: bool = False,
) -> tuple[Optional[int], Optional[int]]:
    """``topic``'s partition count (None: no such topic) and, with ``count_records``,
    the records it holds (None: not asked, or not said), from one Metadata request that
    names no topic (it never creates one).  :class:`ClusterUnreachable` when no broker
    answers within ``timeout`` seconds; a :class:`~cykafka.KafkaConfigError` when
    librdkafka refuses the connection settings."""
    from .._native import KafkaConfigError, KafkaError, topic_probe
    from ..config import redact

    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"the connect timeout must be a number of seconds, not {timeout!r}")
    if not timeout > 0:
        raise ValueError(f"the connect timeout must be > 0 seconds, not {timeout:g}")
    try:
        return topic_probe(probe_config(bootstrap, config), topic, timeout, count_records)
    except KafkaConfigError:
        raise
    except KafkaError as e:
        # librdkafka's "Local: Broker transport failure: <what each attempt met>" (or
        # "Local: Timed out" when nothing refused but nothing answered).
        raise ClusterUnreachable(
            bootstrap, timeout, redact(summarised(e.message), config), python
        ) from None


class ClusterSeen(NamedTuple):
    """What :func:`require` (and :meth:`cykafka.Producer.require`) saw of a cluster that
    answered."""

    #: The bootstrap servers asked (the config's ``bootstrap.servers``).
    bootstrap: str
    #: The brokers the cluster's metadata names: node id to ``"host:port"``.
    brokers: dict[int, str]
    #: The node id of the controller the metadata names (None: not said).
    controller: Optional[int]
    #: The cluster's id (None: not said).
    cluster_id: Optional[str]
    #: Seconds from the first connection attempt to the answer.
    seconds: float


#: A topic name no cluster holds (Kafka refuses names with "!"): the probe's Metadata
#: request lists every topic and looks this one up, so it creates nothing.
_NO_TOPIC = "!cykafka-require"


def require(
    bootstrap: str,
    config: Mapping[str, Any],
    timeout: float = CONNECT_TIMEOUT_S,
    python: bool = False,
) -> ClusterSeen:
    """Wait up to ``timeout`` seconds for the cluster at ``bootstrap`` to answer, through
    the same probe as every front door (:func:`probe_topic`, so the same
    :class:`ClusterUnreachable`), then name the brokers and controller its metadata
    lists."""
    import time

    started = time.monotonic()
    probe_topic(bootstrap, config, _NO_TOPIC, timeout, python=python)
    seconds = time.monotonic() - started
    # The probe's own client says only whether a topic exists; the brokers are asked of
    # confluent-kafka's admin client with the same connection settings, within what is
    # left of the timeout (the cluster just answered: a failure here is a real one).
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from ..config import redact

    left = max(1.0, timeout - seconds)
    try:
        md = AdminClient(probe_config(bootstrap, config)).list_topics(timeout=left)
    except KafkaException as e:
        raise ClusterUnreachable(
            bootstrap, timeout, redact(summarised(str(e.args[0].str())), config), python
        ) from None
    brokers = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
    controller = md.controller_id if md.controller_id >= 0 else None
    return ClusterSeen(
        bootstrap, dict(sorted(brokers.items())), controller, md.cluster_id or None, seconds
    )
