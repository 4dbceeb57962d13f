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

from collections.abc import Mapping
from typing import Any, Optional

__all__ = ["CONNECT_TIMEOUT_S", "ClusterUnreachable", "probe_config", "probe_topic"]

#: Seconds to wait for the cluster's first answer (``--connect-timeout``).
CONNECT_TIMEOUT_S = 6.0


class ClusterUnreachable(ConnectionError):
    """No broker of ``bootstrap`` answered within ``timeout`` seconds; ``reason``: what
    librdkafka reported meanwhile, each error once (connection refused, name not
    resolved, authentication failed)."""

    def __init__(self, bootstrap: str, timeout: float, reason: str) -> None:
        self.bootstrap, self.timeout, self.reason = bootstrap, timeout, reason
        super().__init__(
            f"cannot reach the Kafka cluster at {bootstrap}: no broker answered within "
            f"{timeout:g} s ({reason}); check --bootstrap-servers, or wait longer with "
            "--connect-timeout SECONDS"
        )


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
) -> tuple[Optional[int], Optional[int]]:
    """``topic``'s partition count (None: no such topic) and, with ``count_records``,
    the records it holds (None: not asked, or not said), from one Metadata request that
    names no topic (it never creates one).  :class:`ClusterUnreachable` when no broker
    answers within ``timeout`` seconds; a :class:`~cykafka.KafkaConfigError` when
    librdkafka refuses the connection settings."""
    from .._native import KafkaConfigError, KafkaError, topic_probe
    from ..config import redact

    if timeout <= 0:
        raise ValueError(f"the connect timeout must be > 0 seconds, not {timeout:g}")
    try:
        return topic_probe(probe_config(bootstrap, config), topic, timeout, count_records)
    except KafkaConfigError:
        raise
    except KafkaError as e:
        # librdkafka's "Local: Broker transport failure: <what each attempt met>" (or
        # "Local: Timed out" when nothing refused but nothing answered).
        raise ClusterUnreachable(bootstrap, timeout, redact(e.message, config)) from None
