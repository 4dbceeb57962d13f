"""The core producer against the real broker: futures, asyncio, callbacks,
blocking when full, logging, errors, and bad input."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import gc
import logging
import sys
import threading
import time

import numpy as np
import pytest

import cykafka


def test_ten_thousand_futures_read_back_in_order(broker, topic, read_back) -> None:
    name = topic(partitions=3)
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        futs = [p.produce(name, value=f"m{i}".encode(), key=f"k{i % 17}") for i in range(10_000)]
        assert p.flush(30) == 0
        assert len(p) == 0
    mds = [f.result(0) for f in futs]
    assert all(isinstance(md, cykafka.RecordMetadata) and md.topic == name for md in mds)
    by_partition: dict[int, list[tuple[int, bytes]]] = {}
    for i, md in enumerate(mds):
        by_partition.setdefault(md.partition, []).append((md.offset, f"m{i}".encode()))
    records = read_back(broker.bootstrap_servers, name, expected=10_000)
    for part, written in by_partition.items():
        got = [(r.offset, r.value) for r in records[part]]
        # Offsets equal the futures' metadata, and produce order is log order.
        assert got == written
        assert [o for o, _ in written] == sorted(o for o, _ in written)
    # A key always maps to one partition.
    key_parts: dict[bytes, set[int]] = {}
    for part, recs in records.items():
        for r in recs:
            key_parts.setdefault(r.key, set()).add(part)
    assert all(len(s) == 1 for s in key_parts.values())


def test_key_value_types_headers_timestamp_partition(broker, topic, read_back) -> None:
    name = topic(partitions=2)
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        futs = [
            p.produce(name, value=b"bytes", key=b"k", partition=1),
            p.produce(name, value=bytearray(b"ba"), key=memoryview(b"mv"), partition=1),
            p.produce(name, value="héllo", key="ключ", partition=1),
            p.produce(name, value=None, key=b"tomb", partition=1),
            p.produce(
                name, value=b"h", headers=[("src", b"etl"), ("s", "txt"), ("n", None)], partition=1
            ),
            p.produce(
                name, value=b"d", headers={"a": b"1"}, partition=1, timestamp=1_600_000_000_123
            ),
        ]
        p.flush(30)
    assert [f.result(0).partition for f in futs] == [1] * 6
    assert futs[5].result(0).timestamp == 1_600_000_000_123
    recs = read_back(broker.bootstrap_servers, name, partitions=[1], expected=6)[1]
    assert [(r.key, r.value) for r in recs[:4]] == [
        (b"k", b"bytes"),
        (b"mv", b"ba"),
        ("ключ".encode(), "héllo".encode()),
        (b"tomb", None),
    ]
    assert recs[4].headers == [("src", b"etl"), ("s", b"txt"), ("n", None)]
    assert recs[5].headers == [("a", b"1")] and recs[5].timestamp == 1_600_000_000_123


def test_timestamp_forms_reach_the_broker_exactly(broker, topic, read_back) -> None:
    # ints (also NumPy's) are milliseconds; an aware datetime is truncated to whole
    # milliseconds like Java's Instant.toEpochMilli; None is "now"
    name = topic()
    utc = datetime.UTC
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    given = [
        1_600_000_000_123,
        np.int64(1_600_000_000_456),
        datetime.datetime(2020, 9, 13, 12, 26, 40, 789_999, tzinfo=utc),
        datetime.datetime(2020, 9, 13, 14, 26, 40, 1_000, tzinfo=plus2),
        1,
    ]
    before = int(time.time() * 1000)
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        futs = [p.produce(name, b"v", timestamp=ts) for ts in given]
        futs.append(p.produce(name, b"now", timestamp=None))
        p.flush(30)
    want = [1_600_000_000_123, 1_600_000_000_456, 1_600_000_000_789, 1_600_000_000_001, 1]
    assert [f.result(0).timestamp for f in futs[:5]] == want
    recs = read_back(broker.bootstrap_servers, name, expected=6)[0]
    assert [r.timestamp for r in recs[:5]] == want
    assert before <= recs[5].timestamp <= int(time.time() * 1000)


def test_future_api_and_on_delivery(broker, topic) -> None:
    name = topic()
    seen: list[tuple[object, object]] = []
    done: list[object] = []
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        fut = p.produce(name, b"v", on_delivery=lambda err, md: seen.append((err, md)))
        assert fut.cancel() is False
        fut.add_done_callback(done.append)
        md = fut.result(10)
        assert fut.done() and fut.exception() is None
        late: list[object] = []
        fut.add_done_callback(late.append)  # already done: runs at once
        assert late == [fut]
        p.flush(10)
    assert seen == [(None, md)] and done == [fut]


def test_concurrent_futures_adapters(broker, topic) -> None:
    name = topic()
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        futs = [p.produce(name, b"x").as_concurrent() for _ in range(100)]
        done, not_done = concurrent.futures.wait(futs, timeout=30)
        assert not not_done and all(f.result().offset >= 0 for f in done)


def test_asyncio_await(broker, topic) -> None:
    name = topic()

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    async def main() -> list[cykafka.RecordMetadata]:
        tick_task = asyncio.create_task(ticker())
        try:
            with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
                before = ticks
                first = await p.produce(name, b"one")
                # Awaiting a future yields to the loop until the event thread wakes it:
                # the ticker ran while the first delivery was on its way.
                assert ticks > before
                futs = [p.produce(name, f"{i}") for i in range(1000)]
                before = ticks
                mds = [await f for f in futs]
                wrapped = await asyncio.wrap_future(p.produce(name, b"w").as_concurrent())
                gathered = await asyncio.gather(*(p.produce(name, b"g") for _ in range(10)))
                assert ticks > before
                return [first, *mds, wrapped, *gathered]
        finally:
            tick_task.cancel()

    # The loop is never blocked: the ticker keeps running while deliveries are awaited.
    mds = asyncio.run(asyncio.wait_for(main(), 60))
    offsets = [md.offset for md in mds]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets) == 1012


def test_failed_delivery_raises_kafka_delivery_error() -> None:
    # Nothing listens on port 1: every message times out and is reported, none vanish.
    conf = {"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300, "log_level": 0}
    errors: list[cykafka.KafkaError] = []
    with cykafka.Producer(conf, on_error=errors.append) as p:
        futs = [p.produce("t", b"x") for _ in range(5)]
        assert p.flush(10) == 0
    for f in futs:
        exc = f.exception(0)
        assert isinstance(exc, cykafka.KafkaDeliveryError) and isinstance(exc, TimeoutError)
        assert exc.name == "_MSG_TIMED_OUT" and exc.code == cykafka.ErrorCode.LOCAL_MSG_TIMED_OUT
        assert exc.retriable and not exc.fatal
        with pytest.raises(cykafka.DeliveryTimeoutError, match="_MSG_TIMED_OUT"):
            f.result(0)
    assert errors and all(isinstance(e, cykafka.KafkaError) for e in errors)


def test_librdkafka_logs_reach_python_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="cykafka")
    with cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 200}) as p:
        p.produce("t", b"x")
        p.flush(5)
    lines = [r for r in caplog.records if r.name == "cykafka"]
    assert any("127.0.0.1:1" in r.getMessage() for r in lines), [r.getMessage() for r in lines]


def test_blocked_produce_resumes_when_room_appears(broker, topic) -> None:
    name = topic()
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "queue.buffering.max.messages": 50,
        "linger.ms": 20,
    }
    with cykafka.Producer(conf) as p:
        futs = [p.produce(name, b"x" * 10) for _ in range(5000)]
        p.flush(30)
    assert all(f.result(0).offset >= 0 for f in futs)


def test_oversize_message_fails_only_its_future(broker, topic) -> None:
    name = topic()
    conf = {"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 10_000}
    with cykafka.Producer(conf) as p:
        ok1 = p.produce(name, b"small")
        big = p.produce(name, b"x" * 20_000)
        ok2 = p.produce(name, b"small too")
        p.flush(10)
    assert ok1.result(0).offset >= 0 and ok2.result(0).offset > ok1.result(0).offset
    exc = big.exception(0)
    assert isinstance(exc, cykafka.KafkaDeliveryError) and exc.name == "MSG_SIZE_TOO_LARGE"
    assert "20000" in str(exc)


def _code_of_outcome(fut: cykafka.DeliveryFuture) -> int:
    # This frame holds ``fut`` while the raised error's traceback holds this frame.
    try:
        fut.result()
    except cykafka.KafkaDeliveryError as exc:
        return exc.code
    return 0


def test_failed_future_is_freed_by_refcount_once_its_error_was_raised(broker, topic) -> None:
    # Futures are not objects of the cyclic GC, so nothing a future references may lead
    # back to it: future -> error -> traceback -> frame -> future would never be freed.
    name = topic()
    conf = {"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 10_000}
    with cykafka.Producer(conf) as p:
        futs = [p.produce(name, b"x" * 20_000) for _ in range(3)]
        p.flush(10)
    gc.disable()  # what is freed here is freed by reference counting alone
    try:
        for fut in futs:
            before = sys.getrefcount(fut)
            assert _code_of_outcome(fut) == cykafka.ErrorCode.MSG_SIZE_TOO_LARGE
            err = fut.exception(0)
            with pytest.raises(cykafka.KafkaDeliveryError) as raised:
                fut.result(0)
            # each time an equal error: same type, code and text
            assert type(raised.value) is type(err) and raised.value.code == err.code
            assert str(raised.value) == str(err) and err.name == "MSG_SIZE_TOO_LARGE"
            del err, raised
            assert sys.getrefcount(fut) == before
    finally:
        gc.enable()


def test_a_result_kept_is_never_changed_by_later_results(broker, topic) -> None:
    # A RecordMetadata nobody holds any more is refilled for the next result(): one
    # that is still held (by a name, a list, an unpacking in progress) must not be.
    name = topic()
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        futs = [p.produce(name, b"%d" % i) for i in range(1000)]
        p.flush(10)
    first = futs[0].result()
    kept = [f.result() for f in futs[::2]]
    for f in futs[1::2]:
        f.result()  # read and dropped
    it = iter(futs[5].result())
    futs[7].result()
    assert [md.offset for md in kept] == list(range(0, 1000, 2))
    assert first == (name, 0, 0, first.timestamp) and first.timestamp > 0
    assert list(it) == [name, 0, 5, futs[5].result().timestamp]
    assert futs[999].result().offset == 999


def test_values_lent_to_librdkafka_arrive_intact_after_the_caller_drops_them(
    broker, topic, read_back
) -> None:
    # A bytes value is lent to librdkafka, not copied: the future keeps it alive until
    # the delivery report.  Each value here is dropped by the caller at once and the
    # memory of freed values is reused by the next ones (the same size), so a value
    # not kept alive would arrive with another message's bytes.
    name = topic()
    n = 2000
    conf = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 200}
    with cykafka.Producer(conf) as p:
        futs = [p.produce(name, (b"%06d-" % i) * 16) for i in range(n)]
        scratch = [(b"%06d+" % -i) * 16 for i in range(n)]  # reuses freed memory
        p.flush(30)
    del scratch
    assert [f.result(0).offset for f in futs] == list(range(n))
    got = [r.value for r in read_back(broker.bootstrap_servers, name, expected=n)[0]]
    assert got == [(b"%06d-" % i) * 16 for i in range(n)]


def test_a_lent_value_is_released_exactly_once(broker, topic) -> None:
    # The reference a pending future holds on its value (a bytes object lent to
    # librdkafka) is dropped when the report resolves it; a value larger than
    # message.copy.max.bytes, or one that is not bytes, is copied and never held.
    name = topic()
    small, large = b"s" * 100, b"l" * 70_000
    shared = bytearray(b"b" * 100)
    base = [sys.getrefcount(v) for v in (small, large, shared)]
    conf = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 200}
    with cykafka.Producer(conf) as p:
        futs = [p.produce(name, v) for v in (small, large, shared)]
        held = [sys.getrefcount(v) for v in (small, large, shared)]
        p.flush(30)
        after = [sys.getrefcount(v) for v in (small, large, shared)]
    assert [f.result(0).offset for f in futs] == [0, 1, 2]
    assert held == [base[0] + 1, base[1], base[2]]
    assert after == base


def test_callback_that_references_its_future_is_dropped_once_resolved(broker, topic) -> None:
    name = topic()
    ran = threading.Event()
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        plain = p.produce(name, b"plain")
        fut = p.produce(name, b"with a callback")
        fut.add_done_callback(lambda f, keep=fut: ran.set())  # a cycle while pending
        p.flush(10)
        assert ran.wait(10)
        deadline = time.monotonic() + 10
        while sys.getrefcount(fut) != sys.getrefcount(plain):
            assert time.monotonic() < deadline, "the callback still references its future"
            time.sleep(0.01)
    assert fut.result(0).offset == plain.result(0).offset + 1


def test_callback_that_raises_is_logged_and_delivery_continues(
    broker, topic, caplog: pytest.LogCaptureFixture
) -> None:
    name = topic()
    calls: list[int] = []

    def bad(err: object, md: object) -> None:
        calls.append(1)
        raise RuntimeError("boom in user callback")

    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        futs = [p.produce(name, b"x", on_delivery=bad) for _ in range(50)]
        p.flush(10)
    assert len(calls) == 50
    assert all(f.result(0).offset >= 0 for f in futs)
    assert any(
        "boom in user callback" in (r.exc_text or "")
        or (r.exc_info and "boom" in str(r.exc_info[1]))
        for r in caplog.records
    )


def test_unclosed_producer_warns_and_fails_nothing_silently() -> None:
    # Flushed for exit_timeout (here 0.5 s; 5 by default), then what is left fails.
    conf = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}
    p = cykafka.Producer(conf, exit_timeout=0.5)
    fut = p.produce("t", b"x")
    started = time.monotonic()
    with pytest.warns(ResourceWarning, match="unclosed cykafka Producer"):
        del p
        gc.collect()
    assert isinstance(fut.exception(15), cykafka.KafkaDeliveryError)
    assert time.monotonic() - started < 5, "the collection waited longer than exit_timeout"


def test_dropping_the_producer_in_its_own_callback_fails_its_futures() -> None:
    # The last reference goes away inside an on_delivery callback, on the event thread.
    # The producer used to stop serving reports there: the other futures hung forever
    # and kept the references librdkafka held for them.
    conf = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0, "message.timeout.ms": 800}
    holder = [cykafka.Producer(conf)]
    name = holder[0].name
    with pytest.warns(ResourceWarning, match="unclosed cykafka Producer"):
        f1 = holder[0].produce("a", b"x", on_delivery=lambda err, md: holder.clear())
        time.sleep(0.4)
        f2 = holder[0].produce("b", b"y")  # still queued when f1 times out
        assert isinstance(f1.exception(10), cykafka.DeliveryTimeoutError)
        exc = f2.exception(10)
    assert isinstance(exc, cykafka.KafkaDeliveryError) and exc.name == "_PURGE_QUEUE"
    # The event thread served the purge's reports, then closed the producer and ended.
    deadline = time.monotonic() + 15
    while any(t.name == f"cykafka-events-{name}" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the event thread never ended"
        time.sleep(0.05)
    assert sys.getrefcount(f2) == 2  # f2 and getrefcount's argument: librdkafka's is gone


@pytest.mark.broker  # librdkafka's mock cluster
def test_one_failing_report_does_not_abandon_the_rest_of_the_event() -> None:
    # Even logging a raising callback can raise (here: a logging filter).  That used to
    # abort the whole delivery-report event: the other futures never resolved.
    from cykafka.testing import MockCluster

    class Broken(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if "on_delivery callback raised" in record.getMessage():
                raise RuntimeError("the logging setup is broken")
            return True

    def bad(err: object, md: object) -> None:
        raise ValueError("user callback")

    logger = logging.getLogger("cykafka")
    broken = Broken()
    with MockCluster(num_brokers=1) as mock:
        name = mock.create_topic("dr", partitions=1)
        conf = {"bootstrap.servers": mock.bootstrap_servers, "linger.ms": 200}
        with cykafka.Producer(conf) as p:
            p.produce(name, b"warm-up").result(10)
            logger.addFilter(broken)
            try:
                # linger.ms: all 50 travel in one request, so one report event.
                futs = [p.produce(name, b"x", on_delivery=bad) for _ in range(50)]
                assert p.flush(10) == 0
            finally:
                logger.removeFilter(broken)
            assert len(p) == 0
    assert all(f.result(0).offset >= 0 for f in futs)


def _hold_event_thread(p: cykafka.Producer, topic: str, seconds: float) -> cykafka.DeliveryFuture:
    """Produce one message whose on_delivery holds the producer's event thread for
    ``seconds``; return its future once the callback is running."""
    started = threading.Event()

    def hold(err: object, md: object) -> None:
        started.set()
        time.sleep(seconds)

    fut = p.produce(topic, b"hold", on_delivery=hold)
    assert started.wait(10)
    return fut


@pytest.mark.slow
@pytest.mark.broker  # librdkafka's mock cluster
def test_close_serves_reports_left_when_the_event_thread_was_stuck() -> None:
    # A callback blocks the event thread past close()'s 10 s grace period; the reports
    # queued behind it used to be dropped with the queue (futures pending forever).
    # close() now serves them itself before destroying the queue.
    from cykafka.testing import MockCluster

    with MockCluster(num_brokers=1) as mock:
        name = mock.create_topic("stuck", partitions=1)
        p = cykafka.Producer({"bootstrap.servers": mock.bootstrap_servers})
        _hold_event_thread(p, name, 10.5)
        futs = [p.produce(name, b"y") for _ in range(5)]
        p.close(0)
        assert len(p) == 0
        assert all(f.done() for f in futs)
        for f in futs:  # purged by close(0), or delivered; either way reported
            exc = f.exception(0)
            assert exc is None or exc.name in ("_PURGE_QUEUE", "_PURGE_INFLIGHT"), exc


@pytest.mark.broker  # librdkafka's mock cluster
def test_waiting_calls_in_a_callback_raise_instead_of_deadlocking() -> None:
    # Callbacks run on the event thread, the only thread that serves delivery reports:
    # waiting there for a report (result(), flush(), close()) used to hang for good.
    from cykafka.testing import MockCluster

    seen: dict[str, object] = {}
    done = threading.Event()

    def attempt(what: str, call: object) -> None:
        try:
            seen[what] = call()  # type: ignore[operator]
        except BaseException as exc:
            seen[what] = exc

    def on_delivery(err: object, md: object) -> None:
        pending = p.produce(name, b"from the callback")
        attempt("result", lambda: pending.result(5))
        attempt("exception", lambda: pending.exception(5))
        attempt("result(0)", lambda: pending.result(0))  # no wait: TimeoutError as usual
        attempt("flush", lambda: p.flush(5))
        attempt("close", lambda: p.close(5))

    def done_callback(fut: cykafka.DeliveryFuture) -> None:
        attempt("own result", fut.result)  # done: still fine inside a callback
        done.set()

    with MockCluster(num_brokers=1) as mock:
        name = mock.create_topic("cb", partitions=1)
        with cykafka.Producer({"bootstrap.servers": mock.bootstrap_servers}) as p:
            fut = p.produce(name, b"x", on_delivery=on_delivery)
            fut.add_done_callback(done_callback)
            assert done.wait(30)
            assert p.flush(10) == 0
            assert not p.closed
    for what in ("result", "exception", "flush", "close"):
        assert isinstance(seen[what], RuntimeError), (what, seen[what])
        assert "event thread" in str(seen[what])
    assert isinstance(seen["result(0)"], TimeoutError)
    assert seen["own result"] == fut.result(0)


@pytest.mark.broker  # librdkafka's mock cluster
def test_librdkafka_freed_without_close_warns() -> None:
    # close() interrupted by Ctrl-C after it stopped the event thread, and a Producer
    # whose __del__ does not close: the core is freed at garbage collection.  It used
    # to be freed silently (and with the GIL held); now it warns.
    import _thread

    from cykafka.testing import MockCluster

    class Unfinalized(cykafka.Producer):
        def __del__(self) -> None:  # skips NativeProducer.__del__, which would close
            pass

    with MockCluster(num_brokers=1) as mock:
        name = mock.create_topic("gc", partitions=1)
        p = Unfinalized({"bootstrap.servers": mock.bootstrap_servers})
        fut = _hold_event_thread(p, name, 2)
        thread_name = f"cykafka-events-{p.name}"
        timer = threading.Timer(0.5, _thread.interrupt_main)
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                p.close(0.1)  # interrupted while it joins the busy event thread
        finally:
            timer.cancel()
        assert not p.closed
        with pytest.warns(ResourceWarning, match="never closed; librdkafka was freed"):
            del p
            deadline = time.monotonic() + 15
            while any(t.name == thread_name for t in threading.enumerate()):
                assert time.monotonic() < deadline, "the event thread never ended"
                time.sleep(0.05)
            gc.collect()
        assert fut.result(0).offset >= 0


def test_many_threads_one_producer(broker, topic) -> None:
    name = topic(partitions=4)
    n_threads, per_thread = 8, 2000
    futs: list[list[cykafka.DeliveryFuture]] = [[] for _ in range(n_threads)]
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:

        def work(t: int) -> None:
            for i in range(per_thread):
                futs[t].append(p.produce(name, f"{t}:{i}", key=str(t)))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert p.flush(60) == 0
    for t in range(n_threads):
        mds = [f.result(0) for f in futs[t]]
        # Same key -> same partition, produce order == offset order.
        assert len({md.partition for md in mds}) == 1
        assert [md.offset for md in mds] == sorted(md.offset for md in mds)


@pytest.mark.broker  # librdkafka's mock cluster
def test_transaction_aborts_when_its_commit_fails() -> None:
    # librdkafka: an abortable commit error "requires abort_transaction()"; the block
    # must not leave the transaction open, or every later transaction is refused.
    from cykafka.testing import MockCluster, committed_view, read_raw_log

    with MockCluster(num_brokers=3) as mock:
        mock.create_topic("txn", 1, 3)
        cfg = {"bootstrap.servers": mock.bootstrap_servers, "transactional.id": "abort-1"}
        with cykafka.Producer(cfg, preset="exactly_once") as p:
            p.init_transactions(30)
            mock.push_request_errors("Produce", ["INVALID_RECORD"])  # not retriable
            with pytest.raises(cykafka.KafkaError) as info:
                with p.transaction(30):
                    lost = p.produce("txn", b"aborted")
            assert info.value.txn_requires_abort
            assert isinstance(lost.exception(10), cykafka.KafkaDeliveryError)
            committed = []
            for attempt in range(3):  # the mock may fail the next one too (epoch bump)
                try:
                    with p.transaction(30):
                        fut = p.produce("txn", f"ok-{attempt}".encode())
                    committed.append(f"ok-{attempt}".encode())
                    fut.result(10)
                    break
                except cykafka.KafkaError as exc:
                    assert exc.txn_requires_abort, exc  # aborted by the block, not left open
        assert committed
        seen = [r.value for r in committed_view(read_raw_log(mock.bootstrap_servers, "txn"))]
    assert seen == committed


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, 2**64])
def test_close_and_flush_accept_an_infinite_timeout(broker, topic, timeout) -> None:
    name = topic()
    p = cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers})
    f = p.produce(name, b"v")
    assert p.flush(timeout) == 0
    f2 = p.produce(name, b"w")
    p.close(timeout)
    assert p.closed and f.result(0).offset >= 0 and f2.result(0).offset >= 0


@pytest.mark.parametrize(
    "timeout, exc, words",
    [
        (float("nan"), ValueError, "timeout must be"),
        (-1, ValueError, "timeout must be >= 0"),
        (float("-inf"), ValueError, "timeout must be >= 0"),
        ("1", TypeError, "timeout must be a number"),
    ],
)
def test_bad_timeouts_leave_the_producer_usable(broker, topic, timeout, exc, words) -> None:
    name = topic()
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        for call in (p.close, p.flush):
            with pytest.raises(exc, match=words):
                call(timeout)
            assert not p.closed
            assert p.produce(name, b"still usable").result(30).offset >= 0


def test_an_idempotent_producer_has_its_id_before_librdkafkas_retry(broker, topic) -> None:
    """A producer that sends at once (as an import does): librdkafka's first try for
    a producer id then comes before the broker's own connection is up, and its retry
    timer waits 500 ms; cykafka's metadata requests get the id at once.  The
    statistics librdkafka emits at 300 ms say where it stands."""
    import json

    name = topic()
    states: list[str] = []
    p = cykafka.Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "statistics.interval.ms": 300},
        preset="ordered",
        stats_cb=lambda text: states.append(json.loads(text)["eos"]["idemp_state"]),
    )
    try:
        first = p.produce(name, b"first")
        deadline = time.monotonic() + 10
        while not states and time.monotonic() < deadline:
            time.sleep(0.01)
        assert states and states[0] == "Assigned", states
        assert first.result(10).offset == 0
    finally:
        p.close()


def test_asking_for_the_producer_id_creates_no_topic(fresh_broker) -> None:
    """The early metadata requests of an idempotent producer name no topic (a broker
    that creates topics on demand would make one)."""
    from confluent_kafka.admin import AdminClient

    from cykafka.cluster.admin import topic_metadata

    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap_servers})
    before = set(topic_metadata(admin, "-", 10)[0].topics)
    with cykafka.Producer({"bootstrap.servers": fresh_broker.bootstrap_servers}, preset="ordered"):
        time.sleep(0.5)  # every early request has been made
    assert set(topic_metadata(admin, "-", 10)[0].topics) == before


def test_an_idempotent_producer_to_nowhere_closes_promptly() -> None:
    """Its early metadata requests are bounded: close() does not wait on a cluster
    that never answers, and the message it held fails instead of vanishing."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = cykafka.Producer({"bootstrap.servers": f"127.0.0.1:{port}"}, preset="ordered")
    f = p.produce("nowhere", b"x")
    started = time.monotonic()
    p.close(0.5)
    assert time.monotonic() - started < 5
    with pytest.raises(cykafka.KafkaError):
        f.result(0)
