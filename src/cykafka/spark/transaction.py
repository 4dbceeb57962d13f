"""The executor side of ``exactly_once``: one work unit, one Kafka transaction.

Spark task k writes unit k of the write (:mod:`cykafka.spark.routing` put exactly that
unit's rows in it).  Every attempt of the unit, whatever started it (the first run, a
task retry, a speculative copy, a re-run of the micro-batch after a crash, at any
parallelism), does the same three steps:

1. **Fence**: ``init_transactions`` with the unit's ``transactional.id``.  On Kafka this
   aborts any transaction an older attempt of the unit left open and refuses that
   attempt's writes and commit from now on.
2. **Look**: read the unit's committed progress record
   (:mod:`cykafka.spark.progress`), in a thread while the rows are being sent.
3. **Write**: the rows in a transaction; then, if the look found the unit committed by
   an earlier attempt with the same rows (count and content fingerprint), abort and
   report the rows and offsets that attempt committed; if with other rows, abort and
   report this attempt's rows failed; else add the unit's progress record to the
   transaction and commit.

The look starts after the fence, and the decision to commit waits for it, so an
attempt that committed before the fence is always seen (reading while the rows go
out hides the read's latency; a retry of a unit already committed pays by writing
its rows into a transaction it then aborts); and it makes correctness independent of the broker's fencing for every attempt
that finished (a retry after a worker died right after its commit, a re-run after the
driver died): a unit done is skipped.  Only an older attempt still *running* when a new
one commits relies on the broker refusing its commit (Kafka does; Tansu, the test
broker, may not: see ``docs/spark.md``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from ..cluster.admin import connection_config
from .plan import WritePlan
from .report import MAX_ERRORS, TASK_MARK, TaskResult

if TYPE_CHECKING:
    from ..producer import Producer
    from .progress import ProgressRecord, UnitContent

__all__ = ["run_unit"]


class _RollBack(Exception):
    """Raised inside a unit's transaction to abort it (some rows failed)."""


class _Done(Exception):
    """Raised inside a unit's transaction to abort it: an earlier attempt committed
    the unit (``args[0]``: its progress record)."""


def run_unit(
    producer: Producer,
    plan: WritePlan,
    unit: int,
    send: Callable[[], None],
    result: TaskResult,
    content: Optional[UnitContent] = None,
) -> Optional[str]:
    """Fence, look, then write unit ``unit`` (``send`` writes the task's rows and
    fills ``result`` and ``content``, a :class:`~.progress.UnitContent`).  Returns None
    when the unit is committed (now or by an earlier attempt), else what went wrong
    (for the error message)."""
    from concurrent.futures import ThreadPoolExecutor

    from .._native import KafkaError
    from . import progress

    assert plan.units is not None and plan.job is not None and plan.progress_topic is not None
    if not 0 <= unit < plan.units:
        raise RuntimeError(
            f"{TASK_MARK} Spark partition {unit} of a write split into {plan.units} units: "
            f"the routed DataFrame was repartitioned after routing"
        )

    try:
        producer.init_transactions()  # 1. fence every older attempt of this unit
    except KafkaError as e:
        # Refused (an ACL on the transactional id, say): one line for the driver, not a
        # worker traceback; nothing of the unit was written.
        raise RuntimeError(f"{TASK_MARK} unit {unit}: init_transactions failed: {e}") from None
    client = connection_config(plan.options.config)
    pool = ThreadPoolExecutor(1, thread_name_prefix="cykafka-look")
    try:
        look = pool.submit(progress.read_job, client, plan.progress_topic, plan.job)  # 2.

        def record() -> None:  # 3. after the look: abort, or record and commit
            done = progress.unit_done(look.result(), unit, plan.batch_id)
            if done is not None:
                raise _Done(done)
            if result.failed:
                raise _RollBack()
            _record(producer, plan, unit, result, content)

        return _send_in_transaction(producer, send, record, plan, unit, result, content)
    finally:
        pool.shutdown(wait=True)


