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
  Each task writes its rows in one Kafka transaction whose ``transactional.id`` is
  fixed per (``query``, task), so a new run fences off any earlier attempt of the same
  task, and the same transaction writes a (query, batch id, task) record to a progress
  topic: the batch id is committed atomically with the data.  Before each batch the
  driver reads the progress topic's new records (read_committed); the tasks an earlier
  run of this batch (or of a later one) already committed write nothing (``TaskResult.skipped``), the others write
  their rows.  Rows are routed by Kafka partition (one task per partition), so a
  re-run splits the batch the same way; without a key or partition column the split
  is the source's, which must then be deterministic for a batch id (file and rate
  sources are).  Needs a broker that honours read_committed (Kafka does; Tansu, the
  embedded test broker, shows aborted records to read_committed readers too).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Optional

from .plan import make_plan
from .report import WriteReport
from .sink import run_plan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ProgressReader", "kafka_batch_writer"]


def kafka_batch_writer(
    topic: Optional[str] = None,
    bootstrap_servers: Optional[str] = None,
    preset: Any = "ordered",
    *,
    query: Optional[str] = None,
    progress_topic: Optional[str] = None,
    on_batch: Optional[Callable[[WriteReport], Any]] = None,
    **write_options: Any,
) -> Callable[[DataFrame, int], WriteReport]:
    """A ``foreachBatch`` function writing each micro-batch with :func:`write_kafka`.

    Args:
        topic, bootstrap_servers, preset, **write_options: as for :func:`write_kafka`.
        query: a stable name for this streaming query (required with
            ``exactly_once``): it names the transactional ids and the progress
            records, so it must stay the same across restarts of the query.
        progress_topic: where ``exactly_once`` records committed batches (default
            ``"<topic>.cykafka-progress"``; created with one partition if missing).
        on_batch: called with each micro-batch's :class:`WriteReport`, where
            foreachBatch runs (with Spark Connect: in the server's Python process).
    """
    from .. import presets as _presets

    names = _presets.parse(preset) if preset else []
    transactional = "exactly_once" in names
    if transactional and not query:
        raise ValueError(
            "preset='exactly_once' in foreachBatch needs query='<stable name>': it fences "
            "re-runs of a micro-batch across restarts"
        )
    if transactional and progress_topic is None:
        if topic is None:
            raise ValueError("exactly_once with a topic column needs progress_topic=")
        progress_topic = f"{topic}.cykafka-progress"

    progress: list[ProgressReader] = []  # made at the first batch, kept for the next

    def write_batch(df: DataFrame, batch_id: int) -> WriteReport:
        plan = make_plan(
            df,
            topic,
            bootstrap_servers,
            preset,
            write_options.get("key", "key"),
            write_options.get("value", "value"),
            write_options.get("headers"),
            write_options.get("partition"),
            write_options.get("on_error", "raise"),
            write_options.get("repartition"),
            {k: v for k, v in write_options.items() if k not in _WRITE_ARGS},
            query=query if transactional else None,
            writers=write_options.get("writers"),
        )
        if transactional:
            assert progress_topic is not None and query is not None
            if not progress:
                progress.append(ProgressReader(plan.config, progress_topic, query))
            done = progress[0].committed_tasks(batch_id)
            plan = plan.with_batch(
                progress_topic=progress_topic, batch_id=batch_id, committed_tasks=done
            )
        else:
            plan = plan.with_batch(batch_id=batch_id)
        report = run_plan(df, plan)
        if on_batch is not None:
            on_batch(report)
        return report

    return write_batch


_WRITE_ARGS = ("key", "value", "headers", "partition", "on_error", "repartition", "writers")


def _ensure_topic(admin: Any, topic: str) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    if topic in admin.list_topics(topic=topic, timeout=30).topics:
        md = admin.list_topics(topic=topic, timeout=30).topics[topic]
        if md.error is None:
            return
    fut = admin.create_topics([NewTopic(topic, num_partitions=1)])[topic]
    try:
        fut.result(30)
    except Exception as e:  # another writer created it first: fine
        err = e.args[0] if e.args else None
        if getattr(err, "code", lambda: None)() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class ProgressReader:
    """A query's progress records as read so far: the latest batch each task committed.

    Each micro-batch reads only the records added since the previous one (from the
    start after a restart), with ``isolation.level=read_committed``."""

    def __init__(self, config: dict[str, Any], topic: str, query: str) -> None:
        from ..config import translate

        given = {
            k: v
            for k, v in config.items()
            if k.startswith(("security.", "sasl.", "ssl.")) or k == "bootstrap.servers"
        }
        self.client_config, _ = translate(given)  # Java names (sasl.jaas.config...) too
        self.topic, self.query = topic, query
        self.offset = 0  # next offset to read
        self.last: dict[int, int] = {}  # task -> latest batch it committed
        self._checked = False

    def committed_tasks(self, batch_id: int) -> tuple[int, ...]:
        """The tasks whose rows of ``batch_id`` are committed already (a task that
        committed a later batch committed this one before it)."""
        self._read_new()
        return tuple(sorted(t for t, b in self.last.items() if b >= batch_id))

    def _read_new(self) -> None:
        import uuid

        from confluent_kafka import Consumer, KafkaError, TopicPartition
        from confluent_kafka.admin import AdminClient

        if not self._checked:
            _ensure_topic(AdminClient(dict(self.client_config)), self.topic)
            self._checked = True
        consumer = Consumer(
            {
                **self.client_config,
                "group.id": f"cykafka-progress-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            }
        )
        prefix = f"{self.query}/".encode()
        try:
            consumer.assign([TopicPartition(self.topic, 0, self.offset)])
            while True:
                msg = consumer.poll(30)
                if msg is None:
                    raise TimeoutError(f"progress topic {self.topic!r}: no answer in 30 s")
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        return
                    if err.retriable() or not err.fatal():
                        continue
                    raise RuntimeError(f"progress topic {self.topic!r}: {err}")
                self.offset = max(self.offset, (msg.offset() or 0) + 1)
                if not (msg.key() or b"").startswith(prefix):
                    continue
                rec = json.loads(msg.value() or b"{}")
                if rec.get("query") == self.query:
                    task, batch = int(rec["task"]), int(rec["batch"])
                    self.last[task] = max(self.last.get(task, -1), batch)
        finally:
            consumer.close()
