"""The driver side of :func:`write_kafka`: plan, route, run the tasks, gather the report."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Optional

from ..cluster.admin import connection_config, ensure_progress_topic
from .executor import shipped
from .options import OptionArguments, WriteOptions
from .plan import WritePlan, make_plan
from .report import SETUP_MARK, TASK_MARK, KafkaWriteError, TaskResult, WriteReport
from .routing import ordered as _ordered

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["run_plan", "write_kafka"]

_logger = logging.getLogger("cykafka.spark")
_ARGUMENTS = OptionArguments(positional=18)  # write_kafka took every option by position too


@_ARGUMENTS.document
def write_kafka(
    df: DataFrame,
    *args: object,
    options: Optional[WriteOptions] = None,
    **given: object,
) -> WriteReport:
    """Write ``df`` to Kafka with one cykafka producer per Spark task; return a report.

    Runs in classic and Spark Connect sessions alike (DataFrame operations only).

    Args:
        df: the rows to write.
        options: the options below made ahead, as a :class:`WriteOptions` (then
            give none of them beside it).

    Raises:
        ValueError / TypeError: a bad argument or column, named in the message.
        KafkaWriteError: a task did not deliver all its rows (``on_error="raise"``), or
            the executors cannot import cykafka (the message says how to ship it).
    """
    opts = _ARGUMENTS.options(args, given, options)
    return run_plan(df, make_plan(df, opts))


def run_plan(df: DataFrame, plan: WritePlan) -> WriteReport:
    """Route ``df`` as ``plan`` says, run one write task per Spark partition, and
    gather their results (one ``mapInArrow`` and one ``collect``)."""
    out = df
    if plan.transactional:
        plan = _first_attempts_units(plan)
    o = plan.options
    if plan.ordered or plan.transactional:
        out = _ordered(
            df,
            plan.key_col,
            plan.partition_col,
            plan.topic_col,
            plan.partition_count,
            o.partitioner,
            o.writers,
            plan.units,
            o.order_columns,
        )
    report = WriteReport(
        topic=o.topic,
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
    """The topic's log end per partition, or None if it cannot be read (the
    report then bounds what a retry wrote again instead of counting it)."""
    from ..cluster.wire import log_ends

    topic = plan.options.topic
    assert topic is not None
    try:
        return log_ends(connection_config(plan.options.config), topic)
    except Exception as e:  # the write goes on; the report says it did not measure
        _logger.info("write_kafka: cannot read the log ends of %r (%s)", topic, e)
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
    topic = plan.options.topic
    assert topic is not None
    written = 0
    for p, end in after.items():
        start = before.get(p, 0)
        if end > start:
            written += end - start
            old = report.offsets.get((topic, p))
            report.offsets[(topic, p)] = (
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
    client = connection_config(plan.options.config)
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
            f"{plan.job!r}: part of this write was committed when {plan.options.topic!r} had {parts} "
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
