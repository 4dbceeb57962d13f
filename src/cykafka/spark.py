"""Write a PySpark DataFrame to Kafka through cykafka's bulk path.

::

    from cykafka.spark import write_kafka

    report = write_kafka(df.orderBy("ts"), "orders", bootstrap_servers="broker:9092",
                         key="user", value=None)          # value=None: each row as JSON
    print(report.delivered, report.offsets)

How it runs: ``df.mapInArrow`` gives every Spark task its rows as Arrow record batches;
the task takes one :class:`cykafka.Producer` (created inside the executor's Python
worker, after any fork, and kept there for the worker's next task with the same config,
as Spark's own Kafka sink does; the config travels as a plain dict, a producer is never
pickled), hands
each batch's columns to ``produce_batch`` (read straight from the Arrow buffers, no
Python object per row), waits for every delivery, and returns its counts and
per-partition offset ranges, which the driver gathers into a :class:`WriteReport`.

Columns follow Spark's own Kafka sink: ``key`` and ``value`` (string or binary),
optional ``headers`` (array<struct<key: string, value: binary>>), ``partition`` (int)
and ``topic`` (string; a row's topic overrides the ``topic`` argument).

Ordering.  With an ordering preset (``ordered``, ``strict_ordered``, ``exactly_once``)
and a key (or partition) column, rows are first repartitioned so that exactly one Spark
task writes each Kafka partition: the Kafka partition of a key is computed in Spark the
way librdkafka's partitioner will compute it (CRC32 of the key for the default
``consistent_random``, Java's murmur2 for ``murmur2_random`` / preset
``java_compatible``, FNV-1a for ``fnv1a*``), then each task sorts its rows back into the
DataFrame's order.  So the order of a key's messages in Kafka is the order of its rows
in ``df``: sort the DataFrame first if it has no meaningful order (``df.orderBy("ts")``)
-- Spark itself promises no row order after a shuffle or a file read.  Rows without a
key go to any partition (as librdkafka does with them).  With a ``topic`` column the
rows are grouped by (topic, key) instead, which keeps per-key order but lets several
tasks share a Kafka partition.

Retries.  Spark re-runs a failed task from its first row, so a task that failed after
some of its messages were written writes those again: delivery is **at-least-once
across task retries**, whatever the preset (the idempotent producer only removes
duplicates within one producer session).  ``preset="exactly_once"`` runs each task in
one Kafka transaction with a ``transactional.id`` derived from the application id, a
per-call token and the Spark partition id, so a retry fences off the failed attempt and
``read_committed`` consumers see every row once.

Failures.  A task with undelivered messages raises (the Spark job fails, with the
first errors and the counts in :class:`KafkaWriteError`), so rows are never dropped
silently; ``on_error="report"`` makes the task return its failures in the report
instead.  Under ``exactly_once`` a task is all or nothing: if any of its rows fails
(or the commit is refused) its transaction is aborted and all its rows count as
failed (``delivered == 0`` for that task), since none is visible to ``read_committed``
readers.

pyspark and pyarrow are imported when :func:`write_kafka` runs.  Executors need
cykafka installed (``pip install cykafka[spark]``).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["KafkaWriteError", "TaskResult", "WriteReport", "kafka_partition", "write_kafka"]

#: Environment variable naming the brokers when ``bootstrap_servers`` is not given.
BOOTSTRAP_ENV = "CYKAFKA_BOOTSTRAP_SERVERS"
# Helper columns added for ordered writes; never sent.
_SEQ = "__cykafka_seq"
_ROUTE = "__cykafka_route"
_KPART = "__cykafka_kpart"
_MARK = "cykafka write_kafka:"  # finds our task errors inside Spark's exception text
_MAX_ERRORS = 5  # errors kept per task (and in the report)

# Producers kept by a Python worker between its tasks, like Spark's own Kafka sink does
# (its CachedKafkaProducer): an idempotent producer's first ProducerId request is made at
# once, finds no broker connected yet and is retried by librdkafka 500 ms later, so a
# fresh producer per task made every `ordered` task wait ~0.5 s before its first send.
# Keyed by the whole config; never used for transactions (their id is per task); a
# producer is kept only after a task that delivered everything and left nothing queued.
_KEPT: dict[tuple[tuple[str, str], ...], tuple[Any, float]] = {}
_KEEP_IDLE_S = 600.0  # close producers no task has used for this long
_ORDERING_PRESETS = ("ordered", "strict_ordered", "exactly_once")


class KafkaWriteError(RuntimeError):
    """A Spark task could not deliver all its rows (message: first errors and counts)."""


@dataclass
class TaskResult:
    """One Spark task's outcome."""

    task: int  # Spark partition id
    attempt: int
    rows: int
    delivered: int
    failed: int
    errors: list[str]
    #: (topic, partition) -> (first offset, last offset) written by this task
    offsets: dict[tuple[str, int], tuple[int, int]]
    transactional_id: Optional[str] = None
    #: "<worker pid>/<librdkafka client name>" of the producer that wrote the rows; a
    #: worker keeps its producer for its next task with the same config
    producer: str = ""

    @classmethod
    def from_json(cls, text: str) -> TaskResult:
        d = json.loads(text)
        offsets = {(t, int(p)): (int(lo), int(hi)) for t, p, lo, hi in d.pop("offsets")}
        return cls(offsets=offsets, **d)

    def to_json(self) -> str:
        d = dict(self.__dict__)
        d["offsets"] = [[t, p, lo, hi] for (t, p), (lo, hi) in sorted(self.offsets.items())]
        return json.dumps(d)


