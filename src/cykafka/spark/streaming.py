"""Structured Streaming: :func:`kafka_batch_writer` for ``foreachBatch``.

::

    query = (stream_df.writeStream
             .foreachBatch(kafka_batch_writer("orders", bootstrap_servers=bs,
                                              preset="exactly_once", query="orders-etl"))
             .option("checkpointLocation", "/chk/orders-etl")
             .start())

Each micro-batch is one :func:`write_kafka` call.  Spark runs a micro-batch again when
it did not record it as done (a crash after the write, before the checkpoint's commit
log), with the same ``batch_id`` and the same rows; what a re-run does depends on the
preset:

* ``None``, ``fast``, ``ordered`` and the other non-transactional presets:
  **at-least-once per micro-batch**.  Every row of the batch is delivered (or the batch
  fails and is retried), and a re-run batch is written again: its rows appear twice.
  ``ordered`` keeps each key's rows in order within a run of a batch.
* ``exactly_once``: **exactly-once per micro-batch for read_committed consumers.**
  The batch's rows are split into work units by content (Kafka partition, else a hash
  of the row); each unit is written in one Kafka transaction whose ``transactional.id``
  is fixed per (``query``, unit), and the same transaction writes the unit's
  (query, batch id, unit) progress record.  Every attempt of a unit fences that id,
  then reads the unit's committed record and skips the unit (``TaskResult.skipped``)
  if this batch or a later one committed it.  A re-run keeps the number of units its
  first attempt recorded, so task retries, speculative copies, a restart after a crash
  between the Kafka commit and Spark's checkpoint, and a re-run at another parallelism
  each write every row once.  The source must give a batch id the same rows on re-run
  (file, rate and Kafka sources do): a unit is skipped only when its committed record
  holds the same rows (count and content fingerprint,
  :class:`~cykafka.spark.progress.UnitContent`); other rows under a batch id already
  committed (a changed input, or the query started again with a new checkpoint under
  the same ``query``) are refused, never reported delivered.
  Consumers must read committed on Kafka; Tansu, the embedded test broker, shows
  aborted records to read_committed readers too (``cykafka.testing.committed_view``
  computes the committed view).  Details: ``docs/spark.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from .options import OptionArguments, WriteOptions, check_job_name
from .plan import make_plan
from .report import WriteReport
from .sink import run_plan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["kafka_batch_writer"]

# As before: the topic, the brokers and the preset by position too; query names the job.
_ARGUMENTS = OptionArguments(positional=3, leave_out=("job_id",))


@_ARGUMENTS.document
def kafka_batch_writer(
    *args: object,
    query: Optional[str] = None,
    on_batch: Optional[Callable[[WriteReport], object]] = None,
    options: Optional[WriteOptions] = None,
    **given: object,
) -> Callable[[DataFrame, int], WriteReport]:
    """A ``foreachBatch`` function writing each micro-batch with :func:`write_kafka`.

    The options are checked and the producer config resolved here, once: a bad one
    fails when the writer is made, not at the query's first micro-batch.

    Args:
        query: a stable name for this streaming query (required with
            ``exactly_once``): it names the transactional ids and the progress
            records, so it must stay the same across restarts of the query.
        on_batch: called with each micro-batch's :class:`WriteReport`, where
            foreachBatch runs (with Spark Connect: in the server's Python process).
        options: the options below made ahead, as a :class:`WriteOptions` (then
            give none of them beside it), as for :func:`write_kafka`.
    """
    opts = _ARGUMENTS.options(args, given, options)
    if opts.transactional:
        if not query:
            raise ValueError(
                "preset='exactly_once' in foreachBatch needs query='<stable name>': it "
                "fences re-runs of a micro-batch across restarts"
            )
        check_job_name(query)
        if opts.job_id is not None:
            raise ValueError("kafka_batch_writer names its write by query=, not job_id=")
    # What write_kafka checks per call is checked here once, for every micro-batch.
    opts.guarantees(query if opts.transactional else None)

    def write_batch(df: DataFrame, batch_id: int) -> WriteReport:
        report = run_plan(df, make_plan(df, opts, query=query, batch_id=batch_id))
        if on_batch is not None:
            on_batch(report)
        return report

    return write_batch
