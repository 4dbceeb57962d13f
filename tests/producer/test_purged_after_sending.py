"""A message librdkafka sent once, whose request got no answer in ``socket.timeout.ms``
and which waited in its queue for a retry when the producer was closed, is purged with
``_PURGE_QUEUE`` like a message never sent, but the broker may still append that first
request: librdkafka's own status of it is ``POSSIBLY_PERSISTED``.  Such a message is
*unknown* (it may be in the topic), never *not sent* (safe to send again), and the
error says why.  The broker is frozen for real (SIGSTOP of the node) and the topic is
read back once it runs again."""

from __future__ import annotations

import time
import uuid

import cykafka
from cykafka.importer.fates import NOT_SENT, UNKNOWN, fate_of
from cykafka.launchers.kafka import KafkaCluster

N = 300


def test_a_purged_message_that_was_sent_before_is_unknown_not_unsent(
    kafka: KafkaCluster, read_back
) -> None:
    topic = kafka.create_topic(f"purged-after-sending-{uuid.uuid4().hex[:8]}", partitions=1)
    conf = {
        **kafka.client_config(),
        # The request times out fast (librdkafka's client-side request timeout is
        # socket.timeout.ms; request.timeout.ms is the broker's ack timeout); the
        # message, left to retry, does not.
        "socket.timeout.ms": 1000,
        "message.timeout.ms": 120_000,
        "linger.ms": 0,
        "log_level": 0,
    }
    node = kafka.nodes[0]
    p = cykafka.Producer(conf)
    try:
        p.produce(topic, b"warm").result(60)  # connected, the topic's leader known
        node.pause()
        try:
            futs = [p.produce(topic, str(i).encode()) for i in range(N)]
            # Sent into the frozen node's socket, then timed out and queued again for a
            # retry: wait past a few request timeouts.
            time.sleep(3.5)
            p.close(0)  # purges the queue (and what is in flight)
        finally:
            node.resume()
    finally:
        p.close()
    errors = [f.exception(10) for f in futs]
    assert all(e is not None for e in errors), "a delivery went through a frozen node"
    fates = [fate_of(e) for e in errors]
    written = {
        r.value for rs in read_back(kafka.bootstrap_servers, topic, [0]).values() for r in rs
    }
    in_topic = [i for i in range(N) if str(i).encode() in written]
    assert in_topic, "the frozen node appended nothing once it ran again: nothing was tested"
    said_unsent = [i for i in in_topic if fates[i] == NOT_SENT]
    assert said_unsent == [], (
        f"{len(said_unsent)} of the {len(in_topic)} messages in the topic were called not "
        f"sent: {errors[said_unsent[0]]}"
    )

    assert all(fates[i] == UNKNOWN for i in in_topic)
    assert any("may be in the topic" in str(errors[i]) for i in in_topic), errors[in_topic[0]]
