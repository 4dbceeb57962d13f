"""What the driver decides for one DataFrame before any row moves: :class:`WritePlan`,
made by :func:`make_plan` from the DataFrame's schema and the write's
:class:`~cykafka.spark.options.WriteOptions` (checked and resolved once, before any
DataFrame).

Every check that can fail here does (bad columns, options, presets), so a mistake is
one clear error on the driver, not a failed Spark job.  The plan travels to the
executors as plain data (:meth:`WritePlan.to_json`): unpickling it must not need
cykafka, so that an executor without cykafka can still say so clearly."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from .options import WriteOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField

    from ..config import ResolvedConfig
    from ..config.types import JSONValue

__all__ = ["WritePlan", "make_plan", "partition_count"]

# Helper columns added for ordered writes; never sent.
SEQ, ROUTE, KPART = "__cykafka_seq", "__cykafka_route", "__cykafka_kpart"


@dataclass(frozen=True)
class WritePlan:
    """What the driver decided for one DataFrame (one write, or one micro-batch): the
    write's options, and what they decide against this DataFrame."""

    options: WriteOptions
    # The columns as found in the DataFrame: key (None when the default "key" column is
    # absent), headers and partition (their default columns when present), topic.
    key_col: Optional[str]
    headers_col: Optional[str]
    partition_col: Optional[str]
    topic_col: Optional[str]
    not_json: tuple[str, ...]  # columns left out of a JSON value
    ordered: bool  # rows are routed so one task writes each Kafka partition
    partition_count: Optional[int]  # of the topic, when routing needed it
    #: what the producers guarantee, in one sentence (:meth:`Guarantees.summary`), for the report
    guarantees: str
    # exactly_once: the write's name (job_id, the streaming query's name, or one made for
    # this call), its work units (Spark task k writes unit k, in one transaction), and
    # the progress topic each unit's transaction also writes its record to
    # (cykafka.spark.progress).
    job: Optional[str] = None
    job_named: bool = False  # by the caller (job_id, query): it may have run before
    units: Optional[int] = None
    progress_topic: Optional[str] = None
    batch_id: Optional[int] = None
    #: topic -> max.message.bytes, read on the driver (the write's topic, or ``topics=``)
    topic_limits: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @property
    def transactional(self) -> bool:
        return self.options.transactional

    def producer_config(self, unit: int) -> ResolvedConfig:
        """The config Spark task ``unit``'s producer runs with."""
        return self.options.unit_config(self.job, unit)

    def to_json(self) -> dict[str, JSONValue]:
        """Plain data for the executors (:meth:`from_json`)."""
        d: dict[str, JSONValue] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["options"] = self.options.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, JSONValue]) -> WritePlan:
        options = d["options"]
        assert isinstance(options, dict)
        return cls(
            **{
                **d,
                "options": WriteOptions.from_json(options),
                "not_json": tuple(d["not_json"]),
            }
        )


def _field(df: DataFrame, name: str) -> Optional[StructField]:
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


def _columns(
    df: DataFrame,
    key: Optional[str],
    value: Optional[str],
    headers: Optional[str],
    partition: Optional[str],
) -> tuple[Optional[str], Optional[str], Optional[str], Optional[str]]:
    """The (key, headers, partition, topic) columns, checked against the schema."""
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
        StructType,
    )

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
    tf = _field(df, "topic")
    topic_col = "topic" if tf is not None else None
    if tf is not None:
        t = tf.dataType
        if not isinstance(t, StringType):
            raise TypeError(f"the topic column is {t.simpleString()}, not string")
    return key, headers, partition, topic_col


def partition_count(config: Mapping[str, object], topic: str) -> int:
    """``topic``'s partition count from the cluster's metadata (one round trip);
    :class:`~cykafka.cluster.reach.ClusterUnreachable` when no broker answers, as every
    front door says it."""
    from ..cluster.reach import probe_topic

    # The producer's connection settings as the producer gets them (Java names, a JAAS
    # line, translated): what Spark's own Kafka sink takes works here too.
    count, _ = probe_topic(str(config["bootstrap.servers"]), config, topic)
    if not count:
        raise ValueError(
            f"topic {topic!r} on {config['bootstrap.servers']}: not in the cluster's "
            f"metadata; create it first (write_kafka needs its partition count)"
        )
    return count


def _conf(df: DataFrame, name: str) -> Optional[str]:
    """A Spark setting where the session exposes it (classic and Connect sessions both
    answer ``spark.conf.get``), else None."""
    try:
        value = df.sparkSession.conf.get(name, None)
    except Exception:  # a session that does not expose it
        return None
    return None if value is None else str(value)


def _run_id(df: DataFrame) -> str:
    """A name unique to this call: the Spark application id and a random token."""
    import uuid

    return f"{_conf(df, 'spark.app.id') or 'app'}-{uuid.uuid4().hex[:8]}"


