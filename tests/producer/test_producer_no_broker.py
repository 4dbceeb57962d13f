"""The core producer with no broker to reach: the librdkafka it runs, blocking when
its queue is full, a future's size, and bad arguments and configs named."""

from __future__ import annotations

import datetime
import sys
import threading
import time

import pytest

import cykafka
from support.librdkafka import stuck_config


def test_librdkafka_is_the_wheels_2_16() -> None:
    assert cykafka.librdkafka_version().startswith("2.16.")


def test_full_queue_blocks_then_raises_buffer_error() -> None:
    conf = {
        "bootstrap.servers": "127.0.0.1:1",
        "queue.buffering.max.messages": 10,
        "max.block.ms": 300,
        "message.timeout.ms": 5000,
        "log_level": 0,
    }
    with cykafka.Producer(conf) as p:
        futs = [p.produce("t", b"x") for _ in range(10)]
        start = time.monotonic()
        with pytest.raises(BufferError) as info:
            p.produce("t", b"one too many")
        waited = time.monotonic() - start
        assert isinstance(info.value, cykafka.QueueFullError)
        assert "max.block.ms" in str(info.value)
        assert waited >= 0.25  # it blocked for max.block.ms rather than failing at once
        assert len(p) == 10
        p.close(0)  # fail the rest: every future resolves
    assert all(isinstance(f.exception(0), cykafka.KafkaDeliveryError) for f in futs)


def test_a_pending_future_is_48_bytes() -> None:
    # A producer may hold millions of pending futures: each byte shows in its speed
    # and memory (bench/memory.py measures the whole cost per future).
    conf = {"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 1000}
    with cykafka.Producer(conf) as p:
        fut = p.produce("t", b"v")
        assert not fut.done() and sys.getsizeof(fut) == 48
        p.close(0)
    assert isinstance(fut.exception(0), cykafka.KafkaDeliveryError)


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"value": 12}, TypeError, "value must be bytes"),
        ({"value": b"v", "key": 1.5}, TypeError, "key must be bytes"),
        ({"value": b"v", "headers": "x"}, TypeError, "headers must be"),
        ({"value": b"v", "headers": [("a",)]}, TypeError, r"headers\[0\]"),
        ({"value": b"v", "headers": [(1, b"x")]}, TypeError, r"headers\[0\] name"),
        ({"value": b"v", "headers": [("a", 5)]}, TypeError, r"headers\[0\] value"),
        ({"value": b"v", "partition": -1}, ValueError, "partition"),
        ({"value": b"v", "partition": "0"}, TypeError, "partition"),
        ({"value": b"v", "timestamp": -5}, ValueError, "timestamp"),
        # librdkafka would stamp 0 with the current time: refused, not replaced
        ({"value": b"v", "timestamp": 0}, ValueError, "timestamp is 0.*pass None"),
        ({"value": b"v", "timestamp": 0.5}, TypeError, r"not float.*int\(t \* 1000\)"),
        ({"value": b"v", "timestamp": 1.6e12}, TypeError, "not float"),
        ({"value": b"v", "timestamp": datetime.datetime(2020, 1, 1)}, ValueError, "naive datetime"),
        ({"value": b"v", "timestamp": "1600000000000"}, TypeError, "timestamp must be an int"),
        ({"value": b"v", "timestamp": True}, TypeError, "not bool"),
        ({"value": b"v", "on_delivery": 3}, TypeError, "on_delivery"),
        # a lone surrogate has no UTF-8: the error names the argument
        ({"value": "\ud800"}, ValueError, "value is a str that cannot be encoded as UTF-8"),
        ({"value": b"v", "key": "\udcff"}, ValueError, "key is a str that cannot be encoded"),
        (
            {"value": b"v", "headers": [("\ud800", b"x")]},
            ValueError,
            r"headers\[0\] name is a str that cannot be encoded",
        ),
        (
            {"value": b"v", "headers": [("h", "\ud800")]},
            ValueError,
            r"headers\[0\] value \('h'\) is a str that cannot be encoded",
        ),
    ],
)
def test_bad_arguments_name_the_culprit(kwargs, exc, words) -> None:
    with cykafka.Producer({"bootstrap.servers": "127.0.0.1:1"}) as p:
        with pytest.raises(exc, match=words):
            p.produce("t", **kwargs)
        assert len(p) == 0


