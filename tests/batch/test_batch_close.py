"""The bulk path with no broker: close() racing a blocked produce_batch, and a batch
that timed out."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import cykafka
from support.librdkafka import stuck_config


def _close_during(p: cykafka.Producer, call: Callable[[], Any], after: float) -> Any:
    """Run ``call`` in a thread, close ``p`` after ``after`` s; return what ``call``
    returned or raised (the thread must be done within 30 s of the close)."""
    out: dict[str, Any] = {}

    def work() -> None:
        try:
            out["r"] = call()
        except BaseException as exc:
            out["r"] = exc

    t = threading.Thread(target=work)
    t.start()
    time.sleep(after)
    p.close(0)
    t.join(30)
    assert not t.is_alive()
    return out["r"]


def test_close_racing_a_blocked_batch_fails_the_rest_of_it() -> None:
    # The batch waits for room in another thread when close() runs: close() used to free
    # the topic handle under it (a crash).  Now the batch stops with ProducerClosedError
    # and every message is accounted for.
    p = cykafka.Producer(stuck_config())
    exc = _close_during(p, lambda: p.produce_batch("t", [b"x"] * 200_000), after=0.5)
    assert isinstance(exc, cykafka.ProducerClosedError), exc
    report = exc.batch.result(10)
    assert report.total == 200_000 and report.delivered == 0
    assert report.delivered + report.failed == report.total
    assert len(p) == 0


def test_close_waits_for_a_batch_reading_partition_counts() -> None:
    # A keyed batch asks the (unreachable) cluster for the partition count, for up to
    # 500 ms without the GIL; close() must wait for it rather than free librdkafka.
    p = cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    keys = [b"k%d" % i for i in range(1_000)]
    bf = _close_during(p, lambda: p.produce_batch("t", [b"v"] * 1_000, keys), after=0.2)
    if isinstance(bf, cykafka.ProducerClosedError):  # close() began before the batch
        bf = bf.batch
    assert isinstance(bf, cykafka.BatchFuture), bf
    report = bf.result(10)
    assert report.total == 1_000 and report.delivered + report.failed == 1_000
    assert len(p) == 0


def test_a_batch_that_timed_out_raises_the_timeout_class() -> None:
    """raise_if_failed raises the class the first error's code stands for (the one
    table, errors.pxi), as the message's own future does: a DeliveryTimeoutError is a
    TimeoutError.  Nothing listens on port 1: every message times out."""
    conf = {"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300, "log_level": 0}
    with cykafka.Producer(conf) as p:
        report = p.produce_batch("t", [b"x"] * 3).result(30)
    assert report.failed == 3
    try:
        report.raise_if_failed()
    except cykafka.KafkaDeliveryError as exc:
        assert isinstance(exc, cykafka.DeliveryTimeoutError), repr(exc)
        assert isinstance(exc, TimeoutError) and exc.name == "_MSG_TIMED_OUT"
        assert "3 of 3 messages" in str(exc)
    else:
        raise AssertionError("raise_if_failed() raised nothing")
