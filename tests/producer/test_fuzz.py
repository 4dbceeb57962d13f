"""Bad input: random types and sizes thrown at produce, produce_batch,
headers, configs and presets.

The oracle for every call: it raises a clear ``TypeError``/``ValueError`` *and
queues nothing*, or it returns a future that resolves -- delivered (and then
read back byte-exact at the offset the future reported) or failed with a
``KafkaDeliveryError``.  Any other exception, a crash, a hang (bounded by
``faulthandler``) or a delivered message missing from the log fails the test.
Example counts are ``CYKAFKA_FUZZ_EXAMPLES`` (default 150 per test; the soak run
uses more).
"""

from __future__ import annotations

import faulthandler
import math
import operator
import os
import uuid
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cykafka
from support.reliability_log import record

EXAMPLES = int(os.environ.get("CYKAFKA_FUZZ_EXAMPLES", "150"))
MAX_BYTES = 20_000  # message.max.bytes of the fuzzed producer: oversize is cheap to hit
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CLEAR = (TypeError, ValueError)


@pytest.fixture(autouse=True)
def _watchdog():
    faulthandler.dump_traceback_later(600, exit=True)  # a hang dumps every thread and fails
    yield
    faulthandler.cancel_dump_traceback_later()


class Ledger:
    """Every message a test tried, and what became of it."""

    def __init__(self) -> None:
        self.tried = 0
        self.refused = 0  # clear TypeError/ValueError, nothing queued
        self.failed = 0  # failed future (reported)
        self.delivered: dict[tuple[int, int], tuple[Any, Any, Any]] = {}  # (part, off) -> msg

    def check_log(self, read_back: Any, servers: str, topic: str) -> None:
        recs = read_back(servers, topic, expected=len(self.delivered), timeout=60)
        got = {(p, r.offset): (r.value, r.key, r.headers) for p, rs in recs.items() for r in rs}
        assert got.keys() == self.delivered.keys()
        for where, (value, key, headers) in self.delivered.items():
            gv, gk, gh = got[where]
            assert gv == value and gk == key, (where, gv[:40] if gv else gv, value)
            if headers is not None:
                assert gh == headers, (where, gh, headers)

    @property
    def lost(self) -> int:
        return self.tried - self.refused - self.failed - len(self.delivered)


@pytest.fixture
def fuzz_target(broker, topic):
    name = topic(partitions=2)
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "message.max.bytes": MAX_BYTES,
        "linger.ms": 0,
        "message.timeout.ms": 20000,
    }
    with cykafka.Producer(conf) as p:
        yield p, name


# --------------------------------------------------------------------------- strategies


def _bytesish(max_size: int = 64) -> st.SearchStrategy[Any]:
    raw = st.binary(max_size=max_size)
    return st.one_of(
        st.none(),
        raw,
        st.text(max_size=max_size),
        raw.map(bytearray),
        raw.map(memoryview),
        raw.map(lambda b: memoryview(b * 2)[::2]),  # strided: refused
        st.just("surrogate \ud800"),  # not UTF-8 encodable
        st.binary(min_size=MAX_BYTES - 100, max_size=MAX_BYTES + 500),  # around the limit
    )


def _junk() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(),
        st.floats(),
        st.booleans(),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        st.just(object()),
        st.just(np.int64(3)),
        st.just(np.array([b"a"])),
    )


def _header_value() -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.binary(max_size=32), st.text(max_size=32), _junk())


def _headers() -> st.SearchStrategy[Any]:
    pair = st.tuples(st.one_of(st.text(max_size=12), _junk()), _header_value())
    return st.one_of(
        st.none(),
        st.lists(pair, max_size=4),
        st.dictionaries(st.text(max_size=8), _header_value(), max_size=3),
        st.lists(st.one_of(pair, st.tuples(st.text()), st.text(max_size=3)), max_size=3),
        st.text(max_size=5),
        _junk(),
    )


_BAD_TOPICS = ["", " ", "a b", "x" * 250, ".", "..", "tópico", "a/b", "a\x00b", "é"]


def _expect_bytes(v: Any) -> Optional[bytes]:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode()
    return bytes(v)


def _expect_headers(h: Any) -> Optional[list[tuple[str, Optional[bytes]]]]:
    if h is None:
        return []
    items = list(h.items()) if isinstance(h, dict) else list(h)
    return [(k, _expect_bytes(v)) for k, v in items]


