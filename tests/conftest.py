"""Shared fixtures: a real local Kafka-compatible broker (Tansu) and a byte-exact read-back.

Tests never skip when the broker is missing: a missing ``tansu`` binary is an error, so a
broken environment cannot pass silently.

Works from a checkout with ``PYTHONPATH=src`` (or with nothing set: ``src`` is added when
``cykafka`` is not importable) and against an installed package.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import re
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

_TESTS = Path(__file__).resolve().parent
_SRC = _TESTS.parent / "src"
if importlib.util.find_spec("cykafka") is None and _SRC.is_dir():
    sys.path.insert(0, str(_SRC))
# Every test folder imports the shared modules as ``support.<module>``.
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))
# Every Python process the suite starts (the CLI, Spark's workers) prints its Python
# stack if it dies of a fatal signal: an import once died of SIGSEGV while closing,
# after its summary, and the bare exit status -11 named nothing.
os.environ.setdefault("PYTHONFAULTHANDLER", "1")

#: Signals this run survives as it was started to (nohup), named for the xdist workers.
_SURVIVES_ENV = "CYKAFKA_TESTS_SURVIVE"


def _survive(signum: int, frame: object) -> None:
    """Caught and dropped: what SIG_IGN did here, without being handed down."""


def _signals_as_from_a_terminal() -> None:
    """The suite's commands get SIGINT, SIGTERM and SIGHUP at their defaults, as a
    terminal starts them, however the suite was started.  A script's background job
    (``./run tests &``) starts with SIGINT ignored and nohup with SIGHUP ignored; an
    ignored signal stays ignored across exec, and a Python started with SIGINT ignored
    installs no KeyboardInterrupt handler: the Ctrl-C tests waited for ever.  SIGINT
    gets Python's own handler (the in-process Ctrl-C tests need it too); a signal
    ignored otherwise is caught with one that does nothing: this run still survives it,
    and exec resets a caught signal to its default in every child."""
    survives = {s for s in os.environ.get(_SURVIVES_ENV, "").split(",") if s}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if sig == signal.SIGINT and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler)
        elif signal.getsignal(sig) == signal.SIG_IGN or sig.name in survives:
            signal.signal(sig, _survive)
            survives.add(sig.name)
    if survives:  # the workers, started by exec, have these at their defaults again
        os.environ[_SURVIVES_ENV] = ",".join(sorted(survives))


_signals_as_from_a_terminal()

import cykafka._native  # noqa: E402
from cykafka.broker import LocalBroker  # noqa: E402
from cykafka.launchers.kafka import KafkaCluster  # noqa: E402
from cykafka.testing import SchemaRegistry  # noqa: E402
from support import workers  # noqa: E402
from support.consume import KAFKA_SERVERS, Record, committed_records, read_back  # noqa: E402, F401

#: The fixtures users get (kafka_cluster, kafka_topic, local_broker, schema_registry) are
#: the ones this suite runs on: ``kafka`` and ``tansu`` below are their session brokers.
pytest_plugins = ["cykafka.testing.pytest_plugin"]

#: What a test needs running, by the fixtures that start it (directly or through
#: another fixture): such a test gets the marker, so ``./run tests unit`` leaves it out.
#: A module that starts one itself (``LocalBroker()``, ``KafkaCluster(...)``, a CLI run
#: with the embedded broker, a Spark driver) says so with ``pytestmark``.
NEEDS = {
    # librdkafka's mock cluster runs in this process, but it is a broker all the same, and
    # the tests over it take minutes: they are not unit tests.
    "broker": {"broker", "tansu", "kafka", "fresh_broker", "secure", "topic", "mock", "cluster"}
    | {"kafka_cluster", "kafka_topic", "local_broker"}
    # a Schema Registry is a JVM of its own: not a unit test either
    | {"schema_registry"},
    "kafka3": {"kafka3", "_kafka3_session"},
    "spark": {"spark", "deployment", "two_host_cluster"},
    # ./run wheel and a virtualenv that installs it from PyPI: minutes of compiling and
    # downloading, with nothing running
    "build": {"wheel", "venv"},
}
#: The markers of a test that needs something running; one without them must not start a
#: broker (``_unmarked_tests_start_no_broker``).
RUNNING = ("broker", "kafka3", "spark", "slow")

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
    config.pluginmanager.register(_LongGroupsFirst(), "cykafka-long-groups-first")
    if config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        workers.name_groups_file()  # the controller, before it starts the workers


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        workers.remove_groups_file()


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a hook of pytest-xdist's
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist", "no") == "loadgroup":
        return workers.scheduler(config, log)
    return None


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


#: Each test's group of :func:`_worker_group` (None: none), for the scheduler.
_GROUP = pytest.StashKey[Optional[str]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with what the fixtures it uses start (:data:`NEEDS`), and with the
    group of tests it runs with under ``pytest -n`` (:func:`_worker_group`)."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in NEEDS.items():
            if used & fixtures and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        item.stash[_GROUP] = _worker_group(item)


def _worker_group(item: pytest.Item) -> str | None:
    """What one worker of ``pytest -n N --dist loadgroup`` (``./run tests``;
    tests/support/workers.py schedules the groups) runs
    together: Spark's tests (its deployments one after another, as in one process: each
    is a JVM or three, and two at once on two cores slow both), the three-node cluster's
    (three JVMs, started once), the tests of each costly session fixture of
    :data:`_ONE_WORKER` (made once, not once a worker), and a module's tests that share
    a module- or class-scoped fixture.  Any other test goes to whichever worker is free;
    every worker has its own single-node Kafka and Tansu.  Spark's tests that run drivers
    of their own (a ``spark-submit``, a local cluster) keep their module together, beside
    the session's SparkSession rather than after it: one JVM of each at once."""
    used = set(getattr(item, "fixturenames", ()))
    if "spark" in used:
        return "spark"
    if _TESTS / "spark" in item.path.parents and item.get_closest_marker("spark") is not None:
        return item.nodeid.split("::")[0]
    if item.get_closest_marker("kafka3") is not None:
        return "kafka3"
    for fixture, group in _ONE_WORKER.items():
        if fixture in used:
            return group
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d[-1].scope in ("module", "class", "package") for d in defs if d):
        return item.nodeid.split("::")[0]
    return None


