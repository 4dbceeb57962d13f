"""Which partition librdkafka's partitioners give a key: the one copy in cykafka.

Spark's ordered writes, the importer and any caller that needs to know in advance
where a keyed message will land use :func:`partition_for`.  It calls librdkafka's own
``rd_kafka_msg_partitioner_*`` functions (through the extension), so a prediction is
always librdkafka's answer, never a re-implementation of its hashes.

::

    >>> partition_for("murmur2_random", b"user-7", 12)   # Java client's choice too
    4
"""

from __future__ import annotations

from ._native import PARTITIONERS, partition_for

__all__ = ["PARTITIONERS", "partition_for"]