# --------------------------------------------------------------------------- produce


def test_fuzz_produce(fuzz_target, broker, read_back) -> None:
    p, name = fuzz_target
    led = Ledger()

    def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> Any:
        # about 1 in 8 arguments is bad, so most calls get far enough to be sent
        return st.integers(0, 7).flatmap(lambda r: bad if r == 0 else good)

    @FUZZ
    @given(
        topic=mostly(st.just(name), st.one_of(st.sampled_from(_BAD_TOPICS), _junk())),
        value=mostly(_bytesish(), _junk()),
        key=mostly(_bytesish(16), _junk()),
        partition=mostly(
            st.one_of(st.none(), st.integers(0, 2)),
            st.one_of(st.integers(-3, -1), st.integers(), _junk()),
        ),
        timestamp=mostly(
            st.one_of(st.none(), st.integers(1_500_000_000_000, 1_900_000_000_000)),
            st.one_of(st.integers(-5, 2**64), _junk()),
        ),
        headers=mostly(
            st.one_of(
                st.none(),
                st.lists(
                    st.tuples(
                        st.text(max_size=12),
                        st.one_of(st.none(), st.binary(max_size=32), st.text(max_size=32)),
                    ),
                    max_size=4,
                ),
            ),
            _headers(),
        ),
    )
    def run(topic: Any, value: Any, key: Any, partition: Any, timestamp: Any, headers: Any) -> None:
        led.tried += 1
        before = len(p)
        try:
            fut = p.produce(
                topic, value, key, partition=partition, timestamp=timestamp, headers=headers
            )
        except CLEAR:
            led.refused += 1
            assert len(p) == before  # nothing queued on refusal
            return
        p.flush(30)
        exc = fut.exception(30)
        if exc is not None:
            assert isinstance(exc, cykafka.KafkaDeliveryError), exc
            led.failed += 1
            return
        md = fut.result(0)
        assert md.topic == name and topic == name
        if partition is not None:  # only ints and NumPy integers are accepted
            assert md.partition == operator.index(partition)
        if timestamp is not None:  # likewise; 0 is refused, never replaced by "now"
            assert md.timestamp == operator.index(timestamp) > 0
        assert len(_expect_bytes(value) or b"") <= MAX_BYTES
        led.delivered[(md.partition, md.offset)] = (
            _expect_bytes(value),
            _expect_bytes(key),
            _expect_headers(headers),
        )

    run()
    led.check_log(read_back, broker.bootstrap_servers, name)
    assert led.lost == 0 and led.delivered and led.refused
    record(
        "fuzz: produce (random topics/values/keys/partitions/timestamps/headers)",
        led.tried,
        led.lost,
        led.failed,
        refused=led.refused,
        delivered=len(led.delivered),
    )


# --------------------------------------------------------------------------- produce_batch


def _column_values(n: int) -> st.SearchStrategy[list[Any]]:
    elem = st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=20))
    return st.lists(elem, min_size=n, max_size=n)


