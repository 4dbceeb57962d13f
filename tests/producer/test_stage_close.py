"""produce()'s staging (ext/stage.pxi) with no broker: what close() does to the messages
it could not hand to librdkafka."""

from __future__ import annotations

import cykafka


def test_close_fails_messages_it_could_not_hand_over() -> None:
    """queue.buffering.max.kbytes full and no broker: a staged message that never
    got into librdkafka's queue fails at close() like the queued ones - nothing
    stays pending."""
    conf = {
        "bootstrap.servers": "127.0.0.1:1",
        "queue.buffering.max.kbytes": 1,
        "max.block.ms": 0,
        "log_level": 0,
    }
    futs: list[cykafka.DeliveryFuture] = []
    refused = 0
    p = cykafka.Producer(conf)
    for i in range(200):
        try:
            futs.append(p.produce("t", b"%016d" % i))
        except cykafka.QueueFullError:
            refused += 1
    assert refused and len(p) == len(futs)
    p.close(0)
    errors = [f.exception(0) for f in futs]
    assert all(isinstance(e, cykafka.KafkaDeliveryError) for e in errors)
    assert any("still held it" in str(e) for e in errors), errors[-1]
    assert all("PURGE" in e.name for e in errors)
