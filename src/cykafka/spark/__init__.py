"""Write a PySpark DataFrame to Kafka through cykafka's bulk path.

::

    from cykafka.spark import write_kafka

    report = write_kafka(df.orderBy("ts"), "orders", bootstrap_servers="broker:9092",
                         key="user", value=None)          # value=None: each row as JSON
    print(report.delivered, report.offsets)

Works in classic sessions (``local[*]``, standalone, YARN, Kubernetes) and in Spark
Connect sessions (``SparkSession.builder.remote("sc://...")``): it uses DataFrame
operations only (``mapInArrow`` and ``collect``), never ``sparkContext`` or RDDs.
Every Spark task writes its rows with one :class:`cykafka.Producer` and returns its
counts and per-partition offset ranges, which the driver gathers into a
:class:`WriteReport`.  Executors need cykafka installed (``pip install cykafka[spark]``
into the Python that ``spark.pyspark.python`` names, or a packed virtualenv shipped
with ``--archives``); without it the write fails with one line saying so.

Columns follow Spark's own Kafka sink: ``key`` and ``value`` (string or binary),
optional ``headers`` (array<struct<key: string, value: binary>>), ``partition`` (int)
and ``topic`` (string; a row's topic overrides the ``topic`` argument).  Spark's option
names work as they are: ``write_kafka(df, topic, **{"kafka.bootstrap.servers": ...})``.

Ordering.  With an ordering preset (``ordered``, ``strict_ordered``, ``exactly_once``)
and a key (or partition) column, rows are first repartitioned so that exactly one Spark
task writes each Kafka partition: the Kafka partition of a key is computed in Spark the
way librdkafka's partitioner will compute it (:mod:`cykafka.partitioning`), then each
task sorts its rows back into the DataFrame's order, or by ``order_by=`` columns.  So
the order of a Kafka partition's messages is the order of ``order_by`` (however Spark
split and shuffled the rows), else of the rows in ``df``: sort the DataFrame first if
it has no meaningful order (``df.orderBy("ts")``) -- Spark itself promises no row order
after a shuffle or a file read.  Rows without a key go to any partition (as librdkafka does
with them).  With a ``topic`` column the rows are grouped by (topic, key) instead,
which keeps per-key order but lets several tasks share a Kafka partition.

Retries.  Spark re-runs a failed task from its first row, so a task that failed after
some of its messages were written writes those again: delivery is **at-least-once
across task retries** with every preset but ``exactly_once`` (the idempotent producer
only removes duplicates within one producer session).  ``preset="exactly_once"``
splits the rows into work units by content (Kafka partition, else a hash of the row),
writes each unit in one Kafka transaction named after the unit together with a
progress record, and has every attempt fence the unit's ``transactional.id``, then
skip the unit if an earlier attempt committed it: ``read_committed`` consumers see
every row once through task retries (a worker lost right after its commit),
speculative copies, and re-runs at another parallelism.  ``job_id=`` extends this to
running the same write again.  What is and is not guaranteed, and why:
``docs/spark.md``.  For Structured Streaming see :func:`kafka_batch_writer`.

Failures.  A task with undelivered messages raises (the Spark job fails, with the
first errors and the counts in :class:`KafkaWriteError`), so rows are never dropped
silently; ``on_error="report"`` makes the task return its failures in the report
instead.  Under ``exactly_once`` a task is all or nothing: if any of its rows fails
(or the commit is refused) its transaction is aborted and all its rows count as
failed (``delivered == 0`` for that task), since none is visible to ``read_committed``
readers; a unit an earlier attempt committed counts once, as delivered
(``TaskResult.skipped``), and ``report.ok`` needs every unit committed once.
"""

from .options import WriteOptions
from .plan import WritePlan
from .report import KafkaWriteError, TaskResult, WriteReport
from .sink import write_kafka
from .streaming import kafka_batch_writer

__all__ = [
    "KafkaWriteError",
    "TaskResult",
    "WriteOptions",
    "WritePlan",
    "WriteReport",
    "kafka_batch_writer",
    "write_kafka",
]