@st.composite
def _column(draw: Any, n: int, allow_bad: bool = True) -> tuple[Any, Optional[list[Any]]]:
    """(column object, expected bytes per row) -- expected None means 'must be refused'."""
    kind = draw(
        st.sampled_from(
            [
                "list",
                "tuple",
                "arrow",
                "arrow_large",
                "arrow_str",
                "arrow_slice",
                "chunked",
                "numpy_S",
                "numpy_obj",
                "oversize",
            ]
            + (
                ["bad_elem", "numpy_int", "numpy_2d", "arrow_int", "scalar", "gen", "surrogate"]
                if allow_bad
                else []
            )
        )
    )
    if kind in ("list", "tuple", "numpy_obj"):
        vals = draw(_column_values(n))
        col: Any = (
            vals
            if kind == "list"
            else tuple(vals)
            if kind == "tuple"
            else np.array(vals + [None], dtype=object)[:n]
        )
        return col, [_expect_bytes(v) for v in vals]
    if kind == "oversize":
        vals = [draw(st.binary(max_size=10)) for _ in range(n)]
        if n:
            vals[draw(st.integers(0, n - 1))] = b"o" * (MAX_BYTES + 1000)
        return vals, vals
    if kind in ("arrow", "arrow_large", "arrow_slice", "chunked"):
        vals = draw(
            st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=n + 2, max_size=n + 2)
        )
        typ = pa.large_binary() if kind == "arrow_large" else pa.binary()
        if kind == "arrow_slice":
            return pa.array(vals, typ).slice(1, n), vals[1 : n + 1]
        if kind == "chunked":
            cut = draw(st.integers(0, n))
            return pa.chunked_array(
                [pa.array(vals[:cut], typ), pa.array([], typ), pa.array(vals[cut:n], typ)], typ
            ), vals[:n]
        return pa.array(vals[:n], typ), vals[:n]
    if kind == "arrow_str":
        vals = draw(st.lists(st.one_of(st.none(), st.text(max_size=20)), min_size=n, max_size=n))
        return pa.array(vals, pa.string()), [_expect_bytes(v) for v in vals]
    if kind == "numpy_S":
        low = draw(st.sampled_from([1, 12]))  # full-width items are sent as they are
        vals = draw(st.lists(st.binary(min_size=low, max_size=12), min_size=n, max_size=n))
        arr = np.array(vals + [b"pad"], dtype="S12")[:n]
        if draw(st.booleans()) and n:
            arr = np.array(vals, dtype="S12").repeat(2)[::2]  # non-contiguous
        # An item ending in NUL (padded, or a value's own last byte) is refused: NumPy
        # drops trailing NULs when it reads an item, so the value cannot be told.
        padded = any(len(v) < 12 or v.endswith(b"\0") for v in vals)
        return arr, None if padded else list(vals)
    bad: dict[str, Any] = {
        "bad_elem": [b"ok"] * max(n - 1, 0) + [draw(_junk())],
        "numpy_int": np.arange(n),
        "numpy_2d": np.array([[b"a"]] * max(n, 1), dtype="S1"),
        "arrow_int": pa.array(list(range(n)), pa.int64()),
        "scalar": draw(_bytesish()),
        "surrogate": [b"ok"] * max(n - 1, 0) + ["\udc80"],  # str that is not UTF-8
    }
    if kind == "gen":  # any iterable is taken (materialised once)
        return (b"x" for _ in range(n)), [b"x"] * n
    return bad[kind], None


@st.composite
def _batch(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(0, 12))
    values, expect = draw(_column(n))
    out: dict[str, Any] = {"values": values, "n": n, "expect": expect, "bad": expect is None}
    if draw(st.booleans()):
        m = n if draw(st.integers(0, 9)) else n + 1
        keys, kexp = draw(_column(m, allow_bad=draw(st.booleans())))
        if keys is None:  # the "scalar" bad column drew None: for keys that means no keys
            keys, kexp = [None] * m, [None] * m
        if kexp is not None and any(k is not None and len(k) > MAX_BYTES for k in kexp):
            keys, kexp = [b"k"] * m, [b"k"] * m
        out["keys"], out["kexp"] = keys, kexp
        out["bad"] = out["bad"] or kexp is None or m != n
    if draw(st.booleans()):
        parts = draw(
            st.lists(
                st.one_of(st.none(), st.integers(-2, 2), st.integers(0, 1)),
                min_size=n,
                max_size=n + (draw(st.integers(0, 9)) == 0),
            )
        )
        form = draw(st.sampled_from(["list", "numpy", "float"]))
        col: Any = parts
        if form == "numpy" and None not in parts:
            col = np.array(parts, dtype=np.int32)
        elif form == "float":
            col = np.array(parts, dtype=float) if None not in parts else parts
        out["partitions"] = col
        out["bad"] = (
            out["bad"]
            or len(parts) != n
            or any(p is not None and p < 0 for p in parts)
            or (form == "float" and None not in parts)
        )
        out["parts"] = parts
    if draw(st.booleans()):
        tss = draw(
            st.lists(
                st.one_of(
                    st.none(), st.integers(-3, 3), st.integers(1_600_000_000_000, 1_700_000_000_000)
                ),
                min_size=n,
                max_size=n,
            )
        )
        out["timestamps"] = tss
        # 0 is refused too: librdkafka would replace it with the current time
        out["bad"] = out["bad"] or any(t is not None and t <= 0 for t in tss)
    if draw(st.booleans()):
        hs = draw(
            st.lists(
                st.one_of(
                    st.none(),
                    st.lists(
                        st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))),
                        max_size=2,
                    ),
                    _junk(),
                ),
                min_size=n,
                max_size=n,
            )
        )
        out["headers"] = hs
        out["bad_headers"] = any(
            h is not None and not isinstance(h, (list, tuple, dict)) for h in hs
        )
    return out


