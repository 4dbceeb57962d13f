"""A cluster that cannot be reached, as every command and front door says it: one line
naming the address and what was tried, within the connect timeout, exit status 2, no
traceback and no stream of librdkafka's own log lines.

The faults are real: a port bound but not listening (every connection refused), and a
socket that listens but never answers (connections accepted by the kernel, no Kafka
answer ever)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import run_cykafka


@pytest.fixture
def refused() -> Iterator[str]:
    """An address whose every connection is refused: the port is ours, never listened on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def silent() -> Iterator[str]:
    """An address that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def rows(tmp_path: Path) -> str:
    f = tmp_path / "rows.jsonl"
    f.write_text('{"id": 1}\n{"id": 2}\n')
    return str(f)


#: Every command that talks to a cluster given by the user, as it is run.
COMMANDS = {
    "import": lambda addr, rows: ["import", "-b", addr, "-t", "t", "--no-progress", rows],
    "import --exactly-once": lambda addr, rows: [
        "import",
        "-b",
        addr,
        "-t",
        "t",
        "--no-progress",
        "--exactly-once",
        rows,
    ],  # fmt: skip
    "verify": lambda addr, rows: ["verify", "-b", addr, "-t", "t", rows],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_says_an_unreachable_cluster_in_one_line(
    command: str, refused: str, rows: str
) -> None:
    out = run_cykafka(*COMMANDS[command](refused, rows), timeout=300)
    name = command.split()[0]
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1, (out.returncode, len(lines), lines[-3:])
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    from cykafka.cluster.reach import CONNECT_TIMEOUT_S

    assert lines == [
        f"cykafka {name}: error: cannot reach the Kafka cluster at {refused}: no broker "
        f"answered within {CONNECT_TIMEOUT_S:g} s ({lines[0].split('s (', 1)[-1]}"
    ], out.stderr[-2000:]
    # What was tried, in librdkafka's words, said once; then how to fix it.
    assert lines[0].count("Connection refused") == 1  # each attempt's error summarised
    assert lines[0].endswith(
        "check --bootstrap-servers, or wait longer with --connect-timeout SECONDS"
    )
    assert out.stdout == ""


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_connect_timeout_is_settable(command: str, silent: str, rows: str) -> None:
    """A server that accepts connections but never answers: the wait is the one given."""
    args = [*COMMANDS[command](silent, rows), "--connect-timeout", "1.5"]
    out = run_cykafka(*args, timeout=60)
    assert out.returncode == 2, out.stderr[-2000:]
    assert len(out.stderr.splitlines()) == 1, out.stderr[-2000:]
    assert f"cannot reach the Kafka cluster at {silent}: no broker answered within 1.5 s" in (
        out.stderr
    )


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_connect_timeout_that_is_no_wait_is_refused(value: str, rows: str) -> None:
    out = run_cykafka("verify", "-b", "127.0.0.1:1", "-t", "t", rows, "--connect-timeout", value)
    assert out.returncode == 2
    assert "--connect-timeout" in out.stderr and value in out.stderr


def test_the_connect_timeout_needs_a_cluster_to_wait_for(rows: str) -> None:
    """The embedded broker is started and waited for by cykafka: the flag is refused."""
    out = run_cykafka("import", "-t", "t", "--connect-timeout", "3", rows)
    assert out.returncode == 2
    assert "--connect-timeout applies to a cluster given with --bootstrap-servers" in out.stderr


def test_the_help_states_the_default_connect_timeout() -> None:
    from cykafka.cli.options import HELP_CONNECT_TIMEOUT
    from cykafka.cluster.reach import CONNECT_TIMEOUT_S

    assert float(HELP_CONNECT_TIMEOUT) == CONNECT_TIMEOUT_S


def test_verify_from_python_raises_one_error(refused: str, rows: str) -> None:
    from cykafka.cluster.reach import ClusterUnreachable
    from cykafka.verify import verify_files

    with pytest.raises(ClusterUnreachable) as e:
        verify_files([rows], "t", {"bootstrap.servers": refused}, connect_timeout=2)
    assert e.value.bootstrap == refused and e.value.timeout == 2


def test_spark_driver_says_it_the_same_way(refused: str) -> None:
    """The driver's look at the topic (for a routed write's partition count)."""
    from cykafka.cluster.reach import ClusterUnreachable
    from cykafka.spark.plan import partition_count

    with pytest.raises(ClusterUnreachable, match=f"cannot reach the Kafka cluster at {refused}"):
        partition_count({"bootstrap.servers": refused}, "t")


# -- Producer.require(): the same check, for a Python caller before a long load --------


def test_require_says_an_unreachable_cluster_as_the_cli_does(refused: str, rows: str) -> None:
    """One ClusterUnreachable, within the timeout, in the CLI's words; only the fix names
    the Python caller's knobs (the config's property, the timeout argument)."""
    import time

    import cykafka

    with cykafka.Producer({"bootstrap.servers": refused}) as p:
        started = time.monotonic()
        with pytest.raises(cykafka.ClusterUnreachable) as e:
            p.require(timeout=2)
        took = time.monotonic() - started
    assert took < 2 + 3, took  # bounded by the timeout (and a client's start and stop)
    said = str(e.value)
    assert e.value.bootstrap == refused and e.value.timeout == 2 and not e.value.security
    assert said.startswith(
        f"cannot reach the Kafka cluster at {refused}: no broker answered within 2 s ("
    ), said
    assert said.count("Connection refused") == 1, said
    assert said.endswith(
        "; check bootstrap.servers, or wait longer with require(timeout=SECONDS)"
    ), said
    # The CLI's line for the same address says the same fact, up to its fix.
    out = run_cykafka(*COMMANDS["verify"](refused, rows), "--connect-timeout", "2", timeout=60)
    cli = out.stderr.strip().removeprefix("cykafka verify: error: ")
    fact = said.rsplit("; check ", 1)[0]
    assert cli.rsplit("; check ", 1)[0].split(" (", 1)[0] == fact.split(" (", 1)[0], cli
    assert "Connection refused" in cli, cli


def test_require_waits_for_the_timeout_given(silent: str) -> None:
    """A socket that accepts and never answers: require() gives up after the timeout."""
    import time

    import cykafka

    with cykafka.Producer({"bootstrap.servers": silent}) as p:
        started = time.monotonic()
        with pytest.raises(
            cykafka.ClusterUnreachable,
            match=f"cannot reach the Kafka cluster at {silent}: no broker answered within 1.5 s",
        ):
            p.require(timeout=1.5)
        assert 1.4 < time.monotonic() - started < 1.5 + 3


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), "5", True])
def test_require_refuses_a_timeout_that_is_no_wait(refused: str, timeout: object) -> None:
    import cykafka

    with cykafka.Producer({"bootstrap.servers": refused}) as p:
        with pytest.raises((ValueError, TypeError), match="connect timeout must be"):
            p.require(timeout=timeout)  # type: ignore[arg-type]


def test_require_needs_bootstrap_servers() -> None:
    import cykafka

    with cykafka.Producer({}) as p:
        with pytest.raises(ValueError, match="the config needs bootstrap.servers"):
            p.require(timeout=1)


def test_require_defaults_to_the_clis_connect_timeout() -> None:
    import inspect

    import cykafka
    from cykafka.cluster.reach import CONNECT_TIMEOUT_S

    default = inspect.signature(cykafka.Producer.require).parameters["timeout"].default
    assert default == CONNECT_TIMEOUT_S


def test_require_on_apache_kafka_returns_what_the_cluster_said(kafka) -> None:
    """The session's real Kafka node answers at once: its broker, controller and id."""
    import cykafka

    bootstrap = kafka.bootstrap_servers
    with cykafka.Producer({"bootstrap.servers": bootstrap}, preset="ordered") as p:
        seen = p.require(timeout=10)
    assert isinstance(seen, cykafka.ClusterSeen) and seen.bootstrap == bootstrap
    assert seen.seconds < 10, seen
    assert set(seen.brokers.values()) >= set(bootstrap.split(",")), seen
    assert seen.controller is None or seen.controller in seen.brokers, seen
    assert seen.cluster_id, seen