@dataclass
class WriteReport:
    """What :func:`write_kafka` did: counts, errors, and per-partition offset ranges."""

    topic: Optional[str]
    rows: int = 0
    delivered: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    #: (topic, partition) -> (first, last) offset written by this call
    offsets: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    tasks: list[TaskResult] = field(default_factory=list)
    elapsed: float = 0.0
    ordered: bool = False  # rows were repartitioned so each Kafka partition had one writer

    @property
    def ok(self) -> bool:
        """Every row was delivered."""
        return self.failed == 0 and self.delivered == self.rows

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.elapsed if self.elapsed > 0 else 0.0

    def to_df(self, spark: SparkSession) -> DataFrame:
        """One row per task: task, attempt, rows, delivered, failed, errors, and the
        (topic, partition, first_offset, last_offset) ranges it wrote."""
        schema = (
            "task int, attempt int, rows long, delivered long, failed long, "
            "errors array<string>, partitions array<struct<topic: string, partition: int, "
            "first_offset: long, last_offset: long>>"
        )
        data = [
            (
                t.task,
                t.attempt,
                t.rows,
                t.delivered,
                t.failed,
                list(t.errors),
                [(tp, p, lo, hi) for (tp, p), (lo, hi) in sorted(t.offsets.items())],
            )
            for t in sorted(self.tasks, key=lambda t: t.task)
        ]
        return spark.createDataFrame(data, schema)

    def __str__(self) -> str:
        ranges = ", ".join(
            f"{t}[{p}]: {lo}..{hi}" for (t, p), (lo, hi) in sorted(self.offsets.items())
        )
        text = (
            f"write_kafka: {self.rows:,} rows, {self.delivered:,} delivered, {self.failed:,} "
            f"failed in {len(self.tasks)} tasks, {self.elapsed:.2f} s "
            f"({self.rows_per_second:,.0f} rows/s); offsets {ranges or '-'}"
        )
        if self.errors:
            text += "; first errors: " + "; ".join(self.errors[:_MAX_ERRORS])
        return text


# --------------------------------------------------------------------------- partitioners


