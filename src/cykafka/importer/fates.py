"""The three fates of a row an import read: the one place that maps errors to them.

- **delivered**: the broker acknowledged it (a delivery report without error).
- **not sent**: provably not in the topic, so sending it again duplicates nothing:
  never handed to the network (refused by ``produce``, stopped before it was queued,
  or purged while still queued and never sent: librdkafka's
  ``RD_KAFKA_MSG_STATUS_NOT_PERSISTED``; one purged from the queue after a request that
  carried it got no answer is unknown),
  or refused by the broker with an error that says it was not written.
- **unknown**: handed over, and no acknowledgement came: it may be in the topic
  (``RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED``).  Sending it again may duplicate it.

An error not listed below is *unknown*: a row is only called "not sent" with proof.
"""

from __future__ import annotations

from typing import Optional, Union

__all__ = ["DELIVERED", "NOT_SENT", "UNKNOWN", "fate_of", "is_batch_mate"]

DELIVERED = "delivered"
NOT_SENT = "not sent"
UNKNOWN = "unknown"

#: librdkafka's local errors for messages that never left the client.  rdkafka.h on
#: rd_kafka_purge(): "Messages purged from internal queues fail with the delivery
#: report error code set to RD_KAFKA_RESP_ERR__PURGE_QUEUE" (cykafka's own stage fails
#: what it still held with the same code); the others are returned by the produce call
#: itself, before a message is queued.
_LOCAL_NOT_SENT = frozenset(
    {
        "_PURGE_QUEUE",
        "_QUEUE_FULL",
        "_UNKNOWN_PARTITION",
        "_UNKNOWN_TOPIC",
        "_MSG_SIZE_TOO_LARGE",
        "_INVALID_ARG",
        "_KEY_SERIALIZATION",
        "_VALUE_SERIALIZATION",
    }
)

#: Broker errors that say the record set was refused, not appended.  Not here on
#: purpose: REQUEST_TIMED_OUT and NETWORK_EXCEPTION (the broker may have appended it),
#: NOT_ENOUGH_REPLICAS_AFTER_APPEND (appended to the leader's log, as the name says).
_BROKER_NOT_WRITTEN = frozenset(
    {
        "MSG_SIZE_TOO_LARGE",
        "INVALID_MSG",
        "INVALID_MSG_SIZE",
        "CORRUPT_MESSAGE",
        "INVALID_RECORD",
        "INVALID_TIMESTAMP",
        # librdkafka's code for a record of a batch the broker refused for another
        # record's sake: "an invalid record in the same batch caused the failure of this
        # message too" (the batch was not appended).
        "_INVALID_DIFFERENT_RECORD",
        "INVALID_REQUIRED_ACKS",
        "RECORD_LIST_TOO_LARGE",
        "NOT_ENOUGH_REPLICAS",
        "UNKNOWN_TOPIC_OR_PART",
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "POLICY_VIOLATION",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        "UNSUPPORTED_VERSION",
    }
)

#: Unknown on purpose, with librdkafka's words:
#: - ``_PURGE_INFLIGHT``: "Purging messages that are in-flight to or from the broker
#:   will ignore any subsequent acknowledgement ... effectively making it impossible for
#:   the application to know if the messages were successfully produced or not."
#: - ``_MSG_TIMED_OUT``: INTRODUCTION.md, "If messages time out while in-flight ... the
#:   in-flight messages may be written to the topic log by the broker, even though a
#:   delivery report with error ERR__MSG_TIMED_OUT will be raised".  The same code is
#:   given to messages that timed out still queued (NOT_PERSISTED), but only
#:   rd_kafka_message_status() tells the two apart and the report does not carry it.

#: The prefix cykafka's batch path gives the messages after the one where a batch
#: stopped (Ctrl-C, close, max.block.ms): they were never handed to librdkafka.
_NOT_QUEUED = "not queued:"

#: How cykafka's delivery error (ext/events.pxi, ``_SENT_BEFORE``) tells a message purged
#: from the queue after a request that carried it got no answer (librdkafka's
#: ``RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED``): the broker may still append it.
_SENT_BEFORE = "it was sent before and never acknowledged: it may be in the topic"


#: How cykafka's delivery error (ext/errors.pxi, ``_record_refusal``) tells a record that
#: librdkafka failed only because the broker refused another record of its batch one by
#: one (INVALID_RECORD, INVALID_TIMESTAMP: ProduceResponse ``record_errors``, KIP-467)
#: from the refused record itself.  Kafka says the batch was not appended: sending such a
#: record again duplicates nothing.
_BATCH_MATE = "this record itself was not refused: send it again"


def is_batch_mate(exc: Union[BaseException, str, None]) -> bool:
    """Whether ``exc`` (or a problem's error text) failed a record for a batch-mate's
    sake, not its own."""
    if isinstance(exc, str):
        return exc.endswith(_BATCH_MATE)
    return exc is not None and str(getattr(exc, "message", "")).endswith(_BATCH_MATE)


def fate_of(exc: Optional[BaseException]) -> str:
    """The fate of a row whose delivery failed with ``exc`` (a ``KafkaError``, or
    None when no report came)."""
    if exc is None:
        return UNKNOWN
    name = getattr(exc, "name", None)
    if _SENT_BEFORE in str(getattr(exc, "message", "")):
        return UNKNOWN
    if name in _LOCAL_NOT_SENT or name in _BROKER_NOT_WRITTEN:
        return NOT_SENT
    if str(getattr(exc, "message", "")).startswith(_NOT_QUEUED):
        return NOT_SENT
    return UNKNOWN