@pytest.mark.parametrize("name", ["", "a b", "x" * 250, "..", "tópico"])
def test_invalid_topic_names(name: str) -> None:
    with cykafka.Producer({"bootstrap.servers": "127.0.0.1:1"}) as p:
        with pytest.raises(ValueError, match="invalid topic name"):
            p.produce(name, b"v")


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match="'no.such.property'.*No such configuration property"):
        cykafka.Producer({"no.such.property": "1"})
    with pytest.raises(cykafka.KafkaConfigError, match="'acks'"):
        cykafka.Producer({"acks": "sometimes"})
    with pytest.raises(TypeError, match="config must be a dict"):
        cykafka.Producer([("acks", "all")])  # type: ignore[arg-type]


def test_use_after_close_is_a_clear_runtime_error() -> None:
    p = cykafka.Producer({"bootstrap.servers": "127.0.0.1:1"})
    p.close()
    p.close()  # idempotent
    assert p.closed
    with pytest.raises(RuntimeError, match="closed"):
        p.produce("t", b"x")
    with pytest.raises(cykafka.ProducerClosedError):
        p.flush()


def test_close_with_timeout_fails_what_is_left() -> None:
    p = cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    futs = [p.produce("t", b"x") for _ in range(100)]
    p.close(0.2)
    excs = [f.exception(0) for f in futs]
    assert all(isinstance(e, cykafka.KafkaDeliveryError) for e in excs)
    assert {e.name for e in excs} <= {"_PURGE_QUEUE", "_PURGE_INFLIGHT", "_MSG_TIMED_OUT"}


