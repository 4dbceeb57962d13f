"""The partition state rules, as one table: the first rule that matches names the state.

"waiting" = messages not yet in a request (``queued_msgs + xmit_msgs``); "busy" = waiting
or in flight.  Each rule's ``when`` is its documentation; ``PARTITION_STATES`` lists the
states in rule order (most urgent first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .figures import BrokerSnapshot

__all__ = ["PARTITION_STATES", "RULES", "StateInputs", "StateRule", "partition_state"]


@dataclass(frozen=True)
class StateInputs:
    """Everything the rules read about one partition."""

    partition: int
    leader: int
    unknown: bool  # "unknown" in the metadata
    served_by: int  # the broker handle serving it (-1: none)
    waiting: int
    in_flight: int
    #: Waiting messages that were already transmitted once (librdkafka's ``txmsgs``
    #: beyond first transmissions and outcomes): a retry waiting out retry.backoff.ms.
    retry_waiting: int
    queued_bytes: int
    oldest_age_s: Optional[float]
    broker: Optional[BrokerSnapshot]  # the leader's connection, None if unknown
    broker_retried: bool  # that broker's request retries grew since the last sample
    max_in_flight: int
    batch_msgs: int
    batch_bytes: int
    linger_s: float

    @property
    def busy(self) -> bool:
        return self.waiting + self.in_flight > 0


@dataclass(frozen=True)
class StateRule:
    state: str
    when: str
    test: Callable[[StateInputs], bool]


def _batch_complete(i: StateInputs) -> bool:
    full = i.waiting >= i.batch_msgs or i.queued_bytes >= i.batch_bytes
    return full or (i.oldest_age_s is not None and i.oldest_age_s >= i.linger_s)


RULES: tuple[StateRule, ...] = (
    StateRule(
        "no_leader",
        "the partition has no leader (leader -1), is unknown in the metadata, has messages "
        "but no broker handle serving it (e.g. its leader left the metadata) or no known "
        "leader connection, or it is the unassigned partition -1 holding messages until "
        "the topic's metadata arrives.",
        lambda i: (
            i.partition < 0
            or i.leader < 0
            or i.unknown
            or (i.busy and (i.served_by < 0 or i.broker is None))
        ),
    ),
    StateRule(
        "backing_off",
        "messages wait or are in flight and the leader connection is not UP (librdkafka "
        "reconnects after reconnect.backoff.ms), or that broker retried requests since the "
        "previous sample, or waiting messages were already sent once and wait out "
        "retry.backoff.ms before their retry.",
        lambda i: (
            i.busy
            and i.broker is not None
            and (i.broker.state != "UP" or i.broker_retried or i.retry_waiting > 0)
        ),
    ),
    StateRule(
        "muted",
        "messages wait while the leader connection's in-flight window is full "
        "(waitresp_cnt >= max.in.flight): the in-flight limit holds the partition back, as "
        "Java mutes a partition while its batch is in flight.",
        lambda i: (
            i.waiting > 0
            and i.broker is not None
            and i.max_in_flight > 0
            and i.broker.in_flight_requests >= i.max_in_flight
        ),
    ),
    StateRule(
        "ready",
        "messages wait and a batch is complete: batch.num.messages or batch.size reached, "
        "or the oldest waiting message is older than linger.ms.",
        lambda i: i.waiting > 0 and _batch_complete(i),
    ),
    StateRule(
        "accumulating",
        "messages wait for a batch to fill (younger than linger.ms, batch not full).",
        lambda i: i.waiting > 0,
    ),
    StateRule("in_flight", "nothing waits, messages are in flight.", lambda i: i.in_flight > 0),
    StateRule("idle", "nothing waits or is in flight.", lambda i: True),
)

#: Every value PartitionSnapshot.state takes, most urgent first.
PARTITION_STATES: tuple[str, ...] = tuple(r.state for r in RULES)


def partition_state(inputs: StateInputs) -> str:
    """The state of the first rule in :data:`RULES` that matches."""
    return next(r.state for r in RULES if r.test(inputs))
