"""The topic admin of a broker a launcher started, over :mod:`cykafka.cluster.admin`
(the one way topics are made and looked up): each launcher's own errors, and a client
that tolerates a broker still starting.

``confluent_kafka`` is imported where a client is made, never at import time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..cluster.admin import await_controller, ensure_topic, find_topic, short_lived
from ..cluster.errors import confluent_errors, translated
from .errors import LauncherError
from .process import poll_until

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = ["admin_client", "create_topic", "delete_topic", "topic_names"]


def admin_client(conf: Mapping[str, Any]) -> AdminClient:
    """An admin client for ``conf`` (a launcher's client config), quiet, and quick to
    reconnect: connection refusals while a broker starts are expected."""
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        short_lived(
            {
                "socket.connection.setup.timeout.ms": 2000,
                "reconnect.backoff.max.ms": 200,
                **conf,
            },
            log_level=0,
        )
    )


@translated
def topic_names(admin: AdminClient, timeout: float = 10.0) -> list[str]:
    """Names of all topics a cluster reports (asking for all: never creates one)."""
    return sorted(admin.list_topics(timeout=timeout).topics)


def create_topic(
    admin: AdminClient,
    name: str,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str] | None,
    timeout: float,
    *,
    error: type[Exception] = LauncherError,
) -> None:
    """Create ``name`` and wait until every partition has a leader; ``error`` when that
    fails, or when the topic exists already (a test asking for a new topic must not be
    handed an old one)."""
    what = f"creating topic {name!r} ({partitions} partitions, rf {replication_factor})"
    try:
        created = ensure_topic(
            admin,
            name,
            partitions,
            config=config,
            replication_factor=replication_factor,
            check_existing=False,
            timeout=timeout,
        )
    except Exception as exc:
        raise error(f"{what} failed: {exc}") from exc
    if not created:
        raise error(f"{what}: it exists already")


def delete_topic(
    admin: AdminClient,
    name: str,
    timeout: float,
    interval: float = 0.1,
    *,
    error: type[Exception] = LauncherError,
) -> None:
    """Delete ``name`` and wait until the cluster's metadata no longer lists it; ``error``
    (the launcher's own) when that fails."""
    try:
        await_controller(admin, timeout)
    except TimeoutError as exc:
        raise error(f"deleting topic {name!r} failed: {exc}") from exc
    future = admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)
    try:
        with confluent_errors():
            future[name].result(timeout=timeout)
    except Exception as exc:
        raise error(f"deleting topic {name!r} failed: {exc}") from exc
    poll_until(
        lambda: find_topic(admin, name, timeout) is None,
        timeout,
        f"topic {name!r} to disappear",
        error,
        interval,
    )
