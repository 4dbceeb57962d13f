"""Ordered writes: route rows so that exactly one Spark task writes each Kafka partition.

The Kafka partition of a key is computed in Spark the way librdkafka's partitioner will
compute it (:mod:`cykafka.partitioning`; CRC32 for the default ``consistent_random`` is
Spark's own ``crc32``), then each row gets a "route" value whose Spark hash puts it in
shuffle partition k exactly when its Kafka partition is k, and each task sorts its rows
back into the DataFrame's order.  DataFrame operations only (plus one ``mapInArrow``
for partitioners Spark has no function for), so it runs on Spark Connect too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from .executor import shipped
from .plan import KPART, ROUTE, SEQ

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = ["ordered"]


def kpart_task(
    key: str, partitions: int, partitioner: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: add the Kafka partition of each row's key (Python hash functions,
    for partitioners Spark SQL has no function for)."""
    import pyarrow as pa

    from ..partitioning import partition_for

    for batch in batches:
        keys = batch.column(batch.schema.get_field_index(key)).to_pylist()
        parts = [
            partition_for(partitioner, k.encode("utf-8") if isinstance(k, str) else k, partitions)
            for k in keys
        ]
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(parts, pa.int64())], [*batch.schema.names, KPART]
        )


def spark_hash_long(v: int) -> int:
    """Spark's ``hash(bigint)`` (Murmur3_x86_32.hashLong, seed 42), a signed int32: what
    ``repartition(n, col)`` takes modulo ``n``."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    def mix(h1: int, k1: int) -> int:
        k1 = rotl((k1 * 0xCC9E2D51) & m, 15) * 0x1B873593 & m
        return (rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & m

    h = mix(mix(42, v & m), (v >> 32) & m) ^ 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def surrogates(n: int) -> list[int]:
    """For each k < n, a bigint whose Spark hash puts it in shuffle partition k, so that
    ``repartition(n, route)`` sends Kafka partition k's rows to Spark task k."""
    found: dict[int, int] = {}
    v = 0
    while len(found) < n:
        found.setdefault(spark_hash_long(v) % n, v)  # Python's % is Spark's pmod here
        v += 1
    return [found[k] for k in range(n)]


def ordered(
    df: DataFrame,
    key: Optional[str],
    partition: Optional[str],
    topic_col: Optional[str],
    n: Optional[int],
    partitioner: str,
    writers: Optional[int] = None,
    units: Optional[int] = None,
    order_by: tuple[str, ...] = (),
) -> DataFrame:
    """Repartition so one task writes each Kafka partition, keeping df's order.

    ``writers``: how many tasks write (each owning whole Kafka partitions); None: one
    per Kafka partition.  One writing task (``writers=1``, one unit, or a topic of one
    partition) needs no shuffle at all: ``coalesce(1)`` reads the partitions one after
    another, in the DataFrame's order, so there is nothing to sort back either.

    ``units`` (exactly_once): Spark task k gets exactly the rows of work unit k of
    ``units``, a function of each row's content alone (its Kafka partition, else a hash
    of its (topic, key), else of the whole row), so that any run of the same rows, at
    any parallelism, gives each unit the same rows.

    ``order_by``: each task writes its rows in the order of these columns (ties in the
    DataFrame's order), whatever order the rows reached it in."""
    from pyspark.sql import functions as F

    single = topic_col is None and n is not None
    if writers == 1 or units == 1 or (units is None and single and n == 1):
        one = df.coalesce(1)
        return one.sortWithinPartitions(*order_by) if order_by else one
    df = df.withColumn(SEQ, F.monotonically_increasing_id())
    data_cols = [F.col(c) for c in df.columns if c != SEQ]
    if topic_col is not None or n is None:
        # Partition counts differ per topic: keep each (topic, key) in one task instead.
        cols = [c for c in (topic_col, partition or key) if c]
        if units is None:
            return _restored(order_by, df.repartition(*cols))
        by = [F.col(c) for c in cols] if partition or key else data_cols
        return _restored(order_by, _to_tasks(df, F.pmod(F.xxhash64(*by), F.lit(units)), units))
    spread = F.pmod(F.xxhash64(*data_cols), F.lit(n))  # rows with no key affinity
    # A row's Kafka partition: its partition column, else its key's (a NULL partition
    # means "the partitioner decides", which hashes the key), else any.
    by_key = None
    if key is not None and partitioner in ("consistent_random", "consistent"):
        k = F.col(key).cast("binary")
        empty = F.lit(0) if partitioner == "consistent" else F.lit(None)
        by_key = F.when(k.isNull() | (F.length(k) == 0), empty).otherwise(
            F.pmod(F.crc32(k), F.lit(n))
        )
    elif key is not None and partitioner != "random":
        from pyspark.sql.types import LongType, StructField, StructType

        schema = StructType([*df.schema.fields, StructField(KPART, LongType())])
        df = df.mapInArrow(
            shipped("cykafka.spark.routing", "kpart_task", key, n, partitioner), schema
        )
        by_key = F.col(KPART)
    if partition is None and by_key is None and units is None:
        # random partitioner: keys have no partition, so nothing to keep together
        return _restored(order_by, df)
    parts = [F.col(partition).cast("long")] if partition is not None else []
    kpart = F.coalesce(*parts, *([by_key] if by_key is not None else []), spread)
    tasks = units or min(writers or n, n)
    return _restored(order_by, _to_tasks(df, F.pmod(kpart, F.lit(tasks)), tasks))


def _to_tasks(df: DataFrame, group: Column, tasks: int) -> DataFrame:
    """``df`` in ``tasks`` Spark partitions, the rows whose ``group`` (an int
    expression in [0, tasks)) is k in partition k.  Partitioning by the expression, not
    a column: the shuffle carries no route value.  A repartition to a number is never
    coalesced or split by adaptive execution."""
    from pyspark.sql import functions as F

    route = F.element_at(
        F.array(*[F.lit(s).cast("long") for s in surrogates(tasks)]), (group + 1).cast("int")
    )
    return df.repartition(tasks, route)


def _restored(order_by: tuple[str, ...], df: DataFrame) -> DataFrame:
    """Each task's rows in ``order_by``'s order, then the DataFrame's, without the
    helper columns (they would only cost Arrow conversion on the way to Python)."""
    return df.sortWithinPartitions(*order_by, SEQ).drop(SEQ, ROUTE, KPART)
