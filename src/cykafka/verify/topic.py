"""The topic's side of `cykafka verify`: its committed records as digests, read in bulk.

On a plaintext cluster each partition is read once, batch by batch, from its leader
with the Fetch API (:mod:`cykafka.cluster.wire`), and each batch's records are decoded and
digested in C: no Python object per record.  Kafka's rule for transactions (KIP-98) is
applied on the way: a transactional batch's records wait for their producer's next
marker, and count only if it is a COMMIT (an open transaction counts not at all), as
:mod:`cykafka.cluster.committed` does; so aborted records are left out on Tansu too.

A batch compressed with a codec that reader does not decode (snappy, zstd), and a
secured cluster, are read through :func:`~cykafka.cluster.committed.committed_messages`
(a consumer) instead, the partition's fast reading forgotten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from .matching import Matcher

__all__ = ["fetch_records", "read_topic"]

_FLUSH = 1 << 16  # records gathered before they go to the matcher
_FETCH_BYTES = 4 << 20


class _Unreadable(Exception):
    pass


class _Acc:
    """Digests of one partition, handed to the matcher in large pieces."""

    def __init__(self, matcher: Matcher, partition: int) -> None:
        self.m, self.p = matcher, partition
        self.d = np.empty((_FLUSH, 16), np.uint8)
        self.k = np.empty(_FLUSH, np.uint64)
        self.o = np.empty(_FLUSH, np.int64)
        self.n = 0

    def add(self, d: np.ndarray, k: np.ndarray, o: np.ndarray) -> None:
        if self.n + len(k) > _FLUSH:
            self.flush()
        if len(k) > _FLUSH:
            self.m.add_actual(self.p, d, k, o)
            return
        n = self.n
        self.d[n : n + len(k)], self.k[n : n + len(k)], self.o[n : n + len(k)] = d, k, o
        self.n += len(k)

    def flush(self) -> None:
        if self.n:
            self.m.add_actual(self.p, self.d[: self.n], self.k[: self.n], self.o[: self.n])
            self.n = 0


def _read_partition(
    host: str,
    port: int,
    topic: str,
    partition: int,
    with_partition: bool,
    matcher: Matcher,
    timeout: float,
) -> None:
    from .._arrow import digest_records
    from ..cluster.records import batch_records
    from ..cluster.wire import fetch_batches

    acc = _Acc(matcher, partition)
    pending: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for _, batch in fetch_batches(
        host, port, topic, partition, timeout=timeout, max_bytes=_FETCH_BYTES
    ):
        if batch.control:
            for rec in batch.records():
                held = pending.pop(rec.producer_id, [])
                if rec.control == "COMMIT":
                    for piece in held:
                        acc.add(*piece)
            continue
        try:
            count, payload = batch_records(batch)
        except ValueError as e:
            raise _Unreadable(str(e)) from None
        d = np.empty((count, 16), np.uint8)
        k = np.empty(count, np.uint64)
        o = np.empty(count, np.int64)
        digest_records(payload, count, batch.base, partition, with_partition, d, k, o, 0)
        if batch.transactional:
            pending.setdefault(batch.producer_id, []).append((d, k, o))
        else:
            acc.add(d, k, o)
    acc.flush()  # what is still pending belongs to open transactions: not visible


def _read_with_consumer(
    client: Mapping[str, Any], topic: str, partition: int, with_partition: bool, m: Matcher
) -> None:
    from .._arrow import digest_rows
    from ..cluster.committed import committed_messages

    def flush(rows: list[Any]) -> None:
        n = len(rows)
        d = np.empty((n, 16), np.uint8)
        k = np.empty(n, np.uint64)
        digest_rows(
            n,
            [r.value for r in rows],
            [r.key for r in rows],
            [r.headers for r in rows],
            (),
            None,
            partition,
            with_partition,
            d,
            k,
            0,
        )
        m.add_actual(partition, d, k, np.array([r.offset for r in rows], np.int64))

    rows: list[Any] = []
    for msg in committed_messages(client, topic, [partition]):
        rows.append(msg)
        if len(rows) >= _FLUSH:
            flush(rows)
            rows = []
    if rows:
        flush(rows)


def read_topic(
    client: Mapping[str, Any],
    topic: str,
    with_partition: bool,
    matcher: Matcher,
    timeout: float = 60.0,
) -> None:
    """Hand every committed record of ``topic`` to ``matcher``, partition by
    partition, in offset order (transactional ones when their commit is read)."""
    from ..cluster.admin import plaintext
    from ..cluster.wire import leaders

    where = leaders(client, topic, timeout)
    plain = plaintext(client)
    for p in sorted(where):
        if plain:
            mark = matcher.mark_actual()
            try:
                _read_partition(*where[p], topic, p, with_partition, matcher, timeout)
                continue
            except _Unreadable:
                matcher.rollback_actual(mark)
        _read_with_consumer(client, topic, p, with_partition, matcher)


_Content = tuple[Optional[bytes], Optional[bytes], tuple[tuple[str, Optional[bytes]], ...]]


def fetch_records(
    client: Mapping[str, Any], topic: str, wanted: set[tuple[int, int]], timeout: float = 30.0
) -> dict[tuple[int, int], _Content]:
    """The key, value and headers of the records at ``wanted`` (partition, offset)
    places (for a report's examples): one read per partition, up to the last wanted."""
    from ..cluster.committed import committed_messages

    out: dict[tuple[int, int], _Content] = {}
    for p in sorted({w[0] for w in wanted}):
        last = max(o for q, o in wanted if q == p)
        for msg in committed_messages(client, topic, [p], timeout=timeout):
            if (p, msg.offset) in wanted:
                out[(p, msg.offset)] = (msg.key, msg.value, msg.headers)
            if msg.offset >= last:
                break
    return out
