"""Reading a topic back as a ``read_committed`` consumer sees it, on either test broker.

On Apache Kafka that is a plain ``read_committed`` consumer (``conftest.read_back``):
the reference.  Tansu returns aborted records to such a consumer, so there the log's
transaction markers are applied by ``cykafka.testing.committed_view`` (docs/tansu.md).
The session's Apache Kafka fixtures register their bootstrap servers here, so helpers
that are given only a bootstrap string read each broker the right way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: bootstrap.servers strings of the Apache Kafka clusters of this session
KAFKA_SERVERS: set[str] = set()


def committed_records(
    bootstrap_servers: str,
    topic: str,
    partitions: int | Iterable[int] | None = None,
    timeout: float = 60.0,
) -> list[Any]:
    """The committed records of ``topic``, in partition then offset order (records with
    ``partition``, ``offset``, ``key``, ``value``)."""
    if bootstrap_servers in KAFKA_SERVERS:
        from conftest import read_back

        parts = range(partitions) if isinstance(partitions, int) else partitions
        got = read_back(bootstrap_servers, topic, parts, timeout=timeout)
        return [r for p in sorted(got) for r in got[p]]
    from cykafka.testing import committed_view, read_raw_log

    raw = read_raw_log(bootstrap_servers, topic, 1 if partitions is None else partitions)
    return committed_view(raw)


def committed_so_far(
    bootstrap_servers: str, topic: str, partitions: int | Iterable[int] = 1
) -> int:
    """How many records of ``topic`` are committed, read fast from the log's batches
    (one Fetch per partition, the markers applied): for waiting until a writer got far
    enough.  On Apache Kafka a commit whose markers are not written yet counts later,
    never wrongly; verifying what a topic holds is :func:`committed_records`'s job."""
    from cykafka.testing import committed_view, read_raw_log

    return len(committed_view(read_raw_log(bootstrap_servers, topic, partitions)))
