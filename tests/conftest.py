"""Shared fixtures: a real local Kafka-compatible broker (Tansu) and a byte-exact read-back.

Tests never skip when the broker is missing: a missing ``tansu`` binary is an error, so a
broken environment cannot pass silently.

Works from a checkout with ``PYTHONPATH=src`` (or with nothing set: ``src`` is added when
``cykafka`` is not importable) and against an installed package.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional

import pytest

_SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("cykafka") is None and _SRC.is_dir():
    sys.path.insert(0, str(_SRC))

try:
    from cykafka.broker import LocalBroker
except ImportError:
    # cykafka/__init__ may import the compiled extension; broker tests must still run
    # when it is not built, so load the pure-Python module on its own.
    _spec = importlib.util.spec_from_file_location(
        "cykafka_broker_standalone", _SRC / "cykafka" / "broker.py"
    )
    if _spec is None or _spec.loader is None:
        raise
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _mod
    _spec.loader.exec_module(_mod)
    LocalBroker = _mod.LocalBroker  # type: ignore[misc]

from brokers import KAFKA_SERVERS, committed_records  # noqa: E402
from cykafka.kafka_cluster import KafkaCluster  # noqa: E402

if TYPE_CHECKING:
    from confluent_kafka import Message


@dataclass(frozen=True)
class Record:
    """One record as read back from the broker (plain data, safe to compare)."""

    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list[tuple[str, Optional[bytes]]] = field(default_factory=list)
    timestamp: int = -1  # milliseconds since the epoch
    timestamp_type: int = 0  # confluent_kafka.TIMESTAMP_* constant

    @classmethod
    def from_message(cls, msg: Message) -> Record:
        ts_type, ts = msg.timestamp()
        return cls(
            topic=msg.topic() or "",
            partition=msg.partition() or 0,
            offset=msg.offset() or 0,
            key=msg.key(),
            value=msg.value(),
            headers=list(msg.headers() or []),
            timestamp=ts,
            timestamp_type=ts_type,
        )


def read_back(
    bootstrap_servers: str,
    topic: str,
    partitions: Optional[Iterable[int]] = None,
    timeout: float = 30.0,
    expected: Optional[int] = None,
    isolation_level: str = "read_committed",
) -> dict[int, list[Record]]:
    """Read every record of ``topic`` from offset 0 up to (at least) the high watermark.

    Uses ``assign()`` on explicit partitions (no consumer-group join, which is slow on
    Tansu). ``partitions=None`` means all partitions of the topic. Reads at least up to the
    high watermark of every partition, then until the topic is quiet for one poll. With
    ``expected`` (total record count) keeps reading until that many arrived and fails if a
    different number is read. Returns ``{partition: [Record, ...]}`` in offset order, with
    an entry for every requested partition.
    """
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"cykafka-read-back-{uuid.uuid4().hex}",  # required, never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 50,
            "isolation.level": isolation_level,
            "log_level": 3,
        }
    )
    deadline = time.monotonic() + timeout
    try:
        if partitions is None:
            md = consumer.list_topics(topic, timeout=timeout)
            tmd = md.topics.get(topic)
            if tmd is None or tmd.error is not None:
                raise AssertionError(f"read_back: topic {topic!r} not found ({tmd and tmd.error})")
            parts = sorted(tmd.partitions)
        else:
            parts = sorted(partitions)

        def watermarks() -> dict[int, tuple[int, int]]:
            left = max(deadline - time.monotonic(), 0.5)
            return {
                p: consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=min(left, 10.0), cached=False
                )
                for p in parts
            }

        marks = watermarks()
        out: dict[int, list[Record]] = {p: [] for p in parts}
        # From offset 0, not the low watermark: Tansu 0.6.0 sometimes reports a low
        # watermark of 1 for a partition whose offset 0 exists, and a fetch from inside a
        # batch skips to the next batch, so starting there loses records (docs/tansu.md).
        # Test topics are fresh and never truncated, so 0 is always their first offset.
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        todo = {p for p in parts if marks[p][1] > 0}

        def total() -> int:
            return sum(len(v) for v in out.values())

        # Phase 1: reach the high watermark of every partition (and ``expected`` records).
        # Phase 2: keep draining until a quiet poll, because Tansu 0.6.0 reports the high
        # watermark as (base offset of the last batch + 1): records later in that batch
        # lie beyond it (see docs/tansu.md), so the watermark is only a lower bound.
        quiet = False
        while todo or (expected is not None and total() < expected) or not quiet:
            if time.monotonic() > deadline:
                got = {p: len(v) for p, v in out.items()}
                raise AssertionError(
                    f"read_back: timed out after {timeout}s reading {topic!r}; got {got}"
                    + (f" (expected {expected} in total)" if expected is not None else "")
                    + f", watermarks (low, high) { ({p: marks[p] for p in parts}) }"
                )
            msgs = consumer.consume(num_messages=1000, timeout=0.25)
            quiet = not todo and not msgs
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(err)
                p = msg.partition()
                assert p is not None
                out[p].append(Record.from_message(msg))
            if todo:
                # position() also moves past control records, so it, not the last data
                # offset, tells when the high watermark is reached.
                for tp in consumer.position([TopicPartition(topic, p) for p in sorted(todo)]):
                    if tp.offset >= marks[tp.partition][1]:
                        todo.discard(tp.partition)
    finally:
        consumer.close()

    n = sum(len(v) for v in out.values())
    if expected is not None and n != expected:
        raise AssertionError(f"read_back: read {n} records from {topic!r}, expected {expected}")
    return out


#: Which brokers the ``broker`` fixture runs tests on: ``kafka`` (Apache Kafka, a real
#: KRaft node started from Maven Central's jars), ``tansu`` (the embedded broker), or
#: both (``kafka,tansu``).  Apache Kafka is the broker the guarantees are proven on.
BROKERS_ENV = "CYKAFKA_TEST_BROKERS"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--brokers",
        default=os.environ.get(BROKERS_ENV, "kafka"),
        help="comma-separated brokers for the `broker` fixture: kafka, tansu (default: "
        f"${BROKERS_ENV} or kafka)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tansu_only(why): runs on the embedded Tansu broker only; `why` says what makes it "
        "specific to that broker",
    )
    config.addinivalue_line(
        "markers", "kafka_only(why): runs on Apache Kafka only; `why` says what Tansu lacks"
    )


def _broker_kinds(config: pytest.Config) -> list[str]:
    kinds = [k.strip() for k in str(config.getoption("--brokers")).split(",") if k.strip()]
    bad = set(kinds) - {"kafka", "tansu"}
    if bad or not kinds:
        raise pytest.UsageError(f"--brokers takes kafka and/or tansu, not {sorted(bad) or kinds}")
    return kinds


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The ``broker`` fixture is a parameter: each test that uses it runs once per broker
    of ``--brokers``, except where a ``tansu_only``/``kafka_only`` marker pins it."""
    if "broker" not in metafunc.fixturenames:
        return
    kinds = _broker_kinds(metafunc.config)
    for marker, kind in (("tansu_only", "tansu"), ("kafka_only", "kafka")):
        m = metafunc.definition.get_closest_marker(marker)
        if m is not None:
            if not m.args:
                raise pytest.UsageError(f"{metafunc.definition.nodeid}: {marker} needs a reason")
            kinds = [kind]
    metafunc.parametrize("broker", kinds, indirect=True, scope="session")


