"""Measurements that explain's warnings quote.  Each is re-measured by a test that reads
the range back out of the warning text (tests/testing/test_testing.py, tests/presets/test_explain_matrix.py).
"""

from __future__ import annotations

__all__ = [
    "MEASURED_INFLIGHT1_INVERSIONS",
    "MEASURED_INFLIGHT1_REORDER",
    "MEASURED_RETRIES0_INVERSIONS",
    "MEASURED_RETRIES0_REORDER",
]

#: Every run measured so far gave 9-10 inversions with 1 in flight and 10-12 with 5, so
#: the range is wide enough for a loaded CI machine and narrow enough to be a claim.
MEASURED_INFLIGHT1_INVERSIONS = (5, 20)

_LO, _HI = MEASURED_INFLIGHT1_INVERSIONS

MEASURED_INFLIGHT1_REORDER = (
    "measured with cykafka.testing.verify_ordering on librdkafka 2.16.0's mock cluster "
    "(acks=all, one partition, batch.num.messages=10, every 7th Produce request failing "
    "with retriable NOT_ENOUGH_REPLICAS, 2000 messages): all 2000 arrived exactly once, but "
    f"every run had order inversions, between {_LO} and {_HI} per run of 2000 (e.g. 10; each a "
    "failed batch of 10 written after the next batch) when produce() calls kept arriving "
    f"during retries (10 messages every 5 ms), as many with 5 in flight, fewer than {_LO} when "
    "all 2000 were queued at once, and 0 with enable.idempotence=true"
)

#: retries=0, same pattern but the 7th request fails with NOT_LEADER_OR_FOLLOWER: 9-12
#: inversions per 2000 measured (1 and 5 in flight), none failed, none duplicated.
MEASURED_RETRIES0_INVERSIONS = (5, 20)

_RLO, _RHI = MEASURED_RETRIES0_INVERSIONS

MEASURED_RETRIES0_REORDER = (
    "retries=0 does not stop reordering: librdkafka puts a batch refused with a leader "
    "error (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE) back on the partition queue and "
    "sends it again after a metadata refresh without counting a retry. Measured with "
    "cykafka.testing.verify_ordering on librdkafka 2.16.0's mock cluster (acks=all, one "
    "partition, batch.num.messages=10, every 7th Produce request failing with "
    "NOT_LEADER_OR_FOLLOWER, 10 messages every 5 ms, 2000 messages): none failed, none "
    f"duplicated, between {_RLO} and {_RHI} order inversions per run of 2000"
)
