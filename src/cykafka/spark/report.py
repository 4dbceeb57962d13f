"""What a write did: one :class:`TaskResult` per Spark task, gathered into a
:class:`WriteReport` on the driver."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MAX_ERRORS", "SETUP_MARK", "TASK_MARK", "KafkaWriteError", "TaskResult", "WriteReport"]

MAX_ERRORS = 5  # errors kept per task (and in the report)
# Task and executor errors start with these, so that the driver finds ours inside the
# text of Spark's own exception.
TASK_MARK = "cykafka write_kafka:"
SETUP_MARK = "cykafka executor setup:"


class KafkaWriteError(RuntimeError):
    """A Spark task could not deliver all its rows (message: first errors and counts),
    or the executors could not run cykafka at all (message: how to ship it)."""


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
    #: With ``exactly_once``, the task found its unit (``task``) already committed by an earlier
    #: attempt (a retry after a lost worker, a speculative copy, a re-run of the job or
    #: micro-batch) and wrote nothing; ``delivered`` and ``offsets`` are what that
    #: attempt committed
    skipped: bool = False

    @property
    def retried(self) -> bool:
        """An earlier attempt of this task ran before this one."""
        return self.attempt > 0

    @classmethod
    def from_json(cls, text: str) -> TaskResult:
        d = json.loads(text)
        offsets = {(t, int(p)): (int(lo), int(hi)) for t, p, lo, hi in d.pop("offsets")}
        return cls(offsets=offsets, **d)

    def to_json(self) -> str:
        d = dict(self.__dict__)
        d["offsets"] = [[t, p, lo, hi] for (t, p), (lo, hi) in sorted(self.offsets.items())]
        return json.dumps(d)

    def add_offsets(self, topic: str, first: dict[int, int], last: dict[int, int]) -> None:
        """Widen the task's ranges by one produce_batch's first/last offsets."""
        for p, hi in last.items():
            lo = first.get(p, hi)
            old = self.offsets.get((topic, p))
            self.offsets[(topic, p)] = (min(old[0], lo), max(old[1], hi)) if old else (lo, hi)


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
    #: streaming: the micro-batch this report is for (None outside foreachBatch)
    batch_id: Optional[int] = None
    #: With ``exactly_once``, the work units the rows were split into (task k wrote unit k)
    units: Optional[int] = None
    #: Without exactly_once, after a task retry: the records the failed attempts left in
    #: the topic besides ``delivered`` -- rows written more than once (measured from the
    #: topic's log ends before and after the write, so another producer writing to the
    #: topic meanwhile counts too).  None: not measured (a ``topic`` column, or the
    #: ends could not be read); :attr:`duplicates_max` bounds it then.  0 otherwise.
    duplicates: Optional[int] = 0
    #: what the producer config guarantees (as ``cykafka explain`` sums it up): whether
    #: a row reported delivered can still be lost, or written twice
    guarantees: str = ""

    @property
    def ok(self) -> bool:
        """Every row was delivered (or had been, by an earlier attempt), and none is
        known or suspected to be written more than once (:attr:`duplicates`); under
        exactly_once also: every unit reported exactly once, committed."""
        if self.units is not None and sorted(t.task for t in self.tasks) != list(range(self.units)):
            return False
        again = self.duplicates if self.duplicates is not None else self.duplicates_max
        return self.failed == 0 and self.delivered == self.rows and again == 0

    @property
    def retried(self) -> int:
        """Tasks whose result came from a later attempt than their first (Spark retried
        them after a failure, or ran a speculative copy)."""
        return sum(1 for t in self.tasks if t.retried)

    @property
    def duplicates_max(self) -> int:
        """Without exactly_once: the most rows the earlier attempts of retried tasks
        can have written (each of them all its task's rows); 0 under exactly_once,
        which commits one attempt of each unit."""
        if self.units is not None:
            return 0
        return sum(t.rows * t.attempt for t in self.tasks)

    @property
    def skipped(self) -> int:
        """Rows of units an earlier attempt had committed (written once, not again)."""
        return sum(t.rows for t in self.tasks if t.skipped)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.elapsed if self.elapsed > 0 else 0.0

    def add(self, t: TaskResult) -> None:
        self.tasks.append(t)
        self.rows += t.rows
        self.delivered += t.delivered
        self.failed += t.failed
        self.errors.extend(t.errors[: max(0, MAX_ERRORS - len(self.errors))])
        for tp, (lo, hi) in t.offsets.items():
            old = self.offsets.get(tp)
            self.offsets[tp] = (min(old[0], lo), max(old[1], hi)) if old else (lo, hi)

    def to_df(self, spark: SparkSession) -> DataFrame:
        """One row per task: task, attempt, rows, delivered, failed, errors, and the
        (topic, partition, first_offset, last_offset) ranges it wrote.  Works in classic
        and Spark Connect sessions (``spark.createDataFrame`` only)."""
        schema = (
            "task int, attempt int, rows long, delivered long, failed long, skipped boolean, "
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
                t.skipped,
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
        if self.skipped:
            text += f"; {self.skipped:,} rows already committed by an earlier attempt"
        if self.retried and self.units is None:
            n = self.retried
            text += f"; {n} task{'s' if n > 1 else ''} retried without exactly_once: "
            if self.duplicates is not None:
                text += (
                    f"{self.duplicates:,} records in the topic were written by failed "
                    f"attempts (rows written more than once; the offsets include them)"
                )
            else:
                text += (
                    f"up to {self.duplicates_max:,} rows may have been written more than "
                    f"once (not measured)"
                )
            text += "; preset='exactly_once' writes each row once"
        if self.errors:
            text += "; first errors: " + "; ".join(self.errors[:MAX_ERRORS])
        if self.guarantees:
            text += f"; guarantees: {self.guarantees}"
        return text