def test_close_racing_other_calls_waits_for_them_and_fails_the_rest() -> None:
    # A produce() blocked for room and a flush() in other threads while close() runs:
    # close() must not free librdkafka under them (it used to crash); both notice the
    # close, and every message still gets an outcome.
    p = cykafka.Producer(stuck_config())
    first = p.produce("t", b"x")
    out: dict[str, object] = {}

    def blocked_produce() -> None:
        try:
            out["produce"] = p.produce("t", b"y")
        except BaseException as exc:
            out["produce"] = exc

    def flush() -> None:
        try:
            out["flush"] = p.flush(60)
        except BaseException as exc:
            out["flush"] = exc

    threads = [threading.Thread(target=blocked_produce), threading.Thread(target=flush)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    p.close(0)
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert isinstance(out["produce"], cykafka.ProducerClosedError), out
    assert "closed while this call waited for room" in str(out["produce"])
    assert isinstance(out["flush"], cykafka.ProducerClosedError), out
    assert first.exception(0).name in ("_PURGE_QUEUE", "_PURGE_INFLIGHT")
    assert len(p) == 0
    with pytest.raises(cykafka.ProducerClosedError):
        p.produce("t", b"after close")


def test_concurrent_closes_run_once() -> None:
    # The second close() waits for the first and returns; it used to destroy librdkafka's
    # queue a second time.
    p = cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    futs = [p.produce("t", b"x") for _ in range(10)]
    errors: list[BaseException] = []

    def close() -> None:
        try:
            p.close(0.5)
        except BaseException as exc:
            errors.append(exc)
            raise

    threads = [threading.Thread(target=close) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads) and not errors and p.closed
    assert all(isinstance(f.exception(0), cykafka.KafkaDeliveryError) for f in futs)


def test_delivery_report_only_error_is_refused() -> None:
    # With it librdkafka reports only failures: delivered futures would never resolve
    # and flush()/close() would wait forever.
    for value in (True, "true"):
        with pytest.raises(
            cykafka.KafkaConfigError, match="delivery.report.only.error.*never resolve"
        ):
            cykafka.Producer(
                {"bootstrap.servers": "127.0.0.1:1", "delivery.report.only.error": value}
            )
    with cykafka.Producer(
        {"bootstrap.servers": "127.0.0.1:1", "delivery.report.only.error": False}
    ) as p:
        assert p._effective_config("delivery.report.only.error") == "false"


def test_java_key_overrides_the_preset_as_the_explainer_says() -> None:
    # Explicit keys override a preset even when written with the Java name; the
    # explainer reports the override, and the producer runs with it.
    cfg = {
        "bootstrap.servers": "127.0.0.1:1",
        "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner",
    }
    with cykafka.Producer(cfg, preset="java_compatible") as p:
        assert p._effective_config("partitioner") == "random"
        assert any("overrides preset 'java_compatible'" in w for w in p.guarantees.warnings)


@pytest.mark.parametrize(
    ("config", "sparse"),
    [
        ({}, "true"),
        ({"enable.idempotence": True}, "false"),
        ({"transactional.id": "sparse-tx"}, "false"),
        ({"enable.idempotence": "true", "enable.sparse.connections": True}, "true"),
    ],
)
def test_idempotent_producers_connect_their_brokers_at_once(config, sparse) -> None:
    # Otherwise librdkafka's PID timer connects the leader itself and the first
    # delivery of every new idempotent producer waits 0.5-1.0 s (see producer.py).
    with cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", **config}) as p:
        assert p._effective_config("enable.sparse.connections") == sparse


def test_transaction_calls_are_interruptible() -> None:
    # init_transactions(30) against nothing used to be one GIL-free call of 30 s that
    # Ctrl-C could not interrupt; it now runs in resumable slices and checks signals.
    import _thread

    conf = {"bootstrap.servers": "127.0.0.1:1", "transactional.id": "interrupt-me", "log_level": 0}
    with cykafka.Producer(conf) as p:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        start = time.monotonic()
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                p.init_transactions(30)
        finally:
            timer.cancel()
        assert time.monotonic() - start < 20  # interrupted, not run to its timeout
        with pytest.raises(ValueError, match="timeout must be >= 0"):
            p.init_transactions(-1)


def test_repr_masks_secrets() -> None:
    conf = {
        "bootstrap.servers": "127.0.0.1:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "hunter2-secret",
    }
    with cykafka.Producer(conf) as p:
        assert "hunter2" not in repr(p)
        assert p.config["sasl.password"] == "***"


def test_error_tree() -> None:
    e = cykafka.QueueFullError(cykafka.ErrorCode.LOCAL_QUEUE_FULL)
    assert isinstance(e, BufferError) and isinstance(e, cykafka.KafkaError)
    assert e.name == "_QUEUE_FULL" and e.retriable
    assert issubclass(cykafka.KafkaConfigError, ValueError)
    assert issubclass(cykafka.ProducerClosedError, RuntimeError)
    d = cykafka.KafkaDeliveryError(cykafka.ErrorCode.MSG_SIZE_TOO_LARGE, "too big")
    assert not d.retriable and "[MSG_SIZE_TOO_LARGE] too big" == str(d)
    import pickle

    assert str(pickle.loads(pickle.dumps(d))) == str(d)


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"preset": 5}, TypeError, "preset must be a preset name.*not int"),
        ({"preset": 0}, TypeError, "preset must be a preset name.*not int"),
        ({"preset": [5]}, TypeError, "preset names must be str"),
        ({"preset": b"ordered"}, TypeError, "preset must be a preset name.*not bytes"),
    ],
)
def test_bad_preset_argument_is_named(kwargs, exc, words) -> None:
    with pytest.raises(exc, match=words):
        cykafka.Producer({"bootstrap.servers": "127.0.0.1:1"}, **kwargs)


def test_bad_statistics_interval_names_the_property() -> None:
    with pytest.raises(ValueError, match="statistics.interval.ms.*'abc'"):
        cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "statistics.interval.ms": "abc"})


def test_first_produce_with_topic_none_is_refused_not_a_crash() -> None:
    # The topic handle cache starts empty: None must not match it.
    with cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0}) as p:
        with pytest.raises(TypeError, match="topic must be str"):
            p.produce(None, b"v")


@pytest.mark.parametrize(
    "value, exc", [(-1, ValueError), (float("nan"), ValueError), ("5", TypeError)]
)
def test_bad_exit_timeout_is_named(value, exc) -> None:
    with pytest.raises(exc, match="exit_timeout"):
        cykafka.Producer({"bootstrap.servers": "127.0.0.1:1"}, exit_timeout=value)