#: Session fixtures that cost a JVM or minutes to make, by the group of their tests.
_ONE_WORKER = {"wheel": "wheel", "secure": "secure", "schema_registry": "registry"}
#: The groups that take longest, started first so that none is left running alone at
#: the end of a parallel run.
_LONG_GROUPS = ("spark", "tests/spark/test_exactly_once.py", "kafka3", "wheel")


class _LongGroupsFirst:
    @pytest.hookimpl(trylast=True)  # after pytest's own ordering by session parameters
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        def rank(item: pytest.Item) -> int:
            return 0 if item.stash.get(_GROUP, None) in _LONG_GROUPS else 1

        items.sort(key=rank)  # stable: each group keeps its own order


def _refuse_to_start(*_: Any, **__: Any) -> Any:
    raise RuntimeError(
        "this test starts a broker (librdkafka's mock cluster counts) but is not marked as needing one: add "
        "`pytestmark = pytest.mark.broker` (or kafka3) to its module, so that "
        "`./run tests unit` leaves it out"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    # Around the set-up too: a module- or session-scoped fixture that starts a broker
    # is made in the set-up of its first test, before any function fixture could
    # forbid it.
    with _unmarked_tests_start_no_broker(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    with _unmarked_tests_start_no_broker(item):
        return (yield)


@contextlib.contextmanager
def _unmarked_tests_start_no_broker(item: pytest.Item) -> Iterator[None]:
    """A test not marked as needing something running fails when it (or a fixture
    made for it) starts a broker: in this process (the launchers' ``start``) or in a
    child it runs (the embedded broker's binary, looked up through
    ``$CYKAFKA_TANSU_BIN``, points nowhere)."""
    if any(item.get_closest_marker(m) is not None for m in RUNNING):
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LocalBroker, "start", _refuse_to_start)
        mp.setattr(KafkaCluster, "start", _refuse_to_start)
        mp.setattr(SchemaRegistry, "start", _refuse_to_start)
        mp.setattr(cykafka._native, "_MockCluster", _refuse_to_start)
        mp.setenv("CYKAFKA_TANSU_BIN", "/this-test-starts-a-broker-but-is-not-marked-broker/tansu")
        yield


@pytest.fixture(scope="session")
def tansu(local_broker: LocalBroker) -> LocalBroker:
    """One Tansu broker for the whole session (memory storage; do not restart it): the
    users' ``local_broker`` fixture (:mod:`cykafka.testing.pytest_plugin`).  A missing
    binary raises FileNotFoundError there: fail, never skip."""
    return local_broker


@pytest.fixture(scope="session")
def kafka(kafka_cluster: KafkaCluster) -> KafkaCluster:
    """One Apache Kafka node (KRaft) for the whole session: the users' ``kafka_cluster``
    fixture.  A missing Java or Maven fails there with the install hint: never skipped."""
    KAFKA_SERVERS.add(kafka_cluster.bootstrap_servers)
    return kafka_cluster


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
    """Test certificates made with ``openssl`` (tests/support/security.py)."""
    from support.security import make_certs

    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def secure(certs: Any) -> Iterator[KafkaCluster]:
    """One Apache Kafka node with TLS, SCRAM and ACLs enforced, for the session
    (listeners and users: tests/support/security.py)."""
    from support.security import secure_cluster

    with secure_cluster(certs) as cluster:
        yield cluster


#: The session's Schema Registry, started as soon as the tests to run are known.
_REGISTRY: list[SchemaRegistry] = []


@pytest.hookimpl(tryfirst=True)  # before the worker reports its collection
def pytest_collection_finish(session: pytest.Session) -> None:
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None and workerinput.get("workerid") == "gw0":
        if os.environ.get(workers.GROUPS_ENV):
            workers.write_groups(
                workers.grouped(session.items, lambda i: i.stash.get(_GROUP, None))
            )
    # Its JVM takes seconds to start: begun here, it starts while the brokers (and Spark)
    # do, and only when a test to run uses it.  A worker of ``pytest -n`` collects every
    # test but runs only some: it starts the registry when a test first asks for it.
    if hasattr(session.config, "workerinput"):
        return
    if any("schema_registry" in getattr(i, "fixturenames", ()) for i in session.items):
        _REGISTRY.append(SchemaRegistry().start(wait=False))


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[SchemaRegistry]:
    """One real Schema Registry (Apicurio, Confluent's API, compatibility BACKWARD) for
    the whole session.  Tests share it: each uses subjects of its own (its topics are
    unique).  A missing Java 21+ or Maven fails here with the install hint: never skipped."""
    registry = _REGISTRY[0] if _REGISTRY else SchemaRegistry().start(wait=False)
    try:
        registry.wait_ready()
        yield registry
    finally:
        registry.stop()


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
    consumer sees, in partition then offset order (:func:`support.consume.committed_records`)."""
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
