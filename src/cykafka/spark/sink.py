"""The driver side of :func:`write_kafka`: plan, route, run the tasks, gather the report."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Union

from ..cluster.admin import connection_config, ensure_progress_topic
from .executor import shipped
from .plan import WritePlan, make_plan, write_request
from .report import SETUP_MARK, TASK_MARK, KafkaWriteError, TaskResult, WriteReport
from .routing import ordered as _ordered

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..presets import PresetSpec
    from ..schema_registry.formats import RegistryLike

__all__ = ["run_plan", "write_kafka"]

_logger = logging.getLogger("cykafka.spark")


def write_kafka(
    df: DataFrame,
    topic: Optional[str] = None,
    bootstrap_servers: Optional[str] = None,
    preset: PresetSpec = "ordered",
    key: Optional[str] = "key",
    value: Optional[str] = "value",
    headers: Optional[str] = None,
    partition: Optional[str] = None,
    on_error: str = "raise",
    repartition: Optional[bool] = None,
    writers: Optional[int] = None,
    order_by: Union[str, Sequence[str], None] = None,
    value_format: Optional[str] = None,
    key_format: Optional[str] = None,
    schema_registry: Optional[RegistryLike] = None,
    value_schema: Optional[str] = None,
    key_schema: Optional[str] = None,
    job_id: Optional[str] = None,
    progress_topic: Optional[str] = None,
    **producer_config: object,
) -> WriteReport:
    """Write ``df`` to Kafka with one cykafka producer per Spark task; return a report.

    Runs in classic and Spark Connect sessions alike (DataFrame operations only).

    Args:
        df: the rows to write.
        topic: the topic (a string ``topic`` column, if present, overrides it per row).
        bootstrap_servers: brokers (default ``kafka.bootstrap.servers`` among the
            options, then ``$CYKAFKA_BOOTSTRAP_SERVERS``).
        preset: cykafka preset(s); ordering presets repartition by the key's Kafka
            partition (see the package docs).  ``None`` for librdkafka's defaults.
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
            shuffle: per-key order then holds only if you already put each key's rows
            in one Spark partition in order
            (``df.repartition(n, "key").sortWithinPartitions("ts")``).  ``True``
            forces it under any preset.
        writers: ordered writes: how many Spark tasks write, each owning whole Kafka
            partitions.  ``None`` (default): one per Kafka partition, after a shuffle
            that routes each row to its partition's task (scales out with the
            cluster).  ``1``: one task writes every row in the DataFrame's order with
            no shuffle at all (``coalesce(1)``): about twice as fast on a small
            machine, but one producer's throughput is the ceiling.
        order_by: ordered writes: a column name or a list of them; each Kafka
            partition gets its rows in this order (ties: the DataFrame's order), however
            Spark split and shuffled the rows -- no global sort needed.  Without it a
            partition gets its rows in the DataFrame's order, which is only defined after
            ``df.orderBy(...)``.  Each attempt of a task writes in this order: a task
            retried without ``exactly_once`` writes its rows again after those its
            failed attempt wrote (``report.duplicates`` counts them).
        value_format / key_format: ``"avro"``, ``"json-schema"`` or ``"protobuf"``:
            serialize the value (the ``value`` column, or the row) / the key column
            for a Confluent Schema Registry (:mod:`cykafka.schema_registry`); a row
            that does not fit the schema fails alone (counted, with its error).
        schema_registry: the registry's URL or client config dict (each executor
            makes its own client).
        value_schema / key_schema: schema file or inline JSON (Avro: derived from the
            DataFrame's columns when omitted); protobuf: ``module:Message``.
        job_id: ``exactly_once``: a stable name for this write.  Pass the same name
            when you run the same write again (after a driver crash, say): the units
            it committed are then skipped, not written twice.  Default: a name unique
            to this call (task retries and speculative copies within the call are
            covered either way).
        progress_topic: ``exactly_once``: where each unit's transaction records that
            it committed (default ``"<topic>.cykafka-progress"``, or
            ``"cykafka-spark-progress"`` with a ``topic`` column; created compacted,
            with one partition, if missing).
        **producer_config: producer properties: librdkafka or Java names, underscores
            standing for dots (``linger_ms=20``), or Spark's Kafka sink options as
            they are (``**{"kafka.bootstrap.servers": ..., "kafka.acks": "all"}``).

    Raises:
        ValueError / TypeError: a bad argument or column, named in the message.
        KafkaWriteError: a task did not deliver all its rows (``on_error="raise"``), or
            the executors cannot import cykafka (the message says how to ship it).
    """
    request = write_request(
        topic,
        bootstrap_servers,
        preset,
        producer_config,
        key=key,
        value=value,
        headers=headers,
        partition=partition,
        on_error=on_error,
        repartition=repartition,
        writers=writers,
        order_by=order_by,
        progress_topic=progress_topic,
        value_format=value_format,
        key_format=key_format,
        schema_registry=schema_registry,
        value_schema=value_schema,
        key_schema=key_schema,
        job_id=job_id,
    )
    plan = make_plan(df, request)
    return run_plan(df, plan)


def run_plan(df: DataFrame, plan: WritePlan) -> WriteReport:
    """Route ``df`` as ``plan`` says, run one write task per Spark partition, and
    gather their results (one ``mapInArrow`` and one ``collect``)."""
    out = df
    if plan.transactional:
        plan = _first_attempts_units(plan)
    if plan.ordered or plan.transactional:
        out = _ordered(
            df,
            plan.key,
            plan.partition,
            plan.topic_col,
            plan.partition_count,
            plan.partitioner,
            plan.writers,
            plan.units,
            plan.order_by,
        )
    report = WriteReport(
        topic=plan.topic,
        ordered=plan.ordered,
        batch_id=plan.batch_id,
        units=plan.units,
        guarantees=plan.guarantees,
    )
    fn = shipped("cykafka.spark.executor", "write_task", plan.to_json())
    t0 = time.monotonic()
    # Without transactions a retried task writes its rows again: the topic's ends
    # before and after the write tell how many records the failed attempts left.
    ends = None if plan.transactional or plan.topic_col else _log_ends(plan)
    try:
        rows = out.mapInArrow(fn, "report string").collect()
    except Exception as e:
        raise _task_error(e) from e
    report.elapsed = time.monotonic() - t0
    for r in rows:
        report.add(TaskResult.from_json(r["report"]))
    if report.retried and not plan.transactional:
        _count_rewritten(report, plan, ends)
    if not rows:
        # No row: Spark replaces an empty shuffle by an empty relation and runs no
        # task, and no unit has anything to commit.
        report.units = None
    return report


def _log_ends(plan: WritePlan) -> Optional[dict[int, int]]:
    """``plan.topic``'s log end per partition, or None if it cannot be read (the
    report then bounds what a retry wrote again instead of counting it)."""
    from ..cluster.wire import log_ends

    assert plan.topic is not None
    try:
        return log_ends(connection_config(plan.config), plan.topic)
    except Exception as e:  # the write goes on; the report says it did not measure
        _logger.info("write_kafka: cannot read the log ends of %r (%s)", plan.topic, e)
        return None


def _count_rewritten(
    report: WriteReport, plan: WritePlan, before: Optional[dict[int, int]]
) -> None:
    """Some task was retried without transactions: count the records its failed
    attempts left in the topic (all records written minus those the report counts
    delivered), and widen the offsets to every record written, theirs included."""
    after = None if before is None else _log_ends(plan)
    if before is None or after is None:
        report.duplicates = None
        return
    assert plan.topic is not None
    written = 0
    for p, end in after.items():
        start = before.get(p, 0)
        if end > start:
            written += end - start
            old = report.offsets.get((plan.topic, p))
            report.offsets[(plan.topic, p)] = (
                (min(old[0], start), max(old[1], end - 1)) if old else (start, end - 1)
            )
    report.duplicates = max(written - report.delivered, 0)


def _first_attempts_units(plan: WritePlan) -> WritePlan:
    """exactly_once: create the progress topic if needed, and split the rows into as
    many units as an earlier attempt of this job or micro-batch committed with, if
    one did (whatever the parallelism then and now)."""
    import dataclasses

    from . import progress

    assert plan.progress_topic is not None and plan.job is not None
    client = connection_config(plan.config)
    ensure_progress_topic(client, plan.progress_topic)
    if not plan.job_named:
        return plan  # a name made for this call: nothing of it can be committed yet
    first = progress.batch_units(
        progress.read_job(client, plan.progress_topic, plan.job), plan.batch_id
    )
    if first is None:
        return plan
    parts = first["partitions"]
    if parts is not None and plan.partition_count is not None and parts != plan.partition_count:
        raise ValueError(
            f"{plan.job!r}: part of this write was committed when {plan.topic!r} had {parts} "
            f"partitions; it has {plan.partition_count} now, so its keys map to other "
            f"partitions and the rest cannot be written exactly once"
        )
    return dataclasses.replace(plan, units=first["units"])


def _task_error(e: Exception) -> Exception:
    """Our one-line task error out of Spark's exception text, if it carries one."""
    text = str(e)
    for mark in (SETUP_MARK, TASK_MARK):
        at = text.find(mark)
        if at >= 0:
            line = text[at + len(mark) :].strip().splitlines()[0]
            err = KafkaWriteError(line)
            if mark == SETUP_MARK:
                # The Python traceback around it says nothing more than the line.
                err.__suppress_context__ = True
            return err
    return e