def _murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2`` (Kafka's default partitioner), as unsigned 32 bits."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def _fnv1a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def kafka_partition(key: Optional[bytes], partitions: int, partitioner: str) -> Optional[int]:
    """The partition librdkafka's ``partitioner`` gives ``key`` among ``partitions``,
    or None where it picks one at random (NULL, and for some partitioners empty, keys)."""
    import zlib

    if partitioner in ("consistent_random", "consistent"):
        if not key:
            return 0 if partitioner == "consistent" else None
        return zlib.crc32(key) % partitions
    if partitioner in ("murmur2_random", "murmur2"):
        if key is None:
            return 0 if partitioner == "murmur2" else None
        return (_murmur2(key) & 0x7FFFFFFF) % partitions
    if partitioner in ("fnv1a_random", "fnv1a"):
        if key is None:
            return 0 if partitioner == "fnv1a" else None
        return _fnv1a(key) % partitions
    return None  # random: no key affinity


def _kpart_task(key: str, partitions: int, partitioner: str, batches: Iterator[Any]) -> Any:
    """mapInArrow: add the Kafka partition of each row's key (Python hash functions,
    for partitioners Spark SQL has no function for)."""
    import pyarrow as pa

    for batch in batches:
        col = batch.column(batch.schema.get_field_index(key))
        keys = col.to_pylist()
        parts = [
            kafka_partition(k.encode("utf-8") if isinstance(k, str) else k, partitions, partitioner)
            for k in keys
        ]
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(parts, pa.int64())], [*batch.schema.names, _KPART]
        )


# --------------------------------------------------------------------------- executor side


def _headers_list(col: Any) -> list[Any]:
    out: list[Any] = []
    for hs in col.to_pylist():
        if hs is None:
            out.append(None)
        else:
            out.append([(h["key"], h["value"]) for h in hs if h is not None])
    return out


def _messages(
    batch: Any, plan: Mapping[str, Any]
) -> Iterator[tuple[Optional[str], dict[str, Any], int]]:
    """(topic, produce_batch keyword arguments, row count) for one Arrow batch; topic
    None: rows that cannot be sent, with ``{"error": why}``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._arrow import record_json

    def col(name: Optional[str]) -> Any:
        return None if name is None else batch.column(batch.schema.get_field_index(name))

    def kwargs(b: Any) -> dict[str, Any]:
        def c(name: Optional[str]) -> Any:
            return None if name is None else b.column(b.schema.get_field_index(name))

        values = c(plan["value"]) if plan["value"] else record_json(b, tuple(plan["not_json"]))
        kw: dict[str, Any] = {"values": values, "keys": c(plan["key"])}
        if plan["partition"]:
            kw["partitions"] = c(plan["partition"])
        if plan["headers"]:
            kw["headers"] = _headers_list(c(plan["headers"]))
        return kw

    tcol = col(plan["topic_col"])
    if tcol is None:
        yield plan["topic"], kwargs(batch), batch.num_rows
        return
    if plan["topic"] is not None:
        tcol = pc.fill_null(tcol, plan["topic"])
    elif tcol.null_count:
        # Not sendable anywhere: counted as failed with this error, never dropped quietly.
        msg = f"{tcol.null_count} rows have a null topic and write_kafka() was given no topic"
        yield None, {"error": msg}, tcol.null_count
        keep = pc.is_valid(tcol)
        batch, tcol = batch.filter(keep), tcol.filter(keep)
        if batch.num_rows == 0:
            return
    uniq = pc.unique(tcol).to_pylist()
    if len(uniq) == 1:
        yield uniq[0], kwargs(batch), batch.num_rows
        return
    for t in uniq:  # one produce_batch per topic; filter keeps the rows' order
        sub = batch.filter(pc.equal(tcol, pa.scalar(t, tcol.type)))
        yield t, kwargs(sub), sub.num_rows


def _write_task(plan: Mapping[str, Any], batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow function: one producer for this task, every batch through
    produce_batch, one JSON report row out."""
    import pyarrow as pa
    from pyspark import TaskContext

    from .producer import Producer

    ctx = TaskContext.get()
    task = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    config = dict(plan["config"])
    txn_id = None
    if plan["transactional"]:
        txn_id = f"{plan['txn_prefix']}-{task}"
        config["transactional.id"] = txn_id
    result = TaskResult(task, attempt, 0, 0, 0, [], {}, txn_id)
    futures: list[Any] = []
    key = None if txn_id else _keep_key(config, plan["preset"])
    producer = _take_kept(key)
    if producer is None:  # (not `or`: an idle Producer is falsy, len() == 0)
        producer = Producer(config, preset=plan["preset"])
    keep = False
    result.producer = f"{os.getpid()}/{producer.name}"

    def send() -> None:
        for batch in batches:
            result.rows += batch.num_rows
            for topic, kw, _n in _messages(batch, plan):
                if topic is None:
                    if len(result.errors) < _MAX_ERRORS:
                        result.errors.append(kw["error"])
                    continue
                futures.append(producer.produce_batch(topic, **kw))
        producer.flush()
        for fut in futures:
            rep = fut.result()
            result.delivered += rep.delivered
            result.failed += rep.failed
            for index, exc in rep.errors[: max(0, _MAX_ERRORS - len(result.errors))]:
                result.errors.append(f"{rep.topic} row {index}: {exc.name}: {exc.message}")
            for p, hi in rep.last_offsets.items():
                lo = rep.first_offsets.get(p, hi)
                old = result.offsets.get((rep.topic, p))
                result.offsets[(rep.topic, p)] = (
                    (min(old[0], lo), max(old[1], hi)) if old else (lo, hi)
                )
        # Rows never handed to a produce_batch (a null topic) count as failed.
        result.failed += result.rows - result.delivered - result.failed

    aborted: Optional[str] = None
    try:
        if txn_id:
            aborted = _send_in_transaction(producer, send, result)
        else:
            send()
        keep = key is not None and not result.failed and len(producer) == 0
    finally:
        if keep and key is not None:
            _KEPT[key] = (producer, time.monotonic())
        else:
            producer.close()
    if result.failed and plan["on_error"] == "raise":
        raise KafkaWriteError(
            f"{_MARK} task {task} (attempt {attempt}): {result.failed:,} of {result.rows:,} "
            f"rows not delivered ({result.delivered:,} delivered"
            + (f", {aborted}" if aborted else "")
            + "); first errors: "
            + "; ".join(result.errors[:_MAX_ERRORS])
        )
    yield pa.record_batch({"report": [result.to_json()]})