@pytest.fixture(scope="session")
def tansu() -> Iterator[LocalBroker]:
    """One Tansu broker for the whole session (memory storage; do not restart it)."""
    b = LocalBroker()
    b.start()  # a missing binary raises FileNotFoundError here: fail, never skip
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaCluster]:
    """One Apache Kafka node (KRaft) for the whole session.  A missing Java or Maven
    fails here with the install hint: never skipped."""
    with KafkaCluster(nodes=1) as cluster:
        KAFKA_SERVERS.add(cluster.bootstrap_servers)
        yield cluster


@pytest.fixture(scope="session")
def _kafka3_session() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3) as cluster:
        KAFKA_SERVERS.add(cluster.bootstrap_servers)
        yield cluster


@pytest.fixture
def kafka3(_kafka3_session: KafkaCluster) -> Iterator[KafkaCluster]:
    """Three Apache Kafka nodes (replication factor 3, ``min.insync.replicas=2``) for
    fault tests, shared by the session: after each test every node killed, stopped or
    paused by it is brought back with its data and the cluster is ready again."""
    cluster = _kafka3_session
    cluster.wait_ready()
    yield cluster
    for node in cluster.nodes:
        node.resume()
        if not node.is_running():
            node.start()
    cluster.wait_ready(nodes=[n.node_id for n in cluster.nodes])


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Test certificates made with ``openssl`` (tests/security_helpers.py)."""
    from security_helpers import make_certs

    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def secure(certs: Any) -> Iterator[KafkaCluster]:
    """One Apache Kafka node with TLS, SCRAM and ACLs enforced, for the session
    (listeners and users: tests/security_helpers.py)."""
    from security_helpers import secure_cluster

    with secure_cluster(certs) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest) -> Any:
    """The session's broker of this test's parameter: :func:`kafka` or :func:`tansu`.
    Both offer ``bootstrap_servers``, ``client_config()``, ``create_topic()``,
    ``delete_topic()`` and ``list_topics()``."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def broker_kind(broker: Any) -> str:
    """``"kafka"`` or ``"tansu"``: the broker this test runs on."""
    return "kafka" if isinstance(broker, KafkaCluster) else "tansu"


@pytest.fixture
def committed() -> Callable[..., list[Any]]:
    """``committed(bootstrap, topic, partitions=None)``: the records a ``read_committed``
    consumer sees, in partition then offset order (:func:`brokers.committed_records`)."""
    return committed_records


@pytest.fixture
def fresh_broker() -> Iterator[LocalBroker]:
    """A private broker for tests that stop/restart it (the session one must stay up)."""
    with LocalBroker() as b:
        yield b


@pytest.fixture
def topic(broker: Any, request: pytest.FixtureRequest) -> Callable[..., str]:
    """Factory: ``topic(partitions=1, **create_topic_kwargs) -> name`` on the session broker.

    Names are unique per call (test name + random suffix), so tests never see each
    other's records. Topics are left in place: the memory broker dies with the session.
    """
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80]

    def make(partitions: int = 1, **kwargs: Any) -> str:
        name = f"{base}-{uuid.uuid4().hex[:8]}"
        return broker.create_topic(name, partitions=partitions, **kwargs)

    return make


@pytest.fixture(name="read_back")
def read_back_fixture() -> Callable[..., dict[int, list[Record]]]:
    """The :func:`read_back` helper as a fixture (no import of conftest needed)."""
    return read_back


# The seed of test_testing.py's property tests: random per run unless given, set
# here (before collection) so that the header below can show it.
os.environ.setdefault("CYKAFKA_PROPERTY_SEED", str(random.randrange(2**32)))


def pytest_report_header(config: pytest.Config) -> str:
    """The property tests' seed, so a CI failure can be rerun with the same plans."""
    seed = os.environ["CYKAFKA_PROPERTY_SEED"]
    return f"cykafka property seed: {seed} (rerun with CYKAFKA_PROPERTY_SEED={seed})"