def _record(
    producer: Producer,
    plan: WritePlan,
    unit: int,
    result: TaskResult,
    content: Optional[UnitContent],
) -> None:
    """Add the unit's progress record to its transaction (before the commit)."""
    from . import progress

    assert plan.progress_topic is not None and plan.units is not None
    value = progress.progress_value(
        str(plan.job),
        plan.batch_id,
        unit,
        plan.units,
        plan.partition_count,
        result.rows,
        result.offsets,
        None if content is None else content.hex(),
    )
    fut = producer.produce(
        plan.progress_topic, value, key=progress.progress_key(str(plan.job), unit), partition=0
    )
    producer.flush()
    fut.result()  # a lost progress record fails the unit (its transaction aborts)


def _skip(
    plan: WritePlan,
    unit: int,
    done: ProgressRecord,
    result: TaskResult,
    content: Optional[UnitContent] = None,
) -> Optional[str]:
    """An earlier attempt committed the unit: this one's transaction is aborted; report
    what the earlier one committed -- unless this attempt holds other rows for it (the
    batch's input changed, or a streaming query started again from batch 0 under the
    same name), which is reported, never hidden."""
    result.skipped = True
    result.failed, result.offsets = 0, {}
    result.errors.clear()
    what = "micro-batch " + str(plan.batch_id) if plan.batch_id is not None else "job"
    mine = None if content is None else content.hex()
    theirs = done.get("content")
    why = None
    if done.get("batch") != plan.batch_id:
        # A streaming query runs its batches in order: a later batch committed means
        # this one's number was used before, by a query with another checkpoint.
        why = (
            f"{what} of query {plan.job!r}: unit {unit} already committed micro-batch "
            f"{done.get('batch')}, so this batch id was used before: the query was started "
            f"again with a new checkpoint under the same query= name.  This attempt's "
            f"{result.rows:,} rows are not written; give a new checkpoint a new query= name "
            f"(or keep the old checkpoint)"
        )
    elif int(done["rows"]) != result.rows or (theirs and mine and theirs != mine):
        why = (
            f"unit {unit} of {what} {plan.job!r} was committed by an earlier attempt with "
            f"{int(done['rows']):,} rows, and this attempt has other rows for it "
            f"({result.rows:,} rows, content fingerprint {mine} vs {theirs}): the input "
            f"changed, or the query was started again with a new checkpoint under the same "
            f"query= name; the committed rows stay, this attempt's are not written"
        )
    if why is not None:
        result.skipped = False  # nothing of this attempt's rows is in the topic
        result.failed = result.rows
        result.errors.insert(0, why)
        return "input changed"
    result.delivered = result.rows
    result.offsets = {(str(t), int(p)): (int(lo), int(hi)) for t, p, lo, hi in done["offsets"]}
    return None


def _send_in_transaction(
    producer: Producer,
    send: Callable[[], None],
    record: Callable[[], None],
    plan: WritePlan,
    unit: int,
    result: TaskResult,
    content: Optional[UnitContent] = None,
) -> Optional[str]:
    """Run ``send`` and ``record`` in one transaction: commit only if every row was
    delivered.

    All or nothing: if any row failed (or the commit is refused; librdkafka refuses
    to commit after a failed message, an abortable error), the transaction is aborted
    and every row of the unit is reported failed -- none of them is visible to
    ``read_committed`` readers, whatever the delivery reports said.  Returns None
    when committed, else what happened (for the error message)."""
    from .._native import KafkaError

    sent = False
    try:
        # transaction() aborts when the block raises (an exception from send() then
        # fails the task, as without a transaction), and also when the commit fails
        # with an abortable error (then re-raises it).
        with producer.transaction():
            send()
            record()  # raises _Done or _RollBack (some rows failed) to abort instead
            sent = True
        return None
    except _Done as done:
        return _skip(plan, unit, done.args[0], result, content)
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
    del result.errors[MAX_ERRORS:]
    result.failed = result.rows
    result.delivered = 0
    result.offsets = {}  # written, but aborted: not visible to read_committed readers
    return why
