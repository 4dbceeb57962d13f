"""cykafka.testing.SchemaRegistry and ``cykafka registry``: Apicurio on loopback only,
Confluent's default compatibility, a clear error naming the log, and no registry left
behind when whoever started it dies."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cykafka.launchers.process import poll_until
from cykafka.testing import SchemaRegistry

# Each test but one starts a registry JVM of its own (or runs one through the CLI).
pytestmark = pytest.mark.broker


def listening(pid: int) -> list[str]:
    """The addresses ``pid`` listens on (TCP), from ``ss``."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    return [line.split()[3] for line in out.splitlines() if f"pid={pid}," in line]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie has exited: only its parent's wait is missing.
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_the_session_registry_listens_on_loopback_only_with_backward(
    schema_registry: Any,
) -> None:
    assert schema_registry.url.startswith("http://127.0.0.1:")
    assert schema_registry.url.endswith("/apis/ccompat/v7")
    pid = schema_registry.pid
    assert pid is not None
    # Quarkus's management interface opens 0.0.0.0:9000 unless told otherwise.
    addresses = listening(pid)
    assert len(addresses) == 2, addresses  # the API and the management interface
    assert all(re.match(r"(\[::ffff:)?127\.0\.0\.1\]?:\d+$", a) for a in addresses), addresses
    with urllib.request.urlopen(f"{schema_registry.url}/config", timeout=10) as resp:
        assert json.load(resp) == {"compatibilityLevel": "BACKWARD"}


def test_a_taken_port_is_an_error_naming_the_log(tmp_path: Path) -> None:
    from cykafka.launchers.errors import LauncherError
    from cykafka.launchers.registry import RegistryStartError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        registry = SchemaRegistry(port=port, log_file=tmp_path / "registry.log")
        with pytest.raises(RegistryStartError) as caught:
            registry.start()
    assert isinstance(caught.value, LauncherError)
    message = str(caught.value)
    assert str(tmp_path / "registry.log") in message and str(port) in message, message
    assert not registry.is_running()
    assert (tmp_path / "registry.log").stat().st_size > 0  # the log is kept


def test_a_bad_compatibility_names_the_levels() -> None:
    with pytest.raises(ValueError, match="'BACKWARDS'.*BACKWARD, BACKWARD_TRANSITIVE"):
        SchemaRegistry(compatibility="BACKWARDS")


def test_cli_serves_until_ctrl_c_and_a_killed_parent_takes_it_along(tmp_path: Path) -> None:
    """``cykafka registry --port 0`` prints its URL and serves it; SIGINT stops it
    cleanly.  Then a Python process that started a registry is SIGKILLed: the JVM goes
    with it (no orphan keeping a port)."""
    cli = subprocess.Popen(
        [sys.executable, "-m", "cykafka.cli", "registry", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert cli.stdout is not None
    lines: list[str] = []
    for line in cli.stdout:
        lines.append(line)
        if line.startswith("Press Ctrl-C"):
            break
    out = "".join(lines)
    m = re.search(r"listening on (http://127\.0\.0\.1:\d+/apis/ccompat/v7) \(pid (\d+)\)", out)
    assert m, out
    url, jvm = m.group(1), int(m.group(2))
    assert f"--schema-registry {url}" in out
    with urllib.request.urlopen(f"{url}/subjects", timeout=10) as resp:
        assert json.load(resp) == []
    cli.send_signal(signal.SIGINT)
    rest, _ = cli.communicate(timeout=60)
    assert cli.returncode == 0, out + rest
    assert "stopping the registry" in rest
    poll_until(lambda: gone(jvm), 30, "the registry JVM to exit after Ctrl-C")

    script = textwrap.dedent(
        """
        from cykafka.testing import SchemaRegistry
        r = SchemaRegistry().start(wait=False)
        print(r.pid, flush=True)
        import time; time.sleep(600)
        """
    )
    # The with-block closes its pipe and reaps it once killed.
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        # setpriv asks for the parent-death signal, then becomes java: killed before that,
        # the parent would leave nothing to be signalled.
        poll_until(
            lambda: os.readlink(f"/proc/{child}/exe").endswith("/java"), 30, "setpriv to exec java"
        )
        parent.kill()
    poll_until(lambda: gone(child), 30, f"registry JVM {child} to die with its parent")