class _RollBack(Exception):
    """Raised inside a task's transaction to abort it (some rows failed)."""


def _send_in_transaction(producer: Any, send: Any, result: TaskResult) -> Optional[str]:
    """Run ``send`` in one transaction: commit only if every row was delivered.

    All or nothing: if any row failed (or the commit is refused; librdkafka refuses
    to commit after a failed message, an abortable error), the transaction is aborted
    and every row of the task is reported failed -- none of them is visible to
    ``read_committed`` readers, whatever the delivery reports said.  Returns None
    when committed, else what happened (for the error message)."""
    from ._native import KafkaError

    producer.init_transactions()
    sent = False
    try:
        # transaction() aborts when the block raises (an exception from send() then
        # fails the task, as without a transaction), and also when the commit fails
        # with an abortable error (then re-raises it).
        with producer.transaction():
            send()
            sent = True
            if result.failed:
                raise _RollBack()
        return None
    except _RollBack:
        why = "transaction aborted"
    except KafkaError as e:
        if not sent:
            raise  # send()'s own error, already aborted by transaction(): the task fails
        # The commit was refused.
        if not e.txn_requires_abort:
            # Not aborted by transaction() (a fatal or timed-out commit): abort it
            # here; if that fails too the outcome is unknown, so the task fails.
            producer.abort_transaction()
        why = f"commit refused ({e.name}: {e.message}), transaction aborted"
    result.errors.insert(0, f"{why}: none of the task's {result.rows:,} rows committed")
    del result.errors[_MAX_ERRORS:]
    result.failed = result.rows
    result.delivered = 0
    result.offsets = {}  # written, but aborted: not visible to read_committed readers
    return why


def _keep_key(config: Mapping[str, Any], preset: Optional[str]) -> tuple[tuple[str, str], ...]:
    return (("\0preset", str(preset)), *sorted((str(k), str(v)) for k, v in config.items()))


def _take_kept(key: Optional[tuple[tuple[str, str], ...]]) -> Any:
    """A producer an earlier task of this worker left with this config, or None; also
    closes kept producers idle for longer than _KEEP_IDLE_S."""
    now = time.monotonic()
    for k, (p, used) in list(_KEPT.items()):
        if now - used > _KEEP_IDLE_S:
            del _KEPT[k]
            p.close()
    if key is None or key not in _KEPT:
        return None
    producer, _ = _KEPT.pop(key)
    return None if producer.closed else producer


