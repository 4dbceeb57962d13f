"""What an ``exactly_once`` Spark write has committed: one progress record per work unit.

A write (a ``write_kafka`` call, named by its ``job_id``, or one micro-batch of a
streaming query, named by ``query``) splits its rows into a fixed number of *units* by
content (:mod:`cykafka.spark.routing`); each unit is written in one Kafka transaction
whose ``transactional.id`` names the unit, and the same transaction writes the unit's
progress record to a compacted progress topic (the importer's,
:func:`cykafka.cluster.admin.ensure_progress_topic`)::

    key   = "<job>/<unit>"
    value = {"job": "orders-etl", "batch": 7, "unit": 2, "units": 4, "partitions": 4,
             "rows": 25013, "offsets": [["orders", 2, 1200, 26212]],
             "content": "9c1e5a0d7f3b2e41"}

``batch`` is the micro-batch id (``null`` outside streaming), ``units`` how many units
the write's first attempt chose (a re-run keeps it, whatever its parallelism),
``partitions`` the topic's partition count the units were computed with, ``rows`` and
``offsets`` what the unit committed, ``content`` a fingerprint of its rows
(:class:`UnitContent`: the same rows in any order give the same one).  The record commits or aborts with the rows, so a
committed record is proof that the unit's rows are committed, and compaction keeps one
record per (job, unit): the latest batch.

Records are read as a ``read_committed`` consumer on Kafka sees them, on any broker
(:func:`cykafka.cluster.committed.committed_messages`: Tansu, the test broker, does
not hide aborted records itself)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional, TypedDict, Union

if TYPE_CHECKING:
    import pyarrow as pa

    from ..serialized import Data

__all__ = [
    "DEFAULT_PROGRESS_TOPIC",
    "ProgressRecord",
    "progress_key",
    "progress_value",
    "read_job",
    "unit_done",
    "UnitContent",
]

#: The progress topic of writes with a ``topic`` column and no ``progress_topic``.
DEFAULT_PROGRESS_TOPIC = "cykafka-spark-progress"


class ProgressRecord(TypedDict):
    """One unit's progress record, as its JSON reads back (see the module's doc)."""

    job: str
    batch: Optional[int]
    unit: int
    units: int
    partitions: Optional[int]
    rows: int
    offsets: list[list[Union[str, int]]]  # [topic, partition, first, last]
    content: Optional[str]  # UnitContent.hex() of the rows (absent in older records)


def progress_key(job: str, unit: int) -> bytes:
    return f"{job}/{unit}".encode()


def progress_value(
    job: str,
    batch: Optional[int],
    unit: int,
    units: int,
    partitions: Optional[int],
    rows: int,
    offsets: Mapping[tuple[str, int], tuple[int, int]],
    content: Optional[str] = None,
) -> bytes:
    return json.dumps(
        {
            "job": job,
            "batch": batch,
            "unit": unit,
            "units": units,
            "partitions": partitions,
            "rows": rows,
            "offsets": [[t, p, lo, hi] for (t, p), (lo, hi) in sorted(offsets.items())],
            "content": content,
        },
        separators=(",", ":"),
    ).encode()


def read_job(client: Mapping[str, object], topic: str, job: str) -> dict[int, ProgressRecord]:
    """The committed progress of ``job``: unit -> its record of the latest batch."""
    from ..cluster.committed import committed_messages

    prefix = f"{job}/".encode()
    out: dict[int, ProgressRecord] = {}
    # The reader stops at the end of the log, which a fetch waiting for more data
    # (librdkafka's fetch.wait.max.ms, 500 ms by default) only reports late.
    for msg in committed_messages({**client, "fetch.wait.max.ms": 10}, topic):
        if msg.key is None or not msg.key.startswith(prefix) or msg.value is None:
            continue
        rec: ProgressRecord = json.loads(msg.value)
        if rec.get("job") != job:
            continue
        unit = int(rec["unit"])
        old = out.get(unit)
        if old is None or _batch(rec) >= _batch(old):
            out[unit] = rec
    return out


def unit_done(
    records: Mapping[int, ProgressRecord], unit: int, batch: Optional[int]
) -> Optional[ProgressRecord]:
    """The record proving ``unit`` of ``batch`` committed, or None.  A streaming query
    runs its micro-batches one after another, so a unit that committed a later batch
    had committed this one before."""
    rec = records.get(unit)
    if rec is None or _batch(rec) < (-1 if batch is None else batch):
        return None
    return rec


def batch_units(
    records: Mapping[int, ProgressRecord], batch: Optional[int]
) -> Optional[dict[str, Optional[int]]]:
    """(units, partitions) an earlier attempt of ``batch`` committed with, if any
    unit of it did: a re-run must split the rows the same way."""
    for rec in records.values():
        if rec.get("batch") == batch:
            return {"units": int(rec["units"]), "partitions": rec.get("partitions")}
    return None


def _batch(rec: ProgressRecord) -> int:
    b = rec.get("batch")
    return -1 if b is None else int(b)


class UnitContent:
    """A unit's rows as a number, whatever their order: the sum (mod 2**64) of one
    64-bit number per row, cykafka's row digest of its key and value bytes (the one
    ``cykafka verify`` computes, in C; JSON text for Schema Registry values) mixed with
    its topic's hash.  Spark may hand a re-run of a unit its rows in another order (a
    shuffle's blocks arrive in any order), so the fingerprint must not depend on it; it
    tells other rows from the same rows (a new checkpoint under an old ``query=`` name,
    a source that gives a batch id other rows).  A per-row hash in Python (BLAKE2b over
    each row's bytes) cost 0.7 CPU-s per million rows, half of an exactly_once task's
    Python time."""

    def __init__(self) -> None:
        self.total = 0

    def add(self, topic: str, keys: Optional[pa.Array], values: Data) -> None:
        """Add the rows of one ``produce_batch`` call: ``keys``/``values`` Arrow
        arrays (keys None: no keys) or, for Schema Registry values, a RecordBatch."""
        import numpy as np
        import pyarrow as pa

        from .._arrow import digest_rows, key_hash, record_json

        if isinstance(values, (pa.RecordBatch, pa.Table)):
            values = record_json(values, nonfinite="string")[0]
        n = len(values)
        if not n:
            return
        digests = np.empty((n, 16), np.uint8)
        digest_rows(n, values, keys, None, (), None, 0, False, digests, np.empty(n, np.uint64), 0)
        # The topic enters each row's number before the sum, and not linearly: rows that
        # moved between topics change the total.
        h = digests.view(np.uint64)[:, 0] ^ np.uint64(key_hash(topic.encode()))
        h *= np.uint64(0x9E3779B97F4A7C15)  # wraps modulo 2**64
        h ^= h >> np.uint64(29)
        self.total = (self.total + int(h.sum(dtype=np.uint64))) % (1 << 64)

    def hex(self) -> str:
        return f"{self.total:016x}"
