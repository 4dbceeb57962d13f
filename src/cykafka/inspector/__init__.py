"""The accumulator inspector: where a producer's messages wait, and why.

The Java producer buffers records per partition in a RecordAccumulator; librdkafka
has the same stages under other names.  :meth:`Producer.accumulator` returns an
:class:`AccumulatorSnapshot` of them:

========================  ==============================================================
Java                      librdkafka (statistics field, STATISTICS.md)
========================  ==============================================================
BufferPool usage          ``msg_cnt``/``msg_size`` vs ``msg_max``/``msg_size_max``
                          (``queue.buffering.max.messages``/``.kbytes``)
per-partition deque       ``msgq_cnt``: "messages waiting to be produced in first-level
                          queue", then the broker thread's transmit queue (``xmit_msgq``)
in-flight batches         ``msgs_inflight``: "current number of messages in-flight to/from
                          broker" (in a request being sent or awaiting its response)
in-flight requests        broker ``waitresp_cnt``: "requests in-flight to broker awaiting
                          response", vs ``max.in.flight.requests.per.connection``
sender's ready requests   broker ``outbuf_cnt``: "requests awaiting transmission to broker"
========================  ==============================================================

Two kinds of figures, kept apart:

* **exact** -- counters the extension keeps itself (produced, delivered, failed, pending,
  time blocked in ``produce()``; per partition delivered, failed and the last acked
  offset).  Current when the snapshot is taken.
* **from statistics** -- everything else, parsed from librdkafka's latest statistics JSON;
  ``age_s`` says how old it is.  The interval is the producer's
  ``inspect_interval_ms`` (default :data:`DEFAULT_INTERVAL_MS`).  librdkafka 2.16 honours
  intervals well below the 1000 ms "granularity" CONFIGURATION.md mentions (measured: 10
  emits/s at 100 ms, ~100 at 10 ms).

The partition ``state`` rules are one table in :mod:`cykafka.inspector.states`.

``xmit_msgs`` is an estimate: librdkafka reports ``xmit_msgq_cnt`` as 0 always ("FIXME:
xmit_msgq is local to the broker thread", rdkafka.c), so it is derived as ``msgs`` (total
enqueued on the partition: librdkafka's count of the messages its partitioner placed,
plus the producer's own count of those ``produce_batch`` handed to their partition
itself, taken when the statistics were served) minus the exact outcomes minus
``msgq_cnt`` minus ``msgs_inflight``.  ``oldest_age_s`` is a lower bound: librdkafka keeps
no per-partition
timestamps in its statistics, so the inspector remembers, per statistics sample, how many
messages had been enqueued on the partition; the oldest undelivered message (messages of
one partition complete in order) was enqueued before the first sample whose count
exceeds the partition's outcomes; with an earlier sample whose count did not, the age is
known to within one interval (``oldest_age_bracketed``).  Snapshots at least once per
statistics interval (the live view takes them) keep it tight.
"""

from __future__ import annotations

from .callbacks import ThrottledStatsCallback, stats_setup
from .live import live_view, watch_new_producers
from .metrics import JavaMetrics, SampledStat, opentelemetry_points, prometheus_text
from .registry import default_interval_ms, producer_created
from .snapshot import AccumulatorSnapshot, BrokerSnapshot, EosSnapshot, PartitionSnapshot
from .source import StatsSource
from .states import PARTITION_STATES, RULES
from .stats import DEFAULT_INTERVAL_MS, Inspector, inspector_of

__all__ = [
    "DEFAULT_INTERVAL_MS",
    "PARTITION_STATES",
    "RULES",
    "AccumulatorSnapshot",
    "BrokerSnapshot",
    "EosSnapshot",
    "Inspector",
    "JavaMetrics",
    "PartitionSnapshot",
    "SampledStat",
    "StatsSource",
    "ThrottledStatsCallback",
    "default_interval_ms",
    "inspector_of",
    "live_view",
    "opentelemetry_points",
    "producer_created",
    "prometheus_text",
    "stats_setup",
    "watch_new_producers",
]