def test_fuzz_produce_batch(fuzz_target, broker, read_back) -> None:
    p, name = fuzz_target
    led = Ledger()

    @FUZZ
    @given(b=_batch())
    def run(b: dict[str, Any]) -> None:
        n = b["n"]
        led.tried += n
        before = len(p)
        seen: dict[int, Any] = {}

        def on_delivery(i: int, exc: Any, md: Any) -> None:
            assert i not in seen
            seen[i] = exc if exc is not None else md

        kwargs = {k: b[k] for k in ("partitions", "timestamps", "headers") if k in b}
        try:
            bf = p.produce_batch(
                name, b["values"], b.get("keys"), on_delivery=on_delivery, **kwargs
            )
        except CLEAR:
            led.refused += n
            assert len(p) == before  # refused as a whole, before anything was queued
            return
        assert not b["bad"] and not b.get("bad_headers"), "input that must be refused was accepted"
        rep = bf.result(60)
        assert rep.total == n and rep.delivered + rep.failed == n
        assert sorted(seen) == list(range(n))  # one outcome per index
        assert sorted(i for i, _ in rep.errors) == sorted(
            i for i, o in seen.items() if isinstance(o, BaseException)
        )
        for i, o in seen.items():
            if isinstance(o, BaseException):
                assert isinstance(o, cykafka.KafkaDeliveryError)
                led.failed += 1
                continue
            value = b["expect"][i]
            assert value is None or len(value) <= MAX_BYTES
            parts = b.get("parts")
            if parts is not None and parts[i] is not None:
                assert o.partition == parts[i]
            tss = b.get("timestamps")
            if tss is not None and tss[i] is not None:
                assert o.timestamp == tss[i]
            hs = b.get("headers")
            led.delivered[(o.partition, o.offset)] = (
                value,
                b["kexp"][i] if "kexp" in b else None,
                _expect_headers(hs[i]) if hs is not None else None,
            )

    run()
    led.check_log(read_back, broker.bootstrap_servers, name)
    assert led.lost == 0 and led.delivered
    record(
        "fuzz: produce_batch (lists, Arrow nulls/slices/chunks, NumPy dtypes, columns)",
        led.tried,
        led.lost,
        led.failed,
        refused=led.refused,
        delivered=len(led.delivered),
    )


# --------------------------------------------------------------------------- config/presets

_KEYS = [
    "acks",
    "linger.ms",
    "enable.idempotence",
    "retries",
    "max.in.flight",
    "batch.size",
    "compression.type",
    "message.max.bytes",
    "delivery.timeout.ms",
    "max.block.ms",
    "buffer.memory",
    "partitioner",
    "partitioner.class",
    "transactional.id",
    "sasl.jaas.config",
    "sasl.password",
    "key.serializer",
    "queue.buffering.max.messages",
    "enable.gapless.guarantee",
    "debug",
    "no.such.key",
    "statistics.interval.ms",
    "max.request.size",
    "security.protocol",
]


def test_fuzz_config_and_presets() -> None:
    counts = {"built": 0, "refused": 0}

    @FUZZ
    @given(
        conf=st.dictionaries(
            st.integers(0, 9).flatmap(
                lambda r: (
                    st.one_of(
                        st.text(max_size=12),
                        st.integers(),
                        st.none(),
                        st.tuples(st.text(max_size=3)),
                    )
                    if r == 0
                    else st.sampled_from(_KEYS)
                )
            ),
            st.integers(0, 5).flatmap(
                lambda r: (
                    st.one_of(st.text(max_size=12), st.floats(allow_nan=True), st.none(), _junk())
                    if r == 0
                    else st.one_of(
                        st.integers(0, 10**6),
                        st.booleans(),
                        st.sampled_from(
                            ["all", "1", "0", "-1", "true", "false", "lz4", "murmur2_random", "5"]
                        ),
                    )
                )
            ),
            max_size=4,
        ),
        preset=st.one_of(
            st.none(),
            st.sampled_from(cykafka.presets.names()),
            st.lists(st.sampled_from([*cykafka.presets.names(), "nope"]), max_size=3).map("+".join),
            _junk(),
        ),
    )
    def run(conf: dict[Any, Any], preset: Any) -> None:
        conf = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0, **conf}
        try:
            p = cykafka.Producer(conf, preset=preset)
        except CLEAR:
            counts["refused"] += 1
        else:
            counts["built"] += 1
            p.close(0)
        try:
            cykafka.explain({k: v for k, v in conf.items() if isinstance(k, str)}, preset=preset)
        except CLEAR:
            pass

    run()
    assert counts["built"] and counts["refused"]
    record(
        "fuzz: configs and presets (Producer + explain)",
        sum(counts.values()),
        0,
        refused=counts["refused"],
        built=counts["built"],
    )