def _units(df: DataFrame, single: bool, n: Optional[int], writers: Optional[int]) -> int:
    """exactly_once: how many work units a write's rows are split into by content
    (each written in one transaction).  A fact of the topic and the arguments, never of
    the cluster's parallelism, so a re-run splits the rows the same way: the Kafka
    partitions (or ``writers`` groups of them) for one topic; with a ``topic`` column,
    ``writers`` or ``spark.sql.shuffle.partitions``."""
    if writers == 1:
        return 1
    if single and n is not None:
        return min(writers or n, n)
    return writers or int(_conf(df, "spark.sql.shuffle.partitions") or 200)


def _with_sizing(summary: str, resolved: ResolvedConfig) -> str:
    """The guarantees' summary, ending with what sizing the batches for the topic did."""
    from ..config import batch_sizing

    sized = batch_sizing(resolved)
    return summary if sized is None else f"{summary} {sized[0].upper()}{sized[1:]}."


def make_plan(
    df: DataFrame,
    options: WriteOptions,
    *,
    query: Optional[str] = None,
    batch_id: Optional[int] = None,
) -> WritePlan:
    """Check ``options`` against ``df``'s schema and decide the write.  ``query`` (a
    streaming query's name, which ``kafka_batch_writer`` checked) or ``options.job_id``
    names an exactly_once write, so that its transactional ids and progress records
    stay the same across runs; ``batch_id``: the micro-batch."""
    o = options
    value = o.value
    if o.value_format and value is not None:
        # A registry format serializes a value column of any type (a struct, a long,
        # ...); the string/binary rule of _columns is for raw values.
        if value not in df.columns:
            raise ValueError(f"value={value!r}: no such column; columns are {df.columns}")
        value = None
    key, headers, partition, topic_col = _columns(df, o.key, value, o.headers, o.partition)
    if o.key_format and not key:
        raise ValueError("key_format serializes the key column: the DataFrame has none")
    topic, transactional, writers = o.topic, o.transactional, o.writers
    if topic is None and topic_col is None:
        raise ValueError("topic is required (or a string 'topic' column)")
    single = topic is not None and topic_col is None
    if o.topics is not None and topic_col is None:
        raise ValueError(
            "topics= names the topics of a 'topic' column: the DataFrame has none "
            f"(columns are {df.columns}); its rows go to topic={topic!r}"
        )
    limits: dict[str, int] = {}
    sized = list(o.topics or ()) + ([topic] if topic is not None else [])
    if sized:
        # Batches sized for the topics' max.message.bytes (one DescribeConfigs): the
        # broker refuses a larger record batch whole and librdkafka fails every row in it.
        from ..cluster.admin import topic_limits

        limits = topic_limits(o.config, sized)
        o = o.sized_for(limits)
    named = (query if transactional else None) or o.job_id
    job = (named or _run_id(df)) if transactional else None
    guarantees = o.guarantees(job)
    # Rows go to Kafka in a defined order when the config keeps each partition in order
    # (the ordering presets, or idempotence set by hand), unless repartition= says.
    wants_order = guarantees.ordering == "per-partition" if o.repartition is None else o.repartition
    ordered = wants_order and (key is not None or partition is not None)
    if writers is not None and not ordered and not transactional:
        raise ValueError(
            "writers= applies to ordered writes (an ordering preset or repartition=True, "
            "with a key or partition column)"
        )
    for c in o.order_columns:
        if c not in df.columns:
            raise ValueError(f"order_by: {c!r} is not a column; columns are {df.columns}")
    if o.order_columns and not (ordered or transactional):
        raise ValueError(
            "order_by= applies to ordered writes (an ordering preset or repartition=True, "
            "with a key or partition column) and to exactly_once"
        )
    # The partition count (one metadata round trip) is only needed to route the rows.
    routed = (ordered or transactional) and single and topic is not None and writers != 1
    n = partition_count(o.config, topic) if routed and topic is not None else None
    progress_topic = o.progress_topic
    if transactional and progress_topic is None:
        from .progress import DEFAULT_PROGRESS_TOPIC

        progress_topic = f"{topic}.cykafka-progress" if single else DEFAULT_PROGRESS_TOPIC
    return WritePlan(
        options=o,
        key_col=key,
        headers_col=headers,
        partition_col=partition,
        topic_col=topic_col,
        not_json=tuple(c for c in (headers, partition, topic_col, SEQ, ROUTE, KPART) if c),
        ordered=ordered,
        partition_count=n,
        guarantees=_with_sizing(guarantees.summary(), o.resolved),
        job=job,
        job_named=named is not None,
        units=_units(df, single, n, writers) if transactional else None,
        progress_topic=progress_topic if transactional else None,
        batch_id=batch_id,
        topic_limits=limits,
    )
