"""What the driver decides before any row moves: :class:`WritePlan`, built by
:func:`make_plan` from the DataFrame's schema and a :class:`WriteRequest` (the
arguments of ``write_kafka`` or ``kafka_batch_writer``, checked and resolved once).

Every check that can fail here does (bad columns, options, presets), so a mistake is
one clear error on the driver, not a failed Spark job.  The plan travels to the
executors as a plain dict (:meth:`WritePlan.to_wire`): unpickling it must not need
cykafka, so that an executor without cykafka can still say so clearly."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField

    from ..config import ResolvedConfig
    from ..config.types import JSONValue
    from ..explain import Guarantees
    from ..presets import PresetSpec
    from ..schema_registry.formats import RegistryLike

__all__ = [
    "BOOTSTRAP_ENV",
    "WritePlan",
    "WriteRequest",
    "make_plan",
    "producer_options",
    "write_request",
]

#: Environment variable naming the brokers when ``bootstrap_servers`` is not given.
BOOTSTRAP_ENV = "CYKAFKA_BOOTSTRAP_SERVERS"
# Helper columns added for ordered writes; never sent.
SEQ, ROUTE, KPART = "__cykafka_seq", "__cykafka_route", "__cykafka_kpart"
# Spark's Kafka sink options that cykafka cannot honour, with the reason.
_SPARK_REFUSED = {
    "key.serializer": "keys are written as the key column's bytes (string or binary)",
    "value.serializer": "values are written as the value column's bytes (string or binary)",
}


@dataclass(frozen=True)
class WritePlan:
    """What the driver decided for one write (or one micro-batch)."""

    #: producer config as given (dots, ``kafka.`` prefix removed), bootstrap included,
    #: without ``transactional.id`` (each task gets its own)
    config: dict[str, object]
    preset: Optional[str]  # "ordered+java_compatible"-style, or None
    topic: Optional[str]
    topic_col: Optional[str]
    key: Optional[str]
    value: Optional[str]  # None: each row as JSON
    headers: Optional[str]
    partition: Optional[str]
    not_json: tuple[str, ...]  # columns left out of a JSON value
    on_error: str  # "raise" | "report"
    partitioner: str  # librdkafka's, after presets and translation
    ordered: bool  # rows are routed so one task writes each Kafka partition
    partition_count: Optional[int]  # of ``topic``, when routing needed it
    writers: Optional[int]  # ordered: tasks that write (None: one per Kafka partition)
    order_by: tuple[str, ...]  # ordered: each task sorts its rows by these columns
    transactional: bool
    txn_prefix: str  # a unit's transactional.id is "<txn_prefix>-<unit>"
    # exactly_once: the write's name (job_id, or the streaming query's name), its work
    # units (Spark task k writes unit k, in one transaction), and the progress topic
    # each unit's transaction also writes its record to (cykafka.spark.progress).
    job: Optional[str] = None
    job_named: bool = False  # by the caller (job_id, query): it may have run before
    units: Optional[int] = None
    progress_topic: Optional[str] = None
    query: Optional[str] = None
    batch_id: Optional[int] = None
    # Schema Registry (cykafka.schema_registry.registry_fields): value/key formats, the
    # registry's URL or client config, and the schemas as text (read on the driver)
    value_format: Optional[str] = None
    key_format: Optional[str] = None
    schema_registry: Union[str, dict[str, object], None] = None
    value_schema: Optional[str] = None
    key_schema: Optional[str] = None
    #: what the config guarantees, in one sentence (:meth:`Guarantees.summary`), for the report
    guarantees: str = ""
    #: the driver's resolution of the producer config (:meth:`ResolvedConfig.to_wire`),
    #: without ``transactional.id``: each task's producer is built from it, not resolved
    #: again
    resolved: dict[str, JSONValue] = dataclasses.field(default_factory=dict)

    def to_wire(self) -> dict[str, JSONValue]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, d: Mapping[str, JSONValue]) -> WritePlan:
        return cls(
            **{
                **d,
                "not_json": tuple(d["not_json"]),
                "order_by": tuple(d["order_by"]),
            }
        )

    def with_batch(self, batch_id: int) -> WritePlan:
        return dataclasses.replace(self, batch_id=batch_id)


def producer_options(options: Mapping[str, object]) -> dict[str, object]:
    """Producer config from ``write_kafka``'s keyword options: ``linger_ms=20`` means
    ``linger.ms``; Spark's Kafka sink names (``kafka.bootstrap.servers``, any
    ``kafka.``-prefixed Kafka property) lose the prefix and then go through cykafka's
    config layer like any Java property name."""
    out: dict[str, object] = {}
    origin: dict[str, str] = {}
    for given, v in options.items():
        k = given if "." in given else given.replace("_", ".")
        if k.startswith("kafka."):
            k = k[len("kafka.") :]
            if k in _SPARK_REFUSED:
                raise ValueError(f"{given}: not supported ({_SPARK_REFUSED[k]})")
        if callable(v):
            raise TypeError(f"producer config {given!r}: callables cannot travel to executors")
        if k in out and str(out[k]) != str(v):
            raise ValueError(f"{origin[k]} and {given} both set {k} with different values")
        out[k], origin[k] = v, given
    return out


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
    """``topic``'s partition count from the cluster's metadata (one round trip)."""
    from confluent_kafka.admin import AdminClient

    from ..cluster.admin import connection_config, find_topic, short_lived
    from ..cluster.errors import confluent_errors

    # The producer's connection settings as the producer gets them (Java names, a JAAS
    # line, translated): what Spark's own Kafka sink takes works here too.
    with confluent_errors():
        admin = AdminClient(short_lived(connection_config(config)))
    t = find_topic(admin, topic, 30)
    if t is None or not t.partitions:
        raise ValueError(
            f"topic {topic!r} on {config['bootstrap.servers']}: not in the cluster's "
            f"metadata; create it first (write_kafka needs its partition count)"
        )
    return len(t.partitions)


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


@dataclass(frozen=True)
class WriteRequest:
    """A write's arguments, checked and resolved once, before any DataFrame: one
    ``write_kafka`` call, or every micro-batch of a ``kafka_batch_writer`` (whose bad
    arguments so fail when the writer is made, not at the first batch).
    :func:`make_plan` checks it against each DataFrame."""

    #: producer config as given (dots, ``kafka.`` prefix removed), bootstrap included,
    #: without ``transactional.id`` (each task gets its own)
    config: dict[str, object]
    #: the producer config resolved (presets, Java names, defaults), without
    #: ``transactional.id``
    resolved: ResolvedConfig
    transactional: bool
    guarantees: Guarantees
    txn_base: str  # the user's transactional.id, or "cykafka-spark"
    topic: Optional[str]
    key: Optional[str]
    value: Optional[str]
    headers: Optional[str]
    partition: Optional[str]
    on_error: str
    repartition: Optional[bool]
    writers: Optional[int]
    order_by: tuple[str, ...]
    job_id: Optional[str]
    query: Optional[str]
    progress_topic: Optional[str]
    # Schema Registry, as WritePlan holds it (registry_fields: schemas read into text)
    value_format: Optional[str]
    key_format: Optional[str]
    schema_registry: Union[str, dict[str, object], None]
    value_schema: Optional[str]
    key_schema: Optional[str]


def write_request(
    topic: Optional[str],
    bootstrap_servers: Optional[str],
    preset: PresetSpec,
    options: Mapping[str, object],
    *,
    key: Optional[str],
    value: Optional[str],
    headers: Optional[str],
    partition: Optional[str],
    on_error: str,
    repartition: Optional[bool],
    writers: Optional[int],
    order_by: Union[str, Sequence[str], None],
    progress_topic: Optional[str],
    value_format: Optional[str] = None,
    key_format: Optional[str] = None,
    schema_registry: Optional[RegistryLike] = None,
    value_schema: Optional[str] = None,
    key_schema: Optional[str] = None,
    job_id: Optional[str] = None,
    query: Optional[str] = None,
) -> WriteRequest:
    """Check the arguments that need no DataFrame and resolve the producer config (the
    one resolver: presets, Java names, defaults, as each task's Producer will do)."""
    from .. import presets as _presets
    from ..config import resolve
    from ..explain import explain

    if on_error not in ("raise", "report"):
        raise ValueError(f"on_error must be 'raise' or 'report', not {on_error!r}")
    if repartition not in (None, True, False):
        raise ValueError(f"repartition must be None, True or False, not {repartition!r}")
    if writers is not None and (
        isinstance(writers, bool) or not isinstance(writers, int) or writers < 1
    ):
        raise ValueError(f"writers must be a positive int or None, not {writers!r}")
    sort = (order_by,) if isinstance(order_by, str) else tuple(order_by or ())
    for c in sort:
        if not isinstance(c, str):
            raise ValueError(f"order_by: {c!r} is not a column name")
    preset_names = tuple(_presets.parse(preset)) if preset else ()
    config = producer_options(options)
    servers = bootstrap_servers or config.get("bootstrap.servers") or os.environ.get(BOOTSTRAP_ENV)
    if not servers:
        raise ValueError(
            f"bootstrap_servers is required (or kafka.bootstrap.servers, or ${BOOTSTRAP_ENV})"
        )
    config["bootstrap.servers"] = servers
    user_txn = config.pop("transactional.id", None)
    # A transactional write gets its ids per work unit, on the executors: resolved here
    # with a stand-in id, so that what is explained is a transactional producer.
    transactional = _presets.needs_transactional_id(list(preset_names))
    resolved = resolve(
        dict(config, **{"transactional.id": "x"}) if transactional else config,
        list(preset_names),
    )
    guarantees = explain(resolved)
    if guarantees.refused:
        raise ValueError(f"producer config refused: {guarantees.summary()}")
    query = query if transactional else None  # a query's name matters to exactly_once only
    job = query or job_id
    if job is not None and (not isinstance(job, str) or not job or "/" in job):
        raise ValueError(f"job_id/query must be a non-empty string without '/', not {job!r}")
    if not transactional and (job_id is not None or progress_topic is not None):
        raise ValueError("job_id= and progress_topic= apply to preset='exactly_once'")
    registry: Union[str, dict[str, object], None] = None
    if value_format or key_format or schema_registry:
        from ..schema_registry.formats import registry_fields

        reg = registry_fields(value_format, key_format, schema_registry, value_schema, key_schema)
        registry, value_schema, key_schema = (
            reg["schema_registry"],
            reg["value_schema"],
            reg["key_schema"],
        )
    return WriteRequest(
        config=config,
        resolved=resolved.without("transactional.id") if transactional else resolved,
        transactional=transactional,
        guarantees=guarantees,
        txn_base=str(user_txn or "cykafka-spark"),
        topic=topic,
        key=key,
        value=value,
        headers=headers,
        partition=partition,
        on_error=on_error,
        repartition=repartition,
        writers=writers,
        order_by=sort,
        job_id=job_id,
        query=query,
        progress_topic=progress_topic,
        value_format=value_format,
        key_format=key_format,
        schema_registry=registry,
        value_schema=value_schema,
        key_schema=key_schema,
    )


def make_plan(df: DataFrame, req: WriteRequest) -> WritePlan:
    """Check ``req`` against ``df``'s schema and decide the write.  ``req.query``
    (streaming) or ``req.job_id`` names an exactly_once write, so that its
    transactional ids and progress records stay the same across runs."""
    value = req.value
    if req.value_format and value is not None:
        # A registry format serializes a value column of any type (a struct, a long,
        # ...); the string/binary rule of _columns is for raw values.
        if value not in df.columns:
            raise ValueError(f"value={value!r}: no such column; columns are {df.columns}")
        value = None
    key, headers, partition, topic_col = _columns(df, req.key, value, req.headers, req.partition)
    if req.key_format and not key:
        raise ValueError("key_format serializes the key column: the DataFrame has none")
    topic, transactional, writers = req.topic, req.transactional, req.writers
    if topic is None and topic_col is None:
        raise ValueError("topic is required (or a string 'topic' column)")
    # Rows go to Kafka in a defined order when the config keeps each partition in order
    # (the ordering presets, or idempotence set by hand), unless repartition= says.
    wants_order = (
        req.guarantees.ordering == "per-partition" if req.repartition is None else req.repartition
    )
    ordered = wants_order and (key is not None or partition is not None)
    if writers is not None and not ordered and not transactional:
        raise ValueError(
            "writers= applies to ordered writes (an ordering preset or repartition=True, "
            "with a key or partition column)"
        )
    for c in req.order_by:
        if c not in df.columns:
            raise ValueError(f"order_by: {c!r} is not a column; columns are {df.columns}")
    if req.order_by and not (ordered or transactional):
        raise ValueError(
            "order_by= applies to ordered writes (an ordering preset or repartition=True, "
            "with a key or partition column) and to exactly_once"
        )
    # The partition count (one metadata round trip) is only needed to route the rows.
    single = topic is not None and topic_col is None
    routed = (ordered or transactional) and single and topic is not None and writers != 1
    n = partition_count(req.config, topic) if routed and topic is not None else None
    # Batches sized for the topic's max.message.bytes (one DescribeConfigs): the broker
    # refuses a larger record batch whole and librdkafka fails every row in it.
    resolved, guarantees = req.resolved, req.guarantees.summary()
    if single and topic is not None:
        from ..cluster.admin import topic_limits
        from ..config import batch_sizing

        resolved = resolved.sized_for(topic_limits(req.config, [topic]))
        sized = batch_sizing(resolved)
        if sized is not None:
            guarantees = f"{guarantees} {sized[0].upper()}{sized[1:]}."
    job, progress_topic = req.query or req.job_id, req.progress_topic
    if transactional:
        job = job or _run_id(df)
        if progress_topic is None:
            from .progress import DEFAULT_PROGRESS_TOPIC

            progress_topic = f"{topic}.cykafka-progress" if single else DEFAULT_PROGRESS_TOPIC
    return WritePlan(
        config=req.config,
        preset="+".join(resolved.presets) or None,
        topic=topic,
        topic_col=topic_col,
        key=key,
        value=req.value,
        headers=headers,
        partition=partition,
        not_json=tuple(c for c in (headers, partition, topic_col, SEQ, ROUTE, KPART) if c),
        on_error=req.on_error,
        partitioner=str(resolved.effective("partitioner").value),
        ordered=ordered,
        partition_count=n,
        writers=writers,
        order_by=req.order_by,
        transactional=transactional,
        txn_prefix=f"{req.txn_base}-{job}" if transactional else req.txn_base,
        job=job if transactional else None,
        job_named=transactional and (req.query or req.job_id) is not None,
        units=_units(df, single, n, writers) if transactional else None,
        progress_topic=progress_topic if transactional else None,
        query=req.query,
        guarantees=guarantees,
        resolved=resolved.to_wire(),
        value_format=req.value_format,
        key_format=req.key_format,
        schema_registry=req.schema_registry,
        value_schema=req.value_schema,
        key_schema=req.key_schema,
    )