# --------------------------------------------------------------------------- named classes


@pytest.mark.parametrize("bad", _BAD_TOPICS + [None, 5, b"bytes-topic"])
def test_topic_names_kafka_rejects(bad: Any) -> None:
    with cykafka.Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0}) as p:
        for call in (
            lambda: p.produce(bad, b"v"),
            lambda: p.produce_batch(bad, [b"v"]),
            lambda: p.produce_many([b"v"], bad),
        ):
            with pytest.raises(CLEAR, match="topic"):
                call()
        queued = len(p)
        assert queued == 0
    # One row per name; tests/soak/table.py sums rows with the same item.  Three calls
    # (produce, produce_batch, produce_many), each refused; anything queued would be lost.
    record(
        "topic names Kafka rejects (and None/int/bytes): refused by produce, "
        "produce_batch, produce_many",
        3,
        queued,
        0,
        refused=3,
    )


def test_named_bad_input_classes(fuzz_target, broker, read_back) -> None:
    """Each class the issue names, on both paths, with the outcome it must have."""
    p, name = fuzz_target
    tried = 0
    for kwargs in (
        {"partition": -1},
        {"partition": -(2**40)},
        {"timestamp": -1},
        {"timestamp": -(2**70)},
        {"timestamp": 0},
    ):
        tried += 1
        with pytest.raises(ValueError):
            p.produce(name, b"v", **kwargs)
    for kwargs in ({"timestamp": math.nan}, {"timestamp": math.inf}, {"timestamp": 1.6e12}):
        tried += 1
        with pytest.raises(TypeError, match="not float"):
            p.produce(name, b"v", **kwargs)
    tried += 2  # a NUL in a header name would be cut there by every reader
    with pytest.raises(ValueError, match="NUL"):
        p.produce(name, b"v", headers=[("a\x00b", b"x")])
    with pytest.raises(ValueError, match="NUL"):
        p.produce_batch(name, [b"v"], headers=[{"a\x00": b"x"}])
    for kwargs in ({"partitions": [0, -1]}, {"timestamps": [1, -1]}):
        tried += 2
        with pytest.raises(ValueError, match=r"\[1\]"):
            p.produce_batch(name, [b"a", b"b"], **kwargs)
    assert len(p) == 0
    # Empty input: an empty value is a message; an empty batch resolves at once.
    tried += 1
    assert p.produce(name, b"").result(30).offset >= 0
    assert p.produce_batch(name, []).result(1).total == 0
    # Over message.max.bytes: only that message fails, its neighbours are delivered.
    big = b"x" * (MAX_BYTES + 1)
    f = p.produce(name, big, partition=0)
    rep = p.produce_batch(name, [b"a", big, b"c"], partitions=[0, 0, 0]).result(30)
    tried += 4
    assert f.exception(30).name == "MSG_SIZE_TOO_LARGE"
    assert rep.delivered == 2 and [(i, e.name) for i, e in rep.errors] == [
        (1, "MSG_SIZE_TOO_LARGE")
    ]
    recs = read_back(broker.bootstrap_servers, name, expected=3)
    read = [r.value for rs in recs.values() for r in rs]
    assert sorted(read) == [b"", b"a", b"c"]
    # Accepted: the empty value, the big one, the batch of three; the rest was refused.
    accepted, failed = 5, 2
    record(
        "named classes: negative partition, negative/0/float timestamp, NUL header, "
        "empty, > message.max.bytes",
        tried,
        accepted - failed - len(read),
        failed,
        refused=tried - accepted,
    )


def test_unknown_topic_name_fails_its_future_not_the_process(broker) -> None:
    # A valid name the broker does not have (and does not create): reported, in time.
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "message.timeout.ms": 3000,
        "allow.auto.create.topics": False,
        "log_level": 0,
    }
    with cykafka.Producer(conf) as p:
        f = p.produce(f"missing-{uuid.uuid4().hex}", b"v")
        p.flush(20)
    assert f.done()
    exc = f.exception(0)
    if exc is not None:
        assert isinstance(exc, cykafka.KafkaDeliveryError)
