"""Which partition librdkafka's partitioners give a key: the one copy in cykafka.

Spark's ordered writes, the importer and any caller that needs to know in advance
where a keyed message will land use :func:`partition_for`; it follows librdkafka's
``rd_kafka_msg_partitioner_*`` functions (rdkafka_msg.c) exactly, so a key's
partition computed here is the one the producer picks with the same partitioner.

::

    >>> partition_for("murmur2_random", b"user-7", 12)   # Java client's choice too
    4
"""

from __future__ import annotations

import zlib
from typing import Optional

__all__ = ["PARTITIONERS", "fnv1a", "murmur2", "partition_for"]

#: librdkafka's built-in partitioners (the ``partitioner`` property).
PARTITIONERS = (
    "random",
    "consistent",
    "consistent_random",
    "murmur2",
    "murmur2_random",
    "fnv1a",
    "fnv1a_random",
)


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2`` (Kafka's default partitioner hash), as unsigned 32 bits."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def fnv1a(data: bytes) -> int:
    """32-bit FNV-1a as librdkafka's ``rd_fnv1a`` returns it: the absolute value of the
    signed hash (to match Sarama's hash partitioner)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return (1 << 32) - h if h & 0x80000000 else h


def partition_for(partitioner: str, key: Optional[bytes], partition_count: int) -> Optional[int]:
    """The partition librdkafka's ``partitioner`` gives ``key`` among ``partition_count``
    partitions, or None where it picks one at random or sticky (``random``; NULL keys
    for the ``*_random`` ones; empty keys too for ``consistent_random``).

    Raises ValueError for an unknown partitioner or a partition count below 1."""
    if partition_count < 1:
        raise ValueError(f"partition_count must be >= 1, not {partition_count}")
    if partitioner not in PARTITIONERS:
        raise ValueError(
            f"unknown partitioner {partitioner!r}; librdkafka's are {', '.join(PARTITIONERS)}"
        )
    if partitioner == "random":
        return None
    if partitioner.startswith("consistent"):
        if not key:  # NULL and empty keys alike
            return None if partitioner == "consistent_random" else 0
        return zlib.crc32(key) % partition_count
    if key is None:
        if partitioner.endswith("_random"):
            return None
        key = b""  # murmur2 and fnv1a hash a NULL key as an empty one
    if partitioner.startswith("murmur2"):
        return (murmur2(key) & 0x7FFFFFFF) % partition_count
    return fnv1a(key) % partition_count
