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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, Optional, Union

from .plan import make_plan, write_request
from .report import WriteReport
from .sink import run_plan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..presets import PresetSpec
    from ..schema_registry.formats import RegistryLike

__all__ = ["kafka_batch_writer"]


def kafka_batch_writer(
    topic: Optional[str] = None,
    bootstrap_servers: Optional[str] = None,
    preset: PresetSpec = "ordered",
    *,
    query: Optional[str] = None,
    progress_topic: Optional[str] = None,
    on_batch: Optional[Callable[[WriteReport], object]] = None,
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
    **producer_config: object,
) -> Callable[[DataFrame, int], WriteReport]:
    """A ``foreachBatch`` function writing each micro-batch with :func:`write_kafka`.

    The arguments are checked and the producer config resolved here, once: a bad one
    fails when the writer is made, not at the query's first micro-batch.

    Args:
        topic, bootstrap_servers, preset: as for :func:`write_kafka`, and so are the
            other keyword arguments (``key`` ... ``key_schema``, and the producer
            config).
        query: a stable name for this streaming query (required with
            ``exactly_once``): it names the transactional ids and the progress
            records, so it must stay the same across restarts of the query.
        progress_topic: where ``exactly_once`` records the units it committed (default
            ``"<topic>.cykafka-progress"``, or ``"cykafka-spark-progress"`` with a
            ``topic`` column; created compacted, with one partition, if missing).
        on_batch: called with each micro-batch's :class:`WriteReport`, where
            foreachBatch runs (with Spark Connect: in the server's Python process).
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
        query=query,
    )
    if request.transactional and not query:
        raise ValueError(
            "preset='exactly_once' in foreachBatch needs query='<stable name>': it fences "
            "re-runs of a micro-batch across restarts"
        )

    def write_batch(df: DataFrame, batch_id: int) -> WriteReport:
        report = run_plan(df, make_plan(df, request).with_batch(batch_id=batch_id))
        if on_batch is not None:
            on_batch(report)
        return report

    return write_batch