@atexit.register
def _close_kept() -> None:
    """At the worker's exit: close kept producers (nothing is queued in them)."""
    while _KEPT:
        _, (p, _used) = _KEPT.popitem()
        p.close()


# --------------------------------------------------------------------------- driver side


def _config_key(k: str) -> str:
    # Python keywords cannot hold dots: linger_ms=20 means linger.ms=20.
    return k if "." in k else k.replace("_", ".")


def _field(df: DataFrame, name: str) -> Any:
    return next((f for f in df.schema.fields if f.name == name), None)


def _check_text(df: DataFrame, arg: str, name: str, hint: str) -> None:
    from pyspark.sql.types import BinaryType, StringType

    f = _field(df, name)
    if f is None:
        raise ValueError(f"{arg}={name!r}: no such column; columns are {df.columns}")
    if not isinstance(f.dataType, (StringType, BinaryType)):
        raise TypeError(
            f"{arg}={name!r}: column is {f.dataType.simpleString()}, not string or binary; {hint}"
        )


def _partition_count(config: Mapping[str, Any], topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    passthrough = {
        k: v
        for k, v in config.items()
        if k.startswith(("security.", "sasl.", "ssl.", "client.")) and isinstance(v, (str, int))
    }
    admin = AdminClient({**passthrough, "bootstrap.servers": config["bootstrap.servers"]})
    md = admin.list_topics(topic=topic, timeout=30)
    t = md.topics.get(topic)
    if t is None or t.error is not None or not t.partitions:
        why = t.error if t is not None else "not in the cluster's metadata"
        raise ValueError(
            f"topic {topic!r} on {config['bootstrap.servers']}: {why}; create it first "
            f"(write_kafka needs its partition count)"
        )
    return len(t.partitions)


def _spark_hash_long(v: int) -> int:
    """Spark's ``hash(bigint)`` (Murmur3_x86_32.hashLong, seed 42), a signed int32: what
    ``repartition(n, col)`` takes modulo ``n``."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    def mix(h1: int, k1: int) -> int:
        k1 = rotl((k1 * 0xCC9E2D51) & m, 15) * 0x1B873593 & m
        return (rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & m

    h = mix(mix(42, v & m), (v >> 32) & m) ^ 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _surrogates(n: int) -> list[int]:
    """For each k < n, a bigint whose Spark hash puts it in shuffle partition k, so that
    ``repartition(n, route)`` sends Kafka partition k's rows to Spark task k."""
    found: dict[int, int] = {}
    v = 0
    while len(found) < n:
        found.setdefault(_spark_hash_long(v) % n, v)  # Python's % is Spark's pmod here
        v += 1
    return [found[k] for k in range(n)]


def _ordered(
    df: DataFrame,
    key: Optional[str],
    partition: Optional[str],
    topic_col: Optional[str],
    n: Optional[int],
    partitioner: str,
) -> DataFrame:
    """Repartition so one task writes each Kafka partition, keeping df's order."""
    from pyspark.sql import functions as F

    df = df.withColumn(_SEQ, F.monotonically_increasing_id())
    if topic_col is not None or n is None:
        # Partition counts differ per topic: keep each (topic, key) in one task instead.
        cols = [c for c in (topic_col, partition or key) if c]
        return df.repartition(*cols).sortWithinPartitions(_SEQ)
    data_cols = [F.col(c) for c in df.columns if c != _SEQ]
    spread = F.pmod(F.xxhash64(*data_cols), F.lit(n))  # rows with no key affinity
    if partition is not None:
        kpart = F.coalesce(F.col(partition).cast("long"), spread)
    elif key is None:  # pragma: no cover - the caller asks only with a key or partition
        return df.sortWithinPartitions(_SEQ)
    elif partitioner in ("consistent_random", "consistent"):
        k = F.col(key).cast("binary")
        crc = F.pmod(F.crc32(k), F.lit(n))
        kpart = F.when(k.isNull() | (F.length(k) == 0), spread).otherwise(crc)
    elif partitioner in ("murmur2_random", "murmur2", "fnv1a_random", "fnv1a"):
        from pyspark.sql.types import LongType, StructField, StructType

        schema = StructType([*df.schema.fields, StructField(_KPART, LongType())])
        df = df.mapInArrow(functools.partial(_kpart_task, key, n, partitioner), schema)
        kpart = F.coalesce(F.col(_KPART), spread)
    else:  # random partitioner: keys have no partition, so nothing to keep together
        return df.sortWithinPartitions(_SEQ)
    route = F.element_at(
        F.array(*[F.lit(s).cast("long") for s in _surrogates(n)]),
        (F.pmod(kpart, F.lit(n)) + 1).cast("int"),
    )
    return df.withColumn(_ROUTE, route).repartition(n, _ROUTE).sortWithinPartitions(_SEQ)


def write_kafka(
    df: DataFrame,
    topic: Optional[str] = None,
    bootstrap_servers: Optional[str] = None,
    preset: Any = "ordered",
    key: Optional[str] = "key",
    value: Optional[str] = "value",
    headers: Optional[str] = None,
    partition: Optional[str] = None,
    on_error: str = "raise",
    repartition: Optional[bool] = None,
    **producer_config: Any,
) -> WriteReport:
    """Write ``df`` to Kafka with one cykafka producer per Spark task; return a report.

    Args:
        df: the rows to write.
        topic: the topic (a string ``topic`` column, if present, overrides it per row).
        bootstrap_servers: brokers (default ``$CYKAFKA_BOOTSTRAP_SERVERS``).
        preset: cykafka preset(s); ordering presets repartition by the key's Kafka
            partition (see the module docs).  ``None`` for librdkafka's defaults.
        key: key column (string/binary).  The default ``"key"`` is used only if the
            DataFrame has it; ``None``: no key.
        value: value column (string/binary), or ``None`` for each row as JSON (all
            columns except the ``headers``/``partition``/``topic`` ones).
        headers: header column, array<struct<key: string, value: binary>>; ``None``:
            the ``headers`` column if there is one.
        partition: int column with explicit partitions; ``None``: the ``partition``
            column if there is one.
        on_error: ``"raise"`` (a task that cannot deliver every row fails the job) or
            ``"report"`` (failures are counted in the report).
        repartition: ``None`` (default): repartition by Kafka partition under an
            ordering preset with a key or partition column.  ``False`` skips that
            shuffle (about 2 s per million 100-byte rows on 2 cores): per-key order then
            holds only if you already put each key's rows in one Spark partition in
            order (``df.repartition(n, "key").sortWithinPartitions("ts")``).  ``True``
            forces it under any preset.
        **producer_config: librdkafka properties; underscores stand for dots
            (``linger_ms=20``), or pass ``**{"linger.ms": 20}``.

    Raises:
        ValueError / TypeError: a bad argument or column, named in the message.
        KafkaWriteError: a task did not deliver all its rows (``on_error="raise"``).
    """
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
        StructType,
    )

    from . import presets as _presets
    from .config import translate
    from .explain import explain

    if on_error not in ("raise", "report"):
        raise ValueError(f"on_error must be 'raise' or 'report', not {on_error!r}")
    preset_names = _presets.parse(preset) if preset else []
    config: dict[str, Any] = {_config_key(k): v for k, v in producer_config.items()}
    servers = bootstrap_servers or config.get("bootstrap.servers") or os.environ.get(BOOTSTRAP_ENV)
    if not servers:
        raise ValueError(f"bootstrap_servers is required (or set ${BOOTSTRAP_ENV})")
    config["bootstrap.servers"] = servers
    for k, v in config.items():
        if callable(v):
            raise TypeError(f"producer config {k!r}: callables cannot travel to executors")
    transactional = "exactly_once" in preset_names
    user_txn = config.pop("transactional.id", None)
    check = dict(config, **({"transactional.id": "x"} if transactional else {}))
    guarantees = explain(check, preset=preset_names or None)
    if guarantees.refused:
        raise ValueError(f"producer config refused: {guarantees.summary()}")
    effective, _ = translate(_presets.apply(check, preset_names) if preset_names else check)
    partitioner = str(effective.get("partitioner", "consistent_random"))

    columns = df.columns
    if len(set(columns)) != len(columns):
        raise ValueError(f"duplicate column names in the DataFrame: {columns}")
    if key is not None:
        if key not in columns and key == "key":
            key = None  # the Spark convention's key column is optional
        else:
            _check_text(df, "key", key, "cast it, e.g. F.col(...).cast('string')")
    if value is not None:
        _check_text(df, "value", value, "cast it, or pass value=None to send each row as JSON")
    if headers is None and "headers" in columns:
        headers = "headers"
    if headers is not None:
        f = _field(df, headers)
        if f is None:
            raise ValueError(f"headers={headers!r}: no such column; columns are {columns}")
        t = f.dataType
        ok = (
            isinstance(t, ArrayType)
            and isinstance(t.elementType, StructType)
            and t.elementType.fieldNames()[:2] == ["key", "value"]
        )
        if not ok:
            raise TypeError(
                f"headers={headers!r}: column is {t.simpleString()}, not "
                f"array<struct<key:string,value:binary>>"
            )
    if partition is None and "partition" in columns:
        partition = "partition"
    if partition is not None:
        f = _field(df, partition)
        if f is None:
            raise ValueError(f"partition={partition!r}: no such column; columns are {columns}")
        if not isinstance(f.dataType, (IntegerType, LongType, ShortType)):
            raise TypeError(
                f"partition={partition!r}: column is {f.dataType.simpleString()}, not int"
            )
    topic_col = "topic" if "topic" in columns else None
    if topic_col is not None and not isinstance(_field(df, "topic").dataType, StringType):
        raise TypeError(
            f"the topic column is {_field(df, 'topic').dataType.simpleString()}, not string"
        )
    if topic is None and topic_col is None:
        raise ValueError("topic is required (or a string 'topic' column)")

    spark = df.sparkSession
    if repartition not in (None, True, False):
        raise ValueError(f"repartition must be None, True or False, not {repartition!r}")
    wants_order = (
        bool(set(preset_names) & set(_ORDERING_PRESETS)) if repartition is None else repartition
    )
    ordered = wants_order and (key is not None or partition is not None)
    # The partition count (one metadata round trip) is only needed to route the rows.
    single = topic is not None and topic_col is None
    n = _partition_count(config, topic) if ordered and single and topic is not None else None
    out = _ordered(df, key, partition, topic_col, n, partitioner) if ordered else df
    meta = [c for c in (headers, partition, topic_col) if c]
    plan = {
        "config": config,
        "preset": "+".join(preset_names) or None,
        "topic": topic,
        "topic_col": topic_col,
        "key": key,
        "value": value,
        "headers": headers,
        "partition": partition,
        "not_json": [*meta, _SEQ, _ROUTE, _KPART],
        "on_error": on_error,
        "transactional": transactional,
        "txn_prefix": "-".join(
            [
                str(user_txn or "cykafka-spark"),
                spark.sparkContext.applicationId,
                uuid.uuid4().hex[:8],
            ]
        ),
    }
    report = WriteReport(topic=topic, ordered=ordered)
    t0 = time.monotonic()
    try:
        rows = out.mapInArrow(functools.partial(_write_task, plan), "report string").collect()
    except Exception as e:
        text = str(e)
        at = text.find(_MARK)
        if at >= 0:
            line = text[at + len(_MARK) :].strip().splitlines()[0]
            raise KafkaWriteError(line) from e
        raise
    report.elapsed = time.monotonic() - t0
    for r in rows:
        t = TaskResult.from_json(r["report"])
        report.tasks.append(t)
        report.rows += t.rows
        report.delivered += t.delivered
        report.failed += t.failed
        report.errors.extend(t.errors[: max(0, _MAX_ERRORS - len(report.errors))])
        for tp, (lo, hi) in t.offsets.items():
            old = report.offsets.get(tp)
            report.offsets[tp] = (min(old[0], lo), max(old[1], hi)) if old else (lo, hi)
    return report
