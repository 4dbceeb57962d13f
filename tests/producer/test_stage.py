"""produce() hands plain messages to librdkafka in groups (ext/stage.pxi): what a
user relies on must not change - order, timeliness, and an outcome for every
message (backpressure: test_producer.py, test_inspector.py)."""

from __future__ import annotations

import time

import cykafka


def _wait_done(futs: list[cykafka.DeliveryFuture], within: float) -> float:
    """Poll (never a call that hands messages over) until every future is done;
    the seconds it took."""
    t0 = time.monotonic()
    while not all(f.done() for f in futs):
        if time.monotonic() - t0 > within:
            raise AssertionError(f"{sum(not f.done() for f in futs)} futures still pending")
        time.sleep(0.005)
    return time.monotonic() - t0


def test_messages_nobody_waits_for_are_delivered_promptly(broker, topic) -> None:
    """A few messages and then no further call: the event thread, woken by the
    first staged message, hands them over within about a millisecond."""
    name = topic()
    took = []
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        p.produce(name, b"connect").result(30)
        for _ in range(5):
            time.sleep(0.3)  # the event thread is idle again: it must be woken
            futs = [p.produce(name, b"lone %d" % i) for i in range(5)]
            took.append(_wait_done(futs, within=5))
            assert all(f.result(0).offset >= 0 for f in futs)
    # linger.ms (5) plus a local round trip, about 10 ms here; an event thread
    # left asleep would add up to its 200 ms wait.
    assert sorted(took)[2] < 0.05, took


def test_create_time_is_taken_when_produced_not_when_awaited(broker, topic, read_back) -> None:
    name = topic()
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        p.produce(name, b"connect").result(30)
        before = time.time()
        fut = p.produce(name, b"stamped")
        time.sleep(0.5)
        md = fut.result(10)
    # CreateTime is set when the message reaches librdkafka's queue: about a
    # millisecond after produce(), not when someone first waited for it.
    assert before * 1000 - 1 <= md.timestamp <= before * 1000 + 100, md.timestamp - before * 1000
    (rec,) = [
        r for r in read_back(broker.bootstrap_servers, name, expected=2)[0] if r.value == b"stamped"
    ]
    assert rec.timestamp == md.timestamp


def test_order_is_kept_across_every_way_into_librdkafka(broker, topic, read_back) -> None:
    """Staged messages and those that go straight to librdkafka (headers, a
    partition, a timestamp, str keys, large values), batches and produce_many,
    interleaved on one partition, arrive in call order."""
    name = topic()
    conf = {"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True}
    expected: list[bytes] = []
    futs: list[cykafka.DeliveryFuture] = []
    with cykafka.Producer(conf) as p:
        for i in range(3000):
            v = b"%05d" % i
            kind = i % 11
            if kind == 3:
                futs.append(p.produce(name, v, headers={"h": b"1"}))
            elif kind == 5:
                futs.append(p.produce(name, v, partition=0))
            elif kind == 7:
                futs.append(p.produce(name, v, timestamp=1_700_000_000_000 + i))
            elif kind == 8:
                futs.append(p.produce(name, v, key="str key"))
            elif kind == 9:
                v = v + b"." * 70_000  # beyond message.copy.max.bytes: copied, direct
                futs.append(p.produce(name, v))
            elif kind == 10 and i % 2:
                p.produce_batch(name, [v])
            elif kind == 10:
                p.produce_many([v], name)
            else:
                futs.append(p.produce(name, v, key=b"k" if i % 2 else None))
            expected.append(v)
        assert p.flush(60) == 0
    assert all(f.result(0).offset >= 0 for f in futs)
    got = [r.value for r in read_back(broker.bootstrap_servers, name, expected=3000)[0]]
    assert got == expected


def test_a_message_refused_at_hand_over_fails_its_future_not_its_neighbours(broker, topic) -> None:
    name = topic()
    conf = {"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 10_000}
    with cykafka.Producer(conf) as p:
        calls: list[tuple[object, object]] = []
        futs = [
            p.produce(name, b"a"),
            p.produce(name, b"b" * 20_000, on_delivery=lambda e, m: calls.append((e, m))),
            p.produce(name, b"c"),
        ]
        exc = futs[1].exception(10)
        assert isinstance(exc, cykafka.KafkaDeliveryError) and exc.name == "MSG_SIZE_TOO_LARGE"
        assert "refused by librdkafka before sending; value 20000 bytes" in str(exc)
        assert futs[0].result(10).offset + 1 == futs[2].result(10).offset
        assert p.flush(10) == 0
    assert len(calls) == 1 and isinstance(calls[0][0], cykafka.KafkaDeliveryError)
